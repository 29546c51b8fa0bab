"""console decisions: a person's decision of a roll the reader left to a person, with its labelled boxes
(issue 56)

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-07 16:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "console_decisions",
        sa.Column("roll_id", sa.String(length=100), nullable=False),
        sa.Column("dealer_roll_id", sa.String(length=100), nullable=False),
        sa.Column("table_id", sa.String(length=64), nullable=False),
        sa.Column("round_id", sa.Integer(), nullable=False),
        sa.Column("read_id", sa.String(length=64), nullable=False),
        sa.Column("evidence_sha256", sa.String(length=64), nullable=True),
        sa.Column("verdict", sa.String(length=20), nullable=False),
        sa.Column("rule", sa.String(length=40), nullable=True),
        sa.Column("faces", sa.JSON(), nullable=False),
        sa.Column("boxes", sa.JSON(), nullable=False),
        sa.Column("request_sha256", sa.String(length=64), nullable=False),
        sa.Column("mismatch", sa.Boolean(), nullable=False),
        sa.Column("decided_by", sa.String(length=100), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("acknowledged_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("acknowledged_by", sa.String(length=100), nullable=True),
        sa.ForeignKeyConstraint(["table_id"], ["tables.id"]),
        sa.PrimaryKeyConstraint("roll_id"),
        sa.UniqueConstraint("dealer_roll_id"),
    )
    with op.batch_alter_table("console_decisions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_console_decisions_table_id"), ["table_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("console_decisions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_console_decisions_table_id"))
    op.drop_table("console_decisions")
