"""The resources teams write around vLLM: AIBrix's PodAutoscaler, operator resources
capgate does not read (NIMService, LLMInferenceService, other workload-shaped custom
resources), KServe's huggingface runtime, spot tolerations and preferred affinity, and
Managed Prometheus's metric spelling.

The manifests here are shortened rewrites of published examples (AIBrix's
samples/autoscaling, the NIM operator's config/samples, KServe's huggingface docs);
the published files themselves are read by the tests at the end when
../shared/fixtures/manifests holds them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from registry.errors import InvalidInput
from registry.manifests import plan_from_manifests
from registry.manifests.consistency import notes, stated_fields
from tests.manifests.helpers import (
    MINIMAL_OVERLAY,
    PROVIDER,
    WORKLOAD,
    build,
    deployment,
    line_of,
    write,
)
from tests.support.cli_process import ROOT
from tests.support.cli_process import capgate as run_cli
from tests.support.fixtures import shared

VLLM = """
image: vllm/vllm-openai:v0.10.2
command: [vllm, serve, meta-llama/Llama-3.1-8B-Instruct]
args: [--max-num-seqs=64]
"""

# AIBrix's KPA sample, shortened: a pod metric under its bare name, its earlier one.
KPA = """apiVersion: autoscaling.aibrix.ai/v1alpha1
kind: PodAutoscaler
metadata:
  name: llm-kpa
  annotations: {kpa.autoscaling.aibrix.ai/scale-down-delay: 3m}
spec:
  scalingStrategy: KPA
  minReplicas: 2
  maxReplicas: 8
  metricsSources:
    - metricSourceType: pod
      protocolType: http
      port: '8000'
      path: metrics
      targetMetric: gpu_cache_usage_perc
      targetValue: '0.5'
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: llm}
"""

# The GPU optimizer's scaling: the replicas come from an endpoint, not a pod metric.
OPTIMIZER_SOURCE = """    - metricSourceType: domain
      protocolType: http
      endpoint: aibrix-gpu-optimizer.aibrix-system.svc.cluster.local:8080
      path: /metrics/default/llm
      targetMetric: vllm:deployment_replicas
      targetValue: '1'
"""

# The NIM operator's LLM sample, shortened.
NIM_SERVICE = """apiVersion: apps.nvidia.com/v1alpha1
kind: NIMService
metadata: {name: llama-nim}
spec:
  image: {repository: nvcr.io/nim/meta/llama-3.1-8b-instruct, tag: "1.8"}
  authSecret: ngc-api-secret
  storage:
    nimCache: {name: llama-cache, profile: ''}
  replicas: 1
  resources:
    limits: {nvidia.com/gpu: 1}
---
apiVersion: apps.nvidia.com/v1alpha1
kind: NIMCache
metadata: {name: llama-cache}
spec:
  source:
    ngc: {modelPuller: "nvcr.io/nim/meta/llama-3.1-8b-instruct:1.8", pullSecret: ngc-secret}
  storage:
    pvc: {create: true, size: 50Gi}
"""

# KServe's huggingface LLM example, shortened: no runtime named, the model by --model_id.
HF_SERVICE = """apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: hf-llama}
spec:
  predictor:
    nodeSelector: {topology.kubernetes.io/zone: z-a}
    model:
      modelFormat:
        name: huggingface
      args:
        - --model_name=llama3
        - --model_id=meta-llama/Llama-3.1-8B-Instruct
      resources:
        limits: {cpu: "6", memory: 24Gi, nvidia.com/gpu: "1"}
"""


def _sub(tmp_path: Path, name: str) -> Path:
    """A second folder of manifests in one test."""
    folder = tmp_path / name
    folder.mkdir()
    return folder


def _notes_with(result_notes: list[str], text: str) -> list[str]:
    return [n for n in result_notes if text in n]


# AIBrix PodAutoscaler


def test_an_aibrix_pod_autoscaler_is_read_as_the_plans_autoscaling(tmp_path: Path) -> None:
    result = build(tmp_path, {"d.yaml": deployment(VLLM), "pa.yaml": KPA})
    assert result.document["autoscaling"] == {
        "metric": "vllm:kv_cache_usage_perc",
        "target": 0.5,
        "min_replicas": 2,
        "max_replicas": 8,
    }
    pa = tmp_path / "k8s" / "pa.yaml"
    assert result.sources["autoscaling.max_replicas"].line == line_of(pa, "maxReplicas: 8")
    assert result.sources["autoscaling.target"].line == line_of(pa, "targetValue")
    assert result.sources["autoscaling.target"].file == str(pa)
    (alias,) = _notes_with(result.notes, "gpu_cache_usage_perc")
    assert alias.endswith(
        "autoscaling metric gpu_cache_usage_perc read as vllm:kv_cache_usage_perc"
    )
    (kpa,) = _notes_with(result.notes, "AIBrix's KPA")
    assert "PodAutoscaler llm-kpa" in kpa and "not read" in kpa


def test_a_pod_autoscaler_floor_stands_in_for_unstated_replicas(tmp_path: Path) -> None:
    files = {"d.yaml": deployment(VLLM).replace("  replicas: 3\n", ""), "pa.yaml": KPA}
    folder = write(tmp_path, files)
    fields = stated_fields([str(folder)]).fields
    assert fields["total_replicas"].value == 2
    assert fields["total_replicas"].line == line_of(folder / "pa.yaml", "minReplicas: 2")


def test_a_pod_autoscaler_on_another_workload_is_noted(tmp_path: Path) -> None:
    other = KPA.replace("name: llm}", "name: embedder}")
    result = build(tmp_path, {"d.yaml": deployment(VLLM), "pa.yaml": other})
    assert "autoscaling" not in result.document
    assert _notes_with(result.notes, "PodAutoscaler llm-kpa scales no serving workload; ignored")


def test_an_optimizer_driven_pod_autoscaler_is_refused_naming_it(tmp_path: Path) -> None:
    text = KPA.split("    - metricSourceType")[0] + OPTIMIZER_SOURCE + KPA.split("'0.5'\n")[1]
    with pytest.raises(InvalidInput) as caught:
        build(tmp_path, {"d.yaml": deployment(VLLM), "pa.yaml": text})
    pa = tmp_path / "k8s" / "pa.yaml"
    assert caught.value.source == f"{pa} (document 0, line {line_of(pa, 'metricSourceType')})"
    message = caught.value.one_line()
    assert "PodAutoscaler llm-kpa scales on vllm:deployment_replicas, a domain metric source" in (
        message
    )
    assert "aibrix-gpu-optimizer" in message and "no plan field holds" in message


def test_a_pod_autoscaler_with_two_sources_is_refused(tmp_path: Path) -> None:
    two = KPA.replace("  scaleTargetRef:", OPTIMIZER_SOURCE + "  scaleTargetRef:")
    with pytest.raises(InvalidInput, match="the plan holds one autoscaling metric"):
        build(tmp_path, {"d.yaml": deployment(VLLM), "pa.yaml": two})


def test_the_gate_compares_a_pod_autoscaler_with_the_plan(tmp_path: Path) -> None:
    """The plan's bounds against the PodAutoscaler's, at its lines."""
    from registry.manifests.consistency import discrepancies

    folder = write(tmp_path, {"d.yaml": deployment(VLLM), "pa.yaml": KPA})
    plan = {
        "autoscaling": {
            "metric": "vllm:kv_cache_usage_perc",
            "target": 0.5,
            "min_replicas": 2,
            "max_replicas": 12,
        }
    }
    found = [d for d in discrepancies(plan, stated_fields([str(folder)])) if "autoscal" in d.field]
    assert [(d.field, d.plan, d.manifests) for d in found] == [("autoscaling.max_replicas", 12, 8)]
    assert found[0].line == line_of(folder / "pa.yaml", "maxReplicas: 8")


# Operator resources


def test_nim_service_alone_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as caught:
        build(tmp_path, {"nim.yaml": NIM_SERVICE})
    problems = [str(p) for p in caught.value.problems]
    assert problems[0].startswith("no serving workload in the manifests")
    (nim,) = problems[1:]  # the NIMCache holds no pods: not named
    assert nim.startswith(f"{tmp_path / 'k8s' / 'nim.yaml'}:1 (document 0): NIMService llama-nim")
    assert "runs NVIDIA NIM, not vLLM" in nim and "NIMCache" in nim


def test_nim_service_beside_a_vllm_server_is_noted(tmp_path: Path) -> None:
    result = build(tmp_path, {"d.yaml": deployment(VLLM), "nim.yaml": NIM_SERVICE})
    (note,) = _notes_with(result.notes, "NIMService llama-nim is not read: it runs NVIDIA NIM")
    assert "state the plan in a plan file or an overlay" in note
    assert _notes_with(result.notes, "NIMCache llama-cache (apps.nvidia.com) ignored")


def test_a_workload_shaped_custom_resource_is_named_as_not_read(tmp_path: Path) -> None:
    rollout = """apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: llm-canary}
spec:
  replicas: 2
  template:
    spec:
      containers:
        - {name: vllm, image: "vllm/vllm-openai:v0.10.2", args: [--model, x/y]}
"""
    certificate = """apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: tls}
spec: {secretName: tls, dnsNames: [llm.example.com]}
"""
    files = {"d.yaml": deployment(VLLM), "r.yaml": rollout, "c.yaml": certificate}
    result = build(tmp_path, files)
    (note,) = _notes_with(result.notes, "Rollout llm-canary is not read")
    assert "a custom resource whose operator makes its pods" in note
    assert _notes_with(result.notes, "Certificate tls (cert-manager.io) ignored")
    with pytest.raises(InvalidInput) as caught:
        build(_sub(tmp_path, "alone"), {"r.yaml": rollout, "c.yaml": certificate})
    assert [p.message.split(" is not read")[0] for p in caught.value.problems[1:]] == [
        "Rollout llm-canary"
    ]


def test_an_llm_inference_service_alone_is_refused_naming_it(tmp_path: Path) -> None:
    llmisvc = """apiVersion: serving.kserve.io/v1alpha1
kind: LLMInferenceService
metadata: {name: llama}
spec:
  model: {uri: "hf://meta-llama/Llama-3.1-8B-Instruct"}
  replicas: 2
"""
    with pytest.raises(InvalidInput) as caught:
        build(tmp_path, {"llm.yaml": llmisvc})
    (problem,) = caught.value.problems[1:]
    assert problem.message.startswith("LLMInferenceService llama is not read: KServe builds")


# KServe's huggingface runtime


def test_kserve_huggingface_model_id_is_read_and_the_missing_runtime_said(
    tmp_path: Path,
) -> None:
    result = build(tmp_path, {"isvc.yaml": HF_SERVICE})
    isvc = tmp_path / "k8s" / "isvc.yaml"
    assert result.document["parallelism"]["gpus_per_replica"] == 1
    assert result.document["replicas_per_zone"] == {"z-a": 1}
    model_line = line_of(isvc, "--model_id")
    assert f"model: meta-llama/Llama-3.1-8B-Instruct at {isvc}:{model_line} (document 0)" in (
        result.notes
    )
    (runtime,) = _notes_with(result.notes, "no runtime is named")
    assert "modelFormat huggingface" in runtime and "kserve-huggingfaceserver" in runtime
    fields = stated_fields([str(tmp_path / "k8s")]).fields
    assert fields["provider.model.name"].value == "meta-llama/Llama-3.1-8B-Instruct"
    assert fields["provider.model.served_name"].value == "llama3"  # KServe's --model_name
    assert fields["provider.runtime.name"].value == "vllm"


def test_kserve_huggingface_storage_uri_is_the_model(tmp_path: Path) -> None:
    text = HF_SERVICE.replace(
        "        - --model_id=meta-llama/Llama-3.1-8B-Instruct\n",
        "      storageUri: hf://meta-llama/Llama-3.1-8B-Instruct\n",
    )
    result = build(tmp_path, {"isvc.yaml": text})
    assert _notes_with(result.notes, "model: hf://meta-llama/Llama-3.1-8B-Instruct at ")
    fields = stated_fields([str(tmp_path / "k8s")]).fields
    assert fields["provider.model.name"].value == "hf://meta-llama/Llama-3.1-8B-Instruct"


def test_kserve_selects_a_runtime_in_the_manifests_by_model_format(tmp_path: Path) -> None:
    runtime = """apiVersion: serving.kserve.io/v1alpha1
kind: ClusterServingRuntime
metadata: {name: kserve-huggingfaceserver}
spec:
  supportedModelFormats:
    - {name: huggingface, version: "1", autoSelect: true}
  containers:
    - name: kserve-container
      image: kserve/huggingfaceserver:v0.15.2
      args:
        - --model_name={{.Name}}
        - --max-num-seqs=48
"""
    result = build(tmp_path, {"isvc.yaml": HF_SERVICE, "runtime.yaml": runtime})
    assert result.document["serving"]["max_num_seqs"] == 48  # the runtime's flag
    assert _notes_with(result.notes, "runtime kserve-huggingfaceserver (")
    assert not _notes_with(result.notes, "no runtime is named")
    not_selectable = runtime.replace("autoSelect: true", "autoSelect: false")
    again = build(
        _sub(tmp_path, "again"), {"isvc.yaml": HF_SERVICE, "runtime.yaml": not_selectable}
    )
    assert again.document["serving"]["max_num_seqs"] == MINIMAL_OVERLAY["serving"]["max_num_seqs"]
    assert _notes_with(again.notes, "no runtime is named")


# Spot capacity from tolerations and preferred affinity

GKE_SPOT_TOLERATION = """
tolerations:
  - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
  - {key: cloud.google.com/gke-spot, operator: Equal, value: "true", effect: NoSchedule}
nodeSelector: {topology.kubernetes.io/zone: z-a}
"""
AKS_SPOT_TOLERATION = """
tolerations:
  - key: kubernetes.azure.com/scalesetpriority
    operator: Equal
    value: spot
    effect: NoSchedule
nodeSelector: {topology.kubernetes.io/zone: z-a}
"""
KARPENTER_PREFERRED = """
tolerations:
  - {key: karpenter.sh/capacity-type, operator: Exists}
affinity:
  nodeAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        preference:
          matchExpressions:
            - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
nodeSelector: {topology.kubernetes.io/zone: z-a}
"""


@pytest.mark.parametrize(
    ("pod", "field", "value", "written", "also"),
    [
        (
            GKE_SPOT_TOLERATION,
            "capacity.spot_toleration.cloud.google.com/gke-spot",
            "true:NoSchedule",
            "key: cloud.google.com/gke-spot",
            "a toleration of the taint cloud.google.com/gke-spot=true:NoSchedule",
        ),
        (
            AKS_SPOT_TOLERATION,
            "capacity.spot_toleration.kubernetes.azure.com/scalesetpriority",
            "spot:NoSchedule",
            "- key: kubernetes.azure.com/scalesetpriority",
            "a toleration of the taint kubernetes.azure.com/scalesetpriority=spot:NoSchedule",
        ),
        (
            KARPENTER_PREFERRED,
            "capacity.spot_preference.karpenter.sh/capacity-type",
            "spot",
            "values: [spot]",
            "a preferred node affinity for karpenter.sh/capacity-type: spot",
        ),
    ],
    ids=["gke-toleration", "aks-toleration", "karpenter-preferred"],
)
def test_a_toleration_or_preference_allows_spot_and_is_a_may_run_note(
    tmp_path: Path, pod: str, field: str, value: str, written: str, also: str
) -> None:
    folder = write(tmp_path, {"d.yaml": deployment(VLLM, pod=pod, replicas="1")})
    stated = stated_fields([str(folder)])
    source = stated.fields[field]
    assert source.value == value
    assert source.line == line_of(folder / "d.yaml", written)
    assert not [n for n in stated.fields if n.startswith("capacity.spot.")]  # not required
    (note,) = notes({}, stated)
    assert note.startswith("the pods may run on spot capacity (")
    assert also in note and "without requiring them" in note
    result = build(_sub(tmp_path, "plan"), {"d.yaml": deployment(VLLM, pod=pod, replicas="1")})
    assert _notes_with(result.notes, "the pods may run on spot capacity")


def test_a_required_spot_selector_with_its_toleration_runs_on_spot(tmp_path: Path) -> None:
    pod = GKE_SPOT_TOLERATION.replace(
        "nodeSelector: {topology.kubernetes.io/zone: z-a}",
        "nodeSelector: {topology.kubernetes.io/zone: z-a, cloud.google.com/gke-spot: 'true'}",
    )
    folder = write(tmp_path, {"d.yaml": deployment(VLLM, pod=pod, replicas="1")})
    stated = stated_fields([str(folder)])
    assert [n for n in stated.fields if n.startswith("capacity.")] == [
        "capacity.spot.cloud.google.com/gke-spot"
    ]
    (note,) = notes({}, stated)
    assert note.startswith("the pods run on spot capacity (cloud.google.com/gke-spot: true, ")


def test_a_gpu_toleration_says_nothing(tmp_path: Path) -> None:
    pod = """
tolerations:
  - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
  - {key: cloud.google.com/gke-spot, operator: Equal, value: "false"}
"""
    folder = write(tmp_path, {"d.yaml": deployment(VLLM, pod=pod, replicas="1")})
    stated = stated_fields([str(folder)])
    assert not [n for n in stated.fields if n.startswith("capacity.")]
    assert notes({}, stated) == []


# Managed Prometheus's metric spelling

GMP_HPA = """apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: llm}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: llm}
  minReplicas: 3
  maxReplicas: 6
  metrics:
    - type: Pods
      pods:
        metric:
          name: prometheus.googleapis.com|vllm:num_requests_waiting|gauge
        target: {type: AverageValue, averageValue: 10}
"""


def test_a_managed_prometheus_metric_name_is_read(tmp_path: Path) -> None:
    result = build(tmp_path, {"d.yaml": deployment(VLLM), "hpa.yaml": GMP_HPA})
    assert result.document["autoscaling"]["metric"] == "vllm:num_requests_waiting"
    assert result.document["autoscaling"]["target"] == 10
    hpa = tmp_path / "k8s" / "hpa.yaml"
    line = line_of(hpa, "prometheus.googleapis.com")
    (note,) = _notes_with(result.notes, "Managed Service for Prometheus")
    assert note.startswith(f"{hpa}:{line} (document 0): autoscaling metric ")
    assert note.endswith("read as vllm:num_requests_waiting")
    external = GMP_HPA.replace("type: Pods\n      pods:", "type: External\n      external:")
    again = build(_sub(tmp_path, "external"), {"d.yaml": deployment(VLLM), "hpa.yaml": external})
    assert again.document["autoscaling"]["metric"] == "vllm:num_requests_waiting"


def test_a_managed_prometheus_name_of_another_kind_is_refused(tmp_path: Path) -> None:
    counter = GMP_HPA.replace("num_requests_waiting|gauge", "num_requests_waiting|counter")
    with pytest.raises(InvalidInput, match=r"vllm:num_requests_waiting is a gauge"):
        build(tmp_path, {"d.yaml": deployment(VLLM), "hpa.yaml": counter})
    unknown = GMP_HPA.replace("vllm:num_requests_waiting", "vllm:request_success_total")
    with pytest.raises(InvalidInput, match="is not one a plan can hold"):
        build(_sub(tmp_path, "unknown"), {"d.yaml": deployment(VLLM), "hpa.yaml": unknown})


# The CLI, as a user runs it

ARGS = ("--workload", WORKLOAD, "--provider", PROVIDER)


def _cli_folder(tmp_path: Path, files: dict[str, str]) -> tuple[Path, Path]:
    folder = write(tmp_path, files)
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(yaml.safe_dump(MINIMAL_OVERLAY))
    return folder, overlay


def test_cli_plan_from_manifests_reads_a_pod_autoscaler(
    tmp_path: Path, env: dict[str, str]
) -> None:
    folder, overlay = _cli_folder(tmp_path, {"d.yaml": deployment(VLLM), "pa.yaml": KPA})
    args = ("plan", "from-manifests", str(folder), "--overlay", str(overlay), *ARGS)
    result = run_cli(*args, env=env, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert yaml.safe_load(result.stdout)["autoscaling"]["max_replicas"] == 8
    pa = folder / "pa.yaml"
    assert "source: autoscaling.max_replicas" in result.stderr
    assert f"{pa}:{line_of(pa, 'maxReplicas')} (document 0)" in result.stderr


def test_cli_nim_service_alone_exits_2_naming_it(tmp_path: Path, env: dict[str, str]) -> None:
    folder, overlay = _cli_folder(tmp_path, {"nim.yaml": NIM_SERVICE})
    for args in (
        ("plan", "from-manifests", str(folder), "--overlay", str(overlay), *ARGS),
        ("gate", "check", "any-plan", "--manifests", str(folder)),
    ):
        result = run_cli(*args, env=env, cwd=ROOT)
        assert result.returncode == 2, result.stdout + result.stderr
        assert result.stdout == ""
        lines = result.stderr.splitlines()
        assert lines[0].startswith("capgate: error: no serving workload in the manifests")
        assert lines[1].startswith(f"  {folder / 'nim.yaml'}:1 (document 0): NIMService llama-nim")
        assert "runs NVIDIA NIM, not vLLM" in lines[1]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The CLI's environment: a local registry nothing is written to (the manifests are
    refused or the plan printed before any is opened)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    return {**base, "CAPGATE_DATABASE_URL": f"sqlite:///{tmp_path / 'registry.db'}"}


# The published files, when ../shared/fixtures/manifests holds them

# file -> where it is published (repository, path, commit)
PUBLISHED = {
    "aibrix-kpa.yaml": "vllm-project/aibrix samples/autoscaling/kpa.yaml "
    "@698295938124602394784af3db96f3e50a061da9",
    "nim-operator-nimservice.yaml": "NVIDIA/k8s-nim-operator config/samples/nim/llm/"
    "nimservice.yaml @d977bbb45e4e5bdfbc85495ddcca6f7b391e0afb",
}


def test_published_aibrix_kpa_sample_is_read(tmp_path: Path) -> None:
    sample = shared("manifests/aibrix-kpa.yaml")
    name = yaml.safe_load(sample.read_text())["spec"]["scaleTargetRef"]["name"]
    folder = write(tmp_path, {"d.yaml": deployment(VLLM, name=name)})
    (folder / "kpa.yaml").write_text(sample.read_text())
    result = plan_from_manifests(
        [str(folder)], overlay=tmp_path / "overlay.yaml", workload=WORKLOAD, provider=PROVIDER
    )
    assert result.document["autoscaling"]["metric"] == "vllm:kv_cache_usage_perc"
    assert result.document["autoscaling"]["max_replicas"] == 8


def test_published_nim_service_sample_is_refused_naming_it(tmp_path: Path) -> None:
    sample = shared("manifests/nim-operator-nimservice.yaml")
    with pytest.raises(InvalidInput) as caught:
        plan_from_manifests([str(sample)], workload=WORKLOAD, provider=PROVIDER)
    assert "NIMService" in str(caught.value.problems[1])
