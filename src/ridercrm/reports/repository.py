"""Aggregate queries on courses for the dashboard.

Every query is a range of ``ix_assets_datetime_report``, an index on the course date
that also holds every column grouped here, so the database answers from the index
alone (no table rows are read) and the cost follows the period's courses, not the
store's. The first query groups by a prefix of that index (start time, site, status),
so it aggregates in index order without sorting; weeks are made from the start times'
dates in Python (a site's day has a few start times, so that is few rows).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from sqlalchemy import ColumnElement, and_, func, select
from sqlalchemy.orm import Session

from ridercrm.courses import rules
from ridercrm.courses.models import Asset
from ridercrm.products.models import Product


def _in_period(first: dt.date, last: dt.date) -> ColumnElement[bool]:
    return and_(
        Asset.course_datetime >= f"{first.isoformat()} 00:00:00",
        Asset.course_datetime <= f"{last.isoformat()} 23:59:59",
    )


def courses_by_start_location_status(
    session: Session, *, first: dt.date, last: dt.date
) -> Iterable[tuple[str | None, str | None, str, int]]:
    """(start time, location, status, courses) for the courses dated in the period."""
    query = (
        select(Asset.course_datetime, Asset.course_location, Asset.course_status, func.count())
        .where(_in_period(first, last))
        .group_by(Asset.course_datetime, Asset.course_location, Asset.course_status)
    )
    return session.execute(query).all()


def courses_by_start_source(
    session: Session, *, first: dt.date, last: dt.date
) -> Iterable[tuple[str | None, str | None, int]]:
    """(start time, booking source, courses) for the courses dated in the period."""
    query = (
        select(Asset.course_datetime, Asset.booking_source, func.count())
        .where(_in_period(first, last))
        .group_by(Asset.course_datetime, Asset.booking_source)
    )
    return session.execute(query).all()


def results(
    session: Session, *, first: dt.date, last: dt.date
) -> Iterable[tuple[str | None, str | None, str, str, int]]:
    """(location, lead instructor, product id, status, courses) of the completed courses."""
    query = (
        select(
            Asset.course_location,
            Asset.rider_instructor_1,
            Asset.product_id,
            Asset.course_status,
            func.count(),
        )
        .where(_in_period(first, last), Asset.course_status.in_((rules.PASSED, rules.FAILED)))
        .group_by(
            Asset.course_location, Asset.rider_instructor_1, Asset.product_id, Asset.course_status
        )
    )
    return session.execute(query).all()


def product_names(session: Session, product_ids: Iterable[str]) -> dict[str, str]:
    ids = set(product_ids)
    if not ids:
        return {}
    query = select(Product.id, Product.name, Product.code).where(Product.id.in_(ids))
    return {pid: f"{name} ({code})" for pid, name, code in session.execute(query)}
