"""Declare an operation once: its route, scope, error shape, documentation and work.

A route module makes one :class:`Operations` group per audience on its router; the
group gives what its operations share (the scope, the operation names' prefix, the
tags, the error shape and how the document shows a refusal)::

    crm = Operations(router, "crm", scope="courses", shape=failure_shape, refusal=...)
    admin = Operations(router, "admin", scope="admin", tags=["admin"])

A writing operation (a POST) is a work function and one declaration, with a decoder
when its payload is more than the body's model::

    def booking_of(body: Any, request: Requested) -> Booking: ...   # decode, authorise
    def rider_courses(session: Session, booking: Booking) -> Reply: ...  # one service call

    crm.post("/crm/people/rider_courses", rider_courses, decode=booking_of,
             example=..., body=RiderCoursesRequest, ok="...", answer=RiderCoursesResponse)

    def create_product(session: Session, data: ProductCreate) -> Reply: ...
    admin.post("/admin/products", create_product, example=..., ok="Created.", ...)

:func:`post` builds the FastAPI endpoint: it names the operation and checks the key
(``operation``), decodes the body, calls ``decode`` (which refuses a bad payload with an
:class:`~ridercrm.errors.ApiError` before any transaction starts; without it, the body
is validated as the model the work takes), then runs the work in
a worker thread and one transaction that also stores the audit record and the
Idempotency-Key's answer (``runtime.run_post``). The :class:`~ridercrm.web.runtime.Reply`
carries the body and the audit note together, so nothing reports back on the side.
The endpoint's OpenAPI summary, description (the work's docstring), request body and
responses come from the declaration, its operationId from ``endpoint``.

A read (a GET) is the same, with its parameters where a POST has its body::

    def person_asked(q: str | None = Query(None, max_length=200), ...) -> PeopleAsked: ...
    def search_people(session: Session, asked: PeopleAsked) -> Any: ...  # one service call

    admin.get("/people", search_people, ask=person_asked, response=PeopleFound,
              ok="A page of people.", summary="...")

:func:`get` names the operation and checks the key, lets FastAPI read the path and query
parameters that ``ask`` declares (or the path's one parameter, without ``ask``), then runs
the work in a worker thread and one read transaction. The work answers the record, which
the ``response`` model serialises (the same model the document names; by default the one
the work's return annotation names), or a ``Reply``.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from pydantic import BaseModel, TypeAdapter
from sqlalchemy.orm import Session

from ridercrm.audit.call import Call, Caller
from ridercrm.config import Settings
from ridercrm.errors import ApiError, ErrorShape, default_shape
from ridercrm.ratelimit import KeyRateLimiter
from ridercrm.web import openapi
from ridercrm.web.runtime import AppContext, Reply, app_context, operation, run_post, run_read
from ridercrm.web.validation import parse_model


@dataclass(frozen=True)
class Requested:
    """What a decoder may know of the request beyond its body: who asks, under which
    audit id, the path's parameters, and the settings and limiters of the app."""

    audit_id: str
    caller: Caller
    settings: Settings
    # The app's rate limiters that features' decoders use, by name (only those switched on).
    limiters: Mapping[str, KeyRateLimiter] = field(default_factory=dict)
    path: dict[str, Any] = field(default_factory=dict)


def requested(call: Call, context: AppContext, path: dict[str, Any]) -> Requested:
    assert call.caller is not None  # `operation` authenticated the request
    return Requested(
        audit_id=call.audit_id,
        caller=call.caller,
        settings=context.settings,
        limiters=context.limiters,
        path=path,
    )


def raw(body: Any, _request: Requested) -> Any:
    """The decoded body as it is (operations that validate it themselves)."""
    return body


AppContextDep = Annotated[AppContext, Depends(app_context)]


def post(
    router: APIRouter,
    path: str,
    work: Callable[[Session, Any], Reply],
    *,
    name: str,
    scope: str,
    ok: str,
    answer: Any,
    decode: Callable[[Any, Requested], Any] | None = None,
    example: dict[str, Any] | None = None,
    body: type[BaseModel] | None = None,
    brackets: str | None = None,
    shape: ErrorShape = default_shape,
    refused: Iterable[int] | None = None,
    refusal: dict[str, Any] = openapi.DEFAULT_REFUSAL,
    notes: Mapping[int, str] | None = None,
    write: bool = True,
    path_types: dict[str, Any] | None = None,
    empty_body_is_object: bool = False,
    endpoint: str | None = None,
    status_code: int | None = None,
    summary: str | None = None,
    tags: list[str] | None = None,
    method: str = "POST",
) -> None:
    """Register ``work`` as the POST operation ``name`` at ``path`` (``method``: PATCH or
    DELETE instead, declared and run the same way).

    Without ``decode``, the body is validated as the model ``work`` takes (its second
    parameter's annotation). The document's request body is ``body`` (by default that
    same model) with ``example``, in the four media types (``brackets``: the pattern of
    bracket fields a form may use); a POST also names the Idempotency-Key header. Its
    success is ``status_code`` (200 by default) described as ``ok`` with the model
    ``answer``; its refusals ``refused`` (by default an operation's, and 404 when the
    path names a record) with the content ``refusal``, ``notes`` adding to a status's
    description.

    ``write=False`` is for POSTs that only read (matching): on SQLite they then do not
    queue behind writers for the write lock, and they store no audit record in the work's
    transaction (the middleware writes it).
    """
    authorised = Depends(operation(name, scope=scope, shape=shape))
    named = re.findall(r"{(\w+)}", path)
    taken = _payload_model(work)
    decoder = decode or _parsed(taken, work)

    async def run(
        request: Request, context: AppContextDep, call: Call = authorised, **path_params: Any
    ) -> Response:
        if empty_body_is_object and not (call.request_body or b"").strip():
            call.request_body = b"{}"
        asked = requested(call, context, path_params)
        return await run_post(
            request, call, work, decode=lambda body: decoder(body, asked), write=write
        )

    types = path_types or {}
    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    run.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter("request", positional, annotation=Request),
            inspect.Parameter("context", positional, annotation=AppContextDep),
            inspect.Parameter("call", positional, annotation=Call, default=authorised),
            *(
                inspect.Parameter(
                    name, inspect.Parameter.KEYWORD_ONLY, annotation=types.get(name, str)
                )
                for name in named
            ),
        ],
        return_annotation=Response,
    )
    run.__name__ = endpoint or work.__name__
    extra = None
    if example is not None:
        documented = body or taken
        assert documented is not None, f"{work.__name__}: the body's model is not known"
        extra = openapi.request_body(documented, example=example, bracket_pattern=brackets)
        if method != "POST":
            extra["parameters"] = []  # only a POST takes an Idempotency-Key
    if refused is None:
        refused = (*openapi.INTERFACE_REFUSALS, 404) if named else openapi.INTERFACE_REFUSALS
    status = status_code or 200
    router.add_api_route(
        path,
        run,
        methods=[method],
        name=run.__name__,
        summary=summary,
        description=inspect.cleandoc(work.__doc__ or ""),
        status_code=status_code,
        openapi_extra=extra,
        responses=openapi.responses(
            ok=(status, ok, openapi.json_content(openapi.schema_of(answer))),
            refused=refused,
            refusal=refusal,
            notes=notes,
        ),
        tags=tags,  # type: ignore[arg-type]
    )


def _payload_model(work: Callable[..., Any]) -> type[BaseModel] | None:
    """The model a work function takes as its payload (its second parameter), if any."""
    hints = typing.get_type_hints(work)
    parameters = list(inspect.signature(work).parameters)
    taken = hints.get(parameters[1]) if len(parameters) > 1 else None
    return taken if isinstance(taken, type) and issubclass(taken, BaseModel) else None


def _parsed(
    model: type[BaseModel] | None, work: Callable[..., Any]
) -> Callable[[Any, Requested], Any]:
    """The decoder that validates the body as ``model``."""
    if model is None:
        raise TypeError(f"{work.__name__}: give decode=, or take a model as the payload")
    return lambda body, _request: parse_model(model, body)


def _answered_model(work: Callable[..., Any]) -> Any:
    """The model a work function's return annotation names (a model or ``list[Model]``),
    or None when it answers something else (a record, a ``Reply``)."""
    answered = typing.get_type_hints(work).get("return")
    if get_origin(answered) in (UnionType, Union):  # a record or None: the record's model
        answered = next(arg for arg in get_args(answered) if arg is not type(None))
    model = get_args(answered)[0] if get_origin(answered) is list else answered
    return answered if isinstance(model, type) and issubclass(model, BaseModel) else None


def get(
    router: APIRouter,
    path: str,
    work: Callable[[Any, Any], Any],
    *,
    name: str,
    scope: str,
    ok: str,
    summary: str,
    response: Any = None,
    ask: Callable[..., Any] | None = None,
    missing: str | None = None,
    path_types: dict[str, Any] | None = None,
    shape: ErrorShape = default_shape,
    tags: list[str] | None = None,
    light: bool = False,
) -> None:
    """Register ``work`` as the read ``name`` at ``path``.

    ``work(session, payload)`` gets what ``ask`` makes of the request's parameters (its
    own parameters are the route's, declared with FastAPI's ``Path`` and ``Query``; it
    may refuse them with an :class:`~ridercrm.errors.ApiError` before any transaction),
    or without ``ask`` the path's one parameter (``None`` when there is none). It answers
    a value that ``response`` (a model, or ``list[Model]``) serialises, or a
    :class:`~ridercrm.web.runtime.Reply` as it is. The document says 200 with
    ``response`` described as ``ok``; the refusals of a read, with 404 when the path
    names a record. Without ``response``, the model the work's return annotation names.
    With ``missing`` (what the path names, say ``"product"``), a work that answers None
    is refused 404 "no product with id ...". ``light``: a read of a few rows of small
    tables, whose ``work`` gets the driver's reads (``db.Reads``) instead of a session,
    run on the event loop (``runtime.run_read``; on PostgreSQL awaited, web.loop_db).
    """
    # The key is looked up with the read's own database reads (runtime.run_read).
    authorised = Depends(operation(name, scope=scope, shape=shape, read=True))
    response = response or _answered_model(work)
    assert response is not None, f"{work.__name__}: give response="
    adapter: TypeAdapter[Any] = TypeAdapter(response)

    def answered(session: Any, payload: Any) -> Reply:
        result = work(session, payload)
        if result is None and missing is not None:
            raise ApiError(404, f"no {missing} with id {payload}")
        if isinstance(result, Reply):
            return result
        if light:
            # pydantic writes the JSON itself, in the form encode_json gives (compact,
            # UTF-8): a polled read's answer is not made into Python values first.
            return Reply(None, encoded=adapter.dump_json(adapter.validate_python(result)))
        return Reply(adapter.dump_python(adapter.validate_python(result), mode="json"))

    named = re.findall(r"{(\w+)}", path)
    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    if ask is not None:
        # Resolved here: FastAPI would look the names up in this module, not in ask's.
        hints = typing.get_type_hints(ask, include_extras=True)
        parameters = [
            p.replace(annotation=hints[p.name]) for p in inspect.signature(ask).parameters.values()
        ]
    else:
        types = path_types or {}
        parameters = [
            inspect.Parameter(param, positional, annotation=types.get(param, str))
            for param in named
        ]

    def payload_of(params: dict[str, Any]) -> Any:
        if ask is not None:
            return ask(**params)
        return params[named[0]] if named else None

    async def run(request: Request, call: Call = authorised, **params: Any) -> Response:
        return await run_read(request, answered, lambda: payload_of(params), light=light)

    run.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter("request", positional, annotation=Request),
            inspect.Parameter("call", positional, annotation=Call, default=authorised),
            *(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in parameters),
        ],
        return_annotation=Response,
    )
    run.__name__ = work.__name__
    router.add_api_route(
        path,
        run,
        methods=["GET"],
        name=run.__name__,
        summary=summary,
        description=inspect.cleandoc(work.__doc__ or ""),
        responses=openapi.responses(
            ok=(200, ok, openapi.json_content(openapi.schema_of(response))),
            refused=openapi.RECORD_REFUSALS if named else openapi.READ_REFUSALS,
        ),
        tags=tags,  # type: ignore[arg-type]
    )


@dataclass(frozen=True)
class Operations:
    """What a route module's operations for one audience share, declared once: the router,
    the scope a key needs, the prefix of the operations' names (``admin``: an operation
    is ``admin.<its work's name>`` unless it names itself), the error shape and how the
    document shows a refusal, and the tags. Its :meth:`post` and :meth:`get` are
    :func:`post` and :func:`get` with those filled in."""

    router: APIRouter
    prefix: str
    scope: str
    shape: ErrorShape = default_shape
    refusal: dict[str, Any] = field(default_factory=lambda: openapi.DEFAULT_REFUSAL)
    tags: list[str] | None = None

    def post(self, path: str, work: Callable[[Session, Any], Reply], **options: Any) -> None:
        defaults = {**self._shared(work), "refusal": self.refusal}
        post(self.router, path, work, **{**defaults, **options})

    def get(self, path: str, work: Callable[[Any, Any], Any], **options: Any) -> None:
        get(self.router, path, work, **{**self._shared(work), **options})

    def _shared(self, work: Callable[..., Any]) -> dict[str, Any]:
        return {
            "name": f"{self.prefix}.{work.__name__}",
            "scope": self.scope,
            "shape": self.shape,
            "tags": self.tags,
        }
