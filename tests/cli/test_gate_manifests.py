"""`capgate gate check PLAN --manifests PATH`: the manifests that ship must be the plan."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.test_gate_cli import capgate
from tests.gate.test_manifest_consistency import K8S, drifted, line_of
from tests.support.cli_runner import capgate_in_process

PLAN = "chat-assistant-prod"


def decisions(env: dict[str, str]) -> int:
    listed = capgate("gate", "list", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    return len(json.loads(listed.stdout)["items"])


def test_success_the_example_manifests_agree(env: dict[str, str]) -> None:
    result = capgate("gate", "check", PLAN, "--manifests", str(K8S), "--format", "json", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["outcome"] == "allow"


def test_fail_drifted_manifests_deny_naming_file_and_line(
    env: dict[str, str], tmp_path: Path
) -> None:
    folder = drifted(tmp_path)
    deployment, hpa = folder / "deployment.yaml", folder / "hpa.yaml"
    grace = line_of(deployment, "terminationGracePeriodSeconds")
    tp = line_of(deployment, "--tensor-parallel-size")
    metric = line_of(hpa, "- type: Pods")

    text = capgate("gate", "check", PLAN, "--manifests", str(folder), env=env)
    assert text.returncode == 1, text.stdout + text.stderr
    for message in (
        f"drain.termination_grace_period_s is 300 in the plan but 30 in {deployment}:{grace}",
        f"parallelism.tensor_parallel is 1 in the plan but 2 in {deployment}:{tp}",
        "autoscaling.metric is vllm:num_requests_waiting in the plan but "
        f"vllm:num_requests_running in {hpa}:{metric}",
        "replicas_per_zone.us-east1-b is 3 in the plan but 4 in",
    ):
        assert message in text.stdout, text.stdout

    github = capgate(
        "gate", "check", PLAN, "--manifests", str(folder), "--format", "github", env=env
    )
    assert github.returncode == 1
    annotations = [line for line in github.stdout.splitlines() if "manifests_consistent" in line]
    assert len(annotations) == 8  # 3 zones, the total, TP, GPUs, grace period, metric
    assert any(f"line={grace}," in line and "termination_grace" in line for line in annotations)
    assert any(f"line={metric}," in line and "autoscaling.metric" in line for line in annotations)

    sarif = capgate("gate", "check", PLAN, "--manifests", str(folder), "--format", "sarif", env=env)
    assert sarif.returncode == 1
    results = [
        r
        for r in json.loads(sarif.stdout)["runs"][0]["results"]
        if r["ruleId"] == "manifests_consistent.manifest_contradicts_plan"
    ]
    assert len(results) == 8
    places = {
        (
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
        )
        for r in results
    }
    assert {(str(deployment), grace), (str(deployment), tp), (str(hpa), metric)} <= places


def test_fail_bad_manifest_exits_2_and_stores_nothing(env: dict[str, str], tmp_path: Path) -> None:
    folder = drifted(tmp_path)
    hpa = folder / "hpa.yaml"
    hpa.write_text(
        hpa.read_text(encoding="utf-8").replace("vllm:num_requests_running", "vllm:bogus"),
        encoding="utf-8",
    )
    before = decisions(env)
    result = capgate("gate", "check", PLAN, "--manifests", str(folder), env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "hpa.yaml" in result.stderr
    assert decisions(env) == before


def test_fail_drifted_manifests_are_located_gitlab_issues(
    env: dict[str, str], tmp_path: Path
) -> None:
    folder = drifted(tmp_path)
    deployment, hpa = folder / "deployment.yaml", folder / "hpa.yaml"
    grace = line_of(deployment, "terminationGracePeriodSeconds")
    metric = line_of(hpa, "- type: Pods")
    report = tmp_path / "gl-code-quality-report.json"

    def run() -> list[dict[str, Any]]:
        result = capgate(
            "gate",
            "check",
            PLAN,
            "--manifests",
            str(folder),
            "--format",
            "gitlab",
            "--plan-file",
            "deploy/plan.yaml",
            "--output",
            str(report),
            env=env,
        )
        assert result.returncode == 1, result.stdout + result.stderr
        assert result.stdout == ""
        assert result.stderr.startswith("DENY chat-assistant-prod@v1: ")
        issues = json.loads(report.read_text(encoding="utf-8"))
        assert isinstance(issues, list)
        return issues

    issues = run()
    located = [
        i for i in issues if i["check_name"] == "manifests_consistent.manifest_contradicts_plan"
    ]
    assert len(located) == 8  # 3 zones, the total, TP, GPUs, grace period, metric
    places = {(i["location"]["path"], i["location"]["lines"]["begin"]) for i in located}
    assert {(str(deployment), grace), (str(hpa), metric)} <= places
    assert all(i["severity"] == "critical" for i in located)
    # The same findings on the same plan version: the same fingerprints in the next run.
    assert [i["fingerprint"] for i in run()] == [i["fingerprint"] for i in issues]


def test_a_decision_records_the_manifests_it_compared(env: dict[str, str]) -> None:
    """Which files (with the sha256 of their bytes) and how many fields: stored with the
    decision, shown by `gate show` and on the verdict's text."""
    import hashlib

    # What is stored and shown: the console entry point in this process (no exit code or
    # error line is under test here).
    run = capgate_in_process
    checked = run(
        "gate", "check", "chat-assistant-prod", "--manifests", str(K8S), "--json", env=env
    )
    assert checked.returncode == 0, checked.stderr
    decision = json.loads(checked.stdout)
    recorded = decision["inputs"]["manifests"]
    files = sorted(K8S.glob("*.yaml"))
    assert recorded["files"] == {
        str(path): "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
        for path in files
        if "kind:" in path.read_text()  # the overlay beside them is not a manifest
    }
    assert recorded["compared_fields"] > 20
    shown = run("gate", "show", decision["id"], "--json", env=env)
    assert json.loads(shown.stdout)["inputs"]["manifests"] == recorded
    text = run("gate", "check", "chat-assistant-prod", "--manifests", str(K8S), env=env)
    assert f"  manifests: {recorded['compared_fields']} fields compared, from " in text.stdout
    unchecked = run("gate", "check", "chat-assistant-prod", "--json", env=env)
    assert "manifests" not in json.loads(unchecked.stdout)["inputs"]
