"""alert keys: a live alert sent again (a worker's spool replayed) is the same alert (issue 50)

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-06 22:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("client_key", sa.String(length=64), nullable=True))
        batch_op.create_index("ix_alerts_client_key", ["client_key"], unique=True)


def downgrade() -> None:
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.drop_index("ix_alerts_client_key")
        batch_op.drop_column("client_key")
