"""Lazy commits (db.LAZY_COMMIT): the audit records of reads commit without waiting for
the disk, and leave their setting to no durable transaction after them (README,
"Guarantees")."""

from __future__ import annotations

from sqlalchemy import Connection, Engine, text

from ridercrm.db import session_factory, session_scope, write_transaction, writing_connection

# What each database says a commit of the transaction will do: SQLite's synchronous
# (2 FULL: synced to disk; 1 NORMAL: not until a checkpoint), PostgreSQL's
# synchronous_commit ("on": the commit waits for the log's flush).
DURABLE = {"sqlite": "2", "postgresql": "on"}
LAZY = {"sqlite": "1", "postgresql": "off"}


def setting(connection: Connection) -> str:
    if connection.dialect.name == "sqlite":
        return str(connection.execute(text("PRAGMA synchronous")).scalar())
    return str(connection.execute(text("SHOW synchronous_commit")).scalar())


def test_a_lazy_transaction_does_not_wait_for_the_disk_and_the_next_durable_one_does(
    engine: Engine,
) -> None:
    name = engine.dialect.name
    # Several transactions on each side, on the pool's connections in turn: the writer
    # keeps its connection for many batches, then gives it back to the pool.
    with writing_connection(engine, durable=False) as connection:
        for _ in range(3):
            with write_transaction(connection):
                assert setting(connection) == LAZY[name]
    sessions = session_factory(engine)
    for write in (True, False, True):
        with session_scope(sessions, write=write) as session:
            assert setting(session.connection()) == DURABLE[name]
    with writing_connection(engine) as connection, write_transaction(connection):
        assert setting(connection) == DURABLE[name]
