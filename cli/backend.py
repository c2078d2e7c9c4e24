"""Where commands run: the local embedded registry or a capgate server.

Both backends speak the same contract (the view models of registry.records.views) so
every command behaves the same either way. Heavy imports stay inside the methods that
need them: the CLI must start fast.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from registry.audit.quarantine import Acknowledgement
    from registry.audit.service import AuditEventView, ChainReport
    from registry.gate.recheck import RecheckReport
    from registry.gate.views import DecisionView
    from registry.manifests.consistency import StatedManifests
    from registry.planner import PlanRecomputation
    from registry.records.kinds import RecordKind
    from registry.records.views import Page, RecordView, SeriesView, SubmitResult, TrailPage
    from registry.sizing.service import RecomputationView
    from registry.storage.database import Database


class Backend(Protocol):
    def submit(
        self, kind: RecordKind, document: dict[str, Any], *, source: str, team: str | None = None
    ) -> SubmitResult: ...

    def get(self, kind: RecordKind, ref: str) -> RecordView: ...

    def list_series(self, kind: RecordKind, *, limit: int, offset: int) -> Page[SeriesView]: ...

    def list_versions(
        self, kind: RecordKind, name: str, *, limit: int, offset: int
    ) -> Page[RecordView]: ...

    def size_plan(self, ref: str, *, seed: int) -> RecomputationView: ...

    def size_draft(
        self, document: dict[str, Any], *, source: str, seed: int
    ) -> PlanRecomputation: ...

    def gate_check(
        self,
        ref: str,
        manifests: StatedManifests | None = None,
        policy_release: str | None = None,
    ) -> DecisionView: ...

    def get_decision(self, decision_id: str) -> DecisionView: ...

    def list_decisions(
        self, filters: dict[str, Any], *, limit: int, offset: int
    ) -> TrailPage[DecisionView]: ...

    def recheck_all(self) -> RecheckReport: ...

    def audit_events(
        self, filters: dict[str, Any], *, limit: int, offset: int
    ) -> TrailPage[AuditEventView]: ...

    def audit_verify(self) -> ChainReport: ...

    def audit_acknowledge(self, reason: str) -> Acknowledgement: ...

    def get_attestation(self, decision_id: str) -> dict[str, Any]: ...

    def attestation_public_key(self) -> str: ...


class LocalBackend:
    """The embedded registry: a database URL (SQLite by default) opened in-process."""

    def __init__(self, database_url: str, principal: str) -> None:
        self.database_url = database_url
        self.principal = principal

    @cached_property
    def database(self) -> Database:
        # Imported on first use: reading one record from SQLite does without SQLAlchemy.
        from registry.storage.database import Database
        from registry.wiring import install

        install()  # what submissions and decisions run (registry.wiring)
        return Database(self.database_url)

    def submit(
        self, kind: RecordKind, document: dict[str, Any], *, source: str, team: str | None = None
    ) -> SubmitResult:
        from registry.errors import InvalidInput
        from registry.records import service
        from registry.records.documents import validate_record

        record = validate_record(kind, document, source=source)
        try:
            return self.database.write(
                lambda ctx: service.submit(ctx, kind=kind, record=record, team=team),
                principal=self.principal,
            )
        except InvalidInput as exc:
            exc.source = exc.source or source
            raise

    def get(self, kind: RecordKind, ref: str) -> RecordView:
        from registry.records.sqlite_reads import SqliteReads
        from registry.storage.sqlite_reads import sqlite_path

        path = sqlite_path(self.database_url)
        if path is not None and path.is_file():
            reads = SqliteReads(path)
            try:
                return reads.get(kind, ref)
            finally:
                reads.close()
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

    # -- planner and gate: the same services the API calls --------------------------

    def _now_and_limits(self) -> tuple[Any, Any]:
        from datetime import UTC, datetime

        from registry.staleness.thresholds import load_thresholds

        return datetime.now(UTC), load_thresholds()

    def _engine(self) -> Any:
        from registry.gate.engine_factory import engine_for
        from registry.settings import Settings

        return engine_for(Settings.from_env())

    def size_plan(self, ref: str, *, seed: int) -> RecomputationView:
        from registry.sizing.service import size_plan

        now, limits = self._now_and_limits()
        return size_plan(
            self.database,
            plan_ref=ref,
            principal=self.principal,
            now=now,
            limits=limits,
            seed=seed,
        ).view

    def size_draft(self, document: dict[str, Any], *, source: str, seed: int) -> PlanRecomputation:
        from registry.errors import InvalidInput
        from registry.sizing.draft import size_draft

        now, limits = self._now_and_limits()
        try:
            return size_draft(self.database, document, now=now, limits=limits, seed=seed)
        except InvalidInput as exc:
            exc.source = exc.source or source
            raise

    def gate_check(
        self,
        ref: str,
        manifests: StatedManifests | None = None,
        policy_release: str | None = None,
    ) -> DecisionView:
        from registry.gate.service import check

        now, limits = self._now_and_limits()
        # Reach the registry before the engine, so a missing plan is reported as such.
        self.database.ensure_schema()
        return check(
            self.database,
            self._engine(),
            plan_ref=ref,
            principal=self.principal,
            limits=limits,
            now=now,
            manifests=manifests,
            policy_release=policy_release,
        )

    def get_decision(self, decision_id: str) -> DecisionView:
        from registry.gate.service import get_decision
        from registry.policy.bundle import installed_revision

        with self.database.reading() as session:
            return get_decision(session, decision_id, current_revision=installed_revision())

    def list_decisions(
        self, filters: dict[str, Any], *, limit: int, offset: int
    ) -> TrailPage[DecisionView]:
        from registry.gate.service import list_decisions
        from registry.policy.bundle import installed_revision

        with self.database.reading() as session:
            return list_decisions(
                session,
                limit=limit,
                offset=offset,
                current_revision=installed_revision(),
                **filters,
            )

    def recheck_all(self) -> RecheckReport:
        from registry.gate.recheck import recheck_all

        now, limits = self._now_and_limits()
        return recheck_all(
            self.database, self._engine(), principal=self.principal, limits=limits, now=now
        )

    def audit_events(
        self, filters: dict[str, Any], *, limit: int, offset: int
    ) -> TrailPage[AuditEventView]:
        from registry.audit.service import list_events

        with self.database.reading() as session:
            return list_events(session, limit=limit, offset=offset, **filters)

    def audit_verify(self) -> ChainReport:
        from registry.audit.service import verify

        with self.database.reading(snapshot=True) as session:
            return verify(session)

    def audit_acknowledge(self, reason: str) -> Acknowledgement:
        from registry.audit.quarantine import acknowledge

        return acknowledge(self.database, principal=self.principal, reason=reason)

    def get_attestation(self, decision_id: str) -> dict[str, Any]:
        from registry.attestation.store import envelope_of, get_attestation
        from registry.errors import NotFound
        from registry.gate.service import get_decision

        with self.database.reading() as session:
            get_decision(session, decision_id, current_revision=None)
            row = get_attestation(session, decision_id)
            if row is None:
                raise NotFound(f"decision {decision_id} has no attestation")
            return envelope_of(row)

    def attestation_public_key(self) -> str:
        from registry.keys import signing_key

        return signing_key().public_pem()


class RemoteBackend:
    """A capgate server, through its REST API."""

    def __init__(self, server: str, token: str | None, *, timeout_s: float = 30.0) -> None:
        import httpx

        self.server = server.rstrip("/")
        # The server records the token's subject as the principal; without a token only
        # a server started with --insecure-local answers.
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.client = httpx.Client(base_url=self.server, timeout=timeout_s, headers=headers)

    def _request(self, method: str, path: str, *, source: str | None = None, **kwargs: Any) -> Any:
        import httpx

        from cli.http_errors import error_for
        from registry.errors import Unavailable

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
        raise error_for(
            response.status_code,
            body if isinstance(body, dict) else {},
            reason=response.reason_phrase,
            server=self.server,
            source=source,
        )

    def submit(
        self, kind: RecordKind, document: dict[str, Any], *, source: str, team: str | None = None
    ) -> SubmitResult:
        from registry.records.views import SubmitResult

        params = {"team": team} if team is not None else None
        data = self._request(
            "POST", f"/v1/{kind.collection}", json=document, source=source, params=params
        )
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

    def size_plan(self, ref: str, *, seed: int) -> RecomputationView:
        from registry.sizing.service import RecomputationView

        data = self._request("POST", f"/v1/plans/{ref}/recomputations", params={"seed": seed})
        return RecomputationView.model_validate(data)

    def size_draft(self, document: dict[str, Any], *, source: str, seed: int) -> PlanRecomputation:
        from registry.planner import PlanRecomputation

        data = self._request(
            "POST", "/v1/sizing", json=document, params={"seed": seed}, source=source
        )
        return PlanRecomputation.model_validate(data)

    def gate_check(
        self,
        ref: str,
        manifests: StatedManifests | None = None,
        policy_release: str | None = None,
    ) -> DecisionView:
        from registry.gate.views import DecisionView

        body: dict[str, Any] = {"plan": ref}
        if manifests is not None:
            body["manifests"] = manifests.model_dump(mode="json")
        if policy_release is not None:
            body["policy_release"] = policy_release
        return DecisionView.model_validate(self._request("POST", "/v1/gate/checks", json=body))

    def get_decision(self, decision_id: str) -> DecisionView:
        from registry.gate.views import DecisionView

        return DecisionView.model_validate(self._request("GET", f"/v1/decisions/{decision_id}"))

    def list_decisions(
        self, filters: dict[str, Any], *, limit: int, offset: int
    ) -> TrailPage[DecisionView]:
        from registry.gate.views import DecisionView
        from registry.records.views import TrailPage

        params = {
            k: (v.isoformat() if hasattr(v, "isoformat") else str(v))
            for k, v in filters.items()
            if v is not None
        }
        data = self._request(
            "GET", "/v1/decisions", params={**params, "limit": limit, "offset": offset}
        )
        return TrailPage[DecisionView].model_validate(data)

    def recheck_all(self) -> RecheckReport:
        from registry.gate.recheck import RecheckReport

        return RecheckReport.model_validate(self._request("POST", "/v1/gate/rechecks"))

    def audit_events(
        self, filters: dict[str, Any], *, limit: int, offset: int
    ) -> TrailPage[AuditEventView]:
        from registry.audit.service import AuditEventView
        from registry.records.views import TrailPage

        params = {
            k: v.isoformat() if hasattr(v, "isoformat") else v
            for k, v in filters.items()
            if v is not None
        }
        data = self._request(
            "GET", "/v1/audit/events", params={**params, "limit": limit, "offset": offset}
        )
        return TrailPage[AuditEventView].model_validate(data)

    def audit_verify(self) -> ChainReport:
        from registry.audit.service import ChainReport

        return ChainReport.model_validate(self._request("GET", "/v1/audit/verify"))

    def audit_acknowledge(self, reason: str) -> Acknowledgement:
        from registry.audit.quarantine import Acknowledgement

        data = self._request("POST", "/v1/audit/acknowledgements", json={"reason": reason})
        return Acknowledgement.model_validate(data)

    def get_attestation(self, decision_id: str) -> dict[str, Any]:
        envelope: dict[str, Any] = self._request("GET", f"/v1/decisions/{decision_id}/attestation")
        return envelope

    def attestation_public_key(self) -> str:
        import httpx

        from registry.errors import Unavailable

        try:
            response = self.client.get("/v1/attestation/public-key")
        except httpx.HTTPError as exc:
            raise Unavailable(f"cannot reach capgate server {self.server}: {exc}") from None
        if response.status_code >= 400:
            raise Unavailable(
                f"no public key from {self.server} (HTTP {response.status_code}): "
                f"{response.text[:200]}"
            )
        return response.text


def open_backend(server: str | None) -> Backend:
    from registry.settings import Settings

    settings = Settings.from_env()
    target = server or settings.server
    if target:
        return RemoteBackend(target, settings.token())
    return LocalBackend(settings.database_url, settings.principal)
