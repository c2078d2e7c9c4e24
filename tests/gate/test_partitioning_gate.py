"""partitioning_justified on the planner's own recomputation, assembled as the gate does.

A chat workload (12 req/s at peak, prompts p50 600 / p99 6000 tokens, outputs p50 180 /
p99 1000) on H100 SXM. Llama-3.1-70B in FP8 at TP=2 over NVLink, the standard layout and
the planner's choice, is allowed: its weights fit one GPU but leave KV for a few requests,
and TP=2 needs fewer GPUs at peak. Llama-3.1-8B at TP=2 is denied: it fits one GPU with
plenty of KV, TP=2 needs no fewer GPUs, and on the same GPUs it cuts p99 latency by less
than tp_min_latency_gain (over PCIe it is slower, and the interconnect is slow too).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks.planner import profiles
from registry.gate.assemble import gate_input
from registry.policy.embedded import EmbeddedEngine
from registry.policy.engine import Violation
from registry.policy.opa_server import OpaServerEngine
from tests.support.planner_cases import (
    LLAMA_8B,
    LLAMA_70B,
    chat_workload,
    h100,
    plan_context,
    quick_recompute,
    recompute_module,
)

POLICY = "partitioning_justified"


@pytest.fixture(scope="module")
def documents() -> Iterator[dict[str, dict[str, Any]]]:
    """Gate inputs; fewer simulated requests keep it quick (the margins are wide)."""
    workload = chat_workload()
    # The 70B at 8192 tokens: TP=1 starts with KV for one request (at 16384 it cannot).
    cases = {
        "70b-fp8-nvlink": (h100(LLAMA_70B, fp8=True), 8192),
        "8b-pcie": (h100(LLAMA_8B, interconnect="pcie"), 16384),
        "8b-nvlink": (h100(LLAMA_8B), 16384),
    }
    with quick_recompute():
        docs = {}
        for name, (provider, max_model_len) in cases.items():
            plan = profiles.plan(
                replicas=6, tp=2, max_num_seqs=256, max_model_len=max_model_len, zones=3
            )
            result = recompute_module.recompute(plan, workload, provider, seed=0)
            document = gate_input(plan_context(plan, workload, provider), result)
            docs[name] = document.model_dump(mode="json")
        yield docs


@pytest.fixture(scope="module")
def engine() -> EmbeddedEngine:
    return EmbeddedEngine()


def _partitioning(engine: EmbeddedEngine, document: dict[str, Any]) -> list[Violation]:
    return [v for v in engine.decide(document).violations if v.policy == POLICY]


def test_success_70b_fp8_tp2_on_nvlink_is_justified(
    engine: EmbeddedEngine, documents: dict[str, dict[str, Any]]
) -> None:
    rec = documents["70b-fp8-nvlink"]["recomputation"]
    assert rec["fits_single_gpu"] is True
    assert rec["fits_single_gpu_with_useful_kv"] is False
    assert rec["single_gpu_kv_concurrency"] < rec["single_gpu_concurrency_needed"]
    assert rec["tp_gpu_saving"] > 0
    assert rec["tp_gpu_saving"] == rec["single_gpu_gpus_at_peak"] - rec["tp_gpus_at_peak"]
    assert rec["tp_equal_gpus"] == rec["tp_gpus_at_peak"]
    assert rec["tp_latency_gain"] == min(rec["tp_tpot_gain"], rec["tp_ttft_gain"]) > 0.2
    assert _partitioning(engine, documents["70b-fp8-nvlink"]) == []


def test_fail_8b_tp2_over_pcie(
    engine: EmbeddedEngine, documents: dict[str, dict[str, Any]]
) -> None:
    rec = documents["8b-pcie"]["recomputation"]
    assert rec["fits_single_gpu_with_useful_kv"] is True
    assert rec["tp_gpu_saving"] < 0 and rec["tp_latency_gain"] < 0
    violations = _partitioning(engine, documents["8b-pcie"])
    assert sorted(v.rule for v in violations) == ["tp_gain_unproven", "tp_on_slow_interconnect"]
    for v in violations:
        assert "set parallelism.tensor_parallel to 1" in v.message
        assert (
            f"needs {rec['single_gpu_gpus_at_peak']} GPUs at peak against "
            f"{rec['tp_gpus_at_peak']} at TP=2" in v.message
        )
        assert v.details["tp_gpu_saving"] == rec["tp_gpu_saving"]


def test_fail_8b_tp2_on_nvlink_without_gain_at_equal_gpus(
    engine: EmbeddedEngine, documents: dict[str, dict[str, Any]]
) -> None:
    rec = documents["8b-nvlink"]["recomputation"]
    assert rec["fits_single_gpu_with_useful_kv"] is True
    assert rec["tp_gpu_saving"] <= 0 and rec["tp_latency_gain"] < 0.2
    [violation] = _partitioning(engine, documents["8b-nvlink"])
    assert violation.rule == "tp_gain_unproven"
    assert f"on the same {rec['tp_equal_gpus']} GPUs at peak" in violation.message
    assert "at least 0.2 required" in violation.message
    assert violation.message.endswith("set parallelism.tensor_parallel to 1")
    assert violation.details["tp_latency_gain"] == rec["tp_latency_gain"]
    assert violation.details["min_latency_gain"] == 0.2


@pytest.mark.opa
def test_parity_opa_decides_the_same(
    engine: EmbeddedEngine, opa_url: str, documents: dict[str, dict[str, Any]]
) -> None:
    opa = OpaServerEngine(opa_url)
    try:
        for document in documents.values():
            assert opa.decide(document) == engine.decide(document)
    finally:
        opa.close()
