"""Calibration that cannot hurt (issue 28, item 4): a fit is checked by leave-one-out over
groups of figures and kept only when it predicts held-out figures better than the defaults."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from registry.planner import calibration
from registry.planner.calibration import calibrate, held_out_error
from registry.planner.model_shape import resolve_model
from registry.planner.recomputation import recompute
from registry.planner.step_time import Efficiency
from registry.records.evidence import LoadTestEvidence
from tests.planner.test_recompute import _load

Row = tuple[str, str, str, float, float | None]


def _rows(factors: dict[str, float]) -> list[Row]:
    """TPOT p50/p90/p99 of two classes, each predicted at measured x its class's factor."""
    return [
        ("test", cls, f"tpot_p{q}_ms", 10.0, 10.0 * factors[cls])
        for cls in ("a", "b")
        for q in (50, 90, 99)
    ]


def test_held_out_error_predicts_each_group_from_the_others() -> None:
    # R fits class a exactly, S class b; either fits the held-out class 25 % off.
    simulated = {
        (0.6, 0.5): _rows({"a": 1.0, "b": 1.25}),
        (0.45, 0.35): _rows({"a": 1.25, "b": 1.0}),
    }
    assert held_out_error(simulated, 5.0) == pytest.approx(round(math.log(1.25), 4))
    # A point that fits both better than either is chosen in every fold.
    simulated = {
        (0.6, 0.5): _rows({"a": 1.01, "b": 1.25}),
        (0.45, 0.35): _rows({"a": 1.25, "b": 1.01}),
        (0.75, 0.65): _rows({"a": 1.0, "b": 1.0}),
    }
    assert held_out_error(simulated, 5.0) == 0.0


def test_held_out_error_needs_two_groups() -> None:
    one = [("test", "a", f"tpot_p{q}_ms", 10.0, 11.0) for q in (50, 90, 99)]
    assert held_out_error({(0.6, 0.5): one}, 5.0) is None
    assert held_out_error({}, 5.0) is None


def _tpot_only(ev: LoadTestEvidence) -> LoadTestEvidence:
    """The example's test with its TPOT alone (the API server's time is then not fitted)."""
    doc = ev.model_dump(mode="json")
    for result in doc["results"]["per_class"].values():
        for metric in ("ttft_ms", "e2e_ms", "queue_ms", "itl_ms"):
            result.pop(metric, None)
    return LoadTestEvidence.model_validate(doc)


def test_fail_a_fit_that_only_explains_what_it_was_fitted_to_is_not_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In-sample the fit beats the defaults (RMS 0.158 against 0.182), but each class is
    explained only by a point that misses the other by 25 %: held out, the fit does worse
    than the defaults, so they stay. The simulation is replaced by these figures so that
    the check, not the simulator, is what is tested."""
    plan, wl, prov, ev = _load()
    shape = resolve_model(prov)
    default = Efficiency().resolve(prov.accelerator, shape.weight_bytes)
    table = {
        (0.6, 0.5): {"interactive": 1.0, "batch": 1.25},
        (0.45, 0.35): {"interactive": 1.25, "batch": 1.0},
        (default.mbu, default.mfu): {"interactive": 1.2, "batch": 1.2},
    }

    def predictions(cases: Sequence[calibration._Case], eff: Efficiency) -> list[Row]:
        factors = table.get((eff.mbu or 0.0, eff.mfu or 0.0), {"interactive": 3, "batch": 3})
        return [
            (case.name, cls, key, measured, measured * factors[cls])
            for case in cases
            for cls, key, measured in case.targets
        ]

    monkeypatch.setattr(calibration, "_engine_predictions", predictions)
    eff, cal = calibrate(
        [_tpot_only(ev)], plan=plan, workload=wl, provider=prov, shape=shape, base=Efficiency()
    )
    assert not cal.fitted and cal.source_evidence == []
    assert (eff.mbu, eff.mfu) == (None, None)  # the base efficiencies, unchanged
    assert cal.default_error == pytest.approx(round(math.log(1.2), 4))
    assert cal.held_out_error == pytest.approx(round(math.log(1.25), 4))
    assert cal.rejected is not None
    assert cal.rejected.startswith(
        "the fit predicts held-out figures no better than the defaults (leave-one-out RMS "
        "log error 0.223 against the defaults' 0.182)"
    )


def test_success_the_examples_fit_beats_the_defaults_held_out() -> None:
    plan, wl, prov, ev = _load()
    cal = recompute(plan, wl, prov, evidence=[ev], seed=0).calibration
    assert cal.fitted
    assert cal.held_out_error is not None and cal.default_error is not None
    assert cal.fit_error is not None and cal.fit_error <= cal.held_out_error
    assert cal.held_out_error < cal.default_error
