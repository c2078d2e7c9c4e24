"""Fleet-scale reduction: simulating 8 replicas at their share stands for the whole fleet.

``Evaluator`` simulates a fleet of R replicas as min(R, FLEET_GROUP) replicas fed a random
k/R share of the fleet's arrivals (registry/planner/search.py). These tests hold it to the
full-fleet simulation (``group=0``: all R replicas, the same requests per replica) on a
bursty chat workload behind the default least-outstanding balancer:

- at 6 replicas (R <= FLEET_GROUP) nothing is reduced: the same numbers;
- at 12 and 24 replicas, at a moderate and a high per-replica load (p99 TPOT at about 45 %
  and 95 % of its SLO), p99 TTFT and p99 TPOT, each the mean over ``SEEDS``, within
  ``TOLERANCE`` (10 %) of the full fleet's. One run's p99 near the SLO moves by 10 % or
  more from seed to seed by itself (the same fleet, other requests), so single runs would
  test sampling noise, not the reduction;
- the fewest replicas meeting the SLOs equal to the full-fleet search's, or one off, for
  workloads needing about 6, 12 and 24;
- a progress reporter hears every candidate, and the evaluation count grows with log R.
"""

from __future__ import annotations

import io

import pytest

from benchmarks.planner import profiles
from benchmarks.planner.bench_fleet import OUTPUT, PROMPT, SLO
from registry.planner.model_shape import resolve_model
from registry.planner.progress import StderrProgress
from registry.planner.search import FLEET_GROUP, Evaluator
from registry.planner.step_time import Efficiency
from registry.records.workload import WorkloadProfile

TOLERANCE = 0.10
SEEDS = (0, 1, 2)
PER_REPLICA = 1000
# Per-replica rates: moderate (p99 TPOT ~ 45 % of the 60 ms SLO) and high (~ 95 %).
LOADS = {"moderate": 14.0, "high": 20.0}
FLEETS = (6, 12, 24)


def _workload(rate: float) -> WorkloadProfile:
    return profiles.workload(rate=rate, prompt=PROMPT, output=OUTPUT, cv=1.5, slo=SLO)


def _evaluator(rate: float, *, full: bool, max_fleet: int = 24, seed: int = 0) -> Evaluator:
    wl = _workload(rate)
    prov = profiles.provider("llama-3.1-8b", "H100-SXM-80GB")
    plan = profiles.plan(max_num_seqs=256)
    # Both draw the same requests (common random numbers): the reduced run uses the first
    # FLEET_GROUP x PER_REPLICA of them, the full fleet the first R x PER_REPLICA.
    requests = PER_REPLICA * max_fleet
    return Evaluator(
        plan,
        wl,
        prov,
        resolve_model(prov),
        Efficiency(),
        seed=seed,
        requests=requests,
        group=0 if full else FLEET_GROUP,
        per_replica=PER_REPLICA,
    )


def _p99s(ev: Evaluator, replicas: int) -> tuple[float, float]:
    pred = ev.run(1, replicas).per_class["c"]
    assert pred.ttft_p99_ms is not None and pred.tpot_p99_ms is not None
    return pred.ttft_p99_ms, pred.tpot_p99_ms


def _mean_p99s(rate: float, replicas: int, *, full: bool) -> tuple[float, float]:
    runs = [_p99s(_evaluator(rate, full=full, seed=seed), replicas) for seed in SEEDS]
    return (
        sum(r[0] for r in runs) / len(runs),
        sum(r[1] for r in runs) / len(runs),
    )


def test_no_reduction_up_to_the_group_size() -> None:
    """At R <= FLEET_GROUP the reduced run is the full-fleet run, number for number."""
    for load in LOADS.values():
        full = _evaluator(load * 6, full=True)
        reduced = _evaluator(load * 6, full=False)
        assert reduced.run(1, 6).simulated_replicas == 6
        assert reduced.run(1, 6).per_class == full.run(1, 6).per_class


@pytest.mark.parametrize("load", sorted(LOADS))
def test_reduced_p99s_match_the_full_fleet(load: str) -> None:
    per_replica_rate = LOADS[load]
    for replicas in (12, 24):
        rate = per_replica_rate * replicas
        reduced = _evaluator(rate, full=False)
        assert reduced.run(1, replicas).simulated_replicas == FLEET_GROUP
        assert _evaluator(rate, full=True).run(1, replicas).simulated_replicas == replicas
        # Fleet totals are the fleet's, not the group's.
        sim = reduced.run(1, replicas).sim
        assert sim.replicas == replicas
        assert sim.offered_rps == pytest.approx(rate)
        f_ttft, f_tpot = _mean_p99s(rate, replicas, full=True)
        r_ttft, r_tpot = _mean_p99s(rate, replicas, full=False)
        d_ttft, d_tpot = r_ttft / f_ttft - 1, r_tpot / f_tpot - 1
        line = (
            f"{load} {per_replica_rate:g} req/s per replica, {replicas} replicas, mean of "
            f"{len(SEEDS)} seeds: p99 TTFT {r_ttft:.0f} vs {f_ttft:.0f} ms ({d_ttft:+.1%}), "
            f"p99 TPOT {r_tpot:.1f} vs {f_tpot:.1f} ms ({d_tpot:+.1%})"
        )
        print(line)
        assert abs(d_ttft) <= TOLERANCE, line
        assert abs(d_tpot) <= TOLERANCE, line


@pytest.mark.parametrize("needed", FLEETS)
def test_min_replicas_match_the_full_fleet_within_one(needed: int) -> None:
    # About 21 req/s per replica meet the SLOs with these lengths on one H100.
    rate = 21.0 * needed
    reduced = _evaluator(rate, full=False, max_fleet=needed + 8).min_replicas(1)
    assert reduced is not None
    # The full-fleet search starts at the reduced answer (it finds a boundary wherever it
    # starts; starting close only saves full-fleet simulations, each R/8 times dearer).
    full = _evaluator(rate, full=True, max_fleet=needed + 8).min_replicas(1, start=reduced)
    print(f"~{needed} replicas at {rate:g} req/s: reduced {reduced}, full fleet {full}")
    assert full is not None and reduced is not None
    assert abs(reduced - full) <= 1


def test_search_is_logarithmic_and_reports_progress() -> None:
    out = io.StringIO()
    ticks = iter(range(10_000))
    progress = StderrProgress(out, after_s=0.0, every_s=0.0, clock=lambda: float(next(ticks)))
    wl = _workload(21.0 * 400)
    prov = profiles.provider("llama-3.1-8b", "H100-SXM-80GB")
    plan = profiles.plan(max_num_seqs=256)
    ev = Evaluator(
        plan, wl, prov, resolve_model(prov), Efficiency(), seed=0, requests=2000, progress=progress
    )
    r = ev.min_replicas(1)
    assert r is not None and r > 100, r
    lines = out.getvalue().splitlines()
    assert lines and all(line.startswith("capgate: sizing") for line in lines)
    assert all("TP=1" in line and "ready replicas" in line for line in lines)
    # Galloping and bisection: a few dozen evaluations at most, not hundreds.
    assert len(ev._cache) <= 30
    # The same seed, the same answer.
    again = Evaluator(plan, wl, prov, resolve_model(prov), Efficiency(), seed=0, requests=2000)
    assert again.min_replicas(1) == r
