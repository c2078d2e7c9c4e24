"""The tool-neutral shape every importer fills, and how it becomes a ``LoadTestEvidence``.

Each tool module only reads its file into ``ParsedStage`` objects (figures in ms, token
counts, rates); naming, linking stages, provenance and validation happen here once, so the
tools cannot drift apart in how they fill the record.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

import numpy as np
from numpy.typing import NDArray
from pydantic import ValidationError

from registry.digest import sha256_digest
from registry.errors import FieldProblem, InvalidInput
from registry.importers.identity import Identity, identity_notes
from registry.importers.stats import (
    CvEstimate,
    cv_from_samples,
    length_distribution_from_samples,
    percentiles_from_samples,
)
from registry.records.common import NAME_PATTERN, Distribution
from registry.records.evidence import (
    ClassResult,
    CvBasis,
    EntryKind,
    ImportFindings,
    LengthUniformity,
    LoadTestEvidence,
    MeasuredAgainst,
    Offered,
    Percentiles,
    Provenance,
    RawFile,
    Results,
    RuntimeInfo,
    SourceFile,
    Throughput,
    ToolInfo,
)

DEFAULT_CLASS = "default"


# Per-request values: a list as parsed, or an array already masked.
Samples = Sequence[float] | NDArray[np.float64]


@dataclass
class ParsedStage:
    """One stage of one result file, in capgate's units, before it becomes a record."""

    tool: str
    tool_version: str | None = None
    stage: str | None = None  # stage label when the file holds several ("0", "1", ...)
    measured_at: datetime | None = None
    measured_at_naive: bool = False  # the file's time has no zone (a local wall clock)
    measured_at_is_end: bool = False  # the file's time marks the end of the run (vLLM's date)
    measured_at_basis: str | None = None  # the key the file's time was read from
    # Where the record's time came from, once settled (``MeasuredAtSource``).
    measured_at_source: MeasuredAtSource | None = None
    # The traffic class the file itself names (vLLM --metadata class=..., a label), if any.
    class_label: str | None = None
    # Ready replicas behind the tested endpoint, when the file states it, and where.
    replicas: int | None = None
    replicas_basis: str | None = None
    # The serving runtime measured (the server, not the tool), when the file states it.
    runtime: RuntimeInfo | None = None
    runtime_basis: str | None = None
    # The model(s), tokenizer and GPUs the file says the test ran on (registry.importers.identity).
    identity: Identity = field(default_factory=Identity)
    # offered
    request_rate_rps: float | None = None
    concurrency: int | None = None
    burstiness: float | None = None
    constant_arrivals: bool = False  # evenly spaced arrivals (no burstiness figure)
    requests: int | None = None
    duration_s: float | None = None
    cancellation_rate: float | None = None
    rate_unbounded: bool = False  # vLLM's request_rate "inf": all requests sent at once
    # What the client really sent; when it fell well short of the offered schedule the test
    # measured that lower load, and the record must say so (client_behind).
    achieved_rate_rps: float | None = None
    client_behind: bool = False
    client_behind_reason: str | None = None
    prompt_tokens: Distribution | None = None
    output_tokens: Distribution | None = None
    # results
    completed: int | None = None
    failed: int | None = None
    # Why requests failed, as the file states it ("20 x TimeoutError"), most frequent first.
    failure_reasons: list[str] = field(default_factory=list)
    cancelled: int | None = None
    incomplete: int | None = None  # cut off when the tool stopped measuring
    ttft_ms: Percentiles | None = None
    tpot_ms: Percentiles | None = None
    itl_ms: Percentiles | None = None
    e2e_ms: Percentiles | None = None
    queue_ms: Percentiles | None = None
    throughput: Throughput = field(default_factory=Throughput)
    # what the file did not state, named by record path
    missing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # findings inputs
    prompt_cv: CvEstimate | None = None
    output_cv: CvEstimate | None = None
    cancellations_exercised: bool | None = None
    cancellation_basis: str | None = None
    priority_classes: int | None = None
    priority_basis: str | None = None


class MeasuredAtSource(StrEnum):
    """Where an imported record's ``measured_at`` came from."""

    FILE = "file"  # the file's own time, with a zone: nothing can move it
    ARGUMENT = "argument"  # --measured-at (form field measured_at)
    FILE_NO_ZONE = "file-no-zone"  # the file's wall-clock time without a zone, read as UTC


@dataclass(frozen=True)
class ImportedStage:
    """One imported stage: the evidence record and the findings computed with it."""

    evidence: LoadTestEvidence
    findings: ImportFindings
    # MeasuredAtSource: whether the file itself fixes the record's time (see the import
    # service, which keeps a re-imported file's first measured time otherwise).
    measured_at_source: MeasuredAtSource = MeasuredAtSource.FILE
    # What the file says the test ran on, with the keys read: the import service holds it
    # against the provider version the record pins.
    identity: Identity = field(default_factory=Identity)


# --- reading JSON safely -------------------------------------------------------------------


def refuse(loc: str, message: str, *, source: str, summary: str | None = None) -> InvalidInput:
    """The error for a file capgate cannot read: names the key and says what was expected."""
    return InvalidInput(
        summary or f"cannot import {source}: {loc}: {message}",
        problems=[FieldProblem(loc=loc, message=message)],
        source=source,
    )


def num(value: Any) -> float | None:
    """A JSON number as float; None for null, strings other than 'inf', NaN, booleans."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        f = float(value)
        return f if math.isfinite(f) else None
    return None


def pos(value: Any) -> float | None:
    f = num(value)
    return f if f is not None and f > 0 else None


def count(value: Any) -> int | None:
    """A JSON count as int (tools write 200, 200.0 or null)."""
    f = num(value)
    if f is None or f < 0 or f != int(f):
        return None
    return int(f)


def obj(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def epoch_to_utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


# --- the serving runtime ------------------------------------------------------------------

RUNTIME_SYNTAX = "NAME==VERSION, e.g. vllm==0.8.5"
_RUNTIME_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
_RUNTIME_TEXT = re.compile(r"^\s*(?P<name>[^=\s]+)\s*==\s*(?P<version>\S+)\s*$")


def runtime_info(name: str, version: str, *, loc: str, source: str | None = None) -> RuntimeInfo:
    """A serving runtime from its name and version (a leading "v", as in image tags, is
    dropped: v0.8.5 is 0.8.5); InvalidInput naming `loc` when either is malformed."""
    name, version = name.strip(), version.strip()
    if version[:1] in ("v", "V") and version[1:2].isdigit():
        version = version[1:]
    problem = None
    if not _RUNTIME_NAME.match(name):
        problem = f"{name!r} is not a runtime name (letters, digits, '.', '_', '+', '-')"
    else:
        try:
            return RuntimeInfo(name=name, version=version)
        except ValidationError:
            problem = (
                f"{version!r} is not a runtime version: major.minor[.patch] with an optional "
                "suffix, e.g. 0.8.5 or 0.10.2+cu128"
            )
    raise InvalidInput(
        f"cannot import {source}: {loc}: {problem}" if source else f"{loc}: {problem}",
        problems=[FieldProblem(loc=loc, message=problem)],
        source=source,
    )


def parse_runtime(text: str, *, loc: str, source: str | None = None) -> RuntimeInfo:
    """``NAME==VERSION`` (``vllm==0.8.5``), as ``--runtime`` and vLLM metadata state it."""
    match = _RUNTIME_TEXT.match(text) if isinstance(text, str) else None
    if match is None:
        problem = f"{text!r} is not {RUNTIME_SYNTAX} (the serving runtime and its version)"
        raise InvalidInput(
            f"cannot import {source}: {loc}: {problem}" if source else f"{loc}: {problem}",
            problems=[FieldProblem(loc=loc, message=problem)],
            source=source,
        )
    return runtime_info(match["name"], match["version"], loc=loc, source=source)


def same_runtime(a: RuntimeInfo, b: RuntimeInfo) -> bool:
    return a.name.casefold() == b.name.casefold() and a.version == b.version


def settle_runtime(stage: ParsedStage, ctx: ImportContext) -> RuntimeInfo | None:
    """The runtime measured: from the file, else as stated at import, else unknown (None).

    A stated runtime that contradicts the file's is refused, naming both.
    """
    stated, given = stage.runtime, ctx.runtime
    if stated is not None and given is not None and not same_runtime(stated, given):
        raise refuse(
            "--runtime",
            f"the file states runtime {stated.describe()} ({stage.runtime_basis}) but "
            f"--runtime {given.name}=={given.version} was given; drop the flag or correct it",
            source=ctx.file_name,
        )
    if stated is not None:
        stage.notes.append(
            f"serving runtime {stated.describe()}, from the file ({stage.runtime_basis})"
        )
        return stated
    if given is not None:
        stage.notes.append(f"serving runtime {given.describe()}, stated at import (--runtime)")
    return given


def settle_identity(stage: ParsedStage) -> Identity:
    """What the file says the test ran on; the record's notes name the keys read."""
    stage.notes.extend(identity_notes(stage.identity))
    return stage.identity


# --- names ---------------------------------------------------------------------------------

_NAME_RE = re.compile(NAME_PATTERN)


def slug(text: str, *, max_len: int = 100) -> str:
    """A record name from free text: lower-case, [a-z0-9._-], no leading/trailing punctuation."""
    s = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("._-")
    s = re.sub(r"-{2,}", "-", s)[:max_len].strip("._-")
    return s or "load-test"


# File names every run of a tool writes alike; the folder above them tells runs apart.
_GENERIC_STEMS = frozenset({"summary", "results", "benchmarks", "profile_export_aiperf"})


def base_name_from_file(file_name: str) -> str:
    parts = file_name.replace("\\", "/").rsplit("/", 2)
    stem = parts[-1]
    for ext in (".json", ".jsonl", ".yaml", ".yml", ".csv"):
        if stem.lower().endswith(ext):
            stem = stem[: -len(ext)]
            break
    if stem.lower() in _GENERIC_STEMS and len(parts) > 1 and parts[-2]:
        stem = f"{parts[-2]}-{stem}"
    return slug(stem)


def fill_from_requests(
    stage: ParsedStage,
    *,
    ttft_s: Samples,
    tpot_s: Samples,
    itl_s: Samples,
    e2e_s: Samples,
    prompt_tokens: Samples,
    output_tokens: Samples,
) -> None:
    """Percentiles (seconds in, ms stored), length distributions and CVs from per-request
    values: the one place every importer of per-request data computes them."""
    for attribute, values in (
        ("ttft_ms", ttft_s),
        ("tpot_ms", tpot_s),
        ("itl_ms", itl_s),
        ("e2e_ms", e2e_s),
    ):
        samples = np.asarray(values, dtype=float)
        setattr(stage, attribute, percentiles_from_samples(samples, scale_to_ms=1000.0))
    prompt = np.asarray(prompt_tokens, dtype=float)
    output = np.asarray(output_tokens, dtype=float)
    stage.prompt_tokens = length_distribution_from_samples(prompt)
    stage.output_tokens = length_distribution_from_samples(output)
    stage.prompt_cv = cv_from_samples(prompt)
    stage.output_cv = cv_from_samples(output)


# --- findings ------------------------------------------------------------------------------


def _uniformity(est: CvEstimate | None) -> LengthUniformity:
    if est is None:
        return LengthUniformity(basis=CvBasis.unavailable, note="the file states no lengths")
    return LengthUniformity(
        cv=est.cv if est.cv is not None and est.cv >= 0 else None,
        basis=CvBasis(est.basis),
        samples=est.samples,
        note=est.note,
    )


def findings_for(stage: ParsedStage) -> ImportFindings:
    classes = stage.priority_classes
    return ImportFindings(
        prompt_tokens=_uniformity(stage.prompt_cv),
        output_tokens=_uniformity(stage.output_cv),
        cancellations_exercised=stage.cancellations_exercised,
        cancelled_requests=stage.cancelled,
        cancellation_basis=stage.cancellation_basis,
        priority_classes=classes,
        mixed_priorities=None if classes is None else classes > 1,
        priority_basis=stage.priority_basis,
        notes=list(stage.notes),
    )


# --- building the record -------------------------------------------------------------------


@dataclass(frozen=True)
class ImportContext:
    data: bytes
    file_name: str
    workload: str
    provider: str
    plan: str | None
    traffic_class: str | None
    measured_at: datetime | None
    name: str | None
    replicas: int | None = None
    runtime: RuntimeInfo | None = None  # stated at import (--runtime NAME==VERSION)


# An achieved send rate this far below the offered one means the client fell behind.
BEHIND_RATIO = 0.9


def judge_schedule(stage: ParsedStage) -> None:
    """Mark a stage whose client could not keep the offered rate (achieved < 90 % offered)."""
    offered, achieved = stage.request_rate_rps, stage.achieved_rate_rps
    if stage.client_behind or offered is None or achieved is None:
        return
    if achieved < BEHIND_RATIO * offered:
        stage.client_behind = True
        stage.client_behind_reason = (
            f"achieved rate {achieved:g} req/s is {achieved / offered:.0%} of the offered "
            f"{offered:g} req/s"
        )


# How far --measured-at may sit from a time the file states, beyond the run's own duration:
# a user may give the run's start where the file states its end, or round to the minute.
MEASURED_AT_SLACK = timedelta(minutes=5)


def measured_at_tolerance(duration_s: float | None) -> timedelta:
    """The run's own duration plus ``MEASURED_AT_SLACK``: two times of one run further apart
    than this are not the same run."""
    return timedelta(seconds=duration_s or 0.0) + MEASURED_AT_SLACK


def _format_gap(gap: timedelta) -> str:
    seconds = abs(gap.total_seconds())
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:.1f} days"
    if seconds >= 2 * 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 120:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"


def _check_stated_time(
    stage: ParsedStage, stated: datetime, given: datetime, ctx: ImportContext
) -> None:
    """Refuse a --measured-at that contradicts the zoned time the file states."""
    tolerance = measured_at_tolerance(stage.duration_s)
    gap = given - stated
    if abs(gap) <= tolerance:
        return
    basis = f" ({stage.measured_at_basis})" if stage.measured_at_basis else ""
    mark = "ended" if stage.measured_at_is_end else "started"
    run = f"{stage.duration_s:g} s run" if stage.duration_s else "run of unstated duration"
    raise refuse(
        "--measured-at",
        f"the file states the run {mark} at {stated.isoformat()}{basis} but --measured-at "
        f"{given.isoformat()} was given (API: form field measured_at), {_format_gap(gap)} "
        f"{'later' if gap > timedelta(0) else 'earlier'}: more than the {run} plus "
        f"{MEASURED_AT_SLACK.total_seconds() / 60:g} min. The file's own time is the time of "
        "measurement; drop the flag or correct it",
        source=ctx.file_name,
    )


# Every note on how a time without a zone was settled holds this: a re-import that keeps the
# first import's time keeps the first import's note with it (the import service).
NO_ZONE_NOTE = "has no time zone; "


def is_time_note(note: str) -> bool:
    return NO_ZONE_NOTE in note


def _resolve_measured_at(stage: ParsedStage, ctx: ImportContext) -> datetime:
    """The time of measurement: the file's own zoned time wins (a --measured-at further from
    it than the run's duration plus ``MEASURED_AT_SLACK`` is refused naming both); a time
    without a zone yields to --measured-at; no time at all needs it."""
    if stage.measured_at is not None and not stage.measured_at_naive:
        if ctx.measured_at is not None:
            _check_stated_time(stage, stage.measured_at, ctx.measured_at, ctx)
        stage.measured_at_source = MeasuredAtSource.FILE
        return stage.measured_at
    if stage.measured_at is not None:
        # The file's clock has no zone: an explicit argument is better evidence than a guess.
        if ctx.measured_at is not None:
            stage.notes.append(
                f"the file's time {stage.measured_at.isoformat()} {NO_ZONE_NOTE}the "
                "measured_at argument (the run's start) was used instead"
            )
            stage.measured_at_is_end = False
            stage.measured_at_source = MeasuredAtSource.ARGUMENT
            return ctx.measured_at
        stage.notes.append(
            f"the file's time {stage.measured_at.isoformat()} {NO_ZONE_NOTE}read as UTC"
        )
        stage.measured_at_source = MeasuredAtSource.FILE_NO_ZONE
        return stage.measured_at.replace(tzinfo=UTC)
    if ctx.measured_at is not None:
        stage.measured_at_source = MeasuredAtSource.ARGUMENT
        return ctx.measured_at
    raise refuse(
        "--measured-at",
        "the file states no time of measurement; pass --measured-at with an ISO 8601 time "
        "and zone, e.g. --measured-at 2026-11-24T14:05:00Z (API: form field measured_at)",
        source=ctx.file_name,
    )


def _check_completed(stage: ParsedStage, source: str) -> None:
    """A run that completed nothing measured nothing: its zero latencies are not fast."""
    if stage.completed == 0:
        failed = f", failed: {stage.failed}" if stage.failed is not None else ""
        where = f"stage {stage.stage}: " if stage.stage is not None else ""
        reasons = ""
        if stage.failure_reasons:
            shown = "; ".join(stage.failure_reasons[:3])
            more = len(stage.failure_reasons) - 3
            reasons = f" ({shown}{f'; +{more} more' if more > 0 else ''})"
        raise refuse(
            f"{where}completed",
            f"0{failed}{reasons}; no request completed, so the file's latencies (stated as 0) "
            "measure nothing. Fix the run and load the test again",
            source=source,
            summary=f"cannot import {source}: {where}completed: 0{failed}{reasons}",
        )


def _replicas(stage: ParsedStage, ctx: ImportContext) -> tuple[int, str]:
    """Replicas behind the endpoint and where the number came from (file or flag)."""
    if stage.replicas is not None and ctx.replicas is not None and stage.replicas != ctx.replicas:
        raise refuse(
            "--replicas",
            f"the file states {stage.replicas} replicas ({stage.replicas_basis}) but "
            f"--replicas {ctx.replicas} was given; drop the flag or correct it",
            source=ctx.file_name,
        )
    if stage.replicas is not None:
        stage.notes.append(f"{stage.replicas} replicas, from the file ({stage.replicas_basis})")
        return stage.replicas, "file"
    if ctx.replicas is not None:
        return ctx.replicas, "flag"
    raise refuse(
        "--replicas",
        "the file does not state how many replicas served the test; pass --replicas N "
        "(API: form field replicas). Rates are divided by it, so it cannot default to 1",
        source=ctx.file_name,
    )


def _class_name(stage: ParsedStage, ctx: ImportContext) -> str:
    label, given = stage.class_label, ctx.traffic_class
    if label is not None and given is not None and label != given:
        raise refuse(
            "--class",
            f"the file names traffic class {label!r} but --class {given} was given; drop the "
            "flag or correct it",
            source=ctx.file_name,
        )
    return given or label or DEFAULT_CLASS


def invalid_record(exc: ValidationError, source: str) -> InvalidInput:
    problems = [
        FieldProblem(loc=".".join(str(p) for p in e["loc"]), message=e["msg"]) for e in exc.errors()
    ]
    return InvalidInput(
        f"{source}: the imported figures do not form a valid evidence record",
        problems=problems,
        source=source,
    )


def class_result(st: ParsedStage) -> ClassResult:
    return ClassResult(
        requests=st.requests,
        completed=st.completed,
        failed=st.failed,
        cancelled=st.cancelled,
        incomplete=st.incomplete,
        ttft_ms=st.ttft_ms,
        tpot_ms=st.tpot_ms,
        itl_ms=st.itl_ms,
        e2e_ms=st.e2e_ms,
        queue_ms=st.queue_ms,
    )


def source_file(ctx: ImportContext, st: ParsedStage, traffic_class: str) -> SourceFile:
    return SourceFile(
        file_name=ctx.file_name.rsplit("/", 1)[-1],
        sha256=sha256_digest(ctx.data),
        size_bytes=len(ctx.data),
        traffic_class=traffic_class,
        tool=st.tool,
        tool_version=st.tool_version,
    )


def prepare_stage(st: ParsedStage, ctx: ImportContext) -> tuple[datetime, int, str]:
    """Checks and settles one stage: (measured_at, replicas, replicas_source)."""
    _check_completed(st, ctx.file_name)
    judge_schedule(st)
    measured_at = _resolve_measured_at(st, ctx)
    replicas, replicas_source = _replicas(st, ctx)
    return measured_at, replicas, replicas_source


def build_records(stages: Sequence[ParsedStage], ctx: ImportContext) -> list[ImportedStage]:
    if not stages:
        raise refuse("benchmarks", "the file holds no benchmark results", source=ctx.file_name)
    base = slug(ctx.name) if ctx.name else base_name_from_file(ctx.file_name)
    multi = len(stages) > 1
    raw = RawFile(
        file_name=ctx.file_name.rsplit("/", 1)[-1],
        sha256=sha256_digest(ctx.data),
        size_bytes=len(ctx.data),
    )
    out: list[ImportedStage] = []
    for i, st in enumerate(stages):
        stage_label = st.stage if st.stage is not None else (str(i) if multi else None)
        name = f"{base}-stage-{stage_label}" if multi and stage_label is not None else base
        labels: dict[str, str] = {}
        if stage_label is not None:
            labels["stage"] = stage_label
        if multi:
            labels["series"] = base
        measured_at, replicas, replicas_source = prepare_stage(st, ctx)
        runtime = settle_runtime(st, ctx)
        identity = settle_identity(st)
        cls = _class_name(st, ctx)
        missing = sorted(set(st.missing))
        try:
            evidence = LoadTestEvidence(
                name=name,
                labels=labels,
                measured_against=MeasuredAgainst(
                    workload=ctx.workload, provider=ctx.provider, plan=ctx.plan
                ),
                tool=ToolInfo(name=st.tool, version=st.tool_version),
                runtime=runtime,
                measured_model=identity.model,
                measured_accelerators=identity.accelerator_names,
                raw_file=raw,
                measured_at=measured_at,
                offered=offered_for(st, classes=[cls], replicas=replicas),
                results=Results(per_class={cls: class_result(st)}, throughput=st.throughput),
                missing=missing,
                findings=findings_for(st),
                provenance=Provenance(
                    entry=EntryKind.imported,
                    replicas_source=replicas_source,
                    files=[source_file(ctx, st, cls)],
                ),
            )
        except ValidationError as exc:
            raise invalid_record(exc, ctx.file_name) from exc
        if not _NAME_RE.match(name):  # pragma: no cover - slug() guarantees the pattern
            raise refuse("name", f"{name!r} is not a valid record name", source=ctx.file_name)
        out.append(
            ImportedStage(
                evidence=evidence,
                findings=evidence.findings or findings_for(st),
                measured_at_source=st.measured_at_source or MeasuredAtSource.FILE,
                identity=identity,
            )
        )
    return out


def offered_for(st: ParsedStage, *, classes: list[str], replicas: int) -> Offered:
    return Offered(
        request_rate_rps=st.request_rate_rps,
        concurrency=st.concurrency,
        rate_unbounded=st.rate_unbounded,
        burstiness=st.burstiness,
        constant_arrivals=st.constant_arrivals,
        requests=st.requests,
        duration_s=st.duration_s,
        replicas=replicas,
        achieved_rate_rps=st.achieved_rate_rps,
        client_behind=st.client_behind,
        client_behind_reason=st.client_behind_reason,
        classes=classes,
        cancellation_rate=st.cancellation_rate,
        prompt_tokens=st.prompt_tokens,
        output_tokens=st.output_tokens,
    )


def note_missing(stage: ParsedStage, checks: Mapping[str, object]) -> None:
    """Record every record path whose value is None as missing."""
    for path, value in checks.items():
        if value is None:
            stage.missing.append(path)


def standard_missing(stage: ParsedStage) -> None:
    """The figures every record should carry; whatever the tool did not give is listed."""
    if stage.request_rate_rps is None and stage.concurrency is None and not stage.rate_unbounded:
        stage.missing += ["offered.request_rate_rps", "offered.concurrency"]
    note_missing(
        stage,
        {
            "offered.requests": stage.requests,
            "offered.duration_s": stage.duration_s,
            "offered.prompt_tokens": stage.prompt_tokens,
            "offered.output_tokens": stage.output_tokens,
            "results.completed": stage.completed,
            "results.failed": stage.failed,
            "results.cancelled": stage.cancelled,
            "results.ttft_ms": stage.ttft_ms,
            "results.tpot_ms": stage.tpot_ms,
            "results.itl_ms": stage.itl_ms,
            "results.e2e_ms": stage.e2e_ms,
            "results.queue_ms": stage.queue_ms,
            "throughput.requests_per_s": stage.throughput.requests_per_s,
            "throughput.output_tokens_per_s": stage.throughput.output_tokens_per_s,
            "throughput.total_tokens_per_s": stage.throughput.total_tokens_per_s,
            "throughput.goodput_requests_per_s": stage.throughput.goodput_requests_per_s,
        },
    )
