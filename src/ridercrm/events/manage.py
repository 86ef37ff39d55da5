"""Webhook endpoints: register, list, rotate secrets, disable and enable, log, replay."""

from __future__ import annotations

import base64
import datetime as dt
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from ridercrm.db import utcnow
from ridercrm.errors import NOT_FOUND, DomainError
from ridercrm.events.models import (
    DELIVERED,
    FAILED,
    PENDING,
    Delivery,
    Event,
    WebhookEndpoint,
    is_open,
)
from ridercrm.events.service import KNOWN_TYPES, forget_subscribers
from ridercrm.fields import control_problem
from ridercrm.netsafety import AllowList, Target, UnsafeUrl, resolve


class EndpointProblem(DomainError, ValueError):
    """A request about endpoints that cannot be carried out; the message says why."""


class NoSuchEndpoint(DomainError, LookupError):
    """No endpoint has this id (``endpoint_id``, NUL shown as ``\\x00``)."""

    kind = NOT_FOUND
    listed = False

    def __init__(self, endpoint_id: str) -> None:
        super().__init__(f"no webhook endpoint with id {endpoint_id}")
        self.endpoint_id = endpoint_id


def new_secret() -> str:
    """A fresh signing secret in the Standard Webhooks form (whsec_ + base64 of 24 bytes)."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode("ascii")


def check_event_types(event_types: Sequence[str]) -> list[str]:
    """The types, de-duplicated, in order; EndpointProblem if one is unknown or none given."""
    if not event_types:
        raise EndpointProblem("event_types: name at least one event type")
    unknown = [name for name in event_types if name not in KNOWN_TYPES]
    if unknown:
        raise EndpointProblem(
            f"event_types: unknown {', '.join(map(str, unknown))}; known: {', '.join(KNOWN_TYPES)}"
        )
    return list(dict.fromkeys(event_types))


CheckedUrls = Mapping[str, UnsafeUrl | Target]


def check_url(url: str, allow: AllowList) -> CheckedUrls:
    """Resolve and check a URL now, before any transaction: {url: where it goes, or why
    it is unsafe}.

    DNS can take seconds; done inside the write transaction it would hold the write
    lock (SQLite) that long. ``create_endpoint`` takes the result.
    """
    try:
        return {url: resolve(url, allow)}
    except UnsafeUrl as exc:
        return {url: exc}


def create_endpoint(
    session: Session,
    *,
    url: str,
    event_types: Sequence[str],
    description: str,
    allow: AllowList,
    checked: CheckedUrls | None = None,
) -> tuple[WebhookEndpoint, str]:
    """Register an endpoint; return it and its secret (shown once).

    ``checked`` is ``check_url``'s answer, made before the transaction; a URL it does
    not hold is checked here. The entries of ``allow`` the URL needed (a loopback or
    private address the operator allowed) are stored with the endpoint: every deliverer
    honours them, whether or not its own RIDERCRM_WEBHOOK_ALLOWED_HOSTS names them.
    """
    if (problem := control_problem(description)) is not None:
        raise EndpointProblem(f"description: {problem}", field="description")
    if checked is not None and url in checked:
        found = checked[url]
        if isinstance(found, UnsafeUrl):
            raise EndpointProblem(str(found), field="url") from found
        target = found
    else:
        try:
            target = resolve(url, allow)
        except UnsafeUrl as exc:
            raise EndpointProblem(str(exc), field="url") from exc
    endpoint = WebhookEndpoint(
        id="ep_" + secrets.token_hex(8),
        url=url,
        description=description,
        event_types=check_event_types(event_types),
        secret=new_secret(),
        allowed_hosts=",".join(target.allowed),
        enabled=True,
        created_at=utcnow(),
    )
    session.add(endpoint)
    session.flush()
    forget_subscribers(session)
    return endpoint, endpoint.secret


def list_endpoints(session: Session) -> Sequence[WebhookEndpoint]:
    """Every endpoint, oldest first."""
    return session.scalars(select(WebhookEndpoint).order_by(WebhookEndpoint.created_at)).all()


def get_endpoint(session: Session, endpoint_id: str, *, lock: bool = False) -> WebhookEndpoint:
    """The endpoint with this id; NoSuchEndpoint otherwise."""
    if "\x00" in endpoint_id:
        # No stored id holds NUL, and PostgreSQL refuses it in a query's text.
        raise NoSuchEndpoint(endpoint_id.replace("\x00", "\\x00"))
    endpoint = session.get(WebhookEndpoint, endpoint_id, with_for_update=lock or None)
    if endpoint is None:
        raise NoSuchEndpoint(endpoint_id)
    return endpoint


def rotate_secret(
    session: Session, *, endpoint_id: str, grace: dt.timedelta
) -> tuple[WebhookEndpoint, str]:
    """Give the endpoint a new secret; the old one also signs until the grace time ends."""
    endpoint = get_endpoint(session, endpoint_id, lock=True)
    if grace > dt.timedelta(0):
        endpoint.previous_secret = endpoint.secret
        endpoint.previous_secret_until = utcnow() + grace
    else:
        endpoint.previous_secret = None
        endpoint.previous_secret_until = None
    endpoint.secret = new_secret()
    return endpoint, endpoint.secret


def set_enabled(session: Session, *, endpoint_id: str, enabled: bool) -> WebhookEndpoint:
    """Disable an endpoint (its deliveries wait) or enable it (they are due at once)."""
    endpoint = get_endpoint(session, endpoint_id, lock=True)
    if enabled and not endpoint.enabled:
        endpoint.enabled = True
        endpoint.disabled_reason = None
        endpoint.disabled_at = None
        session.execute(
            update(Delivery)
            .where(Delivery.endpoint_id == endpoint.id, Delivery.status == PENDING)
            .values(next_attempt_at=utcnow())
        )
    elif not enabled and endpoint.enabled:
        endpoint.enabled = False
        endpoint.disabled_reason = "disabled by an operator"
        endpoint.disabled_at = utcnow()
    forget_subscribers(session)
    return endpoint


def list_deliveries(
    session: Session,
    *,
    endpoint_id: str,
    limit: int,
    status: str | None = None,
    before: int | None = None,
) -> list[tuple[Delivery, str]]:
    """An endpoint's deliveries, newest first, each with its event's type."""
    get_endpoint(session, endpoint_id)
    query = (
        select(Delivery, Event.type)
        .join(Event, Event.id == Delivery.event_id)
        .where(Delivery.endpoint_id == endpoint_id)
        .order_by(Delivery.id.desc())
        .limit(limit)
    )
    if status is not None:
        query = query.where(Delivery.status == status)
    if before is not None:
        query = query.where(Delivery.id < before)
    return [(row[0], row[1]) for row in session.execute(query)]


def replay(
    session: Session,
    *,
    endpoint_id: str,
    event_id: str | None = None,
    since: dt.datetime | None = None,
) -> int:
    """Send one event, or every event of the endpoint's types since a time, again; return how many."""
    endpoint = get_endpoint(session, endpoint_id)
    if (event_id is None) == (since is None):
        raise EndpointProblem("name either event_id or since")
    query = select(Event.id, Event.subject, Event.type).order_by(Event.created_at, Event.id)
    if event_id is not None:
        if "\x00" in event_id:  # no stored id holds NUL; PostgreSQL refuses it in a query
            raise EndpointProblem("event_id: no such event")
        query = query.where(Event.id == event_id)
    else:
        query = query.where(Event.created_at >= since, Event.type.in_(endpoint.event_types))
    rows = session.execute(query).all()
    if event_id is not None:
        if not rows:
            raise EndpointProblem(f"event_id: no event {event_id}")
        if rows[0].type not in endpoint.event_types:
            # Its payload may hold personal fields the endpoint never asked for.
            raise EndpointProblem(f"event_id: the endpoint does not receive {rows[0].type} events")
    now = utcnow()
    session.add_all(
        Delivery(event_id=row.id, endpoint_id=endpoint.id, subject=row.subject, next_attempt_at=now)
        for row in rows
    )
    session.flush()
    return len(rows)


@dataclass(frozen=True)
class Health:
    """How an endpoint's deliveries are going (endpoint_health says what each means)."""

    last_success: dt.datetime | None
    failing_since: dt.datetime | None
    pending: int
    last_error: str | None


def health_of(session: Session, endpoint_id: str) -> Health:
    """How an endpoint's deliveries are going: when one last succeeded, since when they
    have been failing (the oldest delivery tried and not delivered since that success:
    still retrying, or given up), how many wait to be sent, and what the newest of those
    failing deliveries was told (``HTTP 500``, ``timed out``...). `enabled` alone says
    nothing of an endpoint whose every delivery fails."""
    mine = Delivery.endpoint_id == endpoint_id
    last_success = session.scalar(
        select(func.max(Delivery.finished_at)).where(mine, Delivery.status == DELIVERED)
    )
    tried = (is_open(Delivery.status) & (Delivery.attempts > 0)) | (Delivery.status == FAILED)
    failing = select(func.min(Delivery.created_at)).where(mine, tried)
    if last_success is not None:
        failing = failing.where(Delivery.created_at >= last_success)
    pending = session.scalar(select(func.count()).where(mine, is_open(Delivery.status)))
    failing_since = session.scalar(failing)
    last_error = None
    if failing_since is not None:
        last_error = session.scalar(
            select(Delivery.error)
            .where(mine, tried, Delivery.created_at >= failing_since)
            .order_by(Delivery.id.desc())
            .limit(1)
        )
    return Health(last_success, failing_since, pending or 0, last_error)


def endpoint_health(session: Session, endpoint_id: str) -> dict[str, Any]:
    """health_of as the admin API and `webhooks list` show it (ISO 8601 times, UTC)."""
    health = health_of(session, endpoint_id)
    return {
        "last_success": _iso(health.last_success),
        "failing_since": _iso(health.failing_since),
        "pending": health.pending,
        "last_error": health.last_error,
    }


def endpoint_json(
    endpoint: WebhookEndpoint, health: dict[str, Any] | None = None
) -> dict[str, Any]:
    """An endpoint as the admin API shows it: never its secrets; with ``health``
    (endpoint_health) when the caller read it."""
    return {
        **({"health": health} if health is not None else {}),
        "id": endpoint.id,
        "url": endpoint.url,
        "description": endpoint.description,
        "event_types": list(endpoint.event_types),
        "allowed_hosts": [entry for entry in (endpoint.allowed_hosts or "").split(",") if entry],
        "enabled": endpoint.enabled,
        "disabled_reason": endpoint.disabled_reason,
        "disabled_at": _iso(endpoint.disabled_at),
        "previous_secret_until": _iso(endpoint.previous_secret_until),
        "created_at": _iso(endpoint.created_at),
    }


def delivery_json(delivery: Delivery, event_type: str) -> dict[str, Any]:
    """A delivery log entry: ids, status, response code, latency and times; no payload."""
    return {
        "id": delivery.id,
        "event_id": delivery.event_id,
        "event_type": event_type,
        "status": delivery.status,
        "attempts": delivery.attempts,
        "response_code": delivery.response_code,
        "latency_ms": delivery.latency_ms,
        "error": delivery.error,
        "next_attempt_at": _iso(delivery.next_attempt_at) if delivery.status == PENDING else None,
        "created_at": _iso(delivery.created_at),
        "finished_at": _iso(delivery.finished_at),
    }


def _iso(value: dt.datetime | None) -> str | None:
    return value.isoformat() if value is not None else None
