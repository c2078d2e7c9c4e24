"""Read one deployment's vLLM series over a window into an Observation.

Every query is built here (docs/observe.md lists them). Counts are
``increase()`` over the whole window at its end, evaluated by Prometheus, so a 30-day
window over a thousand pods is one aggregation per signal, not a download; the request
rate is the one range query, its step chosen so that it has at most MAX_POINTS points.
"""

from __future__ import annotations

import itertools
import math
import re
import statistics
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from registry.errors import FieldProblem, InvalidInput, Unavailable
from registry.observe.catalog import Signal, signals
from registry.observe.histogram import Buckets
from registry.observe.prometheus import Prometheus, step_for
from registry.records.common import NAME_PATTERN
from registry.records.documents import problems_from
from registry.records.observation import (
    BucketQuantile,
    FleetSignals,
    Observation,
    ObservedClass,
    ObservedHistogram,
    PrometheusSource,
    SloAttainment,
)

QUANTILES = (50.0, 90.0, 99.0)
HISTOGRAMS = ("prompt_tokens", "output_tokens", "ttft", "itl", "e2e", "queue")
# SLO field -> (histogram, seconds per unit of the SLO): the objectives are in ms.
SLO_HISTOGRAMS = {
    "ttft_p99_ms": "ttft",
    "tpot_p99_ms": "itl",
    "e2e_p99_ms": "e2e",
    "queue_deadline_ms": "queue",
}
# Histogram reads sent at once: Prometheus runs up to 20 queries concurrently by default.
CONCURRENT_QUERIES = 4
# Fewer rate steps than this and the dispersion says nothing about burstiness.
MIN_STEPS_FOR_CV = 20


@dataclass(frozen=True)
class Target:
    """What to observe: the deployment's series and what the plan says about them."""

    selector: str
    class_label: str | None
    classes: dict[str, dict[str, float]]  # class name -> its SLO ceilings in ms
    runtime_version: str
    peak_window_s: float


Progress = Callable[[str], None]


def _duration(seconds: float) -> str:
    return f"{max(1, round(seconds))}s"


def _matchers(selector: str) -> str:
    return f"{{{selector}}}" if selector else ""


class Reader:
    def __init__(self, prometheus: Prometheus, target: Target, start: datetime, end: datetime):
        if end <= start:
            raise InvalidInput(
                "invalid observation window",
                problems=[FieldProblem("window", "the window's end must be after its start")],
            )
        self.prometheus = prometheus
        self.target = target
        self.start, self.end = start, end
        self.window = _duration((end - start).total_seconds())
        self.by = f", {target.class_label}" if target.class_label else ""
        self.group = f" by ({target.class_label})" if target.class_label else ""
        self.signals = signals(target.runtime_version)
        self.matchers = _matchers(target.selector)

    # ---- helpers -------------------------------------------------------------------

    def _class_of(self, labels: dict[str, str]) -> str | None:
        if self.target.class_label is None:
            (only,) = self.target.classes  # checked by observe()
            return only
        return labels.get(self.target.class_label)

    def _first_with_data(
        self, signal: Signal, build: Callable[[str], str]
    ) -> tuple[str, list[Any]] | None:
        """The first of the signal's series names whose query returns data."""
        for name in signal.names:
            samples = self.prometheus.query(build(name), self.end)
            if samples:
                return name, samples
        return None

    # ---- signals -------------------------------------------------------------------

    def histograms(self, key: str) -> tuple[str, dict[str, ObservedHistogram]] | None:
        signal = self.signals[key]
        found = self._first_with_data(
            signal,
            lambda name: (
                f"sum by (le{self.by}) (increase({name}_bucket{self.matchers}[{self.window}]))"
            ),
        )
        if found is None:
            return None
        name, samples = found
        pairs: dict[str, list[tuple[float, float]]] = {}
        for sample in samples:
            cls = self._class_of(sample.labels)
            le = sample.labels.get("le")
            if cls is None or le is None or math.isnan(sample.value):
                continue
            pairs.setdefault(cls, []).append((float(le), sample.value))
        sums = {
            self._class_of(s.labels): s.value
            for s in self.prometheus.query(
                f"sum{self.group} (increase({name}_sum{self.matchers}[{self.window}]))",
                self.end,
            )
        }
        out: dict[str, ObservedHistogram] = {}
        for cls, cls_pairs in pairs.items():
            buckets = Buckets.from_pairs(cls_pairs)
            if buckets.total < 0.5:
                continue
            out[cls] = _histogram(name, signal.unit, buckets, sums.get(cls))
        return name, out

    def finished(self) -> dict[str, dict[str, int]]:
        signal = self.signals["success"]
        name = signal.names[0]
        samples = self.prometheus.query(
            f"sum by (finished_reason{self.by}) (increase({name}{self.matchers}[{self.window}]))",
            self.end,
        )
        out: dict[str, dict[str, int]] = {}
        for sample in samples:
            cls = self._class_of(sample.labels)
            reason = sample.labels.get("finished_reason", "unknown")
            if cls is None or math.isnan(sample.value):
                continue
            out.setdefault(cls, {})[reason] = round(sample.value)
        return out

    def rates(self) -> tuple[float, dict[str, list[float]]]:
        """Requests finished per step of each class, from the counters themselves.

        The summed counter is read at every step and differenced here, rather than asking
        PromQL for ``rate()``: a rate over a step extrapolates from the scrapes inside it,
        which adds noise that would read as burstiness. A step whose difference is
        negative (a pod restarted and its counter began again) is left out."""
        window_s = (self.end - self.start).total_seconds()
        step = step_for(window_s, floor_s=self.target.peak_window_s)
        name = self.signals["success"].names[0]
        series = self.prometheus.query_range(
            f"sum{self.group} ({name}{self.matchers})", self.start, self.end, step
        )
        out: dict[str, list[float]] = {}
        for item in series:
            cls = self._class_of(item.labels)
            if cls is None:
                continue
            values = [v for _, v in item.points if not math.isnan(v)]
            out[cls] = [b - a for a, b in itertools.pairwise(values) if b >= a]
        return step, out

    def fleet(self) -> FleetSignals:
        kv = self.signals["kv_cache_usage"]
        found = self._first_with_data(
            kv, lambda n: f"avg(avg_over_time({n}{self.matchers}[{self.window}]))"
        )
        kv_mean = kv_max = None
        kv_series = None
        if found is not None:
            kv_series, samples = found
            kv_mean = _fraction(samples[0].value)
            top = self.prometheus.query(
                f"max(max_over_time({kv_series}{self.matchers}[{self.window}]))", self.end
            )
            kv_max = _fraction(top[0].value) if top else None
        preempted = self.prometheus.query(
            f"sum(increase({self.signals['preemptions'].names[0]}{self.matchers}[{self.window}]))",
            self.end,
        )
        running = self._fleet_max("running")
        waiting = self._fleet_max("waiting")
        return FleetSignals(
            kv_cache_usage_mean=kv_mean,
            kv_cache_usage_max=kv_max,
            kv_cache_series=kv_series,
            preemptions=round(preempted[0].value) if preempted else 0,
            running_max=running,
            waiting_max=waiting,
        )

    def _fleet_max(self, key: str) -> float | None:
        name = self.signals[key].names[0]
        step = step_for((self.end - self.start).total_seconds(), floor_s=self.target.peak_window_s)
        found = self.prometheus.query(
            f"max_over_time(sum({name}{self.matchers})[{self.window}:{_duration(step)}])",
            self.end,
        )
        if not found or math.isnan(found[0].value):
            return None
        return found[0].value


def _fraction(value: float) -> float | None:
    if math.isnan(value):
        return None
    return min(1.0, max(0.0, value))


def _histogram(
    name: str, unit: str, buckets: Buckets, total_sum: float | None
) -> ObservedHistogram:
    quantiles = {}
    for level in QUANTILES:
        q = buckets.quantile(level)
        quantiles[f"p{level:g}"] = BucketQuantile(
            value=q.value,
            bucket_lower=q.lower,
            bucket_upper=None if q.open_ended else q.upper,
        )
    samples = round(buckets.total)
    mean = None
    if total_sum is not None and samples and not math.isnan(total_sum):
        mean = max(0.0, total_sum / buckets.total)
    return ObservedHistogram(
        series=name,
        unit=unit,
        samples=samples,
        mean=mean,
        bounds=[b for b in buckets.bounds if not math.isinf(b)],
        cumulative=[round(c) for c in buckets.cumulative],
        quantiles=quantiles,
    )


def interarrival_cv(counts: Sequence[float]) -> float | None:
    """CV of inter-arrival times from requests counted per step.

    For a renewal process the count over a long step has variance mean x CV^2. Both are
    taken robustly so that slow swings (the day's curve) and a few peak steps do not read
    as burstiness: the spread from the median absolute difference of consecutive counts
    (1.4826 MAD / sqrt 2 estimates one count's standard deviation) over the median count.
    An estimate, stated as one."""
    if len(counts) < MIN_STEPS_FOR_CV:
        return None
    level = statistics.median(counts)
    if level <= 0:
        return None
    diffs = [b - a for a, b in itertools.pairwise(counts)]
    centre = statistics.median(diffs)
    mad = statistics.median(abs(d - centre) for d in diffs)
    spread = 1.4826 * mad / math.sqrt(2.0)
    return math.sqrt(spread * spread / level)


def attainment(
    histograms: dict[str, ObservedHistogram], slo: dict[str, float]
) -> list[SloAttainment]:
    out = []
    for objective, limit_ms in sorted(slo.items()):
        histogram = histograms.get(SLO_HISTOGRAMS.get(objective, ""))
        if histogram is None or not histogram.samples:
            continue
        buckets = Buckets(
            (*histogram.bounds, math.inf), tuple(float(c) for c in histogram.cumulative)
        )
        at_least, at_most = buckets.share_at_most(limit_ms / 1000)
        target = 0.99
        met = True if at_least >= target else False if at_most < target else None
        out.append(
            SloAttainment(
                objective=objective,
                limit_ms=limit_ms,
                share_at_least=round(at_least, 6),
                share_at_most=round(at_most, 6),
                target=target,
                met=met,
            )
        )
    return out


def observe(
    prometheus: Prometheus,
    target: Target,
    *,
    name: str,
    plan: str,
    workload: str,
    start: datetime,
    end: datetime,
    progress: Progress | None = None,
) -> Observation:
    """Query ``prometheus`` and build the observation (not yet stored)."""
    if target.class_label is None and len(target.classes) != 1:
        raise InvalidInput(
            "cannot tell the classes apart",
            problems=[
                FieldProblem(
                    "class_label",
                    f"the workload has {len(target.classes)} classes "
                    f"({', '.join(sorted(target.classes))}): name the label whose values "
                    "are the class names (--class-label)",
                )
            ],
        )
    say = progress or (lambda _: None)
    reader = Reader(prometheus, target, start, end)
    histograms: dict[str, dict[str, ObservedHistogram]] = {}
    say(f"reading {', '.join(HISTOGRAMS)} ({CONCURRENT_QUERIES} at a time)")
    # Each histogram query aggregates every sample of the window inside Prometheus, on
    # about one core: sent side by side they use the server's cores (benchmarks/observe).
    with ThreadPoolExecutor(max_workers=CONCURRENT_QUERIES) as pool:
        for key, found in zip(HISTOGRAMS, pool.map(reader.histograms, HISTOGRAMS), strict=True):
            if found is not None:
                histograms[key] = found[1]
    for required in ("prompt_tokens", "output_tokens"):
        if not histograms.get(required):
            raise Unavailable(
                f"Prometheus {prometheus.url} has no {reader.signals[required].names[0]} "
                f"series for {{{target.selector}}} between {start.isoformat()} and "
                f"{end.isoformat()}: nothing to compare with the plan (check the selector, "
                "the window and that Prometheus scrapes the vLLM pods)"
            )
    say("reading finished requests and rates")
    finished = reader.finished()
    step, rates = reader.rates()
    say("reading KV cache, preemptions and queues")
    fleet = reader.fleet()
    try:
        return _build(
            histograms, finished, rates, step, fleet, target, prometheus,
            name=name, plan=plan, workload=workload, start=start, end=end,
        )  # fmt: skip
    except ValidationError as exc:
        # Label values become record fields (a class name must be a lowercase name):
        # what Prometheus answered is named, never an internal error.
        raise InvalidInput(
            f"Prometheus {prometheus.url} answered values an observation cannot hold",
            problems=problems_from(exc),
        ) from None


def _build(
    histograms: dict[str, dict[str, ObservedHistogram]],
    finished: dict[str, dict[str, int]],
    rates: dict[str, list[float]],
    step: float,
    fleet: FleetSignals,
    target: Target,
    prometheus: Prometheus,
    *,
    name: str,
    plan: str,
    workload: str,
    start: datetime,
    end: datetime,
) -> Observation:
    window_s = (end - start).total_seconds()
    classes = []
    for cls in sorted(histograms["prompt_tokens"]):
        if cls not in histograms["output_tokens"]:
            continue
        if not re.match(NAME_PATTERN, cls):
            raise InvalidInput(
                "a class label value is not a class name",
                problems=[
                    FieldProblem(
                        f"{target.class_label}={cls!r}",
                        "is not a workload class name (lowercase letters, digits, '.', '_' "
                        "and '-'); relabel the series or choose another --class-label",
                    )
                ],
            )
        by_reason = finished.get(cls, {})
        requests = sum(by_reason.values())
        counts = rates.get(cls, [])
        own = {key: per_class[cls] for key, per_class in histograms.items() if cls in per_class}
        classes.append(
            ObservedClass(
                name=cls,
                requests=requests,
                mean_rps=requests / window_s,
                peak_rps=max(counts, default=0.0) / step,
                peak_window_s=step,
                interarrival_cv=interarrival_cv(counts),
                finished=by_reason,
                cancellation_share=by_reason.get("abort", 0) / requests if requests else None,
                prompt_tokens=own["prompt_tokens"],
                output_tokens=own["output_tokens"],
                ttft=own.get("ttft"),
                itl=own.get("itl"),
                e2e=own.get("e2e"),
                queue=own.get("queue"),
                slo=attainment(own, target.classes.get(cls, {})),
            )
        )
    if not classes:
        raise Unavailable(f"Prometheus {prometheus.url} has no class with both token histograms")
    return Observation(
        name=name,
        plan=plan,
        workload=workload,
        window_start=start,
        window_end=end,
        source=PrometheusSource(
            url=prometheus.url,
            selector=target.selector,
            class_label=target.class_label,
            runtime_version=target.runtime_version,
            step_s=step,
            # Sorted: the histogram reads run concurrently, and the record's digest must not
            # depend on which answered first.
            queries=sorted(set(prometheus.queries)),
        ),
        classes=classes,
        fleet=fleet,
    )
