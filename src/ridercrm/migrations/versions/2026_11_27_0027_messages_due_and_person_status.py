"""Messages indexed for the sender's poll and for a person's queued messages.

SQLite keeps no statistics here and weighs only how many of an index's leading columns
an equality matches; the status index (status, created_at) won every tie:

- the sender's poll (``status IN ('pending', 'sending') AND due_at <= ?``, every second)
  read every open message, reminders due in months included, and sorted them: the
  partial index by due time was never chosen. (status, due_at) reads the due ones only;
- stopping a person's reminders (``person_id = ? AND kind = ? AND status = ?``, the stop
  link and the staff's person page) read every pending message of the store.
  (person_id, status, id) matches two of its equalities, where (person_id, id) matched one.

Two indexes replaced by two: a message's insert costs what it did.

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-27
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_messages_status_due", "messages", ["status", "due_at"])
    op.drop_index("ix_messages_status_created", table_name="messages")
    op.create_index("ix_messages_person_status", "messages", ["person_id", "status", "id"])
    op.drop_index("ix_messages_person_id", table_name="messages")


def downgrade() -> None:
    op.create_index("ix_messages_person_id", "messages", ["person_id", "id"])
    op.drop_index("ix_messages_person_status", table_name="messages")
    op.create_index("ix_messages_status_created", "messages", ["status", "created_at"])
    op.drop_index("ix_messages_status_due", table_name="messages")
