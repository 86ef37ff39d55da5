"""Blocking keys: how candidates are found without scanning the people table.

Every person stores a handful of 64-bit keys, each the hash of one identifying
value or combination: e-mail; each phone; licence; family-name sound with date of
birth and given-name sound with date of birth; date of birth with postcode; date of
birth with the start of the street's name; both name sounds in either order; family-name sound
with postcode and with the street's name; the street's name with postcode. A query computes the same keys (plus
its date of birth with day and month swapped) and looks them up in one indexed
query. Any two damaged fields leave a key intact (tests/matching/test_scoring.py).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterable

import jellyfish

from ridercrm.people import normalize
from ridercrm.people.identity import Identity

__all__ = ["Identity", "query_key_tiers", "query_keys", "stored_keys"]


_blake2b = hashlib.blake2b  # bound once: _hash runs 8 times per imported person
_from_bytes = int.from_bytes


def _hash(text: str) -> int:
    digest = _blake2b(text.encode(), digest_size=8).digest()
    return _from_bytes(digest, "big", signed=True)


def _sound(tokens: tuple[str, ...]) -> str | None:
    joined = "".join(tokens)
    return jellyfish.metaphone(joined) if joined else None


_STREET_NOISE = frozenset(("unit", "flat", "shop", "level", "lot"))


def _street_word(identity: Identity) -> str | None:
    """The first five letters of the street's name: survive a typo or a split word later on.

    ``6 meredith c ircuit``, ``meredith circuit`` and ``meredithcircuit`` all give ``mered``.
    """
    if not identity.street:
        return None
    letters = "".join(
        word for word in identity.street.split() if word.isalpha() and word not in _STREET_NOISE
    )
    return letters[:5] if len(letters) >= 3 else None


def _key_texts(identity: Identity, dates: Iterable[dt.date]) -> set[str]:
    # Any two damaged fields among given name, family name, date of birth, postcode and
    # street leave at least one key whole: every three of those fields hold a key.
    texts: set[str] = set()
    if identity.email:
        texts.add("e|" + identity.email)
    texts.update("p|" + phone for phone in identity.phones)
    if identity.licence:
        texts.add("l|" + identity.licence)
    last, first = _sound(identity.last), _sound(identity.first)
    street = _street_word(identity)
    postcode = identity.postcode
    for date in dates:
        iso = date.isoformat()
        if last:
            texts.add(f"nd|{last}|{iso}")
        if first:
            texts.add(f"nd|{first}|{iso}")
        if postcode:
            texts.add(f"dp|{iso}|{postcode}")
        if street:
            texts.add(f"ds|{iso}|{street}")
    if first and last:
        # Both sounds, in either order (swapped names); common pairs are capped at lookup.
        texts.add(f"nn|{'|'.join(sorted((first, last)))}")
    if last and street:
        # date of birth and postcode both damaged: the family name at the same street
        texts.add(f"ns|{last}|{street}")
    if postcode:
        if last:
            texts.add(f"np|{last}|{postcode}")
        if street:
            texts.add(f"sp|{street}|{postcode}")
    return texts


def email_key(text: str | None) -> int | None:
    """The key of one e-mail address (admin search), or None if there is none."""
    value = normalize.email(text)
    return _hash("e|" + value) if value else None


def phone_key(text: str | None) -> int | None:
    """The key of one phone number (admin search), or None if it is not a phone number."""
    value = normalize.phone(text)
    return _hash("p|" + value) if value else None


def stored_keys(identity: Identity) -> set[int]:
    """The keys a person is stored under."""
    dates = [identity.date_of_birth] if identity.date_of_birth else []
    return {_hash(text) for text in _key_texts(identity, dates)}


def query_keys(identity: Identity) -> set[int]:
    """The keys to look a query up by: the stored keys plus a day/month-swapped birth date."""
    return {_hash(text) for text in _query_key_texts(identity)}


# The keys of the identifiers: e-mail, phones and licence. A person who shares none of
# them with a query has none of those values the same as the query's.
IDENTIFIER_KEYS = ("e|", "p|", "l|")


def query_key_tiers(identity: Identity) -> tuple[set[int], set[int]]:
    """``query_keys`` in two parts: the identifiers' keys, and all the others.

    The matcher reads the first part and only then, when the people it found cannot
    settle the answer, the second (docs/decisions.md, "Matching speed (issue 11, 2026-11-22)").
    """
    identifiers: set[int] = set()
    others: set[int] = set()
    for text in _query_key_texts(identity):
        (identifiers if text.startswith(IDENTIFIER_KEYS) else others).add(_hash(text))
    return identifiers, others


def _query_key_texts(identity: Identity) -> set[str]:
    dates: list[dt.date] = []
    if identity.date_of_birth:
        dates.append(identity.date_of_birth)
        swapped = _swap_day_month(identity.date_of_birth)
        if swapped:
            dates.append(swapped)
    return _key_texts(identity, dates)


def _swap_day_month(date: dt.date) -> dt.date | None:
    if date.day > 12 or date.day == date.month:
        return None
    return date.replace(month=date.day, day=date.month)
