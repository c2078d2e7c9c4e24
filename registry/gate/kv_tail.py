"""What a replica's KV cache must hold in each failure scenario, for the memory_fit policy.

Two yardsticks, per scenario (all replicas ready, one worker lost, the largest zone lost),
both in KV tokens at the p99 of the sum of the requests' contexts
(registry/planner/kv_need.py):

- the planner's: requests in service per surviving replica by Little's law on the
  simulation of that scenario (each class's rate per replica x its *mean* time in
  service; the median of a long-tailed e2e understates it);
- the workload's own measurement, where it states a measured concurrency: the classes'
  p99 requests in flight, spread over the surviving replicas.

The simulation's own preemption rate in each scenario is passed on too: the third check.
"""

from __future__ import annotations

from registry.planner.kv_need import p99_kv_tokens
from registry.planner.result import SCENARIO_NAMES, PlanRecomputation
from registry.policy.input_recomputation import KvScenarioInput
from registry.records.common import Basis
from registry.records.workload import TrafficClass, WorkloadProfile


def _measured_p99_concurrency(traffic_class: TrafficClass) -> float | None:
    concurrency = traffic_class.concurrency
    if concurrency is None or concurrency.basis is not Basis.measured:
        return None
    stated = concurrency.quantile(99)
    if stated is not None:
        return float(stated)
    if not concurrency.samples:
        return None
    # Imported here: the sampler's inverse CDF brings NumPy, which a workload stating its
    # concurrency's quantiles never needs.
    from registry.planner.sampling import quantile_of

    return quantile_of(concurrency, 99)


def kv_scenarios(
    result: PlanRecomputation, workload: WorkloadProfile
) -> dict[str, KvScenarioInput]:
    measured = {
        c.name: p99 for c in workload.classes if (p99 := _measured_p99_concurrency(c)) is not None
    }
    out: dict[str, KvScenarioInput] = {}
    for name in SCENARIO_NAMES:
        scenario = result.scenarios.get(name)
        if scenario is None:
            continue
        ready = scenario.ready_replicas
        concurrency: float | None = None
        tokens: int | None = None
        if measured and ready > 0:
            per_replica = {cls: p99 / ready for cls, p99 in measured.items()}
            concurrency = round(sum(per_replica.values()), 2)
            tokens = p99_kv_tokens(per_replica, result.memory.context_tokens)
        rate = (
            round(scenario.preemptions / scenario.simulated_requests, 5)
            if scenario.simulated_requests
            else 0.0
        )
        out[name] = KvScenarioInput(
            ready_replicas=ready,
            in_service_per_replica=scenario.in_service_per_replica,
            in_service_kv_tokens=scenario.in_service_kv_tokens,
            p99_concurrency_per_replica=concurrency,
            p99_concurrency_kv_tokens=tokens,
            preemptions=scenario.preemptions,
            preemption_rate=rate,
        )
    return out
