"""Engine, session scope and the declarative base shared by every feature."""

from __future__ import annotations

import datetime as dt
import functools
import logging
import os
import sqlite3
import time
import weakref
from collections import namedtuple
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from sqlalchemy import (
    JSON,
    Connection,
    DateTime,
    Engine,
    MetaData,
    Select,
    Table,
    create_engine,
    event,
    insert,
    make_url,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker
from sqlalchemy.types import TypeDecorator

from ridercrm import unit_of_work
from ridercrm.config import Settings

log = logging.getLogger(__name__)

try:
    import fcntl
except ImportError:  # pragma: no cover - not a POSIX system: writers wait in SQLite only
    fcntl = None  # type: ignore[assignment]

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

JSONType = JSON().with_variant(JSONB(), "postgresql")


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


# The largest value of an INTEGER id column (32 bits on PostgreSQL, whose driver refuses a
# larger number with NumericValueOutOfRange): an id past it names nothing.
MAX_INTEGER_ID = 2**31 - 1


class UTCDateTime(TypeDecorator[dt.datetime]):
    """A timezone-aware UTC timestamp on every backend (SQLite keeps no zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: Any) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(dt.UTC)

    def process_result_value(self, value: dt.datetime | None, dialect: Any) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC)


_T = TypeVar("_T")


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def chunks(items: list[_T], size: int) -> Iterator[list[_T]]:
    """``items`` in consecutive lists of at most ``size``: the slices a long ``IN (...)`` or a
    bulk insert is cut into (a statement's bound parameters are limited)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


WRITE = {"ridercrm_write": True}
"""Execution options of a session that will write: on SQLite it begins IMMEDIATE."""

LAZY_COMMIT = "ridercrm_lazy_commit"
"""An execution option: the transaction's commit need not be on disk when it returns,
only in the database's log, where a crash of this process cannot take it (SQLite: this
transaction runs with ``synchronous=NORMAL``; PostgreSQL: ``synchronous_commit=off``).
The next durable commit, or SQLite's next checkpoint, makes it durable too. Used for the
audit records of reads and refusals (web.audit_batch; README, "Guarantees")."""


def build_engine(settings: Settings) -> Engine:
    """Create the engine for the configured database, tuned for this service."""
    url = settings.database_url
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False})
        _tune_sqlite(engine, settings)
        if settings.sqlite_writer_queue:
            _queue_sqlite_writers(engine)
        return engine
    engine = create_engine(url, pool_size=settings.db_pool_size, max_overflow=settings.db_pool_size)
    _ping_after_idle(engine)
    if engine.dialect.name == "postgresql":
        _lazy_commits_on_postgresql(engine)
    return engine


PING_AFTER_IDLE_SECONDS = 1.0
"""A pooled connection idle for longer than this is pinged before it is used."""

_CHECKED_IN = "ridercrm_checked_in"


def _ping_after_idle(engine: Engine) -> None:
    """Ping a pooled connection (SQLAlchemy's ping, a ``SELECT 1``) before it serves, when
    it sat idle for more than ``PING_AFTER_IDLE_SECONDS`` or since before a lost
    connection was last seen; a dead one is replaced (``DisconnectionError``: the pool
    connects again). SQLAlchemy's ``pool_pre_ping`` pinged at every checkout: a round
    trip for every request, 8-9 % of a short read's CPU on PostgreSQL. A connection
    used a moment ago is alive, or went down with the server a moment ago: then its
    request fails as one in flight does, and every connection is pinged again
    (docs/decisions.md, "Driver reads and idle pings")."""

    # The listeners hold the dialect, not the engine: a cycle through the engine would
    # keep a dropped engine, and its pool's connections, until the collector's next pass.
    dialect = engine.dialect

    @event.listens_for(engine, "checkin")
    def _checkin(dbapi_connection: Any, record: Any) -> None:
        record.info[_CHECKED_IN] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checkout(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        checked_in = record.info.get(_CHECKED_IN)
        if checked_in is None:  # connected just now
            return
        recent = time.monotonic() - checked_in <= PING_AFTER_IDLE_SECONDS
        if recent and checked_in > _lost_at.get(dialect, 0.0):
            return
        try:
            dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as error:
            if dialect.is_disconnect(error, dbapi_connection, None):
                raise DisconnectionError(str(error)) from error
            raise

    @event.listens_for(engine, "handle_error")
    def _lost(context: Any) -> None:
        if context.is_disconnect:
            _lost_at[dialect] = time.monotonic()


_lost_at: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()
"""When each engine (by its dialect, one per engine) last saw a connection lost: its
pool's connections checked in before then are pinged at their next checkout, however
recently they served."""


def connection_lost(engine: Engine) -> None:
    """Note that one of ``engine``'s connections was found dead (``_ping_after_idle``)."""
    _lost_at[engine.dialect] = time.monotonic()


def _lazy_commits_on_postgresql(engine: Engine) -> None:
    """Run ``LAZY_COMMIT`` transactions with ``synchronous_commit`` off: set on their
    connection for as long as it serves them (the audit writer keeps one), and reset to
    the server's setting when a durable transaction gets it."""

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        lazy = bool(conn.get_execution_options().get(LAZY_COMMIT))
        # In the transaction this starts; should it roll back, so does the setting, and
        # the connection's commits stay durable ones.
        _switch(conn, lazy, "SET synchronous_commit TO OFF" if lazy else "RESET synchronous_commit")


def _tune_sqlite(engine: Engine, settings: Settings) -> None:
    """The connection settings of a server's SQLite (README, "SQLite settings")."""
    busy_timeout_ms, mmap_mb = settings.sqlite_busy_timeout_ms, settings.sqlite_mmap_mb
    synchronous = "NORMAL" if settings.sqlite_synchronous == "NORMAL" else "FULL"
    cache_kib = int(settings.sqlite_cache_mb) * 1024
    page_size = int(settings.sqlite_page_size)
    autocheckpoint = CHECKPOINT_BACKSTOP_PAGES if settings.sqlite_checkpoint_seconds else 1000

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, record: Any) -> None:
        # Let SQLAlchemy, not the driver, decide when transactions begin.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        # A new store's page size (an existing WAL store keeps its own): every write
        # rewrites whole pages, and a booking's or an import's keys each land on a page of
        # their own; 1 KiB pages halve the bytes a 200-item booking writes to a large
        # store (README, "SQLite settings").
        cursor.execute(f"PRAGMA page_size={page_size}")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cursor.execute("PRAGMA foreign_keys=ON")
        # Reads of a large store go through the OS page cache without copying.
        cursor.execute(f"PRAGMA mmap_size={int(mmap_mb) * 1024 * 1024}")
        # FULL (the default): a commit that was acknowledged survives power loss, not
        # only a crash; NORMAL: only a crash of the process (RIDERCRM_SQLITE_SYNCHRONOUS).
        cursor.execute(f"PRAGMA synchronous={synchronous}")
        # Temporary tables, indexes and savepoint journals in memory: they never outlive
        # the connection, so a file costs writes and durability gains nothing from it.
        cursor.execute("PRAGMA temp_store=MEMORY")
        # The page cache, in KiB (negative): the default 2 MB re-reads the indexes of a
        # large store from the OS cache at every batch.
        cursor.execute(f"PRAGMA cache_size=-{cache_kib}")
        # With `serve`'s checkpointer (``start_checkpointer``) a commit checkpoints only
        # when the log has grown far past SQLite's 1,000 pages: the checkpointer fell behind.
        cursor.execute(f"PRAGMA wal_autocheckpoint={autocheckpoint}")
        cursor.close()
        record.info[SYNCHRONOUS] = synchronous

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        options = conn.get_execution_options()
        # The connection's synchronous setting holds until changed: set it for this
        # transaction (before it begins: SQLite refuses to change it inside one), when
        # it differs from the last one's.
        wanted = "NORMAL" if options.get(LAZY_COMMIT) else synchronous
        _switch(conn, wanted, f"PRAGMA synchronous={wanted}")
        # A writer takes the write lock up front: a deferred transaction that later
        # upgrades to a writer can fail at once with SQLITE_BUSY despite the timeout.
        if options.get("ridercrm_write"):
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            conn.exec_driver_sql("BEGIN")


SYNCHRONOUS = "ridercrm_synchronous"
"""A connection's ``info`` key: its setting now (SQLite: ``synchronous``; PostgreSQL:
whether ``synchronous_commit`` is off)."""


def _switch(conn: Any, value: object, statement: str) -> None:
    """Run ``statement`` to give the connection the setting ``value``, unless it has it
    already (its ``info[SYNCHRONOUS]``): a setting holds until changed."""
    info = conn.connection.info
    if info.get(SYNCHRONOUS, False) != value:
        conn.exec_driver_sql(statement)
        info[SYNCHRONOUS] = value


CHECKPOINT_BACKSTOP_PAGES = 10_000
"""Pages of log (40 MiB) after which a commit checkpoints itself although the checkpointer
runs: only if it cannot keep up (a reader holding an old snapshot stops a passive one)."""


def start_checkpointer(settings: Settings) -> Callable[[], None] | None:
    """On SQLite with ``RIDERCRM_SQLITE_CHECKPOINT_SECONDS`` > 0, copy the log into the
    database every so many seconds from a thread of this process (a passive checkpoint:
    it waits for no reader or writer), so that requests' commits do not (``_tune_sqlite``
    raises their automatic threshold to ``CHECKPOINT_BACKSTOP_PAGES``); return its stop.

    Durability is unchanged: with ``synchronous=FULL`` every commit is already on disk in
    the log; with ``NORMAL`` the log is synced at checkpoints, so this also bounds what a
    power loss can take to about one period.
    """
    from ridercrm import periodic

    url = make_url(settings.database_url)
    path = url.database
    if url.get_backend_name() != "sqlite" or not settings.sqlite_checkpoint_seconds:
        return None
    if not path or path == ":memory:" or path.startswith("file:"):
        return None

    def checkpoint(_stop: object) -> None:
        connection = sqlite3.connect(path, isolation_level=None)
        try:
            connection.execute(f"PRAGMA busy_timeout={int(settings.sqlite_busy_timeout_ms)}")
            connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
        finally:
            connection.close()

    return periodic.every(
        settings.sqlite_checkpoint_seconds,
        checkpoint,
        name="ridercrm-sqlite-checkpoint",
        log=log,
        failure="checkpointing the SQLite log failed; the next round tries again",
    )


WRITER_LOCK = "ridercrm_writer_lock"
"""An engine's execution option: the lock file its SQLite writers queue on (none: no queue)."""
# Lock files that could not be opened, logged once each a process: a log's
# de-duplication, which changes no answer (docs/decisions.md, "State belongs to the app").
_UNQUEUED: set[str] = set()


def _queue_sqlite_writers(engine: Engine) -> None:
    """Make this engine's writers take turns in arrival order (see ``writer_turn``)."""
    database = engine.url.database
    if fcntl is None or not database or database == ":memory:" or database.startswith("file:"):
        return
    engine.update_execution_options(**{WRITER_LOCK: f"{database}.writelock"})


@contextmanager
def writer_turn(engine: Any) -> Iterator[None]:
    """Wait for this writer's turn on a SQLite database, in arrival order; hold it until done.

    SQLite admits one writer at a time, and one that finds the write lock taken waits in
    its busy handler, which sleeps up to 100 ms between tries while newcomers overtake
    it: most writes go straight through and a few wait for seconds (bench/README.md,
    Load). Here writers first take an exclusive ``flock`` on a file next to the database,
    so the kernel queues them (across threads and worker processes, and for
    ``ridercrm import`` beside a running server) and each then finds the write lock free.
    The file is opened per transaction because a ``flock`` belongs to the open file:
    threads sharing one descriptor would not exclude each other. Closing it, or the
    process dying, releases the turn. Writers from other programs still wait in the
    busy handler, within ``RIDERCRM_SQLITE_BUSY_TIMEOUT_MS``.

    A ``flock`` needs only a readable file, so one left by another user (``sudo ridercrm
    import``) still serves; a lock file that cannot be opened at all costs the queue, not
    the write: the writer waits in the busy handler, and the log says why.
    """
    path = engine.get_execution_options().get(WRITER_LOCK) if engine is not None else None
    if path is None:
        yield
        return
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        if path not in _UNQUEUED:
            _UNQUEUED.add(path)
            log.warning(
                "SQLite writers not queued", extra={"lock_file": path, "reason": exc.strerror}
            )
        yield
        return
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


CACHES = "ridercrm_caches"
"""``session.info[CACHES]``: a dict shared by the sessions of one factory, where a feature
keeps what it caches for the app or command that made the factory (the matching model:
matching/model_store.py). It lives and dies with the factory, never with the process."""


def session_factory(engine: Engine) -> sessionmaker[Session]:
    """The sessions of an app, a command or a background worker, on ``engine``.

    Each writes what its changes imply (matching keys, outbox events, riders' messages)
    at its commit: the factory gets the unit of work (``unit_of_work.install``), here,
    when it is made, never at import and never on the ``Session`` class. A bare
    ``sessionmaker`` lacks it, and its sessions refuse to record such a row."""
    factory = sessionmaker(bind=engine, expire_on_commit=False, info={CACHES: {}})
    return unit_of_work.install(factory)


@contextmanager
def session_scope(factory: sessionmaker[Session], *, write: bool = False) -> Iterator[Session]:
    """Run a unit of work: commit when the block ends normally, roll back otherwise.

    A writing unit of work on SQLite first waits for its turn (``writer_turn``).
    """
    with writer_turn(factory.kw.get("bind")) if write else nullcontext():
        session = factory()
        if write:
            session.connection(execution_options=WRITE)
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()


def writing_connection(engine: Engine, *, durable: bool = True) -> Connection:
    """A Core connection for writing transactions (``write_transaction``) with no ORM
    session around them (the audit trail's group commit), to be closed by its user.
    ``durable=False``: their commits are lazy ones (``LAZY_COMMIT``)."""
    options: dict[str, Any] = dict(WRITE) if durable else {**WRITE, LAZY_COMMIT: True}
    return engine.connect().execution_options(**options)


@contextmanager
def write_transaction(connection: Connection) -> Iterator[Connection]:
    """One transaction on a ``writing_connection``, as ``session_scope(write=True)`` runs
    one: its turn (SQLite), then commit when the block ends normally, else roll back."""
    with writer_turn(connection.engine), connection.begin():
        yield connection


def bulk_insert(
    session: Session | Connection,
    table: Table,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    copy: bool = False,
) -> None:
    """Insert many rows, each a tuple of values for ``columns``, as fast as the backend allows.

    On SQLite and PostgreSQL (psycopg) the rows go straight to the driver's
    executemany, each value passed through its column type's own bind processor (so
    what is stored is exactly what a Core insert stores); SQLAlchemy's per-row parameter
    handling cost as much as SQLite's own work on large imports, and on PostgreSQL a
    tenth of a 200-item booking (its 1,200 messages). With ``copy``, PostgreSQL
    (psycopg) receives them through ``COPY ... FROM STDIN`` in the session's
    transaction. Either way only for plain columns: text, numbers, dates, timestamps,
    booleans; not JSON. Otherwise a Core insert. ``session``: a session, or a Core
    connection (the audit trail's writer).
    """
    if not rows:
        return
    connection = session.connection() if isinstance(session, Session) else session
    dialect = connection.dialect
    psycopg = dialect.name == "postgresql" and dialect.driver == "psycopg"
    if copy and psycopg:
        _copy_rows(connection, table, columns, rows)
        return
    if dialect.name != "sqlite" and not psycopg:
        connection.execute(insert(table), [dict(zip(columns, row, strict=True)) for row in rows])
        return
    connection.exec_driver_sql(
        _insert_statement(dialect, table, tuple(columns)),
        _bound_rows(dialect, table, columns, rows),
    )


def driver_insert(
    dialect: Any, table: Table, columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> tuple[str, list[tuple[Any, ...]]]:
    """The driver's INSERT of ``columns`` into ``table`` and ``rows`` as its executemany
    takes them (each value through its column type's bind processor): what
    :func:`bulk_insert` sends, for a connection it does not hold (``web.loop_db``'s)."""
    return _insert_statement(dialect, table, tuple(columns)), _bound_rows(
        dialect, table, columns, rows
    )


@functools.lru_cache(maxsize=64)
def _insert_statement(dialect: Any, table: Table, columns: tuple[str, ...]) -> str:
    """The driver's INSERT of ``columns`` into ``table`` (made once per dialect, table and
    columns: every batch of audit records, keys or messages inserts the same ones)."""
    quote = dialect.identifier_preparer.quote
    names = ", ".join(quote(table.c[name].name) for name in columns)
    marks = ", ".join(["%s" if dialect.name == "postgresql" else "?"] * len(columns))
    # Only identifiers of our own table (looked up above), quoted; values go as parameters.
    return f"INSERT INTO {_qualified(dialect, table)} ({names}) VALUES ({marks})"  # noqa: S608


@functools.lru_cache(maxsize=64)
def _converters(
    dialect: Any, table: Table, columns: tuple[str, ...]
) -> tuple[tuple[int, Any, tuple[type, Any] | None], ...]:
    """The bind processor of each of ``columns`` that has one, on ``dialect``: ``(index,
    processor, kind)``, ``kind`` naming the type of a timestamp or date column, whose
    values ``_bound_rows`` converts once each (None for other columns).

    The dialect's own type (SQLite's DATETIME, not the generic DateTime) processes the
    value, as a Core insert does: a timestamp is stored in the same form either way.
    """
    converters: list[tuple[int, Any, tuple[type, Any] | None]] = []
    for i, name in enumerate(columns):
        column_type = table.c[name].type
        process = column_type.dialect_impl(dialect).bind_processor(dialect)
        if process is not None:
            # A TypeDecorator (UTCDateTime) is its impl's type in Python: its own
            # python_type is not implemented, and every timestamp of an import was
            # converted row by row (issue 23, 2026-11-28).
            base = (
                column_type.impl_instance if isinstance(column_type, TypeDecorator) else column_type
            )
            try:
                by_value = base.python_type in (dt.datetime, dt.date)
            except NotImplementedError:
                by_value = False
            kind = (type(column_type), getattr(column_type, "timezone", None))
            converters.append((i, process, kind if by_value else None))
    return tuple(converters)


def _bound_rows(
    dialect: Any, table: Table, columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> list[tuple[Any, ...]]:
    """The rows with each value through its column type's bind processor, as a Core insert
    would send them.

    A timestamp or date is converted once per distinct value: an import's rows share their
    times, and three conversions a row were a fifth of the importing process's CPU.
    Columns of one type share what they converted: a row's created_at and updated_at are
    often the same time (a booking's 1,200 messages: one conversion of the two).
    """
    if any(map(len(columns).__ne__, map(len, rows))):
        raise ValueError(f"every row needs {len(columns)} values: {', '.join(columns)}")
    converters = _converters(dialect, table, tuple(columns))
    if not converters:
        return [tuple(row) for row in rows]
    seen_by_kind: dict[tuple[type, Any], dict[Any, Any]] = {}
    plan = [
        (i, convert, None if kind is None else seen_by_kind.setdefault(kind, {}))
        for i, convert, kind in converters
    ]
    converted = []
    for row in rows:
        values = list(row)
        for i, convert, seen in plan:
            value = values[i]
            if seen is None:
                values[i] = convert(value)
            elif value in seen:
                values[i] = seen[value]
            else:
                values[i] = seen[value] = convert(value)
        converted.append(tuple(values))
    return converted


def _qualified(dialect: Any, table: Table) -> str:
    quote = dialect.identifier_preparer.quote
    return (
        quote(table.name) if table.schema is None else f"{quote(table.schema)}.{quote(table.name)}"
    )


def _copy_rows(
    connection: Any, table: Table, columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> None:
    """``COPY table (columns) FROM STDIN`` on the connection's psycopg connection, each value
    through its column type's bind processor first (as a Core insert would)."""
    dialect = connection.dialect
    quote = dialect.identifier_preparer.quote
    target = _qualified(dialect, table)
    names = ", ".join(quote(table.c[name].name) for name in columns)
    cursor = connection.connection.driver_connection.cursor()
    try:
        # Only identifiers of our own table (looked up above); values go as COPY data.
        with cursor.copy(f"COPY {target} ({names}) FROM STDIN") as stream:
            for row in _bound_rows(dialect, table, columns, rows):
                stream.write_row(row)
    finally:
        cursor.close()


class Reads(Protocol):
    """A short read's database: a statement's rows, each with its columns by name and its
    values as the column types make them (``session_reads`` or ``driver_reads``)."""

    def all(self, statement: Select[Any], params: Mapping[str, Any] | None = None) -> list[Any]:
        """Every row of ``statement`` run with ``params``."""
        ...

    def first(self, statement: Select[Any], params: Mapping[str, Any] | None = None) -> Any:
        """The first row of ``statement`` run with ``params``, or None."""
        ...


class _SessionReads:
    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    def all(self, statement: Select[Any], params: Mapping[str, Any] | None = None) -> list[Any]:
        return list(self.connection.execute(statement, params or {}).all())

    def first(self, statement: Select[Any], params: Mapping[str, Any] | None = None) -> Any:
        return self.connection.execute(statement, params or {}).first()


def session_reads(session: Session) -> Reads:
    """Reads in ``session``'s transaction."""
    return _SessionReads(session.connection())


# Compared by identity: there is one per dialect and statement (``_driver_statement``).
@dataclass(frozen=True, eq=False)
class _DriverStatement:
    sql: str
    positions: tuple[str, ...] | None  # the parameters' order, for a positional paramstyle
    binders: tuple[tuple[str, Callable[[Any], Any]], ...]
    types: tuple[Any, ...]  # the selected columns' types, for this dialect
    row: Callable[..., Any]
    values: Mapping[str, Any]  # the statement's own bound values (a literal, say)

    def arguments(self, params: Mapping[str, Any] | None) -> Any:
        values = {**self.values, **(params or {})}
        for name, bind in self.binders:
            values[name] = bind(values[name])
        if self.positions is None:
            return values
        return tuple(values[name] for name in self.positions)


@functools.lru_cache(maxsize=64)
def _driver_statement(dialect: Any, statement: Select[Any]) -> _DriverStatement:
    """``statement`` compiled for ``dialect`` once, with its parameters' bind processors, as a
    Core execution would apply them."""
    compiled = statement.compile(dialect=dialect)
    binders = []
    for name, bind in compiled.binds.items():
        process = bind.type.dialect_impl(dialect).bind_processor(dialect)
        if process is not None:
            binders.append((name, process))
    columns = list(statement.selected_columns)
    types = tuple(column.type.dialect_impl(dialect) for column in columns)
    row = namedtuple("Row", [column.key for column in columns], rename=True)  # type: ignore[misc]
    positions = tuple(compiled.positiontup) if compiled.positiontup is not None else None
    values = dict(compiled.params)
    return _DriverStatement(str(compiled), positions, tuple(binders), types, row, values)


@functools.lru_cache(maxsize=256)
def _result_converters(
    dialect: Any, plain: _DriverStatement, described: tuple[Any, ...]
) -> tuple[tuple[int, Callable[[Any], Any]], ...]:
    """The result processor of each column that has one, ``(index, processor)``, for the
    types the driver ``described`` (a processor may depend on them: PostgreSQL's
    numerics), as a Core execution's."""
    processors = (
        column_type.result_processor(dialect, code)
        for column_type, code in zip(plain.types, described, strict=True)
    )
    return tuple((i, process) for i, process in enumerate(processors) if process is not None)


def described(cursor: Any) -> tuple[Any, ...]:
    """The type code of each column of the cursor's result: psycopg's from its result
    itself (its ``description`` makes an object a column, a sixth of a product list's
    read), other drivers' from ``description``."""
    result = getattr(cursor, "pgresult", None)
    if result is not None:
        return tuple(map(result.ftype, range(result.nfields)))
    return tuple(column[1] for column in cursor.description)


class DriverReads:
    """``Reads`` on a driver's connection (``driver_reads``); ``_fetched`` is what a
    subclass changes to run the statements another way (``web.loop_db``: awaited)."""

    def __init__(self, connection: Any, dialect: Any) -> None:
        self.connection = connection
        self.dialect = dialect

    def _fetched(
        self, sql: str, arguments: Any, many: bool
    ) -> tuple[Sequence[Any], tuple[Any, ...]]:
        """The rows of ``sql`` run with ``arguments`` (all, or the first), and the type
        code of each column."""
        cursor = self.connection.cursor()
        try:
            cursor.execute(sql, arguments)
            found = cursor.fetchall() if many else cursor.fetchmany(1)
            return found, described(cursor)
        finally:
            cursor.close()

    def _rows(
        self, statement: Select[Any], params: Mapping[str, Any] | None, many: bool
    ) -> list[Any]:
        plain = _driver_statement(self.dialect, statement)
        found, described_as = self._fetched(plain.sql, plain.arguments(params), many)
        converters = _result_converters(self.dialect, plain, described_as)
        made = plain.row._make  # type: ignore[attr-defined]
        if not converters:
            return [made(values) for values in found]
        rows = []
        for values in found:
            converted = list(values)
            for i, process in converters:
                converted[i] = process(converted[i])
            rows.append(made(converted))
        return rows

    def all(self, statement: Select[Any], params: Mapping[str, Any] | None = None) -> list[Any]:
        return self._rows(statement, params, many=True)

    def first(self, statement: Select[Any], params: Mapping[str, Any] | None = None) -> Any:
        rows = self._rows(statement, params, many=False)
        return rows[0] if rows else None


@contextmanager
def driver_reads(engine: Engine) -> Iterator[Reads]:
    """Reads on a pooled connection of the driver's own, without SQLAlchemy's execution
    around each statement: a read of a few rows (a key, the products) spent several
    times longer in that than in the database. Each statement is compiled once per
    dialect, and its values pass through the column types' processors as in a Core
    execution, so the rows are the same. Each statement is a transaction of its own:
    SQLite's connections are in autocommit mode, and a PostgreSQL connection is put in
    it for the reads (no ``BEGIN`` and ``ROLLBACK`` around them: half the round trips of
    a key and a product list). Only plain bound parameters (no expanding ``IN`` lists)."""
    connection = engine.raw_connection()
    driver: Any = connection.driver_connection
    autocommit = engine.dialect.name == "postgresql"
    try:
        if autocommit:
            driver.autocommit = True  # the connection is idle: no round trip
        yield DriverReads(connection, engine.dialect)
    except engine.dialect.loaded_dbapi.Error as error:
        # What SQLAlchemy's execution does on a lost connection: drop it, and ping the
        # pool's others before they serve again.
        if engine.dialect.is_disconnect(error, connection.dbapi_connection, None):
            connection.invalidate(error)
            connection_lost(engine)
        raise
    finally:
        if autocommit and connection.is_valid:
            try:
                driver.autocommit = False
            except engine.dialect.loaded_dbapi.Error as error:
                connection.invalidate(error)  # it cannot serve a session as it is
        connection.close()
