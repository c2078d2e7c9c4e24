"""A validation case (a published figure, its source and the planner's reading of it) and
its outcome; shared by benchmarks/planner/validation.py and the held-out set."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    name: str
    kind: str  # memory | latency | throughput | scaling
    source: str
    unit: str
    published: float
    compute: Callable[[], float]
    target: float  # acceptable |relative error|
    note: str = ""
    # False when a planner default was read from this case (memory profiles name theirs).
    held_out: bool = True
    # Memory cases: the start-up verdict vLLM reached (True = engine started).
    fits: bool | None = None
    planner_fits: Callable[[], bool] | None = None
    # The accelerator family (the card's ``family``) of a latency or capacity case: the
    # per-family table and the planner's stated interval group by it ("" = not grouped).
    family: str = ""


@dataclass(frozen=True)
class Outcome:
    case: Case
    predicted: float

    @property
    def error(self) -> float:
        return self.predicted / self.case.published - 1.0

    @property
    def verdict_ok(self) -> bool:
        """The planner's fit verdict matches vLLM's (true when the case states none)."""
        c = self.case
        return c.fits is None or c.planner_fits is None or c.planner_fits() == c.fits

    @property
    def within(self) -> bool:
        return abs(self.error) <= self.case.target and self.verdict_ok
