"""Unknown query parameters are a 422 naming them, not silently ignored.

A misspelt filter (`?outcom=deny`) that is ignored returns every row: to an auditor
that reads as an answer. FastAPI ignores what a route does not declare, so this
dependency compares the query string with what the matched route declares.

For the same reason a date-time filter must be a date-time: pydantic also reads a
number as seconds since 1970, so `?until=23.54` filtered on 1970-01-01T00:00:23Z while
OpenAPI documents a date-time string (found by the schemathesis fuzzer).
"""

from __future__ import annotations

import re
from datetime import datetime
from types import NoneType, UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from fastapi import Request
from fastapi.routing import APIRoute
from pydantic import AwareDatetime, FutureDatetime, NaiveDatetime, PastDatetime

from registry.errors import FieldProblem, InvalidInput

# GET /v1/evidence?stale=true is answered by a route that reads `stale` while matching;
# with stale=false the generic listing answers, and must accept the parameter too.
UNDECLARED = {("GET", "/evidence"): frozenset({"stale"})}


DATETIME_TYPES = (datetime, AwareDatetime, NaiveDatetime, PastDatetime, FutureDatetime)
# A date and a time of day (RFC 3339, which allows a space for the T); pydantic parses
# the rest, and would read a bare number as a Unix time.
DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}")


def _is_datetime(annotation: Any) -> bool:
    if get_origin(annotation) is Annotated:
        return _is_datetime(get_args(annotation)[0])
    if get_origin(annotation) in (Union, UnionType):
        return any(_is_datetime(a) for a in get_args(annotation) if a is not NoneType)
    return annotation in DATETIME_TYPES


def _datetime_params(dependant: Any) -> set[str]:
    names = {
        field.alias for field in dependant.query_params if _is_datetime(field.field_info.annotation)
    }
    for sub in dependant.dependencies:
        names |= _datetime_params(sub)
    return names


def _declared(dependant: Any) -> set[str]:
    names = {field.alias for field in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _declared(sub)
    return names


async def reject_unknown_query(request: Request) -> None:
    """Checks the query string only (no I/O): on the event loop, not in the thread pool."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute) or not request.query_params:
        return
    known = _declared(route.dependant) | UNDECLARED.get((request.method, route.path_format), set())
    unknown = sorted(set(request.query_params) - known)
    if unknown:
        allowed = ", ".join(sorted(known)) or "none"
        raise InvalidInput(
            "unknown query parameter",
            problems=[
                FieldProblem(name, f"not a query parameter of this route (it takes: {allowed})")
                for name in unknown
            ],
        )
    problems = [
        FieldProblem(name, "not a date-time: give an RFC 3339 date and time")
        for name in sorted(_datetime_params(route.dependant))
        if any(not DATE_TIME.match(value) for value in request.query_params.getlist(name))
    ]
    if problems:
        raise InvalidInput("invalid request", problems=problems)
