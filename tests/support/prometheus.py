"""A real Prometheus server holding vLLM-shaped series of known distributions.

Three parts:

1. **Generation.** :func:`write_openmetrics` draws every request of a :class:`Dataset`
   (traffic classes, pods, a vLLM release, a time span, a scrape interval) with seeded
   numpy generators and streams what Prometheus would have scraped from each pod into an
   OpenMetrics file: cumulative histograms and counters, and gauges, at every scrape
   timestamp. Metric names come from :func:`registry.observe.catalog.signals` and the
   buckets from :func:`registry.observe.catalog.buckets`. It returns the :class:`Truth`:
   the exact sample statistics of what the histograms hold.
2. **Backfill and serve.** :func:`prometheus_holding` runs ``promtool tsdb
   create-blocks-from openmetrics`` into a fresh TSDB and starts ``prometheus`` on a free
   loopback port over it (no scrape targets), until the ``with`` block ends.
3. **Fixtures.** ``prometheus_binaries`` (session; skips when prometheus/promtool are
   absent) and ``backfilled_prometheus`` (module; a factory: datasets -> running server).
   Import both into a ``conftest.py`` (``tests/observe/conftest.py`` does).

The model, kept deliberately simple:

- Each traffic class is one deployment of ``pods`` pods (the class label is added by
  relabelling per deployment, so every series of a pod carries one class value). Pods
  are named ``vllm-<class>-<i>``; requests go to a pod uniformly at random.
- Arrivals are a renewal process with gamma inter-arrival times of the given CV (1.0 is
  Poisson), optionally time-changed so that one window of ``peak_duration_s`` runs at
  ``peak_rps`` while the whole span still averages ``rate_rps``.
- Lengths and latencies are lognormal, each given by its p50 and p99. Queue time and
  prefill time are drawn; TTFT = queue + prefill (vLLM measures TTFT from arrival);
  inter-token latency is constant within a request; e2e = TTFT + (output - 1) * ITL.
- A share of requests is aborted after their first token, with a uniformly truncated
  output (finished_reason ``abort``); outputs reaching ``max_output_tokens`` finish with
  ``length``, the rest with ``stop``. A share is preempted once (the counter moves half
  way through its decode). Preemption and the latency model are independent of load.
- When observations become visible: TTFT at the first token; everything else (request
  counter, prompt/generation tokens, e2e, queue, and all of a request's ITL
  observations, one per output token after the first) when the request finishes. A
  scrape at ``t`` shows what was recorded at or before ``t``.
- Gauges per pod: ``running`` counts requests between admission and finish, ``waiting``
  between arrival and admission, KV-cache usage is the running requests' tokens (prompt
  plus generated so far) over ``kv_cache_tokens``, capped at 1.

The truth is *exact* for any window between two scrape timestamps: the difference of
the cumulative series between scrapes ``t0`` and ``t1`` holds precisely the
observations recorded in ``(t0, t1]``, and :meth:`Truth.between` summarises those.
Quantiles use the inverse empirical CDF (the smallest value with at least ``q`` of the
observations at or below it), which is the value whose bucket ``histogram_quantile``
interpolates in, so "the estimate lands in the true quantile's bucket" is exact.
"""

from __future__ import annotations

import math
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from pathlib import Path
from typing import IO, Any

import httpx
import numpy as np

from registry.observe.catalog import Kind, Signal, buckets, signals
from tests.support.opa_server import free_port

HOST = "127.0.0.1"
Z99 = statistics.NormalDist().inv_cdf(0.99)
REASONS = ("stop", "length", "abort")
STOP, LENGTH, ABORT = range(3)
HISTOGRAM_KEYS = ("prompt_tokens", "output_tokens", "ttft", "itl", "e2e", "queue")
GAUGE_KEYS = ("running", "waiting", "kv_cache_usage")
DEFAULT_MODEL = "meta-llama/Llama-3.1-8B-Instruct"
STARTUP_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0
_AUTO_PORT_ATTEMPTS = 3
# promtool cuts blocks at this width (a hidden flag; it rounds down to 2h, 6h, 18h, ...).
# Each block costs promtool one more pass over the whole input, so wide blocks keep
# long datasets linear.
MAX_BLOCK_DURATION = "24h"


# ---- what to generate --------------------------------------------------------------------


@dataclass(frozen=True)
class LogNormal:
    """A lognormal distribution given by its median and 99th percentile."""

    p50: float
    p99: float

    def __post_init__(self) -> None:
        if not 0 < self.p50 <= self.p99:
            raise ValueError(f"need 0 < p50 <= p99, got p50={self.p50} p99={self.p99}")

    @property
    def sigma(self) -> float:
        return math.log(self.p99 / self.p50) / Z99

    def from_normal(self, z: np.ndarray) -> np.ndarray:
        """Values for standard-normal draws ``z`` (monotone in ``z``)."""
        return np.asarray(np.exp(math.log(self.p50) + self.sigma * z), dtype=float)

    def with_p99(self, factor: float) -> LogNormal:
        """The same median, the 99th percentile times ``factor``."""
        return LogNormal(self.p50, self.p99 * factor)


@dataclass(frozen=True, eq=False)  # a pydantic Distribution inside: identity, not value
class ProfileLengths:
    """Lengths drawn as the planner draws a profile's distribution (its inverse CDF),
    times ``scale``: traffic "drawn from its profile", and that traffic grown."""

    distribution: Any  # registry.records.common.Distribution
    scale: float = 1.0

    def from_normal(self, z: np.ndarray) -> np.ndarray:
        from registry.planner.sampling import lengths_at

        levels = 0.5 * (1.0 + np.vectorize(math.erf)(z / math.sqrt(2.0)))
        return np.asarray(lengths_at(self.distribution, levels), dtype=float) * self.scale

    def with_p99(self, factor: float) -> ProfileLengths:
        """Every length times ``factor``: the p99 (and every quantile) grows by it."""
        return replace(self, scale=self.scale * factor)


Lengths = LogNormal | ProfileLengths


@dataclass(frozen=True)
class Latency:
    """Per-request latency model, in seconds (see the module docstring)."""

    queue_s: LogNormal = LogNormal(0.01, 0.4)
    prefill_s: LogNormal = LogNormal(0.06, 0.5)  # admission to first token
    itl_s: LogNormal = LogNormal(0.012, 0.045)  # constant within a request


# A fleet serving the worked example as its plan claims (p99 TTFT 290/420 ms, TPOT 21/19 ms,
# end-to-end 13/19 s for interactive/batch): observed as profiled, it misses no claim.
AS_CLAIMED = Latency(
    queue_s=LogNormal(0.004, 0.03),
    prefill_s=LogNormal(0.04, 0.15),
    itl_s=LogNormal(0.010, 0.0125),
)


@dataclass(frozen=True)
class ClassTraffic:
    """One traffic class: one deployment, its arrivals, lengths and latencies."""

    name: str
    rate_rps: float
    prompt_tokens: Lengths
    output_tokens: Lengths
    interarrival_cv: float = 1.0  # 1.0 Poisson; > 1 bursty (gamma inter-arrivals)
    latency: Latency = Latency()
    abort_share: float = 0.0
    preemption_share: float = 0.0
    max_output_tokens: int | None = None
    peak_rps: float | None = None  # one window at this rate; the span still averages rate_rps
    peak_duration_s: float = 60.0
    peak_at: float = 0.5  # where the peak window sits, as a fraction of the free span
    pods: int | None = None  # None: the dataset's pods
    model_name: str | None = None  # None: the dataset's model

    def __post_init__(self) -> None:
        if self.rate_rps <= 0 or self.interarrival_cv <= 0:
            raise ValueError(f"{self.name}: rate_rps and interarrival_cv must be positive")
        if not (0 <= self.abort_share <= 1 and 0 <= self.preemption_share <= 1):
            raise ValueError(f"{self.name}: shares must lie in [0, 1]")
        if self.peak_rps is not None and self.peak_rps < self.rate_rps:
            raise ValueError(f"{self.name}: peak_rps is below rate_rps")


@dataclass(frozen=True)
class Dataset:
    """What one Prometheus server should hold (several datasets can share a server when
    their ``namespace`` differ)."""

    classes: tuple[ClassTraffic, ...]
    runtime_version: str = "0.10.2"
    duration_s: float = 7200.0
    # Unix seconds of the last scrape; None: the last multiple of the scrape interval a
    # minute before now. Keep it a multiple of the interval so that PromQL subquery steps
    # (aligned to multiples of the step) fall on scrapes.
    end: float | None = None
    scrape_interval_s: float = 15.0
    pods: int = 2  # per class
    class_label: str | None = "traffic_class"  # None: vLLM's own labels only
    model_name: str = DEFAULT_MODEL
    namespace: str = "inference"
    max_model_len: int = 16384
    kv_cache_tokens: int = 300_000  # per pod
    peak_window_s: float = 60.0
    extra_labels: tuple[tuple[str, str], ...] = ()  # e.g. (("job", "vllm"),)
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.classes:
            raise ValueError("a dataset needs at least one traffic class")
        names = [c.name for c in self.classes]
        if len(set(names)) != len(names):
            raise ValueError(f"class names must be unique: {names}")
        steps = self.duration_s / self.scrape_interval_s
        if steps < 1 or abs(steps - round(steps)) > 1e-9:
            raise ValueError("duration_s must be a positive multiple of scrape_interval_s")
        window = self.peak_window_s / self.scrape_interval_s
        if window < 1 or abs(window - round(window)) > 1e-9 or self.peak_window_s > self.duration_s:
            raise ValueError(
                "peak_window_s must be a multiple of scrape_interval_s within the span"
            )

    def resolved_end(self) -> float:
        if self.end is not None:
            return float(self.end)
        step = self.scrape_interval_s
        return math.floor((time.time() - 60.0) / step) * step

    def class_pods(self, traffic: ClassTraffic) -> int:
        return traffic.pods if traffic.pods is not None else self.pods


def classes_from_profile(
    profile: Any,
    *,
    rate_scale: float = 1.0,
    latency: Latency | Mapping[str, Latency] = Latency(),
    preemption_share: float = 0.0,
    with_peak: bool = True,
    lognormal: bool = False,
) -> tuple[ClassTraffic, ...]:
    """Traffic classes drawn from a :class:`registry.records.workload.WorkloadProfile`.

    Rates (mean and peak) are multiplied by ``rate_scale``; prompt and output lengths are
    lognormal through the profile's p50 and p99; the CV, the cancellation rate (unknown
    counts as 0) and ``max_output_tokens`` are the profile's. ``with_peak`` places one
    ``peak_window_s`` window at the profile's ``peak_rps``.
    """
    out: list[ClassTraffic] = []
    for cls in profile.classes:
        lengths: list[Lengths] = []
        for dist in (cls.prompt_tokens, cls.output_tokens):
            if not lognormal:
                lengths.append(ProfileLengths(dist))
                continue
            p50, p99 = dist.quantile(50), dist.quantile(99)
            if p50 is None or p99 is None:
                raise ValueError(f"{cls.name}: the profile must state p50 and p99 lengths")
            lengths.append(LogNormal(p50, p99))
        arrival = cls.arrival
        peak = arrival.peak_rps * rate_scale if with_peak else None
        out.append(
            ClassTraffic(
                name=cls.name,
                rate_rps=arrival.mean_rps * rate_scale,
                prompt_tokens=lengths[0],
                output_tokens=lengths[1],
                interarrival_cv=arrival.interarrival_cv,
                latency=latency if isinstance(latency, Latency) else latency[cls.name],
                abort_share=cls.cancellation_rate or 0.0,
                preemption_share=preemption_share,
                max_output_tokens=cls.max_output_tokens,
                peak_rps=peak
                if peak is not None and peak > arrival.mean_rps * rate_scale
                else None,
                peak_duration_s=arrival.peak_window_s,
            )
        )
    return tuple(out)


def grow_prompt_p99(dataset: Dataset, factor: float, classes: Sequence[str] = ()) -> Dataset:
    """The same dataset (same seed, so the same requests) with the prompt p99 of
    ``classes`` (all when empty) times ``factor`` and the median kept: every request
    keeps its rank, prompts above the median grow and those below shrink (the lognormal
    widens). Nothing else changes but the KV-cache gauge (latency ignores prompt length)."""
    chosen = set(classes) or {c.name for c in dataset.classes}
    return replace(
        dataset,
        classes=tuple(
            replace(c, prompt_tokens=c.prompt_tokens.with_p99(factor)) if c.name in chosen else c
            for c in dataset.classes
        ),
    )


# ---- the truth -------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Sample:
    """Observations one histogram holds over a window, exactly (sorted; ITL is weighted:
    each request contributes output - 1 observations of its constant ITL)."""

    key: str
    bounds: tuple[float, ...]  # the histogram's finite bucket bounds (catalog.buckets)
    values: np.ndarray = field(repr=False)
    weights: np.ndarray = field(repr=False)  # integer counts per value

    @cached_property
    def _cumulative(self) -> np.ndarray:
        return np.cumsum(self.weights)

    @property
    def count(self) -> int:
        return int(self._cumulative[-1]) if self.values.size else 0

    @property
    def sum(self) -> float:
        return float(np.dot(self.values, self.weights))

    @property
    def mean(self) -> float:
        return self.sum / self.count if self.count else math.nan

    def quantile(self, q: float) -> float:
        """Inverse empirical CDF: the smallest value with at least ``q * count``
        observations at or below it (NaN when empty). The rank is computed in float64
        exactly as ``histogram_quantile`` does, so the two agree on the bucket."""
        if not self.count:
            return math.nan
        i = int(np.searchsorted(self._cumulative, q * float(self.count), side="left"))
        return float(self.values[min(i, self.values.size - 1)])

    @property
    def p50(self) -> float:
        return self.quantile(0.50)

    @property
    def p90(self) -> float:
        return self.quantile(0.90)

    @property
    def p99(self) -> float:
        return self.quantile(0.99)

    def share_at_most(self, limit: float) -> float:
        """Share of observations <= ``limit`` (what an SLO attainment should report)."""
        if not self.count:
            return math.nan
        return float(self.weights[: np.searchsorted(self.values, limit, side="right")].sum()) / (
            self.count
        )

    def cumulative_counts(self) -> list[int]:
        """What ``increase(..._bucket)`` over the window holds: one count per bound, then
        the ``+Inf`` bucket (the total)."""
        at = np.searchsorted(self.values, np.asarray(self.bounds), side="right")
        return [int(self.weights[:i].sum()) for i in at] + [self.count]

    def bucket(self, q: float) -> tuple[float, float]:
        """``(lower, upper]`` of the bucket holding the true ``q`` quantile (upper is inf
        for the ``+Inf`` bucket, lower 0 for the first)."""
        value = self.quantile(q)
        i = int(np.searchsorted(np.asarray(self.bounds), value, side="left"))
        lower = self.bounds[i - 1] if i > 0 else 0.0
        upper = self.bounds[i] if i < len(self.bounds) else math.inf
        return lower, upper


@dataclass(frozen=True)
class ClassTruth:
    """One traffic class (or ``*``, every class) over a window ``(t0, t1]``."""

    name: str
    pods: tuple[str, ...]
    t0: float
    t1: float
    arrivals: int  # arrivals in [t0, t1)
    requests: int  # finished in (t0, t1], every reason (= the success counter's increase)
    finished: dict[str, int]  # by finished_reason
    preemptions: int
    mean_rps: float  # arrivals / span
    completed_rps: float  # requests / span
    peak_rps: float  # most finished requests in a peak window ending on a scrape, / window
    peak_arrival_rps: float  # most arrivals in any peak window (sliding), / window
    peak_window_s: float
    interarrival_cv: float  # of the arrivals in [t0, t1) (NaN with fewer than 3)
    running_max: float  # per pod, over scrapes in [t0, t1]
    waiting_max: float
    kv_cache_usage_max: float
    kv_cache_usage_mean: float  # over pods and scrapes in [t0, t1]
    prompt_tokens: Sample
    output_tokens: Sample
    ttft: Sample
    itl: Sample
    e2e: Sample
    queue: Sample

    @property
    def abort_share(self) -> float:
        return self.finished["abort"] / self.requests if self.requests else math.nan

    def sample(self, key: str) -> Sample:
        found: Sample = getattr(self, key)
        return found


@dataclass
class _Requests:
    """Every drawn request of one class, as offsets in seconds from the dataset start."""

    arrival: np.ndarray
    pod: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    reason: np.ndarray
    queue: np.ndarray
    ttft: np.ndarray
    itl: np.ndarray
    e2e: np.ndarray
    preempted_at: np.ndarray  # NaN when not preempted

    @property
    def admitted(self) -> np.ndarray:
        return np.asarray(self.arrival + self.queue)

    @property
    def first_token(self) -> np.ndarray:
        return np.asarray(self.arrival + self.ttft)

    @property
    def finish(self) -> np.ndarray:
        return np.asarray(self.arrival + self.e2e)

    @staticmethod
    def concat(parts: Sequence[_Requests]) -> _Requests:
        names = [f.name for f in fields(_Requests)]
        return _Requests(**{n: np.concatenate([getattr(p, n) for p in parts]) for n in names})


@dataclass
class Truth:
    """What a generated dataset holds; ``classes`` and ``overall`` cover the whole span,
    :meth:`between` any window between two scrape timestamps."""

    dataset: Dataset
    start: float
    end: float
    names: dict[str, tuple[str, ...]]  # signal key -> series names written
    series: int
    samples: int
    _requests: dict[str, _Requests] = field(repr=False)
    _gauges: dict[str, dict[str, np.ndarray]] = field(repr=False)  # class -> gauge -> (pods, T)

    @property
    def class_label(self) -> str | None:
        return self.dataset.class_label

    @property
    def timestamps(self) -> np.ndarray:
        step = self.dataset.scrape_interval_s
        return np.asarray(self.start + step * np.arange(self._steps + 1))

    @property
    def _steps(self) -> int:
        return round((self.end - self.start) / self.dataset.scrape_interval_s)

    @cached_property
    def classes(self) -> dict[str, ClassTruth]:
        return self.between(self.start, self.end)

    @cached_property
    def overall(self) -> ClassTruth:
        return self.between_overall(self.start, self.end)

    def __getitem__(self, name: str) -> ClassTruth:
        return self.classes[name]

    def between(self, t0: float, t1: float) -> dict[str, ClassTruth]:
        """Every class over ``(t0, t1]`` (both on the scrape grid)."""
        return {name: self._summarise([name], t0, t1) for name in self._requests}

    def between_overall(self, t0: float, t1: float) -> ClassTruth:
        return self._summarise(list(self._requests), t0, t1)

    def _window(self, t0: float, t1: float) -> tuple[int, int]:
        step = self.dataset.scrape_interval_s
        k0, k1 = (t0 - self.start) / step, (t1 - self.start) / step
        if abs(k0 - round(k0)) > 1e-6 or abs(k1 - round(k1)) > 1e-6:
            raise ValueError("window bounds must be scrape timestamps (start + k * interval)")
        k0, k1 = round(k0), round(k1)
        if not 0 <= k0 < k1 <= self._steps:
            raise ValueError(f"window ({t0}, {t1}] is not inside ({self.start}, {self.end}]")
        return k0, k1

    def _summarise(self, names: list[str], t0: float, t1: float) -> ClassTruth:
        k0, k1 = self._window(t0, t1)
        step = self.dataset.scrape_interval_s
        lo, hi = k0 * step, k1 * step  # offsets from the start
        r = _Requests.concat([self._requests[n] for n in names])
        # An event is in the window when the first scrape showing it is in (k0, k1].
        finish_k = _visible_at(r.finish, step)
        done = (finish_k > k0) & (finish_k <= k1)
        first_k = _visible_at(r.first_token, step)
        first = (first_k > k0) & (first_k <= k1)
        max_len = self.dataset.max_model_len

        def sample(key: str, values: np.ndarray, weights: np.ndarray | None = None) -> Sample:
            w = np.ones(values.size, dtype=np.int64) if weights is None else weights
            keep = w > 0
            values, w = values[keep], w[keep]
            order = np.argsort(values, kind="stable")
            return Sample(key, buckets(key, max_len), values[order], w[order])

        finished = {
            reason: int(np.count_nonzero(done & (r.reason == code)))
            for code, reason in enumerate(REASONS)
        }
        requests = int(np.count_nonzero(done))
        span = hi - lo
        arrivals = np.sort(r.arrival[(r.arrival >= lo) & (r.arrival < hi)])
        gaps = np.diff(arrivals)
        cv = float(gaps.std() / gaps.mean()) if gaps.size >= 2 and gaps.mean() > 0 else math.nan
        window = self.dataset.peak_window_s
        w_steps = round(window / step)
        per_step = np.bincount(finish_k[done] - k0 - 1, minlength=k1 - k0)  # finished per step
        cum = np.concatenate([[0], np.cumsum(per_step)])
        peak = float((cum[w_steps:] - cum[:-w_steps]).max()) / window if k1 - k0 >= w_steps else 0.0
        ends = np.searchsorted(arrivals, arrivals + window, side="left")
        peak_arrivals = (
            float((ends - np.arange(arrivals.size)).max()) / window if arrivals.size else 0.0
        )
        gauges = [self._gauges[n] for n in names]

        def gauge(key: str, how: Callable[[np.ndarray], Any]) -> float:
            return float(how(np.concatenate([g[key][:, k0 : k1 + 1] for g in gauges])))

        preempted = r.preempted_at[~np.isnan(r.preempted_at)]
        preempt_k = _visible_at(preempted, step)
        return ClassTruth(
            name=names[0] if len(names) == 1 else "*",
            pods=tuple(p for n in names for p in _pod_names(n, self._pod_count(n))),
            t0=self.start + lo,
            t1=self.start + hi,
            arrivals=int(arrivals.size),
            requests=requests,
            finished=finished,
            preemptions=int(np.count_nonzero((preempt_k > k0) & (preempt_k <= k1))),
            mean_rps=arrivals.size / span,
            completed_rps=requests / span,
            peak_rps=peak,
            peak_arrival_rps=peak_arrivals,
            peak_window_s=window,
            interarrival_cv=cv,
            running_max=gauge("running", np.max),
            waiting_max=gauge("waiting", np.max),
            kv_cache_usage_max=gauge("kv_cache_usage", np.max),
            kv_cache_usage_mean=gauge("kv_cache_usage", np.mean),
            prompt_tokens=sample("prompt_tokens", r.prompt[done]),
            output_tokens=sample("output_tokens", r.output[done]),
            ttft=sample("ttft", r.ttft[first]),
            itl=sample("itl", r.itl[done], (r.output[done] - 1).astype(np.int64)),
            e2e=sample("e2e", r.e2e[done]),
            queue=sample("queue", r.queue[done]),
        )

    def _pod_count(self, name: str) -> int:
        traffic = next(c for c in self.dataset.classes if c.name == name)
        return self.dataset.class_pods(traffic)


# ---- drawing requests ------------------------------------------------------------------


_STREAMS = (
    "arrivals", "pod", "prompt", "output", "abort", "abort_cut", "queue", "prefill", "itl",
    "preempt",
)  # fmt: skip


def _release(version: str) -> tuple[int, int]:
    parts = version.split("+")[0].split(".")
    return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0


def emitted_names(signal: Signal, runtime_version: str) -> tuple[str, ...]:
    """The series names a vLLM of ``runtime_version`` exports for ``signal``: during the
    0.10 releases both the new and the deprecated name, otherwise the release's own."""
    if (0, 10) <= _release(runtime_version) < (0, 11):
        return signal.names
    return signal.names[:1]


def _arrivals(rng: np.random.Generator, traffic: ClassTraffic, duration: float) -> np.ndarray:
    """Arrival offsets in [0, duration): a gamma renewal process in operational time,
    mapped through the cumulative rate (a flat rate, or one peak window)."""
    rate, segments = traffic.rate_rps, [(0.0, duration, traffic.rate_rps)]
    if traffic.peak_rps is not None and traffic.peak_rps > rate:
        width = min(traffic.peak_duration_s, duration)
        spare = duration - width
        base = (rate * duration - traffic.peak_rps * width) / spare if spare > 0 else 0.0
        if base <= 0:
            raise ValueError(f"{traffic.name}: the peak alone exceeds the mean over the span")
        begin = traffic.peak_at * spare
        segments = [
            (0.0, begin, base),
            (begin, begin + width, traffic.peak_rps),
            (begin + width, duration, base),
        ]
    times, cumulative = [0.0], [0.0]
    for t_a, t_b, segment_rate in segments:
        if t_b > t_a:
            times.append(t_b)
            cumulative.append(cumulative[-1] + segment_rate * (t_b - t_a))
    total = cumulative[-1]
    shape = 1.0 / traffic.interarrival_cv**2
    chunks: list[np.ndarray] = []
    position = 0.0
    while True:
        n = int(total - position + 6 * math.sqrt(total + 1) * traffic.interarrival_cv + 64)
        draws = position + np.cumsum(rng.gamma(shape, 1.0 / shape, n))
        chunks.append(draws[draws < total])
        if draws[-1] >= total:
            break
        position = float(draws[-1])
    operational = np.concatenate(chunks)
    return np.asarray(np.interp(operational, cumulative, times))


def _draw(dataset: Dataset, index: int, traffic: ClassTraffic) -> _Requests:
    rng = {name: np.random.default_rng([dataset.seed, index, k]) for k, name in enumerate(_STREAMS)}
    arrival = _arrivals(rng["arrivals"], traffic, dataset.duration_s)
    n = arrival.size
    pod = rng["pod"].integers(0, dataset.class_pods(traffic), n)
    prompt = np.clip(
        np.rint(traffic.prompt_tokens.from_normal(rng["prompt"].standard_normal(n))),
        1,
        dataset.max_model_len,
    )
    output = np.maximum(
        np.rint(traffic.output_tokens.from_normal(rng["output"].standard_normal(n))), 1
    )
    reason = np.full(n, STOP, dtype=np.int8)
    if traffic.max_output_tokens is not None:
        capped = output >= traffic.max_output_tokens
        output[capped] = traffic.max_output_tokens
        reason[capped] = LENGTH
    aborted = rng["abort"].random(n) < traffic.abort_share
    cut = rng["abort_cut"].random(n)
    output = np.where(aborted, 1 + np.floor(cut * (output - 1)), output)
    reason[aborted] = ABORT
    latency = traffic.latency
    queue = latency.queue_s.from_normal(rng["queue"].standard_normal(n))
    ttft = queue + latency.prefill_s.from_normal(rng["prefill"].standard_normal(n))
    itl = latency.itl_s.from_normal(rng["itl"].standard_normal(n))
    e2e = ttft + (output - 1) * itl
    preempted = rng["preempt"].random(n) < traffic.preemption_share
    preempted_at = np.where(preempted, arrival + ttft + 0.5 * (output - 1) * itl, np.nan)
    return _Requests(
        arrival, pod, prompt, output, reason, queue, ttft, itl, e2e, np.asarray(preempted_at)
    )


# ---- per-pod cumulative series -----------------------------------------------------------


def _visible_at(times: np.ndarray, step: float) -> np.ndarray:
    """Index of the first scrape that shows an event at offset ``times``."""
    return np.asarray(np.ceil(times / step), dtype=np.int64)


def _counter(k: np.ndarray, pods: np.ndarray, n_pods: int, steps: int) -> np.ndarray:
    """(pods, steps + 1) cumulative counts of events first visible at scrape ``k``."""
    keep = k <= steps
    flat = np.bincount(pods[keep] * (steps + 1) + k[keep], minlength=n_pods * (steps + 1))
    return np.cumsum(flat.reshape(n_pods, steps + 1), axis=1)


def _histogram(
    values: np.ndarray,
    k: np.ndarray,
    pods: np.ndarray,
    weights: np.ndarray,
    bounds: tuple[float, ...],
    n_pods: int,
    steps: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Cumulative buckets (pods, steps + 1, bounds + 1) incl. +Inf, and sums (pods, steps + 1)."""
    keep = k <= steps
    values, k, pods, weights = values[keep], k[keep], pods[keep], weights[keep]
    slot = np.searchsorted(np.asarray(bounds), values, side="left")  # le: value <= bound
    width = len(bounds) + 1
    flat = np.bincount(
        (pods * (steps + 1) + k) * width + slot,
        weights=weights,
        minlength=n_pods * (steps + 1) * width,
    )
    counts = flat.reshape(n_pods, steps + 1, width).cumsum(axis=1).cumsum(axis=2)
    sums = np.bincount(
        pods * (steps + 1) + k, weights=values * weights, minlength=n_pods * (steps + 1)
    )
    return np.rint(counts).astype(np.int64), np.cumsum(sums.reshape(n_pods, steps + 1), axis=1)


def _gauges(
    r: _Requests, n_pods: int, steps: int, step: float, kv_cache_tokens: int
) -> dict[str, np.ndarray]:
    """running, waiting and kv_cache_usage per pod at every scrape: (pods, steps + 1)."""
    out: dict[str, np.ndarray] = {}
    admitted, first, finish = r.admitted, r.first_token, r.finish
    for key, begin, stop in (("waiting", r.arrival, admitted), ("running", admitted, finish)):
        # scrapes k with begin <= k * step < stop
        k0 = np.minimum(_visible_at(begin, step), steps + 1)
        k1 = np.minimum(_visible_at(stop, step), steps + 1)
        spans = np.maximum(k1 - k0, 0)
        which = np.repeat(np.arange(spans.size), spans)
        starts = np.repeat(np.cumsum(spans) - spans, spans)
        k = k0[which] + (np.arange(which.size) - starts)
        slots = r.pod[which] * (steps + 1) + k
        size = n_pods * (steps + 1)
        out[key] = np.bincount(slots, minlength=size).reshape(n_pods, steps + 1).astype(float)
        if key == "running":
            t = k * step
            generated = np.where(
                t >= first[which],
                np.minimum(r.output[which], np.floor((t - first[which]) / r.itl[which]) + 1),
                0.0,
            )
            tokens = np.bincount(slots, weights=r.prompt[which] + generated, minlength=size)
            usage = np.minimum(tokens / kv_cache_tokens, 1.0)
            out["kv_cache_usage"] = usage.reshape(n_pods, steps + 1)
    return out


# ---- writing OpenMetrics -------------------------------------------------------------------


def go_float(value: float) -> str:
    """A float as prometheus_client writes it (``floatToGoString``): 1.0, 0.005, +Inf, 1e+06."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    text = repr(float(value))
    dot = text.find(".")
    if value > 0 and dot > 6:
        mantissa = f"{text[0]}.{text[1:dot]}{text[dot + 1 :]}".rstrip("0.")
        return f"{mantissa}e+0{dot - 1}"
    return text


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(pairs: Sequence[tuple[str, str]]) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in pairs) + "}"


def _pod_names(class_name: str, pods: int) -> list[str]:
    return [f"vllm-{class_name}-{i}" for i in range(pods)]


def _column(values: np.ndarray, integral: bool) -> list[str]:
    if integral:
        return list(map(str, np.asarray(values, dtype=np.int64).tolist()))
    return list(map(repr, np.asarray(values, dtype=float).tolist()))


class _Writer:
    """Streams samples; counts series and samples."""

    def __init__(self, out: IO[str], timestamps: list[str]) -> None:
        self.out = out
        self.timestamps = timestamps
        self.series = 0
        self.samples = 0

    def family(self, name: str, kind: Kind, help_text: str) -> None:
        family = name.removesuffix("_total") if kind is Kind.counter else name
        self.out.write(f"# HELP {family} {help_text}\n# TYPE {family} {kind.value}\n")

    def metric(self, prefixes: list[str], columns: list[list[str]]) -> None:
        """One labelset of a family, time-major: at each timestamp every sample of the
        point (a histogram's buckets, _sum, _count) in order, as OpenMetrics orders them."""
        self.series += len(prefixes)
        self.samples += len(prefixes) * len(self.timestamps)
        write = self.out.write
        for k, ts in enumerate(self.timestamps):
            write("".join(f"{p} {col[k]} {ts}\n" for p, col in zip(prefixes, columns, strict=True)))


@dataclass
class _Deployment:
    traffic: ClassTraffic
    pods: list[str]
    requests: _Requests
    series: dict[str, Any]  # signal key -> per-pod arrays
    gauges: dict[str, np.ndarray]


def write_openmetrics(dataset: Dataset, path: Path) -> Truth:
    """Draw ``dataset``, stream its scrapes to ``path`` as OpenMetrics, return the truth."""
    end = dataset.resolved_end()
    start = end - dataset.duration_s
    step = dataset.scrape_interval_s
    steps = round(dataset.duration_s / step)
    catalog = signals(dataset.runtime_version)
    unknown = set(catalog) - {*HISTOGRAM_KEYS, "success", "preemptions", *GAUGE_KEYS}
    if unknown:
        raise NotImplementedError(f"no generator for catalog signals {sorted(unknown)}")
    deployments = []
    for index, traffic in enumerate(dataset.classes):
        r = _draw(dataset, index, traffic)
        n_pods = dataset.class_pods(traffic)
        done_k = _visible_at(r.finish, step)
        ones = np.ones(r.arrival.size)
        observed = {
            "prompt_tokens": (r.prompt, done_k, ones),
            "output_tokens": (r.output, done_k, ones),
            "ttft": (r.ttft, _visible_at(r.first_token, step), ones),
            "itl": (r.itl, done_k, r.output - 1),
            "e2e": (r.e2e, done_k, ones),
            "queue": (r.queue, done_k, ones),
        }
        series: dict[str, Any] = {
            key: _histogram(v, k, r.pod, w, buckets(key, dataset.max_model_len), n_pods, steps)
            for key, (v, k, w) in observed.items()
        }
        series["success"] = {
            reason: _counter(done_k[r.reason == code], r.pod[r.reason == code], n_pods, steps)
            for code, reason in enumerate(REASONS)
        }
        preempted = ~np.isnan(r.preempted_at)
        series["preemptions"] = _counter(
            _visible_at(r.preempted_at[preempted], step), r.pod[preempted], n_pods, steps
        )
        gauges = _gauges(r, n_pods, steps, step, dataset.kv_cache_tokens)
        pods = _pod_names(traffic.name, n_pods)
        deployments.append(_Deployment(traffic, pods, r, series, gauges))

    integral = float(start).is_integer() and float(step).is_integer()
    stamps = [
        str(int(start + k * step)) if integral else repr(start + k * step) for k in range(steps + 1)
    ]
    names: dict[str, tuple[str, ...]] = {}
    with path.open("w", encoding="utf-8", buffering=1 << 20) as out:
        writer = _Writer(out, stamps)
        for key, signal in catalog.items():
            names[key] = emitted_names(signal, dataset.runtime_version)
            for name in names[key]:
                writer.family(name, signal.kind, signal.help)
                for d in deployments:
                    for p, pod in enumerate(d.pods):
                        base = _base_labels(dataset, d.traffic, pod)
                        _write_metric(writer, key, name, signal.kind, base, d, p, dataset)
        out.write("# EOF\n")
    return Truth(
        dataset=dataset,
        start=start,
        end=end,
        names=names,
        series=writer.series,
        samples=writer.samples,
        _requests={d.traffic.name: d.requests for d in deployments},
        _gauges={d.traffic.name: d.gauges for d in deployments},
    )


def _base_labels(dataset: Dataset, traffic: ClassTraffic, pod: str) -> list[tuple[str, str]]:
    pairs = [
        ("engine", "0"),
        ("model_name", traffic.model_name or dataset.model_name),
        ("namespace", dataset.namespace),
        ("pod", pod),
        *dataset.extra_labels,
    ]
    if dataset.class_label is not None:
        pairs.append((dataset.class_label, traffic.name))
    return sorted(pairs)


def _write_metric(
    writer: _Writer,
    key: str,
    name: str,
    kind: Kind,
    base: list[tuple[str, str]],
    d: _Deployment,
    p: int,
    dataset: Dataset,
) -> None:
    if kind is Kind.histogram:
        counts, sums = d.series[key]
        bounds = buckets(key, dataset.max_model_len)
        les = [*map(go_float, bounds), "+Inf"]
        prefixes = [f"{name}_bucket{_labels(sorted([*base, ('le', le)]))}" for le in les]
        columns = [_column(counts[p, :, j], True) for j in range(len(les))]
        prefixes += [f"{name}_sum{_labels(base)}", f"{name}_count{_labels(base)}"]
        columns += [_column(sums[p], False), columns[-1]]
        writer.metric(prefixes, columns)
    elif key == "success":
        for reason in REASONS:
            labels = _labels(sorted([*base, ("finished_reason", reason)]))
            writer.metric([f"{name}{labels}"], [_column(d.series[key][reason][p], True)])
    elif key == "preemptions":
        writer.metric([f"{name}{_labels(base)}"], [_column(d.series[key][p], True)])
    else:
        integral = key != "kv_cache_usage"
        writer.metric([f"{name}{_labels(base)}"], [_column(d.gauges[key][p], integral)])


# ---- promtool and the server ---------------------------------------------------------------


@dataclass(frozen=True)
class PrometheusBinaries:
    prometheus: Path
    promtool: Path


def find_binaries() -> PrometheusBinaries | None:
    """CAPGATE_PROMETHEUS_BINARY (promtool beside it), else both on PATH, else None."""
    configured = os.environ.get("CAPGATE_PROMETHEUS_BINARY")
    if configured:
        prometheus = Path(configured)
    else:
        found = shutil.which("prometheus")
        if found is None:
            return None
        prometheus = Path(found).resolve()
    promtool = prometheus.with_name("promtool")
    if not (prometheus.is_file() and promtool.is_file()):
        return None
    return PrometheusBinaries(prometheus, promtool)


def backfill(binaries: PrometheusBinaries, openmetrics: Path, tsdb: Path) -> None:
    """``promtool tsdb create-blocks-from openmetrics`` into ``tsdb`` (created if need be)."""
    tsdb.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [
            str(binaries.promtool),
            "tsdb",
            "create-blocks-from",
            "openmetrics",
            "--quiet",
            f"--max-block-duration={MAX_BLOCK_DURATION}",
            str(openmetrics),
            str(tsdb),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"promtool backfill of {openmetrics} failed:\n{done.stderr[-4000:]}")


@dataclass
class BackfilledPrometheus:
    """A running Prometheus over backfilled datasets, and their truths (same order)."""

    url: str
    datasets: tuple[Dataset, ...]
    truths: tuple[Truth, ...]
    tsdb: Path
    timings: dict[str, float]  # seconds: generate, backfill, start

    @property
    def truth(self) -> Truth:
        """The truth of the first (usually only) dataset."""
        return self.truths[0]

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        """``/api/v1/query`` (instant; at ``at`` unix seconds, default now): the result list."""
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        response = httpx.get(f"{self.url}/api/v1/query", params=params, timeout=60)
        body = response.json()
        if response.status_code != 200 or body.get("status") != "success":
            raise AssertionError(f"query {expr!r} failed: {response.status_code} {body}")
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def value(self, expr: str, at: float | None = None) -> float:
        """The single value of an instant query (NaN when the vector is empty)."""
        result = self.query(expr, at)
        if not result:
            return math.nan
        if len(result) != 1:
            raise AssertionError(f"{expr!r} returned {len(result)} series, expected one")
        return float(result[0]["value"][1])

    def values_by(self, expr: str, label: str, at: float | None = None) -> dict[str, float]:
        """An instant vector as ``{value of label: value}``."""
        return {s["metric"].get(label, ""): float(s["value"][1]) for s in self.query(expr, at)}


def _read(log: IO[bytes]) -> str:
    log.flush()
    log.seek(0)
    return log.read().decode("utf-8", errors="replace").strip()


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/-/ready", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def running_prometheus(
    binaries: PrometheusBinaries, tsdb: Path, *, timeout: float = STARTUP_TIMEOUT_S
) -> Iterator[str]:
    """``prometheus`` on a free loopback port over ``tsdb`` (no scrape targets, retention
    100y so backfilled blocks stay); yields its URL once ``/-/ready`` answers 200."""
    config = tsdb.parent / f"{tsdb.name}.prometheus.yml"
    config.write_text("# no scrape targets: every series is backfilled\nscrape_configs: []\n")
    with tempfile.TemporaryFile(prefix="prometheus-", suffix=".log") as log:
        for attempt in range(1, _AUTO_PORT_ATTEMPTS + 1):
            port = free_port()
            url = f"http://{HOST}:{port}"
            log.seek(0)
            log.truncate()
            process = subprocess.Popen(
                [
                    str(binaries.prometheus),
                    f"--config.file={config}",
                    f"--storage.tsdb.path={tsdb}",
                    "--storage.tsdb.retention.time=100y",
                    f"--web.listen-address={HOST}:{port}",
                    "--log.level=warn",
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
            deadline = time.monotonic() + timeout
            while process.poll() is None and not _ready(url):
                if time.monotonic() > deadline:
                    _stop(process)
                    raise RuntimeError(
                        f"prometheus not ready on {url} in {timeout:g} s:\n{_read(log)}"
                    )
                time.sleep(0.1)
            if process.poll() is None:
                break
            text = _read(log)
            if attempt == _AUTO_PORT_ATTEMPTS or "address already in use" not in text:
                raise RuntimeError(f"prometheus exited with {process.returncode}:\n{text[-4000:]}")
        try:
            yield url
        finally:
            _stop(process)


@contextmanager
def prometheus_holding(
    binaries: PrometheusBinaries, datasets: Sequence[Dataset], directory: Path
) -> Iterator[BackfilledPrometheus]:
    """Generate each dataset, backfill them into one TSDB under ``directory``, and serve it."""
    where = {(d.namespace, c.name) for d in datasets for c in d.classes}
    if len(where) != sum(len(d.classes) for d in datasets):
        raise ValueError("datasets sharing a server need distinct namespaces (or class names)")
    tsdb = directory / "tsdb"
    timings = {"generate": 0.0, "backfill": 0.0}
    truths = []
    for i, dataset in enumerate(datasets):
        source = directory / f"dataset-{i}.om"
        began = time.perf_counter()
        truths.append(write_openmetrics(dataset, source))
        timings["generate"] += time.perf_counter() - began
        began = time.perf_counter()
        backfill(binaries, source, tsdb)
        timings["backfill"] += time.perf_counter() - began
        source.unlink()
    began = time.perf_counter()
    with running_prometheus(binaries, tsdb) as url:
        timings["start"] = time.perf_counter() - began
        yield BackfilledPrometheus(url, tuple(datasets), tuple(truths), tsdb, timings)
