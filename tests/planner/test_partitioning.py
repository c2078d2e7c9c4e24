"""Replication versus partitioning: TP=1 against the plan's TP on the same GPUs at peak.

A chat workload (12 req/s at peak, prompts p50 600 / p99 6000 tokens, outputs p50 180 /
p99 1000) on H100 SXM: Llama-3.1-70B in FP8, whose weights fit one GPU with KV for a few
requests only, and Llama-3.1-8B in bf16, which fits one GPU with plenty of KV.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchmarks.planner import profiles
from registry.planner.result import PlanRecomputation, TPOption
from registry.records.plan import CapacityPlan
from tests.support.planner_cases import (
    LLAMA_8B,
    LLAMA_70B,
    chat_workload,
    h100,
    quick_recompute,
    recompute_module,
)


def plan(tp: int, max_model_len: int = 16384) -> CapacityPlan:
    return profiles.plan(replicas=6, tp=tp, max_num_seqs=256, max_model_len=max_model_len, zones=3)


@pytest.fixture(scope="module")
def quick() -> Iterator[None]:
    with quick_recompute():
        yield


@pytest.fixture(scope="module")
def results(quick: None) -> dict[str, PlanRecomputation]:
    wl = chat_workload()
    cases = {
        # At 16384 tokens TP=1 cannot hold one request (vLLM refuses to start); at 8192 it
        # starts, with KV for one request at the p99 context: fits, but without useful KV.
        "70b-fp8-nvlink-tp2": (plan(2, max_model_len=8192), h100(LLAMA_70B, fp8=True)),
        "8b-nvlink-tp2": (plan(2), h100(LLAMA_8B)),
        "8b-pcie-tp2": (plan(2), h100(LLAMA_8B, interconnect="pcie")),
        "8b-nvlink-tp1": (plan(1), h100(LLAMA_8B)),
    }
    return {
        name: recompute_module.recompute(p, wl, prov, seed=0) for name, (p, prov) in cases.items()
    }


def _option(result: PlanRecomputation, tp: int) -> TPOption:
    return next(o for o in result.sizing.tp_options if o.tensor_parallel == tp)


def _gain(single: float | None, partitioned: float | None) -> float:
    assert single and partitioned is not None
    return (single - partitioned) / single


def test_success_both_options_run_on_the_same_gpus(results: dict[str, PlanRecomputation]) -> None:
    for name in ("70b-fp8-nvlink-tp2", "8b-nvlink-tp2", "8b-pcie-tp2"):
        single, tp2 = _option(results[name], 1), _option(results[name], 2)
        assert tp2.gpus_at_peak is not None
        assert single.equal_gpus == tp2.equal_gpus == tp2.gpus_at_peak, name
        assert single.equal_gpus_replicas == tp2.gpus_at_peak
        assert tp2.equal_gpus_replicas == tp2.min_ready_replicas_at_peak
        # The plan's TP at its own sizing is the same memoised run.
        assert tp2.equal_gpus_tpot_p99_ms == tp2.worst_tpot_p99_ms
        assert tp2.equal_gpus_slo_met is True
        assert "on the same" in results[name].sizing.tp_reason


def test_success_70b_fp8_fits_one_gpu_without_useful_kv(
    results: dict[str, PlanRecomputation],
) -> None:
    result = results["70b-fp8-nvlink-tp2"]
    single, tp2 = _option(result, 1), _option(result, 2)
    assert single.fits and single.kv_concurrency_at_p99_context is not None
    assert single.concurrency_needed_per_replica is not None
    assert single.kv_concurrency_at_p99_context <= 4 < single.concurrency_needed_per_replica
    assert single.fits_with_useful_kv is False
    assert tp2.fits_with_useful_kv is True
    # On the same GPUs TP=1 misses the SLOs that TP=2 meets, and it needs more GPUs at peak.
    assert single.equal_gpus_slo_met is False
    assert _gain(single.equal_gpus_tpot_p99_ms, tp2.equal_gpus_tpot_p99_ms) > 0.2
    assert _gain(single.equal_gpus_ttft_p99_ms, tp2.equal_gpus_ttft_p99_ms) > 0.2
    assert single.gpus_at_peak is not None and tp2.gpus_at_peak is not None
    assert tp2.gpus_at_peak < single.gpus_at_peak
    assert result.sizing.tensor_parallel > 1


def test_success_8b_fits_one_gpu_with_useful_kv(results: dict[str, PlanRecomputation]) -> None:
    for name in ("8b-nvlink-tp2", "8b-pcie-tp2"):
        single = _option(results[name], 1)
        assert single.fits_with_useful_kv is True, name
        assert single.concurrency_needed_per_replica is not None
        assert single.kv_concurrency_at_p99_context is not None
        assert single.concurrency_needed_per_replica < single.kv_concurrency_at_p99_context
        assert results[name].sizing.tensor_parallel == 1


def test_fail_8b_tp2_gains_little_at_equal_gpus(results: dict[str, PlanRecomputation]) -> None:
    single, tp2 = _option(results["8b-nvlink-tp2"], 1), _option(results["8b-nvlink-tp2"], 2)
    assert _gain(single.equal_gpus_tpot_p99_ms, tp2.equal_gpus_tpot_p99_ms) < 0.2
    assert single.gpus_at_peak is not None and tp2.gpus_at_peak is not None
    assert tp2.gpus_at_peak >= single.gpus_at_peak
    # Over PCIe the all-reduce makes TP=2 slower on the same GPUs, and costlier at peak.
    single, tp2 = _option(results["8b-pcie-tp2"], 1), _option(results["8b-pcie-tp2"], 2)
    assert _gain(single.equal_gpus_tpot_p99_ms, tp2.equal_gpus_tpot_p99_ms) < 0
    assert single.gpus_at_peak is not None and tp2.gpus_at_peak is not None
    assert tp2.gpus_at_peak > single.gpus_at_peak


def test_success_no_comparison_for_a_tp1_plan(results: dict[str, PlanRecomputation]) -> None:
    for option in results["8b-nvlink-tp1"].sizing.tp_options:
        assert option.equal_gpus is None and option.fits_with_useful_kv is None
        assert option.kv_concurrency_at_p99_context is not None
    assert "on the same" not in results["8b-nvlink-tp1"].sizing.tp_reason
