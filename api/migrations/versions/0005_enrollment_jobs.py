"""enrollment jobs: table enrollment as a background job (issue 47)

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-06 20:45:00.000000
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
        "enrollment_jobs",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("table_id", sa.String(length=64), nullable=False),
        sa.Column("source", sa.String(length=20), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("progress", sa.Float(), nullable=False),
        sa.Column("dice_per_face", sa.JSON(), nullable=False),
        sa.Column("examples", sa.JSON(), nullable=False),
        sa.Column("result_sha256", sa.String(length=64), nullable=True),
        sa.Column("held_in_accuracy", sa.Float(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_by", sa.String(length=100), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["table_id"], ["tables.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("enrollment_jobs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_enrollment_jobs_table_id"), ["table_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("enrollment_jobs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_enrollment_jobs_table_id"))
    op.drop_table("enrollment_jobs")
