"""Events: running totals of the deliverers' work (deliveries by outcome, endpoints
disabled by reason), so every server worker's /metrics serves the same counters.

The totals start at zero at this upgrade: earlier outcomes were counted only in the
memory of the process that delivered them.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "webhook_totals",
        sa.Column("metric", sa.String(40), nullable=False),
        sa.Column("label", sa.String(40), nullable=False),
        sa.Column("total", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("metric", "label", name="pk_webhook_totals"),
    )


def downgrade() -> None:
    op.drop_table("webhook_totals")
