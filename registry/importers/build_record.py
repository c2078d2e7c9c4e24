"""How a ``ParsedStage`` becomes a ``LoadTestEvidence``: the record's name, the checks every
stage passes (something completed, the client kept the schedule, replicas and class settled),
its findings, and its provenance.

Done here once for every tool, so importers cannot differ in how they fill the record.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from pydantic import ValidationError

from registry.digest import sha256_digest
from registry.errors import FieldProblem, InvalidInput
from registry.importers.identity import Identity, identity_notes
from registry.importers.json_values import refuse
from registry.importers.measured_at import resolve_measured_at
from registry.importers.parsed_stage import (
    DEFAULT_CLASS,
    ImportContext,
    ImportedStage,
    MeasuredAtSource,
    ParsedStage,
)
from registry.importers.runtime import settle_runtime
from registry.importers.stats import (
    CvEstimate,
)
from registry.records.common import NAME_PATTERN
from registry.records.evidence import (
    ClassResult,
    CvBasis,
    EntryKind,
    ImportFindings,
    LengthUniformity,
    LoadTestEvidence,
    MeasuredAgainst,
    Offered,
    Provenance,
    RawFile,
    Results,
    SourceFile,
    ToolInfo,
)


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


# --- the checks every stage passes, then the record -------------------------------------------

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
    measured_at = resolve_measured_at(st, ctx)
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
