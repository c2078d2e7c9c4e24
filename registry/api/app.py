"""The FastAPI application factory."""

from __future__ import annotations

from typing import Any

from fastapi import Depends, FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse

from registry import __version__
from registry.api.access_log import install_access_log
from registry.api.audit import audit_router
from registry.api.bundles import bundles_router
from registry.api.deps import DatabaseDep, authorize
from registry.api.errors import error_body, install_error_handlers
from registry.api.evidence import evidence_router
from registry.api.evidence_lifecycle import evidence_lifecycle_router
from registry.api.gate import gate_router
from registry.api.limits import install_body_limit
from registry.api.query_guard import reject_unknown_query
from registry.api.records import records_router
from registry.api.tokens import tokens_router
from registry.api.waiver_approvals import waiver_approvals_router
from registry.auth.authenticator import Authenticator
from registry.errors import CapgateError
from registry.records.kinds import all_schemas
from registry.settings import Settings
from registry.storage.database import Database


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
    for path in spec["paths"].values():
        for operation in path.values():
            name = operation.pop("x-capgate-body-schema", None)
            if name:
                operation["requestBody"] = {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}
                    },
                }
    app.openapi_schema = spec
    return spec


def create_app(
    database: Database,
    settings: Settings | None = None,
    authenticator: Authenticator | None = None,
) -> FastAPI:
    """Every route but /healthz and /readyz needs a verified bearer token.

    Without an authenticator the app accepts capgate API tokens only (no OIDC issuer);
    `capgate serve` builds one from its auth configuration.
    """
    app = FastAPI(
        title="capgate",
        version=__version__,
        description="Decision gate and evidence registry for LLM serving capacity plans.",
    )
    app.state.database = database
    app.state.settings = settings or Settings.from_env()
    app.state.authenticator = authenticator or Authenticator()
    install_error_handlers(app)
    # Body size, strict JSON (duplicate keys, non-finite numbers) and NUL bytes: first.
    install_body_limit(app)
    install_access_log(app)
    guarded = [Depends(authorize), Depends(reject_unknown_query)]
    # Evidence routes first: /v1/evidence/stale must not be read as a record reference.
    for router in (
        evidence_router(),
        evidence_lifecycle_router(),
        gate_router(),
        audit_router(),
        tokens_router(),
        waiver_approvals_router(),
        bundles_router(),
        records_router(),
    ):
        app.include_router(router, prefix="/v1", dependencies=guarded)

    @app.get("/healthz", tags=["health"])
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"], response_model=None)
    def readyz(db: DatabaseDep) -> dict[str, str] | JSONResponse:
        # Checked on every probe: readiness must notice a database that went away.
        try:
            db.check_schema()
        except CapgateError as exc:
            return JSONResponse(status_code=503, content=error_body(exc))
        return {"status": "ready"}

    app.openapi = lambda: _openapi_with_record_schemas(app)  # type: ignore[method-assign]
    return app
