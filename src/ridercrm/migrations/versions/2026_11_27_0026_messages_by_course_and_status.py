"""A course's messages indexed with their status: (asset_id, status) replaces (asset_id).

Superseding a course's queued messages (every change of a course that announces or
reschedules) asks for ``asset_id = ? AND kind IN (...) AND status = 'pending'``. SQLite,
which keeps no statistics here, took ``ix_messages_status_created`` for it, the first
column's equality being all it weighs, and read every pending message of the store for
each changed course: half of a 200-item batch of moves. With both columns in one index
the course's own messages are read.

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-27
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_messages_asset_status", "messages", ["asset_id", "status"])
    op.drop_index("ix_messages_asset_id", table_name="messages")


def downgrade() -> None:
    op.create_index("ix_messages_asset_id", "messages", ["asset_id"])
    op.drop_index("ix_messages_asset_status", table_name="messages")
