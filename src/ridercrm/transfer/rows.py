"""Validate imported values by the admin API's models and build the rows that are stored.

The rules live once, in ``ridercrm.fields``, wired to fields by ``PersonCreate`` and
``ProductCreate``. Running ``model_validate`` per row costs about a fifth more than
calling those same parse functions, so ``Rules`` takes each field's parse function
(and the model's field validators) out of the model and calls them directly. When a
model has anything this cannot reproduce, ``Rules`` falls back to ``model_validate``.
"""

from __future__ import annotations

import datetime as dt
import inspect
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any, cast

from pydantic import BaseModel, BeforeValidator, ValidationError, WithJsonSchema
from sqlalchemy import Table

from ridercrm.db import utcnow
from ridercrm.fields import error_messages
from ridercrm.ids import RecordKind, new_id
from ridercrm.people.blocking import stored_keys
from ridercrm.people.index import identity_of
from ridercrm.people.models import CONTACT, LEAD, PERSON_FIELDS, Person, PersonKey
from ridercrm.people.normalize import name_search
from ridercrm.people.schemas import PersonCreate
from ridercrm.products.models import Product
from ridercrm.products.schemas import ProductCreate

Step = Callable[[Any], Any]
_REQUIRED = object()


class Rules:
    """A model's validation, run on a dict of raw values; errors read "field: reason"."""

    def __init__(self, model: type[BaseModel]) -> None:
        self.model = model
        self.fields = frozenset(model.model_fields)
        self._steps = _steps_of(model)

    @property
    def direct(self) -> bool:
        """Whether the parse functions are called directly rather than through the model."""
        return self._steps is not None

    def validate(self, values: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """Validate ``values`` (absent keys are absent fields): the data, or the errors."""
        if self._steps is None:
            return self._through_model(values)
        data: dict[str, Any] = {}
        errors: list[str] = []
        for name, default, steps in self._steps:
            if name not in values:
                if default is _REQUIRED:
                    errors.append(f"{name}: is required")
                data[name] = None if default is _REQUIRED else default
                continue
            value = values[name]
            try:
                for step in steps:
                    value = step(value)
            except ValueError as exc:
                errors.append(f"{name}: {exc}")
                continue
            data[name] = value
        if not self.fields.issuperset(values):
            unknown = sorted(set(values) - self.fields)
            errors.extend(f"{name}: is not a known field" for name in unknown)
        return data, errors

    def _through_model(self, values: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
        try:
            return self.model.model_validate(values).model_dump(), []
        except ValidationError as exc:
            return {}, error_messages(exc)


def _steps_of(model: type[BaseModel]) -> list[tuple[str, Any, tuple[Step, ...]]] | None:
    """Each field's parse function and after-validators, or None if the model has more."""
    decorators = model.__pydantic_decorators__
    if decorators.model_validators or decorators.root_validators or decorators.validators:
        return None
    afters: dict[str, list[Step]] = {name: [] for name in model.model_fields}
    for decorator in decorators.field_validators.values():
        check = decorator.info
        if check.mode != "after" or len(inspect.signature(decorator.func).parameters) != 1:
            return None
        names = list(afters) if "*" in check.fields else check.fields
        for name in names:
            afters[name].append(cast(Step, decorator.func))
    steps = []
    for name, info in model.model_fields.items():
        parses = [m.func for m in info.metadata if isinstance(m, BeforeValidator)]
        documented = [m for m in info.metadata if isinstance(m, WithJsonSchema)]
        if len(parses) != 1 or len(info.metadata) != 1 + len(documented):
            return None
        if info.alias or info.default_factory:
            return None
        default = _REQUIRED if info.is_required() else info.default
        steps.append((name, default, (cast(Step, parses[0]), *afters[name])))
    return steps


# The order of the values of the rows built below, as the importer sends them.
PERSON_ROW_COLUMNS = (
    *PERSON_FIELDS,
    "id",
    "kind",
    "converted_contact_id",
    "created_at",
    "updated_at",
    "duplicate_touched_at",
    "first_name_search",
    "last_name_search",
)
PRODUCT_ROW_COLUMNS = ("id", "name", "code", "price", "active", "created_at", "updated_at")

PERSON_RULES = Rules(PersonCreate)
PRODUCT_RULES = Rules(ProductCreate)
PEOPLE_TABLE = cast(Table, Person.__table__)
PERSON_KEYS_TABLE = cast(Table, PersonKey.__table__)
PRODUCTS_TABLE = cast(Table, Product.__table__)


def person_rows(
    kind: str,
    data: Mapping[str, Any],
    *,
    person_id: str | None = None,
    converted_contact_id: str | None = None,
    now: dt.datetime | None = None,
) -> tuple[dict[str, Any], set[int]]:
    """The stored row of a new contact or lead, and its matching keys.

    Every bulk write of people (import, demo data) builds its rows here, so whatever a
    stored person needs besides its fields (the matcher's keys) is computed in one place.
    """
    if kind not in (CONTACT, LEAD):
        raise ValueError(f"unknown kind of person: {kind}")
    if person_id is None:
        person_id = new_id(RecordKind.CONTACT if kind == CONTACT else RecordKind.LEAD)
    now = now or utcnow()
    row = {name: data.get(name) for name in PERSON_FIELDS}
    row.update(
        id=person_id,
        kind=kind,
        converted_contact_id=converted_contact_id,
        created_at=now,
        updated_at=now,
        duplicate_touched_at=now,  # for the duplicates re-check, as every write of a person
        # the names as the staff search reads them, as the model keeps them
        first_name_search=name_search(row["first_name"]),
        last_name_search=name_search(row["last_name"]),
    )
    return row, stored_keys(identity_of(SimpleNamespace(**row)))


def product_row(
    data: Mapping[str, Any], *, product_id: str | None = None, now: dt.datetime | None = None
) -> dict[str, Any]:
    """The stored row of a new product from validated product fields."""
    now = now or utcnow()
    return {
        "id": product_id or new_id(RecordKind.PRODUCT),
        "name": data["name"],
        "code": data["code"],
        "price": data["price"],
        # Absent means active, as in ProductCreate; an empty cell never reaches here.
        "active": True if data.get("active") is None else data["active"],
        "created_at": now,
        "updated_at": now,
    }
