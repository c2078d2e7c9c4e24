"""The embedded planner: a pure, deterministic, seeded recomputation of capacity plans.

Entry points: ``recompute`` (the full check behind a gate decision), ``render_text`` and
``render_chart``; ``PLANNER_VERSION`` identifies the model that produced a result. No I/O
except ``render_chart`` writing the file it is given.
"""

from registry.planner.recompute import PLANNER_VERSION, recompute
from registry.planner.render import render_chart, render_text
from registry.planner.result import PlanRecomputation

__all__ = ["PLANNER_VERSION", "PlanRecomputation", "recompute", "render_chart", "render_text"]
