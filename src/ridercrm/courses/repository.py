"""Queries on courses (assets)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from ridercrm.courses.models import Asset
from ridercrm.courses.rules import CANCELLED


def lock_asset(session: Session, asset_id: str) -> Asset | None:
    """Load a course for writing: on PostgreSQL its row is locked until commit.

    A SQLite write transaction already holds the database's write lock.
    """
    if session.get_bind().dialect.name == "sqlite":
        return session.get(Asset, asset_id)
    return session.get(Asset, asset_id, with_for_update=True, populate_existing=True)


def by_booking_number(session: Session, booking_number: str) -> Asset | None:
    asset_id = session.scalar(select(Asset.id).where(Asset.booking_number == booking_number))
    return lock_asset(session, asset_id) if asset_id else None


def open_courses(session: Session, *, person_id: str, product_id: str) -> Sequence[str]:
    """Ids of the person's courses of a product that are not cancelled."""
    query = select(Asset.id).where(
        Asset.person_id == person_id,
        Asset.product_id == product_id,
        Asset.course_status != CANCELLED,
    )
    return session.scalars(query.limit(2)).all()
