"""The audit middleware: every API request gets an audit record, whatever happens.

A request that wrote has its record committed with its work (``runtime.run_post``);
for every other request (reads, refusals, errors, replays) this middleware writes the
record. It holds the response back until the record is committed, then adds the
``X-Audit-Id`` header and sends it, so an audit id a client sees always names a
stored record. It also turns any unexpected exception into a rendered error (never a
bare 500 page), and records metrics and one log line per request.

The one exception: requests refused without a valid key (401, unknown paths) beyond
``RIDERCRM_REFUSED_RATE_LIMIT`` from one client address are answered 429 with no
audit record, no audit id and no log line (metrics count them; one warning per
address and minute), so a flood cannot fill the disk through the audit trail or logs.
"""

from __future__ import annotations

import ipaddress
import logging
import time
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ridercrm.audit.call import Call
from ridercrm.audit.service import Finished, record_calls
from ridercrm.db import session_scope
from ridercrm.errors import ApiError
from ridercrm.ratelimit import Refusal
from ridercrm.web import metrics
from ridercrm.web.audit_batch import AuditBatcher, Expected
from ridercrm.web.runtime import CLIENT_CLOSED, NOT_HANDING
from ridercrm.wire import encode_json, header_value

log = logging.getLogger("ridercrm.http")  # the name logs have always carried

UNAUDITED = frozenset({"/healthz", "/readyz", "/metrics", "/docs", "/openapi.json", "/redoc"})
UNAUDITED_PREFIX = "/docs-assets/"  # the documentation pages' scripts and styles


class AuditMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._warned: dict[str, float] = {}  # address -> when its flood was last logged

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in UNAUDITED or path.startswith(UNAUDITED_PREFIX):
            await self.app(scope, receive, send)
            return
        call = Call(method=scope["method"], path=scope["path"])
        scope.setdefault("state", {})["call"] = call
        services = scope["app"].state.context
        batcher: AuditBatcher | None = getattr(services, "audit_batcher", None)
        if batcher is None:
            await self._audited(scope, receive, send, call, services, None)
            return
        # The group commit waits a little for the records of the requests in flight; a
        # write, whose record is committed with its work, is forgotten once it is known
        # to be one (runtime.not_handing_a_record).
        expected = batcher.expect()
        scope["state"][NOT_HANDING] = expected.forget
        try:
            await self._audited(scope, receive, send, call, services, expected)
        finally:
            expected.forget()

    async def _audited(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        call: Call,
        services: Any,
        expected: Expected | None,
    ) -> None:
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
        except ClientDisconnect:
            start, parts = _rendered(
                call, ApiError(CLIENT_CLOSED, "the client closed the connection")
            )
        except Exception:
            log.exception(
                "unhandled error", extra={"audit_id": call.audit_id, "operation": call.operation}
            )
            start, parts = _internal_error(call)
        if start is None:
            start, parts = _internal_error(call)
        status = int(start["status"])
        body = b"".join(parts)
        elapsed = time.perf_counter() - call.started
        flooded = self._over_refusal_bound(services, scope, call, status)
        if flooded is not None:
            if expected is not None:
                expected.forget()  # no record: the batch need not wait for it
            metrics.observe(call.operation, 429, elapsed)
            await _send(send, *_flood_response(call, flooded))
            return
        try:
            if not call.recorded:
                await _write_audit(services, expected, call, status, body, elapsed)
        except Exception:
            log.exception("audit record not stored", extra={"audit_id": call.audit_id})
            status = 503
            start = {"type": "http.response.start", "status": 503, "headers": []}
            # Only a request whose work began to commit can have been applied; one
            # refused or failed before that (authentication included) was not.
            applied = "may have been applied" if call.committing else "was not applied"
            body = encode_json({"detail": f"the audit trail is unavailable; the request {applied}"})
            start["headers"] = [(b"content-type", b"application/json")]
        else:
            headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"x-audit-id"]
            headers.append((b"x-audit-id", call.audit_id.encode()))
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
        await _send(send, start, body)

    def _over_refusal_bound(
        self, services: Any, scope: Scope, call: Call, status: int
    ) -> Refusal | None:
        """Count a request refused without a valid key against its client address."""
        limiter = services.refused_limiter
        if limiter is None or call.caller is not None or status >= 500 or status < 400:
            return None
        address = client_address(scope)
        refusal: Refusal | None = limiter.check(address)
        if refusal is not None:
            now = time.monotonic()
            if now - self._warned.get(address, -WARN_EVERY_S) >= WARN_EVERY_S:
                if len(self._warned) > 10_000:
                    self._warned.clear()  # bounded, whatever the number of addresses
                self._warned[address] = now
                log.warning(
                    "refused requests over the bound: answered 429 without audit records",
                    extra={"limit": refusal.limit, "operation": call.operation},
                )
        return refusal


WARN_EVERY_S = 60.0


def client_address(scope: Scope) -> str:
    """The client's address; IPv6 by its /64, which one host may fill with addresses."""
    client = scope.get("client")
    host = client[0] if client else ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host or "unknown"
    if address.version == 6:
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def _flood_response(call: Call, refusal: Refusal) -> tuple[Message, bytes]:
    """429 in the operation's shape, with no audit id: no record is stored for it."""
    error = ApiError(
        429,
        refusal.reason,
        headers={"Retry-After": str(refusal.retry_after)},
    )
    rendered: Any = call.shape(error, "")
    start, parts = _message(429, rendered)
    start["headers"] += [
        (b"retry-after", str(refusal.retry_after).encode()),
        (b"x-failure-reason", header_value(refusal.reason).encode("ascii")),
    ]
    return start, b"".join(parts)


async def _send(send: Send, start: Message, body: bytes) -> None:
    headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
    headers.append((b"content-length", str(len(body)).encode()))
    if not any(k.lower() == b"cache-control" for k, _v in headers):
        # Personal data and secrets; a key in X-API-Key does not keep shared caches away
        # as Authorization does (RFC 9111, 3.5).
        headers.append((b"cache-control", b"no-store"))
    await send({**start, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def _internal_error(call: Call) -> tuple[Message, list[bytes]]:
    return _rendered(call, ApiError(500, "internal error"))


def _rendered(call: Call, error: ApiError) -> tuple[Message, list[bytes]]:
    call.failure_reason = error.reason
    return _message(error.status, call.shape(error, call.audit_id))


def _message(status: int, rendered: Any) -> tuple[Message, list[bytes]]:
    if isinstance(rendered, str):
        body, media = rendered.encode(), b"text/plain; charset=utf-8"
    else:
        body, media = encode_json(rendered), b"application/json"
    start = {"type": "http.response.start", "status": status, "headers": [(b"content-type", media)]}
    return start, [body]


async def _write_audit(
    services: Any,
    expected: Expected | None,
    call: Call,
    status: int,
    body: bytes,
    elapsed: float,
) -> None:
    """Store the record of a request that wrote nothing; return once it is committed.

    Through the app's group commit (web.audit_batch) when it has one (``create_app``
    makes it), else in a transaction of its own.
    """
    finished = Finished(call, status, body, elapsed * 1000)
    if expected is not None:
        await expected.batcher.write(finished, expected)
        return
    await run_in_threadpool(_write_alone, services, finished)


def _write_alone(services: Any, finished: Finished) -> None:
    with session_scope(services.sessions, write=True) as session:
        record_calls(session, [finished], redact=services.settings.audit_redact)
