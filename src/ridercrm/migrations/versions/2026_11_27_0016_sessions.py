"""Course sessions (capacity, instructors, status), their waiting lists, and the
products' trainees per instructor.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.add_column("products", sa.Column("trainees_per_instructor", sa.Integer(), nullable=True))
    op.create_table(
        "course_sessions",
        sa.Column("id", sa.String(18), nullable=False),
        sa.Column("product_id", sa.String(18), nullable=False),
        sa.Column("location", sa.String(40), nullable=False),
        sa.Column("course_datetime", sa.String(19), nullable=False),
        sa.Column("course_date_end", sa.String(19), nullable=True),
        sa.Column("capacity", sa.Integer(), nullable=True),
        sa.Column("minimum", sa.Integer(), nullable=False),
        sa.Column("instructors", sa.Integer(), nullable=True),
        sa.Column("seats", sa.Integer(), nullable=True),
        sa.Column("booked", sa.Integer(), nullable=False),
        sa.Column("held", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(12), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["product_id"], ["products.id"], name=op.f("fk_course_sessions_product_id_products")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_course_sessions")),
        sa.UniqueConstraint(
            "product_id",
            "location",
            "course_datetime",
            name=op.f("uq_course_sessions_product_id"),
        ),
    )
    op.create_index(
        "ix_course_sessions_location_start", "course_sessions", ["location", "course_datetime"]
    )
    op.create_index("ix_course_sessions_start", "course_sessions", ["course_datetime"])
    op.create_table(
        "session_waitlist",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("session_id", sa.String(18), nullable=False),
        sa.Column("person_id", sa.String(18), nullable=False),
        sa.Column("rank", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(10), nullable=False),
        sa.Column("offered_until", TIMESTAMP, nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["course_sessions.id"],
            name=op.f("fk_session_waitlist_session_id_course_sessions"),
        ),
        sa.ForeignKeyConstraint(
            ["person_id"], ["people.id"], name=op.f("fk_session_waitlist_person_id_people")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_session_waitlist")),
        sa.UniqueConstraint("session_id", "person_id", name=op.f("uq_session_waitlist_session_id")),
    )
    op.create_index("ix_session_waitlist_line", "session_waitlist", ["session_id", "state", "rank"])
    op.create_index("ix_session_waitlist_offers", "session_waitlist", ["state", "offered_until"])


def downgrade() -> None:
    op.drop_table("session_waitlist")
    op.drop_table("course_sessions")
    # SQLite 3.35+ drops the column in place: a batch copy of products would drop the
    # table that courses and sessions point at, which its foreign keys refuse.
    op.drop_column("products", "trainees_per_instructor")
