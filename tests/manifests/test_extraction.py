"""plan_from_manifests: each plan field read from the manifests, with where it was written."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from registry.errors import InvalidInput
from registry.manifests import Where, plan_from_manifests
from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from tests.manifests.helpers import (
    EXAMPLE,
    K8S,
    MINIMAL_OVERLAY,
    OVERLAY,
    PROVIDER,
    WORKLOAD,
    build,
    deployment,
    line_of,
)

VLLM = """
image: vllm/vllm-openai:v0.10.2
command: [vllm, serve, meta-llama/Llama-3.1-8B-Instruct, --max-num-seqs=64]
"""


def _example() -> tuple[dict[str, object], dict[str, Where], list[str]]:
    result = plan_from_manifests([str(K8S)], overlay=OVERLAY, workload=WORKLOAD, provider=PROVIDER)
    return result.document, result.sources, result.notes


def test_the_example_manifests_ship_the_example_plan() -> None:
    document, _, _ = _example()
    expected = yaml.safe_load((EXAMPLE / "plan.yaml").read_text())
    built = validate_record(RecordKind.plan, document).model_dump(mode="json")
    assert built == validate_record(RecordKind.plan, expected).model_dump(mode="json")


DEPLOYMENT = K8S / "deployment.yaml"
# Plan field -> (file, text on the line it must come from, a line above it to search from).
EXPECTED_SOURCES: dict[str, tuple[Path, str, str | None]] = {
    "parallelism.tensor_parallel": (DEPLOYMENT, "--tensor-parallel-size=1", None),
    "parallelism.gpus_per_replica": (DEPLOYMENT, "nvidia.com/gpu: 1", "limits:"),
    "serving.max_num_seqs": (DEPLOYMENT, "--max-num-seqs=256", None),
    "serving.max_num_batched_tokens": (DEPLOYMENT, "--max-num-batched-tokens=8192", None),
    "serving.gpu_memory_utilization": (DEPLOYMENT, "--gpu-memory-utilization=0.9", None),
    "serving.block_size": (DEPLOYMENT, "--block-size=16", None),
    "serving.max_model_len": (DEPLOYMENT, "--max-model-len=16384", None),
    "serving.enable_chunked_prefill": (DEPLOYMENT, "--enable-chunked-prefill", None),
    "serving.enable_prefix_caching": (DEPLOYMENT, "--enable-prefix-caching", None),
    "serving.scheduling_policy": (DEPLOYMENT, "--scheduling-policy=priority", None),
    "replicas_per_zone": (DEPLOYMENT, "replicas: 9", None),
    "replicas_per_zone.us-east1-b": (DEPLOYMENT, "values: [us-east1-b", None),
    "drain.termination_grace_period_s": (DEPLOYMENT, "terminationGracePeriodSeconds", None),
    "drain.pre_stop.sleep_s": (DEPLOYMENT, "sleep 10", None),
    "drain.pre_stop.timeout_s": (DEPLOYMENT, "timeout 280", None),
    "drain.pre_stop.wait_for_idle": (DEPLOYMENT, "num_requests_", "preStop"),
    "drain.rollout_max_unavailable": (DEPLOYMENT, "maxUnavailable: 0", None),
    "drain.disruption_budget.max_unavailable": (K8S / "pdb.yaml", "maxUnavailable: 1", None),
    "warmup.startup_probe_budget_s": (DEPLOYMENT, "startupProbe:", None),
    "warmup.readiness_requires_model_loaded": (DEPLOYMENT, "readinessProbe:", None),
    "autoscaling.metric": (K8S / "hpa.yaml", "- type: Pods", None),
    "autoscaling.target": (K8S / "hpa.yaml", "averageValue:", None),
    "autoscaling.min_replicas": (K8S / "hpa.yaml", "minReplicas: 9", None),
    "autoscaling.max_replicas": (K8S / "hpa.yaml", "maxReplicas: 18", None),
    "autoscaling.scale_up_stabilization_s": (
        K8S / "hpa.yaml",
        "stabilizationWindowSeconds: 0",
        None,
    ),
    "autoscaling.scale_down_stabilization_s": (
        K8S / "hpa.yaml",
        "stabilizationWindowSeconds: 600",
        None,
    ),
}


@pytest.mark.parametrize("field", sorted(EXPECTED_SOURCES))
def test_each_example_field_says_where_it_was_written(field: str) -> None:
    _, sources, _ = _example()
    path, text, after = EXPECTED_SOURCES[field]
    assert sources[field] == Where(str(path), 0, line_of(path, text, after))


def test_the_example_notes_the_runtime_and_what_it_ignores() -> None:
    _, sources, notes = _example()
    version = yaml.safe_load((EXAMPLE / "provider.yaml").read_text())["runtime"]["version"]
    assert any(n.startswith("runtime: vllm/vllm-openai:v" + version) for n in notes)
    assert any("Service chat-assistant (core) ignored" in n for n in notes)
    # What only the overlay says has no manifest source.
    assert not {"admission", "reserve", "claims", "name"} & {f.split(".")[0] for f in sources}


@pytest.mark.parametrize(
    ("container", "expected"),
    [
        pytest.param(
            "image: vllm/vllm-openai:v0.10.2\n"
            "command: [vllm, serve]\n"
            "args: [my/model, --max-num-seqs, '128', --block-size=32]",
            {"serving.max_num_seqs": 128, "serving.block_size": 32},
            id="positional-model-and-both-flag-forms",
        ),
        pytest.param(
            "image: vllm/vllm-openai:v0.10.2\n"
            "command: [python3, -m, vllm.entrypoints.openai.api_server]\n"
            "args: [--model=my/model, --max_num_seqs=96, --no-enable-prefix-caching]",
            {"serving.max_num_seqs": 96, "serving.enable_prefix_caching": False},
            id="api-server-module-underscores-no-flag",
        ),
        pytest.param(
            "image: vllm/vllm-openai:v0.10.2\n"
            "command: [/bin/sh, -c]\n"
            "args:\n"
            "  - |\n"
            "    set -e; echo starting\n"
            "    exec vllm serve my/model \\\n"
            "      --max-num-seqs 48 --enable-chunked-prefill false && echo done\n",
            {"serving.max_num_seqs": 48, "serving.enable_chunked_prefill": False},
            id="shell-string",
        ),
        pytest.param(
            "image: vllm/vllm-openai:v0.10.2\n"
            "args: ['--model=$(MODEL)', '--max-num-seqs=$(SEQS)', '--gpu-memory-utilization',"
            " '0.85', --scheduling-policy=fcfs]\n"
            "env: [{name: MODEL, value: my/model}, {name: SEQS, value: '32'}]",
            {
                "serving.max_num_seqs": 32,
                "serving.gpu_memory_utilization": 0.85,
                "serving.scheduling_policy": "fcfs",
            },
            id="args-only-vllm-image-env-references",
        ),
    ],
)
def test_argument_forms(tmp_path: Path, container: str, expected: dict[str, object]) -> None:
    result = build(tmp_path, {"deploy.yaml": deployment(container)})
    for field, value in expected.items():
        section, key = field.split(".")
        assert result.document[section][key] == value, field
        assert result.sources[field].file.endswith("deploy.yaml")


def test_tp_short_flag_and_gpus(tmp_path: Path) -> None:
    container = "image: vllm/vllm-openai:v0.10.2\ncommand: [vllm, serve, m, -tp, '2']"
    result = build(tmp_path, {"deploy.yaml": deployment(container, gpus=2)})
    assert result.document["parallelism"] == {"tensor_parallel": 2, "gpus_per_replica": 2}


def test_tp_that_does_not_match_the_gpus_is_refused(tmp_path: Path) -> None:
    container = "image: vllm/vllm-openai:v0.10.2\ncommand: [vllm, serve, m, -tp=4]"
    with pytest.raises(InvalidInput, match="a replica holds 1"):
        build(tmp_path, {"deploy.yaml": deployment(container)})


def test_an_unset_env_reference_is_refused_naming_the_flag(tmp_path: Path) -> None:
    container = "image: vllm/vllm-openai:v0.10.2\nargs: ['--max-num-seqs=$(SEQS)']"
    with pytest.raises(InvalidInput) as caught:
        build(tmp_path, {"deploy.yaml": deployment(container)})
    line = line_of(tmp_path / "k8s" / "deploy.yaml", "--max-num-seqs")
    assert f"deploy.yaml (document 0, line {line}): " in caught.value.one_line()
    assert "--max-num-seqs is '$(SEQS)'" in caught.value.one_line()


LWS = """apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: llama-405b}
spec:
  replicas: 2
  leaderWorkerTemplate:
    size: 2
    leaderTemplate:
      metadata: {labels: {role: leader}}
      spec:
        nodeSelector: {topology.kubernetes.io/zone: z-a}
        containers:
          - name: vllm-leader
            image: vllm/vllm-openai:v0.10.2
            command:
              - sh
              - -c
              - "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh leader
                --ray_cluster_size=$(LWS_GROUP_SIZE);
                python3 -m vllm.entrypoints.openai.api_server --port 8080
                --model meta-llama/Meta-Llama-3.1-405B-Instruct
                --tensor-parallel-size 8 --pipeline_parallel_size 2 --max-num-seqs 32"
            resources: {limits: {nvidia.com/gpu: "8"}}
    workerTemplate:
      spec:
        containers:
          - name: vllm-worker
            image: vllm/vllm-openai:v0.10.2
            command: [sh, -c, "bash multi-node-serving.sh worker --ray_address=$(LWS_ADDR)"]
            resources: {limits: {nvidia.com/gpu: "8"}}
"""


def test_leader_worker_set(tmp_path: Path) -> None:
    result = build(tmp_path, {"lws.yaml": LWS})
    assert result.document["parallelism"] == {"tensor_parallel": 8, "gpus_per_replica": 16}
    assert result.document["replicas_per_zone"] == {"z-a": 2}
    assert result.document["serving"]["max_num_seqs"] == 32
    # LWS rolls one group at a time unless told otherwise.
    assert result.document["drain"]["rollout_max_unavailable"] == 1


def test_stateful_set(tmp_path: Path) -> None:
    text = deployment(VLLM, kind="StatefulSet", replicas="6")
    result = build(tmp_path, {"sts.yaml": text})
    assert result.document["replicas_per_zone"] == {"z-a": 2, "z-b": 2, "z-c": 2}
    assert result.document["drain"]["rollout_max_unavailable"] == 1
    assert result.sources["replicas_per_zone"].line == 5


def _pinned(zone: str) -> str:
    return f"nodeSelector: {{topology.kubernetes.io/zone: {zone}}}"


def test_one_deployment_per_zone_is_summed(tmp_path: Path) -> None:
    files = {
        f"{zone}.yaml": deployment(VLLM, replicas=str(n), pod=_pinned(zone), name=f"llm-{zone}")
        for zone, n in (("z-a", 2), ("z-b", 3))
    }
    result = build(tmp_path, files)
    assert result.document["replicas_per_zone"] == {"z-a": 2, "z-b": 3}


def test_uneven_spread_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="do not spread evenly over 3 zones"):
        build(tmp_path, {"deploy.yaml": deployment(VLLM, replicas="4")})


def test_unpinned_zones_are_refused_unless_the_overlay_gives_them(tmp_path: Path) -> None:
    files = {"deploy.yaml": deployment(VLLM, pod="")}
    with pytest.raises(InvalidInput) as caught:
        build(tmp_path, files)
    assert "does not pin its pods to zones" in caught.value.one_line()
    assert caught.value.problems[0].loc == "replicas_per_zone"
    result = build(tmp_path, files, replicas_per_zone={"z-a": 1, "z-b": 2})
    assert result.document["replicas_per_zone"] == {"z-a": 1, "z-b": 2}
    with pytest.raises(InvalidInput) as caught:
        build(tmp_path, files, replicas_per_zone={"z-a": 2})
    # Led by the manifests' replicas: line, the overlay named second.
    assert "the manifests run 3 replicas, but the overlay places 2" in caught.value.one_line()
    assert (
        caught.value.source is not None and "deploy.yaml (document 0, line" in caught.value.source
    )


def _hpa(metric: str) -> str:
    return f"""apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {{name: llm}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: llm}}
  minReplicas: 3
  maxReplicas: 6
  metrics:
{metric}
"""


CPU = """    - type: Resource
      resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}"""
PODS = """    - type: Pods
      pods:
        metric: {name: vllm_num_requests_running}
        target: {type: AverageValue, averageValue: 1500m}"""


def test_hpa_on_cpu(tmp_path: Path) -> None:
    result = build(tmp_path, {"deploy.yaml": deployment(VLLM), "hpa.yaml": _hpa(CPU)})
    autoscaling = result.document["autoscaling"]
    assert (autoscaling["metric"], autoscaling["target"]) == ("cpu", 70)
    assert (autoscaling["min_replicas"], autoscaling["max_replicas"]) == (3, 6)


def test_hpa_on_a_pods_metric_renamed_by_an_adapter(tmp_path: Path) -> None:
    result = build(tmp_path, {"deploy.yaml": deployment(VLLM), "hpa.yaml": _hpa(PODS)})
    autoscaling = result.document["autoscaling"]
    assert (autoscaling["metric"], autoscaling["target"]) == ("vllm:num_requests_running", 1.5)
    line = line_of(tmp_path / "k8s" / "hpa.yaml", "averageValue: 1500m")
    assert result.sources["autoscaling.target"].line == line


def test_hpa_with_two_metrics_is_refused(tmp_path: Path) -> None:
    files = {"deploy.yaml": deployment(VLLM), "hpa.yaml": _hpa(CPU + "\n" + PODS)}
    with pytest.raises(InvalidInput, match="one autoscaling metric"):
        build(tmp_path, files)


def test_pdb_min_available_percentage(tmp_path: Path) -> None:
    pdb = """apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: llm}
spec:
  minAvailable: "60%"
  selector: {matchLabels: {app: llm}}
"""
    result = build(tmp_path, {"deploy.yaml": deployment(VLLM, replicas="6"), "pdb.yaml": pdb})
    # 60% of 6 rounds up to 4 that must stay: 2 may go.
    assert result.document["drain"]["disruption_budget"] == {"max_unavailable": 2}


@pytest.mark.parametrize(
    ("text", "field", "line", "message"),
    [
        (deployment(VLLM, replicas='"three"'), "spec.replicas", 5, "must be an integer"),
        (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n"
            "  template:\n    spec:\n      containers: {name: vllm}\n",
            "spec.template.spec.containers",
            7,
            "must be a list",
        ),
        (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\nmetadata: {name: b}\n",
            "metadata",
            4,
            "duplicate key",
        ),
        ("apiVersion: v1\nkind: [unclosed\n", "", 3, "not valid YAML"),
    ],
    ids=["wrong-type", "containers-not-a-list", "duplicate-key", "invalid-yaml"],
)
def test_bad_manifests_name_file_document_line_and_field(
    tmp_path: Path, text: str, field: str, line: int, message: str
) -> None:
    other = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
    (tmp_path / "bad.yaml").write_text(f"{other}---\n{text}")
    with pytest.raises(InvalidInput) as caught:
        plan_from_manifests([str(tmp_path / "bad.yaml")], workload=WORKLOAD, provider=PROVIDER)
    error = caught.value
    assert error.source == f"{tmp_path / 'bad.yaml'} (document 1, line {line + 4})"
    assert error.problems[0].loc == field
    assert message in error.problems[0].message


def test_a_field_neither_states_is_asked_of_the_overlay(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as caught:
        build(tmp_path, {"deploy.yaml": deployment(VLLM)}, serving={"max_model_len": 4096})
    assert caught.value.problems[0].loc == "serving.max_num_batched_tokens"
    assert caught.value.problems[0].message.startswith("not in the manifests")
    assert "give it in the overlay" in caught.value.problems[0].message


def test_manifests_win_over_the_overlay_with_a_note(tmp_path: Path) -> None:
    result = build(
        tmp_path,
        {"deploy.yaml": deployment(VLLM)},
        serving={**MINIMAL_OVERLAY["serving"], "max_num_seqs": 512},
    )
    assert result.document["serving"]["max_num_seqs"] == 64
    assert any(n.startswith("serving.max_num_seqs: given by the overlay") for n in result.notes)


def test_unknown_kinds_and_non_manifests_are_noted(tmp_path: Path) -> None:
    extra = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\n---\nfoo: bar\n"
    result = build(tmp_path, {"deploy.yaml": deployment(VLLM), "more.yml": extra})
    assert any("ConfigMap cfg (core) ignored" in n for n in result.notes)
    assert any("more.yml document 1: no apiVersion and kind" in n for n in result.notes)
    assert any("serving.block_size: stated by neither" in n for n in result.notes)


def test_kserve_inference_service(tmp_path: Path) -> None:
    isvc = """apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: llama}
spec:
  predictor:
    minReplicas: 2
    maxReplicas: 4
    nodeSelector: {topology.kubernetes.io/zone: z-a}
    model:
      modelFormat: {name: huggingface}
      args: [--model_name=llama, --model_id=meta-llama/Llama-3.1-8B-Instruct, --max-num-seqs=16]
      resources: {limits: {nvidia.com/gpu: "1"}}
"""
    result = build(tmp_path, {"isvc.yaml": isvc})
    assert result.document["replicas_per_zone"] == {"z-a": 2}
    assert result.document["serving"]["max_num_seqs"] == 16


def test_replicas_left_to_the_hpa_are_its_floor(tmp_path: Path) -> None:
    text = deployment(VLLM).replace("  replicas: 3\n", "")
    result = build(tmp_path, {"deploy.yaml": text, "hpa.yaml": _hpa(CPU)})
    assert result.document["replicas_per_zone"] == {"z-a": 1, "z-b": 1, "z-c": 1}
    assert any("its HPA's minReplicas (3) is used" in n for n in result.notes)


def test_workloads_of_one_plan_must_serve_alike(tmp_path: Path) -> None:
    other = VLLM.replace("--max-num-seqs=64", "--max-num-seqs=32")
    files = {
        "a.yaml": deployment(VLLM, pod=_pinned("z-a"), name="llm-a"),
        "b.yaml": deployment(other, pod=_pinned("z-b"), name="llm-b"),
    }
    with pytest.raises(InvalidInput, match="one plan serves with one configuration"):
        build(tmp_path, files)


def test_nesting_deeper_than_records_allow_is_refused(tmp_path: Path) -> None:
    (tmp_path / "deep.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\ndeep: " + "[" * 70 + "]" * 70
    )
    with pytest.raises(InvalidInput) as caught:
        plan_from_manifests([str(tmp_path / "deep.yaml")], workload=WORKLOAD, provider=PROVIDER)
    assert caught.value.source == f"{tmp_path / 'deep.yaml'} (document 0, line 3)"
    assert "nested deeper than 64 levels" in caught.value.one_line()
