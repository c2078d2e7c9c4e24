"""Where commands run: the local embedded registry or a capgate server.

Both backends speak the same contract (the view models of registry.records.views) so
every command behaves the same either way. Heavy imports stay inside the methods that
need them: the CLI must start fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from registry.records.kinds import RecordKind
    from registry.records.views import Page, RecordView, SeriesView, SubmitResult


class Backend(Protocol):
    def submit(
        self, kind: RecordKind, document: dict[str, Any], *, source: str
    ) -> SubmitResult: ...

    def get(self, kind: RecordKind, ref: str) -> RecordView: ...

    def list_series(self, kind: RecordKind, *, limit: int, offset: int) -> Page[SeriesView]: ...

    def list_versions(
        self, kind: RecordKind, name: str, *, limit: int, offset: int
    ) -> Page[RecordView]: ...


class LocalBackend:
    """The embedded registry: a database URL (SQLite by default) opened in-process."""

    def __init__(self, database_url: str, principal: str) -> None:
        from registry.storage.database import Database

        self.database = Database(database_url)
        self.principal = principal

    def submit(self, kind: RecordKind, document: dict[str, Any], *, source: str) -> SubmitResult:
        from registry.errors import InvalidInput
        from registry.records import service
        from registry.records.documents import validate_record

        record = validate_record(kind, document, source=source)
        try:
            return self.database.write(
                lambda ctx: service.submit(ctx, kind=kind, record=record),
                principal=self.principal,
            )
        except InvalidInput as exc:
            exc.source = exc.source or source
            raise

    def get(self, kind: RecordKind, ref: str) -> RecordView:
        from registry.records import service

        with self.database.reading() as session:
            return service.get(session, kind=kind, ref=ref)

    def list_series(self, kind: RecordKind, *, limit: int, offset: int) -> Page[SeriesView]:
        from registry.records import service

        with self.database.reading() as session:
            return service.list_series(session, kind=kind, limit=limit, offset=offset)

    def list_versions(
        self, kind: RecordKind, name: str, *, limit: int, offset: int
    ) -> Page[RecordView]:
        from registry.records import service

        with self.database.reading() as session:
            return service.list_versions(session, kind=kind, name=name, limit=limit, offset=offset)


class RemoteBackend:
    """A capgate server, through its REST API."""

    def __init__(self, server: str, principal: str, *, timeout_s: float = 30.0) -> None:
        import httpx

        self.server = server.rstrip("/")
        self.client = httpx.Client(
            base_url=self.server,
            timeout=timeout_s,
            headers={"X-Capgate-Principal": principal},
        )

    def _request(self, method: str, path: str, *, source: str | None = None, **kwargs: Any) -> Any:
        import httpx

        from registry.errors import (
            CapgateError,
            Conflict,
            FieldProblem,
            InvalidInput,
            NotFound,
            Unavailable,
        )

        try:
            response = self.client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise Unavailable(f"cannot reach capgate server {self.server}: {exc}") from None
        if response.status_code < 400:
            return response.json()
        try:
            body = response.json()
        except ValueError:
            body = {"message": response.text[:200] or response.reason_phrase}
        message = str(body.get("message", response.reason_phrase))
        if response.status_code == 422:
            problems = [FieldProblem(p["loc"], p["message"]) for p in body.get("problems", [])]
            raise InvalidInput(message, problems=problems, source=source)
        error_type: type[CapgateError] = {404: NotFound, 409: Conflict}.get(
            response.status_code, Unavailable
        )
        raise error_type(f"{message} (HTTP {response.status_code} from {self.server})")

    def submit(self, kind: RecordKind, document: dict[str, Any], *, source: str) -> SubmitResult:
        from registry.records.views import SubmitResult

        data = self._request("POST", f"/v1/{kind.collection}", json=document, source=source)
        return SubmitResult.model_validate(data)

    def get(self, kind: RecordKind, ref: str) -> RecordView:
        from registry.records.views import RecordView

        return RecordView.model_validate(self._request("GET", f"/v1/{kind.collection}/{ref}"))

    def list_series(self, kind: RecordKind, *, limit: int, offset: int) -> Page[SeriesView]:
        from registry.records.views import Page, SeriesView

        data = self._request(
            "GET", f"/v1/{kind.collection}", params={"limit": limit, "offset": offset}
        )
        return Page[SeriesView].model_validate(data)

    def list_versions(
        self, kind: RecordKind, name: str, *, limit: int, offset: int
    ) -> Page[RecordView]:
        from registry.records.views import Page, RecordView

        data = self._request(
            "GET",
            f"/v1/{kind.collection}/{name}/versions",
            params={"limit": limit, "offset": offset},
        )
        return Page[RecordView].model_validate(data)


def open_backend(server: str | None) -> Backend:
    from registry.settings import Settings

    settings = Settings.from_env()
    target = server or settings.server
    if target:
        return RemoteBackend(target, settings.principal)
    return LocalBackend(settings.database_url, settings.principal)
