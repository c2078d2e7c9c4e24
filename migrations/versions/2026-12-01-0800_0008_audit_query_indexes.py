"""Audit queries that stay fast as the trail grows.

- `decisions.plan_name`: the plan record's name, copied onto the decision (backfilled
  here) so that listing one plan's decisions newest first walks one index, whatever
  number of versions the plan has.
- One index per filter combination the API offers, each ending in the listing order,
  so every page is a single index range scan at any size: decisions by any of plan
  name or plan version (record id), outcome and principal, ordered by (created_at,
  id); audit events by any of action and principal, ordered by (at, seq). They
  replace the single-column indexes on `decisions.plan_record_id` and
  `decisions.created_at` (the `plan_record_id` ones still serve the foreign key).
- SQLite only: planner statistics for those indexes (`sqlite_stat1`, SQLite's documented
  way to steer its planner). Without statistics SQLite rates an index on two equal
  columns barely better than one on one of them, and with a time range and a cursor it
  may pick the latter: a page of rare decisions then scans every row of the common
  filter. The rows written say each equality column divides the rows by 20, so the
  index covering the most filters wins. A later `ANALYZE` replaces them with measured
  statistics, which keep that order on real data.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 08:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

# Written out rather than imported from registry.storage.models: a migration describes
# the schema of its own revision, whatever the models become later.
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


def _name(table: str, cols: tuple[str, ...]) -> str:
    return f"ix_{table}_{'_'.join(cols) or 'all'}_at"


def _sqlite_statistics() -> list[dict[str, str]]:
    """One `sqlite_stat1` row per listing index: an assumed million rows, each equality
    column dividing them by 20, one row per full key."""
    rows = []
    for table, filters in (("decisions", DECISION_FILTERS), ("audit_events", AUDIT_EVENT_FILTERS)):
        for cols in filters:
            counts = [1_000_000]
            for _ in cols:
                counts.append(max(1, counts[-1] // 20))
            stat = " ".join(str(n) for n in [*counts, 1, 1])
            rows.append({"tbl": table, "idx": _name(table, cols), "stat": stat})
    return rows


def upgrade() -> None:
    with op.batch_alter_table("decisions") as batch:
        batch.add_column(sa.Column("plan_name", sa.String(128), nullable=True))
    op.execute(
        "UPDATE decisions SET plan_name = "
        "(SELECT records.name FROM records WHERE records.id = decisions.plan_record_id)"
    )
    with op.batch_alter_table("decisions") as batch:
        batch.alter_column("plan_name", existing_type=sa.String(128), nullable=False)
    op.drop_index("ix_decisions_plan_record_id", table_name="decisions")
    op.drop_index("ix_decisions_created_at", table_name="decisions")
    for cols in DECISION_FILTERS:
        op.create_index(_name("decisions", cols), "decisions", [*cols, "created_at", "id"])
    for cols in AUDIT_EVENT_FILTERS:
        op.create_index(_name("audit_events", cols), "audit_events", [*cols, "at", "seq"])
    if op.get_bind().dialect.name == "sqlite":
        op.execute("ANALYZE sqlite_schema")  # creates sqlite_stat1, reads no table
        statistics = _sqlite_statistics()
        for row in statistics:
            op.get_bind().execute(
                sa.text("DELETE FROM sqlite_stat1 WHERE tbl = :tbl AND idx = :idx"), row
            )
        op.get_bind().execute(
            sa.text("INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (:tbl, :idx, :stat)"),
            statistics,
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for row in _sqlite_statistics():
            op.get_bind().execute(
                sa.text("DELETE FROM sqlite_stat1 WHERE tbl = :tbl AND idx = :idx"), row
            )
    for cols in AUDIT_EVENT_FILTERS:
        op.drop_index(_name("audit_events", cols), table_name="audit_events")
    for cols in DECISION_FILTERS:
        op.drop_index(_name("decisions", cols), table_name="decisions")
    op.create_index("ix_decisions_created_at", "decisions", ["created_at"])
    op.create_index("ix_decisions_plan_record_id", "decisions", ["plan_record_id"])
    with op.batch_alter_table("decisions") as batch:
        batch.drop_column("plan_name")
