"""Notifications: staff digests (a message to a staff address, no person) and the
messages a merge re-points (so an undo points them back).

``messages.person_id`` may be null: a staff digest of tomorrow's sessions goes to a
site's staff address, not to a person; ``messages.data`` keeps what the digest lists. ``person_merges.moved_messages`` keeps, per
merge, {message id: the person it belonged to}.

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TIMESTAMP = sa.DateTime(timezone=True)
OPEN = sa.text("status IN ('pending', 'sending')")


def _messages(*, person_nullable: bool, with_data: bool) -> sa.Table:
    """The messages table as this revision leaves it (or finds it): SQLite rebuilds it
    from this, so nothing is reflected (the reflection of `people`, which it references,
    warns about its expression indexes)."""
    columns: list[sa.schema.SchemaItem] = [
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("key", sa.String(40), nullable=False),
        sa.Column("person_id", sa.String(18), nullable=person_nullable),
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
    ]
    if with_data:
        columns.append(sa.Column("data", JSON, nullable=True))
    table = sa.Table(
        "messages",
        sa.MetaData(),
        *columns,
        sa.ForeignKeyConstraint(["person_id"], ["people.id"], name="fk_messages_person_id_people"),
        sa.PrimaryKeyConstraint("id", name="pk_messages"),
        sa.UniqueConstraint("key", name="uq_messages_key"),
    )
    sa.Index("ix_messages_asset_id", table.c.asset_id)
    sa.Index("ix_messages_person_id", table.c.person_id, table.c.id)
    sa.Index("ix_messages_open_due", table.c.due_at, sqlite_where=OPEN, postgresql_where=OPEN)
    sa.Index("ix_messages_status_created", table.c.status, table.c.created_at)
    return table


def upgrade() -> None:
    with op.batch_alter_table(
        "messages", copy_from=_messages(person_nullable=False, with_data=False)
    ) as batch:
        batch.alter_column("person_id", existing_type=sa.String(18), nullable=True)
        batch.add_column(sa.Column("data", JSON, nullable=True))
    op.add_column("person_merges", sa.Column("moved_messages", JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("person_merges") as batch:
        batch.drop_column("moved_messages")
    # Staff digests have no person: they cannot stay in a table that requires one.
    op.execute("DELETE FROM messages WHERE person_id IS NULL")
    with op.batch_alter_table(
        "messages", copy_from=_messages(person_nullable=True, with_data=True)
    ) as batch:
        batch.drop_column("data")
        batch.alter_column("person_id", existing_type=sa.String(18), nullable=False)
