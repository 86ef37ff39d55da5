"""Create and manage staff users, check their passwords, start and end their sessions.

Passwords are hashed with Argon2id (argon2-cffi's defaults, RFC 9106's second
recommended set). Session tokens carry 256 random bits and are stored as SHA-256
hashes, like API keys. Failed sign-ins are counted per account and client address:
after ``lockout_attempts`` in a row from one address, that address waits before its next
try at that account, 1 minute and then twice as long after each further failure, at most
``lockout_minutes`` (a correct password from it is refused meanwhile too). Every other
address can still sign in, so nobody can lock the owner out by guessing from elsewhere.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import hmac
import secrets
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from sqlalchemy.orm import Session

from ridercrm.db import utcnow
from ridercrm.errors import DomainError
from ridercrm.staff import repository, rules
from ridercrm.staff.models import StaffSession, StaffSignInFailure, StaffUser

_hasher = PasswordHasher()


@functools.cache
def _dummy_hash() -> str:
    """Verified against when the name is unknown, so the answer takes as long either way.

    Made on first use, not at import: hashing costs a good part of a second of CPU,
    which every `ridercrm` command would otherwise pay at start.
    """
    return _hasher.hash("not a password of anyone")


class StaffProblem(DomainError, ValueError):
    """A staff-user request that cannot be carried out; the message says why."""


def generate_password() -> str:
    """A new random password: 20 URL-safe characters (120 bits)."""
    return secrets.token_urlsafe(15)


def create_user(
    session: Session, *, name: str, role: str, password: str | None = None
) -> tuple[StaffUser, str]:
    """Create a staff user; return it and its password (generated unless given)."""
    problem = rules.name_problem(name)
    if problem:
        raise StaffProblem(problem)
    if role not in rules.ROLES:
        raise StaffProblem(f"unknown role {role!r}; roles are {', '.join(rules.ROLES)}")
    if password is None:
        password = generate_password()
    elif problem := rules.password_problem(password):
        raise StaffProblem(problem)
    # One name per spelling: "ADMIN" beside "admin" would pass for the other on the audit
    # page and at sign-in.
    folded = unicodedata.normalize("NFKC", name).casefold()
    for other in repository.all_users(session):
        if unicodedata.normalize("NFKC", other.name).casefold() == folded:
            differing = (
                "" if other.name == name else " (names that differ only in case are one name)"
            )
            raise StaffProblem(f"a staff user named {other.name!r} exists already{differing}")
    user = StaffUser(
        name=name,
        role=role,
        password_hash=_hasher.hash(password),
        disabled=False,
        failed_attempts=0,
    )
    session.add(user)
    session.flush()
    return user, password


def list_users(session: Session) -> Sequence[StaffUser]:
    return repository.all_users(session)


def _existing(session: Session, name: str) -> StaffUser:
    user = repository.by_name(session, name, lock=True)
    if user is None:
        raise StaffProblem(f"no staff user named {name!r}")
    return user


def disable_user(session: Session, *, name: str) -> StaffUser:
    """Disable a user and end all their sessions."""
    user = _existing(session, name)
    user.disabled = True
    repository.revoke_sessions(session, user_id=user.id, at=utcnow())
    session.flush()
    return user


def enable_user(session: Session, *, name: str) -> StaffUser:
    user = _existing(session, name)
    user.disabled = False
    user.failed_attempts = 0
    user.locked_until = None
    repository.forget_failures(session, user_id=user.id)
    session.flush()
    return user


def reset_password(
    session: Session, *, name: str, password: str | None = None
) -> tuple[StaffUser, str]:
    """Give a user a new password (generated unless given), lift a lock-out and end
    their sessions; return the user and the password."""
    user = _existing(session, name)
    if password is None:
        password = generate_password()
    elif problem := rules.password_problem(password):
        raise StaffProblem(problem)
    user.password_hash = _hasher.hash(password)
    user.password_changed_at = utcnow()
    user.failed_attempts = 0
    user.locked_until = None
    repository.forget_failures(session, user_id=user.id)
    repository.revoke_sessions(session, user_id=user.id, at=utcnow())
    session.flush()
    return user, password


@dataclass(frozen=True)
class SignIn:
    """The answer to a sign-in attempt: a user, or a reason shown to the person."""

    user: StaffUser | None
    refusal: str | None = None


WRONG = "Wrong user name or password."


@dataclass(frozen=True)
class Credentials:
    """What a sign-in checks a password against, read before the check."""

    user_id: int
    password_hash: str
    locked_until: dt.datetime | None  # for the address the attempt comes from


@dataclass(frozen=True)
class PasswordCheck:
    """A password checked outside any transaction, against the credentials read before."""

    credentials: Credentials | None  # None: no user of that name
    correct: bool | None  # None: not checked, the account was locked
    rehashed: str | None = None  # the password hashed with today's parameters, if needed


def credentials(session: Session, *, name: str, address: str) -> Credentials | None:
    """The stored hash of the user called ``name`` and its lock for ``address``, or None."""
    user = repository.by_name(session, name) if name else None
    if user is None:
        return None
    row = repository.failures(session, user_id=user.id, address=address)
    return Credentials(user.id, user.password_hash, row.blocked_until if row else None)


def verify_password(stored: Credentials | None, password: str) -> PasswordCheck:
    """Check a password against credentials read before; run it outside any transaction.

    Argon2 takes a good part of a second of CPU on purpose: inside a write transaction
    it would hold SQLite's one write turn that long, and sign-in attempts from anyone
    would keep every booking waiting. An unknown name is checked against a dummy hash,
    so it takes as long to refuse as a wrong password; so is a locked account's, so that
    the answer's time tells nobody whether a name exists or is locked.
    """
    if stored is None:
        _verify(_dummy_hash(), password)
        return PasswordCheck(None, correct=False)
    if stored.locked_until is not None and stored.locked_until > utcnow():
        _verify(_dummy_hash(), password)
        return PasswordCheck(stored, correct=None)
    correct = _verify(stored.password_hash, password)
    rehashed = None
    if correct and _hasher.check_needs_rehash(stored.password_hash):
        rehashed = _hasher.hash(password)
    return PasswordCheck(stored, correct=correct, rehashed=rehashed)


FORGET_AFTER = dt.timedelta(days=1)  # failures this old no longer count as "in a row"


def record_sign_in(
    session: Session,
    *,
    check: PasswordCheck,
    address: str,
    lockout_attempts: int,
    lockout_minutes: float,
    zone: dt.tzinfo = dt.UTC,
) -> SignIn:
    """Count a checked password against the account and the address it came from, under
    the account's row lock. At the bound that address waits (1 minute, doubling with each
    further failure, at most ``lockout_minutes``); a wait taken meanwhile (by guesses
    sent side by side) refuses a correct password too, so no more than the bound of
    guesses from one address is ever answered."""
    if check.credentials is None:
        return SignIn(None, WRONG)
    now = utcnow()
    user = repository.by_id(session, check.credentials.user_id, lock=True)
    if user is None:
        return SignIn(None, WRONG)
    row = repository.failures(session, user_id=user.id, address=address, lock=True)
    if row is not None and row.blocked_until is not None and row.blocked_until > now:
        return SignIn(None, _locked_message(row.blocked_until, zone))
    if check.correct is None:
        # Locked when read, the lock ran out since: nothing was checked, nothing counts.
        return SignIn(None, WRONG)
    if user.password_hash != check.credentials.password_hash:
        # The password was reset while this one was checked against the old hash.
        return SignIn(None, WRONG)
    if not check.correct:
        if row is None:
            row = StaffSignInFailure(user_id=user.id, address=address[:64], failures=0)
            session.add(row)
        elif row.last_failed_at < now - FORGET_AFTER:
            row.failures = 0
        row.failures += 1
        row.last_failed_at = now
        if row.failures >= lockout_attempts:
            row.blocked_until = now + lockout_delay(
                row.failures - lockout_attempts, most_minutes=lockout_minutes
            )
            session.flush()
            return SignIn(None, _locked_message(row.blocked_until, zone))
        session.flush()
        return SignIn(None, WRONG)
    if user.disabled:
        return SignIn(None, "This account is disabled; ask an administrator.")
    repository.forget_failures(session, user_id=user.id, address=address)
    user.failed_attempts = 0
    user.locked_until = None
    if check.rehashed is not None:
        user.password_hash = check.rehashed
    session.flush()
    return SignIn(user)


@dataclass(frozen=True)
class FailedSignIns:
    """An account's failed sign-ins in a row over the last day (FORGET_AFTER), what the
    users page shows instead of a lock: the account itself is never locked."""

    failures: int  # summed over the addresses they came from
    addresses: int
    waiting: int  # addresses now waiting before their next try at the account
    waiting_until: dt.datetime | None  # the last of those waits to end


def failed_sign_ins(session: Session) -> dict[int, FailedSignIns]:
    """Each account with failed sign-ins in the last day, by user id."""
    now = utcnow()
    rows: dict[int, list[StaffSignInFailure]] = {}
    for row in repository.recent_failures(session, since=now - FORGET_AFTER):
        rows.setdefault(row.user_id, []).append(row)
    summary = {}
    for user_id, found in rows.items():
        waits = [r.blocked_until for r in found if r.blocked_until and r.blocked_until > now]
        summary[user_id] = FailedSignIns(
            failures=sum(r.failures for r in found),
            addresses=len(found),
            waiting=len(waits),
            waiting_until=max(waits, default=None),
        )
    return summary


def lockout_delay(beyond: int, *, most_minutes: float) -> dt.timedelta:
    """The wait after a failure ``beyond`` failures past the bound: 1, 2, 4, ... minutes."""
    return dt.timedelta(minutes=min(float(2 ** min(beyond, 20)), most_minutes))


def _locked_message(until: dt.datetime, zone: dt.tzinfo) -> str:
    local = until.astimezone(zone)
    return (
        "Too many failed sign-ins to this account from your address: it is locked until"
        f" {local.strftime('%H:%M')} {local.tzname()} for this address (other devices can"
        " still sign in). Try again later or ask an administrator."
    )


def _verify(stored: str, password: str) -> bool:
    try:
        return _hasher.verify(stored, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def start_session(session: Session, *, user: StaffUser, hours: float) -> str:
    """Start a session for a signed-in user; return its token (the cookie's value)."""
    token = secrets.token_urlsafe(32)
    now = utcnow()
    session.add(
        StaffSession(
            token_hash=hash_token(token),
            user_id=user.id,
            created_at=now,
            expires_at=now + dt.timedelta(hours=hours),
        )
    )
    session.flush()
    return token


def session_user(session: Session, token: str) -> tuple[StaffUser, StaffSession] | None:
    """The user of a live session token, or None (unknown, expired, revoked, disabled)."""
    if not token or len(token) > 200:
        return None
    digest = hash_token(token)
    found = repository.session_by_hash(session, digest)
    if found is None or not hmac.compare_digest(found.token_hash, digest):
        return None
    if found.revoked_at is not None or found.expires_at <= utcnow():
        return None
    user = repository.by_id(session, found.user_id)
    if user is None or user.disabled:
        return None
    return user, found


def end_session(session: Session, token: str) -> None:
    """Revoke one session (signing out)."""
    found = repository.session_by_hash(session, hash_token(token)) if token else None
    if found is not None and found.revoked_at is None:
        found.revoked_at = utcnow()
        session.flush()


def end_all_sessions(session: Session, *, user_id: int) -> int:
    """Revoke every session of a user (signing out everywhere); return how many."""
    return repository.revoke_sessions(session, user_id=user_id, at=utcnow())


def csrf_token(token: str) -> str:
    """The CSRF token of a session: derived from its secret token, so nothing is stored
    and a page from another site, which cannot read the cookie, cannot know it."""
    return hmac.new(token.encode("utf-8"), b"ridercrm console csrf", hashlib.sha256).hexdigest()


def any_user(session: Session) -> bool:
    return repository.any_user(session)
