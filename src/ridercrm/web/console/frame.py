"""The console's frame: what a page module uses to add a page (docs/console.md, "Adding a page").

A page module declares each route once on its :class:`ConsoleRouter` (listed in
:mod:`ridercrm.web.console.pages`): ``page`` for a GET, ``form`` for a POST, with the
least role it needs and, for a form, the operation its audit record is stored under.
The declaration registers the route and does what every route needs before the
handler runs: the session (none: redirected to sign-in), the role (too low: a 403
page), and for a form the CSRF token (wrong: a 403 page, nothing changed). The handler
gets a :class:`Visit` (a :class:`Posted` for a form) and the path's parameters; it
reads with ``visit.read``, renders with ``visit.render``, and makes a change with
``posted.change``, which runs the feature's service in one write transaction with the
audit record naming the staff user (a PostgreSQL deadlock is retried)::

    router = ConsoleRouter()

    @router.page("/things", role="viewer")
    async def things(visit: Visit) -> Response:
        rows = await visit.read(lambda session: service.list_things(session))
        return visit.render("things.html", {"rows": rows})

    @router.form("/things/{thing_id}", role="staff", audit="console.things.rename")
    async def rename(posted: Posted, thing_id: str) -> Response:
        name = posted.form.get("name", "")
        done = await posted.change(
            asked={"id": thing_id, "name": name},
            work=lambda session: {"id": service.rename(session, thing_id[:40], name)},
        )
        return posted.render("things.html", {"done": done}, status=done.status)

Every console route is declared this way (tests/console/test_access.py checks it and
each route's role). The lower-level pieces (``require``, ``checked_form``, ``change``,
``read``, ``render``) stay for the helper's own use.
"""

from __future__ import annotations

import datetime as dt
import email.parser
import email.policy
import hmac
import inspect
import json
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypeVar
from urllib.parse import parse_qsl, quote

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, pass_context, select_autoescape
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from ridercrm import fields
from ridercrm.audit.call import Call
from ridercrm.audit.service import record_call
from ridercrm.db import MAX_INTEGER_ID, session_scope
from ridercrm.errors import DomainError
from ridercrm.web.console.nav import NAV
from ridercrm.web.runtime import RETRYABLE_SQLSTATES, TRANSACTION_ATTEMPTS, retry_pause
from ridercrm.web.runtime import AppContext as Services
from ridercrm.web.runtime import app_context as services_of

__all__ = ["services_of"]  # re-exported for page modules
from ridercrm.staff import rules
from ridercrm.staff import service as staff_service

TEMPLATES = Path(__file__).parent / "templates"
SESSION_COOKIE = "ridercrm_console"
LOGIN_COOKIE = "ridercrm_console_login"
CSRF_FIELD = "csrf"
NOT_RECORDED = frozenset({CSRF_FIELD, "password", "new_password", "password_again"})

T = TypeVar("T")


@dataclass(frozen=True)
class Staff:
    """The signed-in staff user of a request."""

    user_id: int
    name: str
    role: str
    token: str = field(repr=False)
    session_id: int = 0

    @property
    def csrf(self) -> str:
        return staff_service.csrf_token(self.token)

    def may(self, role: str) -> bool:
        """Whether this user's role reaches ``role`` (templates use it to hide buttons)."""
        return rules.allows(self.role, role)


class ConsoleRefusal(Exception):
    """Answer with the error page: a status and a sentence for the person."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class SignInNeeded(Exception):
    """No live session: the person is sent to the sign-in page."""


class ConsoleProblem(Exception):
    """A change the service refused (a validation error, a broken rule); the page shows it."""


def database_id(raw: str | None) -> int | None:
    """A database id from an address, or None if it cannot name one: ASCII digits
    (str.isdigit() also takes superscripts, "²", which int() refuses), 1 to the largest
    INTEGER id (a larger number sent to PostgreSQL is an error, not "no such row")."""
    text = (raw or "").strip()
    if not (text.isascii() and text.isdigit()) or len(text) > 19:
        return None
    value = int(text)
    return value if 1 <= value <= MAX_INTEGER_ID else None


def console_root(request: Request) -> str:
    """The console's path, e.g. ``/services/apexrest/console``."""
    return services_of(request).settings.base_path + "/console"


def business_today(request: Request) -> dt.date:
    """Today in the business's calendar (RIDERCRM_TIMEZONE), not the server's: at 9 am
    on a Monday in Melbourne a server on UTC is still on Sunday."""
    return dt.datetime.now(services_of(request).settings.zone).date()


def url(request: Request, path: str = "/") -> str:
    """A console path below the root: ``url(request, "/people")``."""
    return console_root(request) + path


def require(role: str) -> Callable[[Request], Any]:
    """A dependency giving the signed-in :class:`Staff` whose role reaches ``role``."""
    if role not in rules.ROLES:
        raise ValueError(f"unknown role {role!r}")

    async def dependency(request: Request) -> Staff:
        staff = await signed_in(request)
        if staff is None:
            raise SignInNeeded
        request.state.staff = staff  # the 403 page shows the navigation and sign-out
        if not rules.allows(staff.role, role):
            raise ConsoleRefusal(
                403,
                f"Your role ({staff.role}) cannot open this page or make this change;"
                f" it needs the {role} role.",
            )
        return staff

    return dependency


AsViewer = Annotated[Staff, Depends(require("viewer"))]
"""A route parameter ``staff: AsViewer`` is the signed-in user, any role."""
AsStaff = Annotated[Staff, Depends(require("staff"))]
"""``staff: AsStaff``: the signed-in user, whose role is staff or admin (else a 403 page)."""
AsAdmin = Annotated[Staff, Depends(require("admin"))]
"""``staff: AsAdmin``: the signed-in user, whose role is admin (else a 403 page)."""


async def signed_in(request: Request) -> Staff | None:
    """The staff user of the request's session cookie, or None."""
    token = request.cookies.get(SESSION_COOKIE, "")
    if not token or len(token) > 200:
        return None

    def look_up(session: Session) -> Staff | None:
        found = staff_service.session_user(session, token)
        if found is None:
            return None
        user, live = found
        return Staff(
            user_id=user.id, name=user.name, role=user.role, token=token, session_id=live.id
        )

    return await read(request, look_up)


async def read(request: Request, work: Callable[[Session], T]) -> T:
    """Run ``work`` in a read-only transaction, off the event loop."""
    sessions = services_of(request).sessions

    def run() -> T:
        with session_scope(sessions) as session:
            return work(session)

    return await run_in_threadpool(run)


async def form_of(request: Request) -> dict[str, str]:
    """The request's url-encoded form, bounded by RIDERCRM_MAX_BODY_BYTES.

    A field given twice keeps its last value; :func:`form_lists` keeps all of them.
    """
    return {name: values[-1] for name, values in (await form_lists(request)).items()}


async def form_lists(request: Request) -> dict[str, list[str]]:
    """The request's form with every value of every field, in order."""
    cached = getattr(request.state, "console_form", None)
    if cached is not None:
        return dict(cached)
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    limit = services_of(request).settings.max_body_bytes
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise ConsoleRefusal(413, f"The form is larger than {limit} bytes.")
    if body and media == "multipart/form-data":
        # RFC 8058's one-click stop is sent so by mail providers (it SHOULD be).
        pairs = _multipart_pairs(request.headers.get("content-type", ""), body)
    elif body and media != "application/x-www-form-urlencoded":
        raise ConsoleRefusal(415, "The console takes forms sent by its own pages only.")
    else:
        try:
            pairs = parse_qsl(
                body.decode("utf-8", errors="replace"),
                keep_blank_values=True,
                max_num_fields=_MOST_FIELDS,
            )
        except ValueError:
            raise ConsoleRefusal(413, "The form has too many fields.") from None
    fields: dict[str, list[str]] = {}
    for name, value in pairs:
        # No database stores NUL in text; it is never part of a real entry.
        fields.setdefault(name.replace("\x00", ""), []).append(value.replace("\x00", ""))
    request.state.console_form = fields
    return dict(fields)


_MOST_FIELDS = 2000


def _multipart_pairs(content_type: str, body: bytes) -> list[tuple[str, str]]:
    """The text fields of a multipart/form-data body, in order (a file's bytes read as
    text); 400 when it is not one."""
    parsed = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode("latin-1", "replace") + body
    )
    if not parsed.is_multipart() or parsed.defects:
        raise ConsoleRefusal(400, "The form could not be read (multipart/form-data).")
    pairs: list[tuple[str, str]] = []
    for part in parsed.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if not isinstance(name, str) or not isinstance(payload, bytes | None):
            continue
        pairs.append((name, (payload or b"").decode("utf-8", errors="replace")))
        if len(pairs) > _MOST_FIELDS:
            raise ConsoleRefusal(413, "The form has too many fields.")
    return pairs


def csrf_failed() -> ConsoleRefusal:
    return ConsoleRefusal(
        403,
        "This form could not be accepted: its security token is missing or out of date"
        " (CSRF check). Nothing was changed. Go back, reload the page and try again.",
    )


async def checked_form(request: Request, staff: Staff) -> dict[str, str]:
    """The form of a change, after checking its CSRF token (403 page if wrong)."""
    form = await form_of(request)
    sent = form.get(CSRF_FIELD, "")
    if not sent or not hmac.compare_digest(sent.encode(), staff.csrf.encode()):
        raise csrf_failed()
    return form


@dataclass(frozen=True)
class Refused:
    """What ``work`` returns for a refusal whose work is kept (a failed sign-in counts
    towards the lock-out): committed, but recorded as a failure with ``reason``."""

    body: Any
    reason: str
    status: int = 400


@dataclass
class Done:
    """The outcome of a console change."""

    ok: bool
    audit_id: str
    body: Any = None  # what ``work`` returned
    error: str | None = None

    @property
    def status(self) -> int:
        return 200 if self.ok else 400


def recorded(asked: Mapping[str, Any]) -> dict[str, Any]:
    """The form as the audit record keeps it: no CSRF token, no password."""
    return {name: value for name, value in asked.items() if name not in NOT_RECORDED}


async def change(
    request: Request,
    staff: Staff | None,
    *,
    operation: str,
    asked: Mapping[str, Any],
    work: Callable[[Session], Any],
    actor: str | None = None,
) -> Done:
    """Run ``work`` (which calls a feature's service) in one write transaction with its
    audit record, made by ``staff`` (or, signing in, ``actor``).

    ``work`` returns a JSON-able value, kept as the record's response; raising
    :class:`ConsoleProblem` (or a feature's DomainError, or a ValueError) rolls the work back and stores
    a failed record with the reason instead.
    """
    services = services_of(request)
    call = Call(method=request.method, path=request.url.path)
    call.operation = operation
    call.content_type = "application/json"
    call.request_body = json.dumps(recorded(asked), default=str).encode()
    who = staff.name if staff is not None else actor

    def run() -> Done:
        for attempt in range(1, TRANSACTION_ATTEMPTS + 1):
            try:
                return attempt_once()
            except DBAPIError as exc:
                # PostgreSQL ended the transaction in a deadlock or serialisation
                # conflict; it rolled back whole, so running it again is safe.
                retryable = getattr(exc.orig, "sqlstate", None) in RETRYABLE_SQLSTATES
                if attempt == TRANSACTION_ATTEMPTS or not retryable:
                    raise
                time.sleep(retry_pause(attempt))
        raise AssertionError("unreachable")

    def attempt_once() -> Done:
        started = time.perf_counter()
        _change_audit_id.set(call.audit_id)
        try:
            with session_scope(services.sessions, write=True) as session:
                body = work(session)
                if isinstance(body, Refused):
                    call.failure_reason = body.reason
                    response = {"ok": False, "error": body.reason, "result": body.body}
                    _write(session, services, call, body.status, response, who, started)
                else:
                    response = {"ok": True, "result": body}
                    _write(session, services, call, 200, response, who, started)
            if isinstance(body, Refused):
                return Done(ok=False, audit_id=call.audit_id, body=body.body, error=body.reason)
            return Done(ok=True, audit_id=call.audit_id, body=body)
        except (ConsoleProblem, DomainError, ValueError) as problem:
            reason = str(problem) or type(problem).__name__
            call.failure_reason = reason
            with session_scope(services.sessions, write=True) as session:
                _write(session, services, call, 400, {"ok": False, "error": reason}, who, started)
            return Done(ok=False, audit_id=call.audit_id, error=reason)

    return await run_in_threadpool(run)


_change_audit_id: ContextVar[str] = ContextVar("console_change_audit_id")


def change_audit_id() -> str:
    """Inside ``work`` of :func:`change`: the id of the audit record the change will be
    stored with (what a service that keeps history rows, like the courses', needs)."""
    return _change_audit_id.get()


def _write(
    session: Session,
    services: Services,
    call: Call,
    status: int,
    response: Any,
    who: str | None,
    started: float,
) -> None:
    record = record_call(
        session,
        call=call,
        status=status,
        response_body=json.dumps(response, default=str).encode(),
        duration_ms=(time.perf_counter() - started) * 1000,
        redact=services.settings.audit_redact,
    )
    record.staff_user = who
    session.flush()


# --- declaring routes --------------------------------------------------------------


@dataclass(frozen=True)
class Declared:
    """One console route as its module declared it (what tests/console/test_access.py checks)."""

    method: str  # GET (a page) or POST (a form)
    path: str  # below the console's root, with its {parameters}
    role: str | None  # the least role; None: open to anyone (sign-in)
    audit: str | Callable[[Mapping[str, str]], str] | None = None  # a form's operation
    csrf: bool = False  # the form's CSRF token is checked before the handler runs


@dataclass
class Visit:
    """A request to a page, its staff user (None on a page open to anyone) and what the
    page needs: reads, rendering, the query string."""

    request: Request
    staff: Staff | None

    @property
    def user(self) -> Staff:
        """The signed-in staff user: always there on a route declared with a role."""
        if self.staff is None:
            raise SignInNeeded
        return self.staff

    def query(self, name: str, limit: int = 200) -> str:
        """A query-string value, without NUL characters, at most ``limit`` characters."""
        return self.request.query_params.get(name, "").replace("\x00", "")[:limit]

    async def read(self, work: Callable[[Session], T]) -> T:
        return await read(self.request, work)

    def render(
        self, template: str, context: Mapping[str, Any] | None = None, *, status: int = 200
    ) -> HTMLResponse:
        return render(self.request, self.staff, template, context, status=status)

    def redirect(self, path: str) -> RedirectResponse:
        return redirect(self.request, path)


@dataclass
class Posted(Visit):
    """A form sent to a declared ``form`` route: its fields (checked for CSRF) and the
    operation its change is audited as."""

    form: dict[str, str] = field(default_factory=dict)  # a field given twice: its last value
    lists: dict[str, list[str]] = field(default_factory=dict)  # every value of every field
    operation: str = ""

    async def change(
        self, *, asked: Mapping[str, Any], work: Callable[[Session], Any], actor: str | None = None
    ) -> Done:
        """Run ``work`` in one write transaction with the form's audit record (:func:`change`)."""
        return await change(
            self.request, self.staff, operation=self.operation, asked=asked, work=work, actor=actor
        )


Handler = Callable[..., Awaitable[Response]]


class ConsoleRouter(APIRouter):
    """A page module's routes, each declared once with its role (and a form's audit)."""

    def __init__(self, *, prefix: str = "") -> None:
        super().__init__(prefix=prefix)
        self.declared: list[Declared] = []

    def page(
        self, path: str, *, role: str | None = "viewer", name: str | None = None
    ) -> Callable[[Handler], Handler]:
        """A GET page; the handler takes a :class:`Visit` and the path's parameters."""
        return self._declare(Declared("GET", self.prefix + path, role), path, name)

    def form(
        self,
        path: str,
        *,
        audit: str | Callable[[Mapping[str, str]], str],
        role: str | None = "staff",
        csrf: bool = True,
        name: str | None = None,
    ) -> Callable[[Handler], Handler]:
        """A POST form whose change is audited as ``audit`` (or the operation ``audit``
        names for the form); the handler takes a :class:`Posted` and the path's
        parameters. ``csrf=False`` only for a form without a session (sign-in), which
        checks its own token."""
        if csrf and role is None:
            raise ValueError("a form open to anyone has no session token: check it, csrf=False")
        if not csrf and role is not None:
            raise ValueError("a signed-in form always checks its CSRF token")
        declared = Declared("POST", self.prefix + path, role, audit, csrf)
        return self._declare(declared, path, name)

    def _declare(
        self, declared: Declared, path: str, name: str | None
    ) -> Callable[[Handler], Handler]:
        role = declared.role
        if role is not None and role not in rules.ROLES:
            raise ValueError(f"unknown role {role!r}")
        authorised = require(role) if role is not None else None

        def register(handler: Handler) -> Handler:
            async def endpoint(request: Request, **params: str) -> Response:
                staff = await authorised(request) if authorised is not None else None
                if any("\x00" in value for value in params.values()):
                    # No record's id or name holds NUL, and PostgreSQL refuses it in text.
                    raise ConsoleRefusal(404, "There is no such page in the console.")
                if declared.method == "GET":
                    return await handler(Visit(request, staff), **params)
                if declared.csrf:
                    assert staff is not None
                    form = await checked_form(request, staff)
                else:
                    form = await form_of(request)
                audit = declared.audit
                operation = audit(form) if callable(audit) else audit or ""
                lists = await form_lists(request)
                return await handler(Posted(request, staff, form, lists, operation), **params)

            keyword = inspect.Parameter.KEYWORD_ONLY
            endpoint.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
                [
                    inspect.Parameter(
                        "request", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Request
                    ),
                    *(
                        inspect.Parameter(param, keyword, annotation=str)
                        for param in re.findall(r"{(\w+)}", path)
                    ),
                ],
                return_annotation=Response,
            )
            endpoint.__name__ = handler.__name__
            endpoint.__doc__ = handler.__doc__
            self.add_api_route(
                path, endpoint, methods=[declared.method], name=name or handler.__name__
            )
            self.declared.append(declared)
            return handler

        return register


_environment: Environment | None = None


def environment() -> Environment:
    """The console's Jinja2 environment: every template escapes what it shows."""
    global _environment
    if _environment is None:
        _environment = Environment(
            loader=FileSystemLoader(str(TEMPLATES)),
            autoescape=select_autoescape(default=True, default_for_string=True),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        _environment.filters["local"] = _local
        _environment.filters["shown"] = fields.display_name
        _environment.filters["result"] = lambda code: fields.RESULT_LABELS.get(code, code or "")
    return _environment


@pass_context
def _local(context: Any, when: dt.datetime | str | None, form: str = "%Y-%m-%d %H:%M") -> str:
    """A stored (UTC) time as staff read it: in the business's zone (RIDERCRM_TIMEZONE),
    with the zone's abbreviation (AEDT, AEST). An ISO text (an API schema's) is read first."""
    if not when:
        return ""
    if isinstance(when, str):
        when = dt.datetime.fromisoformat(when)
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    local = when.astimezone(context.get("zone") or dt.UTC)
    return f"{local.strftime(form)} {local.tzname()}"


SECURITY_HEADERS = {
    # Every script, style and image comes from the service itself.
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self';"
        " frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


def render(
    request: Request,
    staff: Staff | None,
    template: str,
    context: Mapping[str, Any] | None = None,
    *,
    status: int = 200,
) -> HTMLResponse:
    """Render a console template (extending ``base.html``) with the frame's context:
    ``staff``, ``csrf``, ``nav``, ``root`` (the console's path), ``static`` and
    ``partial`` (an htmx request: render only the ``content`` block if the template
    checks it)."""
    values = {
        "staff": staff,
        "csrf": staff.csrf if staff is not None else "",
        "nav": [item for item in NAV if staff is not None and staff.may(item.role)],
        "root": console_root(request),
        "static": console_root(request) + "/static",
        "here": request.url.path,
        "partial": request.headers.get("hx-request") == "true",
        "zone": services_of(request).settings.zone,
        **(context or {}),
    }
    html = environment().get_template(template).render(values)
    return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)


def redirect(request: Request, path: str) -> RedirectResponse:
    """A 303 to a console path below the root (after a change, so a reload does not repeat it)."""
    return RedirectResponse(url(request, path), status_code=303)


def sign_in_redirect(request: Request) -> RedirectResponse:
    """To the sign-in page, coming back here afterwards (for a page that was read)."""
    target = url(request, "/login")
    if request.method == "GET":
        back = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        target += "?next=" + quote(back, safe="")
    return RedirectResponse(target, status_code=303, headers={"Cache-Control": "no-store"})


def secure_cookies(request: Request) -> bool:
    """Whether cookies are marked Secure (RIDERCRM_CONSOLE_SECURE_COOKIES)."""
    mode = services_of(request).settings.console_secure_cookies
    if mode == "always":
        return True
    if mode == "never":
        return False
    return request.url.scheme == "https"


def set_cookie(request: Request, response: Response, name: str, value: str, max_age: int) -> None:
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path=console_root(request) + "/",
        secure=secure_cookies(request),
        httponly=True,
        samesite="lax",
    )
