"""vLLM result files' latency figures: the summary statistics vLLM writes, and the percentiles
and length distributions recomputed from ``--save-detailed`` per-request lists.

What the figures mean, read from vLLM's own writer (``vllm/benchmarks/serve.py``:
``calculate_metrics``; legacy ``benchmarks/benchmark_serving.py``):

- ``{mean,median,std,pNN}_{metric}_ms`` are milliseconds over the *successful* requests. When
  none succeeded vLLM still writes 0.0 for each (``np.mean(ttfts or 0)``): those zeros measure
  nothing, and the core refuses a stage with ``completed == 0``.
- ``ttft``: send to the first streamed content chunk. ``tpot``: per request,
  (latency - ttft) / (output tokens - 1), requests with more than one output token.
  ``itl``: every gap between consecutive content chunks of every successful request, pooled.
  ``e2el``: send to the last content chunk (= ttft + sum of the request's itls).
  ``client_queue_time``: wait for the client's own ``--max-concurrency`` semaphore before the
  request was sent (not server queueing; e2el excludes it).
- The per-request lists ``--save-detailed`` adds (``ttfts``, ``itls``, ``latencies``) are
  seconds; ``errors`` is "" for a successful request.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import numpy as np

from registry.importers.json_values import num, refuse
from registry.importers.parsed_stage import ParsedStage, fill_from_requests
from registry.importers.stats import (
    CvEstimate,
    percentiles_from_samples,
    percentiles_ms,
)
from registry.records.evidence import Percentiles

# Metric name in the file -> ParsedStage field. ``client_queue_time`` is handled apart: it is
# the client's concurrency-limit wait, stored as queue_ms only for an open-loop schedule.
_METRICS = {
    "ttft": "ttft_ms",
    "tpot": "tpot_ms",
    "itl": "itl_ms",
    "e2el": "e2e_ms",
}
STAT_KEY = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_(.+)_ms$")


DETAIL_KEYS = ("input_lens", "output_lens", "ttfts", "itls")


def _list(doc: dict[str, Any], key: str) -> list[Any] | None:
    v = doc.get(key)
    return v if isinstance(v, list) else None


def _floats(values: list[Any]) -> np.ndarray[Any, np.dtype[np.float64]]:
    out = []
    for x in values:
        f = num(x)
        out.append(np.nan if f is None else f)
    return np.array(out, dtype=float)


# --- summary statistics --------------------------------------------------------------------


def _grouped_stats(doc: dict[str, Any]) -> dict[str, dict[str, float]]:
    grouped: dict[str, dict[str, float]] = {}
    for key, value in doc.items():
        m = STAT_KEY.match(key)
        v = num(value)
        if m is None or v is None:
            continue
        grouped.setdefault(m.group(2), {})[m.group(1)] = v
    return grouped


def _percentiles(stats: dict[str, float], stage: ParsedStage, what: str) -> Percentiles | None:
    levels: dict[float, float] = {}
    for k, v in stats.items():
        if k == "median":
            levels.setdefault(50.0, v)
        elif k.startswith("p"):
            levels[float(k[1:])] = v
    return percentiles_ms(
        levels, mean=stats.get("mean"), scale_to_ms=1.0, notes=stage.notes, what=what
    )


def stated_metrics(doc: dict[str, Any], stage: ParsedStage) -> None:
    grouped = _grouped_stats(doc)
    for metric, field_name in _METRICS.items():
        stats = grouped.get(metric)
        if stats:
            setattr(stage, field_name, _percentiles(stats, stage, metric))
    queue = grouped.get("client_queue_time")
    if not queue:
        return
    if stage.request_rate_rps is not None:
        # Requests arrived on the offered schedule and waited for a --max-concurrency slot:
        # the wait a concurrency-limiting gateway in front of the server would impose.
        stage.queue_ms = _percentiles(queue, stage, "client_queue_time")
        stage.notes.append(
            "queue_ms is vLLM's client_queue_time: the wait for a --max-concurrency slot "
            "after the scheduled arrival (client side; e2el excludes it)"
        )
    else:
        # With every request released at once the "queue" is the backlog of a closed loop,
        # not a wait any admission queue would see.
        stage.notes.append(
            "client_queue_time not stored as queue_ms: without a finite request_rate it is "
            "the closed-loop backlog, not an admission-queue wait"
        )


def latencies_only(doc: dict[str, Any], stage: ParsedStage) -> None:
    """e2e percentiles from mainline's ``latencies`` list when no e2el statistics were written.

    Mainline vLLM keeps ``latencies`` (seconds, one per request) even without --save-detailed;
    a failed request keeps the default 0.0, so the positive entries are the successful ones.
    """
    latencies = _list(doc, "latencies")
    if stage.e2e_ms is not None or latencies is None:
        return
    values = _floats(latencies)
    good = values[np.isfinite(values) & (values > 0)]
    if stage.completed is not None and good.size != stage.completed:
        stage.notes.append(
            f"latencies list has {good.size} positive entries but completed is "
            f"{stage.completed}; e2e not computed from it"
        )
        return
    stage.e2e_ms = percentiles_from_samples(good, scale_to_ms=1000.0)
    stage.notes.append(
        f"e2e percentiles computed from the {good.size} successful entries of 'latencies' (s)"
    )


# --- --save-detailed -----------------------------------------------------------------------


def detailed(doc: dict[str, Any], stage: ParsedStage, source: str, where: str) -> None:
    """Recompute percentiles and length distributions from the per-request lists."""
    input_lens = _list(doc, "input_lens")
    output_lens = _list(doc, "output_lens")
    ttfts = _list(doc, "ttfts")
    itls = _list(doc, "itls")
    if input_lens is None or output_lens is None or ttfts is None or itls is None:
        absent = [k for k in DETAIL_KEYS if _list(doc, k) is None]
        raise refuse(
            f"{where}{absent[0]}",
            "a --save-detailed file needs the lists input_lens, output_lens, ttfts and itls",
            source=source,
        )
    n = len(input_lens)
    if not (len(output_lens) == len(ttfts) == len(itls) == n):
        raise refuse(
            f"{where}input_lens",
            f"per-request lists differ in length (input_lens {n}, output_lens "
            f"{len(output_lens)}, ttfts {len(ttfts)}, itls {len(itls)})",
            source=source,
        )
    errors = _list(doc, "errors")
    if errors is not None and len(errors) == n:
        ok = np.array([not e for e in errors], dtype=bool)
    else:
        # Without the errors list, vLLM's own rule applies: a failed request has no TTFT.
        ok = np.array([(num(t) or 0.0) > 0 for t in ttfts], dtype=bool)
    prompt = _floats(input_lens)
    out = _floats(output_lens)
    ttft = _floats(ttfts)
    # All gaps in one flat array (millions of values in a large run): one pass in C, then
    # per-request sums and the successful requests' gaps by index, not by Python loops.
    is_list = np.array([isinstance(row, list) for row in itls], dtype=bool)
    sizes = np.array([len(row) if isinstance(row, list) else 0 for row in itls], dtype=np.int64)
    try:
        flat = np.fromiter(
            itertools.chain.from_iterable(row for row in itls if isinstance(row, list)),
            dtype=float,
            count=int(sizes.sum()),
        )
    except (TypeError, ValueError) as exc:
        raise refuse(
            f"{where}itls", "each entry must be a list of numbers (seconds)", source=source
        ) from exc
    latencies = _list(doc, "latencies")
    if latencies is not None and len(latencies) == n:
        e2e = _floats(latencies)
    else:
        # vLLM measures ITLs between consecutive chunks from the first token to the last, so
        # ttft + sum(itls) is the request's latency up to its last token.
        # reduceat over the non-empty rows' starts: each segment runs to the next one.
        starts = np.cumsum(sizes) - sizes
        itl_sums = np.zeros(n)
        filled = sizes > 0
        if flat.size:
            itl_sums[filled] = np.add.reduceat(flat, starts[filled])
        itl_sums[~is_list] = np.nan  # no gaps stated: no latency either
        e2e = ttft + itl_sums
        stage.notes.append("per-request e2e computed as ttft + sum(itls) (no latencies list)")
    pooled = flat[np.repeat(ok, sizes)]
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


def summary_lengths(doc: dict[str, Any], stage: ParsedStage) -> None:
    """A summary-only file states token totals, so mean lengths and nothing of their spread:
    the findings say that once, per length, instead of "no lengths" beside a mean."""
    completed = stage.completed
    for key, which in (("total_input_tokens", "prompt"), ("total_output_tokens", "output")):
        total = num(doc.get(key))
        if not completed or total is None:
            continue  # nothing stated: the findings say the file states no lengths
        est = CvEstimate(
            None,
            "unavailable",
            completed,
            f"summary only: mean {which} {total / completed:g} tokens per completed request "
            f"({key} / completed); no distribution, so no CV",
        )
        if which == "prompt":
            stage.prompt_cv = est
        else:
            stage.output_cv = est
