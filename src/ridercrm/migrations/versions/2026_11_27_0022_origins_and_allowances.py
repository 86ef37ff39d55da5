"""Where things came from, and what an operator allowed.

- ``people.import_run_id`` and ``people.import_line``: the import run and the file's
  line an imported person came from; ``import_runs.operator``: who ran it.
- ``webhook_endpoints.allowed_hosts``: the RIDERCRM_WEBHOOK_ALLOWED_HOSTS entries an
  endpoint's URL needed when it was registered, honoured by every deliverer.
- ``ix_audit_records_who`` replaces ``ix_audit_records_staff_user_created_at``: the
  console's "who" filter (a staff user's or a key's name) reads one index range in the
  page's order instead of every record.

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("people", sa.Column("import_run_id", sa.Integer(), nullable=True))
    op.add_column("people", sa.Column("import_line", sa.Integer(), nullable=True))
    op.add_column("import_runs", sa.Column("operator", sa.String(80), nullable=True))
    op.add_column(
        "webhook_endpoints",
        sa.Column("allowed_hosts", sa.String(2000), nullable=False, server_default=""),
    )
    op.drop_index("ix_audit_records_staff_user_created_at", table_name="audit_records")
    op.create_index(
        "ix_audit_records_who",
        "audit_records",
        [sa.text("coalesce(staff_user, api_key_name)"), "created_at", "id"],
    )


def downgrade() -> None:
    op.drop_index("ix_audit_records_who", table_name="audit_records")
    op.create_index(
        "ix_audit_records_staff_user_created_at", "audit_records", ["staff_user", "created_at"]
    )
    # SQLite 3.35+: ALTER TABLE DROP COLUMN (a batch copy would lose expression indexes).
    op.drop_column("webhook_endpoints", "allowed_hosts")
    op.drop_column("import_runs", "operator")
    op.drop_column("people", "import_line")
    op.drop_column("people", "import_run_id")
