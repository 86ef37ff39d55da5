"""Bounded caches of pure functions, sized by one setting.

The matcher normalises and compares the same names again and again, so a few pure
functions keep their answers (``functools.lru_cache`` underneath). Each cache is
bounded: ``RIDERCRM_MATCH_CACHE_ENTRIES`` sets the entries a name cache keeps, and the
memory they take together when full is documented in the README ("Memory"). A worker's
memory grows while they fill and then stays flat (docs/decisions.md, "Bounded caches").

``create_app`` calls :func:`resize` with the configured size; a command-line process keeps
the default. Resizing empties a cache.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any, Generic, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

DEFAULT_ENTRIES = 4096


class Memo(Generic[P, R]):
    """``fn`` with its answers kept for ``share`` times the configured entries (at least 1)."""

    def __init__(self, fn: Callable[P, R], share: float) -> None:
        self.fn, self.share = fn, share
        self.call: Callable[P, R] = fn
        self.resize(DEFAULT_ENTRIES)
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.call(*args, **kwargs)

    def resize(self, entries: int) -> None:
        self.maxsize = max(1, int(entries * self.share))
        self.call = lru_cache(maxsize=self.maxsize)(self.fn)

    def cache_clear(self) -> None:
        self.call.cache_clear()  # type: ignore[attr-defined]

    def cache_info(self) -> Any:
        return self.call.cache_info()  # type: ignore[attr-defined]


_ALL: list[Memo[..., object]] = []


def memo(share: float = 1.0) -> Callable[[Callable[P, R]], Memo[P, R]]:
    """Decorate a pure function with a bounded cache: ``share`` of the configured entries."""

    def decorate(fn: Callable[P, R]) -> Memo[P, R]:
        cached = Memo(fn, share)
        _ALL.append(cached)  # type: ignore[arg-type]
        return cached

    return decorate


def resize(entries: int) -> None:
    """Bound every cache to its share of ``entries`` (RIDERCRM_MATCH_CACHE_ENTRIES)."""
    for cached in _ALL:
        if cached.maxsize != max(1, int(entries * cached.share)):
            cached.resize(entries)
