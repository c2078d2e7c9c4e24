"""The FastAPI application factory."""

from __future__ import annotations

import gc
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse

from registry import __version__
from registry.api.access_log import install_access_log
from registry.api.audit import audit_router
from registry.api.bundles import bundles_router
from registry.api.deps import DatabaseDep, authorize
from registry.api.errors import (
    ERROR_DESCRIPTIONS,
    ErrorBody,
    error_body,
    error_responses,
    install_error_handlers,
)
from registry.api.evidence import evidence_router
from registry.api.evidence_lifecycle import evidence_lifecycle_router
from registry.api.gate import gate_router
from registry.api.limits import install_body_limit
from registry.api.owners import owners_router
from registry.api.policy_releases import policy_releases_router
from registry.api.query_guard import reject_unknown_query
from registry.api.records import records_router
from registry.api.tokens import tokens_router
from registry.api.ui import ui_router
from registry.api.waiver_approvals import waiver_approvals_router
from registry.auth.authenticator import Authenticator
from registry.errors import CapgateError
from registry.records.kinds import all_schemas
from registry.settings import Settings
from registry.storage.database import Database
from registry.wiring import install as install_wiring


def _openapi_with_record_schemas(app: FastAPI) -> dict[str, Any]:
    """Bodies are validated by capgate's own strict schemas; document them in OpenAPI."""
    if app.openapi_schema:
        return app.openapi_schema
    spec = get_openapi(title=app.title, version=app.version, routes=app.routes)
    components = spec.setdefault("components", {}).setdefault("schemas", {})
    for schema in all_schemas().values():
        definition = schema.model_json_schema(ref_template="#/components/schemas/{model}")
        components.update(definition.pop("$defs", {}))
        components[schema.__name__] = definition
    error = ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}")
    components.update(error.pop("$defs", {}))
    components[ErrorBody.__name__] = error
    for route, path in spec["paths"].items():
        for method, operation in path.items():
            name = operation.pop("x-capgate-body-schema", None)
            if name:
                operation["requestBody"] = {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}
                    },
                }
            if route.startswith("/v1/"):
                _document_errors(method, operation)
    # FastAPI's own 422 shape ({"detail": [...]}) is never sent: errors.py answers instead.
    for unused in ("HTTPValidationError", "ValidationError"):
        components.pop(unused, None)
    app.openapi_schema = spec
    return spec


def _document_errors(method: str, operation: dict[str, Any]) -> None:
    """The errors any /v1 operation can answer, in the one error shape (errors.py).

    Every /v1 route needs a token (401) whose roles and teams allow it (403), checks its
    query and input (422) and reads the database (503). A path parameter names something
    that may not exist (404); a write may name records that do not exist (404), conflict
    with the registry's state (409) and carry a body over the size limit (413).
    """
    statuses = [401, 403, 422, 503]
    has_path_parameter = any(p.get("in") == "path" for p in operation.get("parameters", []))
    if has_path_parameter or method == "post":
        statuses.append(404)
    if method == "post":
        statuses += [409, 413]
    schema = {"$ref": f"#/components/schemas/{ErrorBody.__name__}"}
    responses = operation.setdefault("responses", {})
    for status in sorted(statuses):
        entry = responses.setdefault(str(status), {"description": ERROR_DESCRIPTIONS[status]})
        # Routes may describe their own errors; the body is the one error shape whatever
        # they say (and FastAPI's default 422 schema is replaced here).
        entry["content"] = {"application/json": {"schema": schema}}


def settle_heap() -> None:
    """Move everything alive at start-up (modules, schemas, the app) out of the garbage
    collector's reach. Otherwise every full collection walks them all: pauses of about
    100 ms, once in a hundred requests, that made the p99 of audit listings (issue 12's
    benchmark). Objects created later are collected as usual. Called by the serving
    process once the app is built, never by tests (each call collects in full)."""
    gc.collect()
    gc.freeze()


def create_app(
    database: Database,
    settings: Settings | None = None,
    authenticator: Authenticator | None = None,
) -> FastAPI:
    """Every route but /healthz and /readyz needs a verified bearer token (the /ui pages
    too: registry.api.ui).

    Without an authenticator the app accepts capgate API tokens only (no OIDC issuer);
    `capgate serve` builds one from its auth configuration.
    """
    install_wiring()  # what submissions and decisions run (registry.wiring)
    app = FastAPI(
        title="capgate",
        version=__version__,
        description="Decision gate and evidence registry for LLM serving capacity plans.",
        # Served below, behind the access table like every other route.
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.database = database
    app.state.settings = settings or Settings.from_env()
    app.state.authenticator = authenticator or Authenticator()
    install_error_handlers(app)
    # Body size, strict JSON (duplicate keys, non-finite numbers) and NUL bytes: first.
    install_body_limit(app)
    install_access_log(app)
    guarded = [Depends(authorize), Depends(reject_unknown_query)]
    # Gate checks first: they are the hot path, and each router before theirs is one
    # more route table a request is matched against (about 0.3 ms of CPU a check). Their
    # paths (/gate, /decisions, /attestation, /sizing, /plans/{ref}/recomputations) are
    # matched by no other router. Then the evidence routes: /v1/evidence/stale must not
    # be read as a record reference.
    for router in (
        gate_router(),
        evidence_router(),
        evidence_lifecycle_router(),
        audit_router(),
        tokens_router(),
        waiver_approvals_router(),
        policy_releases_router(),
        owners_router(),
        bundles_router(),
        records_router(),
    ):
        app.include_router(router, prefix="/v1", dependencies=guarded)
    # Pages for people (HTML, read-only): each authenticates as a /v1 read does (ui.py).
    app.include_router(ui_router(), prefix="/ui")

    @app.get("/healthz", tags=["health"])
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"], response_model=None, responses=error_responses(503))
    def readyz(db: DatabaseDep) -> dict[str, str] | JSONResponse:
        # Checked on every probe: readiness must notice a database that went away.
        try:
            db.check_schema()
        except CapgateError as exc:
            return JSONResponse(status_code=503, content=error_body(exc))
        return {"status": "ready"}

    app.openapi = lambda: _openapi_with_record_schemas(app)  # type: ignore[method-assign]
    _serve_api_docs(app, public=app.state.settings.public_api_docs)
    return app


def _serve_api_docs(app: FastAPI, *, public: bool) -> None:
    """/openapi.json and the Swagger page on it: a read like any other (every role), or
    open to all with CAPGATE_PUBLIC_API_DOCS=1. A browser reaches them as it reaches /ui
    (through an OIDC proxy that adds the bearer token, or on an --insecure-local server)."""
    guard = [] if public else [Depends(authorize)]

    @app.get("/openapi.json", include_in_schema=False, dependencies=guard)
    def openapi_json() -> JSONResponse:
        return JSONResponse(app.openapi())

    @app.get("/docs", include_in_schema=False, dependencies=guard)
    def swagger() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title="capgate API")
