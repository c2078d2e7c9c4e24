"""Anti-laundering: raw bytes measured against one version do not become fresh evidence
for a materially different version of the same record.

Without this, a result file whose evidence went stale when the workload changed could be
imported again against the new workload version and come back fresh, although nothing was
measured against that version. Each evidence version stores the raw digests it claims
(`LoadTestEvidence.raw_digests()`: `raw_file` and `provenance.files`, imported and
declared records alike); a new version claiming a digest that an earlier evidence version
claims (withdrawn or not: withdrawing does not change what the file was measured against)
must pin the same versions, or versions that differ from the earlier pins only
immaterially (the same rules that stale evidence, so a description-only change can still
be re-pinned). Different names are not compared: the rules compare versions of one
record. Runs inside the submitting transaction.

The measured time is held too: bytes measured at one time cannot become younger evidence.
A new version's ``measured_at`` may be no later than the end of the run the first claim of
those bytes describes (its ``measured_at`` plus ``offered.duration_s``) plus
``SAME_RUN_SLACK``; an earlier time only makes evidence older and is not refused. The
claims compared are those of the same run: for an imported stage of a multi-run file
(``labels.stage``) the first claim of that stage (or, if none, of the whole file); for
anything else, the first claim of every run in the file (a declared record's labels are its
author's word and cannot narrow the comparison). The import service keeps to this before
it submits: a re-imported file keeps the first import's time of the same run, whatever
``--measured-at`` says (``first_measurement``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from registry.errors import FieldProblem, InvalidInput
from registry.records.evidence import EntryKind, LoadTestEvidence
from registry.records.references import pinned
from registry.staleness.rules import StalenessThresholds, material_changes
from registry.staleness.thresholds import load_thresholds
from registry.storage.database import WriteContext
from registry.storage.models import RecordRow
from registry.storage.repository import EvidenceLifecycleRepository, RecordRepository

# The pins compared, in the order a refusal names them.
ROLES = ("workload", "provider", "plan")

# Two times of one run may be this much further apart than the run lasted (a start given
# where another statement has the end, a time rounded to the minute). The importers allow a
# --measured-at this close to a file's own time (registry.importers.measured_at.MEASURED_AT_SLACK).
SAME_RUN_SLACK = timedelta(minutes=5)


def stage_of(record: LoadTestEvidence) -> str | None:
    """The run of a multi-run file a record stands for (``labels.stage``); None for one run."""
    return record.labels.get("stage")


def run_end(record: LoadTestEvidence) -> datetime:
    """When the run a record describes ended, as far as it says: start plus its duration."""
    return record.measured_at + timedelta(seconds=record.offered.duration_s or 0.0)


def _same_run(
    record: LoadTestEvidence, earlier: Sequence[tuple[RecordRow, LoadTestEvidence]]
) -> list[tuple[RecordRow, LoadTestEvidence]]:
    """The earlier claims that describe the run `record` describes (see the module doc)."""
    stage = stage_of(record)
    if record.provenance.entry is not EntryKind.imported or stage is None:
        return list(earlier)
    same = [(row, e) for row, e in earlier if stage_of(e) == stage]
    return same or [(row, e) for row, e in earlier if stage_of(e) is None]


def _claims(
    found: Sequence[tuple[str, RecordRow]], load: Callable[[RecordRow], Any]
) -> list[tuple[RecordRow, LoadTestEvidence]]:
    """Each evidence version of `found` (digest, row) once, with its record, oldest first."""
    rows: dict[int, RecordRow] = {}
    for _, row in found:
        rows.setdefault(row.id, row)
    return [(row, load(row)) for row in sorted(rows.values(), key=lambda r: r.id)]


def first_measurement(
    ctx: WriteContext, record: LoadTestEvidence
) -> tuple[RecordRow, LoadTestEvidence] | None:
    """The oldest stored evidence version measured from the same bytes for the same run
    (same raw digest, same ``labels.stage``), whose time a re-import keeps; None if none."""
    from registry.records.service import load_model

    found = EvidenceLifecycleRepository(ctx.session).measured_from(sorted(record.raw_digests()))
    claims = _claims(found, load_model)
    stage = stage_of(record)
    same = [(row, e) for row, e in claims if stage_of(e) == stage]
    return same[0] if same else None


def _time_problem(
    record: LoadTestEvidence, earlier: Sequence[tuple[RecordRow, LoadTestEvidence]]
) -> FieldProblem | None:
    """A problem when `record` claims a later time than the same bytes' earlier claims allow."""
    # The first claim of each run: later versions of a run cannot move its time (each within
    # the slack of the one before would add up).
    firsts: dict[str | None, tuple[RecordRow, LoadTestEvidence]] = {}
    for row, claim in _same_run(record, earlier):
        firsts.setdefault(stage_of(claim), (row, claim))
    if not firsts:
        return None
    row, latest = max(firsts.values(), key=lambda first: run_end(first[1]))
    bound = run_end(latest) + SAME_RUN_SLACK
    if record.measured_at <= bound:
        return None
    digest = sorted(record.raw_digests() & latest.raw_digests())[0]
    _, file_name = _digest_loc(record, digest)
    ref = pinned(row.name, row.version)
    lasted = latest.offered.duration_s
    run = f"a {lasted:g} s run" if lasted else "no duration stated"
    return FieldProblem(
        "measured_at",
        f"{record.measured_at.isoformat()} is later than {file_name} ({digest}) can "
        f"support: evidence {ref} states those bytes were measured at "
        f"{latest.measured_at.isoformat()} ({run}), so at most {bound.isoformat()} (its end "
        f"plus {SAME_RUN_SLACK.total_seconds() / 60:g} min); the same bytes cannot be newer "
        "evidence: run the test again and import that result",
    )


def _digest_loc(record: LoadTestEvidence, digest: str) -> tuple[str, str]:
    """Where the record states `digest`, and the file name it gives for it."""
    if record.raw_file is not None and record.raw_file.sha256 == digest:
        return "raw_file.sha256", record.raw_file.file_name
    for index, source in enumerate(record.provenance.files):
        if source.sha256 == digest:
            return f"provenance.files.{index}.sha256", source.file_name
    return "raw_file.sha256", "?"  # pragma: no cover - digests come from the record itself


def check_raw_digests(
    ctx: WriteContext,
    *,
    record: LoadTestEvidence,
    targets: dict[str, RecordRow],
    limits: StalenessThresholds | None = None,
) -> None:
    """Refuse `record` (pinned to `targets` by role) when one of its raw digests was
    measured against a version that a target's version changed materially."""
    from registry.records.service import load_model

    digests = sorted(record.raw_digests())
    found = EvidenceLifecycleRepository(ctx.session).measured_from(digests)
    if not found:
        return
    earlier_ids = [row.id for _, row in found]
    pins = RecordRepository(ctx.session).references(earlier_ids)
    withdrawn = EvidenceLifecycleRepository(ctx.session).withdrawals_of(earlier_ids)
    models: dict[int, Any] = {}

    def model(row: RecordRow) -> Any:
        if row.id not in models:
            models[row.id] = load_model(row)
        return models[row.id]

    problems: list[FieldProblem] = []
    late = _time_problem(record, _claims(found, model))
    if late is not None:
        problems.append(late)
    refused: set[str] = set()
    for digest, earlier in found:
        if digest in refused:
            continue  # one line per digest: the earliest record that rules it out
        for role in ROLES:
            old, new = pins[earlier.id].get(role), targets.get(role)
            if old is None or new is None or old.name != new.name or old.id == new.id:
                continue
            limits = limits or load_thresholds()
            changes = material_changes(model(old), model(new), limits)
            if not changes:
                continue  # an immaterial change: re-pinning the same measurement is honest
            loc, file_name = _digest_loc(record, digest)
            more = f" (+{len(changes) - 1} more)" if len(changes) > 1 else ""
            old_ref, new_ref = pinned(old.name, old.version), pinned(new.name, new.version)
            earlier_ref = pinned(earlier.name, earlier.version)
            if earlier.id in withdrawn:
                earlier_ref += ", withdrawn"
            problems.append(
                FieldProblem(
                    loc,
                    f"{file_name} ({digest}) was measured against {role} {old_ref} "
                    f"(evidence {earlier_ref}); {new_ref} changed "
                    f"materially: {changes[0].describe()}{more}; the same bytes cannot be evidence "
                    f"for {new_ref}: run the test against it and import that result",
                )
            )
            refused.add(digest)
            break
    if problems:
        only_late = late is not None and len(problems) == 1
        raise InvalidInput(
            "raw file measured earlier than this record states"
            if only_late
            else "raw file already measured against a materially different version",
            problems=problems,
        )
