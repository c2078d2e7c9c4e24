"""`gate check --format github|sarif|gitlab|junit|text` renderers on decisions of every shape.

The end-to-end runs (a real registry, a real process) are in test_gate_cli.py; here the
decisions are built by hand to reach what the worked example never says: messages with
newlines and percent signs, warnings of every kind, an evaluation error, a check that
could not decide at all, paths written relative to a repository's root.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from cli.repo_paths import repo_relative
from registry.gate.formats import (
    escape_data,
    escape_property,
    gitlab_fingerprint,
    render_github,
    render_gitlab,
    render_sarif,
)
from registry.gate.junit import render_junit
from registry.gate.outcome import DecisionLike
from registry.gate.report import policy_warning, render_text, warning_policy
from registry.gate.undecided import Undecided
from registry.gate.views import DecisionView, Outcome

POLICIES = ["drain_configured", "evidence_fresh", "tail_slo"]
NOTE = "tail_slo.claims_pessimistic: class batch: the plan claims ttft_p99 900 ms, predicts 400"
WAIVER_WARNING = (
    "waiver drain-grace-exception@v1 (drain_configured, owner sre@example.com) expires in "
    "10 days, at 2026-12-10T00:00:00+00:00"
)
STALE = "evidence old@v1 is stale: measured 120 days ago, past the maximum age of 90 days"


def violation(policy: str, rule: str, message: str, **details: Any) -> dict[str, Any]:
    return {
        "policy": policy,
        "rule": rule,
        "severity": "high",
        "message": message,
        "details": details,
    }


def decision(outcome: Outcome = Outcome.deny, **fields: Any) -> DecisionView:
    base: dict[str, Any] = {
        "id": "3f1c8f5e-0000-4000-8000-000000000001",
        "plan": "chat-assistant-prod@v2",
        "outcome": outcome,
        "engine": "embedded",
        "bundle_revision": "sha256:" + "b" * 64,
        "input_digest": "sha256:" + "d" * 64,
        "inputs": {},
        "violations": [],
        "waived": [],
        "waivers_used": [],
        "warnings": [],
        "error": None,
        "principal": "ci",
        "created_at": datetime(2026, 11, 30, 12, 0, tzinfo=UTC),
        "needs_recheck": None,
    }
    return DecisionView.model_validate({**base, **fields})


DENY = decision(
    violations=[
        violation(
            "drain_configured",
            "grace_too_short",
            "grace 30 s < 50% of the\nstream tail, 60 s",
            grace_s=30,
            tail_s=60.5,
        ),
        violation("tail_slo", "ttft_p99_exceeded", "class interactive: 910 ms > 800 ms"),
    ],
    warnings=[NOTE, STALE],
)
WAIVED = decision(
    Outcome.allow,
    waived=[
        {
            **violation("drain_configured", "grace_too_short", "grace 30 s < 60 s"),
            "waived_by": "drain-grace-exception@v1",
            "waiver_owner": "sre@example.com",
            "waiver_expires_at": "2026-12-10T00:00:00+00:00",
        }
    ],
    waivers_used=["drain-grace-exception@v1"],
    warnings=[WAIVER_WARNING],
)
ERROR = decision(Outcome.error, error="the policy engine is unreachable", warnings=[STALE])


# ---- warnings: which policy they are about ----------------------------------------------


def test_a_policy_note_names_its_policy_and_rule() -> None:
    note = policy_warning(NOTE)
    assert note is not None
    assert (note.policy, note.rule) == ("tail_slo", "claims_pessimistic")
    assert note.message.startswith("class batch: the plan claims")
    assert warning_policy(NOTE, POLICIES) == "tail_slo"


@pytest.mark.parametrize(
    ("warning", "policy"),
    [
        (WAIVER_WARNING, "drain_configured"),
        (
            "waiver w@v1 for drain_configured was granted for p@v1, not p@v2: not applied",
            "drain_configured",
        ),
        (STALE, None),  # a colon in free text does not make it a note
        ("unknown_policy.rule: from a policy this bundle does not have", None),
    ],
)
def test_free_text_warnings_belong_to_the_policy_they_name(
    warning: str, policy: str | None
) -> None:
    assert warning_policy(warning, POLICIES) == policy


def test_free_text_is_not_a_note() -> None:
    assert policy_warning(STALE) is None
    assert policy_warning(WAIVER_WARNING) is None


# ---- GitHub Actions workflow commands ----------------------------------------------------


def test_escaping_follows_github_rules() -> None:
    assert escape_data("50% of\r\nthe tail: a, b") == "50%25 of%0D%0Athe tail: a, b"
    assert escape_property("50% of\r\nthe tail: a, b") == "50%25 of%0D%0Athe tail%3A a%2C b"


def test_github_deny_is_one_error_per_violation_and_one_warning_per_warning() -> None:
    assert render_github(DENY).splitlines() == [
        "::error title=capgate drain_configured.grace_too_short"
        "::grace 30 s < 50%25 of the%0Astream tail, 60 s",
        "::error title=capgate tail_slo.ttft_p99_exceeded::class interactive: 910 ms > 800 ms",
        "::warning title=capgate tail_slo.claims_pessimistic"
        "::class batch: the plan claims ttft_p99 900 ms, predicts 400",
        f"::warning title=capgate warning::{STALE}",
    ]


def test_github_waived_is_a_notice_and_an_allow_says_so() -> None:
    lines = render_github(WAIVED).splitlines()
    assert lines == [
        f"::warning title=capgate warning::{WAIVER_WARNING}",
        "::notice title=capgate drain_configured.grace_too_short waived::grace 30 s < 60 s "
        "(waiver drain-grace-exception@v1, owner sre@example.com, until 2026-12-10T00:00:00+00:00)",
        f"::notice title=capgate ALLOW::{WAIVED.verdict()}",
    ]


def test_github_file_property_only_when_given_and_escaped() -> None:
    assert "file=" not in render_github(DENY)
    first = render_github(DENY, plan_file="deploy/a,b:c.yaml").splitlines()[0]
    assert first.startswith("::error file=deploy/a%2Cb%3Ac.yaml,title=capgate drain_configured.")


def test_github_error_outcome_is_an_error_annotation() -> None:
    assert render_github(ERROR).splitlines() == [
        "::error title=capgate error::chat-assistant-prod@v2: the policy engine is unreachable "
        "(decision 3f1c8f5e-0000-4000-8000-000000000001)",
        f"::warning title=capgate warning::{STALE}",
    ]


# ---- SARIF 2.1.0 -------------------------------------------------------------------------

LEVELS = {"none", "note", "warning", "error"}


def check_sarif(log: dict[str, Any]) -> None:
    """The shape capgate's SARIF must have, checked by hand: the properties it writes,
    their enumerations, and each result's ruleIndex naming its ruleId.

    Not a schema validation: test_sarif_schema.py validates against the official SARIF
    2.1.0 schema (from ../shared/fixtures, skipped when absent).
    """
    assert set(log) == {"$schema", "version", "runs"}
    assert log["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    assert log["version"] == "2.1.0"
    assert isinstance(log["runs"], list) and len(log["runs"]) == 1
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "capgate"
    ids = [rule["id"] for rule in driver["rules"]]
    assert len(ids) == len(set(ids))
    for rule in driver["rules"]:
        assert isinstance(rule["shortDescription"]["text"], str)
    for invocation in run["invocations"]:
        assert isinstance(invocation["executionSuccessful"], bool)
        assert invocation["endTimeUtc"].endswith("Z")
        datetime.fromisoformat(invocation["endTimeUtc"])
        for notification in invocation.get("toolExecutionNotifications", []):
            assert notification["level"] in LEVELS
            assert isinstance(notification["message"]["text"], str)
    for result in run["results"]:
        assert isinstance(result["message"]["text"], str)
        assert result["level"] in LEVELS
        assert ids[result["ruleIndex"]] == result["ruleId"]
        for location in result["locations"]:
            for logical in location.get("logicalLocations", []):
                assert isinstance(logical["name"], str)
            if "physicalLocation" in location:
                assert isinstance(location["physicalLocation"]["artifactLocation"]["uri"], str)
        for suppression in result.get("suppressions", []):
            assert suppression["kind"] in {"inSource", "external"}
            assert suppression["status"] in {"accepted", "underReview", "rejected"}
        assert isinstance(result["properties"], dict)


def test_sarif_deny_has_a_rule_per_policy_rule_and_an_error_per_violation() -> None:
    log = json.loads(render_sarif(DENY))
    check_sarif(log)
    run = log["runs"][0]
    assert [rule["id"] for rule in run["tool"]["driver"]["rules"]] == [
        "drain_configured.grace_too_short",
        "gate.warning",
        "tail_slo.claims_pessimistic",
        "tail_slo.ttft_p99_exceeded",
    ]
    assert [(r["ruleId"], r["level"], r["message"]["text"]) for r in run["results"]] == [
        ("drain_configured.grace_too_short", "error", "grace 30 s < 50% of the\nstream tail, 60 s"),
        ("tail_slo.ttft_p99_exceeded", "error", "class interactive: 910 ms > 800 ms"),
        (
            "tail_slo.claims_pessimistic",
            "warning",
            "class batch: the plan claims ttft_p99 900 ms, predicts 400",
        ),
        ("gate.warning", "warning", STALE),
    ]
    common = {"decision": DENY.id, "plan": "chat-assistant-prod@v2"}
    assert run["results"][0]["properties"] == {
        **common,
        "severity": "high",
        "details": {"grace_s": 30, "tail_s": 60.5},
    }
    assert run["results"][1]["properties"] == {**common, "severity": "high"}  # no numbers
    assert run["results"][3]["properties"] == common
    assert run["properties"]["outcome"] == "deny"
    assert run["invocations"] == [
        {"executionSuccessful": True, "endTimeUtc": "2026-11-30T12:00:00.000000Z"}
    ]


def test_sarif_waived_is_a_suppressed_note() -> None:
    log = json.loads(render_sarif(WAIVED, plan_file="deploy/plan.yaml"))
    check_sarif(log)
    (waiver_warning, waived) = log["runs"][0]["results"]
    assert (waiver_warning["ruleId"], waiver_warning["level"]) == ("gate.warning", "warning")
    assert (waived["ruleId"], waived["level"]) == ("drain_configured.grace_too_short", "note")
    assert waived["suppressions"] == [
        {
            "kind": "external",
            "status": "accepted",
            "justification": "waiver drain-grace-exception@v1, owner sre@example.com, "
            "until 2026-12-10T00:00:00+00:00",
        }
    ]
    assert waived["properties"]["waived_by"] == "drain-grace-exception@v1"
    assert waived["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "deploy/plan.yaml"}
    }


def test_sarif_error_outcome_is_an_unsuccessful_run_with_an_error_result() -> None:
    log = json.loads(render_sarif(ERROR))
    check_sarif(log)
    run = log["runs"][0]
    assert run["invocations"][0]["executionSuccessful"] is False
    assert run["invocations"][0]["toolExecutionNotifications"] == [
        {"level": "error", "message": {"text": "the policy engine is unreachable"}}
    ]
    assert [(r["ruleId"], r["level"]) for r in run["results"]] == [
        ("gate.error", "error"),
        ("gate.warning", "warning"),
    ]


# ---- JUnit and text ----------------------------------------------------------------------


def junit(report: str) -> ET.Element:
    """A JUnit XML report as test report views read it: one <testsuite> whose counts are
    its test cases', each case named once with at most one <failure> or <error>."""
    suite = ET.fromstring(report)
    assert suite.tag == "testsuite"
    cases = suite.findall("testcase")
    assert [child.tag for child in suite if child.tag != "testcase"][:1] == ["properties"]
    names = [(case.get("classname"), case.get("name")) for case in cases]
    assert all(classname and name for classname, name in names)
    assert len(set(names)) == len(names), names
    outcomes = [[c.tag for c in case if c.tag in ("failure", "error", "skipped")] for case in cases]
    assert all(len(outcome) <= 1 for outcome in outcomes)
    assert suite.get("tests") == str(len(cases))
    assert suite.get("failures") == str(sum(o == ["failure"] for o in outcomes))
    assert suite.get("errors") == str(sum(o == ["error"] for o in outcomes))
    for case in cases:
        assert case.get("line") is None or case.get("file")
        for outcome in case.findall("failure") + case.findall("error"):
            assert outcome.get("message")
    datetime.fromisoformat(str(suite.get("timestamp")))
    return suite


def test_junit_puts_each_warning_in_its_policys_test_case() -> None:
    suite = junit(render_junit(DENY, POLICIES))
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert list(cases) == [
        "drain_configured.grace_too_short",
        "evidence_fresh",
        "tail_slo.ttft_p99_exceeded",
    ]
    assert cases["tail_slo.ttft_p99_exceeded"].find("failure") is not None
    assert cases["tail_slo.ttft_p99_exceeded"].findtext("system-out") == f"warning: {NOTE}"
    assert cases["drain_configured.grace_too_short"].find("system-out") is None
    assert cases["evidence_fresh"].find("system-out") is None
    warnings = [p.get("value") for p in suite.iter("property") if p.get("name") == "warning"]
    assert warnings == [NOTE, STALE]  # the free-text one too, suite-wide
    assert suite.findtext("system-err") == f"{NOTE}\n{STALE}"


def test_junit_waived_and_waiver_warning_share_the_policys_output() -> None:
    suite = junit(render_junit(WAIVED, POLICIES))
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    out = cases["drain_configured"].findtext("system-out") or ""
    waived_part, warning_part = out.split("\nwarning: ")
    assert json.loads(waived_part.removeprefix("waived: "))[0]["waived_by"] == (
        "drain-grace-exception@v1"
    )
    assert warning_part == WAIVER_WARNING


def test_junit_error_outcome_shows_its_warnings_on_the_one_case() -> None:
    suite = junit(render_junit(ERROR, POLICIES))
    (case,) = suite.iter("testcase")
    assert case.find("error") is not None
    assert case.findtext("system-out") == f"warning: {STALE}"


def test_junit_is_one_failed_case_per_violation_located_where_sarif_places_it() -> None:
    zones = [
        violation(
            "manifests_consistent",
            "manifest_contradicts_plan",
            f"replicas_per_zone.{zone} is 3 in the plan but 4 in k8s/deploy.yaml:12",
            field=f"replicas_per_zone.{zone}",
            file="k8s/deploy.yaml",
            line=12,
        )
        for zone in ("us-east1-b", "us-east1-c")
    ]
    shown = decision(
        violations=[
            *MANIFEST_DENY.violations,
            *zones,
            violation("drain_configured", "grace_too_short", "grace 30 s"),
            violation("drain_configured", "grace_too_short", "grace 30 s", zone="b"),
        ]
    )
    suite = junit(
        render_junit(
            shown,
            ["drain_configured", "manifests_consistent", "tail_slo"],
            plan_file="deploy/plan.yaml",
        )
    )
    failed = {
        case.get("name"): (case.get("file"), case.get("line"), case.find("failure"))
        for case in suite.iter("testcase")
        if case.find("failure") is not None
    }
    rule = "manifests_consistent.manifest_contradicts_plan"
    assert list(failed) == [
        "drain_configured.grace_too_short[1]",
        "drain_configured.grace_too_short[2]",
        "drain_configured.grace_too_short[3]",
        f"{rule}[drain.termination_grace_period_s]",
        f"{rule}[replicas_per_zone.us-east1-b]",
        f"{rule}[replicas_per_zone.us-east1-c]",
    ]
    assert suite.get("tests") == "7" and suite.get("failures") == "6"  # and tail_slo passes
    # Each failure is its violation, message and all, not messages joined.
    for case in suite.iter("testcase"):
        failure = case.find("failure")
        if failure is not None:
            (found,) = [v for v in shown.violations if json.loads(failure.text or "") == v]
            assert failure.get("message") == found["message"]
            assert failure.get("type") == "high"
    located = failed[f"{rule}[drain.termination_grace_period_s]"]
    assert located[:2] == ("k8s/deploy.yaml", "30")
    assert failed["drain_configured.grace_too_short[1]"][:2] == ("deploy/plan.yaml", None)
    passed = [c for c in suite.iter("testcase") if c.get("name") == "tail_slo"]
    assert [(c.get("file"), c.find("failure")) for c in passed] == [("deploy/plan.yaml", None)]


def test_text_lists_every_warning() -> None:
    lines = render_text(DENY).splitlines()
    assert f"  warning: {NOTE}" in lines
    assert f"  warning: {STALE}" in lines


MANIFEST_DENY = decision(
    violations=[
        violation(
            "manifests_consistent",
            "manifest_contradicts_plan",
            "drain.termination_grace_period_s is 300 in the plan but 30 in k8s/deploy.yaml:30",
            field="drain.termination_grace_period_s",
            plan=300,
            manifests=30,
            file="k8s/deploy.yaml",
            line=30,
        ),
        violation("drain_configured", "grace_too_short", "grace 30 s", grace_s=30),
    ]
)


def test_github_locates_a_manifest_violation_at_its_file_and_line() -> None:
    first, second = render_github(MANIFEST_DENY, plan_file="deploy/plan.yaml").splitlines()
    assert first.startswith(
        "::error file=k8s/deploy.yaml,line=30,title=capgate manifests_consistent."
    )
    assert second.startswith("::error file=deploy/plan.yaml,title=capgate drain_configured.")


def test_sarif_locates_a_manifest_violation_at_its_file_and_line() -> None:
    log = json.loads(render_sarif(MANIFEST_DENY, plan_file="deploy/plan.yaml"))
    check_sarif(log)
    located, other = log["runs"][0]["results"]
    assert located["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "k8s/deploy.yaml"},
        "region": {"startLine": 30},
    }
    assert other["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "deploy/plan.yaml"}
    }


# ---- GitLab Code Quality -----------------------------------------------------------------

GITLAB_SEVERITIES = {"info", "minor", "major", "critical", "blocker"}


def gitlab(decision: DecisionView, **kwargs: Any) -> list[dict[str, Any]]:
    issues = json.loads(render_gitlab(decision, **kwargs))
    assert isinstance(issues, list)
    for issue in issues:
        assert set(issue) == {"description", "check_name", "fingerprint", "severity", "location"}
        assert issue["severity"] in GITLAB_SEVERITIES
        assert len(issue["fingerprint"]) == 64
        assert isinstance(issue["location"]["path"], str)
        assert isinstance(issue["location"]["lines"]["begin"], int)
    assert len({issue["fingerprint"] for issue in issues}) == len(issues)
    return issues


def test_gitlab_deny_is_an_issue_per_violation_and_per_warning() -> None:
    issues = gitlab(DENY)
    assert [(i["check_name"], i["severity"]) for i in issues] == [
        ("drain_configured.grace_too_short", "critical"),
        ("tail_slo.ttft_p99_exceeded", "critical"),
        ("tail_slo.claims_pessimistic", "info"),
        ("gate.warning", "minor"),
    ]
    assert issues[0]["description"] == "grace 30 s < 50% of the\nstream tail, 60 s"
    assert issues[2]["description"].startswith("class batch: the plan claims")
    assert issues[3]["description"] == STALE
    # Without --plan-file an issue is placed at the plan reference, line 1.
    assert {json.dumps(i["location"]) for i in issues} == {
        json.dumps({"path": "chat-assistant-prod@v2", "lines": {"begin": 1}})
    }


def test_gitlab_allow_with_nothing_to_say_is_an_empty_array() -> None:
    assert render_gitlab(decision(Outcome.allow)) == "[]"


def test_gitlab_waived_is_left_out_and_its_warnings_stay() -> None:
    (issue,) = gitlab(WAIVED, plan_file="deploy/plan.yaml")
    assert (issue["check_name"], issue["severity"]) == ("gate.warning", "minor")
    assert issue["description"] == WAIVER_WARNING
    assert issue["location"] == {"path": "deploy/plan.yaml", "lines": {"begin": 1}}


def test_gitlab_error_outcome_is_a_blocker() -> None:
    issues = gitlab(ERROR)
    assert [(i["check_name"], i["severity"]) for i in issues] == [
        ("gate.error", "blocker"),
        ("gate.warning", "minor"),
    ]
    assert "the policy engine is unreachable" in issues[0]["description"]


def test_gitlab_severity_follows_capgate_severity() -> None:
    findings = [
        {**violation("p", severity, "m"), "severity": severity}
        for severity in ("critical", "high", "medium", "low", "unheard-of")
    ]
    issues = gitlab(decision(violations=findings))
    assert [i["severity"] for i in issues] == ["blocker", "critical", "major", "major", "major"]


def test_gitlab_locates_a_manifest_violation_at_its_file_and_line() -> None:
    located, other = gitlab(MANIFEST_DENY, plan_file="deploy/plan.yaml")
    assert located["location"] == {"path": "k8s/deploy.yaml", "lines": {"begin": 30}}
    assert located["check_name"] == "manifests_consistent.manifest_contradicts_plan"
    assert other["location"] == {"path": "deploy/plan.yaml", "lines": {"begin": 1}}


def test_gitlab_fingerprints_are_stable_across_runs_and_distinct_across_plans() -> None:
    first = gitlab(MANIFEST_DENY)
    # Another run: another decision id and time, the manifest's line moved, same findings.
    again = decision(
        id="3f1c8f5e-0000-4000-8000-000000000002",
        created_at=datetime(2026, 12, 1, 8, 0, tzinfo=UTC),
        violations=[
            {
                **MANIFEST_DENY.violations[0],
                "details": {**MANIFEST_DENY.violations[0]["details"], "line": 31},
            },
            MANIFEST_DENY.violations[1],
        ],
    )
    assert [i["fingerprint"] for i in gitlab(again)] == [i["fingerprint"] for i in first]
    # The manifest finding is identified by its field, the other by its message.
    assert first[0]["fingerprint"] == gitlab_fingerprint(
        "chat-assistant-prod@v2",
        "manifests_consistent.manifest_contradicts_plan",
        "drain.termination_grace_period_s",
    )
    assert first[1]["fingerprint"] == gitlab_fingerprint(
        "chat-assistant-prod@v2", "drain_configured.grace_too_short", "grace 30 s"
    )
    # Another plan version: another finding.
    other_plan = decision(plan="chat-assistant-prod@v3", violations=MANIFEST_DENY.violations)
    assert not {i["fingerprint"] for i in gitlab(other_plan)} & {i["fingerprint"] for i in first}


def test_gitlab_findings_alike_still_get_distinct_fingerprints() -> None:
    twice = violation("tail_slo", "ttft_p99_exceeded", "class interactive: 910 ms > 800 ms")
    issues = gitlab(decision(violations=[twice, twice]))
    assert issues[0]["fingerprint"] != issues[1]["fingerprint"]
    assert issues == gitlab(decision(violations=[twice, twice]))


# ---- a check that could not decide: the error in every format ----------------------------

UNDECIDED = Undecided(
    "no-such-plan",
    "no plan record no-such-plan",
    created_at=datetime(2026, 11, 30, 12, 0, tzinfo=UTC),
)


def test_undecided_is_an_error_without_a_decision_in_every_format() -> None:
    assert UNDECIDED.verdict() == (
        "ERROR no-such-plan: no plan record no-such-plan (no decision stored)"
    )
    assert render_github(UNDECIDED, plan_file="deploy/plan.yaml").splitlines() == [
        "::error file=deploy/plan.yaml,title=capgate error::no-such-plan: no plan record "
        "no-such-plan (no decision stored)"
    ]

    log = json.loads(render_sarif(UNDECIDED, plan_file="deploy/plan.yaml"))
    check_sarif(log)
    (run,) = log["runs"]
    assert run["invocations"] == [
        {
            "executionSuccessful": False,
            "endTimeUtc": "2026-11-30T12:00:00.000000Z",
            "toolExecutionNotifications": [
                {"level": "error", "message": {"text": "no plan record no-such-plan"}}
            ],
        }
    ]
    (result,) = run["results"]
    assert (result["ruleId"], result["level"]) == ("gate.error", "error")
    assert result["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "deploy/plan.yaml"}
    }
    # No decision id, engine or digest to name: none is made up.
    assert result["properties"] == {"plan": "no-such-plan"}
    assert run["properties"] == {"plan": "no-such-plan", "outcome": "error"}

    (issue,) = gitlab(UNDECIDED)
    assert (issue["check_name"], issue["severity"]) == ("gate.error", "blocker")
    assert issue["description"] == "capgate could not decide: no plan record no-such-plan"

    suite = junit(render_junit(UNDECIDED, POLICIES))
    assert [p.get("name") for p in suite.iter("property")] == ["outcome"]
    (case,) = suite.iter("testcase")
    error = case.find("error")
    assert error is not None and error.get("message") == "no plan record no-such-plan"
    assert suite.get("errors") == "1"


# ---- paths relative to the repository root -----------------------------------------------


def in_repository(path: str) -> str:
    """What the CLI passes: a path as the job's working directory names it (here a
    subfolder, deploy/, of the repository), written from the repository's root."""
    return path if path.startswith("/") else f"deploy/{path}"


LOCATED: list[tuple[str, Callable[..., str]]] = [
    ("github", render_github),
    ("sarif", render_sarif),
    ("gitlab", render_gitlab),
    ("junit", lambda d, **kw: render_junit(d, ["drain_configured", "manifests_consistent"], **kw)),
]


def paths_in(name: str, report: str) -> list[str]:
    if name == "github":
        return [line.split("file=")[1].split(",")[0] for line in report.splitlines()]
    if name == "sarif":
        return [
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in json.loads(report)["runs"][0]["results"]
        ]
    if name == "gitlab":
        return [issue["location"]["path"] for issue in json.loads(report)]
    return [str(case.get("file")) for case in ET.fromstring(report).iter("testcase")]


@pytest.mark.parametrize(("name", "render"), LOCATED, ids=[name for name, _ in LOCATED])
def test_every_located_format_writes_paths_as_relative_names_them(
    name: str, render: Callable[..., str]
) -> None:
    shown: DecisionLike = MANIFEST_DENY
    report = render(shown, plan_file="plan.yaml", relative=in_repository)
    # The manifest's violation at its file (and line), the other at the plan's file.
    assert sorted(paths_in(name, report)) == ["deploy/k8s/deploy.yaml", "deploy/plan.yaml"]


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git absent: the repository root cannot be asked")
    root = tmp_path / "repo"
    (root / "deploy" / "k8s").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=30)
    return root


def test_paths_are_written_from_the_repository_root(repository: Path, tmp_path: Path) -> None:
    relative = repo_relative(repository / "deploy")
    assert relative("plan.yaml") == "deploy/plan.yaml"
    assert relative("k8s/../k8s/deployment.yaml") == "deploy/k8s/deployment.yaml"
    assert relative(str(repository / "deploy" / "k8s" / "hpa.yaml")) == "deploy/k8s/hpa.yaml"
    assert relative("../README.md") == "README.md"
    # Outside the repository, or no path at all: as given.
    outside = str(tmp_path / "elsewhere" / "deploy.yaml")
    assert relative(outside) == outside
    assert relative("../../elsewhere.yaml") == "../../elsewhere.yaml"
    assert relative("<stdin>") == "<stdin>"


def test_without_a_repository_paths_are_from_the_working_directory(tmp_path: Path) -> None:
    folder = tmp_path / "not-a-repo"
    (folder / "sub").mkdir(parents=True)
    relative = repo_relative(folder)
    assert relative("sub/plan.yaml") == "sub/plan.yaml"
    assert relative(str(folder / "sub" / "plan.yaml")) == "sub/plan.yaml"
