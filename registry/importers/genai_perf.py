"""GenAI-Perf ``profile_export_genai_perf.json`` (triton-inference-server/perf_analyzer).

Each request metric is ``{unit, avg, p1..p99, min, max, std}`` (no median key, no p99.9;
files from the 25.01 SDK state only p25..p99); system metrics are ``{unit, avg}``. What each
metric means (``genai-perf/genai_perf/profile_data_parser/llm_profile_data_parser.py``):

* ``inter_token_latency``: per request, (e2e - ttft) / (output tokens - 1), one value per
  request (request-weighted): capgate's ``tpot_ms``. GenAI-Perf keeps its per-chunk gaps
  out of the export, so no pooled ITL is stated;
* ``request_count`` is the number of requests the statistics cover; it can be below the
  configured count, and the export does not say why. It states no failed or cancelled
  requests (GenAI-Perf stops with an error on an SSE error event instead).

The offered load is ``input_config.concurrency`` / ``request_rate`` in the flat layout
(25.01 SDK) and ``input_config.perf_analyzer.stimulus`` in the nested one (25.07 SDK; its
``analyze.sweep_parameters`` belong to the analyze subcommand and are not the load of a
profile run). The helpers here are shared with AIPerf, which writes the same metric shape.
"""

from __future__ import annotations

from typing import Any

from registry.importers.identity import Identity, first, names, stated
from registry.importers.json_values import count, num, obj, pos, refuse
from registry.importers.parsed_stage import ParsedStage, standard_missing
from registry.importers.stats import (
    cv_from_stated,
    levels_from_keys,
    percentiles_ms,
    stated_length_distribution,
    unit_scale_to_ms,
)
from registry.records.evidence import Percentiles, Throughput

TOOL = "genai-perf"

# Keys that mark an AIPerf export rather than a GenAI-Perf one.
AIPERF_MARKERS = (
    "aiperf_version",
    "was_cancelled",
    "error_summary",
    "benchmark_duration",
    "records",
    "error_request_count",
)


def looks_like(doc: Any) -> bool:
    if not isinstance(doc, dict) or any(k in doc for k in AIPERF_MARKERS):
        return False
    rt = doc.get("request_throughput")
    return isinstance(rt, dict) and "avg" in rt


def metric_percentiles(
    block: Any, *, stage: ParsedStage, what: str, source: str
) -> Percentiles | None:
    """A latency block ``{unit, avg, pNN...}`` as milliseconds; refuses unknown time units."""
    stat = obj(block)
    if stat is None:
        return None
    unit = stat.get("unit")
    scale = unit_scale_to_ms(unit) if isinstance(unit, str) else None
    if scale is None:
        if unit is None:
            scale = 1.0  # both tools document these latency metrics in ms
            stage.notes.append(f"{what}: no unit stated; read as ms as the tool documents")
        else:
            raise refuse(f"{what}.unit", f"unit {unit!r} is not a time unit", source=source)
    elif scale != 1.0:
        stage.notes.append(f"{what}: converted from {unit} to ms")
    return percentiles_ms(
        levels_from_keys(stat, median_key=None),
        mean=num(stat.get("avg")),
        scale_to_ms=scale,
        notes=stage.notes,
        what=what,
    )


def avg(block: Any) -> float | None:
    stat = obj(block)
    if stat is None:
        return None
    v = num(stat.get("avg"))
    return v if v is not None and v >= 0 else None


def lengths(stage: ParsedStage, block: Any, *, which: str, samples: int | None) -> None:
    stat = obj(block)
    if stat is None:
        return
    n = count(stat.get("count")) or samples
    mean, std = num(stat.get("avg")), num(stat.get("std"))
    levels = levels_from_keys(stat, median_key=None)
    dist = stated_length_distribution(
        levels,
        samples=n,
        mean=mean,
        minimum=num(stat.get("min")),
        maximum=num(stat.get("max")),
        notes=stage.notes,
        what=which,
    )
    if dist is None and levels:
        stage.notes.append(f"{which}: quantiles stated but no sample count; not stored")
    est = cv_from_stated(mean=mean, std=std, levels=levels, samples=n)
    if which == "prompt_tokens":
        stage.prompt_tokens, stage.prompt_cv = dist, est
    else:
        stage.output_tokens, stage.output_cv = dist, est


def _load(stage: ParsedStage, config: dict[str, Any]) -> int | None:
    """Concurrency or request rate from either layout; the configured request count."""
    pa = obj(config.get("perf_analyzer"))
    if pa is not None:
        stimulus = obj(pa.get("stimulus")) or {}
        conc = count(stimulus.get("concurrency"))
        stage.concurrency = conc if conc else None
        stage.request_rate_rps = pos(stimulus.get("request_rate"))
        measurement = obj(pa.get("measurement")) or {}
        mode = measurement.get("mode")
        if isinstance(mode, str):
            stage.notes.append(f"perf_analyzer measurement mode {mode}")
        warmup = count(pa.get("warmup_request_count"))
        if warmup:
            stage.notes.append(f"{warmup} warm-up requests not in the figures")
        return count(measurement.get("num")) if mode == "request_count" else None
    conc = count(config.get("concurrency"))
    stage.concurrency = conc if conc else None
    stage.request_rate_rps = pos(config.get("request_rate"))
    warmup = count(config.get("warmup_request_count"))
    if warmup:
        stage.notes.append(f"{warmup} warm-up requests not in the figures")
    return count(config.get("request_count"))


def _identity(config: dict[str, Any]) -> Identity:
    """The models requested (``--model``: ``model`` in 25.01, ``model_names`` in 25.07) and
    the tokenizer (``tokenizer``, or ``tokenizer.name`` nested)."""
    models = names(config.get("model_names"), "input_config.model_names") or names(
        config.get("model"), "input_config.model"
    )
    tokenizer = first(
        stated(config, "tokenizer", basis="input_config.tokenizer"),
        stated(config, "tokenizer", "name", basis="input_config.tokenizer.name"),
    )
    return Identity(models=models, tokenizer=tokenizer)


def parse(doc: Any, *, source: str) -> list[ParsedStage]:
    if not isinstance(doc, dict) or not isinstance(doc.get("request_throughput"), dict):
        raise refuse(
            "request_throughput",
            "a GenAI-Perf export is an object of metric blocks such as "
            "request_throughput: {unit, avg}",
            source=source,
        )
    stage = ParsedStage(tool=TOOL)
    stage.notes.append("the file does not state the GenAI-Perf version")
    config = obj(doc.get("input_config")) or {}
    stage.identity = _identity(config)
    configured = _load(stage, config)
    requests = count(avg(doc.get("request_count")))
    stage.requests = requests
    stage.completed = requests
    if configured is not None and requests is not None and configured != requests:
        stage.notes.append(
            f"configured request count {configured} but the export covers {requests}; "
            "GenAI-Perf does not say whether the others failed or fell outside "
            "perf_analyzer's measurement window"
        )
    stage.notes.append("GenAI-Perf exports state no failed or cancelled requests")

    stage.ttft_ms = metric_percentiles(
        doc.get("time_to_first_token"), stage=stage, what="time_to_first_token", source=source
    )
    stage.e2e_ms = metric_percentiles(
        doc.get("request_latency"), stage=stage, what="request_latency", source=source
    )
    stage.tpot_ms = metric_percentiles(
        doc.get("inter_token_latency"), stage=stage, what="inter_token_latency", source=source
    )
    if stage.tpot_ms is not None:
        stage.notes.append(
            "GenAI-Perf inter_token_latency is per request, (e2e - ttft) / (out - 1): stored "
            "as tpot_ms; no pooled ITL is stated"
        )
    lengths(stage, doc.get("input_sequence_length"), which="prompt_tokens", samples=requests)
    lengths(stage, doc.get("output_sequence_length"), which="output_tokens", samples=requests)
    stage.throughput = Throughput(
        requests_per_s=avg(doc.get("request_throughput")),
        output_tokens_per_s=avg(doc.get("output_token_throughput")),
        goodput_requests_per_s=avg(doc.get("request_goodput")),
    )
    stage.cancellation_basis = "GenAI-Perf exports carry no cancellation figure"
    telemetry = obj(doc.get("telemetry_stats"))
    if telemetry:
        gpus = {k for m in telemetry.values() if isinstance(m, dict) for k in m if k != "unit"}
        stage.notes.append(
            f"telemetry_stats ({len(telemetry)} metrics over {len(gpus)} GPU(s)) not imported; "
            "it keys the GPUs by index and names none, so the accelerator is not compared"
        )
    stage.priority_classes = 1
    stage.priority_basis = "GenAI-Perf sends one request stream without priorities"
    standard_missing(stage)
    return [stage]
