"""The baseline: Salesforce's Standard Contact Matching Rule, applied in-process.

What is implemented, and from where
-----------------------------------
Salesforce Help, "Standard Contact Matching Rule and Standard Lead Matching Rule",
gives the matching equation (both rules share it)::

    (First Name AND Last Name AND Title AND Account Name)
    OR (First Name AND Last Name AND Email)
    OR (First Name AND Last Name AND Phone AND Account Name)
    OR (First Name AND Last Name AND Mailing Street AND (City OR ZIP OR Phone))
    OR (First Name AND Last Name AND Mailing Street AND Title)
    OR (First Name AND Last Name AND Title AND Email)
    OR (First Name AND Last Name AND Phone)

Our people have no title and no account, so the branches that can hold are::

    FN AND LN AND (Email OR Phone OR (Street AND (City OR ZIP OR Phone)))

and the criteria of each field, from the same page and from "Matching Methods Used with
Matching Rules" / "Matching Algorithms Used with Matching Methods":

- First name: Fuzzy: First Name -- algorithms Exact, Initials, Jaro-Winkler distance,
  Metaphone 3, Name Variant; scoring Maximum; threshold 85.
- Last name: Fuzzy: Last Name -- Exact, Keyboard Distance, Metaphone 3; Maximum; 90.
- Special handling of names: when both first and last name have values they are
  also compared transposed (first against last), for data-entry mistakes.
- Email: Exact (case-insensitive), threshold 100.
- Phone: Fuzzy: Phone -- the number is cut into sections compared exactly and weighted:
  international code 10 %, area code 50 %, next 3 digits 30 %, last 4 digits 10 %;
  weighted average; threshold 80 ("works best with North American data"). For an
  Australian number we take the country code (61 when the number is written
  nationally), then the 9-digit national number as 3 + 3 + 3 digits
  (0412 345 678 -> 61 | 412 | 345 | 678). The request carries only a mobile, so the
  rule's Phone is the stored mobile_phone against the query's.
- Mailing street: Fuzzy: Street -- sections weighted: street number (Exact, 20 %),
  street name (Edit Distance, 50 %), street suffix (Exact, 5 %), suite number
  (Exact, 25 %); weighted average; threshold 80. (The section weights are the ones we
  know from that Help page; the copy the harness's author could retrieve while
  writing this was cut off before them.) Suffixes compare in one spelling
  (St = Street); a suite absent on both sides counts as equal.
- City: Fuzzy: City -- Edit Distance, Exact; Maximum; threshold 85.
- ZIP: Exact on the 4-digit postcode.
- Blank fields: "don't match" -- a field blank on either side never matches.
- Algorithm scores (0-100): Exact 100/0; Initials 100 when one side is a single
  letter (a dot allowed) equal to the other's first letter ("Jonathan" and "J");
  Jaro-Winkler 100 x similarity (rapidfuzz; Salesforce's examples Jon/Jonathan 85 and
  Dan/Daniel 88 come out the same); Metaphone 3 is proprietary, so jellyfish's
  Metaphone stands in for it: 100 when the codes agree; Name Variant: 100 when the
  two names are variants in the harness's nickname table (which stands in for
  Salesforce's list and knows every variant the generator uses -- in the baseline's
  favour); Edit Distance 100 x (1 - Levenshtein / longer length) (Salesforce's
  example "VP Sales" / "VP of Sales" = 73 comes out the same); Keyboard Distance as
  Edit Distance where a substitution between adjacent QWERTY keys costs 0.5 (the
  Help page describes it without the weights; 0.5 is our choice).
- Comparisons are case-insensitive (documented); we also fold accents and collapse
  spaces, which can only help the baseline.

Salesforce reports every matching record; a match operation answers one id, so when
several stored people satisfy the rule the baseline answers the best-scoring one:
the highest sum of the scores of the fields that matched (first name + last name +
e-mail, phone, street, city and postcode scores where they passed), ties broken as
the service breaks them (docs/decisions.md, "Operations 3 and 4 (matching)": contact
before lead, then id; all stored people have the same update time). The rule does not look at the date of birth, the licence or the
state, so neither does the baseline. ``crm/leads/match`` queries are answered from
the leads only.

Blocking only saves time, it changes no answer: the candidates are every stored
person who shares the query's e-mail, or the first 6 digits of its national phone
number (the phone criterion cannot reach 80 without area code and next 3 digits),
or its postcode, or a city within the city criterion's threshold -- so every person
who could satisfy one of the branches is a candidate.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import jellyfish
from rapidfuzz.distance import JaroWinkler, Levenshtein

from bench.matching import names
from bench.matching.generate import CONTACT, LEADS, Person, Query, name_variants

FIRST_NAME_THRESHOLD = 85.0
LAST_NAME_THRESHOLD = 90.0
PHONE_THRESHOLD = 80.0
STREET_THRESHOLD = 80.0
CITY_THRESHOLD = 85.0

_SPACES = re.compile(r"\s+")
_NOT_DIGIT = re.compile(r"\D")
_UNIT = re.compile(r"^(?:unit|apt|flat|u)\s*(\w+)\s*,?\s*(.*)$")
_SLASH_UNIT = re.compile(r"^(\w+)\s*/\s*(.*)$")
_NUMBER = re.compile(r"^(\d+[a-z]?)\s+(.*)$")

_SUFFIXES: dict[str, str] = {}
for _long, _short in names.STREET_TYPES:
    _SUFFIXES[_long.casefold()] = _long.casefold()
    _SUFFIXES[_short.casefold()] = _long.casefold()
_SUFFIXES.update({"str": "street", "av": "avenue", "crt": "court", "cr": "crescent"})


def fold(text: str | None) -> str:
    """Case, accents and spacing folded; "" for blank."""
    if not text:
        return ""
    decomposed = unicodedata.normalize("NFKD", str(text))
    plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return _SPACES.sub(" ", plain.casefold()).strip()


# --- algorithms ------------------------------------------------------------------


def _adjacent_keys() -> dict[str, set[str]]:
    rows = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
    near: dict[str, set[str]] = defaultdict(set)
    for r, row in enumerate(rows):
        for c, ch in enumerate(row):
            for rr in (r - 1, r, r + 1):
                if 0 <= rr < len(rows):
                    for cc in (c - 1, c, c + 1):
                        if 0 <= cc < len(rows[rr]) and rows[rr][cc] != ch:
                            near[ch].add(rows[rr][cc])
    return near


ADJACENT = _adjacent_keys()


def keyboard_distance_score(a: str, b: str) -> float:
    """Edit distance where substituting a neighbouring key costs 0.5, as a 0-100 score."""
    if not a or not b:
        return 0.0
    if a == b:
        return 100.0
    previous = [float(j) for j in range(len(b) + 1)]
    for i, ca in enumerate(a, 1):
        current = [float(i)] + [0.0] * len(b)
        for j, cb in enumerate(b, 1):
            if ca == cb:
                cost = 0.0
            elif cb in ADJACENT.get(ca, ()):
                cost = 0.5
            else:
                cost = 1.0
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
        previous = current
    return max(0.0, 100.0 * (1 - previous[-1] / max(len(a), len(b))))


def edit_distance_score(a: str, b: str) -> float:
    if not a or not b:
        return 0.0
    return 100.0 * (1 - Levenshtein.distance(a, b) / max(len(a), len(b)))


@lru_cache(maxsize=200_000)
def metaphone(text: str) -> str:
    letters = "".join(ch for ch in text if ch.isalpha() or ch == " ")
    return jellyfish.metaphone(letters) if letters.strip() else ""


@lru_cache(maxsize=50_000)
def variants(name: str) -> frozenset[str]:
    """The name-variant family of a folded given name (from the nickname table)."""
    found = {name}
    for candidate in _VARIANT_INDEX.get(name, ()):
        found.add(candidate)
    return frozenset(found)


def _variant_index() -> dict[str, set[str]]:
    index: dict[str, set[str]] = defaultdict(set)
    all_names = set(names.NICKNAMES)
    for nicks in names.NICKNAMES.values():
        all_names.update(nicks)
    for name in all_names:
        for other in name_variants(name):
            index[fold(name)].add(fold(other))
            index[fold(other)].add(fold(name))
    return index


_VARIANT_INDEX = _variant_index()


def _is_initial(text: str) -> bool:
    stripped = text.rstrip(".")
    return len(stripped) == 1 and stripped.isalpha()


@lru_cache(maxsize=500_000)
def first_name_score(a: str, b: str) -> float:
    """Fuzzy: First Name -- maximum of Exact, Initials, Jaro-Winkler, Metaphone, Name Variant."""
    if not a or not b:
        return 0.0
    if a == b:
        return 100.0
    if (_is_initial(a) or _is_initial(b)) and a[0] == b[0]:
        return 100.0
    if b in variants(a):
        return 100.0
    code_a, code_b = metaphone(a), metaphone(b)
    if code_a and code_a == code_b:
        return 100.0
    return 100.0 * JaroWinkler.similarity(a, b)


@lru_cache(maxsize=500_000)
def last_name_score(a: str, b: str) -> float:
    """Fuzzy: Last Name -- maximum of Exact, Keyboard Distance, Metaphone."""
    if not a or not b:
        return 0.0
    if a == b:
        return 100.0
    code_a, code_b = metaphone(a), metaphone(b)
    if code_a and code_a == code_b:
        return 100.0
    return keyboard_distance_score(a, b)


# --- phone and street sections ------------------------------------------------------


def phone_sections(text: str | None) -> tuple[str, str, str, str] | None:
    """(country, area, next 3, rest) of a phone number, or None when blank or unreadable."""
    if not text:
        return None
    digits = _NOT_DIGIT.sub("", str(text))
    if digits.startswith("61") and len(digits) == 11:
        country, national = "61", digits[2:]
    elif digits.startswith("0") and len(digits) == 10:
        country, national = "61", digits[1:]
    elif len(digits) >= 7:
        country, national = "", digits
    else:
        return None
    return country, national[:3], national[3:6], national[6:]


def phone_score(a: tuple[str, str, str, str] | None, b: tuple[str, str, str, str] | None) -> float:
    if a is None or b is None:
        return 0.0
    weights = (10.0, 50.0, 30.0, 10.0)
    return sum(w for w, x, y in zip(weights, a, b, strict=True) if x == y)


@dataclass(frozen=True)
class Street:
    suite: str
    number: str
    name: str
    suffix: str


@lru_cache(maxsize=200_000)
def parse_street(text: str) -> Street | None:
    line = fold(text).replace(",", " ").replace(".", " ")
    line = _SPACES.sub(" ", line).strip()
    if not line:
        return None
    suite = ""
    unit = _UNIT.match(line)
    if unit:
        suite, line = unit.group(1), unit.group(2)
    else:
        slash = _SLASH_UNIT.match(line)
        if slash and _NUMBER.match(slash.group(2)):
            suite, line = slash.group(1), slash.group(2)
    number = ""
    numbered = _NUMBER.match(line)
    if numbered:
        number, line = numbered.group(1), numbered.group(2)
    words = line.split(" ")
    suffix = ""
    if len(words) > 1 and words[-1] in _SUFFIXES:
        suffix = _SUFFIXES[words[-1]]
        words = words[:-1]
    return Street(suite=suite, number=number, name=" ".join(words), suffix=suffix)


def street_score(a: Street | None, b: Street | None) -> float:
    if a is None or b is None:
        return 0.0
    score = 20.0 if a.number == b.number and a.number else 0.0
    score += 0.5 * edit_distance_score(a.name, b.name)
    score += 5.0 if a.suffix == b.suffix else 0.0
    score += 25.0 if a.suite == b.suite else 0.0
    return score


def city_score(a: str, b: str) -> float:
    if not a or not b:
        return 0.0
    return 100.0 if a == b else edit_distance_score(a, b)


# --- the store --------------------------------------------------------------------


@dataclass(frozen=True)
class Record:
    id: str
    is_contact: bool
    first: str
    last: str
    email: str
    phone: tuple[str, str, str, str] | None
    street: Street | None
    city: str
    postcode: str


def record_of(person: Person) -> Record:
    return Record(
        id=person.id,
        is_contact=person.kind == CONTACT,
        first=fold(person.first_name),
        last=fold(person.last_name),
        email=fold(person.email),
        phone=phone_sections(person.mobile_phone),
        street=parse_street(person.street) if person.street else None,
        city=fold(person.city),
        postcode=person.postcode,
    )


def _postcode(value: Any) -> str:
    if isinstance(value, int):
        return f"{value:04d}"
    return str(value or "").strip()


@dataclass
class Verdict:
    id: str | None
    score: float
    candidates: int  # people who satisfied the rule


class SalesforceBaseline:
    """The standard contact matching rule over the generated store."""

    def __init__(self, people: Iterable[Person]) -> None:
        self.records = [record_of(person) for person in people]
        self.by_email: dict[str, list[int]] = defaultdict(list)
        self.by_phone: dict[str, list[int]] = defaultdict(list)
        self.by_postcode: dict[str, list[int]] = defaultdict(list)
        self.by_city: dict[str, list[int]] = defaultdict(list)
        for index, record in enumerate(self.records):
            if record.email:
                self.by_email[record.email].append(index)
            if record.phone is not None:
                self.by_phone["".join(record.phone[1:3])].append(index)
            if record.postcode:
                self.by_postcode[record.postcode].append(index)
            if record.city:
                self.by_city[record.city].append(index)

    def candidates(self, email: str, phone: Any, postcode: str, city: str) -> set[int]:
        found: set[int] = set()
        if email:
            found.update(self.by_email.get(email, ()))
        if phone is not None:
            found.update(self.by_phone.get("".join(phone[1:3]), ()))
        if postcode:
            found.update(self.by_postcode.get(postcode, ()))
        if city:
            for stored_city, indexes in self.by_city.items():
                if city_score(city, stored_city) >= CITY_THRESHOLD:
                    found.update(indexes)
        return found

    def match(self, query: Query) -> Verdict:
        data = query.person_data
        first, last = fold(data.get("first_name")), fold(data.get("last_name"))
        email = fold(data.get("email"))
        phone = phone_sections(data.get("mobile_phone"))
        street = parse_street(data["street"]) if data.get("street") else None
        city = fold(data.get("city"))
        postcode = _postcode(data.get("postcode"))
        leads_only = query.endpoint == LEADS
        best: tuple[float, int, str] | None = None
        best_id: str | None = None
        satisfied = 0
        for index in self.candidates(email, phone, postcode, city):
            record = self.records[index]
            if leads_only and record.is_contact:
                continue
            score = self._score(record, first, last, email, phone, street, city, postcode)
            if score is None:
                continue
            satisfied += 1
            key = (-score, 0 if record.is_contact else 1, record.id)
            if best is None or key < best:
                best, best_id = key, record.id
        return Verdict(id=best_id, score=-best[0] if best else 0.0, candidates=satisfied)

    @staticmethod
    def _score(
        record: Record,
        first: str,
        last: str,
        email: str,
        phone: tuple[str, str, str, str] | None,
        street: Street | None,
        city: str,
        postcode: str,
    ) -> float | None:
        """The record's score when the rule holds, else None."""
        extra = 0.0
        email_ok = bool(email) and email == record.email
        if email_ok:
            extra += 100.0
        p_score = phone_score(phone, record.phone)
        phone_ok = p_score >= PHONE_THRESHOLD
        if phone_ok:
            extra += p_score
        s_score = street_score(street, record.street)
        street_ok = s_score >= STREET_THRESHOLD
        if street_ok:
            c_score = city_score(city, record.city)
            city_ok = c_score >= CITY_THRESHOLD
            zip_ok = bool(postcode) and postcode == record.postcode
            address_ok = city_ok or zip_ok or phone_ok
            if address_ok:
                extra += s_score + (c_score if city_ok else 0.0) + (100.0 if zip_ok else 0.0)
        else:
            address_ok = False
        if not (email_ok or phone_ok or address_ok):
            return None
        names_score = _names_score(first, last, record.first, record.last)
        if names_score is None:
            return None
        return names_score + extra


def _names_score(first: str, last: str, stored_first: str, stored_last: str) -> float | None:
    """First and last name both over threshold, directly or transposed; their sum."""
    best: float | None = None
    for f, l_ in ((first, last), (last, first)):
        fs = first_name_score(f, stored_first)
        if fs < FIRST_NAME_THRESHOLD:
            continue
        ls = last_name_score(l_, stored_last)
        if ls < LAST_NAME_THRESHOLD:
            continue
        if best is None or fs + ls > best:
            best = fs + ls
    return best


def run_baseline(people: Sequence[Person], queries: Sequence[Query]) -> dict[int, str | None]:
    """The baseline's answer (an id or None) to every query, by query number."""
    baseline = SalesforceBaseline(people)
    return {query.number: baseline.match(query).id for query in queries}
