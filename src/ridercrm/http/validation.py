"""Turn a decoded body into a Pydantic model, or a 400 that names every bad field."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ridercrm.fields import error_messages
from ridercrm.http.errors import ApiError

M = TypeVar("M", bound=BaseModel)


def parse_model(model: type[M], payload: Any) -> M:
    if not isinstance(payload, dict):
        raise ApiError(400, "body must be a JSON object")
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        messages = error_messages(exc)
        raise ApiError(400, "; ".join(messages), errors=messages) from None


def items_of(payload: Any, key: str, *, limit: int) -> list[Any]:
    """The request's array of items under ``key``, within the item-count limit."""
    if not isinstance(payload, dict) or not isinstance(payload.get(key), list):
        raise ApiError(400, f"body must be a JSON object with a {key} array")
    items: list[Any] = payload[key]
    if len(items) > limit:
        raise ApiError(413, f"too many items: {len(items)} in {key}, the limit is {limit}")
    return items
