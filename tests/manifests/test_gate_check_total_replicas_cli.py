"""`capgate gate check PLAN --manifests PATH` when the replicas do not spread evenly over
the zones: the total is still compared, denied when it contradicts the plan, and the
annotations point at the `replicas:` line."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_gate_cli import capgate
from tests.manifests.helpers import edited_example_manifests, line_of

PLAN = "chat-assistant-prod"  # 9 replicas, 3 in each of three zones
RULE = "manifests_consistent.manifest_contradicts_plan"


def one_replica(tmp_path: Path) -> Path:
    """The example's manifests with the Deployment at `replicas: 1`: one pod over three
    zones, which the manifests cannot map to a zone."""
    return edited_example_manifests(
        tmp_path, {"deployment.yaml": [("  replicas: 9\n", "  replicas: 1\n")]}
    )


def test_fail_one_replica_over_three_zones_is_denied_at_the_replicas_line(
    env: dict[str, str], tmp_path: Path
) -> None:
    folder = one_replica(tmp_path)
    deployment = folder / "deployment.yaml"
    line = line_of(deployment, "  replicas: 1")
    message = f"total_replicas is 9 in the plan but 1 in {deployment}:{line}"

    text = capgate("gate", "check", PLAN, "--manifests", str(folder), env=env)
    assert text.returncode == 1, text.stdout + text.stderr
    assert text.stdout.startswith("DENY chat-assistant-prod@v1: 1 violation(s) of manifests_")
    assert f"[high] {RULE}: {message}" in text.stdout

    github = capgate(
        "gate", "check", PLAN, "--manifests", str(folder), "--format", "github", env=env
    )
    assert github.returncode == 1, github.stdout + github.stderr
    (annotation,) = [row for row in github.stdout.splitlines() if RULE in row]
    assert annotation.startswith(f"::error file={deployment},line={line},title=capgate {RULE}::")
    assert annotation.endswith(f"::{message}")

    sarif = capgate("gate", "check", PLAN, "--manifests", str(folder), "--format", "sarif", env=env)
    assert sarif.returncode == 1, sarif.stdout + sarif.stderr
    (result,) = [r for r in json.loads(sarif.stdout)["runs"][0]["results"] if r["ruleId"] == RULE]
    assert result["level"] == "error"
    assert result["message"]["text"] == message
    assert result["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": str(deployment)},
        "region": {"startLine": line},
    }
    assert result["properties"]["details"] == {
        "field": "total_replicas",
        "plan": 9,
        "manifests": 1,
        "file": str(deployment),
        "line": line,
    }


def test_success_nine_replicas_over_three_zones_still_agree(
    env: dict[str, str], tmp_path: Path
) -> None:
    folder = one_replica(tmp_path)
    deployment = folder / "deployment.yaml"
    text = deployment.read_text(encoding="utf-8")
    deployment.write_text(text.replace("  replicas: 1\n", "  replicas: 9\n"), encoding="utf-8")
    result = capgate("gate", "check", PLAN, "--manifests", str(folder), "--format", "json", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["outcome"] == "allow"
