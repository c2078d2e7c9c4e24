"""Series owners: every record series belongs to a team (capgate issue 29).

- `series_owners`: one row per assignment of a series (kind, name) to a team, inserted
  once, never changed: the first publisher's claim or an admin's transfer. The row with
  the highest id is the owner now. Audited as every other covered table.

Series that exist before this migration get no row (so no unaudited row is adopted):
their owner is derived where a record states it (a plan's `owner`; a waiver, evidence or
observation takes the team of the plan it names) and otherwise they are unowned until
an admin names a team (`capgate owner transfer`); team-scoped credentials may not
publish to an unowned series (registry.auth.ownership).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-07 13:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "series_owners",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("team", sa.String(256), nullable=False),
        sa.Column("assigned_by", sa.String(256), nullable=False),
        sa.Column("assigned_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
    )
    op.create_index("ix_series_owners_kind_name", "series_owners", ["kind", "name"])


def downgrade() -> None:
    op.drop_index("ix_series_owners_kind_name", table_name="series_owners")
    op.drop_table("series_owners")
