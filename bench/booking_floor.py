"""The 200-item booking against its floor (bench/floors.py, ``--figure booking``).

Per round and build: 200 new people (half of them leads, which the booking converts)
and 200 more for a warm-up, then the store is copied with the server stopped, the server
started again and warmed up by a 200-item booking of the other 200 (the first request of
a new process compiles its statements), and one 200-item booking sent over HTTP, timed at
the client. Every statement the server ran is kept in memory (a
``before_cursor_execute`` listener, installed in the server by a ``sitecustomize``
module on its PYTHONPATH) and written out when the benchmark sends SIGUSR2, after the
request; the request's INSERTs, UPDATEs and
DELETEs are then replayed on the copy with the raw driver (``sqlite3``, ``psycopg``)
in one transaction, with the server's connection settings, and timed with its commit.
The ratio is the request's time over the replay's. Rounds alternate the builds.

Also measured on the same request: the bytes it cost. On SQLite the server process's
``/proc/<pid>/io`` (``wchar``: write calls; ``write_bytes``: what the kernel sent to
storage on its behalf) and the growth of the database and its WAL; on PostgreSQL the
database's growth (``pg_database_size``; the writes are the PostgreSQL server's).
``--store N`` first fills the store with N people (``ridercrm import contacts``).
"""

from __future__ import annotations

import csv
import os
import pickle
import signal
import sqlite3
import statistics
import struct
import tempfile
import textwrap
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, make_url, text
from sqlalchemy.pool import NullPool
from testkit.serve import free_port, run_cli, running_server

from bench.harness import fresh_database, postgres_base_url, scratch_postgres, slug

ITEMS = 200
CAPTURE_ENV = "RIDERCRM_BENCH_CAPTURE"
SITECUSTOMIZE = textwrap.dedent(
    f"""
    import os, pickle, signal, threading
    _path = os.environ.get({CAPTURE_ENV!r})
    if _path:
        from sqlalchemy import event
        from sqlalchemy.engine import Engine
        _kept = []
        _lock = threading.Lock()

        @event.listens_for(Engine, "before_cursor_execute")
        def _capture(conn, cursor, statement, parameters, context, executemany):
            # Kept in memory (an append), written out only when asked: pickling and
            # writing each statement during the request would be timed as its own.
            if executemany and isinstance(parameters, list):
                parameters = list(parameters)
            with _lock:
                _kept.append((statement, parameters, executemany))

        def _dump(signum, frame):
            with _lock:
                taken = _kept[:]
                _kept.clear()
            with open(_path + ".part", "wb") as out:
                pickle.dump(taken, out)
            os.replace(_path + ".part", _path)

        signal.signal(signal.SIGUSR2, _dump)
    """
)
WRITES = ("INSERT", "UPDATE", "DELETE")


@dataclass
class Build:
    label: str
    env: dict[str, str]
    request_s: list[float] = field(default_factory=list)
    replay_s: list[float] = field(default_factory=list)
    statements: list[int] = field(default_factory=list)
    wchar: list[int] = field(default_factory=list)
    write_bytes: list[int] = field(default_factory=list)
    growth: list[int] = field(default_factory=list)
    # SQLite: the log's pages the booking wrote, by the table or index they belong to.
    pages: list[Counter[str]] = field(default_factory=list)

    def ratios(self) -> list[float]:
        return [r / p for r, p in zip(self.request_s, self.replay_s, strict=True)]


def _person(n: int) -> dict[str, Any]:
    return {
        "first_name": f"Floor{n}",
        "last_name": f"Rider{n * 7919 % 100003}",
        "date_of_birth": f"19{60 + n % 40}-0{1 + n % 9}-1{n % 10}",
        "email": f"floor{n}@example.com",
        "postcode": f"{3000 + n % 900}",
        "mobile_phone": f"04{n % 100000000:08d}",
        "street": f"{n % 300} Main St",
        "city": "Craigieburn",
        "state": "VIC",
        "country": "Australia",
    }


def _item(person_id: str, product_id: str, number: str) -> dict[str, Any]:
    return {
        "person_id": person_id,
        "product_id": product_id,
        "course_datetime": "2027-02-05 08:30:00",
        "course_date_end": "2027-02-05 16:30:00",
        "rider_instructor_1": "Sam Lee",
        "course_location": "somerton",
        "booking_number": number,
        "dealer_code": "D001",
        "course_price": "249.00",
        "booking_source": "Website",
        "course_status": "booked",
        "mobile_phone": "0412 345 678",
        "street": "12 Main St",
        "city": "Craigieburn",
        "state": "VIC",
        "country": "Australia",
        "drivers_license": "L1234567",
        "license_type": "CYL",
        "date_of_birth": "1999-04-12",
        "opt_in": True,
    }


def _io(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        name, _, value = line.partition(":")
        fields[name] = int(value)
    return fields


def _store_bytes(url: str) -> int:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        path = Path(parsed.database or "")
        return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            return int(connection.scalar(text("SELECT pg_database_size(current_database())")))
    finally:
        engine.dispose()


@contextmanager
def _copy_of(kind: str, url: str, directory: Path, label: str, pg_url: str | None) -> Iterator[str]:
    """A copy of the (idle) store; dropped at the end."""
    if kind == "sqlite":
        target = directory / f"{label}-copy.db"
        source = sqlite3.connect(make_url(url).database or "")
        copy = sqlite3.connect(target)
        source.backup(copy)
        source.close()
        copy.execute("PRAGMA journal_mode=WAL")
        copy.close()
        try:
            yield str(target)
        finally:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{target}{suffix}").unlink(missing_ok=True)
        return
    original = make_url(url).database
    with scratch_postgres(postgres_base_url(pg_url), f"{original}_copy", original) as copy_url:
        yield copy_url


def _captured(path: Path, pid: int) -> list[tuple[str, Any, bool]]:
    """The statements the server ran since it last wrote them out (it writes them out,
    and forgets them, when sent SIGUSR2)."""
    path.unlink(missing_ok=True)
    os.kill(pid, signal.SIGUSR2)
    deadline = time.monotonic() + 60
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"the server {pid} did not write its statements to {path}")
        time.sleep(0.01)
    # The file is this run's own, written by the server it started.
    return pickle.loads(path.read_bytes())  # noqa: S301


def _empty_log(url: str) -> None:
    """Copy the log into the database and truncate it (the server is idle)."""
    with sqlite3.connect(make_url(url).database or "") as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _log_pages(url: str) -> Counter[str]:
    """The pages in the SQLite log, counted by the table or index that owns them (as the
    live database, log included, says: ``dbstat``). If the booking's commit ran a
    checkpoint, the log was rewritten from its start and this counts only what it holds."""
    path = make_url(url).database or ""
    data = Path(f"{path}-wal").read_bytes() if Path(f"{path}-wal").exists() else b""
    numbers: list[int] = []
    if len(data) >= 32:
        page_size = struct.unpack(">I", data[8:12])[0]
        offset = 32
        while offset + 24 + page_size <= len(data):
            numbers.append(struct.unpack(">I", data[offset : offset + 4])[0])
            offset += 24 + page_size
    with sqlite3.connect(path) as connection:
        owners = dict(connection.execute("SELECT pageno, name FROM dbstat"))
    return Counter(owners.get(number, "(free)") for number in numbers)


def _replay(
    kind: str, target: str, statements: list[tuple[str, Any, bool]], env: dict[str, str]
) -> float:
    """Seconds to run the writes in one transaction, commit included, on the copy."""
    # SQLAlchemy's "insertmanyvalues" batches report executemany with one batch's
    # parameters (a tuple or a dict): they are executed once, as the driver did.
    writes = [
        (statement, parameters, many and isinstance(parameters, list))
        for statement, parameters, many in statements
        if statement.lstrip().upper().startswith(WRITES)
    ]
    if kind == "sqlite":
        connection = sqlite3.connect(target, isolation_level=None)
        synchronous = env.get("RIDERCRM_SQLITE_SYNCHRONOUS", "FULL")
        for pragma in ("foreign_keys=ON", f"synchronous={synchronous}", "temp_store=MEMORY"):
            connection.execute(f"PRAGMA {pragma}")
        started = time.perf_counter()
        connection.execute("BEGIN IMMEDIATE")
        for statement, parameters, many in writes:
            if many:
                connection.executemany(statement, parameters)
            else:
                connection.execute(statement, parameters)
        connection.execute("COMMIT")
        elapsed = time.perf_counter() - started
        connection.close()
        return elapsed
    import psycopg

    dsn = make_url(target).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn) as connection:
        started = time.perf_counter()
        with connection.cursor() as cursor:
            for statement, parameters, many in writes:
                if many:
                    cursor.executemany(statement, parameters)
                else:
                    cursor.execute(statement, parameters)
        connection.commit()
        return time.perf_counter() - started


class Server:
    """A build's server on its store, stopped and started again around each copy."""

    def __init__(self, build: Build, url: str, directory: Path, capture: Path) -> None:
        self.build, self.url, self.directory, self.capture = build, url, directory, capture
        hooks = directory / f"hooks-{build.label}"
        hooks.mkdir(exist_ok=True)
        (hooks / "sitecustomize.py").write_text(SITECUSTOMIZE)
        path = [str(hooks), *filter(None, [build.env.get("PYTHONPATH")])]
        self.env = {
            **build.env,
            "PYTHONPATH": os.pathsep.join(path),
            "RIDERCRM_DATABASE_URL": url,
            "RIDERCRM_LOG_LEVEL": "WARNING",
            "RIDERCRM_RATE_LIMIT": "off",
            "RIDERCRM_MAX_ITEMS": "1000",
            # No background rounds: their writes are not the request's.
            "RIDERCRM_WEBHOOK_DELIVERER": "false",
            "RIDERCRM_DUPLICATES_RECHECK": "false",
            "RIDERCRM_COUNTS_FOLD_SECONDS": "86400",
            CAPTURE_ENV: str(capture),
        }
        self.key = ""
        self.base = ""
        self.pid = 0
        self._stack = ExitStack()

    def prepare(self, store: int) -> None:
        run_cli(["db", "upgrade"], self.env, timeout=300)
        out = run_cli(
            ["keys", "create", "--name", "floor", "--scope", "admin"], self.env, timeout=60
        )
        self.key = out.strip().splitlines()[-1]
        if store:
            rows = self.directory / f"store-{self.build.label}.csv"
            with rows.open("w", newline="") as handle:
                writer = csv.writer(handle)
                writer.writerow(
                    [
                        "first_name",
                        "last_name",
                        "email",
                        "mobile_phone",
                        "postcode",
                        "date_of_birth",
                    ]
                )
                for n in range(store):
                    p = _person(1_000_000 + n)
                    writer.writerow(
                        [
                            p["first_name"],
                            p["last_name"],
                            p["email"],
                            p["mobile_phone"],
                            p["postcode"],
                            p["date_of_birth"],
                        ]
                    )
            run_cli(["import", "contacts", str(rows)], self.env, timeout=3600)

    def start(self) -> None:
        log = self.directory / f"{self.build.label}.log"
        self.base, self.pid = self._stack.enter_context(running_server(self.env, free_port(), log))

    def stop(self) -> None:
        self._stack.close()
        self._stack = ExitStack()

    def client(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.base,
            headers={"Authorization": f"Bearer {self.key}"},
            timeout=300,
            trust_env=False,
        )


def measure(kind: str, builds: list[Build], rounds: int, store: int, pg_url: str | None) -> None:
    with ExitStack() as stack:
        tmp = Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="ridercrm-booking-floor-"))
        )
        servers: list[Server] = []
        for index, build in enumerate(builds):
            url = stack.enter_context(fresh_database(kind, f"booking_{index}", tmp, pg_url))
            server = Server(build, url, tmp, tmp / f"capture-{slug(build.label)}.log")
            server.prepare(store)
            server.start()
            stack.callback(server.stop)
            with server.client() as client:
                server.product = client.post(  # type: ignore[attr-defined]
                    "/admin/products", json={"name": "Floor", "code": "FL", "price": "249.00"}
                ).json()["id"]
            servers.append(server)
        for round_ in range(rounds):
            for server in servers:
                _one_round(kind, server, round_, tmp, pg_url)


def _one_round(kind: str, server: Server, round_: int, tmp: Path, pg_url: str | None) -> None:
    build = server.build
    warm: list[str] = []
    people: list[str] = []
    with server.client() as client:
        for batch, offset in ((warm, 5_000), (people, 0)):
            for n in range(ITEMS):
                kind_path = "leads" if n % 2 else "contacts"
                made = client.post(
                    f"/admin/{kind_path}", json=_person(round_ * 10_000 + offset + n)
                )
                made.raise_for_status()
                batch.append(made.json()["id"])
    server.stop()
    with _copy_of(kind, server.url, tmp, build.label, pg_url) as copy:
        server.start()
        product = server.product  # type: ignore[attr-defined]
        items = [_item(p, product, f"FL-{round_}-{n}") for n, p in enumerate(people)]
        with server.client() as client:
            # Warm up the new process with a booking like the timed one, of other people
            # (absent from the copy, which the timed booking's writes do not touch).
            client.get("/crm/products").raise_for_status()
            warm_items = [_item(p, product, f"FW-{round_}-{n}") for n, p in enumerate(warm)]
            client.post("/crm/people/rider_courses", json={"people_product": warm_items})
            _captured(server.capture, server.pid)  # forget the warm-up's statements
            if kind == "sqlite":
                _empty_log(server.url)  # so the log holds this booking's pages only
            before_io, before_size = _io(server.pid), _store_bytes(server.url)
            started = time.perf_counter()
            answer = client.post("/crm/people/rider_courses", json={"people_product": items})
            elapsed = time.perf_counter() - started
        answer.raise_for_status()
        booked = [d for d in answer.json()["details"] if d["delivery"] == "true"]
        if len(booked) != ITEMS:
            raise SystemExit(f"{build.label}: only {len(booked)} of {ITEMS} items booked")
        after_io, after_size = _io(server.pid), _store_bytes(server.url)
        if kind == "sqlite":
            build.pages.append(_log_pages(server.url))
        statements = _captured(server.capture, server.pid)
        build.request_s.append(elapsed)
        build.statements.append(len(statements))
        build.wchar.append(after_io["wchar"] - before_io["wchar"])
        build.write_bytes.append(after_io["write_bytes"] - before_io["write_bytes"])
        build.growth.append(after_size - before_size)
        build.replay_s.append(_replay(kind, copy, statements, server.env))


def report(kind: str, builds: list[Build], rounds: int) -> None:
    print(
        f"| database | build | request ms | replayed writes ms | request / replay | statements "
        f"run | write calls MB | kernel writes MB | store growth MB |  (medians of {rounds} rounds)"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    mb = 1024 * 1024
    for build in builds:
        print(
            f"| {kind} | {build.label} | {statistics.median(build.request_s) * 1000:.0f} | "
            f"{statistics.median(build.replay_s) * 1000:.1f} | "
            f"{statistics.median(build.ratios()):.1f} | {statistics.median(build.statements):.0f} | "
            f"{statistics.median(build.wchar) / mb:.1f} | "
            f"{statistics.median(build.write_bytes) / mb:.1f} | "
            f"{statistics.median(build.growth) / mb:.2f} |"
        )
    for build in builds:
        if not build.pages:
            continue
        last = build.pages[-1]
        top = ", ".join(f"{name} {count}" for name, count in last.most_common(8))
        print(f"\n{build.label}: {sum(last.values())} log pages in the last round's booking: {top}")
