"""What the audit trail records of each row a write stores, and the digest over it.

Every write's audit event carries, under `rows`, one entry per row it inserted:

    {"table": "decisions", "key": "3f2a...", "digest": "sha256:...", "fields": {...}}

`fields` are the row's stored columns (long text columns as their sha256, `*_sha256`),
`digest` is the sha256 of their canonical JSON, and `key` is the row's identity in its
table (the primary key; for `waiver_approvals`, the waiver version it approves, of
which there is one). `capgate audit verify` recomputes the same fields from every
stored row and names each row that no event recorded, each recorded row that is gone,
and each field that differs from what its event recorded (registry.audit.integrity).

The same functions run on ORM rows (the writing services), on rows read back for
verification, and on plain SQL rows (migration 0006 adopting the rows written before
events recorded them): anything with the columns as attributes.

Another writer adds its rows the same way, in the event of the same transaction:

    row = WaiverApprovalRow(...); ctx.session.add(row)
    settle(ctx.session, row)
    ctx.record_event("waiver.approve", {..., ROWS_KEY: [waiver_approval_entry(row)]})
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import inspect
from sqlalchemy.orm import Session

from registry.audit.chain import as_utc
from registry.digest import content_digest, sha256_digest

ROWS_KEY = "rows"

RECORDS = "records"
DECISIONS = "decisions"
STALENESS = "staleness"
WITHDRAWALS = "evidence_withdrawals"
WAIVER_APPROVALS = "waiver_approvals"
RECOMPUTATIONS = "recomputations"
POLICY_RELEASES = "policy_releases"
POLICY_RELEASE_APPROVALS = "policy_release_approvals"
SERIES_OWNERS = "series_owners"
COVERED_TABLES = (
    RECORDS,
    DECISIONS,
    STALENESS,
    WITHDRAWALS,
    WAIVER_APPROVALS,
    RECOMPUTATIONS,
    POLICY_RELEASES,
    POLICY_RELEASE_APPROVALS,
    SERIES_OWNERS,
)

# The field that groups a table's rows by what they are about, so that one decision can
# ask "every staleness row of evidence 7" of the ledger without walking it.
SUBJECT_FIELDS = {
    STALENESS: "evidence_record_id",
    WITHDRAWALS: "evidence_record_id",
    WAIVER_APPROVALS: "waiver_record_id",
}


def _at(value: datetime) -> str:
    return as_utc(value).isoformat()


def _sha(text: str | None) -> str | None:
    return None if text is None else sha256_digest(text.encode("utf-8"))


def text_intact(text: str, digest: str) -> bool:
    """Whether stored canonical JSON text still hashes to the digest stored beside it."""
    return sha256_digest(text.encode("utf-8")) == digest


# ---- the fields of each table ------------------------------------------------------------


def record_fields(
    row: Any, *, refs: Mapping[str, int], raw_digests: Iterable[str]
) -> dict[str, Any]:
    """A record version: its identity, digest (the content is checked against it on
    every read), provenance, pinned references (record_refs) and, for evidence, the raw
    file digests it claims (evidence_raw_digests)."""
    return {
        "kind": row.kind,
        "name": row.name,
        "version": row.version,
        "digest": row.digest,
        "created_at": _at(row.created_at),
        "created_by": row.created_by,
        "reverts_version": row.reverts_version,
        "refs": {role: int(target) for role, target in sorted(refs.items())},
        "raw_digests": sorted(set(raw_digests)),
    }


def decision_fields(row: Any) -> dict[str, Any]:
    fields = {
        "plan_record_id": row.plan_record_id,
        "outcome": row.outcome,
        "engine": row.engine,
        "bundle_revision": row.bundle_revision,
        "input_digest": row.input_digest,
        "input_sha256": _sha(row.input),
        "violations_sha256": _sha(row.violations),
        "waivers_sha256": _sha(row.waivers),
        "warnings_sha256": _sha(row.warnings),
        "error_sha256": _sha(row.error),
        "principal": row.principal,
        "created_at": _at(row.created_at),
    }
    # Present only from migration 0009 on, and only when set: the entries events
    # recorded for earlier decisions keep their digests.
    release = getattr(row, "policy_release", None)
    if release is not None:
        fields["policy_release"] = release
    return fields


def staleness_fields(row: Any) -> dict[str, Any]:
    return {
        "evidence_record_id": row.evidence_record_id,
        "cause_record_id": row.cause_record_id,
        "measured_record_id": row.measured_record_id,
        "changes_sha256": _sha(row.changes),
        "detected_at": _at(row.detected_at),
    }


def withdrawal_fields(row: Any) -> dict[str, Any]:
    return {
        "evidence_record_id": row.evidence_record_id,
        "reason_sha256": _sha(row.reason),
        "withdrawn_by": row.withdrawn_by,
        "withdrawn_at": _at(row.withdrawn_at),
    }


def waiver_approval_fields(row: Any) -> dict[str, Any]:
    return {
        "waiver_record_id": row.waiver_record_id,
        "approved_by": row.approved_by,
        "approved_at": _at(row.approved_at),
        "comment_sha256": _sha(row.comment),
    }


def policy_release_fields(row: Any) -> dict[str, Any]:
    return {
        "name": row.name,
        "version": row.version,
        "bundle_revision": row.bundle_revision,
        "files_sha256": _sha(row.files),
        "notes_sha256": _sha(row.notes),
        "submitted_by": row.submitted_by,
        "submitted_at": _at(row.submitted_at),
    }


def policy_release_approval_fields(row: Any) -> dict[str, Any]:
    return {
        "release_id": row.release_id,
        "approved_by": row.approved_by,
        "approved_at": _at(row.approved_at),
        "comment_sha256": _sha(row.comment),
    }


def series_owner_fields(row: Any) -> dict[str, Any]:
    """Who owns a series from when (registry.auth.ownership): a claim or a transfer."""
    return {
        "kind": row.kind,
        "name": row.name,
        "team": row.team,
        "assigned_by": row.assigned_by,
        "assigned_at": _at(row.assigned_at),
        "reason_sha256": _sha(row.reason),
    }


def recomputation_fields(row: Any) -> dict[str, Any]:
    """The result itself is checked against `digest` on every read."""
    return {
        "plan_record_id": row.plan_record_id,
        "inputs_key": row.inputs_key,
        "planner_version": row.planner_version,
        "calibration_key": row.calibration_key,
        "seed": row.seed,
        "digest": row.digest,
        "created_at": _at(row.created_at),
        "created_by": row.created_by,
    }


# ---- entries -----------------------------------------------------------------------------


def entry(table: str, key: int | str, fields: dict[str, Any]) -> dict[str, Any]:
    return {"table": table, "key": str(key), "digest": content_digest(fields), "fields": fields}


def record_entry(
    row: Any, *, refs: Mapping[str, int], raw_digests: Iterable[str] = ()
) -> dict[str, Any]:
    return entry(RECORDS, row.id, record_fields(row, refs=refs, raw_digests=raw_digests))


def decision_entry(row: Any) -> dict[str, Any]:
    return entry(DECISIONS, row.id, decision_fields(row))


def staleness_entry(row: Any) -> dict[str, Any]:
    return entry(STALENESS, row.id, staleness_fields(row))


def withdrawal_entry(row: Any) -> dict[str, Any]:
    return entry(WITHDRAWALS, row.id, withdrawal_fields(row))


def waiver_approval_entry(row: Any) -> dict[str, Any]:
    """The entry a waiver approval's event carries (keyed by the waiver version)."""
    return entry(WAIVER_APPROVALS, row.waiver_record_id, waiver_approval_fields(row))


def policy_release_entry(row: Any) -> dict[str, Any]:
    return entry(POLICY_RELEASES, row.id, policy_release_fields(row))


def policy_release_approval_entry(row: Any) -> dict[str, Any]:
    """Keyed by the release it approves, of which there is one approval."""
    return entry(POLICY_RELEASE_APPROVALS, row.release_id, policy_release_approval_fields(row))


def series_owner_entry(row: Any) -> dict[str, Any]:
    return entry(SERIES_OWNERS, row.id, series_owner_fields(row))


def recomputation_entry(row: Any) -> dict[str, Any]:
    return entry(RECOMPUTATIONS, row.id, recomputation_fields(row))


def settle(session: Session, row: Any) -> None:
    """Flush `row` and read back its timestamp columns as stored.

    The entry must describe what verification will read, and a database may keep a
    timestamp other than the Python value handed to it (SQLite drops the zone).
    """
    session.flush()
    if session.get_bind().dialect.name == "postgresql" and _instants_kept(row):
        return  # nothing the database keeps differently: one read back (a round trip) saved
    session.refresh(row)


def _instants_kept(row: Any) -> bool:
    """True when PostgreSQL stores every column of `row` as handed to it: a `timestamptz`
    keeps an aware instant to the microsecond (a naive one is read in the session's
    zone), and the models have no server-side defaults (registry.storage.models)."""
    return all(
        not isinstance(value, datetime) or value.tzinfo is not None
        for value in (getattr(row, a.key) for a in inspect(row).mapper.column_attrs)
    )
