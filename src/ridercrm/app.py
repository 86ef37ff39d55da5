"""The application factory: settings, engine, routers, middleware, error handlers."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import AsyncIterator

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.concurrency import run_in_threadpool

from ridercrm import __version__, memo, readiness
from ridercrm.config import Settings
from ridercrm.db import build_engine, session_factory
from ridercrm.events import metrics as events_metrics
from ridercrm.logs import configure_logging
from ridercrm.notifications import metrics as message_metrics
from ridercrm.ratelimit import build_rate_limiter
from ridercrm.sessions import seats, timer
from ridercrm.web import docs_pages, handlers, metrics, openapi
from ridercrm.web.audit_batch import AuditBatcher
from ridercrm.web.loop_db import LoopConnections
from ridercrm.web.middleware import AuditMiddleware
from ridercrm.web.routes.audit import router as audit_router
from ridercrm.web.routes.courses import router as courses_router
from ridercrm.web.routes.duplicates import router as duplicates_router
from ridercrm.web.routes.events import install_webhooks
from ridercrm.web.routes.events import router as webhooks_router
from ridercrm.web.routes.matching import EXPLAIN_LIMITER
from ridercrm.web.routes.matching import router as matching_router
from ridercrm.web.routes.people import crm_router as people_crm_router
from ridercrm.web.routes.people import router as people_router
from ridercrm.web.routes.products import router as products_router
from ridercrm.web.routes.sessions import router as sessions_router
from ridercrm.web.runtime import AppContext, app_context

health = APIRouter(tags=["operations"])


@health.get(
    "/healthz",
    summary="Liveness",
    openapi_extra=openapi.NO_SECURITY,
    responses={200: {"content": {"application/json": {"schema": openapi.ref(openapi.Health)}}}},
)
async def healthz() -> dict[str, str]:
    """Answer while the process is up."""
    return {"status": "ok"}


@health.get(
    "/readyz",
    summary="Readiness: the database takes writes",
    openapi_extra=openapi.NO_SECURITY,
    responses={
        200: {"content": {"application/json": {"schema": openapi.ref(openapi.Readiness)}}},
        503: {
            "description": "The database does not answer, is read-only, or its disk is full.",
            "content": {"application/json": {"schema": openapi.ref(openapi.Readiness)}},
        },
    },
)
async def readyz(request: Request) -> Response:
    """Answer 200 when the database can take writes, 503 (saying why) when it cannot."""
    services = app_context(request)
    found = await run_in_threadpool(readiness.problem, services.engine, services.settings)
    if found is not None:
        return JSONResponse({"status": "unavailable", "database": found}, status_code=503)
    return JSONResponse({"status": "ok", "database": "ok"})


@health.get(
    "/metrics",
    summary="Prometheus metrics",
    response_class=PlainTextResponse,
    openapi_extra=openapi.NO_SECURITY,
    responses={200: {"description": "The Prometheus text format."}},
)
async def metrics_endpoint(request: Request) -> Response:
    """Prometheus metrics: requests and latency per operation and status."""
    body, media = metrics.exposition(request.app.state.metrics)
    return Response(body, media_type=media)


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """On shutdown, close what the app holds on its event loop (web.loop_db)."""
    yield
    connections = app.state.context.loop_connections
    if connections is not None:
        await connections.close()


def served_app() -> FastAPI:
    """The app of a `ridercrm serve` worker (web/server.py): :func:`create_app`'s, with
    what starting made moved out of the garbage collector's way.

    Start-up leaves about 160,000 long-lived objects (modules, the ORM's
    mappers, pydantic's schemas); every full collection walked them all, and a 200-item
    booking, which makes tens of thousands of objects, set one off every few requests:
    tens of milliseconds each. Frozen (``gc.freeze``, after a collection of start-up's
    garbage), they are left out of every pass (docs/decisions.md,
    "Start-up's objects frozen out of the collector's passes (issue 23)").
    """
    app = create_app()
    gc.collect()
    gc.freeze()
    return app


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the service. Nothing is connected or configured at import time."""
    settings = settings or Settings()
    configure_logging(settings.log_level, as_json=settings.log_json)
    memo.resize(settings.match_cache_entries)
    engine = build_engine(settings)
    app = FastAPI(
        title="ridercrm",
        version=__version__,
        description="CRM service for a motorcycle rider-training business.",
        docs_url=None,  # served by docs_pages, without a CDN
        redoc_url=None,
        lifespan=_lifespan,
    )
    # Every limiter counts where RIDERCRM_RATE_LIMIT_STORAGE says, each in its namespace.
    shared = {"storage": settings.rate_limit_storage, "key_prefix": settings.rate_limit_key_prefix}
    sessions = session_factory(engine)
    # Seats a merge or a review decision frees are held as RIDERCRM_WAITLIST_HOLD_HOURS says.
    seats.use_policy_by_default(sessions, timer.policy_of(settings))
    app.state.context = AppContext(
        settings=settings,
        engine=engine,
        sessions=sessions,
        rate_limiter=build_rate_limiter(settings.rate_limit, **shared),
        refused_limiter=build_rate_limiter(
            settings.refused_rate_limit,
            namespace="refused",
            counted="refused requests from this address",
            **shared,
        ),
    )
    explain = build_rate_limiter(
        settings.explain_rate_limit,
        namespace="explain",
        counted="explained matches for this API key",
        **shared,
    )
    if explain is not None:
        app.state.context.limiters[EXPLAIN_LIMITER] = explain
    if (engine.dialect.name, engine.dialect.driver) == ("postgresql", "psycopg"):
        # Light reads and reads' audit records on the event loop (web.loop_db).
        app.state.context.loop_connections = LoopConnections(engine, settings.db_pool_size)
    app.state.context.audit_batcher = AuditBatcher(
        app.state.context.engine,
        redact=settings.audit_redact,
        max_batch=settings.audit_batch_max,
        gather_seconds=settings.audit_gather_ms / 1000,
        loop_connections=app.state.context.loop_connections,
    )
    # /metrics reads the webhook and message metrics from this app's database at scrape
    # time (never the process's: docs/decisions.md, "State belongs to the app").
    app.state.metrics = (
        events_metrics.WebhookMetrics(app.state.context.sessions),
        message_metrics.MessageMetrics(app.state.context.sessions),
    )
    api = APIRouter(prefix=settings.base_path)
    for router in (
        courses_router,
        people_crm_router,
        matching_router,
        products_router,
        people_router,
        audit_router,
        webhooks_router,
        duplicates_router,
        sessions_router,
    ):
        api.include_router(router)
    app.include_router(api)
    app.include_router(health)
    install_webhooks(app)
    handlers.install(app)
    openapi.install(app)
    docs_pages.install(app)
    app.add_middleware(AuditMiddleware)
    # The staff console, in front of the API (its own pages, audit records and errors).
    from ridercrm.web import console

    console.install(app)
    return app
