"""The interval on every predicted latency (registry/planner/uncertainty.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from registry.planner.uncertainty import (
    MIN_CASES,
    WIDE,
    ErrorRange,
    bounds,
    family_errors,
    uncertainty,
)

H100 = {"H100": {"latency": ErrorRange(cases=18, low=-0.2, high=0.1)}}


def test_a_measured_family_is_judged_on_its_own_held_out_error() -> None:
    u = uncertainty("H100-SXM-80GB", 2.0, calibrated=False, errors=H100)
    assert (u.family, u.dtype, u.measured_efficiencies, u.widened) == ("H100", "bf16", True, False)
    assert (u.error_low, u.error_high, u.held_out_cases) == (-0.2, 0.1, 18)
    assert "18 published vLLM latency figures" in u.basis and "pessimistic end" in u.basis
    low, high = bounds(100.0, u)
    # Published = predicted / (1 + error): the planner 20 % low puts the truth at 125 ms.
    assert (low, high) == (round(100 / 1.1, 3), 125.0)
    calibrated = uncertainty("H100-SXM-80GB", 2.0, calibrated=True, errors=H100)
    assert "point prediction" in calibrated.basis


def test_the_interval_always_contains_the_prediction() -> None:
    over = uncertainty(
        "H100-SXM-80GB",
        2.0,
        calibrated=False,
        errors={"H100": {"latency": ErrorRange(cases=9, low=0.05, high=0.3)}},
    )
    low, high = bounds(50.0, over)
    assert low < 50.0 == high


def test_few_held_out_figures_or_unmeasured_kernels_widen_the_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    few = {"H100": {"latency": ErrorRange(cases=MIN_CASES - 1, low=-0.05, high=0.02)}}
    u = uncertainty("H100-SXM-80GB", 2.0, calibrated=False, errors=few)
    assert u.widened and (u.error_low, u.error_high) == WIDE
    assert f"fewer than {MIN_CASES}" in u.basis
    # A family's own range wider than the floor is kept.
    wild = {"H100": {"latency": ErrorRange(cases=2, low=-0.7, high=1.8)}}
    assert uncertainty("H100-SXM-80GB", 2.0, calibrated=False, errors=wild).error_low == -0.7
    # A team's card without efficiencies: no measured kernels, the widest interval.
    (tmp_path / "lab.yaml").write_text(
        "kind: accelerator\nname: Lab-GPU-32GB\naliases: [lab-gpu]\nmemory_gib: 32\n"
        "memory_bandwidth_gb_s: 1000\ndense_tflops: {bf16: 200}\ninterconnect: pcie\n"
        "interconnect_gb_s: 64\nsource: the lab's own datasheet, 2026\n"
    )
    monkeypatch.setenv("CAPGATE_CATALOG_PATH", str(tmp_path))
    lab = uncertainty("lab-gpu", 2.0, calibrated=False, errors=H100)
    assert (lab.family, lab.measured_efficiencies, lab.widened) == ("Lab-GPU-32GB", False, True)
    assert "no measured kernel efficiencies for Lab-GPU-32GB bf16" in lab.basis
    assert bounds(100.0, lab) == (50.0, 200.0)


def test_the_shipped_ranges_name_families_of_the_catalog() -> None:
    ranges = family_errors()
    assert "H100" in ranges
    for kinds in ranges.values():
        for stats in kinds.values():
            assert stats.cases >= 1 and stats.low <= stats.high
