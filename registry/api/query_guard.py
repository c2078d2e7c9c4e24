"""Unknown query parameters are a 422 naming them, not silently ignored.

A misspelt filter (`?outcom=deny`) that is ignored returns every row: to an auditor
that reads as an answer. FastAPI ignores what a route does not declare, so this
dependency compares the query string with what the matched route declares.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.routing import APIRoute

from registry.errors import FieldProblem, InvalidInput

# GET /v1/evidence?stale=true is answered by a route that reads `stale` while matching;
# with stale=false the generic listing answers, and must accept the parameter too.
UNDECLARED = {("GET", "/evidence"): frozenset({"stale"})}


def _declared(dependant: Any) -> set[str]:
    names = {field.alias for field in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _declared(sub)
    return names


def reject_unknown_query(request: Request) -> None:
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
