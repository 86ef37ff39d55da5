"""Deterministic generator of Australian people, households and corrupted match queries.

Everything comes from one ``random.Random(seed)`` (the people who are *not* in the
store come from a second generator seeded from the first), so a seed and the sizes
fix the whole data set, ids included: ids are built like ``ridercrm.ids.new_id``
builds them (key prefix, 12 base-62 characters, the case-safe checksum of
``ridercrm.ids``) but from the seeded generator instead of ``secrets``.

The store: contacts and leads (75/25) with names from several groups, nicknames,
compound and hyphenated surnames and accents; street addresses with suburbs whose
postcodes agree with their states; mobiles and home phones written in the formats
people use; licence numbers; e-mails derived from names. About one person in eight
lives in a household with another stored person (a parent and a child, two siblings,
or twins born the same day) who shares the e-mail, phones, street, postcode and last
name.

Queries start from a stored person (or from someone who is not stored) and apply one
corruption kind; each knows the id it should find (or none) and the stored relatives
a careless matcher could merge it with.

After those, and drawn after them so that they leave the store and the queries above
as they were, come ``namesakes`` households of a parent and a child of one given name
(Jr. and Sr.: same sex, given name, surname, e-mail, phones and address, born 18-45
years apart), one member stored and one not: a query for the unstored one
(``same_name_relative``: must not match; the licence left out of most) and one for the
stored one with a corruption of the kinds above (``same_name_stored``: must match).
"""

from __future__ import annotations

import datetime as dt
import random
import string
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from bench.matching import names
from ridercrm.fields import PERSON_FIELDS
from ridercrm.ids import RecordKind, checksum

CONTACT = "contact"
LEAD = "lead"
PEOPLE = "people"  # POST /crm/people/match
LEADS = "leads"  # POST /crm/leads/match

LEAD_SOURCES = ("Web", "Phone Inquiry", "Partner Referral", "Purchansed List", "Other")
TODAY = dt.date(2026, 1, 1)  # fixed, so the data do not depend on the day of the run

# Corruption kinds and their default share of the queries (normalised; absent 15 %,
# family 10 %, the rest corruptions of a stored person).
KIND_WEIGHTS: dict[str, float] = {
    "exact": 5,
    "typo": 7,
    "transposition": 5,
    "nickname": 6,
    "initial": 5,
    "swapped_names": 5,
    "missing_optional": 6,
    "changed_email": 6,
    "changed_phone": 6,
    "moved_house": 6,
    "dob_swap": 5,
    "dob_digit": 6,
    "case_punct": 7,
    "absent": 15,
    "family": 10,
}
# Appended after the kinds above, from households of a parent and a child of one name.
SAME_NAME_KINDS = ("same_name_relative", "same_name_stored")
KINDS = (*KIND_WEIGHTS, *SAME_NAME_KINDS)
NAMESAKES = 200  # such households per data set (one query of each kind)

ATTEMPTS = 10_000  # every loop of the generator is bounded

_BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
_KEYBOARD_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


class GenerationError(RuntimeError):
    """The generator ran out of attempts (a bug, or sizes far beyond its lists)."""


# --- records --------------------------------------------------------------------


@dataclass
class Person:
    """A generated person: stored, or (for `absent` queries) not."""

    id: str
    kind: str
    first_name: str
    last_name: str
    sex: str
    group: str
    date_of_birth: dt.date
    email: str
    postcode: str
    city: str
    state: str
    street: str
    mobile_phone: str | None
    home_phone: str | None
    drivers_license: str | None
    license_type: str | None
    country: str | None
    lead_source: str | None
    opt_in: bool | None
    household: int | None = None
    role: str = ""  # parent, child, sibling, twin (household members only)

    def csv_row(self) -> dict[str, str]:
        """The row of the import file, in our column names."""
        values: dict[str, Any] = {
            "id": self.id,
            "first_name": self.first_name,
            "last_name": self.last_name,
            "date_of_birth": self.date_of_birth.isoformat(),
            "email": self.email,
            "postcode": self.postcode,
            "mobile_phone": self.mobile_phone,
            "home_phone": self.home_phone,
            "drivers_license": self.drivers_license,
            "license_type": self.license_type,
            "street": self.street,
            "city": self.city,
            "state": self.state,
            "country": self.country,
            "lead_source": self.lead_source,
            "opt_in": None if self.opt_in is None else ("true" if self.opt_in else "false"),
        }
        return {key: "" if value is None else str(value) for key, value in values.items()}


# The import file's columns: the id, then the fields a client writes, in the interface's order.
CSV_COLUMNS = ("id", *PERSON_FIELDS)


@dataclass
class Query:
    """One match request with its ground truth."""

    number: int
    kind: str
    endpoint: str  # PEOPLE or LEADS
    person_data: dict[str, Any]
    expected: str | None  # the id that should be found, or None
    source: str | None  # the stored person the query was made from, if any
    relatives: frozenset[str]  # stored household relatives: answering one is a family merge
    note: str  # what was done, in a few words

    @property
    def path(self) -> str:
        return "/crm/people/match" if self.endpoint == PEOPLE else "/crm/leads/match"


@dataclass
class DataSet:
    people: list[Person]
    queries: list[Query]
    households: int
    seed: int
    namesakes: int = 0  # households of one given name, one member stored (SAME_NAME_KINDS)

    def by_id(self) -> dict[str, Person]:
        return {person.id: person for person in self.people}


# --- helpers ----------------------------------------------------------------------


def ascii_fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _reverse_nicknames() -> dict[str, tuple[str, ...]]:
    reverse: dict[str, list[str]] = {}
    for root, nicks in names.NICKNAMES.items():
        for nick in nicks:
            reverse.setdefault(nick, []).append(root)
    return {nick: tuple(roots) for nick, roots in reverse.items()}


REVERSE_NICKNAMES = _reverse_nicknames()


def _sex_of_names() -> dict[str, set[str]]:
    sexes: dict[str, set[str]] = {}
    for groups in names.GIVEN.values():
        for sex, given in groups.items():
            for name in given:
                sexes.setdefault(name, set()).add(sex)
    return sexes


SEX_OF = _sex_of_names()


def name_variants(given: str, sex: str | None = None, group: str | None = None) -> list[str]:
    """Other forms of a given name: its nicknames, or the full names it shortens.

    With ``sex`` and ``group``, a short name only leads back to full names a person of
    that sex and group could have: "Alex" of a woman is Alexandra, not Alexander, and
    "Jim" of an Anglo-Australian is James, not Dimitrios.
    """
    found: list[str] = []
    for nick in names.NICKNAMES.get(given, ()):
        found.append(nick)
    for root in REVERSE_NICKNAMES.get(given, ()):
        if sex is not None and root in SEX_OF and sex not in SEX_OF[root]:
            continue
        if (
            group is not None
            and sex is not None
            and root not in names.GIVEN[group][sex]
            and root not in names.GIVEN["anglo"][sex]
        ):
            continue
        found.append(root)
        found.extend(n for n in names.NICKNAMES[root] if n != given)
    return list(dict.fromkeys(found))


def name_family(given: str) -> set[str]:
    """Every name linked to ``given`` by the nickname table (for keeping siblings apart)."""
    linked = {given}
    for root in (given, *REVERSE_NICKNAMES.get(given, ())):
        if root in names.NICKNAMES:
            linked.add(root)
            linked.update(names.NICKNAMES[root])
    return {ascii_fold(name).casefold() for name in linked}


def keyboard_neighbours() -> dict[str, str]:
    near: dict[str, list[str]] = {}
    for row_index, row in enumerate(_KEYBOARD_ROWS):
        for col, char in enumerate(row):
            around = []
            if col > 0:
                around.append(row[col - 1])
            if col + 1 < len(row):
                around.append(row[col + 1])
            for other_index in (row_index - 1, row_index + 1):
                if 0 <= other_index < len(_KEYBOARD_ROWS):
                    other = _KEYBOARD_ROWS[other_index]
                    around.extend(other[k] for k in (col - 1, col, col + 1) if 0 <= k < len(other))
            near[char] = list(dict.fromkeys(around))
    return {char: "".join(chars) for char, chars in near.items()}


NEIGHBOURS = keyboard_neighbours()


def weighted(rng: random.Random, items: Iterable[Any], weights: Iterable[float]) -> Any:
    return rng.choices(list(items), weights=list(weights), k=1)[0]


# --- formats ------------------------------------------------------------------------


def format_mobile(digits: str, style: int) -> str:
    """A mobile ``04xxxxxxxx`` in one of the ways people write it."""
    d = digits
    styles = (
        f"{d[:4]} {d[4:7]} {d[7:]}",  # 0412 345 678
        d,  # 0412345678
        f"+61 {d[1:4]} {d[4:7]} {d[7:]}",  # +61 412 345 678
        f"({d[:2]}) {d[2:6]} {d[6:]}",  # (04) 1234 5678
        f"+61{d[1:]}",  # +61412345678
        f"{d[:4]}-{d[4:7]}-{d[7:]}",  # 0412-345-678
        f"{d[:4]} {d[4:6]} {d[6:8]} {d[8:]}",  # 0412 34 56 78
    )
    return styles[style % len(styles)]


MOBILE_STYLES = 7
MOBILE_STYLE_WEIGHTS = (40, 25, 12, 6, 7, 5, 5)


def format_home(digits: str, style: int) -> str:
    """A landline ``0Xxxxxxxxx`` (10 digits): (03) 9123 4567 and friends."""
    d = digits
    styles = (
        f"({d[:2]}) {d[2:6]} {d[6:]}",
        f"{d[:2]} {d[2:6]} {d[6:]}",
        d,
        f"+61 {d[1]} {d[2:6]} {d[6:]}",
    )
    return styles[style % len(styles)]


def licence_number(rng: random.Random, state: str) -> str:
    digits = string.digits
    upper = string.ascii_uppercase
    if state == "VIC":
        return "".join(rng.choices(digits, k=9))
    if state == "NSW":
        if rng.random() < 0.15:
            return "".join(rng.choices(upper, k=2)) + "".join(rng.choices(digits, k=6))
        return "".join(rng.choices(digits, k=8))
    if state == "QLD":
        return "".join(rng.choices(digits, k=9))
    if state == "SA":
        return rng.choice(upper) + "".join(rng.choices(digits, k=5))
    if state == "WA":
        return "".join(rng.choices(digits, k=7))
    if state == "TAS":
        return "".join(rng.choices(upper, k=2)) + "".join(rng.choices(digits, k=4))
    if state == "NT":
        return "".join(rng.choices(digits, k=rng.choice((6, 7))))
    return "".join(rng.choices(digits, k=rng.choice((7, 8, 10))))  # ACT


def make_id(rng: random.Random, kind: RecordKind) -> str:
    body = kind.prefix + "".join(rng.choices(_BASE62, k=12))
    return body + checksum(body)


# --- the generator ---------------------------------------------------------------


class Generator:
    """Makes people with unique e-mails, phones and licences (except within households)."""

    def __init__(self, rng: random.Random, taken: Generator | None = None) -> None:
        self.rng = rng
        # A generator of outsiders shares the sets of the store's generator, so an
        # outsider never takes a stored person's e-mail, phone or id by chance.
        self.emails: set[str] = taken.emails if taken else set()
        self.mobiles: set[str] = taken.mobiles if taken else set()
        self.homes: set[str] = taken.homes if taken else set()
        self.licences: set[str] = taken.licences if taken else set()
        self.ids: set[str] = taken.ids if taken else set()
        self.suburbs_by_state: dict[str, list[tuple[str, str, str]]] = {}
        for suburb in names.SUBURBS:
            self.suburbs_by_state.setdefault(suburb[2], []).append(suburb)

    # identifiers

    def new_id(self, kind: str) -> str:
        record_kind = RecordKind.CONTACT if kind == CONTACT else RecordKind.LEAD
        for _ in range(ATTEMPTS):
            made = make_id(self.rng, record_kind)
            if made not in self.ids:
                self.ids.add(made)
                return made
        raise GenerationError("no fresh id")

    def new_mobile_digits(self) -> str:
        for _ in range(ATTEMPTS):
            digits = "04" + "".join(self.rng.choices(string.digits, k=8))
            if digits not in self.mobiles:
                self.mobiles.add(digits)
                return digits
        raise GenerationError("no fresh mobile number")

    def new_mobile(self) -> str:
        style = weighted(self.rng, range(MOBILE_STYLES), MOBILE_STYLE_WEIGHTS)
        return format_mobile(self.new_mobile_digits(), style)

    def new_home(self, state: str) -> str:
        for _ in range(ATTEMPTS):
            area = names.AREA_CODES[state]
            first = {"3": "9", "2": "9", "7": "3", "8": "8"}[area]
            if self.rng.random() < 0.4:
                first = self.rng.choice("45678")
            digits = "0" + area + first + "".join(self.rng.choices(string.digits, k=7))
            if digits not in self.homes:
                self.homes.add(digits)
                return format_home(digits, weighted(self.rng, range(4), (50, 25, 15, 10)))
        raise GenerationError("no fresh home phone number")

    def new_licence(self, state: str) -> str:
        for _ in range(ATTEMPTS):
            number = licence_number(self.rng, state)
            if number not in self.licences:
                self.licences.add(number)
                return number
        raise GenerationError("no fresh licence number")

    def new_email(self, first: str, last: str, dob: dt.date) -> str:
        rng = self.rng

        def clean(text: str) -> str:
            return "".join(ch for ch in ascii_fold(text).casefold() if ch.isalnum())

        f, l_ = clean(first) or "x", clean(last) or "x"
        for attempt in range(50):
            pattern = rng.randrange(9)
            local = (
                f"{f}.{l_}",
                f"{f}{l_}",
                f"{f[0]}{l_}",
                f"{f}_{l_}",
                f"{l_}.{f}",
                f"{f}.{l_}{dob.year % 100:02d}",
                f"{f}{dob.year}",
                f"{f}.{l_[0]}",
                f"{f}{l_}{rng.randrange(1, 100)}",
            )[pattern]
            if attempt > 5:
                local += str(rng.randrange(10, 10_000))
            domain = weighted(rng, *zip(*names.EMAIL_DOMAINS, strict=True))
            email = f"{local}@{domain}"
            if email not in self.emails:
                self.emails.add(email)
                return email
        raise GenerationError("could not make a unique e-mail")

    # names, dates, places

    def group(self) -> str:
        return weighted(self.rng, names.GROUP_WEIGHTS, names.GROUP_WEIGHTS.values())

    def given(self, group: str, sex: str, avoid: set[str] | None = None) -> str:
        pool = names.GIVEN[group][sex]
        # One person in six of a non-Anglo group goes by an English given name.
        if group != "anglo" and self.rng.random() < 0.17:
            pool = names.GIVEN["anglo"][sex]
        for _ in range(100):
            name = self.rng.choice(pool)
            if avoid is None or not (name_family(name) & avoid or _initial(name) in avoid):
                return name
        raise GenerationError("no given name left to choose")

    def surname(self, group: str) -> str:
        return self.rng.choice(names.SURNAMES[group])

    def dob(self, low: int = 1950, high: int = 2008) -> dt.date:
        # Riders skew young: half are born in the last 25 years of the range.
        if self.rng.random() < 0.5:
            low = max(low, high - 25)
        year = self.rng.randint(low, high)
        start = dt.date(year, 1, 1)
        return start + dt.timedelta(days=self.rng.randrange(365))

    def suburb(self, state: str | None = None) -> tuple[str, str, str]:
        if state is None:
            state = weighted(self.rng, names.STATE_WEIGHTS, names.STATE_WEIGHTS.values())
        return self.rng.choice(self.suburbs_by_state[state])

    def street(self) -> str:
        rng = self.rng
        number = str(rng.choice((rng.randint(1, 60), rng.randint(1, 250), rng.randint(1, 1200))))
        if rng.random() < 0.05:
            number += rng.choice("AB")
        long_form, short = weighted(rng, names.STREET_TYPES, names.STREET_TYPE_WEIGHTS)
        kind = long_form if rng.random() < 0.5 else short
        line = f"{number} {rng.choice(names.STREET_NAMES)} {kind}"
        if rng.random() < 0.12:
            unit = rng.randint(1, 40)
            line = f"{unit}/{line}" if rng.random() < 0.6 else f"Unit {unit}, {line}"
        return line

    def state_text(self, state: str) -> str:
        return names.STATE_NAMES[state] if self.rng.random() < 0.08 else state

    def person(
        self,
        kind: str | None = None,
        *,
        group: str | None = None,
        sex: str | None = None,
        last_name: str | None = None,
        first_name: str | None = None,
        dob: dt.date | None = None,
    ) -> Person:
        rng = self.rng
        kind = kind or (CONTACT if rng.random() < 0.75 else LEAD)
        group = group or self.group()
        sex = sex or rng.choice("mf")
        first = first_name or self.given(group, sex)
        last = last_name or self.surname(group)
        born = dob or self.dob()
        city, postcode, state = self.suburb()
        return Person(
            id=self.new_id(kind),
            kind=kind,
            first_name=first,
            last_name=last,
            sex=sex,
            group=group,
            date_of_birth=born,
            email=self.new_email(first, last, born),
            postcode=postcode,
            city=city,
            state=self.state_text(state),
            street=self.street(),
            mobile_phone=self.new_mobile() if rng.random() < 0.93 else None,
            home_phone=self.new_home(state) if rng.random() < 0.3 else None,
            drivers_license=self.new_licence(state) if rng.random() < 0.8 else None,
            license_type=rng.choice(("CYL", "CYP")) if rng.random() < 0.7 else None,
            country=weighted(rng, ("Australia", "AU", None), (70, 10, 20)),
            lead_source=(rng.choice(LEAD_SOURCES) if kind == LEAD or rng.random() < 0.3 else None),
            opt_in=weighted(rng, (True, False, None), (45, 35, 20)),
        )

    def relative(
        self,
        of: Person,
        role: str,
        kind: str | None = None,
        avoid_names: Iterable[str] = (),
    ) -> Person | None:
        """Someone of ``of``'s household: same e-mail, phones, address and last name.

        Born 1950-2008 like everyone; None when ``role`` cannot fit (a child of someone
        born after 1986). The given name differs from ``of``'s and ``avoid_names``' in
        its nickname family and its initial, so the ground truth stays decidable.
        """
        rng = self.rng
        base = of.date_of_birth
        earliest, latest = dt.date(1950, 1, 1), dt.date(2008, 12, 31)
        year = 365
        if role == "twin":
            low = high = 0
        elif role == "parent":
            low, high = max(-38 * year, (earliest - base).days), -22 * year
        elif role == "child":
            low, high = 22 * year, min(36 * year, (latest - base).days)
        else:  # sibling, at least ten months apart
            low, high = max(-8 * year, (earliest - base).days), min(8 * year, (latest - base).days)
        if low > high:
            return None
        born = base
        for _ in range(100):
            born = base + dt.timedelta(days=rng.randint(low, high))
            if role != "sibling" or abs((born - base).days) >= 300:
                break
        else:
            return None
        sex = rng.choice("mf")
        avoid = set()
        for name in (of.first_name, *avoid_names):
            avoid |= name_family(name) | {_initial(name)}
        first = self.given(of.group, sex, avoid=avoid)
        mate = self.person(kind, group=of.group, sex=sex, last_name=of.last_name, first_name=first)
        # Personal things stay the relative's own; household things are shared.
        self.emails.discard(mate.email)
        return replace(
            mate,
            date_of_birth=born,
            email=of.email,
            postcode=of.postcode,
            city=of.city,
            state=of.state,
            street=of.street,
            mobile_phone=of.mobile_phone,
            home_phone=of.home_phone,
            household=of.household,
            role=role,
        )

    def namesake_relative(self, of: Person, role: str) -> Person | None:
        """``of``'s parent or child of the same given name and sex (Jr. and Sr.), born
        18-45 years before or after (within 1950-2008, as everyone), sharing the
        household's e-mail, phones, address and last name; their own licence."""
        earliest, latest = dt.date(1950, 1, 1), dt.date(2008, 12, 31)
        sign = -1 if role == "parent" else 1
        for _ in range(100):
            born = of.date_of_birth + dt.timedelta(days=sign * self.rng.randint(18 * 365, 45 * 365))
            if earliest <= born <= latest:
                break
        else:
            return None
        mate = self.person(
            group=of.group, sex=of.sex, last_name=of.last_name, first_name=of.first_name
        )
        self.emails.discard(mate.email)
        return replace(
            mate,
            date_of_birth=born,
            email=of.email,
            postcode=of.postcode,
            city=of.city,
            state=of.state,
            street=of.street,
            mobile_phone=of.mobile_phone,
            home_phone=of.home_phone,
            household=of.household,
            role=role,
        )


def _initial(name: str) -> str:
    return ascii_fold(name)[:1].casefold()


def household_roles(rng: random.Random) -> tuple[str, str]:
    return weighted(
        rng,
        (("parent", "child"), ("sibling", "sibling"), ("twin", "twin")),
        (55, 33, 12),
    )


def generate_store(
    rng: random.Random, size: int, household_share: float = 0.12
) -> tuple[Generator, list[Person], int]:
    """``size`` stored people, about ``household_share`` of them in two-person households."""
    gen = Generator(rng)
    people: list[Person] = []
    households = 0
    for _ in range(10 * size + ATTEMPTS):
        if len(people) >= size:
            break
        if rng.random() < household_share / 2 and len(people) + 2 <= size:
            first_role, second_role = household_roles(rng)
            first = gen.person(dob=gen.dob(1955, 1984)) if first_role == "parent" else gen.person()
            first.household = households + 1
            first.role = first_role
            second = gen.relative(first, second_role)
            if second is None:
                continue
            households += 1
            people.extend((first, second))
        else:
            people.append(gen.person())
    if len(people) < size:
        raise GenerationError("could not make the store")
    rng.shuffle(people)
    return gen, people, households


# --- corruptions -----------------------------------------------------------------


def base_payload(person: Person, endpoint: str, rng: random.Random) -> dict[str, Any]:
    """The request a client would send for ``person``: every field it knows."""
    data: dict[str, Any] = {
        "first_name": person.first_name,
        "last_name": person.last_name,
        "date_of_birth": person.date_of_birth.isoformat(),
        "email": person.email,
        "postcode": person.postcode,
    }
    optional = {
        "mobile_phone": person.mobile_phone,
        "drivers_license": person.drivers_license if endpoint == PEOPLE else None,
        "street": person.street,
        "city": person.city,
        "state": person.state,
        "country": person.country,
    }
    data.update({key: value for key, value in optional.items() if value})
    if endpoint == LEADS:
        data["lead_source"] = person.lead_source or rng.choice(LEAD_SOURCES)
    elif rng.random() < 0.3:
        data["lead_source"] = rng.choice(LEAD_SOURCES)
    return data


def _letters(text: str) -> list[int]:
    return [i for i, ch in enumerate(text) if ch.isalpha()]


def typo(text: str, rng: random.Random) -> str | None:
    """One letter inserted, deleted or substituted (keyboard neighbours mostly)."""
    spots = _letters(text)
    if not spots:
        return None
    for _ in range(20):
        op = rng.choice(("insert", "delete", "substitute", "substitute"))
        i = rng.choice(spots)
        ch = text[i]
        lower = ch.lower()
        near = NEIGHBOURS.get(ascii_fold(lower), "") or string.ascii_lowercase
        new = rng.choice(near) if rng.random() < 0.7 else rng.choice(string.ascii_lowercase)
        new = new.upper() if ch.isupper() else new
        if op == "delete":
            if len(spots) < 4:
                continue
            out = text[:i] + text[i + 1 :]
        elif op == "insert":
            out = (
                text[:i] + new + text[i:]
                if rng.random() < 0.5
                else text[: i + 1] + new + text[i + 1 :]
            )
        else:
            out = text[:i] + new + text[i + 1 :]
        if ascii_fold(out).casefold() != ascii_fold(text).casefold():
            return out
    return None


def transpose(text: str, rng: random.Random) -> str | None:
    pairs = [
        i
        for i in range(len(text) - 1)
        if text[i].isalpha() and text[i + 1].isalpha() and text[i].lower() != text[i + 1].lower()
    ]
    if not pairs:
        return None
    i = rng.choice(pairs)
    a, b = text[i], text[i + 1]
    if a.isupper() and b.islower():
        a, b = a.lower(), b.upper()  # "John" -> "Ojhn", a capital stays first
    return text[:i] + b + a + text[i + 2 :]


def valid_dob(text: str) -> dt.date | None:
    try:
        value = dt.date.fromisoformat(text)
    except ValueError:
        return None
    if value.year < 1900 or value > TODAY:
        return None
    return value


def dob_digit(born: dt.date, rng: random.Random) -> dt.date | None:
    text = born.isoformat()
    positions = [i for i, ch in enumerate(text) if ch.isdigit()]
    for _ in range(50):
        i = rng.choice(positions)
        new = rng.choice([d for d in string.digits if d != text[i]])
        value = valid_dob(text[:i] + new + text[i + 1 :])
        if value is not None and 1930 <= value.year <= 2012:
            return value
    return None


def street_moved(street: str, gen: Generator) -> str:
    for _ in range(ATTEMPTS):
        new = gen.street()
        if new != street:
            return new
    raise GenerationError("no other street")


def _toggle_street_type(street: str) -> str:
    words = street.split(" ")
    for long_form, short in names.STREET_TYPES:
        if words[-1] == long_form:
            return " ".join([*words[:-1], short])
        if words[-1] == short:
            return " ".join([*words[:-1], long_form])
    return street


def _reformat_mobile(text: str, rng: random.Random) -> str:
    digits = "".join(ch for ch in text if ch.isdigit())
    if digits.startswith("61"):
        digits = "0" + digits[2:]
    for _ in range(ATTEMPTS):
        out = format_mobile(digits, rng.randrange(MOBILE_STYLES))
        if out != text:
            return out
    raise GenerationError("no other mobile format")


def _punctuate(name: str, rng: random.Random) -> str:
    """Punctuation and spacing changes people make in names."""
    if "'" in name:
        return name.replace("'", rng.choice(("", " ", "\u2019")))
    if "-" in name:
        return name.replace("-", rng.choice((" ", "", " - ")))
    if " " in name:
        return rng.choice((name.replace(" ", ""), name.replace(" ", "  "), name.title()))
    return f" {name}  " if rng.random() < 0.5 else f"{name}."


def case_punct(data: dict[str, Any], rng: random.Random) -> list[str]:
    """Change case, accents, spacing, punctuation and formats; return what was done."""
    changes: list[Callable[[], str | None]] = []

    def names_case() -> str:
        how = rng.choice(("upper", "lower", "swap"))
        for key in ("first_name", "last_name"):
            value = data[key]
            data[key] = {"upper": value.upper(), "lower": value.lower(), "swap": value.swapcase()}[
                how
            ]
        return f"names {how}-case"

    def accents() -> str | None:
        for key in ("first_name", "last_name"):
            if ascii_fold(data[key]) != data[key]:
                data[key] = ascii_fold(data[key])
                return f"accents dropped from {key}"
        return None

    def punctuation() -> str | None:
        key = rng.choice(("first_name", "last_name"))
        other = "last_name" if key == "first_name" else "first_name"
        for name_key in (key, other):
            value = data[name_key]
            changed = _punctuate(value, rng)
            if changed != value:
                data[name_key] = changed
                return f"{name_key} {value!r} -> {changed!r}"
        return None

    def email() -> str:
        value = data["email"]
        data["email"] = rng.choice((value.upper(), f"  {value} ", value.title()))
        return "e-mail case/spaces"

    def phone() -> str | None:
        if "mobile_phone" not in data:
            return None
        data["mobile_phone"] = _reformat_mobile(data["mobile_phone"], rng)
        return "mobile in another format"

    def street() -> str | None:
        if "street" not in data:
            return None
        data["street"] = _toggle_street_type(data["street"]).upper()
        return "street type abbreviated/expanded, upper-case"

    def postcode() -> str:
        data["postcode"] = int(data["postcode"])
        return "postcode as a number"

    def state() -> str | None:
        if "state" not in data:
            return None
        value = data["state"]
        full = {v: k for k, v in names.STATE_NAMES.items()}
        data["state"] = full.get(value, names.STATE_NAMES.get(value, value)).lower()
        return "state spelled differently"

    def city() -> str | None:
        if "city" not in data:
            return None
        data["city"] = data["city"].upper().replace("ST ", "ST. ")
        return "city upper-case"

    changes = [names_case, accents, punctuation, email, phone, street, postcode, state, city]
    rng.shuffle(changes)
    done: list[str] = []
    for change in changes:
        if len(done) >= rng.randint(2, 4):
            break
        result = change()
        if result:
            done.append(result)
    return done


# --- queries -------------------------------------------------------------------


@dataclass
class Made:
    endpoint: str
    data: dict[str, Any]
    expected: str | None
    source: str | None
    relatives: frozenset[str]
    note: str


class QueryMaker:
    def __init__(
        self, rng: random.Random, gen: Generator, outsiders: Generator, people: list[Person]
    ) -> None:
        self.rng = rng
        self.gen = gen
        self.outsiders = outsiders
        self.people = people
        self.households: dict[int, list[Person]] = {}
        for person in people:
            if person.household is not None:
                self.households.setdefault(person.household, []).append(person)
        self.household_ids = sorted(self.households)
        self.number = 0

    def relatives_of(self, person: Person) -> frozenset[str]:
        if person.household is None:
            return frozenset()
        return frozenset(p.id for p in self.households[person.household] if p.id != person.id)

    def endpoint_for(self, person: Person) -> str:
        if person.kind == LEAD and self.rng.random() < 0.5:
            return LEADS
        return PEOPLE

    def make(self, kind: str) -> Query:
        rng = self.rng
        for _ in range(1000):
            made: Made | None
            if kind == "absent":
                made = self.absent()
            elif kind == "family":
                made = self.family()
            else:
                person = rng.choice(self.people)
                endpoint = self.endpoint_for(person)
                data = base_payload(person, endpoint, rng)
                note = self.corrupt(kind, person, data, endpoint)
                made = (
                    None
                    if note is None
                    else Made(endpoint, data, person.id, person.id, self.relatives_of(person), note)
                )
            if made is not None:
                self.number += 1
                return Query(
                    number=self.number,
                    kind=kind,
                    endpoint=made.endpoint,
                    person_data=made.data,
                    expected=made.expected,
                    source=made.source,
                    relatives=made.relatives,
                    note=made.note,
                )
        raise GenerationError(f"could not make a {kind} query")

    def corrupt(self, kind: str, person: Person, data: dict[str, Any], endpoint: str) -> str | None:
        rng = self.rng
        if kind == "exact":
            return "as stored"
        if kind in ("typo", "transposition"):
            key = rng.choice(("first_name", "last_name"))
            before = data[key]
            after = typo(before, rng) if kind == "typo" else transpose(before, rng)
            if after is None:
                return None
            data[key] = after
            return f"{key} {before!r} -> {after!r}"
        if kind == "nickname":
            variants = name_variants(person.first_name, person.sex, person.group)
            if not variants:
                return None
            new = rng.choice(variants)
            data["first_name"] = new
            return f"first_name {person.first_name!r} -> {new!r}"
        if kind == "initial":
            new = ascii_fold(person.first_name)[0].upper() + rng.choice(("", ".", ""))
            data["first_name"] = new
            return f"first_name {person.first_name!r} -> {new!r}"
        if kind == "swapped_names":
            data["first_name"], data["last_name"] = data["last_name"], data["first_name"]
            return f"first/last swapped: {data['first_name']!r} {data['last_name']!r}"
        if kind == "missing_optional":
            present = [
                k
                for k in ("mobile_phone", "drivers_license", "street", "city", "state")
                if k in data
            ]
            if len(present) < 2:
                return None
            drop = rng.sample(present, rng.randint(2, len(present)))
            if endpoint == LEADS and rng.random() < 0.5:
                drop.append("date_of_birth")
            for key in drop:
                data.pop(key, None)
            return "dropped " + ", ".join(sorted(drop))
        if kind == "changed_email":
            new = self.gen.new_email(person.first_name, person.last_name, person.date_of_birth)
            data["email"] = new
            return f"e-mail {person.email!r} -> {new!r}"
        if kind == "changed_phone":
            if "mobile_phone" not in data:
                return None
            new = self.gen.new_mobile()
            data["mobile_phone"] = new
            return f"mobile {person.mobile_phone!r} -> {new!r}"
        if kind == "moved_house":
            city, postcode, state = self.gen.suburb(
                None if rng.random() < 0.3 else _state_code(person.state)
            )
            if postcode == person.postcode:
                return None
            data.update(
                street=street_moved(person.street, self.gen),
                city=city,
                postcode=postcode,
                state=state,
            )
            return f"moved to {data['street']}, {city} {state} {postcode}"
        if kind == "dob_swap":
            born = person.date_of_birth
            if born.day > 12 or born.day == born.month:
                return None
            swapped = dt.date(born.year, born.day, born.month)
            data["date_of_birth"] = swapped.isoformat()
            return f"dob {born} -> {swapped}"
        if kind == "dob_digit":
            new_dob = dob_digit(person.date_of_birth, rng)
            if new_dob is None:
                return None
            data["date_of_birth"] = new_dob.isoformat()
            return f"dob {person.date_of_birth} -> {new_dob}"
        if kind == "case_punct":
            done = case_punct(data, rng)
            return "; ".join(done) if done else None
        raise ValueError(f"unknown kind {kind}")

    def family(self) -> Made | None:
        rng = self.rng
        if not self.household_ids:
            return None
        members = self.households[rng.choice(self.household_ids)]
        person = rng.choice(members)
        data = base_payload(person, PEOPLE, rng)
        other = next(p for p in members if p is not person)
        note = f"{person.role} {person.first_name} (b. {person.date_of_birth}); other: {other.role} {other.first_name} (b. {other.date_of_birth})"
        extra = weighted(
            rng,
            ("none", "nickname", "case_punct", "missing_optional", "typo"),
            (50, 15, 15, 10, 10),
        )
        if extra != "none":
            more = self.corrupt(extra, person, data, PEOPLE)
            if more:
                note += f"; {extra}: {more}"
        return Made(PEOPLE, data, person.id, person.id, self.relatives_of(person), note)

    def absent(self) -> Made | None:
        rng = self.rng
        how = weighted(rng, ("outsider", "relative", "sibling", "namesake"), (40, 20, 20, 20))
        endpoint = LEADS if rng.random() < 0.2 else PEOPLE
        if how == "outsider":
            outsider = self.outsiders.person()
            data = base_payload(outsider, endpoint, rng)
            return Made(endpoint, data, None, None, frozenset(), "not stored")
        stored = rng.choice(self.people)
        if how == "namesake":
            other = self.outsiders.person(
                group=stored.group,
                sex=stored.sex,
                first_name=stored.first_name,
                last_name=stored.last_name,
            )
            if abs((other.date_of_birth - stored.date_of_birth).days) < 400:
                return None
            note = f"namesake of stored {stored.first_name} {stored.last_name} (b. {stored.date_of_birth}), born {other.date_of_birth}"
            data = base_payload(other, endpoint, rng)
            return Made(endpoint, data, None, stored.id, frozenset(), note)
        if how == "relative":
            role = rng.choice(("parent", "child"))
            if role == "child" and stored.date_of_birth.year > 1984:
                role = "parent"
            if role == "parent" and stored.date_of_birth.year < 1975:
                return None
        else:
            role = "twin" if rng.random() < 0.4 else "sibling"
        household = self.households.get(stored.household, []) if stored.household else []
        mate = self.outsiders.relative(stored, role, avoid_names=[p.first_name for p in household])
        if mate is None:
            return None
        note = (
            f"unstored {role} {mate.first_name} (b. {mate.date_of_birth}) of stored "
            f"{stored.first_name} {stored.last_name} (b. {stored.date_of_birth}), sharing e-mail, phone, address"
        )
        relatives = self.relatives_of(stored) | {stored.id}
        data = base_payload(mate, endpoint, rng)
        return Made(endpoint, data, None, stored.id, relatives, note)


def same_name_households(
    rng: random.Random, taken: Generator, count: int, *, household: int, number: int
) -> tuple[list[Person], list[Query]]:
    """``count`` households of a parent and a child of one given name, one of them stored.

    Returns the stored people and, per household, a query for the unstored member
    (``same_name_relative``, the licence left out of seven in ten: the hole a licence
    would close) and one for the stored member with a corruption of the usual kinds
    (``same_name_stored``). Households are numbered after ``household``, queries after
    ``number``; ``taken`` keeps e-mails, phones, licences and ids unique.
    """
    gen = Generator(rng, taken=taken)
    people: list[Person] = []
    maker = QueryMaker(rng, gen, gen, people)
    corruptions = {k: w for k, w in KIND_WEIGHTS.items() if k not in ("absent", "family")}
    queries: list[Query] = []

    def add(kind: str, endpoint: str, data: dict[str, Any], stored: Person, note: str) -> None:
        expected = stored.id if kind == "same_name_stored" else None
        relatives = frozenset() if expected else frozenset({stored.id})
        queries.append(
            Query(
                number=number + len(queries) + 1,
                kind=kind,
                endpoint=endpoint,
                person_data=data,
                expected=expected,
                source=stored.id,
                relatives=relatives,
                note=note,
            )
        )

    for _ in range(ATTEMPTS):
        if len(people) >= count:
            break
        role = rng.choice(("parent", "child"))
        stored = gen.person(dob=gen.dob(1950, 1990) if role == "parent" else gen.dob(1968, 2008))
        stored.household, stored.role = household + len(people) + 1, role
        mate = gen.namesake_relative(stored, "child" if role == "parent" else "parent")
        if mate is None:
            continue
        endpoint = LEADS if rng.random() < 0.2 else PEOPLE
        data = base_payload(mate, endpoint, rng)
        if rng.random() < 0.7:
            data.pop("drivers_license", None)
        about = (
            f"{stored.first_name} {stored.last_name}: stored {role} b. {stored.date_of_birth}, "
            f"unstored {mate.role} b. {mate.date_of_birth}"
        )
        licence = "with licence" if "drivers_license" in data else "no licence"
        add(
            "same_name_relative",
            endpoint,
            data,
            stored,
            f"the unstored one asked, {licence}; {about}",
        )
        for _ in range(100):
            kind = weighted(rng, corruptions, corruptions.values())
            endpoint = maker.endpoint_for(stored)
            data = base_payload(stored, endpoint, rng)
            done = maker.corrupt(kind, stored, data, endpoint)
            if done is not None:
                break
        else:
            raise GenerationError("could not corrupt a stored namesake")
        add("same_name_stored", endpoint, data, stored, f"{kind}: {done}; {about}")
        people.append(stored)
    if len(people) < count:
        raise GenerationError("could not make the households of one name")
    return people, queries


def _state_code(state: str) -> str:
    full = {v: k for k, v in names.STATE_NAMES.items()}
    return full.get(state, state)


def generate(seed: int, people: int, queries: int, namesakes: int = NAMESAKES) -> DataSet:
    """The store and the queries for one seed; then ``namesakes`` households of one name
    (drawn last: the store and queries before them are the same for any ``namesakes``)."""
    rng = random.Random(seed)
    gen, stored, households = generate_store(rng, people)
    outsiders = Generator(random.Random(rng.getrandbits(64)), taken=gen)
    maker = QueryMaker(random.Random(rng.getrandbits(64)), gen, outsiders, stored)
    kinds = maker.rng.choices(list(KIND_WEIGHTS), weights=list(KIND_WEIGHTS.values()), k=queries)
    made = [maker.make(kind) for kind in kinds]
    more, asked = same_name_households(
        random.Random(rng.getrandbits(64)), gen, namesakes, household=households, number=len(made)
    )
    return DataSet(
        people=stored + more,
        queries=made + asked,
        households=households,
        seed=seed,
        namesakes=len(more),
    )


@dataclass
class Summary:
    people: int
    contacts: int
    leads: int
    households: int
    queries: int
    by_kind: dict[str, int] = field(default_factory=dict)


def summarise(data: DataSet) -> Summary:
    by_kind: dict[str, int] = {}
    for query in data.queries:
        by_kind[query.kind] = by_kind.get(query.kind, 0) + 1
    contacts = sum(1 for p in data.people if p.kind == CONTACT)
    return Summary(
        people=len(data.people),
        contacts=contacts,
        leads=len(data.people) - contacts,
        households=data.households,
        queries=len(data.queries),
        by_kind=by_kind,
    )
