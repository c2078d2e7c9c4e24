"""The interval every predicted latency carries: the planner's own held-out error.

The validation (benchmarks/planner/validation.py) replays published vLLM figures that no
default was read from and groups them by accelerator family (the card's ``family``).
``python -m benchmarks.planner.validation_doc`` writes each family's range of errors
(planner / published - 1, lowest and highest) to ``validation_error.json`` beside this
module; tests/planner/test_validation.py fails when the file is stale, so the interval
is never a hand-copied figure.

A prediction P whose family's errors ran from ``low`` to ``high`` was, on those figures,
off by that much: the published value was P / (1 + error). The interval is therefore
[P / (1 + high), P / (1 + low)], widened to contain P. The pessimistic end is the upper
one for a latency (a planner that under-predicted by 20 % puts the truth at P / 0.8).

A family is judged on its own figures only when its kernel efficiencies for the weights'
dtype were measured and at least ``MIN_CASES`` held-out figures back it. Otherwise the
planner prices with assumed or fallback efficiencies and knows little of its error: the
interval is widened to at least ``WIDE`` (the truth anywhere from half to twice the
prediction), and says why.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from registry.planner.catalog import find_accelerator
from registry.planner.efficiency import dtype_key, kernel_efficiency
from registry.planner.result import ClassPrediction, Uncertainty

DATA = Path(__file__).with_name("validation_error.json")
MIN_CASES = 5
# Errors (planner / published - 1) assumed where the planner has no measured kernels or
# too few held-out figures: published anywhere from P / 2 to 2 P. The fallback's worst
# published miss (B200 TPOT at 64 concurrent, +177 %) lies outside; the range is a floor.
WIDE = (-0.5, 1.0)
LATENCY_FIELDS = (
    *(f"{metric}_p{q}_ms" for metric in ("ttft", "tpot", "e2e") for q in (50, 90, 99)),
    "queue_p99_ms",
)


@dataclass(frozen=True)
class ErrorRange:
    cases: int
    low: float
    high: float


@cache
def _read(path: Path) -> dict[str, dict[str, ErrorRange]]:
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return {
        family: {kind: ErrorRange(**stats) for kind, stats in kinds.items()}
        for family, kinds in document["families"].items()
    }


def family_errors(path: Path = DATA) -> dict[str, dict[str, ErrorRange]]:
    """Per family and kind ("latency", "capacity"), the held-out error range."""
    return _read(path)


def uncertainty(
    accelerator: str,
    weight_bytes: float,
    *,
    calibrated: bool,
    errors: Mapping[str, Mapping[str, ErrorRange]] | None = None,
) -> Uncertainty:
    """The interval's basis for a provider's accelerator and weights (``errors``: the
    per-family ranges, validation_error.json's by default)."""
    card = find_accelerator(accelerator)
    family = card.family if card is not None else accelerator
    dtype = dtype_key(weight_bytes)
    # The entry the step model prices with: the fallback (never measured) when there is none.
    measured = kernel_efficiency(accelerator, weight_bytes)[0].measured
    stats = (family_errors() if errors is None else errors).get(family, {}).get("latency")
    cases = stats.cases if stats is not None else 0
    if measured and stats is not None and cases >= MIN_CASES:
        low, high = stats.low, stats.high
        basis = (
            f"the {family} family's held-out error over {cases} published vLLM latency "
            f"figures ({low:+.0%} to {high:+.0%})"
        )
        widened = False
    else:
        low = min(WIDE[0], stats.low if stats is not None else 0.0)
        high = max(WIDE[1], stats.high if stats is not None else 0.0)
        why = (
            f"no measured kernel efficiencies for {family} {dtype}"
            if not measured
            else f"{cases} held-out latency figure{'s' if cases != 1 else ''} for the "
            f"{family} family, fewer than {MIN_CASES}"
        )
        basis = (
            f"{why}: the interval is widened to published values from "
            f"{1 / (1 + high):.2g}x to {1 / (1 + low):.2g}x the prediction"
        )
        widened = True
    judged = (
        "the gate judges the point prediction: fresh load tests calibrated the model"
        if calibrated
        else "the gate judges the pessimistic end: no fresh load test calibrates the model"
    )
    return Uncertainty(
        family=family,
        dtype=dtype,
        measured_efficiencies=measured,
        held_out_cases=cases,
        error_low=round(low, 4),
        error_high=round(high, 4),
        widened=widened,
        calibrated=calibrated,
        basis=f"{basis}; {judged}",
    )


def bounds(value: float, u: Uncertainty) -> tuple[float, float]:
    """The interval around a predicted latency: [optimistic, pessimistic], containing it."""
    optimistic = value / (1.0 + u.error_high)
    pessimistic = value / (1.0 + u.error_low)
    return (round(min(value, optimistic), 3), round(max(value, pessimistic), 3))


def with_intervals(prediction: ClassPrediction, u: Uncertainty) -> ClassPrediction:
    """The class's prediction with an interval on every latency it predicts."""
    intervals = {
        name: list(bounds(value, u))
        for name in LATENCY_FIELDS
        if (value := getattr(prediction, name)) is not None
    }
    return prediction.model_copy(update={"interval_ms": intervals})
