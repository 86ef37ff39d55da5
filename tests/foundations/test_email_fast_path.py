"""The plain-address fast path of fields.parse_email agrees with email-validator."""

from email_validator import EmailNotValidError, validate_email
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ridercrm.fields import _plain_email

ATEXT = "abcxyzABCXYZ0189!#$%&'*+/=?^_`{|}~-."
LABEL = "abcxyzABCXYZ0189-"


def slow(address: str) -> str | None:
    try:
        return validate_email(address, check_deliverability=False).normalized
    except EmailNotValidError:
        return None


@settings(max_examples=1500)
@given(
    local=st.text(alphabet=ATEXT, min_size=1, max_size=70),
    labels=st.lists(st.text(alphabet=LABEL, min_size=1, max_size=12), min_size=1, max_size=3),
    tld=st.sampled_from(
        ["com", "au", "COM", "io", "x", "local", "test", "museum", "c0m", "xn--p1ai"]
    ),
)
@example(local="ann.nguyen", labels=["Example"], tld="com")
@example(local="a..b", labels=["x"], tld="com")
@example(local="a", labels=["foo-"], tld="com")
@example(local="a", labels=["xn--bcher-kva"], tld="com")
def test_fast_path_agrees_with_email_validator(local: str, labels: list[str], tld: str) -> None:
    address = f"{local}@{'.'.join([*labels, tld])}"
    fast = _plain_email(address)
    if fast is not None:
        assert fast == slow(address)
