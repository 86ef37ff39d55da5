"""Keeping trained models in the database; every worker scores with the newest."""

from __future__ import annotations

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from ridercrm.db import CACHES, utcnow
from ridercrm.matching.model import Model, default_model
from ridercrm.matching.models import MatchModel

_NEWEST = select(func.max(MatchModel.version))
_MODEL = select(MatchModel.model).where(MatchModel.version == bindparam("version"))
_KEY = "matching.model"  # in the session factory's caches (db.CACHES)


def save(session: Session, model: Model) -> Model:
    """Store a trained model as the next version and return it with its version and date."""
    newest = session.scalar(_NEWEST) or 0
    now = utcnow()
    model.version = newest + 1
    model.trained_at = now.isoformat()
    session.add(
        MatchModel(
            version=model.version, trained_at=now, people=model.people, model=model.to_json()
        )
    )
    return model


def current(session: Session) -> Model:
    """The newest stored model (the shipped default if none).

    Each call reads the newest version number (the primary key's last entry: one index
    look-up); the model of that version is parsed once and kept in the caches of the
    session's factory (``db.CACHES``), which belong to the app or command that made it.
    A newly trained model is used from the next call on, in every worker; a database
    recreated under the same URL is another app's, with caches of its own.
    """
    newest = session.scalar(_NEWEST) or 0
    caches = session.info.get(CACHES)
    held = caches.get(_KEY) if caches is not None else None
    if held is not None and held[0] == newest:
        return held[1]
    text = session.scalar(_MODEL, {"version": newest}) if newest else None
    model = Model.from_json(text) if text else default_model()
    if caches is not None:
        caches[_KEY] = (newest, model)  # one assignment: threads see the old or the new
    return model
