"""The one mapping from capgate errors to HTTP: `{"error", "message", "problems"}`."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from registry.errors import CapgateError, FieldProblem, InvalidInput


class Problem(BaseModel):
    """One field's problem: `loc` is the dotted path to it ("" for the whole input)."""

    loc: str
    message: str


class ErrorBody(BaseModel):
    """Every 4xx and 5xx answer of the API: the class of the error, one human line, the
    fields at fault (InvalidInput only) and machine-readable details (some errors)."""

    error: str = Field(description="The error class, e.g. InvalidInput, NotFound, Conflict")
    message: str
    problems: list[Problem] = Field(default_factory=list)
    details: dict[str, Any] = Field(default_factory=dict)


ERROR_DESCRIPTIONS = {
    401: "No valid bearer token",
    403: "The token's roles or teams do not allow this",
    404: "No such record, decision, token or path",
    409: "Conflicts with the registry's current state",
    413: "Request body over the size limit",
    422: "Invalid request: malformed, out of bounds or inconsistent input",
    503: "The registry database is unavailable or not at the current schema",
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` entries for these statuses, all in the one error shape."""
    return {
        status: {"model": ErrorBody, "description": ERROR_DESCRIPTIONS[status]}
        for status in statuses
    }


def error_body(exc: CapgateError) -> dict[str, object]:
    body: dict[str, object] = {"error": type(exc).__name__, "message": exc.message}
    if isinstance(exc, InvalidInput):
        body["problems"] = [{"loc": p.loc, "message": p.message} for p in exc.problems]
    if exc.details:
        body["details"] = exc.details
    return body


def _methods_for(request: Request) -> list[str]:
    """Every method some route of the application answers on the request's path."""
    # Asked of each route as routing asks it (included routers answer for their own
    # routes): FULL when the path and the method both match.
    return [
        method
        for method in _METHODS
        if any(
            route.matches({**request.scope, "method": method})[0] is Match.FULL
            for route in request.app.routes
        )
    ]


_METHODS = ("DELETE", "GET", "HEAD", "PATCH", "POST", "PUT")


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # Routing's own answers (unknown path 404, wrong method 405) in the one error shape.
        if exc.status_code == 400:
            # FastAPI's answer to a body it cannot parse (a broken multipart form): invalid
            # input like any other, named as the body.
            invalid = InvalidInput(
                "invalid request body", problems=[FieldProblem("body", str(exc.detail))]
            )
            return JSONResponse(status_code=422, content=error_body(invalid))
        names = {404: "NotFound", 405: "MethodNotAllowed"}
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            # Starlette names the methods of the first route matching the path; the path
            # may have several (GET and POST /v1/plans are two routes): RFC 9110 wants all.
            headers["Allow"] = ", ".join(_methods_for(request))
        return JSONResponse(
            status_code=exc.status_code,
            content={"error": names.get(exc.status_code, "HTTPError"), "message": str(exc.detail)},
            headers=headers,
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
