"""Step-time model of one engine step (one forward pass over the scheduled tokens).

A step reads the weights once and the KV of every decoding sequence (memory bound at small
and moderate batch), and computes 2 x active params FLOPs per token plus attention
(compute bound for prefill chunks); its time is the larger of the two, plus a fixed
per-step overhead, plus two all-reduces per layer under tensor parallelism (Megatron),
whose cost follows the interconnect. Achievable fractions of peak bandwidth (MBU) and
compute (MFU) are parameters, calibrated from load-test evidence when there is some.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from registry.planner.catalog import ModelShape
from registry.planner.memory import kv_bytes_per_token
from registry.records.provider import AcceleratorSpec, DType, InterconnectKind

# Where each default comes from; the report prints these beside the values.
EFFICIENCY_SOURCES = {
    "mbu": "Databricks LLM inference blog (2023): 55-60% MBU at batch 1 (TensorRT-LLM)",
    "mfu": "assumed 0.5: below the 76% large-batch prefill MFU of Pope et al. 2022",
    "step_overhead_ms": "assumed: scheduler, sampling and launch time per step with CUDA graphs",
    "allreduce_latency_us": "assumed small-message ring all-reduce latency (NCCL-tests order)",
    "link_efficiency": "assumed share of the link's per-direction bandwidth a ring reaches",
    "tp_efficiency_decay": "Databricks: MBU falls as the TP degree grows (smaller chunks per GPU)",
}


@dataclass(frozen=True)
class Efficiency:
    """Achievable fractions of peak and fixed costs; the calibration fits mbu and mfu."""

    mbu: float = 0.6
    mfu: float = 0.5
    step_overhead_ms: float = 0.5
    allreduce_latency_us_nvlink: float = 8.0
    allreduce_latency_us_pcie: float = 30.0
    link_efficiency: float = 0.7
    tp_efficiency_decay: float = 0.1

    def with_fractions(self, mbu: float, mfu: float) -> Efficiency:
        return replace(self, mbu=mbu, mfu=mfu)


def _flops_dtype(accel: AcceleratorSpec, weights_dtype_bytes: float) -> float:
    """Dense peak FLOP/s for the weights' dtype (fp8 weights run fp8 GEMMs, else bf16)."""
    table = accel.dense_tflops
    if weights_dtype_bytes <= 1.0 and DType.fp8 in table:
        return table[DType.fp8] * 1e12
    for dtype in (DType.bf16, DType.fp16, DType.fp32):
        if dtype in table:
            return table[dtype] * 1e12
    return max(table.values()) * 1e12


class StepModel:
    """Per-step cost coefficients for one replica (model, accelerator, TP, efficiency).

    The coefficients are plain floats so the simulator's inner loop can read them cheaply.
    All times are in seconds.
    """

    def __init__(
        self,
        shape: ModelShape,
        accel: AcceleratorSpec,
        *,
        tensor_parallel: int,
        efficiency: Efficiency,
    ) -> None:
        tp = tensor_parallel
        self.tensor_parallel = tp
        self.efficiency = efficiency
        decay = tp ** (-efficiency.tp_efficiency_decay) if tp > 1 else 1.0
        bw = accel.memory_bandwidth_gb_s * 1e9 * efficiency.mbu * decay
        flops = _flops_dtype(accel, shape.weight_bytes) * efficiency.mfu * decay
        weights = shape.weights_total_bytes / tp
        expert_bytes = shape.expert_params * shape.weight_bytes / tp
        self.dense_weight_time = (weights - expert_bytes) / bw
        self.expert_weight_time = expert_bytes / bw
        self.expert_touch = (
            shape.experts_per_token / shape.num_experts if shape.num_experts > 1 else 1.0
        )
        self.kv_time_per_token = kv_bytes_per_token(shape, tp) / bw
        self.flop_time_per_token = 2.0 * shape.active_params / tp / flops
        # Kaplan et al. 2020: attention adds 2 x n_layer x n_ctx x d_attn FLOPs per token.
        d_attn = shape.attention_heads * shape.head_dim
        self.attn_time_per_ctx_token = 2.0 * shape.layers * d_attn / tp / flops
        self.overhead = efficiency.step_overhead_ms / 1e3
        if tp > 1:
            kind = accel.interconnect.kind
            latency = (
                efficiency.allreduce_latency_us_pcie
                if kind is InterconnectKind.pcie
                else efficiency.allreduce_latency_us_nvlink
            ) / 1e6
            # Spec sheets state bidirectional bandwidth; a ring sends one way per hop.
            link = accel.interconnect.bandwidth_gb_s * 1e9 / 2 * efficiency.link_efficiency
            ring = 2.0 * (tp - 1) / tp
            collectives = 2 * shape.layers
            self.comm_fixed = collectives * latency
            self.comm_per_token = collectives * ring * shape.hidden_size * 2.0 / link
        else:
            self.comm_fixed = 0.0
            self.comm_per_token = 0.0

    def weight_time(self, tokens: int) -> float:
        """Time to read the weights a step touches: all dense weights, and for a mixture of
        experts the share of experts that at least one of ``tokens`` tokens routes to."""
        if self.expert_weight_time == 0.0:
            return self.dense_weight_time
        touched = 1.0 - (1.0 - self.expert_touch) ** max(1, tokens)
        return self.dense_weight_time + self.expert_weight_time * touched

    def step(
        self, prefill_tokens: int, prefill_ctx: float, decodes: int, decode_ctx: float
    ) -> float:
        """One step: ``prefill_ctx`` is the sum over prefill tokens of the context each
        attends to; ``decode_ctx`` the KV tokens the decoding sequences read."""
        tokens = prefill_tokens + decodes
        mem = self.weight_time(tokens) + self.kv_time_per_token * decode_ctx
        comp = self.flop_time_per_token * tokens + self.attn_time_per_ctx_token * (
            prefill_ctx + decode_ctx
        )
        return (
            self.overhead
            + (mem if mem > comp else comp)
            + self.comm_fixed
            + (self.comm_per_token * tokens)
        )

    def decode_lines(self, decodes: int, ctx: float) -> tuple[float, float, float, float, float]:
        """A decode-only stretch as ``c + max(a1 + b1 i, a2 + b2 i)`` for step i = 0, 1, ...

        Between events the batch is fixed and each step adds ``decodes`` KV tokens, so the
        step time grows linearly; the simulator sums and inverts this in closed form.
        """
        c = self.overhead + self.comm_fixed + self.comm_per_token * decodes
        a1 = self.weight_time(decodes) + self.kv_time_per_token * ctx
        b1 = self.kv_time_per_token * decodes
        a2 = (self.flop_time_per_token + 0.0) * decodes + self.attn_time_per_ctx_token * ctx
        b2 = self.attn_time_per_ctx_token * decodes
        return c, a1, b1, a2, b2


def _series(a: float, b: float, lo: int, hi: int) -> float:
    """Sum of a + b i for i in [lo, hi)."""
    n = hi - lo
    if n <= 0:
        return 0.0
    return a * n + b * (lo + hi - 1) * n / 2.0


def lines_sum(c: float, a1: float, b1: float, a2: float, b2: float, k: int) -> float:
    """Sum over i in [0, k) of c + max(a1 + b1 i, a2 + b2 i), exactly (piecewise)."""
    if k <= 0:
        return 0.0
    total = c * k
    if b1 == b2:
        return total + _series(max(a1, a2), b1, 0, k)
    cross = (a2 - a1) / (b1 - b2)  # line 1 minus line 2 changes sign here
    if cross <= 0.0 or cross >= k:
        mid = (k - 1) / 2.0
        if a1 + b1 * mid >= a2 + b2 * mid:
            return total + _series(a1, b1, 0, k)
        return total + _series(a2, b2, 0, k)
    x = int(cross) + 1
    first_is_1 = a1 >= a2
    if first_is_1:
        return total + _series(a1, b1, 0, x) + _series(a2, b2, x, k)
    return total + _series(a2, b2, 0, x) + _series(a1, b1, x, k)


def steps_within(
    c: float, a1: float, b1: float, a2: float, b2: float, elapsed: float, limit: int
) -> int:
    """Largest j <= limit with lines_sum(..., j) <= elapsed (steps finished by ``elapsed``)."""
    if limit <= 0:
        return 0
    first = c + max(a1, a2)
    if elapsed < first:
        return 0
    avg = lines_sum(c, a1, b1, a2, b2, limit) / limit
    j = min(limit, int(elapsed / avg))
    while j < limit and lines_sum(c, a1, b1, a2, b2, j + 1) <= elapsed:
        j += 1
    while j > 0 and lines_sum(c, a1, b1, a2, b2, j) > elapsed:
        j -= 1
    return j
