"""vLLM ``vllm bench serve --save-result`` and the legacy ``benchmarks/benchmark_serving.py``.

Summary statistics are written in milliseconds (``*_ms`` keys); the per-request lists that
``--save-detailed`` adds (``ttfts``, ``itls``, ``latencies``) are in seconds. vLLM's TPOT is per
request, (e2e - ttft) / (output tokens - 1); its ITL pools every chunk gap of every request.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import numpy as np

from registry.importers.common import (
    ParsedStage,
    count,
    fill_from_requests,
    num,
    pos,
    refuse,
    standard_missing,
)
from registry.importers.stats import (
    percentiles_ms,
)
from registry.records.evidence import Percentiles, Throughput

TOOL = "vllm-bench"

# Metric name in the file -> ParsedStage field.
_METRICS = {
    "ttft": "ttft_ms",
    "tpot": "tpot_ms",
    "itl": "itl_ms",
    "e2el": "e2e_ms",
    "client_queue_time": "queue_ms",
}
_STAT_KEY = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_(.+)_ms$")

# Keys that only vLLM's writer uses; detection needs one of them.
SIGNATURE_KEYS = ("mean_ttft_ms", "request_throughput", "num_prompts", "median_ttft_ms")

_DETAIL_KEYS = ("input_lens", "output_lens", "ttfts", "itls")


def looks_like(doc: Any) -> bool:
    return isinstance(doc, dict) and any(k in doc for k in SIGNATURE_KEYS)


def _stated_metrics(doc: dict[str, Any], stage: ParsedStage) -> None:
    grouped: dict[str, dict[str, float]] = {}
    for key, value in doc.items():
        m = _STAT_KEY.match(key)
        v = num(value)
        if m is None or v is None:
            continue
        grouped.setdefault(m.group(2), {})[m.group(1)] = v
    for metric, field_name in _METRICS.items():
        stats = grouped.get(metric)
        if not stats:
            continue
        levels: dict[float, float] = {}
        for k, v in stats.items():
            if k == "median":
                levels.setdefault(50.0, v)
            elif k.startswith("p"):
                levels[float(k[1:])] = v
        pct = percentiles_ms(
            levels, mean=stats.get("mean"), scale_to_ms=1.0, notes=stage.notes, what=metric
        )
        setattr(stage, field_name, pct)


def _list(doc: dict[str, Any], key: str) -> list[Any] | None:
    v = doc.get(key)
    return v if isinstance(v, list) else None


def _detailed(doc: dict[str, Any], stage: ParsedStage, source: str) -> None:
    """Recompute percentiles and length distributions from the per-request lists."""
    input_lens = _list(doc, "input_lens")
    output_lens = _list(doc, "output_lens")
    ttfts = _list(doc, "ttfts")
    itls = _list(doc, "itls")
    if input_lens is None or output_lens is None or ttfts is None or itls is None:
        absent = [k for k in _DETAIL_KEYS if _list(doc, k) is None]
        raise refuse(
            absent[0],
            "a --save-detailed file needs the lists input_lens, output_lens, ttfts and itls",
            source=source,
        )
    n = len(input_lens)
    if not (len(output_lens) == len(ttfts) == len(itls) == n):
        raise refuse(
            "input_lens",
            f"per-request lists differ in length (input_lens {n}, output_lens "
            f"{len(output_lens)}, ttfts {len(ttfts)}, itls {len(itls)})",
            source=source,
        )
    errors = _list(doc, "errors")
    if errors is not None and len(errors) == n:
        ok = np.array([not e for e in errors], dtype=bool)
    else:
        # Without the errors list, vLLM's own rule applies: a failed request has no TTFT.
        ok = np.array([num(t) is not None and (num(t) or 0.0) > 0 for t in ttfts], dtype=bool)
    prompt = np.array([num(x) if num(x) is not None else np.nan for x in input_lens], float)
    out = np.array([num(x) if num(x) is not None else np.nan for x in output_lens], float)
    ttft = np.array([num(x) if num(x) is not None else np.nan for x in ttfts], float)
    itl_sums = np.array(
        [sum(float(g) for g in row) if isinstance(row, list) else np.nan for row in itls], float
    )
    latencies = _list(doc, "latencies")
    if latencies is not None and len(latencies) == n:
        e2e = np.array([num(x) if num(x) is not None else np.nan for x in latencies], float)
    else:
        # vLLM measures ITLs between consecutive chunks from the first token to the last, so
        # ttft + sum(itls) is the request's latency up to its last token.
        e2e = ttft + itl_sums
        stage.notes.append("per-request e2e computed as ttft + sum(itls) (no latencies list)")
    pooled = np.fromiter(
        (
            float(g)
            for row, good in zip(itls, ok, strict=True)
            if good and isinstance(row, list)
            for g in row
        ),
        dtype=float,
    )
    good_out = out[ok]
    tpot_mask = ok & (out > 1)
    tpot = (e2e[tpot_mask] - ttft[tpot_mask]) / (out[tpot_mask] - 1)

    # Every request offered its prompt; only completed requests say how long an output was.
    fill_from_requests(
        stage,
        ttft_s=ttft[ok],
        tpot_s=tpot,
        itl_s=pooled,
        e2e_s=e2e[ok],
        prompt_tokens=prompt,
        output_tokens=good_out,
    )
    stage.notes.append(
        f"percentiles and length distributions computed from {n} per-request records "
        f"({int(ok.sum())} successful); output lengths from successful requests only"
    )
    if stage.completed is None:
        stage.completed = int(ok.sum())
    if stage.failed is None:
        stage.failed = int(n - ok.sum())
    if stage.requests is None:
        stage.requests = n
    _compare(doc, stage)


def _compare(doc: dict[str, Any], stage: ParsedStage) -> None:
    """Note where the recomputed p50 disagrees with the tool's own median by over 1 %."""
    for metric, field_name in _METRICS.items():
        stated = num(doc.get(f"median_{metric}_ms"))
        pct: Percentiles | None = getattr(stage, field_name)
        if stated is None or pct is None:
            continue
        mine = pct.at(50.0)
        if mine is not None and stated > 0 and abs(mine - stated) / stated > 0.01:
            stage.notes.append(
                f"{metric}: recomputed p50 {mine:.3f} ms differs from the file's median "
                f"{stated:.3f} ms by more than 1 %"
            )


def _measured_at(doc: dict[str, Any], stage: ParsedStage) -> None:
    date = doc.get("date")
    if isinstance(date, str):
        try:
            stage.measured_at = datetime.strptime(date, "%Y%m%d-%H%M%S")
            stage.measured_at_naive = True  # vLLM writes the runner's local wall clock
        except ValueError:
            stage.notes.append(f"date {date!r} is not vLLM's %Y%m%d-%H%M%S; ignored")


def parse(doc: Any, *, source: str) -> list[ParsedStage]:
    if not isinstance(doc, dict):
        raise refuse("(top level)", "a vLLM result file is one JSON object", source=source)
    if not looks_like(doc):
        raise refuse(
            "mean_ttft_ms",
            "not a vLLM bench result: expected keys such as mean_ttft_ms, request_throughput, "
            "num_prompts",
            source=source,
        )
    stage = ParsedStage(tool=TOOL)
    legacy = "request_goodput:" in doc or "best_of" in doc
    stage.notes.append(
        "vLLM TPOT is per request: (e2e - ttft) / (output tokens - 1); ITL pools all chunk gaps"
    )
    if legacy:
        stage.notes.append("legacy benchmarks/benchmark_serving.py file (request_goodput:/best_of)")
    stage.notes.append("the file does not state the vLLM version")
    _measured_at(doc, stage)

    rate = doc.get("request_rate")
    if isinstance(rate, str) and rate.strip().lower() in ("inf", "infinity"):
        stage.rate_unbounded = True
        stage.notes.append("request_rate 'inf': every request was sent at once (no rate limit)")
    elif num(rate) is not None and (num(rate) or 0.0) == float("inf"):
        stage.rate_unbounded = True
    else:
        stage.request_rate_rps = pos(rate)
    max_conc = count(doc.get("max_concurrency"))
    stage.concurrency = max_conc if max_conc else None
    stage.burstiness = pos(doc.get("burstiness"))
    stage.requests = count(doc.get("num_prompts"))
    stage.duration_s = pos(doc.get("duration"))
    stage.completed = count(doc.get("completed"))
    stage.failed = count(doc.get("failed"))
    if stage.failed is None and stage.requests is not None and stage.completed is not None:
        # Legacy writers omit 'failed'; the benchmark sends exactly num_prompts requests.
        stage.failed = stage.requests - stage.completed
        stage.notes.append("failed = num_prompts - completed (the file has no 'failed' key)")
    goodput = doc.get("request_goodput", doc.get("request_goodput:"))
    stage.throughput = Throughput(
        requests_per_s=_nonneg(doc.get("request_throughput")),
        output_tokens_per_s=_nonneg(doc.get("output_throughput")),
        total_tokens_per_s=_nonneg(doc.get("total_token_throughput")),
        goodput_requests_per_s=_nonneg(goodput),
    )
    if goodput is None:
        stage.notes.append("request_goodput is null: the run had no --goodput SLOs")
    _stated_metrics(doc, stage)

    if any(k in doc for k in _DETAIL_KEYS):
        _detailed(doc, stage, source)
    else:
        completed = stage.completed
        tin, tout = num(doc.get("total_input_tokens")), num(doc.get("total_output_tokens"))
        if completed and tin is not None and tout is not None:
            stage.notes.append(
                f"summary only: mean prompt {tin / completed:g} and mean output "
                f"{tout / completed:g} tokens per completed request; no distribution"
            )
    stage.cancellations_exercised = False
    stage.cancelled = 0  # not stated: the tool has no way to cancel, so none were
    stage.cancellation_basis = "vLLM bench serve never cancels requests"
    stage.priority_classes = 1
    stage.priority_basis = "vLLM bench serve sends one request stream without priorities"
    standard_missing(stage)
    return [stage]


def _nonneg(value: Any) -> float | None:
    f = num(value)
    return f if f is not None and f >= 0 else None
