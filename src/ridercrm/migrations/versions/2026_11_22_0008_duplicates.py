"""Duplicates: people merged into a survivor, and the merges kept for undoing them.

Revision ID: 0008
Revises: 0006
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0008"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FK = "fk_people_merged_into_people"
COLUMN = f"merged_into VARCHAR(18) CONSTRAINT {FK} REFERENCES people (id)"
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        # SQLite adds a nullable column with a REFERENCES clause in place (Alembic will
        # not); batch mode would rebuild `people` and cascade through its references.
        bind.exec_driver_sql(f"ALTER TABLE people ADD COLUMN {COLUMN}")
    else:
        op.add_column("people", sa.Column("merged_into", sa.String(18), nullable=True))
        op.create_foreign_key(FK, "people", "people", ["merged_into"], ["id"])
    op.create_index("ix_people_merged_into", "people", ["merged_into"])
    op.create_table(
        "person_merges",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("survivor_id", sa.String(18), nullable=False),
        sa.Column("merged_ids", JSON, nullable=False),
        sa.Column("before", JSON, nullable=False),
        sa.Column("after", JSON, nullable=False),
        sa.Column("moved_assets", JSON, nullable=False),
        sa.Column("audit_id", sa.String(18), nullable=True),
        sa.Column("undone_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_person_merges"),
    )
    op.create_index("ix_person_merges_survivor_id", "person_merges", ["survivor_id"])
    op.create_table(
        "duplicate_pairs",
        sa.Column("person_id", sa.String(18), nullable=False),
        sa.Column("other_id", sa.String(18), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("explanation", JSON, nullable=False),
        sa.Column("status", sa.String(10), nullable=False),
        sa.PrimaryKeyConstraint("person_id", "other_id", name="pk_duplicate_pairs"),
    )
    op.create_table(
        "duplicate_clusters",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("people", JSON, nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("status", sa.String(10), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("merge_id", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_duplicate_clusters"),
    )
    op.create_index("ix_duplicate_clusters_status_score", "duplicate_clusters", ["status", "score"])
    op.create_table(
        "duplicate_scans",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("since", sa.DateTime(timezone=True), nullable=True),
        sa.Column("cursor", sa.String(18), nullable=True),
        sa.Column("checked", sa.Integer(), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_duplicate_scans"),
    )


def downgrade() -> None:
    op.drop_table("duplicate_scans")
    op.drop_index("ix_duplicate_clusters_status_score", table_name="duplicate_clusters")
    op.drop_table("duplicate_clusters")
    op.drop_table("duplicate_pairs")
    op.drop_index("ix_person_merges_survivor_id", table_name="person_merges")
    op.drop_table("person_merges")
    op.drop_index("ix_people_merged_into", table_name="people")
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        op.drop_constraint(FK, "people", type_="foreignkey")
        op.drop_column("people", "merged_into")
        return
    # SQLite drops no column a foreign key uses: first take the REFERENCES clause out
    # of the table's definition (it changes no stored row; the way 0006 edits it too).
    bind.exec_driver_sql("UPDATE people SET merged_into = NULL")
    version = bind.exec_driver_sql("PRAGMA schema_version").scalar_one()
    bind.exec_driver_sql("PRAGMA writable_schema=ON")
    bind.execute(
        sa.text(
            "UPDATE sqlite_master SET sql = replace(sql, :old, :new)"
            " WHERE type = 'table' AND name = 'people'"
        ),
        {"old": COLUMN, "new": "merged_into VARCHAR(18)"},
    )
    bind.exec_driver_sql(f"PRAGMA schema_version={int(version) + 1}")
    bind.exec_driver_sql("PRAGMA writable_schema=OFF")
    bind.exec_driver_sql("ALTER TABLE people DROP COLUMN merged_into")
