"""Registry: immutable record versions, pinned references, hash-chained audit events.

Revision ID: 0001
Revises:
Create Date: 2026-11-30 07:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "records",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("digest", sa.String(71), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(256), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_records"),
        sa.UniqueConstraint("kind", "name", "version", name="uq_records_kind_name_version"),
        sa.UniqueConstraint("kind", "digest", name="uq_records_kind_digest"),
    )
    op.create_index("ix_records_kind_created_at", "records", ["kind", "created_at"])
    op.create_table(
        "record_refs",
        sa.Column("record_id", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(32), nullable=False),
        sa.Column("target_id", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("record_id", "role", name="pk_record_refs"),
        sa.ForeignKeyConstraint(
            ["record_id"], ["records.id"], name="fk_record_refs_record_id_records"
        ),
        sa.ForeignKeyConstraint(
            ["target_id"], ["records.id"], name="fk_record_refs_target_id_records"
        ),
    )
    op.create_index("ix_record_refs_target_id", "record_refs", ["target_id"])
    op.create_table(
        "audit_events",
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("principal", sa.String(256), nullable=False),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("prev_hash", sa.String(71), nullable=False),
        sa.Column("hash", sa.String(71), nullable=False),
        sa.PrimaryKeyConstraint("seq", name="pk_audit_events"),
        sa.UniqueConstraint("hash", name="uq_audit_events_hash"),
    )


def downgrade() -> None:
    op.drop_table("audit_events")
    op.drop_index("ix_record_refs_target_id", table_name="record_refs")
    op.drop_table("record_refs")
    op.drop_index("ix_records_kind_created_at", table_name="records")
    op.drop_table("records")
