"""Read what the model server itself measured during a load test, from its Prometheus.

`capgate evidence import ... --prometheus URL [--selector S]` asks Prometheus for the
vLLM series over the test's own window (its start to start + ``offered.duration_s``,
widened to whole seconds) and stores the figures as the record's ``server``
(``registry.records.server_metrics``), with every query sent and its answer. Every
figure is one instant query at the window's end over a range of the window's length,
aggregated by Prometheus over the selector's series (all replicas). A series with no data
leaves its figure null with a note; Prometheus down or answering an error is
``Unavailable`` from the shared client (``registry.observe.prometheus``), never an empty
record.

Series names, as checked in the sources (``prometheus_client`` adds ``_total`` to a
counter's name and ``_bucket`` to a histogram's):

- vLLM V1, ``vllm/v1/metrics/loggers.py`` (vllm-project/vllm at 005a810b, ``PrometheusStatLogger``):
  the counters ``vllm:prefix_cache_queries`` and ``vllm:prefix_cache_hits`` ("in terms of
  number of queried tokens" / "of cached tokens"), which replaced
  ``vllm:gpu_prefix_cache_queries`` / ``vllm:gpu_prefix_cache_hits`` ("Deprecated in 0.9 -
  Renamed", emitted beside them for a while); the gauge ``vllm:kv_cache_usage_perc``
  (before it ``vllm:gpu_cache_usage_perc``), the counter ``vllm:num_preemptions``, the
  gauges ``vllm:num_requests_running`` / ``vllm:num_requests_waiting`` and the histogram
  ``vllm:request_queue_time_seconds`` ("time spent in WAITING phase", buckets 0.3 s to
  7680 s). Those last ones come from the catalog ``registry.observe.catalog``, which
  ``capgate observe`` reads by.
- vLLM V0, ``vllm/engine/metrics.py``: the gauge ``vllm:gpu_prefix_cache_hit_rate``, "GPU
  prefix cache block hit rate", deprecated in 0.8 for the V1 counters;
  ``docs/design/metrics.md``: "we now expose 'queries' and 'hits' counters rather than a
  'hit rate' gauge". It is the fallback when neither pair of counters has data: its mean
  over the window, which is in blocks and kept by the engine over more than this test,
  so a note says so.
- kube-state-metrics, ``docs/metrics/workload/pod-metrics.md`` and
  ``internal/store/pod.go``: ``kube_pod_start_time`` (STABLE, unix seconds, labels
  ``namespace``, ``pod``, ``uid``), ``kube_pod_status_ready{condition="true"}`` (STABLE)
  and ``kube_pod_status_ready_time`` (the Ready condition's last transition; current
  releases emit it only while the pod is Ready, earlier ones for a pod not ready too, so
  it is read only at samples where ``kube_pod_status_ready{condition="true"}`` is 1).
  Without it, the first scrape showing the pod ready is its ready time (to within a
  scrape interval). The pods are those whose vLLM series match the selector, joined on
  ``namespace`` and ``pod``; only pods that started inside the window count.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import unquote, urlsplit, urlunsplit

from registry.errors import FieldProblem, InvalidInput
from registry.observe.catalog import buckets, signals
from registry.observe.prometheus import Prometheus, step_for
from registry.records.evidence import RuntimeInfo
from registry.records.server_metrics import ServerMetrics, ServerQuery

# The V1 prefix-cache token counters (hits, queries), the names of vLLM 0.9 and later
# first; the catalog's release boundary for renamed series decides the order.
PREFIX_COUNTERS = (
    ("vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"),
    ("vllm:gpu_prefix_cache_hits_total", "vllm:gpu_prefix_cache_queries_total"),
)
PREFIX_GAUGE = "vllm:gpu_prefix_cache_hit_rate"
POD_START = "kube_pod_start_time"
POD_READY_TIME = "kube_pod_status_ready_time"
POD_READY = 'kube_pod_status_ready{condition="true"}'
POD = "namespace, pod"
# The subquery step for peaks and readiness: finer than a scrape interval changes nothing.
MIN_STEP_S = 5.0
# A record that states no runtime is read with the names of current vLLM first (the older
# names are tried next either way).
CURRENT_VLLM = "0.10"


@dataclass(frozen=True)
class Endpoint:
    """A Prometheus base URL as stored and shown (no credentials), and the headers that
    carry the credentials the URL held."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)


def endpoint(url: str, *, loc: str = "--prometheus") -> Endpoint:
    """Split ``http://user:secret@host:9090/prefix`` into the URL without userinfo and a
    basic-auth header: the URL goes into the record and error messages, the secret not."""
    parts = urlsplit(url.strip())
    netloc = parts.netloc.rpartition("@")[2]
    shown = urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
    problem = None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        problem = f"{shown!r} is not an http:// or https:// URL of Prometheus' query API"
    elif parts.query or parts.fragment:
        problem = f"give the base URL ({shown}), without a query or fragment"
    if problem is not None:
        raise InvalidInput("invalid Prometheus URL", problems=[FieldProblem(loc, problem)])
    headers = {}
    if parts.username is not None or parts.password is not None:
        pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    return Endpoint(shown, headers)


def run_window(measured_at: datetime, duration_s: float | None) -> tuple[datetime, datetime]:
    """The window read: the test's start to its end, widened to whole seconds. Raises
    when the record states no duration (there is then no window)."""
    if duration_s is None:
        raise InvalidInput(
            "the test's window is unknown",
            problems=[
                FieldProblem(
                    "offered.duration_s",
                    "the file states no run duration, so the server's series cannot be read "
                    "over the test's window; import it without --prometheus",
                )
            ],
        )
    start = measured_at.timestamp()
    end = start + duration_s
    return (
        datetime.fromtimestamp(math.floor(start), UTC),
        datetime.fromtimestamp(math.ceil(end), UTC),
    )


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _fraction(value: float | None) -> float | None:
    finite = _finite(value)
    return None if finite is None else min(1.0, max(0.0, finite))


class _Reader:
    def __init__(
        self,
        prometheus: Prometheus,
        selector: str,
        start: datetime,
        end: datetime,
        runtime_version: str,
    ) -> None:
        self.prometheus = prometheus
        self.selector = selector
        self.start, self.end = start, end
        window_s = (end - start).total_seconds()
        self.range = f"{round(window_s)}s"
        self.step = f"{round(step_for(window_s, floor_s=MIN_STEP_S))}s"
        self.matchers = f"{{{selector}}}" if selector else ""
        self.signals = signals(runtime_version)
        self.queries: list[ServerQuery] = []
        self.notes: list[str] = []

    def ask(self, figure: str, promql: str) -> float | None:
        """The one value of an aggregated query (NaN kept: 0/0 says something), None
        when Prometheus has no series for it; recorded either way."""
        samples = self.prometheus.query(promql, self.end)
        value = samples[0].value if samples else None
        self.queries.append(ServerQuery(figure=figure, query=promql, value=_finite(value)))
        return value

    def _over(self, function: str, name: str, matchers: str | None = None) -> str:
        return f"{function}({name}{self.matchers if matchers is None else matchers}[{self.range}])"

    def _absent(self, figure: str, names: str) -> None:
        scope = f"{{{self.selector}}}" if self.selector else "any selector"
        self.notes.append(f"{figure}: no {names} series for {scope} over the window")

    # ---- figures ---------------------------------------------------------------------

    def prefix_cache(self) -> tuple[float | None, float | None]:
        """(hit rate, queried tokens) from the token counters, else the V0 gauge."""
        renamed = self.signals["kv_cache_usage"].names[0] == "vllm:kv_cache_usage_perc"
        for hits, queried in PREFIX_COUNTERS if renamed else PREFIX_COUNTERS[::-1]:
            tokens = self.ask(
                "prefix_cache_queried_tokens", f"sum({self._over('increase', queried)})"
            )
            if tokens is None:
                continue
            rate = self.ask(
                "prefix_cache_hit_rate",
                f"sum({self._over('increase', hits)}) / sum({self._over('increase', queried)})",
            )
            if rate is None:
                self._absent("prefix_cache_hit_rate", hits)
            elif _finite(rate) is None:
                self.notes.append(
                    f"prefix_cache_hit_rate: {queried} did not increase over the window: no "
                    "prompt token was looked up in the prefix cache (prefix caching off, or "
                    "no request reached these series)"
                )
            return _fraction(rate), _finite(tokens)
        counters = " or ".join(name for pair in PREFIX_COUNTERS for name in pair)
        self._absent("prefix_cache_queried_tokens", counters)
        mean = _fraction(
            self.ask("prefix_cache_hit_rate", f"avg({self._over('avg_over_time', PREFIX_GAUGE)})")
        )
        if mean is None:
            self._absent("prefix_cache_hit_rate", f"{counters} or {PREFIX_GAUGE}")
            return None, None
        peak = _fraction(
            self.ask("prefix_cache_hit_rate", f"max({self._over('max_over_time', PREFIX_GAUGE)})")
        )
        self.notes.append(
            f"prefix_cache_hit_rate: {mean:.3f} is the mean over the window of vLLM V0's gauge "
            f"{PREFIX_GAUGE} (its max {peak or 0.0:.3f}), the token counters being absent: a "
            "block hit rate the engine keeps over more than this test"
        )
        return mean, None

    def kv_cache_usage_peak(self) -> float | None:
        names = self.signals["kv_cache_usage"].names
        for name in names:
            value = _fraction(
                self.ask("kv_cache_usage_peak", f"max({self._over('max_over_time', name)})")
            )
            if value is not None:
                return value
        self._absent("kv_cache_usage_peak", " or ".join(names))
        return None

    def preemptions(self) -> int | None:
        name = self.signals["preemptions"].names[0]
        value = _finite(self.ask("preemptions", f"sum({self._over('increase', name)})"))
        if value is None:
            self._absent("preemptions", name)
            return None
        return max(0, round(value))

    def queue_p99_ms(self) -> float | None:
        name = self.signals["queue"].names[0]
        value = self.ask(
            "queue_p99_ms",
            f"histogram_quantile(0.99, sum by (le) "
            f"({self._over('increase', f'{name}_bucket')})) * 1000",
        )
        if value is None:
            self._absent("queue_p99_ms", f"{name}_bucket")
            return None
        if _finite(value) is None:
            self.notes.append(f"queue_p99_ms: no request left the queue over the window ({name})")
            return None
        bounds = [0.0, *(b * 1000 for b in buckets("queue", 0))]
        if value >= bounds[-1]:
            where = f"at or beyond vLLM's last finite queue-time bucket bound ({bounds[-1]:g} ms)"
        else:
            i = max(1, next(i for i, b in enumerate(bounds) if value <= b))
            bucket = f"({bounds[i - 1]:g}, {bounds[i]:g}] ms"
            where = f"interpolated inside vLLM's queue-time bucket {bucket}"
        self.notes.append(f"queue_p99_ms: {value:.0f} {where}; the true p99 lies in that bucket")
        return max(0.0, value)

    def fleet_peak(self, key: str, figure: str) -> float | None:
        """The highest sum over replicas of a gauge, at the subquery's steps."""
        name = self.signals[key].names[0]
        value = _finite(
            self.ask(figure, f"max_over_time(sum({name}{self.matchers})[{self.range}:{self.step}])")
        )
        if value is None:
            self._absent(figure, name)
        return value

    def warmup_s(self) -> float | None:
        """The longest start-to-ready time of the selector's pods that started inside the
        window and were ready by its end (kube-state-metrics)."""
        started = f"max by ({POD}) ({self._over('max_over_time', POD_START, '')})"
        served = self.signals["running"].names[0]
        pods = f"group by ({POD}) ({self._over('max_over_time', served)})"
        ready = f"({POD_READY} == 1)"
        by_time = (
            f"min by ({POD}) (min_over_time(({POD_READY_TIME} and on ({POD}) {ready})"
            f"[{self.range}:{self.step}]))"
        )
        by_scrape = (
            f"min by ({POD}) (min_over_time((timestamp({POD_READY}) and {POD_READY} == 1)"
            f"[{self.range}:{self.step}]))"
        )
        in_window = (
            f"and on ({POD}) ({started} >= {self.start.timestamp():.0f}) and on ({POD}) {pods}"
        )
        for ready_at, how in (
            (by_time, POD_READY_TIME),
            (by_scrape, f"the first scrape of {POD_READY} at 1"),
        ):
            value = self.ask("warmup_s", f"max(({ready_at} - {started}) {in_window})")
            if value is None:
                continue
            if how != POD_READY_TIME:
                self.notes.append(
                    f"warmup_s: {POD_READY_TIME} absent; ready times are {how} (to within a "
                    "scrape interval)"
                )
            self._not_ready(started, pods, ready_at)
            finite = _finite(value)
            if finite is None or finite <= 0:
                self.notes.append(f"warmup_s: a start-to-ready time of {value:g} s is no warm-up")
                return None
            return finite
        self._why_no_warmup(started, pods, in_window)
        return None

    def _not_ready(self, started: str, pods: str, ready_at: str) -> None:
        late = _finite(
            self.ask(
                "warmup_s",
                f"count(({started} >= {self.start.timestamp():.0f}) and on ({POD}) {pods} "
                f"unless on ({POD}) {ready_at})",
            )
        )
        if late:
            self.notes.append(
                f"warmup_s: {late:.0f} pod(s) started inside the window and were not ready by "
                "its end: their warm-up is longer than the window left them"
            )

    def _why_no_warmup(self, started: str, pods: str, in_window: str) -> None:
        if self.ask("warmup_s", f"count({started})") is None:
            self.notes.append(
                f"warmup_s: no kube-state-metrics {POD_START} series over the window: pod "
                "warm-up unknown"
            )
            return
        named = f'{{{self.selector},pod!=""}}' if self.selector else '{pod!=""}'
        served = self.signals["running"].names[0]
        if self.ask("warmup_s", f"count({self._over('max_over_time', served, named)})") is None:
            self.notes.append(
                f"warmup_s: the {served} series carry no pod label to match them with "
                "kube-state-metrics' pods: pod warm-up unknown"
            )
            return
        if self.ask("warmup_s", f"count({started} {in_window})") is None:
            self.notes.append("warmup_s: no pod serving these series started inside the window")
        else:
            self.notes.append(
                f"warmup_s: no ready time ({POD_READY_TIME} or {POD_READY}) for the pods "
                "started inside the window"
            )


def read_server_series(
    prometheus: Prometheus,
    *,
    selector: str,
    start: datetime,
    end: datetime,
    runtime: RuntimeInfo | None = None,
) -> ServerMetrics:
    """Query ``prometheus`` for the window ``[start, end]`` (see ``run_window``)."""
    version = runtime.version if runtime is not None and runtime.name == "vllm" else CURRENT_VLLM
    reader = _Reader(prometheus, selector.strip(), start, end, version)
    if not reader.selector:
        reader.notes.append("no --selector: every vLLM series this Prometheus holds was read")
    try:
        hit_rate, queried = reader.prefix_cache()
        return ServerMetrics(
            source=prometheus.url,
            selector=reader.selector or None,
            start=start,
            end=end,
            prefix_cache_hit_rate=hit_rate,
            prefix_cache_queried_tokens=queried,
            kv_cache_usage_peak=reader.kv_cache_usage_peak(),
            preemptions=reader.preemptions(),
            queue_p99_ms=reader.queue_p99_ms(),
            requests_running_peak=reader.fleet_peak("running", "requests_running_peak"),
            requests_waiting_peak=reader.fleet_peak("waiting", "requests_waiting_peak"),
            warmup_s=reader.warmup_s(),
            queries=reader.queries,
            notes=reader.notes,
        )
    except InvalidInput as exc:
        # The queries are capgate's own: what Prometheus refuses is the selector in them.
        detail = "; ".join(p.message for p in exc.problems) or exc.message
        raise InvalidInput(
            "Prometheus refused the query",
            problems=[FieldProblem("--selector", f"Prometheus refused {selector!r}: {detail}")],
        ) from None
