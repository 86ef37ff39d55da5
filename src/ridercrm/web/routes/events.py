"""Admin API for webhook endpoints, and the events documented as the app's webhooks."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, FastAPI, Query
from sqlalchemy.orm import Session

from ridercrm.courses.schemas import COURSE_EVENT_MODELS
from ridercrm.db import MAX_INTEGER_ID
from ridercrm.events import manage
from ridercrm.events.schemas import EVENT_MODELS as EVENTS_OWN_MODELS
from ridercrm.events.schemas import (
    DeliveryList,
    Replayed,
    WebhookAction,
    WebhookCreate,
    WebhookList,
    WebhookRead,
    WebhookReplay,
    WebhookRotate,
    WebhookSecret,
)
from ridercrm.events.service import EVENT_TYPES
from ridercrm.netsafety import AllowList
from ridercrm.web.operations import Operations, Requested
from ridercrm.web.runtime import Reply
from ridercrm.web.validation import parse_model, utc_time

# Every event type's payload, in EVENT_TYPES' order: the events package's own and the
# features' (a course's state is the courses feature's declaration).
_DECLARED = {**EVENTS_OWN_MODELS, **COURSE_EVENT_MODELS}
EVENT_MODELS: dict[str, type[Any]] = {name: _DECLARED[name] for name in EVENT_TYPES}

router = APIRouter(prefix="/admin/webhooks", tags=["admin"])
admin = Operations(router, "admin", scope="admin")

CREATE_EXAMPLE = {
    "url": "https://booking.example.com/hooks/ridercrm",
    "event_types": ["course.status_changed", "lead.converted"],
    "description": "booking website",
}


@dataclass(frozen=True)
class NewWebhook:
    """A registration, with the hosts the operator allows beyond the public internet."""

    data: WebhookCreate
    allow: AllowList
    checked: manage.CheckedUrls


def new_webhook_of(body: Any, request: Requested) -> NewWebhook:
    """The body as a registration; the URL's DNS look-up is made here, before the write
    transaction (never under the write lock)."""
    allow = AllowList.parse(request.settings.webhook_allowed_hosts)
    data = parse_model(WebhookCreate, body)
    return NewWebhook(data, allow, manage.check_url(data.url, allow))


def create_webhook(session: Session, new: NewWebhook) -> Reply:
    """Register an endpoint for some event types; answer its id and signing secret (once)."""
    endpoint, secret = manage.create_endpoint(
        session,
        url=new.data.url,
        event_types=new.data.event_types,
        description=new.data.description,
        allow=new.allow,
        checked=new.checked,
    )
    return Reply({"id": endpoint.id, "secret": secret}, status=201)


admin.post(
    "",
    create_webhook,
    decode=new_webhook_of,
    example=CREATE_EXAMPLE,
    body=WebhookCreate,
    status_code=201,
    ok="Registered; the secret is shown this once.",
    answer=WebhookSecret,
    notes={400: "Or the URL resolves to a loopback, private, link-local or metadata address."},
    summary="Register a webhook endpoint",
)


def list_webhooks(session: Session, _: None) -> Reply:
    """List every endpoint with its state; a disabled one says why."""
    return Reply(
        {
            "webhooks": [
                manage.endpoint_json(e, manage.endpoint_health(session, e.id))
                for e in manage.list_endpoints(session)
            ]
        }
    )


admin.get(
    "",
    list_webhooks,
    response=WebhookList,
    ok="Every endpoint.",
    summary="List webhook endpoints",
)


def read_webhook(session: Session, webhook_id: str) -> Reply:
    """Return one endpoint (never its secret)."""
    endpoint = manage.get_endpoint(session, webhook_id)
    return Reply(manage.endpoint_json(endpoint, manage.endpoint_health(session, endpoint.id)))


admin.get(
    "/{webhook_id}",
    read_webhook,
    response=WebhookRead,
    ok="The endpoint.",
    summary="Read a webhook endpoint",
)


@dataclass(frozen=True)
class Switch:
    """Which endpoint to enable or disable."""

    webhook_id: str


def switch_of(body: Any, request: Requested) -> Switch:
    """The endpoint the path names; the body may only be ``{}``."""
    parse_model(WebhookAction, body)
    return Switch(request.path["webhook_id"])


def disable_webhook(session: Session, switch: Switch) -> Reply:
    """Disable an endpoint: nothing is sent to it; its deliveries wait until it is enabled."""
    return _switched(session, switch, enabled=False)


def enable_webhook(session: Session, switch: Switch) -> Reply:
    """Enable an endpoint: its waiting deliveries are due at once."""
    return _switched(session, switch, enabled=True)


def _switched(session: Session, switch: Switch, *, enabled: bool) -> Reply:
    endpoint = manage.set_enabled(session, endpoint_id=switch.webhook_id, enabled=enabled)
    return Reply(manage.endpoint_json(endpoint))


for _work, _verb, _summary in (
    (disable_webhook, "disable", "Disable a webhook endpoint (its deliveries wait)"),
    (enable_webhook, "enable", "Enable a webhook endpoint (its waiting deliveries are sent)"),
):
    admin.post(
        f"/{{webhook_id}}/{_verb}",
        _work,
        decode=switch_of,
        empty_body_is_object=True,
        endpoint="switch",  # the operationId the document has always given both
        example={},
        body=WebhookAction,
        ok="The endpoint.",
        answer=WebhookRead,
        summary=_summary,
    )


@dataclass(frozen=True)
class Rotation:
    """Which endpoint gets a new secret, and for how long the old one still signs."""

    webhook_id: str
    grace: dt.timedelta


def rotation_of(body: Any, request: Requested) -> Rotation:
    """The body's grace_hours, RIDERCRM_WEBHOOK_SECRET_GRACE_HOURS without one."""
    data = parse_model(WebhookRotate, body)
    hours = (
        request.settings.webhook_secret_grace_hours
        if data.grace_hours is None
        else data.grace_hours
    )
    return Rotation(request.path["webhook_id"], dt.timedelta(hours=hours))


def rotate_webhook_secret(session: Session, rotation: Rotation) -> Reply:
    """Give the endpoint a new secret; the old one also signs for the grace time."""
    endpoint, secret = manage.rotate_secret(
        session, endpoint_id=rotation.webhook_id, grace=rotation.grace
    )
    return Reply({"id": endpoint.id, "secret": secret})


admin.post(
    "/{webhook_id}/rotate",
    rotate_webhook_secret,
    decode=rotation_of,
    name="admin.rotate_webhook",
    empty_body_is_object=True,
    example={"grace_hours": 24},
    body=WebhookRotate,
    ok="The new secret, shown this once.",
    answer=WebhookSecret,
    summary="Rotate a webhook endpoint's secret",
)


@dataclass(frozen=True)
class DeliveriesAsked:
    """The query of an endpoint's deliveries."""

    webhook_id: str
    status: str | None
    limit: int
    before: int | None


def deliveries_asked(
    webhook_id: str,
    status: str | None = Query(None, pattern="^(pending|sending|delivered|failed)$"),
    limit: int = Query(50, ge=1, le=1000),
    before: int | None = Query(None, ge=1, le=MAX_INTEGER_ID, description="next_before of a page"),
) -> DeliveriesAsked:
    """The endpoint the path names, and the query of its deliveries."""
    return DeliveriesAsked(webhook_id, status, limit, before)


def list_webhook_deliveries(session: Session, asked: DeliveriesAsked) -> Reply:
    """Deliveries with status, attempts, response code, latency and next attempt."""
    rows = manage.list_deliveries(
        session,
        endpoint_id=asked.webhook_id,
        limit=asked.limit,
        status=asked.status,
        before=asked.before,
    )
    return Reply(
        {
            "deliveries": [manage.delivery_json(d, t) for d, t in rows],
            "next_before": rows[-1][0].id if len(rows) == asked.limit else None,
        }
    )


admin.get(
    "/{webhook_id}/deliveries",
    list_webhook_deliveries,
    ask=deliveries_asked,
    response=DeliveryList,
    ok="A page of deliveries.",
    summary="List a webhook endpoint's deliveries, newest first",
)


@dataclass(frozen=True)
class Replay:
    """Which endpoint, and which of its events: one (event_id), or all since a time."""

    webhook_id: str
    event_id: str | None
    since: dt.datetime | None


def replay_of(body: Any, request: Requested) -> Replay:
    """The body's event_id or since."""
    data = parse_model(WebhookReplay, body)
    return Replay(request.path["webhook_id"], data.event_id, utc_time("since", data.since))


def replay_webhook(session: Session, replay: Replay) -> Reply:
    """Send one event (event_id), or every event of the endpoint's types since a time, again."""
    count = manage.replay(
        session, endpoint_id=replay.webhook_id, event_id=replay.event_id, since=replay.since
    )
    return Reply({"replayed": count})


admin.post(
    "/{webhook_id}/replay",
    replay_webhook,
    decode=replay_of,
    example={"since": "2026-11-20T00:00:00Z"},
    body=WebhookReplay,
    ok="The deliveries added.",
    answer=Replayed,
    summary="Send events to a webhook endpoint again",
)


# --- The events, as the OpenAPI document's webhooks -------------------------------------

SIGNATURE_HEADERS = [
    {"name": "webhook-id", "in": "header", "required": True, "schema": {"type": "string"},
     "description": "The event's id (msg_...): the same on every attempt and replay; deduplicate by it."},
    {"name": "webhook-timestamp", "in": "header", "required": True, "schema": {"type": "string"},
     "description": "Seconds since the epoch when this attempt was signed."},
    {"name": "webhook-signature", "in": "header", "required": True, "schema": {"type": "string"},
     "description": "Space-separated v1,<base64 HMAC-SHA256 of id.timestamp.body>; two during a secret rotation."},
]  # fmt: skip


def _receiver(event_type: str, model: type[Any]) -> Any:
    def receive(body: Any) -> None:
        pass

    receive.__annotations__ = {"body": model, "return": None}
    receive.__doc__ = model.__doc__
    receive.__name__ = "event_" + event_type.replace(".", "_")
    return receive


def install_webhooks(app: FastAPI) -> None:
    """Document each event type as a webhook of the app (Standard Webhooks 1.0)."""
    for event_type, model in EVENT_MODELS.items():
        app.webhooks.post(
            event_type,
            summary=event_type,
            openapi_extra={"parameters": SIGNATURE_HEADERS},
            responses={"2XX": {"description": "Received; any other answer is retried."}},
        )(_receiver(event_type, model))
