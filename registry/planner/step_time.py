"""Step-time model of one engine step (one forward pass over the scheduled tokens).

A step runs every layer once for all the tokens it carries, whether they are prefill chunk
tokens or one token per decoding sequence, so its cost has three parts (plus a fixed
overhead and, under tensor parallelism, the all-reduces):

- linear layers, priced once per step for all tokens: the larger of their FLOPs
  (2 x non-embedding parameters per token, plus the LM head per sampled token) over
  MFU x peak and the bytes of the weights read over MBU x bandwidth (for a mixture of
  experts only the experts the batch routes to);
- attention, priced per request: a prefill chunk computes 4 x layers x heads x head dim
  FLOPs per (token, context token) pair (QK^T and PV) at the attention kernel's share of
  peak; a decoding sequence reads its KV cache at MBU x bandwidth;
- two all-reduces per layer (Megatron) of the step's activations, ring algorithm, over the
  interconnect.

vLLM's compilation fusions (``Fusions``, read from the provider's --compilation-config by
registry/planner/runtime_features.py) change two of these: a fused all-reduce's latency,
and the fp8 quantisation kernels they fold away leave the per-layer time (fusion_pricing),
each only where the accelerator card measures it.

So a decode sharing a step with a prefill chunk costs the step only its KV read and its
share of the GEMM rows, not a second pass over the weights. The achievable fractions come
per accelerator and dtype from kernel measurements (the accelerator cards, read by
registry/planner/efficiency.py), and are calibrated from load-test evidence when there is
some.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

from registry.planner.catalog import find_model
from registry.planner.efficiency import (
    card_activation_quant,
    card_allreduce_latency,
    card_fused_allreduce,
    kernel_efficiency,
)
from registry.planner.kv_layout import kv_bytes_per_token
from registry.planner.model_shape import ModelShape
from registry.planner.quant_pricing import Fusions, fusion_pricing
from registry.records.provider import AcceleratorSpec, DType, InterconnectKind

# Where the fixed costs come from; the fractions' sources depend on the accelerator
# (efficiency_sources). The report prints these beside the values.
VIDUR_CPU = (
    "microsoft/vidur@0633efae data/profiling/a100/cpu_overheads.csv (Llama-2-7B, TP1, "
    "batch 8 to 64, medians): schedule + prepare inputs + sampler take 1.35 ms at 8 "
    "sequences and 3.49 ms at 64, i.e. 1.04 ms + 0.038 ms per sequence; output processing "
    "left out (vLLM V1 detokenises in the API server process); host CPU, not GPU, bound"
)
EFFICIENCY_SOURCES = {
    "step_overhead_ms": VIDUR_CPU,
    "sequence_overhead_ms": VIDUR_CPU,
    "allreduce_latency_us": "assumed small-message ring all-reduce latency (NCCL-tests order)",
    "link_efficiency": "assumed share of the link's per-direction bandwidth a ring reaches",
    "tp_efficiency_decay": "Databricks: MBU falls as the TP degree grows (smaller chunks per GPU)",
}
ASYNC_SCHEDULING = (
    "vLLM's --async-scheduling (vllm-project/vllm#19970, 'Implement Async Scheduling': the "
    "scheduler runs one step ahead of the model, so scheduling and input preparation overlap "
    "the previous step on the GPU; vLLM 0.10.x runs it with the multiprocess executor, the "
    "workers apart from the scheduler): the step's CPU time (step_overhead_ms, "
    "sequence_overhead_ms) is hidden behind the GPU step; off by default up to vLLM 0.11 "
    "(SchedulerConfig.async_scheduling = False), on by default later (vllm-project/vllm#27614)"
)


@dataclass(frozen=True)
class ResolvedEfficiency:
    """The fractions a step model uses, after the accelerator's defaults are filled in."""

    mbu: float
    mfu: float
    attn_mfu: float
    layer_us: float
    table_key: str
    source: str
    shards_priced: bool = False


@dataclass(frozen=True)
class Efficiency:
    """Achievable fractions of peak and fixed costs; the calibration fits mbu and mfu.

    ``None`` takes the accelerator's and dtype's default from
    registry/planner/efficiency.py (kernel measurements, with their sources).
    """

    mbu: float | None = None
    mfu: float | None = None
    attn_mfu: float | None = None
    layer_overhead_us: float | None = None
    # CPU time per step (scheduling, input preparation, sampling) and per running sequence.
    step_overhead_ms: float = 1.04
    sequence_overhead_ms: float = 0.038
    # One all-reduce's fixed time: ``allreduce_latency_us`` if given, else the accelerator
    # card's measurement (``collectives``), else the default for its interconnect kind.
    allreduce_latency_us: float | None = None
    allreduce_latency_us_nvlink: float = 8.0
    allreduce_latency_us_pcie: float = 30.0
    link_efficiency: float = 0.7
    tp_efficiency_decay: float = 0.1
    # The engine schedules step N+1 while step N runs on the GPU (vLLM --async-scheduling):
    # the CPU time above is hidden as long as the GPU step is the longer (ASYNC_SCHEDULING).
    async_scheduling: bool = False
    # vLLM compilation fusions in force (the provider's --compilation-config): they take
    # the fused quantisation kernels out of the card's layer_us, and price each all-reduce
    # at the fused kernel's latency, where the card measures both (fusion_pricing).
    fusions: Fusions = Fusions()  # noqa: RUF009 (frozen: one shared instance is safe)
    # The checkpoint quantises the GEMMs' inputs with static scales (runtime_features.
    # static_fp8_activations): the card's scale computation leaves layer_us (quant_pricing).
    static_fp8_scales: bool = False

    def with_fractions(self, mbu: float, mfu: float) -> Efficiency:
        return replace(self, mbu=mbu, mfu=mfu)

    def resolve(self, accel: AcceleratorSpec, weight_bytes: float) -> ResolvedEfficiency:
        entry, key = kernel_efficiency(accel.name, weight_bytes)
        return ResolvedEfficiency(
            mbu=entry.mbu if self.mbu is None else self.mbu,
            mfu=entry.mfu if self.mfu is None else self.mfu,
            attn_mfu=entry.attn_mfu if self.attn_mfu is None else self.attn_mfu,
            layer_us=entry.layer_us if self.layer_overhead_us is None else self.layer_overhead_us,
            table_key=key,
            source=entry.source,
            # Only the card's own layer_us carries the per-GEMM fixed time; a given one may not.
            shards_priced=entry.shards_priced and self.layer_overhead_us is None,
        )


def allreduce_latency(efficiency: Efficiency, accel: AcceleratorSpec) -> tuple[float, str | None]:
    """One all-reduce's fixed latency (us) and where it comes from: given, else the
    accelerator card's measurement, else the interconnect's default (source None)."""
    if efficiency.allreduce_latency_us is not None:
        return efficiency.allreduce_latency_us, "given"
    card = card_allreduce_latency(accel.name)
    if card is not None:
        return card[0], f"accelerator card: {card[1]}"
    if accel.interconnect.kind is InterconnectKind.pcie:
        return efficiency.allreduce_latency_us_pcie, None
    return efficiency.allreduce_latency_us_nvlink, None


def efficiency_sources(
    efficiency: Efficiency, accel: AcceleratorSpec, weight_bytes: float
) -> dict[str, str]:
    """Where each default the step model uses comes from, for this accelerator and dtype."""
    res = efficiency.resolve(accel, weight_bytes)
    table = f"accelerator card [{res.table_key}]: {res.source}"
    out = {
        "mbu": table if efficiency.mbu is None else "given",
        "mfu": table if efficiency.mfu is None else "given",
        "attn_mfu": table if efficiency.attn_mfu is None else "given",
        "layer_overhead_us": table if efficiency.layer_overhead_us is None else "given",
    }
    out.update(EFFICIENCY_SOURCES)
    _, latency_source = allreduce_latency(efficiency, accel)
    if latency_source is not None:
        out["allreduce_latency_us"] = latency_source
    if res.shards_priced:
        out["tp_efficiency_decay"] = (
            f"not applied: the accelerator card [{res.table_key}] prices smaller shards "
            "with its fixed time per GEMM (layer_us)"
        )
    if efficiency.async_scheduling:
        out["step_overhead_ms"] = out["sequence_overhead_ms"] = ASYNC_SCHEDULING
    fused = card_fused_allreduce(accel.name) if efficiency.fusions.allreduce else None
    if fused is not None:
        out["fused_allreduce_us"] = f"accelerator card, at TP > 1: {fused[1]}"
    quant = card_activation_quant(accel.name, weight_bytes) if efficiency.fusions else None
    if quant is not None and efficiency.layer_overhead_us is None:
        out["fused_quant_us"] = f"accelerator card [{res.table_key}]: {quant.source}"
    return out


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
    All times are in seconds. ``max_num_seqs`` bounds the batch sizes at which async
    scheduling must hide the CPU's time behind the GPU's (vLLM's ``--max-num-seqs``).
    """

    def __init__(
        self,
        shape: ModelShape,
        accel: AcceleratorSpec,
        *,
        tensor_parallel: int,
        efficiency: Efficiency,
        max_num_seqs: int = 256,
    ) -> None:
        tp = tensor_parallel
        self.tensor_parallel = tp
        self.efficiency = efficiency
        res = efficiency.resolve(accel, shape.weight_bytes)
        self.resolved = res
        # Smaller shards per GPU stream and compute less efficiently (tp_efficiency_decay),
        # unless the card's layer_us already prices that: a fixed time per GEMM fitted over
        # GEMMs at shard shapes is paid in full on every GPU, which is the same loss.
        decayed = tp > 1 and not res.shards_priced
        decay = tp ** (-efficiency.tp_efficiency_decay) if decayed else 1.0
        bw = accel.memory_bandwidth_gb_s * 1e9 * res.mbu * decay
        flops = _flops_dtype(accel, shape.weight_bytes) * res.mfu * decay
        card = find_model(shape.name)
        tied = card.tied_embeddings if card is not None else False
        embed = float(shape.vocab_size * shape.hidden_size)
        # The input embedding is a gather (a few rows per step), not a weight read, unless
        # it is tied to the LM head, which every sampled token multiplies by.
        read_params = shape.total_params - (0.0 if tied else embed)
        weights = read_params * shape.weight_bytes / tp
        expert_bytes = shape.expert_params * shape.weight_bytes / tp
        self.dense_weight_time = (weights - expert_bytes) / bw
        self.expert_weight_time = expert_bytes / bw
        self.expert_touch = (
            shape.experts_per_token / shape.num_experts if shape.num_experts > 1 else 1.0
        )
        # Attention runs in 16-bit whatever the weights' dtype.
        attn_flops = _flops_dtype(accel, 2.0) * res.attn_mfu * decay
        # A decoding sequence reads its KV cache once per step. Latent attention decodes
        # with the up-projections absorbed ("forward_mqa" in vLLM's
        # vllm/model_executor/layers/attention/mla_attention.py: multi-query attention with
        # a kv_lora_rank + qk_rope_head_dim key and a kv_lora_rank value per query head over
        # the cached latent): 2 x heads/TP x (latent + rank) FLOPs per context token and
        # layer against one latent read, compute bound at many heads per GPU (128 at TP1),
        # so it costs the slower of the two.
        read = kv_bytes_per_token(shape, tp) / bw
        if shape.kv_lora_rank:
            heads = shape.attention_heads / tp
            latent_flops = 2.0 * heads * (shape.head_dim + shape.kv_lora_rank) * shape.layers
            read = max(read, latent_flops / attn_flops)
        self.kv_time_per_token = read
        # Every scheduled token runs the layers' GEMMs; only sampled tokens (one per decode)
        # run the LM head (vLLM computes logits for the last position of each sequence).
        body = max(shape.active_params - embed * (1.0 if tied else 2.0), 0.5 * shape.active_params)
        self.flop_time_per_token = 2.0 * body / tp / flops
        self.head_time_per_sample = 2.0 * embed / tp / flops
        # QK^T and PV: 2 x (query/key width + value width) FLOPs per head, layer and (token,
        # context token) pair: 4 x head_dim for grouped-query attention; latent attention
        # prefills as multi-head attention over the expanded keys and values (vLLM's MLA
        # prefill path), 2 x (qk_nope + qk_rope + v_head_dim) = 2 x 320 for DeepSeek-V3.
        d_attn = shape.attention_heads * (shape.attn_qk_dim + shape.attn_v_dim)
        self.attn_time_per_ctx_token = 2.0 * shape.layers * d_attn / tp / attn_flops
        # Sliding-window layers attend to (and read) at most their window of the context.
        self.window = shape.sliding_window if shape.sliding_layers else None
        self.local_share = shape.sliding_layers / shape.layers if self.window else 0.0
        self.fusion = fusion_pricing(efficiency, accel, shape, tp)
        if tp > 1:
            fused_us = self.fusion.allreduce_us
            latency = (
                fused_us if fused_us is not None else allreduce_latency(efficiency, accel)[0]
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

        # The CPU's share of a step (scheduling, input preparation, sampling launches) is
        # serial with the GPU's unless the engine schedules ahead; the per-layer kernels are
        # GPU time either way. Under async scheduling a step takes the longer of the two: the
        # CPU's time is a floor (``cpu_floor`` + ``cpu_floor_per_sequence`` x decodes), not
        # a term, and ``cpu_bound_at`` keeps the first batch size at which the floor is the
        # longer even with no context, for the recomputation to say.
        # The fused quantisation kernels leave the per-layer time (fusion_pricing).
        self.layer_time = max(
            0.0, (shape.layers * res.layer_us - self.fusion.removed_us_per_step) / 1e6
        )
        hidden = efficiency.async_scheduling
        step_cpu = efficiency.step_overhead_ms / 1e3
        sequence_cpu = efficiency.sequence_overhead_ms / 1e3
        self.overhead = (0.0 if hidden else step_cpu) + self.layer_time
        self.per_sequence = 0.0 if hidden else sequence_cpu
        self.cpu_floor = step_cpu if hidden else 0.0
        self.cpu_floor_per_sequence = sequence_cpu if hidden else 0.0
        self._max_num_seqs = max_num_seqs

    @cached_property
    def cpu_bound_at(self) -> tuple[int, float, float] | None:
        """Under async scheduling, the first batch size up to ``max_num_seqs`` whose decode
        step (no context: the GPU's least) is shorter on the GPU than the engine's CPU time,
        as (batch, CPU seconds, GPU seconds); None when the GPU's is the longer at every
        size, or without async scheduling. Worked out only when the recomputation says it
        (a step model is built per simulation)."""
        eff = self.efficiency
        if not eff.async_scheduling:
            return None
        max_num_seqs = self._max_num_seqs
        head = self.flop_time_per_token + self.head_time_per_sample
        for n in range(1, max(1, max_num_seqs) + 1):
            cpu = eff.step_overhead_ms / 1e3 + eff.sequence_overhead_ms / 1e3 * n
            weights = self.weight_time(n)
            gpu = (
                self.layer_time
                + self.comm_fixed
                + self.comm_per_token * n
                + (weights if weights > head * n else head * n)
            )
            if gpu < cpu:
                return n, cpu, gpu
        return None

    def kv_context(self, ctx: float) -> float:
        """The context a decoding sequence reads, as every layer's share of it: ``ctx``, or
        with sliding-window layers their share of min(ctx, window)."""
        w = self.window
        if w is None:
            return ctx
        return ctx * (1.0 - self.local_share) + min(ctx, float(w)) * self.local_share

    def prefill_pairs(self, start: float, chunk: float) -> float:
        """(token, context token) pairs a prefill chunk of ``chunk`` tokens from ``start``
        attends to (``step``'s ``prefill_ctx``), local layers at most to their window."""
        full = chunk * (start + chunk / 2.0)
        w = self.window
        if w is None:
            return full
        end = start + chunk
        if end <= w:
            local = full
        elif start >= w:
            local = chunk * float(w)
        else:
            local = (w - start) * (start + w) / 2.0 + (end - w) * w
        return full * (1.0 - self.local_share) + local * self.local_share

    def weight_time(self, tokens: int) -> float:
        """Time to read the weights a step touches: all dense weights, and for a mixture of
        experts the share of experts that at least one of ``tokens`` tokens routes to."""
        if self.expert_weight_time == 0.0:
            return self.dense_weight_time
        touched = 1.0 - (1.0 - self.expert_touch) ** max(1, tokens)
        return self.dense_weight_time + self.expert_weight_time * touched

    def linear_time(self, tokens: int, samples: int) -> float:
        """The linear layers once for ``tokens`` tokens, ``samples`` of them through the LM
        head: compute bound or weight-read bound, whichever is slower."""
        comp = self.flop_time_per_token * tokens + self.head_time_per_sample * samples
        mem = self.weight_time(tokens)
        return comp if comp > mem else mem

    def step(
        self, prefill_tokens: int, prefill_ctx: float, decodes: int, decode_ctx: float
    ) -> float:
        """One step: ``prefill_ctx`` is the sum over prefill tokens of the context each
        attends to; ``decode_ctx`` the KV tokens the decoding sequences read."""
        tokens = prefill_tokens + decodes
        # linear_time(tokens, decodes) written out (the simulator prices every mixed step
        # here; calls are dear in CPython), with the same operations in the same order.
        comp = self.flop_time_per_token * tokens + self.head_time_per_sample * decodes
        mem = self.dense_weight_time if self.expert_weight_time == 0.0 else self.weight_time(tokens)
        gpu = (
            self.overhead
            + self.per_sequence * decodes
            + (comp if comp > mem else mem)
            + self.attn_time_per_ctx_token * prefill_ctx
            + self.kv_time_per_token * decode_ctx
            + self.comm_fixed
            + self.comm_per_token * tokens
        )
        floor = self.cpu_floor
        if floor:  # async scheduling: the longer of the CPU's and the GPU's time
            floor += self.cpu_floor_per_sequence * decodes
            if floor > gpu:
                return floor
        return gpu

    def decode_lines(self, decodes: int, ctx: float) -> tuple[float, float, float, float, float]:
        """A decode-only stretch as ``c + max(a1 + b1 i, a2 + b2 i)`` for step i = 0, 1, ...

        Between events the batch is fixed and each step adds ``decodes`` KV tokens, so the
        step time grows linearly (the KV read); the simulator sums and inverts this in
        closed form. Line 1 is weight-read bound, line 2 compute bound.
        """
        c = (
            self.overhead
            + self.per_sequence * decodes
            + self.comm_fixed
            + self.comm_per_token * decodes
        )
        kv = self.kv_time_per_token
        a1 = self.weight_time(decodes) + kv * ctx
        a2 = (self.flop_time_per_token + self.head_time_per_sample) * decodes + kv * ctx
        b = kv * decodes
        return c, a1, b, a2, b

    def decode_terms(self, decodes: int) -> tuple[float, float, float]:
        """``decode_lines`` folded for the simulator's inner loop: ``(c, base, b)`` such
        that ``max(a1, a2) == base + kv_time_per_token * ctx`` and ``b1 == b2 == b`` for
        every ``ctx``, bit for bit.

        Both lines add the same ``kv_time_per_token * ctx`` to their intercept and rounding
        is monotonic, so the line with the larger intercept is the larger one; what is left
        depends on the batch size only, which takes few values in a run (callers cache it).
        """
        c, a1, b, a2, _ = self.decode_lines(decodes, 0.0)
        return c, (a1 if a1 >= a2 else a2), b


def _series(a: float, b: float, lo: int, hi: int) -> float:
    """Sum of a + b i for i in [lo, hi)."""
    n = hi - lo
    if n <= 0:
        return 0.0
    return a * n + b * (lo + hi - 1) * n / 2.0


def lines_sum(c: float, a1: float, b1: float, a2: float, b2: float, k: int) -> float:
    """Sum over i in [0, k) of c + max(a1 + b1 i, a2 + b2 i), exactly (piecewise).

    The scheduler (scheduler.py, schedule and cut_stretch) writes out the equal-slopes
    branch, the only one decode_lines produces, operation for operation: change both.
    """
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
    # Steps that take no time at all (a degenerate model): start from the end and correct.
    j = min(limit, int(elapsed / avg)) if avg > 0.0 else limit
    while j < limit and lines_sum(c, a1, b1, a2, b2, j + 1) <= elapsed:
        j += 1
    while j > 0 and lines_sum(c, a1, b1, a2, b2, j) > elapsed:
        j -= 1
    return j
