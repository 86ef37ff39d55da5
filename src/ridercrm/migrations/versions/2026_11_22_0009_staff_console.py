"""Staff console: staff users, their sessions, the staff user on audit records, and an
index on people's date of birth for the console's search.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "staff_users",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(80), nullable=False),
        sa.Column("role", sa.String(10), nullable=False),
        sa.Column("password_hash", sa.String(255), nullable=False),
        sa.Column("disabled", sa.Boolean(), nullable=False),
        sa.Column("failed_attempts", sa.Integer(), nullable=False),
        sa.Column("locked_until", TIMESTAMP, nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("password_changed_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_staff_users"),
        sa.UniqueConstraint("name", name="uq_staff_users_name"),
    )
    op.create_table(
        "staff_sessions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("expires_at", TIMESTAMP, nullable=False),
        sa.Column("revoked_at", TIMESTAMP, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_staff_sessions"),
        sa.UniqueConstraint("token_hash", name="uq_staff_sessions_token_hash"),
        sa.ForeignKeyConstraint(
            ["user_id"], ["staff_users.id"], name="fk_staff_sessions_user_id_staff_users"
        ),
    )
    op.create_index("ix_staff_sessions_user_id", "staff_sessions", ["user_id"])
    with op.batch_alter_table("audit_records") as batch:
        batch.add_column(sa.Column("staff_user", sa.String(80), nullable=True))
    op.create_index(
        "ix_audit_records_staff_user_created_at", "audit_records", ["staff_user", "created_at"]
    )
    op.create_index("ix_people_date_of_birth", "people", ["date_of_birth"])


def downgrade() -> None:
    op.drop_index("ix_people_date_of_birth", table_name="people")
    op.drop_index("ix_audit_records_staff_user_created_at", table_name="audit_records")
    with op.batch_alter_table("audit_records") as batch:
        batch.drop_column("staff_user")
    op.drop_index("ix_staff_sessions_user_id", table_name="staff_sessions")
    op.drop_table("staff_sessions")
    op.drop_table("staff_users")
