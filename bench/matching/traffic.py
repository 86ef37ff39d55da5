"""A second matching benchmark: a rider-training CRM's store and the bookings it receives.

``bench/matching/generate.py`` corrupts one field at a time. Real traffic is messier,
and this generator is written from how CRM data goes wrong at a rider-training
business, not from any figure of the matcher's:

- **The store** (``--people``, default 20,000): riders from the communities the
  business serves (``traffic_names.COMMUNITIES``), e-mails made the way people make
  them (first.last, initial+last, a nickname and a birth year, a family mailbox), AU
  mobiles, a landline for some households, VIC/NSW/QLD addresses and the state's
  licence format. A third of the people live in households: couples (married names,
  a shared family e-mail or landline), siblings, twins (one letter apart sometimes:
  Minh/Binh), and parents and children of one given name (Jr. and Sr., 18-40 years
  apart). Household members share the address and often the e-mail or phone.
- **Positives** (60 % of the queries): a later booking of a stored rider, damaged in
  one category (``DAMAGE``): a new e-mail or phone, moved house, married name, a
  nickname or full form, truncation, keyboard typos, OCR slips (rn/m, cl/d, 0/O, 1/l),
  date-of-birth slips (one digit, day/month, the year's last two digits swapped), no
  licence, case and spacing, given and family name swapped, and three changes at once.
  Bookings often lack a licence (a learner, or not asked): 45 % of every category.
- **Negatives** (40 %): people who are not stored and must not be matched:
  the unstored parent or child of one given name (``parent_child``), the unstored
  twin, the unstored sibling, a stranger with a stored person's common name (same
  suburb sometimes), and new people. They come with the household's shared values as a
  real family member's booking would.

Deterministic for a seed; nothing is written to the repository. ``DEV_SEED`` is the one
to iterate on; ``HELD_OUT_SEED`` is looked at once, at the end (bench/README.md).
"""

from __future__ import annotations

import datetime as dt
import random
import string
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from bench.matching import traffic_names as tn
from bench.matching.generate import CONTACT, LEAD, PEOPLE, Person, Query, make_id
from ridercrm.ids import RecordKind

DEV_SEED = 7001
HELD_OUT_SEED = 9413  # look once
TODAY = dt.date(2026, 1, 1)

DAMAGE: dict[str, float] = {
    "exact": 4,
    "new_email": 8,
    "new_phone": 7,
    "moved": 8,
    "married_name": 4,
    "nickname": 9,
    "truncation": 4,
    "typo": 8,
    "ocr": 6,
    "dob_digit": 5,
    "dob_day_month": 3,
    "dob_year_swap": 3,
    "missing_licence": 5,
    "case_spacing": 5,
    "name_order": 4,
    "multi": 10,
}
NEGATIVE: dict[str, float] = {
    "parent_child": 25,
    "twin": 20,
    "sibling": 15,
    "common_name": 20,
    "new_person": 20,
}
NEGATIVE_SHARE = 0.40
NO_LICENCE = 0.45  # bookings without a licence, every category

_KEYS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
# OCR of a scanned form: what a glyph is read as.
OCR = (("rn", "m"), ("m", "rn"), ("cl", "d"), ("d", "cl"), ("O", "0"), ("0", "O"),
       ("l", "1"), ("1", "l"), ("I", "l"), ("l", "I"), ("h", "b"), ("e", "c"), ("u", "v"),
       ("n", "h"), ("S", "5"), ("B", "8"))  # fmt: skip


def _neighbours() -> dict[str, str]:
    found: dict[str, str] = {}
    for row_index, row in enumerate(_KEYS):
        for i, ch in enumerate(row):
            near = [row[j] for j in (i - 1, i + 1) if 0 <= j < len(row)]
            for other in (row_index - 1, row_index + 1):
                if 0 <= other < len(_KEYS):
                    near += [c for c in _KEYS[other][max(0, i - 1) : i + 1]]
            found[ch] = "".join(near)
    return found


NEIGHBOURS = _neighbours()


def _split(text: str) -> list[str]:
    tokens, out = text.split(), []
    i = 0
    while i < len(tokens):
        if tokens[i] in ("De", "Di", "Lo", "Dela") and i + 1 < len(tokens):
            out.append(f"{tokens[i]} {tokens[i + 1]}")
            i += 2
        else:
            out.append(tokens[i])
            i += 1
    return out


@dataclass(frozen=True)
class Community:
    name: str
    share: float
    male: tuple[str, ...]
    female: tuple[str, ...]
    family: tuple[str, ...]


COMMUNITIES = tuple(
    Community(
        name,
        share,
        tuple(_split(male)) + (tn.COMPOUND_GIVEN[:2] if name == "filipino" else ()),
        tuple(_split(female)) + (tn.COMPOUND_GIVEN[2:] if name == "filipino" else ()),
        tuple(_split(family)),
    )
    for name, (share, male, female, family) in tn.COMMUNITIES.items()
)


@dataclass
class Traffic:
    people: list[Person]
    queries: list[Query]
    seed: int


class _Maker:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.emails: set[str] = set()
        self.phones: set[str] = set()
        self.licences: set[str] = set()

    # --- values -------------------------------------------------------------------

    def community(self) -> Community:
        return self.rng.choices(COMMUNITIES, weights=[c.share for c in COMMUNITIES])[0]

    def given(self, community: Community, sex: str) -> str:
        return self.rng.choice(community.male if sex == "M" else community.female)

    def birth(self, lo: int = 17, hi: int = 70) -> dt.date:
        age = self.rng.triangular(lo, hi, 24)
        return TODAY - dt.timedelta(days=int(age * 365.25) + self.rng.randrange(365))

    def mobile(self) -> str:
        while True:
            digits = "04" + "".join(self.rng.choices(string.digits, k=8))
            if digits not in self.phones:
                self.phones.add(digits)
                return self.rng.choice(
                    (digits, f"{digits[:4]} {digits[4:7]} {digits[7:]}", "+61" + digits[1:],
                     f"+61 {digits[1:4]} {digits[4:7]} {digits[7:]}")
                )  # fmt: skip

    def landline(self, state: str) -> str:
        area = {"VIC": "03", "NSW": "02", "QLD": "07"}[state]
        while True:
            digits = area + self.rng.choice("5789") + "".join(self.rng.choices(string.digits, k=7))
            if digits not in self.phones:
                self.phones.add(digits)
                return f"({area}) {digits[2:6]} {digits[6:]}"

    def licence(self, state: str) -> str:
        while True:
            if state == "NSW":
                value = "".join(self.rng.choices(string.digits, k=8))
            elif state == "QLD":
                value = "".join(self.rng.choices(string.digits, k=9))
            else:  # VIC: 9 digits, older ones 8
                value = "".join(self.rng.choices(string.digits, k=self.rng.choice((8, 9, 9))))
            if value not in self.licences:
                self.licences.add(value)
                return value

    def email(self, given: str, family: str, born: dt.date) -> str:
        rng = self.rng
        g = given.lower().replace(" ", "").replace("'", "")
        f = family.lower().replace(" ", "").replace("'", "").replace("-", "")
        short = tn.SHORT_FORMS.get(given, (given,))[0].lower().replace(" ", "")
        patterns = (
            f"{g}.{f}", f"{g}{f}", f"{g[0]}{f}", f"{g}_{f}", f"{g}{born.year % 100:02d}",
            f"{short}{f[:4]}{rng.randrange(100)}", f"{f}.{g}", f"{g}.{f}{born.year}",
            f"{g[0]}.{f}{rng.randrange(10, 99)}", f"{short}_{born.year % 100:02d}",
        )  # fmt: skip
        for _ in range(50):
            local = rng.choice(patterns)
            domain = rng.choices(*zip(*tn.EMAIL_DOMAINS, strict=True))[0]
            value = f"{local}@{domain}"
            if value not in self.emails:
                self.emails.add(value)
                return value
            patterns = (f"{local}{rng.randrange(1000)}",)
        raise RuntimeError("no free e-mail")

    def family_email(self, family: str) -> str:
        f = family.lower().replace(" ", "").replace("'", "").replace("-", "")
        while True:
            value = f"{self.rng.choice(('the', 'team', ''))}{f}{self.rng.choice(('family', 's', 'home', str(self.rng.randrange(100))))}@{self.rng.choice(('bigpond.com', 'gmail.com', 'optusnet.com.au'))}"
            if value not in self.emails:
                self.emails.add(value)
                return value

    def address(self) -> tuple[str, str, str, str]:
        state, postcode, suburb = self.rng.choice(tn.SUBURBS)
        number = str(self.rng.randrange(1, 400))
        if self.rng.random() < 0.2:
            number = f"{self.rng.randrange(1, 30)}/{number}"
        if self.rng.random() < 0.15:
            street = self.rng.choice(tn.STREETS)
        else:
            street = f"{self.rng.choice(tn.STREET_WORDS)} {self.rng.choice(tn.STREET_TYPES)}"
        return f"{number} {street}", suburb, postcode, state

    # --- people -------------------------------------------------------------------

    def person(
        self,
        community: Community,
        sex: str,
        *,
        given: str | None = None,
        family: str | None = None,
        born: dt.date | None = None,
        home: tuple[str, str, str, str] | None = None,
        stored: bool = True,
    ) -> Person:
        rng = self.rng
        given = given or self.given(community, sex)
        family = family or rng.choice(community.family)
        born = born or self.birth()
        street, city, postcode, state = home or self.address()
        kind = LEAD if rng.random() < 0.2 else CONTACT
        return Person(
            id=make_id(rng, RecordKind.CONTACT if kind == CONTACT else RecordKind.LEAD)
            if stored
            else "",
            kind=kind,
            first_name=given,
            last_name=family,
            sex=sex,
            group=community.name,
            date_of_birth=born,
            email=self.email(given, family, born),
            postcode=postcode,
            city=city,
            state=state,
            street=street,
            mobile_phone=self.mobile() if rng.random() < 0.93 else None,
            home_phone=None,
            drivers_license=self.licence(state) if rng.random() < 0.8 else None,
            license_type=rng.choice(("CYL", "CYP", None)),
            country="Australia",
            lead_source=rng.choice(("Web", "Phone Inquiry", "Other")) if kind == LEAD else None,
            opt_in=rng.random() < 0.5,
        )


def _share(member: Person, head: Person, rng: random.Random, email: float, phone: float) -> Person:
    """A household member: the head's address; the head's e-mail or phone sometimes."""
    changes: dict[str, Any] = {
        "street": head.street,
        "city": head.city,
        "postcode": head.postcode,
        "state": head.state,
        "home_phone": head.home_phone,
    }
    if rng.random() < email:
        changes["email"] = head.email
    if rng.random() < phone:
        changes["mobile_phone"] = head.mobile_phone
    return replace(member, **changes)


def _one_letter_twin(given: str, names: tuple[str, ...], rng: random.Random) -> str | None:
    """A twin's name one letter from the other's (Minh/Binh), when the community has one."""
    close = [
        n
        for n in names
        if n != given
        and len(n) == len(given)
        and sum(a != b for a, b in zip(n, given, strict=True)) == 1
    ]
    return rng.choice(close) if close else None


@dataclass
class _Household:
    stored: list[Person]
    unstored: dict[str, Person]  # negative category -> the unstored member


def _household(m: _Maker, head_stored: bool = True) -> _Household:
    """One household: a head, maybe a partner, children; some members not stored."""
    rng = m.rng
    c = m.community()
    sex = rng.choice("MF")
    head = m.person(c, sex, born=m.birth(38, 62))
    if rng.random() < 0.25:
        head = replace(head, home_phone=m.landline(head.state))
    shared_email = head.email if rng.random() < 0.5 else m.family_email(head.last_name)
    if shared_email != head.email and rng.random() < 0.4:
        head = replace(head, email=shared_email)
    stored = [head]
    unstored: dict[str, Person] = {}
    if rng.random() < 0.6:  # a partner; married name
        partner = m.person(c, "F" if sex == "M" else "M", family=head.last_name,
                           born=head.date_of_birth + dt.timedelta(days=rng.randrange(-2500, 2500)))  # fmt: skip
        stored.append(_share(partner, head, rng, email=0.35, phone=0.1))
    born_child = head.date_of_birth + dt.timedelta(days=int(365.25 * rng.uniform(22, 36)))
    if born_child > TODAY - dt.timedelta(days=365 * 16):
        born_child = TODAY - dt.timedelta(days=365 * 16 + rng.randrange(900))
    kind = rng.choices(("parent_child", "twin", "sibling", "none"), weights=(4, 3, 3, 1))[0]
    child_sex = rng.choice("MF")
    if kind == "parent_child":
        # Jr.: the head's sex and given name; one of the two is not stored
        junior = m.person(c, sex, given=head.first_name, family=head.last_name, born=born_child)
        junior = _share(junior, replace(head, email=shared_email), rng, email=0.35, phone=0.15)
        if rng.random() < 0.5:  # the son stored, the father not
            stored = [p for p in stored if p is not head] + [junior]
            unstored["parent_child"] = head
        else:
            unstored["parent_child"] = junior
    elif kind == "twin":
        first = m.person(c, child_sex, family=head.last_name, born=born_child)
        first = _share(first, replace(head, email=shared_email), rng, email=0.3, phone=0.1)
        names = c.male if child_sex == "M" else c.female
        given = _one_letter_twin(first.first_name, names, rng) if rng.random() < 0.3 else None
        while given is None or given == first.first_name:
            given = m.given(c, child_sex if rng.random() < 0.6 else rng.choice("MF"))
        second = m.person(c, child_sex, given=given, family=head.last_name, born=born_child)
        second = _share(second, replace(head, email=shared_email), rng, email=0.3, phone=0.1)
        stored.append(first)
        unstored["twin"] = second
    elif kind == "sibling":
        first = m.person(c, child_sex, family=head.last_name, born=born_child)
        first = _share(first, replace(head, email=shared_email), rng, email=0.3, phone=0.1)
        other_born = born_child + dt.timedelta(days=rng.choice((-1, 1)) * rng.randrange(400, 3000))
        if other_born > TODAY - dt.timedelta(days=365 * 16):
            other_born = born_child - dt.timedelta(days=rng.randrange(400, 3000))
        given = first.first_name
        while given == first.first_name:
            given = m.given(c, rng.choice("MF"))
        second = m.person(c, child_sex, given=given, family=head.last_name, born=other_born)
        second = _share(second, replace(head, email=shared_email), rng, email=0.3, phone=0.1)
        stored.append(first)
        unstored["sibling"] = second
    return _Household(stored, unstored)


# --- damage -------------------------------------------------------------------------


def _letters(text: str) -> list[int]:
    return [i for i, ch in enumerate(text) if ch.isalpha()]


def keyboard_typo(text: str, rng: random.Random) -> str:
    at = rng.choice(_letters(text))
    ch = text[at]
    what = rng.random()
    if what < 0.5:
        near = NEIGHBOURS.get(ch.lower(), "")
        if near:
            new = rng.choice(near)
            return text[:at] + (new.upper() if ch.isupper() else new) + text[at + 1 :]
    if what < 0.7 and len(text) > 3:
        return text[:at] + text[at + 1 :]  # dropped
    if what < 0.85 and at + 1 < len(text) and text[at + 1].isalpha():
        return text[:at] + text[at + 1] + text[at] + text[at + 2 :]  # transposed
    return text[:at] + ch + text[at:]  # doubled


def ocr_slip(text: str, rng: random.Random) -> str | None:
    found = [(a, b) for a, b in OCR if a in text]
    if not found:
        return None
    a, b = rng.choice(found)
    starts = [i for i in range(len(text)) if text.startswith(a, i)]
    at = rng.choice(starts)
    return text[:at] + b + text[at + len(a) :]


def short_form(given: str, rng: random.Random) -> str | None:
    """A nickname of the stored name, or the formal name of a stored nickname."""
    if given in tn.SHORT_FORMS:
        return rng.choice(tn.SHORT_FORMS[given])
    formal = [f for f, shorts in tn.SHORT_FORMS.items() if given in shorts]
    return rng.choice(formal) if formal else None


def truncate(given: str, rng: random.Random) -> str | None:
    plain = given.replace(" ", "")
    if len(plain) < 6:
        return None
    return plain[: rng.randrange(3, min(5, len(plain) - 2) + 1)]


def date_digit(date: dt.date, rng: random.Random) -> dt.date | None:
    text = date.strftime("%Y%m%d")
    for _ in range(20):
        at = rng.choice((2, 3, 5, 6, 7))  # century digits are never mistyped
        digit = text[at]
        new = rng.choice([d for d in string.digits if d != digit])
        try:
            return dt.datetime.strptime(text[:at] + new + text[at + 1 :], "%Y%m%d").date()
        except ValueError:
            continue
    return None


def _date(date: dt.date, how: str) -> dt.date | None:
    try:
        if how == "day_month":
            return (
                None
                if date.day > 12 or date.day == date.month
                else date.replace(month=date.day, day=date.month)
            )
        if how == "year_swap":
            year = date.year
            swapped = year - year % 100 + (year % 10) * 10 + (year // 10) % 10
            # a year nobody booking a course was born in is caught by the form
            plausible = 1930 <= swapped <= TODAY.year - 15
            return date.replace(year=swapped) if swapped != year and plausible else None
    except ValueError:
        return None
    return None


def case_spacing(text: str, rng: random.Random) -> str:
    how = rng.randrange(4)
    if how == 0:
        return text.upper()
    if how == 1:
        return text.lower()
    if how == 2:
        return f"  {text} "
    return text.replace(" ", "") if " " in text else text[:1].lower() + text[1:].upper()


def payload(p: Person, rng: random.Random, licence: bool) -> dict[str, Any]:
    data: dict[str, Any] = {
        "first_name": p.first_name,
        "last_name": p.last_name,
        "date_of_birth": p.date_of_birth.isoformat(),
        "email": p.email,
        "postcode": p.postcode,
        "street": p.street,
        "city": p.city,
        "state": p.state,
        "lead_source": rng.choice(("Web", "Phone Inquiry", "Partner Referral", "Other")),
    }
    if p.mobile_phone and rng.random() < 0.92:
        data["mobile_phone"] = p.mobile_phone
    elif p.home_phone:
        data["mobile_phone"] = p.home_phone
    if licence and p.drivers_license:
        data["drivers_license"] = p.drivers_license
    return data


class _Damager:
    def __init__(self, m: _Maker) -> None:
        self.m = m
        self.rng = m.rng

    def apply(self, how: str, p: Person, data: dict[str, Any]) -> str | None:
        """Damage ``data`` (a booking of ``p``) one way; a note, or None when it can't."""
        rng, m = self.rng, self.m
        if how == "exact":
            return "as stored"
        if how == "new_email":
            data["email"] = m.email(data["first_name"], data["last_name"], p.date_of_birth)
            return "new e-mail"
        if how == "new_phone":
            data["mobile_phone"] = m.mobile()
            return "new phone"
        if how == "moved":
            street, city, postcode, state = m.address()
            data.update(street=street, city=city, postcode=postcode, state=state)
            if rng.random() < 0.4:
                data.pop("drivers_license", None)  # an interstate move: a new licence
                if rng.random() < 0.5:
                    data["drivers_license"] = m.licence(state)
            return "moved house"
        if how == "married_name":
            if p.sex != "F":
                return None
            community = m.community()
            data["last_name"] = rng.choice(community.family)
            if data["last_name"] == p.last_name:
                return None
            if rng.random() < 0.5:
                data["email"] = m.email(p.first_name, data["last_name"], p.date_of_birth)
            if rng.random() < 0.15:
                data["last_name"] = f"{p.last_name}-{data['last_name']}"
            return "married name"
        if how == "nickname":
            new = short_form(p.first_name, rng)
            if new is None:
                return None
            data["first_name"] = new
            return f"{p.first_name} -> {new}"
        if how == "truncation":
            new = truncate(p.first_name, rng)
            if new is None:
                return None
            data["first_name"] = new
            return f"{p.first_name} -> {new}"
        if how == "typo":
            fields = ("first_name", "first_name", "last_name", "last_name", "email", "street")
            field = rng.choice([f for f in fields if data.get(f)])
            data[field] = keyboard_typo(data[field], rng)
            if rng.random() < 0.25:  # a second, elsewhere
                other = "last_name" if field != "last_name" else "first_name"
                data[other] = keyboard_typo(data[other], rng)
            return f"typo in {field}"
        if how == "ocr":
            fields = [
                f
                for f in ("first_name", "last_name", "street", "email", "drivers_license")
                if data.get(f)
            ]
            rng.shuffle(fields)
            for field in fields:
                new = ocr_slip(data[field], rng)
                if new is not None:
                    data[field] = new
                    return f"OCR in {field}"
            return None
        if how == "dob_digit":
            date = date_digit(p.date_of_birth, rng)
            if date is None:
                return None
            data["date_of_birth"] = date.isoformat()
            return "birth date: one digit"
        if how in ("dob_day_month", "dob_year_swap"):
            date = _date(p.date_of_birth, how[4:])
            if date is None:
                return None
            data["date_of_birth"] = date.isoformat()
            return how
        if how == "missing_licence":
            if "drivers_license" not in data:
                return None
            del data["drivers_license"]
            return "no licence"
        if how == "case_spacing":
            for field in ("first_name", "last_name", "street", "email"):
                if data.get(field) and rng.random() < 0.6:
                    data[field] = case_spacing(data[field], rng)
            return "case and spacing"
        if how == "name_order":
            data["first_name"], data["last_name"] = data["last_name"], data["first_name"]
            return "names swapped"
        if how == "multi":
            pool = ["new_email", "new_phone", "moved", "nickname", "typo", "dob_digit",
                    "ocr", "missing_licence", "dob_year_swap", "married_name", "truncation"]  # fmt: skip
            rng.shuffle(pool)
            notes = []
            for each in pool:
                if len(notes) == 3:
                    break
                if each in ("nickname", "truncation") and any("->" in n for n in notes):
                    continue
                note = self.apply(each, p, data)
                if note:
                    notes.append(note)
            return "; ".join(notes) if len(notes) == 3 else None
        raise ValueError(how)

    def noise(self, data: dict[str, Any]) -> None:
        """What every booking may carry: the optional fields left out."""
        rng = self.rng
        if rng.random() < 0.1:
            data.pop("street", None)
        if rng.random() < 0.1:
            data.pop("city", None)
        if rng.random() < 0.05:
            data.pop("mobile_phone", None)


def generate(seed: int, people: int = 20_000, queries: int = 5_000) -> Traffic:
    rng = random.Random(seed)
    m = _Maker(rng)
    store: list[Person] = []
    unstored: dict[str, list[tuple[Person, frozenset[str]]]] = {k: [] for k in NEGATIVE}
    while len(store) < people:
        if rng.random() < 0.16:
            house = _household(m)
            ids = frozenset(p.id for p in house.stored)
            store.extend(house.stored)
            for kind, person in house.unstored.items():
                unstored[kind].append((person, ids))
        else:
            store.append(m.person(m.community(), rng.choice("MF")))
    store = store[:people]
    stored_ids = {p.id for p in store}
    damager = _Damager(m)
    made: list[Query] = []
    negatives = int(queries * NEGATIVE_SHARE)
    kinds = list(NEGATIVE)
    number = 0
    for _ in range(negatives):
        kind = rng.choices(kinds, weights=[NEGATIVE[k] for k in kinds])[0]
        person, relatives = _negative(kind, m, store, unstored)
        data = payload(person, rng, licence=rng.random() >= NO_LICENCE)
        damager.noise(data)
        if rng.random() < 0.15:  # the rest of a booking's damage happens to them too
            damager.apply(rng.choice(("typo", "case_spacing", "new_phone")), person, data)
        number += 1
        made.append(
            Query(number, kind, PEOPLE, data, None, None, relatives & stored_ids, "not stored")
        )
    damage = list(DAMAGE)
    while len(made) < queries:
        kind = rng.choices(damage, weights=[DAMAGE[k] for k in damage])[0]
        person = rng.choice(store)
        data = payload(person, rng, licence=kind == "missing_licence" or rng.random() >= NO_LICENCE)
        note = damager.apply(kind, person, data)
        if note is None:
            continue
        if kind != "missing_licence":
            damager.noise(data)
        number += 1
        made.append(Query(number, kind, PEOPLE, data, person.id, person.id, frozenset(), note))
    rng.shuffle(made)
    return Traffic(store, made, seed)


def _negative(
    kind: str,
    m: _Maker,
    store: list[Person],
    unstored: dict[str, list[tuple[Person, frozenset[str]]]],
) -> tuple[Person, frozenset[str]]:
    rng = m.rng
    if unstored.get(kind):
        pool = unstored[kind]
        return pool.pop(rng.randrange(len(pool)))
    if kind in ("parent_child", "twin", "sibling"):
        kind = "common_name"  # the store ran out of such households
    if kind == "common_name":
        # someone with a stored person's name: the commonest names collide most
        other = rng.choice(store)
        c = next(c for c in COMMUNITIES if c.name == other.group)
        person = m.person(c, other.sex, given=other.first_name, family=other.last_name)
        if rng.random() < 0.3:
            person = replace(person, postcode=other.postcode, city=other.city, state=other.state)
        return person, frozenset()
    return m.person(m.community(), rng.choice("MF")), frozenset()


def iter_summary(traffic: Traffic) -> Iterator[str]:
    from collections import Counter

    yield f"people {len(traffic.people)}, queries {len(traffic.queries)}"
    yield str(Counter(q.kind for q in traffic.queries))
