"""Record service: submit, get and list versions of every record kind.

Services take a session (reads) or a WriteContext (writes) and never commit: the unit
of work in registry.storage.database owns the transaction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, cast

from pydantic import BaseModel, ValidationError
from sqlalchemy.orm import Session

from registry.audit.chain import as_utc
from registry.auth.identity import Identity
from registry.digest import canonical_json, content_digest
from registry.errors import FieldProblem, InvalidInput, NotFound, Tampered, Unavailable
from registry.records.common import Metadata
from registry.records.evidence import EntryKind, LoadTestEvidence
from registry.records.hooks import Stored, Submission, installed
from registry.records.kinds import RecordKind
from registry.records.references import parse_ref, pinned
from registry.records.views import Page, RecordView, SeriesView, SubmitResult
from registry.storage.database import WriteContext
from registry.storage.models import RecordRow
from registry.storage.repository import EvidenceLifecycleRepository, RecordRepository

MAX_PAGE = 500


@dataclass(frozen=True)
class RefField:
    """A field of a record that references another record."""

    path: tuple[str, ...]
    role: str
    target: RecordKind


REF_FIELDS: dict[RecordKind, tuple[RefField, ...]] = {
    RecordKind.workload: (),
    RecordKind.provider: (),
    RecordKind.waiver: (RefField(("granted_for",), "plan", RecordKind.plan),),
    RecordKind.plan: (
        RefField(("workload",), "workload", RecordKind.workload),
        RefField(("provider",), "provider", RecordKind.provider),
    ),
    # What production did under a plan: drift is judged against the workload it pins.
    RecordKind.observation: (
        RefField(("plan",), "plan", RecordKind.plan),
        RefField(("workload",), "workload", RecordKind.workload),
    ),
    RecordKind.evidence: (
        RefField(("measured_against", "workload"), "workload", RecordKind.workload),
        RefField(("measured_against", "provider"), "provider", RecordKind.provider),
        RefField(("measured_against", "plan"), "plan", RecordKind.plan),
    ),
}


def _get_path(data: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = data
    for part in path:
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _set_path(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for part in path[:-1]:
        data = data[part]
    data[path[-1]] = value


def resolve(repo: RecordRepository, kind: RecordKind, ref_text: str, *, loc: str) -> RecordRow:
    ref = parse_ref(ref_text, loc=loc)
    if ref.digest is not None:
        row = repo.by_digest(kind.value, ref.digest)
    elif ref.version is not None:
        row = repo.by_version(kind.value, cast(str, ref.name), ref.version)
    else:
        row = repo.latest(kind.value, cast(str, ref.name))
    if row is None:
        raise NotFound(f"no {kind.value} record {ref}", details={"loc": loc, "ref": str(ref)})
    return row


def to_view(row: RecordRow, references: dict[str, RecordRow]) -> RecordView:
    return RecordView(
        kind=RecordKind(row.kind),
        name=row.name,
        version=row.version,
        ref=pinned(row.name, row.version),
        digest=row.digest,
        created_at=as_utc(row.created_at),
        created_by=row.created_by,
        references={role: pinned(t.name, t.version) for role, t in sorted(references.items())},
        content=_content(row),
        reverts=None if row.reverts_version is None else pinned(row.name, row.reverts_version),
    )


def check_intact(row: RecordRow) -> None:
    """Raise Tampered unless the stored content still hashes to the stored digest.

    Every read of a record's content goes through here (`to_view` for show and GET,
    `load_model` for the gate, the planner, staleness and submission checks): content
    edited in the database is never used under the digest it was registered with. A
    digest edited along with it is caught against the audit trail instead
    (registry.audit.integrity).
    """
    from registry.audit.rows import text_intact

    if not text_intact(row.content, row.digest):
        ref = pinned(row.name, row.version)
        raise Tampered(
            f"stored {row.kind} record {ref} was altered: its content does not hash to its "
            f"digest {row.digest}",
            details={"table": "records", "id": row.id, "ref": ref, "digest": row.digest},
        )


def _content(row: RecordRow) -> dict[str, Any]:
    check_intact(row)
    try:
        content: dict[str, Any] = json.loads(row.content)
    except json.JSONDecodeError as exc:
        raise Unavailable(
            f"stored {row.kind} record {pinned(row.name, row.version)} cannot be read: {exc.msg}"
        ) from None
    return content


def load_model(row: RecordRow) -> BaseModel:
    """The stored content validated back into its schema; unreadable or altered content
    is an error."""
    check_intact(row)
    try:
        return RecordKind(row.kind).schema.model_validate_json(row.content)
    except ValidationError as exc:
        raise Unavailable(
            f"stored {row.kind} record {pinned(row.name, row.version)} cannot be read: "
            f"{exc.errors()[0]['msg']}"
        ) from None


# ---- the verbs ---------------------------------------------------------------------


def _refuse_claimed_provenance(record: LoadTestEvidence) -> None:
    """A record submitted by hand cannot claim what only the import path can know.

    `provenance.entry: imported` tells policy that the figures were parsed from the raw
    file's bytes by capgate; a hand-written record saying so would make a typed-in claim
    look checked, so only `capgate evidence import` (POST /v1/evidence/import) sets it.
    """
    provenance = record.provenance
    only_import = (
        "is set only by `capgate evidence import` (POST /v1/evidence/import), which reads "
        "the raw file's bytes"
    )
    problems: list[FieldProblem] = []
    if provenance.entry is EntryKind.imported:
        problems.append(
            FieldProblem(
                "provenance.entry",
                f"'imported' {only_import}; a record submitted by hand is 'declared' "
                "(leave provenance out)",
            )
        )
    if provenance.files:
        problems.append(FieldProblem("provenance.files", f"{only_import}; leave it out"))
    if provenance.replicas_source != "declared":
        problems.append(
            FieldProblem(
                "provenance.replicas_source",
                f"{provenance.replicas_source!r} {only_import}; a record submitted by hand "
                "states replicas as 'declared'",
            )
        )
    if problems:
        raise InvalidInput("invalid evidence record", problems=problems)


def submit(
    ctx: WriteContext,
    *,
    kind: RecordKind,
    record: Metadata,
    via_import: bool = False,
    identity: Identity | None = None,
    team: str | None = None,
) -> SubmitResult:
    """Store `record` as the next version of its series, or return the identical latest.

    References are resolved and pinned to `name@vN` before the digest is taken, so a
    plan that says `workload: chat-assistant` means the version that was latest now.
    Content identical to the latest version is that version (`created` False); content
    identical to an earlier version is a revert: stored again as the next version, so the
    name resolves to it, with `reverts` naming the earlier version.
    `via_import` is True only on the import path (registry.importers.service), the one
    writer allowed to state `provenance.entry: imported`. `identity` is who publishes
    (None: the local user of an embedded registry) and `team` the owner team asked for
    a new series (registry.auth.ownership).

    What the features above records check and do on a submission (waiver rules,
    ownership, withdrawn evidence, laundered raw files, staleness, observation review)
    runs as the hooks registry.wiring installed (registry.records.hooks), phase by
    phase in their order, in this same unit of work.
    """
    hooks = installed()
    submission = Submission(kind=kind, record=record, identity=identity, team=team)
    if kind is RecordKind.evidence and not via_import:
        _refuse_claimed_provenance(cast(LoadTestEvidence, record))
    for hook in hooks:
        hook.check_new(ctx, submission)
    repo = RecordRepository(ctx.session)
    content = record.model_dump(mode="json")
    targets = submission.targets
    for ref_field in REF_FIELDS[kind]:
        ref_text = _get_path(content, ref_field.path)
        if ref_text is None:
            continue
        loc = ".".join(ref_field.path)
        try:
            row = resolve(repo, ref_field.target, ref_text, loc=loc)
        except NotFound as exc:
            raise InvalidInput(
                f"invalid {kind.value} record",
                problems=[FieldProblem(loc, exc.message)],
            ) from None
        targets[ref_field.role] = row
        _set_path(content, ref_field.path, pinned(row.name, row.version))
    for hook in hooks:
        hook.check_resolved(ctx, submission)
    from registry.records.checks import cross_check

    pinned_record = kind.schema.model_validate(content)
    cross_check(kind, pinned_record, {role: load_model(r) for role, r in targets.items()})

    digest = content_digest(content)
    latest = repo.latest(kind.value, record.name)
    if latest is not None and latest.digest == digest:
        refs = repo.references([latest.id])[latest.id]
        return SubmitResult(created=False, record=to_view(latest, refs))
    # The content of an earlier version: a revert of the earliest version holding this
    # digest (the one a `sha256:` reference resolves to; the digest covers the name, so it
    # is a version of this series). Two racing reverts compute the same next version: the
    # loser is re-run, finds its content latest and returns it unchanged.
    reverted = repo.by_digest(kind.value, digest)
    submission.pinned = pinned_record
    submission.reverted = reverted
    for hook in hooks:
        hook.check_before_write(ctx, submission)
    row = RecordRow(
        kind=kind.value,
        name=record.name,
        version=(latest.version if latest is not None else 0) + 1,
        digest=digest,
        content=canonical_json(content),
        created_at=ctx.now,
        created_by=ctx.principal,
        reverts_version=reverted.version if reverted is not None else None,
    )
    ref_ids = {role: target.id for role, target in targets.items()}
    repo.add(row, ref_ids)
    raw_digests: list[str] = []
    if kind is RecordKind.evidence:
        raw_digests = sorted(cast(LoadTestEvidence, pinned_record).raw_digests())
        EvidenceLifecycleRepository(ctx.session).add_raw_digests(row.id, raw_digests)
    from registry.audit.rows import ROWS_KEY, record_entry, settle

    settle(ctx.session, row)
    stored = Stored(row=row)
    for hook in hooks:
        hook.after_write(ctx, submission, stored)
    view = to_view(row, targets)
    ctx.record_event(
        f"{kind.value}.submit",
        {
            "kind": kind.value,
            "ref": view.ref,
            "digest": digest,
            "references": {role: target.digest for role, target in sorted(targets.items())},
            **stored.event_fields,
            "reverts": view.reverts,
            ROWS_KEY: [
                record_entry(row, refs=ref_ids, raw_digests=raw_digests),
                *stored.audit_rows,
            ],
        },
    )
    # After the submission's own event: they are about the version just stored.
    for event_type, payload in stored.later_events:
        ctx.record_event(event_type, payload)
    return SubmitResult(created=True, record=view)


def get(session: Session, *, kind: RecordKind, ref: str) -> RecordView:
    repo = RecordRepository(session)
    row = resolve(repo, kind, ref, loc="ref")
    return to_view(row, repo.references([row.id])[row.id])


def get_model(session: Session, *, kind: RecordKind, ref: str) -> tuple[RecordView, BaseModel]:
    view = get(session, kind=kind, ref=ref)
    return view, kind.schema.model_validate(view.content)


def _page_bounds(limit: int, offset: int) -> tuple[int, int]:
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidInput(
            "invalid page", problems=[FieldProblem("limit", f"must be between 1 and {MAX_PAGE}")]
        )
    if offset < 0:
        raise InvalidInput("invalid page", problems=[FieldProblem("offset", "must be >= 0")])
    return limit, offset


def list_series(
    session: Session, *, kind: RecordKind, limit: int = 50, offset: int = 0
) -> Page[SeriesView]:
    limit, offset = _page_bounds(limit, offset)
    repo = RecordRepository(session)
    items = [
        SeriesView(
            kind=kind,
            name=row.name,
            latest_version=row.version,
            latest_ref=pinned(row.name, row.version),
            latest_digest=row.digest,
            updated_at=as_utc(row.created_at),
        )
        for row in repo.latest_of_series(kind.value, limit=limit, offset=offset)
    ]
    return Page[SeriesView](
        items=items, total=repo.count_series(kind.value), limit=limit, offset=offset
    )


def list_versions(
    session: Session, *, kind: RecordKind, name: str, limit: int = 50, offset: int = 0
) -> Page[RecordView]:
    limit, offset = _page_bounds(limit, offset)
    repo = RecordRepository(session)
    total = repo.max_version(kind.value, name)
    if total == 0:
        raise NotFound(f"no {kind.value} named {name!r}")
    rows = repo.versions(kind.value, name, limit=limit, offset=offset)
    refs = repo.references([r.id for r in rows])
    return Page[RecordView](
        items=[to_view(r, refs[r.id]) for r in rows], total=total, limit=limit, offset=offset
    )
