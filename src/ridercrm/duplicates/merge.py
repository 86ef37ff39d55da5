"""Merging duplicate people into one survivor, and undoing a merge (docs/decisions.md, "Duplicates (issue 15)").

Nothing is deleted: the other members stay stored with ``merged_into`` set, so their
ids keep working (people.service.resolve follows them to the survivor). Their courses
(with each course's status history) and their messages move to the survivor; leads
converted into a member reach the survivor through their own link, and records merged
into a member earlier are pointed at the new survivor (chains stay one hop; the undo points them back).
A merge asked for by a person (CLI, admin API, console) is refused when the matcher
scores two members as different people, unless forced. The whole merge is one
transaction.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ridercrm.courses.models import Asset
from ridercrm.courses.schemas import course_state
from ridercrm.db import utcnow
from ridercrm.duplicates.models import PersonMerge
from ridercrm.duplicates.recheck import mark
from ridercrm.duplicates.scoring import SameCheck, scored_as_different
from ridercrm.errors import CONFLICT, INVALID, NOT_FOUND, DomainError
from ridercrm.events import service as events
from ridercrm.fields import echoed
from ridercrm.ids import canonical_id
from ridercrm.notifications import service as notifications
from ridercrm.notifications.models import Message, ReminderStop
from ridercrm.people import service as people
from ridercrm.people.models import CONTACT, PERSON_FIELDS, Person
from ridercrm.sessions import seats

MIN_MEMBERS = 2
MAX_MEMBERS = 20
# Newest wins for these (people move and change numbers); the address moves as one
# block so a street is never paired with another member's postcode. A block that lacks
# parts (a postcode alone, from a web form) takes them from a member at that very
# postcode: the same place, described more fully.
CONTACT_DETAILS = ("email", "mobile_phone", "home_phone")
ADDRESS = ("street", "city", "state", "postcode", "country")
# A refusal of unknown field names names this many of them (each cut to fields.echoed's length).
NAMED_AT_MOST = 5


class MergeError(DomainError):
    """A merge or undo that cannot be done; nothing was changed."""

    listed = False  # the API answers its reason alone, without an "errors" list

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason, kind=kind)


@dataclass
class MergePlan:
    """What a merge does: the survivor's resulting fields and the rows that move."""

    survivor: Person
    merged: list[Person]
    values: dict[str, Any]
    sources: dict[str, str]
    moved_assets: dict[str, str] = field(default_factory=dict)
    # The survivor's fields the merge changes, read when planned: after the merge the
    # survivor holds the new values, and the answer must still name them.
    changed: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.changed = sorted(
            name for name, value in self.values.items() if getattr(self.survivor, name) != value
        )

    def preview(self) -> dict[str, Any]:
        """The plan in the API's words."""
        return {
            "survivor": self.survivor.id,
            "merged": [person.id for person in self.merged],
            "fields": {name: _dump(value) for name, value in self.values.items()},
            "sources": self.sources,
            "changed": self.changed,
            "moved": {"courses": sorted(self.moved_assets)},
        }


def plan_merge(
    session: Session,
    *,
    people_ids: Sequence[str],
    survivor_id: str | None,
    fields: Mapping[str, str],
    lock: bool,
    same: SameCheck | None = None,
) -> MergePlan:
    """Check a merge request and work out what it would do; ``lock`` holds the rows.

    With ``same``, a member the matcher scores as another person than the survivor
    refuses the merge (409); without it (forced, or the scan's own auto-merge) it does not.
    """
    if not MIN_MEMBERS <= len(people_ids) <= MAX_MEMBERS:
        raise MergeError(INVALID, f"people: give {MIN_MEMBERS} to {MAX_MEMBERS} ids")
    members = _members(session, people_ids, lock=lock)
    if len(members) < MIN_MEMBERS:
        raise MergeError(INVALID, "people: the ids given stand for fewer than 2 different people")
    courses = _course_counts(session, [m.id for m in members])
    survivor = _choose_survivor(session, members, survivor_id, courses)
    merged = [m for m in members if m is not survivor]
    if same is not None:
        for why in different_people(session, survivor, merged, same)[:1]:
            raise MergeError(
                CONFLICT,
                f"{why}; nothing was changed (to merge them anyway: --force,"
                ' "force": true, or the console\'s "merge even if" box)',
            )
    values, sources = _field_values(session, survivor, members, fields)
    moved = dict(
        session.execute(
            select(Asset.id, Asset.person_id)
            .where(Asset.person_id.in_([m.id for m in merged]))
            .order_by(Asset.id)
        ).all()
    )
    return MergePlan(
        survivor=survivor, merged=merged, values=values, sources=sources, moved_assets=moved
    )


def different_people(
    session: Session, survivor: Person, merged: Sequence[Person], same: SameCheck
) -> list[str]:
    """Each member the matcher scores as another person than the survivor, in words
    ("the matcher scores A (Ann Nguyen) and B (Ben Kelly) as different people: why"):
    what refuses a merge that is not forced (its first), and what a preview warns of."""
    found = []
    for member in merged:
        why = scored_as_different(session, survivor, member, same)
        if why is not None:
            found.append(
                f"the matcher scores {survivor.id} ({_name(survivor)}) and {member.id}"
                f" ({_name(member)}) as different people: {why}"
            )
    return found


def merge_people(
    session: Session,
    *,
    people_ids: Sequence[str],
    survivor_id: str | None = None,
    fields: Mapping[str, str] | None = None,
    dry_run: bool = False,
    audit_id: str | None = None,
    same: SameCheck | None = None,
) -> tuple[MergePlan, PersonMerge | None]:
    """Merge people into one survivor in this transaction (or only plan it: ``dry_run``);
    ``same``: refuse members the matcher scores as different people (plan_merge)."""
    plan = plan_merge(
        session,
        people_ids=people_ids,
        survivor_id=survivor_id,
        fields=fields or {},
        lock=not dry_run,
        same=same,
    )
    if dry_run:
        return plan, None
    survivor = plan.survivor
    before: dict[str, dict[str, Any]] = {
        person.id: {"updated_at": person.updated_at.isoformat()} for person in plan.merged
    }
    before[survivor.id] = {name: _dump(getattr(survivor, name)) for name in PERSON_FIELDS}
    before[survivor.id]["updated_at"] = survivor.updated_at.isoformat()
    now = utcnow()
    people.apply_changes(session, survivor, plan.values)
    survivor.updated_at = now
    # Records merged earlier into a member now point at the new survivor, so every merged
    # record is one hop from its live record however often people are merged; the undo
    # points them back (kept in ``before`` under their ids, with the target they had).
    for older in _merged_into_any(session, [person.id for person in plan.merged]):
        before[older.id] = {"merged_into": older.merged_into}
        older.merged_into = survivor.id
    for person in plan.merged:
        person.merged_into = survivor.id
        person.updated_at = now
    mark([survivor, *plan.merged])
    if plan.moved_assets:
        _lock_courses(session, list(plan.moved_assets))
        # Courses keep their own updated_at: their data did not change, only the owner.
        session.execute(
            update(Asset)
            .where(Asset.id.in_(list(plan.moved_assets)))
            .values(person_id=survivor.id, updated_at=Asset.updated_at),
            execution_options={"synchronize_session": False},
        )
    session.flush()  # the waiting lists below follow merged_into in the database
    ended_entries = seats.lines_merged(session, survivor.id, _seated(session, survivor.id))
    if ended_entries:
        before[survivor.id][ENDED_ENTRIES] = ended_entries  # the undo puts them back in line
    moved_messages = _move_messages(session, [person.id for person in plan.merged], survivor.id)
    carried = _carry_reminder_stop(session, survivor.id, [person.id for person in plan.merged])
    if carried is not None:
        before[survivor.id][CARRIED_STOP] = carried  # the undo takes it away again
    record = PersonMerge(
        created_at=now,
        survivor_id=survivor.id,
        merged_ids=[person.id for person in plan.merged],
        before=before,
        after={name: _dump(getattr(survivor, name)) for name in PERSON_FIELDS},
        moved_assets=plan.moved_assets,
        moved_messages=moved_messages,
        audit_id=audit_id,
    )
    session.add(record)
    _flush(session, "merge")
    events.person_merged(
        session,
        survivor=survivor,
        merged_ids=record.merged_ids,
        merge_id=record.id,
        moved_courses=list(plan.moved_assets),
        audit_id=audit_id,
    )
    events.follow_survivor(session, survivor_id=survivor.id, merged_ids=record.merged_ids)
    _courses_moved(session, list(plan.moved_assets), publisher=survivor.id)
    return plan, record


def _move_messages(session: Session, from_ids: Sequence[str], to_id: str) -> dict[str, str]:
    """Re-point the messages of ``from_ids`` to ``to_id`` (the survivor's page lists them;
    a pending one goes to the survivor's address); return {message id: its person}."""
    owners = {
        str(message_id): person_id
        for message_id, person_id in session.execute(
            select(Message.id, Message.person_id).where(Message.person_id.in_(list(from_ids)))
        )
        if person_id is not None
    }
    if owners:
        session.execute(
            update(Message)
            .where(Message.id.in_([int(key) for key in owners]))
            .values(person_id=to_id, updated_at=Message.updated_at),
            execution_options={"synchronize_session": False},
        )
    return owners


# In a merge's ``before`` of the survivor: the waiting-list entries the merge ended
# (``seats.lines_merged``).
ENDED_ENTRIES = "waitlist_entries_ended"


def _seated(session: Session, person_id: str) -> list[seats.Place]:
    """Where the person's courses hold a seat."""
    rows = session.execute(
        select(Asset.product_id, Asset.course_location, Asset.course_datetime).where(
            Asset.person_id == person_id, Asset.course_status.in_(seats.SEAT_STATUSES)
        )
    )
    return [seats.Place(*row) for row in rows]


# In a merge's ``before`` of the survivor: the merge stopped its reminders, as a member's
# were stopped (the survivor now has that member's courses and address).
CARRIED_STOP = "reminders_stopped_by_merge"


def _carry_reminder_stop(
    session: Session, survivor_id: str, merged_ids: Sequence[str]
) -> str | None:
    """Stop the survivor's reminders if a merged member had stopped theirs and the
    survivor had not; return the stop's ``stopped_by`` if it did."""
    stops = session.scalars(
        select(ReminderStop).where(ReminderStop.person_id.in_(list(merged_ids)))
    ).all()
    if not stops or notifications.reminders_stopped(session, survivor_id) is not None:
        return None
    first = min(stops, key=lambda stop: (stop.stopped_at, stop.person_id))
    stopped_by = f"{first.stopped_by} (as {first.person_id}, merged)"[:120]
    notifications.stop_reminders(session, person_id=survivor_id, stopped_by=stopped_by)
    return stopped_by


def _messages_back(session: Session, record: PersonMerge) -> None:
    """An undo: each moved message back to its person, if still the survivor's; and the
    messages written since about a course that moves back, with their course."""
    for message_id, owner in (record.moved_messages or {}).items():
        session.execute(
            update(Message)
            .where(Message.id == int(message_id), Message.person_id == record.survivor_id)
            .values(person_id=owner, updated_at=Message.updated_at),
            execution_options={"synchronize_session": False},
        )
    for asset_id, owner in record.moved_assets.items():
        session.execute(
            update(Message)
            .where(
                Message.asset_id == asset_id,
                Message.person_id == record.survivor_id,
                Message.created_at >= record.created_at,
            )
            .values(person_id=owner, updated_at=Message.updated_at),
            execution_options={"synchronize_session": False},
        )


def _name(person: Person) -> str:
    return " ".join(part for part in (person.first_name, person.last_name) if part) or "no name"


def _merged_into_any(session: Session, ids: Sequence[str]) -> list[Person]:
    """The records merged earlier into any of ``ids``."""
    statement = select(Person).where(Person.merged_into.in_(ids)).order_by(Person.id)
    return list(session.scalars(statement))


def undo_merge(session: Session, merge_id: int, *, audit_id: str | None = None) -> PersonMerge:
    """Give each member of a merge back its own values and re-point the moved courses."""
    record = _load_merge(session, merge_id)
    if record.undone_at is not None:
        raise MergeError(CONFLICT, f"merge {merge_id} was already undone")
    member_ids = [record.survivor_id, *record.merged_ids]
    _lock_people(session, member_ids)
    survivor = session.get(Person, record.survivor_id)
    assert survivor is not None
    if survivor.merged_into:
        raise MergeError(
            CONFLICT,
            f"{survivor.id} was merged into {survivor.merged_into} since; undo that merge first",
        )
    changed = [
        name for name in PERSON_FIELDS if _dump(getattr(survivor, name)) != record.after.get(name)
    ]
    if changed:
        raise MergeError(
            CONFLICT,
            f"{survivor.id} changed since the merge ({', '.join(changed)}); "
            "undoing would lose those changes",
        )
    members: list[Person] = []
    for person_id in record.merged_ids:
        person = session.get(Person, person_id)
        if person is None or person.merged_into != survivor.id:
            raise MergeError(CONFLICT, f"{person_id} is no longer merged into {survivor.id}")
        members.append(person)
    owners = dict(
        session.execute(
            select(Asset.id, Asset.person_id).where(Asset.id.in_(list(record.moved_assets)))
        ).all()
    )
    strayed = sorted(a for a in record.moved_assets if owners.get(a) != survivor.id)
    if strayed:
        raise MergeError(
            CONFLICT,
            f"course {', '.join(strayed)} no longer belongs to {survivor.id}; cannot move it back",
        )
    own = record.before[survivor.id]
    people.apply_changes(
        session, survivor, {name: _load(name, own[name]) for name in PERSON_FIELDS}
    )
    survivor.updated_at = dt.datetime.fromisoformat(own["updated_at"])
    for person in members:
        person.merged_into = None
        person.updated_at = dt.datetime.fromisoformat(record.before[person.id]["updated_at"])
    for older_id, kept in record.before.items():
        if older_id in member_ids or "merged_into" not in kept:
            continue
        older = session.get(Person, older_id)
        if older is not None and older.merged_into == survivor.id:
            older.merged_into = kept["merged_into"]
    mark([survivor, *members])
    _lock_courses(session, list(record.moved_assets))
    for asset_id, owner in record.moved_assets.items():
        session.execute(
            update(Asset)
            .where(Asset.id == asset_id)
            .values(person_id=owner, updated_at=Asset.updated_at),
            execution_options={"synchronize_session": False},
        )
    _messages_back(session, record)
    session.flush()  # the courses are back with their owners: seats are read below
    seats.lines_unmerged(
        session, own.get(ENDED_ENTRIES, []), lambda person_id: _seated(session, person_id)
    )
    stop = notifications.reminders_stopped(session, survivor.id)
    if stop is not None and own.get(CARRIED_STOP) == stop.stopped_by:
        notifications.resume_reminders(session, person_id=survivor.id)
    record.undone_at = utcnow()
    _flush(session, "undo")
    events.person_unmerged(
        session,
        survivor=survivor,
        restored_ids=record.merged_ids,
        merge_id=record.id,
        moved_courses=list(record.moved_assets),
        audit_id=audit_id,
    )
    _courses_moved(session, list(record.moved_assets), publisher=survivor.id)
    return record


def find_merge(session: Session, merge_id: int) -> PersonMerge | None:
    """The merge with this id, or None."""
    return session.get(PersonMerge, merge_id)


def _load_merge(session: Session, merge_id: int) -> PersonMerge:
    if session.get_bind().dialect.name == "sqlite":
        record = session.get(PersonMerge, merge_id)
    else:
        record = session.get(PersonMerge, merge_id, with_for_update=True, populate_existing=True)
    if record is None:
        raise MergeError(NOT_FOUND, f"no merge with id {merge_id}")
    return record


def _lock_people(session: Session, person_ids: Sequence[str]) -> None:
    """Lock these people as every write does (PostgreSQL), and read them again.

    ``people.lock_in_order`` (leads first, then contacts, each in id order), and the
    courses after the people (``_lock_courses``): the order of operations 1 and 2, so a
    merge and a booking naming the same records queue instead of deadlocking.
    """
    if session.get_bind().dialect.name == "sqlite":
        return  # one writer at a time
    people.lock_in_order(session, set(person_ids))
    statement = select(Person).where(Person.id.in_(sorted(set(person_ids))))
    session.scalars(statement.execution_options(populate_existing=True)).all()


def _lock_courses(session: Session, asset_ids: Sequence[str]) -> None:
    """Lock the courses a merge moves, in id order, after their people (PostgreSQL)."""
    if not asset_ids or session.get_bind().dialect.name == "sqlite":
        return
    statement = select(Asset.id).where(Asset.id.in_(sorted(asset_ids))).order_by(Asset.id)
    session.execute(statement.with_for_update()).all()


def _courses_moved(session: Session, asset_ids: Sequence[str], *, publisher: str) -> None:
    """course.updated (fields: person_id) for each course that changed person, published
    with the survivor's events (docs/events.md): after the merge's or undo's own."""
    if not asset_ids:
        return
    statement = (
        select(Asset)
        .where(Asset.id.in_(sorted(asset_ids)))
        .order_by(Asset.id)
        .execution_options(populate_existing=True)
    )
    for asset in session.scalars(statement):
        events.course_updated(
            session, asset, course_state(asset), ["person_id"], publisher=publisher
        )


def _members(session: Session, people_ids: Sequence[str], *, lock: bool) -> list[Person]:
    """The live records the ids stand for, each once, in the order given."""
    resolved: dict[str, Person] = {}
    for raw in people_ids:
        if not isinstance(raw, str) or canonical_id(raw) is None:
            raise MergeError(INVALID, f"people: {echoed(repr(raw))} is not a person id")
        stored = people.find_person(session, raw)
        if stored is not None and stored.merged_into:
            # The review that named it is out of date (or another merge just won).
            raise MergeError(
                CONFLICT,
                f"{stored.id} is already merged into {stored.merged_into}; nothing was changed",
            )
        try:
            person = people.resolve(session, raw)
        except people.UnresolvableId as exc:
            raise MergeError(INVALID, f"people: {exc}") from None
        if person is None:
            raise MergeError(NOT_FOUND, f"no person with id {raw}")
        resolved.setdefault(person.id, person)
    if lock:
        _lock_people(session, list(resolved))
        for person in resolved.values():
            # Read again under the lock: a concurrent merge may have folded it meanwhile.
            if person.merged_into or person.converted_contact_id:
                raise MergeError(
                    CONFLICT,
                    f"{person.id} was merged or converted by another request meanwhile; "
                    "nothing was changed",
                )
    return list(resolved.values())


def _course_counts(session: Session, person_ids: list[str]) -> dict[str, int]:
    rows = session.execute(
        select(Asset.person_id, func.count())
        .where(Asset.person_id.in_(person_ids))
        .group_by(Asset.person_id)
    ).all()
    return {person_id: count for person_id, count in rows}


def _member(session: Session, members: list[Person], raw: str, what: str) -> Person:
    person = people.resolve(session, raw) if isinstance(raw, str) else None
    for member in members:
        if person is not None and member.id == person.id:
            return member
    raise MergeError(INVALID, f"{what}: {echoed(repr(raw))} is not one of the people merged")


def _choose_survivor(
    session: Session, members: list[Person], raw: str | None, courses: dict[str, int]
) -> Person:
    """The given survivor, else the contact, then the oldest, then the one with most courses."""
    if raw is None:
        return min(
            members,
            key=lambda p: (p.kind != CONTACT, p.created_at, -courses.get(p.id, 0), p.id),
        )
    survivor = _member(session, members, raw, "survivor")
    if survivor.kind != CONTACT and any(m.kind == CONTACT for m in members):
        raise MergeError(INVALID, "survivor: a lead cannot absorb a contact; choose a contact")
    return survivor


def _field_values(
    session: Session, survivor: Person, members: list[Person], chosen: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """Each field's resulting value and the member it comes from."""
    unknown = sorted(name for name in chosen if name not in PERSON_FIELDS)
    if unknown:
        named = ", ".join(echoed(name) for name in unknown[:NAMED_AT_MOST])
        more = len(unknown) - NAMED_AT_MOST
        named += f" and {more} more" if more > 0 else ""
        raise MergeError(INVALID, f"fields: {named} not a person field")
    newest_first = sorted(members, key=lambda p: (p.updated_at, p.id), reverse=True)
    sources: dict[str, str] = {}
    # The block comes from the newest member whose address locates someone (a street or
    # a postcode); a state, country or suburb alone does not replace a fuller block.
    address_from = next(
        (p for p in newest_first if _present(p.street) or _present(p.postcode)),
        next((p for p in newest_first if any(_present(getattr(p, n)) for n in ADDRESS)), survivor),
    )
    same_place = [address_from] + [
        p for p in newest_first if p is not address_from and _same_postcode(p, address_from)
    ]
    for name in PERSON_FIELDS:
        if name in ADDRESS:
            source = next((p for p in same_place if _present(getattr(p, name))), address_from)
        elif name in CONTACT_DETAILS or name == "opt_in":
            # Newest non-empty value; for opt_in the newest answer the person gave, so
            # an opt-out given after an opt-in stands and silence never becomes consent.
            source = next((p for p in newest_first if _present(getattr(p, name))), survivor)
        elif _present(getattr(survivor, name)):
            source = survivor
        else:
            source = next((p for p in newest_first if _present(getattr(p, name))), survivor)
        sources[name] = source.id
    for name, raw in chosen.items():
        sources[name] = _member(session, members, raw, f"fields.{name}").id
    by_id = {member.id: member for member in members}
    values = {name: getattr(by_id[sources[name]], name) for name in PERSON_FIELDS}
    if not values["last_name"]:
        raise MergeError(INVALID, "fields.last_name: the survivor needs a last name")
    return values, sources


def _same_postcode(one: Person, other: Person) -> bool:
    """Both members give a postcode, and the same one (stored as 4 digits: fields.Postcode)."""
    return bool(one.postcode) and one.postcode == other.postcode


def _present(value: object) -> bool:
    return value is not None and value != ""


def _dump(value: object) -> Any:
    return value.isoformat() if isinstance(value, dt.date) else value


def _load(name: str, value: Any) -> Any:
    if name == "date_of_birth" and value is not None:
        return dt.date.fromisoformat(value)
    return value


def _flush(session: Session, what: str) -> None:
    try:
        session.flush()
    except IntegrityError as exc:
        # Never resolved by dropping a row: the whole request rolls back.
        raise MergeError(
            CONFLICT,
            f"the {what} would break a database constraint ({exc.orig}); nothing was changed",
        ) from None
