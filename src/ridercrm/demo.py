"""A demo data set: the products of every course location, a few hundred people and
courses in every status at every location around today.

Generated from a seed (no data files, no network), so every load is the same but for
the courses' dates. People go through the importer's validation and row building, like
any imported person. The README's examples use the records of demo_courses.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator
from itertools import chain
from typing import Any, cast

from sqlalchemy import Table, insert, select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.courses.models import Asset, AssetStatusChange
from ridercrm.db import chunks, session_scope, utcnow
from ridercrm.demo_courses import (
    ANN,
    BEN,
    BOOKED_COURSE,
    CHLOE,
    CHLOE_AGAIN,
    LIAM,
    README_DUPLICATE,
    README_PEOPLE,
    DemoProduct,
    demo_courses,
    product_id,
)
from ridercrm.fields import COURSE_LOCATIONS, LEAD_SOURCES, display_name
from ridercrm.people.models import CONTACT, LEAD, Person
from ridercrm.products.models import Product
from ridercrm.transfer.rows import (
    PEOPLE_TABLE,
    PERSON_KEYS_TABLE,
    PERSON_RULES,
    PRODUCT_RULES,
    PRODUCTS_TABLE,
    person_rows,
    product_row,
)

ASSETS_TABLE = cast(Table, Asset.__table__)
HISTORY_TABLE = cast(Table, AssetStatusChange.__table__)

DEMO_SEED = 20261120
DEMO_PEOPLE = 300

# Course types: code, name, price in VIC, NSW and QLD (AUD).
COURSE_TYPES = (
    ("LAP", "Learner Approved Pre-Licence", {"VIC": "249.00", "NSW": "209.00", "QLD": "229.00"}),
    ("LT", "Licence Test", {"VIC": "379.00", "NSW": "339.00", "QLD": "359.00"}),
)
# Course location (the interface's spelling): product code suffix, state, nearby suburbs.
LOCATIONS: dict[str, tuple[str, str, tuple[tuple[str, str], ...]]] = {
    "somerton": ("SOM", "VIC", (("Somerton", "3062"), ("Craigieburn", "3064"),
                                ("Roxburgh Park", "3064"), ("Broadmeadows", "3047"),
                                ("Epping", "3076"), ("Coburg", "3058"))),
    "tullamarine": ("TUL", "VIC", (("Tullamarine", "3043"), ("Gladstone Park", "3043"),
                                   ("Sunbury", "3429"), ("Essendon", "3040"),
                                   ("Keilor", "3036"), ("Melbourne", "3000"))),
    "kilsyth": ("KIL", "VIC", (("Kilsyth", "3137"), ("Ringwood", "3134"), ("Croydon", "3136"),
                               ("Bayswater", "3153"), ("Lilydale", "3140"), ("Box Hill", "3128"))),
    "st ives": ("STI", "NSW", (("St Ives", "2075"), ("Hornsby", "2077"), ("Chatswood", "2067"),
                               ("Pymble", "2073"), ("Dee Why", "2099"), ("Parramatta", "2150"))),
    "slacks creek": ("SLC", "QLD", (("Slacks Creek", "4127"), ("Logan Central", "4114"),
                                    ("Springwood", "4127"), ("Beenleigh", "4207"),
                                    ("Browns Plains", "4118"))),
    "ipswitch": ("IPS", "QLD", (("Ipswich", "4305"), ("Springfield", "4300"), ("Goodna", "4300"),
                                ("Redbank Plains", "4301"), ("Booval", "4304"))),
    "Toowoomba": ("TWB", "QLD", (("Toowoomba City", "4350"), ("Highfields", "4352"),
                                 ("Harristown", "4350"), ("Gatton", "4343"), ("Dalby", "4405"))),
}  # fmt: skip
# A few people from further away (Darwin's postcode has a leading zero).
ELSEWHERE = (
    ("Darwin", "0800", "NT"),
    ("Hobart", "7000", "TAS"),
    ("Adelaide", "5000", "SA"),
    ("Perth", "6000", "WA"),
    ("Canberra", "2600", "ACT"),
)
AREA_CODES = {"VIC": "03", "TAS": "03", "NSW": "02", "ACT": "02", "QLD": "07"}

FIRST_NAMES = (
    "Jack", "Oliver", "William", "Noah", "Thomas", "James", "Lucas", "Henry", "Liam",
    "Ethan", "Joshua", "Lachlan", "Mason", "Cooper", "Riley", "Samuel", "Benjamin", "Daniel",
    "Matthew", "Michael", "Christopher", "Alexander", "Aiden", "Harrison", "Nathan", "Ryan",
    "Charlotte", "Olivia", "Amelia", "Isla", "Mia", "Ava", "Grace", "Chloe", "Sophie",
    "Emily", "Ella", "Zoe", "Ruby", "Jessica", "Katherine", "Samantha", "Rebecca", "Elizabeth",
    "Hannah", "Georgia", "Sarah", "Emma", "Priya", "Arjun", "Wei", "Mei", "Minh", "Linh",
    "Mohammed", "Fatima", "Giorgos", "Eleni", "Luca", "Giulia", "Tane", "Aroha", "Siddharth",
    "Zara", "Connor", "Declan", "Siobhan", "Bridget",
)  # fmt: skip
LAST_NAMES = (
    "Smith", "Jones", "Williams", "Brown", "Wilson", "Taylor", "Johnson", "White", "Martin",
    "Anderson", "Thompson", "Nguyen", "Tran", "Le", "Pham", "Thomas", "Walker", "Harris",
    "Lee", "Ryan", "Robinson", "Kelly", "King", "Davis", "Wright", "Evans", "Roberts",
    "Green", "Hall", "Wood", "Jackson", "Clarke", "Patel", "Singh", "Sharma", "Chen", "Wang",
    "Li", "Zhang", "Papadopoulos", "Nikolaidis", "Rossi", "Russo", "Costa", "Murphy",
    "O'Brien", "O'Connor", "McDonald", "Campbell", "Stewart", "Mitchell", "Hughes",
    "Edwards", "Turner", "Hill", "Scott", "Young", "Morris", "Cook", "Bailey", "Ahmed",
    "Hussain", "Kaur", "Nair", "Fernando", "Silva", "Horvat", "Kowalski", "Van der Berg",
)  # fmt: skip
NICKNAMES = {
    "William": "Will", "Thomas": "Tom", "Benjamin": "Ben", "Daniel": "Dan", "Matthew": "Matt",
    "Michael": "Mick", "Christopher": "Chris", "Alexander": "Alex", "Joshua": "Josh",
    "Samuel": "Sam", "Jessica": "Jess", "Katherine": "Kate", "Samantha": "Sam",
    "Rebecca": "Bec", "Elizabeth": "Liz", "Charlotte": "Charlie",
}  # fmt: skip
STREET_NAMES = (
    "Main", "High", "Station", "Church", "Victoria", "Albert", "King", "Queen", "George",
    "Elizabeth", "Park", "Railway", "Bridge", "Mountain View", "Banksia", "Wattle",
    "Acacia", "Jacaranda", "Bottlebrush", "Waratah", "Hume", "Pacific", "Gympie", "Logan",
)  # fmt: skip
STREET_TYPES = ("St", "Rd", "Ave", "Cres", "Ct", "Dr", "Pde", "Way", "Pl", "Street", "Road")
DOMAINS = ("example.com", "example.net", "example.org")


def demo_products() -> Iterator[dict[str, str]]:
    """One product per course type and course location, as raw values."""
    for location in COURSE_LOCATIONS:
        suffix, state, _suburbs = LOCATIONS[location]
        for code, name, prices in COURSE_TYPES:
            yield {
                "name": f"{name} ({display_name(location)})",
                "code": f"{code}-{suffix}",
                "price": prices[state],
                "active": "true",
            }


def demo_people(count: int, *, seed: int = DEMO_SEED) -> Iterator[tuple[str, dict[str, str]]]:
    """``count`` made-up people as (kind, raw values); about one in three is a lead."""
    rng = random.Random(seed)
    previous: tuple[str, dict[str, str]] | None = None
    for _ in range(count):
        kind = LEAD if rng.random() < 0.34 else CONTACT
        roll = rng.random()
        if previous is not None and roll < 0.05:
            values = _relative(rng, previous[1])  # a parent booking for a child
        elif previous is not None and roll < 0.08 and kind == LEAD:
            values = _again(rng, previous[1])  # the same person, enquiring again as a lead
        else:
            values = _person(rng, kind)
        previous = (kind, values)
        yield kind, values


def _person(rng: random.Random, kind: str) -> dict[str, str]:
    first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
    if rng.random() < 0.9:
        location = rng.choice(COURSE_LOCATIONS)
        _suffix, state, suburbs = LOCATIONS[location]
        city, postcode = rng.choice(suburbs)
    else:
        city, postcode, state = rng.choice(ELSEWHERE)
    values = {
        "first_name": first,
        "last_name": last,
        "date_of_birth": _birth_date(rng, 1962, 2008),
        "email": _email(rng, first, last),
        "postcode": postcode,
        "mobile_phone": f"04{rng.randint(0, 99):02d} {rng.randint(0, 999):03d} "
        f"{rng.randint(0, 999):03d}",
        "street": f"{rng.randint(1, 240)} {rng.choice(STREET_NAMES)} {rng.choice(STREET_TYPES)}",
        "city": city,
        "state": state,
        "country": "Australia",
        "opt_in": rng.choice(("true", "false", "")),
    }
    if rng.random() < 0.3:
        area = AREA_CODES.get(state, "08")
        values["home_phone"] = f"({area}) {rng.randint(5000, 9999)} {rng.randint(0, 9999):04d}"
    if rng.random() < 0.85:
        values["drivers_license"] = _licence(rng, state)
        values["license_type"] = rng.choice(("CYL", "CYL", "CYP", ""))
    if kind == LEAD or rng.random() < 0.4:
        values["lead_source"] = rng.choice(LEAD_SOURCES)
    return {name: value for name, value in values.items() if value}


def _relative(rng: random.Random, parent: dict[str, str]) -> dict[str, str]:
    """A child (or, for a young parent, a sibling) sharing e-mail, phone and address."""
    child = dict(parent)
    child["first_name"] = rng.choice(FIRST_NAMES)
    year = int(parent["date_of_birth"][:4])
    child_year = min(year + rng.randint(22, 34), 2009)
    if child_year - year < 18:
        child_year = min(year + rng.randint(-4, 4), 2009)
    child["date_of_birth"] = _birth_date(rng, child_year, child_year)
    child.pop("drivers_license", None)
    child.pop("license_type", None)
    if rng.random() < 0.5:
        child.pop("mobile_phone", None)
    return child


def _again(rng: random.Random, earlier: dict[str, str]) -> dict[str, str]:
    """The same person under a nickname, with an e-mail typed differently."""
    again = dict(earlier)
    again["first_name"] = NICKNAMES.get(earlier["first_name"], earlier["first_name"])
    if "email" in again:
        again["email"] = again["email"].upper() if rng.random() < 0.5 else again["email"]
    again["lead_source"] = rng.choice(LEAD_SOURCES)
    return again


def _birth_date(rng: random.Random, first_year: int, last_year: int) -> str:
    return f"{rng.randint(first_year, last_year)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _email(rng: random.Random, first: str, last: str) -> str:
    local = "".join(ch for ch in f"{first}.{last}".lower() if ch.isalnum() or ch == ".")
    if rng.random() < 0.6:
        local += str(rng.randint(1, 999))
    return f"{local}@{rng.choice(DOMAINS)}"


def _licence(rng: random.Random, state: str) -> str:
    if state == "NSW":
        return "".join(rng.choice("0123456789") for _ in range(8))
    if state == "QLD":
        return str(rng.randint(10_000_000, 999_999_999))
    if state == "VIC":
        return str(rng.randint(100_000_000, 999_999_999))
    return "".join(rng.choice("ABCDEFGHJKLMNPRSTUVWXYZ0123456789") for _ in range(8))


def load_demo(
    sessions: sessionmaker[Session],
    *,
    only_if_empty: bool = True,
    seed: int = DEMO_SEED,
    people: int = DEMO_PEOPLE,
) -> str:
    """Load the demo products, people and courses; say what was loaded or why not.

    The well-known records of the README's examples (demo_courses) keep fixed ids, so
    they are loaded once; another load (``only_if_empty=False``) adds more people only.
    """
    now = utcnow()
    with session_scope(sessions, write=True) as session:
        if only_if_empty and session.scalar(select(Person.id).limit(1)) is not None:
            skipped = "skipped: database already has people"
            if session.get(Person, ANN) is None:
                return skipped
            # Loaded before: the README's examples still run against these records.
            return skipped + "; the demo records are\n" + readme_records()
        products = _product_rows(session, now)
        if products:
            session.execute(insert(PRODUCTS_TABLE), products)
        known = [] if session.get(Person, ANN) else list(README_PEOPLE)
        again = [] if session.get(Person, ANN) else list(README_DUPLICATE)
        rows: list[dict[str, Any]] = []
        keys: list[dict[str, Any]] = []
        generated = ((kind, None, values) for kind, values in demo_people(people, seed=seed))
        for kind, person_id, values in chain(known, generated, again):
            data, errors = PERSON_RULES.validate(values)
            if errors:
                raise RuntimeError(f"demo person is invalid: {'; '.join(errors)}")
            row, row_keys = person_rows(kind, data, person_id=person_id, now=now)
            rows.append(row)
            keys.extend({"key": key, "person_id": row["id"]} for key in row_keys)
        for chunk in chunks(rows, 5_000):
            session.execute(insert(PEOPLE_TABLE), chunk)
        for chunk in chunks(keys, 20_000):
            session.execute(insert(PERSON_KEYS_TABLE), chunk)
        courses = _course_rows(session, rows, now=now, seed=seed) if known else 0
    leads = sum(1 for row in rows if row["kind"] == LEAD)
    summary = (
        f"loaded {len(products)} products, {len(rows)} people "
        f"({len(rows) - leads} contacts, {leads} leads) and {courses} courses"
    )
    if not known:
        return summary
    return summary + "\n" + readme_records()


def readme_records() -> str:
    """The ids the README's examples use, one line each."""
    return "\n".join(
        [
            f"  contact Ann Nguyen     {ANN}  (the match example finds her)",
            f"  contact Ben Kelly      {BEN}  (the modify examples change him)",
            f"  lead Liam Tran         {LIAM}  (the booking example books him)",
            f"  product LAP-SOM        {product_id('LAP-SOM')}",
            f"  booked course          {BOOKED_COURSE}  (Ben's; the cancel example)",
            f"  contact Chloe Martin   {CHLOE}  and lead {CHLOE_AGAIN}: one rider"
            " stored twice (the merge example)",
        ]
    )


def _course_rows(
    session: Session, people_rows: list[dict[str, Any]], *, now: dt.datetime, seed: int
) -> int:
    """Insert the demo courses (dates around today) for contacts of this load; say how many."""
    found = session.execute(select(Product.id, Product.code, Product.price)).all()
    by_code = {code: DemoProduct(id=id_, code=code, price=price) for id_, code, price in found}
    products = {
        location: [
            by_code[f"{code}-{suffix}"]
            for code, _name, _prices in COURSE_TYPES
            if f"{code}-{suffix}" in by_code
        ]
        for location, (suffix, _state, _suburbs) in LOCATIONS.items()
    }
    contacts = [
        row["id"] for row in people_rows if row["kind"] == CONTACT and row["id"] not in (ANN, CHLOE)
    ]
    courses, history = demo_courses(
        contacts=contacts,
        products=products,
        today=dt.date.today(),
        now=now,
        rng=random.Random(seed + 1),
    )
    if courses:
        session.execute(insert(ASSETS_TABLE), courses)
        session.execute(insert(HISTORY_TABLE), history)
    return len(courses)


def _product_rows(session: Session, now: dt.datetime) -> list[dict[str, Any]]:
    """Rows of the demo products whose codes are not in the database yet."""
    taken = set(session.scalars(select(Product.code)))
    rows = []
    for values in demo_products():
        if values["code"] in taken:
            continue
        data, errors = PRODUCT_RULES.validate(values)
        if errors:
            raise RuntimeError(f"demo product is invalid: {'; '.join(errors)}")
        rows.append(product_row(data, product_id=product_id(values["code"]), now=now))
    return rows
