"""The one mapping from capgate errors to HTTP: `{"error", "message", "problems"}`."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from registry.errors import CapgateError, FieldProblem, InvalidInput


def error_body(exc: CapgateError) -> dict[str, object]:
    body: dict[str, object] = {"error": type(exc).__name__, "message": exc.message}
    if isinstance(exc, InvalidInput):
        body["problems"] = [{"loc": p.loc, "message": p.message} for p in exc.problems]
    if exc.details:
        body["details"] = exc.details
    return body


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # Routing's own answers (unknown path 404, wrong method 405) in the one error shape.
        names = {404: "NotFound", 405: "MethodNotAllowed"}
        return JSONResponse(
            status_code=exc.status_code,
            content={"error": names.get(exc.status_code, "HTTPError"), "message": str(exc.detail)},
            headers=exc.headers,
        )

    @app.exception_handler(CapgateError)
    async def _capgate_error(_request: Request, exc: CapgateError) -> JSONResponse:
        return JSONResponse(status_code=exc.status_code, content=error_body(exc))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for item in exc.errors():
            loc = [str(part) for part in item.get("loc", ())]
            # FastAPI prefixes where the value came from; keep the field path only.
            if loc and loc[0] in {"body", "query", "path", "header"}:
                loc = loc[1:]
            problems.append(FieldProblem(".".join(loc), str(item.get("msg", "invalid"))))
        error = InvalidInput("invalid request", problems=problems)
        return JSONResponse(status_code=422, content=error_body(error))
