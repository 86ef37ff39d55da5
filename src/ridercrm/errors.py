"""The errors: a feature's refusal (:class:`DomainError`), the API's answer to a failed
request (:class:`ApiError`, carrying its HTTP status), and the shapes errors are rendered in.

A feature raises a :class:`DomainError` subclass of its own, saying what kind of refusal it
is, why (the message) and which field it is about, never an HTTP status; the web layer maps
it once for the API (``web.runtime.api_error``) and once for the console
(``web.console.frame``), and a command prints its message. Each operation of the interface
answers errors in its own response shape; the admin API and everything else answer
``{"detail": ..., "errors": [...], "audit_id": ...}``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

# What kind of refusal a DomainError is, and the status its answer carries (the API's
# status, and the one the audit record of a console change or a command keeps).
INVALID = "invalid"  # the request is wrong as given: 400
FORBIDDEN = "forbidden"  # the caller may not: 403
NOT_FOUND = "not_found"  # what it names does not exist: 404
CONFLICT = "conflict"  # the stored state does not allow it now: 409
UNPROCESSABLE = "unprocessable"  # well formed, but it names something that cannot serve: 422
STATUS_OF_KIND = {INVALID: 400, FORBIDDEN: 403, NOT_FOUND: 404, CONFLICT: 409, UNPROCESSABLE: 422}


class DomainError(Exception):
    """A feature's refusal; nothing was changed. The base of every feature's error.

    ``kind`` (one of the kinds above; the subclass's ``kind`` when not given), ``message``
    (the reason, as the caller reads it) and ``field`` (the field it is about, if one).
    ``listed``: the admin API's answer also lists the message under ``errors`` (a
    subclass's choice, kept as each feature answered before the errors had one family).
    """

    kind: str = INVALID
    listed: bool = True

    def __init__(self, message: str, *, kind: str | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind or type(self).kind
        self.field = field

    @property
    def status(self) -> int:
        """The status an answer of this kind carries."""
        return STATUS_OF_KIND[self.kind]

    @property
    def reason(self) -> str:
        return self.message


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
