"""Fixtures: a migrated registry on SQLite (always) and on a real PostgreSQL server.

PostgreSQL runs when CAPGATE_TEST_POSTGRES_URL names a role that may create databases
(the README's test command starts a server and sets it); each test session gets its
own throwaway database, and each test starts from empty tables.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from registry.storage import migrate
from registry.storage.database import Database
from registry.wiring import install
from tests.support.opa_server import running_opa
from tests.support.real_parts import absent

# The start-up wiring every entry point installs (registry.wiring): tests call the
# services directly, as the API and the CLI do once installed.
install()

POSTGRES_URL = os.environ.get("CAPGATE_TEST_POSTGRES_URL")
CACHED_OPA = Path.home() / ".cache" / "capgate" / "opa-v1.22.3" / "bin" / "opa"
BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(scope="session", autouse=True)
def _private_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The embedded defaults (signing key, default registry) live in the user's data
    directory; tests, and the CLI processes they start, use a throwaway one instead."""
    before = os.environ.get("XDG_DATA_HOME")
    os.environ["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("xdg-data"))
    yield
    if before is None:
        os.environ.pop("XDG_DATA_HOME", None)
    else:
        os.environ["XDG_DATA_HOME"] = before


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    if not POSTGRES_URL:
        absent("CAPGATE_TEST_POSTGRES_URL not set", "run scripts/ci/postgres.sh")
    admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    name = f"capgate_t_{uuid.uuid4().hex[:10]}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    try:
        yield url
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(scope="session")
def migrated_postgres_url(postgres_url: str) -> str:
    migrate.upgrade(postgres_url)
    return postgres_url


def _empty_tables(database: Database) -> None:
    with database.engine.begin() as connection:
        connection.execute(
            text(
                "TRUNCATE staleness, decision_attestations, decisions, recomputations, "
                "waiver_approvals, policy_release_approvals, policy_releases, api_tokens, "
                "policy_decision_logs, policy_bundles, series_owners, record_refs, "
                "records, audit_events RESTART IDENTITY CASCADE"
            )
        )


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A migrated, empty registry database URL on each backend."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'registry.db'}"
        migrate.upgrade(url)
        yield url
        return
    url = request.getfixturevalue("migrated_postgres_url")
    database = Database(url)
    _empty_tables(database)
    database.engine.dispose()
    yield url


@pytest.fixture
def database(database_url: str) -> Iterator[Database]:
    db = Database(database_url)
    yield db
    db.engine.dispose()


# ---- the real OPA server (policy parity, the gate on the opa engine) ------------------


@pytest.fixture(scope="session")
def opa_binary() -> Path:
    """CAPGATE_OPA_BINARY, else the cached build; skipped without one, failed on CI."""
    configured = os.environ.get("CAPGATE_OPA_BINARY")
    binary = Path(configured) if configured else CACHED_OPA
    if not binary.is_file():
        absent(f"no OPA binary at {binary}", "run scripts/ci/opa.sh")
    return binary


@pytest.fixture(scope="session")
def opa_url(opa_binary: Path) -> Iterator[str]:
    """One OPA server for the session; tests that change its bundle use their own."""
    with running_opa(opa_binary) as url:
        yield url
