"""Drawing requests from a workload's own distributions and arrival process.

Token lengths come from the stated quantiles (interpolated in log space, since lengths are
roughly log-normal between quantiles) or from the histogram (uniform within a bin), never
from a mean. A class fitted from a trace also carries ``joint_lengths``, a 2-D histogram of
(prompt, output) per request: then each pair is drawn together (a cell by its count, then
a level inside the cell's slice of each marginal), so long prompts keep the outputs they
came with, and each length's own distribution is exactly the class's stated one. Without
it the two are drawn independently.

Lengths are never cut short: a request whose prompt plus output exceeds ``max_model_len``
is marked ``rejected`` (vLLM refuses it), as is one whose prompt alone does. Only the
client's own ``max_output_tokens`` limits an output.

Arrivals are a gamma renewal process whose inter-arrival coefficient of variation is the
class's ``interarrival_cv`` (1.0 is Poisson, above 1 bursty).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from registry.planner.unknowns import planned_cancellation_rate
from registry.records.common import Distribution, quantile_level
from registry.records.workload import JointLengths, TrafficClass

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


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
    return lengths_at(dist, rng.random(n), cap=cap, log_space=log_space)


def lengths_at(
    dist: Distribution, u: FloatArray, *, cap: float | None = None, log_space: bool = True
) -> IntArray:
    """Lengths at CDF levels ``u`` (in [0, 1]) of the inverse CDF ``sample_lengths`` uses."""
    levels, values = inverse_cdf(dist, cap=cap)
    if dist.quantiles and log_space:
        drawn = np.exp(np.interp(u, levels, np.log(values)))
    else:
        drawn = np.interp(u, levels, values)
    return np.maximum(1, np.rint(drawn)).astype(np.int64)


def profile_quantile(dist: Distribution, level: float) -> float:
    """The value at CDF ``level`` (0-1) of the inverse CDF the sampler draws from, unrounded:
    what the profile says its ``level`` quantile is, between its stated ones too."""
    levels, values = inverse_cdf(dist)
    if dist.quantiles:
        return float(np.exp(np.interp(level, levels, np.log(values))))
    return float(np.interp(level, levels, values))


def joint_levels(
    joint: JointLengths, n: int, rng: np.random.Generator
) -> tuple[FloatArray, FloatArray]:
    """``n`` pairs of CDF levels (prompt, output) that follow the joint histogram.

    A cell is picked with probability count / total. Its prompt bin spans the levels
    [requests in lower prompt bins, ... plus its own bin] / total of the prompt marginal
    (likewise for output); a level is drawn uniformly inside each span. Each level is then
    uniform on [0, 1] overall, so the lengths read at them through the class's own inverse
    CDFs have exactly the class's stated distributions, and the pairing follows the cells.
    """
    cells = np.asarray(joint.cells, dtype=np.int64).reshape(-1, 3)
    counts = cells[:, 2].astype(np.float64)
    total = float(counts.sum())
    spans = []
    for axis, edges in ((0, joint.prompt_edges), (1, joint.output_edges)):
        per_bin = np.bincount(cells[:, axis], weights=counts, minlength=len(edges) - 1)
        spans.append(np.concatenate([[0.0], np.cumsum(per_bin)]) / total)
    cum = np.cumsum(counts)
    pick = np.searchsorted(cum, rng.random(n) * total, side="right")
    pick = np.minimum(pick, len(counts) - 1)
    levels = []
    for axis, span in enumerate(spans):
        b = cells[pick, axis]
        lo, hi = span[b], span[b + 1]
        levels.append(np.minimum(lo + (hi - lo) * rng.random(n), 1.0))
    return levels[0], levels[1]


def draw_lengths(cls: TrafficClass, n: int, rng: np.random.Generator) -> tuple[IntArray, IntArray]:
    """``n`` (prompt, output) pairs, jointly when the class has ``joint_lengths``.

    Nothing is cut to a model length; outputs are capped only at ``max_output_tokens``
    (the clients' own max_tokens).
    """
    if cls.joint_lengths is not None:
        u_prompt, u_output = joint_levels(cls.joint_lengths, n, rng)
        prompt = lengths_at(cls.prompt_tokens, u_prompt)
        output = lengths_at(cls.output_tokens, u_output)
    else:
        prompt = sample_lengths(cls.prompt_tokens, n, rng)
        output = sample_lengths(cls.output_tokens, n, rng)
    if cls.max_output_tokens is not None:
        output = np.minimum(output, cls.max_output_tokens)
    return prompt, output


def past_model_length(prompt: IntArray, output: IntArray, max_model_len: int) -> BoolArray:
    """Requests vLLM refuses: prompt plus output (or the prompt alone) over the model length."""
    return np.asarray(prompt + output > max_model_len, dtype=np.bool_)


def gamma_gaps(cv: float, n: int, rng: np.random.Generator) -> FloatArray:
    """Unit-mean inter-arrival gaps with coefficient of variation ``cv`` (gamma renewal).

    Gaps have unit mean so that one draw serves every rate (common random numbers: more
    load brings the same requests closer together).
    """
    shape = 1.0 / (cv * cv)
    return rng.gamma(shape, 1.0 / shape, n)


def _no_rejections() -> BoolArray:
    return np.zeros(0, dtype=np.bool_)


@dataclass(frozen=True)
class ClassStream:
    """Pre-drawn requests of one class at unit rate; scale the times by 1/rate to use.

    ``rejected`` marks requests longer than the model length (prompt plus output over
    ``max_model_len``): vLLM refuses them on arrival, so they fail without being served.
    Their ``prompt`` and ``output`` are the drawn lengths, uncut. A stream built without
    ``rejected`` rejects nothing.
    """

    name: str
    unit_times: FloatArray
    prompt: IntArray
    output: IntArray
    cancel_fraction: FloatArray  # NaN when not cancelled; else share of output produced
    rejected: BoolArray = field(default_factory=_no_rejections)

    def __post_init__(self) -> None:
        n = len(self.prompt)
        if len(self.rejected) == 0 and n:
            object.__setattr__(self, "rejected", np.zeros(n, dtype=np.bool_))
        if not len(self.unit_times) == len(self.output) == len(self.rejected) == n:
            raise ValueError(f"class stream {self.name!r}: arrays of different lengths")

    def head(self, n: int, *, unit_times: FloatArray | None = None) -> ClassStream:
        """The first ``n`` requests, every per-request array cut alike (times replaceable)."""
        return ClassStream(
            name=self.name,
            unit_times=self.unit_times[:n] if unit_times is None else unit_times,
            prompt=self.prompt[:n],
            output=self.output[:n],
            cancel_fraction=self.cancel_fraction[:n],
            rejected=self.rejected[:n],
        )


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
    prompt, output = draw_lengths(cls, n, rng)
    # Over the model length is refused (HTTP 400), not shortened: marked, never cut.
    rejected = past_model_length(prompt, output, max_model_len)
    # Unknown (null) reads as no cancellations: the heavier load, never a guess.
    cancelled = rng.random(n) < planned_cancellation_rate(cls)
    frac = np.where(cancelled, rng.random(n), np.nan)
    return ClassStream(
        name=cls.name,
        unit_times=np.cumsum(gaps),
        prompt=prompt,
        output=output,
        cancel_fraction=frac,
        rejected=rejected,
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
    shorter one. Drawn as ``draw_class`` draws (jointly when the class has
    ``joint_lengths``, outputs capped only at ``max_output_tokens``) with a fixed generator
    of its own, so the simulation's streams are untouched.
    """
    rng = np.random.default_rng(seed)
    prompt, output = draw_lengths(cls, OVERFLOW_DRAWS, rng)
    return float(np.mean(past_model_length(prompt, output, max_model_len)))
