"""Admin API for webhook endpoints, and the events documented as the app's webhooks."""

from __future__ import annotations

import datetime as dt
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.responses import Response
from sqlalchemy.orm import Session

from ridercrm.audit.call import Call
from ridercrm.errors import ApiError
from ridercrm.events import manage
from ridercrm.events.schemas import (
    EVENT_MODELS,
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
from ridercrm.netsafety import AllowList, UnsafeUrl
from ridercrm.web import openapi
from ridercrm.web.runtime import Reply, app_context, operation, run_post, run_read
from ridercrm.web.validation import parse_model, utc_time

router = APIRouter(prefix="/admin/webhooks", tags=["admin"])

CREATE_EXAMPLE = {
    "url": "https://booking.example.com/hooks/ridercrm",
    "event_types": ["course.status_changed", "lead.converted"],
    "description": "booking website",
}


def _problem(exc: Exception) -> ApiError:
    if isinstance(exc, manage.NoSuchEndpoint):
        return ApiError(404, f"no webhook endpoint with id {exc.args[0]}")
    reason = str(exc)
    return ApiError(400, reason, errors=[reason])


def _allow(request: Request) -> AllowList:
    return AllowList.parse(app_context(request).settings.webhook_allowed_hosts)


@router.post(
    "",
    status_code=201,
    summary="Register a webhook endpoint",
    openapi_extra=openapi.request_body(WebhookCreate, example=CREATE_EXAMPLE),
    responses=openapi.responses(
        ok=(
            201,
            "Registered; the secret is shown this once.",
            openapi.json_content(openapi.ref(WebhookSecret)),
        ),
        refused=openapi.ADMIN_POST_REFUSALS,
        notes={400: "Or the URL resolves to a loopback, private, link-local or metadata address."},
    ),
)
async def create_webhook(
    request: Request, call: Call = Depends(operation("admin.create_webhook", scope="admin"))
) -> Response:
    """Register an endpoint for some event types; answer its id and signing secret (once)."""
    allow = _allow(request)

    def handler(session: Session, payload: Any) -> Reply:
        data = parse_model(WebhookCreate, payload)
        try:
            endpoint, secret = manage.create_endpoint(
                session,
                url=data.url,
                event_types=data.event_types,
                description=data.description,
                allow=allow,
            )
        except (UnsafeUrl, manage.EndpointProblem) as exc:
            raise _problem(exc) from None
        return Reply({"id": endpoint.id, "secret": secret}, status=201)

    return await run_post(request, call, handler)


@router.get(
    "",
    summary="List webhook endpoints",
    responses=openapi.responses(
        ok=(200, "Every endpoint.", openapi.json_content(openapi.ref(WebhookList))),
        refused=openapi.READ_REFUSALS,
    ),
)
async def list_webhooks(
    request: Request, _call: Call = Depends(operation("admin.list_webhooks", scope="admin"))
) -> Response:
    """List every endpoint with its state; a disabled one says why."""

    def handler(session: Session, _payload: None) -> Reply:
        return Reply(
            {"webhooks": [manage.endpoint_json(e) for e in manage.list_endpoints(session)]}
        )

    return await run_read(request, handler)


@router.get(
    "/{webhook_id}",
    summary="Read a webhook endpoint",
    responses=openapi.responses(
        ok=(200, "The endpoint.", openapi.json_content(openapi.ref(WebhookRead))),
        refused=openapi.RECORD_REFUSALS,
    ),
)
async def read_webhook(
    request: Request,
    webhook_id: str,
    _call: Call = Depends(operation("admin.read_webhook", scope="admin")),
) -> Response:
    """Return one endpoint (never its secret)."""

    def handler(session: Session, _payload: None) -> Reply:
        try:
            return Reply(manage.endpoint_json(manage.get_endpoint(session, webhook_id)))
        except manage.NoSuchEndpoint as exc:
            raise _problem(exc) from None

    return await run_read(request, handler)


def _empty_means_object(call: Call) -> None:
    # Action routes need no body; run_post decodes one, so an empty body reads as {}.
    if not (call.request_body or b"").strip():
        call.request_body = b"{}"


def _switch(enabled: bool) -> Any:
    async def switch(
        request: Request,
        webhook_id: str,
        call: Call = Depends(
            operation(f"admin.{'enable' if enabled else 'disable'}_webhook", scope="admin")
        ),
    ) -> Response:
        _empty_means_object(call)

        def handler(session: Session, payload: Any) -> Reply:
            parse_model(WebhookAction, payload)
            try:
                endpoint = manage.set_enabled(session, endpoint_id=webhook_id, enabled=enabled)
            except manage.NoSuchEndpoint as exc:
                raise _problem(exc) from None
            return Reply(manage.endpoint_json(endpoint))

        return await run_post(request, call, handler)

    return switch


_SWITCH_DOC = openapi.responses(
    ok=(200, "The endpoint.", openapi.json_content(openapi.ref(WebhookRead))),
    refused=(*openapi.ADMIN_POST_REFUSALS, 404),
)
disable_webhook = router.post(
    "/{webhook_id}/disable",
    summary="Disable a webhook endpoint (its deliveries wait)",
    description="Disable an endpoint: nothing is sent to it; its deliveries wait until it is enabled.",
    openapi_extra=openapi.request_body(WebhookAction, example={}),
    responses=_SWITCH_DOC,
)(_switch(False))
enable_webhook = router.post(
    "/{webhook_id}/enable",
    summary="Enable a webhook endpoint (its waiting deliveries are sent)",
    description="Enable an endpoint: its waiting deliveries are due at once.",
    openapi_extra=openapi.request_body(WebhookAction, example={}),
    responses=_SWITCH_DOC,
)(_switch(True))


@router.post(
    "/{webhook_id}/rotate",
    summary="Rotate a webhook endpoint's secret",
    openapi_extra=openapi.request_body(WebhookRotate, example={"grace_hours": 24}),
    responses=openapi.responses(
        ok=(
            200,
            "The new secret, shown this once.",
            openapi.json_content(openapi.ref(WebhookSecret)),
        ),
        refused=(*openapi.ADMIN_POST_REFUSALS, 404),
    ),
)
async def rotate_webhook_secret(
    request: Request,
    webhook_id: str,
    call: Call = Depends(operation("admin.rotate_webhook", scope="admin")),
) -> Response:
    """Give the endpoint a new secret; the old one also signs for the grace time."""
    default_grace = app_context(request).settings.webhook_secret_grace_hours
    _empty_means_object(call)

    def handler(session: Session, payload: Any) -> Reply:
        data = parse_model(WebhookRotate, payload)
        hours = default_grace if data.grace_hours is None else data.grace_hours
        try:
            endpoint, secret = manage.rotate_secret(
                session, endpoint_id=webhook_id, grace=dt.timedelta(hours=hours)
            )
        except manage.NoSuchEndpoint as exc:
            raise _problem(exc) from None
        return Reply({"id": endpoint.id, "secret": secret})

    return await run_post(request, call, handler)


@router.get(
    "/{webhook_id}/deliveries",
    summary="List a webhook endpoint's deliveries, newest first",
    responses=openapi.responses(
        ok=(200, "A page of deliveries.", openapi.json_content(openapi.ref(DeliveryList))),
        refused=openapi.RECORD_REFUSALS,
    ),
)
async def list_webhook_deliveries(
    request: Request,
    webhook_id: str,
    status: str | None = Query(None, pattern="^(pending|sending|delivered|failed)$"),
    limit: int = Query(50, ge=1, le=1000),
    before: int | None = Query(None, ge=1, le=2**62, description="next_before of a page"),
    _call: Call = Depends(operation("admin.list_webhook_deliveries", scope="admin")),
) -> Response:
    """Deliveries with status, attempts, response code, latency and next attempt."""

    def handler(session: Session, _payload: None) -> Reply:
        try:
            rows = manage.list_deliveries(
                session, endpoint_id=webhook_id, limit=limit, status=status, before=before
            )
        except manage.NoSuchEndpoint as exc:
            raise _problem(exc) from None
        return Reply(
            {
                "deliveries": [manage.delivery_json(d, t) for d, t in rows],
                "next_before": rows[-1][0].id if len(rows) == limit else None,
            }
        )

    return await run_read(request, handler)


@router.post(
    "/{webhook_id}/replay",
    summary="Send events to a webhook endpoint again",
    openapi_extra=openapi.request_body(WebhookReplay, example={"since": "2026-11-20T00:00:00Z"}),
    responses=openapi.responses(
        ok=(200, "The deliveries added.", openapi.json_content(openapi.ref(Replayed))),
        refused=(*openapi.ADMIN_POST_REFUSALS, 404),
    ),
)
async def replay_webhook(
    request: Request,
    webhook_id: str,
    call: Call = Depends(operation("admin.replay_webhook", scope="admin")),
) -> Response:
    """Send one event (event_id), or every event of the endpoint's types since a time, again."""

    def handler(session: Session, payload: Any) -> Reply:
        data = parse_model(WebhookReplay, payload)
        since = utc_time("since", data.since)
        try:
            count = manage.replay(
                session, endpoint_id=webhook_id, event_id=data.event_id, since=since
            )
        except (manage.NoSuchEndpoint, manage.EndpointProblem) as exc:
            raise _problem(exc) from None
        return Reply({"replayed": count})

    return await run_post(request, call, handler)


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
