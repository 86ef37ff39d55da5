"""Core records: people, products, assets and their status history.

Revision ID: 0001
Revises:
Create Date: 2026-11-20
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "people",
        sa.Column("id", sa.String(18), nullable=False),
        sa.Column("kind", sa.String(7), nullable=False),
        sa.Column("first_name", sa.String(80), nullable=False),
        sa.Column("last_name", sa.String(80), nullable=False),
        sa.Column("date_of_birth", sa.Date(), nullable=True),
        sa.Column("email", sa.String(254), nullable=True),
        sa.Column("postcode", sa.String(4), nullable=True),
        sa.Column("mobile_phone", sa.String(40), nullable=True),
        sa.Column("home_phone", sa.String(40), nullable=True),
        sa.Column("drivers_license", sa.String(40), nullable=True),
        sa.Column("license_type", sa.String(3), nullable=True),
        sa.Column("street", sa.String(255), nullable=True),
        sa.Column("city", sa.String(80), nullable=True),
        sa.Column("state", sa.String(80), nullable=True),
        sa.Column("country", sa.String(80), nullable=True),
        sa.Column("lead_source", sa.String(40), nullable=True),
        sa.Column("opt_in", sa.Boolean(), nullable=True),
        sa.Column("converted_contact_id", sa.String(18), nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["converted_contact_id"], ["people.id"], name="fk_people_converted_contact_id_people"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_people"),
        sa.UniqueConstraint("converted_contact_id", name="uq_people_converted_contact_id"),
    )
    op.create_index(
        "ix_people_last_first",
        "people",
        [sa.text("lower(last_name)"), sa.text("lower(first_name)")],
    )
    op.create_index("ix_people_first_name", "people", [sa.text("lower(first_name)")])

    op.create_table(
        "products",
        sa.Column("id", sa.String(18), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("code", sa.String(80), nullable=False),
        sa.Column("price", sa.Numeric(12, 2), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_products"),
        sa.UniqueConstraint("code", name="uq_products_code"),
    )

    op.create_table(
        "assets",
        sa.Column("id", sa.String(18), nullable=False),
        sa.Column("person_id", sa.String(18), nullable=False),
        sa.Column("product_id", sa.String(18), nullable=False),
        sa.Column("booking_number", sa.String(80), nullable=True),
        sa.Column("course_status", sa.String(20), nullable=False),
        sa.Column("course_feedback", sa.String(10), nullable=True),
        sa.Column("course_datetime", sa.String(19), nullable=True),
        sa.Column("course_date_end", sa.String(19), nullable=True),
        sa.Column("course_location", sa.String(40), nullable=True),
        sa.Column("rider_instructor_1", sa.String(120), nullable=True),
        sa.Column("rider_instructor_2", sa.String(120), nullable=True),
        sa.Column("dealer_code", sa.String(80), nullable=True),
        sa.Column("course_price", sa.Numeric(12, 2), nullable=True),
        sa.Column("booking_source", sa.String(20), nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(["person_id"], ["people.id"], name="fk_assets_person_id_people"),
        sa.ForeignKeyConstraint(
            ["product_id"], ["products.id"], name="fk_assets_product_id_products"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_assets"),
        sa.UniqueConstraint("booking_number", name="uq_assets_booking_number"),
    )
    op.create_index("ix_assets_person_product", "assets", ["person_id", "product_id"])
    op.create_index("ix_assets_product_id", "assets", ["product_id"])

    op.create_table(
        "asset_status_history",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("asset_id", sa.String(18), nullable=False),
        sa.Column("from_status", sa.String(20), nullable=True),
        sa.Column("to_status", sa.String(20), nullable=False),
        sa.Column("changed_at", TIMESTAMP, nullable=False),
        sa.Column("audit_id", sa.String(18), nullable=False),
        sa.ForeignKeyConstraint(
            ["asset_id"], ["assets.id"], name="fk_asset_status_history_asset_id_assets"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_asset_status_history"),
    )
    op.create_index("ix_asset_status_history_asset_id", "asset_status_history", ["asset_id"])


def downgrade() -> None:
    op.drop_table("asset_status_history")
    op.drop_table("assets")
    op.drop_table("products")
    op.drop_table("people")
