"""Held-out published figures: see benchmarks/planner/heldout/__init__.py."""

from __future__ import annotations

from benchmarks.planner.cases import Case

CASES: tuple[Case, ...] = ()
READINGS: dict[str, str] = {}
