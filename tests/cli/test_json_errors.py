"""With `--json` (or `--format json`) an error is one JSON object on stderr, in the REST
API's error shape plus the exit code, and nothing on stdout; without it, the one text line
stays (cli.output, cli.main.run). Run as a user runs the command: a real process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.output import json_asked_in
from registry.api.errors import ErrorBody
from tests.factories import example
from tests.support.cli_process import capgate
from tests.support.cli_registry import local_env, migrate_and_submit

PLAN = "chat-assistant-prod"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A migrated SQLite registry holding the example's workload, provider and plan."""
    base = local_env(tmp_path_factory.mktemp("json-errors") / "registry.db")
    # Set up through the console entry point in this process; the errors below are real
    # processes' stderr.
    migrate_and_submit(base)
    return base


def json_error(env: dict[str, str], *args: str, stdout: str = "") -> dict[str, Any]:
    """Run ARGS; the error object on stderr's one line, checked against the API's shape."""
    result = capgate(*args, env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == stdout
    (line,) = result.stderr.splitlines()
    document: dict[str, Any] = json.loads(line)
    assert document["exit_code"] == result.returncode
    # The CLI and the API say an error the same way: the API's ErrorBody, plus exit_code.
    body = {k: v for k, v in document.items() if k != "exit_code"}
    assert ErrorBody.model_validate(body).model_dump() == body
    return document


def invalid_plan(tmp_path: Path) -> Path:
    plan = example("plan")
    plan["serving"]["max_num_seqs"] = "many"
    plan["serving"]["gpu_memory_utilization"] = 2
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan), encoding="utf-8")
    return path


def test_every_problem_of_an_invalid_record(env: dict[str, str], tmp_path: Path) -> None:
    path = invalid_plan(tmp_path)
    document = json_error(env, "plan", "submit", str(path), "--json")
    assert document["error"] == "InvalidInput"
    assert document["details"]["source"] == str(path)
    assert [p["loc"] for p in document["problems"]] == [
        "serving.max_num_seqs",
        "serving.gpu_memory_utilization",
    ]
    assert "valid integer" in document["problems"][0]["message"]
    # Without --json the text form is unchanged: the first problem, then one per line.
    text = capgate("plan", "submit", str(path), env=env)
    assert text.returncode == 2 and text.stdout == ""
    first, second = text.stderr.splitlines()
    assert first.startswith(f"capgate: error: {path}: serving.max_num_seqs: ")
    assert first.endswith("(and 1 more problem)")
    assert second.startswith("  serving.gpu_memory_utilization: ")


def test_an_unknown_plan(env: dict[str, str]) -> None:
    document = json_error(env, "plan", "show", "no-such-plan", "--json")
    assert document["error"] == "NotFound"
    assert document["message"] == "no plan record no-such-plan"
    assert document["problems"] == []
    text = capgate("plan", "show", "no-such-plan", env=env)
    assert text.stderr == "capgate: error: no plan record no-such-plan\n"


def test_an_unreachable_registry(env: dict[str, str]) -> None:
    server = {**env, "CAPGATE_SERVER": "http://127.0.0.1:9", "CAPGATE_TOKEN": "cgt_unused"}
    document = json_error(server, "plan", "list", "--json")
    assert document["error"] == "Unavailable"
    assert "127.0.0.1:9" in document["message"]


def test_an_error_the_command_itself_finds(env: dict[str, str]) -> None:
    # cli.output.fail, inside the command: its own --json decides.
    document = json_error(env, "gate", "check", PLAN, "--json", "--format", "sarif")
    assert document["error"] == "InvalidInput"
    assert (
        document["message"]
        == "--json and --format sarif disagree: --json is --format json; give one"
    )
    document = json_error(env, "audit", "verify", "--key", "k.pem", "--json")
    assert document["message"].startswith("--key is for --checkpoint")


def test_usage_errors_of_a_json_command(env: dict[str, str]) -> None:
    document = json_error(env, "plan", "list", "--json", "--limit", "many")
    assert document["error"] == "UsageError"
    assert document["problems"] == [
        {"loc": "--limit", "message": "'many' is not a valid int range."}
    ]
    assert document["message"].startswith("Invalid value for '--limit'")
    document = json_error(env, "plan", "list", "--json", "--no-such-flag")
    assert document["error"] == "UsageError" and "--no-such-flag" in document["message"]
    # Text mode: typer's own usage error, as before.
    text = capgate("plan", "list", "--limit", "many", env=env)
    assert text.returncode == 2 and text.stderr.startswith("Usage: capgate plan list")


def test_a_json_gate_check_keeps_its_undecided_report(env: dict[str, str]) -> None:
    """`gate check --json`: stdout is the report, which records that nothing was decided
    (docs/ci.md); the error is the JSON object on stderr as for any command."""
    result = capgate("gate", "check", "no-such-plan", "--format", "json", env=env)
    assert result.returncode == 2
    report = json.loads(result.stdout)
    assert report["outcome"] == "error" and report["id"] is None
    (line,) = result.stderr.splitlines()
    assert json.loads(line)["error"] == "NotFound"


def test_success_and_exit_codes_are_unchanged(env: dict[str, str]) -> None:
    result = capgate("plan", "list", "--json", env=env)
    assert result.returncode == 0 and result.stderr == ""
    assert [item["name"] for item in json.loads(result.stdout)["items"]] == [PLAN]


@pytest.mark.parametrize(
    ("args", "asked"),
    [
        (["plan", "list", "--json"], True),
        (["gate", "check", "p", "--format", "json"], True),
        (["gate", "check", "p", "--format=json"], True),
        (["gate", "check", "p", "--format", "sarif"], False),
        (["plan", "list"], False),
        (["plan", "show", "--", "--json"], False),
    ],
)
def test_which_command_lines_ask_for_json(args: list[str], asked: bool) -> None:
    assert json_asked_in(args) is asked
