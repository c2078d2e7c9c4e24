"""Whether a calibration earns its place: leave-one-group-out over the fitted figures.

Each group (one metric of one class of one test: its p50, p90 and p99 move together) is
predicted by the best simulated point fitted to the other groups, shrunk toward the
defaults by a share alpha; the largest share at which no held-out group does worse than
the defaults is what the calibration may use (``calibration`` module docstring).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain

from registry.planner.calibration_loss import (
    Engine,
    Group,
    as_residuals,
    best_frontend,
    frontend_prior,
    group_of,
    rms,
    total_loss,
)
from registry.planner.result import CalibrationGroup, CalibrationResidual

Point = tuple[float, float]

# How much of a fit is tried, largest first: the fractions move this share of the way from
# the defaults to the fit in log space (a ratio, as the errors are), the API server time
# this share of its difference. 0 is the defaults themselves: a fit no share of which is
# safe on every held-out group is not used.
SHRINKAGE = (1.0, 0.75, 0.5, 0.25)


@dataclass(frozen=True)
class Fit:
    """A calibration point: the fractions simulated and the API server time on top."""

    point: Point
    frontend_ms: float


def shrink(fit: Fit, default: Fit, alpha: float) -> Fit:
    """``alpha`` of the way from ``default`` to ``fit``: geometric for the fractions (a step
    time is inversely proportional to them, so log space is where errors are symmetric),
    linear for the API server time (an added constant, which may be 0)."""
    if alpha >= 1.0:
        return fit
    if alpha <= 0.0:
        return default

    def toward(d: float, f: float) -> float:
        # Rounded so that a blended point is one key of the simulated points.
        return round(math.exp(math.log(d) + alpha * (math.log(f) - math.log(d))), 4)

    (dm, df), (fm, ff) = default.point, fit.point
    front = default.frontend_ms + alpha * (fit.frontend_ms - default.frontend_ms)
    return Fit((toward(dm, fm), toward(df, ff)), round(front, 3))


def fold_fits(simulated: dict[Point, Engine], default_frontend: float) -> dict[Group, Fit]:
    """For each group (evidence, class, metric), the simulated point and API server time
    that fit the other groups best; empty with fewer than two groups.

    Every simulated point has the same figures in the same order, so a fold reruns no
    simulation.
    """
    if not simulated:
        return {}
    rows = next(iter(simulated.values()))
    groups = sorted({group_of(row) for row in rows})
    if len(groups) < 2:
        return {}
    fits: dict[Group, Fit] = {}
    for group in groups:

        def fold_loss(engine: Engine, group: Group = group) -> tuple[float, float]:
            kept = [row for row in engine if group_of(row) != group]
            front = best_frontend(kept, default_frontend)
            loss = total_loss(as_residuals(kept, front)) + frontend_prior(front, default_frontend)
            return loss, front

        scored = [(fold_loss(engine), key) for key, engine in simulated.items()]
        (_, front), best = min(scored, key=lambda item: (item[0][0], item[1]))
        fits[group] = Fit(best, front)
    return fits


def held_out_residuals(
    fits: dict[Group, Fit], engines: dict[Point, Engine]
) -> dict[Group, list[CalibrationResidual]]:
    """Each group's figures as predicted by its fold's fit (``engines`` holds its point)."""
    return {
        group: as_residuals(
            [row for row in engines[fit.point] if group_of(row) == group], fit.frontend_ms
        )
        for group, fit in fits.items()
    }


def held_out_error(simulated: dict[Point, Engine], default_frontend: float) -> float | None:
    """Leave-one-group-out RMS log error of the full fit; None with one group."""
    fits = fold_fits(simulated, default_frontend)
    if not fits:
        return None
    held = held_out_residuals(fits, simulated)
    return rms([r for rows in held.values() for r in rows])


@dataclass(frozen=True)
class Shrinkage:
    """The share of a fit that held-out figures support, and the errors that chose it.

    ``alpha`` is None when no share of the fit is safe: then the errors are the full
    fit's (alpha 1), which is what was rejected.
    """

    alpha: float | None
    held_out_error: float
    groups: list[CalibrationGroup]

    @property
    def worst(self) -> CalibrationGroup:
        """The group nearest to (or furthest into) doing worse than the defaults."""
        return max(
            self.groups,
            key=lambda g: (
                g.held_out_error - g.default_error,
                g.evidence,
                g.traffic_class,
                g.metric,
            ),
        )


def choose_shrinkage(
    fits: dict[Group, Fit],
    default: Fit,
    engines: dict[Point, Engine],
    simulate: Callable[[Sequence[Point]], None],
) -> Shrinkage:
    """The largest share of each fold's fit under which no held-out group does worse.

    At each ``alpha`` of SHRINKAGE, every group is predicted by its fold's fit shrunk that
    far toward the defaults; the alpha is kept when each group's RMS log error is at most
    the defaults' on the same group and the overall held-out error is below the defaults'.
    A single group allowed to worsen would let a fit trade one figure for another, which
    is what issue 28 found calibration doing (TTFT p50 +31 % for the tail points).
    ``engines`` holds the defaults' point and every fold's; ``simulate`` adds the points
    it is asked for to it (a batch per alpha, so a full fit that passes costs nothing).
    """
    at_default = held_out_residuals(dict.fromkeys(fits, default), engines)
    default_rms = rms([r for rows in at_default.values() for r in rows])

    def at(alpha: float) -> Shrinkage:
        shrunk = {g: shrink(fit, default, alpha) for g, fit in fits.items()}
        simulate([f.point for f in shrunk.values()])
        held = held_out_residuals(shrunk, engines)
        groups = [
            CalibrationGroup(
                evidence=g[0],
                traffic_class=g[1],
                metric=g[2],
                held_out_error=rms(held[g]),
                default_error=rms(at_default[g]),
            )
            for g in sorted(fits)
        ]
        overall = rms([r for rows in held.values() for r in rows])
        return Shrinkage(alpha, overall, groups)

    full = at(SHRINKAGE[0])  # the whole fit: tried first, and reported if nothing is safe
    # Smaller shares are simulated only if the larger ones failed (lazily).
    for result in chain([full], (at(alpha) for alpha in SHRINKAGE[1:])):
        # Compared rounded, as reported: a tie in the fourth decimal is no worse.
        if result.held_out_error < default_rms and all(
            g.held_out_error <= g.default_error for g in result.groups
        ):
            return result
    return Shrinkage(None, full.held_out_error, full.groups)
