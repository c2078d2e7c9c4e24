"""AIPerf (ai-dynamo/aiperf): ``profile_export_aiperf.json`` and ``profile_export.jsonl``.

The aggregate export has GenAI-Perf's metric shape; early versions nest the metrics under
``records`` and abbreviate names (``ttft``, ``ttst``), later ones put them at the top level
with full names (``time_to_first_token``).

Metrics by meaning (AIPerf's ``docs/metrics_reference.md`` and
``src/aiperf/metrics/types/``):

* ``inter_token_latency``: per request, (request_latency - ttft) / (osl - 1), one value per
  request (request-weighted): capgate's ``tpot_ms``;
* ``inter_chunk_latency``: every gap between consecutive streamed chunks, pooled over all
  requests: capgate's ``itl_ms`` (a chunk may carry several tokens);
* ``request_count`` counts successful requests only; ``error_request_count`` and
  ``error_summary`` (per error type) count the others. Client cancellations (HTTP 499,
  ``RequestCancellationError``) are among them and are separated out: cancelled when the
  test configured a cancellation rate, otherwise incomplete (cut off when AIPerf ended the
  phase), never failed. ``good_request_count`` counts requests that met the configured SLOs
  (goodput), not successes;
* ``output_sequence_length`` includes reasoning tokens (all tokens the server generated).

The offered load is read from ``input_config``: ``phases`` (v0.10 on: warm-up phases with
``exclude_from_results`` are left out) or ``loadgen`` (earlier versions).

This module recognises the two exports and hands each to its reader: ``aiperf_aggregate`` and
``aiperf_requests``, which share ``aiperf_metrics`` (metric and error names) and
``aiperf_load`` (the offered load).
"""

from __future__ import annotations

from typing import Any

from registry.importers.aiperf_aggregate import parse_aggregate
from registry.importers.aiperf_requests import parse_jsonl
from registry.importers.genai_perf import AIPERF_MARKERS
from registry.importers.json_values import refuse
from registry.importers.parsed_stage import ParsedStage

# Metric blocks one of which every aggregate export holds: the success metrics, or, when
# no request succeeded (AIPerf then writes no success metric at all), the error count.
_BLOCKS = ("request_throughput", "request_latency", "ttft", "error_request_count")


def looks_like(doc: Any) -> bool:
    if not isinstance(doc, dict):
        return False
    if isinstance(doc.get("records"), dict) and "input_config" in doc:
        return True
    return any(k in doc for k in AIPERF_MARKERS) and any(
        isinstance(doc.get(k), dict) for k in _BLOCKS
    )


def looks_like_jsonl(rows: list[Any]) -> bool:
    return bool(rows) and all(
        isinstance(r, dict) and "metadata" in r and "metrics" in r for r in rows[:5]
    )


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
    return [parse_aggregate(doc, source=source)]
