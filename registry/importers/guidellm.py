"""GuideLLM benchmark reports: the old v0.2/v0.3 schema and the newer report (metadata v1/v2).

Quirks handled here:

* percentile keys ``p001`` and ``p999`` are the 0.1th and 99.9th percentiles, ``p01`` and
  ``p05`` the 1st and 5th (three digits carry one decimal place);
* ``request_latency`` is in seconds, the ``*_ms`` metrics in milliseconds;
* old files state the median only as ``median`` (no ``p50``);
* GuideLLM's TPOT divides (e2e - ttft) by *all* output tokens and its per-request ITL by
  (output tokens - 1); the latter is capgate's per-request TPOT. Newer versions pool these
  metrics per token instead (the metric's ``count`` exceeds the request count): then the ITL
  is a pooled inter-token latency, like vLLM's, and no per-request TPOT is stated;
* every benchmark in ``benchmarks`` is one stage (a sweep writes several).

Requests listed under ``requests`` are samples (GuideLLM keeps a bounded sample), so figures
are taken from the stated statistics, not recomputed from them.
"""

from __future__ import annotations

import re
from typing import Any

from registry.importers.common import (
    ParsedStage,
    count,
    epoch_to_utc,
    num,
    obj,
    pos,
    refuse,
    standard_missing,
)
from registry.importers.stats import cv_from_stated, percentiles_ms, stated_length_distribution
from registry.records.evidence import Percentiles, Throughput

TOOL = "guidellm"
_PKEY = re.compile(r"^p(\d{2,3})$")


def looks_like(doc: Any) -> bool:
    if not isinstance(doc, dict):
        return False
    benches = doc.get("benchmarks")
    if not isinstance(benches, list) or not benches or not isinstance(benches[0], dict):
        return False
    first = benches[0]
    return "metrics" in first and ("type_" in first or "run_stats" in first)


def guidellm_level(key: str) -> float | None:
    """``p001`` -> 0.1, ``p01`` -> 1, ``p05`` -> 5, ``p50`` -> 50, ``p999`` -> 99.9."""
    m = _PKEY.match(key)
    if m is None:
        return None
    digits = m.group(1)
    return int(digits) / 10.0 if len(digits) == 3 else float(int(digits))


def _levels(stat: dict[str, Any]) -> dict[float, float]:
    out: dict[float, float] = {}
    pcts = obj(stat.get("percentiles")) or {}
    for key, value in pcts.items():
        lvl, v = guidellm_level(key), num(value)
        if lvl is not None and v is not None:
            out[lvl] = v
    median = num(stat.get("median"))
    if median is not None:
        out.setdefault(50.0, median)
    return out


def _successful(metrics: dict[str, Any], key: str) -> dict[str, Any] | None:
    metric = obj(metrics.get(key))
    if metric is None:
        return None
    ok = obj(metric.get("successful"))
    if ok is None or not count(ok.get("count")):
        return None
    return ok


def _latency(
    stage: ParsedStage, metrics: dict[str, Any], key: str, scale: float
) -> tuple[Percentiles | None, int | None]:
    stat = _successful(metrics, key)
    if stat is None:
        return None, None
    pct = percentiles_ms(
        _levels(stat), mean=num(stat.get("mean")), scale_to_ms=scale, notes=stage.notes, what=key
    )
    return pct, count(stat.get("count"))


def _totals(bench: dict[str, Any], metrics: dict[str, Any]) -> dict[str, Any]:
    for candidate in (metrics.get("request_totals"), bench.get("request_totals")):
        t = obj(candidate)
        if t is not None:
            return t
    run_stats = obj(bench.get("run_stats")) or obj(bench.get("scheduler_metrics")) or {}
    return obj(run_stats.get("requests_made")) or {}


def _strategy(bench: dict[str, Any]) -> dict[str, Any]:
    config = obj(bench.get("config")) or {}
    args = obj(bench.get("args")) or {}
    return obj(config.get("strategy")) or obj(args.get("strategy")) or {}


def _offered_load(stage: ParsedStage, strategy: dict[str, Any]) -> None:
    kind = str(strategy.get("type_") or "")
    stage.notes.append(f"GuideLLM strategy {kind or 'unknown'}")
    if kind == "synchronous":
        stage.concurrency = 1
    elif kind == "concurrent":
        streams = count(strategy.get("streams"))
        stage.concurrency = streams if streams else None
    elif kind in ("constant", "poisson", "async"):
        stage.request_rate_rps = pos(strategy.get("rate"))
        if kind == "poisson":
            stage.burstiness = 1.0  # Poisson arrivals are gamma arrivals of shape 1
    elif kind == "throughput":
        stage.rate_unbounded = True
        conc = count(strategy.get("max_concurrency"))
        stage.concurrency = conc if conc else None
        stage.notes.append("throughput strategy: requests sent as fast as the server accepts")


def _parse_bench(bench: dict[str, Any], i: int, version: str | None, source: str) -> ParsedStage:
    stage = ParsedStage(tool=TOOL, tool_version=version, stage=str(i))
    metrics = obj(bench.get("metrics"))
    if metrics is None:
        raise refuse(f"benchmarks[{i}].metrics", "each benchmark needs metrics", source=source)
    start = num(bench.get("start_time"))
    if start is None:
        sched = obj(bench.get("scheduler_metrics")) or obj(bench.get("run_stats")) or {}
        start = num(sched.get("measure_start_time")) or num(sched.get("start_time"))
    if start is not None:
        stage.measured_at = epoch_to_utc(start)
    end = num(bench.get("end_time"))
    duration = pos(bench.get("duration"))
    if duration is None and start is not None and end is not None and end > start:
        duration = end - start
    stage.duration_s = duration
    _offered_load(stage, _strategy(bench))

    totals = _totals(bench, metrics)
    ok, err, inc = (count(totals.get(k)) for k in ("successful", "errored", "incomplete"))
    total = count(totals.get("total"))
    if total is None and None not in (ok, err, inc):
        total = (ok or 0) + (err or 0) + (inc or 0)
    stage.requests, stage.completed, stage.failed, stage.cancelled = total, ok, err, inc
    stage.cancellations_exercised = None if inc is None else inc > 0
    stage.cancellation_basis = (
        "GuideLLM 'incomplete' requests: in flight when the benchmark ended and cancelled by "
        "the tool, not client cancellations drawn from the workload"
    )
    stage.priority_classes = 1
    stage.priority_basis = "GuideLLM sends one request stream without priorities"

    stage.ttft_ms, _ = _latency(stage, metrics, "time_to_first_token_ms", 1.0)
    stage.e2e_ms, _ = _latency(stage, metrics, "request_latency", 1000.0)
    itl, itl_n = _latency(stage, metrics, "inter_token_latency_ms", 1.0)
    if itl is not None:
        if ok is not None and itl_n is not None and itl_n <= ok:
            # One value per request: (e2e - ttft) / (output tokens - 1), capgate's TPOT.
            stage.tpot_ms = itl
            stage.notes.append(
                "GuideLLM per-request ITL ((e2e - ttft) / (out - 1)) stored as tpot_ms; "
                "GuideLLM's own TPOT ((e2e - ttft) / out) not stored; no pooled ITL stated"
            )
        else:
            stage.itl_ms = itl
            stage.notes.append(
                f"GuideLLM ITL pooled over {itl_n} token gaps stored as itl_ms; its TPOT is "
                "pooled per token too, so no per-request TPOT is stated"
            )

    for key, which in (("prompt_token_count", "prompt"), ("output_token_count", "output")):
        stat = _successful(metrics, key)
        if stat is None:
            continue
        n = count(stat.get("count"))
        mean, std = num(stat.get("mean")), num(stat.get("std_dev"))
        levels = _levels(stat)
        dist = stated_length_distribution(
            levels,
            samples=n,
            mean=mean,
            minimum=num(stat.get("min")),
            maximum=num(stat.get("max")),
            notes=stage.notes,
            what=key,
        )
        est = cv_from_stated(mean=mean, std=std, levels=levels, samples=n)
        if which == "prompt":
            stage.prompt_tokens, stage.prompt_cv = dist, est
        else:
            stage.output_tokens, stage.output_cv = dist, est

    def rate(key: str) -> float | None:
        stat = _successful(metrics, key)
        v = num(stat.get("mean")) if stat is not None else None
        return v if v is not None and v >= 0 else None

    stage.throughput = Throughput(
        requests_per_s=rate("requests_per_second"),
        output_tokens_per_s=rate("output_tokens_per_second"),
        total_tokens_per_s=rate("tokens_per_second"),
    )
    stage.notes.append("throughputs are the means of GuideLLM's per-second rate series")
    conc = _successful(metrics, "request_concurrency")
    if conc is not None and num(conc.get("mean")) is not None:
        stage.notes.append(f"measured mean concurrency {num(conc.get('mean')):g}")
    standard_missing(stage)
    return stage


def parse(doc: Any, *, source: str) -> list[ParsedStage]:
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise refuse(
            "benchmarks",
            "a GuideLLM report is an object with a 'benchmarks' list of generative benchmarks",
            source=source,
        )
    meta = obj(doc.get("metadata")) or {}
    version = meta.get("guidellm_version")
    version = version if isinstance(version, str) else None
    stages: list[ParsedStage] = []
    for i, bench in enumerate(doc["benchmarks"]):
        if not isinstance(bench, dict):
            raise refuse(f"benchmarks[{i}]", "each benchmark must be an object", source=source)
        stage = _parse_bench(bench, i, version, source)
        if len(doc["benchmarks"]) == 1:
            stage.stage = None  # a single benchmark is not a series
        if version is None:
            stage.notes.append("the file states no GuideLLM version (v0.2/v0.3 schema)")
        stages.append(stage)
    return stages
