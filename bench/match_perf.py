"""Matching performance: latency of person matching at 10k, 100k and 1M people, and throughput.

Run from the repository root:

    .venv/bin/python bench/match_perf.py                      # print the results
    .venv/bin/python bench/match_perf.py --write              # also update bench/README.md
    .venv/bin/python bench/match_perf.py --sizes 10000,100000 --queries 500   # quicker

For each size the benchmark builds a fresh SQLite store in a temporary directory
(outside the repository, deleted at the end): schema by ``ridercrm.migrate.upgrade``,
then N generated Australian people (households share surname, address and often an
e-mail or phone) written to a CSV file and loaded in-process by the CSV importer,
``ridercrm.transfer.importer.import_csv``. If the importer leaves ``person_keys`` empty,
the benchmark says so and fills the keys itself with ``people.index.key_rows``.

Then, with every store loaded:

  1. in-process: ``find_match`` with one session per query (``session_scope``, as the
     endpoint does), the stores measured in turn in blocks of 50 queries so that all
     sizes see the same machine noise; plus a per-phase breakdown (keys, candidate
     look-up, loading the candidates, scoring), the candidate counts, the number of
     people under each kind of key, and two remedies tried in this process only
     (SQLite mmap; no given-name + postcode key) beside the code as it is;
  2. HTTP: one ``ridercrm serve`` (1 worker) per store, sequential match requests with a
     keep-alive httpx client, interleaved the same way; every answer must be a 200;
  3. throughput: ``ridercrm serve --workers 2`` on one store, wrk (``-t2 -c16``) against
     POST /crm/people/match and GET /crm/products (same key, same audit trail) one
     after the other, twice; every answer must be a 2xx.

Only 127.0.0.1 is used; every server runs in try/finally and every wait is bounded.

With ``--previous DIR``, a checkout of the previous commit (``git worktree add --detach
DIR HEAD~1``), the same runs on this build and on DIR's, alternately
(``--previous-rounds N``), and both builds' lines are printed side by side:

    make bench NAME=match_perf ARGS="... --previous DIR"
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import csv
import datetime as dt
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sqlalchemy import Engine, func, insert, select  # noqa: E402

from bench import harness  # noqa: E402
from bench.report import machine, write_section  # noqa: E402
from ridercrm.config import Settings  # noqa: E402
from ridercrm.db import build_engine, session_factory, session_scope  # noqa: E402
from ridercrm.matching import model_store, repository, score, service  # noqa: E402
from ridercrm.matching.service import match_identity as find_match  # noqa: E402
from ridercrm.migrate import upgrade  # noqa: E402
from ridercrm.people import index as person_index  # noqa: E402
from ridercrm.people.blocking import Identity, query_key_tiers  # noqa: E402
from ridercrm.people.models import Person, PersonKey  # noqa: E402
from ridercrm.transfer.columns import CONTACTS  # noqa: E402
from ridercrm.transfer.importer import import_csv  # noqa: E402

README = ROOT / "bench" / "README.md"
SECTION = "## Matching performance"
RIDERCRM = ROOT / ".venv" / "bin" / "ridercrm"
MATCH_PATH = "/crm/people/match"
TRIVIAL_PATH = "/crm/products"
BLOCK = 50  # queries per store before moving to the next store
SERVER_START_S = 120.0
REQUEST_TIMEOUT_S = 30.0
TARGET_MEDIAN_MS = 2.0  # issue 11: at 1,000,000 people, in-process
TARGET_P99_MS = 10.0
TARGET_GROWTH = 1.5
TARGET_TRAIN_S = 300.0
THRESHOLDS = (
    score.Thresholds()
)  # the defaults, as the service without settings  # `ridercrm match train` on 1,000,000 people
REFERENCE_DATE = dt.date(2025, 1, 1)  # ages are counted from here (never a future birth date)
GEOGRAPHY_SEED = 61  # postcodes and suburbs are the same in every run

# --------------------------------------------------------------------------- people


def _words(text: str) -> list[str]:
    return text.split()


MALE = _words(
    "Jack James William Thomas Oliver Noah Lachlan Liam Ethan Joshua Daniel Matthew Ryan "
    "Benjamin Samuel Luke Nathan Michael David Andrew Christopher Joseph Alexander Cooper "
    "Riley Harrison Mitchell Jordan Dylan Jake Lucas Henry Max Charlie Mason Hunter Xavier "
    "Isaac Connor Blake Patrick Sean Peter Mark Paul Stephen Anthony Robert John Richard "
    "Scott Craig Jason Brendan Shane Wayne Darren Glenn Bruce Graham Ian Kevin Trent Aaron "
    "Adam Tyler Kyle Zac Bailey Jayden Angus Hamish Callum Fraser Ali Mohammed Omar Ahmed "
    "Hassan Khaled Minh Duc Tuan Quang Huy Wei Jun Hao Rahul Arjun Vikram Sandeep Amit Raj "
    "Harpreet Gurpreet Marco Luca Giuseppe Antonio Salvatore Nikolaos Georgios Dimitrios "
    "Konstantinos José Carlos Mateo Tomasz Piotr Sione Tevita Jean-Luc Björn Zoltán"
)
FEMALE = _words(
    "Charlotte Olivia Amelia Isla Mia Ava Grace Chloe Emily Sophie Ella Ruby Zoe Lily Emma "
    "Jessica Sarah Hannah Georgia Madison Jasmine Lauren Rebecca Samantha Kate Megan Amy "
    "Rachel Nicole Michelle Lisa Karen Susan Jennifer Melissa Kylie Tracey Leanne Natalie "
    "Danielle Kirra Tahlia Matilda Harper Evie Willow Sienna Ivy Stella Aisha Fatima Mariam "
    "Noor Layla Linh Thao Huong Mai Ngoc Mei Xin Ying Priya Anjali Simran Neha Pooja Giulia "
    "Francesca Maria Angela Eleni Despina Sofia Lucia Ana Agnieszka Mele Losana Zoë Chloé "
    "Renée Mary-Anne Anne-Marie Siobhán Margaret Patricia Helen Elizabeth Catherine Julie "
    "Deborah Sharon Joanne Alison Fiona Heather Bronwyn Kerry Narelle"
)
SURNAMES = _words(
    "Smith Nguyen Jones Williams Brown Wilson Taylor Johnson White Martin Anderson Thompson "
    "Tran Lee Walker Harris Ryan Robinson Kelly King Davis Wright Evans Roberts Green Hall "
    "Wood Jackson Clarke Patel Khan Lewis James Phillips Mitchell Turner Murphy Hughes "
    "Edwards Cooper Campbell Scott Young Clark Baker Allen Wang Li Chen Zhang Liu Le Pham "
    "Huynh Hoang Vo Dang Bui Do Ngo Singh Kaur Sharma Gupta Kumar Shah O'Brien O'Connor "
    "O'Neill O'Sullivan McDonald MacKenzie McGregor McKenzie Stewart Morrison Murray "
    "Graham Ross Reid Fraser Hamilton Russo Rossi Romano Ferrari Esposito Bianchi Costa "
    "Marino Greco Bruno Conti De_Luca Di_Stefano Papadopoulos Georgiou Nikolaidis "
    "Christodoulou Dimitriou Kowalski Nowak Wiśniewski Müller Schmidt Fischer Schneider "
    "Van_der_Berg De_Silva Fernando Perera Silva Santos Rodriguez Garcia Lopez Hernandez "
    "Gonzalez Al-Hassan Haddad Khoury Nasser Saleh Ibrahim Hussein Mansour Tanaka Sato "
    "Suzuki Kim Park Choi Fifita Tupou Latu Smith-Jones Nguyen-Tran Baxter Bennett Burke "
    "Carroll Chapman Collins Cox Crawford Cunningham Doyle Dunn Ellis Fitzgerald Fletcher "
    "Foster Gibson Gordon Grant Gray Hayes Henderson Hill Holmes Howard Hunt Johnston Kennedy "
    "Knight Lawson Marshall Mason Matthews Miller Moore Morgan Morris Nelson Owen Palmer "
    "Parker Payne Pearce Porter Price Quinn Reynolds Richards Richardson Rogers Russell "
    "Shaw Simpson Spencer Stevens Sullivan Thomas Watson Webb Wells West Williamson Wong "
    "Yang Zhao Xu Sun Ma Zhou Hu Guo Lin He Gao Luo"
)
SURNAMES = [name.replace("_", " ") for name in SURNAMES]
# The long tail of surnames (most people have a name shared by few others).
TAIL_START = _words(
    "Ash Bar Bel Black Brad Bram Brook Bur Cal Carl Chad Chal Cliff Cor Cran Dal Dar Den "
    "Dray Dun Ed El Fair Far Fen Gar Gil Glen Gold Had Hal Ham Har Hart Hay Hol Kel Ken "
    "Kings Lang Lind Mar Mel Mer Mid Mill Mor Nor Pem Pen Red Ris Rock Rox Rut Sel Shel "
    "Stan Stock Sum Tal Thorn Tre War Wel West Whit Wil Win Wor"
)
TAIL_MIDDLE = ("", "", "", "er", "in", "ow", "ing", "a", "el", "ridge")
TAIL_END = _words(
    "ford ley ton wood field well by ham worth man son dale more wick stone hurst land "
    "combe croft shaw cott den ing sey low ridge brook more ick ott ard ell"
)
STREET_NAMES = _words(
    "High Station Church Victoria Albert Railway Park Main Queen King George William Mill "
    "Bridge Hill Short Elizabeth Charles Edward Hope Union Forest Ocean Beach Bay River "
    "Creek Lake Wattle Banksia Acacia Grevillea Waratah Jacaranda Eucalyptus Boronia "
    "Kookaburra Magpie Lyrebird Koala Wombat Ridge Valley Greenhill Springvale Heidelberg "
    "Plenty Sydney Canterbury Burwood Pacific Princes Hume Nepean Stud Ferntree Gully "
    "Mountain Sunset Sunrise Hillcrest Lakeview Riverview Seaview Parkview Fairway Links"
)
STREET_TYPES = (
    ("Street", 30), ("St", 14), ("Road", 14), ("Rd", 7), ("Avenue", 7), ("Ave", 3),
    ("Court", 5), ("Ct", 2), ("Drive", 5), ("Dr", 2), ("Crescent", 3), ("Cres", 1),
    ("Place", 3), ("Parade", 1), ("Close", 1), ("Way", 1), ("Lane", 1), ("Terrace", 1),
)  # fmt: skip
SUBURB_PARTS = _words(
    "North South East West Upper Lower Mount Glen Port Point Lake Spring Green Oak Pine "
    "Wattle Box Fern Red Black White Bay Vale Hill Park Brook Dale"
)
SUBURB_ENDS = _words("field vale wood ton dale grove hurst mont ville haven side brook bank ridge")
DOMAINS = (
    ("gmail.com", 40), ("hotmail.com", 12), ("outlook.com", 10), ("bigpond.com", 8),
    ("yahoo.com.au", 7), ("icloud.com", 8), ("optusnet.com.au", 4), ("live.com.au", 3),
    ("bigpond.net.au", 3), ("tpg.com.au", 2), ("iinet.net.au", 2), ("protonmail.com", 1),
)  # fmt: skip
# State: share of people, postcode ranges, number of postcodes, area code, licence shape.
STATES = {
    "VIC": (32, ((3000, 3999),), 700, "03", "9d"),
    "NSW": (30, ((2000, 2599), (2621, 2899)), 620, "02", "8d"),
    "QLD": (24, ((4000, 4999),), 440, "07", "9d"),
    "SA": (5, ((5000, 5799),), 330, "08", "S6"),
    "WA": (5, ((6000, 6799),), 350, "08", "7d"),
    "TAS": (2, ((7000, 7499),), 110, "03", "A6"),
    "NT": (1, ((800, 899),), 30, "08", "6d"),
    "ACT": (1, ((2600, 2620), (2900, 2914)), 30, "02", "8d"),
}
LEAD_SOURCES = ("Web", "Phone Inquiry", "Partner Referral", "Other")
CSV_FIELDS = (
    "first_name", "last_name", "date_of_birth", "email", "postcode", "mobile_phone",
    "home_phone", "drivers_license", "license_type", "street", "city", "state", "country",
    "lead_source", "opt_in",
)  # fmt: skip


def _weights(count: int, offset: float) -> list[float]:
    """Cumulative Zipf-like weights: rank r weighs 1 / (r + offset)."""
    cumulative, total = [], 0.0
    for rank in range(1, count + 1):
        total += 1.0 / (rank + offset)
        cumulative.append(total)
    return cumulative


@dataclass(frozen=True)
class Place:
    postcode: str
    suburb: str
    state: str
    area_code: str
    licence_shape: str


def _geography() -> tuple[list[Place], list[float]]:
    """About 2,600 postcodes in real state ranges; a few big ones, a long tail of small ones."""
    rng = random.Random(GEOGRAPHY_SEED)
    places: list[Place] = []
    weights: list[float] = []
    for state, (share, ranges, count, area, shape) in STATES.items():
        pool = [code for low, high in ranges for code in range(low, high + 1)]
        codes = sorted(rng.sample(pool, min(count, len(pool))))
        sizes = [rng.lognormvariate(0.0, 1.0) for _ in codes]
        scale = share / sum(sizes)
        for code, size in zip(codes, sizes, strict=True):
            suburb = rng.choice(SUBURB_PARTS) + rng.choice(SUBURB_ENDS)
            if rng.random() < 0.3:
                suburb = f"{rng.choice(SUBURB_PARTS)} {suburb.capitalize()}"
            places.append(Place(f"{code:04d}", suburb, state, area, shape))
            weights.append(size * scale)
    cumulative, total = [], 0.0
    for weight in weights:
        total += weight
        cumulative.append(total)
    return places, cumulative


def _ascii(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in folded if ch.isascii() and ch.isalpha()).lower()


class PeopleGenerator:
    """Deterministic people, household by household, from ``random.Random(seed)``."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.places, self.place_weights = _geography()
        self.male_weights = _weights(len(MALE), 12)
        self.female_weights = _weights(len(FEMALE), 12)
        self.surname_weights = _weights(len(SURNAMES), 15)
        self.domain_weights = _cumulative([weight for _name, weight in DOMAINS])
        self.type_weights = _cumulative([weight for _name, weight in STREET_TYPES])

    def _pick(self, items: Sequence[Any], cumulative: list[float]) -> Any:
        point = self.rng.random() * cumulative[-1]
        return items[min(bisect.bisect(cumulative, point), len(items) - 1)]

    def given_name(self, female: bool) -> str:
        if female:
            return self._pick(FEMALE, self.female_weights)
        return self._pick(MALE, self.male_weights)

    def surname(self) -> str:
        if self.rng.random() < 0.3:
            return self._pick(SURNAMES, self.surname_weights)
        rng = self.rng
        return (rng.choice(TAIL_START) + rng.choice(TAIL_MIDDLE) + rng.choice(TAIL_END)).title()

    def birth_date(self, youngest: int, oldest: int) -> dt.date:
        days = self.rng.randint(youngest * 365 + 5, oldest * 365 + 360)
        return REFERENCE_DATE - dt.timedelta(days=days)

    def mobile(self) -> str:
        digits = "04" + "".join(str(self.rng.randrange(10)) for _ in range(8))
        form = self.rng.random()
        if form < 0.6:
            return f"{digits[:4]} {digits[4:7]} {digits[7:]}"
        if form < 0.9:
            return digits
        return f"+61 {digits[1:4]} {digits[4:7]} {digits[7:]}"

    def landline(self, place: Place) -> str:
        number = "".join(str(self.rng.randrange(10)) for _ in range(8))
        return f"({place.area_code}) {number[:4]} {number[4:]}"

    def licence(self, place: Place) -> str:
        rng = self.rng
        shape = place.licence_shape
        if shape.endswith("d"):
            return "".join(str(rng.randrange(10)) for _ in range(int(shape[0])))
        letter = chr(ord("A") + rng.randrange(26))
        return letter + "".join(str(rng.randrange(10)) for _ in range(int(shape[1])))

    def email(self, first: str, last: str, born: dt.date) -> str:
        rng = self.rng
        given, family = _ascii(first), _ascii(last)
        form = rng.random()
        if form < 0.3:
            local = f"{given}.{family}"
        elif form < 0.5:
            local = f"{given}{family}{rng.randint(1, 99)}"
        elif form < 0.65:
            local = f"{given[:1]}{family}"
        elif form < 0.8:
            local = f"{given}_{family}{born.year % 100:02d}"
        else:
            local = f"{given}{rng.randint(100, 9999)}"
        return f"{local}@{self._pick(DOMAINS, self.domain_weights)[0]}"

    def street(self) -> str:
        rng = self.rng
        kind = self._pick(STREET_TYPES, self.type_weights)[0]
        number = str(rng.randint(1, 250))
        if rng.random() < 0.15:
            number = f"{rng.randint(1, 20)}/{number}"
        return f"{number} {rng.choice(STREET_NAMES)} {kind}"

    def person(
        self, first: str, last: str, born: dt.date, place: Place, street: str
    ) -> dict[str, str]:
        rng = self.rng
        return {
            "first_name": first,
            "last_name": last,
            "date_of_birth": born.isoformat(),
            "email": self.email(first, last, born),
            "postcode": place.postcode,
            "mobile_phone": self.mobile() if rng.random() < 0.92 else "",
            "home_phone": self.landline(place) if rng.random() < 0.25 else "",
            "drivers_license": self.licence(place) if rng.random() < 0.75 else "",
            "license_type": rng.choice(("CYL", "CYP", "")),
            "street": street if rng.random() < 0.85 else "",
            "city": place.suburb,
            "state": place.state,
            "country": "Australia",
            "lead_source": rng.choice(LEAD_SOURCES),
            "opt_in": rng.choice(("true", "false")),
        }

    def household(self) -> list[dict[str, str]]:
        """One to four people at one address; families often share an e-mail or a phone."""
        rng = self.rng
        place = self._pick(self.places, self.place_weights)
        street = self.street()
        size = self._pick((1, 2, 3, 4), _HOUSEHOLD_WEIGHTS)
        last = self.surname()
        female = rng.random() < 0.3  # most learner riders are men
        head_born = self.birth_date(16, 75) if size == 1 else self.birth_date(38, 62)
        head = self.person(self.given_name(female), last, head_born, place, street)
        members = [head]
        for _ in range(size - 1):
            female = rng.random() < 0.35
            family = last if rng.random() < 0.85 else self.surname()
            born = head_born + dt.timedelta(days=rng.randint(20 * 365, 30 * 365))
            if (REFERENCE_DATE - born).days < 16 * 365 + 5:
                born = REFERENCE_DATE - dt.timedelta(days=16 * 365 + rng.randint(5, 900))
            member = self.person(self.given_name(female), family, born, place, street)
            if rng.random() < 0.5:
                member["email"] = head["email"]  # the parent's address, the family guard case
            if rng.random() < 0.3 and head["mobile_phone"]:
                member["mobile_phone"] = head["mobile_phone"]
            member["home_phone"] = head["home_phone"]
            members.append(member)
        return members

    def people(self, count: int) -> Iterator[dict[str, str]]:
        produced = 0
        while produced < count:
            for member in self.household():
                if produced == count:
                    return
                yield member
                produced += 1


_HOUSEHOLD_WEIGHTS = [0.7, 0.88, 0.96, 1.0]


def _cumulative(weights: Sequence[float]) -> list[float]:
    cumulative, total = [], 0.0
    for weight in weights:
        total += weight
        cumulative.append(total)
    return cumulative


# --------------------------------------------------------------------------- queries

KINDS = (
    ("exact", 0.40),
    ("typo_first", 0.10),
    ("typo_last", 0.10),
    ("swapped_day_month", 0.10),
    ("changed_email", 0.10),
    ("absent", 0.20),
)


@dataclass
class Query:
    kind: str
    data: dict[str, str]  # the request's person_data
    target: tuple[str, str] | None  # (date_of_birth, e-mail) of the person meant, if stored

    def identity(self) -> Identity:
        data = self.data
        return Identity.of(
            first_name=data["first_name"],
            last_name=data["last_name"],
            date_of_birth=dt.date.fromisoformat(data["date_of_birth"]),
            email=data["email"],
            phones=(data.get("mobile_phone"),),
            drivers_license=data.get("drivers_license"),
            street=data.get("street"),
            postcode=data["postcode"],
        )


def _typo(rng: random.Random, text: str) -> str:
    """One keyboard slip: a letter replaced, dropped, doubled or two letters swapped."""
    if len(text) < 4:
        return text + rng.choice("aeiou")
    index = rng.randrange(1, len(text) - 1)
    action = rng.randrange(4)
    if action == 0:
        return text[:index] + rng.choice("abcdefghiklmnoprstuy") + text[index + 1 :]
    if action == 1:
        return text[:index] + text[index + 1 :]
    if action == 2:
        return text[:index] + text[index] + text[index:]
    return text[: index - 1] + text[index] + text[index - 1] + text[index + 1 :]


def _request_data(rng: random.Random, person: dict[str, str]) -> dict[str, str]:
    data = {
        name: person[name]
        for name in ("first_name", "last_name", "date_of_birth", "email", "postcode")
    }
    if person["mobile_phone"] and rng.random() < 0.7:
        data["mobile_phone"] = person["mobile_phone"]
    if person["drivers_license"] and rng.random() < 0.2:
        data["drivers_license"] = person["drivers_license"]
    if person["street"] and rng.random() < 0.3:
        data["street"] = person["street"]
    return data


def build_queries(
    rng: random.Random, stored: list[dict[str, str]], absent: Iterator[dict[str, str]], count: int
) -> list[Query]:
    """``count`` queries in the KINDS mix, in random order."""
    kinds: list[str] = []
    for kind, share in KINDS:
        kinds.extend([kind] * round(count * share))
    kinds = (kinds + ["exact"] * count)[:count]
    rng.shuffle(kinds)
    pool = list(stored)
    rng.shuffle(pool)
    swappable = [
        person
        for person in pool
        if (born := dt.date.fromisoformat(person["date_of_birth"])).day <= 12
        and born.day != born.month
    ]
    queries = []
    for index, kind in enumerate(kinds):
        if kind == "absent":
            queries.append(Query(kind, _request_data(rng, next(absent)), None))
            continue
        person = (
            swappable[index % len(swappable)]
            if kind == "swapped_day_month"
            else pool[index % len(pool)]
        )
        data = _request_data(rng, person)
        if kind == "typo_first":
            data["first_name"] = _typo(rng, data["first_name"])
        elif kind == "typo_last":
            data["last_name"] = _typo(rng, data["last_name"])
        elif kind == "swapped_day_month":
            born = dt.date.fromisoformat(data["date_of_birth"])
            data["date_of_birth"] = born.replace(month=born.day, day=born.month).isoformat()
        elif kind == "changed_email":
            data["email"] = f"{_ascii(person['first_name'])}.{rng.randint(1000, 99999)}@mail.com"
        queries.append(Query(kind, data, (person["date_of_birth"], person["email"].lower())))
    return queries


# --------------------------------------------------------------------------- stores


@dataclass
class Store:
    size: int
    path: Path
    url: str
    queries: list[Query] = field(default_factory=list)
    http_queries: list[Query] = field(default_factory=list)
    load_queries: list[Query] = field(default_factory=list)
    generate_s: float = 0.0
    import_s: float = 0.0
    keys_s: float = 0.0
    importer_wrote_keys: bool = False
    key_rows: int = 0
    bytes: int = 0
    engine: Engine | None = None


def settings_for(url: str) -> Settings:
    return Settings(database_url=url, log_level="WARNING")


def build_store(size: int, directory: Path, seed: int, args: argparse.Namespace) -> Store:
    """A store of ``size`` generated people and its queries (reused from ``--store-dir``)."""
    needed = args.queries + args.warmup + args.http_queries + args.load_bodies
    if args.store_dir:
        directory = Path(args.store_dir)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"people-{size}-seed{seed}.sqlite3"
    else:
        path = directory / f"people-{size}.sqlite3"
    store = Store(size=size, path=path, url=f"sqlite:///{path}")
    kept_path = path.with_suffix(".kept.json")
    if kept_path.exists() and path.exists():
        # Built by an earlier run: its people are the same (the generator is seeded).
        kept: list[dict[str, str]] = json.loads(kept_path.read_text(encoding="utf-8"))
        engine = build_engine(settings_for(store.url))
        try:
            with engine.connect() as connection:
                key_rows = connection.scalar(select(func.count()).select_from(PersonKey))
                people = connection.scalar(select(func.count()).select_from(Person))
        finally:
            engine.dispose()
        if people != size:
            raise SystemExit(f"{path} holds {people} people, not {size}: delete it")
        store.key_rows = key_rows or 0
        store.importer_wrote_keys = True
        print(f"  reusing {path} (built by an earlier run)", flush=True)
    else:
        for stale in (path, kept_path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            stale.unlink(missing_ok=True)
        kept = _fill_store(store, directory, seed, needed)
        if args.store_dir:
            kept_path.write_text(json.dumps(kept), encoding="utf-8")
    store.bytes = sum(
        p.stat().st_size for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists()
    )
    rng = random.Random(seed * 31 + size)
    absent = PeopleGenerator(seed + 7919).people(10**9)
    queries = build_queries(rng, kept, absent, needed)
    cut = [args.queries + args.warmup, args.queries + args.warmup + args.http_queries]
    store.queries = queries[: cut[0]]
    store.http_queries = queries[cut[0] : cut[1]]
    store.load_queries = queries[cut[1] :]
    return store


def _fill_store(store: Store, directory: Path, seed: int, needed: int) -> list[dict[str, str]]:
    """Generate and import the store's people; return the sample the queries are made of."""
    size = store.size
    engine = build_engine(settings_for(store.url))
    try:
        upgrade(engine)
        started = time.perf_counter()
        wanted = sorted(random.Random(seed + size).sample(range(size), min(size, needed * 2)))
        kept: list[dict[str, str]] = []
        csv_path = directory / f"people-{size}.csv"
        with csv_path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(CSV_FIELDS)
            position = 0
            for index, person in enumerate(PeopleGenerator(seed).people(size)):
                writer.writerow([person[name] for name in CSV_FIELDS])
                if position < len(wanted) and wanted[position] == index:
                    kept.append(person)
                    position += 1
        store.generate_s = time.perf_counter() - started

        started = time.perf_counter()
        result = import_csv(session_factory(engine), CONTACTS, csv_path)
        store.import_s = time.perf_counter() - started
        csv_path.unlink()
        if result.imported != size or result.bad_rows:
            raise SystemExit(
                f"import of {size} people: {result.summary()} (expected every row imported)"
            )
        with engine.connect() as connection:
            store.key_rows = connection.scalar(select(func.count()).select_from(PersonKey)) or 0
        store.importer_wrote_keys = store.key_rows > 0
        if not store.importer_wrote_keys:
            started = time.perf_counter()
            store.key_rows = fill_keys(engine)
            store.keys_s = time.perf_counter() - started
        with engine.connect() as connection:
            connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        engine.dispose()
    return kept


def fill_keys(engine: Engine) -> int:
    """The person_keys rows, from people.index.key_rows, as the service computes them."""
    columns = (
        Person.id, Person.first_name, Person.last_name, Person.date_of_birth, Person.email,
        Person.mobile_phone, Person.home_phone, Person.drivers_license, Person.street,
        Person.postcode,
    )  # fmt: skip
    written = 0
    with engine.begin() as connection:
        people = connection.execute(select(*columns)).all()
        rows: list[dict[str, Any]] = []
        for person in people:
            rows.extend(person_index.key_rows(person.id, person_index.identity_of(person)))
            if len(rows) >= 50_000:
                connection.execute(insert(PersonKey), rows)
                written += len(rows)
                rows = []
        if rows:
            connection.execute(insert(PersonKey), rows)
            written += len(rows)
    return written


# --------------------------------------------------------------------------- in-process


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


@dataclass
class Latency:
    times_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)  # this thread's CPU time, same queries
    found: Counter[str] = field(default_factory=Counter)
    asked: Counter[str] = field(default_factory=Counter)
    errors: int = 0

    @property
    def median(self) -> float:
        return statistics.median(self.times_ms) if self.times_ms else float("nan")

    @property
    def p99(self) -> float:
        return percentile(self.times_ms, 0.99)

    def record(self, sessions: Any, query: Query) -> None:
        """Run one query and note its time and whether it found whom it meant."""
        elapsed, cpu, person = _one_match(sessions, query)
        self.times_ms.append(elapsed)
        self.cpu_ms.append(cpu)
        self.asked[query.kind] += 1
        if query.kind == "absent":
            self.found[query.kind] += person is not None
        else:
            self.found[query.kind] += _found_target(query, person)


def _found_target(query: Query, person: Person | None) -> bool:
    if person is None or query.target is None or person.date_of_birth is None:
        return False
    return (person.date_of_birth.isoformat(), (person.email or "").lower()) == query.target


def measure_in_process(stores: list[Store], warmup: int) -> dict[int, Latency]:
    """find_match with one session per query, the stores taken in turn, BLOCK queries each."""
    results = {store.size: Latency() for store in stores}
    sessions = {}
    for store in stores:
        store.engine = build_engine(settings_for(store.url))
        sessions[store.size] = session_factory(store.engine)
    for store in stores:
        for query in store.queries[:warmup]:
            _one_match(sessions[store.size], query)
    count = max(len(store.queries) - warmup for store in stores)
    for start in range(warmup, warmup + count, BLOCK):
        for store in stores:
            for query in store.queries[start : start + BLOCK]:
                results[store.size].record(sessions[store.size], query)
    return results


def _one_match(sessions: Any, query: Query) -> tuple[float, float, Person | None]:
    """Wall-clock ms, this thread's CPU ms, and the person found."""
    born = dt.date.fromisoformat(query.data["date_of_birth"])
    data = query.data
    cpu = time.thread_time()
    started = time.perf_counter()
    with session_scope(sessions) as session:
        identity = Identity.of(
            first_name=data["first_name"],
            last_name=data["last_name"],
            date_of_birth=born,
            email=data["email"],
            phones=(data.get("mobile_phone"),),
            drivers_license=data.get("drivers_license"),
            street=data.get("street"),
            postcode=data["postcode"],
        )
        result = find_match(session, query=identity, assets=[], leads_only=False)
    elapsed = (time.perf_counter() - started) * 1000
    return elapsed, (time.thread_time() - cpu) * 1000, result.person


@dataclass
class Phases:
    """Median ms of each step of find_match, and the candidate counts."""

    keys_ms: list[float] = field(default_factory=list)
    lookup_ms: list[float] = field(default_factory=list)  # look-up and load: one statement
    load_ms: list[float] = field(default_factory=list)  # the candidates' identities
    score_ms: list[float] = field(default_factory=list)
    candidates: list[int] = field(default_factory=list)
    second_reads: int = 0  # queries whose identifiers could not settle the answer
    every_key: list[int] = field(default_factory=list)  # the people under all keys (untimed)


def measure_phases(stores: list[Store], count: int) -> dict[int, Phases]:
    """The steps of find_match timed apart (the same calls, in the same order)."""
    results = {store.size: Phases() for store in stores}
    for start in range(0, count, BLOCK):
        for store in stores:
            assert store.engine is not None
            sessions = session_factory(store.engine)
            phases = results[store.size]
            for query in store.queries[start : min(start + BLOCK, count)]:
                identity = query.identity()
                with session_scope(sessions) as session:
                    t0 = time.perf_counter()
                    identifiers, others = query_key_tiers(identity)
                    t1 = time.perf_counter()
                    rows = sorted(repository.candidates(session, identifiers), key=lambda r: r.id)
                    t2 = time.perf_counter()
                    candidates = [(row, service.stored_identity(row), False) for row in rows]
                    t3 = time.perf_counter()
                    model = model_store.current(session)
                    scorer = score.Scorer(identity, model=model, thresholds=THRESHOLDS)
                    scored = service.rank(scorer, candidates)
                    settled = (
                        rows
                        and len(rows) < repository.KEY_CAP
                        and service.settled(scored, scorer.ceiling(service.IDENTIFIERS), THRESHOLDS)
                    )
                    t4 = time.perf_counter()
                    lookup, load, scoring = t2 - t1, t3 - t2, t4 - t3
                    if not settled:
                        phases.second_reads += 1
                        found = {row.id for row in rows}
                        more = repository.candidates(session, others)
                        rows = sorted([*rows, *(r for r in more if r.id not in found)],
                                      key=lambda r: r.id)  # fmt: skip
                        t5 = time.perf_counter()
                        candidates = [(row, service.stored_identity(row), False) for row in rows]
                        t6 = time.perf_counter()
                        scored = service.rank(scorer, candidates)
                        t7 = time.perf_counter()
                        lookup, load, scoring = lookup + t5 - t4, load + t6 - t5, scoring + t7 - t6
                    t8 = time.perf_counter()
                    service.decide(scored, THRESHOLDS)
                    scoring += time.perf_counter() - t8
                phases.keys_ms.append((t1 - t0) * 1000)
                phases.lookup_ms.append(lookup * 1000)
                phases.load_ms.append(load * 1000)
                phases.score_ms.append(scoring * 1000)
                phases.candidates.append(len(rows))
                with session_scope(sessions) as session:
                    every = repository.candidate_ids(session, identifiers | others)
                phases.every_key.append(len(every))
    return results


def _spread(counts: list[int]) -> str:
    return f"{statistics.median(counts):.0f} / {percentile(counts, 0.99):.0f} / {max(counts)}"


def _without_given_name_postcode(identity: Identity) -> tuple[set[int], set[int]]:
    """query_key_tiers without the given-name-sound + postcode key (the what-if below)."""
    from ridercrm.people import blocking as matching_keys

    dates: list[dt.date] = []
    if identity.date_of_birth:
        dates.append(identity.date_of_birth)
        swapped = matching_keys._swap_day_month(identity.date_of_birth)
        if swapped:
            dates.append(swapped)
    first, last = matching_keys._sound(identity.first), matching_keys._sound(identity.last)
    texts = {
        text
        for text in matching_keys._key_texts(identity, dates)
        if not (first and first != last and text.startswith(f"np|{first}|"))
    }
    identifiers, _others = matching_keys.query_key_tiers(identity)
    return identifiers, {matching_keys._hash(text) for text in texts} - identifiers


WHAT_IF = (
    ("as is", False, False),
    ("SQLite mmap_size 2 GiB", True, False),
    ("no given-name+postcode key", False, True),
    ("both", True, True),
)


def measure_what_if(stores: list[Store], count: int, warmup: int) -> dict[tuple[str, int], Latency]:
    """Two remedies tried in this process only (src/ is untouched), side by side.

    mmap: every connection also runs PRAGMA mmap_size=2 GiB. No given-name+postcode key:
    queries look up every key but the one of the given name's sound with the postcode.
    """
    from sqlalchemy import event

    from ridercrm.matching import service

    chosen = [stores[0], stores[-1]] if len(stores) > 1 else stores
    engines: dict[tuple[int, bool], Engine] = {}
    results: dict[tuple[str, int], Latency] = {}
    original = service.query_key_tiers
    try:
        for store in chosen:
            for mmap in (False, True):
                engine = build_engine(settings_for(store.url))
                if mmap:
                    event.listen(engine, "connect", _mmap_on_connect)
                engines[(store.size, mmap)] = engine
                for query in store.queries[:warmup]:
                    _one_match(session_factory(engine), query)
        for start in range(warmup, warmup + count, BLOCK):
            for name, mmap, fewer_keys in WHAT_IF:
                service.query_key_tiers = _without_given_name_postcode if fewer_keys else original
                for store in chosen:
                    sessions = session_factory(engines[(store.size, mmap)])
                    latency = results.setdefault((name, store.size), Latency())
                    for query in store.queries[start : min(start + BLOCK, warmup + count)]:
                        latency.record(sessions, query)
    finally:
        service.query_key_tiers = original
        for engine in engines.values():
            engine.dispose()
    return results


def _mmap_on_connect(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA mmap_size={2**31}")
    cursor.close()


KEY_KINDS = {
    "e": "e-mail",
    "p": "phone",
    "l": "licence",
    "nd-last": "family-name sound + birth date",
    "nd-first": "given-name sound + birth date",
    "dp": "birth date + postcode",
    "np-last": "family-name sound + postcode",
    "np-first": "given-name sound + postcode",
}


def measure_key_sizes(store: Store, count: int) -> dict[str, list[int]]:
    """People stored under each kind of key a query looks up (the query's own birth date)."""
    from ridercrm.people import blocking as matching_keys

    sizes: dict[str, list[int]] = {kind: [] for kind in KEY_KINDS}
    engine = build_engine(settings_for(store.url))
    try:
        with engine.connect() as connection:
            for query in store.queries[:count]:
                identity = query.identity()
                assert identity.date_of_birth is not None
                last = matching_keys._sound(identity.last)
                for text in matching_keys._key_texts(identity, [identity.date_of_birth]):
                    prefix, _, rest = text.partition("|")
                    if prefix in ("nd", "np"):
                        prefix += "-last" if rest.split("|")[0] == last else "-first"
                    people = connection.scalar(
                        select(func.count())
                        .select_from(PersonKey)
                        .where(PersonKey.key == matching_keys._hash(text))
                    )
                    sizes.setdefault(prefix, []).append(int(people or 0))
    finally:
        engine.dispose()
    return sizes


# --------------------------------------------------------------------------- HTTP


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_env(url: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("RIDERCRM_") and key != "PROMETHEUS_MULTIPROC_DIR"
    }
    env.update(RIDERCRM_DATABASE_URL=url, RIDERCRM_LOG_LEVEL="WARNING")
    env.update(extra or {})
    return env


def create_key(url: str) -> str:
    # `keys create` does not create a database; `db upgrade` does (and is a no-op after).
    subprocess.run(
        [str(RIDERCRM), "db", "upgrade"],
        env=server_env(url),
        capture_output=True,
        timeout=120,
        check=False,
    )
    done = subprocess.run(
        [str(RIDERCRM), "keys", "create", "--name", "bench", "--scope", "admin"],
        env=server_env(url),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"ridercrm keys create failed: {done.stderr.strip()}")
    return done.stdout.strip().splitlines()[-1].strip()


def time_training(store: Store) -> float:
    """Seconds `ridercrm match train` takes on ``store`` (a subprocess, as an operator runs it)."""
    print(f"ridercrm match train on {store.size:,} people ...", flush=True)
    started = time.perf_counter()
    done = subprocess.run(
        [str(RIDERCRM), "match", "train"],
        env=server_env(store.url),
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(
            f"ridercrm match train failed: {done.stdout[-1000:]} {done.stderr[-2000:]}"
        )
    return seconds


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    base: str
    key: str
    log: Path


@contextlib.contextmanager
def running_server(store: Store, directory: Path, key: str, workers: int = 1) -> Iterator[Server]:
    port = free_port()
    extra: dict[str, str] = {}
    if workers > 1:
        metrics = directory / f"metrics-{store.size}-{port}"
        metrics.mkdir()
        extra["PROMETHEUS_MULTIPROC_DIR"] = str(metrics)
    log = directory / f"server-{store.size}-{port}.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [str(RIDERCRM), "serve", "--host", "127.0.0.1", "--port", str(port)]
            + (["--workers", str(workers)] if workers > 1 else []),
            env=server_env(store.url, extra),
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=directory,  # a first start's credentials files go here
        )
    server = Server(process, f"http://127.0.0.1:{port}", key, log)
    try:
        _wait_healthy(server)
        yield server
    finally:
        _stop(process)


def _wait_healthy(server: Server) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise SystemExit(f"server exited early:\n{server.log.read_text()[-2000:]}")
        try:
            if httpx.get(server.base + "/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"server not healthy after {SERVER_START_S:.0f} s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


@dataclass
class HttpLatency:
    times_ms: list[float] = field(default_factory=list)
    non_200: int = 0
    statuses: Counter[int] = field(default_factory=Counter)

    @property
    def median(self) -> float:
        return statistics.median(self.times_ms) if self.times_ms else float("nan")

    @property
    def p99(self) -> float:
        return percentile(self.times_ms, 0.99)


def measure_http(
    stores: list[Store], directory: Path, keys: dict[int, str], warmup: int
) -> dict[int, HttpLatency]:
    results = {store.size: HttpLatency() for store in stores}
    with contextlib.ExitStack() as stack:
        clients = {}
        for store in stores:
            server = stack.enter_context(running_server(store, directory, keys[store.size]))
            clients[store.size] = stack.enter_context(
                httpx.Client(
                    base_url=server.base,
                    headers={"Authorization": f"Bearer {keys[store.size]}"},
                    timeout=REQUEST_TIMEOUT_S,
                )
            )
        for store in stores:
            for query in store.queries[:warmup]:
                clients[store.size].post(MATCH_PATH, json={"person_data": query.data})
        count = max(len(store.http_queries) for store in stores)
        for start in range(0, count, BLOCK):
            for store in stores:
                client, latency = clients[store.size], results[store.size]
                for query in store.http_queries[start : start + BLOCK]:
                    started = time.perf_counter()
                    response = client.post(MATCH_PATH, json={"person_data": query.data})
                    elapsed = (time.perf_counter() - started) * 1000
                    latency.times_ms.append(elapsed)
                    latency.statuses[response.status_code] += 1
                    if response.status_code != 200 or "delivery" not in response.json():
                        latency.non_200 += 1
    return results


# --------------------------------------------------------------------------- throughput

WRK_COMMON = """
local threads = {}
function setup(thread)
  table.insert(threads, thread)
end
function init(args)
  non2xx = 0
end
function response(status, headers, body)
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
  end
end
function done(summary, latency, requests)
  local bad = 0
  for _, thread in ipairs(threads) do
    bad = bad + thread:get("non2xx")
  end
  local e = summary.errors
  io.write(string.format(
    "RESULT {\\"requests\\": %d, \\"duration_us\\": %d, \\"non2xx\\": %d, " ..
    "\\"connect\\": %d, \\"read\\": %d, \\"write\\": %d, \\"status\\": %d, \\"timeout\\": %d, " ..
    "\\"p50_us\\": %d, \\"p90_us\\": %d, \\"p99_us\\": %d, \\"mean_us\\": %.1f}\\n",
    summary.requests, summary.duration, bad, e.connect, e.read, e.write, e.status,
    e.timeout, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.mean))
end
"""


def _lua_long_string(text: str) -> str:
    level = "=" * 3
    while f"]{level}]" in text:
        level += "="
    return f"[{level}[{text}]{level}]"


def wrk_scripts(directory: Path, key: str, queries: list[Query]) -> tuple[Path, Path]:
    bodies = ",\n".join(
        _lua_long_string(json.dumps({"person_data": q.data}, ensure_ascii=False)) for q in queries
    )
    match = (
        f"local bodies = {{\n{bodies}\n}}\n"
        'wrk.method = "POST"\n'
        'wrk.headers["Content-Type"] = "application/json"\n'
        f'wrk.headers["Authorization"] = "Bearer {key}"\n'
        "local counter = 0\n"
        "function request()\n"
        "  counter = counter + 1\n"
        "  return wrk.format(nil, nil, nil, bodies[(counter % #bodies) + 1])\n"
        "end\n" + WRK_COMMON
    )
    trivial = f'wrk.method = "GET"\nwrk.headers["Authorization"] = "Bearer {key}"\n' + WRK_COMMON
    match_path, trivial_path = directory / "match.lua", directory / "trivial.lua"
    match_path.write_text(match, encoding="utf-8")
    trivial_path.write_text(trivial, encoding="utf-8")
    return match_path, trivial_path


@dataclass
class LoadRun:
    endpoint: str
    requests: int
    seconds: float
    errors: int
    p50_ms: float
    p99_ms: float

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


def run_wrk(
    base: str, path: str, script: Path, duration: int, threads: int, connections: int
) -> LoadRun:
    command = [
        "wrk", f"-t{threads}", f"-c{connections}", f"-d{duration}s", "--timeout", "10s",
        "-s", str(script), base + path,
    ]  # fmt: skip
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=duration + 60, check=False
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    if done.returncode != 0 or line is None:
        raise SystemExit(f"wrk failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    found = json.loads(line[len("RESULT ") :])
    errors = sum(found[k] for k in ("non2xx", "connect", "read", "write", "status", "timeout"))
    return LoadRun(
        endpoint=path,
        requests=found["requests"],
        seconds=found["duration_us"] / 1e6,
        errors=errors,
        p50_ms=found["p50_us"] / 1000,
        p99_ms=found["p99_us"] / 1000,
    )


def measure_throughput(
    store: Store, directory: Path, key: str, args: argparse.Namespace
) -> list[LoadRun]:
    match_script, trivial_script = wrk_scripts(directory, key, store.load_queries)
    runs: list[LoadRun] = []
    with running_server(store, directory, key, workers=2) as server:
        run_wrk(server.base, MATCH_PATH, match_script, 3, args.threads, args.connections)
        run_wrk(server.base, TRIVIAL_PATH, trivial_script, 3, args.threads, args.connections)
        for _round in range(2):
            for path, script in ((MATCH_PATH, match_script), (TRIVIAL_PATH, trivial_script)):
                runs.append(
                    run_wrk(
                        server.base, path, script, args.duration, args.threads, args.connections
                    )
                )
                print(f"  {runs[-1].endpoint}: {runs[-1].rate:.0f} req/s", flush=True)
    return runs


# --------------------------------------------------------------------------- report


def _mb(size: int) -> str:
    return f"{size / 1e6:,.0f} MB"


def _ms(value: float) -> str:
    return f"{value:.2f}"


def verdicts(stores: list[Store], in_process: dict[int, Latency]) -> list[str]:
    lines = []
    largest, smallest = max(in_process), min(in_process)
    at = f"{largest:,}"
    big = in_process[largest]
    if largest != 1_000_000:
        lines.append(f"- (largest store measured is {at}, not 1,000,000: verdicts at {at})")
    lines.append(
        f"- In-process median at {at} ≤ {TARGET_MEDIAN_MS:g} ms: "
        f"**{'met' if big.median <= TARGET_MEDIAN_MS else 'not met'}** ({big.median:.2f} ms)"
    )
    lines.append(
        f"- In-process p99 at {at} ≤ {TARGET_P99_MS:g} ms: "
        f"**{'met' if big.p99 <= TARGET_P99_MS else 'not met'}** ({big.p99:.2f} ms)"
    )
    ratio = big.median / in_process[smallest].median
    lines.append(
        f"- Median at {at} ≤ {TARGET_GROWTH:g} x median at {smallest:,}: "
        f"**{'met' if ratio <= TARGET_GROWTH else 'not met'}** "
        f"({big.median:.2f} / {in_process[smallest].median:.2f} ms = {ratio:.2f}x)"
    )
    return lines


@dataclass
class Measured:
    in_process: dict[int, Latency]
    phases: dict[int, Phases]
    key_sizes: dict[int, dict[str, list[int]]]
    what_if: dict[tuple[str, int], Latency]
    http: dict[int, HttpLatency]
    load_store: Store | None
    runs: list[LoadRun]
    train_s: dict[int, float] = field(default_factory=dict)  # store size -> seconds


def _spread(values: Sequence[float]) -> str:
    if not values:
        return "—"
    return f"{statistics.median(values):.0f} / {percentile(values, 0.99):.0f} / {max(values):.0f}"


def report(
    args: argparse.Namespace,
    info: dict[str, str],
    stores: list[Store],
    measured: Measured,
    started: dt.datetime,
    loads: tuple[str, str],
) -> str:
    in_process, phases, http = measured.in_process, measured.phases, measured.http
    load_store, runs = measured.load_store, measured.runs
    out: list[str] = [SECTION, ""]
    out.append(
        f"Measured {started:%Y-%m-%d %H:%M} UTC on {info['nproc']} CPUs ({info['cpu']}), "
        f"Python {info['python']}, SQLite {info['sqlite']}, {info['system']}. "
        f"Load average {loads[0]} at the start, {loads[1]} at the end (the machine is shared)."
    )
    out.append("")
    out.append(f"Command: `{command_line(args)}`")
    out.append("")
    out.append(
        (
            "Each store is a SQLite file kept in `--store-dir` (built by the first run that"
            " asked for it, reused since; import figures are that first run's, or absent): "
            if args.store_dir
            else "Each store is a fresh SQLite file in a temporary directory: "
        )
        + "schema by "
        "`ridercrm.migrate.upgrade`, then generated Australian people (households of 1 to 4 "
        "sharing surname and address, half of the extra members with the head's e-mail, "
        "some with the head's mobile; ~2,600 postcodes with a long-tailed population; "
        "a long tail of surnames) loaded from a CSV file by the importer "
        "(`ridercrm.transfer.importer.import_csv`, in-process). Queries: "
        + ", ".join(f"{share:.0%} {kind.replace('_', ' ')}" for kind, share in KINDS)
        + " (people not in the store). The stores are measured in turn, "
        f"{BLOCK} queries at a time, so all sizes share the same machine noise."
    )
    out.append("")
    keys_note = []
    for store in stores:
        if not store.importer_wrote_keys:
            keys_note.append(f"{store.size:,}")
    if keys_note:
        out.append(
            "**The importer did not write `person_keys`** (stores of "
            + ", ".join(keys_note)
            + " people): the benchmark filled them after the import with "
            "`people.index.key_rows`, as migration 0003 does; imported people cannot be "
            "matched until the importer does this itself."
        )
    else:
        out.append("The importer wrote the `person_keys` rows itself (checked after each load).")
    out.append("")
    out.append("### Stores")
    out.append("")
    out.append("| people | generate CSV s | import s | keys s | person_keys rows | file size |")
    out.append("|---:|---:|---:|---:|---:|---:|")
    for store in stores:
        keys_s = f"{store.keys_s:.1f}" if not store.importer_wrote_keys else "(in import)"
        out.append(
            f"| {store.size:,} | {store.generate_s:.1f} | {store.import_s:.1f} | {keys_s} | "
            f"{store.key_rows:,} | {_mb(store.bytes)} |"
        )
    out.append("")
    out.append(
        f"### In-process latency (`find_match`, one `session_scope` per query, "
        f"{args.queries} queries per store after {args.warmup} warm-up)"
    )
    out.append("")
    out.append(
        "| people | median ms | p99 ms | max ms | CPU median / p99 ms | "
        f"candidates median / p99 / max | ≥ {repository.KEY_CAP} candidates | "
        "intended person found (stored queries) | false match (absent) |"
    )
    out.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for store in stores:
        lat, ph = in_process[store.size], phases[store.size]
        stored = sum(n for kind, n in lat.asked.items() if kind != "absent")
        found = sum(n for kind, n in lat.found.items() if kind != "absent")
        capped = sum(1 for c in ph.candidates if c >= repository.KEY_CAP)
        out.append(
            f"| {store.size:,} | {_ms(lat.median)} | {_ms(lat.p99)} | {_ms(max(lat.times_ms))} | "
            f"{_ms(statistics.median(lat.cpu_ms))} / {_ms(percentile(lat.cpu_ms, 0.99))} | "
            f"{statistics.median(ph.candidates):.0f} / {percentile(ph.candidates, 0.99):.0f} / "
            f"{max(ph.candidates)} | {capped / len(ph.candidates):.1%} | "
            f"{found}/{stored} | {lat.found['absent']}/{lat.asked['absent']} |"
        )
    out.append("")
    out.append(
        "Times are wall-clock, which is what the targets are about; the CPU column is the "
        "CPU time of the measuring thread for the same queries, which leaves out the waits "
        "for a CPU on this shared machine (the wall-clock p99 includes them)."
    )
    out.append("")
    out.append("Found, per kind of query (a sanity check of the load, not the quality harness):")
    out.append("")
    kinds = [kind for kind, _share in KINDS if kind != "absent"]
    out.append("| people | " + " | ".join(k.replace("_", " ") for k in kinds) + " |")
    out.append("|---:|" + "---:|" * len(kinds))
    for store in stores:
        lat = in_process[store.size]
        out.append(
            f"| {store.size:,} | "
            + " | ".join(f"{lat.found[k] / max(1, lat.asked[k]):.1%}" for k in kinds)
            + " |"
        )
    out.append("")
    out.append(
        "Where the time goes (medians, ms; the same calls as `find_match`, timed apart on "
        f"the first {args.phase_queries} queries): keys = `query_key_tiers`, look-up + load"
        " = `repository.candidates` (one statement for the identifiers' keys, a second for"
        " the others when the first cannot settle the answer; plain rows), identities = "
        "`service.stored_identity` of each candidate (cached by value), scoring = "
        "`score.Scorer` + `service.rank` + `service.settled` + `service.decide` (a second"
        " read's candidates are scored with the first's again, as `rank` does)."
    )
    out.append("")
    out.append(
        "| people | keys | look-up + load | identities | scoring | total of medians | second read |"
    )
    out.append("|---:|---:|---:|---:|---:|---:|---:|")
    for store in stores:
        ph = phases[store.size]
        parts = [statistics.median(v) for v in (ph.keys_ms, ph.lookup_ms, ph.load_ms, ph.score_ms)]
        out.append(
            f"| {store.size:,} | " + " | ".join(_ms(p) for p in parts) + f" | {_ms(sum(parts))} |"
            f" {ph.second_reads / len(ph.candidates):.1%} |"
        )
    out.append("")
    out.append(
        "Candidates read per query (median / p99 / max): "
        + "; ".join(
            f"{store.size:,}: {_spread(phases[store.size].candidates)}, every key's people"
            f" {_spread(phases[store.size].every_key)}"
            for store in stores
        )
        + " (every key's: what the matcher read before it read the identifiers first)."
    )
    out.append("")
    if measured.key_sizes:
        sizes = sorted(measured.key_sizes)
        out.append(
            f"People stored under each key a query looks up (first {args.phase_queries} "
            "queries, own birth date; median / p99 / max):"
        )
        out.append("")
        out.append("| key | " + " | ".join(f"{size:,} people" for size in sizes) + " |")
        out.append("|---|" + "---:|" * len(sizes))
        for kind, label in KEY_KINDS.items():
            out.append(
                f"| {label} | "
                + " | ".join(_spread(measured.key_sizes[size].get(kind, [])) for size in sizes)
                + " |"
            )
        out.append("")
    if measured.what_if:
        sizes = sorted({size for _name, size in measured.what_if})
        out.append(
            f"Two remedies tried in the benchmark process only (`src/` unchanged), "
            f"{args.what_if_queries} queries per variant and store, variants interleaved in "
            f"blocks of {BLOCK}: `PRAGMA mmap_size` of 2 GiB on each connection; and queries "
            "that skip the given-name-sound + postcode key (its rows stay stored). "
            "Medians and p99 in ms:"
        )
        out.append("")
        header = " | ".join(f"{size:,} median | {size:,} p99" for size in sizes)
        out.append(f"| variant | {header} | ratio | found (stored) | false (absent) |")
        out.append("|---|" + "---:|" * (2 * len(sizes) + 3))
        for name, _mmap, _fewer in WHAT_IF:
            cells = []
            for size in sizes:
                lat = measured.what_if[(name, size)]
                cells += [_ms(lat.median), _ms(lat.p99)]
            small, big = measured.what_if[(name, sizes[0])], measured.what_if[(name, sizes[-1])]
            found = sum(n for kind, n in big.found.items() if kind != "absent")
            asked = sum(n for kind, n in big.asked.items() if kind != "absent")
            out.append(
                f"| {name} | "
                + " | ".join(cells)
                + f" | {big.median / small.median:.2f}x | {found}/{asked} | "
                f"{big.found['absent']}/{big.asked['absent']} |"
            )
        out.append("")
        out.append(
            "(ratio: largest store's median over the smallest's; found and false matches at the largest store)"
        )
        out.append("")
    if http:
        out.append(
            f"### Through HTTP (`ridercrm serve`, 1 worker per store, {args.http_queries} "
            "sequential `POST /crm/people/match` per store, keep-alive httpx client)"
        )
        out.append("")
        out.append("| people | median ms | p99 ms | non-200 |")
        out.append("|---:|---:|---:|---:|")
        for store in stores:
            lat = http[store.size]
            out.append(f"| {store.size:,} | {_ms(lat.median)} | {_ms(lat.p99)} | {lat.non_200} |")
        out.append("")
        out.append(
            "Every request also authenticates its key and commits an audit record "
            "(SQLite, `synchronous=FULL`), as in production."
        )
        out.append("")
    if runs and load_store is not None:
        out.append(
            f"### Throughput ({load_store.size:,} people, `ridercrm serve --workers 2`, "
            f"`wrk -t{args.threads} -c{args.connections} -d{args.duration}s` on the same "
            "2 CPUs)"
        )
        out.append("")
        out.append(
            f"The match requests cycle through {len(load_store.load_queries)} different "
            f"queries of the same mix. The trivial endpoint is `GET {TRIVIAL_PATH}` "
            "(no products stored) with the same key: it authenticates and is audited like "
            "the match. Run order: match, trivial, match, trivial (after a 3 s warm-up of each)."
        )
        out.append("")
        out.append("| run | endpoint | requests/s | median ms | p99 ms | errors + non-2xx |")
        out.append("|---:|---|---:|---:|---:|---:|")
        for number, run in enumerate(runs, 1):
            out.append(
                f"| {number} | `{run.endpoint}` | {run.rate:.0f} | {_ms(run.p50_ms)} | "
                f"{_ms(run.p99_ms)} | {run.errors} |"
            )
        match_rate = statistics.mean(r.rate for r in runs if r.endpoint == MATCH_PATH)
        trivial_rate = statistics.mean(r.rate for r in runs if r.endpoint == TRIVIAL_PATH)
        out.append("")
        out.append(
            f"Match / trivial: {match_rate:.0f} / {trivial_rate:.0f} requests/s = "
            f"**{match_rate / trivial_rate:.2f}**."
        )
        out.append("")
    out.append("### Verdicts")
    out.append("")
    out.extend(verdicts(stores, in_process))
    for size, seconds in measured.train_s.items():
        met = "met" if seconds < TARGET_TRAIN_S else "not met"
        out.append(
            f"- `ridercrm match train` on {size:,} people < {TARGET_TRAIN_S:g} s: "
            f"**{met}** ({seconds:.0f} s, one run, before the latencies were measured)"
        )
    errors = sum(h.non_200 for h in http.values()) + sum(r.errors for r in runs)
    out.append(f"- Every HTTP answer a 200 / 2xx: **{'yes' if errors == 0 else 'no'}**")
    out.append("")
    return "\n".join(out)


def command_line(args: argparse.Namespace) -> str:
    parts = [".venv/bin/python bench/match_perf.py"]
    defaults = build_parser().parse_args([])
    for name, value in sorted(vars(args).items()):
        if name == "write" or value == getattr(defaults, name):
            continue
        flag = "--" + name.replace("_", "-")
        parts.append(flag if value is True else f"{flag} {value}")
    if args.write:
        parts.append("--write")
    return " ".join(parts)


# --------------------------------------------------------------------------- main


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", default="10000,100000,1000000", help="store sizes, comma-separated"
    )
    parser.add_argument("--queries", type=int, default=2000, help="in-process queries per store")
    parser.add_argument("--warmup", type=int, default=100, help="warm-up queries per store")
    parser.add_argument("--phase-queries", type=int, default=500, help="queries timed by phase")
    parser.add_argument("--http-queries", type=int, default=1000, help="HTTP queries per store")
    parser.add_argument("--load-bodies", type=int, default=300, help="distinct wrk bodies")
    parser.add_argument(
        "--load-size", type=int, default=0, help="store for throughput (default: the largest)"
    )
    parser.add_argument("--duration", type=int, default=20, help="seconds per wrk run")
    parser.add_argument("--threads", type=int, default=2, help="wrk threads")
    parser.add_argument("--connections", type=int, default=16, help="wrk connections")
    parser.add_argument("--no-http", action="store_true", help="skip the HTTP measurements")
    parser.add_argument(
        "--what-if-queries", type=int, default=1000, help="queries per variant in the what-if"
    )
    parser.add_argument(
        "--no-what-if", action="store_true", help="skip the key sizes and the remedies tried"
    )
    parser.add_argument(
        "--train",
        action="store_true",
        help="time `ridercrm match train` on the largest store (before the latencies)",
    )
    parser.add_argument("--seed", type=int, default=20261120)
    parser.add_argument(
        "--store-dir",
        default="",
        help="keep the stores in this directory and reuse them in later runs (a store built"
        " with --train keeps its trained model)",
    )
    parser.add_argument("--write", action="store_true", help="update bench/README.md")
    harness.add_previous(parser)
    return parser


def main() -> None:
    args = build_parser().parse_args()
    if (status := harness.compare_with_previous(args, "bench.match_perf")) is not None:
        raise SystemExit(status)
    sizes = sorted({int(size.replace("_", "")) for size in args.sizes.split(",")})
    started = dt.datetime.now(dt.UTC)
    info = machine()
    load_start = f"{os.getloadavg()[0]:.2f}"
    if not args.no_http and not RIDERCRM.exists():
        raise SystemExit(f"{RIDERCRM} not found: run from a checkout with its .venv")
    with tempfile.TemporaryDirectory(prefix="ridercrm-match-perf-") as tmp:
        directory = Path(tmp)
        stores = []
        key_sizes: dict[int, dict[str, list[int]]] = {}
        what_if: dict[tuple[str, int], Latency] = {}
        for size in sizes:
            print(f"building a store of {size:,} people ...", flush=True)
            store = build_store(size, directory, args.seed, args)
            stores.append(store)
            print(
                f"  generated in {store.generate_s:.1f} s, imported in {store.import_s:.1f} s, "
                f"keys {'by the importer' if store.importer_wrote_keys else 'filled by the bench'}"
                f" ({store.key_rows:,} rows, {store.keys_s:.1f} s), {_mb(store.bytes)}",
                flush=True,
            )
        train_s = {}
        if args.train:
            train_s[stores[-1].size] = time_training(stores[-1])
            print(f"  trained on {stores[-1].size:,} in {train_s[stores[-1].size]:.0f} s")
        try:
            print("in-process latency ...", flush=True)
            in_process = measure_in_process(stores, args.warmup)
            for size, lat in in_process.items():
                print(f"  {size:,}: median {lat.median:.2f} ms, p99 {lat.p99:.2f} ms", flush=True)
            phases = measure_phases(stores, args.phase_queries)
            if not args.no_what_if:
                print("where the candidates come from, and two remedies tried ...", flush=True)
                ends = [stores[0], stores[-1]] if len(stores) > 1 else stores
                key_sizes = {s.size: measure_key_sizes(s, args.phase_queries) for s in ends}
                what_if = measure_what_if(stores, args.what_if_queries, args.warmup)
        finally:
            for store in stores:
                if store.engine is not None:
                    store.engine.dispose()
        http: dict[int, HttpLatency] = {}
        runs: list[LoadRun] = []
        load_store = None
        if not args.no_http:
            keys = {store.size: create_key(store.url) for store in stores}
            print("HTTP latency ...", flush=True)
            http = measure_http(stores, directory, keys, min(args.warmup, 50))
            for size, lat in http.items():
                print(
                    f"  {size:,}: median {lat.median:.2f} ms, p99 {lat.p99:.2f} ms, "
                    f"non-200 {lat.non_200}",
                    flush=True,
                )
            if shutil.which("wrk") is None:
                print("wrk not found (apt-get install -y wrk): no throughput figures", flush=True)
            else:
                load_store = next((s for s in stores if s.size == args.load_size), stores[-1])
                print(f"throughput at {load_store.size:,} people ...", flush=True)
                runs = measure_throughput(load_store, directory, keys[load_store.size], args)
    loads = (load_start, f"{os.getloadavg()[0]:.2f}")
    section = report(
        args,
        info,
        stores,
        Measured(in_process, phases, key_sizes, what_if, http, load_store, runs, train_s),
        started,
        loads,
    )
    print()
    print(section)
    if args.write:
        write_section(section)
        print(f"updated {README.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
