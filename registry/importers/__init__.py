"""Importers: a load-test tool's result file in, ``LoadTestEvidence`` records out.

Pure functions: bytes in, validated records out, no I/O. Supported tools and files:

=================  ==================================================================
``vllm-bench``     ``vllm bench serve --save-result`` (with or without
                   ``--save-detailed``), ``--append-result`` JSON Lines, ``vllm bench
                   sweep`` ``summary.json`` and legacy ``benchmark_serving.py``
``guidellm``       GuideLLM reports, JSON or YAML (``benchmarks.yaml``), old (v0.2/v0.3) and
                   new (metadata v1/v2)
``inference-perf`` ``*_lifecycle_metrics.json`` and ``per_request_lifecycle_metrics.json``
                   (``*_prometheus_metrics.json`` is refused: server-side metrics)
``genai-perf``     ``profile_export_genai_perf.json``
``aiperf``         ``profile_export_aiperf.json`` and ``profile_export.jsonl``
=================  ==================================================================

Every latency is stored in milliseconds; TPOT is per request, (e2e - ttft) / (out - 1),
whatever the tool calls it (see docs/importers.md for the mapping per tool).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import orjson
import yaml

from registry.errors import FieldProblem, InvalidInput
from registry.importers import aiperf, genai_perf, guidellm, inference_perf, vllm
from registry.importers.build_record import build_records
from registry.importers.combine import ClassFile, combine
from registry.importers.json_values import refuse
from registry.importers.parsed_stage import ImportContext, ImportedStage, ParsedStage
from registry.records.documents import PlainLoader
from registry.records.evidence import (
    CvBasis,
    ImportFindings,
    LengthUniformity,
    LoadTestEvidence,
    RuntimeInfo,
)

__all__ = [
    "TOOLS",
    "CvBasis",
    "ImportFindings",
    "ImportedStage",
    "LengthUniformity",
    "detect_tool",
    "import_class_files",
    "import_result_file",
    "import_result_file_with_findings",
]

TOOLS: tuple[str, ...] = ("vllm-bench", "guidellm", "inference-perf", "genai-perf", "aiperf")

# What `capgate evidence import` reads, listed in every "unknown format" message.
SUPPORTED_FORMATS = (
    "vllm-bench: `vllm bench serve --save-result` JSON (also --save-detailed, "
    "--append-result JSON Lines, `vllm bench sweep` summary.json, legacy benchmark_serving.py)",
    "guidellm: GuideLLM benchmark report, JSON or YAML (v0.2/v0.3 and metadata v1/v2)",
    "inference-perf: *_lifecycle_metrics.json, per_request_lifecycle_metrics.json (not "
    "*_prometheus_metrics.json: server-side metrics, refused)",
    "genai-perf: profile_export_genai_perf.json",
    "aiperf: profile_export_aiperf.json, profile_export.jsonl",
)
_EXPECTED = "supported tools and formats: " + "; ".join(SUPPORTED_FORMATS)
_YAML_SUFFIXES = (".yaml", ".yml")
# A YAML mapping's first line: `key:` then a space or the line's end (a CSV header has none).
_YAML_KEY_LINE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*:(\s|$)")


# The registry's own YAML loader: aliases refused, timestamps left as strings (as in JSON).
_ResultYamlLoader = PlainLoader


def _looks_like_yaml(text: str, source: str) -> bool:
    if source.lower().endswith(_YAML_SUFFIXES):
        return True
    first = next(
        (ln for ln in text.split("\n") if ln.strip() and not ln.lstrip().startswith("#")), ""
    )
    return bool(_YAML_KEY_LINE.match(first)) or first.strip() == "---"


def _load_yaml(text: str, *, source: str) -> Any:
    """A YAML result file (GuideLLM writes ``benchmarks.yaml`` with the JSON's structure)."""
    loader = _ResultYamlLoader(text)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise refuse("(file)", f"not YAML ({problem}{where}); {_EXPECTED}", source=source) from exc
    except RecursionError as exc:
        raise refuse("(file)", "not YAML: nested too deeply", source=source) from exc
    finally:
        loader.dispose()


def _load(data: bytes, *, source: str) -> Any:
    """The file as JSON, as JSON Lines (one object per line) as a list of the objects, or as
    YAML (a ``.yaml``/``.yml`` name, or text that starts as a YAML mapping).

    JSON Lines come from vLLM's --append-result (mainline writes "\\n" *before* each appended
    object, so there may be no trailing newline, and writers mixed over time leave blank
    lines) and AIPerf's profile_export.jsonl; which tool wrote the rows is detect_tool's call.
    """
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise refuse("(file)", f"not UTF-8 text: {exc.reason}", source=source) from exc
    if not text.strip():
        raise refuse("(file)", "the file is empty", source=source)
    try:
        # orjson parses a 100,000-request --save-detailed file about 3x faster than json;
        # it refuses what the standard library accepts (NaN, Infinity, which Python-written
        # results can hold), so those fall through to json.
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        first_error = exc
    # Split on "\n" only: str.splitlines() also breaks at U+2028 and other separators that
    # a writer may leave unescaped inside a JSON string.
    lines = text.split("\n")
    first = next((ln for ln in lines if ln.strip()), "")
    if first.lstrip().startswith("{") and sum(1 for ln in lines if ln.strip()) > 1:
        rows = vllm.JsonLines()
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise refuse(
                    f"line {number}",
                    f"not JSON ({exc.msg} at column {exc.colno}); a JSON Lines file holds one "
                    "JSON object per line",
                    source=source,
                ) from exc
            rows.line_numbers.append(number)
        return rows
    if _looks_like_yaml(text, source):
        doc = _load_yaml(text, source=source)
        if isinstance(doc, dict | list) or source.lower().endswith(_YAML_SUFFIXES):
            return doc
    raise refuse(
        "(file)",
        f"not JSON ({first_error.msg} at line {first_error.lineno} column "
        f"{first_error.colno}); {_EXPECTED}",
        source=source,
    )


def _shape(doc: Any) -> str:
    """`` (top-level keys: a, b, c)``: what the unknown file holds, briefly."""
    if isinstance(doc, dict):
        keys = [str(k) for k in list(doc)[:5]]
        more = ", ..." if len(doc) > 5 else ""
        return f" (top-level keys: {', '.join(keys)}{more})" if keys else " (an empty object)"
    if isinstance(doc, list):
        return f" (a list of {len(doc)} item{'s' if len(doc) != 1 else ''})"
    return f" (a {type(doc).__name__})"


def detect_tool(doc: Any) -> str | None:
    """The tool that wrote a parsed result file, judged from its shape; None if unknown.

    A list is JSON Lines or a JSON array: AIPerf per-request rows ({metadata, metrics}),
    vLLM results (--append-result lines, a sweep summary.json) or inference-perf's
    per-request records. The parser then checks every row, not only the ones looked at here.
    """
    if isinstance(doc, list):
        if aiperf.looks_like_jsonl(doc):
            return "aiperf"
        if vllm.looks_like(doc):
            return "vllm-bench"
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
    replicas: int | None = None,
    runtime: RuntimeInfo | None = None,
) -> list[ImportedStage]:
    """Import a result file; one ``ImportedStage`` (evidence + findings) per stage.

    ``tool`` is one of ``TOOLS`` or ``"auto"`` (judged from the file's shape).
    ``measured_at`` is used when the file states no time of its own, or only a wall-clock
    time without a zone; a file's own zoned time wins, and a ``measured_at`` further from it
    than the run's duration plus ``measured_at.MEASURED_AT_SLACK`` is refused naming both.
    ``replicas`` is required unless the file states it. ``runtime`` is the serving runtime
    measured, as the person importing states it (the file's own statement wins; a
    contradicting one is refused). ``name`` overrides the record name derived from
    ``file_name``; stages of a multi-stage file are named ``<name>-stage-<i>`` and labelled
    ``{series: <name>, stage: "<i>"}``. Raises ``InvalidInput`` (with a FieldProblem naming
    the key) for a file of unknown or broken format.
    """
    stages = _parse(data, file_name=file_name, tool=tool)
    ctx = ImportContext(
        data=data,
        file_name=file_name,
        workload=workload,
        provider=provider,
        plan=plan,
        traffic_class=traffic_class,
        measured_at=measured_at,
        name=name,
        replicas=replicas,
        runtime=runtime,
    )
    return build_records(stages, ctx)


def _parse(data: bytes, *, file_name: str, tool: str) -> list[ParsedStage]:
    doc = _load(data, source=file_name)
    if tool == "auto":
        detected = detect_tool(doc)
        if detected is None:
            problem = f"the file's shape matches no supported tool{_shape(doc)}"
            raise InvalidInput(
                f"cannot import {file_name}: {problem}",
                # What is wrong first, then what would be read: one line, the headline kept.
                problems=[FieldProblem(loc="(top level)", message=f"{problem}; {_EXPECTED}")],
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
    return parser(doc, source=file_name)


def import_class_files(
    files: Sequence[tuple[str, str, bytes]],
    *,
    tool: str = "auto",
    workload: str,
    provider: str,
    plan: str | None = None,
    measured_at: datetime | None = None,
    name: str | None = None,
    replicas: int | None = None,
    runtime: RuntimeInfo | None = None,
) -> ImportedStage:
    """One evidence record from (traffic class, file name, bytes) triples run together.

    An empty traffic class means "the class the file names" (vLLM --metadata
    traffic_class=...). Each file must hold one stage; the files' measurement windows must
    overlap (see ``registry.importers.combine``).
    """
    common = ImportContext(
        data=b"",
        file_name="",
        workload=workload,
        provider=provider,
        plan=plan,
        traffic_class=None,
        measured_at=measured_at,
        name=name,
        replicas=replicas,
        runtime=runtime,
    )
    parts: list[ClassFile] = []
    for traffic_class, file_name, data in files:
        stages = _parse(data, file_name=file_name, tool=tool)
        if len(stages) != 1:
            raise refuse(
                "--class",
                f"holds {len(stages)} stages; a file given for one class of a mixed test must "
                "hold one run",
                source=file_name,
            )
        # Without --class NAME=FILE the file must name its class itself (a label in it).
        traffic_class = traffic_class or stages[0].class_label or ""
        if not traffic_class:
            raise refuse(
                "--class",
                "the file names no traffic class; give --class NAME=FILE for each file of a "
                "mixed test",
                source=file_name,
            )
        ctx = replace(common, data=data, file_name=file_name, traffic_class=traffic_class)
        parts.append(ClassFile(traffic_class=traffic_class, stage=stages[0], ctx=ctx))
    return combine(parts, name=name)


def import_result_file(data: bytes, **options: Any) -> list[LoadTestEvidence]:
    """Import a result file into one ``LoadTestEvidence`` per stage; ``options`` are those
    of ``import_result_file_with_findings``."""
    return [s.evidence for s in import_result_file_with_findings(data, **options)]
