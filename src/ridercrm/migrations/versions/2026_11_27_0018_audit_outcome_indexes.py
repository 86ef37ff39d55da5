"""Console sign-in failures counted per account and client address (a growing delay
for that address, never a lock of the account for everyone). Audit: the console's filters by outcome (and by operation and outcome) read partial
indexes in the page's order, and the operation index ends with the id (the page's
tie-break); records already stored are indexed by the people and booking numbers of
the courses they name (ridercrm.audit.service.related_subjects).

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FAILED = sa.text("response_status >= 400 OR failure_reason IS NOT NULL")
SUCCEEDED = sa.text("response_status < 400 AND failure_reason IS NULL")
PARTIAL = {
    "ix_audit_records_failed": (["created_at", "id"], FAILED),
    "ix_audit_records_succeeded": (["created_at", "id"], SUCCEEDED),
    "ix_audit_records_operation_failed": (["operation", "created_at", "id"], FAILED),
    "ix_audit_records_operation_succeeded": (["operation", "created_at", "id"], SUCCEEDED),
}

# A course subject is "course:" and the course's 15-character id; its person's and its
# booking number's subjects are added for the same record, once.
_RELATED = """
INSERT INTO audit_subjects (subject, created_at, audit_id)
SELECT DISTINCT {subject}, s.created_at, s.audit_id
FROM audit_subjects s JOIN assets a ON a.id LIKE substr(s.subject, 8) || '___'
WHERE s.subject LIKE 'course:%' {extra}
AND NOT EXISTS (
    SELECT 1 FROM audit_subjects t
    WHERE t.subject = {subject} AND t.created_at = s.created_at AND t.audit_id = s.audit_id
)
"""


def upgrade() -> None:
    op.create_table(
        "staff_sign_in_failures",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("address", sa.String(length=64), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("last_failed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("blocked_until", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["staff_users.id"],
            name="fk_staff_sign_in_failures_user_id_staff_users",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_id", "address", name="pk_staff_sign_in_failures"),
    )
    with op.batch_alter_table("audit_records") as batch:
        batch.drop_index("ix_audit_records_operation_created_at")
        batch.create_index(
            "ix_audit_records_operation_created_at", ["operation", "created_at", "id"]
        )
    for name, (columns, where) in PARTIAL.items():
        op.create_index(name, "audit_records", columns, sqlite_where=where, postgresql_where=where)
    op.execute(_RELATED.format(subject="'person:' || substr(a.person_id, 1, 15)", extra=""))
    op.execute(
        _RELATED.format(
            subject="'booking:' || a.booking_number", extra="AND a.booking_number IS NOT NULL"
        )
    )


def downgrade() -> None:
    op.drop_table("staff_sign_in_failures")
    for name in PARTIAL:
        op.drop_index(name, table_name="audit_records")
    with op.batch_alter_table("audit_records") as batch:
        batch.drop_index("ix_audit_records_operation_created_at")
        batch.create_index("ix_audit_records_operation_created_at", ["operation", "created_at"])
