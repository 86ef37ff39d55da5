"""Staff users and their console sessions; passwords and session tokens are stored hashed."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from ridercrm.db import Base, UTCDateTime, utcnow


class StaffUser(Base):
    __tablename__ = "staff_users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(80), unique=True)
    role: Mapped[str] = mapped_column(String(10))
    password_hash: Mapped[str] = mapped_column(String(255))
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    # No longer set (an account is never locked: StaffSignInFailure slows one address
    # down); kept so that older databases need no rewrite. Pages show failed_sign_ins.
    failed_attempts: Mapped[int] = mapped_column(Integer, default=0)
    locked_until: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    password_changed_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class StaffSession(Base):
    __tablename__ = "staff_sessions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    # SHA-256 of the cookie's random token: a copy of the table signs nobody in.
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[int] = mapped_column(Integer, ForeignKey("staff_users.id"))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    revoked_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)

    __table_args__ = (Index("ix_staff_sessions_user_id", user_id),)


class StaffSignInFailure(Base):
    """Failed sign-ins to one account from one client address, in a row: past the bound
    that address waits a growing delay before its next try at that account, while the
    account stays open to every other address (docs/console.md, "Signing in")."""

    __tablename__ = "staff_sign_in_failures"

    user_id: Mapped[int] = mapped_column(
        Integer, ForeignKey("staff_users.id", ondelete="CASCADE"), primary_key=True
    )
    address: Mapped[str] = mapped_column(String(64), primary_key=True)
    failures: Mapped[int] = mapped_column(Integer, default=0)
    last_failed_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    blocked_until: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
