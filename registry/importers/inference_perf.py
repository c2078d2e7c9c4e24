"""inference-perf (kubernetes-sigs) lifecycle reports and per-request files.

Read against inference-perf's own source (``inference_perf/reportgen/base.py``,
``inference_perf/loadgen/load_generator.py``, ``inference_perf/main.py``; docs/importers.md has
the mapping and the commits). Every figure inference-perf writes is in seconds, and its 50th
percentile is keyed ``median``, the others ``p{p:g}`` (``p0.1``, ``p99.9``).

- TPOT is (last token time - first token time) / (output tokens - 1) per streamed request:
  capgate's ``tpot_ms``. NTPOT is e2e / output tokens (it includes the TTFT), only noted.
- ITL pools every gap between consecutive output-token receive times: capgate's ``itl_ms``.
- ``load_summary.schedule_delay`` is, per request, start_time - scheduled_time in seconds (how
  late the client sent it); ``achieved_rate`` is requests / (last send - first send). Both say
  whether the client kept the offered schedule.
- A concurrent stage is closed-loop: inference-perf sets its ``requested_rate`` to
  num_requests (all enqueued within one second) and its requests wait for a free slot, so
  neither that rate nor the schedule delay means anything there.
- The ``*_prometheus_metrics.json`` report is refused: it is the model server's own metrics
  over a query window, not the test's requests (see ``_refuse_prometheus_report``).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from registry.errors import InvalidInput
from registry.importers.json_values import count, num, obj, pos, refuse
from registry.importers.parsed_stage import ParsedStage, fill_from_requests, standard_missing
from registry.importers.stats import (
    cv_from_stated,
    levels_from_keys,
    percentiles_ms,
    stated_length_distribution,
)
from registry.records.evidence import Throughput

TOOL = "inference-perf"
_STAGE_FILE = re.compile(r"stage[_-]?(\d+)[_-]")
_LATENCIES = {
    "time_to_first_token": "ttft_ms",
    "time_per_output_token": "tpot_ms",
    "inter_token_latency": "itl_ms",
    "request_latency": "e2e_ms",
}
# Keys the Prometheus report writes directly under ``successes`` (a lifecycle report nests its
# latencies under ``successes.latency`` and has none of these beside it).
_PROMETHEUS_KEYS = frozenset(
    {
        "rate",
        "queue_len",
        "request_latency",
        "time_to_first_token",
        "time_per_output_token",
        "kv_cache_usage_percentage",
        "num_requests_swapped",
        "num_preemptions_total",
        "prefix_cache_hit_percent",
        "request_success_count",
    }
)
# inference-perf's own accuracy guidance (docs/loadgen.md): the median schedule delay should be
# under 10 ms for a fully accurate run.
_ACCURATE_DELAY_S = 0.010
# The typical request leaving later than this share of the stage's scheduled window means the
# server saw a stretched arrival process, not the offered one (the same 10 % margin the core
# allows the achieved rate).
_BEHIND_DELAY_SHARE = 0.1


def looks_like(doc: Any) -> bool:
    if isinstance(doc, dict):
        return "load_summary" in doc and "successes" in doc
    if isinstance(doc, list) and doc and isinstance(doc[0], dict):
        first = doc[0]
        return "start_time" in first and "end_time" in first and "info" in first
    return False


def _stage_from_name(file_name: str) -> str | None:
    m = _STAGE_FILE.search(file_name.rsplit("/", 1)[-1])
    return m.group(1) if m else None


def _is_prometheus_report(doc: dict[str, Any]) -> bool:
    successes = obj(doc.get("successes"))
    if successes is None or "latency" in successes:
        return False
    return bool(_PROMETHEUS_KEYS & successes.keys())


def _lifecycle_sibling(source: str) -> str:
    """The client-side report inference-perf wrote beside a Prometheus report."""
    name = source.rsplit("/", 1)[-1]
    if "prometheus_metrics" in name:
        return name.replace("prometheus_metrics", "lifecycle_metrics")
    stage = _stage_from_name(name)
    if stage is not None:
        return f"stage_{stage}_lifecycle_metrics.json"
    if "summary" in name.lower():
        return "summary_lifecycle_metrics.json"
    return "the *_lifecycle_metrics.json written beside it"


def _refuse_prometheus_report(doc: dict[str, Any], *, source: str) -> InvalidInput:
    """Why a Prometheus report is not evidence, and what to import instead.

    inference-perf queries the model server's Prometheus over the stage's window (its start to
    its end plus a scrape interval) and writes the answers: request counters, and
    ``histogram_quantile`` over the server's latency histograms. That is another measurement
    than the test's: counts cover whatever the server finished in that window (the kubecon25
    stage-6 report counts 21904 where the client sent 11002), percentiles are interpolated
    inside the server's coarse buckets (its TTFT p99 of 4.97 s lies above the client's largest
    TTFT, 3.38 s, by interpolation within the 2.5-5 s bucket), failures and the offered load
    are absent, and ``prompt_len``/``output_len`` ``mean`` are token-counter aggregates, not
    per-request lengths. Stored as evidence, such figures would pass or fail SLO checks on
    numbers nobody measured; the lifecycle report of the same run carries the real ones.
    """
    successes = obj(doc.get("successes")) or {}
    stated = count(successes.get("count"))
    counted = f"successes.count ({stated}) " if stated is not None else "successes.count "
    return refuse(
        "successes",
        "this is inference-perf's Prometheus report (the model server's own metrics, queried "
        "over the time window of a stage or of the whole run), not a load-test result: it "
        f"states no offered load and no failed requests, {counted}is the server's "
        "completion counter over that window rather than the requests this test sent, and "
        "its mean/median/p90/p99 are interpolated from the server's histogram buckets. "
        "Import the client-side report of the same run instead: "
        f"{_lifecycle_sibling(source)}",
        source=source,
    )


def _lengths(stage: ParsedStage, dist: dict[str, Any] | None, n: int | None, what: str) -> None:
    if dist is None:
        return
    levels = levels_from_keys(dist)
    d = stated_length_distribution(
        levels,
        samples=n,
        mean=num(dist.get("mean")),
        minimum=num(dist.get("min")),
        maximum=num(dist.get("max")),
        notes=stage.notes,
        what=what,
    )
    est = cv_from_stated(mean=num(dist.get("mean")), std=None, levels=levels, samples=n)
    if what == "prompt_tokens":
        stage.prompt_tokens, stage.prompt_cv = d, est
    else:
        stage.output_tokens, stage.output_cv = d, est


def _judge_schedule_delay(stage: ParsedStage, load: dict[str, Any]) -> None:
    """Whether the client kept its schedule, from ``load_summary.schedule_delay`` (seconds).

    Each request's delay is how long after its scheduled time the client sent it: a worker
    takes a request only when one of its ``worker_max_concurrency`` slots is free, so a client
    short of slots (or CPU) sends later and later. The median is judged against the window the
    stage scheduled its requests over (count / requested_rate: inference-perf schedules
    int(rate x duration) requests over the duration).
    """
    delay = obj(load.get("schedule_delay"))
    median = num(delay.get("median")) if delay is not None else None
    if delay is None or median is None:
        return
    p99 = num(delay.get("p99"))
    figures = f"load_summary.schedule_delay median {median:.4g} s" + (
        f", p99 {p99:.4g} s" if p99 is not None else ""
    )
    if stage.concurrency is not None:
        stage.notes.append(
            f"{figures}: a concurrent stage queues its requests for a free slot by design, so "
            "the delay does not judge the schedule"
        )
        return
    if median <= _ACCURATE_DELAY_S:
        return
    offered, n = stage.request_rate_rps, stage.requests
    if offered is None or not n:
        stage.notes.append(
            f"{figures}, above inference-perf's 10 ms accuracy guidance; the file states no "
            "requested rate, so whether the client kept the offered schedule cannot be judged"
        )
        return
    window = n / offered
    if median <= _BEHIND_DELAY_SHARE * window:
        stage.notes.append(
            f"{figures}, above inference-perf's 10 ms accuracy guidance but under "
            f"{_BEHIND_DELAY_SHARE:.0%} of the {window:.4g} s the stage was scheduled over"
        )
        return
    reason = (
        f"the load generator fell behind its schedule: half the requests were sent more than "
        f"{median:.4g} s after their scheduled time ({figures}) in a stage scheduled over "
        f"{window:.4g} s"
    )
    if stage.achieved_rate_rps is not None:
        reason += (
            f"; achieved {stage.achieved_rate_rps:.4g} of the offered {offered:g} req/s "
            "(load_summary.achieved_rate, requested_rate)"
        )
    stage.client_behind = True
    stage.client_behind_reason = reason


def _parse_lifecycle(doc: dict[str, Any], *, source: str) -> ParsedStage:
    if _is_prometheus_report(doc):
        raise _refuse_prometheus_report(doc, source=source)
    stage = ParsedStage(tool=TOOL, stage=_stage_from_name(source))
    load = obj(doc.get("load_summary"))
    successes = obj(doc.get("successes"))
    if load is None or successes is None:
        raise refuse(
            "load_summary" if load is None else "successes",
            "an inference-perf lifecycle report needs load_summary and successes objects",
            source=source,
        )
    latency = obj(successes.get("latency"))
    if latency is None:
        # Without it the record would carry counts and no latency: refuse rather than half-read.
        raise refuse(
            "successes.latency",
            "an inference-perf lifecycle report states its latencies under successes.latency "
            "(request_latency, time_to_first_token, time_per_output_token, "
            "inter_token_latency); this file has none",
            source=source,
        )
    failures = obj(doc.get("failures")) or {}
    stage.requests = count(load.get("count"))
    requested = pos(load.get("requested_rate"))
    conc = count(load.get("concurrency"))
    if conc:
        stage.concurrency = conc
        if requested is not None:
            stage.notes.append(
                f"load_summary.requested_rate {requested:g} is the pacing inference-perf sets "
                "for a concurrent stage (all its requests enqueued within one second), not an "
                "offered rate; not stored"
            )
    else:
        stage.request_rate_rps = requested
    duration = pos(doc.get("benchmark_time_seconds"))
    if duration is None:
        duration = pos(load.get("send_duration"))
        if duration is not None:
            stage.notes.append(
                "duration_s is load_summary.send_duration (first to last send, seconds)"
            )
    stage.duration_s = duration
    # requests (failed ones too) / (last send - first send): what the client really sent.
    stage.achieved_rate_rps = pos(load.get("achieved_rate"))
    _judge_schedule_delay(stage, load)
    stage.completed = count(successes.get("count"))
    stage.failed = count(failures.get("count"))
    if stage.failed:
        failed_latency = obj(failures.get("request_latency"))
        if failed_latency is not None and num(failed_latency.get("median")) is not None:
            stage.notes.append(
                f"{stage.failed} failed requests took a median "
                f"{(num(failed_latency.get('median')) or 0.0) * 1000:.4g} ms before failing "
                "(failures.request_latency); latencies cover successful requests only"
            )

    for key, field_name in _LATENCIES.items():
        dist = obj(latency.get(key))
        if dist is None:
            continue
        pct = percentiles_ms(
            levels_from_keys(dist),
            mean=num(dist.get("mean")),
            scale_to_ms=1000.0,
            notes=stage.notes,
            what=key,
        )
        setattr(stage, field_name, pct)
    ntpot = obj(latency.get("normalized_time_per_output_token"))
    if ntpot is not None and num(ntpot.get("median")) is not None:
        stage.notes.append(
            "NTPOT (e2e / output tokens) median "
            f"{(num(ntpot.get('median')) or 0.0) * 1000:.3f} ms; not stored as tpot"
        )
    stage.notes.append("inference-perf figures are in seconds; converted to ms")
    stage.notes.append(
        "inference-perf TPOT: (last token - first token) / (output tokens - 1), streamed "
        "requests only; ITL pools the gaps between output-token receive times"
    )

    thr = obj(successes.get("throughput")) or {}
    # SLO attainment, written only when the run configured goodput constraints.
    goodput = obj(successes.get("goodput_metrics")) or {}
    stage.throughput = Throughput(
        requests_per_s=_nonneg(thr.get("requests_per_sec")),
        output_tokens_per_s=_nonneg(thr.get("output_tokens_per_sec")),
        total_tokens_per_s=_nonneg(thr.get("total_tokens_per_sec")),
        goodput_requests_per_s=_nonneg(goodput.get("request_goodput")),
    )
    share = num(goodput.get("goodput_percentage"))
    if share is not None:
        stage.notes.append(
            f"goodput: {share:.4g} % of successful requests met the run's SLO constraints "
            "(successes.goodput_metrics)"
        )
    n_ok = stage.completed
    prompt = obj(successes.get("prompt_tokens")) or obj(successes.get("prompt_len"))
    output = obj(successes.get("output_tokens")) or obj(successes.get("output_len"))
    _lengths(stage, prompt, n_ok, "prompt_tokens")
    _lengths(stage, output, n_ok, "output_tokens")
    if prompt is not None:
        stage.notes.append("length distributions cover successful requests only")
    stage.cancellation_basis = "inference-perf lifecycle reports carry no cancellation figure"
    stage.priority_basis = "inference-perf lifecycle reports do not record priority classes"
    standard_missing(stage)
    return stage


def _request_fields(info: dict[str, Any]) -> tuple[float | None, float | None, list[float]]:
    """(input tokens, output tokens, output-token times) of one per-request entry.

    Early reports put them directly in ``info``; later ones nest them under
    ``info.request_metrics.text`` and ``info.response_metrics`` (keeping ``info.input_tokens``
    as a mirror).
    """
    response = obj(info.get("response_metrics")) or {}
    prompt = num(info.get("input_tokens"))
    if prompt is None:
        text = obj((obj(info.get("request_metrics")) or {}).get("text")) or {}
        prompt = num(text.get("input_tokens"))
    out = num(info.get("output_tokens"))
    if out is None:
        out = num(response.get("output_tokens"))
    raw_times = info.get("output_token_times")
    if raw_times is None:
        raw_times = response.get("output_token_times")
    times = [float(t) for t in (raw_times or []) if num(t) is not None]
    return prompt, out, times


def _parse_per_request(rows: list[Any], *, source: str) -> ParsedStage:
    stage = ParsedStage(tool=TOOL, stage=_stage_from_name(source))
    starts: list[float] = []
    ends: list[float] = []
    prompt: list[float] = []
    out: list[float] = []
    ttft: list[float] = []
    tpot: list[float] = []
    itl: list[float] = []
    e2e: list[float] = []
    failed = 0
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise refuse(f"[{i}]", "each per-request entry must be an object", source=source)
        start, end = num(row.get("start_time")), num(row.get("end_time"))
        if start is None or end is None:
            raise refuse(f"[{i}].start_time", "start_time and end_time are needed", source=source)
        starts.append(start)
        ends.append(end)
        p, o, times = _request_fields(obj(row.get("info")) or {})
        if p is not None:
            prompt.append(p)
        if row.get("error"):
            failed += 1
            continue
        if o is not None:
            out.append(o)
        e2e.append(end - start)
        if times:
            ttft.append(times[0] - start)
            itl.extend(np.diff(np.asarray(times, dtype=float)).tolist())
            # inference-perf divides by the output token count (its tokenizer's), not by the
            # number of timestamps; fall back to the timestamps when the count is absent.
            n_tokens = o if o is not None else float(len(times))
            if len(times) > 1 and n_tokens > 1:
                tpot.append((times[-1] - times[0]) / (n_tokens - 1))
    n = len(rows)
    stage.requests = n
    stage.failed = failed
    stage.completed = n - failed
    if starts:
        span = max(ends) - min(starts)
        stage.duration_s = span if span > 0 else None
        if span > 0:
            stage.throughput = Throughput(
                requests_per_s=(n - failed) / span,
                output_tokens_per_s=float(sum(out)) / span,
                total_tokens_per_s=float(sum(out) + sum(prompt)) / span,
            )
    fill_from_requests(
        stage,
        ttft_s=ttft,
        tpot_s=tpot,
        itl_s=itl,
        e2e_s=e2e,
        prompt_tokens=prompt,
        output_tokens=out,
    )
    stage.notes.append(
        f"computed from {n} per-request records; TTFT = first output_token_time - start_time, "
        "TPOT = (last - first token) / (output tokens - 1), ITL pooled token gaps; throughput "
        "over the span from the first start to the last end"
    )
    stage.cancellation_basis = "inference-perf per-request files carry no cancellation flag"
    stage.priority_basis = "inference-perf per-request files do not record priority classes"
    standard_missing(stage)
    return stage


def parse(doc: Any, *, source: str) -> list[ParsedStage]:
    if isinstance(doc, dict):
        return [_parse_lifecycle(doc, source=source)]
    if isinstance(doc, list):
        if not doc:
            raise refuse("[0]", "the per-request file holds no requests", source=source)
        return [_parse_per_request(doc, source=source)]
    raise refuse(
        "load_summary",
        "expected an inference-perf lifecycle report (load_summary, successes, failures) or a "
        "per-request list",
        source=source,
    )


def _nonneg(value: Any) -> float | None:
    f = num(value)
    return f if f is not None and f >= 0 else None
