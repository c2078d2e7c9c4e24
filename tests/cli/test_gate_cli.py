"""`capgate gate` and `capgate plan size` as a release pipeline runs them: exit codes decide."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest
import yaml

from registry.gate.formats import escape_data
from registry.gate.report import policy_ids
from registry.policy.bundle import load_bundle
from tests.factories import (
    EXAMPLE_EVIDENCE,
    example,
    example_path,
    short_grace_plan_file,
    write_load_test,
)
from tests.support.opa_server import free_port, running_opa

CAPGATE = [sys.executable, "-m", "cli.main"]


def capgate(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CAPGATE, *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def _env(db: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    base.update(CAPGATE_DATABASE_URL=f"sqlite:///{db}", CAPGATE_PRINCIPAL="ci")
    return base


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The worked example registered through the CLI once per module, its evidence dated
    last week; each test gets its own copy of the database file."""
    folder = tmp_path_factory.mktemp("seeded")
    base = _env(folder / "registry.db")
    assert capgate("db", "upgrade", env=base).returncode == 0
    for kind in ("workload", "provider", "plan"):
        result = capgate(kind, "submit", str(example_path(kind)), env=base)
        assert result.returncode == 0, result.stderr
    # The example's load test is illustrative: date it within the 90-day freshness limit.
    result = import_load_test(folder, base, days_ago=6)
    assert result.returncode == 0, result.stderr
    return folder / "registry.db"


@pytest.fixture
def env(seeded: Path, tmp_path: Path) -> dict[str, str]:
    """A migrated local registry holding the worked example (a copy of the seeded one)."""
    for suffix in ("", "-wal", "-shm"):
        source = seeded.with_name(seeded.name + suffix)
        if source.exists():
            shutil.copyfile(source, tmp_path / source.name)
    return _env(tmp_path / "registry.db")


def import_load_test(
    tmp_path: Path,
    env: dict[str, str],
    *,
    days_ago: int,
    run: int = 0,
    name: str = EXAMPLE_EVIDENCE,
    **refs: str,
) -> subprocess.CompletedProcess[str]:
    """`capgate evidence import` of the example's load test, as the worked example runs it."""
    when = (datetime.now(UTC) - timedelta(days=days_ago)).isoformat()
    targets = {"workload": "chat-assistant", "plan": "chat-assistant-prod", **refs}
    return capgate(
        "evidence",
        "import",
        "--workload",
        targets["workload"],
        "--provider",
        "llama31-8b-h100-vllm",
        "--plan",
        targets["plan"],
        "--replicas",
        "1",
        "--measured-at",
        when,
        "--name",
        name,
        *write_load_test(tmp_path, run),
        env=env,
    )


def test_allow_exits_0_with_one_line_verdict(env: dict[str, str]) -> None:
    result = capgate("gate", "check", "chat-assistant-prod", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("ALLOW chat-assistant-prod@v1 (decision ")


def test_deny_exits_1_and_names_the_policy(env: dict[str, str], tmp_path: Path) -> None:
    assert capgate("plan", "submit", str(short_grace_plan_file(tmp_path)), env=env).returncode == 0
    result = capgate("gate", "check", "chat-assistant-prod", "--format", "json", env=env)
    assert result.returncode == 1
    decision = json.loads(result.stdout)
    assert decision["outcome"] == "deny"
    assert {v["policy"] for v in decision["violations"]} == {"drain_configured"}
    assert result.stderr.startswith("DENY chat-assistant-prod@v2: ")
    shown = capgate("gate", "show", decision["id"], "--json", env=env)
    assert json.loads(shown.stdout)["id"] == decision["id"]


def junit_report(
    tmp_path: Path, env: dict[str, str], *, exit_code: int = 0
) -> tuple[subprocess.CompletedProcess[str], ET.Element]:
    """`gate check --format junit --output FILE` on the example plan."""
    report = tmp_path / "gate.xml"
    junit = capgate(
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


def test_junit_report_has_a_case_per_policy(env: dict[str, str], tmp_path: Path) -> None:
    assert capgate("plan", "submit", str(short_grace_plan_file(tmp_path)), env=env).returncode == 0
    _, suite = junit_report(tmp_path, env, exit_code=1)
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert sorted(cases) == policy_ids(list(load_bundle().modules)) and len(cases) == 13
    assert cases["drain_configured"].find("failure") is not None
    assert all(
        case.find("failure") is None for name, case in cases.items() if name != "drain_configured"
    )


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
    assert (result.returncode, result.stderr) == (
        2,
        "capgate: error: no plan record no-such-plan\n",
    )


def test_plan_size_of_registered_plan_and_of_a_file(env: dict[str, str], tmp_path: Path) -> None:
    chart = tmp_path / "chart.png"
    registered = capgate(
        "plan", "size", "chat-assistant-prod", "--json", "--chart", str(chart), env=env
    )
    assert registered.returncode == 0, registered.stderr
    result = json.loads(registered.stdout)
    assert set(result["scenarios"]) == {"peak", "one_worker_lost", "largest_zone_lost"}
    assert result["slo_met"] is True
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    draft = capgate("plan", "size", str(short_grace_plan_file(tmp_path)), env=env)
    assert draft.returncode == 0, draft.stderr
    assert "scenario largest_zone_lost" in draft.stdout


def test_decision_list_is_the_audit_trail(env: dict[str, str]) -> None:
    first = json.loads(
        capgate("gate", "check", "chat-assistant-prod", "--format", "json", env=env).stdout
    )
    listed = json.loads(
        capgate("gate", "list", "--plan", "chat-assistant-prod", "--json", env=env).stdout
    )
    assert [d["id"] for d in listed["items"]] == [first["id"]]
    assert listed["items"][0]["principal"] == "ci"


def test_workload_growth_denies_until_new_evidence(env: dict[str, str], tmp_path: Path) -> None:
    """The worked example: allow; p99 prompt +30 % denies naming the change; new evidence allows."""
    assert capgate("gate", "check", "chat-assistant-prod", env=env).returncode == 0
    workload = example("workload")
    workload["classes"][0]["prompt_tokens"]["quantiles"]["p99"] = 7930  # 6100 x 1.3
    grown = tmp_path / "workload-v2.yaml"
    grown.write_text(yaml.safe_dump(workload))
    assert capgate("workload", "submit", str(grown), env=env).returncode == 0
    plan = tmp_path / "plan-v2.yaml"
    plan.write_text(yaml.safe_dump(example("plan", workload="chat-assistant@v2")))
    assert capgate("plan", "submit", str(plan), env=env).returncode == 0

    denied = capgate("gate", "check", "chat-assistant-prod", env=env)
    assert denied.returncode == 1
    assert "evidence_fresh" in denied.stdout
    assert "classes.interactive.prompt_tokens.p99: 6100.0 -> 7930.0" in denied.stdout

    # Re-importing the same files for the changed workload is refused (evidence laundering)...
    relabelled = import_load_test(
        tmp_path, env, days_ago=1, workload="chat-assistant@v2", plan="chat-assistant-prod@v2"
    )
    assert relabelled.returncode == 2, relabelled.stdout
    # ...a new load test measured against the new versions is accepted and allows again.
    retest = import_load_test(
        tmp_path,
        env,
        days_ago=1,
        run=1,
        workload="chat-assistant@v2",
        plan="chat-assistant-prod@v2",
    )
    assert retest.returncode == 0, retest.stderr
    allowed = capgate("gate", "check", "chat-assistant-prod", env=env)
    assert allowed.returncode == 0, allowed.stdout
    assert allowed.stdout.startswith("ALLOW chat-assistant-prod@v2")


# ---- reports for CI systems: annotations, SARIF, JUnit, and --json -----------------------


def decision_of(result: subprocess.CompletedProcess[str], env: dict[str, str]) -> dict[str, Any]:
    """The stored decision a `gate check` names in its one-line verdict on stderr."""
    decision_id = result.stderr.split("(decision ")[1].split(",")[0].split(")")[0]
    shown = capgate("gate", "show", decision_id, "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    return dict(json.loads(shown.stdout))


def test_deny_as_github_annotations_and_sarif(env: dict[str, str], tmp_path: Path) -> None:
    assert capgate("plan", "submit", str(short_grace_plan_file(tmp_path)), env=env).returncode == 0
    github = capgate(
        "gate",
        "check",
        "chat-assistant-prod",
        "--format",
        "github",
        "--plan-file",
        "deploy/plan,prod.yaml",
        env=env,
    )
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

    sarif = capgate("gate", "check", "chat-assistant-prod", "--format", "sarif", env=env)
    assert sarif.returncode == 1
    assert sarif.stderr.startswith("DENY chat-assistant-prod@v2: ")
    decision = decision_of(sarif, env)
    log = json.loads(sarif.stdout)
    assert (log["$schema"], log["version"]) == (
        "https://json.schemastore.org/sarif-2.1.0.json",
        "2.1.0",
    )
    (run,) = log["runs"]
    rules = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    assert run["tool"]["driver"]["name"] == "capgate"
    assert set(rules) >= {f"drain_configured.{v['rule']}" for v in decision["violations"]}
    assert rules == sorted({r["ruleId"] for r in run["results"]})
    errors = [r for r in run["results"] if r["level"] == "error"]
    assert [(r["ruleId"], r["message"]["text"]) for r in errors] == [
        (f"drain_configured.{v['rule']}", v["message"]) for v in decision["violations"]
    ]
    assert len(run["results"]) == len(errors) + len(decision["warnings"])
    for result, violation in zip(errors, decision["violations"], strict=True):
        assert rules[result["ruleIndex"]] == result["ruleId"]
        assert result["properties"] == {
            "decision": decision["id"],
            "plan": "chat-assistant-prod@v2",
            "severity": violation["severity"],
            "details": violation["details"],
        }
    assert run["properties"]["outcome"] == "deny"
    assert run["invocations"][0]["executionSuccessful"] is True


def test_warnings_reach_annotations_sarif_and_junit_test_cases(
    env: dict[str, str], tmp_path: Path
) -> None:
    """Old evidence beside fresh evidence: an allow with warnings, seen by every format."""
    old = import_load_test(tmp_path, env, days_ago=120, run=1, name="old-load-test")
    assert old.returncode == 0, old.stderr

    github = capgate("gate", "check", "chat-assistant-prod", "--format", "github", env=env)
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

    sarif = capgate("gate", "check", "chat-assistant-prod", "--format", "sarif", env=env)
    assert sarif.returncode == 0
    results = json.loads(sarif.stdout)["runs"][0]["results"]
    assert [(r["ruleId"], r["level"], r["message"]["text"]) for r in results] == [
        (notes[w][0], "warning", notes[w][1]) if w in notes else ("gate.warning", "warning", w)
        for w in warnings
    ]

    junit, suite = junit_report(tmp_path, env)
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
    assert properties == decision_of(junit, env)["warnings"] == warnings
    assert suite.findtext("system-err") == "\n".join(warnings)


def test_waived_violation_is_a_notice_and_its_waiver_warning_reaches_the_policy(
    env: dict[str, str], tmp_path: Path
) -> None:
    assert capgate("plan", "submit", str(short_grace_plan_file(tmp_path)), env=env).returncode == 0
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
    assert capgate("waiver", "submit", str(waiver), env=env).returncode == 0
    # Four eyes: the requester (ci) cannot approve; a different principal can.
    own = capgate("waiver", "approve", "drain-grace-exception", env=env)
    assert own.returncode == 2
    assert own.stderr.startswith("capgate: error: ci requested waiver drain-grace-exception@v1")
    assert capgate("waiver", "pending", env=env).stdout.split() == ["drain-grace-exception@v1"]
    approver = dict(env, CAPGATE_PRINCIPAL="sre-lead")
    approved = capgate("waiver", "approve", "drain-grace-exception", env=approver)
    assert approved.returncode == 0, approved.stderr
    assert approved.stdout.strip() == (
        "approved drain-grace-exception@v1 (requested by ci) as sre-lead"
    )
    assert capgate("waiver", "pending", env=env).stdout.strip() == "no pending waivers"

    github = capgate("gate", "check", "chat-assistant-prod", "--format", "github", env=env)
    assert github.returncode == 0, github.stdout + github.stderr
    decision = decision_of(github, env)
    lines = github.stdout.splitlines()
    notices = [line for line in lines if line.startswith("::notice title=capgate drain_")]
    assert len(notices) == len(decision["waived"]) > 0
    assert all("(waiver drain-grace-exception@v1, owner sre-lead@example.com" in n for n in notices)
    (expiring,) = [line for line in lines if line.startswith("::warning title=capgate warning")]
    assert expiring.startswith("::warning title=capgate warning::waiver drain-grace-exception@v1")
    assert "expires in 10 days" in expiring

    sarif = json.loads(
        capgate("gate", "check", "chat-assistant-prod", "--format", "sarif", env=env).stdout
    )
    waived = [r for r in sarif["runs"][0]["results"] if r["level"] == "note"]
    assert {r["ruleId"] for r in waived} == {
        f"drain_configured.{v['rule']}" for v in decision["waived"]
    }
    assert all(r["suppressions"][0]["kind"] == "external" for r in waived)
    assert all(r["properties"]["waived_by"] == "drain-grace-exception@v1" for r in waived)

    _, suite = junit_report(tmp_path, env)
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

    alias = capgate("gate", "check", "chat-assistant-prod", "--json", env=env)
    spelled = capgate("gate", "check", "chat-assistant-prod", "--format", "json", env=env)
    both = capgate("gate", "check", "chat-assistant-prod", "--json", "--format", "json", env=env)
    assert alias.returncode == spelled.returncode == both.returncode == 0
    assert alias.stderr.startswith("ALLOW chat-assistant-prod@v1 (decision ")
    assert json.loads(alias.stdout)["outcome"] == "allow"
    assert (
        same_but_id_and_time(alias.stdout)
        == same_but_id_and_time(spelled.stdout)
        == same_but_id_and_time(both.stdout)
    )

    conflict = capgate(
        "gate", "check", "chat-assistant-prod", "--json", "--format", "junit", env=env
    )
    assert (conflict.returncode, conflict.stdout) == (2, "")
    assert conflict.stderr == (
        "capgate: error: --json and --format junit disagree: --json is --format json; give one\n"
    )
    misplaced = capgate("gate", "check", "chat-assistant-prod", "--plan-file", "p.yaml", env=env)
    assert (misplaced.returncode, misplaced.stderr) == (
        2,
        "capgate: error: --plan-file is for --format github, sarif or gitlab\n",
    )
    # A usage error decides nothing: no decision is stored for it.
    listed = json.loads(capgate("gate", "list", "--json", env=env).stdout)
    assert len(listed["items"]) == 3


def test_list_pages_by_cursor_and_counts_when_asked(env: dict[str, str]) -> None:
    for _ in range(2):
        assert capgate("gate", "check", "chat-assistant-prod", env=env).returncode == 0
    first = capgate("gate", "list", "--limit", "1", "--total", env=env)
    assert first.returncode == 0, first.stderr
    assert "(2 in all)" in first.stderr
    cursor = first.stderr.split("(more: --cursor ")[1].split(")")[0]
    second = capgate("gate", "list", "--limit", "1", "--cursor", cursor, env=env)
    assert second.returncode == 0 and "more:" not in second.stderr
    ids = [result.stdout.splitlines()[1].split()[0] for result in (first, second)]
    assert len(set(ids)) == 2
    events = capgate("audit", "list", "--limit", "2", "--json", env=env)
    page = json.loads(events.stdout)
    assert page["total"] is None and len(page["items"]) == 2 and page["next_cursor"]
    bad = capgate("audit", "list", "--cursor", "garbage", env=env)
    assert bad.returncode == 2 and bad.stderr.count("\n") <= 3 and "cursor" in bad.stderr
    # Instants carry a zone, as through a server: the same answer locally and remotely.
    naive = capgate("gate", "list", "--since", "2026-01-01T00:00:00", env=env)
    assert naive.returncode == 2 and "--since" in naive.stderr
    zoned = capgate("gate", "list", "--since", "2026-01-01T00:00:00Z", "--json", env=env)
    assert zoned.returncode == 0 and len(json.loads(zoned.stdout)["items"]) == 2
