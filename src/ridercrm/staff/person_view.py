"""What the console's person page shows, gathered in one read (framework-free).

The audit records that touched a person are those named by their courses' status
history, and the newest records that name the person or one of their latest courses
(``audit_subjects``, an index of what each record names: ridercrm.audit.subjects).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ridercrm.audit import subjects
from ridercrm.audit.models import AuditRecord, AuditSubject
from ridercrm.courses.models import Asset
from ridercrm.people import service as people
from ridercrm.people.models import Person
from ridercrm.people.origin import import_origin
from ridercrm.people.schemas import ImportOrigin
from ridercrm.products.models import Product

MAX_COURSES = 20  # the courses whose records are looked up (the newest courses first)
SHOWN_RECORDS = 50
MATCH_OPERATIONS = ("crm.people_match", "crm.leads_match")
EDITABLE = (
    "first_name",
    "last_name",
    "date_of_birth",
    "email",
    "mobile_phone",
    "drivers_license",
    "street",
    "city",
    "state",
    "postcode",
    "country",
    "lead_source",
)


@dataclass
class Course:
    asset: Asset
    product: Product | None
    history: list[dict[str, Any]]  # from, to, when, audit id, who


@dataclass
class Match:
    record: AuditRecord
    candidate: dict[str, Any] | None
    decision: str


@dataclass
class PersonView:
    person: Person
    origin: ImportOrigin | None = None
    converted_to: Person | None = None
    converted_from: list[Person] = field(default_factory=list)
    merged_into: Person | None = None
    merged_from: list[str] = field(default_factory=list)
    courses: list[Course] = field(default_factory=list)
    records: list[AuditRecord] = field(default_factory=list)
    matches: list[Match] = field(default_factory=list)


def who(record: AuditRecord | None) -> str:
    """Who made a recorded change: the staff user, else the API key's name."""
    if record is None:
        return "(audit record purged)"
    if record.staff_user:
        return f"{record.staff_user} (console)"
    return f"{record.api_key_name} (API key)" if record.api_key_name else "(no key)"


def form_value(person: Person, name: str) -> str:
    """A person's field as the edit form shows it."""
    value = getattr(person, name)
    return "" if value is None else str(value)


def view_person(session: Session, raw_id: str) -> PersonView | None:
    """Everything the person page shows, or None if there is no such person."""
    person = people.find_person(session, raw_id)
    if person is None:
        return None
    view = PersonView(person=person, origin=import_origin(session, person))
    if person.converted_contact_id:
        view.converted_to = session.get(Person, person.converted_contact_id)
    view.converted_from = list(
        session.scalars(select(Person).where(Person.converted_contact_id == person.id))
    )
    if person.merged_into:
        view.merged_into = session.get(Person, person.merged_into)
    view.merged_from = people.merged_from(session, person.id)
    assets = session.scalars(
        select(Asset)
        .where(Asset.person_id == person.id)
        .order_by(Asset.course_datetime.desc(), Asset.id)
    ).all()
    audit_ids = {change.audit_id for asset in assets for change in asset.status_history}
    named = _records(session, audit_ids)
    products = _products(session, {asset.product_id for asset in assets})
    for asset in assets:
        history = [
            {
                "from": change.from_status,
                "to": change.to_status,
                "when": change.changed_at,
                "audit_id": change.audit_id,
                "who": who(named.get(change.audit_id))
                if change.audit_id
                else "(stored without a request: import or demo data)",
            }
            for change in asset.status_history
        ]
        view.courses.append(Course(asset, products.get(asset.product_id), history))
    touching = _touching(session, person.id, [asset.id for asset in assets])
    everything = {**named, **{record.id: record for record in touching}}
    view.records = sorted(everything.values(), key=lambda r: (r.created_at, r.id), reverse=True)[
        :SHOWN_RECORDS
    ]
    view.matches = [
        _match(record, person.id)
        for record in view.records
        if record.operation in MATCH_OPERATIONS
        and isinstance(record.outcomes, dict)
        and record.outcomes.get("id") == person.id
    ]
    return view


def _records(session: Session, ids: set[str]) -> dict[str, AuditRecord]:
    if not ids:
        return {}
    found = session.scalars(select(AuditRecord).where(AuditRecord.id.in_(sorted(ids))))
    return {record.id: record for record in found}


def _products(session: Session, ids: set[str]) -> dict[str, Product]:
    if not ids:
        return {}
    found = session.scalars(select(Product).where(Product.id.in_(sorted(ids))))
    return {product.id: product for product in found}


def _touching(session: Session, person_id: str, asset_ids: Sequence[str]) -> list[AuditRecord]:
    """The newest records that name the person or one of their courses (audit_subjects)."""
    named = [subjects.person(person_id), *(subjects.course(a) for a in asset_ids[:MAX_COURSES])]
    newest = session.execute(
        select(AuditSubject.audit_id)
        .where(AuditSubject.subject.in_(named))
        .order_by(AuditSubject.created_at.desc(), AuditSubject.audit_id.desc())
        .limit(SHOWN_RECORDS * len(named))
    ).scalars()
    ids = list(dict.fromkeys(newest))[:SHOWN_RECORDS]  # a record may name several of them
    if not ids:
        return []
    return list(session.scalars(select(AuditRecord).where(AuditRecord.id.in_(ids))))


def _match(record: AuditRecord, person_id: str) -> Match:
    outcomes = record.outcomes if isinstance(record.outcomes, dict) else {}
    candidates = outcomes.get("candidates") or []
    mine = next((c for c in candidates if isinstance(c, dict) and c.get("id") == person_id), None)
    return Match(record=record, candidate=mine, decision=str(outcomes.get("decision", "")))
