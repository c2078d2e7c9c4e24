"""Event kinds and request states of the simulation.

Events are plain tuples ``(time, kind, seq, a, b)`` on a heap; ``seq`` is a per-run counter
so that ties resolve in a fixed order (vidur's explicit ordering key) without any state that
outlives a run. At equal times a step's end is handled before arrivals (it frees capacity
the arrival may use) and arrivals before queue deadlines.
"""

from __future__ import annotations

from typing import Final

STEP_END: Final = 0
ARRIVAL: Final = 1
DEADLINE: Final = 2

WAITING: Final = 0
PREFILL: Final = 1
DECODE: Final = 2
DONE: Final = 3
SHED: Final = 4
