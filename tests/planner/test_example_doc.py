"""docs/planner.md quotes the worked example's recomputation from the code, never by hand."""

from __future__ import annotations

from benchmarks.planner.example_doc import DOC, recomputations, render


def test_worked_example_section_is_current() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert render(text) == text, (
        "docs/planner.md is stale: python -m benchmarks.planner.example_doc"
    )


def test_worked_example_meets_its_slos_in_every_scenario() -> None:
    for result in recomputations():
        assert all(s.slo_met for s in result.scenarios.values())
        assert result.sizing.min_ready_replicas_at_peak is not None
        assert result.sizing.plan_meets_reserve
