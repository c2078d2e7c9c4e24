"""Reverts: a new version may repeat an earlier version's content, and says which.

Re-submitting the content of an earlier (not the latest) version of a series stores it
again as the next version, so (kind, digest) is no longer unique: the unique constraint
becomes a plain index for digest lookups, and `reverts_version` names the earlier
version a revert repeats.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 22:15:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # SQLite cannot drop a constraint in place: batch mode copies the table (with foreign
    # keys off for the migration, see migrations/env.py); PostgreSQL alters it in place.
    with op.batch_alter_table("records") as batch:
        batch.drop_constraint("uq_records_kind_digest", type_="unique")
        batch.add_column(sa.Column("reverts_version", sa.Integer(), nullable=True))
    op.create_index("ix_records_kind_digest", "records", ["kind", "digest"])


def downgrade() -> None:
    records = sa.table("records", sa.column("reverts_version", sa.Integer()))
    reverts = op.get_bind().scalar(
        sa.select(sa.func.count()).select_from(records).where(records.c.reverts_version.isnot(None))
    )
    if reverts:
        # Versions are never deleted, and schema 0003 cannot hold two versions with one digest.
        raise RuntimeError(
            f"cannot downgrade below schema 0004: {reverts} record version(s) are reverts "
            "that repeat an earlier version's digest, which schema 0003 cannot hold"
        )
    op.drop_index("ix_records_kind_digest", table_name="records")
    with op.batch_alter_table("records") as batch:
        batch.drop_column("reverts_version")
        batch.create_unique_constraint("uq_records_kind_digest", ["kind", "digest"])
