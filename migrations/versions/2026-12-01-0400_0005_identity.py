"""Identity and integrity: API tokens, waiver approvals, decision attestations, OPA logs.

- `api_tokens`: static API tokens, stored as a hash of their secret, scoped by roles
  and teams, expiring and revocable.
- `waiver_approvals`: four eyes on waivers; a waiver applies only once a different
  principal with the approver role approved it.
- `decision_attestations`: each gate decision as a signed in-toto statement (DSSE).
- `policy_decision_logs`: decision logs that OPA sidecars send to capgate.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 04:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("secret_hash", sa.String(71), nullable=False),
        sa.Column("subject", sa.String(256), nullable=False),
        sa.Column("roles", sa.Text(), nullable=False),
        sa.Column("teams", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("created_by", sa.String(256), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_by", sa.String(256), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_api_tokens"),
    )
    op.create_table(
        "waiver_approvals",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("waiver_record_id", sa.Integer(), nullable=False),
        sa.Column("approved_by", sa.String(256), nullable=False),
        sa.Column("approved_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["waiver_record_id"],
            ["records.id"],
            name="fk_waiver_approvals_waiver_record_id_records",
        ),
        sa.UniqueConstraint("waiver_record_id", name="uq_waiver_approvals_waiver_record_id"),
    )
    op.create_table(
        "decision_attestations",
        sa.Column("decision_id", sa.String(36), nullable=False),
        sa.Column("key_id", sa.String(128), nullable=False),
        sa.Column("envelope", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("decision_id", name="pk_decision_attestations"),
        sa.ForeignKeyConstraint(
            ["decision_id"], ["decisions.id"], name="fk_decision_attestations_decision_id_decisions"
        ),
    )
    op.create_table(
        "policy_decision_logs",
        sa.Column("decision_id", sa.String(64), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("received_from", sa.String(256), nullable=False),
        sa.Column("bundle_revision", sa.String(128), nullable=True),
        sa.Column("path", sa.String(256), nullable=True),
        sa.Column("entry", sa.Text(), nullable=False),
        sa.Column("digest", sa.String(71), nullable=False),
        sa.PrimaryKeyConstraint("decision_id", name="pk_policy_decision_logs"),
    )
    op.create_index("ix_policy_decision_logs_received_at", "policy_decision_logs", ["received_at"])


def downgrade() -> None:
    op.drop_index("ix_policy_decision_logs_received_at", table_name="policy_decision_logs")
    op.drop_table("policy_decision_logs")
    op.drop_table("decision_attestations")
    op.drop_table("waiver_approvals")
    op.drop_table("api_tokens")
