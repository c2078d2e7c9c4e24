"""One published benchmark point, replayed through the planner.

A held-out case states what the benchmark ran (model, GPU, TP, prompt and output lengths,
a fixed concurrency or a request rate, the engine's batch limits) and reads one figure of
the planner's prediction: a latency quantile, or a throughput. Nothing here is fitted.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from benchmarks.planner import profiles
from registry.planner.model_shape import resolve_model
from registry.planner.runtime_features import compilation_fusions, static_fp8_activations
from registry.planner.search import Evaluator
from registry.planner.step_time import Efficiency
from registry.records.provider import DType, ProviderProfile


@dataclass(frozen=True)
class Bench:
    """What a published benchmark ran. ``clients`` > 0 is a closed loop of that many
    concurrent requests (vllm bench --max-concurrency, genai-perf --concurrency); else
    ``rate`` requests per second arrive (Poisson unless ``cv`` says otherwise)."""

    model: str
    accelerator: str
    prompt: int
    output: int
    tp: int = 1
    clients: int = 0
    rate: float = 0.0
    cv: float = 1.0
    weights: str = "bf16"  # "fp8" for FP8 checkpoints (weights and GEMMs in fp8)
    kv: str = "bf16"
    max_num_seqs: int = 1024
    max_num_batched_tokens: int = 8192
    max_model_len: int = 0  # 0: prompt + output rounded up
    gpu_memory_utilization: float = 0.9
    requests: int = 1500
    # False for offline benchmarks (vllm bench throughput/latency, the LLM class): no API
    # server sits in the request path, so its time per request is not added.
    api_server: bool = True
    # Share of each prompt the prefix cache serves (prompts that repeat a cached document),
    # read from how the benchmark built its prompts; 0 for random tokens.
    prefix_share: float = 0.0
    # Random lengths: each request's prompt and output drawn uniformly from this share of
    # ``prompt``/``output`` up to the full length, as benchmark_serving.py's
    # --random-range-ratio reads it in vLLM before 0.9 and its forks (InferenceMAX's
    # bench_serving): randint(int(L * ratio), L + 1). 1.0: fixed lengths.
    length_ratio: float = 1.0
    # vLLM's --async-scheduling (off by default in the releases the held-out runs used):
    # the engine's CPU time per step overlaps the GPU step (registry/planner/step_time.py).
    async_scheduling: bool = False
    # The serving command's other flags, as the provider profile's runtime.args holds them
    # (e.g. ("compilation-config", '{"pass_config": ...}')): the planner reads what they
    # change (registry/planner/runtime_features.py), as it does for any provider.
    runtime_args: tuple[tuple[str, str], ...] = ()
    # The checkpoint's quantisation method as vLLM names it (model.quantization), e.g.
    # "modelopt" for NVIDIA's fp8 checkpoints with static activation scales.
    quantization: str | None = None


def length_distribution(length: int, ratio: float) -> dict[str, Any]:
    """A fixed length, or lengths uniform on [int(length * ratio), length]."""
    if ratio >= 1.0:
        return profiles.fixed(length)
    if ratio <= 0.0:
        raise ValueError("length_ratio must be in (0, 1]")
    return {
        "basis": "assumed",
        "reason": "uniform random lengths set by the benchmark",
        "histogram": {"edges": [int(length * ratio), length], "counts": [1]},
    }


def _provider(b: Bench) -> ProviderProfile:
    prov = profiles.provider(b.model, b.accelerator)
    data = prov.model_dump(mode="json")
    data["model"]["weights_dtype"] = DType(b.weights).value
    data["model"]["kv_dtype"] = DType(b.kv).value
    if b.quantization is not None:
        data["model"]["quantization"] = b.quantization
    data["runtime"]["args"] = {**data["runtime"].get("args", {}), **dict(b.runtime_args)}
    return ProviderProfile.model_validate(data)


@cache
def predict(b: Bench) -> dict[str, float]:
    """The planner's figures for the benchmark: ``ttft_p50_ms`` ... ``e2e_p99_ms``,
    ``output_tokens_per_s`` and ``requests_per_s`` (what the run sustained)."""
    if (b.clients > 0) == (b.rate > 0):
        raise ValueError("a benchmark point runs either a fixed concurrency or a rate")
    length = b.max_model_len or (b.prompt + b.output + 255) // 256 * 256
    wl = profiles.workload(
        # A closed loop's rate only sets the class mix; any positive figure does.
        rate=b.rate or 1.0,
        cv=b.cv,
        prompt=length_distribution(b.prompt, b.length_ratio),
        output=length_distribution(b.output, b.length_ratio),
        prefix_share=b.prefix_share,
    )
    prov = _provider(b)
    pl = profiles.plan(
        tp=b.tp,
        max_num_seqs=b.max_num_seqs,
        max_num_batched_tokens=b.max_num_batched_tokens,
        max_model_len=length,
        gpu_memory_utilization=b.gpu_memory_utilization,
    )
    ev = Evaluator(
        pl,
        wl,
        prov,
        resolve_model(prov),
        Efficiency(
            async_scheduling=b.async_scheduling,
            fusions=compilation_fusions(prov.runtime, prov.model).fusions,
            static_fp8_scales=static_fp8_activations(prov.model),
        ),
        seed=0,
        requests=b.requests,
        frontend_ms=None if b.api_server else 0.0,
    )
    run = ev.run(b.tp, 1, clients=b.clients)
    c = run.per_class["c"]
    out: dict[str, float] = {
        "output_tokens_per_s": run.sim.output_tokens_per_s,
        "requests_per_s": run.sim.sustained_rps,
    }
    for key in ("ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms", "e2e_p50_ms"):
        value = getattr(c, key)
        if value is not None:
            out[key] = float(value)
    return out
