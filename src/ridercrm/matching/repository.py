"""Finding candidates by their blocking keys (the keys are kept by people/index.py)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import TextClause, bindparam, select, text
from sqlalchemy.orm import Session
from sqlalchemy.sql.selectable import TextualSelect

from ridercrm.people.identity import IDENTITY_COLUMNS
from ridercrm.people.models import Person

# At most this many people per key: a key shared by more (a common name pair at a
# million people) is a weak one, and the others find the person.
KEY_CAP = 50

# What the matcher reads of a candidate: who it is (kind, conversion, merge, age of the
# record for ties) and the identifying values it is scored on. Plain rows, not ORM
# objects: at a million people a query reads up to a hundred candidates, and building
# an ORM object for each cost more than scoring it.
CANDIDATE_COLUMNS: tuple[str, ...] = (
    "id", "kind", "converted_contact_id", "merged_into", "updated_at", *IDENTITY_COLUMNS
)  # fmt: skip
_TYPED = tuple(Person.__table__.c[name] for name in CANDIDATE_COLUMNS)
_PEOPLE = select(*_TYPED).where(Person.__table__.c.id.in_(bindparam("ids", expanding=True)))


def _keys_union(count: int) -> str:
    """The ids stored under ``count`` keys (:k0 …), each key's people capped at :cap."""
    part = "SELECT person_id FROM (SELECT person_id FROM person_keys WHERE key = :k{n} LIMIT :cap) AS p{n}"
    return " UNION ALL ".join(part.format(n=n) for n in range(count))


@lru_cache(maxsize=64)
def _lookup(count: int) -> TextClause:
    """One statement for ``count`` keys, each key's people capped (built once per count)."""
    return text(_keys_union(count))


@lru_cache(maxsize=64)
def _candidates(count: int) -> TextualSelect:
    """The candidate rows of ``count`` keys: look-up and load in one statement."""
    columns = ", ".join(CANDIDATE_COLUMNS)
    sql = f"SELECT {columns} FROM people WHERE id IN ({_keys_union(count)})"  # noqa: S608 (constant)
    return text(sql).columns(*_TYPED)


def _params(keys: Collection[int]) -> dict[str, int]:
    params: dict[str, int] = {f"k{n}": key for n, key in enumerate(sorted(keys))}
    params["cap"] = KEY_CAP
    return params


def candidate_ids(session: Session, keys: Collection[int]) -> set[str]:
    """Ids of the people stored under any of the keys, at most KEY_CAP a key (index look-ups)."""
    if not keys:
        return set()
    return set(session.scalars(_lookup(len(keys)), _params(keys)).all())


def candidates(session: Session, keys: Collection[int]) -> Sequence[Any]:
    """The CANDIDATE_COLUMNS of the people ``candidate_ids`` finds, in one round trip."""
    if not keys:
        return []
    return session.execute(_candidates(len(keys)), _params(keys)).all()


def people(session: Session, ids: Collection[str]) -> Sequence[Any]:
    """The CANDIDATE_COLUMNS of these people (course owners named by a request)."""
    if not ids:
        return []
    return session.execute(_PEOPLE, {"ids": list(ids)}).all()
