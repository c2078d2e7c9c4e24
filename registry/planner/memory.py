"""Memory fit of one replica, computed the way vLLM sizes its KV cache at startup.

vLLM V1 (``gpu_worker.determine_available_memory``): requested = total x
gpu_memory_utilization, where total is what CUDA reports for the device (79.19 GiB on an
"80 GB" H100, see ``catalog.exposed_memory_gib``); KV bytes = requested - (weights + torch
peak of a profiling pass + non-torch memory increase); blocks = floor(KV bytes / (page size x
layers)), page size = 2 x block_size x KV heads per GPU x head dim x dtype bytes.

The profiling pass is a forward pass over ``max_num_batched_tokens`` dummy tokens followed
by a dummy sampler run over ``max_num_seqs`` rows of full-vocabulary fp32 logits; its torch
peak is the larger of the two (the forward's hidden states stay alive during sampling). In
the versions modelled (0.10-0.11 and 0.19, checked against their logs) CUDA-graph memory is
captured after the KV cache is sized and is not subtracted: it comes out of the
1 - gpu_memory_utilization margin.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from registry.planner.catalog import ModelShape, exposed_memory_gib

GIB = float(1 << 30)


@dataclass(frozen=True)
class MemoryParams:
    """Runtime memory not covered by weights and KV, per GPU, for one vLLM release line.

    ``sampler_bytes_per_logit``: torch peak of the dummy sampler run per element of the
    ``max_num_seqs`` x vocabulary logits (fp32 logits, the sorted copy and its int64
    indices for top-k/top-p, probabilities, log-probabilities). ``non_torch_gib``: cuBLAS
    workspaces and the CUDA context growth during profiling; ``tp_extra_gib``: the NCCL and
    custom all-reduce buffers added when TP > 1. Each default names the log it was read
    from; ``benchmarks/planner/validation.py`` marks those cases as tuned.
    """

    sampler_bytes_per_logit: float = 38.4
    non_torch_gib: float = 0.13
    tp_extra_gib: float = 0.42
    activation_bytes_per_elem: float = 2.0
    source: str = (
        "vLLM V1 0.10-0.11 on H100: Llama-3.1-8B TP1 (peak activation 4.76 GiB at 1024 "
        "sequences, non-torch 0.13 GiB) and Llama-3.3-70B-FP8 TP2 (non-torch 0.55 GiB), "
        "llm-d/llm-d-benchmark@259334868c5075da530cc6c90b43fceb11b6e6a7 "
        "config_explorer/empirical-vllm-memory-results.md"
    )


# vLLM 0.19 samples with a smaller transient (about 15 bytes per logit) and its TP > 1
# runs hold ~2.1 GiB per GPU outside torch (all-reduce buffers; the log does not split them).
VLLM_0_19 = MemoryParams(
    sampler_bytes_per_logit=14.9,
    non_torch_gib=0.25,
    tp_extra_gib=1.82,
    source=(
        "vLLM 0.19.0 on H100: Llama-3.1-8B TP1 (peak activation 1.89 GiB, non-torch 0.25 "
        "GiB) and TP2 (non-torch 2.07 GiB), llm-d-incubation/llm-d-planner@"
        "fbd68515a903397a1b785a2189dc7512b0d55680 accuracy/results/v0.19.0/accuracy_report.md"
    ),
)


def params_for_runtime(version: str | None) -> MemoryParams:
    """The memory profile of a vLLM version: 0.19 and later, or the 0.10-0.11 default.

    Versions between 0.12 and 0.18 were not measured; they get the 0.10-0.11 figures, the
    larger sampler transient, so the planner errs towards a smaller KV cache.
    """
    if version is None:
        return MemoryParams()
    m = re.match(r"^(\d+)\.(\d+)", version)
    if m and (int(m.group(1)), int(m.group(2))) >= (0, 19):
        return VLLM_0_19
    return MemoryParams()


@dataclass(frozen=True)
class MemoryFit:
    tensor_parallel: int
    total_gib: float
    requested_gib: float
    weights_gib: float
    activation_peak_gib: float
    device_total_gib: float
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
    """Torch peak of vLLM's profiling pass on one GPU.

    Forward over ``tokens`` tokens: one layer's MLP holds the gate/up output (2 x
    intermediate / TP per token) and the activated half (intermediate / TP), routed tokens
    counted ``experts_per_token`` times, next to four hidden-sized buffers. Sampler: the
    ``max_num_seqs`` x vocabulary logits are gathered whole on every rank (not divided by
    TP) while the forward's hidden states stay alive. The peak is the larger of the two.
    """
    width = shape.intermediate_size * max(1, shape.experts_per_token) / tensor_parallel
    forward = tokens * (3 * width + 4 * shape.hidden_size) * params.activation_bytes_per_elem
    hidden = tokens * shape.hidden_size * params.activation_bytes_per_elem
    sampler = hidden + max_num_seqs * shape.vocab_size * params.sampler_bytes_per_logit
    return max(forward, sampler)


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
    accelerator: str | None = None,
    runtime_version: str | None = None,
) -> MemoryFit:
    """KV cache, blocks and fit of one replica per GPU.

    ``memory_gib`` is the device memory as the provider states it (a datasheet "80 GB" is
    mapped to the 79.19 GiB CUDA exposes); ``accelerator`` disambiguates parts of equal
    datasheet memory; ``runtime_version`` picks the vLLM memory profile unless ``params``
    is given.
    """
    p = params or params_for_runtime(runtime_version)
    device_gib, _ = exposed_memory_gib(memory_gib, accelerator)
    total = device_gib * GIB
    requested = total * gpu_memory_utilization
    weights = shape.weights_total_bytes / tensor_parallel
    act = activation_peak_bytes(
        shape,
        tokens=max_num_batched_tokens,
        max_num_seqs=max_num_seqs,
        tensor_parallel=tensor_parallel,
        params=p,
    )
    overhead = (p.non_torch_gib + (p.tp_extra_gib if tensor_parallel > 1 else 0.0)) * GIB
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
            f"does not fit: {requested / GIB:.1f} GiB usable per GPU ({device_gib:g} GiB "
            f"exposed x {gpu_memory_utilization:g}) but weights/TP need {weights / GIB:.1f} GiB, "
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
            f"of {block_size} tokens ({tokens} tokens); {worst} requests at the p99 context; "
            f"CUDA graphs come on top, from the {1 - gpu_memory_utilization:.0%} left out"
        )
    return MemoryFit(
        tensor_parallel=tensor_parallel,
        total_gib=memory_gib,
        requested_gib=requested / GIB,
        weights_gib=weights / GIB,
        activation_peak_gib=act / GIB,
        device_total_gib=device_gib,
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
