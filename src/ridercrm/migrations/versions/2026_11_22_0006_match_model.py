"""Probabilistic matching: trained models, people without a first name, new blocking keys.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 5000


def upgrade() -> None:
    op.create_table(
        "match_models",
        sa.Column("version", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("trained_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("people", sa.Integer(), nullable=False),
        sa.Column("model", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("version", name="pk_match_models"),
    )
    # A CRM export's contact may have only a last name (Salesforce requires no more).
    _first_name_nullable(True)
    _rebuild_keys()


def _first_name_nullable(nullable: bool) -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        op.alter_column("people", "first_name", existing_type=sa.String(80), nullable=nullable)
        return
    # SQLite cannot alter a column, and rebuilding `people` would cascade through the
    # tables that reference it. A NOT NULL constraint does not change the stored
    # format, so SQLite's documented way applies: edit the table's definition in
    # sqlite_schema and bump schema_version (sqlite.org/lang_altertable.html#otheralter).
    old, new = "first_name VARCHAR(80) NOT NULL", "first_name VARCHAR(80)"
    if not nullable:
        old, new = new, old
    version = bind.exec_driver_sql("PRAGMA schema_version").scalar_one()
    bind.exec_driver_sql("PRAGMA writable_schema=ON")
    bind.execute(
        sa.text(
            "UPDATE sqlite_master SET sql = replace(sql, :old, :new)"
            " WHERE type = 'table' AND name = 'people'"
        ),
        {"old": old + ",", "new": new + ","},
    )
    bind.exec_driver_sql(f"PRAGMA schema_version={int(version) + 1}")
    bind.exec_driver_sql("PRAGMA writable_schema=OFF")


def _rebuild_keys() -> None:
    # The blocking keys changed: recompute every stored person's with the application's
    # own key function (the one every write uses).
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
    bind.execute(sa.delete(keys))
    rows: list[dict[str, object]] = []
    for person in bind.execute(sa.select(people)):
        rows.extend(key_rows(person.id, identity_of(person)))
        if len(rows) >= BATCH:
            bind.execute(sa.insert(keys), rows)
            rows = []
    if rows:
        bind.execute(sa.insert(keys), rows)


def downgrade() -> None:
    # Fails while a person without a first name is stored: delete or name them first.
    _first_name_nullable(False)
    op.drop_table("match_models")
