"""Compact blocking keys: person_keys keeps one B-tree, rebuilt in key order.

The index on person_keys.person_id goes (whoever needs a person's keys computes them
from the person's identity), and every stored person's keys are recomputed with the
application's own key function, a batch of people at a time, into a scratch table,
then written into person_keys in key order: a table filled by years of writes in hash
order had pages left half empty by their splits, a rebuilt one has them full.
docs/decisions.md, "Compact blocking keys".

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 5000  # people read, and their keys written, at a time
SCRATCH = "person_keys_rebuild"


def upgrade() -> None:
    op.drop_index("ix_person_keys_person_id", table_name="person_keys")
    _rebuild_keys()


def _rebuild_keys() -> None:
    # The application's own key function: keys must be exactly what every write stores.
    from ridercrm.people.identity import IDENTITY_COLUMNS
    from ridercrm.people.index import identity_of, key_rows

    bind = op.get_bind()
    # Typed as the model types them: SQLite returns a date as text to an untyped column.
    types = {"date_of_birth": sa.Date()}
    people = sa.table(
        "people", *(sa.column(name, types.get(name)) for name in ("id", *IDENTITY_COLUMNS))
    )
    op.create_table(
        SCRATCH,
        sa.Column("key", sa.BigInteger(), nullable=False),
        sa.Column("person_id", sa.String(18), nullable=False),
    )
    scratch = sa.table(SCRATCH, sa.column("key"), sa.column("person_id"))
    after = ""
    while True:
        batch = bind.execute(
            sa.select(people).where(people.c.id > after).order_by(people.c.id).limit(BATCH)
        ).all()
        if not batch:
            break
        rows = [row for person in batch for row in key_rows(person.id, identity_of(person))]
        if rows:
            bind.execute(sa.insert(scratch), rows)
        after = batch[-1].id
    bind.execute(sa.text("DELETE FROM person_keys"))
    bind.execute(
        sa.text(
            f"INSERT INTO person_keys (key, person_id)"  # noqa: S608 (constant names)
            f" SELECT DISTINCT key, person_id FROM {SCRATCH} ORDER BY key, person_id"
        )
    )
    op.drop_table(SCRATCH)


def downgrade() -> None:
    op.create_index("ix_person_keys_person_id", "person_keys", ["person_id"])
