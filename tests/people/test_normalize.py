import phonenumbers
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ridercrm.people import normalize


@pytest.mark.parametrize(
    ("raw", "tokens"),
    [
        ("Ann", ("ann",)),
        ("  ANN  ", ("ann",)),
        ("Zoë", ("zoe",)),
        ("José María", ("jose", "maria")),
        ("O'Brien", ("obrien",)),
        ("O\u2019Brien", ("obrien",)),
        ("Nguyen-Tran", ("nguyen", "tran")),
        ("Nguyen \u2013 Tran", ("nguyen", "tran")),
        ("van der  Berg", ("van", "der", "berg")),
        ("Müller.", ("muller",)),
        ("", ()),
        (None, ()),
    ],
)
def test_name_tokens(raw: str | None, tokens: tuple[str, ...]) -> None:
    assert normalize.name_tokens(raw) == tokens


def test_name_joins_words() -> None:
    assert normalize.name("De Luca") == normalize.name("deluca") == "deluca"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(" Ann.Nguyen@Example.COM ", "ann.nguyen@example.com"), ("", None), (None, None)],
)
def test_email(raw: str | None, expected: str | None) -> None:
    assert normalize.email(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("0412 345 678", "+61412345678"),
        ("0412345678", "+61412345678"),
        ("+61 412 345 678", "+61412345678"),
        ("(04) 1234 5678", "+61412345678"),
        ("61412345678", "+61412345678"),
        ("(03) 9123 4567", "+61391234567"),
        ("03-9123-4567", "+61391234567"),
        ("+44 20 7946 0958", "+442079460958"),
        ("12", None),
        ("not a phone", None),
        ("", None),
    ],
)
def test_phone_to_e164(raw: str, expected: str | None) -> None:
    assert normalize.phone(raw) == expected


def _slow(raw: str) -> str | None:
    try:
        parsed = phonenumbers.parse(raw, "AU")
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_possible_number(parsed):
        return None
    return phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.E164)


@settings(max_examples=300)
@given(
    first=st.sampled_from("23478"),
    rest=st.text(alphabet="0123456789", min_size=8, max_size=8),
    style=st.sampled_from(
        ["0{f}{r}", "0{f}{r0} {r1} {r2}", "+61{f}{r}", "+61 {f}{r0} {r1} {r2}", "(0{f}) {r}"]
    ),
)
def test_fast_path_agrees_with_phonenumbers(first: str, rest: str, style: str) -> None:
    raw = style.format(f=first, r=rest, r0=rest[:2], r1=rest[2:5], r2=rest[5:])
    assert normalize.phone(raw) == _slow(raw)


@pytest.mark.parametrize(
    ("raw", "expected"), [("l-123 456", "L123456"), (" 098765432 ", "098765432"), ("--", None)]
)
def test_licence(raw: str, expected: str | None) -> None:
    assert normalize.licence(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("12 Main St", "12 main street"),
        ("12 Main Street", "12 main street"),
        ("12 main st.", "12 main street"),
        ("Unit 3/45 Smith Rd", "unit 3 45 smith road"),
        ("7 Ocean Pde", "7 ocean parade"),
        ("9 Kurrajong Cres", "9 kurrajong crescent"),
    ],
)
def test_street(raw: str, expected: str) -> None:
    assert normalize.street(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("Victoria", "VIC"), ("vic", "VIC"), ("New South Wales", "NSW"), ("Australian Capital Territory", "ACT"), ("qld", "QLD"), ("Bavaria", "BAVARIA")],
)  # fmt: skip
def test_state(raw: str, expected: str) -> None:
    assert normalize.state(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("3064", "3064"), (3064, "3064"), (800, "0800"), ("123", None), (12345, None)],
)
def test_postcode(raw: object, expected: str | None) -> None:
    assert normalize.postcode(raw) == expected


@pytest.mark.parametrize(
    ("raw", "tokens"),
    [
        # as a Greek passport writes them (ELOT 743)
        ("Γιώργος Παπαδόπουλος", ("giorgos", "papadopoulos")),
        ("ΕΥΑΓΓΕΛΙΑ ΚΟΥΤΣΟΥΡΗ", ("evangelia", "koutsouri")),
        ("Σταύρος", ("stavros",)),
        ("Ευστάθιος", ("efstathios",)),
        ("Μπούρας", ("bouras",)),
        ("Λαμπράκης", ("lamprakis",)),
        ("Ντίνος", ("dinos",)),
        ("Παντελής", ("pantelis",)),
        ("Αγγελική Οικονόμου", ("angeliki", "oikonomou")),
        ("Χρήστος Θεοδωρόπουλος", ("christos", "theodoropoulos")),
        ("Ψαρράς", ("psarras",)),
        ("Anna-Μαρία", ("anna", "maria")),
    ],
)  # fmt: skip
def test_greek_names_read_as_a_greek_passport_writes_them(
    raw: str, tokens: tuple[str, ...]
) -> None:
    assert normalize.name_tokens(raw) == tokens
