"""`capgate gate check PLAN --manifests PATH` when the manifests serve another model than
the plan's provider: denied, and the GitHub annotation and the SARIF result point at the
line the model is written on."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_gate_cli import capgate
from tests.manifests.helpers import edited_example_manifests, line_of

PLAN = "chat-assistant-prod"  # pins llama31-8b-h100-vllm@v1: meta-llama/Llama-3.1-8B-Instruct
RULE = "manifests_consistent.manifest_contradicts_provider"


def test_fail_another_model_is_annotated_at_its_line(env: dict[str, str], tmp_path: Path) -> None:
    folder = edited_example_manifests(
        tmp_path,
        {"deployment.yaml": [("- meta-llama/Llama-3.1-8B-Instruct", "- Qwen/Qwen3-8B")]},
    )
    deployment = folder / "deployment.yaml"
    line = line_of(deployment, "- Qwen/Qwen3-8B")
    message = (
        "model.name is meta-llama/Llama-3.1-8B-Instruct in provider llama31-8b-h100-vllm@v1 "
        f"but Qwen/Qwen3-8B in {deployment}:{line}"
    )
    github = capgate(
        "gate", "check", PLAN, "--manifests", str(folder), "--format", "github", env=env
    )
    assert github.returncode == 1, github.stdout + github.stderr
    (annotation,) = [row for row in github.stdout.splitlines() if RULE in row]
    assert annotation == f"::error file={deployment},line={line},title=capgate {RULE}::{message}"

    sarif = capgate("gate", "check", PLAN, "--manifests", str(folder), "--format", "sarif", env=env)
    assert sarif.returncode == 1, sarif.stdout + sarif.stderr
    (result,) = [r for r in json.loads(sarif.stdout)["runs"][0]["results"] if r["ruleId"] == RULE]
    assert result["message"]["text"] == message
    assert result["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": str(deployment)},
        "region": {"startLine": line},
    }
