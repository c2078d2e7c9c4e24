"""Continuous-batching simulation: determinism, scheduler behaviour, retries, sampling."""

from __future__ import annotations

import numpy as np

from benchmarks.planner import profiles
from registry.planner.model_shape import resolve_model
from registry.planner.sampling import draw_class, gamma_gaps
from registry.planner.search import Evaluator
from registry.planner.simulator import (
    ClassLoad,
    EngineSpec,
    RetrySpec,
    SimResult,
    percentile,
    simulate,
)
from registry.planner.step_time import Efficiency, StepModel

CHAT = {
    "basis": "assumed",
    "reason": "test",
    "quantiles": {"p10": 100, "p50": 600, "p90": 2000, "p99": 6000},
}
OUT = {
    "basis": "assumed",
    "reason": "test",
    "quantiles": {"p10": 20, "p50": 180, "p90": 500, "p99": 1100},
}


def _engine(kv_blocks: int = 28000, fcfs: bool = True) -> EngineSpec:
    prov = profiles.provider("llama-3.1-8b", "H100-SXM-80GB")
    step = StepModel(
        resolve_model(prov), prov.accelerator, tensor_parallel=1, efficiency=Efficiency()
    )
    return EngineSpec(
        step=step,
        kv_blocks=kv_blocks,
        block_size=16,
        max_num_seqs=256,
        max_num_batched_tokens=8192,
        fcfs=fcfs,
    )


def _loads(
    rate: float,
    *,
    n: int = 1500,
    seed: int = 1,
    cv: float = 1.5,
    deadline: float = float("inf"),
    classes: int = 1,
) -> list[ClassLoad]:
    rng = np.random.default_rng(seed)
    wl = profiles.workload(rate=rate, prompt=CHAT, output=OUT, cv=cv, cancellation=0.05)
    cls = wl.classes[0]
    return [
        ClassLoad(
            name=f"c{i}",
            priority=i,
            rate_rps=rate / classes,
            stream=draw_class(cls, n // classes, rng, max_model_len=16384),
            deadline_s=deadline,
        )
        for i in range(classes)
    ]


def _run(rate: float, replicas: int = 1, **kw: object) -> SimResult:
    engine = kw.pop("engine", None) or _engine()
    retry = kw.pop("retry", None) or RetrySpec()
    return simulate(engine, _loads(rate, **kw), replicas=replicas, retry=retry)  # type: ignore[arg-type]


def test_same_inputs_same_numbers_and_seed_matters() -> None:
    a, b = _run(8.0), _run(8.0)
    assert a.per_class["c0"].ttft == b.per_class["c0"].ttft
    assert a.per_class["c0"].e2e == b.per_class["c0"].e2e
    c = _run(8.0, seed=2)
    assert a.per_class["c0"].ttft != c.per_class["c0"].ttft


def test_sampling_reproduces_stated_quantiles_and_burstiness() -> None:
    rng = np.random.default_rng(0)
    wl = profiles.workload(rate=1.0, prompt=CHAT, output=OUT, cv=2.0)
    s = draw_class(wl.classes[0], 40_000, rng, max_model_len=16384)
    for q, v in ((10, 100), (50, 600), (90, 2000), (99, 6000)):
        assert abs(np.percentile(s.prompt, q) / v - 1) < 0.06
    gaps = gamma_gaps(2.0, 40_000, np.random.default_rng(1))
    assert abs(gaps.std() / gaps.mean() - 2.0) < 0.1
    assert abs(gaps.mean() - 1.0) < 0.05


def test_latency_grows_with_load_and_requests_complete() -> None:
    low, high = _run(2.0), _run(14.0)
    st_low, st_high = low.per_class["c0"], high.per_class["c0"]
    assert st_low.completed + st_low.shed == st_low.requests
    assert percentile(st_high.ttft, 99) > percentile(st_low.ttft, 99)  # type: ignore[operator]
    assert percentile(st_high.tpot, 50) > percentile(st_low.tpot, 50)  # type: ignore[operator]
    assert st_low.cancelled > 0  # cancellations are simulated


def test_preemption_when_kv_runs_out() -> None:
    small = _run(10.0, engine=_engine(kv_blocks=1200))
    assert small.preemptions > 0
    assert small.kv_usage_peak > 0.8
    assert _run(10.0).preemptions == 0


def test_priority_policy_serves_lower_value_first_under_load() -> None:
    res = simulate(
        _engine(fcfs=False), _loads(16.0, classes=2, n=2000), replicas=1, retry=RetrySpec()
    )
    hi, lo = res.per_class["c0"], res.per_class["c1"]
    assert percentile(hi.queue, 90) < percentile(lo.queue, 90)  # type: ignore[operator]


def test_deadlines_shed_and_retries_amplify_load() -> None:
    once = _run(30.0, deadline=0.5)
    assert once.per_class["c0"].shed_rate > 0.05
    storm = _run(30.0, deadline=0.5, retry=RetrySpec(max_attempts=10, unbounded=True))
    budgeted = _run(30.0, deadline=0.5, retry=RetrySpec(max_attempts=3, budget_ratio=0.1))
    assert storm.attempts / storm.originals > 1.5
    assert budgeted.attempts / budgeted.originals <= 1.11
    assert storm.per_class["c0"].retries > budgeted.per_class["c0"].retries


def test_more_replicas_lower_the_tail_with_every_balancer() -> None:
    for balancer in ("least_outstanding", "round_robin", "random"):
        one = simulate(_engine(), _loads(14.0), replicas=1, retry=RetrySpec(), balancer=balancer)
        three = simulate(_engine(), _loads(14.0), replicas=3, retry=RetrySpec(), balancer=balancer)
        assert (percentile(three.per_class["c0"].ttft, 99) or 0) < (
            percentile(one.per_class["c0"].ttft, 99) or 0
        )


def test_evaluator_is_reentrant() -> None:
    wl = profiles.workload(rate=10.0, prompt=CHAT, output=OUT, cv=1.5)
    prov = profiles.provider("llama-3.1-8b", "H100-SXM-80GB")
    pl = profiles.plan(max_model_len=16384)
    a = Evaluator(pl, wl, prov, resolve_model(prov), Efficiency(), seed=3, requests=800)
    b = Evaluator(pl, wl, prov, resolve_model(prov), Efficiency(), seed=3, requests=800)
    a.run(1, 1)
    assert a.run(1, 2).per_class == b.run(1, 2).per_class


def test_overload_sustains_capacity_not_the_offered_rate() -> None:
    """At several times what one replica serves, the run still drains every request of
    the window (completed = offered), but what finishes while the load is on is the
    replica's capacity: the figure a load test reports."""
    light, heavy = _run(2.0, n=3000), _run(80.0, n=3000)
    assert abs(light.sustained_rps / light.offered_rps - 1) < 0.1
    assert abs(heavy.completed_rps / heavy.offered_rps - 1) < 0.05
    assert heavy.sustained_rps < 0.6 * heavy.offered_rps
    assert heavy.sustained_rps > light.sustained_rps
