"""The names' search forms: ``people.first_name_search`` and ``people.last_name_search``.

The staff's name-prefix search (the console's finder, the admin API's people search)
compared ``lower()`` of the stored names with the words typed, so "Papad" never found a
rider stored as Παπαδόπουλος (and SQLite's ``lower()`` folds ASCII letters only, so
"Παπαδ" did not either). Each name is now stored beside it as the search reads it
(``normalize.name_search``: lower-case words, accents gone, Greek letters in Latin ones,
as the matcher compares names), computed here for every stored person with the
application's own function, and the two name indexes move from ``lower()`` of the names
to these columns. docs/decisions.md, "Greek names written in Greek letters".

Revision ID: 0030
Revises: 0029
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0030"
down_revision: str | None = "0029"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 5000  # people read at a time
LENGTH = 255  # normalize.SEARCH_LENGTH when written


def upgrade() -> None:
    # The application's own function: the stored forms must be what every write stores.
    from ridercrm.people.normalize import name_search

    op.add_column("people", sa.Column("first_name_search", sa.String(LENGTH), nullable=True))
    op.add_column("people", sa.Column("last_name_search", sa.String(LENGTH), nullable=True))
    bind = op.get_bind()
    people = sa.table(
        "people",
        sa.column("id"),
        sa.column("first_name"),
        sa.column("last_name"),
        sa.column("first_name_search"),
        sa.column("last_name_search"),
    )
    fill = (
        sa.update(people)
        .where(people.c.id == sa.bindparam("person"))
        .values(first_name_search=sa.bindparam("first"), last_name_search=sa.bindparam("last"))
    )
    after = ""
    while True:
        batch = bind.execute(
            sa.select(people.c.id, people.c.first_name, people.c.last_name)
            .where(people.c.id > after)
            .order_by(people.c.id)
            .limit(BATCH)
        ).all()
        if not batch:
            break
        after = batch[-1].id
        # updated_at stays: the person did not change, only how they are found
        bind.execute(
            fill,
            [
                {
                    "person": p.id,
                    "first": name_search(p.first_name),
                    "last": name_search(p.last_name),
                }
                for p in batch
            ],
        )
    op.drop_index("ix_people_last_first", table_name="people")
    op.drop_index("ix_people_first_name", table_name="people")
    op.create_index(
        "ix_people_last_first_search", "people", ["last_name_search", "first_name_search"]
    )
    op.create_index("ix_people_first_name_search", "people", ["first_name_search"])


def downgrade() -> None:
    op.drop_index("ix_people_first_name_search", table_name="people")
    op.drop_index("ix_people_last_first_search", table_name="people")
    op.create_index(
        "ix_people_last_first",
        "people",
        [sa.text("lower(last_name)"), sa.text("lower(first_name)")],
    )
    op.create_index("ix_people_first_name", "people", [sa.text("lower(first_name)")])
    # SQLite 3.35+: ALTER TABLE DROP COLUMN (a batch copy would lose expression indexes).
    op.drop_column("people", "last_name_search")
    op.drop_column("people", "first_name_search")
