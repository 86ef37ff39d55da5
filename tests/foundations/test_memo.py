"""The matcher's caches are bounded by RIDERCRM_MATCH_CACHE_ENTRIES (docs/decisions.md, "Bounded caches")."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ridercrm import memo
from ridercrm.app import create_app
from ridercrm.config import Settings
from ridercrm.matching import compare, nicknames
from ridercrm.people import normalize


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
