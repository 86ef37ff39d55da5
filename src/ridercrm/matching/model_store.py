"""Keeping trained models in the database; every worker scores with the newest."""

from __future__ import annotations

import threading

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ridercrm.db import utcnow
from ridercrm.matching.model import Model, default_model
from ridercrm.matching.models import MatchModel

_lock = threading.Lock()
_cache: dict[tuple[str, int], Model] = {}


def save(session: Session, model: Model) -> Model:
    """Store a trained model as the next version and return it with its version and date."""
    newest = session.scalar(select(func.max(MatchModel.version))) or 0
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

    Each call reads only the newest version number (the primary key's last entry); the
    model itself is read and parsed once per version and worker.
    """
    newest = session.scalar(select(func.max(MatchModel.version))) or 0
    key = (str(session.get_bind().engine.url), newest)
    with _lock:
        model = _cache.get(key)
    if model is not None:
        return model
    text = None
    if newest:
        text = session.scalar(select(MatchModel.model).where(MatchModel.version == newest))
    model = Model.from_json(text) if text else default_model()
    with _lock:
        if len(_cache) > 16:
            _cache.clear()
        _cache[key] = model
    return model


def forget() -> None:
    """Drop the cached models (a database recreated under the same URL)."""
    with _lock:
        _cache.clear()
