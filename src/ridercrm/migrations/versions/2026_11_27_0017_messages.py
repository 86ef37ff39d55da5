"""Notifications: the messages outbox, edited templates, reminder stops and the
stop-link secret.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)
OPEN = sa.text("status IN ('pending', 'sending')")


def upgrade() -> None:
    op.create_table(
        "messages",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("key", sa.String(40), nullable=False),
        sa.Column("person_id", sa.String(18), nullable=False),
        sa.Column("channel", sa.String(10), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("asset_id", sa.String(18), nullable=True),
        sa.Column("product_id", sa.String(18), nullable=True),
        sa.Column("location", sa.String(40), nullable=True),
        sa.Column("course_datetime", sa.String(19), nullable=True),
        sa.Column("course_date_end", sa.String(19), nullable=True),
        sa.Column("booking_number", sa.String(80), nullable=True),
        sa.Column("sequence", sa.Integer(), nullable=False),
        sa.Column("detail", sa.String(40), nullable=True),
        sa.Column("due_at", TIMESTAMP, nullable=False),
        sa.Column("status", sa.String(10), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("lease_until", TIMESTAMP, nullable=True),
        sa.Column("reason", sa.String(500), nullable=True),
        sa.Column("recipient", sa.String(254), nullable=True),
        sa.Column("subject", sa.String(500), nullable=True),
        sa.Column("body_text", sa.Text(), nullable=True),
        sa.Column("body_html", sa.Text(), nullable=True),
        sa.Column("segments", sa.Integer(), nullable=True),
        sa.Column("provider_id", sa.String(200), nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("sent_at", TIMESTAMP, nullable=True),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(["person_id"], ["people.id"], name="fk_messages_person_id_people"),
        sa.PrimaryKeyConstraint("id", name="pk_messages"),
        sa.UniqueConstraint("key", name="uq_messages_key"),
    )
    op.create_index("ix_messages_asset_id", "messages", ["asset_id"])
    op.create_index("ix_messages_person_id", "messages", ["person_id", "id"])
    op.create_index(
        "ix_messages_open_due", "messages", ["due_at"], sqlite_where=OPEN, postgresql_where=OPEN
    )
    op.create_index("ix_messages_status_created", "messages", ["status", "created_at"])
    op.create_table(
        "message_templates",
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("channel", sa.String(10), nullable=False),
        sa.Column("subject", sa.String(500), nullable=False),
        sa.Column("body_text", sa.Text(), nullable=False),
        sa.Column("body_html", sa.Text(), nullable=False),
        sa.Column("updated_by", sa.String(120), nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("kind", "channel", name="pk_message_templates"),
    )
    op.create_table(
        "reminder_stops",
        sa.Column("person_id", sa.String(18), nullable=False),
        sa.Column("stopped_by", sa.String(120), nullable=False),
        sa.Column("stopped_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["person_id"], ["people.id"], name="fk_reminder_stops_person_id_people"
        ),
        sa.PrimaryKeyConstraint("person_id", name="pk_reminder_stops"),
    )
    op.create_table(
        "notification_secrets",
        sa.Column("name", sa.String(40), nullable=False),
        sa.Column("value", sa.String(200), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_notification_secrets"),
    )


def downgrade() -> None:
    op.drop_table("notification_secrets")
    op.drop_table("reminder_stops")
    op.drop_table("message_templates")
    op.drop_index("ix_messages_status_created", table_name="messages")
    op.drop_index("ix_messages_open_due", table_name="messages")
    op.drop_index("ix_messages_person_id", table_name="messages")
    op.drop_index("ix_messages_asset_id", table_name="messages")
    op.drop_table("messages")
