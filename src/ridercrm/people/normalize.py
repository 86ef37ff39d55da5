"""Normalisation of identifying values before comparison (docs/decisions.md, "Operations 3 and 4 (matching)"). Pure functions."""

from __future__ import annotations

import re
import unicodedata

import phonenumbers

from ridercrm.memo import memo
from ridercrm.people.greek import greek_to_latin, settled_prefix

DEFAULT_REGION = "AU"

_NOT_WORD = re.compile(r"[^\w\s]")
_APOSTROPHES = re.compile("['\u2019`\u00b4]")  # ' and its typographic look-alikes
_SEPARATORS = re.compile("[-\u2010\u2011\u2013\u2014_./,&]")  # hyphens and dashes
_SPACES = re.compile(r"\s+")
_NON_ALNUM = re.compile(r"[^0-9A-Za-z]")
_PHONE_NOISE = re.compile(r"[\s().\-/]")

STREET_TYPES = {
    "st": "street", "str": "street", "rd": "road", "ave": "avenue", "av": "avenue",
    "ct": "court", "crt": "court", "cres": "crescent", "cr": "crescent", "cresc": "crescent",
    "pde": "parade", "dr": "drive", "drv": "drive", "pl": "place", "hwy": "highway",
    "tce": "terrace", "bvd": "boulevard", "blvd": "boulevard", "cct": "circuit", "ln": "lane",
    "gr": "grove", "gve": "grove", "cl": "close", "esp": "esplanade", "sq": "square",
    "wy": "way", "mt": "mount", "nth": "north", "sth": "south", "apt": "unit", "u": "unit",
}  # fmt: skip

STATES = {
    "vic": "VIC", "victoria": "VIC", "nsw": "NSW", "new south wales": "NSW",
    "qld": "QLD", "queensland": "QLD", "sa": "SA", "south australia": "SA",
    "wa": "WA", "western australia": "WA", "tas": "TAS", "tasmania": "TAS",
    "nt": "NT", "northern territory": "NT", "act": "ACT",
    "australian capital territory": "ACT",
}  # fmt: skip


def strip_accents(text: str) -> str:
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


@memo()
def name_tokens(text: str | None) -> tuple[str, ...]:
    """A name as lower-case ASCII words: accents, case and punctuation gone, Greek
    letters in Latin ones (``greek_to_latin``).

    Apostrophes join (O'Brien -> obrien); hyphens and other separators split
    (Nguyen-Tran -> nguyen tran), so compound surnames compare word by word.
    """
    if not text:
        return ()
    folded = greek_to_latin(strip_accents(text).casefold())
    folded = _APOSTROPHES.sub("", folded)
    folded = _SEPARATORS.sub(" ", folded)
    folded = _NOT_WORD.sub("", folded)
    return tuple(folded.split())


SEARCH_LENGTH = 255
"""The longest stored search form of a name (``people.*_name_search``)."""


def name_search(text: str | None) -> str | None:
    """A name as the staff's name-prefix search reads it, stored beside the name: case
    and accents gone and Greek letters in Latin ones, as :func:`name_tokens` reads them
    (Παπαδόπουλος -> papadopoulos, Zoë -> zoe), every other character kept (O'Brien ->
    o'brien: a prefix typed with a character the name lacks finds nobody), spaces
    collapsed; None when blank. A search's words are read the same way, so a prefix in
    Latin or Greek letters finds names written in either."""
    if not text:
        return None
    folded = greek_to_latin(strip_accents(text).casefold())
    return " ".join(folded.split())[:SEARCH_LENGTH] or None


def search_words(text: str | None) -> list[str]:
    """The words of a typed name-prefix search, each read as :func:`name_search` reads
    a stored name; of a word in Greek letters, only the letters whose Latin spelling the
    next one does not decide (``greek.settled_prefix``: Sigma-Tau-Alpha-Upsilon is "sta",
    as Stavros is stored)."""
    words = []
    for word in strip_accents(text or "").casefold().split():
        if searched := name_search(settled_prefix(word)):
            words.append(searched)
    return words


def name(text: str | None) -> str:
    """A name as one comparable string: its words joined without spaces."""
    return "".join(name_tokens(text))


def email(text: str | None) -> str | None:
    """E-mail addresses compare case-insensitively and without surrounding space."""
    if not text:
        return None
    value = text.strip().lower()
    return value or None


def phone(text: str | None, region: str = DEFAULT_REGION) -> str | None:
    """A phone number in E.164 (0412 345 678 -> +61412345678), or None if it is not one.

    The common Australian forms are read directly; anything else goes through
    phonenumbers, which agrees on those forms (a test checks it) but costs ~20 µs.
    """
    if not text:
        return None
    compact = _PHONE_NOISE.sub("", text)
    if region == "AU":
        if len(compact) == 10 and compact[0] == "0" and compact[1] in "23478" and compact.isdigit():
            return "+61" + compact[1:]
        if (
            len(compact) == 12
            and compact.startswith("+61")
            and compact[3] in "23478"
            and compact[1:].isdigit()
        ):
            return compact
    return _phone_slow(text, region)


def _phone_slow(text: str, region: str) -> str | None:
    try:
        parsed = phonenumbers.parse(text, region)
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_possible_number(parsed):
        return None
    return phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.E164)


def licence(text: str | None) -> str | None:
    """Licence numbers compare as upper-case letters and digits only."""
    if not text:
        return None
    value = _NON_ALNUM.sub("", strip_accents(text)).upper()
    return value or None


def street(text: str | None) -> str | None:
    """A street address with its abbreviations spelled out (12 Main St -> 12 main street)."""
    if not text:
        return None
    words = _NOT_WORD.sub(" ", strip_accents(text).casefold().replace("/", " ")).split()
    expanded = [STREET_TYPES.get(word, word) for word in words]
    return " ".join(expanded) or None


def city(text: str | None) -> str | None:
    """A suburb or town as lower-case letters without spaces (Mount Isa -> mountisa)."""
    if not text:
        return None
    words = _NOT_WORD.sub(" ", strip_accents(text).casefold()).split()
    return "".join(STREET_TYPES.get(word, word) for word in words) or None


def state(text: str | None) -> str | None:
    """A state or territory as its code (Victoria -> VIC); other text folded."""
    if not text:
        return None
    folded = _SPACES.sub(" ", _NOT_WORD.sub(" ", text.casefold())).strip()
    return STATES.get(folded, folded.upper() or None)


def postcode(text: object) -> str | None:
    """A postcode as 4 digits, or None when it is not one."""
    if isinstance(text, int) and not isinstance(text, bool) and 200 <= text <= 9999:
        return f"{text:04d}"
    if isinstance(text, str):
        value = text.strip()
        if len(value) == 4 and value.isdigit():
            return value
    return None
