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

Every entry names the measurements it was read from. They are kernel measurements only,
never fitted to the load tests in benchmarks/planner/validation.py, so that those stay a
held-out check. An accelerator without an entry gets ``FALLBACK`` and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from registry.planner.catalog import find_accelerator

VIDUR = "microsoft/vidur"
VIDUR_H100 = f"{VIDUR}@e26eb8f7 data/profiling/compute/h100/meta-llama/Llama-2-7b-hf/mlp.csv"
VIDUR_A100 = f"{VIDUR}@bee57daf data/profiling/compute/a100/meta-llama/Llama-2-7b-hf/mlp.csv"
FA3 = (
    "Shah et al., FlashAttention-3 (arXiv 2407.08608), Fig. forward causal head dim 128 on "
    "H100 SXM5: 521 TFLOP/s at 2k, 579 at 4k, 602 at 8k (FA2: 298 to 333)"
)
FA2 = (
    "Dao, FlashAttention-2 (arXiv 2307.08691): forward reaches 50-73% of A100 peak; causal "
    "head dim 128 at the low end"
)


@dataclass(frozen=True)
class KernelEfficiency:
    """Achievable fractions for one accelerator family and weight dtype, with the source."""

    mfu: float
    mbu: float
    attn_mfu: float
    layer_us: float
    source: str
    measured: bool = True


H100_BF16 = KernelEfficiency(
    mfu=0.60,
    mbu=0.77,
    attn_mfu=0.53,
    layer_us=19.5,
    source=(
        f"{VIDUR_H100} (Llama-2-7B layer, TP1, per-op CUDA times): QKV+O+up+down GEMMs "
        "1.657 TFLOP in 2.205 ms at 4096 tokens (76% of 989) and 0.207 TFLOP in 0.329 ms "
        "at 512 (64%); with norms, rotary, SiLU and adds 64% and 56%, mfu 0.60 between; "
        "at 1 token the GEMMs stream 404.8 MB in 0.156 ms = 2.59 TB/s (mbu 0.77) and the "
        "small kernels take 19.5 us per layer; attention: " + FA3
    ),
)
A100_BF16 = KernelEfficiency(
    mfu=0.65,
    mbu=0.74,
    attn_mfu=0.50,
    layer_us=24.5,
    source=(
        f"{VIDUR_A100} (Llama-2-7B layer, TP1): GEMMs 1.657 TFLOP in 7.30 ms at 4096 "
        "tokens (73% of 312) and 0.207 TFLOP in 0.945 ms at 512 (70%); with norms, "
        "rotary, SiLU and adds 67% and 64%, mfu 0.65; at 1 token 404.8 MB in 0.266 ms = "
        "1.52 TB/s (74% of 2.039 TB/s, an 80 GB part; the 40 GB part is assumed the same) "
        "and 24.5 us of small kernels per layer; attention: " + FA2
    ),
)
# No per-op fp8 serving profile was found: the bf16 shares, lowered for the scaling and
# quantisation kernels around fp8 GEMMs (an assumption, marked unmeasured).
H100_FP8 = KernelEfficiency(
    mfu=0.45,
    mbu=0.70,
    attn_mfu=0.53,
    layer_us=19.5,
    source=(
        "assumed: H100 bf16 shares (" + VIDUR_H100 + ") lowered for fp8 scaling and "
        "quantisation kernels; no fp8 per-op serving profile found; attention runs bf16"
    ),
    measured=False,
)
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

# Keyed by the catalog's accelerator name and the weights' dtype ("bf16" covers fp16).
TABLE: dict[tuple[str, str], KernelEfficiency] = {
    ("H100-SXM-80GB", "bf16"): H100_BF16,
    ("H100-SXM-80GB", "fp8"): H100_FP8,
    ("A100-SXM-80GB", "bf16"): A100_BF16,
    ("A100-SXM-40GB", "bf16"): A100_BF16,
    # Same Hopper SMs as the H100 with faster HBM3e: the shares are assumed to carry over.
    ("H200-SXM-141GB", "bf16"): KernelEfficiency(
        mfu=H100_BF16.mfu,
        mbu=H100_BF16.mbu,
        attn_mfu=H100_BF16.attn_mfu,
        layer_us=H100_BF16.layer_us,
        source="assumed equal to H100 (same SMs, not measured on H200): " + H100_BF16.source,
        measured=False,
    ),
}


def _dtype_key(weight_bytes: float) -> str:
    return "fp8" if weight_bytes <= 1.0 else "bf16"


def kernel_efficiency(accelerator: str, weight_bytes: float) -> tuple[KernelEfficiency, str]:
    """The entry for an accelerator name (catalog names and aliases) and the weights'
    bytes per parameter, and the key it was found under (``fallback`` when none)."""
    card = find_accelerator(accelerator)
    name = card.name if card is not None else accelerator
    dtype = _dtype_key(weight_bytes)
    entry = TABLE.get((name, dtype))
    if entry is not None:
        return entry, f"{name} {dtype}"
    return FALLBACK, "fallback"


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
