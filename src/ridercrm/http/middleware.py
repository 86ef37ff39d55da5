"""The audit middleware: every API request gets an audit record, whatever happens.

It holds the response back until the audit record is committed, then adds the
``X-Audit-Id`` header and sends it, so an audit id a client sees always names a
stored record. It also turns any unexpected exception into a rendered error (never a
bare 500 page), and records metrics and one log line per request.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ridercrm.audit.service import record_call
from ridercrm.db import session_scope
from ridercrm.http import metrics
from ridercrm.http.context import Call
from ridercrm.http.errors import ApiError
from ridercrm.http.wire import encode_json

log = logging.getLogger("ridercrm.http")

UNAUDITED = frozenset({"/healthz", "/readyz", "/metrics", "/docs", "/openapi.json", "/redoc"})
UNAUDITED_PREFIX = "/docs-assets/"  # the documentation pages' scripts and styles


class AuditMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in UNAUDITED or path.startswith(UNAUDITED_PREFIX):
            await self.app(scope, receive, send)
            return
        call = Call(method=scope["method"], path=scope["path"])
        scope.setdefault("state", {})["call"] = call
        start: Message | None = None
        parts: list[bytes] = []

        async def hold(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
            elif message["type"] == "http.response.body":
                parts.append(message.get("body", b""))

        try:
            await self.app(scope, receive, hold)
        except Exception:
            log.exception(
                "unhandled error", extra={"audit_id": call.audit_id, "operation": call.operation}
            )
            start, parts = _internal_error(call)
        if start is None:
            start, parts = _internal_error(call)
        status = int(start["status"])
        body = b"".join(parts)
        services = scope["app"].state.services
        elapsed = time.perf_counter() - call.started
        try:
            await run_in_threadpool(_write_audit, services, call, status, body, elapsed)
        except Exception:
            log.exception("audit record not stored", extra={"audit_id": call.audit_id})
            status = 503
            start = {"type": "http.response.start", "status": 503, "headers": []}
            body = encode_json(
                {"detail": "the audit trail is unavailable; the request may have been applied"}
            )
            start["headers"] = [(b"content-type", b"application/json")]
        else:
            headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"x-audit-id"]
            headers.append((b"x-audit-id", call.audit_id.encode()))
            start = {**start, "headers": headers}
        headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        start = {**start, "headers": headers}
        metrics.observe(call.operation, status, elapsed)
        log.info(
            "request",
            extra={
                "audit_id": call.audit_id,
                "operation": call.operation,
                "method": call.method,
                # The route's template (below the base path), not the path sent: a client
                # may put anything in a path, an e-mail address where an id belongs.
                # The audit record has the path.
                "path": getattr(scope.get("route"), "path", None),
                "status": status,
                "duration_ms": round(elapsed * 1000, 2),
                "key": call.caller.name if call.caller else None,
            },
        )
        await send(start)
        await send({"type": "http.response.body", "body": body, "more_body": False})


def _internal_error(call: Call) -> tuple[Message, list[bytes]]:
    error = ApiError(500, "internal error")
    call.failure_reason = "internal error"
    rendered: Any = call.shape(error, call.audit_id)
    if isinstance(rendered, str):
        body, media = rendered.encode(), b"text/plain; charset=utf-8"
    else:
        body, media = encode_json(rendered), b"application/json"
    start = {"type": "http.response.start", "status": 500, "headers": [(b"content-type", media)]}
    return start, [body]


def _write_audit(services: Any, call: Call, status: int, body: bytes, elapsed: float) -> None:
    with session_scope(services.sessions, write=True) as session:
        record_call(
            session,
            call=call,
            status=status,
            response_body=body,
            duration_ms=elapsed * 1000,
            redact=services.settings.audit_redact,
        )
