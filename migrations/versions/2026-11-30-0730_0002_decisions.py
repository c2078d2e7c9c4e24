"""Planner recomputations, gate decisions and evidence staleness.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 07:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "recomputations",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("plan_record_id", sa.Integer(), nullable=False),
        sa.Column("planner_version", sa.String(32), nullable=False),
        sa.Column("calibration_key", sa.String(71), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("result", sa.Text(), nullable=False),
        sa.Column("digest", sa.String(71), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(256), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_recomputations"),
        sa.ForeignKeyConstraint(
            ["plan_record_id"], ["records.id"], name="fk_recomputations_plan_record_id_records"
        ),
        sa.UniqueConstraint(
            "plan_record_id",
            "planner_version",
            "calibration_key",
            "seed",
            name="uq_recomputations_inputs",
        ),
    )
    op.create_index("ix_recomputations_plan_record_id", "recomputations", ["plan_record_id"])
    op.create_table(
        "decisions",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("plan_record_id", sa.Integer(), nullable=False),
        sa.Column("outcome", sa.String(8), nullable=False),
        sa.Column("engine", sa.String(32), nullable=False),
        sa.Column("bundle_revision", sa.String(71), nullable=False),
        sa.Column("input_digest", sa.String(71), nullable=False),
        sa.Column("input", sa.Text(), nullable=False),
        sa.Column("violations", sa.Text(), nullable=False),
        sa.Column("waivers", sa.Text(), nullable=False),
        sa.Column("warnings", sa.Text(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("principal", sa.String(256), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_decisions"),
        sa.ForeignKeyConstraint(
            ["plan_record_id"], ["records.id"], name="fk_decisions_plan_record_id_records"
        ),
    )
    op.create_index("ix_decisions_plan_record_id", "decisions", ["plan_record_id"])
    op.create_index("ix_decisions_created_at", "decisions", ["created_at"])
    op.create_table(
        "staleness",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("evidence_record_id", sa.Integer(), nullable=False),
        sa.Column("cause_record_id", sa.Integer(), nullable=False),
        sa.Column("measured_record_id", sa.Integer(), nullable=False),
        sa.Column("changes", sa.Text(), nullable=False),
        sa.Column("detected_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_staleness"),
        sa.ForeignKeyConstraint(
            ["evidence_record_id"],
            ["records.id"],
            name="fk_staleness_evidence_record_id_records",
        ),
        sa.ForeignKeyConstraint(
            ["cause_record_id"], ["records.id"], name="fk_staleness_cause_record_id_records"
        ),
        sa.ForeignKeyConstraint(
            ["measured_record_id"],
            ["records.id"],
            name="fk_staleness_measured_record_id_records",
        ),
        sa.UniqueConstraint("evidence_record_id", "cause_record_id", name="uq_staleness_cause"),
    )
    op.create_index("ix_staleness_evidence_record_id", "staleness", ["evidence_record_id"])


def downgrade() -> None:
    op.drop_index("ix_staleness_evidence_record_id", table_name="staleness")
    op.drop_table("staleness")
    op.drop_index("ix_decisions_created_at", table_name="decisions")
    op.drop_index("ix_decisions_plan_record_id", table_name="decisions")
    op.drop_table("decisions")
    op.drop_index("ix_recomputations_plan_record_id", table_name="recomputations")
    op.drop_table("recomputations")
