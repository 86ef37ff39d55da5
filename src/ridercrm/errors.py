"""One error type carrying its HTTP status, and the shapes errors are rendered in.

Each operation of the interface answers errors in its own response shape; the admin
API and everything else answer ``{"detail": ..., "errors": [...], "audit_id": ...}``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


class ApiError(Exception):
    """A request that fails as a whole, with the status and reason to answer."""

    def __init__(
        self,
        status: int,
        reason: str,
        *,
        errors: Sequence[str] = (),
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.errors = list(errors)
        self.headers = headers or {}


# An error shape turns an error and the request's audit id into a response body:
# a str is sent as text/plain, anything else as JSON.
ErrorShape = Callable[[ApiError, str], Any]


def default_shape(error: ApiError, audit_id: str) -> Any:
    body: dict[str, Any] = {"detail": error.reason, "audit_id": audit_id}
    if error.errors:
        body["errors"] = error.errors
    return body


def sentence(reason: str) -> str:
    """A receipt is a sentence: it ends with a full stop."""
    return reason if reason.endswith((".", "!", "?")) else reason + "."
