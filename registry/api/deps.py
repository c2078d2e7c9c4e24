"""Request-scoped dependencies: the database handle and the asking principal."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request

from registry.storage.database import Database


def get_database(request: Request) -> Database:
    database: Database = request.app.state.database
    return database


def get_principal(
    request: Request,
    x_capgate_principal: Annotated[str | None, Header()] = None,
) -> str:
    # No authentication yet: the principal is what the caller asserts, else its address.
    if x_capgate_principal:
        return x_capgate_principal[:256]
    host = request.client.host if request.client else "unknown"
    return f"api:{host}"


DatabaseDep = Annotated[Database, Depends(get_database)]
PrincipalDep = Annotated[str, Depends(get_principal)]
