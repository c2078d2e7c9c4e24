"""docs/planner.md quotes the worked example's recomputation from the code, never by hand."""

from __future__ import annotations

import pytest

from benchmarks.planner.example_doc import DOC, recomputations, render
from registry.planner.result import PlanRecomputation

Results = tuple[PlanRecomputation, PlanRecomputation]


@pytest.fixture(scope="module")
def results() -> Results:
    return recomputations()


def test_worked_example_section_is_current(results: Results) -> None:
    text = DOC.read_text(encoding="utf-8")
    stale = "docs/planner.md is stale: python -m benchmarks.planner.example_doc"
    assert render(text, results) == text, stale


def test_worked_example_meets_its_slos_in_every_scenario(results: Results) -> None:
    for result in results:
        assert all(s.slo_met for s in result.scenarios.values())
        assert result.sizing.min_ready_replicas_at_peak is not None
        assert result.sizing.plan_meets_reserve
