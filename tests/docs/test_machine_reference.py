"""The generated benchmark pages state how fast the machine ran Python when they were
measured (benchmarks/machine.py), so runs at different hours can be compared."""

from __future__ import annotations

from benchmarks.machine import reference_note, reference_seconds
from benchmarks.planner.bench_command import section


def test_the_reference_is_a_positive_cpu_time_and_the_note_states_it() -> None:
    seconds = reference_seconds(runs=1)
    assert 0 < seconds < 60
    assert f"machine speed reference {seconds:.2f} s" in reference_note(seconds)


def test_the_planner_speed_page_states_the_reference_it_was_measured_at() -> None:
    text = section([], (0.5, 0.7), "2026-12-08", 0.61)
    assert "machine speed reference 0.61 s" in text
    assert "load average 0.50 at the start and 0.70 at the end" in text
