"""Request body decoding and response encoding (docs/decisions.md, "Wire"). No web framework here.

Four request types carry a body: application/json, text/json and text/plain hold
JSON text; application/x-www-form-urlencoded holds JSON text (mislabelled clients),
form fields whose values are JSON (``people_product=[...]``), or bracket fields
(``person_data[first_name]=Ann``, ``people_product[][person_id]=...``, and the dot
notation ``person_data.first_name``). A charset parameter is honoured.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from itertools import pairwise
from typing import Any
from urllib.parse import parse_qsl

JSON_TYPES = frozenset({"application/json", "text/json", "text/plain"})
FORM_TYPE = "application/x-www-form-urlencoded"
ACCEPTED_TYPES = JSON_TYPES | {FORM_TYPE}
MAX_NESTING = 32

_BRACKETS = re.compile(r"\[([^\[\]]*)\]")
# A \u escape of a UTF-16 surrogate; alone (not as half of a pair) it is no character.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class BodyError(Exception):
    """The body cannot be used; ``status`` is 400 (unusable) or 415 (type or charset)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def parse_content_type(header: str | None) -> tuple[str, dict[str, str]]:
    """Split a Content-Type header into its lower-cased media type and parameters."""
    if not header:
        return "", {}
    media, *params = header.split(";")
    parsed: dict[str, str] = {}
    for param in params:
        name, sep, value = param.partition("=")
        if sep:
            parsed[name.strip().lower()] = value.strip().strip('"')
    return media.strip().lower(), parsed


def decode_body(raw: bytes, content_type: str | None) -> Any:
    """Decode a request body to a JSON value, or raise BodyError saying why not.

    A missing Content-Type is read as JSON: the body must still be JSON text.
    """
    media, params = parse_content_type(content_type)
    if media and media not in ACCEPTED_TYPES:
        raise BodyError(415, f"content type {media} is not accepted")
    charset = params.get("charset", "utf-8")
    try:
        codec = codecs.lookup(charset)
    except LookupError:
        raise BodyError(415, f"charset {charset} is not supported") from None
    try:
        text = raw.decode(codec.name)
    except UnicodeError:
        raise BodyError(400, f"body is not valid {charset}") from None
    except LookupError:
        # A codec that is not a text encoding (base64, rot13, zlib, ...).
        raise BodyError(415, f"charset {charset} is not supported") from None
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise BodyError(400, "body is empty")
    if media == FORM_TYPE and not text.lstrip().startswith(("{", "[")):
        return _decode_form(text, codec.name)
    return parse_json(text)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


class _Unreadable:
    """A number the body may not hold, kept until the field it stands in is known (the
    decoder's number hooks do not see the key), so the reason can name that field."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _finite_float(text: str) -> float | _Unreadable:
    value = float(text)
    if not math.isfinite(value):
        return _Unreadable("is too large a number")
    return value


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        if (unreadable := _unreadable_in(value)) is not None:
            shown = key if len(key) <= 40 else key[:37] + "..."
            raise ValueError(f"{shown}: {unreadable.reason}")
        result[key] = value
    return result


def _unreadable_in(value: Any) -> _Unreadable | None:
    """A refused number standing in ``value`` itself or in its lists (an object in it
    was checked when it was made)."""
    if isinstance(value, _Unreadable):
        return value
    if isinstance(value, list):
        stack = [value]
        while stack:
            for item in stack.pop():
                if isinstance(item, _Unreadable):
                    return item
                if isinstance(item, list):
                    stack.append(item)
    return None


# Python's own limit on turning digits into an int (sys.get_int_max_str_digits()).
_MAX_DIGITS = 4300


def _whole_number(text: str) -> int | _Unreadable:
    digits = len(text.lstrip("-"))
    if digits > _MAX_DIGITS:
        return _Unreadable(f"has too many digits ({digits}; a number is read up to {_MAX_DIGITS})")
    return int(text)


def parse_json(text: str) -> Any:
    """Parse strict JSON: no NaN/Infinity, no duplicate keys, bounded nesting."""
    try:
        value = json.loads(
            text,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
            parse_int=_whole_number,
            object_pairs_hook=_no_duplicates,
        )
    except RecursionError:
        raise BodyError(400, "body is nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise BodyError(
            400, f"body is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    except ValueError as exc:
        raise BodyError(400, f"body is not usable JSON ({exc})") from None
    if (unreadable := _unreadable_in(value)) is not None:
        # A number outside any object (the body itself, or in a top-level array).
        raise BodyError(400, f"body is not usable JSON (a value {unreadable.reason})")
    if _depth(value) > MAX_NESTING:
        raise BodyError(400, "body is nested too deeply")
    if _SURROGATE_ESCAPE.search(text) and _has_lone_surrogate(value):
        raise BodyError(
            400, "body has a \\u escape of an unpaired surrogate, which is no character"
        )
    return value


def _depth(value: Any) -> int:
    """Nesting depth, iteratively (no recursion limit to hit)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item)
    return deepest


def _has_lone_surrogate(value: Any) -> bool:
    """Whether any string (key or value) holds an unpaired surrogate, which no
    database or UTF-8 response can carry. Iterative, like :func:`_depth`."""
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


class _Fields(dict[str, Any]):
    """An object made from bracket field names; only these may turn into lists."""


# A field name after its head: bracket segments ([x], [] for "the next item") or, as
# qs writes with allowDots, dot segments (.x).
_SEGMENT = re.compile(r"\[([^\[\]]*)\]|\.([^.\[\]]+)")
_HEAD = re.compile(r"[^\[\].]*")


def _decode_form(text: str, encoding: str) -> dict[str, Any]:
    """Form fields as PHP, Rack and qs read them.

    ``a[x]=1`` makes objects; ``a[0][x]`` makes lists, ordered by index (sparse or not
    zero-based indexes too); ``a[]=1`` appends, and ``a[][x]=1`` starts a new item
    whenever the last item already has ``x`` (Rack's rule, which is what qs'
    ``brackets`` format, Rails' ``to_query`` and jQuery write); ``a.x`` and ``a[0].x``
    (qs ``allowDots``) are ``a[x]`` and ``a[0][x]``. Values are text, except a plain
    field's JSON array, object or string (``people_product=[...]``).
    """
    # Form bodies are percent-encoded ASCII; raw characters in the charset are accepted too.
    try:
        pairs = parse_qsl(text, keep_blank_values=True, encoding=encoding, errors="strict")
    except UnicodeDecodeError:
        raise BodyError(400, f"form field is not valid {encoding}") from None
    except ValueError as exc:
        raise BodyError(400, f"form body is malformed ({exc})") from None
    if not pairs:
        raise BodyError(400, "form body has no fields")
    result: dict[str, Any] = {}
    for name, value in pairs:
        path = _segments(name)
        if len(path) == 1:
            if path[0] in result:
                raise BodyError(
                    400,
                    f"form field {name!r} is given twice; send it once"
                    f" (several values as {name}[]=...&{name}[]=...)",
                )
            result[path[0]] = _json_or_text(value)
        else:
            _place(result, path, value, name)
    return {name: _lists_from_indexes(value, name) for name, value in result.items()}


def _segments(name: str) -> list[str]:
    """The parts of a field name: ``a[0][x]`` and ``a[0].x`` are both a, 0, x."""
    head = _HEAD.match(name)
    assert head is not None  # the pattern matches the empty string
    if not head.group():
        raise BodyError(400, f"form field {name!r} has no name before its brackets")
    path, position = [head.group()], head.end()
    while position < len(name):
        segment = _SEGMENT.match(name, position)
        if segment is None:
            raise BodyError(
                400,
                f"form field {name!r} is not a field name we can read (at character"
                f" {position + 1}); write nested fields as {path[0]}[0][name] or"
                f" {path[0]}[0].name",
            )
        path.append(segment.group(1) if segment.group(1) is not None else segment.group(2))
        position = segment.end()
        if len(path) > MAX_NESTING:
            raise BodyError(400, "form field is nested too deeply")
    return path


def _place(node: dict[str, Any], path: list[str], value: str, name: str) -> None:
    """Put one bracket field's value into the tree being built."""
    key, rest = path[0], path[1:]
    if not rest:
        if key in node:
            raise BodyError(
                400,
                f"form field {name!r} is given twice; each item's field once (items as"
                f" {_example(name)})",
            )
        node[key] = value
        return
    child = node.get(key)
    if rest[0] == "":
        if child is None:
            child = node[key] = []
        if not isinstance(child, list):
            raise _mixed(name)
        after = rest[1:]
        if not after:
            child.append(value)
            return
        last = child[-1] if child else None
        # Rack's rule: a field the last item already has starts the next item.
        if not isinstance(last, _Fields) or _has_path(last, after):
            last = _Fields()
            child.append(last)
        _place(last, after, value, name)
        return
    if child is None:
        child = node[key] = _Fields()
    if not isinstance(child, _Fields):
        raise _mixed(name)
    _place(child, rest, value, name)


def _has_path(node: dict[str, Any], path: list[str]) -> bool:
    if "" in path:
        return False  # an inner list never repeats its item's fields
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


def _example(name: str) -> str:
    head = _HEAD.match(name)
    assert head is not None
    items = head.group()
    return f"{items}[0][field]=...&{items}[1][field]=... or {items}[][field]=..."


def _mixed(name: str) -> BodyError:
    return BodyError(
        400,
        f"form field {name!r} mixes shapes: the same name is written both as a list"
        f" and as named fields or a value; write every item one way, e.g. {_example(name)}",
    )


def _json_or_text(value: str) -> Any:
    """A plain field's value is JSON when it is a JSON array, object or string, else text.

    ``true``, ``false``, ``null`` and numbers stay text: a surname can be Null, and
    every rule that wants a flag or a number reads its text too.
    """
    stripped = value.strip()
    if stripped[:1] in ("{", "[", '"'):
        try:
            return parse_json(stripped)
        except BodyError:
            return value
    return value


def _lists_from_indexes(value: Any, name: str) -> Any:
    """Turn bracket-made objects keyed by indexes (``items[3][x]=...``) into lists,
    ordered by index: sparse and non-zero-based indexes as PHP and qs write them.

    Objects that came as JSON values (``person_data={"0": ...}``) keep their shape.
    """
    if isinstance(value, list):
        return [_lists_from_indexes(item, f"{name}[]") for item in value]
    if not isinstance(value, dict):
        return value
    converted = {key: _lists_from_indexes(item, f"{name}[{key}]") for key, item in value.items()}
    if not (
        isinstance(value, _Fields)
        and converted
        and all(key.isascii() and key.isdigit() for key in converted)
    ):
        return converted
    order = sorted(converted, key=_index_order)
    for before, after in pairwise(order):
        if _index_order(before) == _index_order(after):
            raise BodyError(
                400,
                f"form fields {name}[{before}] and {name}[{after}] name the same index;"
                f" write each index once, e.g. {name}[0], {name}[1]",
            )
    return [converted[key] for key in order]


def _index_order(key: str) -> tuple[int, str]:
    """An index's numeric order without int(): an index may have thousands of digits."""
    digits = key.lstrip("0") or "0"
    return len(digits), digits


def negotiate(accept: str | None) -> str:
    """Pick the response type: text/json when Accept prefers it, else application/json."""
    if not accept:
        return "application/json"

    def quality(media: str) -> float:
        best, best_specificity = 0.0, -1
        main = media.split("/")[0]
        for part in accept.split(","):
            kind, params = parse_content_type(part)
            if kind == media:
                specificity = 2
            elif kind == f"{main}/*":
                specificity = 1
            elif kind == "*/*":
                specificity = 0
            else:
                continue
            try:
                q = float(params.get("q", "1"))
            except ValueError:
                q = 0.0
            if specificity > best_specificity:
                best, best_specificity = q, specificity
        return best

    return "text/json" if quality("text/json") > quality("application/json") else "application/json"


def encode_json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def response_content_type(media: str) -> str:
    return f"{media}; charset=utf-8" if media == "text/json" else media


def header_value(text: str, *, limit: int = 500) -> str:
    """``text`` as a value any HTTP layer sends in a header (RFC 9110 field-value).

    A failure reason may quote what the client sent (``no person with id x ``); h11
    refuses to send a header value with a control character or with whitespace at
    either end, and the connection would then be dropped without an answer. Every
    character outside printable ASCII becomes ``?``, and the ends are trimmed.
    """
    safe = "".join(ch if 32 <= ord(ch) < 127 else "?" for ch in text)[:limit]
    return safe.strip(" ") or "?"
