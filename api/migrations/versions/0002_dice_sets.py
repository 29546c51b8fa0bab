"""dice sets: the fairness watch per table (issue 49)

Revision ID: 0002_dice_sets
Revises: 0001
Create Date: 2026-12-06 17:55:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_dice_sets"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "dice_sets",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("table_id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("per_position", sa.Boolean(), nullable=False),
        sa.Column("in_play_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("out_of_play_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("state", sa.JSON(), nullable=False),
        sa.Column("registered_by", sa.String(length=100), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["table_id"], ["tables.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("dice_sets", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_dice_sets_table_id"), ["table_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("dice_sets", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_dice_sets_table_id"))
    op.drop_table("dice_sets")
