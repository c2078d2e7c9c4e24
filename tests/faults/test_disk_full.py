"""The disk fills up under a SQLite registry: writes are refused whole, the gate fails closed.

Two real SQLITE_FULL faults, no mocks:

* the registry lives on a small tmpfs (mounted here; we are root) that a filler file
  fills: every write the kernel cannot fit fails with ENOSPC, in the CLI, the API and
  in-process alike. Skipped with one line where tmpfs cannot be mounted.
* `PRAGMA max_page_count` on the registry's own SQLAlchemy engine (a connect listener
  the test adds to the engine `Database` built): SQLite refuses to grow the file past
  it. Runs anywhere.

Afterwards the chain verifies, every acknowledged write is there, nothing refused is,
and versions run 1..n; once space is back the registry carries on.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event

from registry.api.app import create_app
from registry.errors import Unavailable
from registry.storage import migrate
from registry.storage.database import Database
from tests.factories import example
from tests.faults.common import (
    PLAN,
    Ledger,
    assert_cli_error,
    assert_http_error,
    assert_registry_whole,
    capgate,
    cli_env,
    embedded_settings,
    seed,
    submit_workload,
    workload_descriptions,
)
from tests.support.auth import bearer, token_for

FULL = "database or disk is full"
TMPFS_BYTES = 8 * 1024 * 1024
# Left free before the run: a few writes fit (each appends a few 4 KiB WAL frames).
HEADROOM_BYTES = 96 * 1024


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An 8 MiB tmpfs: a disk that can really fill up."""
    mountpoint = tmp_path / "small-disk"
    mountpoint.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_BYTES},mode=0755", "tmpfs", str(mountpoint)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], check=False)


def _fill(directory: Path, leave: int) -> Path:
    """Fill the filesystem of `directory` until `leave` bytes are free."""
    filler = directory / "filler"
    free = shutil.disk_usage(directory).free
    with filler.open("ab") as handle:
        handle.write(b"\0" * max(0, free - leave))
    return filler


def _write_until_full(database: Database, ledger: Ledger, limit: int = 200) -> str:
    """Acknowledged writes until the disk refuses one; the refusal's message."""
    for index in range(limit):
        description = f"write {index}"
        try:
            submit_workload(database, description)
        except Unavailable as exc:
            ledger.refused.add(description)
            return exc.message
        ledger.acknowledged.add(description)
    pytest.fail(f"{limit} writes fitted on a full disk")


def test_disk_full_refuses_writes_and_fails_the_gate_closed(small_disk: Path) -> None:
    url = f"sqlite:///{small_disk / 'registry.db'}"
    migrate.upgrade(url)
    database = Database(url)  # the server's process: it keeps its WAL open throughout
    seed(database)
    client = TestClient(
        create_app(database, embedded_settings()), headers=bearer(token_for(database, "release"))
    )
    ledger = Ledger()
    filler = _fill(small_disk, HEADROOM_BYTES)

    message = _write_until_full(database, ledger)
    assert ledger.acknowledged, "no write fitted in the headroom"
    assert FULL in message
    _fill(small_disk, 0)  # and whatever a checkpoint freed
    events_when_full = assert_registry_whole(database, ledger)["events"]

    # The gate must record its decision: it cannot, so it fails closed, everywhere.
    env = cli_env(url)
    assert_cli_error(capgate("gate", "check", PLAN, env=env), FULL)
    assert_http_error(client.post("/v1/gate/checks", json={"plan": PLAN}), 503, FULL)
    refused = client.post("/v1/workloads", json=example("workload", description="refused api"))
    assert_http_error(refused, 503, FULL)
    ledger.refused.add("refused api")
    # Reads go on, on the full disk.
    shown = client.get("/v1/workloads/chat-assistant")
    assert shown.status_code == 200, shown.text
    assert client.get("/readyz").status_code == 200
    whole = assert_registry_whole(database, ledger)
    assert whole["events"] == events_when_full
    assert whole["decisions"] == set()

    # Space again: the same process and the CLI carry on where they stopped.
    filler.unlink()
    after = client.post("/v1/gate/checks", json={"plan": PLAN})
    assert after.status_code == 200 and after.json()["outcome"] == "allow", after.text
    ledger.decisions.add(after.json()["id"])
    assert_registry_whole(database, ledger)
    next_version = submit_workload(database, "after the disk was freed")
    assert next_version == len(ledger.acknowledged) + 2  # v1 is the seed's
    database.engine.dispose()


def _cap_pages(database: Database, headroom_pages: int) -> int:
    """Every new connection of the registry's engine may grow the file by this much."""
    database.engine.dispose()
    with database.engine.connect() as connection:
        pages = int(connection.exec_driver_sql("PRAGMA page_count").scalar_one())
    limit = pages + headroom_pages

    def cap(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA max_page_count={limit}")
        cursor.close()

    event.listen(database.engine, "connect", cap)
    database.engine.dispose()
    return limit


def test_max_page_count_refuses_writes_whole(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    migrate.upgrade(url)
    database = Database(url)
    seed(database)
    client = TestClient(
        create_app(database, embedded_settings()), headers=bearer(token_for(database, "release"))
    )
    versions_before = sorted(workload_descriptions(database))
    _cap_pages(database, headroom_pages=8)
    ledger = Ledger()

    assert FULL in _write_until_full(database, ledger)
    assert_http_error(client.post("/v1/gate/checks", json={"plan": PLAN}), 503, FULL)
    refused = client.post("/v1/workloads", json=example("workload", description="refused api"))
    assert_http_error(refused, 503, FULL)
    ledger.refused.add("refused api")
    ready = client.get("/readyz")  # reads still work: the server is ready to read
    assert ready.status_code == 200, ready.text
    whole = assert_registry_whole(database, ledger)
    assert whole["decisions"] == set()
    versions = sorted(workload_descriptions(database))
    assert versions == list(range(1, len(versions_before) + len(ledger.acknowledged) + 1))
    database.engine.dispose()
