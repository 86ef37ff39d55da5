"""What-if servers for bench/load_bench.py: the service with one change made in memory.

``src/`` is not touched. ``python -m bench.load_whatif --port P --workers N`` serves the
same app as ``ridercrm serve`` (the database must already be migrated and have a key),
after applying the changes named in $RIDERCRM_BENCH_WHATIF (comma-separated) in every
worker process:

- ``sync-normal``: SQLite ``PRAGMA synchronous=NORMAL`` instead of FULL (in WAL mode a
  commit then writes the WAL without fsync; it survives a crash of the process, not a
  power loss);
- ``busy-wait``: ``RIDERCRM_SQLITE_WRITER_QUEUE=false``: SQLite writers do not queue for
  their turn (``ridercrm.db.writer_turn``, an exclusive ``flock`` on a file next to the
  database) but wait only in SQLite's busy handler, which polls the write lock with
  sleeps growing to 100 ms and lets newcomers overtake a sleeping writer;
- ``audit-batch``: audit records are committed by one writer thread per process, many
  in one transaction (group commit): a request still waits until its record is
  committed before its answer is sent, but the requests that finish together share
  one write transaction and one fsync instead of taking the write lock one by one.

Only for measuring what would shorten the latency tails; not a way to run the service.
"""

from __future__ import annotations

import argparse
import os
import queue
import threading
from typing import Any

from sqlalchemy import event

WHATIF_ENV = "RIDERCRM_BENCH_WHATIF"
CHANGES = ("sync-normal", "busy-wait", "audit-batch")
AUDIT_WAIT_S = 60.0
AUDIT_BATCH = 200


def changes() -> set[str]:
    named = {c.strip() for c in os.environ.get(WHATIF_ENV, "").split(",") if c.strip()}
    unknown = named - set(CHANGES)
    if unknown:
        raise SystemExit(f"unknown what-if change(s): {sorted(unknown)}; known: {CHANGES}")
    return named


def _synchronous_normal(app_module: Any) -> None:
    build = app_module.build_engine

    def build_engine(settings: Any) -> Any:
        engine = build(settings)
        if engine.dialect.name == "sqlite":

            @event.listens_for(engine, "connect")
            def _normal(dbapi_connection: Any, _record: Any) -> None:
                cursor = dbapi_connection.cursor()
                cursor.execute("PRAGMA synchronous=NORMAL")
                cursor.close()

        return engine

    app_module.build_engine = build_engine


class AuditBatcher:
    """One writer thread per process that commits queued audit records in batches."""

    def __init__(self, services: Any) -> None:
        self.services = services
        self.queue: queue.Queue[tuple[Any, ...]] = queue.Queue()
        threading.Thread(target=self._run, name="audit-batch", daemon=True).start()

    def write(self, _services: Any, call: Any, status: int, body: bytes, elapsed: float) -> None:
        done, box = threading.Event(), {}
        self.queue.put((call, status, body, elapsed, done, box))
        if not done.wait(AUDIT_WAIT_S):
            raise TimeoutError("audit batch not committed in time")
        if "error" in box:
            raise box["error"]

    def _run(self) -> None:
        from ridercrm.audit.service import record_call
        from ridercrm.db import session_scope

        while True:
            batch = [self.queue.get()]
            while len(batch) < AUDIT_BATCH:
                try:
                    batch.append(self.queue.get_nowait())
                except queue.Empty:
                    break
            try:
                with session_scope(self.services.sessions, write=True) as session:
                    for call, status, body, elapsed, _done, _box in batch:
                        record_call(
                            session,
                            call=call,
                            status=status,
                            response_body=body,
                            duration_ms=elapsed * 1000,
                        )
            except Exception as exc:
                for *_rest, box in batch:
                    box["error"] = exc
            for *_rest, done, _box in batch:
                done.set()


def _batched_audit(middleware: Any) -> None:
    batchers: dict[int, AuditBatcher] = {}
    lock = threading.Lock()

    def write_audit(services: Any, call: Any, status: int, body: bytes, elapsed: float) -> None:
        with lock:
            batcher = batchers.get(id(services))
            if batcher is None:
                batcher = batchers[id(services)] = AuditBatcher(services)
        batcher.write(services, call, status, body, elapsed)

    middleware._write_audit = write_audit


def create_app() -> Any:
    from ridercrm import app as app_module
    from ridercrm.config import Settings
    from ridercrm.web import middleware

    wanted = changes()
    if "busy-wait" in wanted:
        os.environ["RIDERCRM_SQLITE_WRITER_QUEUE"] = "false"
    settings = Settings()
    if "sync-normal" in wanted:
        _synchronous_normal(app_module)
    if "audit-batch" in wanted:
        _batched_audit(middleware)
    return app_module.create_app(settings)


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    changes()  # refuse unknown names before starting workers
    uvicorn.run(
        "bench.load_whatif:create_app",
        factory=True,
        host="127.0.0.1",
        port=args.port,
        workers=args.workers,
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
