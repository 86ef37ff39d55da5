"""Exception handlers: every error is rendered in the shape of the route it hit."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from ridercrm.errors import ApiError, DomainError
from ridercrm.web.runtime import (
    api_error,
    authenticate_deferred,
    call_of,
    error_outcome,
    render,
)


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return render(request, error_outcome(call_of(request), exc))


async def _domain_error(request: Request, exc: Exception) -> Response:
    """A feature's refusal that a read's work let through (a POST's is caught by run_post)."""
    assert isinstance(exc, DomainError)
    return await _api_error(request, api_error(exc))


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    # A read's key is checked after its parameters (runtime.operation): refused for its
    # key first, as any other operation is.
    if getattr(request.state, "deferred_scope", None) is not None:
        try:
            await run_in_threadpool(authenticate_deferred, request)
        except ApiError as refused:
            return await _api_error(request, refused)
    messages = []
    for error in exc.errors():
        where = ".".join(
            str(part) for part in error["loc"] if part not in ("query", "path", "body")
        )
        messages.append(f"{where}: {error['msg']}")
    return await _api_error(request, ApiError(400, "; ".join(messages), errors=messages))


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    reasons = {404: "no such path", 405: "method not allowed on this path"}
    error = ApiError(
        exc.status_code,
        reasons.get(exc.status_code, str(exc.detail)),
        headers=dict(exc.headers or {}),
    )
    return await _api_error(request, error)


def install(app: FastAPI) -> None:
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(DomainError, _domain_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
