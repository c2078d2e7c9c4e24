"""Default achievable fractions of peak per accelerator and dtype, from kernel measurements.

The step-time model prices a step with four numbers per accelerator and weight dtype:

- ``mfu``: the linear layers' share of dense peak FLOP/s at prefill-sized batches (512 to
  4096 tokens), counting the layer's small element-wise kernels (norms, rotary, activation,
  residual adds) in the time, since they run between the GEMMs;
- ``mbu``: the share of peak memory bandwidth at which a decode step streams the weights
  (GEMV at one token) and the KV cache;
- ``attn_mfu``: the prefill attention kernel's share of dense peak (causal, head dim 128);
- ``layer_us``: the fixed time per layer of those small kernels at one token, which a
  decode step pays whatever it reads.

The entries are data: each accelerator card (registry/planner/cards/accelerators/) carries
them per weight dtype under ``efficiency``, naming the measurements they were read from.
They are kernel measurements only, never fitted to the load tests in
benchmarks/planner/validation.py, so that those stay a held-out check; an entry that is an
assumption says ``measured: false``. An accelerator and dtype without an entry gets
``FALLBACK`` and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from registry.planner.catalog import find_accelerator


@dataclass(frozen=True)
class KernelEfficiency:
    """Achievable fractions for one accelerator family and weight dtype, with the source."""

    mfu: float
    mbu: float
    attn_mfu: float
    layer_us: float
    source: str
    measured: bool = True
    # layer_us holds each GEMM's fixed time, fitted over tensor-parallel shard shapes, so
    # the step model does not lower mbu and mfu again for smaller shards (TP decay).
    shards_priced: bool = False


FALLBACK = KernelEfficiency(
    mfu=0.50,
    mbu=0.60,
    attn_mfu=0.40,
    layer_us=20.0,
    source=(
        "fallback for an accelerator without kernel measurements here: MBU 0.60 from "
        "Databricks (2023, TensorRT-LLM, batch 1, 2x H100) and MFU 0.50, below the 76% "
        "large-batch prefill MFU of Pope et al. 2022"
    ),
    measured=False,
)


def dtype_key(weight_bytes: float) -> str:
    """The efficiency table's dtype for weights of this many bytes ("bf16" covers fp16)."""
    return "fp8" if weight_bytes <= 1.0 else "bf16"


def kernel_efficiency(accelerator: str, weight_bytes: float) -> tuple[KernelEfficiency, str]:
    """The card's entry for an accelerator name (catalog names and aliases) and the weights'
    bytes per parameter, and the key it was found under (``fallback`` when none)."""
    card = find_accelerator(accelerator)
    dtype = dtype_key(weight_bytes)
    entry = card.efficiency.get(dtype) if card is not None else None
    if card is None or entry is None:
        return FALLBACK, "fallback"
    return (
        KernelEfficiency(
            mfu=entry.mfu,
            mbu=entry.mbu,
            attn_mfu=entry.attn_mfu,
            layer_us=entry.layer_us,
            source=entry.source,
            measured=entry.measured,
            shards_priced=entry.shards_priced,
        ),
        f"{card.name} {dtype}",
    )


def card_allreduce_latency(accelerator: str) -> tuple[float, str] | None:
    """The all-reduce latency (us) the accelerator's card measured, with its source; None
    when the card has none (the step model then uses its interconnect's default)."""
    card = find_accelerator(accelerator)
    if card is None or card.collectives is None:
        return None
    return card.collectives.allreduce_latency_us, card.collectives.source


def card_fused_allreduce(accelerator: str) -> tuple[float, str] | None:
    """The fused all-reduce + RMSNorm + quantisation kernel's latency (us) the card
    measured (``collectives.fused_allreduce``), with its source; None when it has none."""
    card = find_accelerator(accelerator)
    if card is None or card.collectives is None or card.collectives.fused_allreduce is None:
        return None
    fused = card.collectives.fused_allreduce
    return fused.latency_us, fused.source


def _measured_at(table: tuple[tuple[int, float], ...], width: int) -> float:
    """The time at the largest measured width not above ``width`` (the smallest measured
    one below it): work on a wider activation is no faster, so this never prices more
    than a measurement shows."""
    chosen = table[0][1]
    for measured, us in table:
        if measured <= width:
            chosen = us
    return chosen


@dataclass(frozen=True)
class ActivationQuantTime:
    """One static fp8 activation quantisation kernel's time at decode batches, by the
    width (K) of the activation it quantises, as the card measured it; and, when the
    card's GEMMs computed their scales per call, what that computation adds."""

    kernel_us: tuple[tuple[int, float], ...]  # (width, us), widths ascending
    source: str
    dynamic_scale_us: tuple[tuple[int, float], ...] = ()  # (width, us), widths ascending

    def at(self, width: int) -> float:
        return _measured_at(self.kernel_us, width)

    def scale_at(self, width: int) -> float:
        return _measured_at(self.dynamic_scale_us, width) if self.dynamic_scale_us else 0.0


def card_activation_quant(accelerator: str, weight_bytes: float) -> ActivationQuantTime | None:
    """The quantisation kernel the card's ``layer_us`` holds one of per GEMM, for the
    weights' dtype; None when the entry states none (``efficiency.<dtype>.activation_quant``
    absent, or not inside ``layer_us``): then a fusion saves nothing the planner can price."""
    card = find_accelerator(accelerator)
    entry = card.efficiency.get(dtype_key(weight_bytes)) if card is not None else None
    quant = entry.activation_quant if entry is not None else None
    if quant is None or not quant.in_layer_us:
        return None
    scales = tuple(sorted((quant.dynamic_scale_us or {}).items()))
    return ActivationQuantTime(tuple(sorted(quant.kernel_us.items())), quant.source, scales)


@dataclass(frozen=True)
class FrontendTime:
    """The serving runtime's own time per request outside the engine's steps: the HTTP
    server, tokenisation, the hand-off to the engine process, detokenisation and streaming.

    A client sees it in TTFT and end-to-end latency; the engine's steps do not include it,
    so the step model (kernel measurements) cannot predict it.
    """

    ms: float
    source: str
    measured: bool = True


# Read from ONE load test (marked tuned in benchmarks/planner/validation.py); the other
# vLLM load tests there stay held out and check it.
FRONTEND: dict[str, FrontendTime] = {
    "vllm": FrontendTime(
        ms=23.5,
        source=(
            "tuned on kubernetes-sigs/inference-perf@7de5ef2 kubecon25 stage 0 (vLLM 0.11.0, "
            "Llama-3-8B-Instruct, 1x H100, 1 req/s): TTFT p50 31.03 ms measured less the "
            "engine's 7.5 ms predicted; held out: vLLM 0.8.3 and llm-d-benchmark load tests"
        ),
    ),
}
FRONTEND_UNKNOWN = FrontendTime(
    ms=0.0,
    source="no measurement for this runtime: its API server's own time is not modelled",
    measured=False,
)


def frontend_time(runtime: str) -> FrontendTime:
    return FRONTEND.get(runtime.strip().lower(), FRONTEND_UNKNOWN)
