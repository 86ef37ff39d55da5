"""Operation 2: modify people in batches (docs/decisions.md, "Operation 2 (modify)").

Each item succeeds or fails alone (checked before it changes anything). Only supplied fields change; null or "" clears
an optional field; first and last name cannot be cleared. A converted lead's ID
works on its contact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from sqlalchemy.orm import Session

from ridercrm.fields import error_messages, item_refusal
from ridercrm.ids import canonical_id, id_problem, unknown_id_note
from ridercrm.people import service
from ridercrm.people.schemas import ModifyResponse, PersonModify

ALL_MODIFIED = "All records modified."
SOME_FAILED = "One or more records could not be modified."
REQUIRED_NAMES = ("first_name", "last_name")


@dataclass
class ModifyResult:
    """One entry of the response's ``details``."""

    ID: str
    fields: int = 0
    status: bool = False
    errors: list[str] = field(default_factory=list)


class _Rejected(Exception):
    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


def modify_people(session: Session, *, items: list[Any], audit_id: str) -> ModifyResponse:
    """Apply each item independently; answer one entry per item, in order."""
    return _answer(modify_each(session, items), audit_id)


def modify_each(session: Session, items: list[Any]) -> list[ModifyResult]:
    """Apply each item independently; one result per item, in order.

    The people the items name are read (on PostgreSQL, locked) before the first item, a
    statement per hop for the whole request; each item is checked before it changes
    anything, so none needs a savepoint; the changes are written in one flush.
    """
    named = {canonical_id(raw.get("ID")) for raw in items if isinstance(raw, dict)}
    named_ids = {person_id for person_id in named if person_id}
    service.lock_in_order(session, named_ids)
    held = service.Held()
    held.load(session, named_ids)
    with session.no_autoflush:
        results = [modify_one(session, raw, held) for raw in items]
    session.flush()
    return results


def modify_one(session: Session, raw: Any, held: service.Held) -> ModifyResult:
    """Apply one item: every supplied field is written, or (refused) none."""
    echo = raw.get("ID") if isinstance(raw, dict) else None
    result = ModifyResult(ID=echo if isinstance(echo, str) else "")
    try:
        result.fields = _apply(session, raw, held)
        result.status = True
    except _Rejected as rejected:
        result.errors = rejected.errors
    return result


def _apply(session: Session, raw: Any, held: service.Held) -> int:
    if not isinstance(raw, dict):
        raise _Rejected([item_refusal(raw, "people_data")])
    try:
        item = PersonModify.model_validate(raw)
    except ValidationError as exc:
        raise _Rejected(error_messages(exc)) from None
    if item.ID is None:
        raise _Rejected(["ID: is required"])
    changes = item.changes()
    cleared = [
        f"{name}: cannot be cleared"
        for name in REQUIRED_NAMES
        if name in changes and changes[name] is None
    ]
    if cleared:
        raise _Rejected(cleared)
    if canonical_id(item.ID) is None:
        raise _Rejected([f"ID: {item.ID} is not a valid record id ({id_problem(item.ID)})"])
    try:
        person = held.resolve(item.ID)
    except service.UnresolvableId as exc:
        raise _Rejected([f"ID: {exc}"]) from None
    if person is None:
        raise _Rejected([f"ID: no contact or lead with id {item.ID}{unknown_id_note(item.ID)}"])
    return service.apply_changes(session, person, changes)


def _answer(results: list[ModifyResult], audit_id: str) -> ModifyResponse:
    """Operation 2's answer to the results."""
    failed = sum(1 for result in results if not result.status)
    return ModifyResponse.model_validate(
        {
            "status": failed == 0,
            "receipt": ALL_MODIFIED if failed == 0 else SOME_FAILED,
            "audit_ID": audit_id,
            "details": results,
            "items_failed": failed,
        }
    )
