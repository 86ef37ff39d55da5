"""The duplicates scan's stored results, as the tests and the benchmarks read them."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import session_scope
from ridercrm.duplicates.models import OPEN, DuplicateCluster, DuplicatePair, DuplicateScan


def forget_scans(sessions: sessionmaker[Session]) -> None:
    """Delete every scan, pair and cluster: the next scan starts from nothing."""
    with session_scope(sessions, write=True) as session:
        for table in (DuplicatePair, DuplicateCluster, DuplicateScan):
            session.execute(delete(table))


def open_pairs(sessions: sessionmaker[Session]) -> list[tuple[str, str, float, Any]]:
    """The open pairs, by their ids: (person_id, other_id, score, explanation)."""
    with session_scope(sessions) as session:
        rows = session.execute(
            select(
                DuplicatePair.person_id,
                DuplicatePair.other_id,
                DuplicatePair.score,
                DuplicatePair.explanation,
            )
            .where(DuplicatePair.status == OPEN)
            .order_by(DuplicatePair.person_id, DuplicatePair.other_id)
        ).all()
    return [(row[0], row[1], row[2], row[3]) for row in rows]
