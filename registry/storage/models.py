"""ORM models. The schema itself only ever changes through Alembic migrations.

Relationships are not mapped on purpose: every query is explicit in a repository, so
nothing loads lazily behind a caller's back.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# Named constraints so that migrations on SQLite (batch mode) and PostgreSQL agree.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class RecordRow(Base):
    """One immutable version of a record: rows are inserted, never updated or deleted."""

    __tablename__ = "records"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(128))
    version: Mapped[int] = mapped_column(Integer)
    digest: Mapped[str] = mapped_column(String(71))
    # Canonical JSON text, byte for byte what the digest was computed over.
    content: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    created_by: Mapped[str] = mapped_column(String(256))
    # A revert: the earlier version of the same series whose content (and digest) this
    # version repeats, so that it is the latest again; None for any other version.
    reverts_version: Mapped[int | None] = mapped_column(Integer, nullable=True)

    __table_args__ = (
        # The race guard: two writers computing the same next version cannot both commit.
        UniqueConstraint("kind", "name", "version", name="uq_records_kind_name_version"),
        # Not unique: a revert repeats an earlier version's digest (migration 0004).
        Index("ix_records_kind_digest", "kind", "digest"),
        Index("ix_records_kind_created_at", "kind", "created_at"),
    )


class RecordRefRow(Base):
    """A pinned reference from one record version to another (plan -> workload, ...)."""

    __tablename__ = "record_refs"

    record_id: Mapped[int] = mapped_column(ForeignKey("records.id"), primary_key=True)
    role: Mapped[str] = mapped_column(String(32), primary_key=True)
    target_id: Mapped[int] = mapped_column(ForeignKey("records.id"), index=True)


# The equality filters each listing offers, in every combination (see the indexes).
AUDIT_EVENT_FILTERS: tuple[tuple[str, ...], ...] = (
    (),
    ("action",),
    ("principal",),
    ("action", "principal"),
)
DECISION_FILTERS: tuple[tuple[str, ...], ...] = tuple(
    (*subject, *rest)
    for subject in ((), ("plan_name",), ("plan_record_id",))
    for rest in ((), ("outcome",), ("principal",), ("outcome", "principal"))
)


class AuditEventRow(Base):
    """Hash-chained audit trail: each event's hash covers the previous event's hash."""

    __tablename__ = "audit_events"

    # Assigned as previous + 1 inside the writing transaction; the primary key makes two
    # concurrent writers unable to fork the chain (one of them retries).
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    principal: Mapped[str] = mapped_column(String(256))
    action: Mapped[str] = mapped_column(String(64))
    payload: Mapped[str] = mapped_column(Text)
    prev_hash: Mapped[str] = mapped_column(String(71))
    hash: Mapped[str] = mapped_column(String(71), unique=True)

    # Listing is newest first by (at, seq), filtered by any of action and principal and a
    # time range: one index per filter combination ends in the order, so a page is one
    # index range scan at any trail size (migration 0008).
    __table_args__ = tuple(
        Index(f"ix_audit_events_{'_'.join(cols) or 'all'}_at", *cols, "at", "seq")
        for cols in AUDIT_EVENT_FILTERS
    )


class RecomputationRow(Base):
    """A planner recomputation of one plan version, by one planner version and calibration."""

    __tablename__ = "recomputations"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    plan_record_id: Mapped[int] = mapped_column(ForeignKey("records.id"), index=True)
    planner_version: Mapped[str] = mapped_column(String(32))
    # Digest over the evidence used to calibrate (or "none"): a new calibration is a new row.
    calibration_key: Mapped[str] = mapped_column(String(71))
    seed: Mapped[int] = mapped_column(Integer)
    result: Mapped[str] = mapped_column(Text)
    digest: Mapped[str] = mapped_column(String(71))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    created_by: Mapped[str] = mapped_column(String(256))
    # Digest over the plan's, workload's and provider's content digests (migration 0006):
    # the lookup is by content, so a row id pointed elsewhere serves nothing.
    inputs_key: Mapped[str] = mapped_column(String(71))

    __table_args__ = (
        UniqueConstraint(
            "plan_record_id",
            "inputs_key",
            "planner_version",
            "calibration_key",
            "seed",
            name="uq_recomputations_inputs",
        ),
    )


class DecisionRow(Base):
    """A gate decision: immutable, with the digests of everything it was decided on."""

    __tablename__ = "decisions"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    plan_record_id: Mapped[int] = mapped_column(ForeignKey("records.id"))
    # The plan record's name, copied so that listing by plan needs no join (a join
    # cannot walk one index in decision order across a plan's versions). `audit verify`
    # checks it against the record.
    plan_name: Mapped[str] = mapped_column(String(128))
    outcome: Mapped[str] = mapped_column(String(8))
    engine: Mapped[str] = mapped_column(String(32))
    bundle_revision: Mapped[str] = mapped_column(String(71))
    # The approved policy release (name@vN) decided under; None on an ungoverned registry.
    policy_release: Mapped[str | None] = mapped_column(String(140), nullable=True)
    input_digest: Mapped[str] = mapped_column(String(71))
    # The full input document, violations, waivers and warnings, as canonical JSON.
    input: Mapped[str] = mapped_column(Text)
    violations: Mapped[str] = mapped_column(Text)
    waivers: Mapped[str] = mapped_column(Text)
    warnings: Mapped[str] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    principal: Mapped[str] = mapped_column(String(256))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    # Newest first by (created_at, id) under any combination of the API's filters: plan
    # name or plan version (its record id), outcome, principal, and a time range. One
    # index per combination, each ending in the order (migration 0008).
    __table_args__ = tuple(
        Index(f"ix_decisions_{'_'.join(cols) or 'all'}_at", *cols, "created_at", "id")
        for cols in DECISION_FILTERS
    )


class StalenessRow(Base):
    """Evidence made stale by a material change: when, and which change."""

    __tablename__ = "staleness"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    evidence_record_id: Mapped[int] = mapped_column(ForeignKey("records.id"), index=True)
    cause_record_id: Mapped[int] = mapped_column(ForeignKey("records.id"))
    # The version the evidence was measured against (or the evidence itself, replaced).
    measured_record_id: Mapped[int] = mapped_column(ForeignKey("records.id"))
    changes: Mapped[str] = mapped_column(Text)
    detected_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    __table_args__ = (
        UniqueConstraint("evidence_record_id", "cause_record_id", name="uq_staleness_cause"),
    )


class EvidenceRawDigestRow(Base):
    """A raw result file digest an evidence version claims to be measured from.

    Written with the evidence version (one row per digest of `raw_digests()`), so the
    anti-laundering check finds every earlier record measured from the same bytes by an
    index lookup instead of reading every record's JSON.
    """

    __tablename__ = "evidence_raw_digests"

    record_id: Mapped[int] = mapped_column(ForeignKey("records.id"), primary_key=True)
    sha256: Mapped[str] = mapped_column(String(71), primary_key=True, index=True)


class WithdrawalRow(Base):
    """One evidence version withdrawn: who, when and why. Inserted once, never removed."""

    __tablename__ = "evidence_withdrawals"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    # Unique: a version is withdrawn at most once (two racing withdrawals cannot both land).
    evidence_record_id: Mapped[int] = mapped_column(ForeignKey("records.id"), unique=True)
    reason: Mapped[str] = mapped_column(Text)
    withdrawn_by: Mapped[str] = mapped_column(String(256))
    withdrawn_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class ApiTokenRow(Base):
    """A static API token: only a hash of its secret is kept (migration 0005)."""

    __tablename__ = "api_tokens"

    # The public half of the token (cgt_<id>_<secret>): found by id, then the secret's
    # hash compared in constant time.
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    secret_hash: Mapped[str] = mapped_column(String(71))
    subject: Mapped[str] = mapped_column(String(256))
    roles: Mapped[str] = mapped_column(Text)  # canonical JSON list
    teams: Mapped[str] = mapped_column(Text)  # canonical JSON list
    description: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_by: Mapped[str] = mapped_column(String(256))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    revoked_by: Mapped[str | None] = mapped_column(String(256), nullable=True)


class WaiverApprovalRow(Base):
    """The second pair of eyes on one waiver version: inserted once, never removed."""

    __tablename__ = "waiver_approvals"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    waiver_record_id: Mapped[int] = mapped_column(ForeignKey("records.id"), unique=True)
    approved_by: Mapped[str] = mapped_column(String(256))
    approved_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    comment: Mapped[str | None] = mapped_column(Text, nullable=True)


class PolicyReleaseRow(Base):
    """One version of a policy release: the bundle's files as released (migration 0009)."""

    __tablename__ = "policy_releases"
    __table_args__ = (UniqueConstraint("name", "version", name="uq_policy_releases_name_version"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(128))
    version: Mapped[int] = mapped_column(Integer)
    bundle_revision: Mapped[str] = mapped_column(String(71), unique=True)
    files: Mapped[str] = mapped_column(Text)  # canonical JSON: file name -> text
    notes: Mapped[str] = mapped_column(Text)
    submitted_by: Mapped[str] = mapped_column(String(256))
    submitted_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class PolicyReleaseApprovalRow(Base):
    """The second pair of eyes on one policy release: inserted once, never removed."""

    __tablename__ = "policy_release_approvals"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    release_id: Mapped[int] = mapped_column(ForeignKey("policy_releases.id"), unique=True)
    approved_by: Mapped[str] = mapped_column(String(256))
    approved_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    comment: Mapped[str | None] = mapped_column(Text, nullable=True)


class DecisionAttestationRow(Base):
    """A decision as a signed in-toto statement in a DSSE envelope (JSON text)."""

    __tablename__ = "decision_attestations"

    decision_id: Mapped[str] = mapped_column(ForeignKey("decisions.id"), primary_key=True)
    key_id: Mapped[str] = mapped_column(String(128))
    envelope: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class PolicyDecisionLogRow(Base):
    """One decision log entry an OPA sidecar sent (keyed by OPA's decision id)."""

    __tablename__ = "policy_decision_logs"

    decision_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    received_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    received_from: Mapped[str] = mapped_column(String(256))
    bundle_revision: Mapped[str | None] = mapped_column(String(128), nullable=True)
    path: Mapped[str | None] = mapped_column(String(256), nullable=True)
    entry: Mapped[str] = mapped_column(Text)
    digest: Mapped[str] = mapped_column(String(71))


class PolicyBundleRow(Base):
    """A bundle revision capgate served to OPA, kept as served (migration 0007)."""

    __tablename__ = "policy_bundles"

    revision: Mapped[str] = mapped_column(String(71), primary_key=True)
    tarball: Mapped[bytes] = mapped_column(LargeBinary)
    tarball_sha256: Mapped[str] = mapped_column(String(71))
    key_id: Mapped[str] = mapped_column(String(128))
    first_served_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    first_served_to: Mapped[str] = mapped_column(String(256))


class SeriesOwnerRow(Base):
    """Who owns a record series, from when: inserted once, never changed (migration 0010).

    Each row assigns the series (kind, name) to a team: its first publisher's claim, or
    an admin's transfer; the row with the highest id is the owner now, the rest its
    history.
    """

    __tablename__ = "series_owners"
    __table_args__ = (Index("ix_series_owners_kind_name", "kind", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(32))
    name: Mapped[str] = mapped_column(String(128))
    team: Mapped[str] = mapped_column(String(256))
    assigned_by: Mapped[str] = mapped_column(String(256))
    assigned_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # "first publisher", or the admin's stated reason for a transfer.
    reason: Mapped[str] = mapped_column(Text)
