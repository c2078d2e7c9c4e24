"""Drift from bucketed observations, on traffic drawn from the worked example's profile.

No Prometheus here: the observed histograms are built from drawn requests exactly as
vLLM's client would count them (x <= le), then judged against the profile. The live
path (a real Prometheus filled with such series) is tested in test_observe_live.py.
"""

from __future__ import annotations

import pytest

from registry.observe.drift import drift
from registry.records.observation import ObservedClass
from registry.records.workload import TrafficClass, WorkloadProfile
from registry.staleness.rules import StalenessThresholds
from tests.support.observations import example_workload, observation, observed_class

LIMITS = StalenessThresholds()
N = 200_000


@pytest.fixture(scope="module")
def workload() -> WorkloadProfile:
    return example_workload()


def observed(
    cls: TrafficClass, *, prompt_scale: float = 1.0, peak_rps: float | None = None
) -> ObservedClass:
    return observed_class(cls, requests=N, prompt_scale=prompt_scale, peak_rps=peak_rps)


def test_traffic_drawn_from_the_profile_shows_no_drift(workload: WorkloadProfile) -> None:
    result = drift(observation([observed(c) for c in workload.classes]), workload, LIMITS)
    assert result.changes == [] and not result.review


@pytest.mark.parametrize("scale", [1.3, 0.7])
def test_prompts_grown_or_shrunk_30_percent_are_named_at_their_quantiles(
    workload: WorkloadProfile, scale: float
) -> None:
    interactive, batch = workload.classes
    result = drift(
        observation([observed(interactive, prompt_scale=scale), observed(batch)]),
        workload,
        LIMITS,
    )
    fields = {c.field for c in result.changes}
    # p99 (6,100 tokens) lies in vLLM's (5,000, 10,000] bucket: the interpolated value
    # cannot show the move; the exact share at 5,000 tokens does.
    assert "classes.interactive.prompt_tokens.p99" in fields
    assert all(f.startswith("classes.interactive.prompt_tokens") for f in fields)
    p99 = next(c for c in result.changes if c.field.endswith("prompt_tokens.p99"))
    assert p99.old == 6100
    assert p99.new == pytest.approx(6100 * scale, rel=0.08)
    assert ("grew" if scale > 1 else "shrank") in p99.rule and p99.threshold == 0.10


def test_a_small_move_is_not_drift(workload: WorkloadProfile) -> None:
    interactive, batch = workload.classes
    result = drift(
        observation([observed(interactive, prompt_scale=1.05), observed(batch)]), workload, LIMITS
    )
    assert result.changes == []


def test_peak_growth_and_an_unplanned_class_are_material(workload: WorkloadProfile) -> None:
    interactive, batch = workload.classes
    extra = observed(batch).model_copy(update={"name": "agents"})
    result = drift(observation([observed(interactive, peak_rps=60.0), extra]), workload, LIMITS)
    fields = {c.field: c for c in result.changes}
    assert fields["classes.interactive.arrival.peak_rps"].new == 60.0
    assert "classes.agents" in fields
    assert result.notes == ["class batch: no traffic observed in the window"]


def test_a_claimed_p99_missed_in_production_calls_for_review_not_drift(
    workload: WorkloadProfile,
) -> None:
    import math

    from registry.observe.histogram import Buckets
    from registry.observe.read import _histogram

    interactive, batch = workload.classes
    # 96 % of first tokens within 250 ms, 2 % between 250 and 500 ms, 2 % later: at most
    # 98 % within the 290 ms the plan claims for p99 (its SLO is 1,500 ms, which is met).
    ttft = Buckets.from_pairs([(0.25, 9_600), (0.5, 9_800), (1.0, 10_000), (math.inf, 10_000)])
    seen = observed(interactive).model_copy(
        update={"ttft": _histogram("vllm:time_to_first_token_seconds", "seconds", ttft, 900.0)}
    )
    claims = {"interactive": {"ttft_p99_ms": 290.0, "tpot_p99_ms": 21.0}}
    result = drift(observation([seen, observed(batch)]), workload, LIMITS, claims)
    assert result.changes == [] and result.review
    (miss,) = result.slo_misses
    assert miss.field == "classes.interactive.claims.ttft_p99_ms"
    assert miss.old == "99% within 290 ms" and miss.new == "at most 98.00%"
    # Claims without a histogram to judge them (no ITL here) are not judged.
    assert not any("tpot" in m.field for m in result.slo_misses)
