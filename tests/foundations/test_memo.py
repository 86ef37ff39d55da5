"""The matcher's caches are bounded by RIDERCRM_MATCH_CACHE_ENTRIES (docs/decisions.md, "Bounded caches")."""

from __future__ import annotations

import datetime as dt
import functools
import gc
from collections.abc import Iterator

import pytest

from ridercrm import memo
from ridercrm.app import create_app
from ridercrm.config import Settings
from ridercrm.matching import compare, nicknames, score
from ridercrm.people import normalize
from ridercrm.people.identity import Identity


@pytest.fixture
def restore() -> Iterator[None]:
    yield
    memo.resize(memo.DEFAULT_ENTRIES)


def test_a_worker_keeps_no_more_names_than_the_setting_allows(restore: None) -> None:
    create_app(Settings(database_url="sqlite://", match_cache_entries=50))
    for n in range(500):
        name = f"name{n}"
        normalize.name_tokens(name)
        nicknames._family(name)
        compare._sounds(name)
    assert normalize.name_tokens.cache_info().currsize == 50
    assert nicknames._family.cache_info().currsize == 50
    assert compare._sounds.cache_info().currsize == 100


def test_a_cached_function_answers_as_the_function_does(restore: None) -> None:
    memo.resize(2)
    names = ["O'Brien", "Nguyen-Tran", "  ÉLODIE  ", "O'Brien", "", None]
    assert [normalize.name_tokens(n) for n in names] == [
        normalize.name_tokens.__wrapped__(n) for n in names
    ]


def _ridercrm_caches() -> dict[str, functools._lru_cache_wrapper[object]]:
    """Every ``functools`` cache of a ridercrm function alive in this process."""
    return {
        f"{cache.__module__}.{cache.__qualname__}": cache
        for cache in gc.get_objects()
        if isinstance(cache, functools._lru_cache_wrapper)
        and str(getattr(cache, "__module__", "")).startswith("ridercrm.")
    }


def test_never_seen_names_and_dates_fill_no_cache_beyond_the_setting(restore: None) -> None:
    """Every query brings new names and a new birth date; whatever the comparisons keep
    is bounded by RIDERCRM_MATCH_CACHE_ENTRIES (issue 23: a worker's memory stays flat)."""
    create_app(Settings(database_url="sqlite://", match_cache_entries=50))
    before = {name: cache.cache_info().currsize for name, cache in _ridercrm_caches().items()}
    stored = Identity.of(
        first_name="Alexandra", last_name="Konstantinidis", date_of_birth=dt.date(1980, 1, 2)
    )
    for n in range(600):
        letters = "".join(chr(ord("a") + int(digit)) for digit in f"{n:03d}")
        query = Identity.of(  # names far from the stored ones: every level is tried
            first_name=f"Quinton{letters}",
            last_name=f"Whitfield{letters}",
            date_of_birth=dt.date(1950, 1, 1) + dt.timedelta(days=37 * n),
        )
        score.levels(query, stored)
    grew = {
        name: cache.cache_info().currsize
        for name, cache in _ridercrm_caches().items()
        if cache.cache_info().currsize > before.get(name, 0)
    }
    assert {"ridercrm.matching.compare._ocr_fold_long", "ridercrm.matching.compare._digits"} <= set(
        grew
    )
    assert all(size <= 2 * 50 for size in grew.values()), grew
