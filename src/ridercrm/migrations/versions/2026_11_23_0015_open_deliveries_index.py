"""Events: the open deliveries' partial index, in id order, replaces the (status,
next_attempt_at) index. The deliverer's claim walked the primary key from the first
delivery ever made, past every delivered row of the log, to find the open ones (or
sorted all the due ones); it now walks the open deliveries alone.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OPEN = sa.text("status IN ('pending', 'sending')")


def upgrade() -> None:
    op.create_index(
        "ix_webhook_deliveries_open",
        "webhook_deliveries",
        ["id"],
        sqlite_where=OPEN,
        postgresql_where=OPEN,
    )
    op.drop_index("ix_webhook_deliveries_status_due", table_name="webhook_deliveries")


def downgrade() -> None:
    op.create_index(
        "ix_webhook_deliveries_status_due", "webhook_deliveries", ["status", "next_attempt_at"]
    )
    op.drop_index("ix_webhook_deliveries_open", table_name="webhook_deliveries")
