"""Memory fit of one replica, computed the way vLLM sizes its KV cache at startup.

vLLM V1 (``gpu_worker.determine_available_memory``): requested = total x
gpu_memory_utilization, where total is what CUDA reports for the device (79.19 GiB on an
"80 GB" H100, see ``catalog.exposed_memory_gib``); KV bytes = requested - (weights + torch
peak of a profiling pass + non-torch memory increase); blocks = floor(KV bytes / (page size x
layers)), page size = 2 x block_size x KV heads per GPU x head dim x dtype bytes.

The profiling pass (``gpu_model_runner.profile_run``) is a forward pass over
``max_num_batched_tokens`` dummy tokens (never ``max_model_len``: with chunked prefill, the V1
default, a long context is prefilled in chunks of that budget) followed by
``_dummy_sampler_run`` over ``max_num_seqs`` rows of full-vocabulary logits with top-k and
top-p set; its torch peak is the larger of the two (the forward's hidden states stay alive
during sampling) plus the cuBLAS workspace the first GEMM allocates. What the sampler holds
depends on which top-k/top-p implementation vLLM picks
(``vllm/v1/sample/ops/topk_topp_sampler.py``), read per release below; with it the torch
peaks logged on H100 at 1024 sequences (five models on the sort path, three on the Triton
path) come out within 0.01 GiB. In the versions modelled (0.10-0.11, 0.17 and 0.19, checked
against their logs) CUDA-graph memory is captured after the KV cache is sized and is not
subtracted: it comes out of the 1 - gpu_memory_utilization
margin.

The verdict is vLLM's start-up check (``kv_cache_utils.check_enough_kv_cache_memory``): no KV
memory at all, or less than one ``max_model_len`` request needs (ceil(max_model_len /
block_size) blocks), and the engine refuses to start. Its message then names the longest
``max_model_len`` the pool holds (``estimate_max_model_len``); the planner names that and the
smallest ``gpu_memory_utilization`` that holds the requested one, the two fields a plan can
change.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from registry.planner.catalog import accelerators, exposed_memory_gib, find_accelerator
from registry.planner.kv_layout import (
    hybrid_manager,
    kv_bytes_per_token,
    kv_groups,
    kv_layer_bytes_per_token,
    kv_pool,
    layout_text,
)
from registry.planner.model_shape import ModelShape
from registry.planner.runtime_version import release

GIB = float(1 << 30)

SamplerPath = Literal["sort", "flashinfer", "triton"]

# Bytes per logit that the dummy sampler run holds at its peak besides the model-dtype logits
# of ``compute_logits`` (which ``_dummy_sampler_run`` keeps alive while it samples), read in
# vLLM's sampler and the kernels it calls. Every path starts from ``Sampler.forward``'s fp32
# copy (``logits.to(torch.float32)``, 4 bytes); temperature is applied in place.
#
# - "sort", PyTorch-native ``apply_top_k_top_p``: ``logits.sort(dim=-1)`` returns fp32 values
#   (4) and int64 indices (8); for 128 rows or more PyTorch's SortStable.cu
#   (``segmented_sort_pairs``) also allocates an int64 iota of every row's indices (8) and
#   CUB's ``DeviceSegmentedRadixSort::SortPairs`` an alternate key and value buffer in its
#   temporary storage (4 + 8): 4 + 4 + 8 + 8 + 12 = 36. Below 128 rows
#   (``segmented_sort_pairs_by_full_sort``) two int2 (index, segment) arrays (8 + 8), a key
#   output (4) and CUB's alternate buffers (4 + 8) replace the iota: 48 (not covered by a log).
# - "flashinfer", ``flashinfer.sampling.top_k_top_p_sampling_from_logits`` (top-k first):
#   ``top_k_mask_logits`` writes a masked fp32 copy (4), ``torch.softmax`` the probabilities
#   (4): 4 + 4 + 4 = 12.
# - "triton", ``apply_top_k_top_p_triton`` (rows >= 8; fewer rows take the sort): masks the
#   logits in place, then ``forward_native`` computes fp32 probabilities (4) and
#   ``random_sample`` exponential noise of the same shape (4): 4 + 4 + 4 = 12, plus a cached
#   fp32 buffer of min(next power of 2 of min(SMs, rows), SMs) vocabulary-wide rows.
_SAMPLER_FP32_BYTES = {"sort": 36.0, "sort_small": 48.0, "flashinfer": 12.0, "triton": 12.0}
_SORT_SEGMENTED_MIN_ROWS = 128  # SortStable.cu: fewer segments sort by one full sort
_TRITON_MIN_ROWS = 8  # topk_topp_sampler.apply_top_k_top_p: smaller batches sort


@dataclass(frozen=True)
class DeviceFacts:
    """What the profiling pass allocates per device: the Triton sampler's buffer rows are
    capped at the SM count, and PyTorch's cuBLAS workspace (``CublasHandlePool.cpp``
    ``parseChosenWorkspaceSize``: 32 MiB on compute capability 9.x and later, ``:4096:2:16:8``
    = 8 MiB + 128 KiB before; 128 MiB hipBLAS workspace on gfx942) comes from the caching
    allocator at the profile run's first GEMM, so it counts in the torch peak."""

    sms: int
    gemm_workspace_bytes: int
    source: str


_WS_SM90 = 4096 * 8 * 1024
_WS_SM80 = 4096 * 1024 * 2 + 16 * 1024 * 8
DEVICES: Mapping[str, DeviceFacts] = {
    "A100-SXM-80GB": DeviceFacts(108, _WS_SM80, "NVIDIA A100 architecture whitepaper: 108 SMs"),
    "A100-SXM-40GB": DeviceFacts(108, _WS_SM80, "NVIDIA A100 architecture whitepaper: 108 SMs"),
    "H100-SXM-80GB": DeviceFacts(132, _WS_SM90, "NVIDIA H100 architecture whitepaper: 132 SMs"),
    "H200-SXM-141GB": DeviceFacts(132, _WS_SM90, "GH100 as in the H100 SXM: 132 SMs"),
    "B200-HGX-180GB": DeviceFacts(148, _WS_SM90, "NVIDIA B200: 148 SMs"),
    "L4-24GB": DeviceFacts(58, _WS_SM80, "NVIDIA L4 (AD104): 58 SMs"),
    "L40S-48GB": DeviceFacts(142, _WS_SM80, "NVIDIA L40S (AD102): 142 SMs"),
    "RTX-3090-24GB": DeviceFacts(82, _WS_SM80, "NVIDIA GA102 whitepaper, RTX 3090: 82 SMs"),
    "MI300X-192GB": DeviceFacts(304, 128 * 1024 * 1024, "AMD CDNA 3 whitepaper: 304 CUs"),
}
_DEFAULT_DEVICE = "H100-SXM-80GB"  # the device the release profiles were read on


def device_facts(accelerator: str | None, memory_gib: float | None = None) -> DeviceFacts:
    """The SM count and GEMM workspace of a catalog device: the named one, else the only
    catalog card of ``memory_gib``, else the H100."""
    card = find_accelerator(accelerator) if accelerator else None
    if card is None and memory_gib is not None:
        sized = [c for c in accelerators() if c.memory_gib == memory_gib]
        card = sized[0] if len(sized) == 1 else None
    return DEVICES.get(card.name if card else _DEFAULT_DEVICE, DEVICES[_DEFAULT_DEVICE])


@dataclass(frozen=True)
class MemoryParams:
    """Runtime memory not covered by weights and KV, per GPU, for one vLLM release line.

    ``sampler``: the top-k/top-p implementation the dummy sampler run takes (see
    ``_SAMPLER_FP32_BYTES``); which one a release picks is read in its
    ``topk_topp_sampler.py``. ``non_torch_gib``: cuBLAS handles and the CUDA context growth
    during profiling; ``tp_extra_gib``: the NCCL and custom all-reduce buffers added when
    TP > 1. These two are read from start-up logs, which each profile names;
    ``benchmarks/planner/validation.py`` marks those cases as tuned.
    """

    sampler: SamplerPath = "sort"
    non_torch_gib: float = 0.13
    tp_extra_gib: float = 0.42
    activation_bytes_per_elem: float = 2.0
    source: str = (
        "sampler: PyTorch sort, the V1 default from 0.11.1 (#26859 'Disable FlashInfer "
        "sampler by default') until 0.17.0 (#33538 Triton top-k/top-p), and in 0.10-0.11.0 "
        "whenever FlashInfer is not installed (an optional extra of the vllm==0.10.1.1 and "
        "0.11.0 wheels): vllm/v1/sample/ops/topk_topp_sampler.py and "
        "vllm/v1/worker/gpu_model_runner.py (_dummy_sampler_run) at v0.10.1.1 and v0.11.0, "
        "pytorch/pytorch aten/src/ATen/native/cuda/SortStable.cu; non-torch 0.13 GiB (TP1) and "
        "0.55 GiB (TP2) read from vLLM V1 logs on H100 (Llama-3.1-8B, Llama-3.3-70B-FP8), "
        "llm-d/llm-d-benchmark@259334868c5075da530cc6c90b43fceb11b6e6a7 "
        "config_explorer/empirical-vllm-memory-results.md"
    )

    def sampler_bytes_per_logit(self, rows: int) -> float:
        """Peak bytes per logit of the dummy sampler over ``rows`` sequences (model-dtype
        logits included; the Triton buffer excluded)."""
        path: str = self.sampler
        if path == "triton" and rows < _TRITON_MIN_ROWS:
            path = "sort"
        if path == "sort" and rows < _SORT_SEGMENTED_MIN_ROWS:
            path = "sort_small"
        return self.activation_bytes_per_elem + _SAMPLER_FP32_BYTES[path]


# 0.17-0.18: FlashInfer stays opt-in and the native path masks top-k/top-p with Triton
# (#33538); the determine_available_memory of 0.17.1 is that of 0.10-0.16, so the non-torch
# figures of the default profile are kept (0.17-0.18 start-up logs with a breakdown: none).
# 0.10-0.11.0 sample with FlashInfer wherever it is installed, as in the official
# vllm/vllm-openai image Kubernetes deployments run; the pip wheel without the extra takes
# the sort (MemoryParams()), as the two-node A100-40GB host of the validation logs did.
VLLM_0_10 = MemoryParams(
    sampler="flashinfer",
    source=(
        "sampler: FlashInfer top_k_top_p_sampling_from_logits, the V1 default in 0.10 to "
        "0.11.0 when flashinfer is importable (vllm/v1/sample/ops/topk_topp_sampler.py at "
        "v0.10.1.1 and v0.11.0; installed in the vllm/vllm-openai image); non-torch as the "
        "default profile"
    ),
)

VLLM_0_17 = MemoryParams(
    sampler="triton",
    source=(
        "sampler: Triton top-k/top-p (#33538, v0.17.0 release notes) with FlashInfer opt-in "
        "(VLLM_USE_FLASHINFER_SAMPLER=1): vllm/v1/sample/ops/topk_topp_sampler.py and "
        "topk_topp_triton.py (apply_top_k_top_p_triton) at v0.17.1; non-torch as the default "
        "profile (vllm/v1/worker/gpu_worker.py determine_available_memory unchanged at v0.17.1)"
    ),
)

# 0.19: the same sampler; its profiling also captures CUDA graphs to estimate their memory
# (#30515, applied only with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1), and its TP > 1 runs
# hold ~2.1 GiB per GPU outside torch (all-reduce buffers; the log does not split them).
VLLM_0_19 = MemoryParams(
    sampler="triton",
    non_torch_gib=0.25,
    tp_extra_gib=1.82,
    source=(
        "sampler: Triton top-k/top-p, FlashInfer opt-in: vllm/v1/sample/ops/"
        "topk_topp_sampler.py and topk_topp_triton.py at v0.19.0 (2a69949); non-torch read "
        "from vLLM 0.19.0 on H100: Llama-3.1-8B TP1 (torch peak 1.89 GiB, non-torch 0.25 "
        "GiB) and TP2 (non-torch 2.07 GiB), llm-d-incubation/llm-d-planner@"
        "fbd68515a903397a1b785a2189dc7512b0d55680 accuracy/results/v0.19.0/accuracy_report.md"
    ),
)


def params_for_runtime(version: str | None) -> MemoryParams:
    """The memory profile of a vLLM version, by the sampler its source picks by default.

    0.10 to 0.11.0: FlashInfer, as the official image samples (a host without it takes the
    sort: pass ``MemoryParams()``); 0.11.1 to 0.16 the PyTorch sort (#26859 turned FlashInfer
    off); 0.17-0.18 and 0.19 and later the Triton masking (releases after 0.19.0 turn
    FlashInfer back on, #40376: 14 bytes per logit as well, without the buffer). Older and
    unknown versions get the sort, the largest transient, so the planner errs towards a
    smaller KV cache.
    """
    found = release(version)
    if version is None or found is None:
        return MemoryParams()
    if found >= (0, 19):
        return VLLM_0_19
    if found >= (0, 17):
        return VLLM_0_17
    if found == (0, 10) or version.split("+")[0] in ("0.11.0", "0.11"):
        return VLLM_0_10
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
    # What would start: the longest max_model_len the KV pool holds (vLLM's
    # estimate_max_model_len, 0 without a pool) and the smallest gpu_memory_utilization, in
    # hundredths, that holds one max_model_len request (None above 1.0).
    longest_max_model_len: int
    utilization_for_max_model_len: float | None


def activation_peak_bytes(
    shape: ModelShape,
    *,
    tokens: int,
    max_num_seqs: int,
    tensor_parallel: int,
    params: MemoryParams,
    accelerator: str | None = None,
    memory_gib: float | None = None,
) -> float:
    """Torch peak of vLLM's profiling pass on one GPU.

    Forward over ``tokens`` tokens: one layer's MLP holds the gate/up output (2 x
    intermediate / TP per token) and the activated half (intermediate / TP), routed tokens
    counted ``experts_per_token`` times, next to four hidden-sized buffers. Sampler
    (``_dummy_sampler_run``): the forward's hidden states stay alive, with the
    ``max_num_seqs`` rows gathered from them and the random rows that replace them; the
    ``max_num_seqs`` x vocabulary logits are gathered whole on every rank (not divided by
    TP) and held as ``params.sampler_bytes_per_logit`` says, plus the Triton path's buffer.
    The peak is the larger of the two, plus the cuBLAS workspace of the device
    (``device_facts``: the H100 when neither names one), allocated at the first GEMM and kept.
    """
    a = params.activation_bytes_per_elem
    device = device_facts(accelerator, memory_gib)
    width = shape.intermediate_size * max(1, shape.experts_per_token) / tensor_parallel
    forward = tokens * (3 * width + 4 * shape.hidden_size) * a
    rows = max(1, max_num_seqs)
    hidden = (tokens + 2 * rows) * shape.hidden_size * a
    logits = rows * shape.vocab_size * params.sampler_bytes_per_logit(rows)
    buffer = 0.0
    if params.sampler == "triton" and rows >= _TRITON_MIN_ROWS:
        programs = min(device.sms, rows)
        buffer_rows = min(1 << (programs - 1).bit_length(), device.sms)
        buffer = buffer_rows * shape.vocab_size * 4.0
    sampler = hidden + logits + buffer
    return max(forward, sampler) + device.gemm_workspace_bytes


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
        accelerator=accelerator,
        memory_gib=memory_gib,
    )
    overhead = (p.non_torch_gib + (p.tp_extra_gib if tensor_parallel > 1 else 0.0)) * GIB
    kv_avail = requested - weights - act - overhead
    per_tok_gpu = kv_bytes_per_token(shape, tensor_parallel)
    hybrid = hybrid_manager(runtime_version)
    groups = kv_groups(shape, hybrid)
    blocks, tokens = kv_pool(
        shape, kv_avail, tensor_parallel=tensor_parallel, block_size=block_size, hybrid=hybrid
    )

    def concurrency(ctx: int) -> int:
        return blocks // max(1, groups.blocks_held(ctx, block_size))

    by_class = {name: concurrency(ctx) for name, ctx in p99_context_by_class.items()}
    worst = min(by_class.values()) if by_class else concurrency(max_model_len)
    # vLLM's start-up check: one max_model_len request, a sliding group holding its window
    # plus a step's batched tokens (check_enough_kv_cache_memory).
    needed_for_one = groups.blocks_held(max_model_len, block_size, max_num_batched_tokens)
    page = kv_layer_bytes_per_token(shape, tensor_parallel) * block_size * groups.group_size
    utilization = _utilization_for(needed_for_one * page, weights + act + overhead, total)
    if kv_avail <= 0:
        fits = False
        reason = (
            f"does not fit: {requested / GIB:.1f} GiB usable per GPU ({device_gib:g} GiB "
            f"exposed x {gpu_memory_utilization:g}) but weights/TP need {weights / GIB:.1f} GiB, "
            f"activations {act / GIB:.1f} GiB and runtime {overhead / GIB:.1f} GiB, leaving "
            f"{kv_avail / GIB:.1f} GiB for the KV cache; " + _remedy(0, max_model_len, utilization)
        )
    elif blocks < needed_for_one:
        fits = False
        reason = (
            f"does not fit: KV cache of {kv_avail / GIB:.1f} GiB holds {tokens} tokens, fewer "
            f"than one max_model_len request ({max_model_len} tokens); vLLM refuses to start; "
            + _remedy(tokens, max_model_len, utilization)
        )
    else:
        fits = True
        reason = (
            f"fits: weights {weights / GIB:.1f} GiB + activations {act / GIB:.1f} GiB + "
            f"runtime {overhead / GIB:.1f} GiB leave {kv_avail / GIB:.1f} GiB = {blocks} blocks "
            f"of {block_size} tokens ({tokens} tokens{layout_text(groups)}); {worst} requests at "
            "the p99 context; "
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
        longest_max_model_len=tokens,
        utilization_for_max_model_len=utilization,
    )


def _utilization_for(kv_needed: float, non_kv: float, total: float) -> float | None:
    """The smallest gpu_memory_utilization, in hundredths, whose requested memory leaves
    ``kv_needed`` bytes of KV after ``non_kv`` (weights, torch peak and non-torch memory, none
    of which depends on the utilization); None when even 1.0 does not."""
    hundredths = math.ceil((non_kv + kv_needed) / total * 100 - 1e-9)
    # The float rounding of total x u may land a hair under: step up until it holds.
    while hundredths <= 100 and total * hundredths / 100 - non_kv < kv_needed:
        hundredths += 1
    return hundredths / 100 if hundredths <= 100 else None


def _remedy(tokens: int, max_model_len: int, utilization: float | None) -> str:
    """The two plan fields that would let vLLM start, as its own start-up error names them."""
    shorter = f"max_model_len <= {tokens}" if tokens > 0 else ""
    if utilization is None:
        more = (
            "no gpu_memory_utilization holds one "
            f"{max_model_len}-token request on this GPU: raise tensor_parallel or pick an "
            "accelerator with more memory"
        )
        return f"it starts with {shorter}; {more}" if shorter else more
    raised = f"gpu_memory_utilization >= {utilization:.2f}"
    return f"it starts with {shorter} or {raised}" if shorter else f"it starts with {raised}"
