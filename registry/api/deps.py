"""Request-scoped dependencies: the database handle, the verified identity, its roles."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.routing import APIRoute

from registry.auth.access import allowed_roles
from registry.auth.authenticator import Authenticator
from registry.auth.identity import Identity
from registry.auth.token_cache import Confirmation
from registry.storage.database import Database

# The dependencies that do no I/O are `async def`: FastAPI runs a plain `def` dependency
# in its thread pool, a hand-off to a worker thread and back (about 0.2 ms of CPU each,
# several a request: docs/production.md, *Gate throughput*). get_identity may read the
# database, so it stays a plain `def`, run in the pool.


async def get_database(request: Request) -> Database:
    database: Database = request.app.state.database
    return database


# The routes whose handler confirms the request's API token in its own first reading
# session (registry.auth.token_cache): they may take an identity this process verified
# moments ago, saving a database session a request. Each handler passes
# `token_confirmation(request)` on; tests/api/test_auth.py revokes a cached token and
# expects the next request refused. (method, the route's path_format)
CONFIRMED_BY_HANDLER = frozenset({("POST", "/gate/checks")})


def _route_path(request: Request) -> str:
    route = request.scope.get("route")
    return route.path_format if isinstance(route, APIRoute) else request.url.path


def get_identity(request: Request) -> Identity:
    """Verified once per request; the principal is the credential's subject, never a header."""
    cached: Identity | None = getattr(request.state, "identity", None)
    if cached is not None:
        return cached
    authenticator: Authenticator = request.app.state.authenticator
    authorization = request.headers.get("authorization")
    database = request.app.state.database
    if (request.method, _route_path(request)) in CONFIRMED_BY_HANDLER:
        identity, confirmation = authenticator.authenticate_provisionally(authorization, database)
        request.state.token_confirmation = confirmation
    else:
        identity = authenticator.authenticate(authorization, database)
    request.state.identity = identity
    return identity


def token_confirmation(request: Request) -> Confirmation | None:
    """What the handler of a CONFIRMED_BY_HANDLER route must run in its first reading
    session (None: the token was looked up for this request, or is not an API token)."""
    confirmation: Confirmation | None = getattr(request.state, "token_confirmation", None)
    return confirmation


async def authorize(request: Request, identity: Annotated[Identity, Depends(get_identity)]) -> None:
    """The access table (registry.auth.access) decides, before the handler runs."""
    path = _route_path(request)
    identity.require(allowed_roles(request.method, path), f"{request.method} /v1{path}")


async def get_principal(identity: Annotated[Identity, Depends(get_identity)]) -> str:
    return identity.subject


DatabaseDep = Annotated[Database, Depends(get_database)]
IdentityDep = Annotated[Identity, Depends(get_identity)]
PrincipalDep = Annotated[str, Depends(get_principal)]
