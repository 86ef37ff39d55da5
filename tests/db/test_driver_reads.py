"""Reads on the driver's own connection (db.driver_reads) give the rows a Core execution
gives: the same values, of the same types, by the same column names."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import driver_reads, session_reads, session_scope
from ridercrm.keys import service as keys
from ridercrm.keys.models import ApiKey
from ridercrm.products import service as products
from ridercrm.products.schemas import ProductCreate

# Every column type of a key: integer, texts, JSON, a timestamp (revoked) or NULL.
KEY_ROWS = select(
    ApiKey.__table__.c.id,
    ApiKey.__table__.c.name,
    ApiKey.__table__.c.scopes,
    ApiKey.__table__.c.created_at,
    ApiKey.__table__.c.revoked_at,
).order_by(ApiKey.__table__.c.id)


def test_the_driver_reads_the_rows_a_core_execution_reads(
    engine: Engine, sessions: sessionmaker[Session]
) -> None:
    with session_scope(sessions, write=True) as session:
        for name, code, price, active in [
            ("Learner", "L1", "249.00", True),
            ("Advanced", "A1", "380.5", False),
            ("Zero", "Z0", "0", True),
        ]:
            products.create_product(
                session, data=ProductCreate(name=name, code=code, price=price, active=active)
            )
        _, plaintext = keys.create_key(session, name="reader", scopes=["products", "match"])
        revoked, _ = keys.create_key(session, name="gone", scopes=["admin"])
        session.flush()
        keys.revoke_key(session, ident=str(revoked.id))

    with session_scope(sessions) as session:
        expected_products = products.listed_products(session_reads(session))
        expected_keys = session_reads(session).all(KEY_ROWS)
    with driver_reads(engine) as reads:
        got_products = products.listed_products(reads)
        got_keys = reads.all(KEY_ROWS)
        found = keys.active_key(reads, plaintext)
        unknown = keys.active_key(reads, plaintext + "x")

    assert got_products == expected_products
    assert [type(p["price"]) for p in got_products] == [Decimal] * 3
    assert [(p["code"], str(p["price"]), p["active"]) for p in got_products] == [
        ("A1", "380.50", False),
        ("L1", "249.00", True),
        ("Z0", "0.00", True),
    ]
    assert [tuple(row) for row in got_keys] == [tuple(row) for row in expected_keys]
    assert [row.scopes for row in got_keys] == [["match", "products"], ["admin"]]
    assert got_keys[0].revoked_at is None
    assert isinstance(got_keys[1].revoked_at, dt.datetime)
    assert got_keys[1].revoked_at.utcoffset() == dt.timedelta(0)
    assert found is not None
    assert (found.name, sorted(found.scopes)) == ("reader", ["match", "products"])
    assert unknown is None


def test_a_revoked_key_is_refused_by_the_driver_reads(
    engine: Engine, sessions: sessionmaker[Session]
) -> None:
    with session_scope(sessions, write=True) as session:
        key, plaintext = keys.create_key(session, name="soon gone", scopes=["products"])
        session.flush()
        ident = str(key.id)
    with driver_reads(engine) as reads:
        assert keys.active_key(reads, plaintext) is not None
    with session_scope(sessions, write=True) as session:
        keys.revoke_key(session, ident=ident)
    # The pool's connection that read it active before reads it revoked now.
    with driver_reads(engine) as reads:
        assert keys.active_key(reads, plaintext) is None


def test_a_connection_the_driver_read_on_serves_transactions_again(
    engine: Engine, sessions: sessionmaker[Session]
) -> None:
    """The reads run each statement as a transaction of its own (on PostgreSQL the
    connection is in autocommit mode for them); the connection goes back to the pool
    as it was: a session's work on it is still one transaction, undone by a rollback."""
    with driver_reads(engine) as reads:
        assert products.listed_products(reads) == []
    for _ in range(engine.pool.size() + 1):  # whichever pooled connection serves it
        with sessions() as session:
            products.create_product(
                session, data=ProductCreate(name="Undone", code="U1", price="1", active=True)
            )
            session.flush()
            session.rollback()
    with driver_reads(engine) as reads:
        assert products.listed_products(reads) == []
