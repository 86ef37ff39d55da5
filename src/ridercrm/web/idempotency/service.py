"""Idempotency-Key handling (docs/decisions.md, "Retries (Idempotency-Key)"), after the IETF httpapi draft and Stripe.

A first request claims its key; the stored response is replayed to repeats with the
same body. The same key with another body is refused (422); a repeat while the first
is still running is refused (409). A claim left by a request that died is released
when its lock time has passed, so a retry never waits a whole expiry period.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from ridercrm.db import utcnow
from ridercrm.errors import ApiError
from ridercrm.web.idempotency.models import IdempotencyRecord

MAX_KEY_LENGTH = 255


@dataclass(frozen=True)
class Claim:
    """This request owns the key and must store its response."""

    record_id: int


@dataclass(frozen=True)
class Replay:
    """The key was used before with the same body: answer what was answered then."""

    status: int
    headers: dict[str, str]
    body: bytes
    audit_id: str


def request_hash(
    method: str, path: str, body: bytes, *, content_type: str = "", as_sent: bool = False
) -> str:
    """The request's fingerprint: its method, path, declared content type (its charset
    says what the bytes are) and body, a JSON body as the data it holds (members in any
    order, any spacing: a client library may serialise the same request either way on a
    retry). ``as_sent``: method, path and the body's bytes as they came, the fingerprint
    of keys claimed before 2026-11-29 (accepted too until they expire)."""
    digest = hashlib.sha256()
    parts = (
        (method.encode(), path.encode(), body)
        if as_sent
        else (
            method.encode(),
            path.encode(),
            content_type.strip().lower().encode(),
            _canonical(body),
        )
    )
    for part in parts:
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


def _no_repeats(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """An object as the wire reads it: a key given twice is no data (wire.parse_json
    refuses the body), so such a body is fingerprinted as its bytes."""
    found = dict(pairs)
    if len(found) != len(pairs):
        raise ValueError("a key given twice")
    return found


def _canonical(body: bytes) -> bytes:
    """A JSON body written one way (keys sorted, no spaces); any other body as it is."""
    try:
        data = json.loads(body, object_pairs_hook=_no_repeats)
    except (ValueError, RecursionError):  # not JSON, a key twice, too deep, a huge number
        return body
    try:
        return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    except (ValueError, RecursionError):
        return body


def check_key(key: str) -> str:
    key = key.strip()
    if not key or len(key) > MAX_KEY_LENGTH or not key.isprintable():
        raise ApiError(400, f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} printable characters")
    return key


def claim(
    session: Session,
    *,
    api_key_id: int,
    key: str,
    fingerprint: str,
    audit_id: str,
    ttl: dt.timedelta,
    lock: dt.timedelta,
    as_sent: str | None = None,
) -> Claim | Replay:
    """Claim ``key`` for this request, or return the stored answer, or refuse.
    ``as_sent``: the body's fingerprint as sent, which a key claimed by an earlier
    version holds (``request_hash``)."""
    now = utcnow()
    record = session.scalar(
        select(IdempotencyRecord).where(
            IdempotencyRecord.api_key_id == api_key_id, IdempotencyRecord.key == key
        )
    )
    if record is not None and record.expires_at <= now:
        session.delete(record)
        session.flush()
        record = None
    if record is None:
        record = IdempotencyRecord(
            api_key_id=api_key_id,
            key=key,
            request_hash=fingerprint,
            audit_id=audit_id,
            created_at=now,
            expires_at=now + ttl,
            locked_until=now + lock,
        )
        session.add(record)
        session.flush()
        return Claim(record.id)
    if record.request_hash not in (fingerprint, as_sent):
        raise ApiError(422, "Idempotency-Key was already used with a different request")
    if record.response_status is not None and record.response_body is not None:
        return Replay(
            status=record.response_status,
            headers=dict(record.response_headers or {}),
            body=record.response_body,
            audit_id=record.audit_id,
        )
    if record.locked_until is not None and record.locked_until > now:
        raise ApiError(
            409,
            "a request with this Idempotency-Key is still being processed",
            headers={"Retry-After": "1"},
        )
    # The first attempt died before answering: this retry takes the key over.
    record.audit_id = audit_id
    record.locked_until = now + lock
    session.flush()
    return Claim(record.id)


def store_response(
    session: Session, *, claim: Claim, status: int, headers: dict[str, str], body: bytes
) -> None:
    """Keep the answer for repeats; a server error is not kept, so a retry runs again."""
    if status >= 500:
        release(session, claim)
        return
    record = session.get(IdempotencyRecord, claim.record_id)
    if record is None:
        return
    record.response_status = status
    record.response_headers = headers
    record.response_body = body
    record.locked_until = None


def release(session: Session, claim: Claim) -> None:
    """Free a claimed key whose request ended in a server error, answered (a 5xx,
    ``store_response``) or raised: a retry claims it afresh."""
    record = session.get(IdempotencyRecord, claim.record_id)
    if record is not None and record.response_status is None:
        session.delete(record)
