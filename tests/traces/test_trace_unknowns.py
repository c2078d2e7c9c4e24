"""Unknown prefix-cache share and cancellation rate: the schema, and what stales evidence.

A share a trace does not state is null with a reason under ``unknown``, never 0. Profiles
that state numbers read and dump exactly as before. The staleness rules compare the number
the planner plans with (unknown = 0), so a share becoming known or unknown is material when
that number moves beyond the threshold.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from registry.digest import content_digest
from registry.errors import InvalidInput
from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from registry.records.workload import WorkloadProfile
from registry.staleness.rules import StalenessThresholds, material_changes
from tests.factories import example

Edit = Callable[[dict[str, Any]], None]


def _interactive(document: dict[str, Any]) -> dict[str, Any]:
    cls: dict[str, Any] = document["classes"][0]
    assert cls["name"] == "interactive"
    return cls


def _workload(edit: Edit | None = None) -> WorkloadProfile:
    document = example("workload")
    if edit is not None:
        edit(document)
    record = validate_record(RecordKind.workload, document)
    assert isinstance(record, WorkloadProfile)
    return record


def _unknown(field: str, reason: str = "the trace does not say") -> Edit:
    def edit(d: dict[str, Any]) -> None:
        cls = _interactive(d)
        cls.pop(field, None)
        cls.setdefault("unknown", {})[field] = reason

    return edit


def _set(field: str, value: float | None) -> Edit:
    def edit(d: dict[str, Any]) -> None:
        _interactive(d)[field] = value

    return edit


# --- the schema -----------------------------------------------------------------------------


def test_profiles_with_numbers_read_and_dump_as_before() -> None:
    document = example("workload")
    wl = _workload()
    cls = wl.classes[0]
    assert (cls.prefix_cache_share, cls.cancellation_rate) == (0.30, 0.04)  # as the YAML says
    dumped = wl.model_dump(mode="json")
    assert all("unknown" not in c for c in dumped["classes"])
    # Same content, same digest: nothing new appears in the canonical JSON.
    again = validate_record(RecordKind.workload, copy.deepcopy(document))
    assert content_digest(again.model_dump(mode="json")) == content_digest(dumped)


def test_a_reason_alone_makes_the_share_null() -> None:
    wl = _workload(_unknown("cancellation_rate", "the trace records no cancellations"))
    cls = wl.classes[0]
    assert cls.cancellation_rate is None
    assert cls.unknown_reason("cancellation_rate") == "the trace records no cancellations"
    assert cls.prefix_cache_share == 0.30 and cls.unknown_reason("prefix_cache_share") is None
    dumped = wl.model_dump(mode="json")
    assert dumped["classes"][0]["cancellation_rate"] is None
    assert dumped["classes"][0]["unknown"] == {
        "cancellation_rate": "the trace records no cancellations"
    }
    assert WorkloadProfile.model_validate(dumped) == wl


def test_explicit_null_with_reason_reads_naturally() -> None:
    def edit(d: dict[str, Any]) -> None:
        _interactive(d)["prefix_cache_share"] = None
        _interactive(d)["unknown"] = {"prefix_cache_share": "no prompt hashes in the trace"}

    assert _workload(edit).classes[0].prefix_cache_share is None


@pytest.mark.parametrize(
    ("edit", "loc", "message"),
    [
        (
            _set("cancellation_rate", None),
            "classes.0.unknown",
            "cancellation_rate is null (unknown): say why under unknown.cancellation_rate",
        ),
        (
            lambda d: _interactive(d).update(unknown={"prefix_cache_share": "no hashes"}),
            "classes.0.unknown",
            "prefix_cache_share is 0.3 and also listed under unknown",
        ),
        (
            lambda d: _interactive(d).update(
                cancellation_rate=None, unknown={"cancellation_rate": " "}
            ),
            "classes.0.unknown.cancellation_rate",
            "at least 1 character",
        ),
        (
            lambda d: _interactive(d).update(unknown={"priority": "?"}),
            "classes.0.unknown.priority.[key]",
            "'prefix_cache_share' or 'cancellation_rate'",
        ),
    ],
)
def test_unknown_needs_exactly_a_reason(edit: Edit, loc: str, message: str) -> None:
    with pytest.raises(InvalidInput) as exc:
        _workload(edit)
    [problem] = exc.value.problems
    assert problem.loc == loc and message in problem.message


# --- staleness --------------------------------------------------------------------------------


def _changes(before: Edit | None, after: Edit | None) -> list[tuple[str, Any, Any, str]]:
    old, new = _workload(before), _workload(after)
    return [(c.field, c.old, c.new, c.rule) for c in material_changes(old, new)]


def test_share_becoming_unknown_is_material_when_the_planned_number_moves() -> None:
    # 0.30 -> unknown: the planner drops from 0.30 to 0 prefix-cache hits.
    assert _changes(None, _unknown("prefix_cache_share")) == [
        (
            "classes.interactive.prefix_cache_share",
            0.30,
            None,
            "became unknown (planned as 0, was 0.3)",
        )
    ]
    # 0.04 -> unknown: 0.04 is within the 0.05 threshold.
    assert _changes(None, _unknown("cancellation_rate")) == []


def test_share_becoming_known_is_material_when_beyond_the_threshold() -> None:
    assert _changes(_unknown("prefix_cache_share"), None) == [
        (
            "classes.interactive.prefix_cache_share",
            None,
            0.30,
            "became known (0.3; unknown was planned as 0)",
        )
    ]
    assert _changes(_unknown("cancellation_rate"), _set("cancellation_rate", 0.12)) == [
        (
            "classes.interactive.cancellation_rate",
            None,
            0.12,
            "became known (0.12; unknown was planned as 0)",
        )
    ]


def test_zero_and_unknown_are_planned_alike() -> None:
    # A profile fitted before unknown existed stored 0.0; re-fitting gives null: nothing moves.
    assert _changes(_set("cancellation_rate", 0.0), _unknown("cancellation_rate")) == []


def test_moves_between_numbers_either_way() -> None:
    limits = StalenessThresholds()
    assert limits.prefix_cache_share_change == 0.05
    assert _changes(None, _set("prefix_cache_share", 0.34)) == []  # 0.04 <= 0.05
    assert _changes(None, _set("prefix_cache_share", 0.20)) == [
        ("classes.interactive.prefix_cache_share", 0.30, 0.20, "moved 0.10")
    ]
    assert _changes(None, _set("cancellation_rate", 0.10)) == [
        ("classes.interactive.cancellation_rate", 0.04, 0.10, "moved 0.06")
    ]
    tight = StalenessThresholds(cancellation_rate_change=0.01)
    old, new = _workload(), _workload(_set("cancellation_rate", 0.06))
    assert [c.threshold for c in material_changes(old, new, tight)] == [0.01]
