"""table learning: how often a table refits from its confirmed dice, and where it last did (issue 56)

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-07 16:30:00.000000
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
        "table_learning",
        sa.Column("table_id", sa.String(length=64), nullable=False),
        sa.Column("learn_every_dice", sa.Integer(), nullable=False),
        sa.Column("dice_at_last_refit", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["table_id"], ["tables.id"]),
        sa.PrimaryKeyConstraint("table_id"),
    )


def downgrade() -> None:
    op.drop_table("table_learning")
