"""Blocking keys of people for matching, filled in for people already stored.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-20
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 5000


def upgrade() -> None:
    op.create_table(
        "person_keys",
        sa.Column("key", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("person_id", sa.String(18), nullable=False),
        sa.ForeignKeyConstraint(
            ["person_id"], ["people.id"], name="fk_person_keys_person_id_people", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("key", "person_id", name="pk_person_keys"),
        sqlite_with_rowid=False,
    )
    _fill_keys()


def _fill_keys() -> None:
    # Uses the application's own key function: keys must be exactly what the
    # service computes on every write.
    from ridercrm.people.index import identity_of, key_rows

    bind = op.get_bind()
    people = sa.table(
        "people",
        *(sa.column(name) for name in (
            "id", "first_name", "last_name", "date_of_birth", "email", "mobile_phone",
            "home_phone", "drivers_license", "street", "postcode",
        )),
    )  # fmt: skip
    keys = sa.table("person_keys", sa.column("key"), sa.column("person_id"))
    rows: list[dict[str, object]] = []
    for person in bind.execute(sa.select(people)):
        rows.extend(key_rows(person.id, identity_of(person)))
        if len(rows) >= BATCH:
            bind.execute(sa.insert(keys), rows)
            rows = []
    if rows:
        bind.execute(sa.insert(keys), rows)


def downgrade() -> None:
    op.drop_table("person_keys")
