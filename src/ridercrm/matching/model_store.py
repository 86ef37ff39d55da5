"""Keeping trained models in the database; every worker scores with the newest."""

from __future__ import annotations

import threading
import time

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from ridercrm.db import utcnow
from ridercrm.matching.model import Model, default_model
from ridercrm.matching.models import MatchModel

# How long a worker trusts the model it has before reading the newest version number.
CHECK_SECONDS = 5.0

_NEWEST = select(func.max(MatchModel.version))
_MODEL = select(MatchModel.model).where(MatchModel.version == bindparam("version"))

_lock = threading.Lock()
_cache: dict[tuple[str, int], Model] = {}
_checked: dict[str, tuple[float, Model]] = {}


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

    A worker reads the newest version number (the primary key's last entry) at most
    every CHECK_SECONDS and parses each version once, so a newly trained model is in
    use everywhere within seconds at no cost per request.
    """
    url = str(session.get_bind().engine.url)
    now = time.monotonic()
    with _lock:
        checked = _checked.get(url)
    if checked is not None and now - checked[0] < CHECK_SECONDS:
        return checked[1]
    newest = session.scalar(_NEWEST) or 0
    with _lock:
        model = _cache.get((url, newest))
    if model is None:
        text = session.scalar(_MODEL, {"version": newest}) if newest else None
        model = Model.from_json(text) if text else default_model()
    with _lock:
        if len(_cache) > 16:
            _cache.clear()
        _cache[(url, newest)] = model
        _checked[url] = (now, model)
    return model


def forget() -> None:
    """Drop the cached models (a database recreated under the same URL)."""
    with _lock:
        _cache.clear()
        _checked.clear()
