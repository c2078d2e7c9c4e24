"""Do the manifests serve what the provider the plan pins describes?

The server side of registry.manifests.identity: the client sends what the manifests say
is served (``provider.*`` stated fields, raw, with file and line); each matcher here
compares one part of it with the provider version the decision rests on. A
contradiction (another model, another vLLM minor version, another accelerator family or
vendor, another dtype) is a ``ProviderDiscrepancy`` the manifests_consistent policy
denies at the manifest's line; what cannot be compared (a local model path, an image
that names no version, a node label capgate does not know) is a note saying what was
read and why.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from registry.manifests import identity
from registry.manifests.identity import accelerator_family, memory_gb, placeholder
from registry.records.provider import DType, ProviderProfile
from registry.staleness.rules import minor_version

if TYPE_CHECKING:
    from registry.manifests.consistency import StatedField

Fields = Mapping[str, "StatedField"]
Found = Iterator["ProviderDiscrepancy | str"]

# --quantization methods whose weight dtype is not the checkpoint's choice.
QUANTIZATION_DTYPES = {
    "fp8": DType.fp8,
    "fbgemm_fp8": DType.fp8,
    "ptpc_fp8": DType.fp8,
    "awq": DType.int4,
    "awq_marlin": DType.int4,
}
# --dtype (the unquantised weights' dtype) and --kv-cache-dtype values; auto is the model's.
DTYPES = {
    "half": DType.fp16,
    "float16": DType.fp16,
    "bfloat16": DType.bf16,
    "float": DType.fp32,
    "float32": DType.fp32,
}
KV_CACHE_DTYPES = {
    **DTYPES,
    "fp8": DType.fp8,
    "fp8_e4m3": DType.fp8,
    "fp8_e5m2": DType.fp8,
    "fp8_inc": DType.fp8,
    "fp8_ds_mla": DType.fp8,
}
UNQUANTISED = (DType.fp32, DType.bf16, DType.fp16)
# A node label's memory more than this far from the provider's is another part.
MEMORY_TOLERANCE = 0.05


class ProviderDiscrepancy(BaseModel):
    """A provider field the manifests serve something else than."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    field: str  # the provider's field: model.name, runtime.version, accelerator.name...
    provider: Any
    manifests: Any
    read: str  # what the manifests say, as written, when it is not the value itself
    file: str
    document: int
    line: int


def _at(source: StatedField) -> str:
    return f"{source.file}:{source.line}"


def _found(
    field: str, provider: Any, manifests: Any, source: StatedField, read: str = ""
) -> ProviderDiscrepancy:
    return ProviderDiscrepancy(
        field=field,
        provider=provider,
        manifests=manifests,
        read="" if read == str(manifests) else read,
        file=source.file,
        document=source.document,
        line=source.line,
    )


def _text(source: StatedField) -> str:
    return str(source.value)


def _vllm(provider: ProviderProfile) -> bool:
    return provider.runtime.name.strip().lower().startswith("vllm")


def runtime_name(provider: ProviderProfile, fields: Fields) -> Found:
    """The manifests run vLLM (that is how the workload was found): the provider's runtime
    must be vLLM too."""
    source = fields.get(identity.RUNTIME)
    if source is not None and not _vllm(provider):
        yield _found("runtime.name", provider.runtime.name, _text(source), source)


def runtime_version(provider: ProviderProfile, fields: Fields) -> Found:
    """The image's vLLM version against the provider's: another minor version is a
    contradiction, another patch a note; the provider's own image agrees whatever it is."""
    source = fields.get(identity.IMAGE)
    if source is None or not _vllm(provider):
        return
    image, expected = _text(source), provider.runtime.version
    if provider.runtime.image and identity.same_image(image, provider.runtime.image):
        return
    version, why = identity.vllm_version(image)
    if version is None:
        yield (
            f"runtime.version is not compared with the provider's {expected}: the image "
            f"{image} ({_at(source)}) {why}"
        )
    elif minor_version(version) != minor_version(expected):
        yield _found("runtime.version", expected, version, source, image)
    elif _release(version) != _release(expected) and _release(expected).count(".") >= 2:
        yield (
            f"runtime.version: the manifests run vLLM {version} ({image}, {_at(source)}), "
            f"the provider states {expected}: the same minor version, another patch"
        )


def _release(version: str) -> str:
    """0.10.2 of 0.10.2+cu128 or 0.10.2.post1: a build of the same release is no other patch."""
    match = re.match(r"\d+(\.\d+){0,2}", version)
    return match.group(0) if match else version


def _hf_id(model: str) -> str:
    """A Hugging Face id as compared: case-insensitively, and Meta's Llama 3.1 repositories
    by their current names (meta-llama/Meta-Llama-3.1-8B-Instruct was renamed
    meta-llama/Llama-3.1-8B-Instruct; the old name redirects to it)."""
    key = model.lower()
    return key.replace("meta-llama/meta-llama-3.1-", "meta-llama/llama-3.1-")


def _kind(model: str) -> str | None:
    """Why a model as written is not a Hugging Face id to compare, or None if it is one."""
    if "$" in model:
        return "a variable the manifests give no value"
    if placeholder(model):
        return "a template placeholder"
    if model.startswith(("/", "./", "../", "~")):
        return "a local path, not a Hugging Face id"
    if "://" in model:
        return "a storage URI, not a Hugging Face id"
    if model.count("/") != 1:
        return "a name without an organisation (a local folder or a legacy id)"
    return None


def model_name(provider: ProviderProfile, fields: Fields) -> Found:
    """The model vLLM loads against the provider's model (Hugging Face ids compare case
    insensitively); ``--served-model-name`` is an alias the clients use, not the model."""
    source = fields.get(identity.MODEL)
    alias = fields.get(identity.SERVED_NAME)
    expected = provider.model.name
    served = f", served as {_text(alias)} (an alias, not the model)" if alias else ""
    if source is None:
        yield (
            f"model.name is not compared with the provider's {expected}: the manifests name "
            f"no model{served}"
        )
        return
    model = _text(source).removeprefix("hf://")
    why = _kind(model)
    if why is None and _kind(expected) is not None:
        why = f"the provider's {expected} is not a Hugging Face id"
    if why is not None:
        yield (
            f"model.name is not compared with the provider's {expected}: the manifests serve "
            f"{_text(source)} ({_at(source)}), {why}{served}"
        )
    elif _hf_id(model) != _hf_id(expected):
        yield _found("model.name", expected, model, source, _text(source))


def _dtype(
    table: Mapping[str, DType], source: StatedField, flag: str, field: str, expected: DType
) -> Found:
    written = _text(source).strip().lower().replace("-", "_")
    if written == "auto":
        return
    dtype = table.get(written)
    if dtype is None:
        yield (
            f"{field} is not compared with the provider's {expected.value}: {flag} "
            f"{_text(source)} ({_at(source)}) does not say which dtype that is"
        )
    elif dtype is not expected:
        yield _found(field, expected.value, dtype.value, source, f"{flag} {_text(source)}")


def weights_dtype(provider: ProviderProfile, fields: Fields) -> Found:
    """``--quantization`` against the provider's quantisation (or, when it names none,
    the weight dtype the method implies); ``--dtype`` against unquantised weights."""
    model = provider.model
    quantization = fields.get(identity.QUANTIZATION)
    if quantization is not None:
        written = _text(quantization).strip().lower().replace("-", "_")
        if model.quantization:
            named = model.quantization.strip().lower().replace("-", "_")
            if named != written:
                read = f"--quantization {_text(quantization)}"
                yield _found("model.quantization", model.quantization, written, quantization, read)
            return
        yield from _dtype(
            QUANTIZATION_DTYPES,
            quantization,
            "--quantization",
            "model.weights_dtype",
            model.weights_dtype,
        )
        return
    if model.quantization or model.weights_dtype not in UNQUANTISED:
        yield (
            f"model.weights_dtype ({model.weights_dtype.value}"
            f"{', ' + model.quantization if model.quantization else ''}) is not compared: the "
            "manifests pass no --quantization, and vLLM takes a quantised checkpoint's "
            "method from its config"
        )
        return
    dtype = fields.get(identity.DTYPE)
    if dtype is not None:
        yield from _dtype(DTYPES, dtype, "--dtype", "model.weights_dtype", model.weights_dtype)


def kv_dtype(provider: ProviderProfile, fields: Fields) -> Found:
    """``--kv-cache-dtype`` against the provider's KV dtype; without it (or ``auto``) the
    cache is in the model's dtype, which a quantised KV cache in the provider is not."""
    source = fields.get(identity.KV_CACHE_DTYPE)
    expected = provider.model.kv_dtype
    if source is not None and _text(source).strip().lower() != "auto":
        yield from _dtype(KV_CACHE_DTYPES, source, "--kv-cache-dtype", "model.kv_dtype", expected)
    elif expected not in UNQUANTISED:
        yield (
            f"model.kv_dtype ({expected.value}) is not compared: the manifests pass no "
            "--kv-cache-dtype, so vLLM keeps the KV cache in the model's dtype unless the "
            "checkpoint's config says otherwise"
        )


def accelerator(provider: ProviderProfile, fields: Fields) -> Found:
    """The accelerator resource's vendor and the GPU model node labels name against the
    provider's accelerator family (``H100-SXM-80GB`` is H100) and its memory."""
    expected = provider.accelerator.name
    family = accelerator_family(expected)
    resource = fields.get(identity.RESOURCE)
    labels = {
        name.removeprefix(f"{identity.NODE_SELECTOR}."): source
        for name, source in sorted(fields.items())
        if name.startswith(f"{identity.NODE_SELECTOR}.")
    }
    if family is None:
        if resource is not None or labels:
            yield (
                f"accelerator.name is not compared: the provider's {expected} is not an "
                "accelerator family capgate knows (H100, H200, A100, L4, L40S, MI300X...)"
            )
        return
    if resource is not None:
        vendor = identity.RESOURCE_VENDORS.get(_text(resource))
        if vendor is None:
            yield (
                f"accelerator.name is not compared: {_text(resource)} ({_at(resource)}) is "
                "not an accelerator resource capgate knows"
            )
        elif vendor != family.vendor:
            manifests = identity.RESOURCE_KINDS[_text(resource)]
            yield _found("accelerator.name", expected, manifests, resource, _text(resource))
            return
    if resource is not None and not labels:
        yield (
            f"accelerator.name is compared by vendor only: the manifests request "
            f"{_text(resource)} ({_at(resource)}) but no nodeSelector or required node "
            f"affinity names the GPU model ({', '.join(identity.ACCELERATOR_LABELS[:4])})"
        )
    for key, source in labels.items():
        for value in _text(source).split(","):
            yield from _label(provider, family, key, value, source)


def _label(
    provider: ProviderProfile, family: identity.Family, key: str, value: str, source: StatedField
) -> Found:
    expected = provider.accelerator.name
    named = accelerator_family(value)
    read = f"{key}: {value}"
    if named is None:
        yield (
            f"accelerator.name is not compared with the provider's {expected}: {read} "
            f"({_at(source)}) is not an accelerator family capgate knows"
        )
        return
    if named != family:
        yield _found("accelerator.name", expected, named.name, source, read)
        return
    memory = memory_gb(value)
    stated = provider.accelerator.memory_gib
    if memory is not None and abs(memory - stated) > MEMORY_TOLERANCE * stated:
        yield _found("accelerator.name", expected, f"{named.name} {memory}GB", source, read)


MATCHERS: tuple[Callable[[ProviderProfile, Fields], Found], ...] = (
    model_name,
    weights_dtype,
    kv_dtype,
    runtime_name,
    runtime_version,
    accelerator,
)


def compare_provider(
    provider: ProviderProfile, fields: Fields
) -> tuple[list[ProviderDiscrepancy], list[str]]:
    """Every contradiction between what the manifests serve and ``provider``, and a note
    for each part that could not be compared. Stated fields from a client that sends
    none of what is served compare nothing, and say so."""
    served = {name: source for name, source in fields.items() if name.startswith("provider.")}
    if not served:
        return [], [
            "the provider (model, runtime, accelerator) is not compared: the client that "
            "read the manifests sent none of what they serve (a client older than this "
            "comparison)"
        ]
    found: list[ProviderDiscrepancy] = []
    notes: list[str] = []
    for matcher in MATCHERS:
        for result in matcher(provider, served):
            if isinstance(result, str):
                notes.append(result)
            else:
                found.append(result)
    return found, notes
