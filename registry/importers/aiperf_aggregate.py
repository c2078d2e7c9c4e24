"""AIPerf's aggregate export (``profile_export_aiperf.json``): one stage from its metric blocks,
request counts and error summary, measurement window, achieved schedule and the model and GPUs
it names.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from registry.importers.aiperf_load import fill_offered, load_setting
from registry.importers.aiperf_metrics import (
    TOOL,
    cancellation_findings,
    error_reason,
    get_metric,
    is_cancel,
)
from registry.importers.build_record import BEHIND_RATIO
from registry.importers.genai_perf import avg, lengths, metric_percentiles
from registry.importers.identity import Identity, Stated, dig, names, stated, text
from registry.importers.json_values import count, epoch_to_utc, obj, pos
from registry.importers.parsed_stage import ParsedStage, standard_missing
from registry.records.evidence import Throughput


def _counts(stage: ParsedStage, doc: dict[str, Any], metrics: dict[str, Any]) -> None:
    """Successes, failures, cancellations and cut-off requests from the aggregate."""
    completed = count(avg(metrics.get("request_count")))
    errors = count(avg(metrics.get("error_request_count")))
    summary = doc.get("error_summary")
    cancels_in_errors = 0
    if isinstance(summary, list):
        entries = [e for e in summary if isinstance(e, dict)]
        cancels_in_errors = sum(count(e.get("count")) or 0 for e in entries if is_cancel(e))
        failures = sorted(
            (e for e in entries if not is_cancel(e)),
            key=lambda e: -(count(e.get("count")) or 0),
        )
        stage.failure_reasons = [r for r in map(error_reason, failures) if r]
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


def parse_aggregate(doc: dict[str, Any], *, source: str) -> ParsedStage:
    metrics = obj(doc.get("records")) or doc
    stage = ParsedStage(tool=TOOL)
    version = doc.get("aiperf_version")
    stage.tool_version = version if isinstance(version, str) else None
    if stage.tool_version is None:
        stage.notes.append("the file does not state the AIPerf version")
    setting = load_setting(obj(doc.get("input_config")) or {}, stage.notes)
    stage.identity = _identity(doc)
    fill_offered(stage, setting)
    _window(stage, doc, metrics)
    _counts(stage, doc, metrics)
    recorded = stage.requests
    if setting.requests is not None and recorded is not None and setting.requests != recorded:
        stage.notes.append(f"configured {setting.requests} requests but {recorded} recorded")
    if setting.duration_s is not None:
        stage.notes.append(f"configured duration {setting.duration_s:g} s")
    cancellation_findings(stage)

    stage.ttft_ms = metric_percentiles(
        get_metric(metrics, "time_to_first_token"), stage=stage, what="ttft", source=source
    )
    stage.e2e_ms = metric_percentiles(
        get_metric(metrics, "request_latency"), stage=stage, what="request_latency", source=source
    )
    stage.tpot_ms = metric_percentiles(
        get_metric(metrics, "inter_token_latency"),
        stage=stage,
        what="inter_token_latency",
        source=source,
    )
    stage.itl_ms = metric_percentiles(
        get_metric(metrics, "inter_chunk_latency"),
        stage=stage,
        what="inter_chunk_latency",
        source=source,
    )
    # Later schemas (1.3 in the files seen) give each block its count; schema 1.0 (AIPerf 0.8)
    # states none. The lengths are the successful requests', request_count of them.
    lengths(
        stage,
        get_metric(metrics, "input_sequence_length"),
        which="prompt_tokens",
        samples=stage.completed or None,
    )
    lengths(
        stage,
        get_metric(metrics, "output_sequence_length"),
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
