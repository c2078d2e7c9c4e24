"""Memory fit of one replica, computed the way vLLM sizes its KV cache at startup.

vLLM (v1 ``gpu_worker.determine_available_memory``): requested = total x
gpu_memory_utilization; KV bytes = requested - (weights + peak activation of a profiling
pass with max_num_batched_tokens tokens + non-torch memory increase); blocks =
floor(KV bytes / (page size x layers)), page size = 2 x block_size x KV heads per GPU x
head dim x dtype bytes. CUDA-graph memory is captured afterwards and not subtracted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from registry.planner.catalog import ModelShape

GIB = float(1 << 30)


@dataclass(frozen=True)
class MemoryParams:
    """Runtime memory not covered by weights and KV, per GPU.

    The defaults are estimates, not measurements: vLLM logs a "non-torch memory" increase of
    a few hundred MiB (cuBLAS workspaces, NCCL buffers when TP > 1), and the profiling pass
    holds one batch of activations plus the sampler's fp32 logits.
    """

    non_torch_gib: float = 0.3
    nccl_gib_when_tp: float = 0.5
    activation_bytes_per_elem: float = 2.0


@dataclass(frozen=True)
class MemoryFit:
    tensor_parallel: int
    total_gib: float
    requested_gib: float
    weights_gib: float
    activation_peak_gib: float
    runtime_overhead_gib: float
    kv_cache_gib: float
    kv_bytes_per_token: float
    kv_bytes_per_token_per_gpu: float
    block_size: int
    kv_blocks: int
    kv_tokens: int
    max_concurrency_at_p99_context: int
    concurrency_by_class: Mapping[str, int]
    fits: bool
    reason: str


def kv_bytes_per_token(shape: ModelShape, tensor_parallel: int = 1) -> float:
    """KV bytes per token on one GPU: 2 x layers x KV heads per GPU x head dim x dtype bytes.

    vLLM shards KV heads across TP ranks and replicates them when TP exceeds the KV head
    count, hence ``max(1, kv_heads // tp)``.
    """
    heads = max(1, shape.kv_heads // tensor_parallel)
    return 2.0 * shape.layers * heads * shape.head_dim * shape.kv_bytes


def activation_peak_bytes(
    shape: ModelShape,
    *,
    tokens: int,
    max_num_seqs: int,
    tensor_parallel: int,
    params: MemoryParams,
) -> float:
    """Peak of vLLM's profiling pass: one layer's live tensors for ``tokens`` tokens plus logits.

    The MLP's gate and up projections (2 x intermediate / TP per token) and a handful of
    hidden-sized buffers dominate; the sampler's dummy run holds fp32 logits for
    ``max_num_seqs`` rows, twice (logits and probabilities).
    """
    per_token = 2 * shape.intermediate_size / tensor_parallel + 4 * shape.hidden_size
    mlp = tokens * per_token * params.activation_bytes_per_elem
    logits = 2 * max_num_seqs * shape.vocab_size * 4.0 / tensor_parallel
    return mlp + logits


def memory_fit(
    shape: ModelShape,
    *,
    memory_gib: float,
    tensor_parallel: int,
    gpu_memory_utilization: float,
    block_size: int,
    max_num_batched_tokens: int,
    max_num_seqs: int,
    max_model_len: int,
    p99_context_by_class: Mapping[str, int],
    params: MemoryParams | None = None,
) -> MemoryFit:
    p = params or MemoryParams()
    total = memory_gib * GIB
    requested = total * gpu_memory_utilization
    weights = shape.weights_total_bytes / tensor_parallel
    act = activation_peak_bytes(
        shape,
        tokens=max_num_batched_tokens,
        max_num_seqs=max_num_seqs,
        tensor_parallel=tensor_parallel,
        params=p,
    )
    overhead = (p.non_torch_gib + (p.nccl_gib_when_tp if tensor_parallel > 1 else 0.0)) * GIB
    kv_avail = requested - weights - act - overhead
    per_tok_gpu = kv_bytes_per_token(shape, tensor_parallel)
    page = per_tok_gpu * block_size  # bytes of one block across all layers
    blocks = max(0, math.floor(kv_avail / page)) if kv_avail > 0 else 0
    tokens = blocks * block_size

    def concurrency(ctx: int) -> int:
        need = max(1, math.ceil(ctx / block_size))
        return blocks // need

    by_class = {name: concurrency(ctx) for name, ctx in p99_context_by_class.items()}
    worst = min(by_class.values()) if by_class else concurrency(max_model_len)
    needed_for_one = math.ceil(max_model_len / block_size)
    if kv_avail <= 0:
        fits = False
        reason = (
            f"does not fit: {requested / GIB:.1f} GiB usable per GPU ({memory_gib:g} GiB x "
            f"{gpu_memory_utilization:g}) but weights/TP need {weights / GIB:.1f} GiB, "
            f"activations {act / GIB:.1f} GiB and runtime {overhead / GIB:.1f} GiB, leaving "
            f"{kv_avail / GIB:.1f} GiB for the KV cache"
        )
    elif blocks < needed_for_one:
        fits = False
        reason = (
            f"does not fit: KV cache of {kv_avail / GIB:.1f} GiB holds {tokens} tokens, fewer "
            f"than one max_model_len request ({max_model_len} tokens); vLLM refuses to start"
        )
    else:
        fits = True
        reason = (
            f"fits: weights {weights / GIB:.1f} GiB + activations {act / GIB:.1f} GiB + "
            f"runtime {overhead / GIB:.1f} GiB leave {kv_avail / GIB:.1f} GiB = {blocks} blocks "
            f"of {block_size} tokens ({tokens} tokens); {worst} requests at the p99 context"
        )
    return MemoryFit(
        tensor_parallel=tensor_parallel,
        total_gib=memory_gib,
        requested_gib=requested / GIB,
        weights_gib=weights / GIB,
        activation_peak_gib=act / GIB,
        runtime_overhead_gib=overhead / GIB,
        kv_cache_gib=max(0.0, kv_avail) / GIB,
        kv_bytes_per_token=kv_bytes_per_token(shape, 1),
        kv_bytes_per_token_per_gpu=per_tok_gpu,
        block_size=block_size,
        kv_blocks=blocks,
        kv_tokens=tokens,
        max_concurrency_at_p99_context=worst,
        concurrency_by_class=by_class,
        fits=fits,
        reason=reason,
    )
