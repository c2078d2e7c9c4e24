"""The audit trail through the API and the CLI: every write, and a chain that holds."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

from registry.storage.database import Database
from registry.storage.models import AuditEventRow
from tests.factories import example
from tests.support.auth import client_for


@pytest.fixture
def client(database: Database) -> Iterator[TestClient]:
    with client_for(database, "auditor") as c:
        yield c


def test_events_list_every_write_newest_first(client: TestClient) -> None:
    for collection, kind in (("workloads", "workload"), ("providers", "provider")):
        assert client.post(f"/v1/{collection}", json=example(kind)).status_code == 201
    client.post("/v1/workloads", json=example("workload"))  # unchanged: no event
    page = client.get("/v1/audit/events").json()
    # Event 1 is the test's own API token being created.
    assert [(e["seq"], e["action"], e["payload"].get("ref")) for e in page["items"]] == [
        (3, "provider.submit", "llama31-8b-h100-vllm@v1"),
        (2, "workload.submit", "chat-assistant@v1"),
        (1, "token.created", None),
    ]
    assert page["items"][0]["prev_hash"] == page["items"][1]["hash"]
    only = client.get("/v1/audit/events", params={"action": "workload.submit"}).json()
    assert (only["total"], only["next_cursor"]) == (None, None)  # counted when asked
    assert len(only["items"]) == 1
    counted = client.get(
        "/v1/audit/events", params={"action": "workload.submit", "total": "true"}
    ).json()
    assert counted["total"] == 1
    assert client.get("/v1/audit/verify").json() == {
        "events": 3,
        "intact": True,
        "problems": [],
        "head": page["items"][0]["hash"],
        "acknowledged": [],
        "ungoverned_decisions": 0,
    }


def test_altered_event_breaks_the_chain(client: TestClient, database: Database) -> None:
    client.post("/v1/workloads", json=example("workload"))
    client.post("/v1/providers", json=example("provider"))
    with database.engine.begin() as connection:
        connection.execute(
            update(AuditEventRow).where(AuditEventRow.seq == 1).values(action="workload.delete")
        )
    report = client.get("/v1/audit/verify").json()
    assert report["intact"] is False
    assert report["problems"] == ["event 1 was altered: its hash does not match its content"]

    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    env["CAPGATE_DATABASE_URL"] = database.url
    result = subprocess.run(
        [sys.executable, "-m", "cli.main", "audit", "verify"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "event 1 was altered" in result.stdout


def test_events_between_since_and_until(client: TestClient) -> None:
    assert client.post("/v1/workloads", json=example("workload")).status_code == 201
    every = client.get("/v1/audit/events").json()["items"]
    first, last = every[-1]["at"], every[0]["at"]
    after = client.get("/v1/audit/events", params={"since": last}).json()
    assert [e["seq"] for e in after["items"]] == [every[0]["seq"]]
    before = client.get("/v1/audit/events", params={"until": last}).json()
    assert every[0]["seq"] not in [e["seq"] for e in before["items"]]
    assert client.get("/v1/audit/events", params={"since": first, "total": "true"}).json()[
        "total"
    ] == len(every)
    naive = client.get("/v1/audit/events", params={"since": "2026-12-01T00:00:00"})
    assert naive.status_code == 422
    assert naive.json()["problems"][0]["loc"] == "since"
