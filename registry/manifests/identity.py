"""What the manifests say is served: the model, the vLLM image, the accelerator, the dtypes.

The client reads them here and sends each raw, with the file and line it is written on,
as a ``provider.*`` stated field (``identity_fields``); the server compares them with the
provider version the plan pins (registry.manifests.provider_match). The small readers of
text (an image's vLLM version, an accelerator's family, a placeholder) are shared by both.

A pod that cannot serve is refused here (``refuse_unservable``): a vLLM container whose
pod requests no accelerator, or whose model is a template placeholder (``YOUR-MODEL``,
``<model>``, ``{{ .Values.model }}``) that was never filled in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, NamedTuple

from registry.manifests.loading import Node, Where
from registry.manifests.pods import GPU_RESOURCES, TPU_RESOURCE, Fields
from registry.manifests.problems import invalid
from registry.manifests.vllm_args import VllmCommand
from registry.manifests.workloads import ServingWorkload
from registry.manifests.zones import required_terms

PROVIDER = "provider"
MODEL = f"{PROVIDER}.model.name"
SERVED_NAME = f"{PROVIDER}.model.served_name"
QUANTIZATION = f"{PROVIDER}.model.quantization"
DTYPE = f"{PROVIDER}.model.dtype"
KV_CACHE_DTYPE = f"{PROVIDER}.model.kv_cache_dtype"
RUNTIME = f"{PROVIDER}.runtime.name"
IMAGE = f"{PROVIDER}.runtime.image"
RESOURCE = f"{PROVIDER}.accelerator.resource"
NODE_SELECTOR = f"{PROVIDER}.accelerator.node_selector"  # .<label key>: value[,value...]

# vLLM flags sent as they are written (the server maps them to dtypes).
IDENTITY_FLAGS = {
    "quantization": QUANTIZATION,
    "dtype": DTYPE,
    "kv-cache-dtype": KV_CACHE_DTYPE,
    "served-model-name": SERVED_NAME,
}
# Node labels that name the GPU model (GPU feature discovery, GKE, Karpenter, AMD's
# node labeller), read from a nodeSelector or a required node affinity ``In``.
ACCELERATOR_LABELS = (
    "nvidia.com/gpu.product",
    "cloud.google.com/gke-accelerator",
    "karpenter.k8s.aws/instance-gpu-name",
    "amd.com/gpu.product-name",
    "beta.amd.com/gpu.product-name",
)
# Node labels that put pods on spot (preemptible) capacity, and the value that does.
CAPACITY = "capacity"
SPOT = f"{CAPACITY}.spot"  # .<label key>: value[,value...]
SPOT_LABELS = {
    "cloud.google.com/gke-spot": "true",
    "cloud.google.com/gke-preemptible": "true",
    "cloud.google.com/gke-provisioning": "spot",
    "karpenter.sh/capacity-type": "spot",
    "eks.amazonaws.com/capacityType": "spot",
    "kubernetes.azure.com/scalesetpriority": "spot",
}
# Spot nodes are tainted with their label (GKE, AKS; Karpenter and EKS node pools that
# taint them): a toleration of the taint, or a preferred node affinity for the label,
# lets the pods run there without requiring it.
SPOT_TOLERATION = f"{CAPACITY}.spot_toleration"  # .<taint key>: the value, or Exists
SPOT_PREFERENCE = f"{CAPACITY}.spot_preference"  # .<label key>: value[,value...]
RECLAIMED = (
    "the cloud reclaims spot nodes at short notice, several at once, which the plan's "
    "reserve for one worker and one zone does not count; not compared"
)
RESOURCE_VENDORS = {"nvidia.com/gpu": "NVIDIA", "amd.com/gpu": "AMD", TPU_RESOURCE: "Google"}
RESOURCE_KINDS = {
    "nvidia.com/gpu": "an NVIDIA GPU",
    "amd.com/gpu": "an AMD GPU",
    TPU_RESOURCE: "a Google TPU",
}

# Images whose tag is vLLM's own version (also behind a registry host or mirror).
VLLM_IMAGES = ("vllm/vllm-openai", "vllm/vllm-openai-rocm", "vllm/vllm-tpu")
_VERSION_TAG = re.compile(r"v?(\d+\.\d+(?:\.\d+)?(?:\.\d+|\.?post\d+|rc\d+)?)(?:[-_+].*)?")

# Filled in by nobody: Helm or Jinja left unrendered, <angle> or YOUR-... placeholders.
_PLACEHOLDER = re.compile(
    r"\{\{.*\}\}|<[^<>]*>|(^|[^a-z0-9])your[-_/]|(^|/)path/to/|replace[-_]?me|change[-_]?me",
    re.IGNORECASE,
)


def placeholder(text: str) -> bool:
    """A template placeholder nobody filled in (``/var/mdl/YOUR-MODEL-PATH``, ``<model>``,
    ``{{ .Values.model }}``); ``$(VAR)`` and ``${VAR}`` are variables, not placeholders."""
    return _PLACEHOLDER.search(text) is not None


class Image(NamedTuple):
    repository: str  # without a tag or digest, a Docker Hub prefix dropped
    tag: str | None
    digest: str | None


def parse_image(text: str) -> Image:
    """``vllm/vllm-openai:v0.10.2`` -> repository, tag, digest (``@sha256:...``)."""
    name, _, digest = text.strip().partition("@")
    slash, colon = name.rfind("/"), name.rfind(":")
    repository, tag = (name[:colon], name[colon + 1 :]) if colon > slash else (name, None)
    for prefix in ("docker.io/", "index.docker.io/"):
        repository = repository.removeprefix(prefix)
    return Image(repository.removeprefix("library/"), tag or None, digest or None)


def same_image(a: str, b: str) -> bool:
    return parse_image(a) == parse_image(b)


def vllm_image(image: Image) -> bool:
    return any(image.repository == i or image.repository.endswith(f"/{i}") for i in VLLM_IMAGES)


def vllm_version(text: str) -> tuple[str | None, str]:
    """The vLLM version an image's tag names, or None and why it names none."""
    image = parse_image(text)
    if not vllm_image(image):
        if "vllm" in image.repository.lower():
            return (
                None,
                "is not vLLM's own image (vllm/vllm-openai), so its tag need not be vLLM's version",
            )
        return None, "is not a vLLM image (vllm/vllm-openai), so it names no vLLM version"
    if image.tag is None and image.digest is not None:
        return None, "is pinned by digest, which names no version"
    if image.tag is None or image.tag in ("latest", "nightly"):
        return None, f"names no version (tag {image.tag or 'latest'}): pin a tag such as v0.10.2"
    match = _VERSION_TAG.fullmatch(image.tag)
    if match is None:
        return None, f"has the tag {image.tag}, which is not a vLLM version"
    return match.group(1), ""


class Family(NamedTuple):
    name: str  # H100, L4, MI300X
    vendor: str


_NVIDIA = (
    "H100 H200 H800 H20 GH200 B100 B200 B300 GB200 GB300 A100 A800 A10G A10 A30 A40 A16 A2 "
    "L4 L40 L40S T4 V100 P100 P40 P4 K80 A6000 A5000 A4000"
)
_AMD = "MI300X MI300A MI325X MI325 MI350X MI355X MI250X MI250 MI210 MI100"
FAMILIES = {
    **{name.lower(): Family(name, "NVIDIA") for name in _NVIDIA.split()},
    **{name.lower(): Family(name, "AMD") for name in _AMD.split()},
}
_MEMORY = re.compile(r"(\d+)g(?:i?b)?")


def _tokens(text: str) -> list[str]:
    return [t for t in re.split(r"[^a-z0-9]+", text.lower()) if t]


def accelerator_family(text: str) -> Family | None:
    """The family an accelerator's name or node label names: ``H100-SXM-80GB``,
    ``NVIDIA-H100-80GB-HBM3``, ``nvidia-h100-80gb`` and ``h100`` are all H100."""
    for token in _tokens(text):
        if token in FAMILIES:
            return FAMILIES[token]
    return None


def memory_gb(text: str) -> int | None:
    """The memory a name states (``nvidia-a100-80gb`` -> 80), if it states one."""
    for token in _tokens(text):
        match = _MEMORY.fullmatch(token)
        if match is not None:
            return int(match.group(1))
    return None


def _label_values(pod: Node, key: str) -> tuple[list[str], Node] | None:
    """The values ``key`` may take for the pods to be scheduled: a nodeSelector's, else
    those a required node affinity allows (``In``), and where they are written."""
    selector = pod.mapping("nodeSelector")
    pinned = selector.child(key) if selector is not None else None
    if pinned is not None:
        return [str(pinned.value)], pinned
    return _values_in(required_terms(pod) or [], key)


def _values_in(terms: list[Node], key: str) -> tuple[list[str], Node] | None:
    """The values node selector terms allow ``key`` (``In``), and the first expression."""
    values: list[str] = []
    first: Node | None = None
    for term in terms:
        for expression in term.items("matchExpressions"):
            name, operator = expression.string("key"), expression.string("operator")
            if name is None or name.value != key or operator is None or operator.value != "In":
                continue
            values.extend(str(v.value) for v in expression.strings("values"))
            first = first or expression
    return (list(dict.fromkeys(values)), first) if first is not None else None


class Model(NamedTuple):
    text: str
    where: Where
    path: str  # the manifest field it is written in


def served_model(command: VllmCommand) -> Model | None:
    """The model the server loads, as written: vLLM's positional model or ``--model``,
    KServe's huggingface server's ``--model_id``; an InferenceService's ``storageUri``
    (``hf://org/name``, which KServe fetches for its server) where those are absent or a
    variable the manifests give no value (KServe's vLLM runtime serves ``${MODEL}``)."""
    word = command.model
    model_id = command.flags.get("model-id")
    if word is None and model_id is not None and isinstance(model_id.value, str):
        return Model(model_id.value, model_id.word.where, model_id.node.path)
    if word is not None and "$" not in word.text:
        return Model(word.text, word.where, word.node.path)
    uri = command.container.string("storageUri")
    if uri is not None:
        return Model(uri.value, uri.where, uri.path)
    return None if word is None else Model(word.text, word.where, word.node.path)


def identity_fields(workload: ServingWorkload) -> Fields:
    """What the workload says is served, each value as written, as ``provider.*`` fields,
    and the spot capacity its pods are placed on (``capacity.spot.<label>``)."""
    command = workload.vllm
    fields: Fields = {RUNTIME: ("vllm", command.container.where)}
    image = command.holding("image").string("image")
    if image is not None:
        fields[IMAGE] = (image.value, image.where)
    model = served_model(command)
    if model is not None:
        fields[MODEL] = (model.text, model.where)
    for flag_name, field in IDENTITY_FLAGS.items():
        flag = command.flags.get(flag_name)
        if flag is not None and isinstance(flag.value, str):
            fields[field] = (flag.value, flag.word.where)
    kserve_name = command.flags.get("model-name")
    if (
        SERVED_NAME not in fields
        and kserve_name is not None
        and command.container.child("modelFormat")
    ):
        # KServe's huggingface server takes the name clients use as --model_name.
        fields[SERVED_NAME] = (str(kserve_name.value), kserve_name.word.where)
    if workload.accelerator is not None and workload.gpus_at is not None:
        fields[RESOURCE] = (workload.accelerator, workload.gpus_at)
    for key in ACCELERATOR_LABELS:
        found = _label_values(workload.placed_by, key)
        if found is not None and found[0]:
            fields[f"{NODE_SELECTOR}.{key}"] = (",".join(found[0]), found[1].where)
    for key, spot in SPOT_LABELS.items():
        found = _label_values(workload.placed_by, key)
        if found is not None and spot in (v.lower() for v in found[0]):
            fields[f"{SPOT}.{key}"] = (",".join(found[0]), found[1].where)
            continue  # required: what the pods also tolerate or prefer adds nothing
        preferred = _preferred_values(workload.placed_by, key)
        if preferred is not None and spot in (v.lower() for v in preferred[0]):
            fields[f"{SPOT_PREFERENCE}.{key}"] = (",".join(preferred[0]), preferred[1].where)
        for pod in (workload.pod, workload.placed_by):  # the KServe runtime's too
            toleration = _toleration(pod, key, spot)
            if toleration is not None:
                fields[f"{SPOT_TOLERATION}.{key}"] = toleration
                break
    return fields


def _preferred_values(pod: Node, key: str) -> tuple[list[str], Node] | None:
    """The values of ``key`` a preferred node affinity asks for (``In``), if any."""
    affinity = pod.mapping("affinity")
    node_affinity = affinity.mapping("nodeAffinity") if affinity else None
    weighted = (
        node_affinity.items("preferredDuringSchedulingIgnoredDuringExecution")
        if node_affinity
        else []
    )
    preferences = [p for term in weighted if (p := term.mapping("preference")) is not None]
    return _values_in(preferences, key)


def _toleration(pod: Node, key: str, spot: str) -> tuple[str, Where] | None:
    """A toleration of the spot taint ``key`` (``Exists``, or ``Equal`` to the spot
    value): what it tolerates and where it is written. GPU taints need nothing."""
    for toleration in pod.items("tolerations"):
        name = toleration.string("key")
        if name is None or name.value != key:
            continue
        operator = toleration.string("operator")
        if operator is not None and operator.value == "Exists":
            return "Exists", toleration.where
        value = toleration.child("value")
        if value is not None and str(value.value).lower() == spot:
            effect = toleration.string("effect")
            written = f"{value.value}:{effect.value}" if effect is not None else str(value.value)
            return written, toleration.where
    return None


def spot_notes(fields: Iterable[tuple[str, Any, str, int]]) -> list[str]:
    """What the spot capacity the pods are placed on means, one note per node label:
    ``fields`` are (name, value, file, line) of the ``capacity.*`` fields."""
    by_key: dict[str, dict[str, tuple[Any, str]]] = {}
    for name, value, file, line in fields:
        for prefix in (SPOT, SPOT_PREFERENCE, SPOT_TOLERATION):
            if name.startswith(f"{prefix}."):
                key = name.removeprefix(f"{prefix}.")
                by_key.setdefault(key, {})[prefix] = (value, f"{file}:{line}")
    found = []
    for key, stated in sorted(by_key.items()):
        if SPOT in stated:
            value, at = stated[SPOT]
            values = str(value).split(",")
            spot = [v for v in values if v.lower() in ("spot", "true")]
            runs = "run" if len(spot) == len(values) else "may run"
            found.append(f"the pods {runs} on spot capacity ({key}: {value}, {at}): {RECLAIMED}")
            continue
        said = []
        if SPOT_PREFERENCE in stated:
            value, at = stated[SPOT_PREFERENCE]
            said.append(f"a preferred node affinity for {key}: {value}, {at}")
        if SPOT_TOLERATION in stated:
            value, at = stated[SPOT_TOLERATION]
            said.append(f"a toleration of the taint {key}={value}, {at}")
        found.append(
            f"the pods may run on spot capacity ({'; '.join(said)}): this allows spot nodes "
            f"without requiring them, so some or all replicas may land there; {RECLAIMED}"
        )
    return found


def refuse_unservable(workload: ServingWorkload) -> None:
    """A vLLM pod that cannot serve the plan is an error naming its file and line: no
    accelerator requested, or a model that is still a template placeholder."""
    command = workload.vllm
    model = served_model(command)
    if model is not None and placeholder(model.text):
        raise invalid(
            model.where,
            model.path,
            f"the model {model.text!r} is a template placeholder: name the model the pods serve",
        )
    if not workload.gpus_per_replica:
        runtime = command.container.string("runtime")
        hint = (
            f"; its runtime {runtime.value} is not in the manifests, give it with them"
            if runtime is not None and command.runtime is None
            else ""
        )
        command.container.fail(
            f"{workload.manifest.title} runs vLLM but requests no accelerator (resources "
            f"{', '.join(GPU_RESOURCES)} or {TPU_RESOURCE}): a pod without one cannot serve "
            f"the plan{hint}"
        )
