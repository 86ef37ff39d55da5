"""Issue, list, revoke and check API keys. Keys are stored only as SHA-256 hashes."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from ridercrm.db import Reads, utcnow
from ridercrm.errors import DomainError
from ridercrm.fields import control_problem
from ridercrm.keys.models import ApiKey

SCOPES = ("courses", "people", "match", "explain", "products", "admin")
KEY_PREFIX = "rcrm_"
MAX_NAME_LENGTH = 120  # the api_keys.name column


class KeyProblem(DomainError, ValueError):
    """A key request that cannot be carried out (unknown scope, unknown key)."""


def hash_key(plaintext: str) -> str:
    # Keys carry 256 random bits, so a fast hash is enough: there is nothing to brute-force.
    return hashlib.sha256(plaintext.encode("utf-8")).hexdigest()


def create_key(session: Session, *, name: str, scopes: Iterable[str]) -> tuple[ApiKey, str]:
    """Create a key; return its record and the plaintext, which is never stored."""
    wanted = sorted(set(scopes))
    unknown = [scope for scope in wanted if scope not in SCOPES]
    if unknown:
        raise KeyProblem(f"unknown scope {', '.join(unknown)}; scopes are {', '.join(SCOPES)}")
    if not wanted:
        raise KeyProblem("a key needs at least one scope")
    if not name.strip():
        raise KeyProblem("a key needs a name")
    if len(name.strip()) > MAX_NAME_LENGTH:
        raise KeyProblem(f"a key's name is at most {MAX_NAME_LENGTH} characters")
    if (problem := control_problem(name)) is not None:
        raise KeyProblem(f"a key's name {problem}")
    plaintext = KEY_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey(
        name=name.strip(), prefix=plaintext[:12], key_hash=hash_key(plaintext), scopes=wanted
    )
    session.add(key)
    session.flush()
    return key, plaintext


def list_keys(session: Session) -> Sequence[ApiKey]:
    return session.scalars(select(ApiKey).order_by(ApiKey.id)).all()


def revoke_key(session: Session, *, ident: str) -> ApiKey:
    """Revoke a key named by its id, its name or its displayed prefix (``…`` or ``...`` included).
    An id wins over a name or prefix spelled the same."""
    # `keys list` shows the prefix followed by an ellipsis; whoever copies it copies both.
    prefix = ident.strip().removesuffix("…").removesuffix("...")
    candidates = [
        key
        for key in list_keys(session)
        if (ident in (str(key.id), key.name) or prefix == key.prefix) and key.revoked_at is None
    ]
    if not candidates:
        raise KeyProblem(f"no active key {ident!r}")
    by_id = [key for key in candidates if str(key.id) == ident]
    if len(candidates) > 1 and not by_id:
        raise KeyProblem(f"{ident!r} names {len(candidates)} keys; use the id")
    # An id names one key, whatever another key is called: the way out of the refusal above.
    key = (by_id or candidates)[0]
    key.revoked_at = utcnow()
    session.flush()
    return key


def authenticate(session: Session, presented: str) -> ApiKey | None:
    """Return the active key whose plaintext was presented, else None."""
    digest = hash_key(presented)
    key = session.scalar(select(ApiKey).where(ApiKey.key_hash == digest))
    # The lookup is by hash; compare again in constant time so the answer never
    # depends on how much of a guess was right.
    if key is None or not hmac.compare_digest(key.key_hash, digest):
        return None
    if key.revoked_at is not None:
        return None
    return key


class ActiveKey(NamedTuple):
    """What a request needs of the key it presented."""

    id: int
    name: str
    scopes: list[str]


_KEYS = ApiKey.__table__
_KEY_COLUMNS = select(
    _KEYS.c.id, _KEYS.c.name, _KEYS.c.scopes, _KEYS.c.key_hash, _KEYS.c.revoked_at
).where(_KEYS.c.key_hash == bindparam("digest"))


def active_key(reads: Reads, presented: str) -> ActiveKey | None:
    """The active key whose plaintext was presented, else None: :func:`authenticate`'s
    decision, read as one row of plain columns (every authenticated request asks it)."""
    digest = hash_key(presented)
    row = reads.first(_KEY_COLUMNS, {"digest": digest})
    # As in authenticate: the lookup is by hash, compared again in constant time.
    if row is None or not hmac.compare_digest(row.key_hash, digest):
        return None
    if row.revoked_at is not None:
        return None
    return ActiveKey(row.id, row.name, row.scopes)


def has_any_key(session: Session) -> bool:
    return session.scalar(select(ApiKey.id).limit(1)) is not None


def allows(scopes: Iterable[str], needed: str) -> bool:
    """An admin key may do everything; other keys only what their scopes name."""
    granted = set(scopes)
    return needed in granted or "admin" in granted
