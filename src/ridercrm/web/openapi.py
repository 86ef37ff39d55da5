"""The OpenAPI document (``GET /openapi.json``): the interface as it really is.

The endpoints read their bodies themselves (:mod:`ridercrm.wire`) and answer with
:class:`~ridercrm.web.runtime.Reply`, so FastAPI sees neither a request nor a
response model. The route decorators hand the document over instead, through
``openapi_extra=`` (request bodies in the four content types, the Idempotency-Key
header) and ``responses=`` (every status with its body, media types and headers), both
built here from the models in each feature's ``schemas.py`` (the same models that
validate requests and serialise responses).

:func:`install` makes the app's ``openapi()`` add those models as component schemas
(``model_json_schema()``), add the two security schemes, and drop FastAPI's generic
422 "Validation Error": this service answers a bad parameter 400 in its own shapes.
Nothing here changes what a request does; it only describes it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Literal, get_args, get_origin

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, ConfigDict, Field

from ridercrm.web.idempotency.service import MAX_KEY_LENGTH

REF = "#/components/schemas/"
AUDIT_ID_PATTERN = "^a0A[0-9A-Za-z]{12}[A-Z0-5]{3}$"

JSON_MEDIA = ("application/json", "text/json")
REQUEST_MEDIA = ("application/json", "text/json", "text/plain")
FORM_MEDIA = "application/x-www-form-urlencoded"

DESCRIPTION = """\
CRM service for a motorcycle rider-training business: the four operations of the
interface its booking website already speaks, products, and an admin API.

**Request bodies** of every POST may be `application/json`, `text/json` or
`text/plain` (each carrying JSON text) or `application/x-www-form-urlencoded`, as JSON
text in the raw body, as form fields whose values are JSON (`people_product=[...]`),
or as bracket fields (`person_data[first_name]=Ann`), as PHP, Rails, jQuery, `qs` and
browsers write them: indexed items (`people_data[0][ID]`, sparse indexes in index
order), empty brackets (`people_data[][ID]`; a field the current item already has
starts the next item, as Rack reads them) and dot notation (`people_data[0].ID`). Form
values are text (`null` is the text "null"); flags take true/false, 1/0, on/off, yes/no
in any case, and a postcode may be 3 digits or a number ("800", 800 and 800.0 are
"0800"). A `charset` parameter is honoured; a request without Content-Type is read as
JSON; any other type is 415. JSON is read strictly: duplicate keys, NaN/Infinity and
nesting deeper than 32 levels are refused.

**Responses** are `application/json`, or `text/json` when the Accept header prefers
it. Every response except `/healthz`, `/readyz`, `/metrics` and these documents carries
`X-Audit-Id`, the id of the request's audit record (save the 429s answered, without
a record, to requests refused without a valid key beyond RIDERCRM_REFUSED_RATE_LIMIT
from one address); a refused request also carries `X-Failure-Reason`. 200 means the request was processed, even when items failed or no
match was found. Operation 1 answers every refusal with the plain text body
`Status update failed.`; operations 2 to 4 answer in their own JSON shape; the rest
answer `{"detail", "errors", "audit_id"}`.

**Keys** are sent as `Authorization: Bearer <key>` or `X-API-Key: <key>`. Scopes:
`courses` (operation 1), `people` (operation 2), `match` (operations 3 and 4),
`products` (`GET /crm/products`), `admin` (everything).

**Retries**: every POST accepts an `Idempotency-Key` header: a repeat with the same key
and body gets the stored answer again; the same key with another body is 422; a repeat
while the first is still running is 409.
"""


# --- Models shared by every route --------------------------------------------------


class ErrorBody(BaseModel):
    """A refused request outside the four operations (admin API, products)."""

    model_config = ConfigDict(extra="forbid")

    detail: str = Field(description="Why the request was refused.")
    errors: list[str] = Field(
        default_factory=list,
        description="One `field: reason` per field at fault, when fields were at fault.",
    )
    audit_id: str = Field(pattern=AUDIT_ID_PATTERN, description="The request's audit record.")


class Unavailable(BaseModel):
    """The audit record could not be stored, so no audit id can be given."""

    detail: str


class Created(BaseModel):
    """A record was created."""

    id: str = Field(description="The new record's 18-character id.")


class Health(BaseModel):
    status: Literal["ok"]


class Readiness(BaseModel):
    status: Literal["ok", "unavailable"]
    database: Literal["ok", "unreachable", "read-only", "disk full"]


# --- Component schemas -----------------------------------------------------------

_MODELS: dict[str, type[BaseModel]] = {}


def ref(model: type[BaseModel]) -> dict[str, str]:
    """A reference to ``model``'s component schema (registered for :func:`install`),
    named by the model's title when it sets one, else by its class name."""
    name = model.model_config.get("title") or model.__name__
    known = _MODELS.setdefault(name, model)
    if known is not model:
        raise ValueError(f"two models are named {name}")
    return {"$ref": REF + name}


def component_schemas() -> dict[str, Any]:
    """Every referenced model's JSON schema, nested models included, by name."""
    schemas: dict[str, Any] = {}
    for name, model in sorted(_MODELS.items()):
        schema = model.model_json_schema(ref_template=REF + "{model}")
        definitions = {**schema.pop("$defs", {}), name: schema}
        for def_name, definition in definitions.items():
            if schemas.setdefault(def_name, definition) != definition:
                raise ValueError(f"two models are named {def_name}")
    return schemas


# --- Headers ---------------------------------------------------------------------


def _header(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "required": True, "schema": schema}


AUDIT_HEADER = {
    "X-Audit-Id": _header(
        "Id of this request's audit record, which is stored before the response is sent.",
        {"type": "string", "pattern": AUDIT_ID_PATTERN},
    )
}
FAILURE_HEADER = {
    "X-Failure-Reason": _header(
        "Why the request failed as a whole (ASCII; the audit record has the same text).",
        {"type": "string"},
    )
}
CHALLENGE_HEADER = {"WWW-Authenticate": _header("Names the scheme: `Bearer`.", {"type": "string"})}
RETRY_AFTER_HEADER = {
    "Retry-After": _header(
        "Seconds until the key may call again.", {"type": "integer", "minimum": 0}
    )
}

IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": (
        "Makes the request safe to retry: a repeat with the same key and body gets the"
        " stored status and body again (with its own X-Audit-Id); the same key with another"
        " body is 422; a repeat while the first is still running is 409."
        f" 1 to {MAX_KEY_LENGTH}"
        " printable characters, else 400. Keys are per API key and last"
        " RIDERCRM_IDEMPOTENCY_TTL_HOURS (24 h)."
    ),
    "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH},
}

SECURITY_SCHEMES = {
    "bearer": {
        "type": "http",
        "scheme": "bearer",
        "description": "`Authorization: Bearer rcrm_...`",
    },
    "apiKey": {
        "type": "apiKey",
        "in": "header",
        "name": "X-API-Key",
        "description": "`X-API-Key: rcrm_...`",
    },
}
SECURITY: list[dict[str, list[str]]] = [{"bearer": []}, {"apiKey": []}]
NO_SECURITY: dict[str, Any] = {"security": []}


# --- Responses -------------------------------------------------------------------

REFUSALS: Mapping[int, str] = {
    400: (
        "The request as a whole is unusable: the body is not JSON (or not a form), has the"
        " wrong top-level shape or a bad field, the Idempotency-Key is malformed, or a"
        " parameter is invalid."
    ),
    401: "No API key, or an unknown or revoked one.",
    403: "The API key lacks the scope this route needs.",
    404: "No record has this id.",
    409: "A request with this Idempotency-Key is still being processed.",
    413: (
        "The body is larger than RIDERCRM_MAX_BODY_BYTES (1 MiB) or holds more than"
        " RIDERCRM_MAX_ITEMS (200) items."
    ),
    415: "The Content-Type, or its charset, is not accepted.",
    422: "This Idempotency-Key was used before with a different body.",
    429: "The API key made too many requests; call again after Retry-After seconds.",
}
INTERFACE_REFUSALS = (400, 401, 403, 409, 413, 415, 422, 429)
READ_REFUSALS = (400, 401, 403, 429)
RECORD_REFUSALS = (400, 401, 403, 404, 429)

UNAVAILABLE = {
    "description": (
        "The audit record could not be stored, and no audit id is given. The detail says"
        " whether the request was not applied or may have been (its work and record were"
        " committing when the database failed)."
    ),
    "content": {"application/json": {"schema": ref(Unavailable)}},
}


def schema_of(response: Any) -> dict[str, Any]:
    """The schema of a response: a model's reference, or for ``list[Model]`` an array of them."""
    if get_origin(response) is list:
        (model,) = get_args(response)
        return {"type": "array", "items": ref(model)}
    return ref(response)


def json_content(schema: dict[str, Any]) -> dict[str, Any]:
    """The same body as ``application/json`` and, when Accept prefers it, ``text/json``."""
    return {media: {"schema": schema} for media in JSON_MEDIA}


def text_content(text: str) -> dict[str, Any]:
    """A fixed ``text/plain`` body."""
    return {"text/plain": {"schema": {"type": "string", "const": text}, "example": text}}


DEFAULT_REFUSAL = json_content(ref(ErrorBody))


def responses(
    *,
    ok: tuple[int, str, dict[str, Any]],
    refused: Iterable[int],
    refusal: dict[str, Any] = DEFAULT_REFUSAL,
    notes: Mapping[int, str] | None = None,
) -> dict[int | str, Any]:
    """The ``responses=`` of a route: its success, its refusals and the 503.

    ``ok`` is (status, description, content); ``refusal`` the content every refusal has;
    ``notes`` adds a sentence to a status's description.
    """
    status, description, content = ok
    documented: dict[int | str, Any] = {
        status: {"description": description, "content": content, "headers": AUDIT_HEADER}
    }
    for code in refused:
        headers = {**AUDIT_HEADER, **FAILURE_HEADER}
        if code == 401:
            headers.update(CHALLENGE_HEADER)
        if code == 429:
            headers.update(RETRY_AFTER_HEADER)
        text = REFUSALS[code]
        if notes and code in notes:
            text = f"{text} {notes[code]}"
        documented[code] = {"description": text, "content": refusal, "headers": headers}
    documented[503] = UNAVAILABLE
    return documented


# --- Request bodies --------------------------------------------------------------


def _bracket_fields(value: Any, name: str = "") -> dict[str, str]:
    """``{"a": [{"b": 1}]}`` -> ``{"a[0][b]": "1"}``: the bracket-field form of a body."""
    if isinstance(value, dict):
        items: Iterable[tuple[Any, Any]] = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        if isinstance(value, bool):
            return {name: "true" if value else "false"}
        return {name: "" if value is None else str(value)}
    fields: dict[str, str] = {}
    for key, child in items:
        fields.update(_bracket_fields(child, f"{name}[{key}]" if name else str(key)))
    return fields


def _as_text(schema: dict[str, Any]) -> dict[str, Any]:
    """The part of a field's schema that a form's text value can meet (the model's own
    rule: bracket fields carry text, so a flag's ``true``, ``on``, ``0`` ... as words)."""
    text: list[dict[str, Any]] = []
    for branch in schema.get("anyOf", [schema]):
        if branch.get("type") == "string":
            text.append(branch)
        elif words := [value for value in branch.get("enum", ()) if isinstance(value, str)]:
            text.append({"enum": words})
    return text[0] if len(text) == 1 else {"anyOf": text}


def request_body(
    model: type[BaseModel],
    *,
    example: dict[str, Any],
    bracket_pattern: str | None = None,
) -> dict[str, Any]:
    """The ``openapi_extra=`` of a POST: its body in the four content types, and the
    Idempotency-Key header every POST accepts.

    ``application/json``, ``text/json`` and ``text/plain`` carry the JSON body.
    ``application/x-www-form-urlencoded`` is one of: form fields whose values are
    JSON, one per top-level key; the JSON text itself as the raw body; or, with
    ``bracket_pattern``, bracket fields (``people_data[0][ID]=...``) whose values are
    text.
    """
    body = ref(model)
    json_media = {"schema": body, "example": example}
    variants: list[dict[str, Any]] = [
        body,
        {
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": body,
            "description": "The JSON text itself as the raw body (a mislabelled JSON request).",
        },
    ]
    examples: dict[str, Any] = {
        "json_fields": {
            "summary": "Form fields whose values are JSON (one per top-level key)",
            "value": example,
        },
        "json_text": {
            "summary": "JSON text as the raw body",
            "value": json.dumps(example),
        },
    }
    description = (
        "As form fields whose values are JSON text (strings may also be sent bare), one"
        " per top-level key of the JSON body; or the JSON text itself as the raw body"
    )
    if bracket_pattern is not None:
        brackets: dict[str, Any] = {
            "type": "object",
            "description": "Bracket fields: one form field per value, named by its path.",
            "patternProperties": {bracket_pattern: {"type": "string"}},
            "additionalProperties": False,
            "minProperties": 1,
        }
        if "explain" in model.model_fields:
            explain = model.model_json_schema()["properties"]["explain"]
            brackets["properties"] = {"explain": _as_text(explain)}
        variants.append(brackets)
        examples["bracket_fields"] = {
            "summary": "Bracket fields, one per value",
            "value": _bracket_fields(example),
        }
        description += "; or bracket fields, one per value, named by its path (values are text)"
    form = {
        "schema": {"oneOf": variants, "description": description + "."},
        "encoding": {name: {"contentType": "application/json"} for name in model.model_fields},
        "examples": examples,
    }
    extra: dict[str, Any] = {
        "requestBody": {
            "required": True,
            "description": (
                "The JSON body as application/json, text/json or text/plain (all JSON text;"
                " a charset parameter is honoured), or as a form."
            ),
            "content": {**{media: json_media for media in REQUEST_MEDIA}, FORM_MEDIA: form},
        },
        "parameters": [IDEMPOTENCY_KEY],
    }
    return extra


# --- The document ----------------------------------------------------------------


def _is_fastapi_validation_error(response: Mapping[str, Any]) -> bool:
    content = response.get("content", {}).get("application/json", {})
    return bool(content.get("schema", {}).get("$ref") == REF + "HTTPValidationError")


def document(app: FastAPI) -> dict[str, Any]:
    """Build the OpenAPI document of ``app`` (its routes, under its base path)."""
    schema = get_openapi(
        title=app.title,
        version=app.version,
        openapi_version=app.openapi_version,
        description=DESCRIPTION,
        routes=app.routes,
        webhooks=app.webhooks.routes,
        tags=app.openapi_tags,
        servers=app.servers,
    )
    for path_item in schema.get("paths", {}).values():
        for operation in path_item.values():
            operation_responses = operation.get("responses", {})
            if _is_fastapi_validation_error(operation_responses.get("422", {})):
                del operation_responses["422"]
    components = schema.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    for name, definition in component_schemas().items():
        if schemas.setdefault(name, definition) != definition:
            raise ValueError(f"component schema {name} is defined twice")
    components["securitySchemes"] = SECURITY_SCHEMES
    schema["security"] = SECURITY
    return schema


def install(app: FastAPI) -> None:
    """Serve :func:`document` at ``/openapi.json`` (built once, on first request)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = document(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
