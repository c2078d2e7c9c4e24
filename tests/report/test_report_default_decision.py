"""`capgate report PLAN` shows the release pipeline's decision, not the latest exploratory
check, and always says which decision it shows and names a newer one (registry.report.choice).

The example is registered as a user does (the CLI in this process, on both databases); `ci`
decides as a release pipeline and `bob` runs an exploratory check against manifests that
contradict the plan, which denies it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import Result

from tests.factories import example_path
from tests.manifests.helpers import edited_example_manifests
from tests.report.html_checks import parse
from tests.support.cli_process import capgate as capgate_process
from tests.support.cli_runner import Capgate

PLAN = "chat-assistant-prod"
GITHUB_MAIN = "github:repo:acme/serving:ref:refs/heads/main"


def check_as(
    capgate: Capgate, monkeypatch: pytest.MonkeyPatch, principal: str, *args: str, code: int = 0
) -> dict[str, object]:
    monkeypatch.setenv("CAPGATE_PRINCIPAL", principal)
    decision: dict[str, object] = capgate.json("gate", "check", PLAN, *args, code=code)
    monkeypatch.setenv("CAPGATE_PRINCIPAL", "alice")
    return decision


def exploratory_args(tmp_path: Path) -> tuple[str, ...]:
    """Manifests that ship 6 replicas where the plan states 9: the gate denies."""
    folder = edited_example_manifests(
        tmp_path, {"deployment.yaml": [("replicas: 9", "replicas: 6")]}
    )
    return ("--manifests", str(folder))


def report(capgate: Capgate, tmp_path: Path, *args: str, code: int = 0) -> tuple[Result, str]:
    """`capgate report PLAN ARGS`: the result (stdout, stderr) and the page's text."""
    out = tmp_path / "report.html"
    out.unlink(missing_ok=True)
    result = capgate("report", PLAN, *args, "--output", str(out), code=code)
    page = parse(out.read_text(encoding="utf-8")) if code == 0 else None
    return result, page.text if page is not None else ""


def flat(text: str) -> str:
    return " ".join(text.split())


def test_the_release_report_shows_the_pipelines_decision_and_names_the_newer_check(
    capgate: Capgate, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    capgate("token", "create", "--subject", "ci", "--role", "pipeline")
    ci = check_as(capgate, monkeypatch, "ci")
    bob = check_as(capgate, monkeypatch, "bob", *exploratory_args(tmp_path), code=1)
    assert (ci["outcome"], bob["outcome"]) == ("allow", "deny")

    result, text = report(capgate, tmp_path)

    # The release's verdict stands: bob's exploratory deny does not flip it.
    assert result.stdout.startswith(f"ALLOW {PLAN}@v1: report written to ")
    assert result.stdout.count("\n") == 1
    shown = (
        f"This report shows decision {ci['id']} (ALLOW), taken "
        f"{ci['created_at'][:10]}"  # type: ignore[index]
    )
    newer = f"A newer decision {bob['id']} (DENY)"
    for said in (flat(text), result.stderr):
        assert shown in said
        assert f"by ci: the latest on {PLAN}@v1 by a principal holding the pipeline role" in said
        assert newer in said and "by bob, by a principal holding no pipeline role" in said
        assert f"capgate report {PLAN}@v1 --decision {bob['id']}" in said
    assert result.stderr.startswith("note: This report shows decision")

    # Either decision on request, each saying why it is the one shown.
    result, text = report(capgate, tmp_path, "--decision", str(bob["id"]))
    assert result.stdout.startswith(f"DENY {PLAN}@v1")
    assert f"decision {bob['id']} (DENY)" in flat(text)
    assert "by bob: the decision asked for." in flat(text)
    assert "A newer decision" not in flat(text)
    result, text = report(capgate, tmp_path, "--principal", "bob")
    assert result.stdout.startswith(f"DENY {PLAN}@v1")
    assert f"the latest on {PLAN}@v1 by bob (--principal)" in result.stderr
    result, _ = report(capgate, tmp_path, "--decision", str(ci["id"]))
    assert newer in result.stderr

    # A later pipeline decision is the release's again, and nothing newer is named.
    ci_again = check_as(capgate, monkeypatch, "ci")
    result, text = report(capgate, tmp_path)
    assert f"decision {ci_again['id']} (ALLOW)" in result.stderr
    assert "A newer decision" not in result.stderr and "A newer decision" not in flat(text)


def test_a_token_counts_only_while_it_was_valid(
    capgate: Capgate, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    token = capgate.json("token", "create", "--subject", "ci", "--role", "pipeline")
    ci = check_as(capgate, monkeypatch, "ci")
    capgate("token", "revoke", token["info"]["id"])
    # After the revocation ci's checks are no release pipeline's.
    later = check_as(capgate, monkeypatch, "ci", *exploratory_args(tmp_path), code=1)

    result, _ = report(capgate, tmp_path)

    assert result.stdout.startswith(f"ALLOW {PLAN}@v1")
    assert f"decision {ci['id']} (ALLOW)" in result.stderr
    assert f"A newer decision {later['id']} (DENY)" in result.stderr


def test_without_known_roles_the_latest_is_shown_and_said(
    capgate: Capgate, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ci = check_as(capgate, monkeypatch, "ci")
    bob = check_as(capgate, monkeypatch, "bob", *exploratory_args(tmp_path), code=1)

    result, text = report(capgate, tmp_path)

    # No tokens and no auth configuration: today's default, said so, with the other one.
    assert result.stdout.startswith(f"DENY {PLAN}@v1")
    for said in (flat(text), result.stderr):
        assert f"This report shows decision {bob['id']} (DENY)" in said
        assert "this registry knows no principal's roles" in said
        assert f"Another principal decided on this plan version too: decision {ci['id']}" in said
        assert "--principal ci" in said
    result, _ = report(capgate, tmp_path, "--principal", "ci")
    assert result.stdout.startswith(f"ALLOW {PLAN}@v1")


def test_the_auth_configuration_grants_the_pipeline_role_by_subject(
    capgate: Capgate, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "auth.yaml"
    config.write_text(
        "issuers:\n"
        "  - issuer: https://token.actions.githubusercontent.com\n"
        "    audience: capgate\n"
        '    subject_prefix: "github:"\n'
        "    grants:\n"
        '      - match: {sub: "repo:acme/serving:ref:refs/heads/*"}\n'
        "        roles: [pipeline]\n"
        # A grant on other claims cannot be judged from a decision's principal.
        "      - match: {repository: acme/serving}\n"
        "        roles: [pipeline]\n",
        encoding="utf-8",
    )
    pipeline = check_as(capgate, monkeypatch, GITHUB_MAIN)
    bob = check_as(capgate, monkeypatch, "bob", *exploratory_args(tmp_path), code=1)

    result, _ = report(capgate, tmp_path, "--auth-config", str(config))
    assert result.stdout.startswith(f"ALLOW {PLAN}@v1")
    assert f"decision {pipeline['id']} (ALLOW)" in result.stderr
    assert "as --auth-config say" in result.stderr
    assert f"A newer decision {bob['id']} (DENY)" in result.stderr
    # The server's variable names the same file.
    monkeypatch.setenv("CAPGATE_AUTH_CONFIG", str(config))
    result, _ = report(capgate, tmp_path)
    assert f"decision {pipeline['id']} (ALLOW)" in result.stderr


def test_end_to_end_as_a_process(tmp_path: Path) -> None:
    """The installed command on a SQLite file: stdout one line, stderr which decision."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    env.update(CAPGATE_DATABASE_URL=f"sqlite:///{tmp_path / 'registry.db'}")

    def run(principal: str, *args: str, code: int = 0) -> tuple[str, str]:
        result = capgate_process(*args, env={**env, "CAPGATE_PRINCIPAL": principal})
        assert result.returncode == code, result.stdout + result.stderr
        return result.stdout, result.stderr

    run("alice", "db", "upgrade")
    for kind in ("workload", "provider", "plan"):
        run("alice", kind, "submit", str(example_path(kind)))
    run("alice", "token", "create", "--subject", "release-bot", "--role", "pipeline")
    released = json.loads(run("release-bot", "gate", "check", PLAN, "--json", code=1)[0])
    tried = json.loads(
        run("eve", "gate", "check", PLAN, *exploratory_args(tmp_path), "--json", code=1)[0]
    )
    out = tmp_path / "out" / "r.html"

    stdout, stderr = run("alice", "report", PLAN, "--output", str(out))

    assert stdout == f"DENY {PLAN}@v1: report written to {out} ({stdout.split('(')[-1]}"
    lines = stderr.splitlines()
    assert len(lines) == 2 and all(line.startswith("note: ") for line in lines)
    assert f"decision {released['id']} (DENY)" in lines[0] and "by release-bot" in lines[0]
    assert f"A newer decision {tried['id']} (DENY)" in lines[1] and "by eve" in lines[1]
    assert released["id"] in out.read_text(encoding="utf-8")

    # Choosing wrongly: exit 2, one line, no file.
    out.unlink()
    nobody = ("report", PLAN, "--principal", "nobody", "--output", str(out))
    stdout, stderr = run("alice", *nobody, code=2)
    assert (stdout, stderr) == (
        "",
        f"capgate: error: no decision on {PLAN}@v1 was taken by nobody\n",
    )
    both = (
        "report",
        PLAN,
        "--decision",
        released["id"],
        "--principal",
        "eve",
        "--output",
        str(out),
    )
    stdout, stderr = run("alice", *both, code=2)
    assert stderr == (
        "capgate: error: principal: --decision names the decision to report on; --principal "
        "chooses one: give one of them\n"
    )
    assert not out.exists()
