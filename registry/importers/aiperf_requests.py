"""AIPerf's per-request export (``profile_export.jsonl``: one ``{metadata, metrics, error}`` per
line): one stage whose percentiles and length distributions are computed from the requests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from registry.importers.aiperf_metrics import TOOL, cancellation_findings, get_metric, is_cancel
from registry.importers.json_values import epoch_to_utc, num, obj, refuse
from registry.importers.parsed_stage import ParsedStage, fill_from_requests, standard_missing
from registry.importers.stats import (
    unit_scale_to_ms,
)
from registry.records.evidence import Throughput


def _value(metrics: dict[str, Any], name: str, *, time: bool) -> Any:
    """A per-request metric value; time metrics scaled to seconds."""
    m = obj(get_metric(metrics, name))
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
            if is_cancel(error) or meta.get("was_cancelled") is True:
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
    cancellation_findings(stage)
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
