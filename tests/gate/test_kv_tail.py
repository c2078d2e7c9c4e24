"""What a replica's KV cache must hold per failure scenario (registry/gate/kv_tail.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from registry.gate.kv_tail import kv_scenarios
from registry.planner.recomputation import recompute
from registry.planner.result import PlanRecomputation
from registry.records.plan import CapacityPlan
from registry.records.provider import ProviderProfile
from registry.records.workload import WorkloadProfile
from tests.factories import example


@pytest.fixture(scope="module")
def workload() -> WorkloadProfile:
    return WorkloadProfile.model_validate(example("workload"))


@pytest.fixture(scope="module")
def result(workload: WorkloadProfile) -> PlanRecomputation:
    return recompute(
        CapacityPlan.model_validate(example("plan")),
        workload,
        ProviderProfile.model_validate(example("provider")),
    )


def test_in_service_is_littles_law_on_the_mean_for_each_scenario(
    result: PlanRecomputation, workload: WorkloadProfile
) -> None:
    scenarios = result.scenarios
    needs = [scenarios[n].in_service_per_replica for n in ("peak", "one_worker_lost")]
    needs.append(scenarios["largest_zone_lost"].in_service_per_replica)
    assert all(n is not None for n in needs)
    # Fewer survivors, more in service on each.
    assert needs[0] < needs[1] < needs[2]  # type: ignore[operator]
    # The mean of a long-tailed e2e exceeds its median: Little's law on the median (what
    # the gate used before) understates what each replica holds.
    peak = scenarios["peak"]
    median_based = sum(
        c.arrival.peak_rps / peak.ready_replicas * (peak.per_class[c.name].e2e_p50_ms or 0) / 1e3
        for c in workload.classes
    )
    assert needs[0] > median_based  # type: ignore[operator]


def test_measured_p99_concurrency_gives_the_tokens_of_the_survivors(
    result: PlanRecomputation, workload: WorkloadProfile
) -> None:
    kv = kv_scenarios(result, workload)
    p99_total = sum(c.concurrency.quantile(99) for c in workload.classes)  # type: ignore[misc,union-attr]
    for name, ready in (("peak", 9), ("one_worker_lost", 8), ("largest_zone_lost", 6)):
        scenario = kv[name]
        assert scenario.ready_replicas == ready
        assert scenario.p99_concurrency_per_replica == pytest.approx(p99_total / ready, abs=0.01)
        assert scenario.in_service_per_replica == result.scenarios[name].in_service_per_replica
        tokens = scenario.p99_concurrency_kv_tokens
        assert tokens is not None
        # Between every request at its class's median context and every one at its p99.
        low = sum(
            c.concurrency.quantile(99)
            / ready  # type: ignore[union-attr,operator]
            * (c.prompt_tokens.quantile(50) + c.output_tokens.quantile(50))  # type: ignore[operator]
            for c in workload.classes
        )
        high = sum(
            c.concurrency.quantile(99)
            / ready  # type: ignore[union-attr,operator]
            * (c.prompt_tokens.quantile(99) + c.output_tokens.quantile(99))  # type: ignore[operator]
            for c in workload.classes
        )
        assert low < tokens < high
    assert (
        kv["peak"].p99_concurrency_kv_tokens  # type: ignore[operator]
        < kv["largest_zone_lost"].p99_concurrency_kv_tokens
    )
    assert kv_scenarios(result, workload) == kv  # seeded: the same figures every check


def _without_measured_concurrency(doc: dict[str, Any], how: str) -> WorkloadProfile:
    doc = copy.deepcopy(doc)
    for cls in doc["classes"]:
        if how == "absent":
            cls.pop("concurrency", None)
        else:
            cls["concurrency"]["basis"] = "assumed"
            cls["concurrency"]["reason"] = "a guess"
    return WorkloadProfile.model_validate(doc)


@pytest.mark.parametrize("how", ["absent", "assumed"])
def test_no_measured_concurrency_leaves_the_p99_figures_unknown(
    result: PlanRecomputation, how: str
) -> None:
    workload = _without_measured_concurrency(example("workload"), how)
    for scenario in kv_scenarios(result, workload).values():
        assert scenario.p99_concurrency_per_replica is None
        assert scenario.p99_concurrency_kv_tokens is None
        assert scenario.in_service_per_replica is not None
