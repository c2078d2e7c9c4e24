"""The arithmetic of a decode stretch: many decode-only steps priced in closed form.

Between events a replica's decode batch is fixed, so step ``j`` (from 1) of a stretch takes
``c + m + b * (j - 1)``: a constant part ``c``, the KV read of the context at the stretch's
start ``m``, and ``b`` more for the tokens each step adds. The sum over ``k`` steps is
written once here, with the operations in one order, so that the scheduler's stretch, its
cut at an arrival and ``step_time.lines_sum`` agree to the last bit.
"""

from __future__ import annotations

import math

# The most steps one stretch covers: bounds a stretch that no completion or KV limit ends.
MAX_STRETCH = 1 << 16


def line_sum(c: float, m: float, b: float, kf: float) -> float:
    """Time of the first ``kf`` steps (a whole number as a float: int-by-float products are
    one of CPython's slow paths)."""
    return c * kf + (m * kf + b * (kf - 1.0) * kf / 2.0)


def cpu_bound(c: float, m: float, b: float, floor: float, k: int) -> tuple[float, float, int]:
    """The stretch's line under async scheduling, where a step takes at least the CPU's
    ``floor``: while the GPU's step (growing with the KV read) is shorter, each step takes
    the floor, and the stretch ends where the GPU's step passes it. Returns ``c``, ``b`` and
    the steps, unchanged when the first step is already GPU bound."""
    if c + m >= floor:
        return c, b, k
    if b > 0.0:
        cpu_steps = math.ceil((floor - c - m) / b)
        if cpu_steps < k:
            k = cpu_steps
    return floor - m, 0.0, k


def steps_within(c: float, m: float, b: float, total: float, lim: float, elapsed: float) -> float:
    """Steps of a ``lim``-step stretch taking ``total`` finished by ``elapsed`` (as a float),
    each partial sum written as ``line_sum`` writes it (``step_time.steps_within`` for
    these equal-slope lines)."""
    if elapsed < c + m:
        return 0.0
    # The whole part, as int() then float(); a stretch that takes no time starts from its end.
    done = (elapsed / (total / lim)) // 1.0 if total > 0.0 else lim
    if done > lim:
        done = lim
    while done < lim:
        j = done + 1.0
        if line_sum(c, m, b, j) > elapsed:
            break
        done = j
    while done > 0.0 and line_sum(c, m, b, done) > elapsed:
        done -= 1.0
    return done
