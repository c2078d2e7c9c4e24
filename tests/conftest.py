"""Fixtures: a migrated registry on SQLite (always) and on a real PostgreSQL server.

PostgreSQL runs when CAPGATE_TEST_POSTGRES_URL names a role that may create databases
(the README's test command starts a server and sets it); each test session gets its
own throwaway database, and each test starts from empty tables.
"""

from __future__ import annotations

import os
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from registry.storage import migrate
from registry.storage.database import Database
from registry.storage.models import Base
from registry.wiring import install
from tests.support.cli_registry import copy_registry, local_env, seed_worked_example
from tests.support.opa_server import running_opa
from tests.support.real_parts import absent

# The start-up wiring every entry point installs (registry.wiring): tests call the
# services directly, as the API and the CLI do once installed.
install()

POSTGRES_URL = os.environ.get("CAPGATE_TEST_POSTGRES_URL")
CACHED_OPA = Path.home() / ".cache" / "capgate" / "opa-v1.22.3" / "bin" / "opa"
BACKENDS = ["sqlite", "postgres"]

# A test of a property no database can change (input refused before the registry is read
# or written, a file parsed, a page drawn) runs on SQLite only: `@sqlite_only` narrows the
# `database_url` fixture (and every fixture built on it) to that one backend. Where the
# database matters (SQL, locks, transactions, what is stored and read back) a test keeps
# both; the suite's budget (docs/development.md) is why the others do not.
sqlite_only = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


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
    """Every registry table emptied and its ids restarted at 1 (as TRUNCATE ... RESTART
    IDENTITY would): DELETE, children first, is several times faster than a TRUNCATE of
    the tables on a loaded machine (a TRUNCATE writes new files for each), and it runs
    before every PostgreSQL test."""
    with database.engine.begin() as connection:
        for table in reversed(Base.metadata.sorted_tables):
            connection.execute(table.delete())
        sequences = connection.execute(
            text(
                "SELECT sequence_name FROM information_schema.sequences "
                "WHERE sequence_schema = current_schema()"
            )
        ).scalars()
        for sequence in list(sequences):
            connection.execute(text(f'ALTER SEQUENCE "{sequence}" RESTART'))


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty SQLite registry migrated once per session: the tests get copies (a file
    copy instead of running every migration again for each test)."""
    path = tmp_path_factory.mktemp("migrated") / "registry.db"
    migrate.upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A migrated, empty registry database URL on each backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{copy_registry(request.getfixturevalue('migrated_sqlite'), tmp_path)}"
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


# ---- the worked example's local registry, for the tests that run the CLI ---------------


@pytest.fixture(scope="session")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The worked example registered through the CLI and sized, once per test session
    (per xdist worker): a template SQLite file, never written by a test."""
    return seed_worked_example(tmp_path_factory.mktemp("seeded"))


@pytest.fixture
def env(seeded: Path, tmp_path: Path) -> dict[str, str]:
    """A migrated local registry holding the worked example (a copy of `seeded`): the
    environment of `capgate` on it."""
    return local_env(copy_registry(seeded, tmp_path))


# ---- the order files start in: the longest first ------------------------------------------


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files marked `long` first, longest first; then the others, most tests first.

    scripts/test.sh runs two workers, one file each at a time, in this order
    (`--dist loadfile --no-loadscope-reorder`): a long file started last would leave the
    other core idle at the end, so the long ones start first and the short ones fill in.
    The order inside a file is kept (its module fixtures are set up once).
    """
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)

    def weight(file_items: list[pytest.Item]) -> tuple[float, int]:
        marker = file_items[0].get_closest_marker("long")
        seconds = float(marker.args[0]) if marker is not None else 0.0
        return seconds, len(file_items)

    # sorted() is stable: files of equal weight keep their collection order.
    ordered = sorted(files.values(), key=weight, reverse=True)
    items[:] = [item for file_items in ordered for item in file_items]


@pytest.fixture
def cold_planner_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty in-process planner cache for this test: the suite dates the example's
    evidence once per process (tests/factories.PROCESS_STARTED), so an earlier test may
    have left the same inputs' result there, and a test that needs the planner to run
    (its budget, its progress) would otherwise depend on the order tests run in."""
    from registry.sizing import service as sizing_service

    monkeypatch.setattr(sizing_service, "_CACHE", OrderedDict())
