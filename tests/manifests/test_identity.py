"""What the manifests serve (model, vLLM image, accelerator, dtypes) against the provider:
the readers of registry.manifests.identity, the matchers of provider_match, and the pods
that cannot serve, which are refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from registry.errors import InvalidInput
from registry.manifests.consistency import StatedField, stated_fields
from registry.manifests.identity import accelerator_family, placeholder, vllm_version
from registry.manifests.provider_match import ProviderDiscrepancy, compare_provider
from registry.records.documents import load_document, validate_record
from registry.records.kinds import RecordKind
from registry.records.provider import ProviderProfile
from tests.manifests.helpers import EXAMPLE, build, deployment, line_of, write

VLLM = """
image: vllm/vllm-openai:v0.10.2
command: [vllm, serve]
args: [meta-llama/Llama-3.1-8B-Instruct, --max-num-seqs=128]
"""


def example_provider(**changes: Any) -> ProviderProfile:
    """The example's provider (Llama-3.1-8B-Instruct, bf16, vLLM 0.10.2, H100-SXM-80GB),
    with sections replaced by ``changes`` (model={"kv_dtype": "fp8"}...)."""
    document = load_document(EXAMPLE / "provider.yaml")
    for section, values in changes.items():
        document[section] = {**document[section], **values}
    return validate_record(RecordKind.provider, document)


# The line each stated field is written on in the made-up k8s/d.yaml; node labels from 30.
LINES = {
    f"provider.{name}": line
    for line, name in enumerate(
        [
            "runtime.name",
            "runtime.image",
            "model.name",
            "model.served_name",
            "model.quantization",
            "model.dtype",
            "model.kv_cache_dtype",
            "accelerator.resource",
        ],
        start=10,
    )
}


def stated(**values: Any) -> dict[str, StatedField]:
    """Stated ``provider.*`` fields in k8s/d.yaml: ``model__name`` for provider.model.name,
    node labels (``labels``) as ``provider.accelerator.node_selector.KEY``."""
    labels = values.pop("labels", {})
    names = {f"provider.{k.replace('__', '.')}": v for k, v in values.items()}
    lines = dict(LINES)
    for line, key in enumerate(sorted(labels), start=30):
        name = f"provider.accelerator.node_selector.{key}"
        names[name], lines[name] = labels[key], line
    return {
        name: StatedField(value=value, file="k8s/d.yaml", document=0, line=lines[name])
        for name, value in names.items()
    }


EXAMPLE_SERVES = {
    "runtime__name": "vllm",
    "runtime__image": "vllm/vllm-openai:v0.10.2",
    "model__name": "meta-llama/Llama-3.1-8B-Instruct",
    "accelerator__resource": "nvidia.com/gpu",
    "labels": {"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"},
}


def compared(
    provider: ProviderProfile | None = None, **values: Any
) -> tuple[list[ProviderDiscrepancy], list[str]]:
    serves: dict[str, Any] = {**EXAMPLE_SERVES, **values}
    serves["labels"] = {**EXAMPLE_SERVES["labels"], **values.get("labels", {})}
    serves["labels"] = {k: v for k, v in serves["labels"].items() if v is not None}
    serves = {k: v for k, v in serves.items() if v is not None}
    return compare_provider(provider or example_provider(), stated(**serves))


@pytest.mark.parametrize(
    ("image", "version"),
    [
        ("vllm/vllm-openai:v0.10.2", "0.10.2"),
        ("docker.io/vllm/vllm-openai:v0.6.3.post1", "0.6.3.post1"),
        ("vllm/vllm-openai:v0.10.1.1", "0.10.1.1"),
        ("registry.example.com:5000/vllm/vllm-openai:v0.9.0", "0.9.0"),
        ("vllm/vllm-openai:v0.11.0@sha256:" + "a" * 64, "0.11.0"),
        ("vllm/vllm-openai-rocm:v0.10.1", "0.10.1"),
    ],
)
def test_the_vllm_version_of_an_image(image: str, version: str) -> None:
    assert vllm_version(image) == (version, "")


@pytest.mark.parametrize(
    ("image", "why"),
    [
        ("vllm/vllm-openai:latest", "names no version (tag latest)"),
        ("vllm/vllm-openai", "names no version (tag latest)"),
        ("vllm/vllm-openai@sha256:" + "a" * 64, "is pinned by digest"),
        ("vllm/vllm-openai:gptoss", "has the tag gptoss, which is not a vLLM version"),
        ("ubuntu:22.04", "is not a vLLM image"),
        ("lmcache/vllm-openai:v0.3.1", "is not vLLM's own image"),
        ("kserve/huggingfaceserver:v0.15.0", "is not a vLLM image"),
    ],
)
def test_an_image_that_names_no_vllm_version_says_why(image: str, why: str) -> None:
    version, reason = vllm_version(image)
    assert version is None and why in reason


@pytest.mark.parametrize(
    ("text", "family"),
    [
        ("H100-SXM-80GB", "H100"),
        ("NVIDIA-H100-80GB-HBM3", "H100"),
        ("nvidia-h100-mega-80gb", "H100"),
        ("h100", "H100"),
        ("nvidia-h200-141gb", "H200"),
        ("NVIDIA-GH200-480GB", "GH200"),
        ("nvidia-l4", "L4"),
        ("NVIDIA-L40S", "L40S"),
        ("nvidia-tesla-a100", "A100"),
        ("NVIDIA-A10G", "A10G"),
        ("AMD_Instinct_MI300X_OAM", "MI300X"),
        ("MI300X-192GB", "MI300X"),
    ],
)
def test_accelerator_families(text: str, family: str) -> None:
    found = accelerator_family(text)
    assert found is not None and found.name == family


def test_an_unknown_accelerator_has_no_family() -> None:
    assert accelerator_family("NVIDIA-GeForce-RTX-4090") is None
    assert accelerator_family("custom-pool") is None


@pytest.mark.parametrize(
    "text",
    ["/var/mdl/YOUR-MODEL-PATH", "<model>", "{{ .Values.model }}", "your_model", "/path/to/model"],
)
def test_placeholders(text: str) -> None:
    assert placeholder(text)


@pytest.mark.parametrize(
    "text", ["meta-llama/Llama-3.1-8B-Instruct", "$(MODEL_ID)", "${MODEL}", "/models/llama"]
)
def test_not_placeholders(text: str) -> None:
    assert not placeholder(text)


def test_the_example_serves_its_provider() -> None:
    assert compared() == ([], [])
    served = stated_fields([str(EXAMPLE / "k8s")]).fields
    assert {k: v.value for k, v in served.items() if k.startswith("provider.")} == {
        "provider.runtime.name": "vllm",
        "provider.runtime.image": "vllm/vllm-openai:v0.10.2",
        "provider.model.name": "meta-llama/Llama-3.1-8B-Instruct",
        "provider.accelerator.resource": "nvidia.com/gpu",
        "provider.accelerator.node_selector.cloud.google.com/gke-accelerator": "nvidia-h100-80gb",
    }
    assert compare_provider(example_provider(), served) == ([], [])


def _one(found: list[ProviderDiscrepancy]) -> tuple[str, Any, Any, str]:
    (only,) = found
    return only.field, only.provider, only.manifests, only.read


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (
            {"model__name": "Qwen/Qwen3-8B"},
            ("model.name", "meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-8B", ""),
        ),
        (
            {"model__name": "hf://Qwen/Qwen3-8B"},
            (
                "model.name",
                "meta-llama/Llama-3.1-8B-Instruct",
                "Qwen/Qwen3-8B",
                "hf://Qwen/Qwen3-8B",
            ),
        ),
        (
            {"runtime__image": "vllm/vllm-openai:v0.19.1"},
            ("runtime.version", "0.10.2", "0.19.1", "vllm/vllm-openai:v0.19.1"),
        ),
        (
            {"labels": {"cloud.google.com/gke-accelerator": "nvidia-l4"}},
            (
                "accelerator.name",
                "H100-SXM-80GB",
                "L4",
                "cloud.google.com/gke-accelerator: nvidia-l4",
            ),
        ),
        (
            {"labels": {"cloud.google.com/gke-accelerator": "nvidia-h100-80gb,nvidia-h200-141gb"}},
            (
                "accelerator.name",
                "H100-SXM-80GB",
                "H200",
                "cloud.google.com/gke-accelerator: nvidia-h200-141gb",
            ),
        ),
        (
            {
                "labels": {
                    "cloud.google.com/gke-accelerator": "nvidia-h100-mega-80gb",
                    "nvidia.com/gpu.product": "NVIDIA-H100-NVL-94GB",
                }
            },
            (
                "accelerator.name",
                "H100-SXM-80GB",
                "H100 94GB",
                "nvidia.com/gpu.product: NVIDIA-H100-NVL-94GB",
            ),
        ),
        (
            {
                "accelerator__resource": "amd.com/gpu",
                "labels": {"cloud.google.com/gke-accelerator": None},
            },
            ("accelerator.name", "H100-SXM-80GB", "an AMD GPU", "amd.com/gpu"),
        ),
        (
            {"model__quantization": "fp8"},
            ("model.weights_dtype", "bf16", "fp8", "--quantization fp8"),
        ),
        (
            {"model__dtype": "half"},
            ("model.weights_dtype", "bf16", "fp16", "--dtype half"),
        ),
        (
            {"model__kv_cache_dtype": "fp8_e4m3"},
            ("model.kv_dtype", "bf16", "fp8", "--kv-cache-dtype fp8_e4m3"),
        ),
    ],
    ids=[
        "another-model",
        "another-model-uri",
        "another-minor",
        "l4-node-selector",
        "one-of-two-gpus",
        "another-memory",
        "another-vendor",
        "fp8-weights",
        "fp16-weights",
        "fp8-kv",
    ],
)
def test_fail_what_the_manifests_serve_contradicts_the_provider(
    values: dict[str, Any], expected: tuple[str, Any, Any, str]
) -> None:
    found, _ = compared(**values)
    assert _one(found) == expected
    assert (found[0].file, found[0].document) == ("k8s/d.yaml", 0)


def test_fail_another_runtime_in_the_provider() -> None:
    found, _ = compared(example_provider(runtime={"name": "sglang", "image": None}))
    assert _one(found) == ("runtime.name", "sglang", "vllm", "")


def test_fail_another_quantisation_than_the_providers() -> None:
    provider = example_provider(model={"quantization": "awq", "weights_dtype": "int4"})
    found, _ = compared(provider, model__quantization="gptq")
    assert _one(found) == ("model.quantization", "awq", "gptq", "--quantization gptq")
    assert compared(provider, model__quantization="AWQ") == ([], [])


@pytest.mark.parametrize(
    ("values", "note"),
    [
        (
            {"model__name": "/models/llama-3.1-8b", "model__served_name": "llama"},
            "model.name is not compared with the provider's meta-llama/Llama-3.1-8B-Instruct: "
            "the manifests serve /models/llama-3.1-8b (k8s/d.yaml:12), a local path, not a "
            "Hugging Face id, served as llama (an alias, not the model)",
        ),
        ({"model__name": "$(MODEL_ID)"}, "a variable the manifests give no value"),
        ({"model__name": "s3://bucket/llama"}, "a storage URI, not a Hugging Face id"),
        ({"model__name": "<model>"}, "a template placeholder"),
        (
            {"model__name": None, "model__served_name": "llama"},
            "the manifests name no model, served as llama (an alias, not the model)",
        ),
        (
            {"runtime__image": "vllm/vllm-openai:v0.10.1"},
            "runtime.version: the manifests run vLLM 0.10.1 (vllm/vllm-openai:v0.10.1, "
            "k8s/d.yaml:11), the provider states 0.10.2: the same minor version, another patch",
        ),
        (
            {"runtime__image": "vllm/vllm-openai:latest"},
            "runtime.version is not compared with the provider's 0.10.2: the image "
            "vllm/vllm-openai:latest (k8s/d.yaml:11) names no version (tag latest)",
        ),
        ({"runtime__image": "vllm/vllm-openai@sha256:" + "b" * 64}, "is pinned by digest"),
        ({"runtime__image": "ubuntu:22.04"}, "ubuntu:22.04 (k8s/d.yaml:11) is not a vLLM image"),
        (
            {"labels": {"cloud.google.com/gke-accelerator": None}},
            "accelerator.name is compared by vendor only: the manifests request nvidia.com/gpu",
        ),
        (
            {"labels": {"nvidia.com/gpu.product": "NVIDIA-GeForce-RTX-4090"}},
            "nvidia.com/gpu.product: NVIDIA-GeForce-RTX-4090 (k8s/d.yaml:31) is not an "
            "accelerator family capgate knows",
        ),
        ({"model__quantization": "gptq"}, "--quantization gptq (k8s/d.yaml:14) does not say"),
    ],
    ids=[
        "local-path",
        "variable",
        "storage-uri",
        "placeholder",
        "alias-only",
        "patch",
        "latest",
        "digest",
        "not-vllm-image",
        "vendor-only",
        "unknown-gpu",
        "gptq",
    ],
)
def test_what_cannot_be_compared_is_a_note(values: dict[str, Any], note: str) -> None:
    found, notes = compared(**values)
    assert found == []
    assert any(note in n for n in notes), notes


def test_renamed_and_rebuilt_identities_agree() -> None:
    assert compared(model__name="meta-llama/Meta-Llama-3.1-8B-Instruct") == ([], [])
    assert compared(model__name="META-LLAMA/llama-3.1-8b-instruct") == ([], [])
    # A build of the provider's release (a CUDA variant) is no other patch.
    provider = example_provider(runtime={"version": "0.10.2+cu128", "image": None})
    assert compared(provider) == ([], [])


def test_the_providers_own_image_agrees_whatever_its_tag() -> None:
    provider = example_provider(runtime={"image": "registry.example.com/ml/vllm:build-42"})
    assert compared(provider, runtime__image="registry.example.com/ml/vllm:build-42") == ([], [])


def test_a_quantised_provider_without_flags_is_a_note() -> None:
    provider = example_provider(model={"weights_dtype": "fp8", "kv_dtype": "fp8"})
    found, notes = compared(provider)
    assert found == []
    assert any(n.startswith("model.weights_dtype (fp8) is not compared") for n in notes)
    assert any(n.startswith("model.kv_dtype (fp8) is not compared") for n in notes)
    assert compared(provider, model__quantization="fp8", model__kv_cache_dtype="fp8") == ([], [])


def test_a_client_that_sends_nothing_served_is_a_note() -> None:
    (note,) = compare_provider(example_provider(), {})[1]
    assert note.startswith("the provider (model, runtime, accelerator) is not compared")


def test_identity_read_from_flags_labels_and_affinity(tmp_path: Path) -> None:
    container = """
    image: vllm/vllm-openai:v0.11.0
    command: [vllm, serve]
    args:
      - --model=Qwen/Qwen3-8B
      - --served-model-name=chat
      - -q=fp8
      - --kv-cache-dtype
      - fp8
      - --dtype=bfloat16
    """
    pod = """
    nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
            - matchExpressions:
                - {key: karpenter.k8s.aws/instance-gpu-name, operator: In, values: [h100, h200]}
    """
    folder = write(tmp_path, {"d.yaml": deployment(container, pod=pod)})
    path = folder / "d.yaml"
    fields = stated_fields([str(folder)]).fields
    read = {k: (v.value, v.line) for k, v in fields.items() if k.startswith("provider.")}
    assert read == {
        "provider.runtime.name": ("vllm", line_of(path, "- name: vllm")),
        "provider.runtime.image": ("vllm/vllm-openai:v0.11.0", line_of(path, "image:")),
        "provider.model.name": ("Qwen/Qwen3-8B", line_of(path, "--model=")),
        "provider.model.served_name": ("chat", line_of(path, "--served-model-name")),
        "provider.model.quantization": ("fp8", line_of(path, "-q=fp8")),
        "provider.model.kv_cache_dtype": ("fp8", line_of(path, "--kv-cache-dtype")),
        "provider.model.dtype": ("bfloat16", line_of(path, "--dtype")),
        "provider.accelerator.resource": ("nvidia.com/gpu", line_of(path, "nvidia.com/gpu:")),
        "provider.accelerator.node_selector.nvidia.com/gpu.product": (
            "NVIDIA-H100-80GB-HBM3",
            line_of(path, "nodeSelector"),
        ),
        "provider.accelerator.node_selector.karpenter.k8s.aws/instance-gpu-name": (
            "h100,h200",
            line_of(path, "karpenter.k8s.aws/instance-gpu-name"),
        ),
    }
    found, _ = compare_provider(example_provider(), fields)
    assert {(d.field, d.manifests) for d in found} == {
        ("model.name", "Qwen/Qwen3-8B"),
        ("runtime.version", "0.11.0"),
        ("accelerator.name", "H200"),
        ("model.weights_dtype", "fp8"),
        ("model.kv_dtype", "fp8"),
    }


# The vLLM production-stack's disaggregated-prefill decode example, as its shape is
# published (vllm-project/production-stack examples/disaggregated_prefill_orchestrated/
# decode-deploy.yaml @036e791d01090bca5dbed91704736d5102e63e36): a bare image that
# installs vLLM at start, no accelerator request, a placeholder model path.
DECODE = """apiVersion: apps/v1
kind: Deployment
metadata: {name: decode}
spec:
  replicas: 1
  selector: {matchLabels: {app: decode}}
  template:
    metadata: {labels: {app: decode}}
    spec:
      containers:
        - name: app
          image: ubuntu:22.04
          resources:
            requests: {cpu: 8, memory: 30Gi}
          env:
            - {name: MODEL_ID, value: /var/mdl/YOUR-MODEL-PATH}
          command:
            - /bin/bash
            - "-exc"
            - |
              apt-get update
              python -m vllm.entrypoints.openai.api_server \\
                --host 0.0.0.0 \\
                --model ${MODEL_ID} \\
                --max-model-len 512
"""


def test_fail_a_placeholder_model_is_refused_at_its_line(tmp_path: Path) -> None:
    folder = write(tmp_path, {"decode.yaml": DECODE})
    path = folder / "decode.yaml"
    for read in (
        lambda: build(tmp_path, {"decode.yaml": DECODE}),
        lambda: stated_fields([str(folder)]),
    ):
        with pytest.raises(InvalidInput) as error:
            read()
        # On its own line of the script, though a backslash continues the command line.
        line = line_of(path, "--model ${MODEL_ID}")
        assert error.value.source == f"{path} (document 0, line {line})"
        assert "'/var/mdl/YOUR-MODEL-PATH' is a template placeholder" in error.value.one_line()


def test_fail_a_vllm_pod_without_an_accelerator_is_refused(tmp_path: Path) -> None:
    text = DECODE.replace("/var/mdl/YOUR-MODEL-PATH", "/var/mdl/llama-3.1-8b")
    folder = write(tmp_path, {"decode.yaml": text})
    with pytest.raises(InvalidInput) as error:
        stated_fields([str(folder)])
    path = folder / "decode.yaml"
    assert error.value.source == f"{path} (document 0, line {line_of(path, '- name: app')})"
    assert error.value.one_line().endswith(
        "Deployment decode runs vLLM but requests no accelerator (resources nvidia.com/gpu, "
        "amd.com/gpu or google.com/tpu): a pod without one cannot serve the plan"
    )


def test_a_non_vllm_image_is_not_noted_as_the_runtime_version(tmp_path: Path) -> None:
    text = DECODE.replace("/var/mdl/YOUR-MODEL-PATH", "/var/mdl/llama-3.1-8b").replace(
        "requests: {cpu: 8, memory: 30Gi}", "limits: {nvidia.com/gpu: 1}"
    )
    result = build(tmp_path, {"decode.yaml": text}, replicas_per_zone={"z": 1})
    (runtime,) = [n for n in result.notes if n.startswith("runtime: ")]
    assert "ubuntu:22.04" in runtime and "is not a vLLM image" in runtime
    assert "version 22.04" not in runtime


def test_vllm_on_a_vllm_image_is_noted_with_its_version(tmp_path: Path) -> None:
    result = build(tmp_path, {"d.yaml": deployment(VLLM)})
    assert any(
        n.startswith("runtime: vllm/vllm-openai:v0.10.2 (vLLM 0.10.2) at ") for n in result.notes
    )


@pytest.mark.parametrize(
    ("pod", "runs"),
    [
        ("nodeSelector: {cloud.google.com/gke-spot: 'true'}", "run"),
        ("nodeSelector: {eks.amazonaws.com/capacityType: SPOT}", "run"),
        (
            """
            affinity:
              nodeAffinity:
                requiredDuringSchedulingIgnoredDuringExecution:
                  nodeSelectorTerms:
                    - matchExpressions:
                        - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
            """,
            "may run",
        ),
    ],
    ids=["gke-spot", "eks-spot", "karpenter-spot-or-on-demand"],
)
def test_spot_capacity_is_a_note(tmp_path: Path, pod: str, runs: str) -> None:
    from registry.manifests.consistency import notes

    folder = write(tmp_path, {"d.yaml": deployment(VLLM, pod=pod)})
    stated_manifests = stated_fields([str(folder)])
    (spot,) = [n for n in stated_manifests.fields if n.startswith("capacity.spot.")]
    source = stated_manifests.fields[spot]
    (note,) = notes({}, stated_manifests)
    assert note.startswith(f"the pods {runs} on spot capacity (")
    assert f"{source.file}:{source.line}" in note
    assert source.line == line_of(folder / "d.yaml", spot.removeprefix("capacity.spot."))


def test_on_demand_capacity_says_nothing(tmp_path: Path) -> None:
    pod = "nodeSelector: {karpenter.sh/capacity-type: on-demand}"
    folder = write(tmp_path, {"d.yaml": deployment(VLLM, pod=pod)})
    assert not [n for n in stated_fields([str(folder)]).fields if n.startswith("capacity.")]
