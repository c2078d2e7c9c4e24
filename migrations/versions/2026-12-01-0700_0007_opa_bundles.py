"""OPA bundles: every policy bundle revision capgate served to OPA, kept.

- `policy_bundles`: one row per bundle revision, written the first time capgate serves
  it (`GET /v1/bundles/capgate.tar.gz`): the signed tarball exactly as served, its
  sha256, the id of the key that signed it, when and to whom it was first served. A
  past revision stays retrievable (`GET /v1/bundles/revisions/{revision}.tar.gz`) after
  the policies changed, so an auditor re-evaluates an old decision on its own bundle.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 07:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "policy_bundles",
        sa.Column("revision", sa.String(71), nullable=False),
        sa.Column("tarball", sa.LargeBinary(), nullable=False),
        sa.Column("tarball_sha256", sa.String(71), nullable=False),
        sa.Column("key_id", sa.String(128), nullable=False),
        sa.Column("first_served_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("first_served_to", sa.String(256), nullable=False),
        sa.PrimaryKeyConstraint("revision", name="pk_policy_bundles"),
    )


def downgrade() -> None:
    op.drop_table("policy_bundles")
