"""Operational records: audit trail, API keys and idempotency records.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-20
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "audit_records",
        sa.Column("id", sa.String(18), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("operation", sa.String(40), nullable=False),
        sa.Column("method", sa.String(10), nullable=False),
        sa.Column("path", sa.String(500), nullable=False),
        sa.Column("api_key_id", sa.Integer(), nullable=True),
        sa.Column("api_key_name", sa.String(120), nullable=True),
        sa.Column("content_type", sa.String(200), nullable=True),
        sa.Column("request_body", sa.Text(), nullable=True),
        sa.Column("response_status", sa.Integer(), nullable=False),
        sa.Column("response_body", sa.Text(), nullable=True),
        sa.Column("duration_ms", sa.Float(), nullable=False),
        sa.Column("failure_reason", sa.Text(), nullable=True),
        sa.Column("outcomes", JSON, nullable=True),
        sa.Column("idempotency_key", sa.String(255), nullable=True),
        sa.Column("replay_of", sa.String(18), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_audit_records"),
    )
    op.create_index("ix_audit_records_created_at", "audit_records", ["created_at"])
    op.create_index(
        "ix_audit_records_operation_created_at", "audit_records", ["operation", "created_at"]
    )

    op.create_table(
        "api_keys",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(120), nullable=False),
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("scopes", sa.JSON(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("revoked_at", TIMESTAMP, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_api_keys"),
        sa.UniqueConstraint("key_hash", name="uq_api_keys_key_hash"),
    )

    op.create_table(
        "idempotency_records",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("api_key_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("request_hash", sa.String(64), nullable=False),
        sa.Column("audit_id", sa.String(18), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("expires_at", TIMESTAMP, nullable=False),
        sa.Column("locked_until", TIMESTAMP, nullable=True),
        sa.Column("response_status", sa.Integer(), nullable=True),
        sa.Column("response_headers", JSON, nullable=True),
        sa.Column("response_body", sa.LargeBinary(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_idempotency_records"),
        sa.UniqueConstraint("api_key_id", "key", name="uq_idempotency_records_api_key_id_key"),
    )
    op.create_index("ix_idempotency_records_expires_at", "idempotency_records", ["expires_at"])


def downgrade() -> None:
    op.drop_table("idempotency_records")
    op.drop_table("api_keys")
    op.drop_table("audit_records")
