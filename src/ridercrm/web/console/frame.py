"""The console's frame: what a page module uses to add a page (docs/console.md, "Adding a page").

A page is a FastAPI route on an ``APIRouter`` of its own module, listed in
:mod:`ridercrm.web.console.pages`. It takes the signed-in staff user as a parameter
typed ``AsViewer``, ``AsStaff`` or ``AsAdmin`` (``Depends(require(ROLE))``; no session: redirected to sign-in; too low a role: 403
page), reads with :func:`read`, renders with :func:`render`, and for a change reads
the form with :func:`checked_form` (CSRF refused with a 403 page) and makes it through
:func:`change`, which runs the feature's service in one transaction with an audit
record naming the staff user. Everything here is stable for other modules to use::

    router = APIRouter()

    @router.get("/things", name="things")
    async def things(request: Request, staff: AsViewer) -> Response:
        rows = await read(request, lambda session: service.list_things(session))
        return render(request, staff, "things.html", {"rows": rows})

    @router.post("/things")
    async def add_thing(request: Request, staff: AsStaff) -> Response:
        form = await checked_form(request, staff)
        done = await change(
            request, staff, operation="console.things.add", asked=form,
            work=lambda session: {"id": service.add(session, name=form.get("name", ""))},
        )
        return render(request, staff, "things.html", {"done": done}, status=done.status)
"""

from __future__ import annotations

import hmac
import json
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypeVar
from urllib.parse import parse_qsl, quote

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from ridercrm.audit.call import Call
from ridercrm.audit.service import record_call
from ridercrm.db import session_scope
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


@dataclass(frozen=True)
class NavItem:
    """A link in the console's navigation, shown to users whose role reaches ``role``."""

    label: str
    path: str  # below the console's root, e.g. "/people"
    role: str = "viewer"


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


def console_root(request: Request) -> str:
    """The console's path, e.g. ``/services/apexrest/console``."""
    return services_of(request).settings.base_path + "/console"


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
    if body and media != "application/x-www-form-urlencoded":
        raise ConsoleRefusal(415, "The console takes forms sent by its own pages only.")
    try:
        pairs = parse_qsl(
            body.decode("utf-8", errors="replace"),
            keep_blank_values=True,
            max_num_fields=2000,
        )
    except ValueError:
        raise ConsoleRefusal(413, "The form has too many fields.") from None
    fields: dict[str, list[str]] = {}
    for name, value in pairs:
        # No database stores NUL in text; it is never part of a real entry.
        fields.setdefault(name.replace("\x00", ""), []).append(value.replace("\x00", ""))
    request.state.console_form = fields
    return dict(fields)


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
    :class:`ConsoleProblem` (or a service's ValueError) rolls the work back and stores
    a failed record with the reason instead.
    """
    services = services_of(request)
    call = Call(method=request.method, path=request.url.path)
    call.operation = operation
    call.content_type = "application/json"
    call.request_body = json.dumps(recorded(asked), default=str).encode()
    who = staff.name if staff is not None else actor

    def run() -> Done:
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
        except (ConsoleProblem, ValueError) as problem:
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
    return _environment


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
    from ridercrm.web.console.pages import NAV

    values = {
        "staff": staff,
        "csrf": staff.csrf if staff is not None else "",
        "nav": [item for item in NAV if staff is not None and staff.may(item.role)],
        "root": console_root(request),
        "static": console_root(request) + "/static",
        "here": request.url.path,
        "partial": request.headers.get("hx-request") == "true",
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
