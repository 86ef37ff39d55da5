"""The sandbox message templates render in: Jinja's, with the work a template may ask for bounded.

A template an admin types must not hold a worker (or, saving it, the database) for
minutes, nor exhaust its memory: ``9 ** 9 ** 9``, ``'x' * 10 ** 9``, two nested loops
over ``range(100000)``, ``'%0999999999d' % 1``, ``'x'.ljust(10 ** 9)`` or a string
doubled in a loop would. So, within one render
(docs/decisions.md, "Bounded message templates"):

- loop iterations and calls (macros included) together are at most MAX_STEPS, a value
  of WEIGHED_PER_STEP characters or items built counting as one more;
- a width, precision or count given to a string method, filter or format is at most
  MAX_WIDTH, and an operation that would build a value longer than MAX_VALUE
  (characters or items) is refused before it builds it, where that can be told, or as
  soon as it has;
- a part (subject, text, HTML) is at most MAX_OUTPUT characters;
- recursive loops are refused, and templates cannot change lists or dicts.

Any of these raises :class:`SecurityError`, which the caller reports as the template's
problem.
"""

from __future__ import annotations

import contextvars
import re
import string
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from jinja2 import nodes, pass_context, pass_eval_context
from jinja2.defaults import DEFAULT_FILTERS
from jinja2.filters import make_attrgetter
from jinja2.nodes import EvalContext
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError
from jinja2.visitor import NodeTransformer

MAX_POWER = 64
MAX_BITS = 4096
MAX_REPEAT = 10_000
MAX_STEPS = 1_000
MAX_WIDTH = 200
MAX_VALUE = 50_000
MAX_OUTPUT = 100_000
WEIGHED_PER_STEP = 500

# This render's steps taken so far (None outside :func:`budget`: no render is counted).
_steps: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar(
    "ridercrm_template_steps", default=None
)


@contextmanager
def budget() -> Iterator[None]:
    """Count the steps of the renders made in this block against one MAX_STEPS."""
    token = _steps.set([0])
    try:
        yield
    finally:
        _steps.reset(token)


def _step(count: int = 1) -> None:
    taken = _steps.get()
    if taken is None:
        return
    taken[0] += count
    if taken[0] > MAX_STEPS:
        raise SecurityError(f"more than {MAX_STEPS} loop iterations and calls are not allowed")


def _weight(value: Any) -> int:
    """Characters and items in a value and what it holds, counted up to MAX_VALUE + 1."""
    total, stack = 0, [value]
    while stack and total <= MAX_VALUE:
        item = stack.pop()
        if isinstance(item, str | bytes | range):
            total += len(item)
        elif isinstance(item, list | tuple | set | frozenset):
            total += len(item)
            stack.extend(item)
        elif isinstance(item, dict):
            total += len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
    return total


def _sized(value: Any) -> Any:
    """The value, unless it (with what it holds) is longer than MAX_VALUE."""
    weight = _weight(value)
    if weight > MAX_VALUE:
        raise SecurityError(f"a value longer than {MAX_VALUE} is not allowed")
    # Building and weighing a large value is work too: a step per WEIGHED_PER_STEP.
    if weight >= WEIGHED_PER_STEP:
        _step(weight // WEIGHED_PER_STEP)
    return value


def _width(value: Any, what: str) -> None:
    if isinstance(value, int) and abs(value) > MAX_WIDTH:
        raise SecurityError(f"{what} above {MAX_WIDTH} is not allowed")


# %-format conversions: their width and precision (digits or *).
_PERCENT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d*)(?:\.(\*|\d*))?")
_DIGITS = re.compile(r"\d+")


def _check_percent(template: str) -> None:
    for width, precision in _PERCENT.findall(template):
        for number in (width, precision):
            if number == "*":
                raise SecurityError("a width given as * is not allowed")
            if number and int(number) > MAX_WIDTH:
                raise SecurityError(f"a width above {MAX_WIDTH} is not allowed")


def _check_format(template: str) -> None:
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError:
        return  # str.format will refuse it itself
    for _literal, _name, spec, _conversion in fields:
        if not spec:
            continue
        if "{" in spec:
            raise SecurityError("a format width given by an argument is not allowed")
        for number in _DIGITS.findall(spec):
            if int(number) > MAX_WIDTH:
                raise SecurityError(f"a width above {MAX_WIDTH} is not allowed")


def _length(items: Any) -> int | None:
    try:
        return sum(len(str(item)) for item in items)
    except TypeError:
        return None


def _check_str_method(text: str, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    if name in ("center", "ljust", "rjust", "zfill", "expandtabs"):
        for value in (*args, *kwargs.values()):
            _width(value, "a width")
    elif name == "replace" and len(args) >= 2:
        old, new = args[0], args[1]
        if isinstance(old, str) and isinstance(new, str):
            grows = (text.count(old) if old else len(text) + 1) * len(new)
            if len(text) + grows > MAX_VALUE:
                raise SecurityError(f"a value longer than {MAX_VALUE} is not allowed")
    elif name == "join" and args and isinstance(args[0], list | tuple):
        total = _length(args[0])
        if total is not None and total + len(text) * len(args[0]) > MAX_VALUE:
            raise SecurityError(f"a value longer than {MAX_VALUE} is not allowed")


def _bounded_filters() -> dict[str, Callable[..., Any]]:
    """Jinja's filters with their widths and counts bounded and their results sized."""
    filters = {name: _sized_filter(function) for name, function in DEFAULT_FILTERS.items()}
    center, indent = DEFAULT_FILTERS["center"], DEFAULT_FILTERS["indent"]
    batch, slice_ = DEFAULT_FILTERS["batch"], DEFAULT_FILTERS["slice"]
    format_, replace, join = (
        DEFAULT_FILTERS["format"],
        DEFAULT_FILTERS["replace"],
        DEFAULT_FILTERS["join"],
    )

    def do_center(value: Any, width: int = 80) -> Any:
        _width(width, "a width")
        return _sized(center(value, width))

    def do_indent(value: Any, width: Any = 4, *args: Any, **kwargs: Any) -> Any:
        pad = width if isinstance(width, int) else len(str(width))
        _width(pad, "an indent")
        if len(str(value)) + (str(value).count("\n") + 1) * pad > MAX_VALUE:
            raise SecurityError(f"a value longer than {MAX_VALUE} is not allowed")
        return _sized(indent(value, width, *args, **kwargs))

    def do_batch(value: Any, linecount: int, *args: Any) -> Any:
        _width(linecount, "a batch size")
        return batch(value, linecount, *args)

    def do_slice(value: Any, slices: int, *args: Any) -> Any:
        _width(slices, "a number of slices")
        return slice_(value, slices, *args)

    def do_format(value: Any, *args: Any, **kwargs: Any) -> Any:
        _check_percent(str(value))
        return _sized(format_(value, *args, **kwargs))

    @pass_eval_context
    def do_replace(
        eval_ctx: EvalContext, value: Any, old: Any, new: Any, count: int | None = None
    ) -> Any:
        _check_str_method(str(value), "replace", (str(old), str(new)), {})
        return _sized(replace(eval_ctx, value, old, new, count))

    @pass_eval_context
    def do_join(
        eval_ctx: EvalContext, value: Iterable[Any], d: str = "", attribute: Any = None
    ) -> Any:
        items = list(value)
        if attribute is not None:
            items = list(map(make_attrgetter(eval_ctx.environment, attribute), items))
        _check_str_method(str(d), "join", (items,), {})
        return _sized(join(eval_ctx, items, d))

    filters.update(
        center=do_center,
        indent=do_indent,
        batch=do_batch,
        slice=do_slice,
        format=do_format,
        replace=do_replace,
        join=do_join,
        _loop=_loop,
        _sized=_sized,
    )
    return filters


def _sized_filter(function: Callable[..., Any]) -> Callable[..., Any]:
    def sized(*args: Any, **kwargs: Any) -> Any:
        return _sized(function(*args, **kwargs))

    passed = getattr(function, "jinja_pass_arg", None)
    if passed is not None:
        sized.jinja_pass_arg = passed  # type: ignore[attr-defined]
    return sized


@pass_context
def _loop(context: Context, items: Iterable[Any]) -> Iterator[Any]:
    """A loop's items, each counted as a step (a context filter: never run while compiling)."""
    for item in items:
        _step()
        yield item


class _Bound(NodeTransformer):
    """Counts every loop's iterations and sizes every ``~``; refuses recursive loops."""

    def visit_For(self, node: nodes.For) -> nodes.Node:
        if node.recursive:
            raise SecurityError("recursive loops are not allowed")
        self.generic_visit(node)
        node.iter = nodes.Filter(node.iter, "_loop", [], [], None, None, lineno=node.lineno)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        return nodes.Filter(node, "_sized", [], [], None, None, lineno=node.lineno)


class Sandbox(ImmutableSandboxedEnvironment):
    """Jinja's sandbox (lists and dicts unchangeable) with the work a render does bounded."""

    intercepted_binops = frozenset({"**", "*", "%", "+"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.filters = _bounded_filters()
        self.globals.pop("lipsum", None)

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        template = super()._parse(source, name, filename)
        bounded = _Bound().visit(template)
        assert isinstance(bounded, nodes.Template)
        return bounded

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        if operator == "**" and isinstance(right, int | float) and abs(right) > MAX_POWER:
            raise SecurityError(f"an exponent above {MAX_POWER} is not allowed")
        if operator in ("**", "*") and isinstance(left, int) and isinstance(right, int):
            bits = left.bit_length() * (right if operator == "**" else 1) + right.bit_length()
            if bits > MAX_BITS:
                raise SecurityError(f"a number above {MAX_BITS} bits is not allowed")
        if operator == "*":
            for seq, times in ((left, right), (right, left)):
                sequence = isinstance(seq, str | list | tuple) and isinstance(times, int)
                if sequence and len(seq) * times > MAX_REPEAT:
                    raise SecurityError(f"a repeat longer than {MAX_REPEAT} is not allowed")
        if operator == "%" and isinstance(left, str):
            _check_percent(left)
        return _sized(super().call_binop(context, operator, left, right))

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        _step()
        owner = getattr(__obj, "__self__", None)
        if isinstance(owner, str):
            _check_str_method(owner, getattr(__obj, "__name__", ""), args, kwargs)
        return _sized(super().call(__context, __obj, *args, **kwargs))

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        _check_format(value.__self__)
        return wrapped


def render(env: Sandbox, source: str, context: dict[str, Any]) -> str:
    """``source`` rendered in ``env``, refused once longer than MAX_OUTPUT."""
    parts: list[str] = []
    length = 0
    for part in env.from_string(source).generate(context):
        length += len(part)
        if length > MAX_OUTPUT:
            raise SecurityError(f"a message longer than {MAX_OUTPUT} characters is not allowed")
        parts.append(part)
    return "".join(parts)
