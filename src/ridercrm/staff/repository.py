"""Queries on staff users and their sessions."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from ridercrm.staff.models import StaffSession, StaffSignInFailure, StaffUser


def by_name(session: Session, name: str, *, lock: bool = False) -> StaffUser | None:
    statement = select(StaffUser).where(StaffUser.name == name)
    if lock:
        statement = statement.with_for_update()
    return session.scalar(statement)


def by_id(session: Session, user_id: int, *, lock: bool = False) -> StaffUser | None:
    return session.get(StaffUser, user_id, with_for_update=lock)


def all_users(session: Session) -> Sequence[StaffUser]:
    return session.scalars(select(StaffUser).order_by(StaffUser.name)).all()


def any_user(session: Session) -> bool:
    return session.scalar(select(StaffUser.id).limit(1)) is not None


def session_by_hash(session: Session, token_hash: str) -> StaffSession | None:
    return session.scalar(select(StaffSession).where(StaffSession.token_hash == token_hash))


def revoke_sessions(session: Session, *, user_id: int, at: dt.datetime) -> int:
    """Revoke every live session of one user; return how many."""
    result = session.execute(
        update(StaffSession)
        .where(StaffSession.user_id == user_id, StaffSession.revoked_at.is_(None))
        .values(revoked_at=at)
    )
    return int(getattr(result, "rowcount", 0) or 0)


def failures(
    session: Session, *, user_id: int, address: str, lock: bool = False
) -> StaffSignInFailure | None:
    """The failed sign-ins in a row to one account from one address, or None."""
    return session.get(StaffSignInFailure, (user_id, address[:64]), with_for_update=lock)


def forget_failures(session: Session, *, user_id: int, address: str | None = None) -> None:
    """Forget an account's failed sign-ins: from one address, or (None) from every one."""
    statement = delete(StaffSignInFailure).where(StaffSignInFailure.user_id == user_id)
    if address is not None:
        statement = statement.where(StaffSignInFailure.address == address[:64])
    session.execute(statement)


def recent_failures(session: Session, *, since: dt.datetime) -> Sequence[StaffSignInFailure]:
    """Every account's rows of failed sign-ins whose last failure is after ``since``."""
    return session.scalars(
        select(StaffSignInFailure).where(StaffSignInFailure.last_failed_at > since)
    ).all()
