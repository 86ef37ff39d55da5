"""The request path shared by every endpoint: read, authenticate, decode, run, render.

Endpoints stay thin: :mod:`ridercrm.web.operations` declares each operation (its name,
scope, error shape and a module-level function (session, payload) -> Reply) and hands it
to :func:`run_post` (a POST, ``post``) or :func:`run_read` (a GET, ``get``).
The commit happens inside those functions, before the response exists, so a 200 is
only ever sent for work that is stored; a writing request's audit record is committed
in the same transaction as its work, so neither is ever stored without the other.
"""

from __future__ import annotations

import datetime as dt
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, cast

from fastapi import Request
from fastapi.responses import Response
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from ridercrm.audit.call import Call, Caller
from ridercrm.audit.service import Finished, record_calls
from ridercrm.config import Settings
from ridercrm.db import Reads, driver_reads, session_reads, session_scope
from ridercrm.errors import ApiError, DomainError, ErrorShape, default_shape
from ridercrm.keys import service as keys
from ridercrm.ratelimit import KeyRateLimiter
from ridercrm.web.audit_batch import AuditBatcher
from ridercrm.web.idempotency import service as idempotency
from ridercrm.web.loop_db import LoopConnections
from ridercrm.wire import (
    BodyError,
    decode_body,
    encode_json,
    header_value,
    negotiate,
    parse_content_type,
    response_content_type,
)

log = logging.getLogger("ridercrm.http")  # the name logs have always carried


@dataclass
class AppContext:
    """What the app is built around (settings, engine, sessions, limiters); one per
    process, made in the app factory."""

    settings: Settings
    engine: Engine
    sessions: sessionmaker[Session]
    rate_limiter: KeyRateLimiter | None = None  # None: RIDERCRM_RATE_LIMIT is off
    refused_limiter: KeyRateLimiter | None = None  # None: RIDERCRM_REFUSED_RATE_LIMIT is off
    # Features' own limiters by name, as their decoders find them in ``Requested.limiters``
    # (the match routes' "explain": RIDERCRM_EXPLAIN_RATE_LIMIT); one that is off is absent.
    limiters: dict[str, KeyRateLimiter] = field(default_factory=dict)
    # Group commit of the audit records of requests that wrote nothing (web.audit_batch).
    audit_batcher: AuditBatcher | None = None
    # PostgreSQL: the connections of light reads and of that group commit on the event
    # loop (web.loop_db); None on SQLite (and other drivers).
    loop_connections: LoopConnections | None = None


@dataclass
class Reply:
    """What an operation answers: a status, a body (str: text/plain; else JSON) and
    headers, with ``audit``, the note its audit record keeps as ``outcomes`` (per-item
    outcomes, a match explanation)."""

    body: Any
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    audit: Any = None
    encoded: bytes | None = None  # the JSON body, when its maker has encoded it already


def app_context(request: Request) -> AppContext:
    """The app's context (a dependency of every operation)."""
    context: AppContext = request.app.state.context
    return context


def call_of(request: Request) -> Call:
    call = getattr(request.state, "call", None)
    if call is None:
        call = Call(method=request.method, path=request.url.path)
        request.state.call = call
    return call


def operation(
    name: str, *, scope: str, shape: ErrorShape = default_shape, read: bool = False
) -> Callable[[Request], Awaitable[Call]]:
    """A dependency that names the operation, checks the API key, then reads the body.

    The key comes first, from the headers alone: a request refused for its key (401,
    403, 429) is answered without its body being read, and its audit record keeps a
    note of the declared size instead of the body, so refused requests cannot fill the
    disk through the audit trail.

    ``read=True`` (a GET, ``operations.get``): only what the headers alone decide is
    checked here (a missing or malformed key); the stored key is looked up later, in the
    read's own worker thread and transaction (:func:`run_read`), and, should FastAPI
    refuse the request's parameters first, by the validation error's handler before it
    answers (:func:`authenticate_deferred`): a request is refused for its key before
    anything else either way, as when the look-up was done here.
    """

    async def dependency(request: Request) -> Call:
        call = call_of(request)
        call.operation = name
        call.shape = shape
        call.content_type = request.headers.get("content-type")
        if read:
            _presented_or_refuse(request)
            request.state.deferred_scope = scope
            return call
        has_body = request.method in ("POST", "PUT", "PATCH")
        if has_body:
            call.request_note = unread_note(request.headers.get("content-length"))
        caller = await run_in_threadpool(_authenticate, request, scope)
        call.caller = caller
        _refuse_nul_parameters(request)
        if has_body:
            call.request_body = await _read_body(request, app_context(request).settings)
            call.request_note = None
        return call

    return dependency


def _refuse_nul_parameters(request: Request) -> None:
    if any("\x00" in part for item in request.query_params.multi_items() for part in item):
        # No database stores NUL in text; no search can be for one.
        raise ApiError(400, "query parameters must not contain NUL characters")


def authenticate_deferred(request: Request, reads: Reads | None = None) -> None:
    """Check the key of a read whose dependency left it for later (``operation(read=True)``),
    with ``reads`` (the read's) or reads of its own, then its parameters' NUL
    characters: what the dependency does for other operations, in the same order. Does
    nothing for a request that has no key check pending."""
    scope = getattr(request.state, "deferred_scope", None)
    if scope is None:
        return
    request.state.deferred_scope = None
    call_of(request).caller = _authenticate(request, scope, reads)
    _refuse_nul_parameters(request)


def unread_note(declared: str | None) -> str:
    """What the audit record keeps instead of a body that was never read."""
    size = f"{declared} bytes declared" if declared else "no Content-Length"
    return f"[body not read: the request was refused before it was needed; {size}]"


CLIENT_CLOSED = 499  # nginx's status for a client that went away before the answer


async def _read_body(request: Request, settings: Settings) -> bytes:
    limit = settings.max_body_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, f"body is larger than {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                call_of(request).request_body = b"".join(chunks)
                raise ApiError(413, f"body is larger than {limit} bytes")
            chunks.append(chunk)
    except ClientDisconnect:
        # Not a server error: nobody is left to answer. Recorded as 499, no traceback.
        call_of(request).request_body = b"".join(chunks)
        raise ApiError(
            CLIENT_CLOSED, f"the client closed the connection after {size} bytes of the body"
        ) from None
    return b"".join(chunks)


def presented_key(request: Request) -> str | None:
    authorization = request.headers.get("authorization")
    if authorization:
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip()
    header = request.headers.get("x-api-key")
    return header.strip() if header and header.strip() else None


def _presented_or_refuse(request: Request) -> str:
    """The key presented, or the 401 that the headers alone decide."""
    presented = presented_key(request)
    if presented is not None:
        return presented
    challenge = {"WWW-Authenticate": "Bearer"}
    authorization = request.headers.get("authorization", "").strip()
    if authorization.lower() == "bearer":  # the scheme without a key: it is missing
        authorization = ""
    if authorization and " " not in authorization:
        # A key sent as `Authorization: rcrm_...`: it is there, in the wrong form.
        raise ApiError(
            401,
            "the Authorization header needs the Bearer scheme: send the key as"
            " 'Authorization: Bearer <key>' or 'X-API-Key: <key>'",
            headers=challenge,
        )
    if authorization:
        raise ApiError(
            401,
            "the Authorization header's scheme is not Bearer: send the key as"
            " 'Authorization: Bearer <key>' or 'X-API-Key: <key>'",
            headers=challenge,
        )
    raise ApiError(401, "missing API key (Authorization: Bearer or X-API-Key)", headers=challenge)


def _authenticate(request: Request, scope: str, reads: Reads | None = None) -> Caller:
    """The caller of the key presented, looked up with ``reads`` (else with the driver's
    reads, ``db.driver_reads``); refused (401, 429, 403) as the key, its rate and its
    scopes say."""
    presented = _presented_or_refuse(request)
    services = app_context(request)
    if reads is None:
        with driver_reads(services.engine) as own:
            key = keys.active_key(own, presented)
    else:
        key = keys.active_key(reads, presented)
    if key is None:
        raise ApiError(401, "invalid or revoked API key", headers={"WWW-Authenticate": "Bearer"})
    caller = Caller(key_id=key.id, name=key.name, scopes=frozenset(key.scopes))
    call_of(request).caller = caller
    # Every request made with a valid key counts, whatever its scope: a refused one
    # costs the service an authentication and an audit record too.
    if services.rate_limiter is not None:
        refusal = services.rate_limiter.check(caller.key_id)
        if refusal is not None:
            raise ApiError(429, refusal.reason, headers={"Retry-After": str(refusal.retry_after)})
    # "products|courses": any one of them will do.
    wanted = scope.split("|")
    if not any(keys.allows(caller.scopes, one) for one in wanted):
        raise ApiError(403, "API key lacks scope " + " or ".join(map(repr, wanted)))
    return caller


def render(request: Request, outcome: Reply) -> Response:
    """Encode an outcome: text/plain for str, negotiated JSON otherwise."""
    if isinstance(outcome.body, str):
        return Response(
            outcome.body.encode("utf-8"),
            status_code=outcome.status,
            media_type="text/plain; charset=utf-8",
            headers=outcome.headers,
        )
    media = negotiate(request.headers.get("accept"))
    return Response(
        encode_json(outcome.body) if outcome.encoded is None else outcome.encoded,
        status_code=outcome.status,
        media_type=response_content_type(media),
        headers=outcome.headers,
    )


def api_error(refusal: DomainError) -> ApiError:
    """A feature's refusal as the API answers it: the status of its kind, its message (also
    listed under ``errors`` when its feature answers so). The one place this is decided."""
    return ApiError(
        refusal.status, refusal.message, errors=[refusal.message] if refusal.listed else []
    )


def error_outcome(call: Call, error: ApiError) -> Reply:
    """Render an error in the operation's shape; note its reason for the audit record."""
    call.failure_reason = error.reason
    headers = {**error.headers, "X-Failure-Reason": header_value(error.reason)}
    return Reply(body=call.shape(error, call.audit_id), status=error.status, headers=headers)


Work = Callable[[Session, Any], Reply]
LightWork = Callable[[Reads, Any], Reply]  # a light read's (run_read)

# A PostgreSQL deadlock or serialisation failure ends the transaction; it is run again,
# after a random pause that doubles with each attempt (up to 20, 40, ... 320 ms), so the
# transactions that met stop meeting. Bookings of one week and site shared their weekly
# count rows until issue 23 (now delta rows: docs/decisions.md,
# "Dashboard: weekly counts"), so under a busy mixed load a request met others several times in a row: 4
# attempts ran out once in a 10 s proof run (CI, 2026-11-23); 6 with doubling pauses
# give it about 0.6 s in all. Kept: people's and courses' own rows can still meet.
TRANSACTION_ATTEMPTS = 6


def retry_pause(attempt: int) -> float:
    """Seconds to wait before running a transaction again after attempt ``attempt``."""
    return random.uniform(0.0, 0.01 * 2**attempt)


JSON_RESPONSE_TYPES = frozenset({"application/json", "text/json"})
RETRYABLE_SQLSTATES = frozenset({"40P01", "40001"})  # deadlock detected, serialization failure


def _retryable(exc: DBAPIError) -> bool:
    return getattr(exc.orig, "sqlstate", None) in RETRYABLE_SQLSTATES


async def run_post(
    request: Request,
    call: Call,
    work: Work,
    *,
    decode: Callable[[Any], Any] = lambda body: body,
    write: bool = True,
) -> Response:
    """Decode the body, turn it into ``work``'s payload with ``decode``, and run ``work``
    in one transaction, honouring Idempotency-Key.

    ``write=False`` is for POSTs that only read (matching): on SQLite they then do not
    queue behind writers for the write lock.
    """
    return await run_in_threadpool(_run_post, request, call, work, decode, write)


NOT_HANDING = "ridercrm.audit_not_handing"
"""The request state's key of what tells the audit group commit that this request will
hand it no record (web.middleware sets it)."""


def not_handing_a_record(request: Request) -> None:
    """Tell the audit group commit not to wait for this request's record: a write commits
    it with its work (a batch of reads' records waited out its whole work before)."""
    forget = getattr(request.state, NOT_HANDING, None)
    if forget is not None:
        forget()


def _run_post(
    request: Request, call: Call, work: Work, decode: Callable[[Any], Any], write: bool
) -> Response:
    services = app_context(request)
    body = call.request_body or b""
    claim: idempotency.Claim | None = None
    # Idempotency-Key is a POST's (docs/decisions.md); a PATCH or DELETE says what it wants done.
    raw_key = request.headers.get("idempotency-key") if request.method == "POST" else None
    try:
        if raw_key is not None:
            outcome_or_claim = _claim(services, call, raw_key, request, body)
            if isinstance(outcome_or_claim, Response):
                return outcome_or_claim
            claim = outcome_or_claim
        try:
            decoded = decode_body(body, call.content_type)
        except BodyError as exc:
            raise ApiError(exc.status, exc.reason) from None
        payload = decode(decoded)
        writing = write or claim is not None
        if writing:
            not_handing_a_record(request)
        for attempt in range(1, TRANSACTION_ATTEMPTS + 1):
            call.committing = False
            try:
                with session_scope(services.sessions, write=writing) as session:
                    reply = work(session, payload)
                    call.outcomes = reply.audit
                    response = render(request, reply)
                    if claim is not None:
                        _store(session, claim, response)
                    if writing:
                        # The audit record is part of the work's transaction: stored
                        # together or not at all, whenever the process dies.
                        _record(session, call, response, services.settings)
                        call.committing = True
                # A POST that only read (matching): its record as a read's, by the
                # audit middleware.
                call.recorded = writing
                return response
            except DBAPIError as exc:
                # PostgreSQL ends a transaction caught in a deadlock or a serialisation
                # conflict; it rolled back whole, so running it again is safe.
                if attempt == TRANSACTION_ATTEMPTS or not _retryable(exc):
                    raise
                log.warning(
                    "transaction retried", extra={"audit_id": call.audit_id, "attempt": attempt}
                )
                time.sleep(retry_pause(attempt))
        raise AssertionError("unreachable")
    except (ApiError, DomainError) as refused:
        error = refused if isinstance(refused, ApiError) else api_error(refused)
        response = render(request, error_outcome(call, error))
        if claim is not None:
            with session_scope(services.sessions, write=True) as session:
                _store(session, claim, response)
        return response
    except Exception:
        # A server error is not kept (idempotency.store_response): the key is freed now,
        # so the client's retry runs again at once rather than meeting a 409 until the
        # claim's lock time (RIDERCRM_IDEMPOTENCY_LOCK_SECONDS) has passed.
        if claim is not None:
            _release(services, claim)
        raise


def _release(services: AppContext, claim: idempotency.Claim) -> None:
    """Free a claimed key after a server error; if even that fails, its lock time frees it."""
    try:
        with session_scope(services.sessions, write=True) as session:
            idempotency.release(session, claim)
    except Exception:
        log.warning("idempotency key not released", exc_info=True)


def _claim(
    services: AppContext, call: Call, raw_key: str, request: Request, body: bytes
) -> idempotency.Claim | Response:
    key = idempotency.check_key(raw_key)
    call.idempotency_key = key
    assert call.caller is not None
    settings = services.settings
    fingerprint = idempotency.request_hash(
        request.method,
        request.url.path,
        body,
        content_type=request.headers.get("content-type", ""),
    )
    for attempt in range(2):
        try:
            with session_scope(services.sessions, write=True) as session:
                result = idempotency.claim(
                    session,
                    api_key_id=call.caller.key_id,
                    key=key,
                    fingerprint=fingerprint,
                    as_sent=idempotency.request_hash(
                        request.method, request.url.path, body, as_sent=True
                    ),
                    audit_id=call.audit_id,
                    ttl=dt.timedelta(hours=settings.idempotency_ttl_hours),
                    lock=dt.timedelta(seconds=settings.idempotency_lock_seconds),
                )
            break
        except IntegrityError:
            # Another request inserted the same key at the same moment; look again.
            if attempt:
                raise ApiError(
                    409, "a request with this Idempotency-Key is still being processed"
                ) from None
    if isinstance(result, idempotency.Replay):
        call.replay_of = result.audit_id
        return Response(
            result.body, status_code=result.status, headers=_renegotiated(request, result.headers)
        )
    return result


def _renegotiated(request: Request, headers: dict[str, str]) -> dict[str, str]:
    """A replay's headers with its JSON media type negotiated for this request's Accept.

    The stored body is the same JSON text whichever JSON type was asked for; only the
    Content-Type follows the repeat's Accept, as it would have had the work run again.
    """
    replayed = dict(headers)
    for name, value in headers.items():
        if name.lower() == "content-type" and parse_content_type(value)[0] in JSON_RESPONSE_TYPES:
            replayed[name] = response_content_type(negotiate(request.headers.get("accept")))
    return replayed


def _record(session: Session, call: Call, response: Response, settings: Settings) -> None:
    """Insert the request's audit record, with the response as it will be sent (Core
    inserts, after the work's changes are flushed), in the work's transaction."""
    session.flush()
    finished = Finished(
        call,
        response.status_code,
        bytes(response.body),
        (time.perf_counter() - call.started) * 1000,
    )
    record_calls(session, [finished], redact=settings.audit_redact)


def _store(session: Session, claim: idempotency.Claim, response: Response) -> None:
    kept = {
        name: value
        for name, value in response.headers.items()
        if name.lower() in ("content-type", "x-failure-reason", "retry-after")
    }
    idempotency.store_response(
        session, claim=claim, status=response.status_code, headers=kept, body=bytes(response.body)
    )


async def run_read(
    request: Request,
    work: Work | LightWork,
    payload: Callable[[], Any] | None = None,
    *,
    light: bool = False,
) -> Response:
    """Check the read's pending key (if any), make ``work``'s payload with ``payload`` and
    run ``work`` on it, all in one worker thread and one transaction; render its reply.

    ``light``: a read of a few rows of small tables (the key's and a short list). Its
    ``work`` gets ``db.Reads`` of the driver's own, not a session, and runs on the event
    loop: on SQLite it takes less than handing it to a worker thread and back (SQLite's
    readers never wait for a writer, WAL, and its files are local); on PostgreSQL its
    statements are awaited there (web.loop_db). With the rate limit's counts in Redis,
    which would wait for the network, it goes to a worker thread.
    """
    services = app_context(request)
    if not light:
        return await run_in_threadpool(_run_read, request, cast(Work, work), payload)
    light_work = cast(LightWork, work)
    limiter = services.rate_limiter
    if limiter is not None and limiter.shared:
        return await run_in_threadpool(_run_light_read, request, light_work, payload)
    if services.loop_connections is not None:
        return await services.loop_connections.run(
            lambda reads: _light_read(request, light_work, payload, reads)
        )
    if services.settings.is_sqlite:
        return _run_light_read(request, light_work, payload)
    return await run_in_threadpool(_run_light_read, request, light_work, payload)


def _run_read(request: Request, work: Work, payload: Callable[[], Any] | None) -> Response:
    services = app_context(request)
    with session_scope(services.sessions) as session:
        authenticate_deferred(request, session_reads(session))
        # Its audit record is the middleware's to store (group commit: web.audit_batch).
        return render(request, work(session, None if payload is None else payload()))


def _run_light_read(
    request: Request, work: LightWork, payload: Callable[[], Any] | None
) -> Response:
    with driver_reads(app_context(request).engine) as reads:
        return _light_read(request, work, payload, reads)


def _light_read(
    request: Request, work: LightWork, payload: Callable[[], Any] | None, reads: Reads
) -> Response:
    authenticate_deferred(request, reads)
    return render(request, work(reads, None if payload is None else payload()))
