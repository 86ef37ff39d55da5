"""The deliverer: claims due deliveries, signs and sends them, records what happened.

Several deliverers (``ridercrm serve`` runs one, ``ridercrm deliver`` is one) share the
work through the database. A claim marks a delivery ``sending`` with a lease, in a
short transaction: on PostgreSQL rows are claimed ``FOR UPDATE SKIP LOCKED``; on SQLite
the claim is a write transaction, so claims take turns. The request is sent outside
any transaction; its outcome is recorded only if the claim is still this deliverer's.
A deliverer that dies leaves its claims to expire and be sent again (at least once).

Only the oldest open delivery of a subject (a person, with their courses) to an endpoint
can be claimed, so each endpoint receives a subject's events one at a time, in order.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import json
import logging
import random
import threading
import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy import and_, exists, or_, select, update
from sqlalchemy.orm import Session, aliased, sessionmaker
from standardwebhooks.webhooks import Webhook

from ridercrm import __version__
from ridercrm.config import Settings, parse_schedule
from ridercrm.db import build_engine, session_factory, session_scope, utcnow
from ridercrm.events import deadline, metrics
from ridercrm.events.models import (
    DELIVERED,
    FAILED,
    PENDING,
    SENDING,
    Delivery,
    Event,
    WebhookEndpoint,
    is_open,
)
from ridercrm.events.purge import purge
from ridercrm.netsafety import AllowList, UnsafeUrl, resolve

log = logging.getLogger("ridercrm.webhooks")

RESPONSE_CAP = 4096  # bytes of a receiver's answer that are read (and then dropped)
MAX_RETRY_AFTER = dt.timedelta(hours=24)
PURGE_SECONDS = 3600.0  # how often a deliverer purges delivered events past the retention
GATHER_SECONDS = 0.01


@dataclass(frozen=True)
class Job:
    """A claimed delivery: what to send where, and the claim (attempt number) it is under."""

    delivery_id: int
    attempt: int
    endpoint_id: str
    url: str
    secrets: tuple[str, ...]
    event_id: str
    body: str
    allowed_hosts: str = ""  # what the operator allowed when registering it (netsafety)


@dataclass(frozen=True)
class Answer:
    """What an attempt got: a status code, or an error; and how long it took."""

    code: int | None
    latency_ms: int
    error: str | None = None
    retry_after: dt.timedelta | None = None

    @property
    def ok(self) -> bool:
        return self.code is not None and 200 <= self.code < 300


def retry_after(value: str | None, now: dt.datetime) -> dt.timedelta | None:
    """A Retry-After header (seconds or an HTTP date) as a wait, at most a day."""
    if not value:
        return None
    value = value.strip()
    wait_for: dt.timedelta | None
    if value.isascii() and value.isdigit():  # str.isdigit() also takes "²", int() does not
        # Past nine digits it is more than a day anyway; a timedelta would overflow.
        seconds = int(value) if len(value) <= 9 else MAX_RETRY_AFTER.total_seconds()
        wait_for = dt.timedelta(seconds=seconds)
    else:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, OverflowError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        wait_for = max(when - now, dt.timedelta(0))
    return min(wait_for, MAX_RETRY_AFTER)


def sign(job: Job, timestamp: dt.datetime) -> dict[str, str]:
    """The Standard Webhooks headers: one v1 signature per current secret."""
    signatures = " ".join(
        Webhook(secret).sign(msg_id=job.event_id, timestamp=timestamp, data=job.body)
        for secret in job.secrets
    )
    return {
        "webhook-id": job.event_id,
        "webhook-timestamp": str(int(timestamp.timestamp())),
        "webhook-signature": signatures,
    }


class Deliverer:
    """Sends due webhook deliveries until stopped; one per process is plenty."""

    def __init__(self, settings: Settings, sessions: sessionmaker[Session] | None = None) -> None:
        self.settings = settings
        self.sessions = sessions or session_factory(build_engine(settings))
        self.allow = AllowList.parse(settings.webhook_allowed_hosts)
        self.schedule = parse_schedule(settings.webhook_retry_schedule)
        self.lease = dt.timedelta(seconds=settings.webhook_lease_seconds)
        self.concurrency = settings.webhook_concurrency
        # No proxies (they would connect elsewhere than the checked address), no
        # redirects, and a deadline for the whole attempt (``deadline``).
        self.client = deadline.client(settings.webhook_timeout_seconds)
        self.pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="ridercrm-deliver")
        self._purged_at = -PURGE_SECONDS  # the first round purges
        self._inflight: dict[Future[None], str] = {}

    def close(self) -> None:
        """Wait for the requests under way, then release the connections."""
        self.pool.shutdown(wait=True)
        self.client.close()

    # --- The loops -----------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Deliver until ``stop`` is set, keeping up to ``concurrency`` requests under way.

        Each round is one write transaction that stores the outcomes of the requests
        that finished and claims new work, so a busy deliverer commits once per round,
        not twice per delivery.
        """
        log.info("webhook deliverer started")
        inflight: dict[Future[Answer], Job] = {}
        finished: list[tuple[Job, Answer]] = []
        while not stop.is_set():
            try:
                jobs = self._round(finished, inflight)
            except Exception:
                # Outcomes not stored: their leases run out and they are sent again.
                log.exception("webhook deliverer round failed")
                jobs = []
            finished = []
            for job in jobs:
                inflight[self.pool.submit(self.send_safely, job)] = job
            self._purge_now_and_then()
            if inflight:
                done, _ = wait(
                    list(inflight),
                    timeout=self.settings.webhook_poll_seconds,
                    return_when=FIRST_COMPLETED,
                )
                if inflight.keys() - done:
                    # A moment more gathers the answers arriving together into one round.
                    more, _ = wait(list(inflight.keys() - done), timeout=GATHER_SECONDS)
                    done |= more
                finished = [(inflight.pop(future), future.result()) for future in done]
            else:
                stop.wait(self.settings.webhook_poll_seconds)
        for future, job in inflight.items():
            finished.append((job, future.result()))
        if finished:
            self.settle(finished)
        log.info("webhook deliverer stopped")

    def run_once(self) -> int:
        """Claim what is due now, deliver it, store the outcomes; return how many."""
        jobs = self.claim(self.concurrency)
        answers = list(self.pool.map(self.send_safely, jobs))
        if jobs:
            self.settle(list(zip(jobs, answers, strict=True)))
        return len(jobs)

    def run_until_idle(self, timeout: float = 30.0) -> None:
        """Deliver until nothing is due (for tests and one-shot runs)."""
        deadline = time.monotonic() + timeout
        while self.run_once():
            if time.monotonic() > deadline:
                raise TimeoutError("deliveries still due after the timeout")

    def _round(
        self, finished: list[tuple[Job, Answer]], inflight: dict[Future[Answer], Job]
    ) -> list[Job]:
        free = self.concurrency - len(inflight)
        # An endpoint gets at most half the slots: a slow one cannot hold back the rest.
        share = max(1, self.concurrency // 2)
        counts: dict[str, int] = {}
        for job in inflight.values():
            counts[job.endpoint_id] = counts.get(job.endpoint_id, 0) + 1
        full = {endpoint for endpoint, count in counts.items() if count >= share}
        if not finished and (free <= 0 or not self._anything_due(full)):
            return []
        with session_scope(self.sessions, write=True) as session:
            tally: metrics.Tally = Counter()
            for job, answer in finished:
                self._settle_one(session, job, answer, tally)
            jobs = self._claim(session, free, full, share, counts) if free > 0 else []
            metrics.add_totals(session, tally)  # last: its rows stay locked until the commit
            return jobs

    # --- Claims -----------------------------------------------------------------------

    def _due(self, now: dt.datetime, limit: int, skip_endpoints: set[str]) -> Any:
        earlier = aliased(Delivery)
        blocked = exists().where(
            earlier.endpoint_id == Delivery.endpoint_id,
            earlier.subject == Delivery.subject,
            earlier.id < Delivery.id,
            is_open(earlier.status),
        )
        due = or_(
            and_(Delivery.status == PENDING, Delivery.next_attempt_at <= now),
            and_(Delivery.status == SENDING, Delivery.lease_until <= now),
        )
        query = (
            select(
                Delivery.id,
                Delivery.attempts,
                Delivery.event_id,
                WebhookEndpoint.id.label("endpoint_id"),
                WebhookEndpoint.url,
                WebhookEndpoint.allowed_hosts,
                WebhookEndpoint.secret,
                WebhookEndpoint.previous_secret,
                WebhookEndpoint.previous_secret_until,
            )
            .join(WebhookEndpoint, WebhookEndpoint.id == Delivery.endpoint_id)
            # is_open: the oldest open deliveries first, from their partial index.
            .where(is_open(Delivery.status), due, WebhookEndpoint.enabled.is_(True), ~blocked)
            .order_by(Delivery.id)
            .limit(limit)
        )
        if skip_endpoints:
            query = query.where(Delivery.endpoint_id.not_in(skip_endpoints))
        return query

    def _anything_due(self, skip: set[str]) -> bool:
        # A look without the write lock: an idle SQLite deliverer never queues behind
        # the service's writers.
        with session_scope(self.sessions) as session:
            return session.execute(self._due(utcnow(), 1, skip)).first() is not None

    def claim(self, limit: int) -> list[Job]:
        """Claim up to ``limit`` due deliveries for this deliverer (a lease each)."""
        if not self._anything_due(set()):
            return []
        with session_scope(self.sessions, write=True) as session:
            return self._claim(session, limit, set(), None, {})

    def _claim(
        self,
        session: Session,
        limit: int,
        skip: set[str],
        per_endpoint: int | None,
        counts: dict[str, int],
    ) -> list[Job]:
        now = utcnow()
        query = self._due(now, limit * 2, skip)
        if session.get_bind().dialect.name == "postgresql":
            query = query.with_for_update(of=Delivery, skip_locked=True)
        taken = dict(counts)
        rows = []
        for row in session.execute(query):
            if per_endpoint is not None and taken.get(row.endpoint_id, 0) >= per_endpoint:
                continue
            taken[row.endpoint_id] = taken.get(row.endpoint_id, 0) + 1
            rows.append(row)
            if len(rows) == limit:
                break
        if not rows:
            return []
        session.execute(
            update(Delivery)
            .where(Delivery.id.in_([row.id for row in rows]))
            .values(status=SENDING, attempts=Delivery.attempts + 1, lease_until=now + self.lease)
        )
        wanted = select(Event.id, Event.payload).where(Event.id.in_({row.event_id for row in rows}))
        payloads = {event.id: event.payload for event in session.execute(wanted)}
        return [
            Job(
                delivery_id=row.id,
                attempt=row.attempts + 1,
                endpoint_id=row.endpoint_id,
                url=row.url,
                allowed_hosts=row.allowed_hosts or "",
                secrets=_secrets(row, now),
                event_id=row.event_id,
                body=json.dumps(payloads[row.event_id], separators=(",", ":"), ensure_ascii=False),
            )
            for row in rows
        ]

    # --- One delivery -------------------------------------------------------------------

    def _allow(self, stored: str) -> AllowList:
        """This deliverer's allow list and what was allowed when the endpoint was registered."""
        if not stored:
            return self.allow
        try:
            return self.allow.union(AllowList.parse(stored))
        except ValueError:  # written by create_endpoint from parsed entries: never, in practice
            return self.allow

    def send_safely(self, job: Job) -> Answer:
        """Send one claimed delivery; a bug in sending is an error answer, not a lost claim."""
        try:
            return self.send(job)
        except Exception as exc:
            log.exception("webhook send failed unexpectedly", extra={"delivery": job.delivery_id})
            return Answer(code=None, latency_ms=0, error=f"internal error: {type(exc).__name__}")

    def send(self, job: Job) -> Answer:
        """POST the signed event to the endpoint's checked address."""
        started = time.perf_counter()

        def elapsed() -> int:
            return round((time.perf_counter() - started) * 1000)

        try:
            target = resolve(job.url, self._allow(job.allowed_hosts))
        except UnsafeUrl as exc:
            return Answer(code=None, latency_ms=elapsed(), error=str(exc)[:200])
        address = f"[{target.address}]" if ":" in target.address else target.address
        path = target.url.path or "/"
        if target.url.query:
            path += "?" + target.url.query
        url = f"{target.url.scheme}://{address}:{target.port}{path}"
        headers = {
            **sign(job, utcnow()),
            "content-type": "application/json",
            "user-agent": f"ridercrm-webhooks/{__version__}",
            "host": target.url.netloc,
        }
        extensions = {"sni_hostname": target.host} if target.url.scheme == "https" else {}
        try:
            with (
                deadline.deadline(self.settings.webhook_timeout_seconds),
                self.client.stream(
                    "POST", url, content=job.body.encode(), headers=headers, extensions=extensions
                ) as response,
            ):
                read = 0
                for chunk in response.iter_raw():
                    read += len(chunk)
                    if read >= RESPONSE_CAP:
                        break
                return Answer(
                    code=response.status_code,
                    latency_ms=elapsed(),
                    retry_after=retry_after(response.headers.get("retry-after"), utcnow()),
                )
        except httpx.TimeoutException:
            return Answer(code=None, latency_ms=elapsed(), error="timed out")
        except httpx.HTTPError as exc:
            return Answer(code=None, latency_ms=elapsed(), error=f"{type(exc).__name__}")

    def retry_delay(self, attempt: int) -> dt.timedelta | None:
        """The wait after failed attempt ``attempt`` (1 is the first), with jitter; None: give up."""
        if attempt > len(self.schedule):
            return None
        return dt.timedelta(seconds=self.schedule[attempt - 1] * random.uniform(0.8, 1.2))

    def settle(self, outcomes: list[tuple[Job, Answer]]) -> None:
        """Store attempts' outcomes in one transaction."""
        with session_scope(self.sessions, write=True) as session:
            tally: metrics.Tally = Counter()
            for job, answer in outcomes:
                self._settle_one(session, job, answer, tally)
            metrics.add_totals(session, tally)

    def record(self, job: Job, answer: Answer) -> None:
        """Store one attempt's outcome, if the claim is still ours."""
        self.settle([(job, answer)])

    def _settle_one(self, session: Session, job: Job, answer: Answer, tally: metrics.Tally) -> None:
        """Store one outcome if the claim is still ours; count it in ``tally``."""
        delivery = session.get(Delivery, job.delivery_id, with_for_update=True)
        if delivery is None or delivery.status != SENDING or delivery.attempts != job.attempt:
            return  # the lease ran out and another deliverer took it over
        now = utcnow()
        delivery.response_code = answer.code
        delivery.latency_ms = answer.latency_ms
        delivery.error = answer.error or (None if answer.ok else f"HTTP {answer.code}")
        delivery.lease_until = None
        if answer.ok:
            delivery.status = DELIVERED
            delivery.finished_at = now
            tally[metrics.DELIVERIES, "delivered"] += 1
            return
        delay = self.retry_delay(job.attempt)
        if answer.code == 410 or delay is None:
            delivery.status = FAILED
            delivery.finished_at = now
            tally[metrics.DELIVERIES, "failed"] += 1
            if answer.code == 410:
                reason, label = "the endpoint answered 410 Gone", "gone"
            else:
                reason, label = f"failed all {job.attempt} attempts of a delivery", "exhausted"
            if _disable(session, job.endpoint_id, reason, now):
                tally[metrics.ENDPOINTS_DISABLED, label] += 1
            return
        if answer.retry_after is not None:
            delay = max(delay, answer.retry_after)
        delivery.status = PENDING
        delivery.next_attempt_at = now + delay
        tally[metrics.DELIVERIES, "retry"] += 1

    def _purge_now_and_then(self) -> None:
        """Purge delivered events past the retention, once every PURGE_SECONDS."""
        if time.monotonic() - self._purged_at < PURGE_SECONDS:
            return
        self._purged_at = time.monotonic()
        try:
            done = purge(self.sessions, retention_days=self.settings.event_retention_days)
        except Exception:
            log.exception("webhook events not purged")
            return
        if done.events:
            log.info(
                "webhook events purged",
                extra={"events": done.events, "deliveries": done.deliveries},
            )


def _secrets(row: Any, now: dt.datetime) -> tuple[str, ...]:
    until = row.previous_secret_until
    if row.previous_secret and until is not None:
        if until.tzinfo is None:
            until = until.replace(tzinfo=dt.UTC)
        if until > now:
            return (row.secret, row.previous_secret)
    return (row.secret,)


def _disable(session: Session, endpoint_id: str, reason: str, now: dt.datetime) -> bool:
    """Disable an enabled endpoint and say so; False if it was disabled already."""
    disabled = session.execute(
        update(WebhookEndpoint)
        .where(WebhookEndpoint.id == endpoint_id, WebhookEndpoint.enabled.is_(True))
        .values(enabled=False, disabled_reason=reason, disabled_at=now)
    )
    if not getattr(disabled, "rowcount", 0):
        return False
    log.warning("webhook endpoint disabled", extra={"endpoint_id": endpoint_id, "reason": reason})
    return True
