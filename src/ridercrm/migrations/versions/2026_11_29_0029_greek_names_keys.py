"""Matching keys of people whose names are written in Greek letters, recomputed.

Names are now compared in Latin letters, Greek ones written as ELOT 743 writes them
(people/greek.py): Παπαδόπουλος is papadopoulos. The keys of a person whose given or
family name has a Greek letter were computed from the Greek letters; they are deleted
and computed again with the application's own key function, and the person is marked
for the duplicates re-check (as a write that changes their keys marks them): the scans
before 0029 scored their names in Greek letters. Nobody else's keys change.
docs/decisions.md, "Greek names written in Greek letters".

Revision ID: 0029
Revises: 0028
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0029"
down_revision: str | None = "0028"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 5000  # people read at a time


def upgrade() -> None:
    # The application's own key function: keys must be exactly what every write stores.
    from ridercrm.db import UTCDateTime, utcnow
    from ridercrm.people.greek import has_greek
    from ridercrm.people.identity import IDENTITY_COLUMNS
    from ridercrm.people.index import identity_of, key_rows
    from ridercrm.people.normalize import strip_accents

    bind = op.get_bind()
    # Typed as the model types them: SQLite returns a date as text to an untyped column.
    types = {"date_of_birth": sa.Date()}
    people = sa.table(
        "people", *(sa.column(name, types.get(name)) for name in ("id", *IDENTITY_COLUMNS))
    )
    marks = sa.table("people", sa.column("id"), sa.column("duplicate_touched_at", UTCDateTime()))
    keys = sa.table("person_keys", sa.column("key"), sa.column("person_id"))
    after = ""
    while True:
        batch = bind.execute(
            sa.select(people).where(people.c.id > after).order_by(people.c.id).limit(BATCH)
        ).all()
        if not batch:
            break
        after = batch[-1].id
        greek = [
            person
            for person in batch
            if has_greek(strip_accents(person.first_name or ""))
            or has_greek(strip_accents(person.last_name or ""))
        ]
        if not greek:
            continue
        # person_keys has no index on person_id: one scan of it per batch that has any
        bind.execute(sa.delete(keys).where(keys.c.person_id.in_([p.id for p in greek])))
        rows = [row for person in greek for row in key_rows(person.id, identity_of(person))]
        if rows:
            bind.execute(sa.insert(keys), rows)
        # the duplicates re-check takes them (duplicates/recheck.py); updated_at stays
        bind.execute(
            sa.update(marks)
            .where(marks.c.id.in_([p.id for p in greek]))
            .values(duplicate_touched_at=utcnow())
        )


def downgrade() -> None:
    # Nothing to undo in the schema, and the keys stay as 0029 made them: with the code
    # of 0028 such a person is found by the e-mail, phone, licence, birth date and
    # address keys and by the names written in Latin letters, not by a query in Greek
    # letters (the earlier code keys names in the letters they were written in).
    pass
