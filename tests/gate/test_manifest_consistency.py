"""The manifests that ship against the plan decided on: the comparison and the API."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from registry.api.app import create_app
from registry.manifests.consistency import (
    MAX_FIELDS,
    StatedField,
    StatedManifests,
    discrepancies,
    notes,
    same,
    stated_fields,
)
from registry.manifests.provider_match import compare_provider
from registry.records.documents import load_document, validate_record
from registry.records.kinds import RecordKind
from registry.records.provider import ProviderProfile
from registry.storage.database import Database
from tests.api.test_gate_api import register, settings
from tests.manifests.helpers import edited_example_manifests
from tests.support.auth import client_for, token_for
from tests.support.opa_server import running_capgate

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "chat-assistant"
K8S = EXAMPLE / "k8s"


def example_plan() -> dict[str, Any]:
    plan = validate_record(RecordKind.plan, load_document(EXAMPLE / "plan.yaml"))
    return plan.model_dump(mode="json")


def drifted(tmp_path: Path) -> Path:
    """A copy of the example's manifests that drifts from its plan: 12 replicas, a 30 s
    grace period, TP=2 on two GPUs and an HPA on running requests."""
    return edited_example_manifests(
        tmp_path,
        {
            "deployment.yaml": [
                ("  replicas: 9\n", "  replicas: 12\n"),
                ("terminationGracePeriodSeconds: 300", "terminationGracePeriodSeconds: 30"),
                ("--tensor-parallel-size=1", "--tensor-parallel-size=2"),
                ("nvidia.com/gpu: 1}", "nvidia.com/gpu: 2}"),
            ],
            "hpa.yaml": [('"vllm:num_requests_waiting"', '"vllm:num_requests_running"')],
        },
    )


def line_of(path: Path, needle: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


def checked_with(client: TestClient, folder: Path) -> dict[str, Any]:
    """The decision of a gate check of the example plan with the manifests in ``folder``."""
    body = stated_fields([str(folder)]).model_dump(mode="json")
    response = client.post(
        "/v1/gate/checks", json={"plan": "chat-assistant-prod", "manifests": body}
    )
    assert response.status_code == 200, response.text
    decision: dict[str, Any] = response.json()
    return decision


def test_success_example_manifests_agree_with_the_example_plan() -> None:
    stated = stated_fields([str(K8S)])  # overlay.yaml beside them is skipped, not needed
    assert "drain.termination_grace_period_s" in stated.fields
    assert {n for n in stated.fields if n.startswith("replicas_per_zone.")} == {
        "replicas_per_zone.us-east1-b",
        "replicas_per_zone.us-east1-c",
        "replicas_per_zone.us-east1-d",
    }
    total = stated.fields["total_replicas"]
    assert (total.value, total.line) == (9, line_of(K8S / "deployment.yaml", "  replicas: 9"))
    assert discrepancies(example_plan(), stated) == []
    assert notes(example_plan(), stated) == []  # every zone is compared


def test_fail_drifted_manifests_each_field_at_its_line(tmp_path: Path) -> None:
    folder = drifted(tmp_path)
    found = {d.field: d for d in discrepancies(example_plan(), stated_fields([str(folder)]))}
    assert set(found) == {
        "autoscaling.metric",
        "drain.termination_grace_period_s",
        "parallelism.gpus_per_replica",
        "parallelism.tensor_parallel",
        "replicas_per_zone.us-east1-b",
        "replicas_per_zone.us-east1-c",
        "replicas_per_zone.us-east1-d",
        "total_replicas",
    }
    grace = found["drain.termination_grace_period_s"]
    deployment = folder / "deployment.yaml"
    assert (grace.plan, grace.manifests, grace.file) == (300, 30, str(deployment))
    assert grace.line == line_of(deployment, "terminationGracePeriodSeconds")
    tp = found["parallelism.tensor_parallel"]
    assert (tp.plan, tp.manifests, tp.line) == (1, 2, line_of(deployment, "--tensor-parallel"))
    metric = found["autoscaling.metric"]
    assert metric.manifests == "vllm:num_requests_running"
    # The metric is located at its item in the HPA's metrics list, as from-manifests does.
    assert metric.line == line_of(folder / "hpa.yaml", "- type: Pods")
    assert found["replicas_per_zone.us-east1-b"].manifests == 4
    # The count itself is contradicted at the line it is written on, beside the zones.
    total = found["total_replicas"]
    assert (total.plan, total.manifests, total.file) == (9, 12, str(deployment))
    assert total.line == line_of(deployment, "  replicas: 12")


def test_numbers_compare_as_numbers_and_booleans_are_not_numbers() -> None:
    assert same(9, 9.0) and same(0.9, 0.9) and not same(9, 10)
    assert not same(True, 1) and not same(0, False) and same(True, True)
    assert same(None, None) and not same(None, 0) and same("cpu", "cpu")


def test_a_zone_the_manifests_do_not_run_is_a_discrepancy() -> None:
    source = {"file": "k8s/a.yaml", "document": 0, "line": 7}
    stated = StatedManifests(
        fields={
            "replicas_per_zone.us-east1-b": StatedField(value=3, **source),
            "replicas_per_zone.us-east1-c": StatedField(value=3.0, **source),
        }
    )
    (missing,) = discrepancies(example_plan(), stated)
    assert (missing.field, missing.plan, missing.manifests) == (
        "replicas_per_zone.us-east1-d",
        3,
        0,
    )


@pytest.mark.parametrize(
    "fields",
    [
        {"admission.retry.max_attempts": {"value": 3, "file": "a", "document": 0, "line": 1}},
        {"serving.max_num_seqs": {"value": "a\x00b", "file": "a", "document": 0, "line": 1}},
        {"serving.max_num_seqs": {"value": 1, "file": "a", "document": 0, "line": 0}},
        {"serving.max_num_seqs": {"value": {"x": 1}, "file": "a", "document": 0, "line": 1}},
        {"total_replicas.x": {"value": 9, "file": "a", "document": 0, "line": 1}},
        {
            f"serving.x{i}": {"value": i, "file": "a", "document": 0, "line": 1}
            for i in range(MAX_FIELDS + 1)
        },
    ],
    ids=["unknown-section", "nul", "line-0", "mapping", "total-with-a-key", "too-many"],
)
def test_fail_malformed_stated_fields_are_refused(fields: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        StatedManifests.model_validate({"fields": fields})


@pytest.fixture
def client(database: Database) -> Iterator[TestClient]:
    app = create_app(database, settings())
    with client_for(app, "release-pipeline") as c:
        register(c)
        yield c


def test_api_check_with_manifests(client: TestClient, tmp_path: Path) -> None:
    agreeing = stated_fields([str(K8S)]).model_dump(mode="json")
    response = client.post(
        "/v1/gate/checks", json={"plan": "chat-assistant-prod", "manifests": agreeing}
    )
    assert response.status_code == 200, response.text
    assert response.json()["outcome"] == "allow"
    stored = client.get(f"/v1/decisions/{response.json()['id']}/input").json()["input"]
    assert stored["manifests"] == {
        "checked": True,
        "discrepancies": [],
        "notes": [],
        "provider_discrepancies": [],
        # What was compared: every field stated, and each file read with its digest.
        "compared_fields": len(agreeing["fields"]),
        "files": agreeing["files"],
    }
    assert len(agreeing["files"]) == 3

    folder = drifted(tmp_path)
    decision = checked_with(client, folder)
    assert decision["outcome"] == "deny"
    contradicted = [v for v in decision["violations"] if v["policy"] == "manifests_consistent"]
    assert len(contradicted) == 8  # 3 zones, the total, TP, GPUs, grace period, metric
    assert {v["rule"] for v in contradicted} == {"manifest_contradicts_plan"}
    deployment = folder / "deployment.yaml"
    grace = line_of(deployment, "terminationGracePeriodSeconds")
    assert (
        f"drain.termination_grace_period_s is 300 in the plan but 30 in {deployment}:{grace}"
        in {v["message"] for v in contradicted}
    )
    # Without manifests the same plan is allowed again: nothing was compared.
    response = client.post("/v1/gate/checks", json={"plan": "chat-assistant-prod"})
    assert response.json()["outcome"] == "allow"
    stored = client.get(f"/v1/decisions/{response.json()['id']}/input").json()["input"]
    assert stored["manifests"] == {
        "checked": False,
        "discrepancies": [],
        "notes": [],
        "provider_discrepancies": [],
        "compared_fields": 0,
        "files": {},
    }


def test_api_what_the_manifests_leave_uncompared_is_a_note(
    client: TestClient, tmp_path: Path
) -> None:
    """A soft zone spread leaves the zones to the scheduler: the total is compared and
    agrees, and the decision says the zones were not compared, in a note."""
    folder = edited_example_manifests(
        tmp_path,
        {
            "deployment.yaml": [
                ("whenUnsatisfiable: DoNotSchedule", "whenUnsatisfiable: ScheduleAnyway")
            ]
        },
    )
    decision = checked_with(client, folder)
    assert decision["outcome"] == "allow", decision["violations"]
    deployment = folder / "deployment.yaml"
    note = (
        "replicas_per_zone (us-east1-b: 3, us-east1-c: 3, us-east1-d: 3) is not compared: "
        f"the manifests run 9 replicas ({deployment}:{line_of(deployment, '  replicas: 9')}) "
        "but leave which zone runs how many to the scheduler; only their total is compared"
    )
    assert f"manifests_consistent.manifests_not_compared: {note}" in decision["warnings"]
    stored = client.get(f"/v1/decisions/{decision['id']}/input").json()["input"]
    assert {
        k: v for k, v in stored["manifests"].items() if k not in ("compared_fields", "files")
    } == {
        "checked": True,
        "discrepancies": [],
        "notes": [note],
        "provider_discrepancies": [],
    }
    assert stored["manifests"]["compared_fields"] > 0


def test_fail_api_malformed_manifests_is_422_and_stores_nothing(client: TestClient) -> None:
    bad = {"fields": {"claims.peak_rps": {"value": 1, "file": "a", "document": 0, "line": 1}}}
    response = client.post(
        "/v1/gate/checks", json={"plan": "chat-assistant-prod", "manifests": bad}
    )
    assert response.status_code == 422, response.text
    assert client.get("/v1/decisions").json()["items"] == []


def test_cli_sends_the_manifests_to_a_server(database: Database, tmp_path: Path) -> None:
    """`--server`: the client reads the manifests, the server compares and decides."""
    import os
    import subprocess
    import sys

    app = create_app(database, settings())
    with client_for(app, "release-pipeline") as c:
        register(c)
    folder = drifted(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    env["CAPGATE_TOKEN"] = token_for(database, subject="release-pipeline")
    with running_capgate(app) as url:
        command = [sys.executable, "-m", "cli.main", "gate", "check", "chat-assistant-prod"]
        result = subprocess.run(
            [*command, "--server", url, "--manifests", str(folder), "--format", "json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert result.returncode == 1, result.stdout + result.stderr
    violations = json.loads(result.stdout)["violations"]
    fields = {v["details"]["field"] for v in violations if v["policy"] == "manifests_consistent"}
    assert "drain.termination_grace_period_s" in fields and len(fields) == 8
    assert "total_replicas" in fields


# What the manifests serve against the provider the plan pins (llama31-8b-h100-vllm@v1:
# meta-llama/Llama-3.1-8B-Instruct, bf16, vLLM 0.10.2, H100-SXM-80GB).
PROVIDER_REF = "llama31-8b-h100-vllm@v1"
MODEL_ARG = ("            - meta-llama/Llama-3.1-8B-Instruct\n", "            - Qwen/Qwen3-8B\n")
IMAGE = "image: vllm/vllm-openai:v0.10.2"
GKE_H100 = "values: [nvidia-h100-80gb]"


def example_provider() -> ProviderProfile:
    return validate_record(RecordKind.provider, load_document(EXAMPLE / "provider.yaml"))


def served_elsewhere(tmp_path: Path) -> Path:
    """The example's manifests serving Qwen3-8B on vLLM 0.11.0 on L4 nodes: every plan
    field still agrees."""
    return edited_example_manifests(
        tmp_path,
        {
            "deployment.yaml": [
                MODEL_ARG,
                (IMAGE, "image: vllm/vllm-openai:v0.11.0"),
                (GKE_H100, "values: [nvidia-l4]"),
            ]
        },
    )


def test_fail_manifests_that_serve_another_model_runtime_and_gpu(tmp_path: Path) -> None:
    folder = served_elsewhere(tmp_path)
    deployment = folder / "deployment.yaml"
    stated = stated_fields([str(folder)])
    assert discrepancies(example_plan(), stated) == []  # the plan's fields agree
    found, not_compared = compare_provider(example_provider(), stated.fields)
    assert not_compared == []
    assert {(d.field, d.provider, d.manifests, d.read, d.line) for d in found} == {
        (
            "model.name",
            "meta-llama/Llama-3.1-8B-Instruct",
            "Qwen/Qwen3-8B",
            "",
            line_of(deployment, "- Qwen/Qwen3-8B"),
        ),
        (
            "runtime.version",
            "0.10.2",
            "0.11.0",
            "vllm/vllm-openai:v0.11.0",
            line_of(deployment, "image: vllm/vllm-openai"),
        ),
        (
            "accelerator.name",
            "H100-SXM-80GB",
            "L4",
            "cloud.google.com/gke-accelerator: nvidia-l4",
            line_of(deployment, "key: cloud.google.com/gke-accelerator"),
        ),
    }
    assert {d.file for d in found} == {str(deployment)}


def test_api_a_contradicted_provider_is_denied_at_the_manifests_line(
    client: TestClient, tmp_path: Path
) -> None:
    folder = served_elsewhere(tmp_path)
    deployment = folder / "deployment.yaml"
    decision = checked_with(client, folder)
    assert decision["outcome"] == "deny"
    denied = [v for v in decision["violations"] if v["policy"] == "manifests_consistent"]
    assert {v["rule"] for v in denied} == {"manifest_contradicts_provider"}
    model, image, gpu = (
        line_of(deployment, "- Qwen/Qwen3-8B"),
        line_of(deployment, "image: vllm/vllm-openai"),
        line_of(deployment, "key: cloud.google.com/gke-accelerator"),
    )
    assert sorted(v["message"] for v in denied) == [
        f"accelerator.name is H100-SXM-80GB in provider {PROVIDER_REF} but L4 in "
        f"{deployment}:{gpu} (cloud.google.com/gke-accelerator: nvidia-l4)",
        f"model.name is meta-llama/Llama-3.1-8B-Instruct in provider {PROVIDER_REF} but "
        f"Qwen/Qwen3-8B in {deployment}:{model}",
        f"runtime.version is 0.10.2 in provider {PROVIDER_REF} but 0.11.0 in "
        f"{deployment}:{image} (vllm/vllm-openai:v0.11.0)",
    ]
    # SARIF and GitHub annotations locate each at the manifest's file and line.
    assert {(v["details"]["file"], v["details"]["line"]) for v in denied} == {
        (str(deployment), line) for line in (model, image, gpu)
    }
    stored = client.get(f"/v1/decisions/{decision['id']}/input").json()["input"]
    assert len(stored["manifests"]["provider_discrepancies"]) == 3


def test_api_another_patch_release_is_a_note(client: TestClient, tmp_path: Path) -> None:
    folder = edited_example_manifests(
        tmp_path, {"deployment.yaml": [(IMAGE, "image: vllm/vllm-openai:v0.10.1")]}
    )
    deployment = folder / "deployment.yaml"
    decision = checked_with(client, folder)
    assert decision["outcome"] == "allow", decision["violations"]
    note = (
        "runtime.version: the manifests run vLLM 0.10.1 (vllm/vllm-openai:v0.10.1, "
        f"{deployment}:{line_of(deployment, 'image: vllm')}), the provider states 0.10.2: "
        "the same minor version, another patch"
    )
    assert f"manifests_consistent.manifests_not_compared: {note}" in decision["warnings"]


def test_fail_a_placeholder_model_is_refused_before_anything_is_checked(tmp_path: Path) -> None:
    """`gate check --manifests` (local or --server) exits 2 naming the file and line, as
    `plan from-manifests` does; no registry or server is asked anything."""
    import os

    from tests.cli.test_gate_cli import capgate

    placeholder = ("- meta-llama/Llama-3.1-8B-Instruct", "- /var/mdl/YOUR-MODEL-PATH")
    folder = edited_example_manifests(tmp_path, {"deployment.yaml": [placeholder]})
    deployment = folder / "deployment.yaml"
    where = f"{deployment} (document 0, line {line_of(deployment, 'YOUR-MODEL-PATH')})"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    env.update(CAPGATE_DATABASE_URL=f"sqlite:///{tmp_path}/none.db", CAPGATE_TOKEN="unused")
    check = ("gate", "check", "chat-assistant-prod", "--manifests", str(folder))
    for remote in ((), ("--server", "http://127.0.0.1:9")):
        result = capgate(*check, *remote, env=env)
        assert result.returncode == 2, result.stdout + result.stderr
        assert f"{where}: spec.template.spec.containers.0.args.0: the model " in result.stderr
        assert "'/var/mdl/YOUR-MODEL-PATH' is a template placeholder" in result.stderr
    assert not (tmp_path / "none.db").exists()
