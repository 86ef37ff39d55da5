"""Turn a decoded body into a Pydantic model, or a 400 that names every bad field."""

from __future__ import annotations

import datetime as dt
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ridercrm.errors import ApiError
from ridercrm.fields import error_messages, received

M = TypeVar("M", bound=BaseModel)


def parse_model(model: type[M], payload: Any) -> M:
    if not isinstance(payload, dict):
        raise ApiError(
            400,
            f"body: must be an object of fields (received {received(payload)}); send a JSON"
            " object or form fields name=value",
        )
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        messages = error_messages(exc)
        raise ApiError(400, "; ".join(messages), errors=messages) from None


def forms(key: str, *, many: bool = True) -> str:
    """How a body may carry ``key``, for a refusal to say what we accept."""
    if many:
        return (
            f'send JSON {{"{key}": [{{...}}]}}, form fields {key}[0][field]=... (or'
            f" {key}[][field]=...), or a form field {key}=<JSON array>"
        )
    return (
        f'send JSON {{"{key}": {{...}}}}, form fields {key}[field]=..., or a form field'
        f" {key}=<JSON object>"
    )


def items_of(payload: Any, key: str, *, limit: int) -> list[Any]:
    """The request's array of items under ``key``, within the item-count limit."""
    if not isinstance(payload, dict):
        raise ApiError(
            400,
            f"body: must be an object with a {key} array (received {received(payload)});"
            f" {forms(key)}",
        )
    if not isinstance(payload.get(key), list):
        got = "nothing" if key not in payload else received(payload[key])
        raise ApiError(400, f"{key}: must be an array of items (received {got}); {forms(key)}")
    items: list[Any] = payload[key]
    if len(items) > limit:
        raise ApiError(413, f"too many items: {len(items)} in {key}, the limit is {limit}")
    return items


def utc_time(name: str, value: dt.datetime | None) -> dt.datetime | None:
    """A query's time in UTC (UTC when it names no zone), or a 400 naming the parameter."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    try:
        return value.astimezone(dt.UTC)
    except OverflowError:
        # e.g. 0001-01-01T00:00:00+10:00 is before the first representable UTC time
        raise ApiError(
            400, f"{name}: is out of range", errors=[f"{name}: is out of range"]
        ) from None
