"""Shared statistics for importers and trace fitting: quantile keys, units, sketches, CVs.

Everything here is pure and deterministic. Percentiles computed from per-request data use
numpy's default linear interpolation, which is what vLLM's and AIPerf's own summaries use,
so a recomputed p99 can be compared with the one a tool wrote.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from registry.records.common import Basis, Distribution, Histogram, quantile_level
from registry.records.evidence import Percentiles
from registry.records.workload import JointLengths

FloatArray = npt.NDArray[np.float64]

# The percentile levels capgate stores when it computes them itself.
STANDARD_LEVELS: tuple[float, ...] = (1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9)

# Seconds per unit, for the unit strings the tools write.
_UNIT_TO_MS: dict[str, float] = {
    "ms": 1.0,
    "msec": 1.0,
    "milliseconds": 1.0,
    "s": 1000.0,
    "sec": 1000.0,
    "seconds": 1000.0,
    "us": 1e-3,
    "µs": 1e-3,
    "microseconds": 1e-3,
    "ns": 1e-6,
    "nanoseconds": 1e-6,
}


def unit_scale_to_ms(unit: str) -> float | None:
    """Multiplier that turns a value in ``unit`` into milliseconds, or None if not a time unit."""
    return _UNIT_TO_MS.get(unit.strip().lower())


def quantile_key(level: float) -> str:
    """``50.0`` -> ``p50``, ``99.9`` -> ``p99.9``, ``0.1`` -> ``p0.1`` (the schema's key form)."""
    return f"p{level:g}"


def ordered_quantiles(
    values: Mapping[float, float], *, notes: list[str] | None = None, what: str = ""
) -> dict[str, float]:
    """Quantile dict keyed ``pNN``, dropping any level that breaks monotonic order.

    Tools compute their median and their percentiles by different methods (GuideLLM's
    ``median`` and its ``p25``/``p75`` are not from one interpolation), so a stated median can
    sit a hair outside its neighbours. The schema requires non-decreasing quantiles; rather than
    invent a number, the offending level is dropped and the drop is noted.
    """
    items = sorted((lvl, float(v)) for lvl, v in values.items() if v is not None)
    kept: list[tuple[float, float]] = []
    for lvl, v in items:
        if not math.isfinite(v) or v < 0:
            if notes is not None:
                note = f"{what}: p{lvl:g}={v!r} is not a non-negative number; left out"
                notes.append(note)
            continue
        if kept and v < kept[-1][1]:
            if notes is not None:
                notes.append(
                    f"{what}: p{lvl:g}={v:g} is below p{kept[-1][0]:g}={kept[-1][1]:g} as the "
                    "file states them (different methods); p"
                    f"{lvl:g} left out"
                )
            continue
        kept.append((lvl, v))
    return {quantile_key(lvl): v for lvl, v in kept}


def percentiles_ms(
    levels: Mapping[float, float],
    *,
    mean: float | None,
    scale_to_ms: float,
    notes: list[str],
    what: str,
) -> Percentiles | None:
    """A ``Percentiles`` in milliseconds from stated levels in some unit; None if empty."""
    scaled = {lvl: v * scale_to_ms for lvl, v in levels.items() if v is not None}
    quantiles = ordered_quantiles(scaled, notes=notes, what=what)
    if not quantiles:
        return None
    mean_ms = None
    if mean is not None and math.isfinite(mean) and mean >= 0:
        mean_ms = float(mean * scale_to_ms)
    return Percentiles(quantiles=quantiles, mean=mean_ms)


def percentiles_from_samples(samples: FloatArray, *, scale_to_ms: float) -> Percentiles | None:
    """Percentiles (ms) computed from per-request values; None when there are none."""
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return None
    pts = np.percentile(finite, STANDARD_LEVELS) * scale_to_ms
    quantiles = {quantile_key(lvl): float(v) for lvl, v in zip(STANDARD_LEVELS, pts, strict=True)}
    # Rounding in np.percentile can leave a later level 1 ulp below an earlier one.
    fixed: dict[str, float] = {}
    running = 0.0
    for key, value in quantiles.items():
        running = max(running, value)
        fixed[key] = running
    return Percentiles(quantiles=fixed, mean=float(finite.mean() * scale_to_ms))


# --- token-length histograms -------------------------------------------------------------------
#
# One fixed set of bin edges serves every token-length histogram: unit-width bins below 128
# (exact for short prompts and outputs) and geometric bins of ratio 2**(1/32) (~2.2 %) above,
# up to 2**30 tokens. Fixed edges make histograms mergeable and streamable (a trace of millions
# of rows only adds counts), and every power of two is an edge, so the coarse histogram stored in
# records (power-of-two edges) is an exact re-binning of the fine one.

_LINEAR_TOP = 128
_STEPS_PER_OCTAVE = 32
_MAX_EXP = 30


def _fine_edges() -> FloatArray:
    linear = np.arange(0, _LINEAR_TOP, dtype=np.float64)
    octaves = _MAX_EXP - int(math.log2(_LINEAR_TOP))
    k = np.arange(0, octaves * _STEPS_PER_OCTAVE + 1, dtype=np.float64)
    geometric = _LINEAR_TOP * np.power(2.0, k / _STEPS_PER_OCTAVE)
    return np.concatenate([linear, geometric])


FINE_EDGES: FloatArray = _fine_edges()


class LengthSketch:
    """Streaming summary of non-negative lengths: fixed-bin counts plus exact moments.

    Memory is constant (about 800 bins) whatever the number of values; quantiles are read
    from the bins with linear interpolation inside a bin, so their relative error is under
    ~1.1 % above 128 and zero-width below (unit bins over integer token counts).
    """

    __slots__ = ("count", "counts", "maximum", "minimum", "sum", "sum_sq")

    def __init__(self) -> None:
        self.counts: npt.NDArray[np.int64] = np.zeros(FINE_EDGES.size - 1, dtype=np.int64)
        self.count = 0
        self.sum = 0.0
        self.sum_sq = 0.0
        self.minimum = math.inf
        self.maximum = -math.inf

    def add_array(self, values: FloatArray) -> None:
        if values.size == 0:
            return
        if bool(np.any(values < 0)) or not bool(np.all(np.isfinite(values))):
            raise ValueError("lengths must be finite and non-negative")
        if float(values.max()) >= FINE_EDGES[-1]:
            raise ValueError(f"a length of {float(values.max()):g} is beyond 2**{_MAX_EXP}")
        idx = np.searchsorted(FINE_EDGES, values, side="right") - 1
        self.counts += np.bincount(idx, minlength=self.counts.size)
        self.count += int(values.size)
        self.sum += float(values.sum())
        self.sum_sq += float(np.dot(values, values))
        self.minimum = min(self.minimum, float(values.min()))
        self.maximum = max(self.maximum, float(values.max()))

    @property
    def mean(self) -> float:
        return self.sum / self.count if self.count else math.nan

    @property
    def std(self) -> float:
        """Population standard deviation from the running moments."""
        if self.count == 0:
            return math.nan
        var = self.sum_sq / self.count - self.mean**2
        return math.sqrt(max(var, 0.0))

    def cv(self) -> float | None:
        if self.count == 0 or self.mean <= 0:
            return None
        return self.std / self.mean

    def quantile(self, level: float) -> float:
        """Value at percentile ``level`` (0-100), interpolated within its bin, clamped to data."""
        if self.count == 0:
            return math.nan
        target = level / 100.0 * self.count
        cum = np.cumsum(self.counts)
        i = int(np.searchsorted(cum, target, side="left"))
        i = min(i, self.counts.size - 1)
        before = float(cum[i - 1]) if i > 0 else 0.0
        in_bin = float(self.counts[i])
        lo, hi = float(FINE_EDGES[i]), float(FINE_EDGES[i + 1])
        if i < _LINEAR_TOP:
            # Unit bins hold one integer value each; interpolating would invent fractions.
            value = lo
        else:
            frac = (target - before) / in_bin if in_bin else 0.0
            value = lo + (hi - lo) * min(max(frac, 0.0), 1.0)
        return min(max(value, self.minimum), self.maximum)

    def coarse_histogram(self) -> Histogram:
        """Counts re-binned on power-of-two edges 0, 1, 2, 4, ... up past the maximum."""
        top = 1
        while top <= self.maximum:
            top *= 2
        edges = [0.0, 1.0]
        e = 2.0
        while e <= top:
            edges.append(e)
            e *= 2
        fine_idx = np.searchsorted(FINE_EDGES, np.asarray(edges), side="left")
        cum = np.concatenate([[0], np.cumsum(self.counts)])
        counts = [int(cum[b] - cum[a]) for a, b in itertools.pairwise(fine_idx)]
        # Trim empty bins at both ends so small distributions stay small in the record.
        while len(counts) > 1 and counts[-1] == 0:
            counts.pop()
            edges.pop()
        while len(counts) > 1 and counts[0] == 0:
            counts.pop(0)
            edges.pop(0)
        return Histogram(edges=edges, counts=counts)

    def distribution(self, *, with_histogram: bool = True) -> Distribution:
        """A measured ``Distribution`` with the standard quantiles, moments and a histogram."""
        if self.count == 0:
            raise ValueError("no values")
        quantiles = {quantile_key(lvl): float(self.quantile(lvl)) for lvl in STANDARD_LEVELS}
        return Distribution(
            basis=Basis.measured,
            samples=self.count,
            quantiles=quantiles,
            histogram=self.coarse_histogram() if with_histogram else None,
            mean=float(self.mean),
            min=float(self.minimum),
            max=float(self.maximum),
        )


# --- joint (prompt, output) histograms ---------------------------------------------------------
#
# Streamed on a medium grid of whole-token edges: unit bins up to 16 tokens, then 8 geometric
# bins per octave (ratio 2**(1/8), ~9 %, edges rounded up to whole tokens) up to 2**30: 224
# bins per axis, one dense int64 grid of ~400 KiB per class whatever the trace's length. The
# stored histogram merges grid bins so each axis has at most 29 bins, cut at the marginal's
# quantile levels below: 4 % slices of the requests, finer in the upper tail where long
# requests (KV use, requests past max_model_len) are decided.

JOINT_LEVELS: tuple[float, ...] = (
    *(k / 25 for k in range(1, 25)),
    0.98,
    0.99,
    0.995,
    0.999,
)


def _mid_edges() -> FloatArray:
    # 0..16 in unit bins, then 16..128 at 8 per octave: steps of 2, 4 and 8 tokens.
    parts = [np.arange(0, 17, dtype=np.float64)]
    lo = 16
    for step in (2, 4, 8):
        parts.append(np.arange(lo + step, 2 * lo + 1, step, dtype=np.float64))
        lo *= 2
    k = np.arange(1, (_MAX_EXP - 7) * 8 + 1, dtype=np.float64)
    parts.append(np.ceil(_LINEAR_TOP * np.power(2.0, k / 8)))
    return np.concatenate(parts)


MID_EDGES: FloatArray = _mid_edges()


class JointLengthSketch:
    """Streaming 2-D histogram of (prompt, output) lengths on the ``MID_EDGES`` grid."""

    __slots__ = ("counts",)

    def __init__(self) -> None:
        bins = MID_EDGES.size - 1
        self.counts: npt.NDArray[np.int64] = np.zeros((bins, bins), dtype=np.int64)

    def add_arrays(self, prompt: FloatArray, output: FloatArray) -> None:
        """Add pairs; the lengths were checked by the marginal sketches (finite, >= 0)."""
        if prompt.size != output.size:
            raise ValueError("prompt and output lengths must pair up")
        if prompt.size == 0:
            return
        bins = MID_EDGES.size - 1
        i = np.searchsorted(MID_EDGES, prompt, side="right") - 1
        j = np.searchsorted(MID_EDGES, output, side="right") - 1
        flat = np.bincount(i * bins + j, minlength=bins * bins)
        self.counts += flat.reshape(bins, bins)

    @property
    def count(self) -> int:
        return int(self.counts.sum())

    def joint_lengths(self) -> JointLengths:
        """The stored form: grid bins merged at ``JOINT_LEVELS`` of each marginal, sparse."""
        if self.count == 0:
            raise ValueError("no values")
        p_cut = _cuts(self.counts.sum(axis=1))
        o_cut = _cuts(self.counts.sum(axis=0))
        merged = np.add.reduceat(self.counts[p_cut[0] : p_cut[-1]], p_cut[:-1] - p_cut[0], axis=0)
        merged = np.add.reduceat(merged[:, o_cut[0] : o_cut[-1]], o_cut[:-1] - o_cut[0], axis=1)
        rows, cols = np.nonzero(merged)
        cells = [(int(i), int(j), int(merged[i, j])) for i, j in zip(rows, cols, strict=True)]
        return JointLengths(
            prompt_edges=[float(MID_EDGES[k]) for k in p_cut],
            output_edges=[float(MID_EDGES[k]) for k in o_cut],
            cells=cells,
        )


def _cuts(marginal: npt.NDArray[np.int64]) -> npt.NDArray[np.intp]:
    """Grid edge indices bounding the merged bins of one axis (first and last included).

    From the lowest to past the highest non-empty grid bin, cut at the first grid edge at
    or past each of ``JOINT_LEVELS`` of the requests; a grid bin heavier than a slice stays
    one bin, so an axis has at most ``len(JOINT_LEVELS) + 1`` bins.
    """
    nonzero = np.flatnonzero(marginal)
    first, last = int(nonzero[0]), int(nonzero[-1]) + 1
    cum = np.concatenate([[0], np.cumsum(marginal)]) / float(marginal.sum())
    inner = np.searchsorted(cum, np.asarray(JOINT_LEVELS), side="left")
    cuts = np.unique(np.concatenate([[first, last], np.clip(inner, first, last)]))
    return cuts.astype(np.intp)


def length_distribution_from_samples(values: FloatArray) -> Distribution | None:
    """Exact quantiles (numpy) plus the coarse histogram, from per-request token lengths."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return None
    sketch = LengthSketch()
    sketch.add_array(finite)
    pts = np.percentile(finite, STANDARD_LEVELS)
    quantiles: dict[str, float] = {}
    running = 0.0
    for lvl, v in zip(STANDARD_LEVELS, pts, strict=True):
        running = max(running, float(v))
        quantiles[quantile_key(lvl)] = running
    return Distribution(
        basis=Basis.measured,
        samples=int(finite.size),
        quantiles=quantiles,
        histogram=sketch.coarse_histogram(),
        mean=float(finite.mean()),
        min=float(finite.min()),
        max=float(finite.max()),
    )


def stated_length_distribution(
    levels: Mapping[float, float],
    *,
    samples: int | None,
    mean: float | None,
    minimum: float | None,
    maximum: float | None,
    notes: list[str],
    what: str,
) -> Distribution | None:
    """A measured ``Distribution`` from what a summary file states; None if it cannot be one.

    The schema needs a sample count for a measured distribution; a file that states quantiles
    without a count cannot be stored as one, and the caller records it as missing.
    """
    quantiles = ordered_quantiles(levels, notes=notes, what=what)
    if not quantiles or not samples:
        return None
    lo = min(quantiles.values())
    hi = max(quantiles.values())
    # Keep min/max only when consistent with the quantiles (some tools compute them apart).
    min_ok = minimum if minimum is not None and minimum >= 0 and minimum <= lo else None
    max_ok = maximum if maximum is not None and maximum >= hi else None
    return Distribution(
        basis=Basis.measured,
        samples=samples,
        quantiles=quantiles,
        mean=float(mean) if mean is not None and mean >= 0 else None,
        min=float(min_ok) if min_ok is not None else None,
        max=float(max_ok) if max_ok is not None else None,
    )


# --- coefficient of variation ----------------------------------------------------------------

# z-scores of the normal distribution used to turn a quantile spread into a standard deviation.
_SPREADS: tuple[tuple[float, float, float], ...] = (
    (25.0, 75.0, 1.3489795),
    (10.0, 90.0, 2.5631031),
    (5.0, 95.0, 3.2897072),
    (1.0, 99.0, 4.6526957),
)


@dataclass(frozen=True)
class CvEstimate:
    cv: float | None
    basis: str
    samples: int | None
    note: str | None = None


def _tidy(cv: float) -> float:
    """Float noise (a std of 1e-14 for constant lengths) reads as exactly uniform."""
    return 0.0 if abs(cv) < 1e-9 else cv


def cv_from_samples(values: Iterable[float] | FloatArray) -> CvEstimate:
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        return CvEstimate(None, "unavailable", 0, "no per-request values")
    mean = float(arr.mean())
    if mean <= 0:
        return CvEstimate(None, "unavailable", int(arr.size), "mean is zero")
    return CvEstimate(_tidy(float(arr.std() / mean)), "per_request", int(arr.size))


def cv_from_stated(
    *,
    mean: float | None,
    std: float | None,
    levels: Mapping[float, float] | None,
    samples: int | None,
) -> CvEstimate:
    """CV from a stated std and mean, else estimated from a quantile spread (normal approx)."""
    if mean is not None and mean > 0 and std is not None and std >= 0:
        return CvEstimate(
            _tidy(std / mean), "stated_std", samples, "std / mean as the file states them"
        )
    if levels:
        by_level = {float(k): float(v) for k, v in levels.items()}
        centre = mean if mean is not None and mean > 0 else by_level.get(50.0)
        for lo, hi, width in _SPREADS:
            if lo in by_level and hi in by_level and centre and centre > 0:
                sigma = (by_level[hi] - by_level[lo]) / width
                return CvEstimate(
                    sigma / centre,
                    "estimated_from_percentiles",
                    samples,
                    f"(p{hi:g} - p{lo:g}) / {width:.4f} over "
                    f"{'mean' if mean else 'p50'}; assumes a normal shape",
                )
    return CvEstimate(None, "unavailable", samples, "the file states neither std nor a spread")


def levels_from_keys(
    stat: Mapping[str, object], *, median_key: str | None = "median"
) -> dict[float, float]:
    """Percentile levels from keys of the ``pNN`` form (``p99.9``), plus ``median`` as p50."""
    out: dict[float, float] = {}
    for key, value in stat.items():
        if not isinstance(value, int | float) or isinstance(value, bool):
            continue
        if median_key is not None and key == median_key:
            out.setdefault(50.0, float(value))
            continue
        try:
            lvl = quantile_level(key)
        except ValueError:
            continue
        out[lvl] = float(value)
    return out
