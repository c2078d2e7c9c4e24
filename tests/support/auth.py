"""Credentials for API tests: real API tokens written to the registry under test."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from fastapi import FastAPI
from fastapi.testclient import TestClient

from registry.api.app import create_app
from registry.auth.identity import ALL_ROLES, Role
from registry.auth.tokens import TokenRequest, create_token
from registry.storage.database import Database

EVERY_ROLE = tuple(sorted(r.value for r in ALL_ROLES))


def token_for(
    database: Database,
    subject: str = "ci-bot",
    roles: Iterable[str] = EVERY_ROLE,
    teams: Iterable[str] | None = None,
) -> str:
    """A fresh API token. API tokens always carry teams: None gives the owner teams the
    tests' plans use."""
    request = TokenRequest(
        subject=subject,
        roles=frozenset(Role(r) for r in roles),
        teams=frozenset(
            teams if teams is not None else ("team-assistant@example.com", "team-a", "team-b")
        ),
        lifetime=timedelta(days=1),
    )
    issued = database.write(lambda ctx: create_token(ctx, request), principal="test-admin")
    return issued.token


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def client_for(
    app_or_database: FastAPI | Database,
    subject: str = "ci-bot",
    roles: Iterable[str] = EVERY_ROLE,
    teams: Iterable[str] | None = None,
) -> TestClient:
    """A TestClient (use it as a context manager) carrying a valid token for `subject`."""
    if isinstance(app_or_database, Database):
        app, database = create_app(app_or_database), app_or_database
    else:
        app, database = app_or_database, app_or_database.state.database
    return TestClient(app, headers=bearer(token_for(database, subject, roles, teams)))
