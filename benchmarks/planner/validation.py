"""Validation of the planner against published measurements, each case citing its source.

Run ``python -m benchmarks.planner.validation`` to print the table recorded in
docs/planner-validation.md. The planner runs with its default (uncalibrated) fractions
unless a case says otherwise, so the errors are those a user gets without evidence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from benchmarks.planner import hf_configs, profiles
from benchmarks.planner.cases import Case, Outcome
from benchmarks.planner.heldout import HELD_OUT_CASES
from registry.planner.calibration import calibrate
from registry.planner.kv_layout import kv_bytes_per_token, kv_pool
from registry.planner.memory import GIB, MemoryFit, memory_fit
from registry.planner.model_shape import resolve_model
from registry.planner.result import Calibration
from registry.planner.search import Evaluator
from registry.planner.step_time import Efficiency, StepModel
from registry.records.evidence import LoadTestEvidence
from registry.records.plan import CapacityPlan
from registry.records.provider import ProviderProfile
from registry.records.workload import WorkloadProfile

FIX = "../shared/fixtures/load-tests/"  # beside the checkout; named for readers only
IPERF = (
    "inference-perf kubecon25 vLLM 0.11.0, Llama-3-8B-Instruct, 1x H100 "
    "(kubernetes-sigs/inference-perf@7de5ef2, " + FIX + "inference-perf/...{stage})"
)
LLMD = (
    "llm-d-benchmark exp-7, vLLM ~0.8.5, Llama-3.1-8B, 2 replicas x 1 H100, in 8000/out "
    "200, 3.6 req/s (llm-d/llm-d-benchmark@334f38a, "
    + FIX
    + "vllm-bench/llm-d__llm-d-benchmark__exp7-h100-vllm-2replicas.json); the replicas "
    "behind a Kubernetes Service, replayed with a random pick per request (the case first "
    "assumed round robin; changed after its TPOT p99 miss, for the Service's semantics)"
)
DB = "Databricks, LLM Inference Performance Engineering: Best Practices (2023)"
PA = "Kwon et al., PagedAttention, SOSP'23"


def _shape(model: str, accel: str = "H100-SXM-80GB") -> object:
    return resolve_model(profiles.provider(model, accel))


def _kv_llama2_70b() -> float:
    shape = resolve_model(profiles.provider("llama-2-70b", "A100-SXM-80GB"))
    return kv_bytes_per_token(shape) * 1024 / GIB


def _kv_opt13b() -> float:
    shape = resolve_model(profiles.provider("opt-13b", "A100-SXM-40GB"))
    return kv_bytes_per_token(shape) / 1024


def _opt13b_fit(field: str) -> float:
    shape = resolve_model(profiles.provider("opt-13b", "A100-SXM-40GB"))
    fit = memory_fit(
        shape,
        memory_gib=40,
        tensor_parallel=1,
        gpu_memory_utilization=0.9,
        block_size=16,
        max_num_batched_tokens=2560,
        max_num_seqs=256,
        max_model_len=2048,
        p99_context_by_class={},
    )
    return float(fit.kv_tokens) / 1000 if field == "slots" else fit.kv_cache_gib * GIB / 1e9


# --- vLLM start-up memory logs (KV cache GiB and fit verdicts) ------------------------------
LLMD_MEM = (
    "llm-d/llm-d-benchmark@259334868c5075da530cc6c90b43fceb11b6e6a7 "
    "config_explorer/empirical-vllm-memory-results.md, vLLM V1 (version not stated; issues "
    "#621 and #622 date the runs to January 2026, a release between 0.11.1 and 0.16: the "
    "sort sampler), "
    "1x H100 (79.18 GiB), gpu_memory_utilization 0.9, max_model_len {mml}; H100 API-server "
    "defaults (8192 batched tokens, 1024 sequences) assumed"
)
LLMD_PLANNER = (
    "llm-d-incubation/llm-d-planner@fbd68515a903397a1b785a2189dc7512b0d55680 "
    "accuracy/results/v0.19.0/accuracy_report.md (logs in accuracy/results/v0.19.0/logs/ "
    "@d3121e059da88662db39a926a3ead964be97359b), vLLM 0.19.0, H100 (79.19 GiB), "
    "gpu_memory_utilization 0.95, max_model_len 8192, defaults 8192 batched tokens and 1024 "
    "sequences (logged)"
)
DERIVED = (
    "KV derived from the logged weights, activation and non-torch figures (0.95 x 79.19 - sum)"
)


@cache
def _vllm_fit(
    model: str,
    tp: int,
    util: float,
    version: str,
    mml: int,
    dtype: str = "bf16",
    accel: str = "H100-SXM-80GB",
    batched: int = 8192,
    seqs: int = 1024,
    kv_dtype: str = "bf16",
) -> MemoryFit:
    prov = profiles.provider(model, accel)
    if dtype != "bf16" or kv_dtype != "bf16":
        doc = prov.model_dump(mode="json")
        doc["model"]["weights_dtype"] = dtype
        doc["model"]["kv_dtype"] = kv_dtype
        prov = ProviderProfile.model_validate(doc)
    return memory_fit(
        resolve_model(prov),
        memory_gib=prov.accelerator.memory_gib,
        tensor_parallel=tp,
        gpu_memory_utilization=util,
        block_size=16,
        max_num_batched_tokens=batched,
        max_num_seqs=seqs,
        max_model_len=mml,
        p99_context_by_class={},
        accelerator=prov.accelerator.name,
        runtime_version=version,
    )


@dataclass(frozen=True)
class Host:
    """The accelerator of a start-up log and the scheduler limits vLLM profiled it with."""

    accel: str
    batched: int
    seqs: int


# vLLM V1 defaults below 70 GiB and on any A100 (vllm/engine/arg_utils.py, "Setting large
# `max_num_batched_tokens` for A100 reduces throughput, see PR #17885"): the API server
# schedules 2048 tokens and 256 sequences per step, the offline LLM class 8192 and 256.
A100 = Host("A100-SXM-80GB", 2048, 256)
A100_40 = Host("A100-SXM-40GB", 2048, 256)
A100_40_OFFLINE = Host("A100-SXM-40GB", 8192, 256)
RTX = Host("RTX-3090-24GB", 2048, 256)


def _launch(
    model: str,
    tp: int,
    util: float,
    version: str,
    mml: int,
    host: Host,
    *,
    dtype: str = "bf16",
    kv_dtype: str = "bf16",
) -> tuple[object, ...]:
    """The positional arguments of ``_vllm_fit`` for a start-up off the H100 defaults."""
    return (model, tp, util, version, mml, dtype, host.accel, host.batched, host.seqs, kv_dtype)


def _kv_gib(*args: object) -> float:
    """KV GiB as vLLM logs it, negative when the engine cannot allocate any block."""
    f = _vllm_fit(*args)  # type: ignore[arg-type]
    return f.requested_gib - f.weights_gib - f.activation_peak_gib - f.runtime_overhead_gib


def _memory_case(
    name: str,
    source: str,
    kv_gib: float,
    args: tuple[object, ...],
    *,
    held_out: bool,
    fits: bool = True,
    note: str = "",
) -> Case:
    return Case(
        name,
        "memory",
        source,
        "GiB",
        kv_gib,
        lambda: _kv_gib(*args),
        0.05,
        note,
        held_out=held_out,
        fits=fits,
        planner_fits=lambda: _vllm_fit(*args).fits,  # type: ignore[arg-type]
    )


MEMORY_CASES: tuple[Case, ...] = (
    _memory_case(
        "vLLM KV GiB, Llama-3.1-8B, H100, TP1 (V1, Jan 2026)",
        LLMD_MEM.format(mml=16000),
        51.38,
        ("llama-3.1-8b", 1, 0.9, "0.13", 16000),
        held_out=False,
        note="tuned: sampler bytes per logit and non-torch read from this log",
    ),
    _memory_case(
        "vLLM KV GiB, Llama-3.3-70B FP8, H100, TP2 (V1, Jan 2026)",
        LLMD_MEM.format(mml=16000),
        32.0,
        ("llama-3.3-70b", 2, 0.9, "0.13", 16000, "fp8"),
        held_out=False,
        note="RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic; tuned: TP>1 non-torch extra",
    ),
    _memory_case(
        "vLLM KV GiB, Llama-3.3-70B FP8, H100, TP1: does not fit (V1, Jan 2026)",
        LLMD_MEM.format(mml=16000),
        -1.44,
        ("llama-3.3-70b", 1, 0.9, "0.13", 16000, "fp8"),
        held_out=True,
        fits=False,
        note="engine failed: 'No available memory for the cache blocks'",
    ),
    _memory_case(
        "vLLM KV GiB, Qwen3-32B, H100, TP1, 16000 tokens (V1, Jan 2026)",
        LLMD_MEM.format(mml=16000),
        4.45,
        ("qwen3-32b", 1, 0.9, "0.13", 16000),
        held_out=True,
    ),
    _memory_case(
        "vLLM fit, Qwen3-32B, H100, TP1, 32000 tokens: does not fit (V1, Jan 2026)",
        LLMD_MEM.format(mml=32000),
        4.45,
        ("qwen3-32b", 1, 0.9, "0.13", 32000),
        held_out=True,
        fits=False,
        note="engine failed (one 32000-token request exceeds the KV cache); KV GiB from the "
        "16000-token run, the pool does not depend on max_model_len",
    ),
    _memory_case(
        "vLLM KV GiB, Llama-3.1-8B, H100, TP1 (0.19.0)",
        LLMD_PLANNER,
        58.11,
        ("llama-3.1-8b", 1, 0.95, "0.19.0", 8192),
        held_out=False,
        note="tuned: 0.19 sampler bytes per logit and non-torch read from this log",
    ),
    _memory_case(
        "vLLM KV GiB, Llama-3.1-8B, H100, TP2 (0.19.0)",
        LLMD_PLANNER,
        63.76,
        ("llama-3.1-8b", 2, 0.95, "0.19.0", 8192),
        held_out=False,
        note="tuned: 0.19 TP>1 non-torch extra; " + DERIVED,
    ),
    _memory_case(
        "vLLM KV GiB, Llama-3.1-8B, H100, TP4 (0.19.0)",
        LLMD_PLANNER,
        67.44,
        ("llama-3.1-8b", 4, 0.95, "0.19.0", 8192),
        held_out=True,
        note=DERIVED,
    ),
    _memory_case(
        "vLLM KV GiB, Qwen2.5-7B, H100, TP1 (0.19.0)",
        LLMD_PLANNER,
        58.53,
        ("qwen2.5-7b", 1, 0.95, "0.19.0", 8192),
        held_out=True,
    ),
    _memory_case(
        "vLLM KV GiB, Qwen2.5-7B, H100, TP2 (0.19.0)",
        LLMD_PLANNER,
        63.84,
        ("qwen2.5-7b", 2, 0.95, "0.19.0", 8192),
        held_out=True,
        note=DERIVED,
    ),
    _memory_case(
        "vLLM KV GiB, Qwen2.5-7B, H100, TP4 (0.19.0)",
        LLMD_PLANNER,
        67.34,
        ("qwen2.5-7b", 4, 0.95, "0.19.0", 8192),
        held_out=True,
        note=DERIVED,
    ),
)


# --- held out off the H100: A100 (80/40 GB) and RTX 3090 start-up logs ---------------------
# Added after the memory profiles were fixed; nothing was read from these logs but the
# exposed device memory of the RTX 3090 (the card the catalog lacked). The 80 GB A100s (SXM
# or PCIe) take the catalog's A100-SXM-80GB figure, 79.15 GiB; the 0.25/0.5 pairs below
# imply about 79.25 GiB, which would move their KV by under 0.05 GiB.
_DENNIS = "dennislee22/vLLM-benchmarking@"
DENNIS = (
    "{commit} {path}: vLLM 0.10.1.1 API server, Qwen2-7B-Instruct bf16, {gpu}, TP{tp}, "
    "gpu_memory_utilization {util}, max_model_len 16384, 2048 batched tokens (logged), "
    "256 sequences (A100 default)"
)
GCE = (
    "ilseokoh/vllm-gce@ede8ee4e36cf1ed10471b3ff38514159f71dfa58 README.md (test.py output): "
    "vLLM 0.15.1 offline LLM class, Llama-3.1-8B-Instruct bf16, 1x A100 40GB (GCE "
    "a2-highgpu-1g), TP1, gpu_memory_utilization 0.9, max_model_len 131072, enforce_eager, "
    "8192 batched tokens (logged), 256 sequences (A100 default)"
)
CSS = (
    "cssnoeasy/a100-vllm-benchmark-blog@5b67cd24cec04a0664aa3a7aa585ea11df6d5f5e "
    "docs/reports/a100-quantization-capacity.md (resource table): vLLM 0.19.0 API server, "
    "{model}, 1x A100 80GB PCIe, TP1, gpu_memory_utilization 0.90, max_model_len 8192, eager; "
    "A100 defaults (2048 batched tokens, 256 sequences) assumed"
)
BUCC = (
    "TheBuccaneer/vllm-offload-profiles@1e3f023eae1617eb45b94f676d1f5314f866d730 "
    "data/provenance/gpu_memory_configuration/{log} (curated excerpt of the run's log; "
    "environment/README.md: RTX 3090 24 GB, driver 580.159.03): vLLM 0.17.1 API server, "
    "{model} bf16, TP1, gpu_memory_utilization {util}, max_model_len 8192; defaults 2048 "
    "batched tokens and 256 sequences ('256 dummy requests' logged)"
)


def _dennis(commit: str, path: str, gpu: str, tp: int, util: float) -> str:
    return _DENNIS + DENNIS.format(commit=commit, path=path, gpu=gpu, tp=tp, util=util)


def _bucc(log: str, model: str, util: float) -> str:
    return BUCC.format(log=log, model=model, util=util)


def _kv_tokens_k(*args: object) -> float:
    return _vllm_fit(*args).kv_tokens / 1000


_QWEN3_FP8KV = _launch("qwen3-32b", 1, 0.9, "0.19.0", 8192, A100, kv_dtype="fp8")
OFF_H100_MEMORY_CASES: tuple[Case, ...] = (
    _memory_case(
        "vLLM KV GiB, Qwen2-7B, A100-80GB, TP1, util 0.5 (0.10.1.1)",
        _dennis(
            "608c86e90fc1ab6071c6bb8a673046ab9cd65062",
            "log/vllm-7B-1gpuA10080GB-0.5GRAM.log",
            "1x A100 80GB",
            1,
            0.5,
        ),
        24.83,
        _launch("qwen2-7b", 1, 0.5, "0.10.1.1", 16384, A100),
        held_out=True,
        note="logged: weights 14.25 GiB, KV 24.83 GiB = 464,848 tokens; FlashInfer sampler",
    ),
    _memory_case(
        "vLLM KV GiB, Qwen2-7B, A100-80GB, TP1, util 0.25 (0.10.1.1)",
        _dennis(
            "391660db66f5a6e44ea8ed82decf48a88e55e992",
            "log/vllm-7B-1gpuA10080GB-0.25GRAM.log",
            "1x A100 80GB",
            1,
            0.25,
        ),
        5.01,
        _launch("qwen2-7b", 1, 0.25, "0.10.1.1", 16384, A100),
        held_out=True,
        note="logged: weights 14.25 GiB, KV 5.01 GiB = 93,872 tokens; FlashInfer sampler",
    ),
    _memory_case(
        "vLLM KV GiB, Qwen2-7B, A100-80GB, TP2, util 0.5 (0.10.1.1)",
        _dennis(
            "e514a58512f7c1ced8a2bffb191be171e7ad99b2",
            "log/vllm-7B-2gpuA10080GB-0.5GRAM-same-node.log",
            "2x A100 80GB in one node (no P2P: custom all-reduce disabled)",
            2,
            0.5,
        ),
        31.83,
        _launch("qwen2-7b", 2, 0.5, "0.10.1.1", 16384, A100),
        held_out=True,
        note="logged per GPU: weights 7.12 GiB, KV 31.83 GiB; 1,192,160 tokens",
    ),
    _memory_case(
        "vLLM KV GiB, Qwen2-7B, A100-80GB, TP2, util 0.25 (0.10.1.1)",
        _dennis(
            "c1eadb81928e8f42f3f27ab564177a90d586670a",
            "vllm-7B-2gpuA10080GB-same-node.log",
            "2x A100 80GB in one node (no P2P: custom all-reduce disabled)",
            2,
            0.25,
        ),
        12.02,
        _launch("qwen2-7b", 2, 0.25, "0.10.1.1", 16384, A100),
        held_out=True,
        note="logged per GPU: weights 7.12 GiB, KV 12.02 GiB; 450,192 tokens",
    ),
    _memory_case(
        "vLLM KV GiB, Qwen2-7B, A100-40GB, TP2 across two nodes, util 0.5 (0.10.1.1)",
        _dennis(
            "89771826649777b1127b11adaf18514eb24ff099",
            "log/vllm-7B-2gpuA10040GB-0.5GRAM-diff-nodes.log",
            "2x A100 40GB on two nodes over Ray (custom all-reduce disabled)",
            2,
            0.5,
        ),
        11.03,
        _launch("qwen2-7b", 2, 0.5, "0.10.1.1", 16384, A100_40),
        held_out=True,
        note="logged per GPU: weights 7.12 GiB, KV 11.03 GiB; 412,944 tokens; PyTorch-native "
        "sampler (FlashInfer unavailable)",
    ),
    _memory_case(
        "vLLM KV GiB, Llama-3.1-8B, A100-40GB, TP1, offline LLM class (0.15.1)",
        GCE,
        19.28,
        _launch("llama-3.1-8b", 1, 0.9, "0.15.1", 131072, A100_40_OFFLINE),
        held_out=True,
        note="logged: weights 14.99 GiB, KV 19.28 GiB = 157,936 tokens, 1.20x concurrency at "
        "131,072 tokens (engine started)",
    ),
    _memory_case(
        "vLLM KV GiB, Qwen3-32B, A100-80GB PCIe, TP1 (0.19.0)",
        CSS.format(model="Qwen3-32B bf16"),
        9.57,
        _launch("qwen3-32b", 1, 0.9, "0.19.0", 8192, A100),
        held_out=True,
        note="logged: weights 61.03 GiB, KV 9.57 GiB = 39,200 tokens",
    ),
    _memory_case(
        "vLLM KV GiB, Qwen3-32B AWQ, A100-80GB PCIe, TP1 (0.19.0)",
        CSS.format(model="Qwen/Qwen3-32B-AWQ (fp16 compute)"),
        52.31,
        _launch("qwen3-32b", 1, 0.9, "0.19.0", 8192, A100, dtype="int4"),
        held_out=True,
        note="logged: weights 18.14 GiB, KV 52.31 GiB = 214,272 tokens; the planner's int4 "
        "weights (16-bit embeddings and LM head) are 17.45 GiB: AWQ group scales and zeros "
        "are not modelled",
    ),
    Case(
        "vLLM KV tokens, Qwen3-32B, FP8 KV cache, A100-80GB PCIe, TP1 (0.19.0)",
        "memory",
        CSS.format(model="Qwen3-32B bf16 with --kv-cache-dtype fp8"),
        "K tokens",
        78.4,
        lambda: _kv_tokens_k(*_QWEN3_FP8KV),
        0.05,
        "logged: 9.57 GiB of KV = 78,400 tokens, twice the bf16 run's 39,200",
        held_out=True,
        fits=True,
        planner_fits=lambda: _vllm_fit(*_QWEN3_FP8KV).fits,
    ),
    _memory_case(
        "vLLM KV GiB, Llama-3.1-8B, RTX 3090, util 0.9 (0.17.1)",
        _bucc("baseline_llama_gmem090_offload0.log", "Llama-3.1-8B-Instruct", 0.9),
        5.68,
        _launch("llama-3.1-8b", 1, 0.9, "0.17.1", 8192, RTX),
        held_out=True,
        note="logged: weights 14.99 GiB, KV 5.68 GiB = 46,544 tokens",
    ),
    _memory_case(
        "vLLM KV GiB, Llama-3.1-8B, RTX 3090, util 0.75 (0.17.1)",
        _bucc("kv_vram_llama_gmem075_offload0.log", "Llama-3.1-8B-Instruct", 0.75),
        2.13,
        _launch("llama-3.1-8b", 1, 0.75, "0.17.1", 8192, RTX),
        held_out=True,
        note="logged: weights 14.99 GiB, KV 2.13 GiB = 17,424 tokens",
    ),
    _memory_case(
        "vLLM fit, Llama-3.1-8B, RTX 3090, util 0.7: does not fit (0.17.1)",
        _bucc("kv_vram_llama_gmem070_offload0_failed.log", "Llama-3.1-8B-Instruct", 0.7),
        0.95,
        _launch("llama-3.1-8b", 1, 0.7, "0.17.1", 8192, RTX),
        held_out=True,
        fits=False,
        note="engine failed: KV 0.95 GiB, one 8192-token request needs 1.0 GiB",
    ),
    _memory_case(
        "vLLM KV GiB, Qwen2.5-7B, RTX 3090, util 0.9 (0.17.1)",
        _bucc("baseline_qwen_gmem090_offload0.log", "Qwen2.5-7B-Instruct", 0.9),
        6.32,
        _launch("qwen2.5-7b", 1, 0.9, "0.17.1", 8192, RTX),
        held_out=True,
        note="logged: weights 14.25 GiB, KV 6.32 GiB = 118,304 tokens",
    ),
    _memory_case(
        "vLLM fit, Qwen2.5-7B, RTX 3090, util 0.65: starts (0.17.1)",
        _bucc("kv_vram_qwen_gmem065_offload0.log", "Qwen2.5-7B-Instruct", 0.65),
        0.49,
        _launch("qwen2.5-7b", 1, 0.65, "0.17.1", 8192, RTX),
        held_out=True,
        note="logged: KV 0.49 GiB = 9,088 tokens, engine started; a rerun at the same setting "
        "(kv_vram_qwen_gmem065_offload0_failed.log) found 0.41 GiB and failed (0.44 GiB needed)",
    ),
    _memory_case(
        "vLLM KV GiB, Qwen2.5-7B, RTX 3090, util 0.6: does not fit (0.17.1)",
        _bucc("kv_vram_qwen_gmem060_offload0_failed.log", "Qwen2.5-7B-Instruct", 0.6),
        -0.7,
        _launch("qwen2.5-7b", 1, 0.6, "0.17.1", 8192, RTX),
        held_out=True,
        fits=False,
        note="engine failed: 'No available memory for the cache blocks'",
    ),
)


# --- KV layouts other than grouped-query attention: the logged tokens from the logged memory ---
# Each predicts vLLM's "GPU KV cache size: N tokens" from the "Available KV cache memory" the
# same log states, so it checks the layout (bytes per token and layer, replication across TP
# ranks, vLLM's KV cache groups), not the memory profile. Added with the layouts; nothing was
# read from them. Counted as if every layer held every token, the first would come out twice
# the log (a K and a V plane) or, sharded over TP, the same; the second half of it.
PR20665 = (
    "vllm-project/vllm pull request #20665 (https://github.com/vllm-project/vllm/pull/20665), "
    "start-up log in its description: vLLM V1 of July 2025, DeepSeek-V2-Lite bf16 on 4x L4, "
    "ranks 0-1 'Available KV cache memory: 12.13 GiB', ranks 2-3 11.33 GiB, 'GPU KV cache "
    "size: 807,792 tokens'; TP2 x PP2 read from the paired figures (the command is not in the "
    "log), its 27 layers split 14 + 13 (vllm/distributed/utils.py get_pp_indices), the pool "
    "the smaller stage's, block size 16 assumed"
)
DENNIS_OSS = (
    _DENNIS + "b474d1e053c35c9aef8c02aae4efbc0d8675f033 "
    "log/vllm-120B-4gpuA10080GB-0.8GRAM-diff-nodes.log ("
    + FIX.replace("load-tests/", "")
    + "planner/vllm-logs/dennislee22__vLLM-benchmarking__vllm-120B-4gpuA10080GB-0.8GRAM-"
    "diff-nodes.log): vLLM 0.10.1.1, openai/gpt-oss-120b, 4x A100 80GB, TP4, 'Available KV "
    "cache memory: 45.32 GiB', 'GPU KV cache size: 2,640,144 tokens'; block size 16"
)


def _layout_tokens_k(
    name: str,
    config: dict[str, Any],
    total_b: float,
    accel: str,
    tp: int,
    stages: tuple[tuple[int, float], ...],
) -> float:
    """vLLM's logged KV tokens, in thousands, from each pipeline stage's (layers, logged KV
    GiB): the smallest stage pool (vLLM sizes every stage to the fewest blocks)."""
    shape = resolve_model(hf_configs.provider(name, config, total_b, accel))
    pools = [
        kv_pool(replace(shape, layers=layers), gib * GIB, tensor_parallel=tp, block_size=16)[1]
        for layers, gib in stages
    ]
    return min(pools) / 1000


LAYOUT_CASES: tuple[Case, ...] = (
    Case(
        "vLLM KV tokens, DeepSeek-V2-Lite (latent attention), L4, TP2 x PP2 (V1, Jul 2025)",
        "memory",
        PR20665,
        "K tokens",
        807.792,
        lambda: _layout_tokens_k(
            "deepseek-ai/DeepSeek-V2-Lite",
            hf_configs.DEEPSEEK_V2_LITE,
            15.7,
            "L4-24GB",
            2,
            ((14, 12.13), (13, 11.33)),
        ),
        0.05,
        "(512 + 64) x 2 bytes per token and layer on every TP rank: 14 x 1152 B in 12.13 GiB",
        held_out=True,
    ),
    Case(
        "vLLM KV tokens, gpt-oss-120b (sliding window 128 in 18 of 36 layers), A100-80GB, "
        "TP4 (0.10.1.1)",
        "memory",
        DENNIS_OSS,
        "K tokens",
        2640.144,
        lambda: _layout_tokens_k(
            "openai/gpt-oss-120b",
            hf_configs.GPT_OSS_120B,
            116.8,
            "A100-SXM-80GB",
            4,
            ((36, 45.32),),
        ),
        0.05,
        "two groups of 18 layers share the pool (2 KV heads x 64 x 2 planes x 2 bytes per "
        "layer and GPU); vLLM logs blocks // 2 x 16",
        held_out=True,
    ),
)

MEMORY_CASES = MEMORY_CASES + OFF_H100_MEMORY_CASES + LAYOUT_CASES


# --- start-up verdicts without a published KV figure ----------------------------------------
# Issue 28: "Qwen3-32B with max_model_len 40960 on one 80 GB GPU ... vLLM 0.11.0 served 100
# prompts of 32k tokens there". The run is GPUStack's performance lab; its pages give the
# serving command, the vLLM release and the benchmark output, no start-up log: no KV figure,
# utilization or device variant. Only verdicts are checked here, never an invented figure.
GPUSTACK = (
    "gpustack/gpustack@10e9444a07c73556f2ef0d10d2b2766bbf54c9c0 "
    "docs/performance-lab/qwen3-32b/{page} (GPUStack's performance lab): vLLM v0.11.0, "
    "Qwen/Qwen3-32B bf16, {gpu}, no TP flag (one GPU); {run}"
)


@dataclass(frozen=True)
class StartupVerdict:
    """A vLLM start-up a source reports without its KV figure: ``started`` is what the
    source shows (it served requests: True), None when the source leaves the configuration
    open, so only the planner's reading of the stated one is shown (``reading``)."""

    name: str
    source: str
    args: tuple[object, ...]
    started: bool | None
    reading: str = ""

    def planner(self) -> MemoryFit:
        return _vllm_fit(*self.args)  # type: ignore[arg-type]


# vLLM 0.11.0's defaults on the H100 API server: gpu_memory_utilization 0.9, 8192 batched
# tokens, 1024 sequences, max_model_len from config.json (40960 for Qwen3-32B), CUDA graphs on.
QWEN3_32B_H100_DEFAULTS = ("qwen3-32b", 1, 0.9, "0.11.0", 40960)
STARTUP_VERDICTS: tuple[StartupVerdict, ...] = (
    StartupVerdict(
        "vLLM start, Qwen3-32B, A100-80GB, TP1, max_model_len 32768 (0.11.0)",
        GPUSTACK.format(
            page="a100.md",
            gpu="NVIDIA A100 (a later copy of the page: one A100 SXM 80GB)",
            run="'vllm serve Qwen/Qwen3-32B --max-model-len 32768' served 1000 ShareGPT "
            "prompts; utilization 0.9 and the A100 defaults (2048 batched tokens, 256 "
            "sequences) assumed",
        ),
        _launch("qwen3-32b", 1, 0.9, "0.11.0", 32768, A100),
        started=True,
    ),
    StartupVerdict(
        "vLLM start, Qwen3-32B, H100 80GB, TP1, max_model_len 40960, util 0.9 (0.11.0)",
        GPUSTACK.format(
            page="h100.md",
            gpu="NVIDIA H100 (variant and memory not stated)",
            run="'vllm serve Qwen/Qwen3-32B' (max_model_len 40960 from config.json) served "
            "100 random prompts of 32000 tokens (100 out); read here at vLLM's defaults on "
            "an 80 GB H100",
        ),
        QWEN3_32B_H100_DEFAULTS,
        started=None,
        reading=(
            "vLLM 0.11.0 cannot start this as stated, whatever its activation: 0.9 x 79.19 "
            "GiB = 71.27 GiB less the 61.03 GiB of weights vLLM logs for Qwen3-32B bf16 "
            "(both Qwen3-32B logs above) leaves 10.24 GiB, and one 40960-token request "
            "needs 10.00 GiB of KV (256 KiB a token), so the profile pass and non-torch "
            "memory would have to fit in 0.24 GiB, less than the non-torch 0.13 GiB plus the "
            "Q/K/V output of an 8192-token forward (0.16 GiB). The run had more: a higher "
            "gpu_memory_utilization, a larger H100 (NVL, 94 GB) or a shorter max_model_len "
            "(the A100 page of the same lab states --max-model-len 32768). Its 43 ms TPOT, "
            "tight to the p99 (44 ms), says no second prompt was prefilled beside a decode, "
            "which a pool of 40960 tokens or more would have allowed"
        ),
    ),
)


# --- one request alone: Qwen2-7B on one A100-80GB, 1024 in / 1024 out ----------------------
DENNIS_TPOT = _DENNIS + (
    "00dac23d9f923d478a676dfbb7d7d01f6fc63c64 README.md, Test 5 (benchmark_serving.py, random "
    "1024 in / 1024 out, one prompt): vLLM 0.10.1.1, Qwen2-7B-Instruct bf16, 1x A100 80GB (form "
    "factor not stated; the SXM card is used), TP1, gpu_memory_utilization 0.5, max_model_len "
    "16384; TPOT mean = median = p99"
)


def _dennis_tpot() -> float:
    # One request at a time: a regular arrival every 30 s, each lasting about 12 s.
    wl = profiles.workload(
        rate=1 / 30, cv=0.05, prompt=profiles.fixed(1024), output=profiles.fixed(1024)
    )
    prov = profiles.provider("qwen2-7b", "A100-SXM-80GB")
    pl = profiles.plan(
        max_num_seqs=256,
        max_num_batched_tokens=2048,
        max_model_len=16384,
        gpu_memory_utilization=0.5,
    )
    ev = Evaluator(pl, wl, prov, resolve_model(prov), Efficiency(), seed=0, requests=100)
    value = ev.run(1, 1).per_class["c"].tpot_p50_ms
    assert value is not None
    return float(value)


A100_LATENCY_CASES: tuple[Case, ...] = (
    Case(
        "TPOT at batch 1, Qwen2-7B, A100-80GB, 1024/1024 tokens (0.10.1.1)",
        "latency",
        DENNIS_TPOT,
        "ms",
        11.75,
        _dennis_tpot,
        0.15,
        "the same run's TTFT (36.23 ms) is not used: its prefix-cache hit rate was 56% "
        "(benchmark_serving's random prompts repeat across runs), so the prefill was partly "
        "skipped",
    ),
)


# --- inference-perf kubecon25: Llama-3-8B on one H100 -------------------------------------
def _iperf_eval(rate: float) -> Evaluator:
    wl = profiles.workload(
        rate=rate,
        cv=0.05,
        prefix_share=128 / 204,
        prompt={
            "basis": "assumed",
            "reason": "inference-perf shared_prefix 128+64 tokens",
            "quantiles": {"p0": 196, "p50": 205, "p99": 211, "p100": 212},
        },
        output={
            "basis": "assumed",
            "reason": "out 64 with ignore_eos, as measured",
            "quantiles": {"p0": 36, "p1": 47, "p5": 57, "p50": 64, "p99": 67, "p100": 68},
        },
    )
    prov = profiles.provider("llama-3-8b", "H100-SXM-80GB")
    pl = profiles.plan(max_num_seqs=1024, max_num_batched_tokens=8192, max_model_len=8192)
    return Evaluator(pl, wl, prov, resolve_model(prov), Efficiency(), seed=0, requests=3000)


def _iperf_low(metric: str) -> float:
    value = getattr(_iperf_eval(1.0).run(1, 1).per_class["c"], metric)
    assert value is not None
    return float(value)


def _iperf_saturation() -> float:
    # Requests finished while the test offered its load, as the tool counts them.
    return _iperf_eval(183.38).run(1, 1).sim.sustained_rps


# --- llm-d exp-7: Llama-3.1-8B, 2 replicas on H100, 8000 in / 200 out --------------------
def _llmd(metric: str) -> float:
    wl = profiles.workload(
        rate=3.6, cv=0.1, prompt=profiles.fixed(8000), output=profiles.fixed(200)
    )
    prov = profiles.provider("llama-3.1-8b", "H100-SXM-80GB")
    pl = profiles.plan(
        replicas=2,
        max_num_seqs=1024,
        max_num_batched_tokens=8192,
        max_model_len=16384,
        # Behind a Kubernetes Service each new connection goes to a random endpoint
        # (kube-proxy's iptables mode draws one; OVN-Kubernetes hashes the connection), and
        # benchmark_serving.py opens a client session, so a connection, per request.
        balancer="random",
    )
    ev = Evaluator(pl, wl, prov, resolve_model(prov), Efficiency(), seed=0, requests=1200)
    value = getattr(ev.run(1, 2).per_class["c"], metric)
    assert value is not None
    return float(value)


# --- Databricks: TTFT and TPOT across TP degrees (batch 1, 512-token prompt) --------------
def _step(model: str, accel: str, tp: int) -> StepModel:
    prov = profiles.provider(model, accel)
    return StepModel(
        resolve_model(prov), prov.accelerator, tensor_parallel=tp, efficiency=Efficiency()
    )


def _ttft_512(model: str, accel: str, tp: int) -> float:
    return _step(model, accel, tp).step(512, 512 * 256.0, 0, 0.0) * 1e3


def _tpot_b1(model: str, accel: str, tp: int) -> float:
    return _step(model, accel, tp).step(0, 0.0, 1, 512.0) * 1e3


# --- vLLM 0.8.3 vs SGLang graphs: Llama-3.1-8B, 1 H100, in 1000 / out 100, Poisson ----------
# Added with the per-accelerator efficiencies and the mixed-step model, after both were fixed
# from kernel measurements: a strictly held-out set (nothing was read from it).
NERD = (
    "nerdalert/vllm-benchmark-graphs@75a8bc1 results.json (vLLM 0.8.3 line, "
    "benchmark_serving.py, Llama-3.1-8B-Instruct, 1x H100, random 1000 in / 100 out, "
    "ignore_eos, Poisson at {rate} req/s; " + FIX + "vllm-bench/nerdalert__vllm-benchmark-graphs"
    "__h100-llama31-8b-vllm-vs-sgl-appended-results.json); V1 defaults 8192 batched tokens, "
    "1024 sequences assumed"
)


def _nerd_records(rate: float) -> tuple[CapacityPlan, WorkloadProfile, ProviderProfile]:
    wl = profiles.workload(
        rate=rate, cv=1.0, prompt=profiles.fixed(1000), output=profiles.fixed(100)
    )
    prov = profiles.provider("llama-3.1-8b", "H100-SXM-80GB")
    pl = profiles.plan(max_num_seqs=1024, max_num_batched_tokens=8192, max_model_len=16384)
    return pl, wl, prov


def _nerd_eval(
    rate: float,
    requests: int = 2000,
    efficiency: Efficiency | None = None,
    frontend_ms: float | None = None,
) -> Evaluator:
    pl, wl, prov = _nerd_records(rate)
    eff = efficiency or Efficiency()
    return Evaluator(
        pl, wl, prov, resolve_model(prov), eff, seed=0, requests=requests, frontend_ms=frontend_ms
    )


# The 10 req/s point as a load-test record (published medians), for the calibrated cases.
NERD_POINT = {
    "rate": 10.0,
    "ttft_p50_ms": 51.35,
    "ttft_p99_ms": 123.45,
    "tpot_p50_ms": 11.72,
    "tpot_p99_ms": 15.74,
}


@cache
def nerd_calibration() -> tuple[Efficiency, Calibration]:
    """MBU, MFU and API server time from the planner's own calibration to the 10 req/s
    point alone: the fit as far as its held-out check allows, or the defaults when no share
    of it is safe (then the calibrated figures are the uncalibrated ones)."""
    pl, wl, prov = _nerd_records(NERD_POINT["rate"])
    doc = {
        "name": "nerdalert-h100-10rps",
        "owner": "validation@example.com",
        "measured_against": {"workload": "bench-workload@v1", "provider": "bench-provider@v1"},
        "tool": {"name": "vllm-bench"},
        "measured_at": "2025-04-10T00:00:00Z",
        "offered": {"request_rate_rps": NERD_POINT["rate"], "burstiness": 1.0, "classes": ["c"]},
        "results": {
            "per_class": {
                "c": {
                    "ttft_ms": {
                        "quantiles": {
                            "p50": NERD_POINT["ttft_p50_ms"],
                            "p99": NERD_POINT["ttft_p99_ms"],
                        }
                    },
                    "tpot_ms": {
                        "quantiles": {
                            "p50": NERD_POINT["tpot_p50_ms"],
                            "p99": NERD_POINT["tpot_p99_ms"],
                        }
                    },
                }
            }
        },
    }
    ev = LoadTestEvidence.model_validate(doc)
    eff, cal = calibrate(
        [(ev, prov)],
        plan=pl,
        workload=wl,
        provider=prov,
        shape=resolve_model(prov),
        base=Efficiency(),
    )
    return eff, cal


@cache
def _nerd_run(rate: float, calibrated: bool = False) -> dict[str, float]:
    eff, front = None, None
    if calibrated:
        eff, cal = nerd_calibration()
        front = cal.frontend_ms
    c = _nerd_eval(rate, efficiency=eff, frontend_ms=front).run(1, 1).per_class["c"]
    out = {}
    for key in ("ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms"):
        value = getattr(c, key)
        assert value is not None
        out[key] = float(value)
    return out


def _nerd_capacity() -> float:
    """The highest offered rate whose median TTFT stays under a second over 3000 requests
    (the queue does not grow): the sustainable throughput. The test's own figure is what it
    completed per second when offered more (35 req/s)."""
    lo, hi = 5.0, 80.0
    while hi - lo > 0.25:
        mid = (lo + hi) / 2
        c = _nerd_eval(mid, 3000).run(1, 1).per_class["c"]
        if c.ttft_p50_ms is not None and c.ttft_p50_ms < 1000.0:
            lo = mid
        else:
            hi = mid
    return lo


def _nerd_case(
    rate: float, metric: str, published: float, note: str = "", *, calibrated: bool = False
) -> Case:
    label = metric.removesuffix("_ms").replace("_", " ").upper().replace(" P", " p")
    if calibrated:
        return Case(
            f"{label} at {rate:g} req/s, calibrated on 10 req/s (vLLM 0.8.3)",
            "calibrated",
            NERD.format(rate=f"{rate:g}"),
            "ms",
            published,
            lambda: _nerd_run(rate, True)[metric],
            0.10,
            "MBU, MFU and the API server's time fitted to the 10 req/s point alone (TTFT and "
            "TPOT p50 and p99) by registry/planner/calibration.py, used only as far as no "
            "held-out group of that point (its TTFT, its TPOT) gets worse than the defaults: "
            "where no share of the fit is safe the defaults stay and the figure is the "
            "uncalibrated one; tuned: the fit's pull towards the runtime's default API server "
            "time (FRONTEND_PRIOR_WEIGHT) was chosen with these cases in view"
            + (f"; {note}" if note else ""),
            held_out=False,
        )
    return Case(
        f"{label} at {rate:g} req/s, 1000/100 tokens (vLLM 0.8.3)",
        "latency",
        NERD.format(rate=f"{rate:g}"),
        "ms",
        published,
        lambda: _nerd_run(rate)[metric],
        0.15,
        note,
    )


_FRONT_END = "includes the API server's time (tokenisation, HTTP): the runtime's FRONTEND figure"
_KEPT_DEFAULTS = (
    "the calibration keeps the defaults on the 10 req/s point alone: held out, the fit to "
    "its TPOT predicts its TTFT worse than the defaults at every share tried (the TTFT p50 "
    "moves further off), and the rule lets no group get worse; so this is the uncalibrated "
    "figure, outside the calibrated cases' 10 %"
)
# The calibrated cases outside their target because the calibration declined the fit
# (benchmarks/planner/validation_doc.py READINGS; each is a strict xfail).
CALIBRATED_READINGS: dict[str, str] = {
    "TTFT p50 at 1 req/s, calibrated on 10 req/s (vLLM 0.8.3)": _KEPT_DEFAULTS
    + " (the runtime's API server time is longer than vLLM 0.8.3's here)",
    "TPOT p50 at 1 req/s, calibrated on 10 req/s (vLLM 0.8.3)": _KEPT_DEFAULTS,
    "TPOT p99 at 1 req/s, calibrated on 10 req/s (vLLM 0.8.3)": _KEPT_DEFAULTS,
    "TTFT p99 at 20 req/s, calibrated on 10 req/s (vLLM 0.8.3)": _KEPT_DEFAULTS
    + " (the uncalibrated case's reading: queued 1000-token prefills wait longer in vLLM "
    "0.8.3)",
    "TPOT p99 at 20 req/s, calibrated on 10 req/s (vLLM 0.8.3)": _KEPT_DEFAULTS
    + " (the uncalibrated case's reading: vLLM 0.8.3's mixed steps are dearer)",
}
NERD_CASES: tuple[Case, ...] = (
    _nerd_case(1.0, "ttft_p50_ms", 44.62, _FRONT_END),
    _nerd_case(1.0, "tpot_p50_ms", 8.70),
    _nerd_case(1.0, "tpot_p99_ms", 9.51),
    _nerd_case(10.0, "ttft_p50_ms", 51.35, _FRONT_END),
    _nerd_case(10.0, "ttft_p99_ms", 123.45),
    _nerd_case(10.0, "tpot_p50_ms", 11.72),
    _nerd_case(10.0, "tpot_p99_ms", 15.74),
    _nerd_case(20.0, "ttft_p50_ms", 75.59),
    _nerd_case(20.0, "ttft_p99_ms", 233.34),
    _nerd_case(20.0, "tpot_p50_ms", 20.95),
    _nerd_case(20.0, "tpot_p99_ms", 33.53),
    # Calibrated on one point (every percentile of 10 req/s), compared with the rows above.
    _nerd_case(1.0, "ttft_p50_ms", 44.62, calibrated=True),
    _nerd_case(1.0, "tpot_p50_ms", 8.70, calibrated=True),
    _nerd_case(1.0, "tpot_p99_ms", 9.51, calibrated=True),
    _nerd_case(20.0, "ttft_p50_ms", 75.59, calibrated=True),
    _nerd_case(20.0, "ttft_p99_ms", 233.34, calibrated=True),
    _nerd_case(20.0, "tpot_p50_ms", 20.95, calibrated=True),
    _nerd_case(20.0, "tpot_p99_ms", 33.53, calibrated=True),
    Case(
        "saturation throughput, 1000/100 tokens (vLLM 0.8.3)",
        "throughput",
        NERD.format(rate="35"),
        "req/s",
        28.45,
        _nerd_capacity,
        0.10,
        "completed per second at 35 req/s offered (TTFT p50 8.7 s: saturated); planner: the "
        "highest rate with TTFT p50 under 1 s",
    ),
)


CASES: tuple[Case, ...] = (
    Case(
        "KV cache per 1024 tokens, Llama-2-70B",
        "memory",
        DB + ", Table 3",
        "GiB",
        0.312,
        _kv_llama2_70b,
        0.10,
    ),
    Case(
        "KV cache per token, OPT-13B", "memory", PA + ", section 3", "KiB", 800.0, _kv_opt13b, 0.10
    ),
    Case(
        "KV slots, OPT-13B on A100-40GB",
        "memory",
        PA + ", Table 1 (15.7K slots)",
        "K tokens",
        15.7,
        lambda: _opt13b_fit("slots"),
        0.10,
        "vLLM 2023 profiled differently; gpu_memory_utilization 0.9 and 2560 batched tokens "
        "assumed",
    ),
    Case(
        "KV cache memory, OPT-13B on A100-40GB",
        "memory",
        PA + ", Table 1 (12 GB for KV)",
        "GB",
        12.0,
        lambda: _opt13b_fit("bytes"),
        0.10,
    ),
    Case(
        "TTFT p50 at 1 req/s",
        "latency",
        IPERF.format(stage="stage0"),
        "ms",
        31.03,
        lambda: _iperf_low("ttft_p50_ms"),
        0.25,
        "tuned: the API server's time per request (registry/planner/efficiency.py FRONTEND) "
        "is this TTFT less the engine's predicted 7.5 ms",
        held_out=False,
    ),
    Case(
        "TTFT p99 at 1 req/s",
        "latency",
        IPERF.format(stage="stage0"),
        "ms",
        39.70,
        lambda: _iperf_low("ttft_p99_ms"),
        0.25,
    ),
    Case(
        "time per output token p50 at 1 req/s",
        "latency",
        IPERF.format(stage="stage0"),
        "ms",
        7.23,
        lambda: _iperf_low("tpot_p50_ms"),
        0.25,
        "(e2e - TTFT) / (output - 1) from the file's means; its own TPOT (3.47 ms) counts "
        "two tokens per streamed chunk",
    ),
    Case(
        "e2e p99 at 1 req/s",
        "latency",
        IPERF.format(stage="stage0"),
        "ms",
        489.4,
        lambda: _iperf_low("e2e_p99_ms"),
        0.25,
    ),
    Case(
        "saturation throughput (offered 183 req/s)",
        "throughput",
        IPERF.format(stage="stage6"),
        "req/s",
        103.08,
        _iperf_saturation,
        0.25,
        "the test's client fell behind (schedule delay p50 19 s), so 103 req/s may be client-bound",
    ),
    Case(
        "TTFT p50, 8000-token prompts",
        "latency",
        LLMD,
        "ms",
        244.09,
        lambda: _llmd("ttft_p50_ms"),
        0.25,
    ),
    Case(
        "TTFT p99, 8000-token prompts",
        "latency",
        LLMD,
        "ms",
        261.67,
        lambda: _llmd("ttft_p99_ms"),
        0.25,
    ),
    Case("TPOT p50", "latency", LLMD, "ms", 15.19, lambda: _llmd("tpot_p50_ms"), 0.25),
    Case("TPOT p99", "latency", LLMD, "ms", 27.34, lambda: _llmd("tpot_p99_ms"), 0.25),
    Case(
        "TTFT MPT-7B, 1x A100-40GB",
        "scaling",
        DB + " (512-token prompt assumed)",
        "ms",
        46.0,
        lambda: _ttft_512("mpt-7b", "A100-SXM-40GB", 1),
        0.25,
    ),
    Case(
        "TTFT MPT-7B, 2x A100-40GB",
        "scaling",
        DB,
        "ms",
        34.0,
        lambda: _ttft_512("mpt-7b", "A100-SXM-40GB", 2),
        0.25,
    ),
    Case(
        "TTFT MPT-7B, 4x A100-40GB",
        "scaling",
        DB,
        "ms",
        26.0,
        lambda: _ttft_512("mpt-7b", "A100-SXM-40GB", 4),
        0.25,
    ),
    Case(
        "TTFT Llama-2-70B, 4x A100-40GB",
        "scaling",
        DB,
        "ms",
        154.0,
        lambda: _ttft_512("llama-2-70b", "A100-SXM-40GB", 4),
        0.25,
    ),
    Case(
        "TTFT Llama-2-70B, 8x A100-40GB",
        "scaling",
        DB,
        "ms",
        114.0,
        lambda: _ttft_512("llama-2-70b", "A100-SXM-40GB", 8),
        0.25,
    ),
    Case(
        "TPOT reduction MPT-7B 2 -> 4 GPUs, batch 1",
        "scaling",
        DB,
        "%",
        12.0,
        lambda: (
            100
            * (1 - _tpot_b1("mpt-7b", "A100-SXM-40GB", 4) / _tpot_b1("mpt-7b", "A100-SXM-40GB", 2))
        ),
        0.25,
    ),
    Case(
        "latency reduction H100 vs A100-40GB, 4 GPUs, batch 1",
        "scaling",
        DB + " (model assumed Llama-2-70B)",
        "%",
        36.0,
        lambda: (
            100
            * (
                1
                - _tpot_b1("llama-2-70b", "H100-SXM-80GB", 4)
                / _tpot_b1("llama-2-70b", "A100-SXM-40GB", 4)
            )
        ),
        0.25,
    ),
)
CASES = CASES + MEMORY_CASES
CASES = CASES + NERD_CASES
CASES = CASES + A100_LATENCY_CASES


def _vllm_family(case: Case) -> Case:
    """The vLLM runs above in their accelerator family, for the per-family table; the
    Databricks figures (TensorRT-LLM, 2023) measure another runtime and stay out of it."""
    if case.family or case.kind not in ("latency", "throughput"):
        return case
    if case.source.startswith(("inference-perf", "llm-d-benchmark", "nerdalert")):
        return replace(case, family="H100")
    if case.source == DENNIS_TPOT:
        return replace(case, family="A100")
    return case


CASES = tuple(_vllm_family(c) for c in CASES) + HELD_OUT_CASES


def run_all() -> list[Outcome]:
    return [Outcome(case, case.compute()) for case in CASES]


def verdict_table(verdicts: tuple[StartupVerdict, ...] = STARTUP_VERDICTS) -> str:
    rows = [
        "| case | vLLM | planner | KV tokens | starts with | source |",
        "|---|---|---|---|---|---|",
    ]
    for v in verdicts:
        f = v.planner()
        shown = {True: "started", False: "refused", None: "served, set-up not stated"}[v.started]
        remedy = (
            "as planned"
            if f.fits
            else f"max_model_len <= {f.longest_max_model_len:,} or gpu_memory_utilization >= "
            f"{f.utilization_for_max_model_len}"
        )
        rows.append(
            f"| {v.name} | {shown} | {'fits' if f.fits else 'does not fit'} | "
            f"{f.kv_tokens:,} | {remedy} | {v.source}"
            + (f"; {v.reading}" if v.reading else "")
            + " |"
        )
    return "\n".join(rows)


def table(outcomes: list[Outcome]) -> str:
    rows = [
        "| case | published | planner | error | target | within | held out | source |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        c = o.case
        rows.append(
            f"| {c.name} | {c.published:g} {c.unit} | {o.predicted:.4g} {c.unit} | "
            f"{o.error:+.1%} | ±{c.target:.0%} | {'yes' if o.within else 'NO'} | "
            f"{'yes' if c.held_out else 'tuned'} | {c.source}"
            + (f"; {c.note}" if c.note else "")
            + " |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    results = run_all()
    print(table(results))
    hits = sum(o.within for o in results)
    print(
        f"\n{hits}/{len(results)} within target; mean |error| "
        f"{sum(abs(o.error) for o in results) / len(results):.1%}; "
        f"max |error| {max(abs(o.error) for o in results):.1%}"
    )
    for label, held in (("held out", True), ("tuned", False)):
        mem = [o for o in results if o.case.kind == "memory" and o.case.held_out is held]
        if mem:
            print(
                f"memory cases {label}: {len(mem)}, mean |error| "
                f"{sum(abs(o.error) for o in mem) / len(mem):.2%}, signed mean "
                f"{sum(o.error for o in mem) / len(mem):+.2%}, verdicts matching "
                f"{sum(o.verdict_ok for o in mem)}/{len(mem)}"
            )
    assert not any(math.isnan(o.predicted) for o in results)
