"""The held-out set per accelerator family: published figures no planner default was read
from, one module per group of families, each case citing its source.

Each module exports ``CASES`` (latency and capacity figures as benchmarks/planner/cases.py's
``Case``, with ``family`` set to the accelerator card's family). A figure that informed an
efficiency in a card must not be here: that is what keeps the set held out. ``READINGS``
names, per case the planner misses beyond its target, the cause; tests/planner/
test_validation.py makes each a strict xfail.
"""

from __future__ import annotations

from benchmarks.planner.heldout import amd, hopper_blackwell, nvidia_ada_ampere

_MODULES = (amd, hopper_blackwell, nvidia_ada_ampere)
HELD_OUT_CASES = tuple(case for module in _MODULES for case in module.CASES)
HELD_OUT_READINGS = {name: text for module in _MODULES for name, text in module.READINGS.items()}
