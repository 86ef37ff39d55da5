"""Sign-in, sign-out and sign-out everywhere; the console's home."""

from __future__ import annotations

import hmac
import secrets

from fastapi import Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from ridercrm.staff import service as staff_service
from ridercrm.web.console import frame
from ridercrm.web.console.frame import ConsoleRouter, Posted, Visit
from ridercrm.web.middleware import client_address
from ridercrm.web.runtime import app_context as services_of

router = ConsoleRouter()


@router.page("/", role="viewer", name="home")
async def home(visit: Visit) -> Response:
    """The console's home: find a person."""
    return visit.redirect("/people")


def _next(request: Request, raw: str | None) -> str:
    """Where to go after signing in: a console page, never another site."""
    root = frame.console_root(request)
    if raw and raw.startswith(root + "/") and "//" not in raw and "\\" not in raw:
        return raw
    return root + "/people"


def _login_page(
    request: Request, *, token: str, error: str | None = None, name: str = "", status: int = 200
) -> Response:
    response = frame.render(
        request,
        None,
        "login.html",
        {
            "login_token": token,
            "error": error,
            "username": name,
            "next": _next(request, request.query_params.get("next")),
        },
        status=status,
    )
    frame.set_cookie(request, response, frame.LOGIN_COOKIE, token, max_age=3600)
    return response


@router.page("/login", role=None, name="login")
async def login_form(visit: Visit) -> Response:
    """The sign-in form."""
    request = visit.request
    if await frame.signed_in(request) is not None:
        return RedirectResponse(_next(request, request.query_params.get("next")), status_code=303)
    token = request.cookies.get(frame.LOGIN_COOKIE) or secrets.token_urlsafe(24)
    if len(token) > 100:
        token = secrets.token_urlsafe(24)
    return _login_page(request, token=token)


# Before a session there is no session token: the sign-in form's own token is checked
# against its cookie (double submit), and a wrong one shows the form again.
@router.form("/login", role=None, csrf=False, audit="console.sign_in")
async def login(posted: Posted) -> Response:
    """Check the name and password; start a session or say why not."""
    request = posted.request
    limiter = request.app.state.sign_in_limiter
    if limiter is not None:
        refusal = limiter.check(client_address(request.scope))
        if refusal is not None:
            raise frame.ConsoleRefusal(
                429,
                f"Too many sign-in attempts from this address; try again in"
                f" {refusal.retry_after} seconds.",
            )
    form = posted.form
    cookie = request.cookies.get(frame.LOGIN_COOKIE, "")
    sent = form.get(frame.CSRF_FIELD, "")
    fresh = secrets.token_urlsafe(24)
    if not cookie or not sent or not hmac.compare_digest(cookie.encode(), sent.encode()):
        message = frame.csrf_failed().message
        return _login_page(request, token=fresh, error=message, status=403)
    fresh = cookie  # the check passed: the same token serves the next attempt
    name = form.get("username", "").strip()[:200]
    password = form.get("password", "")[:2048]
    settings = services_of(request).settings
    outcome: dict[str, object] = {}
    # The password is checked between a read and the write that counts it, outside any
    # transaction (staff.service.verify_password says why).
    address = client_address(request.scope)
    stored = await posted.read(
        lambda session: staff_service.credentials(session, name=name, address=address)
    )
    check = await run_in_threadpool(staff_service.verify_password, stored, password)

    def attempt(session: Session) -> object:
        result = staff_service.record_sign_in(
            session,
            check=check,
            address=address,
            lockout_attempts=settings.console_lockout_attempts,
            lockout_minutes=settings.console_lockout_minutes,
            zone=settings.zone,
        )
        if result.user is None:
            # Stored with the failed attempt it counts (the lock-out needs it kept).
            outcome["refusal"] = result.refusal
            return frame.Refused({"signed_in": False}, result.refusal or "", status=401)
        outcome["token"] = staff_service.start_session(
            session, user=result.user, hours=settings.console_session_hours
        )
        return {"signed_in": True, "role": result.user.role}

    await posted.change(asked={"username": name}, work=attempt, actor=name or None)
    if "token" not in outcome:
        refusal = str(outcome.get("refusal") or staff_service.WRONG)
        return _login_page(request, token=fresh, error=refusal, name=name, status=401)
    response = RedirectResponse(_next(request, form.get("next")), status_code=303)
    frame.set_cookie(
        request,
        response,
        frame.SESSION_COOKIE,
        str(outcome["token"]),
        max_age=int(settings.console_session_hours * 3600),
    )
    response.delete_cookie(frame.LOGIN_COOKIE, path=frame.console_root(request) + "/")
    return response


@router.form("/logout", role="viewer", audit="console.sign_out", name="logout")
async def logout(posted: Posted) -> Response:
    """End this session."""
    token = posted.user.token
    await posted.change(asked={}, work=lambda session: staff_service.end_session(session, token))
    return _signed_out(posted.request)


@router.form(
    "/logout-everywhere",
    role="viewer",
    audit="console.sign_out_everywhere",
    name="logout_everywhere",
)
async def logout_everywhere(posted: Posted) -> Response:
    """End every session of this staff user, on every device."""
    user_id = posted.user.user_id
    await posted.change(
        asked={},
        work=lambda session: {
            "sessions_ended": staff_service.end_all_sessions(session, user_id=user_id)
        },
    )
    return _signed_out(posted.request)


def _signed_out(request: Request) -> Response:
    response = RedirectResponse(frame.url(request, "/login"), status_code=303)
    response.delete_cookie(frame.SESSION_COOKIE, path=frame.console_root(request) + "/")
    return response
