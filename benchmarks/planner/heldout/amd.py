"""Held-out vLLM figures on AMD Instinct MI300X and MI325X: see
benchmarks/planner/heldout/__init__.py.

None of these runs set an efficiency: the MI300X and MI325X cards read theirs from kernel
microbenchmarks (BabelStream, hipBLASLt, MAMF, FlashAttention), never from a vLLM run.

Each case replays what the publication says it ran (benchmarks/planner/heldout/point.py):
``vllm bench latency`` (benchmark_latency.py) runs one batch of N identical prompts and
reports the batch's end-to-end time, replayed as N clients sending one request each;
``vllm bench throughput`` (benchmark_throughput.py) hands all its prompts to the engine at
once and reports tokens per second, replayed as that many clients. Both are offline (the
``LLM`` class), so no API server sits in the request path.
"""

from __future__ import annotations

from collections.abc import Callable

from benchmarks.planner.cases import Case
from benchmarks.planner.heldout.point import Bench, predict

TARGET = 0.15

AMD_PERF = (
    "AMD, ROCm performance results (https://www.amd.com/en/developer/resources/rocm-hub/"
    "dev-ai/performance-results.html, snapshot with the MI300X vLLM tables for Docker "
    "image rocm/vllm:rocm7.0.0_vllm_0.10.2_20251006), 8x MI300X (750 W), "
    "amd/Llama-3.1-{size}-Instruct-FP8-KV (FP8 weights and KV cache), TP8"
)
AMD_PERF_NOTE = (
    "offline; vLLM 0.10.2's LLM-class defaults on a >= 70 GiB device (16384 batched "
    "tokens) assumed, the table names prompts and max sequences"
)
ORACLE = (
    "Oracle Cloud Infrastructure blog, Serving Llama 3.1 405B model with AMD MI300X GPUs "
    "(https://blogs.oracle.com/cloud-infrastructure/serving-llama-31-405b-model-with-amd-"
    "mi300x-gpus), Latency measurements table: vLLM benchmark_latency.py, Llama 3.1 405B "
    "FP8, 8x MI300X (BM.GPU.MI300X.8), input 128, output 128"
)
ORACLE_NOTE = (
    "average batch latency; FP8 KV cache (AMD's FP8-KV checkpoint) assumed; vLLM V0 of "
    "2024 without chunked prefill schedules the whole batch's prompts in one step"
)


def _figure(bench: Bench, key: str, scale: float = 1.0) -> Callable[[], float]:
    return lambda: predict(bench)[key] * scale


def _offline(
    model: str, prompt: int, output: int, prompts: int, *, batched_tokens: int, max_seqs: int = 1024
) -> Bench:
    """``prompts`` requests handed to an FP8 TP8 engine at once, no API server."""
    return Bench(
        model=model,
        accelerator="MI300X-192GB",
        prompt=prompt,
        output=output,
        tp=8,
        clients=prompts,
        requests=prompts,
        weights="fp8",
        kv="fp8",
        max_num_seqs=max_seqs,
        max_num_batched_tokens=batched_tokens,
        api_server=False,
    )


def _amd_throughput(size: str, prompt: int, output: int, prompts: int, tok_s: float) -> Case:
    model = f"meta-llama/Llama-3.1-{size}"
    bench = _offline(model, prompt, output, prompts, batched_tokens=16384, max_seqs=prompts)
    return Case(
        name=f"MI300X vLLM 0.10.2 throughput, Llama-3.1-{size} FP8, TP8, {prompt}/{output}",
        kind="throughput",
        source=AMD_PERF.format(size=size) + f", Throughput Measurements ({prompts} prompts)",
        unit="output tok/s",
        published=tok_s,
        compute=_figure(bench, "output_tokens_per_s"),
        target=TARGET,
        note=AMD_PERF_NOTE + "; the table's tokens/s read as output tokens/s (at 128-token "
        "prompts total and output differ by 6 % or less)",
        family="MI300X",
    )


def _amd_latency(batch: int, seconds: float) -> Case:
    bench = _offline("meta-llama/Llama-3.1-70B", 128, 2048, batch, batched_tokens=16384)
    return Case(
        name=f"MI300X vLLM 0.10.2 latency, Llama-3.1-70B FP8, TP8, batch {batch}, 128/2048",
        kind="latency",
        source=AMD_PERF.format(size="70B") + ", Latency Measurements (vllm bench latency)",
        unit="s",
        published=seconds,
        compute=_figure(bench, "e2e_p50_ms", 1e-3),
        target=TARGET,
        note=AMD_PERF_NOTE,
        family="MI300X",
    )


def _oracle_latency(batch: int, seconds: float) -> Case:
    bench = _offline("meta-llama/Llama-3.1-405B", 128, 128, batch, batched_tokens=65536)
    return Case(
        name=f"MI300X vLLM latency, Llama-3.1-405B FP8, TP8, batch {batch}, 128/128",
        kind="latency",
        source=ORACLE,
        unit="s",
        published=seconds,
        compute=_figure(bench, "e2e_p50_ms", 1e-3),
        target=TARGET,
        note=ORACLE_NOTE,
        family="MI300X",
    )


CASES: tuple[Case, ...] = (
    _amd_throughput("70B", 128, 2048, 3200, 13212.5),
    _amd_throughput("70B", 128, 4096, 1500, 11312.8),
    _amd_throughput("405B", 128, 2048, 1500, 4201.7),
    _amd_throughput("405B", 128, 4096, 1500, 3176.3),
    _amd_latency(1, 15.882),
    _amd_latency(2, 17.934),
    _amd_latency(4, 18.487),
    _oracle_latency(1, 3.530),
    _oracle_latency(8, 3.974),
    _oracle_latency(32, 5.130),
    _oracle_latency(128, 10.340),
    _oracle_latency(256, 17.750),
)

_SMALL_M = (
    "optimistic at 32 and 128 sequences only (batch 1, 8 and 256 are within 15 % since the "
    "card's all-reduce latency, 14 us from RCCL against NCCL, replaced NVLink's 8 us): at "
    "one token vLLM on MI300X runs FP8 linears through its skinny GEMM (wvSplitKQ), at more "
    "through torch._scaled_mm (hipBLASLt) (vllm-project/vllm@646ad5a4 "
    "vllm/model_executor/layers/quantization/utils/w8a8_utils.py, "
    "rocm_per_tensor_w8a8_scaled_mm: qinput.shape[0] == 1), whose FP8 GEMMs at small shapes "
    "run far below the stream the card prices (Azure ND MI300X v5: 111 TFLOP/s at "
    "1024x2145x1024 against H100's 411); no per-op MI300X table at 2-128 tokens was found to "
    "price it (ROCm/aiter#1092 times AMD's AITER GEMMs at these shard shapes, but vLLM runs "
    "them only with VLLM_ROCM_USE_AITER=1, off by default: AMD's own vLLM 0.10.2 benchmark "
    "guide suggests it for MoE models only, ROCm/legacy-rocm-build@"
    "3a76bebd3b6ce197858ceb503955728108399972 docs/how-to/rocm-for-ai/inference/"
    "benchmark-docker/previous-versions/vllm-0.10.2-20251006.rst)"
)
READINGS: dict[str, str] = {
    **{
        f"MI300X vLLM latency, Llama-3.1-405B FP8, TP8, batch {b}, 128/128": _SMALL_M
        for b in (32, 128)
    },
    "MI300X vLLM 0.10.2 throughput, Llama-3.1-70B FP8, TP8, 128/2048": (
        "-15.2 %, just beyond the target (-14.9 % before the card's all-reduce latency went "
        "from 8 to 14 us): up to 3200 sequences decode in compute-bound steps priced at the "
        "fp8 mfu 0.31 (hipBLASLt square GEMMs with H100's serving-to-GEMM ratio); the run's "
        "large-batch FP8 GEMMs were faster than that, by how much no MI300X per-op table says"
    ),
    "MI300X vLLM 0.10.2 throughput, Llama-3.1-405B FP8, TP8, 128/4096": (
        "1500 sequences of up to 4224 tokens fill the FP8 KV cache, so the steps are large "
        "decode batches reading long contexts: the published figure falls 24 % from the "
        "128/2048 run, the planner's 7 %; ROCm's paged-attention decode kernel reads the KV "
        "cache slower than the planner's mbu 0.67 (no microbenchmark of it found)"
    ),
}
