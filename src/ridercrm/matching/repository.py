"""Finding candidates by their blocking keys (the keys are kept by people/index.py)."""

from __future__ import annotations

from collections.abc import Collection
from functools import lru_cache

from sqlalchemy import TextClause, text
from sqlalchemy.orm import Session

# At most this many people per key: a key shared by more (a common name pair at a
# million people) is a weak one, and the others find the person.
KEY_CAP = 50


@lru_cache(maxsize=64)
def _lookup(count: int) -> TextClause:
    """One statement for ``count`` keys, each key's people capped (built once per count)."""
    part = "SELECT person_id FROM (SELECT person_id FROM person_keys WHERE key = :k{n} LIMIT :cap) AS p{n}"
    return text(" UNION ALL ".join(part.format(n=n) for n in range(count)))


def candidate_ids(session: Session, keys: Collection[int]) -> set[str]:
    """Ids of the people stored under any of the keys, at most KEY_CAP a key (index look-ups)."""
    if not keys:
        return set()
    params: dict[str, int] = {f"k{n}": key for n, key in enumerate(sorted(keys))}
    params["cap"] = KEY_CAP
    return set(session.scalars(_lookup(len(keys)), params).all())
