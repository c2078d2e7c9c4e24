"""Request-scoped dependencies: the database handle, the verified identity, its roles."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.routing import APIRoute

from registry.auth.access import allowed_roles
from registry.auth.authenticator import Authenticator
from registry.auth.identity import Identity
from registry.storage.database import Database


def get_database(request: Request) -> Database:
    database: Database = request.app.state.database
    return database


def get_identity(request: Request) -> Identity:
    """Verified once per request; the principal is the credential's subject, never a header."""
    cached: Identity | None = getattr(request.state, "identity", None)
    if cached is not None:
        return cached
    authenticator: Authenticator = request.app.state.authenticator
    identity = authenticator.authenticate(
        request.headers.get("authorization"), request.app.state.database
    )
    request.state.identity = identity
    return identity


def authorize(request: Request, identity: Annotated[Identity, Depends(get_identity)]) -> None:
    """The access table (registry.auth.access) decides, before the handler runs."""
    route = request.scope.get("route")
    path = route.path_format if isinstance(route, APIRoute) else request.url.path
    identity.require(allowed_roles(request.method, path), f"{request.method} /v1{path}")


def get_principal(identity: Annotated[Identity, Depends(get_identity)]) -> str:
    return identity.subject


DatabaseDep = Annotated[Database, Depends(get_database)]
IdentityDep = Annotated[Identity, Depends(get_identity)]
PrincipalDep = Annotated[str, Depends(get_principal)]
