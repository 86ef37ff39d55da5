"""Declare an operation once: its route, scope, error shape, documentation and work.

A writing operation (a POST) is two module-level functions and one declaration::

    def booking_of(body: Any, request: Requested) -> Booking: ...   # decode, authorise
    def rider_courses(session: Session, booking: Booking) -> Reply: ...  # one service call

    post(router, "/crm/people/rider_courses", rider_courses, decode=booking_of,
         name="crm.rider_courses", scope="courses", shape=failure_shape, ...)

:func:`post` builds the FastAPI endpoint: it names the operation and checks the key
(``operation``), decodes the body, calls ``decode`` (which refuses a bad payload with an
:class:`~ridercrm.errors.ApiError` before any transaction starts), then runs the work in
a worker thread and one transaction that also stores the audit record and the
Idempotency-Key's answer (``runtime.run_post``). The :class:`~ridercrm.web.runtime.Reply`
carries the body and the audit note together, so nothing reports back on the side.
The endpoint's OpenAPI summary, description (the work's docstring), request body and
responses come from the declaration, its operationId from ``endpoint``.

A read (a GET) is the same, with its parameters where a POST has its body::

    def person_asked(q: str | None = Query(None, max_length=200), ...) -> PeopleAsked: ...
    def search_people(session: Session, asked: PeopleAsked) -> Any: ...  # one service call

    get(router, "/people", search_people, ask=person_asked, name="admin.search_people",
        scope="admin", response=PeopleFound, ok="A page of people.", summary="...")

:func:`get` names the operation and checks the key, lets FastAPI read the path and query
parameters that ``ask`` declares (or the path's one parameter, without ``ask``), then runs
the work in a worker thread and one read transaction. The work answers the record, which
the ``response`` model serialises (the same model the document names), or a ``Reply``.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from pydantic import TypeAdapter
from sqlalchemy.orm import Session

from ridercrm.audit.call import Call, Caller
from ridercrm.config import Settings
from ridercrm.errors import ErrorShape, default_shape
from ridercrm.ratelimit import KeyRateLimiter
from ridercrm.web import openapi
from ridercrm.web.runtime import AppContext, Reply, app_context, operation, run_post, run_read


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
    decode: Callable[[Any, Requested], Any] = raw,
    shape: ErrorShape = default_shape,
    write: bool = True,
    path_types: dict[str, Any] | None = None,
    empty_body_is_object: bool = False,
    endpoint: str | None = None,
    status_code: int | None = None,
    summary: str | None = None,
    openapi_extra: dict[str, Any] | None = None,
    responses: dict[int | str, dict[str, Any]] | None = None,
    tags: list[str] | None = None,
    method: str = "POST",
) -> None:
    """Register ``work`` as the POST operation ``name`` at ``path`` (``method``: PATCH or
    DELETE instead, declared and run the same way).

    ``write=False`` is for POSTs that only read (matching): on SQLite they then do not
    queue behind writers for the write lock, and they store no audit record in the work's
    transaction (the middleware writes it).
    """
    authorised = Depends(operation(name, scope=scope, shape=shape))

    async def run(
        request: Request, context: AppContextDep, call: Call = authorised, **path_params: Any
    ) -> Response:
        if empty_body_is_object and not (call.request_body or b"").strip():
            call.request_body = b"{}"
        asked = requested(call, context, path_params)
        return await run_post(
            request, call, work, decode=lambda body: decode(body, asked), write=write
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
                for name in re.findall(r"{(\w+)}", path)
            ),
        ],
        return_annotation=Response,
    )
    run.__name__ = endpoint or work.__name__
    router.add_api_route(
        path,
        run,
        methods=[method],
        name=run.__name__,
        summary=summary,
        description=inspect.cleandoc(work.__doc__ or ""),
        status_code=status_code,
        openapi_extra=openapi_extra,
        responses=responses,
        tags=tags,  # type: ignore[arg-type]
    )


def get(
    router: APIRouter,
    path: str,
    work: Callable[[Session, Any], Any],
    *,
    name: str,
    scope: str,
    response: Any,
    ok: str,
    summary: str,
    ask: Callable[..., Any] | None = None,
    path_types: dict[str, Any] | None = None,
    shape: ErrorShape = default_shape,
    tags: list[str] | None = None,
) -> None:
    """Register ``work`` as the read ``name`` at ``path``.

    ``work(session, payload)`` gets what ``ask`` makes of the request's parameters (its
    own parameters are the route's, declared with FastAPI's ``Path`` and ``Query``; it
    may refuse them with an :class:`~ridercrm.errors.ApiError` before any transaction),
    or without ``ask`` the path's one parameter (``None`` when there is none). It answers
    a value that ``response`` (a model, or ``list[Model]``) serialises, or a
    :class:`~ridercrm.web.runtime.Reply` as it is. The document says 200 with
    ``response`` described as ``ok``; the refusals of a read, with 404 when the path
    names a record.
    """
    # The key is looked up in the read's own thread and transaction (runtime.run_read).
    authorised = Depends(operation(name, scope=scope, shape=shape, read=True))
    adapter: TypeAdapter[Any] = TypeAdapter(response)

    def answered(session: Session, payload: Any) -> Reply:
        result = work(session, payload)
        if isinstance(result, Reply):
            return result
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
        return await run_read(request, answered, lambda: payload_of(params))

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
