"""person_keys without its foreign key to people.

The keys are derived data: a function of a person's identity, written only beside the
person, in the person's own transaction (people.index, the importer), and people are
never deleted. The foreign key checked each key row against people's primary key (on
PostgreSQL a trigger a row): half of what a key row cost to write on SQLite, three
quarters on PostgreSQL (docs/decisions.md, "Compact blocking keys").

SQLite cannot drop a constraint: the table is made again without it and filled in key
order (its pages full), as 0025 left it.

Revision ID: 0028
Revises: 0027
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0028"
down_revision: str | None = "0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FOREIGN_KEY = "fk_person_keys_person_id_people"
SCRATCH = "person_keys_new"


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _remake(foreign_key=False)
    else:
        op.drop_constraint(FOREIGN_KEY, "person_keys", type_="foreignkey")


def downgrade() -> None:
    # A key of no one (a script deleted people without their keys) would refuse the
    # constraint: it is dropped first.
    op.execute(
        "DELETE FROM person_keys WHERE NOT EXISTS"
        " (SELECT 1 FROM people WHERE people.id = person_keys.person_id)"
    )
    if op.get_bind().dialect.name == "sqlite":
        _remake(foreign_key=True)
    else:
        op.create_foreign_key(
            FOREIGN_KEY, "person_keys", "people", ["person_id"], ["id"], ondelete="CASCADE"
        )


def _remake(*, foreign_key: bool) -> None:
    constraints: list[sa.Constraint] = [
        sa.PrimaryKeyConstraint("key", "person_id", name="pk_person_keys")
    ]
    if foreign_key:
        constraints.append(
            sa.ForeignKeyConstraint(
                ["person_id"], ["people.id"], name=FOREIGN_KEY, ondelete="CASCADE"
            )
        )
    op.create_table(
        SCRATCH,
        sa.Column("key", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("person_id", sa.String(18), nullable=False),
        *constraints,
        sqlite_with_rowid=False,
    )
    op.execute(
        f"INSERT INTO {SCRATCH} (key, person_id)"  # noqa: S608 (constant names)
        " SELECT key, person_id FROM person_keys ORDER BY key, person_id"
    )
    op.drop_table("person_keys")
    op.rename_table(SCRATCH, "person_keys")
