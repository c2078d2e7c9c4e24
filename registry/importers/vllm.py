"""vLLM's serving benchmark: ``vllm bench serve`` and the legacy ``benchmark_serving.py``.

Files read: one result object (``--save-result``, with or without ``--save-detailed``); JSON
Lines of them (``--append-result``: one object per line, a record per line); and the JSON
array ``vllm bench sweep serve`` writes as ``summary.json`` (a record per run).

What the ``date`` key means, read from vLLM's own writer (``vllm/benchmarks/serve.py``:
``benchmark``, ``main_async``): ``datetime.now()`` taken after the run finished, on the runner's
local clock, so the end of the measurement window.

This module recognises the file and splits it into stages (one per result, sweep run or
appended line) and reads what the run offered; ``vllm_latency`` reads the latency figures and
``vllm_metadata`` the ``--metadata`` pairs (replicas, class, serving runtime).
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from registry.importers.identity import Identity, names, stated
from registry.importers.json_values import count, num, pos, refuse
from registry.importers.parsed_stage import ParsedStage, standard_missing
from registry.importers.vllm_latency import (
    DETAIL_KEYS,
    detailed,
    latencies_only,
    stated_metrics,
    summary_lengths,
)
from registry.importers.vllm_metadata import (
    lenient_number,
    lenient_whole,
    note_extra_keys,
    read_class_label,
    read_replicas,
    read_runtime,
)
from registry.records.evidence import Throughput

TOOL = "vllm-bench"


# Keys that only vLLM's writer uses; detection needs one of them, holding a number.
SIGNATURE_KEYS = ("mean_ttft_ms", "request_throughput", "num_prompts", "median_ttft_ms")


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


def _nonneg(value: Any) -> float | None:
    f = num(value)
    return f if f is not None and f >= 0 else None


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
    f = lenient_number(rate)
    if f is not None and f > 0:
        stage.request_rate_rps = f
    elif rate is not None:
        stage.notes.append(f"request_rate {rate!r} is not a rate; ignored")


def _counts(doc: dict[str, Any], stage: ParsedStage) -> None:
    prompts = lenient_whole(doc.get("num_prompts"))
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


# --- one result ----------------------------------------------------------------------------


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
    max_conc = lenient_whole(doc.get("max_concurrency"))
    stage.concurrency = max_conc if max_conc else None
    burst = lenient_number(doc.get("burstiness"))
    stage.burstiness = burst if burst is not None and burst > 0 else None
    stage.duration_s = pos(doc.get("duration"))
    _counts(doc, stage)
    read_replicas(doc, stage, source, where)
    read_class_label(doc, stage, source, where)
    read_runtime(doc, stage, source, where)
    # model_id is --model (the id or path the server was asked for; --served-model-name is
    # not written); tokenizer_id is --tokenizer, else --model.
    stage.identity = Identity(
        models=names(doc.get("model_id"), f"{where}model_id"),
        tokenizer=stated(doc, "tokenizer_id", basis=f"{where}tokenizer_id"),
    )
    note_extra_keys(doc, stage)
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
    stated_metrics(doc, stage)

    if any(k in doc for k in DETAIL_KEYS):
        detailed(doc, stage, source, where)
    else:
        latencies_only(doc, stage)
        summary_lengths(doc, stage)
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
