"""Model and accelerator catalogs: data, each card with the source of its numbers.

The cards are YAML files (registry/planner/cards/, and a team's own through
CAPGATE_CATALOG_PATH), read and validated by registry.planner.card_files; this module looks
them up and resolves a provider's model from its profile, config.json and card.

The provider profile is authoritative for the numbers it states; the catalog fills in what
a profile does not carry (MLP width, vocabulary, expert layout) so that FLOPs, activation
memory and mixture-of-experts weight reads can be estimated. A profile may also carry the
model's Hugging Face ``config.json`` (``model.hf_config``), which is read as is and wins
over the catalog for the model's shape.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from registry.planner import card_files
from registry.planner.card_files import (
    AcceleratorCardFile,
    CollectivesEntry,
    EfficiencyEntry,
    ModelCardFile,
)
from registry.records.provider import InterconnectKind


@dataclass(frozen=True)
class ModelCard:
    """A transformer's shape and parameter counts, with where they were read."""

    name: str
    aliases: tuple[str, ...]
    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    total_params_b: float
    active_params_b: float
    max_context_tokens: int
    num_experts: int = 1
    experts_per_token: int = 1
    tied_embeddings: bool = False
    source: str = ""


@dataclass(frozen=True)
class AcceleratorCard:
    """Spec-sheet figures of one accelerator (dense, not sparse), with their source."""

    name: str
    aliases: tuple[str, ...]
    memory_gib: float
    memory_bandwidth_gb_s: float
    dense_tflops: Mapping[str, float]
    interconnect: InterconnectKind
    interconnect_gb_s: float
    source: str
    verify: bool = False
    # What CUDA reports as the device total (torch.cuda.mem_get_info()[1]), the figure vLLM
    # multiplies by gpu_memory_utilization; None when no public start-up log was found.
    exposed_memory_gib: float | None = None
    exposed_source: str = ""
    family: str = ""
    # Kernel efficiencies per weight dtype ("bf16", "fp8"), each with its measurements.
    efficiency: Mapping[str, EfficiencyEntry] = field(default_factory=dict)
    # The tensor-parallel all-reduce cost measured on the part (None: the interconnect's default).
    collectives: CollectivesEntry | None = None


def _model(card: ModelCardFile) -> ModelCard:
    fields = card.model_dump(exclude={"kind"})
    return ModelCard(**{**fields, "aliases": tuple(card.aliases)})


def _accelerator(card: AcceleratorCardFile) -> AcceleratorCard:
    fields = card.model_dump(exclude={"kind", "efficiency", "family", "collectives"})
    # Read-only views: one card object is shared by every lookup of a catalog (_catalog).
    tflops = MappingProxyType({str(dtype): value for dtype, value in card.dense_tflops.items()})
    return AcceleratorCard(
        **{**fields, "aliases": tuple(card.aliases), "dense_tflops": tflops},
        family=card.family or card.name,
        efficiency=MappingProxyType({str(d): entry for d, entry in card.efficiency.items()}),
        collectives=card.collectives,
    )


@dataclass(frozen=True)
class _Built:
    """The cards of one reading of the catalog, as the planner's dataclasses."""

    loaded: tuple[card_files.LoadedCard, ...]
    models: tuple[ModelCard, ...]
    accelerators: tuple[AcceleratorCard, ...]


_built: _Built | None = None


def _catalog() -> _Built:
    """The dataclasses of the catalog in force, built once per reading of it.

    A recomputation looks cards up dozens of times (every step model, memory fit and
    efficiency default); rebuilding them from the validated card files on each lookup cost
    a pydantic dump per card per call. card_files.current() reads the files once per value
    of CAPGATE_CATALOG_PATH and returns the same tuple for it, so the dataclasses are kept
    while that tuple is the one in force: another value of the variable is another tuple,
    and its cards are built afresh.
    """
    global _built
    loaded = card_files.current()
    built = _built
    if built is None or built.loaded is not loaded:
        built = _Built(
            loaded=loaded,
            models=tuple(_model(e.card) for e in loaded if isinstance(e.card, ModelCardFile)),
            accelerators=tuple(
                _accelerator(e.card) for e in loaded if isinstance(e.card, AcceleratorCardFile)
            ),
        )
        _built = built
    return built


def models() -> tuple[ModelCard, ...]:
    """The model cards in force (registry.planner.card_files: shipped, then the user's)."""
    return _catalog().models


def accelerators() -> tuple[AcceleratorCard, ...]:
    """The accelerator cards in force."""
    return _catalog().accelerators


def _key(name: str) -> str:
    return name.lower().rsplit("/", 1)[-1].replace("_", "-")


def find_model(name: str) -> ModelCard | None:
    """The catalog card whose name or alias matches ``name`` (case and org insensitive)."""
    key = _key(name)
    for card in models():
        if key == _key(card.name) or key in card.aliases:
            return card
    return None


def find_accelerator(name: str) -> AcceleratorCard | None:
    key = name.lower()
    for card in accelerators():
        if key == card.name.lower() or key in card.aliases:
            return card
    # Spec names vary ("H100-SXM-80GB", "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe"): a
    # card matches when every word of one of its aliases is a word of the name (so "l4"
    # is not found in "l40s") and the memory the name states, if any, is the card's; the
    # alias with the most words wins ("h100-pcie" over "h100").
    words = set(_words(key))
    best: tuple[int, AcceleratorCard] | None = None
    for card in accelerators():
        if card.memory_gib != _memory_hint(key, card.memory_gib):
            continue
        for alias in card.aliases:
            alias_words = _words(alias)
            if set(alias_words) <= words and (best is None or len(alias_words) > best[0]):
                best = (len(alias_words), card)
    return None if best is None else best[1]


def _words(text: str) -> list[str]:
    return [w for w in re.split(r"[^a-z0-9]+", text.lower()) if w]


def _memory_hint(key: str, default: float) -> float:
    for token in key.replace("-", " ").split():
        if token.endswith("gb") and token[:-2].isdigit():
            return float(token[:-2])
    return default


# An "80 GB" HBM part exposes 79.19 GiB to CUDA (H100; A100-80GB 79.15): ECC and the driver
# keep the rest. Parts without a measured figure get the same ratio, which GDDR parts with
# ECC enabled (L4, L40S) may still undershoot.
_EXPOSED_RATIO = 79.19 / 80.0


def exposed_memory_gib(memory_gib: float, name: str | None = None) -> tuple[float, str]:
    """The memory CUDA reports for a device stated as ``memory_gib``, and where it comes from.

    vLLM multiplies ``torch.cuda.mem_get_info()`` total, not the datasheet figure, by
    ``gpu_memory_utilization``. A stated figure that equals a catalog card's datasheet memory
    is read as that card's nominal size; any other figure is taken as already measured.
    """
    cards = [c for c in accelerators() if c.memory_gib == memory_gib]
    if name is not None:
        named = find_accelerator(name)
        if named is not None and named.memory_gib == memory_gib:
            cards = [named]
    if not cards:
        return memory_gib, f"{memory_gib:g} GiB as stated (not a catalog datasheet figure)"
    measured = [c for c in cards if c.exposed_memory_gib is not None]
    if measured:
        card = min(measured, key=lambda c: c.exposed_memory_gib or 0.0)
        assert card.exposed_memory_gib is not None
        return card.exposed_memory_gib, f"{card.name}: {card.exposed_source}"
    return (
        round(memory_gib * _EXPOSED_RATIO, 2),
        f"{memory_gib:g} GiB datasheet x {_EXPOSED_RATIO:.4f} (the H100 ratio; no public "
        "start-up log found for this device)",
    )
