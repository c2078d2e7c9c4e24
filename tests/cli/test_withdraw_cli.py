"""`capgate evidence withdraw|withdrawals`, as a user runs them, on the embedded registry
and against a server, on both databases: the exit codes and one-line errors from real
processes, what the commands say and store from the same entry point in this process."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from registry.records import service
from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from registry.storage.database import Database
from tests.cli.test_cli import capgate, running_server
from tests.factories import EXAMPLE_KINDS, example, example_path
from tests.support.cli_runner import capgate_in_process

# Started first by tests/conftest.py: each test four times (local and server, SQLite
# and PostgreSQL), real processes.
pytestmark = pytest.mark.long(25)

EVIDENCE = "chat-assistant-h100-mixed-2026-11"
REASON = "replayed the wrong trace: the batch class ran at half its rate"


def register(database: Database, kind: RecordKind) -> None:
    record = validate_record(kind, example(kind))
    database.write(lambda ctx: service.submit(ctx, kind=kind, record=record), principal="t")


@pytest.fixture(params=["local", "server"])
def env(request: pytest.FixtureRequest, database_url: str) -> Iterator[dict[str, str]]:
    """The worked example registered, then the same commands locally and via a server."""
    database = Database(database_url)
    for kind in EXAMPLE_KINDS:
        register(database, kind)
    database.engine.dispose()
    if request.param == "local":
        local = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
        local.update(CAPGATE_DATABASE_URL=database_url, CAPGATE_PRINCIPAL="alice")
        yield local
        return
    with running_server(database_url) as remote:
        yield remote


def who(env: dict[str, str]) -> str:
    return "bob" if "CAPGATE_SERVER" in env else "alice"


# What the commands print and store: the console entry point in this process.
run = capgate_in_process


def test_withdraw_then_listed_with_who_when_why(env: dict[str, str]) -> None:
    none_yet = run("evidence", "withdrawals", env=env)
    assert (none_yet.returncode, none_yet.stdout) == (0, "no withdrawn evidence\n")
    done = run("evidence", "withdraw", EVIDENCE, "--reason", REASON, env=env)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first.startswith(f"withdrew {EVIDENCE}@v1  by {who(env)} at ")
    assert second == f"reason: {REASON}"

    table = run("evidence", "withdrawals", env=env)
    assert table.returncode == 0, table.stderr
    header, row = table.stdout.splitlines()
    assert header.split() == ["REF", "WITHDRAWN", "BY", "REASON"]
    assert row.startswith(f"{EVIDENCE}@v1")
    assert f" {who(env)}  {REASON}" in row

    history = json.loads(run("evidence", "history", EVIDENCE, "--json", env=env).stdout)
    assert history["withdrawn"]["withdrawn_by"] == who(env)
    assert history["withdrawn"]["reason"] == REASON
    listed = json.loads(run("evidence", "withdrawals", "--json", env=env).stdout)
    assert listed["items"] == [history["withdrawn"]]

    # Never a delete: the record is still shown as it was.
    shown = run("evidence", "show", f"{EVIDENCE}@v1", "--json", env=env)
    assert shown.returncode == 0
    assert json.loads(shown.stdout)["digest"] == history["digest"]
    audit = run("audit", "list", "--action", "evidence.withdraw", "--json", env=env)
    assert audit.returncode == 0, audit.stderr
    (event,) = json.loads(audit.stdout)["items"]
    assert event["payload"]["ref"] == f"{EVIDENCE}@v1"
    assert event["payload"]["reason"] == REASON


def test_fail_twice_unknown_and_empty_reason_exit_2_one_line(env: dict[str, str]) -> None:
    assert run("evidence", "withdraw", EVIDENCE, "--reason", REASON, env=env).returncode == 0
    again = capgate("evidence", "withdraw", f"{EVIDENCE}@v1", "--reason", "again", env=env)
    assert again.returncode == 2 and again.stdout == ""
    (line,) = again.stderr.splitlines()
    assert line.startswith(
        f"capgate: error: evidence {EVIDENCE}@v1 was already withdrawn by {who(env)} at "
    )

    unknown = capgate("evidence", "withdraw", "no-such-evidence", "--reason", REASON, env=env)
    assert unknown.returncode == 2
    (line,) = unknown.stderr.splitlines()
    assert line.startswith("capgate: error: no evidence record no-such-evidence")

    empty = capgate("evidence", "withdraw", EVIDENCE, "--reason", "  ", env=env)
    assert empty.returncode == 2
    (line,) = empty.stderr.splitlines()
    assert line == "capgate: error: reason: say why the evidence is withdrawn (--reason)"

    missing = capgate("evidence", "withdraw", EVIDENCE, env=env)
    assert missing.returncode == 2
    assert "--reason" in missing.stderr


def test_withdrawn_evidence_leaves_the_stale_list(env: dict[str, str], tmp_path: Path) -> None:
    workload = tmp_path / "workload.yaml"
    workload.write_text(example_path("workload").read_text().replace("p99: 6100", "p99: 7930", 1))
    assert run("workload", "submit", str(workload), env=env).returncode == 0
    stale = json.loads(run("evidence", "list", "--stale", "--json", env=env).stdout)
    assert [item["ref"] for item in stale["items"]] == [f"{EVIDENCE}@v1"]
    assert run("evidence", "withdraw", EVIDENCE, "--reason", REASON, env=env).returncode == 0
    assert run("evidence", "list", "--stale", env=env).stdout == "no stale evidence\n"
