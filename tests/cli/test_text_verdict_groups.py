"""The gate's text verdict as a person reads it (issue 27, section 5): violations under a
heading per policy, what blocks the release first; the manifests' shared folder said
once; the machine formats (GitHub annotations, SARIF, GitLab) in the decision's own order."""

from __future__ import annotations

import json

from registry.gate.formats import render_github, render_gitlab, render_sarif
from registry.gate.report import render_text
from tests.cli.test_gate_formats import decision, violation

DEEP = "deploy/overlays/production/us-east1/serving"


def rated(policy: str, rule: str, severity: str) -> dict[str, object]:
    return {**violation(policy, rule, f"{rule} failed"), "severity": severity}


# As a decision lists them, by policy name.
MIXED = decision(
    violations=[
        rated("drain_configured", "grace_too_short", "low"),
        rated("evidence_fresh", "too_old", "medium"),
        rated("tail_slo", "ttft_exceeded", "medium"),
        rated("tail_slo", "kv_exhausted", "critical"),
        rated("zone_spread", "one_zone", "high"),
    ],
)


def test_text_groups_violations_by_policy_most_severe_first() -> None:
    lines = render_text(MIXED).splitlines()
    body = [line for line in lines[1:] if line.startswith("  ") and "warning" not in line][:9]
    assert body == [
        "  tail_slo: 2 violations, critical",
        "    DENY  [critical] tail_slo.kv_exhausted: kv_exhausted failed",
        "    DENY  [medium] tail_slo.ttft_exceeded: ttft_exceeded failed",
        "  zone_spread: 1 violation, high",
        "    DENY  [high] zone_spread.one_zone: one_zone failed",
        "  evidence_fresh: 1 violation, medium",
        "    DENY  [medium] evidence_fresh.too_old: too_old failed",
        "  drain_configured: 1 violation, low",
        "    DENY  [low] drain_configured.grace_too_short: grace_too_short failed",
    ]


def test_text_names_the_manifests_folder_once() -> None:
    files = {f"{DEEP}/{name}": "sha256:" + "a" * 64 for name in ("deployment.yaml", "hpa.yaml")}
    shown = decision(
        inputs={
            "plan": {"ref": "chat-assistant-prod@v2"},
            "manifests": {"compared_fields": 30, "files": files},
        }
    )
    (line,) = [line for line in render_text(shown).splitlines() if "manifests:" in line]
    assert line == (
        f"  manifests: 30 fields compared, from {DEEP}/: "
        "deployment.yaml (sha256:aaaaaaaaaaaa), hpa.yaml (sha256:aaaaaaaaaaaa)"
    )
    assert line.count(DEEP) == 1


def test_the_machine_formats_keep_the_decisions_order() -> None:
    listed = [f"{v['policy']}.{v['rule']}" for v in MIXED.violations]
    titles = [line.split("title=")[1].split("::")[0] for line in render_github(MIXED).splitlines()]
    assert titles == [f"capgate {rule}" for rule in listed]
    sarif = json.loads(render_sarif(MIXED))["runs"][0]["results"]
    assert [r["ruleId"] for r in sarif] == listed
    assert [i["check_name"] for i in json.loads(render_gitlab(MIXED))] == listed
