"""Given names that are the same person's name: formal names and their nicknames.

Two sources, read on first use (not at import):

- the `nicknames` package (Old Dominion University's maintained list of English given
  names and their diminutives);
- ``name_variants.csv`` beside this module: short and anglicised forms of the names of
  the communities the business serves (Greek, Italian, Arabic, Indian, Chinese,
  Filipino) and Australian diminutives, which the package lacks, each pair with its
  source. No maintained package of these exists on PyPI
  (docs/decisions.md, "Matching on real CRM traffic").

Truncations (Sukh/Sukhdeep, Sid/Siddharth) are not listed: ``compare`` has a level for
them. Names are lower-case ASCII, as ``normalize.name`` makes them.
"""

from __future__ import annotations

import csv
from functools import cache
from importlib import resources

from nicknames import NickNamer

from ridercrm.memo import memo


@cache
def _namer() -> NickNamer:
    return NickNamer()


@cache
def variants() -> dict[str, frozenset[str]]:
    """name -> the names ``name_variants.csv`` pairs it with (both directions)."""
    found: dict[str, set[str]] = {}
    text = resources.files("ridercrm.matching").joinpath("name_variants.csv").read_text()
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    for row in csv.DictReader(lines):
        formal, short = row["formal"].strip(), row["short"].strip()
        found.setdefault(formal, set()).add(short)
        found.setdefault(short, set()).add(formal)
    return {name: frozenset(names) for name, names in found.items()}


@memo()
def _family(name: str) -> frozenset[str]:
    """The name, its formal names and their diminutives."""
    namer, extra = _namer(), variants()
    formal = {name} | namer.canonicals_of(name) | extra.get(name, frozenset())
    family = set(formal)
    for each in formal:
        family |= namer.nicknames_of(each) | extra.get(each, frozenset())
    return frozenset(family)


def same_name_family(first: str, second: str) -> bool:
    """Whether one normalised given name is a nickname or formal form of the other."""
    if first == second:
        return True
    return second in _family(first) or first in _family(second)
