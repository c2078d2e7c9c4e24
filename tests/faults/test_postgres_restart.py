"""PostgreSQL stops dead mid-run (`pg_ctlcluster stop -m immediate`) and comes back.

The shared `main` cluster is never touched: each test creates a throwaway cluster on
a free port (pg_createcluster, as root), migrates a registry into it, and drops it at
the end. While the server is down every gate check and every write is an error (CLI
exit 2 in one line, HTTP 503 in the error shape), never an allow; once it is back the
same processes carry on, and nothing acknowledged is lost and nothing refused appears.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text

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
from tests.support.opa_server import free_port

PG_LIBDIR = Path("/usr/lib/postgresql")


@dataclass
class Cluster:
    version: str
    name: str
    port: int
    url: str

    def ctl(self, *args: str) -> None:
        done = subprocess.run(
            ["pg_ctlcluster", self.version, self.name, *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, f"pg_ctlcluster {' '.join(args)}: {done.stderr}"

    def crash(self) -> None:
        """Stop the server the way a crash does: no checkpoint, connections cut."""
        self.ctl("stop", "-m", "immediate")

    def start(self) -> None:
        self.ctl("start")  # waits until the server accepts connections (after recovery)


def _server_version() -> str | None:
    versions = sorted(
        (p.parent.parent.name for p in PG_LIBDIR.glob("*/bin/postgres")),
        key=lambda v: int(v) if v.isdigit() else 0,
    )
    return versions[-1] if versions else None


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """One throwaway cluster for the module (creating one takes seconds)."""
    version = _server_version()
    if shutil.which("pg_createcluster") is None or version is None or os.geteuid() != 0:
        pytest.skip("pg_createcluster (postgresql-common, as root) is not available here")
    name = f"faults_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    port = free_port()
    created = subprocess.run(
        [
            "pg_createcluster",
            version,
            name,
            "--port",
            str(port),
            "-o",
            "fsync=off",  # a process crash, not a power cut: the page cache survives
            "--",
            "--auth-host=trust",
            "--auth-local=trust",
            "--no-sync",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if created.returncode != 0:
        pytest.skip(f"pg_createcluster failed: {created.stderr.strip().splitlines()[-1:]}")
    try:
        handle = Cluster(version, name, port, f"postgresql+psycopg://postgres@127.0.0.1:{port}")
        handle.start()
        yield handle
    finally:
        subprocess.run(
            ["pg_dropcluster", "--stop", version, name], capture_output=True, check=False
        )


@pytest.fixture
def registry_url(cluster: Cluster) -> str:
    """A migrated registry of its own in the throwaway cluster."""
    name = f"capgate_{uuid.uuid4().hex[:8]}"
    admin = create_engine(f"{cluster.url}/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    url = f"{cluster.url}/{name}"
    migrate.upgrade(url)
    return url


def _post_workload(client: TestClient, description: str) -> int:
    answer = client.post("/v1/workloads", json=example("workload", description=description))
    return int(answer.status_code)


@pytest.mark.postgres
def test_gate_fails_closed_while_postgres_is_down_and_recovers(
    cluster: Cluster, registry_url: str
) -> None:
    database = Database(registry_url)  # one long-lived process: its pool outlives the crash
    seed(database)
    client = TestClient(
        create_app(database, embedded_settings()), headers=bearer(token_for(database, "release"))
    )
    env = cli_env(registry_url)
    ledger = Ledger()

    allowed = client.post("/v1/gate/checks", json={"plan": PLAN})
    assert allowed.status_code == 200 and allowed.json()["outcome"] == "allow", allowed.text
    ledger.decisions.add(allowed.json()["id"])
    assert _post_workload(client, "acknowledged before the crash") == 201
    ledger.acknowledged.add("acknowledged before the crash")

    cluster.crash()

    down = capgate("gate", "check", PLAN, env=env)
    assert_cli_error(down, "cannot reach the registry database")
    gate = client.post("/v1/gate/checks", json={"plan": PLAN})
    assert_http_error(gate, 503, "cannot reach the registry database")
    refused = client.post("/v1/workloads", json=example("workload", description="refused api"))
    assert_http_error(refused, 503, "cannot reach the registry database")
    ledger.refused.add("refused api")
    with pytest.raises(Unavailable, match="cannot reach the registry database"):
        submit_workload(database, "refused direct")
    ledger.refused.add("refused direct")
    ready = client.get("/readyz")
    assert ready.status_code == 503, ready.text

    cluster.start()

    # The same app and engine carry on: the pool's dead connections are replaced.
    assert _post_workload(client, "acknowledged after the restart") == 201
    ledger.acknowledged.add("acknowledged after the restart")
    after = client.post("/v1/gate/checks", json={"plan": PLAN})
    assert after.status_code == 200 and after.json()["outcome"] == "allow", after.text
    ledger.decisions.add(after.json()["id"])
    whole = assert_registry_whole(database, ledger)
    assert len(whole["decisions"]) == 2  # one allow before, one after; none while down
    assert sorted(workload_descriptions(database)) == [1, 2, 3]
    database.engine.dispose()


@pytest.mark.postgres
def test_writes_in_flight_when_postgres_dies_are_all_or_nothing(
    cluster: Cluster, registry_url: str
) -> None:
    """A writer loops while the server is killed under it: each write is acknowledged
    (and kept), refused while down (and absent), or in doubt at the instant of the
    crash (either, but whole); versions stay 1..n and the chain verifies."""
    database = Database(registry_url)
    seed(database)
    ledger = Ledger()
    in_doubt: list[str] = []
    phase = ["up"]  # up, down (killed), restarting, up
    stop = threading.Event()

    def writer() -> None:
        index = 0
        while not stop.is_set():
            index += 1
            description = f"write {index}"
            started = phase[0]
            try:
                submit_workload(database, description)
            except Unavailable:
                # Started after the kill: it never reached a server, so it must be absent.
                # Started before: its commit may or may not have reached the WAL.
                (in_doubt.append if started == "up" else ledger.refused.add)(description)
                time.sleep(0.01)
            else:
                ledger.acknowledged.add(description)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        time.sleep(0.5)
        cluster.crash()
        phase[0] = "down"
        time.sleep(0.3)
        phase[0] = "restarting"
        cluster.start()
        phase[0] = "up"
        time.sleep(0.5)
    finally:
        stop.set()
        thread.join(timeout=30)
    assert ledger.acknowledged and ledger.refused, (len(ledger.acknowledged), ledger.refused)
    assert_registry_whole(database, ledger)
    database.engine.dispose()
