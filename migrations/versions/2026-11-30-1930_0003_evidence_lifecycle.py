"""Evidence raw-file digests (anti-laundering) and evidence withdrawals (lifecycle).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 19:30:00
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def _raw_digests(content: str) -> set[str]:
    """What LoadTestEvidence.raw_digests() returns, read from stored JSON (no app import:
    a migration must keep working when the schema classes change later)."""
    try:
        data: Any = json.loads(content)
    except json.JSONDecodeError:
        return set()
    if not isinstance(data, dict):
        return set()
    digests: set[str] = set()
    raw = data.get("raw_file")
    if isinstance(raw, dict) and isinstance(raw.get("sha256"), str):
        digests.add(raw["sha256"])
    provenance = data.get("provenance")
    files = provenance.get("files") if isinstance(provenance, dict) else None
    for item in files if isinstance(files, list) else []:
        if isinstance(item, dict) and isinstance(item.get("sha256"), str):
            digests.add(item["sha256"])
    return digests


def upgrade() -> None:
    digests_table = op.create_table(
        "evidence_raw_digests",
        sa.Column("record_id", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(71), nullable=False),
        sa.PrimaryKeyConstraint("record_id", "sha256", name="pk_evidence_raw_digests"),
        sa.ForeignKeyConstraint(
            ["record_id"], ["records.id"], name="fk_evidence_raw_digests_record_id_records"
        ),
    )
    op.create_index("ix_evidence_raw_digests_sha256", "evidence_raw_digests", ["sha256"])
    op.create_table(
        "evidence_withdrawals",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("evidence_record_id", sa.Integer(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("withdrawn_by", sa.String(256), nullable=False),
        sa.Column("withdrawn_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_evidence_withdrawals"),
        sa.ForeignKeyConstraint(
            ["evidence_record_id"],
            ["records.id"],
            name="fk_evidence_withdrawals_evidence_record_id_records",
        ),
        sa.UniqueConstraint(
            "evidence_record_id", name="uq_evidence_withdrawals_evidence_record_id"
        ),
    )
    # Evidence stored before this revision gets its digests too, or a file imported
    # yesterday could be laundered today.
    records = sa.table(
        "records",
        sa.column("id", sa.Integer()),
        sa.column("kind", sa.String()),
        sa.column("content", sa.Text()),
    )
    connection = op.get_bind()
    rows = [
        {"record_id": record_id, "sha256": digest}
        for record_id, content in connection.execute(
            sa.select(records.c.id, records.c.content).where(records.c.kind == "evidence")
        )
        for digest in sorted(_raw_digests(content))
    ]
    if rows:
        op.bulk_insert(digests_table, rows)


def downgrade() -> None:
    op.drop_table("evidence_withdrawals")
    op.drop_index("ix_evidence_raw_digests_sha256", table_name="evidence_raw_digests")
    op.drop_table("evidence_raw_digests")
