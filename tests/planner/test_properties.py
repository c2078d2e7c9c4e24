"""Sizing properties (hypothesis): more load or a tighter SLO never needs fewer replicas."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.planner import profiles
from registry.planner.model_shape import resolve_model
from registry.planner.search import Evaluator
from registry.planner.step_time import Efficiency

PROMPT = {
    "basis": "assumed",
    "reason": "test",
    "quantiles": {"p10": 100, "p50": 500, "p90": 1500, "p99": 4000},
}
OUT = {
    "basis": "assumed",
    "reason": "test",
    "quantiles": {"p10": 20, "p50": 150, "p90": 400, "p99": 900},
}


def min_replicas(rate: float, ttft_ms: float, tpot_ms: float, seed: int) -> int | None:
    wl = profiles.workload(
        rate=rate,
        prompt=PROMPT,
        output=OUT,
        cv=1.5,
        slo={
            "ttft_p99_ms": ttft_ms,
            "tpot_p99_ms": tpot_ms,
            "e2e_p99_ms": 1e6,
            "queue_deadline_ms": 1e6,
        },
    )
    prov = profiles.provider("llama-3.1-8b", "H100-SXM-80GB")
    pl = profiles.plan(max_num_seqs=256, max_model_len=8192)
    ev = Evaluator(pl, wl, prov, resolve_model(prov), Efficiency(), seed=seed, requests=900)
    return ev.min_replicas(1, cap=64)


@settings(max_examples=6, deadline=None, derandomize=True)
@given(rate=st.floats(5, 40), more=st.floats(1.1, 2.0), seed=st.integers(0, 3))
def test_more_load_never_needs_fewer_replicas(rate: float, more: float, seed: int) -> None:
    base = min_replicas(rate, 800, 60, seed)
    bigger = min_replicas(rate * more, 800, 60, seed)
    assert base is not None and bigger is not None
    assert bigger >= base


@settings(max_examples=6, deadline=None, derandomize=True)
@given(rate=st.floats(5, 40), tighter=st.floats(0.3, 0.95), seed=st.integers(0, 3))
def test_tighter_slo_never_needs_fewer_replicas(rate: float, tighter: float, seed: int) -> None:
    loose = min_replicas(rate, 800, 60, seed)
    tight = min_replicas(rate, 800 * tighter, 60 * max(tighter, 0.5), seed)
    assert loose is not None
    assert tight is None or tight >= loose
