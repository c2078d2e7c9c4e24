"""Quantiles from Prometheus histogram buckets, with the bucket that bounds each one.

A Prometheus histogram keeps cumulative counts per upper bound (``le``); the samples
themselves are gone. A quantile is therefore known only to lie in one bucket: the value
reported is interpolated linearly inside it (as PromQL's ``histogram_quantile`` does),
and the bucket's bounds travel with it so that nobody reads an interpolation as a
measurement. Drift rules compare against the bounds, not the interpolated value.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Bucketed:
    """A quantile: its interpolated value and the bucket ``(lower, upper]`` it lies in.

    ``upper`` is ``math.inf`` when the quantile lies beyond the last finite bound; the
    value is then that bound (a floor, as in PromQL)."""

    level: float
    value: float
    lower: float
    upper: float

    @property
    def open_ended(self) -> bool:
        return math.isinf(self.upper)


@dataclass(frozen=True)
class Buckets:
    """Cumulative counts by upper bound, ascending, the last bound ``+Inf``."""

    bounds: tuple[float, ...]
    cumulative: tuple[float, ...]

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[float, float]]) -> Buckets:
        """From ``(le, cumulative count)`` pairs in any order (one per ``le`` label).

        Counts from ``increase()`` are extrapolated floats and may, per bucket, dip
        below the bucket under them by rounding; they are made monotone, as PromQL does.
        """
        ordered = sorted(pairs)
        if not ordered or not math.isinf(ordered[-1][0]):
            raise ValueError("a histogram needs its +Inf bucket")
        bounds = tuple(le for le, _ in ordered)
        if len(set(bounds)) != len(bounds):
            raise ValueError("a histogram has one count per bucket bound")
        running = 0.0
        cumulative = []
        for _, count in ordered:
            running = max(running, count)
            cumulative.append(running)
        return cls(bounds, tuple(cumulative))

    @property
    def total(self) -> float:
        return self.cumulative[-1]

    def quantile(self, level: float) -> Bucketed:
        """The ``level`` quantile (0-100); raises ValueError on an empty histogram."""
        if not 0 <= level <= 100:
            raise ValueError(f"quantile level {level} is not within 0-100")
        if self.total <= 0:
            raise ValueError("the histogram holds no samples")
        rank = level / 100 * self.total
        previous_bound, previous_count = 0.0, 0.0
        for bound, count in zip(self.bounds, self.cumulative, strict=True):
            if count >= rank and count > previous_count:
                if math.isinf(bound):
                    return Bucketed(level, previous_bound, previous_bound, bound)
                lower = min(previous_bound, bound)
                share = (rank - previous_count) / (count - previous_count)
                return Bucketed(level, lower + (bound - lower) * share, lower, bound)
            previous_bound, previous_count = bound, count
        raise AssertionError("unreachable: the +Inf bucket holds every sample")

    def share_at_most(self, limit: float) -> tuple[float, float]:
        """Bounds on the share of samples <= ``limit``: (surely at most, possibly at most).

        Exact when ``limit`` is a bucket bound; otherwise the samples of the bucket that
        straddles it may lie on either side.
        """
        if self.total <= 0:
            raise ValueError("the histogram holds no samples")
        below, below_bound = 0.0, None
        for bound, count in zip(self.bounds, self.cumulative, strict=True):
            if bound <= limit:
                below, below_bound = count, bound
            elif below_bound == limit:  # the limit is a bound: the share is exact
                return below / self.total, below / self.total
            else:  # the first bucket past the limit: some of its samples may be under it
                return below / self.total, count / self.total
        raise AssertionError("unreachable: +Inf is past every limit")

    def edges_and_counts(self, top: float) -> tuple[list[float], list[int]]:
        """Per-bucket counts with explicit edges, the open top bucket closed at ``top``.

        For a registry Histogram (``edges[i] <= x < edges[i+1]``); counts are rounded to
        whole requests. ``top`` must exceed the last finite bound (a token histogram is
        closed at the model's length: no request is longer).
        """
        finite = [b for b in self.bounds if not math.isinf(b)]
        if finite and top <= finite[-1]:
            raise ValueError(f"top {top:g} is not above the last bound {finite[-1]:g}")
        edges = [0.0]
        counts: list[int] = []
        previous = 0.0
        for bound, count in zip([*finite, top], self.cumulative, strict=True):
            if bound <= edges[-1]:
                # A bound at 0 (le="0"): its samples join the first bucket with width.
                continue
            edges.append(bound)
            counts.append(round(count - previous))
            previous = count
        return edges, counts
