"""Kinds of damage: what a FEBRL duplicate changed in its original, field by field.

Each field of the duplicate is compared with the original's, after folding case and
collapsing spaces, and gets one label (none when it agrees):

- names (given name, surname): ``swapped`` (the two name fields exchanged, each within a
  slip), ``missing``, ``spaces`` (equal once spaces are removed), ``1 slip`` (one insert,
  delete, substitution or transposition: Damerau-Levenshtein 1), ``2+ slips`` (more
  edits, still alike: Jaro-Winkler >= 0.8 or the same Soundex code), ``replaced``
  (another name outright);
- date of birth (YYYYMMDD): ``missing``, ``year only`` (month and day agree),
  ``1 digit``, ``2 digits``, ``transposed`` (two digits exchanged), ``day and month
  swapped``, ``replaced`` (three or more digits: another date);
- postcode: ``missing``, ``1 slip`` (one digit changed, or two adjacent exchanged),
  ``different``;
- street, suburb: ``missing``, ``spaces``, ``typo`` (Damerau-Levenshtein <= 2),
  ``different``; the street also ``number missing`` / ``number changed``;
- state: ``different``/``missing``; licence (soc_sec_id): ``missing``, ``1 digit``,
  ``2+ digits``.

A duplicate's kinds are its ``field: label`` pairs; its size is how many fields changed.
"""

from __future__ import annotations

from dataclasses import dataclass

import jellyfish
from rapidfuzz.distance import DamerauLevenshtein, JaroWinkler

NAME_FIELDS = ("given_name", "surname")
FIELD_TITLES = {
    "given_name": "given name",
    "surname": "surname",
    "names": "names",
    "date_of_birth": "date of birth",
    "postcode": "postcode",
    "street": "street",
    "suburb": "suburb",
    "state": "state",
    "soc_sec_id": "licence",
}


@dataclass(frozen=True)
class Record:
    """One FEBRL record, folded: lower case, single spaces, '' for a missing value."""

    rec_id: str
    given_name: str
    surname: str
    street_number: str
    address_1: str
    address_2: str
    suburb: str
    postcode: str
    state: str
    date_of_birth: str  # YYYYMMDD as FEBRL writes it (maybe not a valid date)
    soc_sec_id: str

    @property
    def street(self) -> str:
        return " ".join(p for p in (self.street_number, self.address_1, self.address_2) if p)


def fold(value: object) -> str:
    """Lower case, single spaces; '' for None, NaN and blanks."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return " ".join(str(value).lower().split())


def _slips(a: str, b: str) -> int:
    return int(DamerauLevenshtein.distance(a, b))


def name_change(dup: str, org: str) -> str | None:
    """How a name differs from the original's (None when equal)."""
    if dup == org:
        return None
    if not dup:
        return "missing"
    if not org:
        return "added"
    if dup.replace(" ", "") == org.replace(" ", ""):
        return "spaces"
    slips = _slips(dup, org)
    if slips == 1:
        return "1 slip"
    alike = JaroWinkler.similarity(dup, org) >= 0.8 or jellyfish.soundex(dup) == jellyfish.soundex(
        org
    )
    return "2+ slips" if alike else "replaced"


def _close(a: str, b: str) -> bool:
    return bool(a) and bool(b) and (a == b or _slips(a, b) <= 1)


def swapped(dup: Record, org: Record) -> bool:
    """Given name and surname exchanged (each within one slip)."""
    return (
        dup.given_name != org.given_name
        and _close(dup.given_name, org.surname)
        and _close(dup.surname, org.given_name)
    )


def date_change(dup: str, org: str) -> str | None:
    if dup == org:
        return None
    if not dup:
        return "missing"
    if not org:
        return "added"
    if len(dup) != len(org):
        return "replaced"
    if len(dup) == 8 and dup[:4] == org[:4] and dup[4:6] == org[6:] and dup[6:] == org[4:6]:
        return "day and month swapped"
    differ = [i for i, (a, b) in enumerate(zip(dup, org, strict=True)) if a != b]
    if len(differ) == 2 and dup[differ[0]] == org[differ[1]] and dup[differ[1]] == org[differ[0]]:
        return "transposed"
    if all(i < 4 for i in differ):
        return "year only"
    if len(differ) == 1:
        return "1 digit"
    return "2 digits" if len(differ) == 2 else "replaced"


def text_change(dup: str, org: str) -> str | None:
    if dup == org:
        return None
    if not dup:
        return "missing"
    if not org:
        return "added"
    if dup.replace(" ", "") == org.replace(" ", ""):
        return "spaces"
    return "typo" if _slips(dup, org) <= 2 else "different"


def postcode_change(dup: str, org: str) -> str | None:
    label = text_change(dup, org)
    if label in ("typo", "spaces"):
        return "1 slip" if _slips(dup, org) <= 1 else "different"
    return label


def street_change(dup: Record, org: Record) -> str | None:
    if dup.street == org.street:
        return None
    rest_dup = " ".join(p for p in (dup.address_1, dup.address_2) if p)
    rest_org = " ".join(p for p in (org.address_1, org.address_2) if p)
    if rest_dup == rest_org:
        if not dup.street_number:
            return "number missing"
        return "number changed"
    return text_change(dup.street, org.street)


def digits_change(dup: str, org: str) -> str | None:
    if dup == org:
        return None
    if not dup:
        return "missing"
    if not org:
        return "added"
    return "1 digit" if _slips(dup, org) <= 1 else "2+ digits"


def changes(dup: Record, org: Record) -> dict[str, str]:
    """Field -> label for every field the duplicate changed."""
    found: dict[str, str] = {}
    if swapped(dup, org):
        found["names"] = "swapped"
    else:
        for name in NAME_FIELDS:
            label = name_change(getattr(dup, name), getattr(org, name))
            if label:
                found[name] = label
    checks = {
        "date_of_birth": date_change(dup.date_of_birth, org.date_of_birth),
        "postcode": postcode_change(dup.postcode, org.postcode),
        "street": street_change(dup, org),
        "suburb": text_change(dup.suburb, org.suburb),
        "state": text_change(dup.state, org.state),
        "soc_sec_id": digits_change(dup.soc_sec_id, org.soc_sec_id),
    }
    found.update({field: label for field, label in checks.items() if label})
    return found


def kinds(found: dict[str, str]) -> list[str]:
    """The duplicate's kinds of damage as "field: label" (or "none")."""
    if not found:
        return ["none"]
    return [f"{FIELD_TITLES[field]}: {label}" for field, label in sorted(found.items())]


def size(found: dict[str, str]) -> str:
    """How many fields changed, as a kind: "1 field", "2 fields", "3+ fields"."""
    count = len(found) + (1 if "names" in found else 0)  # a swap changes two fields
    if count == 0:
        return "0 fields"
    return "1 field" if count == 1 else ("2 fields" if count == 2 else "3+ fields")


ADDRESS = ("postcode", "street", "suburb")
SLIGHT = {"spaces", "1 slip", "2+ slips", "typo", "number missing", "number changed"}
SLIGHT_DATE = {"1 digit", "transposed", "day and month swapped"}
CEILINGS = ("strict", "slips allowed", "any")


def guard_ceiling_case(found: dict[str, str], reading: str = "strict") -> bool:
    """Given name replaced outright while surname, date of birth and address agree: such a
    duplicate cannot be told from a stored person's unstored twin without the licence.

    ``reading``: "strict", the other fields exactly equal; "slips allowed", surname and
    address within slips and the date within one digit, a transposition or a day/month
    swap (a twin's record with a typo); "any", whatever else changed, the surname not
    replaced (then it is an unstored relative: a twin, or a sibling when the date differs).
    """
    if found.get("given_name") != "replaced" or "names" in found:
        return False
    if reading == "strict":
        return not any(field in found for field in ("surname", "date_of_birth", *ADDRESS))
    if reading == "any":
        return found.get("surname") not in ("replaced", "missing")
    return (
        found.get("surname", "spaces") in SLIGHT
        and found.get("date_of_birth", "1 digit") in SLIGHT_DATE
        and all(found.get(field, "typo") in SLIGHT for field in ADDRESS)
    )
