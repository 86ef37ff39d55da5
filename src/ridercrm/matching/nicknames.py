"""Given names that are the same person's name: formal names and their nicknames.

The families come from the `nicknames` package (Old Dominion University's maintained
list of English given names and their diminutives), plus the Australian diminutives
and the Greek, Italian, Arabic and Asian short forms common in Australia it lacks. Names are lower-case ASCII, as
``normalize.name`` makes them.
"""

from __future__ import annotations

from functools import lru_cache

from nicknames import NickNamer

# Formal name -> diminutives the nicknames package does not know (checked against
# version 1.0.1: none of these pairs is in it).
AUSTRALIAN: dict[str, tuple[str, ...]] = {
    "david": ("davo",),
    "lachlan": ("lachie", "lachy", "lockie"),
    "joshua": ("josh",),
    "catherine": ("cat",),
    "sharon": ("shazza", "shaz"),
    "gary": ("gazza", "gaz"),
    "garry": ("gazza", "gaz"),
    "barry": ("bazza", "baz"),
    "robert": ("robbo",),
    "thomas": ("thommo", "tommo"),
    "john": ("johnno", "jonno"),
    "jonathan": ("jono", "jonno"),
    "stephen": ("stevo",),
    "steven": ("stevo",),
    "damien": ("damo",),
    "dean": ("deano",),
    "kerry": ("kezza",),
    "terry": ("tezza",),
    "terence": ("tezza", "tel"),
    "warren": ("wazza", "waz"),
    "harry": ("hazza",),
    "lauren": ("lozza",),
    "laura": ("lozza",),
    "maurice": ("mozza", "mo"),
    "nicholas": ("nicko", "nico"),
    "benjamin": ("benno",),
    "mark": ("marko",),
    "michael": ("macca", "micko"),
    "sarah": ("sazza",),
    "karen": ("kazza",),
    "darren": ("dazza",),
    "daryl": ("dazza",),
    "carol": ("cazza",),
    "christopher": ("chrisso", "topher"),
    "jeremy": ("jez",),
    "kirsten": ("kirsty", "kirstie"),
    "maxwell": ("max",),
    "tobias": ("toby",),
    "annabelle": ("anna", "bella", "belle"),
    "sebastian": ("seb",),
    # Greek, Italian, Arabic and other community forms common in Australia
    "panagiotis": ("panos", "peter", "takis"),
    "dimitrios": ("jim", "jimmy", "dimi", "mitsos"),
    "konstantinos": ("con", "kosta", "dean"),
    "georgios": ("george",),
    "vasilios": ("bill", "vasili"),
    "salvatore": ("sal", "toto"),
    "giuseppe": ("joe", "pino", "beppe"),
    "giovanni": ("john", "gianni"),
    "francesco": ("frank", "franco"),
    "mohammed": ("mo", "moe"),
    "muhammad": ("mo", "moe"),
    "mohamed": ("mo", "moe"),
    "madeleine": ("maddie", "maddy"),
    "madeline": ("maddie", "maddy"),
    "rajesh": ("raj",),
    "venkatesh": ("venky", "venkat"),
    "srinivas": ("srini",),
    "priyanka": ("priya",),
    "xiaoming": ("ming",),
    "lakshmi": ("laxmi",),
}

_NAMER = NickNamer()
_EXTRA: dict[str, set[str]] = {}
for _formal, _short in AUSTRALIAN.items():
    for _name in _short:
        _EXTRA.setdefault(_formal, set()).add(_name)
        _EXTRA.setdefault(_name, set()).add(_formal)


@lru_cache(maxsize=65536)
def _family(name: str) -> frozenset[str]:
    """The name, its formal names and their diminutives."""
    formal = {name} | _NAMER.canonicals_of(name) | _EXTRA.get(name, set())
    family = set(formal)
    for each in formal:
        family |= _NAMER.nicknames_of(each) | _EXTRA.get(each, set())
    return frozenset(family)


def same_name_family(first: str, second: str) -> bool:
    """Whether one normalised given name is a nickname or formal form of the other."""
    if first == second:
        return True
    return second in _family(first) or first in _family(second)
