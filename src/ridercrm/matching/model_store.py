"""Keeping trained models in the database; every worker scores with the newest."""

from __future__ import annotations

import threading
import time

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ridercrm.db import utcnow
from ridercrm.matching.model import Model, default_model
from ridercrm.matching.models import MatchModel

# How long a worker trusts its model before reading the newest version number again
# (one indexed max() a few times a minute, not per request).
CHECK_SECONDS = 10.0

_lock = threading.Lock()
_cache: dict[str, tuple[float, int, Model]] = {}


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
    """The newest stored model (the shipped default if none), re-checked every few seconds."""
    key = str(session.get_bind().engine.url)
    now = time.monotonic()
    with _lock:
        cached = _cache.get(key)
    if cached and now - cached[0] < CHECK_SECONDS:
        return cached[2]
    newest = session.scalar(select(func.max(MatchModel.version))) or 0
    if cached and cached[1] == newest:
        model = cached[2]
    elif newest:
        text = session.scalar(select(MatchModel.model).where(MatchModel.version == newest))
        model = Model.from_json(text) if text else default_model()
    else:
        model = default_model()
    with _lock:
        _cache[key] = (now, newest, model)
    return model


def forget() -> None:
    """Drop the cached models (tests, and after training in this process)."""
    with _lock:
        _cache.clear()
