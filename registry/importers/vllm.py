"""vLLM's serving benchmark: ``vllm bench serve`` and the legacy ``benchmark_serving.py``.

Files read: one result object (``--save-result``, with or without ``--save-detailed``); JSON
Lines of them (``--append-result``: one object per line, a record per line); and the JSON
array ``vllm bench sweep serve`` writes as ``summary.json`` (a record per run).

What the figures mean, read from vLLM's own writer (``vllm/benchmarks/serve.py``:
``calculate_metrics``, ``benchmark``, ``main_async``; legacy ``benchmarks/benchmark_serving.py``):

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
- ``date`` is ``datetime.now()`` taken after the run finished, on the runner's local clock: the
  end of the measurement window.
- ``--metadata KEY=VALUE`` pairs are merged into the object as top-level strings; a sweep adds
  ``run_number`` and its serve/bench override keys (e.g. ``max_num_seqs``) the same way.
- The file never states the server's version by itself (``backend`` is the client's request
  format): the serving runtime is read only from ``--metadata`` (``vllm_version=0.8.5``,
  ``runtime=NAME==VERSION``, or ``runtime_name=NAME runtime_version=VERSION``).
"""

from __future__ import annotations

import itertools
import math
import re
from datetime import datetime
from typing import Any

import numpy as np

from registry.importers.identity import Identity, names, stated
from registry.importers.json_values import count, num, pos, refuse
from registry.importers.parsed_stage import ParsedStage, fill_from_requests, standard_missing
from registry.importers.runtime import parse_runtime, runtime_info, same_runtime
from registry.importers.stats import (
    CvEstimate,
    percentiles_from_samples,
    percentiles_ms,
)
from registry.records.common import NAME_PATTERN
from registry.records.evidence import Percentiles, RuntimeInfo, Throughput

TOOL = "vllm-bench"

# Metric name in the file -> ParsedStage field. ``client_queue_time`` is handled apart: it is
# the client's concurrency-limit wait, stored as queue_ms only for an open-loop schedule.
_METRICS = {
    "ttft": "ttft_ms",
    "tpot": "tpot_ms",
    "itl": "itl_ms",
    "e2el": "e2e_ms",
}
_STAT_KEY = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_(.+)_ms$")

# Keys that only vLLM's writer uses; detection needs one of them, holding a number.
SIGNATURE_KEYS = ("mean_ttft_ms", "request_throughput", "num_prompts", "median_ttft_ms")

_DETAIL_KEYS = ("input_lens", "output_lens", "ttfts", "itls")

# Every key vLLM's writers put in a result (mainline, legacy, pooling, sweep); anything else
# came from --metadata or a sweep override and is listed in the notes.
_KNOWN_KEYS = frozenset(
    {
        "date",
        "endpoint_type",
        "backend",
        "label",
        "model_id",
        "tokenizer_id",
        "num_prompts",
        "request_rate",
        "burstiness",
        "max_concurrency",
        "duration",
        "completed",
        "failed",
        "total_input_tokens",
        "total_output_tokens",
        "total_input_sequences",
        "request_throughput",
        "request_goodput",
        "request_goodput:",
        "output_throughput",
        "total_token_throughput",
        "input_sequence_throughput",
        "input_lens",
        "output_lens",
        "ttfts",
        "itls",
        "latencies",
        "start_times",
        "queue_times",
        "generated_texts",
        "errors",
        "max_output_tokens_per_s",
        "max_concurrent_requests",
        "rtfx",
        "rps_change_events",
        "best_of",
        "use_beam_search",
        "run_number",
        "_benchmark_name",
    }
)
_KNOWN_PREFIXES = ("ramp_up_", "spec_decode_", "diffusion_", "probe_")

# --metadata keys that state the ready replicas behind the tested endpoint. llm-d users write
# decode_replicas/prefill_replicas; decode replicas are the serving replicas only when there
# are no separate prefill replicas.
_REPLICA_KEYS = ("replicas", "num_replicas")
_CLASS_KEYS = ("traffic_class", "class")
# --metadata keys that state the serving runtime measured (the server, not vllm bench):
# vllm_version=0.8.5; runtime=sglang==0.4.4 (the --runtime syntax); or the pair
# runtime_name=sglang runtime_version=0.4.4.
_RUNTIME_KEYS = ("vllm_version", "runtime", "runtime_name", "runtime_version")
_NAME_RE = re.compile(NAME_PATTERN)


class JsonLines(list[Any]):
    """The objects of a JSON Lines file, with the line each came from (blank lines skipped)."""

    def __init__(self) -> None:
        super().__init__()
        self.line_numbers: list[int] = []


def _is_result(doc: Any) -> bool:
    # A number (or null, as in an all-failed legacy run) under a signature key: GenAI-Perf and
    # AIPerf write request_throughput too, but as a {unit, avg} block.
    return isinstance(doc, dict) and any(
        k in doc and not isinstance(doc[k], dict | list) for k in SIGNATURE_KEYS
    )


def looks_like(doc: Any) -> bool:
    """One vLLM result object, or a list of them whose first item is one."""
    if isinstance(doc, list):
        return bool(doc) and _is_result(doc[0])
    return _is_result(doc)


# --- small readers -------------------------------------------------------------------------


def _number(value: Any) -> float | None:
    """A JSON number or a numeric string (--metadata values and sweep overrides are strings)."""
    if isinstance(value, str):
        try:
            f = float(value.strip())
        except ValueError:
            return None
        return f if math.isfinite(f) else None
    return num(value)


def _whole(value: Any) -> int | None:
    f = _number(value)
    if f is None or f < 0 or f != int(f):
        return None
    return int(f)


def _nonneg(value: Any) -> float | None:
    f = num(value)
    return f if f is not None and f >= 0 else None


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
        m = _STAT_KEY.match(key)
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


def _stated_metrics(doc: dict[str, Any], stage: ParsedStage) -> None:
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


def _latencies_only(doc: dict[str, Any], stage: ParsedStage) -> None:
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


def _detailed(doc: dict[str, Any], stage: ParsedStage, source: str, where: str) -> None:
    """Recompute percentiles and length distributions from the per-request lists."""
    input_lens = _list(doc, "input_lens")
    output_lens = _list(doc, "output_lens")
    ttfts = _list(doc, "ttfts")
    itls = _list(doc, "itls")
    if input_lens is None or output_lens is None or ttfts is None or itls is None:
        absent = [k for k in _DETAIL_KEYS if _list(doc, k) is None]
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


# --- what the run offered ------------------------------------------------------------------


def _measured_at(doc: dict[str, Any], stage: ParsedStage) -> None:
    date = doc.get("date")
    if isinstance(date, str):
        try:
            stage.measured_at = datetime.strptime(date, "%Y%m%d-%H%M%S")
        except ValueError:
            stage.notes.append(f"date {date!r} is not vLLM's %Y%m%d-%H%M%S; ignored")
            return
        stage.measured_at_naive = True  # vLLM writes the runner's local wall clock
        stage.measured_at_basis = "date"
        # vLLM takes datetime.now() after the run: the window is [date - duration, date].
        stage.measured_at_is_end = True


def _offered_rate(doc: dict[str, Any], stage: ParsedStage) -> None:
    rate = doc.get("request_rate")
    ramp = doc.get("ramp_up_strategy")
    if isinstance(ramp, str):
        # Ramp-up runs write request_rate "inf" but paced requests from start to end rps.
        start, end = doc.get("ramp_up_start_rps"), doc.get("ramp_up_end_rps")
        stage.notes.append(
            f"{ramp} ramp-up from {start} to {end} req/s: no single offered rate (request_rate "
            f"{rate!r} is the placeholder a ramp-up run writes)"
        )
        return
    value = rate.strip().lower() if isinstance(rate, str) else rate
    if value in ("inf", "infinity"):
        stage.rate_unbounded = True
        stage.notes.append("request_rate 'inf': every request was sent at once (no rate limit)")
        return
    if isinstance(value, float) and math.isinf(value):
        stage.rate_unbounded = True
        return
    f = _number(rate)
    if f is not None and f > 0:
        stage.request_rate_rps = f
    elif rate is not None:
        stage.notes.append(f"request_rate {rate!r} is not a rate; ignored")


def _counts(doc: dict[str, Any], stage: ParsedStage) -> None:
    prompts = _whole(doc.get("num_prompts"))
    stage.completed = count(doc.get("completed"))
    stage.failed = count(doc.get("failed"))
    if stage.completed is not None and stage.failed is not None:
        # vLLM sends one request per sampled prompt; a dataset can yield fewer than asked.
        stage.requests = stage.completed + stage.failed
        if prompts is not None and prompts != stage.requests:
            stage.notes.append(
                f"num_prompts {prompts} but completed + failed = {stage.requests}; the latter "
                "is what was sent"
            )
        return
    stage.requests = prompts
    if stage.failed is None and prompts is not None and stage.completed is not None:
        if stage.completed > prompts:
            stage.notes.append(
                f"completed {stage.completed} exceeds num_prompts {prompts}; failed not derived"
            )
            return
        # Legacy writers (and pooling runs) omit 'failed'; every prompt was sent once.
        stage.failed = prompts - stage.completed
        stage.notes.append(
            f"failed = num_prompts - completed = {stage.failed} (the file has no 'failed' key)"
        )


# --- --metadata: replicas, traffic class, everything else ---------------------------------


def _positive_replicas(doc: dict[str, Any], key: str, source: str, where: str) -> int:
    value = doc[key]
    n = _whole(value)
    if n is None or n < 1:
        raise refuse(
            f"{where}{key}",
            f"{value!r} is not a number of replicas (a whole number, at least 1)",
            source=source,
        )
    return n


def _replicas(doc: dict[str, Any], stage: ParsedStage, source: str, where: str) -> None:
    stated: list[tuple[str, int]] = [
        (k, _positive_replicas(doc, k, source, where)) for k in _REPLICA_KEYS if k in doc
    ]
    if "decode_replicas" in doc:
        prefill = _whole(doc.get("prefill_replicas", 0))
        decode = _positive_replicas(doc, "decode_replicas", source, where)
        if prefill == 0:
            stated.append(("decode_replicas", decode))
        elif not stated:
            # Prefill/decode disaggregation: a "replica" is not one server, so the number to
            # divide rates by is the user's call.
            stage.notes.append(
                f"prefill/decode disaggregated (prefill_replicas "
                f"{doc.get('prefill_replicas')!r}, decode_replicas {decode}): replicas not "
                "taken from the file"
            )
    if not stated:
        return
    values = {v for _, v in stated}
    if len(values) > 1:
        shown = ", ".join(f"{k}={v}" for k, v in stated)
        raise refuse(
            f"{where}{stated[0][0]}",
            f"the file states different replica counts ({shown})",
            source=source,
        )
    key, value = stated[0]
    stage.replicas = value
    stage.replicas_basis = f"metadata {key}" + (
        " (prefill_replicas 0)" if key == "decode_replicas" and "prefill_replicas" in doc else ""
    )


def _class_label(doc: dict[str, Any], stage: ParsedStage, source: str, where: str) -> None:
    stated = [(k, doc[k]) for k in _CLASS_KEYS if k in doc]
    if not stated:
        return
    for key, value in stated:
        if not isinstance(value, str) or not _NAME_RE.match(value.strip()):
            raise refuse(
                f"{where}{key}",
                f"{value!r} is not a traffic class name (lower-case letters, digits, '.', '_', "
                "'-'; starting and ending with a letter or digit)",
                source=source,
            )
    labels = {str(v).strip() for _, v in stated}
    if len(labels) > 1:
        raise refuse(
            f"{where}{stated[0][0]}",
            "the file names different traffic classes ("
            + ", ".join(f"{k}={v}" for k, v in stated)
            + ")",
            source=source,
        )
    stage.class_label = labels.pop()


def _metadata_text(doc: dict[str, Any], key: str, source: str, where: str) -> str:
    value = doc[key]
    if not isinstance(value, str) or not value.strip():
        raise refuse(
            f"{where}{key}",
            f"{value!r} is not text (--metadata {key}=... states the serving runtime)",
            source=source,
        )
    return value


def _runtime(doc: dict[str, Any], stage: ParsedStage, source: str, where: str) -> None:
    """The serving runtime, when --metadata states it; several statements must agree."""
    stated: list[tuple[str, RuntimeInfo]] = []
    if "vllm_version" in doc:
        version = _metadata_text(doc, "vllm_version", source, where)
        runtime = runtime_info("vllm", version, loc=f"{where}vllm_version", source=source)
        stated.append(("vllm_version", runtime))
    if "runtime" in doc:
        text = _metadata_text(doc, "runtime", source, where)
        stated.append(("runtime", parse_runtime(text, loc=f"{where}runtime", source=source)))
    pair = [k for k in ("runtime_name", "runtime_version") if k in doc]
    if len(pair) == 2:
        name = _metadata_text(doc, "runtime_name", source, where)
        version = _metadata_text(doc, "runtime_version", source, where)
        stated.append(
            (
                "runtime_name, runtime_version",
                runtime_info(name, version, loc=f"{where}runtime_version", source=source),
            )
        )
    elif pair:
        absent = "runtime_version" if pair[0] == "runtime_name" else "runtime_name"
        stage.notes.append(
            f"--metadata {pair[0]}={_short(doc[pair[0]])} without {absent}: the serving "
            "runtime is not read from it"
        )
    if not stated:
        return
    key, runtime = stated[0]
    for other_key, other in stated[1:]:
        if not same_runtime(runtime, other):
            raise refuse(
                f"{where}{other_key.split(',')[0]}",
                f"the file states different serving runtimes ({key}: {runtime.describe()}; "
                f"{other_key}: {other.describe()})",
                source=source,
            )
    stage.runtime = runtime
    stage.runtime_basis = "metadata " + ", ".join(k for k, _ in stated)


def _extra_keys(doc: dict[str, Any], stage: ParsedStage) -> None:
    used = (
        set(_REPLICA_KEYS)
        | set(_CLASS_KEYS)
        | set(_RUNTIME_KEYS)
        | {"decode_replicas", "prefill_replicas"}
    )
    extra = [
        k
        for k in doc
        if k not in _KNOWN_KEYS
        and k not in used
        and not _STAT_KEY.match(k)
        and not k.startswith(_KNOWN_PREFIXES)
    ]
    if extra:
        shown = ", ".join(f"{k}={_short(doc[k])}" for k in extra)
        stage.notes.append(f"keys from --metadata or sweep overrides: {shown}")


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


# --- one result ----------------------------------------------------------------------------


def _summary_lengths(doc: dict[str, Any], stage: ParsedStage) -> None:
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


def _parse_result(doc: dict[str, Any], *, source: str, where: str = "") -> ParsedStage:
    stage = ParsedStage(tool=TOOL)
    stage.notes.append(
        "vLLM TPOT is per request: (e2e - ttft) / (output tokens - 1); ITL pools all chunk gaps"
    )
    if "request_goodput:" in doc or "best_of" in doc:
        stage.notes.append("legacy benchmarks/benchmark_serving.py file (request_goodput:/best_of)")
    elif "endpoint_type" in doc:
        stage.notes.append("vllm bench serve file (vllm/benchmarks/serve.py)")
    stage.notes.append("the file does not state the vLLM version")
    _measured_at(doc, stage)
    _offered_rate(doc, stage)
    max_conc = _whole(doc.get("max_concurrency"))
    stage.concurrency = max_conc if max_conc else None
    burst = _number(doc.get("burstiness"))
    stage.burstiness = burst if burst is not None and burst > 0 else None
    stage.duration_s = pos(doc.get("duration"))
    _counts(doc, stage)
    _replicas(doc, stage, source, where)
    _class_label(doc, stage, source, where)
    _runtime(doc, stage, source, where)
    # model_id is --model (the id or path the server was asked for; --served-model-name is
    # not written); tokenizer_id is --tokenizer, else --model.
    stage.identity = Identity(
        models=names(doc.get("model_id"), f"{where}model_id"),
        tokenizer=stated(doc, "tokenizer_id", basis=f"{where}tokenizer_id"),
    )
    _extra_keys(doc, stage)
    label = doc.get("label")
    if isinstance(label, str) and label:
        stage.notes.append(f"vLLM --label {label!r}")

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
        _detailed(doc, stage, source, where)
    else:
        _latencies_only(doc, stage)
        _summary_lengths(doc, stage)
    stage.cancellations_exercised = False
    stage.cancelled = 0  # not stated: the tool has no way to cancel, so none were
    stage.cancellation_basis = "vLLM bench serve never cancels requests"
    stage.priority_classes = 1
    stage.priority_basis = "vLLM bench serve sends one request stream without priorities"
    standard_missing(stage)
    return stage


# --- several results: --append-result JSON Lines, sweep summary.json ----------------------


def _run_number(row: dict[str, Any]) -> int | None:
    value = row.get("run_number")
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _parse_rows(rows: list[Any], *, source: str) -> list[ParsedStage]:
    lines = rows.line_numbers if isinstance(rows, JsonLines) else None

    def place(i: int) -> str:
        return f"line {lines[i]}" if lines is not None else f"item {i}"

    if not rows:
        raise refuse("(top level)", "the array holds no vLLM results", source=source)
    for i, row in enumerate(rows):
        if not _is_result(row):
            raise refuse(
                place(i),
                "not a vLLM bench result (expected an object with mean_ttft_ms, "
                "request_throughput, num_prompts); every line of an --append-result file, and "
                "every item of a sweep summary.json, must be one",
                source=source,
            )
    runs = [_run_number(r) for r in rows]
    sweep = all(n is not None for n in runs) and len(set(runs)) == len(runs)
    stages: list[ParsedStage] = []
    warmups = 0
    for i, row in enumerate(rows):
        run = runs[i]
        if sweep and run is not None and run < 0:
            warmups += 1  # vllm bench sweep numbers its warm-up run -1
            continue
        stage = _parse_result(row, source=source, where=f"{place(i)}.")
        if sweep:
            stage.stage = f"run-{run}"
            stage.notes.append(f"vllm bench sweep run_number {run}")
        else:
            # One record per appended result, labelled by its position in the file.
            stage.stage = str(i)
            stage.notes.append(f"result {i} of {len(rows)} ({place(i)})")
        stages.append(stage)
    if not stages:
        raise refuse("run_number", "the sweep summary holds only warm-up runs", source=source)
    if warmups:
        for stage in stages:
            stage.notes.append(f"{warmups} warm-up run(s) (run_number < 0) left out")
    if not sweep and any(n is not None for n in runs):
        stages[0].notes.append("run_number missing or repeated; stages labelled by position")
    return stages


def parse(doc: Any, *, source: str) -> list[ParsedStage]:
    if isinstance(doc, list):
        return _parse_rows(doc, source=source)
    if not isinstance(doc, dict):
        raise refuse(
            "(top level)",
            "a vLLM result file is one JSON object, JSON Lines of them (--append-result) or a "
            "JSON array of them (vllm bench sweep summary.json)",
            source=source,
        )
    if not _is_result(doc):
        raise refuse(
            "mean_ttft_ms",
            "not a vLLM bench result: expected keys such as mean_ttft_ms, request_throughput, "
            "num_prompts",
            source=source,
        )
    return [_parse_result(doc, source=source)]
