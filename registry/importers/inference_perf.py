"""inference-perf (kubernetes-sigs) lifecycle reports and per-request files.

Every figure inference-perf writes is in seconds, and its 50th percentile is keyed
``median``, the others ``p{p:g}`` (``p0.1``, ``p99.9``). Its TPOT is (last token - first
token) / (output tokens - 1), its NTPOT e2e / output tokens; capgate stores the former as
``tpot_ms`` (the same quantity as vLLM's per-request TPOT) and notes the latter.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from registry.importers.common import (
    ParsedStage,
    count,
    fill_from_requests,
    num,
    obj,
    pos,
    refuse,
    standard_missing,
)
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


def _parse_lifecycle(doc: dict[str, Any], *, source: str) -> ParsedStage:
    stage = ParsedStage(tool=TOOL, stage=_stage_from_name(source))
    load = obj(doc.get("load_summary"))
    successes = obj(doc.get("successes"))
    if load is None or successes is None:
        raise refuse(
            "load_summary" if load is None else "successes",
            "an inference-perf lifecycle report needs load_summary and successes objects",
            source=source,
        )
    failures = obj(doc.get("failures")) or {}
    stage.requests = count(load.get("count"))
    stage.request_rate_rps = pos(load.get("requested_rate"))
    conc = count(load.get("concurrency"))
    stage.concurrency = conc if conc else None
    duration = pos(doc.get("benchmark_time_seconds"))
    if duration is None:
        duration = pos(load.get("send_duration"))
        if duration is not None:
            stage.notes.append("duration_s is load_summary.send_duration (time spent sending)")
    stage.duration_s = duration
    achieved = pos(load.get("achieved_rate"))
    if achieved is not None:
        stage.notes.append(f"achieved send rate {achieved:g} req/s")
    stage.completed = count(successes.get("count"))
    stage.failed = count(failures.get("count"))

    latency = obj(successes.get("latency")) or {}
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
    stage.notes.append("inference-perf TPOT: (last token - first token) / (output tokens - 1)")

    thr = obj(successes.get("throughput")) or {}
    goodput = obj(doc.get("goodput_metrics")) or {}
    stage.throughput = Throughput(
        requests_per_s=_nonneg(thr.get("requests_per_sec")),
        output_tokens_per_s=_nonneg(thr.get("output_tokens_per_sec")),
        total_tokens_per_s=_nonneg(thr.get("total_tokens_per_sec")),
        goodput_requests_per_s=_nonneg(goodput.get("request_goodput")),
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
        info = obj(row.get("info")) or {}
        p = num(info.get("input_tokens"))
        if p is not None:
            prompt.append(p)
        if row.get("error"):
            failed += 1
            continue
        times = [t for t in (info.get("output_token_times") or []) if num(t) is not None]
        o = num(info.get("output_tokens"))
        if o is not None:
            out.append(o)
        e2e.append(end - start)
        if times:
            ttft.append(float(times[0]) - start)
            gaps = np.diff(np.asarray(times, dtype=float))
            itl.extend(gaps.tolist())
            if len(times) > 1:
                tpot.append((float(times[-1]) - float(times[0])) / (len(times) - 1))
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
        "TPOT = (last - first token) / (n - 1), ITL pooled token gaps; throughput over the span "
        "from the first start to the last end"
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
