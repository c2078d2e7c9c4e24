"""Policy releases: the bundle as a record, approved by a second person.

- `policy_releases`: one row per release version (name, version), inserted once: the
  bundle's revision (the content digest every decision records), its files as canonical
  JSON (the modules and data.json exactly as released), notes, who submitted it and
  when. A revision is released once (unique): the same files under two names would make
  "the release a decision ran under" ambiguous.
- `policy_release_approvals`: the second pair of eyes, one row per approved release,
  inserted once, never removed (as waiver_approvals).
- `decisions.policy_release`: the approved release (name@vN) a decision ran under; null
  for decisions on a registry no release governed yet (all earlier ones).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03 19:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "policy_releases",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("bundle_revision", sa.String(71), nullable=False),
        sa.Column("files", sa.Text, nullable=False),
        sa.Column("notes", sa.Text, nullable=False),
        sa.Column("submitted_by", sa.String(256), nullable=False),
        sa.Column("submitted_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("name", "version", name="uq_policy_releases_name_version"),
        sa.UniqueConstraint("bundle_revision", name="uq_policy_releases_bundle_revision"),
    )
    op.create_table(
        "policy_release_approvals",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("release_id", sa.Integer, nullable=False),
        sa.Column("approved_by", sa.String(256), nullable=False),
        sa.Column("approved_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("comment", sa.Text, nullable=True),
        sa.ForeignKeyConstraint(
            ["release_id"],
            ["policy_releases.id"],
            name="fk_policy_release_approvals_release_id_policy_releases",
        ),
        sa.UniqueConstraint("release_id", name="uq_policy_release_approvals_release_id"),
    )


    with op.batch_alter_table("decisions") as batch:
        batch.add_column(sa.Column("policy_release", sa.String(140), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("decisions") as batch:
        batch.drop_column("policy_release")
    op.drop_table("policy_release_approvals")
    op.drop_table("policy_releases")
