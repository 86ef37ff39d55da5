"""Duplicates: a first scan reads each person's stored keys; re-checks find pairs by either id.

Revision ID: 0013
Revises: 0011
Create Date: 2026-11-22
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0013"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_person_keys_person_id", "person_keys", ["person_id"])
    op.create_index("ix_duplicate_pairs_other_id", "duplicate_pairs", ["other_id"])


def downgrade() -> None:
    op.drop_index("ix_duplicate_pairs_other_id", table_name="duplicate_pairs")
    op.drop_index("ix_person_keys_person_id", table_name="person_keys")
