"""What a person's blocking keys cost to store: one B-tree on SQLite, no second index
(docs/decisions.md, "Compact blocking keys")."""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import session_scope
from ridercrm.demo import demo_people
from ridercrm.people import service
from ridercrm.people.models import PersonKey
from ridercrm.people.schemas import PersonCreate


def test_a_key_costs_one_b_tree_entry_of_store(
    engine: Engine, sessions: sessionmaker[Session]
) -> None:
    if engine.dialect.name != "sqlite":
        pytest.skip("counted with SQLite's dbstat table")
    with session_scope(sessions, write=True) as session:
        for kind, values in demo_people(400, seed=7):
            service.create_person(session, kind=kind, data=PersonCreate.model_validate(values))
    with session_scope(sessions) as session:
        rows = session.scalar(select(func.count()).select_from(PersonKey))
    assert rows is not None
    assert rows > 3000
    path = engine.url.database
    assert path is not None
    with sqlite3.connect(path) as connection:
        # person_keys and every index of it (their pages as stored, free space included)
        stored = connection.execute(
            "SELECT sum(pgsize) FROM dbstat WHERE name IN"
            " (SELECT name FROM sqlite_master WHERE tbl_name = 'person_keys')"
        ).fetchone()[0]
    # A key row is 8 bytes of key and 18 of person id: one B-tree entry, with the free
    # space of pages split by inserts in hash order, stays under 60 bytes; a second
    # index on person_id took as much again.
    assert stored / rows < 60, f"{stored / rows:.0f} bytes per key row"
