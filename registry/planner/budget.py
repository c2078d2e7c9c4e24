"""The planner's wall-time budget: a recomputation that runs past it is refused, never a hang."""

from __future__ import annotations

import os

from registry.errors import InvalidInput

# Wall time one evaluator (one recomputation or calibration) may spend simulating: the
# largest plan the schema accepts takes about 11 s on 2 cores, so this only stops work
# that something else failed to bound. CAPGATE_PLANNER_BUDGET_S overrides it.
BUDGET_ENV = "CAPGATE_PLANNER_BUDGET_S"
DEFAULT_BUDGET_S = 300.0


class PlannerBudgetExceeded(InvalidInput):
    """The recomputation ran past its wall-time budget: a 422 / exit 2, never a hang."""


def budget_s() -> float:
    text = os.environ.get(BUDGET_ENV)
    try:
        value = float(text) if text else DEFAULT_BUDGET_S
    except ValueError:
        value = DEFAULT_BUDGET_S
    return value if value > 0 else DEFAULT_BUDGET_S
