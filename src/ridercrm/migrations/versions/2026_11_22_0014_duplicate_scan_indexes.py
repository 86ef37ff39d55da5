"""Duplicates: a first scan reads each person's stored keys; re-checks find pairs by either
id; a write marks the person for the re-check in its own row (people.duplicate_touched_at),
replacing the duplicate_touched table (its waiting marks are carried over).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_person_keys_person_id", "person_keys", ["person_id"])
    op.create_index("ix_duplicate_pairs_other_id", "duplicate_pairs", ["other_id"])
    op.add_column("people", sa.Column("duplicate_touched_at", sa.DateTime(timezone=True)))
    op.execute(
        "UPDATE people SET duplicate_touched_at = (SELECT max(t.touched_at)"
        " FROM duplicate_touched AS t WHERE t.person_id = people.id)"
        " WHERE id IN (SELECT person_id FROM duplicate_touched)"
    )
    op.create_index("ix_people_duplicate_touched_at", "people", ["duplicate_touched_at"])
    op.drop_table("duplicate_touched")


def downgrade() -> None:
    op.create_table(
        "duplicate_touched",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("person_id", sa.String(18), nullable=False),
        sa.Column("touched_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_duplicate_touched"),
    )
    op.execute(
        "INSERT INTO duplicate_touched (person_id, touched_at) SELECT id, duplicate_touched_at"
        " FROM people WHERE duplicate_touched_at IS NOT NULL"
        " AND duplicate_touched_at >= (SELECT min(started_at) FROM duplicate_scans)"
    )
    op.drop_index("ix_people_duplicate_touched_at", table_name="people")
    op.drop_column("people", "duplicate_touched_at")  # SQLite 3.35+: ALTER TABLE DROP COLUMN
    op.drop_index("ix_duplicate_pairs_other_id", table_name="duplicate_pairs")
    op.drop_index("ix_person_keys_person_id", table_name="person_keys")
