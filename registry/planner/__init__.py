"""The embedded planner: a pure, deterministic, seeded recomputation of capacity plans.

Entry points: ``recompute`` (the full check behind a gate decision), ``render_text`` and
``render_chart``; ``PLANNER_VERSION`` identifies the model that produced a result. No I/O
except ``render_chart`` writing the file it is given.

The names load on first use (PEP 562): a gate check that reuses a stored recomputation
reads ``registry.planner.result`` and must not pay for NumPy and the simulator.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from registry.planner.recomputation import recompute
    from registry.planner.render import render_chart, render_text
    from registry.planner.result import PlanRecomputation
    from registry.planner.version import PLANNER_VERSION

__all__ = ["PLANNER_VERSION", "PlanRecomputation", "recompute", "render_chart", "render_text"]

_HOME = {
    "PLANNER_VERSION": "registry.planner.version",
    "PlanRecomputation": "registry.planner.result",
    "recompute": "registry.planner.recomputation",
    "render_chart": "registry.planner.render",
    "render_text": "registry.planner.render",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(home), name)
