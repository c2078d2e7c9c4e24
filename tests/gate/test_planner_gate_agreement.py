"""The planner and the gate agree: a plan that takes the recommendation is allowed.

For generated variants of the worked example's workload (other rates, burstiness and
prompt lengths, two or three zones), the plan is rewritten the way an engineer follows
`capgate plan size`: the recommended replicas per zone, the advised autoscaling floor,
ceiling and scale-down window, the reserve the recommendation leaves, and claims equal to
the recomputed p99s. Beside it, fresh imported evidence that matches the workload: taken
at the per-replica load after losing the largest zone, showing the recomputed latencies
of that scenario, with the workload's burstiness, prompt lengths, cancellation rates and both
priority classes. Every policy must then allow, on the embedded engine; a deny means the
recommendation leaves out something a rule requires (or the rule is wrong).
"""

from __future__ import annotations

import copy
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from registry.gate.assemble import gate_input
from registry.planner.result import PlanRecomputation
from registry.policy.embedded import EmbeddedEngine
from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from registry.records.plan import CapacityPlan
from registry.records.provider import ProviderProfile
from registry.records.workload import WorkloadProfile
from tests.factories import example
from tests.gate.inputs.make_corpus import HERE as CORPUS
from tests.support.planner_cases import plan_context, quick_recompute, recompute_module

ENGINE = EmbeddedEngine()
ZONES = ["zone-a", "zone-b", "zone-c"]


def generated_workload(rate: float, cv: float, prompt_scale: float) -> WorkloadProfile:
    doc = example("workload")
    for traffic_class in doc["classes"]:
        arrival = traffic_class["arrival"]
        arrival["mean_rps"] = round(arrival["mean_rps"] * rate, 3)
        arrival["peak_rps"] = round(arrival["peak_rps"] * rate, 3)
        arrival["interarrival_cv"] = round(arrival["interarrival_cv"] * cv, 3)
        prompts = traffic_class["prompt_tokens"]
        prompts["quantiles"] = {k: round(v * prompt_scale) for k, v in prompts["quantiles"].items()}
        prompts["mean"] = round(prompts["mean"] * prompt_scale)
        prompts["min"] = max(1, round(prompts["min"] * prompt_scale))
        prompts["max"] = round(prompts["max"] * prompt_scale)
    return validate_record(RecordKind.workload, doc)  # type: ignore[return-value]


def plan_document(zones: int) -> dict[str, Any]:
    doc = example("plan")
    doc["replicas_per_zone"] = {zone: 3 for zone in ZONES[:zones]}
    return doc


def provider_for(zones: int) -> ProviderProfile:
    doc = example("provider")
    doc["zones"] = ZONES[:zones]
    return validate_record(RecordKind.provider, doc)  # type: ignore[return-value]


def following(doc: dict[str, Any], sized: PlanRecomputation) -> dict[str, Any]:
    """The plan rewritten to take the recommendation and the autoscaling advice."""
    doc = copy.deepcopy(doc)
    sizing, advice = sized.sizing, sized.autoscaling
    assert sizing.min_ready_replicas_at_peak is not None, sizing.notes
    doc["replicas_per_zone"] = dict(sizing.recommended_replicas_per_zone)
    doc["reserve"]["reserve_replicas"] = sizing.reserve_replicas
    doc["autoscaling"].update(
        min_replicas=advice.min_replicas,
        max_replicas=advice.max_replicas,
        scale_down_stabilization_s=advice.scale_down_stabilization_s,
    )
    doc["claims"]["ready_replicas_needed_at_peak"] = sizing.min_ready_replicas_at_peak
    return doc


def claiming(doc: dict[str, Any], sized: PlanRecomputation) -> dict[str, Any]:
    """Claims equal to the recomputed p99s at peak (rounded up to the next millisecond)."""
    doc = copy.deepcopy(doc)
    doc["claims"]["per_class"] = {
        name: {
            key: math.ceil(getattr(predicted, key))
            for key in ("ttft_p99_ms", "tpot_p99_ms", "e2e_p99_ms")
        }
        for name, predicted in sized.scenarios["peak"].per_class.items()
    }
    return doc


def matching_evidence(document: dict[str, Any], sized: PlanRecomputation) -> dict[str, Any]:
    """Fresh imported evidence that shows what the recomputation predicts for the plan's
    worst failure scenario, at the load each survivor carries in it."""
    base = copy.deepcopy(_corpus_evidence())
    classes = document["workload"]["classes"]
    survivors = sized.scenarios["largest_zone_lost"].per_class
    base["offered_rps_per_replica"] = round(
        document["recomputation"]["peak_rps_per_replica_zone_lost"] * 1.05, 3
    )
    base["arrival_cv"] = max(c["interarrival_cv"] for c in classes.values())
    base["per_class"] = {
        name: {
            "ttft_p99_ms": survivors[name].ttft_p99_ms,
            "tpot_p99_ms": survivors[name].tpot_p99_ms,
            "e2e_p99_ms": survivors[name].e2e_p99_ms,
            "queue_p99_ms": survivors[name].queue_p99_ms,
            "error_rate": 0.0,
            "prompt_tokens_p99": classes[name]["prompt_tokens_p99"],
            "cancellation_rate": classes[name]["cancellation_rate"],
        }
        for name in classes
    }
    for role in ("workload", "provider", "plan"):
        base["measured_against"][role] = document[role]["ref"]
    return base


def _corpus_evidence() -> dict[str, Any]:
    import json

    compliant = json.loads((CORPUS / "compliant.json").read_text(encoding="utf-8"))
    evidence: dict[str, Any] = compliant["evidence"][0]
    return evidence


@settings(max_examples=3, deadline=None, derandomize=True)
@given(
    rate=st.floats(0.4, 1.6),
    cv=st.floats(0.7, 1.3),
    prompt_scale=st.floats(0.5, 1.5),
    zones=st.sampled_from([2, 3]),
)
def test_success_a_plan_taking_the_recommendation_is_allowed(
    rate: float, cv: float, prompt_scale: float, zones: int
) -> None:
    workload = generated_workload(rate, cv, prompt_scale)
    provider = provider_for(zones)
    draft = plan_document(zones)
    with quick_recompute():
        first = recompute_module.recompute(
            validate_record(RecordKind.plan, draft), workload, provider, seed=0
        )
        taken = following(draft, first)
        sized = recompute_module.recompute(
            validate_record(RecordKind.plan, taken), workload, provider, seed=0
        )
        final: CapacityPlan = validate_record(RecordKind.plan, claiming(taken, sized))  # type: ignore[assignment]
        result = recompute_module.recompute(final, workload, provider, seed=0)
    document = gate_input(plan_context(final, workload, provider), result).model_dump(mode="json")
    document["evidence"] = [matching_evidence(document, result)]
    decision = ENGINE.decide(document)
    assert decision.allow, "\n".join(
        f"{v.policy}.{v.rule}: {v.message}" for v in decision.violations
    )
