"""`capgate gate` and `capgate plan size` as a release pipeline runs them: exit codes decide."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest
import yaml

from registry.gate.formats import escape_data
from registry.gate.report import policy_ids
from registry.policy.bundle import load_bundle
from tests.cli.test_gate_formats import check_sarif
from tests.cli.test_gate_formats import junit as check_junit
from tests.factories import (
    example,
    example_path,
    short_grace_plan_file,
)
from tests.gate.test_manifest_consistency import drifted
from tests.support.cli_process import CAPGATE, capgate
from tests.support.cli_registry import import_load_test
from tests.support.cli_runner import capgate_in_process
from tests.support.opa_server import free_port, running_opa

# Started first by tests/conftest.py: about 25 release-pipeline runs of `capgate`, most in
# process (100 s of an idle core when every command was a process; 24 s instead of 176 s
# on the same loaded machine since).
pytestmark = pytest.mark.long(15)

__all__ = ["CAPGATE", "capgate", "import_load_test"]  # the other CLI tests use these

# What a command prints, stores and reports: the console entry point in this process
# (tests/support/cli_runner.py; the same error mapping and exit codes, no interpreter start
# per command). The exit-code tests (`..._exits_N`), the OPA server killed between two
# checks and the check run from a subfolder of a checkout stay real processes.
run = capgate_in_process


# The worked example's registry (`seeded`, `env`) is tests/conftest.py's: built once per
# test session through the CLI, sized once, copied for each test.


def test_allow_exits_0_with_one_line_verdict(env: dict[str, str]) -> None:
    result = capgate("gate", "check", "chat-assistant-prod", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("ALLOW chat-assistant-prod@v1 (decision ")


def test_deny_exits_1_and_names_the_policy(env: dict[str, str], tmp_path: Path) -> None:
    assert run("plan", "submit", str(short_grace_plan_file(tmp_path)), env=env).returncode == 0
    result = capgate("gate", "check", "chat-assistant-prod", "--format", "json", env=env)
    assert result.returncode == 1
    decision = json.loads(result.stdout)
    assert decision["outcome"] == "deny"
    assert {v["policy"] for v in decision["violations"]} == {"drain_configured"}
    assert result.stderr.startswith("DENY chat-assistant-prod@v2: ")
    shown = run("gate", "show", decision["id"], "--json", env=env)
    assert json.loads(shown.stdout)["id"] == decision["id"]


def junit_report(
    tmp_path: Path, env: dict[str, str], *, exit_code: int = 0
) -> tuple[subprocess.CompletedProcess[str], ET.Element]:
    """`gate check --format junit --output FILE` on the example plan."""
    report = tmp_path / "gate.xml"
    junit = run(
        "gate",
        "check",
        "chat-assistant-prod",
        "--format",
        "junit",
        "--output",
        str(report),
        env=env,
    )
    assert junit.returncode == exit_code, junit.stdout + junit.stderr
    return junit, ET.parse(report).getroot()


def test_junit_report_passes_each_policy_and_fails_once_per_violation(
    env: dict[str, str], tmp_path: Path
) -> None:
    assert run("plan", "submit", str(short_grace_plan_file(tmp_path)), env=env).returncode == 0
    result, suite = junit_report(tmp_path, env, exit_code=1)
    decision = decision_of(result, env)
    assert len(decision["violations"]) > 1  # drain_configured fails more than one rule
    check_junit(ET.tostring(suite, encoding="unicode"))
    cases = list(suite.iter("testcase"))
    passed = [case.get("name") for case in cases if case.find("failure") is None]
    assert passed == [p for p in policy_ids(list(load_bundle().modules)) if p != "drain_configured"]
    failures = [(case.get("name"), case.find("failure")) for case in cases]
    failed = [(name, failure) for name, failure in failures if failure is not None]
    # One failed test case per violation, in the decision's order, each its own message.
    assert [json.loads(failure.text or "") for _, failure in failed] == decision["violations"]
    assert [(name, failure.get("message")) for name, failure in failed] == [
        (f"drain_configured.{v['rule']}", v["message"]) for v in decision["violations"]
    ]


def test_opa_engine_gives_the_same_exit_code(env: dict[str, str], opa_url: str) -> None:
    opa_env = dict(env, CAPGATE_POLICY_ENGINE="opa", CAPGATE_OPA_URL=opa_url)
    result = capgate("gate", "check", "chat-assistant-prod", "--format", "json", env=opa_env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["engine"] == "opa"


def test_fail_wrong_opa_url_exits_2_never_0(env: dict[str, str]) -> None:
    opa_env = dict(
        env, CAPGATE_POLICY_ENGINE="opa", CAPGATE_OPA_URL=f"http://127.0.0.1:{free_port()}"
    )
    result = capgate("gate", "check", "chat-assistant-prod", "--format", "json", env=opa_env)
    assert result.returncode == 2
    decision = json.loads(result.stdout)
    assert decision["outcome"] == "error"
    assert decision["violations"] == []


def test_fail_killed_opa_server_exits_2(env: dict[str, str], opa_binary: Path) -> None:
    with running_opa(opa_binary) as url:
        opa_env = dict(env, CAPGATE_POLICY_ENGINE="opa", CAPGATE_OPA_URL=url)
        assert capgate("gate", "check", "chat-assistant-prod", env=opa_env).returncode == 0
    # The server is gone now: the same check must not allow.
    result = capgate("gate", "check", "chat-assistant-prod", env=opa_env)
    assert result.returncode == 2
    assert result.stdout.startswith("ERROR chat-assistant-prod@v1: ")


def test_fail_unknown_plan_exits_2(env: dict[str, str]) -> None:
    result = capgate("gate", "check", "no-such-plan", env=env)
    assert (result.returncode, result.stdout, result.stderr) == (
        2,
        "",
        "capgate: error: no plan record no-such-plan\n",
    )


def test_plan_size_of_registered_plan_and_of_a_file(env: dict[str, str], tmp_path: Path) -> None:
    chart = tmp_path / "chart.png"
    registered = run(
        "plan", "size", "chat-assistant-prod", "--json", "--chart", str(chart), env=env
    )
    assert registered.returncode == 0, registered.stderr
    result = json.loads(registered.stdout)
    assert set(result["scenarios"]) == {"peak", "one_worker_lost", "largest_zone_lost"}
    assert result["slo_met"] is True
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    draft = run("plan", "size", str(short_grace_plan_file(tmp_path)), env=env)
    assert draft.returncode == 0, draft.stderr
    assert "scenario largest_zone_lost" in draft.stdout


def test_decision_list_is_the_audit_trail(env: dict[str, str]) -> None:
    first = json.loads(
        run("gate", "check", "chat-assistant-prod", "--format", "json", env=env).stdout
    )
    listed = json.loads(
        run("gate", "list", "--plan", "chat-assistant-prod", "--json", env=env).stdout
    )
    assert [d["id"] for d in listed["items"]] == [first["id"]]
    assert listed["items"][0]["principal"] == "ci"


def test_workload_growth_denies_until_new_evidence(env: dict[str, str], tmp_path: Path) -> None:
    """The worked example: allow; p99 prompt +30 % denies naming the change; new evidence allows."""
    assert run("gate", "check", "chat-assistant-prod", env=env).returncode == 0
    workload = example("workload")
    workload["classes"][0]["prompt_tokens"]["quantiles"]["p99"] = 7930  # 6100 x 1.3
    grown = tmp_path / "workload-v2.yaml"
    grown.write_text(yaml.safe_dump(workload))
    assert run("workload", "submit", str(grown), env=env).returncode == 0
    plan = tmp_path / "plan-v2.yaml"
    plan.write_text(yaml.safe_dump(example("plan", workload="chat-assistant@v2")))
    assert run("plan", "submit", str(plan), env=env).returncode == 0

    denied = run("gate", "check", "chat-assistant-prod", env=env)
    assert denied.returncode == 1
    assert "evidence_fresh" in denied.stdout
    assert "classes.interactive.prompt_tokens.p99: 6100.0 -> 7930.0" in denied.stdout

    # Re-importing the same files for the changed workload is refused (evidence laundering)...
    relabelled = import_load_test(
        tmp_path,
        env,
        days_ago=1,
        cli=run,
        workload="chat-assistant@v2",
        plan="chat-assistant-prod@v2",
    )
    assert relabelled.returncode == 2, relabelled.stdout
    # ...a new load test measured against the new versions is accepted and allows again.
    retest = import_load_test(
        tmp_path,
        env,
        days_ago=1,
        run=1,
        cli=run,
        workload="chat-assistant@v2",
        plan="chat-assistant-prod@v2",
    )
    assert retest.returncode == 0, retest.stderr
    allowed = run("gate", "check", "chat-assistant-prod", env=env)
    assert allowed.returncode == 0, allowed.stdout
    assert allowed.stdout.startswith("ALLOW chat-assistant-prod@v2")


# ---- reports for CI systems: annotations, SARIF, JUnit, and --json -----------------------


def decision_of(result: subprocess.CompletedProcess[str], env: dict[str, str]) -> dict[str, Any]:
    """The stored decision a `gate check` names in its one-line verdict on stderr."""
    decision_id = result.stderr.split("(decision ")[1].split(",")[0].split(")")[0]
    shown = run("gate", "show", decision_id, "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    return dict(json.loads(shown.stdout))


def test_deny_as_github_annotations_and_sarif(env: dict[str, str], tmp_path: Path) -> None:
    github, reports = denied_with_reports(tmp_path, env, "deploy/plan,prod.yaml", ("sarif",))
    assert github.returncode == 1
    assert github.stderr.startswith("DENY chat-assistant-prod@v2: ")
    decision = decision_of(github, env)
    assert {v["policy"] for v in decision["violations"]} == {"drain_configured"}
    # One ::error per violation, naming policy.rule, in the decision's order; no notice.
    lines = github.stdout.splitlines()
    assert [line for line in lines if not line.startswith("::warning ")] == [
        f"::error file=deploy/plan%2Cprod.yaml,title=capgate drain_configured.{v['rule']}"
        f"::{escape_data(v['message'])}"
        for v in decision["violations"]
    ]
    assert len(lines) == len(decision["violations"]) + len(decision["warnings"])

    # The same decision, in the SARIF report of the same run.
    log = json.loads(reports["sarif"])
    assert (log["$schema"], log["version"]) == (
        "https://json.schemastore.org/sarif-2.1.0.json",
        "2.1.0",
    )
    (sarif_run,) = log["runs"]
    rules = [rule["id"] for rule in sarif_run["tool"]["driver"]["rules"]]
    assert sarif_run["tool"]["driver"]["name"] == "capgate"
    assert set(rules) >= {f"drain_configured.{v['rule']}" for v in decision["violations"]}
    assert rules == sorted({r["ruleId"] for r in sarif_run["results"]})
    errors = [r for r in sarif_run["results"] if r["level"] == "error"]
    assert [(r["ruleId"], r["message"]["text"]) for r in errors] == [
        (f"drain_configured.{v['rule']}", v["message"]) for v in decision["violations"]
    ]
    assert len(sarif_run["results"]) == len(errors) + len(decision["warnings"])
    for result, violation in zip(errors, decision["violations"], strict=True):
        assert rules[result["ruleIndex"]] == result["ruleId"]
        assert result["properties"] == {
            "decision": decision["id"],
            "plan": "chat-assistant-prod@v2",
            "severity": violation["severity"],
            "details": violation["details"],
        }
        assert result["locations"][0]["physicalLocation"] == {
            "artifactLocation": {"uri": "deploy/plan%2Cprod.yaml"}
        }
    assert (sarif_run["properties"]["outcome"], sarif_run["properties"]["decision"]) == (
        "deny",
        decision["id"],
    )
    assert sarif_run["invocations"][0]["executionSuccessful"] is True


def test_warnings_reach_annotations_sarif_and_junit_test_cases(
    env: dict[str, str], tmp_path: Path
) -> None:
    """Old evidence beside fresh evidence: an allow with warnings, seen by every format."""
    old = import_load_test(tmp_path, env, days_ago=120, run=1, name="old-load-test", cli=run)
    assert old.returncode == 0, old.stderr

    # One check, three reports: the warnings of one decision in each (evidence ages with
    # the clock: two checks seconds apart may not word them alike).
    github, reports = with_reports(
        tmp_path, env, PLAN, "--format", "github", formats=("sarif", "junit")
    )
    assert github.returncode == 0, github.stdout + github.stderr
    warnings = decision_of(github, env)["warnings"]
    # Stale evidence reaches the reader once, as evidence_fresh's notes ("policy.rule:
    # message"); beside them, the example's own note (its test states no prefix-cache hit
    # rate). The gate's own free text (waivers) is the next test's.
    notes = {w: w.split(": ", 1) for w in warnings}
    stale = [w for w in warnings if w.startswith("evidence_fresh.")]
    assert len(stale) == 2 and all("old-load-test@v1" in w for w in stale)
    assert [notes[w][0] for w in warnings if w not in stale] == [
        "tail_slo.prefix_cache_hit_rate_unknown"
    ]
    assert github.stdout.splitlines() == [
        *(
            f"::warning title=capgate {notes[w][0]}::{notes[w][1]}"
            if w in notes
            else f"::warning title=capgate warning::{w}"
            for w in warnings
        ),
        f"::notice title=capgate ALLOW::{github.stderr.strip()}",
    ]

    results = json.loads(reports["sarif"])["runs"][0]["results"]
    assert [(r["ruleId"], r["level"], r["message"]["text"]) for r in results] == [
        (notes[w][0], "warning", notes[w][1]) if w in notes else ("gate.warning", "warning", w)
        for w in warnings
    ]

    suite = ET.fromstring(reports["junit"])
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    for policy in ("evidence_fresh", "tail_slo"):
        assert cases[policy].findtext("system-out") == "\n".join(
            f"warning: {w}" for w in warnings if w.startswith(f"{policy}.")
        )
    assert all(
        case.find("system-out") is None
        for n, case in cases.items()
        if n not in ("evidence_fresh", "tail_slo")
    )
    properties = [p.get("value") for p in suite.iter("property") if p.get("name") == "warning"]
    assert properties == warnings
    assert suite.findtext("system-err") == "\n".join(warnings)


def test_waived_violation_is_a_notice_and_its_waiver_warning_reaches_the_policy(
    env: dict[str, str], tmp_path: Path
) -> None:
    assert run("plan", "submit", str(short_grace_plan_file(tmp_path)), env=env).returncode == 0
    waiver = tmp_path / "waiver.yaml"
    waiver.write_text(
        yaml.safe_dump(
            {
                "name": "drain-grace-exception",
                "policy": "drain_configured",
                "plan": "chat-assistant-prod",
                "owner": "sre-lead@example.com",
                "reason": "streams are capped at 25 s by the gateway",
                "expires_at": (datetime.now(UTC) + timedelta(days=10, hours=1)).isoformat(),
            }
        )
    )
    assert run("waiver", "submit", str(waiver), env=env).returncode == 0
    # Four eyes: the requester (ci) cannot approve; a different principal can.
    own = run("waiver", "approve", "drain-grace-exception", env=env)
    assert own.returncode == 2
    assert own.stderr.startswith("capgate: error: ci requested waiver drain-grace-exception@v1")
    assert run("waiver", "pending", env=env).stdout.split() == ["drain-grace-exception@v1"]
    approver = dict(env, CAPGATE_PRINCIPAL="sre-lead")
    approved = run("waiver", "approve", "drain-grace-exception", env=approver)
    assert approved.returncode == 0, approved.stderr
    assert approved.stdout.strip() == (
        "approved drain-grace-exception@v1 (requested by ci) as sre-lead"
    )
    assert run("waiver", "pending", env=env).stdout.strip() == "no pending waivers"

    github, reports = with_reports(
        tmp_path, env, PLAN, "--format", "github", formats=("sarif", "junit")
    )
    assert github.returncode == 0, github.stdout + github.stderr
    decision = decision_of(github, env)
    lines = github.stdout.splitlines()
    notices = [line for line in lines if line.startswith("::notice title=capgate drain_")]
    assert len(notices) == len(decision["waived"]) > 0
    assert all("(waiver drain-grace-exception@v1, owner sre-lead@example.com" in n for n in notices)
    (expiring,) = [line for line in lines if line.startswith("::warning title=capgate warning")]
    assert expiring.startswith("::warning title=capgate warning::waiver drain-grace-exception@v1")
    assert "expires in 10 days" in expiring

    sarif = json.loads(reports["sarif"])
    waived = [r for r in sarif["runs"][0]["results"] if r["level"] == "note"]
    assert {r["ruleId"] for r in waived} == {
        f"drain_configured.{v['rule']}" for v in decision["waived"]
    }
    assert all(r["suppressions"][0]["kind"] == "external" for r in waived)
    assert all(r["properties"]["waived_by"] == "drain-grace-exception@v1" for r in waived)

    suite = ET.fromstring(reports["junit"])
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    out = cases["drain_configured"].findtext("system-out") or ""
    assert out.startswith("waived: [")
    assert "\nwarning: waiver drain-grace-exception@v1 (drain_configured, owner " in out


def test_json_is_format_json_and_conflicts_with_other_formats(env: dict[str, str]) -> None:
    def same_but_id_and_time(stdout: str) -> str:
        # The input digest covers the evidence's age (to 0.001 day, 86.4 s): checks a
        # few seconds apart may straddle a step, so it is masked like the time.
        decision = json.loads(stdout)
        for varying, mask in (("id", "ID"), ("created_at", "AT"), ("input_digest", "INPUT")):
            stdout = stdout.replace(decision[varying], mask)
        return stdout

    alias = run("gate", "check", "chat-assistant-prod", "--json", env=env)
    spelled = run("gate", "check", "chat-assistant-prod", "--format", "json", env=env)
    both = run("gate", "check", "chat-assistant-prod", "--json", "--format", "json", env=env)
    assert alias.returncode == spelled.returncode == both.returncode == 0
    assert alias.stderr.startswith("ALLOW chat-assistant-prod@v1 (decision ")
    assert json.loads(alias.stdout)["outcome"] == "allow"
    assert (
        same_but_id_and_time(alias.stdout)
        == same_but_id_and_time(spelled.stdout)
        == same_but_id_and_time(both.stdout)
    )

    conflict = run("gate", "check", "chat-assistant-prod", "--json", "--format", "junit", env=env)
    assert (conflict.returncode, conflict.stdout) == (2, "")
    # With --json the error too is JSON on stderr (tests/cli/test_json_errors.py).
    assert json.loads(conflict.stderr)["message"] == (
        "--json and --format junit disagree: --json is --format json; give one"
    )
    # A usage error decides nothing: no decision is stored for it.
    listed = json.loads(run("gate", "list", "--json", env=env).stdout)
    assert len(listed["items"]) == 3


def test_list_pages_by_cursor_and_counts_when_asked(env: dict[str, str]) -> None:
    for _ in range(2):
        assert run("gate", "check", "chat-assistant-prod", env=env).returncode == 0
    first = run("gate", "list", "--limit", "1", "--total", env=env)
    assert first.returncode == 0, first.stderr
    assert "(2 in all)" in first.stderr
    cursor = first.stderr.split("(more: --cursor ")[1].split(")")[0]
    second = run("gate", "list", "--limit", "1", "--cursor", cursor, env=env)
    assert second.returncode == 0 and "more:" not in second.stderr
    ids = [result.stdout.splitlines()[1].split()[0] for result in (first, second)]
    assert len(set(ids)) == 2
    events = run("audit", "list", "--limit", "2", "--json", env=env)
    page = json.loads(events.stdout)
    assert page["total"] is None and len(page["items"]) == 2 and page["next_cursor"]
    bad = run("audit", "list", "--cursor", "garbage", env=env)
    assert bad.returncode == 2 and bad.stderr.count("\n") <= 3 and "cursor" in bad.stderr
    # Instants carry a zone, as through a server: the same answer locally and remotely.
    naive = run("gate", "list", "--since", "2026-01-01T00:00:00", env=env)
    assert naive.returncode == 2 and "--since" in naive.stderr
    zoned = run("gate", "list", "--since", "2026-01-01T00:00:00Z", "--json", env=env)
    assert zoned.returncode == 0 and len(json.loads(zoned.stdout)["items"]) == 2


# ---- one check, every report; errors in every report; paths from the repository root ----

PLAN = "chat-assistant-prod"
REPORT_FILES = {
    "junit": "gate.xml",
    "sarif": "gate.sarif",
    "gitlab": "gl-code-quality-report.json",
    "json": "decision.json",
    "text": "gate.txt",
}


@pytest.fixture(params=["local", "server"])
def either_env(request: pytest.FixtureRequest, env: dict[str, str]) -> Iterator[dict[str, str]]:
    """The example's registry, checked in place or through a server over it (the thin
    client: CAPGATE_SERVER set, the local database bogus)."""
    if request.param == "local":
        yield env
        return
    from tests.cli.test_cli import running_server

    with running_server(env["CAPGATE_DATABASE_URL"]) as remote:
        yield remote


@pytest.fixture(scope="session")
def sarif_schema() -> Any:
    """The official SARIF 2.1.0 schema, compiled, as test_sarif_schema.py reads it (the
    test skips with one line when ../shared/fixtures has no copy)."""
    import jsonschema_rs

    from tests.cli.test_sarif_schema import load_schema, schema_path

    return jsonschema_rs.validator_for(
        load_schema(schema_path()), validate_formats=True, offline=True
    )


def with_reports(
    tmp_path: Path,
    env: dict[str, str],
    plan: str,
    *args: str,
    formats: tuple[str, ...] = ("junit", "sarif", "gitlab", "json"),
    cwd: Path | None = None,
) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """`gate check PLAN ARGS --report F=PATH ...`: the run, and each report file written."""
    folder = tmp_path / "reports"
    folder.mkdir(exist_ok=True)
    reports = [f"--report={name}={folder / REPORT_FILES[name]}" for name in formats]
    if cwd is None:
        result = run("gate", "check", plan, *args, *reports, env=env)
    else:  # the in-process runner has no folder of its own: a process started there
        result = capgate("gate", "check", plan, *args, *reports, env=env, cwd=cwd)
    written = {
        name: (folder / REPORT_FILES[name]).read_text(encoding="utf-8")
        for name in formats
        if (folder / REPORT_FILES[name]).is_file()
    }
    return result, written


def denied_with_reports(
    tmp_path: Path, env: dict[str, str], plan_file: str, formats: tuple[str, ...]
) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """The plan with a short grace period (a deny), checked with github annotations on
    stdout and ``formats`` in files."""
    assert run("plan", "submit", str(short_grace_plan_file(tmp_path)), env=env).returncode == 0
    return with_reports(
        tmp_path, env, PLAN, "--format", "github", "--plan-file", plan_file, formats=formats
    )


def stored_count(env: dict[str, str]) -> int:
    listed = run("gate", "list", "--total", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    return int(json.loads(listed.stdout)["total"])


def failed_cases(report: str) -> list[ET.Element]:
    return [
        case for case in check_junit(report).iter("testcase") if case.find("failure") is not None
    ]


def test_one_check_writes_every_report_of_one_decision(
    either_env: dict[str, str], tmp_path: Path
) -> None:
    env = either_env
    assert run("plan", "submit", str(short_grace_plan_file(tmp_path)), env=env).returncode == 0
    manifests = drifted(tmp_path)
    before = stored_count(env)
    result, reports = with_reports(
        tmp_path,
        env,
        PLAN,
        "--manifests",
        str(manifests),
        "--format",
        "github",
        "--plan-file",
        "deploy/plan.yaml",
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert stored_count(env) == before + 1  # one decision, whatever the number of reports
    decision = json.loads(reports["json"])
    assert result.stderr == f"{verdict_of(decision)}\n"  # one line, the same verdict
    shown = decision_of(result, env)
    assert {**decision, "needs_recheck": None} == {**shown, "needs_recheck": None}
    violations = decision["violations"]
    policies = {v["policy"] for v in violations}
    assert {"drain_configured", "manifests_consistent"} <= policies

    # Where each finding is: the manifest's file and line, else the plan's file.
    def place(v: dict[str, Any]) -> tuple[str, int | None]:
        located = v["policy"] == "manifests_consistent"
        return (
            (v["details"]["file"], v["details"]["line"]) if located else ("deploy/plan.yaml", None)
        )

    errors = [line for line in result.stdout.splitlines() if line.startswith("::error ")]
    assert len(errors) == len(violations)
    for line, v in zip(errors, violations, strict=True):
        file, line_no = place(v)
        where = f"file={file},line={line_no}" if line_no else f"file={file}"
        assert line.startswith(f"::error {where},title=capgate {v['policy']}.{v['rule']}::")

    log = json.loads(reports["sarif"])
    check_sarif(log)
    (sarif_run,) = log["runs"]
    assert (sarif_run["properties"]["decision"], sarif_run["properties"]["outcome"]) == (
        decision["id"],
        "deny",
    )
    found = [r for r in sarif_run["results"] if r["level"] == "error"]
    assert len(found) == len(violations)
    for r, v in zip(found, violations, strict=True):
        file, line_no = place(v)
        physical = r["locations"][0]["physicalLocation"]
        assert physical["artifactLocation"]["uri"] == file
        assert physical.get("region") == ({"startLine": line_no} if line_no else None)
    # Every result has a file: GitHub code scanning takes no other.
    assert all("physicalLocation" in r["locations"][0] for r in sarif_run["results"])

    cases = failed_cases(reports["junit"])
    assert cases
    assert sorted(
        json.dumps(json.loads(case.findtext("failure") or ""), sort_keys=True) for case in cases
    ) == sorted(json.dumps(v, sort_keys=True) for v in violations)
    for case in cases:
        v = json.loads(case.findtext("failure") or "")
        file, line_no = place(v)
        assert (case.get("file"), case.get("line")) == (file, str(line_no) if line_no else None)

    issues = json.loads(reports["gitlab"])
    assert [i["check_name"] for i in issues[: len(violations)]] == [
        f"{v['policy']}.{v['rule']}" for v in violations
    ]
    assert [
        (i["location"]["path"], i["location"]["lines"]["begin"]) for i in issues[: len(violations)]
    ] == [(place(v)[0], place(v)[1] or 1) for v in violations]


def verdict_of(decision: dict[str, Any]) -> str:
    from registry.gate.outcome import WireDecision

    return WireDecision.from_json(decision).verdict()


def test_plan_file_goes_with_every_format(env: dict[str, str], tmp_path: Path) -> None:
    """--plan-file is accepted whatever the formats; text and json have no place to put it."""
    text, reports = with_reports(
        tmp_path, env, PLAN, "--plan-file", "deploy/plan.yaml", formats=("junit", "text")
    )
    assert text.returncode == 0, text.stdout + text.stderr
    assert text.stdout.startswith(f"ALLOW {PLAN}@v1 (decision ")
    assert text.stderr == text.stdout.splitlines()[0] + "\n"  # reports in files: the verdict
    assert reports["text"] == text.stdout  # the same report, the same decision
    cases = list(ET.fromstring(reports["junit"]).iter("testcase"))
    assert cases and {case.get("file") for case in cases} == {"deploy/plan.yaml"}
    as_json = run("gate", "check", PLAN, "--format", "json", "--plan-file", "p.yaml", env=env)
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["outcome"] == "allow"


def test_gate_show_renders_a_stored_decision_as_the_check_did(
    env: dict[str, str], tmp_path: Path
) -> None:
    formats = ("junit", "sarif", "gitlab", "json")
    checked, reports = denied_with_reports(tmp_path, env, "deploy/plan.yaml", formats)
    assert checked.returncode == 1, checked.stderr
    decision_id = json.loads(reports["json"])["id"]
    for name in ("github", *formats):
        shown = run(
            "gate",
            "show",
            decision_id,
            "--format",
            name,
            "--plan-file",
            "deploy/plan.yaml",
            env=env,
        )
        assert (shown.returncode, shown.stderr) == (0, ""), shown.stderr  # it read the decision
        if name == "github":
            assert shown.stdout == checked.stdout
        elif name == "json":  # as stored, and as it stands now: whether to re-check
            again = json.loads(shown.stdout)
            assert again == {**json.loads(reports["json"]), "needs_recheck": again["needs_recheck"]}
        else:
            assert shown.stdout == reports[name], name
    # Several at once, as for a check; text keeps who asked and when.
    both = run(
        "gate",
        "show",
        decision_id,
        "--plan-file",
        "deploy/plan.yaml",
        "--report",
        f"sarif={tmp_path / 'again.sarif'}",
        env=env,
    )
    assert both.returncode == 0, both.stderr
    assert both.stdout.startswith(f"DENY {PLAN}@v2: ")
    assert "  asked by ci at " in both.stdout
    assert (tmp_path / "again.sarif").read_text(encoding="utf-8") == reports["sarif"]


def test_reports_of_an_allow_and_of_errors_are_valid_sarif(
    sarif_schema: Any, env: dict[str, str], tmp_path: Path
) -> None:
    from tests.cli.test_sarif_schema import violations_of

    dead = dict(env, CAPGATE_POLICY_ENGINE="opa", CAPGATE_OPA_URL=f"http://127.0.0.1:{free_port()}")
    for run_env, plan, code in ((env, PLAN, 0), (dead, PLAN, 2), (env, "no-such-plan", 2)):
        result, reports = with_reports(
            tmp_path, run_env, plan, "--plan-file", "deploy/plan.yaml", formats=("sarif",)
        )
        assert result.returncode == code, result.stdout + result.stderr
        assert violations_of(sarif_schema, json.loads(reports["sarif"])) == []


def test_fail_closed_error_decision_is_in_every_report(env: dict[str, str], tmp_path: Path) -> None:
    """The engine unreachable: an error decision, stored, and every report says why."""
    dead = dict(env, CAPGATE_POLICY_ENGINE="opa", CAPGATE_OPA_URL=f"http://127.0.0.1:{free_port()}")
    result, reports = with_reports(
        tmp_path, dead, PLAN, "--format", "github", "--plan-file", "deploy/plan.yaml"
    )
    assert result.returncode == 2, result.stdout + result.stderr
    decision = json.loads(reports["json"])
    assert (decision["outcome"], decision["violations"]) == ("error", [])
    assert decision["id"] and decision["error"]
    assert result.stderr == f"ERROR {PLAN}@v1: {decision['error']} (decision {decision['id']})\n"
    assert_error_in_every_report(result.stdout, reports, decision["error"])


def assert_error_in_every_report(stdout: str, reports: dict[str, str], error: str) -> None:
    """The error in the GitHub annotation (stdout), JUnit, SARIF and Code Quality reports."""
    (annotation,) = stdout.splitlines()
    assert annotation.startswith("::error file=deploy/plan.yaml,title=capgate error::")
    assert escape_data(error) in annotation
    suite = check_junit(reports["junit"])
    (case,) = suite.iter("testcase")
    failure = case.find("error")
    assert failure is not None and failure.get("message") == error
    assert (suite.get("errors"), case.get("file")) == ("1", "deploy/plan.yaml")
    log = json.loads(reports["sarif"])
    check_sarif(log)
    (invocation,) = log["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    assert invocation["toolExecutionNotifications"] == [
        {"level": "error", "message": {"text": error}}
    ]
    (result,) = log["runs"][0]["results"]
    assert (result["ruleId"], result["message"]["text"]) == ("gate.error", error)
    assert (
        result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "deploy/plan.yaml"
    )
    (issue,) = json.loads(reports["gitlab"])
    assert (issue["check_name"], issue["severity"]) == ("gate.error", "blocker")
    assert issue["description"] == f"capgate could not decide: {error}"
    assert issue["location"] == {"path": "deploy/plan.yaml", "lines": {"begin": 1}}


def _unknown_plan(env: dict[str, str], tmp_path: Path) -> tuple[list[str], dict[str, str], str]:
    return ["no-such-plan"], env, "no plan record no-such-plan"


def _registry_unreachable(
    env: dict[str, str], tmp_path: Path
) -> tuple[list[str], dict[str, str], str]:
    url = f"http://127.0.0.1:{free_port()}"
    return [PLAN, "--server", url], env, f"cannot reach capgate server {url}: "


def _unreadable_manifests(
    env: dict[str, str], tmp_path: Path
) -> tuple[list[str], dict[str, str], str]:
    missing = tmp_path / "no-k8s"
    return [PLAN, "--manifests", str(missing)], env, str(missing)


def _unknown_policy_release(
    env: dict[str, str], tmp_path: Path
) -> tuple[list[str], dict[str, str], str]:
    return [PLAN, "--policy-release", "no-such-release@v1"], env, "no-such-release@v1"


@pytest.mark.parametrize(
    "case",
    [_unknown_plan, _registry_unreachable, _unreadable_manifests, _unknown_policy_release],
    ids=["unknown-plan", "registry-unreachable", "unreadable-manifests", "policy-release"],
)
def test_fail_no_decision_is_still_written_in_every_report(
    case: Any, env: dict[str, str], tmp_path: Path
) -> None:
    args, run_env, says = case(env, tmp_path)
    before = stored_count(env)
    result, reports = with_reports(
        tmp_path,
        run_env,
        *args,
        "--format",
        "github",
        "--plan-file",
        "deploy/plan.yaml",
        formats=("junit", "sarif", "gitlab", "json", "text"),
    )
    assert result.returncode == 2, result.stdout + result.stderr
    # stderr: the one error line, as without reports; stdout: the report, nothing else.
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("capgate: error: ")
    error = result.stderr.removeprefix("capgate: error: ").rstrip("\n")
    assert says in error
    assert_error_in_every_report(result.stdout, reports, error)
    # Nothing was decided, and no report pretends it was.
    assert stored_count(env) == before
    assert json.loads(reports["json"]) == {
        **json.loads(reports["json"]),
        "id": None,
        "outcome": "error",
        "error": error,
        "violations": [],
    }
    assert reports["text"] == f"ERROR {args[0]}: {error} (no decision stored)\n"
    assert "(no decision stored)" in result.stdout


def test_usage_errors_write_no_report_and_decide_nothing(
    env: dict[str, str], tmp_path: Path
) -> None:
    before = stored_count(env)
    tmp_path = tmp_path / "reports"
    tmp_path.mkdir()
    paired = run(
        "gate",
        "check",
        PLAN,
        "--format",
        "junit",
        "--output",
        str(tmp_path / "a.xml"),
        "--format",
        "sarif",
        "--output",
        str(tmp_path / "b.sarif"),
        env=env,
    )
    assert (paired.returncode, paired.stdout) == (2, "")
    assert paired.stderr == (
        "capgate: error: --format given 2 times: one --format (on stdout, or in --output), and "
        "--report FORMAT=PATH for each further report\n"
    )
    unknown = run("gate", "check", PLAN, "--report", "yaml=gate.yaml", env=env)
    assert unknown.returncode == 2
    assert unknown.stderr == (
        "capgate: error: --report yaml=gate.yaml: give FORMAT=PATH, FORMAT one of text, json, "
        "junit, github, sarif, gitlab\n"
    )
    same = tmp_path / "gate.sarif"
    twice = run(
        "gate",
        "check",
        PLAN,
        "--format",
        "sarif",
        "--output",
        str(same),
        "--report",
        f"gitlab={same}",
        env=env,
    )
    assert twice.returncode == 2
    assert twice.stderr == f"capgate: error: {same}: two reports would be written to this file\n"
    assert list(tmp_path.iterdir()) == [] and stored_count(env) == before


def test_annotation_paths_are_relative_to_the_repository_root(
    env: dict[str, str], tmp_path: Path
) -> None:
    """A job that runs the check in a subfolder (deploy/) of its checkout."""
    if shutil.which("git") is None:
        pytest.skip("git absent: the repository root cannot be asked")
    repository = tmp_path / "checkout"
    (repository / "deploy").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repository)], check=True, timeout=30)
    drifted(repository / "deploy")  # deploy/k8s/
    shutil.copyfile(example_path("plan"), repository / "deploy" / "plan.yaml")
    result, reports = with_reports(
        tmp_path,
        env,
        PLAN,
        "--manifests",
        "k8s",
        "--plan-file",
        "plan.yaml",
        "--format",
        "github",
        formats=("junit", "sarif", "gitlab"),
        cwd=repository / "deploy",
    )
    assert result.returncode == 1, result.stdout + result.stderr
    expected = {"deploy/plan.yaml", "deploy/k8s/deployment.yaml", "deploy/k8s/hpa.yaml"}
    github = {line.split("file=")[1].split(",")[0] for line in result.stdout.splitlines()}
    sarif = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in json.loads(reports["sarif"])["runs"][0]["results"]
    }
    gitlab = {i["location"]["path"] for i in json.loads(reports["gitlab"])}
    junit = {str(case.get("file")) for case in ET.fromstring(reports["junit"]).iter("testcase")}
    assert {"deploy/plan.yaml", "deploy/k8s/deployment.yaml"} <= github
    assert github <= expected and sarif == github and gitlab <= expected and junit <= expected
    assert "deploy/k8s/deployment.yaml" in junit and "deploy/k8s/deployment.yaml" in gitlab
