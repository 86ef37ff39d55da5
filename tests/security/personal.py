"""A person with distinctive values, to look for in logs and stored audit bodies."""

from __future__ import annotations

PERSON = {
    "first_name": "Quillon",
    "last_name": "Zbyszewski",
    "date_of_birth": "1987-06-05",
    "email": "quillon.zbyszewski@example.org",
    "postcode": "3999",
    "mobile_phone": "0499 876 543",
    "home_phone": "03 9876 1234",
    "drivers_license": "QZ998877",
    "license_type": "CYL",
    "street": "77 Xylophone Crescent",
    "city": "Wombatville",
    "state": "Tasmania",
    "country": "Australia",
}
# The values, and the forms the service normalises them to. (Country and postcode are
# too common to look for: "Australia" and "3999" appear in other texts.)
SECRETS = (
    "Quillon", "quillon", "Zbyszewski", "zbyszewski", "1987-06-05",
    "quillon.zbyszewski@example.org", "0499 876 543", "+61499876543", "499876543",
    "9876 1234", "98761234", "QZ998877", "qz998877", "Xylophone", "xylophone", "Wombatville",
    "Tasmania",
)  # fmt: skip


def leaked(text: str) -> list[str]:
    """The distinctive values found in ``text``."""
    return [secret for secret in SECRETS if secret in text]
