"""Axes for the report's SVG charts: data onto pixels on a linear or log scale, widened to
round ticks (1, 2, 5 x 10^k), and numbers as the charts write them.
"""

from __future__ import annotations

import math


def finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def format_number(value: float, digits: int = 3) -> str:
    """At most ``digits`` significant digits, thousands separated, no trailing zeros."""
    if not math.isfinite(value):
        return "-"
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    text = f"{round(value, decimals):,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def nice_step(span: float, count: int) -> float:
    """A 1, 2 or 5 times a power of ten step giving about ``count`` intervals."""
    raw = span / max(1, count)
    power = 10.0 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * power:
            return factor * power
    return 10 * power


class LinearScale:
    """Data [lo, hi] onto pixels [start, end], the domain widened to round ticks."""

    def __init__(self, lo: float, hi: float, start: float, end: float, *, ticks: int = 5) -> None:
        if hi - lo <= 1e-9 * max(abs(lo), abs(hi)):  # one value (or below float's grain)
            pad = abs(lo) * 0.1 or 1.0
            lo, hi = lo - pad, hi + pad
        step = nice_step(hi - lo, ticks)
        self.step = step
        low, high = math.floor(lo / step), math.ceil(hi / step)
        low -= low * step > lo  # float division may land a hair past the data
        high += high * step < hi
        self.lo, self.hi = low * step, high * step
        self.start, self.end = start, end

    def __call__(self, value: float) -> float:
        return self.start + (value - self.lo) / (self.hi - self.lo) * (self.end - self.start)

    def ticks(self) -> list[float]:
        count = round((self.hi - self.lo) / self.step)
        return [self.lo + i * self.step for i in range(count + 1)]


class LogScale:
    """Data [lo, hi] (positive) onto pixels, the domain widened to 1, 2, 5 x 10^k."""

    def __init__(self, lo: float, hi: float, start: float, end: float) -> None:
        lo, hi = max(lo, 1e-12), max(hi, 1e-12)
        if hi <= lo:
            lo, hi = lo / 2, hi * 2
        self.lo = _round_125(lo, down=True)
        self.hi = _round_125(hi, down=False)
        self.start, self.end = start, end

    def __call__(self, value: float) -> float:
        span = math.log10(self.hi) - math.log10(self.lo)
        return self.start + (math.log10(value) - math.log10(self.lo)) / span * (
            self.end - self.start
        )

    def ticks(self) -> list[float]:
        decades = math.log10(self.hi) - math.log10(self.lo)
        factors = (1, 2, 5) if decades <= 3 else (1,)
        out = []
        for power in range(math.floor(math.log10(self.lo)), math.ceil(math.log10(self.hi)) + 1):
            for factor in factors:
                value = factor * 10.0**power
                if self.lo * (1 - 1e-9) <= value <= self.hi * (1 + 1e-9):
                    out.append(value)
        return out


def _round_125(value: float, *, down: bool) -> float:
    power = 10.0 ** math.floor(math.log10(value))
    steps = (1, 2, 5, 10)
    if down:
        return max(f * power for f in steps if f * power <= value * (1 + 1e-9))
    return min(f * power for f in steps if f * power >= value * (1 - 1e-9))


Scale = LinearScale | LogScale


def pick_scale(
    values: list[float], start: float, end: float, *, log: bool, include_zero: bool
) -> Scale:
    if log:
        positive = [v for v in values if v > 0]
        if not positive:
            return LogScale(1.0, 10.0, start, end)
        return LogScale(min(positive), max(positive), start, end)
    if not values:
        return LinearScale(0.0, 1.0, start, end)
    lo, hi = min(values), max(values)
    if include_zero:
        lo, hi = min(lo, 0.0), max(hi, 0.0)
    return LinearScale(lo, hi, start, end)
