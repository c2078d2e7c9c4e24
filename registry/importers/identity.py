"""What a result file says the test ran on, held against the provider it is imported for.

Load-test tools state the model they sent requests to (vLLM bench ``model_id``, AIPerf and
GenAI-Perf ``input_config``, GuideLLM's backend model) and sometimes the GPUs they watched
(AIPerf's DCGM telemetry). A file imported for a provider that serves another model, or runs
on another accelerator family, measured something else: it is refused naming both. Where the
file names the model in a form that cannot be compared (a served alias such as ``qwen3-4b``,
a local path), the import says so in a note and never refuses.

The rules (docs/importers.md, "The model, GPU and server version"):

- Models compare as Hugging Face repo ids (``org/name``), case-insensitively. A repo is one
  set of weights: ``-FP8``, ``-AWQ``, ``-Instruct`` and a base model are different repos,
  so different models, unless the provider's ``model.name`` names that very repo. A path
  inside a Hugging Face cache (``.../models--org--name/snapshots/...``) is read as its repo.
- A name without the ``org/name`` shape, or starting with ``/``, ``.`` or ``~``, is a served
  alias or a local path: not comparable (a note).
- Accelerators compare by family, as the manifests' check compares them (``H100`` in
  ``NVIDIA H100 80GB HBM3`` and in ``H100-SXM-80GB``; ``MI300X``; ``L40S``), so SXM and
  PCIe variants of one family agree. A test whose GPUs include none of the provider's
  family is refused; a mix that includes it, or a name of no known family, is a note.
- The serving runtime: another patch release is a note; another runtime or major.minor
  version is a note that the gate counts the evidence stale for plans on the provider (the
  rule in registry.staleness.freshness), not a refusal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from registry.errors import FieldProblem, InvalidInput
from registry.records.evidence import RuntimeInfo
from registry.records.provider import ProviderProfile
from registry.staleness.rules import minor_version


@dataclass(frozen=True)
class Stated:
    """A name the file states, and the key it was read from."""

    value: str
    basis: str


@dataclass(frozen=True)
class Identity:
    """What a result file says the test ran on: the model(s) requested, the tokenizer the
    tool counted tokens with, the GPUs its telemetry saw. Empty where the file is silent."""

    models: tuple[Stated, ...] = ()
    tokenizer: Stated | None = None
    accelerators: tuple[Stated, ...] = ()

    @property
    def model(self) -> str | None:
        """The model as stored in the record (``measured_model``): the names, joined."""
        return ", ".join(m.value for m in self.models) or None

    @property
    def accelerator_names(self) -> list[str]:
        """The distinct GPU names, in the order first seen (``measured_accelerators``)."""
        return list(dict.fromkeys(a.value for a in self.accelerators))


# --- reading ---------------------------------------------------------------------------------


def text(value: Any) -> str | None:
    """A non-empty string, stripped; None for anything else."""
    return value.strip() or None if isinstance(value, str) else None


def dig(doc: Any, *path: str) -> Any:
    """``doc[path[0]][path[1]]...``, None where any step is missing or not an object."""
    for key in path:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(key)
    return doc


def stated(doc: Any, *path: str, basis: str | None = None) -> Stated | None:
    """The text at ``path``, with the dotted path (or ``basis``) as where it came from."""
    value = text(dig(doc, *path))
    return None if value is None else Stated(value, basis or ".".join(path))


def names(values: Any, basis: str) -> tuple[Stated, ...]:
    """Model names from a list of strings or of ``{name: ...}`` objects (AIPerf's items)."""
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, list):
        return ()
    out: list[Stated] = []
    for value in values:
        name = text(value.get("name")) if isinstance(value, dict) else text(value)
        if name is not None and name.casefold() not in {s.value.casefold() for s in out}:
            out.append(Stated(name, basis))
    return tuple(out)


def first(*candidates: Stated | None) -> Stated | None:
    return next((c for c in candidates if c is not None), None)


def identity_notes(found: Identity) -> list[str]:
    """The record's notes on what the file says it ran on (with the keys read)."""
    notes: list[str] = []
    if len(found.models) == 1:
        model = found.models[0]
        notes.append(f"model {model.value}, from the file ({model.basis})")
    elif found.models:
        shown = ", ".join(m.value for m in found.models)
        notes.append(
            f"the test sent requests to {len(found.models)} models: {shown}, from the file "
            f"({found.models[0].basis})"
        )
    tokenizer = found.tokenizer
    if tokenizer is not None and tokenizer.value.casefold() not in {
        m.value.casefold() for m in found.models
    }:
        notes.append(f"tokenizer {tokenizer.value}, from the file ({tokenizer.basis})")
    if found.accelerators:
        gpus = [a.value for a in found.accelerators]
        shown = ", ".join(
            f"{n} x{gpus.count(n)}" if gpus.count(n) > 1 else n for n in dict.fromkeys(gpus)
        )
        notes.append(f"GPUs {shown}, from the file ({found.accelerators[0].basis})")
    return notes


# --- models ----------------------------------------------------------------------------------

# A Hugging Face repo id: org/name, letters, digits, '-', '_', '.' (huggingface_hub's rule).
_HF_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
# A Hugging Face cache directory: models--org--name (the hub forbids "--" inside ids).
_HF_CACHE = re.compile(r"(?:^|[/\\])models--([A-Za-z0-9][A-Za-z0-9._-]*?)--([A-Za-z0-9][^/\\]*)")


def hf_id(name: str) -> str | None:
    """The Hugging Face repo id ``name`` denotes; None for a served alias or a local path."""
    name = name.strip()
    cached = _HF_CACHE.search(name)
    if cached is not None:
        return f"{cached[1]}/{cached[2]}"
    if name.startswith(("/", ".", "~")) or not _HF_ID.fullmatch(name):
        return None
    return name


def _not_comparable(model: Stated, served: str, ref: str) -> str:
    if hf_id(served) is None:
        return (
            f"the provider's model.name {served!r} ({ref}) is not a Hugging Face id (org/name), "
            f"so the file's model {model.value} ({model.basis}) cannot be compared with it"
        )
    return (
        f"the file names the model {model.value!r} ({model.basis}), a served alias or local "
        f"path rather than a Hugging Face id (org/name): it cannot be compared with "
        f"{served}, which provider {ref} serves"
    )


def check_models(found: Identity, provider: ProviderProfile, *, ref: str, source: str) -> list[str]:
    """Refuse a file that measured another model than ``provider`` serves; notes where the
    file's name cannot be compared."""
    served = provider.model.name
    served_id = hf_id(served)
    notes: list[str] = []
    for model in found.models:
        if model.value.casefold() == served.casefold():
            continue
        measured_id = hf_id(model.value)
        if measured_id is None or served_id is None:
            notes.append(_not_comparable(model, served, ref))
            continue
        if measured_id.casefold() == served_id.casefold():
            notes.append(f"model {model.value} ({model.basis}) read as {measured_id}")
            continue
        message = (
            f"the file measured {model.value} ({model.basis}); provider {ref} serves {served}: "
            f"import it for a provider that serves {model.value} (--provider). A quantised, "
            "base or instruct variant is another model unless the provider's model.name names "
            "that repo"
        )
        raise InvalidInput(
            f"cannot import {source}: model: {message}",
            problems=[FieldProblem(loc="model", message=message)],
            source=source,
        )
    tokenizer = found.tokenizer
    if (
        notes
        and tokenizer is not None
        and tokenizer.value.casefold() not in {m.value.casefold() for m in found.models}
    ):
        notes.append(f"the tool counted tokens with {tokenizer.value} ({tokenizer.basis})")
    return notes


# --- accelerators ----------------------------------------------------------------------------


def check_accelerators(
    found: Identity, provider: ProviderProfile, *, ref: str, source: str
) -> list[str]:
    """Refuse GPUs none of which is of the provider's accelerator family; note the rest.

    Families are the manifests' (``registry.manifests.identity.accelerator_family``: H100 in
    ``NVIDIA H100 80GB HBM3`` as in ``H100-SXM-80GB``), so evidence and manifests agree."""
    from registry.manifests.identity import accelerator_family

    if not found.accelerators:
        return []
    served = provider.accelerator.name
    family = accelerator_family(served)
    gpus = found.accelerator_names
    basis = found.accelerators[0].basis
    families = {gpu: accelerator_family(gpu) for gpu in gpus}
    if family is None or any(f is None for f in families.values()):
        return [
            f"the file's GPUs ({', '.join(gpus)}; {basis}) and provider {ref}'s accelerator "
            f"{served} are not all of an accelerator family capgate knows: not compared"
        ]
    matching = [gpu for gpu, f in families.items() if f == family]
    if not matching:
        named = sorted({f.name for f in families.values() if f is not None})
        message = (
            f"the file's GPU telemetry names {', '.join(gpus)} ({basis}); provider {ref} runs "
            f"{served} ({family.name}, not {', '.join(named)}): import it for the provider "
            "whose accelerator it measured (--provider)"
        )
        raise InvalidInput(
            f"cannot import {source}: accelerator: {message}",
            problems=[FieldProblem(loc="accelerator", message=message)],
            source=source,
        )
    others = [gpu for gpu in gpus if gpu not in matching]
    if others:
        return [
            f"the file's GPU telemetry also names {', '.join(others)} ({basis}), not of "
            f"provider {ref}'s {family.name} family: the telemetry may cover GPUs that did not "
            "serve the test"
        ]
    return []


# --- the serving runtime ---------------------------------------------------------------------


def runtime_notes(runtime: RuntimeInfo | None, provider: ProviderProfile, *, ref: str) -> list[str]:
    """What the measured runtime means for evidence of ``provider`` (the gate's rule)."""
    if runtime is None:
        return []
    runs = provider.runtime
    there = f"provider {ref} runs {runs.name} {runs.version}"
    if runtime.name.casefold() != runs.name.casefold():
        difference = "another serving runtime"
    elif runtime.version == runs.version:
        return []
    elif minor_version(runtime.version) == minor_version(runs.version):
        return [
            f"measured {runtime.describe()}; {there}: another release of the same minor "
            "version, so the evidence stands for it (the gate compares major.minor)"
        ]
    elif runtime.version.split(".")[0] != runs.version.split(".")[0]:
        difference = "another major version"
    else:
        difference = "another minor version"
    return [
        f"measured {runtime.describe()}; {there} ({difference}): not representative of it, "
        f"so the gate counts this evidence stale for plans on {provider.name}"
    ]


def check(
    found: Identity,
    runtime: RuntimeInfo | None,
    provider: ProviderProfile,
    *,
    ref: str,
    source: str,
) -> list[str]:
    """Hold what the file says it ran on against the provider version ``ref``: raises
    ``InvalidInput`` (loc ``model`` or ``accelerator``) on a contradiction, returns notes."""
    return [
        *check_models(found, provider, ref=ref, source=source),
        *check_accelerators(found, provider, ref=ref, source=source),
        *runtime_notes(runtime, provider, ref=ref),
    ]
