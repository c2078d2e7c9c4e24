"""Evidence import (multipart upload), stale evidence and staleness history.

Included before the generic records router, so its paths win:

- ``POST /v1/evidence/import``: result files in, one evidence record per stage, all or
  nothing (201 when anything was created, 200 when every record already existed);
- ``GET /v1/evidence/stale`` and ``GET /v1/evidence?stale=true``: stale evidence. The
  second is matched only when ``stale`` is true; otherwise the request falls through to
  the generic listing, so ``GET /v1/evidence`` keeps its meaning;
- ``GET /v1/evidence/{ref}/staleness``: one evidence version's staleness history.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated
from urllib.parse import parse_qs

from fastapi import APIRouter, File, Form, Query, Request, Response, UploadFile, status
from fastapi.routing import APIRoute
from pydantic import Field
from starlette.routing import Match
from starlette.types import Scope

from registry.api.deps import DatabaseDep, IdentityDep
from registry.api.limits import Offset, PathText
from registry.errors import FieldProblem, InvalidInput
from registry.records.views import Page, SubmitResult
from registry.staleness.views import StaleEvidence, StalenessHistory
from registry.storage.database import Database

if TYPE_CHECKING:
    from registry.importers.service import ImportFile, ImportResult
    from registry.records.evidence import RuntimeInfo
    from registry.settings import Settings

MAX_PAGE = 500
# Bytes read from one upload at most: a 100,000-request detailed vLLM file is ~70 MiB.
MAX_UPLOAD_BYTES = 256 * 1024 * 1024

Limit = Annotated[int, Query(ge=1, le=MAX_PAGE)]
IncludeReplaced = Annotated[
    bool,
    Query(description="Also list evidence versions replaced by a newer version of the same name."),
]
_TRUE = {"true", "1", "yes", "on"}


class _WhenStaleRequested(APIRoute):
    """Matches only when the query string says `stale=true`; otherwise falls through."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child = super().matches(scope)
        if match is Match.NONE:
            return match, child
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if any(value.lower() in _TRUE for value in query.get("stale", [])):
            return match, child
        return Match.NONE, {}


def _stale_page(
    database: Database, *, limit: int, offset: int, include_replaced: bool
) -> Page[StaleEvidence]:
    from registry.staleness import service

    with database.reading() as session:
        return service.list_stale(
            session,
            now=datetime.now(UTC),
            limit=limit,
            offset=offset,
            include_replaced=include_replaced,
        )


def _parse_measured_at(value: str | None) -> datetime | None:
    if value is None or not value.strip():
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise InvalidInput(
            "invalid import request",
            problems=[FieldProblem("measured_at", f"{value!r} is not an ISO 8601 time")],
        ) from None
    if parsed.tzinfo is None:
        raise InvalidInput(
            "invalid import request",
            problems=[FieldProblem("measured_at", "needs a time zone, e.g. 2026-11-24T14:05:00Z")],
        )
    return parsed


def _parse_runtime(value: str | None) -> RuntimeInfo | None:
    from registry.importers.runtime import parse_runtime

    if value is None or not value.strip():
        return None
    try:
        return parse_runtime(value, loc="runtime")
    except InvalidInput as exc:
        raise InvalidInput("invalid import request", problems=exc.problems) from None


async def _read_uploads(files: list[UploadFile]) -> list[tuple[str, bytes]]:
    out: list[tuple[str, bytes]] = []
    for index, upload in enumerate(files):
        name = upload.filename or f"upload-{index}"
        data = await upload.read(MAX_UPLOAD_BYTES + 1)
        if len(data) > MAX_UPLOAD_BYTES:
            raise InvalidInput(
                f"{name}: file too large",
                problems=[FieldProblem(f"files.{index}", f"larger than {MAX_UPLOAD_BYTES} bytes")],
                source=name,
            )
        out.append((name, data))
    return out


def _class_files(
    uploads: list[tuple[str, bytes]], classes: list[str]
) -> tuple[list[ImportFile], str | None, bool]:
    """Uploads with their classes: one class for all, or NAME=FILENAME for each (mixed)."""
    from registry.importers.service import ImportFile

    pairs = [c for c in classes if "=" in c]
    if not pairs:
        if len(classes) > 1:
            raise InvalidInput(
                "invalid import request",
                problems=[
                    FieldProblem(
                        "traffic_class",
                        "give one class for every file, or NAME=FILENAME for each file of a "
                        "mixed test",
                    )
                ],
            )
        single = classes[0] if classes else None
        return [ImportFile(name=n, data=d) for n, d in uploads], single, False
    by_file = {}
    for pair in classes:
        name, _, file_name = pair.partition("=")
        if not name or not file_name:
            raise InvalidInput(
                "invalid import request",
                problems=[FieldProblem("traffic_class", f"{pair!r} is not NAME=FILENAME")],
            )
        by_file[file_name.rsplit("/", 1)[-1]] = name
    inputs = []
    for file_name, data in uploads:
        cls = by_file.get(file_name.rsplit("/", 1)[-1])
        if cls is None:
            raise InvalidInput(
                "invalid import request",
                problems=[
                    FieldProblem("traffic_class", f"no NAME={file_name} names this file's class")
                ],
                source=file_name,
            )
        inputs.append(ImportFile(name=file_name, data=data, traffic_class=cls))
    return inputs, None, True


def _check_prometheus_allowed(url: str, settings: Settings) -> None:
    """The server reads only the Prometheus its operator named (CAPGATE_PROMETHEUS_URLS):
    a URL any importer could name would make it fetch wherever that caller points."""
    from registry.importers.server_series import endpoint

    shown = endpoint(url, loc="prometheus").url
    if shown in settings.prometheus_urls:
        return
    allowed = ", ".join(settings.prometheus_urls) or "none is set"
    raise InvalidInput(
        "invalid import request",
        problems=[
            FieldProblem(
                "prometheus",
                f"this server reads only the Prometheus URLs in CAPGATE_PROMETHEUS_URLS "
                f"({allowed}), not {shown}; ask its operator to add it, or import locally",
            )
        ],
    )


def _with_source(exc: InvalidInput) -> InvalidInput:
    """Name the offending file in the error body (details.source), as the CLI prints it."""
    if exc.source and "source" not in exc.details:
        exc.details = {**exc.details, "source": exc.source}
    return exc


class EvidenceImportResult(SubmitResult):
    """One record of an import, as answered: `registry.importers.service.ImportResult` on the
    wire (declared here so that serving does not load the importers before an import)."""

    notes: list[str] = Field(
        default_factory=list,
        description="What the import decided for you, e.g. a re-imported file keeping the "
        "measured time of its first import.",
    )


def evidence_router() -> APIRouter:
    router = APIRouter(tags=["evidence"])

    @router.post(
        "/evidence/import",
        response_model=list[EvidenceImportResult],
        status_code=status.HTTP_201_CREATED,
        summary="Import load-test result files as evidence (one record per stage)",
        operation_id="import_evidence",
        responses={200: {"description": "Every record existed already (same file imported)"}},
    )
    async def import_evidence(
        request: Request,
        response: Response,
        database: DatabaseDep,
        identity: IdentityDep,
        files: Annotated[list[UploadFile], File(description="Result files of one tool.")],
        workload: Annotated[str, Form(description="Workload reference measured against.")],
        provider: Annotated[str, Form(description="Provider reference measured against.")],
        tool: Annotated[
            str,
            Form(description="auto, vllm-bench, guidellm, inference-perf, genai-perf, aiperf."),
        ] = "auto",
        plan: Annotated[str | None, Form(description="Plan reference measured against.")] = None,
        traffic_class: Annotated[
            list[str] | None,
            Form(
                description="The traffic class the test offered (one value for every file), "
                "or NAME=FILENAME once per uploaded file for a mixed test run together."
            ),
        ] = None,
        measured_at: Annotated[
            str | None,
            Form(
                description="When the run started, ISO 8601 with a zone: needed when the file "
                "states no time, preferred to a time without a zone. A file's own zoned time "
                "wins (a value further from it than the run's duration plus 5 minutes is "
                "refused), and a file already imported keeps its first measured time."
            ),
        ] = None,
        replicas: Annotated[
            int | None,
            Form(ge=1, description="Ready replicas tested; required unless the file states it."),
        ] = None,
        runtime: Annotated[
            str | None,
            Form(
                description="The serving runtime measured, NAME==VERSION (e.g. vllm==0.8.5); "
                "the file's own statement wins, a contradicting value is refused."
            ),
        ] = None,
        name: Annotated[
            str | None, Form(description="Record name (one file or a mixed test).")
        ] = None,
        together: Annotated[
            bool,
            Form(
                description="The files were run together, one per class, each naming its "
                "class: combine them into one mixed record."
            ),
        ] = False,
        prometheus: Annotated[
            str | None,
            Form(
                description="Prometheus query API base URL: the server reads the vLLM "
                "series over each test's window into the record's `server` (stored without "
                "credentials)."
            ),
        ] = None,
        selector: Annotated[
            str | None,
            Form(description='PromQL label matchers of the tested series, e.g. namespace="llm".'),
        ] = None,
    ) -> list[EvidenceImportResult]:
        from starlette.concurrency import run_in_threadpool

        from registry.importers.service import ImportOptions, import_files

        if prometheus:
            _check_prometheus_allowed(prometheus, request.app.state.settings)
        uploads = await _read_uploads(files)
        try:
            inputs, single, mixed = _class_files(uploads, [c for c in traffic_class or [] if c])
        except InvalidInput as exc:
            raise _with_source(exc) from None
        if together and single is not None:
            raise InvalidInput(
                "invalid import request",
                problems=[
                    FieldProblem("together", "each file names its class: drop traffic_class")
                ],
            )
        mixed = mixed or together
        options = ImportOptions(
            workload=workload,
            provider=provider,
            tool=tool,
            plan=plan or None,
            traffic_class=single,
            measured_at=_parse_measured_at(measured_at),
            replicas=replicas,
            runtime=_parse_runtime(runtime),
            name=name or None,
            mixed=mixed,
            prometheus=prometheus or None,
            selector=selector or None,
        )

        def work() -> list[ImportResult]:
            # The evidence series belong to the plan's team (registry.auth.ownership).
            return import_files(
                database, inputs, options, principal=identity.subject, identity=identity
            )

        try:
            # Parsing and writing block: keep them off the event loop.
            results = await run_in_threadpool(work)
        except InvalidInput as exc:
            raise _with_source(exc) from None
        if not any(result.created for result in results):
            response.status_code = status.HTTP_200_OK
        return [EvidenceImportResult.model_validate(r.model_dump()) for r in results]

    @router.get(
        "/evidence/stale",
        response_model=Page[StaleEvidence],
        summary="List stale evidence (material changes, replaced, or past the maximum age)",
        operation_id="list_stale_evidence",
    )
    def list_stale(
        database: DatabaseDep,
        limit: Limit = 50,
        offset: Offset = 0,
        include_replaced: IncludeReplaced = False,
    ) -> Page[StaleEvidence]:
        return _stale_page(database, limit=limit, offset=offset, include_replaced=include_replaced)

    # GET /v1/evidence?stale=true: the same listing; without stale=true this route does not
    # match and the generic records router answers. Documented as /v1/evidence/stale.
    stale_query: Callable[..., Page[StaleEvidence]] = list_stale
    router.add_api_route(
        "/evidence",
        stale_query,
        methods=["GET"],
        response_model=Page[StaleEvidence],
        include_in_schema=False,
        route_class_override=_WhenStaleRequested,
    )

    @router.get(
        "/evidence/{ref}/staleness",
        response_model=StalenessHistory,
        summary="The staleness history of one evidence version, and whether it is stale now",
        operation_id="get_evidence_staleness",
    )
    def staleness(ref: PathText, database: DatabaseDep) -> StalenessHistory:
        from registry.staleness import service

        with database.reading() as session:
            return service.staleness_history(session, ref, now=datetime.now(UTC))

    return router
