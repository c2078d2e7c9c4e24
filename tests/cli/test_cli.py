"""The `capgate` command as a user runs it: a real process, local and against a server."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import uvicorn

from registry.api.app import create_app
from registry.storage.database import Database
from tests.conftest import sqlite_only
from tests.factories import example_path
from tests.support.auth import token_for
from tests.support.cli_process import CAPGATE, capgate
from tests.support.cli_runner import capgate_in_process

__all__ = ["CAPGATE", "capgate"]  # used by the other CLI tests

# Started first by tests/conftest.py: the record commands as processes, on both databases,
# locally and through a server.
# 36 s of an idle core before the setup ran in process and the refusals on SQLite only;
# 21 s instead of 60 s on the same loaded machine since.
pytestmark = pytest.mark.long(12)


@pytest.fixture
def local_env(database_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    env.update(CAPGATE_DATABASE_URL=database_url, CAPGATE_PRINCIPAL="alice")
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running_server(database_url: str) -> Iterator[dict[str, str]]:
    """A real uvicorn server on loopback, and an environment pointing the CLI at it."""
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(Database(database_url)), host="127.0.0.1", port=port, log_level="error"
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            pytest.fail("server did not start")
        time.sleep(0.02)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    # A bogus local database proves the commands really go to the server.
    env.update(
        CAPGATE_SERVER=f"http://127.0.0.1:{port}",
        CAPGATE_PRINCIPAL="bob",
        CAPGATE_DATABASE_URL="sqlite:////nonexistent/never.db",
        CAPGATE_TOKEN=token_for(Database(database_url), subject="bob"),
    )
    yield env
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(params=["local", "server"])
def cli_env(request: pytest.FixtureRequest, database_url: str) -> Iterator[dict[str, str]]:
    """The same commands on the embedded registry and against a server."""
    if request.param == "local":
        env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
        env.update(CAPGATE_DATABASE_URL=database_url, CAPGATE_PRINCIPAL="alice")
        yield env
        return
    with running_server(database_url) as env:
        yield env


def submit_example(env: dict[str, str]) -> None:
    """The example's four records submitted through the console entry point in this process
    (tests/support/cli_runner.py): setting the registry up; the commands the tests then run
    are the processes under test."""
    for kind in ("workload", "provider", "plan", "evidence"):
        result = capgate_in_process(kind, "submit", str(example_path(kind)), env=env)
        assert result.returncode == 0, result.stderr


def test_submit_show_list_same_contract(cli_env: dict[str, str]) -> None:
    env = cli_env
    submit_example(env)
    again = capgate("plan", "submit", str(example_path("plan")), "--json", env=env)
    assert again.returncode == 0
    body = json.loads(again.stdout)
    assert body["created"] is False
    assert body["record"]["ref"] == "chat-assistant-prod@v1"
    assert body["record"]["created_by"] == ("bob" if "CAPGATE_SERVER" in env else "alice")
    shown = json.loads(capgate("plan", "show", "chat-assistant-prod@v1", "--json", env=env).stdout)
    assert shown["digest"] == body["record"]["digest"]
    listed = json.loads(capgate("workload", "list", "--json", env=env).stdout)
    assert [item["latest_ref"] for item in listed["items"]] == ["chat-assistant@v1"]
    text = capgate("plan", "show", "chat-assistant-prod", env=env).stdout
    assert "# plan chat-assistant-prod@v1" in text
    assert "us-east1-b: 3" in text


@sqlite_only  # the file refused: no database changes that
def test_fail_bad_field_one_line_exit_2(cli_env: dict[str, str], tmp_path: Path) -> None:
    env = cli_env
    bad = tmp_path / "workload.yaml"
    bad.write_text(
        example_path("workload").read_text().replace("peak_window_s: 60", "peak_window: 60", 1)
    )
    result = capgate("workload", "submit", str(bad), env=env)
    assert result.returncode == 2
    assert result.stderr == f"capgate: error: {bad}: classes.0.arrival.peak_window: unknown field\n"
    assert result.stdout == ""


def test_changed_file_gives_v2(local_env: dict[str, str], tmp_path: Path) -> None:
    submit_example(local_env)
    changed = tmp_path / "plan.yaml"
    changed.write_text(
        example_path("plan").read_text().replace("max_num_seqs: 256", "max_num_seqs: 192")
    )
    result = capgate("plan", "submit", str(changed), env=local_env)
    assert result.returncode == 0
    assert result.stdout.startswith("chat-assistant-prod@v2 ")
    versions = capgate("plan", "versions", "chat-assistant-prod", env=local_env).stdout
    assert "chat-assistant-prod@v1" in versions and "chat-assistant-prod@v2" in versions


def test_fail_missing_file_and_unknown_ref(local_env: dict[str, str]) -> None:
    missing = capgate("plan", "submit", "/no/such/plan.yaml", env=local_env)
    assert (missing.returncode, missing.stderr) == (
        2,
        "capgate: error: /no/such/plan.yaml: file not found\n",
    )
    unknown = capgate("plan", "show", "nothing-here", env=local_env)
    assert (unknown.returncode, unknown.stderr) == (
        2,
        "capgate: error: no plan record nothing-here\n",
    )


def test_fail_unmigrated_database_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    env["CAPGATE_DATABASE_URL"] = f"sqlite:///{tmp_path / 'fresh.db'}"
    result = capgate("plan", "list", env=env)
    assert result.returncode == 2
    assert result.stderr == (
        "capgate: error: the registry database is not initialised: run `capgate db upgrade`\n"
    )
    upgraded = capgate("db", "upgrade", env=env)
    assert upgraded.returncode == 0, upgraded.stderr
    assert capgate("plan", "list", env=env).returncode == 0


@sqlite_only  # the local database is never opened
def test_fail_unreachable_server_exit_2(local_env: dict[str, str]) -> None:
    env = dict(local_env, CAPGATE_SERVER=f"http://127.0.0.1:{_free_port()}")
    result = capgate("plan", "list", env=env)
    assert result.returncode == 2
    assert result.stderr.startswith("capgate: error: cannot reach capgate server")


@sqlite_only  # refused by the argument parser
def test_fail_usage_error_exit_2(local_env: dict[str, str]) -> None:
    result = capgate("plan", "submit", env=local_env)
    assert result.returncode == 2
    assert "Missing argument" in result.stderr
