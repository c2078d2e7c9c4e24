"""Benchmark: sizing time against fleet size (issue 10, item 8).

    python -m benchmarks.planner.bench_fleet [--repeats 3] [--only example,100,1000]

Full ``recompute`` (TP comparison, three failure scenarios, six-point load curve, no
evidence) of:

1. the worked example (examples/chat-assistant, 9 replicas; target < 2 s);
2. a synthetic Llama-3.1-8B workload on H100 needing about 100 ready replicas;
3. the same at ten times the rate, about 1,000 ready replicas (target < 5 s, issue 28; it
   was < 10 s). benchmarks.planner.bench_command times it as a whole command too.

Each is timed as the median of ``--repeats`` runs in this process (wall time, seed 0),
with the replicas found, the simulated requests and the number of simulations. Targets are
for the 2-core reference machine. Progress of long runs goes to stderr; results to stdout.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from benchmarks.planner import profiles
from benchmarks.planner.bench_sim import _records
from registry.planner import recompute
from registry.planner.progress import StderrProgress
from registry.planner.result import PlanRecomputation
from registry.records.plan import CapacityPlan
from registry.records.provider import ProviderProfile
from registry.records.workload import WorkloadProfile

PROMPT: dict[str, Any] = {
    "basis": "assumed",
    "reason": "benchmark",
    "quantiles": {"p10": 100, "p50": 600, "p90": 2000, "p99": 5000},
}
OUTPUT: dict[str, Any] = {
    "basis": "assumed",
    "reason": "benchmark",
    "quantiles": {"p10": 20, "p50": 180, "p90": 500, "p99": 1100},
}
SLO: dict[str, float] = {
    "ttft_p99_ms": 1500,
    "tpot_p99_ms": 60,
    "e2e_p99_ms": 90000,
    "queue_deadline_ms": 5000,
}
# About 21 req/s per replica meet the SLOs with these lengths on one H100 (TP=1).
RATE_PER_100 = 2100.0


def synthetic(replicas: int) -> tuple[CapacityPlan, WorkloadProfile, ProviderProfile]:
    """A bursty one-class chat workload sized to need about ``replicas`` ready replicas."""
    wl = profiles.workload(
        rate=RATE_PER_100 * replicas / 100, prompt=PROMPT, output=OUTPUT, cv=1.5, slo=SLO
    )
    prov = profiles.provider("llama-3.1-8b", "H100-SXM-80GB", price=3.9)
    plan = profiles.plan(replicas=int(replicas * 1.5), zones=3, max_num_seqs=256)
    return plan, wl, prov


def _time(
    name: str,
    make: Callable[[], tuple[CapacityPlan, WorkloadProfile, ProviderProfile]],
    repeats: int,
    target_s: float | None,
) -> float:
    plan, wl, prov = make()
    walls: list[float] = []
    result: PlanRecomputation | None = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = recompute(plan, wl, prov, seed=0, progress=StderrProgress())
        walls.append(time.perf_counter() - t0)
    assert result is not None
    median = statistics.median(walls)
    peak_requests = result.scenarios["peak"].simulated_requests
    s = result.sizing
    print(
        f"{name}: {median:.2f} s median of {repeats} "
        f"(runs {', '.join(f'{w:.2f}' for w in walls)})"
        + (f", target < {target_s:g} s" if target_s else "")
        + f"; plan {result.sizing.plan_total_replicas} replicas, min ready at peak "
        f"{s.min_ready_replicas_at_peak} (TP={s.tensor_parallel}), options "
        + ", ".join(f"TP={o.tensor_parallel}: {o.min_ready_replicas_at_peak}" for o in s.tp_options)
        + f"; peak scenario simulated {peak_requests} requests",
        flush=True,
    )
    return median


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="example,100,1000")
    args = parser.parse_args()
    only = set(args.only.split(","))
    if "example" in only:
        _time("worked example (9 replicas)", _records, args.repeats, 2.0)
    if "100" in only:
        _time("synthetic, ~100 replicas", lambda: synthetic(100), args.repeats, None)
    if "1000" in only:
        _time("synthetic, ~1,000 replicas", lambda: synthetic(1000), args.repeats, 5.0)


if __name__ == "__main__":
    main()
