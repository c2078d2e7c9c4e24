"""A plan's fleet is bounded: sizing work grows with it, so no plan may ask for unbounded work."""

from __future__ import annotations

import pytest

from registry.errors import InvalidInput
from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from registry.records.plan import MAX_PLAN_REPLICAS
from tests.factories import example


def test_the_largest_plan_is_accepted() -> None:
    zones = {"a": MAX_PLAN_REPLICAS // 2, "b": MAX_PLAN_REPLICAS - MAX_PLAN_REPLICAS // 2}
    plan = validate_record(RecordKind.plan, example("plan", replicas_per_zone=zones))
    assert plan.total_replicas == MAX_PLAN_REPLICAS  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("zones", "loc", "says"),
    [
        ({"a": 10**7}, "replicas_per_zone.a", f"less than or equal to {MAX_PLAN_REPLICAS}"),
        ({"a": 2**63}, "replicas_per_zone.a", f"less than or equal to {MAX_PLAN_REPLICAS}"),
        ({"a": 4000, "b": 4000}, "", "8000 replicas, more than the 4096 one plan may hold"),
    ],
    ids=["ten million", "2^63", "too many in all"],
)
def test_fail_a_fleet_beyond_the_bound_names_the_field(
    zones: dict[str, int], loc: str, says: str
) -> None:
    with pytest.raises(InvalidInput) as error:
        validate_record(RecordKind.plan, example("plan", replicas_per_zone=zones))
    problem = error.value.problems[0]
    assert problem.loc == loc
    assert says in problem.message
