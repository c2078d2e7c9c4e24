"""Importers: a load-test tool's result file in, ``LoadTestEvidence`` records out.

Pure functions: bytes in, validated records out, no I/O. Supported tools and files:

=================  ==================================================================
``vllm-bench``     ``vllm bench serve --save-result`` (with or without
                   ``--save-detailed``) and legacy ``benchmark_serving.py``
``guidellm``       GuideLLM JSON reports, old (v0.2/v0.3) and new (metadata v1/v2)
``inference-perf`` ``*_lifecycle_metrics.json`` and ``per_request_lifecycle_metrics.json``
``genai-perf``     ``profile_export_genai_perf.json``
``aiperf``         ``profile_export_aiperf.json`` and ``profile_export.jsonl``
=================  ==================================================================

Every latency is stored in milliseconds; TPOT is per request, (e2e - ttft) / (out - 1),
whatever the tool calls it (see docs/importers.md for the mapping per tool).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from registry.errors import FieldProblem, InvalidInput
from registry.importers import aiperf, genai_perf, guidellm, inference_perf, vllm
from registry.importers.common import ImportContext, ImportedStage, build_records, refuse
from registry.records.evidence import CvBasis, ImportFindings, LengthUniformity, LoadTestEvidence

__all__ = [
    "TOOLS",
    "CvBasis",
    "ImportFindings",
    "ImportedStage",
    "LengthUniformity",
    "detect_tool",
    "import_result_file",
    "import_result_file_with_findings",
]

TOOLS: tuple[str, ...] = ("vllm-bench", "guidellm", "inference-perf", "genai-perf", "aiperf")

_EXPECTED = (
    "expected one of: a vLLM bench result (mean_ttft_ms, request_throughput, num_prompts), "
    "a GuideLLM report (benchmarks: [...]), an inference-perf lifecycle report "
    "(load_summary, successes) or per-request list, a GenAI-Perf export "
    "(request_throughput: {unit, avg}) or an AIPerf export (profile_export_aiperf.json or "
    "profile_export.jsonl)"
)


def _load(data: bytes, *, source: str) -> Any:
    """The file as JSON, or as JSON Lines when it is one object per line."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise refuse("(file)", f"not UTF-8 text: {exc.reason}", source=source) from exc
    if not text.strip():
        raise refuse("(file)", "the file is empty", source=source)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        first_error = exc
    # One JSON object per line is AIPerf's per-request export.
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) > 1 and lines[0].lstrip().startswith("{"):
        return aiperf.load_jsonl(text, source=source)
    raise refuse(
        "(file)",
        f"not JSON ({first_error.msg} at line {first_error.lineno} column {first_error.colno})",
        source=source,
    )


def detect_tool(doc: Any) -> str | None:
    """The tool that wrote a parsed result file, judged from its shape; None if unknown."""
    if isinstance(doc, list):
        if aiperf.looks_like_jsonl(doc):
            return "aiperf"
        if inference_perf.looks_like(doc):
            return "inference-perf"
        return None
    if guidellm.looks_like(doc):
        return "guidellm"
    if inference_perf.looks_like(doc):
        return "inference-perf"
    if aiperf.looks_like(doc):
        return "aiperf"
    if genai_perf.looks_like(doc):
        return "genai-perf"
    if vllm.looks_like(doc):
        return "vllm-bench"
    return None


_PARSERS = {
    "vllm-bench": vllm.parse,
    "guidellm": guidellm.parse,
    "inference-perf": inference_perf.parse,
    "genai-perf": genai_perf.parse,
    "aiperf": aiperf.parse,
}


def import_result_file_with_findings(
    data: bytes,
    *,
    file_name: str,
    tool: str = "auto",
    workload: str,
    provider: str,
    plan: str | None = None,
    traffic_class: str | None = None,
    measured_at: datetime | None = None,
    name: str | None = None,
) -> list[ImportedStage]:
    """Import a result file; one ``ImportedStage`` (evidence + findings) per stage.

    ``tool`` is one of ``TOOLS`` or ``"auto"`` (judged from the file's shape).
    ``measured_at`` is used when the file states no time of its own, or only a wall-clock
    time without a zone. ``name`` overrides the record name derived from ``file_name``;
    stages of a multi-stage file are named ``<name>-stage-<i>`` and labelled
    ``{series: <name>, stage: "<i>"}``. Raises ``InvalidInput`` (with a FieldProblem naming
    the key) for a file of unknown or broken format.
    """
    doc = _load(data, source=file_name)
    if tool == "auto":
        detected = detect_tool(doc)
        if detected is None:
            raise InvalidInput(
                f"cannot import {file_name}: the file's shape matches no supported tool",
                problems=[FieldProblem(loc="(top level)", message=_EXPECTED)],
                source=file_name,
            )
        tool = detected
    parser = _PARSERS.get(tool)
    if parser is None:
        raise refuse(
            "tool",
            f"unknown tool {tool!r}; expected 'auto' or one of {', '.join(TOOLS)}",
            source=file_name,
        )
    stages = parser(doc, source=file_name)
    ctx = ImportContext(
        data=data,
        file_name=file_name,
        workload=workload,
        provider=provider,
        plan=plan,
        traffic_class=traffic_class,
        measured_at=measured_at,
        name=name,
    )
    return build_records(stages, ctx)


def import_result_file(
    data: bytes,
    *,
    file_name: str,
    tool: str = "auto",
    workload: str,
    provider: str,
    plan: str | None = None,
    traffic_class: str | None = None,
    measured_at: datetime | None = None,
    name: str | None = None,
) -> list[LoadTestEvidence]:
    """Import a result file into one ``LoadTestEvidence`` per stage (see the findings variant)."""
    return [
        s.evidence
        for s in import_result_file_with_findings(
            data,
            file_name=file_name,
            tool=tool,
            workload=workload,
            provider=provider,
            plan=plan,
            traffic_class=traffic_class,
            measured_at=measured_at,
            name=name,
        )
    ]
