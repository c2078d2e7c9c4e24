"""Integrity beyond the event chain: recomputations keyed by content, rows adopted.

- `recomputations.inputs_key`: the digest over the plan's, workload's and provider's
  content digests. A stored recomputation is found by it (as well as by the plan's row
  id), so a row id pointed at another plan cannot serve a recomputation of other
  content. Existing rows are backfilled from the records they were computed for.
- From this schema on, every write's audit event records the rows it stored
  (registry.audit.rows) and `capgate audit verify` checks every row against them. Rows
  written before have no such entry: this migration appends `audit.adopt` events to
  the chain recording them as they are now, so they verify from here on. (Adoption
  vouches for nothing earlier than the upgrade: a row altered before it is adopted as
  altered; record contents are still checked against their own digests.)

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 06:00:00
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

ADOPT_ACTION = "audit.adopt"
ADOPT_PRINCIPAL = "capgate db upgrade"
ENTRIES_PER_EVENT = 500

_AT = sa.DateTime(timezone=True)

records = sa.table(
    "records",
    sa.column("id", sa.Integer()),
    sa.column("kind", sa.String()),
    sa.column("name", sa.String()),
    sa.column("version", sa.Integer()),
    sa.column("digest", sa.String()),
    sa.column("created_at", _AT),
    sa.column("created_by", sa.String()),
    sa.column("reverts_version", sa.Integer()),
)
record_refs = sa.table(
    "record_refs",
    sa.column("record_id", sa.Integer()),
    sa.column("role", sa.String()),
    sa.column("target_id", sa.Integer()),
)
raw_digests = sa.table(
    "evidence_raw_digests", sa.column("record_id", sa.Integer()), sa.column("sha256", sa.String())
)
recomputations = sa.table(
    "recomputations",
    sa.column("id", sa.Integer()),
    sa.column("plan_record_id", sa.Integer()),
    sa.column("inputs_key", sa.String()),
    sa.column("planner_version", sa.String()),
    sa.column("calibration_key", sa.String()),
    sa.column("seed", sa.Integer()),
    sa.column("digest", sa.String()),
    sa.column("created_at", _AT),
    sa.column("created_by", sa.String()),
)
decisions = sa.table(
    "decisions",
    sa.column("id", sa.String()),
    sa.column("plan_record_id", sa.Integer()),
    sa.column("outcome", sa.String()),
    sa.column("engine", sa.String()),
    sa.column("bundle_revision", sa.String()),
    sa.column("input_digest", sa.String()),
    sa.column("input", sa.Text()),
    sa.column("violations", sa.Text()),
    sa.column("waivers", sa.Text()),
    sa.column("warnings", sa.Text()),
    sa.column("error", sa.Text()),
    sa.column("principal", sa.String()),
    sa.column("created_at", _AT),
)
staleness = sa.table(
    "staleness",
    sa.column("id", sa.Integer()),
    sa.column("evidence_record_id", sa.Integer()),
    sa.column("cause_record_id", sa.Integer()),
    sa.column("measured_record_id", sa.Integer()),
    sa.column("changes", sa.Text()),
    sa.column("detected_at", _AT),
)
withdrawals = sa.table(
    "evidence_withdrawals",
    sa.column("id", sa.Integer()),
    sa.column("evidence_record_id", sa.Integer()),
    sa.column("reason", sa.Text()),
    sa.column("withdrawn_by", sa.String()),
    sa.column("withdrawn_at", _AT),
)
approvals = sa.table(
    "waiver_approvals",
    sa.column("id", sa.Integer()),
    sa.column("waiver_record_id", sa.Integer()),
    sa.column("approved_by", sa.String()),
    sa.column("approved_at", _AT),
    sa.column("comment", sa.Text()),
)
audit_events = sa.table(
    "audit_events",
    sa.column("seq", sa.Integer()),
    sa.column("at", _AT),
    sa.column("principal", sa.String()),
    sa.column("action", sa.String()),
    sa.column("payload", sa.Text()),
    sa.column("prev_hash", sa.String()),
    sa.column("hash", sa.String()),
)


def _inputs_key(plan: str, workload: str, provider: str) -> str:
    """registry.sizing.service.inputs_key, over the digests as stored."""
    from registry.digest import content_digest

    return content_digest({"plan": plan, "workload": workload, "provider": provider})


def _backfill_inputs_keys(connection: sa.Connection) -> None:
    workload_ref, provider_ref = record_refs.alias("wr"), record_refs.alias("pr")
    plan, workload, provider = records.alias("p"), records.alias("w"), records.alias("v")
    query = (
        sa.select(recomputations.c.id, plan.c.digest, workload.c.digest, provider.c.digest)
        .join(plan, plan.c.id == recomputations.c.plan_record_id)
        .join(
            workload_ref,
            (workload_ref.c.record_id == plan.c.id) & (workload_ref.c.role == "workload"),
        )
        .join(workload, workload.c.id == workload_ref.c.target_id)
        .join(
            provider_ref,
            (provider_ref.c.record_id == plan.c.id) & (provider_ref.c.role == "provider"),
        )
        .join(provider, provider.c.id == provider_ref.c.target_id)
    )
    for row_id, plan_digest, workload_digest, provider_digest in connection.execute(query).all():
        connection.execute(
            recomputations.update()
            .where(recomputations.c.id == row_id)
            .values(inputs_key=_inputs_key(plan_digest, workload_digest, provider_digest))
        )
    missing = connection.scalar(
        sa.select(sa.func.count())
        .select_from(recomputations)
        .where(recomputations.c.inputs_key.is_(None))
    )
    if missing:
        raise RuntimeError(
            f"cannot upgrade to schema 0006: {missing} recomputation(s) belong to a plan "
            "without both its workload and provider references"
        )


def _existing_entries(connection: sa.Connection) -> list[dict[str, Any]]:
    from registry.audit import rows as R

    refs: dict[int, dict[str, int]] = {}
    for record_id, role, target_id in connection.execute(sa.select(record_refs)).all():
        refs.setdefault(record_id, {})[role] = target_id
    raws: dict[int, list[str]] = {}
    for record_id, digest in connection.execute(sa.select(raw_digests)).all():
        raws.setdefault(record_id, []).append(digest)
    entries = [
        R.record_entry(row, refs=refs.get(row.id, {}), raw_digests=raws.get(row.id, []))
        for row in connection.execute(sa.select(records).order_by(records.c.id))
    ]
    entries += [
        R.recomputation_entry(r)
        for r in connection.execute(sa.select(recomputations).order_by(recomputations.c.id))
    ]
    entries += [
        R.decision_entry(r)
        for r in connection.execute(
            sa.select(decisions).order_by(decisions.c.created_at, decisions.c.id)
        )
    ]
    entries += [
        R.staleness_entry(r)
        for r in connection.execute(sa.select(staleness).order_by(staleness.c.id))
    ]
    entries += [
        R.withdrawal_entry(r)
        for r in connection.execute(sa.select(withdrawals).order_by(withdrawals.c.id))
    ]
    entries += [
        R.waiver_approval_entry(r)
        for r in connection.execute(sa.select(approvals).order_by(approvals.c.id))
    ]
    return entries


def _adopt_existing_rows(connection: sa.Connection) -> None:
    """Append `audit.adopt` events recording every covered row that exists now."""
    from registry.audit.chain import GENESIS, event_body, event_hash
    from registry.digest import canonical_json

    entries = _existing_entries(connection)
    if not entries:
        return
    last = connection.execute(
        sa.select(audit_events.c.seq, audit_events.c.hash)
        .order_by(audit_events.c.seq.desc())
        .limit(1)
    ).first()
    seq, prev = (last[0], last[1]) if last else (0, GENESIS)
    at = datetime.now(UTC)
    for start in range(0, len(entries), ENTRIES_PER_EVENT):
        seq += 1
        payload = {
            "schema": revision,
            "reason": "rows written before audit events recorded them, adopted as they are",
            "rows": entries[start : start + ENTRIES_PER_EVENT],
        }
        digest = event_hash(prev, event_body(seq, at, ADOPT_PRINCIPAL, ADOPT_ACTION, payload))
        connection.execute(
            audit_events.insert().values(
                seq=seq,
                at=at,
                principal=ADOPT_PRINCIPAL,
                action=ADOPT_ACTION,
                payload=canonical_json(payload),
                prev_hash=prev,
                hash=digest,
            )
        )
        prev = digest


def upgrade() -> None:
    connection = op.get_bind()
    with op.batch_alter_table("recomputations") as batch:
        batch.add_column(sa.Column("inputs_key", sa.String(71), nullable=True))
    _backfill_inputs_keys(connection)
    with op.batch_alter_table("recomputations") as batch:
        batch.alter_column("inputs_key", existing_type=sa.String(71), nullable=False)
        batch.drop_constraint("uq_recomputations_inputs", type_="unique")
        batch.create_unique_constraint(
            "uq_recomputations_inputs",
            ["plan_record_id", "inputs_key", "planner_version", "calibration_key", "seed"],
        )
    _adopt_existing_rows(connection)


def downgrade() -> None:
    # The adoption events stay: the chain is append-only, and older code ignores `rows`.
    connection = op.get_bind()
    duplicated = connection.scalar(
        sa.select(sa.func.count()).select_from(
            sa.select(recomputations.c.plan_record_id)
            .group_by(
                recomputations.c.plan_record_id,
                recomputations.c.planner_version,
                recomputations.c.calibration_key,
                recomputations.c.seed,
            )
            .having(sa.func.count() > 1)
            .subquery()
        )
    )
    if duplicated:
        raise RuntimeError(
            f"cannot downgrade below schema 0006: {duplicated} plan version(s) have "
            "recomputations of different contents, which schema 0005 cannot tell apart"
        )
    with op.batch_alter_table("recomputations") as batch:
        batch.drop_constraint("uq_recomputations_inputs", type_="unique")
        batch.drop_column("inputs_key")
        batch.create_unique_constraint(
            "uq_recomputations_inputs",
            ["plan_record_id", "planner_version", "calibration_key", "seed"],
        )
