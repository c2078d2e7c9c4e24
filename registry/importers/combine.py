"""Several result files, one per traffic class, measured together: one evidence record.

Load-test tools send one request stream each, so a mixed-priority test is several load
generators run at the same time, one per class. Their files become one record with a
result per class, but only when their measurement windows really overlap: files from
different runs glued together would claim a mix the server never saw.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import ValidationError

from registry.importers.build_record import (
    class_result,
    findings_for,
    invalid_record,
    offered_for,
    prepare_stage,
    settle_identity,
    slug,
    source_file,
)
from registry.importers.identity import Identity, hf_id
from registry.importers.json_values import refuse
from registry.importers.parsed_stage import (
    ImportContext,
    ImportedStage,
    MeasuredAtSource,
    ParsedStage,
)
from registry.importers.runtime import same_runtime, settle_runtime
from registry.records.evidence import (
    EntryKind,
    ImportFindings,
    LoadTestEvidence,
    MeasuredAgainst,
    Provenance,
    Results,
    Throughput,
    ToolInfo,
)

# The common window must cover at least this share of the shortest run.
MIN_OVERLAP = 0.5


@dataclass(frozen=True)
class ClassFile:
    """One class's parsed file: its single stage and the context it was read with."""

    traffic_class: str
    stage: ParsedStage
    ctx: ImportContext


def _window(part: ClassFile, measured_at: datetime) -> tuple[datetime, datetime]:
    st = part.stage
    if st.duration_s is None:
        raise refuse(
            "duration",
            "the file states no run duration, so its measurement window cannot be checked "
            "against the other classes' files",
            source=part.ctx.file_name,
        )
    length = timedelta(seconds=st.duration_s)
    if st.measured_at_is_end:
        return measured_at - length, measured_at
    return measured_at, measured_at + length


def _check_overlap(windows: Sequence[tuple[ClassFile, datetime, datetime]]) -> str:
    start = max(w[1] for w in windows)
    end = min(w[2] for w in windows)
    shortest = min((w[2] - w[1]).total_seconds() for w in windows)
    common = (end - start).total_seconds()
    if common <= 0 or common < MIN_OVERLAP * shortest:
        shown = "; ".join(
            f"{w[0].traffic_class} ({w[0].ctx.file_name}) {w[1].isoformat()} to {w[2].isoformat()}"
            for w in windows
        )
        raise refuse(
            "--class",
            f"the files' measurement windows do not overlap enough to be one mixed test "
            f"(common window {max(common, 0.0):.0f} s, need at least {MIN_OVERLAP:.0%} of the "
            f"shortest run, {shortest:.0f} s): {shown}",
            source=windows[0][0].ctx.file_name,
        )
    return f"classes measured together: common window {common:.0f} s of {shortest:.0f} s"


def _sum(values: Sequence[float | None]) -> float | None:
    return None if any(v is None for v in values) else sum(v or 0.0 for v in values)


def _weighted_cancellation(stages: Sequence[ParsedStage]) -> float | None:
    """The mix's cancellation rate: each generator's rate weighted by its request rate."""
    pairs = [(st.cancellation_rate, st.request_rate_rps) for st in stages]
    if any(c is None or r is None for c, r in pairs):
        return None
    total = sum(r or 0.0 for _, r in pairs)
    return sum((c or 0.0) * (r or 0.0) for c, r in pairs) / total if total else None


def _findings(parts: Sequence[ClassFile], notes: list[str]) -> ImportFindings:
    each = [findings_for(p.stage) for p in parts]
    # The least varied class decides: uniform prompts in any class hide its queueing.
    prompt = min(each, key=lambda f: f.prompt_tokens.cv if f.prompt_tokens.cv is not None else 0)
    output = min(each, key=lambda f: f.output_tokens.cv if f.output_tokens.cv is not None else 0)
    cancelled = [f.cancelled_requests for f in each]
    exercised = [f.cancellations_exercised for f in each]
    return ImportFindings(
        prompt_tokens=prompt.prompt_tokens,
        output_tokens=output.output_tokens,
        cancellations_exercised=True if any(exercised) else (None if None in exercised else False),
        cancelled_requests=None if None in cancelled else sum(c or 0 for c in cancelled),
        cancellation_basis="; ".join(
            sorted({f.cancellation_basis for f in each if f.cancellation_basis})
        )
        or None,
        priority_classes=None,  # the workload's priorities decide, at the gate
        mixed_priorities=None,
        priority_basis=f"{len(parts)} traffic classes offered at once by separate load "
        "generators; their priorities are the workload's",
        notes=notes
        + [f"[{p.traffic_class}] {n}" for p, f in zip(parts, each, strict=True) for n in f.notes],
    )


def _identity(parts: Sequence[ClassFile]) -> Identity:
    """What the mixed test ran on: one deployment, so the files' Hugging Face ids must agree;
    the record keeps the first file's model that is one (else the first named), and every
    GPU any file's telemetry saw. Each file's own model stays in its class's notes."""
    each = [(part, settle_identity(part.stage)) for part in parts]
    ids = [
        (part.traffic_class, model.value, repo)
        for part, found in each
        for model in found.models
        if (repo := hf_id(model.value)) is not None
    ]
    if len({repo.casefold() for _, _, repo in ids}) > 1:
        raise refuse(
            "model",
            "the classes' files name different models "
            f"({', '.join(f'{cls}: {model}' for cls, model, _ in ids)}); one mixed test runs "
            "against one deployment",
            source=parts[0].ctx.file_name,
        )
    named = [found for _, found in each if found.models]
    chosen = next((f for f in named if any(hf_id(m.value) for m in f.models)), None)
    chosen = chosen or (named[0] if named else Identity())
    return Identity(
        models=chosen.models,
        tokenizer=chosen.tokenizer,
        accelerators=tuple(a for _, found in each for a in found.accelerators),
    )


def combine(parts: Sequence[ClassFile], *, name: str | None) -> ImportedStage:
    """One evidence record from several single-stage files, one per class."""
    classes = [p.traffic_class for p in parts]
    dupes = sorted({c for c in classes if classes.count(c) > 1})
    if dupes:
        raise refuse("--class", f"class {dupes[0]} is given more than one file", source="--class")
    settled = []
    for part in parts:
        measured_at, replicas, replicas_source = prepare_stage(part.stage, part.ctx)
        settled.append((part, measured_at, replicas, replicas_source))
    replica_counts = {s[2] for s in settled}
    if len(replica_counts) > 1:
        raise refuse(
            "--replicas",
            "the classes' files name different replica counts "
            f"({', '.join(f'{s[0].traffic_class}: {s[2]}' for s in settled)}); one mixed "
            "test runs against one deployment",
            source=parts[0].ctx.file_name,
        )
    runtimes = [(part, settle_runtime(part.stage, part.ctx)) for part in parts]
    known = [(part, runtime) for part, runtime in runtimes if runtime is not None]
    for part, runtime in known[1:]:
        if not same_runtime(known[0][1], runtime):
            raise refuse(
                "--runtime",
                "the classes' files name different serving runtimes "
                f"({', '.join(f'{p.traffic_class}: {r.describe()}' for p, r in known)}); one "
                "mixed test runs against one deployment",
                source=part.ctx.file_name,
            )
    identity = _identity(parts)
    windows = [(s[0], *_window(s[0], s[1])) for s in settled]
    overlap_note = _check_overlap(windows)
    first = parts[0]
    start = min(w[1] for w in windows)
    end = max(w[2] for w in windows)
    stages = [p.stage for p in parts]
    tools = sorted({st.tool for st in stages})
    combined = ParsedStage(
        tool=tools[0] if len(tools) == 1 else "+".join(tools),
        tool_version=stages[0].tool_version if len(tools) == 1 else None,
        request_rate_rps=_sum([st.request_rate_rps for st in stages]),
        achieved_rate_rps=_sum([st.achieved_rate_rps for st in stages]),
        requests=None
        if any(st.requests is None for st in stages)
        else sum(st.requests or 0 for st in stages),
        duration_s=(end - start).total_seconds(),
        rate_unbounded=any(st.rate_unbounded for st in stages),
    )
    shapes = [st.burstiness for st in stages]
    # The burstiest generator's gamma shape stands for the mix (lower is burstier).
    combined.burstiness = None if None in shapes else min(s or 0.0 for s in shapes)
    # Every generator evenly spaced: each class's arrivals are (replayed per class so).
    combined.constant_arrivals = all(st.constant_arrivals for st in stages)
    combined.cancellation_rate = _weighted_cancellation(stages)
    conc = [st.concurrency for st in stages]
    combined.concurrency = None if None in conc else sum(c or 0 for c in conc)
    behind = [
        f"{p.traffic_class}: {p.stage.client_behind_reason}" for p in parts if p.stage.client_behind
    ]
    if behind:
        combined.client_behind = True
        combined.client_behind_reason = "; ".join(behind)
    throughput = Throughput(
        requests_per_s=_sum([st.throughput.requests_per_s for st in stages]),
        output_tokens_per_s=_sum([st.throughput.output_tokens_per_s for st in stages]),
        total_tokens_per_s=_sum([st.throughput.total_tokens_per_s for st in stages]),
        goodput_requests_per_s=_sum([st.throughput.goodput_requests_per_s for st in stages]),
    )
    missing = sorted({f"{p.traffic_class}: {m}" for p in parts for m in p.stage.missing})
    record_name = slug(name) if name else slug("-".join(["mixed", *classes]))
    try:
        evidence = LoadTestEvidence(
            name=record_name,
            labels={"classes": ",".join(classes)},
            measured_against=MeasuredAgainst(
                workload=first.ctx.workload, provider=first.ctx.provider, plan=first.ctx.plan
            ),
            tool=ToolInfo(name=combined.tool, version=combined.tool_version),
            runtime=known[0][1] if known else None,
            measured_model=identity.model,
            measured_accelerators=identity.accelerator_names,
            raw_file=None,
            measured_at=start,
            offered=offered_for(combined, classes=classes, replicas=settled[0][2]),
            results=Results(
                # Each class's offered prompt lengths stay with the class: the gate holds
                # them against that class's workload p99, not the mix's.
                per_class={
                    p.traffic_class: class_result(p.stage).model_copy(
                        update={"prompt_tokens": p.stage.prompt_tokens}
                    )
                    for p in parts
                },
                throughput=throughput,
            ),
            missing=missing,
            findings=_findings(parts, [overlap_note]),
            provenance=Provenance(
                entry=EntryKind.imported,
                replicas_source="file" if all(s[3] == "file" for s in settled) else "flag",
                files=[source_file(p.ctx, p.stage, p.traffic_class) for p in parts],
            ),
        )
    except ValidationError as exc:
        raise invalid_record(exc, first.ctx.file_name) from exc
    # The mix's time is fixed by the files only when every file fixes its own.
    sources = {p.stage.measured_at_source for p in parts}
    source = (
        MeasuredAtSource.FILE
        if sources == {MeasuredAtSource.FILE}
        else MeasuredAtSource.ARGUMENT
        if MeasuredAtSource.ARGUMENT in sources
        else MeasuredAtSource.FILE_NO_ZONE
    )
    return ImportedStage(
        evidence=evidence,
        findings=evidence.findings or ImportFindings(),
        measured_at_source=source,
        identity=identity,
    )
