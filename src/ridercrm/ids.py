"""Salesforce-format record ids (docs/decisions.md, "Ids").

An id is 15 case-sensitive characters (a 3-character key prefix and 12 more) plus a
3-character suffix that encodes which of the 15 are upper-case letters, so the
18-character form survives systems that ignore case. We store and return the
18-character form and accept either form on input.
"""

from __future__ import annotations

import enum
import itertools
import secrets
import string

_ALPHANUMERIC = frozenset(string.ascii_letters + string.digits)
_BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
_SUFFIX_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345"


class RecordKind(enum.Enum):
    """Kinds of record and their key prefixes."""

    CONTACT = "003"
    LEAD = "00Q"
    PRODUCT = "01t"
    ASSET = "02i"
    AUDIT = "a0A"
    SESSION = "a0S"

    @property
    def prefix(self) -> str:
        return self.value


_UPPER_BITS = str.maketrans(
    {
        ch: ("1" if ch in string.ascii_uppercase else "0")
        for ch in string.ascii_letters + string.digits
    }
)
# 256 byte values onto 62 characters: 8 characters are drawn 5/256 rather than 4/256
# of the time, leaving about 71 bits of randomness in 12 characters.
_BYTE_TO_BASE62 = bytes(_BASE62[value % 62].encode()[0] for value in range(256))


# In each chunk of five, bit i is set when character i is an upper-case letter: each
# chunk's flags as text ("10010": characters 0 and 3 upper-case) onto its suffix letter.
_SUFFIX_OF_FLAGS = {
    "".join(flags): _SUFFIX_ALPHABET[int("".join(flags)[::-1], 2)]
    for flags in itertools.product("01", repeat=5)
}


def checksum(id15: str) -> str:
    """Return the 3-character case-safe suffix of a 15-character id."""
    flags = id15.translate(_UPPER_BITS)
    suffix = _SUFFIX_OF_FLAGS
    return suffix[flags[:5]] + suffix[flags[5:10]] + suffix[flags[10:15]]


def new_id(kind: RecordKind) -> str:
    """Make a fresh 18-character id of the given kind (about 71 random bits after the prefix)."""
    body = kind.prefix + secrets.token_bytes(12).translate(_BYTE_TO_BASE62).decode("ascii")
    return body + checksum(body)


def _restore_case(id15: str, suffix: str) -> str | None:
    """Use an 18-character id's suffix to put back the case of its first 15 characters."""
    chars = list(id15)
    for chunk, code in enumerate(suffix.upper()):
        flags = _SUFFIX_ALPHABET.find(code)
        if flags < 0:
            return None
        for bit in range(5):
            pos = chunk * 5 + bit
            char = chars[pos]
            if flags & (1 << bit):
                if not char.isalpha():
                    return None
                chars[pos] = char.upper()
            else:
                chars[pos] = char.lower()
    return "".join(chars)


def canonical_id(value: object, kind: RecordKind | None = None) -> str | None:
    """Return the canonical 18-character form of a 15- or 18-character id, or None.

    The 18-character form is read case-insensitively (that is what its suffix is
    for); the 15-character form is case-sensitive. With ``kind``, the key prefix
    must be that kind's.
    """
    if not isinstance(value, str):
        return None
    value = value.strip()
    if len(value) not in (15, 18) or not _ALPHANUMERIC.issuperset(value):
        return None
    if len(value) == 15:
        id15: str | None = value
    elif checksum(value[:15]) == value[15:]:
        # Already canonical (as ids we answered with are): its case is what the suffix says.
        id15 = value[:15]
    else:
        id15 = _restore_case(value[:15], value[15:])
    if id15 is None:
        return None
    if kind is not None and id15[:3] != kind.prefix:
        return None
    return id15 + checksum(id15)


MISTYPED = "its last 3 characters are not the checksum of the first 15 (mistyped?)"


def id_problem(value: str, kind: RecordKind | None = None) -> str:
    """Why ``value`` is not an id (of ``kind``), for a value ``canonical_id`` refused."""
    value = value.strip()
    if len(value) not in (15, 18):
        return f"an id has 15 or 18 characters, this one {len(value)}"
    if not _ALPHANUMERIC.issuperset(value):
        return "an id has letters and digits only"
    if len(value) == 18 and _restore_case(value[:15], value[15:]) is None:
        return MISTYPED
    return f"it should start {kind.prefix}" if kind else "it is no record id"


def mistyped_suffix(value: object) -> bool:
    """Whether an 18-character id's suffix contradicts the case its first 15 characters
    are written in. Only first 15 with both upper- and lower-case letters carry a case
    of their own: all in one case, they are an id whose case a system dropped, which
    the suffix restores (so an unknown id of that kind is just unknown)."""
    if not isinstance(value, str):
        return False
    value = value.strip()
    if len(value) != 18 or not _ALPHANUMERIC.issuperset(value):
        return False
    id15 = value[:15]
    if id15 in (id15.lower(), id15.upper()):
        return False
    return checksum(id15) != value[15:].upper()


def unknown_id_note(value: object) -> str:
    """What to add to "no record with id ``value``": why, when its suffix says so."""
    return f" ({MISTYPED})" if mistyped_suffix(value) else ""


def kind_of(value: str) -> RecordKind | None:
    """Return the kind named by a canonical id's prefix, if it is one of ours."""
    for kind in RecordKind:
        if value.startswith(kind.prefix):
            return kind
    return None
