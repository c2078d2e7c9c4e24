"""AIPerf (ai-dynamo/aiperf): ``profile_export_aiperf.json`` and ``profile_export.jsonl``.

The aggregate export has GenAI-Perf's metric shape; early versions nest the metrics under
``records`` and abbreviate names (``ttft``, ``ttst``), later ones put them at the top level
with full names (``time_to_first_token``). AIPerf counts cancelled requests among errors
(HTTP 499, ``RequestCancellationError``); capgate separates them. AIPerf's
``inter_token_latency`` is per request, (e2e - ttft) / (out - 1), and is stored as
``tpot_ms``; ``inter_chunk_latency`` pools every chunk gap and is stored as ``itl_ms``.
``output_sequence_length`` includes reasoning tokens (all tokens the server generated).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from registry.importers.common import (
    ParsedStage,
    count,
    epoch_to_utc,
    fill_from_requests,
    num,
    obj,
    pos,
    refuse,
    standard_missing,
)
from registry.importers.genai_perf import AIPERF_MARKERS, avg, lengths, metric_percentiles
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


def looks_like(doc: Any) -> bool:
    if not isinstance(doc, dict):
        return False
    if isinstance(doc.get("records"), dict) and "input_config" in doc:
        return True
    return any(k in doc for k in AIPERF_MARKERS) and any(
        isinstance(doc.get(k), dict) for k in ("request_throughput", "request_latency", "ttft")
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


def _is_cancel(error: Any) -> bool:
    err = obj(error)
    if err is None:
        return False
    details = obj(err.get("error_details")) or err
    return details.get("code") == 499 or details.get("type") == "RequestCancellationError"


def _loadgen(config: dict[str, Any]) -> dict[str, Any]:
    return obj(config.get("loadgen")) or config


def _offered(stage: ParsedStage, config: dict[str, Any]) -> None:
    loadgen = _loadgen(config)
    conc = count(loadgen.get("concurrency"))
    stage.concurrency = conc if conc else None
    stage.request_rate_rps = pos(loadgen.get("request_rate"))
    mode = loadgen.get("request_rate_mode")
    if isinstance(mode, str):
        stage.notes.append(f"AIPerf request_rate_mode {mode}")
    rate = num(loadgen.get("request_cancellation_rate"))
    if rate is not None and 0 <= rate <= 100:
        stage.cancellation_rate = rate / 100.0  # AIPerf takes a percentage
        stage.notes.append(f"configured request_cancellation_rate {rate:g} %")


def _parse_aggregate(doc: dict[str, Any], *, source: str) -> ParsedStage:
    metrics = obj(doc.get("records")) or doc
    stage = ParsedStage(tool=TOOL)
    version = doc.get("aiperf_version")
    stage.tool_version = version if isinstance(version, str) else None
    if stage.tool_version is None:
        stage.notes.append("the file does not state the AIPerf version")
    config = obj(doc.get("input_config")) or {}
    _offered(stage, config)

    first_ns = avg(metrics.get("min_request_timestamp"))
    if first_ns is not None and first_ns > 0:
        stage.measured_at = epoch_to_utc(first_ns / 1e9)
    elif isinstance(doc.get("start_time"), str):
        try:
            ts = datetime.fromisoformat(doc["start_time"])
            stage.measured_at = ts
            stage.measured_at_naive = ts.tzinfo is None
        except ValueError:
            stage.notes.append(f"start_time {doc['start_time']!r} is not ISO 8601; ignored")
    stage.duration_s = pos(avg(metrics.get("benchmark_duration")))

    completed = count(avg(metrics.get("request_count")))
    errors = count(avg(metrics.get("error_request_count")))
    cancelled: int | None = None
    summary = doc.get("error_summary")
    if isinstance(summary, list):
        cancelled = sum(
            count(e.get("count")) or 0 for e in summary if isinstance(e, dict) and _is_cancel(e)
        )
    elif errors == 0:
        cancelled = 0
    stage.completed = completed
    stage.cancelled = cancelled
    if errors is not None:
        stage.failed = errors - (cancelled or 0)
    if completed is not None:
        stage.requests = completed + (errors or 0)
    stated = count(_loadgen(config).get("request_count"))
    if stated is not None and stage.requests is not None and stated != stage.requests:
        stage.notes.append(f"configured request_count {stated} but {stage.requests} recorded")
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
    lengths(stage, _get(metrics, "input_sequence_length"), which="prompt_tokens", samples=None)
    lengths(stage, _get(metrics, "output_sequence_length"), which="output_tokens", samples=None)
    stage.throughput = Throughput(
        requests_per_s=avg(metrics.get("request_throughput")),
        output_tokens_per_s=avg(metrics.get("output_token_throughput")),
        total_tokens_per_s=avg(metrics.get("total_token_throughput")),
        goodput_requests_per_s=avg(metrics.get("goodput")),
    )
    stage.notes.append(
        "AIPerf inter_token_latency ((e2e - ttft) / (out - 1), per request) stored as "
        "tpot_ms; inter_chunk_latency (pooled chunk gaps) as itl_ms"
    )
    standard_missing(stage)
    return stage


def _cancellation_findings(stage: ParsedStage) -> None:
    configured = stage.cancellation_rate
    if stage.cancelled is not None:
        stage.cancellations_exercised = stage.cancelled > 0
    elif configured is not None:
        stage.cancellations_exercised = configured > 0
    stage.cancellation_basis = (
        "AIPerf client cancellations (--request-cancellation-rate), counted from errors with "
        "HTTP 499 / RequestCancellationError"
    )
    stage.priority_classes = 1
    stage.priority_basis = "AIPerf sends one request stream without priorities"


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


def parse_jsonl(rows: list[Any], *, source: str) -> list[ParsedStage]:
    """Per-request records: percentiles, lengths and cancellations computed from every line."""
    stage = ParsedStage(tool=TOOL)
    ttft: list[float] = []
    e2e: list[float] = []
    tpot: list[float] = []
    chunks: list[float] = []
    isl: list[float] = []
    osl: list[float] = []
    starts: list[float] = []
    ends: list[float] = []
    cancelled = failed = warmup = 0
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or not isinstance(row.get("metadata"), dict):
            raise refuse(
                f"line {i + 1}.metadata", "each line needs a metadata object", source=source
            )
        meta = row["metadata"]
        phase = meta.get("benchmark_phase", meta.get("credit_phase"))
        if isinstance(phase, str) and phase != "profiling":
            warmup += 1
            continue
        metrics = obj(row.get("metrics")) or {}
        start_ns = num(meta.get("request_start_ns")) or num(meta.get("timestamp_ns"))
        if start_ns is not None:
            starts.append(start_ns / 1e9)
        end_ns = num(meta.get("request_end_ns"))
        if end_ns is None:
            end_ns = num(_value(metrics, "max_response_timestamp", time=False))
        if end_ns is not None:
            ends.append(end_ns / 1e9)
        error = row.get("error")
        if error or meta.get("was_cancelled") is True:
            if _is_cancel(error) or meta.get("was_cancelled") is True:
                cancelled += 1
            else:
                failed += 1
            continue
        for name, into in (("time_to_first_token", ttft), ("request_latency", e2e)):
            v = _value(metrics, name, time=True)
            if isinstance(v, float):
                into.append(v)
        v = _value(metrics, "inter_token_latency", time=True)
        if isinstance(v, float):
            tpot.append(v)
        gaps = _value(metrics, "inter_chunk_latency", time=True)
        if isinstance(gaps, list):
            chunks.extend(gaps)
        for name, into in (("input_sequence_length", isl), ("output_sequence_length", osl)):
            n = num(_value(metrics, name, time=False))
            if n is not None:
                into.append(n)
    n_req = len(rows) - warmup
    if n_req <= 0:
        raise refuse("metadata.benchmark_phase", "no profiling-phase records", source=source)
    stage.requests = n_req
    stage.cancelled = cancelled
    stage.failed = failed
    stage.completed = n_req - cancelled - failed
    stage.cancellations_exercised = cancelled > 0
    _cancellation_findings(stage)
    if warmup:
        stage.notes.append(f"{warmup} warm-up records left out")
    if starts:
        stage.measured_at = epoch_to_utc(min(starts))
        last = max(ends) if ends else max(starts)
        span = last - min(starts)
        if span > 0:
            stage.duration_s = span
            stage.throughput = Throughput(
                requests_per_s=stage.completed / span,
                output_tokens_per_s=float(sum(osl)) / span,
                total_tokens_per_s=float(sum(osl) + sum(isl)) / span,
            )
    fill_from_requests(
        stage,
        ttft_s=ttft,
        tpot_s=tpot,
        itl_s=chunks,
        e2e_s=e2e,
        prompt_tokens=isl,
        output_tokens=osl,
    )
    stage.notes.append(
        f"computed from {n_req} per-request records ({stage.completed} completed); lengths "
        "and latencies from completed requests; throughput over first start to last response"
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


def load_jsonl(text: str, *, source: str) -> list[Any]:
    rows: list[Any] = []
    for i, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise refuse(f"line {i + 1}", f"not JSON: {exc.msg}", source=source) from exc
    return rows
