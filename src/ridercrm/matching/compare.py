"""Comparison levels: how far two values of one field agree. Pure functions.

Each function returns the name of a level, best first in ``LEVELS``; the model
(``matching.model``) gives every level of every field a match weight. Reasons in the
explanation are these level names, never the values compared.
"""

from __future__ import annotations

import datetime as dt
import operator
import re
from collections.abc import Sequence

import jellyfish
from rapidfuzz.distance import DamerauLevenshtein, JaroWinkler

from ridercrm.matching.nicknames import same_name_family
from ridercrm.memo import memo
from ridercrm.people import normalize

MISSING = "missing"
DIFFERENT = "different"

LEVELS: dict[str, tuple[str, ...]] = {
    "given_name": (
        "exact", "nickname", "close", "ocr_slip", "keyboard_slip", "truncated", "name_part",
        "phonetic", "near", "initial", "swapped", "short_slip", DIFFERENT, MISSING,
    ),
    "family_name": ("exact", "close", "part", "phonetic", "near", "swapped", DIFFERENT, MISSING),
    "date_of_birth": (
        "exact", "day_month_swapped", "year_digits_swapped", "one_digit", "year_off",
        "two_digits", DIFFERENT, MISSING,
    ),
    "email": ("exact", "close", DIFFERENT, MISSING),
    "phone": ("exact", DIFFERENT, MISSING),
    "licence": ("exact", "one_digit", DIFFERENT, MISSING),
    "street": ("exact", "close", "partial", DIFFERENT, MISSING),
    # postcode and suburb together: they say the same thing in a real store (each suburb
    # has its postcode), so they are one comparison, not two independent pieces of evidence
    "postcode": (
        "exact", "exact_no_city", "exact_other_city", "one_digit_same_city", "one_digit",
        "same_city", DIFFERENT, MISSING,
    ),
}  # fmt: skip

# A given name that differs outright (not a slip, nickname or initial), or by one letter
# replaced in a name of four letters or fewer that no keyboard or scanner makes (Mei/Wei,
# Minh/Binh: as likely a twin as a typo): the household guard.
GIVEN_OUTRIGHT = (DIFFERENT, "short_slip")
# A given name that agrees only if the rest of the evidence says it is the same person:
# a slip a keyboard or a scanner makes in a short name (Hui/Nui, Emily/Ernily), or a
# leading part of the other (Sukh/Sukhdeep). Accepted when the e-mail, a phone or the
# licence agrees; with only the household's values (surname, address) another person.
GIVEN_TYPO = ("ocr_slip", "keyboard_slip", "truncated", "name_part")
# The levels that need the e-mail, a phone or the licence to agree, always: a part of the
# other name is evidence only beside the person's own contact details.
GIVEN_PART = ("truncated", "name_part")


def _slips(first: str, second: str, most: int) -> int:
    return DamerauLevenshtein.distance(first, second, score_cutoff=most)


@memo(share=2)
def _sounds(name: str) -> tuple[str, str]:
    """Metaphone and NYSIIS codes, computed once per name (names repeat a lot)."""
    return jellyfish.metaphone(name), jellyfish.nysiis(name)


def _sounds_alike(first: str, second: str) -> bool:
    if min(len(first), len(second)) < 3:
        return False
    (meta1, nysiis1), (meta2, nysiis2) = _sounds(first), _sounds(second)
    return meta1 == meta2 or nysiis1 == nysiis2


# Names repeat: of the given names a duplicates scan compares at a million people, four
# pairs in five were compared before (bench/README.md, Duplicates).
@memo()
def _name_level(query: tuple[str, ...], stored: tuple[str, ...], *, given: bool) -> str:
    q, s = "".join(query), "".join(stored)
    if q == s:
        return "exact"
    if given and (
        same_name_family(q, s)
        or (same_name_family(query[0], stored[0]) and not _other_second_names(query, stored))
    ):
        return "nickname"
    if given and len(query) == len(stored) and len(query) > 1 and sorted(query) == sorted(stored):
        return "close"  # a compound given name in the other order (Paul John / John Paul)
    if len(query) != len(stored) and (set(query) <= set(stored) or set(stored) <= set(query)):
        # a middle name or one part of a compound surname left out
        return "close" if given else "part"
    shortest = min(len(q), len(s))
    slips = _slips(q, s, 2)
    similarity = JaroWinkler.similarity(q, s)
    if given and shortest <= 4 and len(q) == len(s) and slips == 1 and not _transposed(q, s):
        # one letter replaced in a short name: Minh/Binh are twins, Hui/Nui a slip
        if _typo(q, s):
            return "close"  # it makes no name (Max/Msx)
        if _keyboard_slip(q, s):
            return "keyboard_slip"
        if _ocr_fold(q) == _ocr_fold(s):
            return "ocr_slip"
        return "short_slip"
    # close: one slip in four letters or more, or Jaro-Winkler 0.92 in five or more
    if (shortest >= 4 and slips <= 1) or (shortest >= 5 and similarity >= 0.92):
        return "close"
    if shortest >= 2 and slips <= 1 and abs(len(q) - len(s)) == 1:
        # a letter added or dropped in a short name (Jo/Joe, Mia/Miaq, Luke/Lue); a letter
        # replaced (Mei/Wei, Tom/Tim) is as likely another name: short_slip below
        return "close"
    if not _transposed(q, s) and (
        _ocr_fold(q) == _ocr_fold(s) or (shortest >= 5 and _ocr_fold_long(q) == _ocr_fold_long(s))
    ):
        return "ocr_slip"  # rn read as m, cl as d (Emily/Ernily), e as c in longer names
    if given and _truncated(q, s):
        return "truncated"
    if given and _name_part(q, s):
        return "name_part"
    if _sounds_alike(q, s):
        return "phonetic"
    # near: two slips in seven letters or more, or Jaro-Winkler 0.88 in five or more
    if (shortest >= 7 and slips <= 2) or (shortest >= 5 and similarity >= 0.88):
        return "near"
    if given and (len(query[0]) == 1 or len(stored[0]) == 1) and query[0][0] == stored[0][0]:
        return "initial"
    if given and slips <= 1:
        if _typo(q, s):
            return "close"
        return "short_slip"
    return DIFFERENT


_VOWELS = frozenset("aeiouy")
_KEY_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def _key_neighbours() -> dict[str, frozenset[str]]:
    """Letters next to each letter on a QWERTY keyboard (same row, and the rows above and
    below within one key)."""
    found: dict[str, set[str]] = {}
    for row_number, row in enumerate(_KEY_ROWS):
        for i, ch in enumerate(row):
            near = found.setdefault(ch, set())
            near.update(row[j] for j in (i - 1, i + 1) if 0 <= j < len(row))
            for other in (row_number - 1, row_number + 1):
                if 0 <= other < len(_KEY_ROWS):
                    near.update(_KEY_ROWS[other][max(0, i - 1) : i + 2])
            near.discard(ch)
    return {ch: frozenset(near) for ch, near in found.items()}


_NEIGHBOURS = _key_neighbours()
# What a scanner or a hurried hand reads one glyph (or pair) as: rn/m, cl/d, 0/O, 1/l/I,
# vv/w, 5/S, 8/B. Names are lower case here; digits survive normalize.name only in typos.
_OCR = (("rn", "m"), ("cl", "d"), ("vv", "w"), ("0", "o"), ("1", "l"), ("i", "l"),
        ("5", "s"), ("8", "b"), ("v", "u"))  # fmt: skip
# Confusions of a scanner between whole letters that are also names' only difference in
# short names (Bao/Hao, Nam/Ham): read only in names of five letters or more.
_OCR_LONG = (("c", "e"), ("b", "h"), ("n", "h"))


@memo()
def _ocr_fold(name: str) -> str:
    for seen, meant in _OCR:
        name = name.replace(seen, meant)
    return name


@memo()
def _ocr_fold_long(name: str) -> str:
    name = _ocr_fold(name)
    for seen, meant in _OCR_LONG:
        name = name.replace(seen, meant)
    return name


def _transposed(first: str, second: str) -> bool:
    return len(first) == len(second) and sorted(first) == sorted(second)


def _keyboard_slip(first: str, second: str) -> bool:
    """The same length, one letter replaced by its neighbour on the keyboard (Hui/Nui)."""
    changed = [(a, b) for a, b in zip(first, second, strict=True) if a != b]
    return len(changed) == 1 and changed[0][1] in _NEIGHBOURS.get(changed[0][0], frozenset())


def _truncated(first: str, second: str) -> bool:
    """One name a leading part of the other, three letters or more (Sukh/Sukhdeep)."""
    short, long = sorted((first, second), key=len)
    return len(short) >= 3 and len(long) > len(short) and long.startswith(short)


def _name_part(first: str, second: str) -> bool:
    """One name the end or the middle of the other, three letters or more, the other six
    letters or more: the short forms made from a name's stressed syllables (Preet/Harpreet,
    Vanni/Giovanni, Thanasi/Athanasios, Tasia/Anastasia)."""
    short, long = sorted((first, second), key=len)
    return len(short) >= 3 and len(long) >= 6 and len(long) > len(short) and short in long[1:]


def _typo(first: str, second: str) -> bool:
    """One slip in a short name that makes no other name: two letters swapped (Wil/Wli),
    or a name left without a vowel (Max/Msx, Zac/Zqc). Mei/Wei and Tom/Tim are names."""
    if len(first) == len(second) and sorted(first) == sorted(second):
        return True
    return not _VOWELS & set(first) or not _VOWELS & set(second)


def given_name(
    query: tuple[str, ...], stored: tuple[str, ...], stored_family: tuple[str, ...]
) -> str:
    """The query's given name against the stored given name (or, swapped, family name)."""
    if not query or not stored:
        return MISSING
    level = _name_level(query, stored, given=True)
    if level == DIFFERENT and stored_family and _swapped(query, stored_family):
        return "swapped"
    return level


def family_name(
    query: tuple[str, ...], stored: tuple[str, ...], stored_given: tuple[str, ...]
) -> str:
    """The query's family name against the stored family name (or, swapped, given name)."""
    if not query or not stored:
        return MISSING
    level = _name_level(query, stored, given=False)
    if level == DIFFERENT and stored_given and _swapped(query, stored_given):
        return "swapped"
    return level


def one_slip_apart(first: Sequence[str], second: Sequence[str]) -> bool:
    """Two names (tokens) one keying or scanner slip apart, however short: a letter
    replaced, added, dropped or two swapped (Lee/Lse, Ng/Gn), or one glyph misread."""
    a, b = "".join(first), "".join(second)
    if not a or not b:
        return False
    return _slips(a, b, 1) <= 1 or _ocr_fold(a) == _ocr_fold(b)


def _swapped(query: tuple[str, ...], other_field: tuple[str, ...]) -> bool:
    q, s = "".join(query), "".join(other_field)
    if q == s:
        return True
    shortest = min(len(q), len(s))
    return (shortest >= 4 and _slips(q, s, 1) <= 1) or (
        shortest >= 5 and JaroWinkler.similarity(q, s) >= 0.92
    )


def birth_date(query: dt.date | None, stored: dt.date | None) -> str:
    """Dates of birth: exact, day and month swapped, one or two digits off, a year off."""
    if query is None or stored is None:
        return MISSING
    if query == stored:
        return "exact"
    if query.day == stored.month and query.month == stored.day and query.year == stored.year:
        return "day_month_swapped"
    if _year_digits_swapped(query, stored):
        return "year_digits_swapped"
    digits = sum(map(operator.ne, _digits(query), _digits(stored)))  # 8 digits each
    if digits == 1:
        return "one_digit"
    if (
        query.month == stored.month
        and query.day == stored.day
        and abs(query.year - stored.year) == 1
    ):
        return "year_off"
    if digits == 2:
        return "two_digits"
    return DIFFERENT


# Birth years this far apart are a parent's and a child's (Jr. and Sr.), or a step-parent's
# and a child's of one name, not a slip: a decade.
# docs/decisions.md, "Matching on real CRM traffic"
GENERATION_YEARS = 10


def generation_apart(query: dt.date | None, stored: dt.date | None) -> bool:
    """Birth dates a generation apart: 10 calendar years or more, and not a keying slip:
    one digit (1965 typed for 1995, whatever the years) or the year's last two digits
    swapped with the day and month the same (1975 typed as 1957)."""
    if query is None or stored is None or abs(query.year - stored.year) < GENERATION_YEARS:
        return False
    if _year_digits_swapped(query, stored):
        return False  # 1975 keyed as 1957: a slip, the day and month agree
    return sum(map(operator.ne, _digits(query), _digits(stored))) > 1


def decades_apart(query: dt.date | None, stored: dt.date | None) -> bool:
    """Birth years ``GENERATION_YEARS`` or more apart, a keying slip or not (1965/1995)."""
    return (
        query is not None
        and stored is not None
        and (abs(query.year - stored.year) >= GENERATION_YEARS)
    )


# Generational suffixes (Jr., Sr., III) as name words, each with the generation it names:
# written in either name field, last. docs/decisions.md, "Matching on real CRM traffic"
_SUFFIXES = {
    "jr": "junior", "jnr": "junior", "junior": "junior",
    "sr": "senior", "snr": "senior", "senior": "senior",
    "ii": "ii", "iii": "iii", "iv": "iv",
}  # fmt: skip


# Name endings that mark a masculine and a feminine form of one name in the communities
# the business serves (Antonio/Antonia, Christos/Christina, Giorgos/Giorgia), and the
# elements Punjabi given names end in (Gurpreet/Harpreet, Manpreet/Mandeep). A name with
# no such ending is not read as masculine by it (Helen/Helena and
# Isabel/Isabella are variants of one woman's name; Daniel/Daniela are in _PAIRED) (docs/decisions.md, "Matching: twins named from one name, strangers in one suburb").
_FEMININE = ("ina", "ella", "ela", "ia", "a")
_MASCULINE = ("ios", "os", "us", "io", "is", "o")
# Masculine names with no masculine ending, and the feminine forms made from them (a
# closed list: an ending alone would read Helen/Helena, one woman, as two). Italian
# masculine names in -e or -i are here too, since -e/-a (Anne/Anna, Marie/Maria) is one
# woman's name written two ways in English; not Simone, Michele or Gabriele, which are
# also women's names (English, German). And the Greek forms, as ELOT 743 writes them
# (people/greek.py), of listed pairs whose stems differ: Giorgos/Georgia, Michail/Michaela;
# and feminine forms no ending rule reads (Vasilis/Vasiliki, Stavros/Stavroula,
# Giuseppe/Giuseppina, Philip/Philippa).
_PAIRED = {
    "adrian": ("adriana", "adrienne"), "albert": ("alberta",), "alexander": ("alexandra",),
    "carl": ("carla",), "christian": ("christiana", "christina"),
    "daniel": ("daniela", "daniella", "danielle"), "daniele": ("daniela",),
    "denis": ("denise",), "dennis": ("denise",), "domenic": ("domenica",),
    "emanuel": ("emanuela",), "emanuele": ("emanuela",), "eric": ("erica", "erika"),
    "erik": ("erika",), "fabian": ("fabiana",),
    "gabriel": ("gabriela", "gabriella", "gabrielle"), "george": ("georgia", "georgina"),
    "gerald": ("geraldine",), "giorgos": ("georgia", "georgina"), "giovanni": ("giovanna",),
    "giuseppe": ("giuseppina",), "joseph": ("josephine",),
    "julian": ("juliana", "julianne", "juliane"), "justin": ("justine",),
    "karl": ("karla",), "kyriakos": ("kyriaki",), "louis": ("louisa", "louise"),
    "manuel": ("manuela",), "marcel": ("marcela", "marcella"), "martin": ("martina",),
    "michael": ("michaela",), "michail": ("michaela",), "paraskevas": ("paraskevi",),
    "pasquale": ("pasqualina",), "patrick": ("patricia",),
    "paul": ("paula", "pauline", "paulette"), "philip": ("philippa",),
    "rafael": ("rafaela",), "raffaele": ("raffaella",), "raphael": ("raphaela",),
    "robert": ("roberta",), "samuel": ("samuela",), "stavros": ("stavroula",),
    "stephen": ("stephanie",), "steven": ("stephanie",), "vasilis": ("vasiliki",),
    "victor": ("victoria",), "viktor": ("viktoria",),
}  # fmt: skip
_PUNJABI = ("preet", "deep", "jeet", "jit", "inder", "want", "veer", "vir", "meet", "pal",
            "bir", "jot", "leen", "neet")  # fmt: skip


def two_names(query: tuple[str, ...], stored: tuple[str, ...]) -> bool:
    """Given names that are evidently two names, not one mistyped: the masculine and the
    feminine form of one name (each with its ending, or a pair of ``_PAIRED``), two Punjabi names sharing an element (Gurpreet/Harpreet)
    or a prefix (Manpreet/Manjeet), or compound names whose second names differ (John
    Paul/John Mark, Thi Lan/Thi Hoa). What twins are named; a typo rarely makes one."""
    if not query or not stored:
        return False
    q, s = "".join(query), "".join(stored)
    if s in _PAIRED.get(q, ()) or q in _PAIRED.get(s, ()):
        return True  # before the name families, which join Louis and Louise
    if q == s or same_name_family(q, s):
        return False
    return (
        _gendered(q, s) or _gendered(s, q) or _punjabi(q, s) or _other_second_names(query, stored)
    )


def _gendered(feminine: str, masculine: str) -> bool:
    for ending in _FEMININE:
        stem = feminine[: -len(ending)]
        if (
            feminine.endswith(ending)
            and len(stem) >= 3
            and masculine.startswith(stem)
            and masculine[len(stem) :] in _MASCULINE
        ):
            return True
    return False


def _punjabi(first: str, second: str) -> bool:
    split = [_element(name) for name in (first, second)]
    if None in split:
        return False
    (p1, e1), (p2, e2) = split  # type: ignore[misc]
    if e1 != e2:
        return p1 == p2
    return _slips(p1, p2, 2) >= 2


# One element written two ways (Harjit/Harjeet, Rajvir/Rajveer, Mandip/Mandeep).
_SAME_ELEMENT = {"jeet": "jit", "veer": "vir", "dip": "deep", "prit": "preet"}


def _element(name: str) -> tuple[str, str] | None:
    for element in (*_PUNJABI, *_SAME_ELEMENT):
        prefix = name[: -len(element)]
        if name.endswith(element) and len(prefix) >= 2:
            return prefix, _SAME_ELEMENT.get(element, element)
    return None


def _other_second_names(query: tuple[str, ...], stored: tuple[str, ...]) -> bool:
    """Compound given names, the first the same name, the rest another name outright."""
    if len(query) < 2 or len(stored) < 2 or not same_name_family(query[0], stored[0]):
        return False
    rest_q, rest_s = query[1:], stored[1:]
    if set(rest_q) & set(rest_s):
        return False
    return _name_level(rest_q, rest_s, given=True) == DIFFERENT


def generation_suffix(first: tuple[str, ...], last: tuple[str, ...]) -> str | None:
    """The generation a name's suffix names (``junior`` for Russo Jr), or None: the last
    word of the family name, or of the given name when it has more than one word."""
    for words in (last, first):
        if len(words) > 1 and words[-1] in _SUFFIXES:
            return _SUFFIXES[words[-1]]
    return None


def _year_digits_swapped(query: dt.date, stored: dt.date) -> bool:
    """The same day and month, the year's last two digits in the other order (1975/1957)."""
    if (query.month, query.day) != (stored.month, stored.day) or query.year == stored.year:
        return False
    q, s = str(query.year), str(stored.year)
    return q[:2] == s[:2] and q[2:] == s[3] + s[2]


@memo()
def _digits(date: dt.date) -> str:
    """A date's digits, YYYYMMDD (bounded by the setting, as the names are: a century of
    birth dates is 36,525 of them, about 8 MiB kept, and never-seen queries keep adding)."""
    return date.strftime("%Y%m%d")


def exact(query: str | None, stored: str | None) -> str:
    """Identifiers that either are the same (after normalisation) or are not."""
    if not query or not stored:
        return MISSING
    return "exact" if query == stored else DIFFERENT


def email(query: str | None, stored: str | None) -> str:
    if not query or not stored:
        return MISSING
    if query == stored:
        return "exact"
    return "close" if _slips(query, stored, 1) <= 1 else DIFFERENT


def phones(query: frozenset[str], stored: frozenset[str]) -> str:
    if not query or not stored:
        return MISSING
    return "exact" if query & stored else DIFFERENT


def one_digit(query: str | None, stored: str | None) -> str:
    """Licences and postcodes: exact, one character changed, added, dropped or transposed."""
    if not query or not stored:
        return MISSING
    if query == stored:
        return "exact"
    return "one_digit" if _slips(query, stored, 1) <= 1 else DIFFERENT


def locality(
    query_postcode: str | None,
    stored_postcode: str | None,
    query_city: str | None,
    stored_city: str | None,
) -> str:
    """Postcode and suburb as one comparison: the postcode's level, refined by the suburb."""
    postcode = one_digit(query_postcode, stored_postcode)
    if not query_city or not stored_city:
        return "exact_no_city" if postcode == "exact" else postcode
    city = query_city == stored_city or (
        min(len(query_city), len(stored_city)) >= 4
        and (
            _slips(query_city, stored_city, 1) <= 1
            or JaroWinkler.similarity(query_city, stored_city) >= 0.9
        )
    )
    if postcode == "exact":
        return "exact" if city else "exact_other_city"
    if postcode == "one_digit":
        return "one_digit_same_city" if city else "one_digit"
    return "same_city" if city else postcode


def street(query: str | None, stored: str | None) -> str:
    """Street addresses: exact; close (typos, a split word, a missing number, the two
    address lines in the other order); partial (a street or place name in common, the
    number the same or absent: one line replaced or dropped); different.

    House numbers are compared first: on both sides and not the same, they are another
    house (12 and 18 Main St are neighbours, however alike the strings)."""
    if not query or not stored:
        return MISSING
    if query == stored:
        return "exact"
    q_numbers, q_words = _address_parts(query)
    s_numbers, s_words = _address_parts(stored)
    if q_numbers and s_numbers and q_numbers != s_numbers:
        return DIFFERENT
    q, s = query.replace(" ", ""), stored.replace(" ", "")
    if q == s or JaroWinkler.similarity(q, s) >= 0.9:
        return "close"
    if q_words and s_words and _all_found(q_words, s_words) and _all_found(s_words, q_words):
        return "close"  # the same words, maybe in another order (lines swapped)
    q_names = [w for w in q_words if w not in _ADDRESS_WORDS and len(w) >= 4]
    s_names = [w for w in s_words if w not in _ADDRESS_WORDS and len(w) >= 4]
    if any(_word_agrees(w, s_names) for w in q_names) and (
        (q_numbers and s_numbers) or len(q_names) == 1 or len(s_names) == 1
    ):
        return "partial"
    return DIFFERENT


# Street types and unit words (normalize.street spells abbreviations out): sharing one
# says nothing about the place.
_ADDRESS_WORDS = frozenset(
    (*normalize.STREET_TYPES.values(), "unit", "flat", "shop", "level", "lot", "aptmnt", "apartment",
     "the", "east", "west", "north", "south", "upper", "lower")
)  # fmt: skip
_NUMBER = re.compile(r"[0-9]+")
_LETTERS = re.compile(r"[a-z]+")


def _address_parts(address: str) -> tuple[frozenset[str], list[str]]:
    """The numbers of an address (``aptmnt42`` has 42) and its words of letters."""
    return frozenset(_NUMBER.findall(address)), _LETTERS.findall(address)


def _word_agrees(word: str, others: list[str]) -> bool:
    return any(
        word == other
        or (min(len(word), len(other)) >= 3 and _slips(word, other, 1) <= 1)
        or (min(len(word), len(other)) >= 5 and JaroWinkler.similarity(word, other) >= 0.9)
        for other in others
    )


def _all_found(words: list[str], others: list[str]) -> bool:
    return all(_word_agrees(word, others) for word in words)
