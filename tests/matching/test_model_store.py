"""The matching model is kept by the app that reads it, and replaced by a newer version.

No timer and no process-wide cache (docs/decisions.md, "State belongs to the app"): each
session factory (one per app or command) keeps the model it parsed, and every read
checks the newest version number first.
"""

from __future__ import annotations

from sqlalchemy import Engine

from ridercrm.db import session_factory, session_scope
from ridercrm.matching import model_store
from ridercrm.matching.model import Model, default_model


def _copy() -> Model:
    """A model to store (``save`` numbers it: never the shipped default's own object)."""
    return Model.from_json(default_model().to_json())


def test_a_model_is_parsed_once_per_version_and_a_new_version_is_used_at_once(
    engine: Engine,
) -> None:
    sessions = session_factory(engine)
    with session_scope(sessions) as session:
        first = model_store.current(session)
    with session_scope(sessions) as session:
        assert model_store.current(session) is first  # kept, not parsed again
    assert first.version == default_model().version

    with session_scope(session_factory(engine), write=True) as session:
        stored = model_store.save(session, _copy())
    with session_scope(sessions) as session:
        newer = model_store.current(session)  # the next read, no waiting
    assert newer.version == stored.version == 1
    with session_scope(sessions) as session:
        assert model_store.current(session) is newer


def test_each_app_keeps_its_own_model(engine: Engine) -> None:
    one, other = session_factory(engine), session_factory(engine)
    with session_scope(one, write=True) as session:
        model_store.save(session, _copy())
    with session_scope(one) as session:
        kept = model_store.current(session)
    with session_scope(other) as session:
        theirs = model_store.current(session)
    assert theirs is not kept
    assert theirs.version == kept.version == 1
