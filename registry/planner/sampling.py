"""Drawing requests from a workload's own distributions and arrival process.

Token lengths come from the stated quantiles (interpolated in log space, since lengths are
roughly log-normal between quantiles) or from the histogram (uniform within a bin), never
from a mean. Arrivals are a gamma renewal process whose inter-arrival coefficient of
variation is the class's ``interarrival_cv`` (1.0 is Poisson, above 1 bursty).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from registry.planner.unknowns import planned_cancellation_rate
from registry.records.common import Distribution, quantile_level
from registry.records.workload import TrafficClass

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def inverse_cdf(
    dist: Distribution, *, floor: float = 1.0, cap: float | None = None
) -> tuple[FloatArray, FloatArray]:
    """Knots (levels in [0, 1], values) of a piecewise log-linear inverse CDF."""
    if dist.quantiles:
        pts = sorted((quantile_level(k) / 100.0, max(v, floor)) for k, v in dist.quantiles.items())
    else:
        assert dist.histogram is not None
        hist = dist.histogram
        counts = np.asarray(hist.counts, dtype=float)
        cum = np.concatenate([[0.0], np.cumsum(counts) / counts.sum()])
        pts = [(float(c), max(float(e), floor)) for c, e in zip(cum, hist.edges, strict=True)]
        # Histogram bins are uniform inside; linear interpolation keeps that exactly.
        levels = np.array([p[0] for p in pts])
        values = np.array([p[1] for p in pts])
        if cap is not None:
            values = np.minimum(values, cap)
        return levels, values
    lo = dist.min if dist.min is not None else None
    hi = dist.max if dist.max is not None else None
    if pts[0][0] > 0.0:
        if lo is None:
            lo = _extrapolate(pts, 0.0)
        pts.insert(0, (0.0, max(floor, min(lo, pts[0][1]))))
    if pts[-1][0] < 1.0:
        if hi is None:
            hi = _extrapolate(pts, 1.0)
        pts.append((1.0, max(hi, pts[-1][1])))
    levels = np.array([p[0] for p in pts])
    values = np.array([p[1] for p in pts])
    if cap is not None:
        values = np.minimum(values, cap)
    return levels, values


def _extrapolate(pts: list[tuple[float, float]], level: float) -> float:
    """Log-linear extrapolation from the two nearest stated quantiles."""
    if len(pts) == 1:
        return pts[0][1]
    (l1, v1), (l2, v2) = (pts[0], pts[1]) if level < pts[0][0] else (pts[-2], pts[-1])
    slope = (math.log(v2) - math.log(v1)) / (l2 - l1)
    return math.exp(math.log(v2) + slope * (level - l2))


def sample_lengths(
    dist: Distribution,
    n: int,
    rng: np.random.Generator,
    *,
    cap: float | None = None,
    log_space: bool = True,
) -> IntArray:
    levels, values = inverse_cdf(dist, cap=cap)
    u = rng.random(n)
    if dist.quantiles and log_space:
        drawn = np.exp(np.interp(u, levels, np.log(values)))
    else:
        drawn = np.interp(u, levels, values)
    return np.maximum(1, np.rint(drawn)).astype(np.int64)


def gamma_gaps(cv: float, n: int, rng: np.random.Generator) -> FloatArray:
    """Unit-mean inter-arrival gaps with coefficient of variation ``cv`` (gamma renewal).

    Gaps have unit mean so that one draw serves every rate (common random numbers: more
    load brings the same requests closer together).
    """
    shape = 1.0 / (cv * cv)
    return rng.gamma(shape, 1.0 / shape, n)


@dataclass(frozen=True)
class ClassStream:
    """Pre-drawn requests of one class at unit rate; scale the times by 1/rate to use."""

    name: str
    unit_times: FloatArray
    prompt: IntArray
    output: IntArray
    cancel_fraction: FloatArray  # NaN when not cancelled; else share of output produced


def draw_class(
    cls: TrafficClass,
    n: int,
    rng: np.random.Generator,
    *,
    max_model_len: int,
    uniform_cv: float | None = None,
) -> ClassStream:
    cv = uniform_cv if uniform_cv is not None else cls.arrival.interarrival_cv
    gaps = gamma_gaps(cv, n, rng)
    max_out = cls.max_output_tokens or max_model_len
    prompt = sample_lengths(cls.prompt_tokens, n, rng, cap=max_model_len - 1)
    output = sample_lengths(cls.output_tokens, n, rng, cap=max_out)
    # A request never exceeds the model length: vLLM stops generation at max_model_len.
    output = np.minimum(output, np.maximum(1, max_model_len - prompt))
    # Unknown (null) reads as no cancellations: the heavier load, never a guess.
    cancelled = rng.random(n) < planned_cancellation_rate(cls)
    frac = np.where(cancelled, rng.random(n), np.nan)
    return ClassStream(
        name=cls.name,
        unit_times=np.cumsum(gaps),
        prompt=prompt,
        output=output,
        cancel_fraction=frac,
    )


def quantile_of(distribution: Distribution, level: float) -> float:
    """The stated quantile at ``level`` (0-100), or that of the inverse CDF the sampler uses."""
    stated = distribution.quantile(level)
    if stated is not None:
        return float(stated)
    levels, values = inverse_cdf(distribution)
    return float(np.interp(level / 100.0, levels, values))


def p99_of(distribution: Distribution) -> float:
    return quantile_of(distribution, 99)


OVERFLOW_DRAWS = 20_000


def context_overflow_share(cls: TrafficClass, max_model_len: int, *, seed: int = 0) -> float:
    """Share of the class's requests whose prompt + output exceed ``max_model_len``.

    vLLM rejects such a request (the prompt alone, or prompt plus the tokens it asks for,
    is longer than the model length it was started with), so it is a failed request, not a
    shorter one. Drawn from the uncapped distributions with a fixed generator of its own,
    so the simulation's streams are untouched.
    """
    rng = np.random.default_rng(seed)
    prompt = sample_lengths(cls.prompt_tokens, OVERFLOW_DRAWS, rng)
    output = sample_lengths(cls.output_tokens, OVERFLOW_DRAWS, rng)
    if cls.max_output_tokens is not None:
        output = np.minimum(output, cls.max_output_tokens)
    return float(np.mean(prompt + output > max_model_len))
