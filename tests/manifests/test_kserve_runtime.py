"""KServe InferenceServices read with the ServingRuntime they name: the runtime's
container and placement merged in as KServe merges them (args concatenated, the model's
fields over the runtime's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from registry.errors import InvalidInput
from registry.manifests.consistency import discrepancies, stated_fields
from tests.manifests.helpers import build, line_of

# A vLLM runtime written the way KServe's docs write custom runtimes: the engine flags a
# platform team fixes, the GPU and the zone in the runtime; the model's own in the service.
VLLM_RUNTIME = """apiVersion: serving.kserve.io/v1alpha1
kind: ServingRuntime
metadata: {name: vllm-runtime}
spec:
  supportedModelFormats:
    - {name: vllm, autoSelect: true}
  nodeSelector: {topology.kubernetes.io/zone: z-b}
  containers:
    - name: kserve-container
      image: vllm/vllm-openai:v0.10.2
      command: [python3, -m, vllm.entrypoints.openai.api_server]
      args:
        - --port=8080
        - --model=/mnt/models
        - --served-model-name={{.Name}}
        - --max-num-seqs=128
        - --enable-prefix-caching
      env:
        - {name: BATCHED, value: "4096"}
      resources:
        limits: {cpu: "8", memory: 48Gi, nvidia.com/gpu: "1"}
      startupProbe:
        httpGet: {path: /health, port: 8080}
        periodSeconds: 10
        failureThreshold: 60
"""

SERVICE = """apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: llama}
spec:
  predictor:
    minReplicas: 3
    model:
      modelFormat: {name: vllm}
      runtime: vllm-runtime
      storageUri: hf://meta-llama/Llama-3.1-8B-Instruct
      args: [--max-model-len=8192, "--max-num-batched-tokens=$(BATCHED)"]
"""


def test_the_runtime_container_and_placement_are_merged_in(tmp_path: Path) -> None:
    result = build(tmp_path, {"runtime.yaml": VLLM_RUNTIME, "isvc.yaml": SERVICE})
    runtime, service = tmp_path / "k8s" / "runtime.yaml", tmp_path / "k8s" / "isvc.yaml"
    document = result.document
    assert document["replicas_per_zone"] == {"z-b": 3}
    assert document["parallelism"]["gpus_per_replica"] == 1
    serving = document["serving"]
    assert serving["max_num_seqs"] == 128  # the runtime's flag
    assert serving["enable_prefix_caching"] is True
    assert serving["max_model_len"] == 8192  # the service's, after the runtime's
    assert serving["max_num_batched_tokens"] == 4096  # $(VAR) from the runtime's env
    assert document["warmup"]["startup_probe_budget_s"] == 600
    sources = result.sources
    assert sources["serving.max_num_seqs"].file == str(runtime)
    assert sources["serving.max_num_seqs"].line == line_of(runtime, "--max-num-seqs=128")
    assert sources["serving.max_model_len"].file == str(service)
    assert sources["serving.max_model_len"].line == line_of(service, "--max-model-len")
    assert sources["parallelism.gpus_per_replica"].line == line_of(runtime, "nvidia.com/gpu")
    assert sources["replicas_per_zone.z-b"].file == str(runtime)
    assert any("vllm/vllm-openai:v0.10.2 (vLLM 0.10.2)" in n for n in result.notes)


def test_the_service_wins_where_both_state_a_field(tmp_path: Path) -> None:
    service = SERVICE.replace(
        "      args: [--max-model-len=8192",
        "      nodeSelector: {topology.kubernetes.io/zone: z-c}\n"
        "      resources: {limits: {nvidia.com/gpu: 2}}\n"
        "      args: [--max-num-seqs=64, --tensor-parallel-size=2, --max-model-len=8192",
    ).replace("    model:\n", "    nodeSelector: {topology.kubernetes.io/zone: z-c}\n    model:\n")
    result = build(tmp_path, {"runtime.yaml": VLLM_RUNTIME, "isvc.yaml": service})
    document = result.document
    assert document["replicas_per_zone"] == {"z-c": 3}  # the predictor's placement
    assert document["serving"]["max_num_seqs"] == 64  # the later flag: the service's
    assert document["parallelism"] == {"tensor_parallel": 2, "gpus_per_replica": 2}


def test_kserve_huggingface_runtime_serves_with_vllm_unless_told_otherwise(
    tmp_path: Path,
) -> None:
    runtime = """apiVersion: serving.kserve.io/v1alpha1
kind: ClusterServingRuntime
metadata: {name: kserve-huggingfaceserver}
spec:
  supportedModelFormats:
    - {name: huggingface, autoSelect: true}
  containers:
    - name: kserve-container
      image: kserve/huggingfaceserver:v0.15.2
      args:
        - --model_name={{.Name}}
      resources: {limits: {cpu: "1", memory: 2Gi}}
"""
    service = """apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: llama}
spec:
  predictor:
    minReplicas: 2
    nodeSelector: {topology.kubernetes.io/zone: z-a}
    model:
      modelFormat: {name: huggingface}
      runtime: kserve-huggingfaceserver
      args: [--model_id=meta-llama/Llama-3.1-8B-Instruct, --max-num-seqs=16]
      resources: {limits: {nvidia.com/gpu: "1"}}
"""
    files = {"runtime.yaml": runtime, "isvc.yaml": service}
    result = build(tmp_path, files)
    assert result.document["serving"]["max_num_seqs"] == 16
    assert result.document["replicas_per_zone"] == {"z-a": 2}
    assert any("kserve/huggingfaceserver:v0.15.2" in n for n in result.notes)

    files["isvc.yaml"] = service.replace(
        "--max-num-seqs=16]", "--max-num-seqs=16, --backend=huggingface]"
    )
    with pytest.raises(InvalidInput, match="no serving workload in the manifests"):
        build(tmp_path, files)


def test_a_runtime_missing_from_the_manifests_is_noted(tmp_path: Path) -> None:
    service = (
        SERVICE.replace(', "--max-num-batched-tokens=$(BATCHED)"', "")
        .replace(
            "      args: [--max-model-len=8192",
            "      resources: {limits: {nvidia.com/gpu: 1}}\n"
            "      args: [--max-num-seqs=32, --max-model-len=8192",
        )
        .replace(
            "    model:\n", "    nodeSelector: {topology.kubernetes.io/zone: z-a}\n    model:\n"
        )
    )
    result = build(tmp_path, {"isvc.yaml": service})
    assert result.document["serving"]["max_num_seqs"] == 32
    assert any(
        "runtime vllm-runtime is not in the manifests; only the InferenceService's own "
        "container is read" in n
        for n in result.notes
    )


def test_a_runtime_without_containers_names_its_file_and_line(tmp_path: Path) -> None:
    runtime = VLLM_RUNTIME.split("  containers:")[0] + "  containers: []\n"
    with pytest.raises(InvalidInput) as caught:
        build(tmp_path, {"runtime.yaml": runtime, "isvc.yaml": SERVICE})
    assert "a serving runtime needs a container" in caught.value.one_line()
    assert caught.value.source is not None and "runtime.yaml (document 0" in caught.value.source


def test_a_runtime_flag_that_contradicts_the_plan_points_at_the_runtime(tmp_path: Path) -> None:
    # What `gate check --manifests` compares: the runtime's flag, at the runtime's line.
    folder = tmp_path / "k8s"
    folder.mkdir()
    (folder / "runtime.yaml").write_text(VLLM_RUNTIME)
    (folder / "isvc.yaml").write_text(SERVICE)
    stated = stated_fields([str(folder)])
    plan = build(tmp_path, {"runtime.yaml": VLLM_RUNTIME, "isvc.yaml": SERVICE}).document
    assert discrepancies(plan, stated) == []
    plan["serving"]["max_num_seqs"] = 256
    (found,) = discrepancies(plan, stated)
    runtime = folder / "runtime.yaml"
    assert (found.field, found.plan, found.manifests) == ("serving.max_num_seqs", 256, 128)
    assert (found.file, found.line) == (str(runtime), line_of(runtime, "--max-num-seqs"))


# Shaped like KServe's own vLLM runtime (config/runtimes/kserve-vllmserver.yaml): a bash
# script that runs `vllm serve` with "$@", the InferenceService's args.
SCRIPT_RUNTIME = """apiVersion: serving.kserve.io/v1alpha1
kind: ClusterServingRuntime
metadata: {name: kserve-vllmserver}
spec:
  supportedModelFormats:
    - {name: vllm, autoSelect: true}
  containers:
    - name: kserve-container
      image: kserve/vllmserver:v0.16.0
      command:
        - bash
        - -c
        - |
          export MODEL=${MODEL_DIR}
          vllm serve ${MODEL} --host 0.0.0.0 --port 8000 --block-size=32 $@
        - bash
      startupProbe:
        httpGet: {path: /health, port: 8000}
        initialDelaySeconds: 60
        periodSeconds: 30
        failureThreshold: 40
"""


def test_the_args_a_runtime_script_gets_as_positional_parameters(tmp_path: Path) -> None:
    service = """apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: llama}
spec:
  predictor:
    minReplicas: 2
    nodeSelector: {topology.kubernetes.io/zone: z-a}
    model:
      modelFormat: {name: vllm}
      runtime: kserve-vllmserver
      args:
        - --max-num-seqs=96
        - --tensor-parallel-size=2
      resources: {limits: {nvidia.com/gpu: 2}}
"""
    result = build(tmp_path, {"runtime.yaml": SCRIPT_RUNTIME, "isvc.yaml": service})
    isvc, runtime = tmp_path / "k8s" / "isvc.yaml", tmp_path / "k8s" / "runtime.yaml"
    document = result.document
    assert document["serving"]["max_num_seqs"] == 96
    assert document["serving"]["block_size"] == 32  # the script's own flag
    assert document["parallelism"] == {"tensor_parallel": 2, "gpus_per_replica": 2}
    assert document["warmup"]["startup_probe_budget_s"] == 60 + 40 * 30
    assert result.sources["serving.max_num_seqs"].file == str(isvc)
    assert result.sources["serving.max_num_seqs"].line == line_of(isvc, "--max-num-seqs=96")
    assert result.sources["serving.block_size"].line == line_of(runtime, "--block-size=32")


def test_an_llm_inference_service_is_named_as_not_read(tmp_path: Path) -> None:
    llmisvc = """apiVersion: serving.kserve.io/v1alpha1
kind: LLMInferenceService
metadata: {name: llama}
spec:
  model: {uri: "hf://meta-llama/Llama-3.1-8B-Instruct"}
  replicas: 2
"""
    runtime = VLLM_RUNTIME
    result = build(tmp_path, {"llm.yaml": llmisvc, "runtime.yaml": runtime, "isvc.yaml": SERVICE})
    assert any(
        "LLMInferenceService llama is not read: KServe builds its pods from presets" in n
        for n in result.notes
    )


def test_a_multi_node_service_is_named_as_not_read(tmp_path: Path) -> None:
    multi = SERVICE.replace(
        "    model:\n",
        "    workerSpec: {pipelineParallelSize: 2, tensorParallelSize: 4}\n    model:\n",
    )
    with pytest.raises(InvalidInput, match="no serving workload in the manifests"):
        build(tmp_path, {"runtime.yaml": VLLM_RUNTIME, "isvc.yaml": multi})
    files = {"runtime.yaml": VLLM_RUNTIME, "isvc.yaml": SERVICE, "multi.yaml": multi}
    result = build(tmp_path, {**files, "multi.yaml": multi.replace("name: llama", "name: big")})
    assert any(
        "InferenceService big is not read: a multi-node service (predictor.workerSpec)" in n
        for n in result.notes
    )
