"""Public vLLM manifests, read as published (never copied here).

Each file is looked for under ../shared/fixtures/manifests/ beside the repository
(or CAPGATE_SHARED_FIXTURES) (see the
table below for where each comes from); a test whose file is absent is skipped. None of
these pins zones, so the overlay places the replicas, as a user of them would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from registry.manifests import plan_from_manifests
from tests.manifests.helpers import MINIMAL_OVERLAY, PROVIDER, WORKLOAD
from tests.support.fixtures import shared_root

# Where tests/support/fixtures.py looks (CAPGATE_SHARED_FIXTURES overrides it); each test
# skips naming the file's source, so that whoever adds it knows where to get it.
FIXTURES = shared_root() / "manifests"

# file -> (source, zone placement for the overlay, plan fields expected from the manifests)
PUBLIC: dict[str, tuple[str, dict[str, int], dict[str, Any]]] = {
    "lws-vllm-gpu.yaml": (
        "kubernetes-sigs/lws docs/examples/vllm/GPU/lws.yaml "
        "@53bce0dc165dc21e98e355b612a5f783e992845f",
        {"z": 2},
        {
            "parallelism": {"tensor_parallel": 8, "gpus_per_replica": 16},
            "warmup.readiness_requires_model_loaded": True,
            "drain.rollout_max_unavailable": 1,
        },
    ),
    "gaie-vllm-gpu-deployment.yaml": (
        "kubernetes-sigs/gateway-api-inference-extension config/manifests/vllm/"
        "gpu-deployment.yaml @dbf4439ed5b8974decca1c290729d6b5ddb2a1f3",
        {"z": 3},
        {
            "serving.max_num_seqs": 1024,  # written --max-num-seq, an abbreviation
            "drain.termination_grace_period_s": 130,
            "drain.pre_stop": {"sleep_s": 30, "wait_for_idle": False},
            "warmup.startup_probe_budget_s": 602,  # 2 + 600 x 1
            "drain.rollout_max_unavailable": 0,  # 25% of 3, rounded down
        },
    ),
    "gke-vllm-gemma-3-1b-it.yaml": (
        "GoogleCloudPlatform/kubernetes-engine-samples ai-ml/llm-serving-gemma/vllm/"
        "vllm-3-1b-it.yaml @2d03964a5a44d0261c94df8fb7513125a7a5109b",
        {"z": 1},
        {"parallelism": {"tensor_parallel": 1, "gpus_per_replica": 1}},
    ),
}


def _get(document: dict[str, Any], field: str) -> Any:
    value: Any = document
    for part in field.split("."):
        value = value[part]
    return value


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_public_manifest(name: str, tmp_path: Path) -> None:
    source, zones, expected = PUBLIC[name]
    path = FIXTURES / name
    if not path.is_file():
        pytest.skip(f"{path} absent (from {source})")
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(yaml.safe_dump({**MINIMAL_OVERLAY, "replicas_per_zone": zones}))
    result = plan_from_manifests([str(path)], overlay=overlay, workload=WORKLOAD, provider=PROVIDER)
    for field, value in expected.items():
        assert _get(result.document, field) == value, field
    assert any(note.startswith("runtime: ") for note in result.notes)


KSERVE_RUNTIME = (
    "kserve-vllmserver.yaml",
    "kserve/kserve config/runtimes/kserve-vllmserver.yaml "
    "@1cb62ae886f646a1d8b5d3d6121be334f24cb05b",
)
# An InferenceService on KServe's published vLLM runtime, written the way its docs write
# them: the runtime is the public file, the service is the user's.
KSERVE_SERVICE = """apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: llama}
spec:
  predictor:
    minReplicas: 2
    model:
      modelFormat: {name: vllm}
      runtime: kserve-vllmserver
      args: [--max-num-seqs=64, --tensor-parallel-size=2]
      resources: {limits: {nvidia.com/gpu: "2"}}
"""


def test_public_kserve_vllm_runtime(tmp_path: Path) -> None:
    name, source = KSERVE_RUNTIME
    runtime = FIXTURES / name
    if not runtime.is_file():
        pytest.skip(f"{runtime} absent (from {source})")
    service = tmp_path / "isvc.yaml"
    service.write_text(KSERVE_SERVICE)
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(yaml.safe_dump({**MINIMAL_OVERLAY, "replicas_per_zone": {"z": 2}}))
    result = plan_from_manifests(
        [str(runtime), str(service)], overlay=overlay, workload=WORKLOAD, provider=PROVIDER
    )
    document = result.document
    # The service's args reach `vllm serve` through the runtime script's "$@".
    assert document["serving"]["max_num_seqs"] == 64
    assert result.sources["serving.max_num_seqs"].file == str(service)
    assert document["parallelism"] == {"tensor_parallel": 2, "gpus_per_replica": 2}
    # The runtime's startup probe: 60 s delay + 40 x 30 s; its readiness probe on /health.
    assert document["warmup"]["startup_probe_budget_s"] == 1260
    assert result.sources["warmup.startup_probe_budget_s"].file == str(runtime)
    assert document["warmup"]["readiness_requires_model_loaded"] is True


# What each public file serves (provider.* as read), and the provider fields it
# contradicts in the example's provider (Llama-3.1-8B-Instruct, vLLM 0.10.2, H100).
SERVES: dict[str, tuple[dict[str, str], set[str]]] = {
    "lws-vllm-gpu.yaml": (
        {
            "model.name": "meta-llama/Llama-3.1-405B-Instruct",
            "runtime.image": "vllm/vllm-openai:v0.8.5",
            "accelerator.resource": "nvidia.com/gpu",
        },
        {"model.name", "runtime.version"},
    ),
    "gaie-vllm-gpu-deployment.yaml": (
        {
            "model.name": "meta-llama/Llama-3.1-8B-Instruct",
            "runtime.image": "vllm/vllm-openai:v0.8.5",
            "accelerator.resource": "nvidia.com/gpu",
        },
        {"runtime.version"},
    ),
    "gke-vllm-gemma-3-1b-it.yaml": (
        {
            "model.name": "google/gemma-3-1b-it",  # --model=$(MODEL_ID), from the env
            "runtime.image": "us-docker.pkg.dev/vertex-ai/vertex-vision-model-garden-dockers/"
            "pytorch-vllm-serve:20250312_0916_RC01",
            "accelerator.resource": "nvidia.com/gpu",
            "accelerator.node_selector.cloud.google.com/gke-accelerator": "nvidia-l4",
        },
        {"model.name", "accelerator.name"},
    ),
}


@pytest.mark.parametrize("name", sorted(SERVES))
def test_public_manifest_identity(name: str) -> None:
    from registry.manifests.consistency import stated_fields
    from registry.manifests.provider_match import compare_provider
    from tests.manifests.test_identity import example_provider

    source = PUBLIC[name][0]
    path = FIXTURES / name
    if not path.is_file():
        pytest.skip(f"{path} absent (from {source})")
    read, contradicted = SERVES[name]
    fields = stated_fields([str(path)]).fields
    served = {k.removeprefix("provider."): v.value for k, v in fields.items()}
    assert {k: v for k, v in served.items() if k in read} == read
    assert served["runtime.name"] == "vllm"
    found, _ = compare_provider(example_provider(), fields)
    assert {d.field for d in found} == contradicted
    assert {d.file for d in found} == {str(path)}


def test_public_kserve_runtime_identity(tmp_path: Path) -> None:
    """KServe's runtime serves ``${MODEL}`` (set inside its script from what KServe
    downloads): the model is the InferenceService's storageUri; the runtime's image is a
    kustomize placeholder (vllmserver:replace), not vLLM's own image: no version is read."""
    from registry.manifests.consistency import stated_fields
    from registry.manifests.provider_match import compare_provider
    from tests.manifests.test_identity import example_provider

    name, source = KSERVE_RUNTIME
    runtime = FIXTURES / name
    if not runtime.is_file():
        pytest.skip(f"{runtime} absent (from {source})")
    service = tmp_path / "isvc.yaml"
    service.write_text(
        KSERVE_SERVICE.replace(
            "      runtime: kserve-vllmserver\n",
            "      runtime: kserve-vllmserver\n"
            "      storageUri: hf://meta-llama/Llama-3.1-8B-Instruct\n",
        )
    )
    fields = stated_fields([str(runtime), str(service)]).fields
    model, image = fields["provider.model.name"], fields["provider.runtime.image"]
    assert (model.value, model.file) == ("hf://meta-llama/Llama-3.1-8B-Instruct", str(service))
    assert (image.value, image.file) == ("vllmserver:replace", str(runtime))
    found, notes = compare_provider(example_provider(), fields)
    assert found == []
    assert any("vllmserver:replace" in n and "is not vLLM's own image" in n for n in notes)


def test_gke_managed_prometheus_hpa_is_read_as_vllms_metric(tmp_path: Path) -> None:
    """A published HPA on GKE Managed Prometheus' spelling of vLLM's gauge, beside the
    Deployment it scales (GoogleCloudPlatform's gemma-3-1b-it sample, which shares its
    name): both read as published, from a folder holding the two files."""
    from registry.manifests.stated import stated_document
    from tests.support.fixtures import shared

    hpa = shared("manifests/seans3-k8s-ai-gmp-hpa.yaml")
    # seans3/k8s-ai vllm-gpu/hpa/horizontal-pod-autoscaler.yaml
    # @65ef4d0d67ddee4bc6bdb88ea0d3ac598f689808
    deployment = shared("manifests/gke-vllm-gemma-3-1b-it.yaml")
    folder = tmp_path / "k8s"
    folder.mkdir()
    for path in (hpa, deployment):
        (folder / path.name).write_bytes(path.read_bytes())
    stated = stated_document([str(folder)])["fields"]
    assert {k: v["value"] for k, v in stated.items() if k.startswith("autoscaling.")} == {
        "autoscaling.metric": "vllm:num_requests_running",
        "autoscaling.target": 4,
        "autoscaling.min_replicas": 1,
        "autoscaling.max_replicas": 5,
        "autoscaling.scale_down_stabilization_s": 30,
    }
    assert stated["autoscaling.metric"]["file"] == str(folder / hpa.name)
