"""AIPerf (ai-dynamo/aiperf): ``profile_export_aiperf.json`` and ``profile_export.jsonl``.

The aggregate export has GenAI-Perf's metric shape; early versions nest the metrics under
``records`` and abbreviate names (``ttft``, ``ttst``), later ones put them at the top level
with full names (``time_to_first_token``).

Metrics by meaning (AIPerf's ``docs/metrics_reference.md`` and
``src/aiperf/metrics/types/``):

* ``inter_token_latency``: per request, (request_latency - ttft) / (osl - 1), one value per
  request (request-weighted): capgate's ``tpot_ms``;
* ``inter_chunk_latency``: every gap between consecutive streamed chunks, pooled over all
  requests: capgate's ``itl_ms`` (a chunk may carry several tokens);
* ``request_count`` counts successful requests only; ``error_request_count`` and
  ``error_summary`` (per error type) count the others. Client cancellations (HTTP 499,
  ``RequestCancellationError``) are among them and are separated out: cancelled when the
  test configured a cancellation rate, otherwise incomplete (cut off when AIPerf ended the
  phase), never failed. ``good_request_count`` counts requests that met the configured SLOs
  (goodput), not successes;
* ``output_sequence_length`` includes reasoning tokens (all tokens the server generated).

The offered load is read from ``input_config``: ``phases`` (v0.10 on: warm-up phases with
``exclude_from_results`` are left out) or ``loadgen`` (earlier versions).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from registry.importers.build_record import BEHIND_RATIO
from registry.importers.genai_perf import AIPERF_MARKERS, avg, lengths, metric_percentiles
from registry.importers.identity import Identity, Stated, dig, names, stated, text
from registry.importers.json_values import count, epoch_to_utc, num, obj, pos, refuse
from registry.importers.parsed_stage import ParsedStage, fill_from_requests, standard_missing
from registry.importers.stats import (
    unit_scale_to_ms,
)
from registry.records.evidence import Throughput

TOOL = "aiperf"

# Full name -> the short names early AIPerf versions wrote.
_ALIASES = {
    "time_to_first_token": ("time_to_first_token", "ttft"),
    "time_to_second_token": ("time_to_second_token", "ttst"),
    "request_latency": ("request_latency",),
    "inter_token_latency": ("inter_token_latency",),
    "inter_chunk_latency": ("inter_chunk_latency",),
    "input_sequence_length": ("input_sequence_length", "isl"),
    "output_sequence_length": ("output_sequence_length", "osl"),
}

# Phase types that schedule requests at a rate (AIPerf src/aiperf/config/phases.py).
_RATE_PHASES = ("poisson", "gamma", "constant", "request_rate", "user_centric")


# Metric blocks one of which every aggregate export holds: the success metrics, or, when
# no request succeeded (AIPerf then writes no success metric at all), the error count.
_BLOCKS = ("request_throughput", "request_latency", "ttft", "error_request_count")


def looks_like(doc: Any) -> bool:
    if not isinstance(doc, dict):
        return False
    if isinstance(doc.get("records"), dict) and "input_config" in doc:
        return True
    return any(k in doc for k in AIPERF_MARKERS) and any(
        isinstance(doc.get(k), dict) for k in _BLOCKS
    )


def looks_like_jsonl(rows: list[Any]) -> bool:
    return bool(rows) and all(
        isinstance(r, dict) and "metadata" in r and "metrics" in r for r in rows[:5]
    )


def _get(metrics: dict[str, Any], name: str) -> Any:
    for alias in _ALIASES.get(name, (name,)):
        if alias in metrics:
            return metrics[alias]
    return None


def _reason(entry: dict[str, Any]) -> str | None:
    """``20 x TimeoutError (HTTP 504): message`` from one ``error_summary`` entry."""
    details = obj(entry.get("error_details")) or entry
    kind = details.get("type")
    code = details.get("code")
    message = details.get("message")
    parts = [str(kind) if isinstance(kind, str) and kind else "error"]
    if isinstance(code, int) and not isinstance(code, bool):
        parts.append(f"(HTTP {code})")
    text = " ".join(parts)
    if isinstance(message, str) and message.strip() and message.strip() != kind:
        short = message.strip().splitlines()[0]
        text += f": {short if len(short) <= 80 else short[:77] + '...'}"
    n = count(entry.get("count"))
    return f"{n} x {text}" if n is not None else text


def _is_cancel(error: Any) -> bool:
    err = obj(error)
    if err is None:
        return False
    details = obj(err.get("error_details")) or err
    return details.get("code") == 499 or details.get("type") == "RequestCancellationError"


# --- the offered load ----------------------------------------------------------------------


@dataclass
class LoadSetting:
    """What ``input_config`` says was offered; ``stated`` is False when it says nothing."""

    stated: bool = False
    kind: str | None = None  # phase type or request_rate_mode
    concurrency: int | None = None
    rate: float | None = None
    burstiness: float | None = None
    constant: bool = False
    requests: int | None = None
    duration_s: float | None = None
    cancellation_pct: float | None = None


def _phase_setting(phase: dict[str, Any], setting: LoadSetting, notes: list[str]) -> None:
    kind = str(phase.get("type") or "")
    setting.kind = kind or None
    conc = count(phase.get("concurrency"))
    if kind == "concurrency" and not conc:
        conc = 1  # AIPerf's ConcurrencyPhase default
        notes.append("concurrency phase states no concurrency: AIPerf's default, 1")
    setting.concurrency = conc if conc else None
    if kind in _RATE_PHASES:
        setting.rate = pos(phase.get("rate")) or pos(phase.get("request_rate"))
        pattern = str(phase.get("arrival_pattern") or kind)
        if pattern == "poisson":
            setting.burstiness = 1.0  # Poisson arrivals are gamma arrivals of shape 1
        elif pattern == "gamma":
            # AIPerf's smoothness is the gamma shape (1.0 Poisson, < 1 burstier).
            shape = pos(phase.get("smoothness")) or pos(phase.get("arrival_smoothness"))
            setting.burstiness = shape if shape is not None else 1.0
        elif pattern == "constant":
            setting.constant = True
            notes.append("AIPerf constant arrivals: evenly spaced, no burstiness figure")
        if conc:
            notes.append(f"AIPerf rate phase capped at {conc} concurrent requests")
    elif kind == "fixed_schedule":
        notes.append("AIPerf fixed_schedule phase: requests replayed at trace timestamps")
    setting.requests = count(phase.get("requests"))
    setting.duration_s = pos(phase.get("duration"))
    cancel = obj(phase.get("cancellation"))
    rate = num(cancel.get("rate")) if cancel is not None else 0.0
    setting.cancellation_pct = rate


def _load_setting(config: dict[str, Any], notes: list[str]) -> LoadSetting:
    setting = LoadSetting()
    phases = config.get("phases")
    if isinstance(phases, list) and phases:
        profiling: list[dict[str, Any]] = []
        for phase in (p for p in phases if isinstance(p, dict)):
            name = phase.get("name")
            warmup = (
                phase.get("exclude_from_results") is True
                or phase.get("kind") == "warmup"
                or (name == "warmup" and phase.get("kind") is None)
            )
            if warmup:
                n = count(phase.get("requests"))
                size = f", {n} requests" if n else ""
                notes.append(f"AIPerf warm-up phase {name!r}{size} excluded from the results")
            else:
                profiling.append(phase)
        setting.stated = True
        if len(profiling) == 1:
            _phase_setting(profiling[0], setting, notes)
        elif profiling:
            # Several measured phases are aggregated together: no single load stands for them.
            names = ", ".join(str(p.get("name")) for p in profiling)
            notes.append(f"{len(profiling)} profiling phases ({names}) aggregated in one export")
            settings = []
            for p in profiling:
                s = LoadSetting(stated=True)
                _phase_setting(p, s, [])
                settings.append(s)
            if all(s == settings[0] for s in settings):
                _phase_setting(profiling[0], setting, notes)
            else:
                setting.cancellation_pct = max((s.cancellation_pct or 0.0) for s in settings)
        return setting
    loadgen = obj(config.get("loadgen"))
    if loadgen is None and any(k in config for k in ("concurrency", "request_rate")):
        loadgen = config  # the oldest exports keep the load keys at the top
    if loadgen is None:
        return setting
    setting.stated = True
    conc = count(loadgen.get("concurrency"))
    setting.concurrency = conc if conc else None
    setting.rate = pos(loadgen.get("request_rate"))
    mode = loadgen.get("request_rate_mode")
    if isinstance(mode, str):
        setting.kind = mode
        notes.append(f"AIPerf request_rate_mode {mode}")
        if setting.rate is not None and mode.lower() == "poisson":
            setting.burstiness = 1.0
    setting.requests = count(loadgen.get("request_count"))
    setting.duration_s = pos(loadgen.get("benchmark_duration"))
    rate = num(loadgen.get("request_cancellation_rate"))
    setting.cancellation_pct = rate if rate is not None else 0.0
    return setting


def _offered(stage: ParsedStage, setting: LoadSetting) -> None:
    stage.concurrency = setting.concurrency
    stage.request_rate_rps = setting.rate
    stage.burstiness = setting.burstiness
    stage.constant_arrivals = setting.constant and setting.rate is not None
    pct = setting.cancellation_pct
    if setting.stated and pct is not None and 0 <= pct <= 100:
        stage.cancellation_rate = pct / 100.0  # AIPerf takes a percentage
        if pct > 0:
            stage.notes.append(f"configured request cancellation rate {pct:g} %")


# --- the aggregate export ------------------------------------------------------------------


def _counts(stage: ParsedStage, doc: dict[str, Any], metrics: dict[str, Any]) -> None:
    """Successes, failures, cancellations and cut-off requests from the aggregate."""
    completed = count(avg(metrics.get("request_count")))
    errors = count(avg(metrics.get("error_request_count")))
    summary = doc.get("error_summary")
    cancels_in_errors = 0
    if isinstance(summary, list):
        entries = [e for e in summary if isinstance(e, dict)]
        cancels_in_errors = sum(count(e.get("count")) or 0 for e in entries if _is_cancel(e))
        failures = sorted(
            (e for e in entries if not _is_cancel(e)),
            key=lambda e: -(count(e.get("count")) or 0),
        )
        stage.failure_reasons = [r for r in map(_reason, failures) if r]
        if errors is None and entries:
            errors = sum(count(e.get("count")) or 0 for e in entries)
        elif errors is None:
            errors = 0
    # Newer AIPerf also counts cancellations on their own; those beyond the error summary
    # were not counted as errors.
    cancelled_metric = count(avg(metrics.get("cancelled_request_count"))) or 0
    extra_cancels = max(0, cancelled_metric - cancels_in_errors)
    cut_short = cancels_in_errors + extra_cancels
    if completed is None and errors:
        completed = 0  # AIPerf omits request_count when no request succeeded
    stage.completed = completed
    stage.failed = None if errors is None else errors - cancels_in_errors
    if completed is not None:
        stage.requests = completed + (errors or 0) + extra_cancels
    pct = stage.cancellation_rate
    if pct == 0.0 and cut_short:
        # Nothing was configured to cancel: AIPerf cancelled these itself when it ended the
        # phase (duration and grace period over). They measure nothing and were not a
        # workload's cancellations.
        stage.cancelled, stage.incomplete = 0, cut_short
        stage.notes.append(
            f"{cut_short} request(s) cancelled by AIPerf (HTTP 499) although no cancellation "
            "rate was configured: cut off when the phase ended, recorded as incomplete"
        )
    else:
        stage.cancelled = cut_short if (errors is not None or cancelled_metric) else None
    if stage.failed:
        stage.notes.append(f"{stage.failed} request(s) failed (error_request_count)")
    if doc.get("was_cancelled") is True:
        stage.notes.append(
            "the AIPerf run was interrupted (was_cancelled: true): figures cover the requests "
            "finished before that"
        )
    good = count(avg(metrics.get("good_request_count")))
    if good is not None and completed is not None:
        config = obj(doc.get("input_config")) or {}
        slos = obj(config.get("slos")) or obj((obj(config.get("metrics")) or {}).get("slos"))
        stated = ", ".join(f"{k} {v}" for k, v in (slos or {}).items())
        stage.notes.append(
            f"good_request_count {good} of {completed} successful requests met the configured "
            f"SLOs{f' ({stated})' if stated else ''}: goodput; the others completed, they did "
            "not fail"
        )


def _cancellation_findings(stage: ParsedStage) -> None:
    configured = stage.cancellation_rate
    if configured is not None:
        stage.cancellations_exercised = configured > 0 and bool(stage.cancelled)
    elif stage.cancelled is not None:
        stage.cancellations_exercised = stage.cancelled > 0
    stage.cancellation_basis = (
        "AIPerf client cancellations (--request-cancellation-rate), counted from errors with "
        "HTTP 499 / RequestCancellationError"
    )
    stage.priority_classes = 1
    stage.priority_basis = "AIPerf sends one request stream without priorities"


def _window(stage: ParsedStage, doc: dict[str, Any], metrics: dict[str, Any]) -> None:
    first_ns = avg(metrics.get("min_request_timestamp"))
    if first_ns is not None and first_ns > 0:
        stage.measured_at = epoch_to_utc(first_ns / 1e9)
        stage.measured_at_basis = "min_request_timestamp"
    elif isinstance(doc.get("start_time"), str):
        try:
            ts = datetime.fromisoformat(doc["start_time"])
            stage.measured_at = ts
            stage.measured_at_naive = ts.tzinfo is None
            stage.measured_at_basis = "start_time"
        except ValueError:
            stage.notes.append(f"start_time {doc['start_time']!r} is not ISO 8601; ignored")
    stage.duration_s = pos(avg(metrics.get("benchmark_duration")))


def _schedule(stage: ParsedStage, metrics: dict[str, Any]) -> None:
    """Whether AIPerf kept the offered schedule, from what the aggregate states.

    Trace replay states it directly (``replay_sched_degraded``). Rate phases state no send
    rate: the aggregate counts requests over first send to last response. The last request
    sent was answered about one mean request latency after it left, so the send span is
    taken as benchmark_duration minus the mean request latency.
    """
    degraded = avg(metrics.get("replay_sched_degraded"))
    if degraded is not None and degraded >= 1:
        lag = avg(metrics.get("replay_sched_lag_p99"))
        stage.client_behind = True
        stage.client_behind_reason = (
            "AIPerf replay_sched_degraded: the replay fell behind its trace schedule"
            + (f" (send lag p99 {lag:g} ms)" if lag is not None else "")
        )
        return
    if stage.request_rate_rps is None or stage.requests is None or stage.requests < 2:
        return
    duration = stage.duration_s
    latency = stage.e2e_ms.mean if stage.e2e_ms is not None else None
    if duration is None or latency is None:
        return
    span = duration - latency / 1000.0
    if span <= 0:
        return
    stage.achieved_rate_rps = (stage.requests - 1) / span
    stage.notes.append(
        f"achieved send rate {stage.achieved_rate_rps:g} req/s estimated as (requests - 1) / "
        "(benchmark_duration - mean request_latency); AIPerf states no send rate"
    )
    if stage.achieved_rate_rps < BEHIND_RATIO * stage.request_rate_rps:
        stage.client_behind = True
        stage.client_behind_reason = (
            f"AIPerf sent about {stage.achieved_rate_rps:g} req/s against the offered "
            f"{stage.request_rate_rps:g} req/s "
            f"({stage.achieved_rate_rps / stage.request_rate_rps:.0%}; estimated from "
            "requests over benchmark_duration less the mean request latency)"
        )


def _gpus(doc: dict[str, Any]) -> tuple[Stated, ...]:
    """Every GPU the DCGM telemetry saw: ``telemetry_data.endpoints.<url>.gpus.<id>.gpu_name``
    (``GpuSummary`` in aiperf's export models); none when telemetry was off or failed."""
    found: list[Stated] = []
    for endpoint in (obj(dig(doc, "telemetry_data", "endpoints")) or {}).values():
        for gpu in (obj(dig(endpoint, "gpus")) or {}).values():
            name = text(dig(gpu, "gpu_name"))
            if name is not None:
                found.append(Stated(name, "telemetry_data.endpoints.*.gpus.*.gpu_name"))
    return tuple(found)


def _identity(doc: dict[str, Any]) -> Identity:
    """The models requested (``--model``: ``input_config.models.items[].name`` from 0.10,
    ``input_config.endpoint.model_names`` before), the tokenizer, the GPUs telemetry saw."""
    config = obj(doc.get("input_config")) or {}
    models = (
        names(dig(config, "models", "items"), "input_config.models.items[].name")
        or names(dig(config, "endpoint", "model_names"), "input_config.endpoint.model_names")
        or names(config.get("model_names"), "input_config.model_names")
    )
    tokenizer = stated(config, "tokenizer", "name", basis="input_config.tokenizer.name")
    return Identity(models=models, tokenizer=tokenizer, accelerators=_gpus(doc))


def _parse_aggregate(doc: dict[str, Any], *, source: str) -> ParsedStage:
    metrics = obj(doc.get("records")) or doc
    stage = ParsedStage(tool=TOOL)
    version = doc.get("aiperf_version")
    stage.tool_version = version if isinstance(version, str) else None
    if stage.tool_version is None:
        stage.notes.append("the file does not state the AIPerf version")
    setting = _load_setting(obj(doc.get("input_config")) or {}, stage.notes)
    stage.identity = _identity(doc)
    _offered(stage, setting)
    _window(stage, doc, metrics)
    _counts(stage, doc, metrics)
    recorded = stage.requests
    if setting.requests is not None and recorded is not None and setting.requests != recorded:
        stage.notes.append(f"configured {setting.requests} requests but {recorded} recorded")
    if setting.duration_s is not None:
        stage.notes.append(f"configured duration {setting.duration_s:g} s")
    _cancellation_findings(stage)

    stage.ttft_ms = metric_percentiles(
        _get(metrics, "time_to_first_token"), stage=stage, what="ttft", source=source
    )
    stage.e2e_ms = metric_percentiles(
        _get(metrics, "request_latency"), stage=stage, what="request_latency", source=source
    )
    stage.tpot_ms = metric_percentiles(
        _get(metrics, "inter_token_latency"), stage=stage, what="inter_token_latency", source=source
    )
    stage.itl_ms = metric_percentiles(
        _get(metrics, "inter_chunk_latency"), stage=stage, what="inter_chunk_latency", source=source
    )
    # Later schemas (1.3 in the files seen) give each block its count; schema 1.0 (AIPerf 0.8)
    # states none. The lengths are the successful requests', request_count of them.
    lengths(
        stage,
        _get(metrics, "input_sequence_length"),
        which="prompt_tokens",
        samples=stage.completed or None,
    )
    lengths(
        stage,
        _get(metrics, "output_sequence_length"),
        which="output_tokens",
        samples=stage.completed or None,
    )
    stage.throughput = Throughput(
        requests_per_s=avg(metrics.get("request_throughput")),
        output_tokens_per_s=avg(metrics.get("output_token_throughput")),
        total_tokens_per_s=avg(metrics.get("total_token_throughput")),
        goodput_requests_per_s=avg(metrics.get("goodput")),
    )
    stage.notes.append(
        "AIPerf inter_token_latency ((e2e - ttft) / (out - 1), one value per request) stored "
        "as tpot_ms; inter_chunk_latency (every chunk gap, pooled) as itl_ms"
    )
    _schedule(stage, metrics)
    standard_missing(stage)
    return stage


# --- the per-request export ----------------------------------------------------------------


def _value(metrics: dict[str, Any], name: str, *, time: bool) -> Any:
    """A per-request metric value; time metrics scaled to seconds."""
    m = obj(_get(metrics, name))
    if m is None:
        return None
    value = m.get("value")
    if not time:
        return value
    unit = m.get("unit")
    scale = unit_scale_to_ms(unit) if isinstance(unit, str) else 1.0
    if scale is None:
        return None
    if isinstance(value, list):
        return [float(v) * scale / 1000.0 for v in value if num(v) is not None]
    v = num(value)
    return None if v is None else v * scale / 1000.0


@dataclass
class _Requests:
    """Per-request values gathered from profiling-phase lines."""

    ttft: list[float]
    e2e: list[float]
    tpot: list[float]
    chunks: list[float]
    isl: list[float]
    osl: list[float]
    starts: list[float]
    ends: list[float]
    cancelled: int = 0
    failed: int = 0
    warmup: int = 0
    rows: int = 0


def _gather(rows: list[Any], *, source: str) -> _Requests:
    acc = _Requests([], [], [], [], [], [], [], [])
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or not isinstance(row.get("metadata"), dict):
            raise refuse(
                f"line {i + 1}.metadata", "each line needs a metadata object", source=source
            )
        meta = row["metadata"]
        phase = meta.get("benchmark_phase", meta.get("credit_phase"))
        if isinstance(phase, str) and phase != "profiling":
            acc.warmup += 1
            continue
        acc.rows += 1
        metrics = obj(row.get("metrics")) or {}
        start_ns = num(meta.get("request_start_ns")) or num(meta.get("timestamp_ns"))
        if start_ns is not None:
            acc.starts.append(start_ns / 1e9)
        end_ns = num(meta.get("request_end_ns"))
        if end_ns is None:
            end_ns = num(_value(metrics, "max_response_timestamp", time=False))
        if end_ns is not None:
            acc.ends.append(end_ns / 1e9)
        error = row.get("error")
        if error or meta.get("was_cancelled") is True:
            if _is_cancel(error) or meta.get("was_cancelled") is True:
                acc.cancelled += 1
            else:
                acc.failed += 1
            continue
        for name, into in (("time_to_first_token", acc.ttft), ("request_latency", acc.e2e)):
            v = _value(metrics, name, time=True)
            if isinstance(v, float):
                into.append(v)
        v = _value(metrics, "inter_token_latency", time=True)
        if isinstance(v, float):
            acc.tpot.append(v)
        gaps = _value(metrics, "inter_chunk_latency", time=True)
        if isinstance(gaps, list):
            acc.chunks.extend(gaps)
        for name, into in (("input_sequence_length", acc.isl), ("output_sequence_length", acc.osl)):
            n = num(_value(metrics, name, time=False))
            if n is not None:
                into.append(n)
    return acc


def parse_jsonl(rows: list[Any], *, source: str) -> list[ParsedStage]:
    """Per-request records: percentiles, lengths and cancellations computed from every line."""
    stage = ParsedStage(tool=TOOL)
    acc = _gather(rows, source=source)
    if acc.rows <= 0:
        raise refuse("metadata.benchmark_phase", "no profiling-phase records", source=source)
    stage.requests = acc.rows
    stage.cancelled = acc.cancelled
    stage.failed = acc.failed
    stage.completed = acc.rows - acc.cancelled - acc.failed
    _cancellation_findings(stage)
    if acc.warmup:
        stage.notes.append(f"{acc.warmup} warm-up records left out")
    if acc.failed:
        stage.notes.append(f"{acc.failed} request(s) failed (an error other than HTTP 499)")
    if acc.starts:
        first = min(acc.starts)
        stage.measured_at = epoch_to_utc(first)
        stage.measured_at_basis = "the first request_start_ns"
        last = max(acc.ends) if acc.ends else max(acc.starts)
        span = last - first
        if span > 0:
            stage.duration_s = span
            stage.throughput = Throughput(
                requests_per_s=stage.completed / span,
                output_tokens_per_s=float(sum(acc.osl)) / span,
                total_tokens_per_s=float(sum(acc.osl) + sum(acc.isl)) / span,
            )
        send_span = max(acc.starts) - first
        if len(acc.starts) > 1 and send_span > 0:
            # Every request's start is recorded: the rate the client really sent.
            stage.achieved_rate_rps = (len(acc.starts) - 1) / send_span
            stage.notes.append(
                f"achieved send rate {stage.achieved_rate_rps:g} req/s from the "
                f"{len(acc.starts)} request start times"
            )
    fill_from_requests(
        stage,
        ttft_s=acc.ttft,
        tpot_s=acc.tpot,
        itl_s=acc.chunks,
        e2e_s=acc.e2e,
        prompt_tokens=acc.isl,
        output_tokens=acc.osl,
    )
    stage.notes.append(
        f"computed from {acc.rows} per-request records ({stage.completed} completed); lengths "
        "and latencies from completed requests; throughput over first start to last response"
    )
    stage.notes.append(
        "per request, inter_token_latency ((e2e - ttft) / (out - 1)) is tpot_ms and every "
        "inter_chunk_latency gap, pooled, is itl_ms"
    )
    stage.notes.append("the per-request file does not state the AIPerf version or load setting")
    standard_missing(stage)
    return [stage]


def parse(doc: Any, *, source: str) -> list[ParsedStage]:
    if isinstance(doc, list):
        if not looks_like_jsonl(doc):
            raise refuse(
                "line 1.metadata",
                "an AIPerf profile_export.jsonl has one {metadata, metrics, error} per line",
                source=source,
            )
        return parse_jsonl(doc, source=source)
    if not isinstance(doc, dict) or not looks_like(doc):
        raise refuse(
            "request_throughput",
            "an AIPerf export has metric blocks ({unit, avg, pNN}) at the top level or under "
            "'records', with input_config",
            source=source,
        )
    return [_parse_aggregate(doc, source=source)]
