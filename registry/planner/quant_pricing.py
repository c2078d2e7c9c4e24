"""What vLLM's fp8 activation quantisation costs a step, beyond the card's per-layer time.

The B200 fp8 card's ``layer_us`` was read from GEMM timings that ran each fp8 linear with
its input quantisation inside (one kernel per GEMM, scales computed per call). Two things
a served replica may do differently are priced here, each only where the card measures it
(``efficiency.fp8.activation_quant``):

- **compilation fusions** (``Fusions``, read from the provider's --compilation-config by
  registry/planner/runtime_features.py): the quantisation kernels folded into the kernel
  before them leave the per-layer time, and a fused all-reduce has its own latency;
- **static activation scales** (the checkpoint's, e.g. ModelOpt fp8): the scale is a
  constant, so the part of a dynamic quantisation that computes it leaves every GEMM.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

from registry.planner.catalog import find_accelerator
from registry.planner.efficiency import card_activation_quant, card_fused_allreduce
from registry.planner.model_shape import ModelShape
from registry.records.provider import AcceleratorSpec


@dataclass(frozen=True)
class Fusions:
    """vLLM compilation passes in force that fold a static fp8 activation quantisation into
    the kernel before it (registry/planner/runtime_features.py decides which apply):

    - ``allreduce``: FlashInfer's all-reduce + residual add + RMSNorm + fp8 quantisation in
      one kernel (``pass_config.enable_fi_allreduce_fusion``, vllm-project/vllm#21069); only
      at TP > 1, where it replaces the all-reduce before the QKV and gate-up GEMMs;
    - ``attention``: the attention kernel writes fp8 (``enable_attn_fusion``): the
      O-projection's input quantisation goes;
    - ``norm_quant``: RMSNorm + quantisation and SiluMul + quantisation
      (``enable_fusion``): the QKV, gate-up and down inputs' quantisations go.
    """

    allreduce: bool = False
    attention: bool = False
    norm_quant: bool = False

    def __bool__(self) -> bool:
        return self.allreduce or self.attention or self.norm_quant


class PricedEfficiency(Protocol):
    """What pricing reads of registry.planner.step_time.Efficiency (which holds Fusions:
    named here, not imported, so the two modules do not import each other)."""

    @property
    def fusions(self) -> Fusions: ...
    @property
    def static_fp8_scales(self) -> bool: ...
    @property
    def layer_overhead_us(self) -> float | None: ...
    @property
    def allreduce_latency_us(self) -> float | None: ...


@dataclass(frozen=True)
class FusionPricing:
    """What the fusions in force change in one replica's step, for the recomputation to say:
    the quantisation kernels taken out of the per-layer time, the fused all-reduce's latency,
    and each fusion on but not priced, with the reason."""

    removed_us_per_step: float = 0.0
    quant_kernels_per_step: int = 0
    allreduce_us: float | None = None
    priced: tuple[str, ...] = ()
    unpriced: tuple[str, ...] = ()
    # The static-scale saving (included in removed_us_per_step), said apart from fusions.
    scale_us: float = 0.0
    scales: tuple[str, ...] = ()


# vLLM 0.10.2's attention fusion needs an attention backend that can write fp8 output
# (AttentionImpl.fused_output_quant_supported). On CUDA only two can: FlashInfer's, when
# TensorRT-LLM attention is available (supports_trtllm_attention in vllm/utils/flashinfer.py:
# compute capability 10.0 only) and the KV cache is fp8 (vllm/v1/attention/backends/
# flashinfer.py), and Triton's, which vLLM picks only when asked (VLLM_ATTENTION_BACKEND).
# vLLM's default backend on compute capability 10.0 is FlashInfer (vllm/platforms/cuda.py,
# "Prefer FlashInfer for Blackwell GPUs"); on Hopper and older it is FlashAttention, which
# cannot. Read in the vllm 0.10.2 wheel's source. So the fusion applies on these families.
ATTN_FUSION_FAMILIES = ("B200", "GB200")


def _quant_widths(fusions: Fusions, shape: ModelShape, tp: int) -> dict[str, list[int]]:
    """The GEMM inputs whose quantisation each fusion folds away in one step, as their
    widths (K), for a dense Llama-style layer: QKV and gate-up read the hidden state after an
    RMSNorm (after an all-reduce at TP > 1, except the first layer's QKV, which follows the
    embedding), O reads the attention output, down reads SiluMul's."""
    layers, hidden = shape.layers, shape.hidden_size
    out: dict[str, list[int]] = {}
    allreduce = fusions.allreduce and tp > 1
    if fusions.norm_quant:
        out["norm_quant"] = [hidden] * (2 * layers) + [shape.intermediate_size // tp] * layers
    elif allreduce:
        out["allreduce"] = [hidden] * (2 * layers - 1)
    if fusions.attention:
        out["attention"] = [shape.attention_heads * shape.attn_v_dim // tp] * layers
    return out


_FUSION_NAMES = {
    "allreduce": "FlashInfer all-reduce + RMSNorm + fp8 quantisation fusion "
    "(enable_fi_allreduce_fusion)",
    "attention": "attention + fp8 output quantisation fusion (enable_attn_fusion)",
    "norm_quant": "RMSNorm/SiluMul + fp8 quantisation fusion (enable_fusion)",
}


def fusion_pricing(
    efficiency: PricedEfficiency, accel: AcceleratorSpec, shape: ModelShape, tp: int
) -> FusionPricing:
    """What the fusions in force take out of a step on this accelerator: the quantisation
    kernels the card's layer_us holds (only when the card says it holds them) and, at
    TP > 1, the all-reduce priced at the card's fused kernel. A fusion whose saving no
    measurement prices is listed in ``unpriced``."""
    fusions = efficiency.fusions
    scale_us, scales = static_scale_saving(efficiency, accel, shape, tp)
    if not fusions:
        return FusionPricing(removed_us_per_step=scale_us, scale_us=scale_us, scales=scales)
    priced: list[str] = []
    unpriced: list[str] = []
    allreduce_us: float | None = None
    if fusions.allreduce and tp == 1:
        unpriced.append(f"{_FUSION_NAMES['allreduce']}: on, but TP1 has no all-reduce to fuse")
    elif fusions.allreduce:
        fused = card_fused_allreduce(accel.name)
        if efficiency.allreduce_latency_us is not None:
            unpriced.append(
                f"{_FUSION_NAMES['allreduce']}: the all-reduce latency is given "
                f"({efficiency.allreduce_latency_us:g} us) and prices it"
            )
        elif fused is None:
            unpriced.append(
                f"{_FUSION_NAMES['allreduce']}: the accelerator card measures no fused "
                "all-reduce (collectives.fused_allreduce): each all-reduce is priced as the "
                "plain one"
            )
        else:
            allreduce_us = fused[0]
            priced.append(f"{_FUSION_NAMES['allreduce']}: each all-reduce {fused[0]:g} us")
    card = find_accelerator(accel.name)
    family = card.family if card is not None else accel.name
    if fusions.attention and family not in ATTN_FUSION_FAMILIES:
        unpriced.append(
            f"{_FUSION_NAMES['attention']}: not applied on {family}: vLLM's default attention "
            "backend there cannot write fp8 output (FlashInfer with TensorRT-LLM attention "
            "on compute capability 10.0 only)"
        )
        fusions = replace(fusions, attention=False)
    widths = _quant_widths(fusions, shape, tp)

    def priced_as(removed: float, kernels: int) -> FusionPricing:
        return FusionPricing(
            removed_us_per_step=removed + scale_us,
            quant_kernels_per_step=kernels,
            allreduce_us=allreduce_us,
            priced=tuple(priced),
            unpriced=tuple(unpriced),
            scale_us=scale_us,
            scales=scales,
        )

    if not widths:
        return priced_as(0.0, 0)
    quant = card_activation_quant(accel.name, shape.weight_bytes)
    why_not = None
    if efficiency.layer_overhead_us is not None:
        why_not = "layer_us is given, not the card's, so it may hold no quantisation kernel"
    elif quant is None:
        why_not = (
            "the accelerator card's entry for this dtype states no quantisation kernel inside "
            "layer_us (efficiency.<dtype>.activation_quant)"
        )
    elif shape.num_experts > 1 or shape.kv_lora_rank:
        why_not = "the quantisations are priced for dense, grouped-query attention layers only"
    if why_not is not None or quant is None:
        unpriced.extend(
            f"{_FUSION_NAMES[k]}: no quantisation saving priced: {why_not}" for k in widths
        )
        return priced_as(0.0, 0)
    removed = 0.0
    kernels = 0
    for key, ws in widths.items():
        us = sum(quant.at(w) for w in ws)
        removed += us
        kernels += len(ws)
        per = sorted({w for w in ws})
        priced.append(
            f"{_FUSION_NAMES[key]}: {len(ws)} fp8 input quantisations per step leave layer_us "
            f"({us / len(ws):.2f} us each at width {', '.join(str(w) for w in per)})"
        )
    return priced_as(removed, kernels)


def _gemm_inputs(shape: ModelShape, tp: int) -> list[int]:
    """The widths (K) of one dense layer's four fp8 GEMM inputs on one GPU: QKV and
    gate-up read the hidden state, O the attention output, down SiluMul's."""
    hidden = shape.hidden_size
    return [
        hidden,
        shape.attention_heads * shape.attn_v_dim // tp,
        hidden,
        shape.intermediate_size // tp,
    ]


def static_scale_saving(
    efficiency: PricedEfficiency, accel: AcceleratorSpec, shape: ModelShape, tp: int
) -> tuple[float, tuple[str, ...]]:
    """(us per step, what the findings say): with static activation scales (the
    checkpoint's), the part of a dynamic quantisation that computes each GEMM input's
    scale leaves the card's layer_us, when the card says its GEMMs were timed with
    dynamic scales and measures that part (``activation_quant.dynamic_scale_us``)."""
    if not efficiency.static_fp8_scales:
        return 0.0, ()
    quant = card_activation_quant(accel.name, shape.weight_bytes)
    if quant is None or not quant.dynamic_scale_us:
        return 0.0, ()
    what = "static fp8 activation scales (the checkpoint's)"
    if efficiency.layer_overhead_us is not None:
        return 0.0, (f"{what}: not priced: layer_us is given, not the card's",)
    if shape.num_experts > 1 or shape.kv_lora_rank:
        return 0.0, (
            f"{what}: not priced: the scale computation is priced for dense, grouped-query "
            "attention layers only",
        )
    per_layer = sum(quant.scale_at(width) for width in _gemm_inputs(shape, tp))
    removed = shape.layers * per_layer
    return removed, (
        f"{what}: the card's layer_us was timed with scales computed per call; "
        f"{removed:.0f} us of scale computation per step leave it "
        f"({per_layer / 4:.2f} us a GEMM on average)",
    )
