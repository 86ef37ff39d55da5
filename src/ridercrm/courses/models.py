"""Assets (booked courses) and the history of their status."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from sqlalchemy import ForeignKey, Index, Integer, Numeric, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from ridercrm.db import Base, UTCDateTime, utcnow
from ridercrm.people.models import Person


class Asset(Base):
    __tablename__ = "assets"

    id: Mapped[str] = mapped_column(String(18), primary_key=True)
    person_id: Mapped[str] = mapped_column(String(18), ForeignKey("people.id"))
    product_id: Mapped[str] = mapped_column(String(18), ForeignKey("products.id"))
    booking_number: Mapped[str | None] = mapped_column(String(80), unique=True)
    course_status: Mapped[str] = mapped_column(String(20))
    course_feedback: Mapped[str | None] = mapped_column(String(10))
    # Local wall time of the course location, kept exactly as the client wrote it.
    course_datetime: Mapped[str | None] = mapped_column(String(19))
    course_date_end: Mapped[str | None] = mapped_column(String(19))
    course_location: Mapped[str | None] = mapped_column(String(40))
    rider_instructor_1: Mapped[str | None] = mapped_column(String(120))
    rider_instructor_2: Mapped[str | None] = mapped_column(String(120))
    dealer_code: Mapped[str | None] = mapped_column(String(80))
    course_price: Mapped[Decimal | None] = mapped_column(Numeric(12, 2))
    booking_source: Mapped[str | None] = mapped_column(String(20))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    # Tells the unit of work to insert a new contact before a course that points to it.
    person: Mapped[Person] = relationship(lazy="raise_on_sql")
    status_history: Mapped[list[AssetStatusChange]] = relationship(
        order_by="AssetStatusChange.id", cascade="all, delete-orphan", lazy="selectin"
    )

    __table_args__ = (
        # The interface's "pair" rule: a person's course of a product.
        Index("ix_assets_person_product", person_id, product_id),
        Index("ix_assets_product_id", product_id),
        # The dashboard: a period of course dates, grouped by these columns, read
        # from the index alone; and a site's day sheet (one day of it: a few hundred
        # entries, filtered by site). An index on (site, date) as well would tempt
        # SQLite's planner into a skip-scan of it for the dashboard, ten times slower.
        Index(
            "ix_assets_datetime_report",
            course_datetime,
            course_location,
            course_status,
            booking_source,
            product_id,
            rider_instructor_1,
        ),
    )


class AssetStatusChange(Base):
    __tablename__ = "asset_status_history"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    asset_id: Mapped[str] = mapped_column(String(18), ForeignKey("assets.id"), index=True)
    from_status: Mapped[str | None] = mapped_column(String(20))
    to_status: Mapped[str] = mapped_column(String(20))
    changed_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    # Not a foreign key: audit records are purged after their retention time.
    audit_id: Mapped[str] = mapped_column(String(18))
