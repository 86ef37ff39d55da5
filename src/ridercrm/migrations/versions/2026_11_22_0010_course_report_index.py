"""A course index for the staff console: the dashboard's figures and a site's day sheet.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-22
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

REPORT_COLUMNS = [
    "course_datetime",
    "course_location",
    "course_status",
    "booking_source",
    "product_id",
    "rider_instructor_1",
]


def upgrade() -> None:
    op.create_index("ix_assets_datetime_report", "assets", REPORT_COLUMNS)


def downgrade() -> None:
    op.drop_index("ix_assets_datetime_report", table_name="assets")
