"""Operation 1: book people onto courses and change course status (docs/decisions.md, "Operation 1 (rider courses)").

Each item succeeds or fails alone and never half-writes: everything a request's items
name is read first, each item is then checked before it changes anything, and the
request's rows are written together at the end (``book_courses``; docs/decisions.md,
"Set-based operations 1 and 2 (issue 23)"). Which course an item means, in order: a
non-empty asset_id; a stored booking_number; a new booking_number (a new course); else
the person's one open course of the product (the interface's "pair" rule).
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext, suppress
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic import ValidationError
from sqlalchemy import Table, and_, or_, select
from sqlalchemy import text as text_sql
from sqlalchemy.orm import Session

from ridercrm.courses import repository, rules
from ridercrm.courses.models import Asset, AssetStatusChange
from ridercrm.courses.rules import CANCELLED
from ridercrm.courses.schemas import (
    COURSE_FIELDS,
    COURSE_STATE_FIELDS,
    CourseItem,
    course_state,
)
from ridercrm.db import bulk_insert, utcnow
from ridercrm.errors import DomainError
from ridercrm.events import service as events
from ridercrm.fields import COURSE_LOCATIONS, enumeration, error_messages, item_refusal, text
from ridercrm.ids import RecordKind, canonical_id, id_problem, new_id, unknown_id_note
from ridercrm.notifications import service as notifications
from ridercrm.people import service as people
from ridercrm.people.models import LEAD, Person
from ridercrm.products.models import Product
from ridercrm.sessions import seats


class ItemRejected(DomainError):
    """The item cannot be carried out; its receipt says why."""


@dataclass
class ItemResult:
    """One entry of the response's ``details``."""

    delivery: bool
    receipt: str
    person_id: str = ""
    product_id: str = ""
    contact_id: str = ""
    asset_id: str = ""
    course_datetime: str = ""
    course_date_end: str = ""


def _echo(raw: dict[str, Any], name: str) -> str:
    value = raw.get(name)
    return value if isinstance(value, str) else ""


def get_asset(session: Session, asset_id: str) -> Asset | None:
    """The course with this id (any accepted id form), or None."""
    canonical = canonical_id(asset_id, RecordKind.ASSET)
    return session.get(Asset, canonical) if canonical else None


def book_courses(session: Session, *, items: list[Any], audit_id: str) -> list[ItemResult]:
    """Carry out each item independently; return one result per item, in order.

    Three steps: read everything the items name at once (:func:`_resolve`: a few
    statements for the whole request, not one per item), then decide and apply each item
    in memory in order (a refused item is refused before it changes anything, so no item
    needs a savepoint), then write the request's rows in one flush.
    """
    _lock_in_order(session, items)
    batch = _resolve(session, [raw for raw in items if isinstance(raw, dict)])
    with (
        session.no_autoflush,
        _sessions_of(session, items, batch),
        notifications.sequences_read_once(session, list(batch.by_id)),
    ):
        results = [book_one(session, raw=raw, audit_id=audit_id, batch=batch) for raw in items]
    session.flush()
    _write_history(session, batch.history)
    if batch.people.converted:
        # The converted leads point to their contacts, now inserted.
        people.link_converted(batch.people.converted)
        session.flush()
    return results


def _sessions_of(session: Session, items: list[Any], batch: Batch) -> AbstractContextManager[None]:
    """Read the course sessions the items' seats may be taken or freed in, at once."""
    # Only what could be a time (a string of a time's length, no NUL, which PostgreSQL
    # refuses in text): any other value is refused by its item's own validation.
    starts: set[str | None] = {
        start
        for i in items
        if isinstance(i, dict)
        and isinstance(start := i.get("course_datetime"), str)
        and len(start) <= 40
        and "\x00" not in start
    }
    starts |= {asset.course_datetime for asset in batch.by_id.values()}
    products = set(batch.products) | {asset.product_id for asset in batch.by_id.values()}
    named = {start for start in starts if isinstance(start, str) and start}
    if not products or not named:
        return nullcontext()
    locations = {a.course_location for a in batch.by_id.values() if a.course_location}
    for raw in items:
        with suppress(ValueError):  # an item's own validation refuses it
            location = _LOCATION(raw.get("course_location") if isinstance(raw, dict) else None)
            locations |= {location} if location else set()
    return seats.sessions_read_once(session, products, named, locations)


_LOCATION = enumeration(COURSE_LOCATIONS)
"""An item's ``course_location`` as stored (any casing, or an alias)."""


STATUS_FIELDS = frozenset({"asset_id", "course_status", "course_feedback"})
"""What an item of :func:`change_statuses` may carry."""


def change_statuses(
    session: Session, *, items: list[dict[str, str]], audit_id: str
) -> list[ItemResult]:
    """Operation 1's status changes of named courses (``asset_id``, ``course_status``,
    ``course_feedback``), as :func:`book_courses` would make them, in one flush.

    Each item is checked against the same validation, status machine and feedback rule,
    and refused alone with the same receipt; a refused item has changed nothing (its
    rules are checked before it writes), so no item needs a savepoint of its own and the
    courses and their history are written together (the day sheet: 40 rows at once).
    """
    if any(set(raw) - STATUS_FIELDS for raw in items):
        raise ValueError(f"change_statuses: items carry only {', '.join(sorted(STATUS_FIELDS))}")
    _lock_in_order(session, items)
    _lock_sessions_of(session, items)
    history: list[HistoryRow] = []
    results = [_change_status(session, raw, audit_id, history) for raw in items]
    session.flush()
    _write_history(session, history)
    return results


HistoryRow = tuple[str, str | None, str, Any, str]
"""A course's status change (``asset_status_history``): asset_id, from_status, to_status,
changed_at, audit_id."""
HISTORY = cast(Table, AssetStatusChange.__table__)
HISTORY_COLUMNS = ("asset_id", "from_status", "to_status", "changed_at", "audit_id")


def _status_changed(
    history: list[HistoryRow], asset: Asset, from_status: str | None, audit_id: str
) -> None:
    history.append((asset.id, from_status, asset.course_status, utcnow(), audit_id))


def _write_history(session: Session, history: list[HistoryRow]) -> None:
    """Insert the status changes of a batch's courses (flushed: a foreign key names them),
    in one executemany: nothing in the transaction reads them back, and as ORM objects
    each was an INSERT of its own, to fetch an id nobody uses."""
    bulk_insert(session, HISTORY, HISTORY_COLUMNS, history)


def _change_status(
    session: Session, raw: dict[str, str], audit_id: str, history: list[HistoryRow]
) -> ItemResult:
    result = ItemResult(delivery=False, receipt="", asset_id=_echo(raw, "asset_id"))
    try:
        item = CourseItem.model_validate(raw)
        asset_id = canonical_id(item.asset_id or "", RecordKind.ASSET)
        asset = repository.lock_asset(session, asset_id) if asset_id else None
        if asset is None:
            raise ItemRejected(
                f"asset_id: no course with id {item.asset_id}{unknown_id_note(item.asset_id)}"
            )
        contact = people.lock_person(session, asset.person_id)
        assert contact is not None
        _fill(result, asset, contact)
        result.receipt = _update(session, item, asset, contact, audit_id, history)
    except ValidationError as exc:
        result.receipt = _refusal("; ".join(error_messages(exc)), raw)
        return result
    except ItemRejected as rejected:
        result.receipt = _refusal(str(rejected), raw)
        return result
    except seats.NoSeat as no_seat:
        result.receipt = str(no_seat)
        return result
    result.delivery = True
    return result


def _lock_in_order(session: Session, items: list[Any]) -> None:
    """On PostgreSQL, lock the people the items name, then their courses, before any item.

    The order is the one items take anyway — a lead, then the contact it becomes, then
    the course (``people.lock_in_order``: leads before contacts, each in id order) — so a
    request that already sees a course and one that books it at the same moment queue
    instead of deadlocking.
    """
    if session.get_bind().dialect.name == "sqlite":
        return
    objects = [item for item in items if isinstance(item, dict)]
    asset_ids = {canonical_id(i.get("asset_id"), RecordKind.ASSET) for i in objects} - {None}
    numbers = {number for i in objects if (number := _booking_number(i.get("booking_number")))}
    if numbers:
        # Only operation 1 stores booking numbers: holding each number's lock until
        # commit, a request that might book it waits for the one that does, then
        # reads the course it stored (no unique-key violation at the flush).
        session.execute(_NUMBER_LOCKS, {"numbers": sorted(numbers)})
    person_ids = {canonical_id(i.get("person_id")) for i in objects} - {None}
    named = or_(Asset.id.in_(asset_ids), Asset.booking_number.in_(numbers))
    if asset_ids or numbers:
        person_ids |= set(session.scalars(select(Asset.person_id).where(named)))
    people.lock_in_order(session, {p for p in person_ids if p})
    if asset_ids or numbers:
        session.execute(select(Asset.id).where(named).order_by(Asset.id).with_for_update()).all()


def _lock_sessions_of(session: Session, items: list[dict[str, str]]) -> None:
    """On PostgreSQL, lock the sessions of the courses the items name, at once and in id
    order, before any item frees or takes a seat in them: as a booking of several
    sessions locks them (``seats.sessions_read_once``), not each as its item comes (the
    day sheet cancelling courses in two sessions deadlocked with a booking of both)."""
    if session.get_bind().dialect.name == "sqlite" or len(items) < 2:
        return
    asset_ids = {canonical_id(i.get("asset_id"), RecordKind.ASSET) for i in items} - {None}
    sessions = seats.SESSIONS
    session.execute(
        select(sessions.c.id)
        .join(
            Asset,
            and_(
                Asset.product_id == sessions.c.product_id,
                Asset.course_location == sessions.c.location,
                Asset.course_datetime == sessions.c.course_datetime,
            ),
        )
        .where(Asset.id.in_(asset_ids))
        .order_by(sessions.c.id)
        .with_for_update(of=sessions)
    ).all()


_NUMBER_LOCKS = text_sql(
    "SELECT pg_advisory_xact_lock(k) FROM (SELECT DISTINCT hashtextextended(n, 23) AS k"
    " FROM unnest(CAST(:numbers AS text[])) AS n) AS locks ORDER BY k"
)
"""Take each booking number's transaction-level lock, in one fixed order."""


def _booking_number(value: Any) -> str | None:
    """The booking number as the item's validation reads it; None if it would refuse it."""
    try:
        return _BOOKING_NUMBER(value)
    except ValueError:
        return None


_BOOKING_NUMBER = text(80)


@dataclass
class Batch:
    """What a request's items name, read before the first item (:func:`_resolve`), and
    kept in step with what each item does, so a later item sees an earlier one's work
    (a course booked with a booking number is found by the next item that names it)."""

    people: people.Held
    products: dict[str, Product]
    by_id: dict[str, Asset]
    by_number: dict[str, Asset]
    # Every course of a (person, product) a pair item may mean, whatever its status.
    courses_of: dict[tuple[str, str], list[Asset]]
    # The status changes the items made, written after the batch's flush.
    history: list[HistoryRow] = field(default_factory=list)

    def add(self, asset: Asset) -> None:
        self.by_id[asset.id] = asset
        if asset.booking_number:
            self.by_number[asset.booking_number] = asset
        self.courses_of.setdefault((asset.person_id, asset.product_id), []).append(asset)


def _resolve(session: Session, items: list[dict[str, Any]]) -> Batch:
    """Read the courses, people and products the items name: a statement each (one per
    hop for people), whatever the number of items. On PostgreSQL they are locked already
    (:func:`_lock_in_order`) but for the courses a pair names, locked here in id order."""
    asset_ids = {canonical_id(i.get("asset_id"), RecordKind.ASSET) for i in items} - {None}
    numbers = {number for i in items if (number := _booking_number(i.get("booking_number")))}
    person_ids = {canonical_id(i.get("person_id")) for i in items} - {None}
    product_ids = {canonical_id(i.get("product_id"), RecordKind.PRODUCT) for i in items} - {None}
    assets: list[Asset] = []
    if asset_ids or numbers:
        named = or_(Asset.id.in_(asset_ids), Asset.booking_number.in_(numbers))
        assets = list(session.scalars(select(Asset).where(named)))
    held = people.Held()
    held.load(session, {p for p in person_ids if p} | {a.person_id for a in assets})
    products: dict[str, Product] = {}
    if product_ids:
        products = {
            p.id: p for p in session.scalars(select(Product).where(Product.id.in_(product_ids)))
        }
    batch = Batch(held, products, {}, {}, {})
    owners = {
        person.id
        for raw in person_ids
        if raw and (person := _quietly_resolved(held, raw)) is not None
    }
    known = {a.id for a in assets}
    if owners and products:
        pairs = select(Asset).where(
            Asset.person_id.in_(owners), Asset.product_id.in_(products), Asset.id.not_in(known)
        )
        if session.get_bind().dialect.name != "sqlite":
            pairs = pairs.order_by(Asset.id).with_for_update()
        assets.extend(session.scalars(pairs))
    for asset in assets:
        batch.add(asset)
    return batch


def _quietly_resolved(held: people.Held, raw_id: str) -> Person | None:
    try:
        return held.resolve(raw_id)
    except people.UnresolvableId:
        return None


def book_one(session: Session, *, raw: Any, audit_id: str, batch: Batch) -> ItemResult:
    """Decide one item and apply it, or refuse it having changed nothing."""
    if not isinstance(raw, dict):
        return ItemResult(delivery=False, receipt=item_refusal(raw, "people_product") + ".")
    result = ItemResult(
        delivery=False,
        receipt="",
        person_id=_echo(raw, "person_id"),
        product_id=_echo(raw, "product_id"),
        asset_id=_echo(raw, "asset_id"),
        course_datetime=_echo(raw, "course_datetime"),
        course_date_end=_echo(raw, "course_date_end"),
    )
    try:
        item = CourseItem.model_validate(raw)
    except ValidationError as exc:
        result.receipt = _refusal("; ".join(error_messages(exc)), raw)
        _named_course(result, raw, batch)
        return result
    try:
        return _carry_out(session, item, result, audit_id, batch)
    except ItemRejected as rejected:
        result.receipt = _refusal(str(rejected), raw)
        _named_course(result, raw, batch)
        return result
    except seats.NoSeat as no_seat:
        # The fixed receipts ("Course is full.") go out exactly as written.
        result.receipt = str(no_seat)
        return result


def _named_course(result: ItemResult, raw: dict[str, Any], batch: Batch) -> None:
    """A refused item that names a stored course (its id or booking number) reports the
    course, its product and contact, as a refused status change does (EXAMPLES.md);
    never one the item's person_id says belongs to someone else."""
    if result.product_id and result.contact_id and result.course_datetime:
        return
    if raw_asset := _echo(raw, "asset_id"):
        asset_id = canonical_id(raw_asset, RecordKind.ASSET)
        asset = batch.by_id.get(asset_id) if asset_id else None
    else:
        asset = batch.by_number.get(_booking_number(raw.get("booking_number")) or "")
    if asset is None:
        return
    owner = _quietly_resolved(batch.people, asset.person_id)
    named = _echo(raw, "person_id")
    if owner is None or (named and _quietly_resolved(batch.people, named) is not owner):
        return
    if owner.kind == LEAD:
        return
    _fill(result, asset, owner)


def _refusal(reason: str, raw: dict[str, Any]) -> str:
    """A refused item's receipt; it names the item's booking number, so a client that
    sent several bookings (or retries one) knows which was not applied."""
    number = _booking_number(raw.get("booking_number"))
    if number and number not in reason:
        reason += f" (booking_number {number})"
    return reason + "."


def _carry_out(
    session: Session, item: CourseItem, result: ItemResult, audit_id: str, batch: Batch
) -> ItemResult:
    person = _person(item, batch)
    if person is not None and person.kind != LEAD:
        result.contact_id = person.id
    asset, is_new = _find_course(item, person, batch)
    if is_new:
        assert person is not None
        return _book_new(session, item, person, result, audit_id, batch)
    assert asset is not None
    contact = batch.people.get(asset.person_id)
    assert contact is not None
    # Known before the rules are checked, so a refused item still says which course.
    _fill(result, asset, contact)
    receipt = _update(session, item, asset, contact, audit_id, batch.history)
    if asset.booking_number:
        batch.by_number[asset.booking_number] = asset
    _fill(result, asset, contact)
    result.delivery, result.receipt = True, receipt
    return result


def _person(item: CourseItem, batch: Batch) -> Person | None:
    if item.person_id is None:
        return None
    if canonical_id(item.person_id) is None:
        raise ItemRejected(
            f"person_id: {item.person_id} is not a valid record id ({id_problem(item.person_id)})"
        )
    try:
        person = batch.people.resolve(item.person_id)
    except people.UnresolvableId as exc:
        raise ItemRejected(f"person_id: {exc}") from None
    if person is None:
        raise ItemRejected(
            f"person_id: no contact or lead with id {item.person_id}"
            + unknown_id_note(item.person_id)
        )
    return person


def _product(raw_id: str, batch: Batch) -> Product:
    product_id = canonical_id(raw_id, RecordKind.PRODUCT)
    product = batch.products.get(product_id) if product_id else None
    if product is None:
        raise ItemRejected(f"product_id: no product with id {raw_id}{unknown_id_note(raw_id)}")
    return product


def _find_course(
    item: CourseItem, person: Person | None, batch: Batch
) -> tuple[Asset | None, bool]:
    """The course the item means, and whether it is a new one to book."""
    if item.asset_id is not None:
        asset_id = canonical_id(item.asset_id, RecordKind.ASSET)
        asset = batch.by_id.get(asset_id) if asset_id else None
        if asset is None:
            raise ItemRejected(
                f"asset_id: no course with id {item.asset_id}{unknown_id_note(item.asset_id)}"
            )
        _check_owner(item, asset, person)
        if (
            item.booking_number
            and asset.booking_number
            and item.booking_number != asset.booking_number
        ):
            raise ItemRejected(
                f"booking_number: the course has booking number {asset.booking_number}, not {item.booking_number}"
            )
        other = batch.by_number.get(item.booking_number or "")
        if not asset.booking_number and other is not None and other is not asset:
            raise ItemRejected(
                f"booking_number: {item.booking_number} is the booking number of course {other.id}"
            )
        return asset, False
    if item.booking_number is not None:
        found = batch.by_number.get(item.booking_number)
        if found is not None:
            _check_owner(item, found, person)
            return found, False
        missing = item.missing_for_new_booking()
        if missing:
            raise ItemRejected(
                "; ".join(f"{name}: is required for a new booking" for name in missing)
            )
        return None, True
    if person is None or item.product_id is None:
        raise ItemRejected(
            "asset_id, booking_number, or person_id with product_id: one is required to name a course"
        )
    product = _product(item.product_id, batch)
    open_courses = [
        asset
        for asset in batch.courses_of.get((person.id, product.id), [])
        if asset.course_status != CANCELLED
    ]
    if not open_courses:
        raise ItemRejected("product_id: the person has no open course of this product")
    if len(open_courses) > 1:
        raise ItemRejected(
            "product_id: the person has several open courses of this product; send asset_id"
        )
    return open_courses[0], False


def _check_owner(item: CourseItem, asset: Asset, person: Person | None) -> None:
    # The batch's people were read (on PostgreSQL, locked) before its first item, so a
    # lead converted by a concurrent request is already seen as converted.
    if person is not None and person.id != asset.person_id:
        raise ItemRejected(f"person_id: course {asset.id} belongs to another person")
    if item.product_id is not None:
        product_id = canonical_id(item.product_id, RecordKind.PRODUCT)
        if product_id != asset.product_id:
            raise ItemRejected(f"product_id: course {asset.id} is of product {asset.product_id}")


def _book_new(
    session: Session,
    item: CourseItem,
    person: Person,
    result: ItemResult,
    audit_id: str,
    batch: Batch,
) -> ItemResult:
    assert item.product_id is not None
    assert item.course_status is not None
    product = _product(item.product_id, batch)
    problem = rules.feedback_error(item.course_status, item.course_feedback)
    if problem:
        raise ItemRejected(problem)
    converted = person.kind == LEAD
    _take_seat(
        session,
        before=None,
        after=_place(product.id, item.course_location, item.course_datetime, item.course_status),
        person_ids={person.id},
    )
    contact = person
    if converted:
        contact = people.new_contact_of(session, person)
        batch.people.convert(person, contact)
    people.apply_changes(session, contact, item.person_changes())
    asset = Asset(
        id=new_id(RecordKind.ASSET),
        person_id=contact.id,
        product_id=product.id,
        booking_number=item.booking_number,
        course_status=item.course_status,
        course_feedback=item.course_feedback,
        **{name: getattr(item, name) for name in COURSE_FIELDS},
    )
    session.add(asset)
    _status_changed(batch.history, asset, None, audit_id)
    batch.add(asset)
    events.course_booked(session, asset, course_state(asset))
    notifications.course_booked(session, asset, person=contact)
    _fill(result, asset, contact)
    result.delivery = True
    result.receipt = "Course booked; lead converted to contact." if converted else "Course booked."
    return result


def _update(
    session: Session,
    item: CourseItem,
    asset: Asset,
    contact: Person,
    audit_id: str,
    history: list[HistoryRow],
) -> str:
    """Apply an item to its course, or raise ItemRejected before changing anything.

    The writes are left to the caller's flush (:func:`book_courses`, which refuses a
    booking number another course has before writing it, and :func:`change_statuses`,
    whose items set no unique value), a status change to ``history``, which the caller
    writes after it."""
    current = asset.course_status
    target = item.course_status or current
    problem = rules.transition_error(current, target)
    if problem:
        raise ItemRejected(problem)
    if "course_feedback" in item.model_fields_set:
        feedback = item.course_feedback
    else:
        feedback = asset.course_feedback if target == current else None
    problem = rules.feedback_error(target, feedback)
    if problem:
        raise ItemRejected(problem)
    _take_seat(
        session,
        before=_place(asset.product_id, asset.course_location, asset.course_datetime, current),
        after=_place(
            asset.product_id,
            item.course_location or asset.course_location,
            item.course_datetime or asset.course_datetime,
            target,
        ),
        person_ids={contact.id, *filter(None, [canonical_id(item.person_id)])},
    )
    before = {name: getattr(asset, name) for name in COURSE_STATE_FIELDS}
    for name in COURSE_FIELDS:
        value = getattr(item, name)
        if value is not None:
            setattr(asset, name, value)
    if item.booking_number and not asset.booking_number:
        asset.booking_number = item.booking_number
    asset.course_feedback = feedback
    asset.course_status = target
    asset.updated_at = utcnow()
    people.apply_changes(session, contact, item.person_changes())
    if target != current:
        _status_changed(history, asset, current, audit_id)
    # The status, and the feedback that goes with a new status, are course.status_changed's.
    reported = ("course_status", "course_feedback") if target != current else ("course_status",)
    changed = [
        name
        for name, value in before.items()
        if name not in reported and getattr(asset, name) != value
    ]
    if changed:
        events.course_updated(session, asset, course_state(asset), changed)
    if target != current:
        events.course_status_changed(session, asset, from_status=current, audit_id=audit_id)
    notifications.course_changed(session, asset, from_status=current, changed=changed)
    if target != current:
        return f"Course status changed from {current} to {target}."
    return "Course updated."


def _fill(result: ItemResult, asset: Asset, contact: Person) -> None:
    result.product_id = asset.product_id
    result.contact_id = contact.id
    result.asset_id = asset.id
    result.course_datetime = asset.course_datetime or ""
    result.course_date_end = asset.course_date_end or ""


# --- Seats (issue 25) ------------------------------------------------------------------
# The one step where booking meets sessions: a course created, moved, or changing status
# takes or frees its session's seat here, before the item writes anything else (a full
# session refuses the item with seats.NoSeat, nothing written). The rules are in
# ridercrm.sessions.seats.


def _place(
    product_id: str, location: str | None, course_datetime: str | None, status: str | None
) -> seats.Place | None:
    """Where a course in ``status`` holds a seat; None when that status holds none."""
    if not seats.holds_seat(status):
        return None
    return seats.Place(product_id, location, course_datetime)


def _take_seat(
    session: Session,
    *,
    before: seats.Place | None,
    after: seats.Place | None,
    person_ids: set[str],
) -> None:
    seats.move(session, before=before, after=after, person_ids=person_ids)
