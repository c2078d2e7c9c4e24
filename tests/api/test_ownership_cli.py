"""`capgate owner show|transfer` and `capgate ... submit --team`, as a user runs them (the
console entry point; the refusals as real processes), on the embedded registry and against
a server, on both databases."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.cli.test_cli import cli_env  # noqa: F401  (a fixture)
from tests.factories import example
from tests.support.cli_process import capgate
from tests.support.cli_runner import capgate_in_process

# What the commands print and store runs in process (tests/support/cli_runner.py); the
# refusals (exit codes, one-line errors) stay real processes.
run = capgate_in_process

REASON = "team Z runs the assistant from December"


def workload_file(folder: Path, **changes: object) -> str:
    path = folder / "workload.yaml"
    path.write_text(yaml.safe_dump(example("workload", **changes)), encoding="utf-8")
    return str(path)


def test_claim_show_and_transfer(cli_env: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    who = "bob" if "CAPGATE_SERVER" in cli_env else "alice"
    first = run("workload", "submit", workload_file(tmp_path), "--team", "team-a", env=cli_env)
    assert first.returncode == 0, first.stderr

    shown = run("owner", "show", "workload", "chat-assistant", env=cli_env)
    assert shown.returncode == 0, shown.stderr
    head, claim = shown.stdout.splitlines()
    assert head == "workload chat-assistant: team team-a"
    assert claim.endswith(f"  team-a  by {who}: first publisher")

    moved = run(
        "owner",
        "transfer",
        "workload",
        "chat-assistant",
        "--team",
        "team-z",
        "--reason",
        REASON,
        env=cli_env,
    )
    assert moved.returncode == 0, moved.stderr
    assert moved.stdout.splitlines()[0] == "workload chat-assistant: team team-z"
    assert moved.stdout.splitlines()[-1].endswith(f"  team-z  by {who}: {REASON}")

    as_json = run("owner", "show", "workload", "chat-assistant", "--json", env=cli_env)
    owner = json.loads(as_json.stdout)
    assert [h["team"] for h in owner["history"]] == ["team-a", "team-z"]

    again = capgate("workload", "submit", workload_file(tmp_path, description="v2"), env=cli_env)
    if "CAPGATE_SERVER" in cli_env:
        # bob's token (teams team-assistant, team-a, team-b) is not in team Z.
        assert again.returncode != 0
        assert "workload chat-assistant belongs to team team-z; bob" in again.stderr
    else:
        # The local user has no team restriction: the database file is the boundary.
        assert again.returncode == 0, again.stderr


def test_bad_kind_and_team_are_one_line_errors(cli_env: dict[str, str]) -> None:  # noqa: F811
    kind = capgate("owner", "show", "widget", "x", env=cli_env)
    assert kind.returncode == 2
    assert "'widget' is not one of" in kind.stderr
    team = capgate(
        "owner", "transfer", "plan", "x", "--team", "not a team", "--reason", "r", env=cli_env
    )
    assert team.returncode == 2
    assert "'not a team' is not a team name" in team.stderr
    assert "Traceback" not in kind.stderr + team.stderr
