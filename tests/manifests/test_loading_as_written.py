"""Manifests as they are written: templated Secrets beside the workload, YAML aliases,
every problem at once, each led by the manifest's own file and line."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from registry.errors import InvalidInput
from registry.manifests import plan_from_manifests
from registry.manifests.loading import read_manifests
from registry.manifests.problems import ManifestErrors
from registry.manifests.yaml_nodes import MAX_ALIAS_EXPANSION
from registry.records.documents import loads_yaml
from tests.manifests.helpers import (
    MINIMAL_OVERLAY,
    PROVIDER,
    WORKLOAD,
    ZONES,
    build,
    deployment,
    line_of,
    write,
)

VLLM = """
image: vllm/vllm-openai:v0.10.2
command: [vllm, serve, meta-llama/Llama-3.1-8B-Instruct, --max-num-seqs=64]
"""
# An unquoted template placeholder: YAML composes it as a mapping used as a key.
SECRET = """apiVersion: v1
kind: Secret
metadata:
  name: hf-token
stringData:
  token: {{HF_TOKEN}}
"""


def _plan(tmp_path: Path, *texts: str, **overlay: object) -> object:
    """plan_from_manifests of one file holding ``texts`` as its documents."""
    return build(tmp_path, {"app.yaml": "---\n".join(texts)}, **overlay)


def _errors(caught: pytest.ExceptionInfo[InvalidInput]) -> list[str]:
    """Each problem as the CLI prints it: place, field, message."""
    assert isinstance(caught.value, ManifestErrors)
    return [f"{p.located()}: {p.message}" for p in caught.value.found]


def test_an_undecodable_secret_is_skipped_with_a_note(tmp_path: Path) -> None:
    result = build(tmp_path, {"app.yaml": SECRET + "---\n" + deployment(VLLM)})
    assert result.document["serving"]["max_num_seqs"] == 64
    (note,) = [n for n in result.notes if "Secret" in n]
    assert note == (
        f"{tmp_path / 'k8s' / 'app.yaml'} (document 0, line 6): Secret hf-token (core) skipped: "
        "capgate does not read this kind, and it cannot be decoded (not valid YAML: found "
        "unhashable key)"
    )


def test_an_undecodable_deployment_is_still_refused(tmp_path: Path) -> None:
    broken = deployment(VLLM).replace("replicas: 3", "replicas: {{REPLICAS}}")
    with pytest.raises(InvalidInput) as caught:
        _plan(tmp_path, SECRET, broken)
    path = tmp_path / "k8s" / "app.yaml"
    assert _errors(caught) == [
        f"{path} (document 1, line {line_of(path, '{{REPLICAS}}')}): not valid YAML: found "
        "unhashable key",
    ]


def test_a_document_without_a_kind_that_cannot_be_decoded_is_refused(tmp_path: Path) -> None:
    # Whether capgate reads it cannot be told: fail closed.
    with pytest.raises(InvalidInput, match="duplicate key"):
        _plan(tmp_path, "a: 1\na: 2\n", deployment(VLLM))


def test_a_syntax_error_refuses_the_file_once(tmp_path: Path) -> None:
    # The scanner cannot get past the unclosed quote: the documents after it are not
    # guessed at, and no problem is made up for them.
    bad = 'apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {token: "x\n'
    with pytest.raises(InvalidInput) as caught:
        _plan(tmp_path, deployment(VLLM), bad, deployment(VLLM, name="other"))
    (problem,) = _errors(caught)
    assert problem.startswith(f"{tmp_path / 'k8s' / 'app.yaml'} (document 1, line ")
    assert "not valid YAML" in problem


def test_an_undecodable_item_of_a_list_is_skipped_and_the_others_read(tmp_path: Path) -> None:
    items = "\n".join(
        "  - " + "\n    ".join(text.splitlines()) for text in (SECRET, deployment(VLLM))
    )
    result = build(tmp_path, {"list.yaml": f"apiVersion: v1\nkind: List\nitems:\n{items}\n"})
    assert result.document["serving"]["max_num_seqs"] == 64
    assert any("Secret hf-token (core) skipped" in note for note in result.notes)


# -- aliases -----------------------------------------------------------------------------

ALIASED = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: llm
  labels: &labels {app: llm}
  annotations: {max-num-seqs: &seqs "--max-num-seqs=96"}
spec:
  replicas: 3
  selector: {matchLabels: *labels}
  template:
    metadata: {labels: *labels}
    spec:
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions:
                  - {key: topology.kubernetes.io/zone, operator: In, values: [z-a, z-b, z-c]}
      topologySpreadConstraints:
        - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}
      containers:
        - &vllm
          name: vllm
          image: vllm/vllm-openai:v0.10.2
          command: [vllm, serve, meta-llama/Llama-3.1-8B-Instruct, *seqs]
          resources:
            requests: &gpus
              nvidia.com/gpu: 1
            limits: *gpus
"""


def test_aliases_are_read_and_keep_the_anchors_line(tmp_path: Path) -> None:
    result = build(tmp_path, {"app.yaml": ALIASED})
    path = tmp_path / "k8s" / "app.yaml"
    assert result.document["serving"]["max_num_seqs"] == 96
    assert result.document["parallelism"]["gpus_per_replica"] == 1
    # Read through *seqs: located where the flag is written, at its anchor.
    assert result.sources["serving.max_num_seqs"].line == line_of(path, "&seqs")
    # limits: *gpus is read where the GPU count is written, under requests: &gpus.
    assert result.sources["parallelism.gpus_per_replica"].line == line_of(path, "nvidia.com/gpu")


def test_merge_keys_are_read_and_the_mapping_s_own_value_wins(tmp_path: Path) -> None:
    text = ALIASED.replace(
        "          command: [vllm, serve, meta-llama/Llama-3.1-8B-Instruct, *seqs]",
        "          command: &cmd [vllm, serve, meta-llama/Llama-3.1-8B-Instruct, --max-num-seqs=8]",
    ).replace(
        "            limits: *gpus\n",
        "            limits: *gpus\n        - <<: *vllm\n          name: second\n"
        "          command: [vllm, serve, meta-llama/Llama-3.1-8B-Instruct, --max-num-seqs=8]\n",
    )
    reading = read_manifests([str(write(tmp_path, {"app.yaml": text}))])
    assert not reading.problems
    (manifest,) = reading.manifests
    second = manifest.content["spec"]["template"]["spec"]["containers"][1]
    assert second["name"] == "second" and second["image"] == "vllm/vllm-openai:v0.10.2"
    # The merged image is located where it is written, in the anchored container.
    path = tmp_path / "k8s" / "app.yaml"
    assert manifest.lines["spec.template.spec.containers.1.image"] == line_of(path, "image:")
    assert manifest.lines["spec.template.spec.containers.1.name"] == line_of(path, "name: second")


LAUGHS = "\n".join(
    [
        "apiVersion: v1",
        "kind: ConfigMap",
        "metadata: {name: lol}",
        "data:",
        '  l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]',
        *(f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 9)),
        "",
    ]
)


def test_a_billion_laughs_is_refused_quickly_naming_the_file_and_the_bound(
    tmp_path: Path,
) -> None:
    started = time.monotonic()
    with pytest.raises(InvalidInput) as caught:
        _plan(tmp_path, LAUGHS, deployment(VLLM))
    assert time.monotonic() - started < 5
    (problem,) = _errors(caught)
    assert problem.startswith(f"{tmp_path / 'k8s' / 'app.yaml'} (document 0, line 1): ")
    assert f"more than the {MAX_ALIAS_EXPANSION} allowed (the bound on alias expansion)" in problem


def test_aliases_within_the_bound_are_read(tmp_path: Path) -> None:
    # Three levels: 729 values, far inside the bound.
    small = "\n".join(LAUGHS.splitlines()[:7]) + "\n"
    result = _plan(tmp_path, small, deployment(VLLM))
    assert any("ConfigMap lol (core) ignored" in note for note in result.notes)  # type: ignore[attr-defined]


def test_a_recursive_alias_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="recursive alias"):
        _plan(tmp_path, "apiVersion: v1\nkind: ConfigMap\ndata: &d {self: *d}\n", deployment(VLLM))


def test_record_documents_still_refuse_aliases() -> None:
    with pytest.raises(yaml.YAMLError, match="aliases"):
        loads_yaml("a: &x 1\nb: *x\n")


# -- every problem at once ---------------------------------------------------------------


def test_every_problem_of_every_file_at_once(tmp_path: Path) -> None:
    hpa = """apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: llm}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: llm}
  minReplicas: 3
"""
    files = {
        "a.yaml": deployment(VLLM, replicas='"three"', name="other"),
        "b.yaml": deployment(VLLM) + "---\n" + hpa,
        "c.yaml": "apiVersion: v1\nkind: [unclosed\n---\n" + deployment(VLLM, name="third"),
        "d.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nmetadata: {}\n",
    }
    folder = write(tmp_path, files, MINIMAL_OVERLAY)
    with pytest.raises(InvalidInput) as caught:
        plan_from_manifests(
            [str(folder)], overlay=tmp_path / "overlay.yaml", workload=WORKLOAD, provider=PROVIDER
        )
    a, b, c, d = (folder / name for name in files)
    hpa_spec = line_of(b, "spec:", after="HorizontalPodAutoscaler")
    errors = _errors(caught)
    assert errors[0].startswith(f"{c} (document 0, line 3): not valid YAML: expected")
    assert errors[1:] == [
        # Files first (their documents as read), then what the workloads they hold say.
        f"{d} (document 0, line 4): metadata: duplicate key (line 4)",
        f"{a} (document 0, line 5): spec.replicas: must be an integer, not a string ('three')",
        f"{b} (document 1, line {hpa_spec}): spec: maxReplicas is required",
    ]
    # The CLI prints the first after `capgate: error:` and the others one per line.
    assert caught.value.one_line() == f"{_errors(caught)[0]} (and 3 more problems)"
    assert [str(p) for p in caught.value.problems[1:]] == _errors(caught)[1:]


def test_no_cascade_when_the_only_workload_cannot_be_read(tmp_path: Path) -> None:
    # Not also "no serving workload", nor the overlay's zones compared with nothing.
    with pytest.raises(InvalidInput) as caught:
        build(
            tmp_path,
            {"app.yaml": deployment(VLLM, replicas='"3"', pod="")},
            replicas_per_zone={"z-a": 5},
        )
    (problem,) = _errors(caught)
    assert "spec.replicas: must be an integer" in problem


# -- errors led by the manifest's own line -----------------------------------------------


def test_a_replica_total_the_overlay_contradicts_is_led_by_the_replicas_line(
    tmp_path: Path,
) -> None:
    with pytest.raises(InvalidInput) as caught:
        build(tmp_path, {"app.yaml": deployment(VLLM, pod="")}, replicas_per_zone={"z-a": 2})
    path = tmp_path / "k8s" / "app.yaml"
    overlay = tmp_path / "overlay.yaml"
    (problem,) = _errors(caught)
    assert problem == (
        f"{path} (document 0, line {line_of(path, 'replicas: 3')}): replicas_per_zone: the "
        f"manifests run 3 replicas, but the overlay places 2 "
        f"({overlay}:{line_of(overlay, 'replicas_per_zone')})"
    )


def test_unpinned_zones_are_asked_of_the_overlay_at_the_replicas_line(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as caught:
        build(tmp_path, {"app.yaml": deployment(VLLM, pod="")})
    path = tmp_path / "k8s" / "app.yaml"
    assert caught.value.source == f"{path} (document 0, line {line_of(path, 'replicas: 3')})"
    assert str(caught.value.problems[0]).endswith(
        f"; give it in the overlay ({tmp_path / 'overlay.yaml'})"
    )


def test_a_rule_across_fields_is_led_by_the_manifest_value(tmp_path: Path) -> None:
    # Without chunked prefill the batch must hold max_model_len: the manifests give the
    # batch, the overlay the length.
    container = VLLM.replace(
        "--max-num-seqs=64]",
        "--max-num-seqs=64, --no-enable-chunked-prefill,\n          --max-num-batched-tokens=2048]",
    )
    with pytest.raises(InvalidInput) as caught:
        build(tmp_path, {"app.yaml": deployment(container)})
    path = tmp_path / "k8s" / "app.yaml"
    overlay = tmp_path / "overlay.yaml"
    (problem,) = _errors(caught)
    assert problem.startswith(
        f"{path} (document 0, line {line_of(path, '--max-num-batched-tokens')}): serving: "
        "without chunked prefill, max_num_batched_tokens must be at least max_model_len"
    )
    assert f"serving.max_model_len in the overlay at {overlay}:" in problem


def test_a_required_flag_neither_states_is_led_by_the_vllm_container(tmp_path: Path) -> None:
    overlay = {**MINIMAL_OVERLAY, "serving": {"max_model_len": 4096}}
    with pytest.raises(InvalidInput) as caught:
        build(tmp_path, {"app.yaml": deployment(VLLM)}, **overlay)
    path = tmp_path / "k8s" / "app.yaml"
    place = f"{path} (document 0, line {line_of(path, '- name: vllm')})"
    assert _errors(caught) == [
        f"{place}: serving.{field}: not in the manifests (this vLLM container passes no such "
        f"flag); give it in the overlay ({tmp_path / 'overlay.yaml'})"
        for field in ("max_num_batched_tokens", "gpu_memory_utilization")
    ]


def test_a_wrong_overlay_value_is_led_by_the_overlay_line(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as caught:
        build(tmp_path, {"app.yaml": deployment(VLLM)}, reserve={"worker_failures": "x"})
    overlay = tmp_path / "overlay.yaml"
    assert caught.value.source == f"{overlay} (line {line_of(overlay, 'worker_failures')})"


def test_an_overlay_value_where_the_manifests_state_fields_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as caught:
        build(tmp_path, {"app.yaml": deployment(VLLM)}, parallelism=2)
    overlay = tmp_path / "overlay.yaml"
    (problem,) = _errors(caught)
    assert problem.startswith(f"{overlay} (line {line_of(overlay, 'parallelism')}): parallelism:")
    assert "the manifests state parallelism.gpus_per_replica" in problem


def test_two_workloads_that_disagree_are_led_by_the_second_value(tmp_path: Path) -> None:
    pinned = ZONES
    first = deployment(VLLM, pod=pinned)
    second = deployment(VLLM.replace("=64", "=32"), pod=pinned, name="llm-b")
    with pytest.raises(InvalidInput) as caught:
        build(tmp_path, {"a.yaml": first, "b.yaml": second})
    b = tmp_path / "k8s" / "b.yaml"
    a = tmp_path / "k8s" / "a.yaml"
    (problem,) = _errors(caught)
    assert problem == (
        f"{b} (document 0, line {line_of(b, '--max-num-seqs')}): serving.max_num_seqs: 32 here "
        f"but 64 at {a}:{line_of(a, '--max-num-seqs')} (document 0): one plan serves with one "
        "configuration"
    )
