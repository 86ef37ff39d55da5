"""The staff console under ``{base}/console/`` (docs/console.md; docs/decisions.md, "Staff console").

It is an application of its own, served by the same process: a dispatcher in front of
the API sends it the paths under the console's root, so the API's audit middleware,
OpenAPI document and error shapes stay the API's. Console changes write their own
audit records (``frame.change``), naming the staff user.
"""

from __future__ import annotations

import logging
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ridercrm.errors import DomainError
from ridercrm.ratelimit import build_rate_limiter
from ridercrm.web.console import frame
from ridercrm.web.runtime import AppContext as Services

log = logging.getLogger("ridercrm.console")
STATIC = Path(__file__).parent / "static"


def build(services: Services) -> FastAPI:
    """The console application, sharing the API's settings, engine and sessions."""
    from ridercrm.web.console.pages import ROUTERS

    root = services.settings.base_path + "/console"
    console = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    console.state.context = services
    # Sign-in attempts per client address, bounded like requests refused by the API.
    console.state.sign_in_limiter = build_rate_limiter(
        services.settings.refused_rate_limit,
        storage=services.settings.rate_limit_storage,
        key_prefix=services.settings.rate_limit_key_prefix,
        namespace="console-sign-in",
        counted="sign-in attempts from this address",
    )
    for router in ROUTERS:
        console.include_router(router, prefix=root)
    console.mount(root + "/static", StaticFiles(directory=STATIC), name="static")

    @console.exception_handler(frame.SignInNeeded)
    async def _sign_in(request: Request, exc: frame.SignInNeeded) -> Response:
        return frame.sign_in_redirect(request)

    @console.exception_handler(frame.ConsoleRefusal)
    async def _refused(request: Request, exc: frame.ConsoleRefusal) -> Response:
        return error_page(request, exc.status, exc.message)

    @console.exception_handler(DomainError)
    async def _domain(request: Request, exc: DomainError) -> Response:
        # A feature's refusal outside a change (which shows it on its page): an error page.
        return error_page(request, exc.status, exc.message)

    @console.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        return error_page(request, 400, "The address or form has a value the page cannot use.")

    @console.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 404:
            return error_page(request, 404, "There is no such page in the console.")
        if exc.status_code == 405:
            return error_page(request, 405, "This page does not take that kind of request.")
        return error_page(request, exc.status_code, str(exc.detail))

    return console


def error_page(request: Request, status: int, message: str) -> Response:
    staff = getattr(request.state, "staff", None)
    return frame.render(
        request, staff, "error.html", {"status": status, "message": message}, status=status
    )


class ConsoleDispatch:
    """Send requests under the console's root to the console; all others to the API."""

    def __init__(self, app: ASGIApp, console: ASGIApp, root: str) -> None:
        self.app = app
        self.console = console
        self.root = root

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not (path == self.root or path.startswith(self.root + "/")):
            await self.app(scope, receive, send)
            return
        if path == self.root:
            await send_redirect(send, self.root + "/")
            return
        started = False

        async def watch(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.console(scope, receive, watch)
        except Exception:
            # Never a bare 500 or a traceback: the person sees a page saying what to do.
            log.exception("console error", extra={"path": path})
            if not started:
                body = (
                    b"<!doctype html><title>Console error</title><h1>Something went wrong</h1>"
                    b"<p>The console could not answer this request. Nothing was changed"
                    b" unless a page said so. Try again; if it goes on, tell your administrator.</p>"
                )
                await send(
                    {
                        "type": "http.response.start",
                        "status": 500,
                        "headers": [(b"content-type", b"text/html; charset=utf-8")],
                    }
                )
                await send({"type": "http.response.body", "body": body})


async def send_redirect(send: Send, location: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 308,
            "headers": [(b"location", location.encode()), (b"content-length", b"0")],
        }
    )
    await send({"type": "http.response.body", "body": b""})


def install(app: FastAPI) -> None:
    """Serve the console in front of the API (called last in ``create_app``)."""
    services: Services = app.state.context
    root = services.settings.base_path + "/console"
    app.add_middleware(ConsoleDispatch, console=build(services), root=root)
