"""The model and accelerator catalogs as data: one YAML file per card, with its source.

The cards capgate ships live in ``registry/planner/cards/{models,accelerators}/``. A team
adds a GPU or a model without code by writing a card file in a folder named by
``CAPGATE_CATALOG_PATH`` (folders separated like PATH; each read with its ``models/`` and
``accelerators/`` subfolders, or flat). A card must state where its numbers come from
(``source``), and may add names but never replace a shipped card or alias: a plan's
recomputation would otherwise change with whoever's folder the planner ran beside.

Every file is read with the registry's strict YAML rules and validated by the schema below,
so ``capgate catalog validate`` reports each problem with its field, as record files do.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from registry.errors import FieldProblem, InvalidInput
from registry.records.documents import load_document, problems_from
from registry.records.provider import DType, InterconnectKind

SHIPPED = Path(__file__).with_name("cards")
PATH_VARIABLE = "CAPGATE_CATALOG_PATH"
KINDS = ("model", "accelerator")

Name = Annotated[str, StringConstraints(min_length=1, max_length=200, strip_whitespace=True)]
Alias = Annotated[
    str, StringConstraints(min_length=1, max_length=200, pattern=r"^[a-z0-9][a-z0-9._-]*$")
]
Source = Annotated[str, StringConstraints(min_length=10, max_length=2000)]
Positive = Annotated[float, Field(gt=0)]
Share = Annotated[float, Field(gt=0, le=1)]
Count = Annotated[int, Field(ge=1)]
EfficiencyDType = Literal["bf16", "fp8"]


class _Card(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Name = Field(description="The card's name: a Hugging Face id, or a GPU's part name.")
    aliases: tuple[Alias, ...] = Field(
        default=(), description="Other names it is found by, lower case (`h100`, `llama-3.1-8b`)."
    )
    source: Source = Field(description="Where the numbers come from: a datasheet, a config.json.")


class ModelCardFile(_Card):
    """A transformer's shape and parameter counts."""

    kind: Literal["model"]
    layers: Count
    hidden_size: Count
    attention_heads: Count
    kv_heads: Count
    head_dim: Count
    intermediate_size: Count
    vocab_size: Count
    total_params_b: Positive = Field(description="Parameters in all, in billions.")
    active_params_b: Positive = Field(description="Parameters one token runs through (MoE).")
    max_context_tokens: Count
    num_experts: Count = 1
    experts_per_token: Count = 1
    tied_embeddings: bool = False

    @model_validator(mode="after")
    def _consistent(self) -> ModelCardFile:
        if self.attention_heads % self.kv_heads:
            raise ValueError(
                f"kv_heads ({self.kv_heads}) must divide attention_heads ({self.attention_heads})"
            )
        if self.active_params_b > self.total_params_b:
            raise ValueError("active_params_b cannot exceed total_params_b")
        if self.experts_per_token > self.num_experts:
            raise ValueError("experts_per_token cannot exceed num_experts")
        return self


class _Measured(BaseModel):
    """A card entry read from measurements or assumed, with where its numbers come from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    measured: bool = Field(description="Read from measurements (true) or assumed (false).")
    source: Source = Field(description="The measurements (or the assumption) and where.")


class ActivationQuantEntry(_Measured):
    """The static fp8 activation quantisation kernel a GEMM's input runs through (vLLM's
    ``scaled_fp8_quant`` with a per-tensor scale), timed at decode batches by input width.
    vLLM's compilation fusions fold it into the kernel before (all-reduce, RMSNorm, SiluMul,
    attention); the planner takes it out of ``layer_us`` only when ``in_layer_us`` says the
    GEMM timings ``layer_us`` was read from ran one per GEMM."""

    kernel_us: dict[Count, Positive] = Field(
        min_length=1,
        description="Kernel time in us by the activation's width (K), at 1-16 tokens.",
    )
    in_layer_us: bool = Field(
        description="True when layer_us holds one such kernel (or a slower dynamic one) per "
        "GEMM: the fp8 linear was timed with its input quantisation inside."
    )
    dynamic_scale_us: dict[Count, Positive] | None = Field(
        default=None,
        description="When the GEMMs layer_us comes from computed their input's scale per "
        "call (dynamic activation quantisation): what that computation adds to the static "
        "kernel, in us by the activation's width, at 1-16 tokens. A checkpoint with static "
        "scales does not pay it. Needs in_layer_us.",
    )

    @model_validator(mode="after")
    def _scales_inside(self) -> ActivationQuantEntry:
        if self.dynamic_scale_us is not None and not self.in_layer_us:
            raise ValueError(
                "dynamic_scale_us: says what layer_us holds, so in_layer_us must be true"
            )
        return self


class EfficiencyEntry(_Measured):
    """The achievable fractions of peak the step model prices one weight dtype with on an
    accelerator, and the kernel measurements they were read from.

    ``measured: false`` marks an assumption (carried over from a sibling part, or a
    datasheet ratio): the planner says so in its notes and widens the stated interval.
    """

    mfu: Share = Field(description="Linear layers' share of dense peak at prefill batches.")
    mbu: Share = Field(description="Share of peak memory bandwidth a decode step streams at.")
    attn_mfu: Share = Field(description="Prefill attention kernel's share of dense peak.")
    layer_us: Positive = Field(description="Fixed time per layer of the small kernels, in us.")
    shards_priced: bool = Field(
        default=False,
        description="True when layer_us carries each GEMM's fixed time, fitted over GEMMs "
        "at tensor-parallel shard shapes: a smaller shard per GPU then costs that fixed time "
        "again, and mbu and mfu are not lowered further with the TP degree.",
    )
    activation_quant: ActivationQuantEntry | None = Field(
        default=None,
        description="fp8 only: the activation quantisation kernel (and the per-call scale "
        "computation) layer_us holds, for pricing vLLM's compilation fusions and static "
        "scales; without it a fusion is on but saves nothing priced.",
    )


class FusedAllReduceEntry(_Measured):
    """The fused all-reduce + residual add + RMSNorm + fp8 quantisation kernel vLLM runs
    with ``pass_config.enable_fi_allreduce_fusion`` (FlashInfer's trtllm_allreduce_fusion)."""

    latency_us: Positive = Field(description="Fixed time of one fused all-reduce, in us.")


class CollectivesEntry(_Measured):
    """What a tensor-parallel all-reduce costs on the part, measured (collective libraries
    and their small-message latency differ by vendor: NCCL, RCCL), with its source."""

    allreduce_latency_us: Positive = Field(
        description="Fixed time of one all-reduce of a decode step's activations, in us."
    )
    fused_allreduce: FusedAllReduceEntry | None = Field(
        default=None,
        description="The fused all-reduce vLLM's FlashInfer all-reduce fusion runs; without "
        "it that fusion is priced as the plain all-reduce above.",
    )


class AcceleratorCardFile(_Card):
    """Spec-sheet figures of one accelerator: dense, not sparse."""

    kind: Literal["accelerator"]
    family: Name | None = Field(
        default=None,
        description="Parts whose kernels behave alike (H100 SXM, PCIe and NVL: `H100`); the "
        "validation error, and so the interval, is stated per family. Defaults to the name.",
    )
    memory_gib: Positive
    memory_bandwidth_gb_s: Positive
    dense_tflops: dict[DType, Positive] = Field(
        min_length=1, description="Dense tensor TFLOP/s per dtype (not the sparse figure)."
    )
    interconnect: InterconnectKind
    interconnect_gb_s: Positive
    verify: bool = Field(default=False, description="The source is not pinned: say so.")
    exposed_memory_gib: Positive | None = Field(
        default=None,
        description="What CUDA reports as the device total, which vLLM multiplies by "
        "gpu_memory_utilization; from a public start-up log.",
    )
    exposed_source: str = ""
    efficiency: dict[EfficiencyDType, EfficiencyEntry] = Field(
        default_factory=dict,
        description="Kernel efficiencies per weight dtype (`bf16` covers fp16); a dtype "
        "without one is priced with the planner's fallback, and says so.",
    )
    collectives: CollectivesEntry | None = Field(
        default=None,
        description="Tensor-parallel all-reduce cost on the part; without it the planner's "
        "default for the interconnect kind (registry/planner/step_time.py).",
    )

    @model_validator(mode="after")
    def _quant_only_fp8(self) -> AcceleratorCardFile:
        for dtype, entry in self.efficiency.items():
            if entry.activation_quant is not None and dtype != "fp8":
                raise ValueError(
                    f"efficiency.{dtype}.activation_quant: only fp8 GEMMs quantise their "
                    "input; move it under efficiency.fp8"
                )
        return self

    @model_validator(mode="after")
    def _exposed(self) -> AcceleratorCardFile:
        if self.exposed_memory_gib is not None:
            if self.exposed_memory_gib > self.memory_gib:
                raise ValueError("exposed_memory_gib cannot exceed memory_gib")
            if not self.exposed_source:
                raise ValueError("exposed_memory_gib needs exposed_source: the log it was read in")
        return self


CardFile = ModelCardFile | AcceleratorCardFile


@dataclass(frozen=True)
class LoadedCard:
    card: CardFile
    file: Path
    shipped: bool


def read_card(path: Path) -> CardFile:
    """One card file, validated; InvalidInput naming every problem of it."""
    document = load_document(path)
    kind = document.get("kind")
    if kind not in KINDS:
        raise InvalidInput(
            "not a catalog card",
            source=str(path),
            problems=[FieldProblem("kind", f"must be one of {', '.join(KINDS)}, not {kind!r}")],
        )
    schema: type[CardFile] = ModelCardFile if kind == "model" else AcceleratorCardFile
    try:
        return schema.model_validate(document)
    except ValidationError as exc:
        raise InvalidInput(
            f"not a valid {kind} card", source=str(path), problems=problems_from(exc)
        ) from None


def card_files(folder: Path) -> list[Path]:
    """The card files in a catalog folder: its models/ and accelerators/, or itself."""
    found: list[Path] = []
    for sub in (folder / "models", folder / "accelerators", folder):
        if sub.is_dir():
            found.extend(sorted(p for p in sub.iterdir() if p.suffix in (".yaml", ".yml")))
    return found


def user_folders(value: str | None = None) -> list[Path]:
    text = os.environ.get(PATH_VARIABLE, "") if value is None else value
    return [Path(part) for part in text.split(os.pathsep) if part]


def _keys(card: CardFile) -> Iterable[str]:
    yield card.name.lower()
    yield from card.aliases


def load(folders: Iterable[Path] = ()) -> list[LoadedCard]:
    """Every card, the shipped ones first; InvalidInput listing every bad file and every
    name or alias two cards claim."""
    loaded: list[LoadedCard] = []
    problems: list[FieldProblem] = []
    sources = [(SHIPPED, True)] + [(Path(f), False) for f in folders]
    for folder, shipped in sources:
        if not shipped and not folder.is_dir():
            problems.append(FieldProblem(PATH_VARIABLE, f"{folder}: not a folder"))
            continue
        for path in card_files(folder):
            try:
                loaded.append(LoadedCard(read_card(path), path, shipped))
            except InvalidInput as exc:
                problems.extend(
                    FieldProblem(f"{path}: {p.loc}" if p.loc else str(path), p.message)
                    for p in exc.problems or [FieldProblem("", exc.message)]
                )
    claimed: dict[tuple[str, str], Path] = {}
    for entry in loaded:
        for key in _keys(entry.card):
            first = claimed.setdefault((entry.card.kind, key), entry.file)
            if first != entry.file:
                problems.append(
                    FieldProblem(
                        str(entry.file),
                        f"{entry.card.kind} name {key!r} is already {first}'s: a card may "
                        "add names, not replace one",
                    )
                )
    if problems:
        raise InvalidInput("the catalog cannot be read", problems=problems)
    return loaded


@cache
def _cached(path_value: str) -> tuple[LoadedCard, ...]:
    return tuple(load(user_folders(path_value)))


def current() -> tuple[LoadedCard, ...]:
    """The catalog in force: the shipped cards and those of CAPGATE_CATALOG_PATH (read once
    per value of the variable)."""
    return _cached(os.environ.get(PATH_VARIABLE, ""))


def as_dict(card: CardFile) -> Mapping[str, Any]:
    return card.model_dump(mode="json", exclude_defaults=False)
