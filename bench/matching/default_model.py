"""Re-estimate fields of the shipped default model on FEBRL 1-3 (never FEBRL 4).

``ridercrm match train``'s own estimator (``matching/training.py``: u from random pairs,
m by EM over blocked pairs, no labels) run on every FEBRL 1-3 record, originals and
duplicates together, as the shipped default was made. Prints the named fields' m and u;
``--write`` puts them into ``src/ridercrm/matching/default_model.json`` (the other fields
keep theirs, some of which are set by hand: see its note).

    .venv/bin/python -m bench.matching.default_model --fields street [--write]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

from ridercrm.matching.keys import Identity

from bench.matching import febrl_data
from bench.matching.febrl_data import iso_date, postcode, title
from ridercrm.matching.training import train

MODEL = Path(__file__).resolve().parents[2] / "src/ridercrm/matching/default_model.json"


def identities() -> list[Identity]:
    people = []
    for number in (1, 2, 3):
        originals, duplicates = febrl_data.load(number)
        for record in [*originals, *duplicates]:
            born = iso_date(record.date_of_birth)
            people.append(
                Identity.of(
                    first_name=title(record.given_name) or None,
                    last_name=title(record.surname) or None,
                    date_of_birth=dt.date.fromisoformat(born) if born else None,
                    email=None,
                    phones=(),
                    drivers_license=record.soc_sec_id or None,
                    street=title(record.street) or None,
                    postcode=postcode(record.postcode),
                    city=title(record.suburb) or None,
                )
            )
    return people


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fields", nargs="+", required=True)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    model = train(identities(), seed=0)
    data = json.loads(MODEL.read_text())
    for name in args.fields:
        levels = {
            level: [round(m, 5), float(f"{u:.5g}")] for level, (m, u) in model.levels[name].items()
        }
        print(name, levels)
        data["levels"][name] = levels
    if args.write:
        MODEL.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
