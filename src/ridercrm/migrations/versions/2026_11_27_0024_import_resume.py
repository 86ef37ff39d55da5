"""Import runs that can be resumed: the file line an unfinished import goes on from.

An import now commits batch by batch (issue 23); its run record is written with the
first batch and kept up to date by every batch. ``next_line`` is the first line of the
file not imported yet while the run is unfinished, NULL once it has finished (every run
stored before this migration finished).

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("import_runs") as batch:
        batch.add_column(sa.Column("next_line", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("import_runs") as batch:
        batch.drop_column("next_line")
