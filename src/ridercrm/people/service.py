"""People rules: creating contacts and leads, reading and finding them."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping, Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from ridercrm.db import utcnow
from ridercrm.errors import CONFLICT, DomainError
from ridercrm.events import service as events
from ridercrm.ids import RecordKind, canonical_id, new_id
from ridercrm.people import repository
from ridercrm.people.index import note_new_person, note_person_change
from ridercrm.people.models import CONTACT, LEAD, PERSON_FIELDS, Person
from ridercrm.people.origin import import_origin
from ridercrm.people.schemas import PersonCreate, PersonDetail

# Records an id may lead through (lead -> contact -> survivor -> ...) before the live one.
MAX_HOPS = 64


def create_person(session: Session, *, kind: str, data: PersonCreate) -> Person:
    """Store a new contact or lead and return it."""
    record_kind = RecordKind.CONTACT if kind == CONTACT else RecordKind.LEAD
    assert kind in (CONTACT, LEAD)
    now = utcnow()
    person = Person(
        id=new_id(record_kind), kind=kind, created_at=now, updated_at=now, **data.model_dump()
    )
    session.add(person)
    session.flush()
    note_new_person(session, person)
    events.person_created(session, person)
    return person


def find_person(session: Session, raw_id: str) -> Person | None:
    """The person with this id (15 or 18 characters), or None."""
    person_id = canonical_id(raw_id)
    return repository.get(session, person_id) if person_id else None


def read_person(session: Session, raw_id: str) -> PersonDetail | None:
    """The person with this id as the admin API reads it (with the records merged into
    them and the import they came from), or None."""
    person = find_person(session, raw_id)
    if person is None:
        return None
    read = PersonDetail.model_validate(person)
    read.merged_from = merged_from(session, person.id)
    read.imported_from = import_origin(session, person)
    return read


def search_people(
    session: Session,
    *,
    query: str,
    limit: int,
    kind: str | None = None,
    created_since: dt.datetime | None = None,
    updated_since: dt.datetime | None = None,
) -> Sequence[Person]:
    """The best ``limit`` people by name, e-mail or phone among those of ``kind`` and
    created or updated since the given times."""
    return repository.search(
        session,
        query=query,
        limit=limit,
        kind=kind,
        created_since=created_since,
        updated_since=updated_since,
    )


def list_people(
    session: Session,
    *,
    kind: str | None,
    created_since: dt.datetime | None,
    updated_since: dt.datetime | None,
    limit: int,
    before: str | None,
) -> tuple[Sequence[Person], str | None]:
    """A page of people, newest first, and the ``next_before`` id of the next page.

    Raises ValueError when ``before`` names no person.
    """
    after = find_person(session, before) if before is not None else None
    if before is not None and after is None:
        raise ValueError(f"before: no person with id {before}")
    return repository.listing(
        session,
        kind=kind,
        created_since=created_since,
        updated_since=updated_since,
        limit=limit,
        before=after,
    )


def apply_changes(session: Session, person: Person, changes: Mapping[str, object]) -> int:
    """Write field values to a person; return how many were supplied and written.

    Every write path to a person's fields goes through here, so what is derived from
    them (updated_at, matching keys, the person.updated event) stays in step. Values
    equal to the stored ones change nothing: no row update, no key writes, no event, so
    a retried request touches no rows.
    """
    differing = {name: value for name, value in changes.items() if getattr(person, name) != value}
    if differing:
        note_person_change(session, person)
        for name, value in differing.items():
            setattr(person, name, value)
        person.updated_at = utcnow()
        events.person_updated(session, person, differing)
    return len(changes)


def lock_person(session: Session, person_id: str) -> Person | None:
    """Load a person for writing: on PostgreSQL the row is locked until commit.

    A SQLite write transaction already holds the database's write lock, so there the
    row the session has is current and is not read again.
    """
    if session.get_bind().dialect.name == "sqlite":
        return session.get(Person, person_id)
    return session.get(Person, person_id, with_for_update=True, populate_existing=True)


def lock_in_order(session: Session, person_ids: Collection[str]) -> None:
    """Lock these people, and the contacts of converted leads: leads first, each in id order.

    On PostgreSQL a batch (operations 1 and 2) takes its locks this way before its first
    item, before the courses it names (people, then courses: the same order in every
    request and in every item), so two requests naming the same records in a
    different order queue instead of deadlocking. Items then lock as they go; those rows
    are already held. SQLite has one writer at a time and needs none of this.
    """
    if not person_ids or session.get_bind().dialect.name == "sqlite":
        return
    contacts = session.scalars(
        select(Person.converted_contact_id).where(
            Person.id.in_(person_ids), Person.converted_contact_id.is_not(None)
        )
    ).all()
    wanted = set(person_ids) | {c for c in contacts if c}
    # Leads before contacts: converting a lead locks the lead, then its new contact.
    in_order = (
        select(Person.id).where(Person.id.in_(wanted)).order_by(Person.kind.desc(), Person.id)
    )
    session.execute(in_order.with_for_update()).all()


class UnresolvableId(DomainError, ValueError):
    """An id whose chain of merged or converted records is too long to follow."""


def resolve(
    session: Session, raw_id: str, *, lock: bool = False, fresh: bool = False
) -> Person | None:
    """The person an id stands for: a converted lead's id stands for its contact.

    ``lock`` reads the rows for update; ``fresh`` re-reads them instead of trusting
    what the session loaded earlier (a concurrent request may have converted the lead).
    Raises UnresolvableId when the chain is longer than MAX_HOPS.
    """
    person_id = canonical_id(raw_id)
    if person_id is None:
        return None

    def load(ident: str) -> Person | None:
        if lock:
            return lock_person(session, ident)
        return session.get(Person, ident, populate_existing=fresh)

    person = load(person_id)
    # A converted lead stands for its contact, a merged record for its survivor; a
    # survivor may itself have been merged later (a chain, never a cycle: a merge
    # only folds records that are not merged into a live one).
    for _hop in range(MAX_HOPS):
        if person is None:
            return None
        following = person.merged_into or person.converted_contact_id
        if not following:
            return person
        person = load(following)
    # Merges keep every merged record one hop from its survivor; only data stored before
    # they did (or changed by hand) can be this deep. The item fails, not the request.
    raise UnresolvableId(f"{raw_id} leads through more than {MAX_HOPS} merged or converted records")


def survivor_of(session: Session, person: Person) -> Person | None:
    """The live record a stored person stands for (itself unless converted or merged)."""
    if not (person.merged_into or person.converted_contact_id):
        return person
    return resolve(session, person.id)


def merged_from(session: Session, person_id: str) -> list[str]:
    """Ids of the records merged into this person, oldest first."""
    statement = (
        select(Person.id)
        .where(Person.merged_into == person_id)
        .order_by(Person.created_at, Person.id)
    )
    return list(session.scalars(statement).all())


class Held:
    """The people a batch (operations 1 and 2) names, read in a few statements before its
    first item, and the contacts its items make: ``resolve`` then answers as
    :func:`resolve` would, from memory, with every change the batch's earlier items made.

    Loaded hop by hop (the named records, then the records they lead to, ...): one
    statement per hop for the whole batch, not one per item and hop. On PostgreSQL each
    hop's rows are locked (leads first, each in id order) and read after the lock, so
    what the batch sees is current; :func:`lock_in_order` has normally taken those locks
    already.
    """

    def __init__(self) -> None:
        self.rows: dict[str, Person | None] = {}
        # Leads this batch converted and their contacts, not linked yet (``convert``).
        self.contact_of: dict[str, str] = {}
        self.converted: list[tuple[Person, Person]] = []

    def load(self, session: Session, person_ids: Collection[str]) -> None:
        """Read these people and every record they lead to (not already held)."""
        locking = session.get_bind().dialect.name != "sqlite"
        wanted = {person_id for person_id in person_ids if person_id} - self.rows.keys()
        for _hop in range(MAX_HOPS + 1):
            if not wanted:
                return
            statement = select(Person).where(Person.id.in_(wanted))
            if locking:
                statement = (
                    statement.order_by(Person.kind.desc(), Person.id)
                    .with_for_update()
                    .execution_options(populate_existing=True)
                )
            found = {person.id: person for person in session.scalars(statement)}
            for person_id in wanted:
                self.rows[person_id] = found.get(person_id)
            wanted = {
                following
                for person in found.values()
                if (following := person.merged_into or person.converted_contact_id)
            } - self.rows.keys()

    def convert(self, lead: Person, contact: Person) -> None:
        """This batch converted ``lead`` into ``contact`` (:func:`new_contact_of`): the
        lead stands for the contact from now on, though it is linked to it only after
        the batch's flush (``converted``, for :func:`link_converted`)."""
        self.rows[contact.id] = contact
        self.contact_of[lead.id] = contact.id
        self.converted.append((lead, contact))

    def get(self, person_id: str) -> Person | None:
        return self.rows.get(person_id)

    def resolve(self, raw_id: str) -> Person | None:
        """As :func:`resolve`, from the held rows (loaded with :meth:`load`)."""
        person_id = canonical_id(raw_id)
        person = self.rows.get(person_id) if person_id else None
        for _hop in range(MAX_HOPS):
            if person is None:
                return None
            following = (
                person.merged_into or person.converted_contact_id or self.contact_of.get(person.id)
            )
            if not following:
                return person
            person = self.rows.get(following)
        raise UnresolvableId(
            f"{raw_id} leads through more than {MAX_HOPS} merged or converted records"
        )


class NotConvertible(DomainError, ValueError):
    """A lead that cannot be converted; the message says why."""

    kind = CONFLICT


def convert_lead(session: Session, lead: Person) -> Person:
    """Make a contact from a lead's data and link the lead to it (once only)."""
    assert lead.kind == LEAD
    lead = lock_person(session, lead.id) or lead
    if lead.converted_contact_id and not lead.merged_into:
        contact = lock_person(session, lead.converted_contact_id)
        assert contact is not None
        return contact
    return convert_held_lead(session, lead)


def convert_held_lead(session: Session, lead: Person) -> Person:
    """:func:`convert_lead` for a lead this transaction already holds (locked on
    PostgreSQL) and has not converted: no read of it again."""
    contact = new_contact_of(session, lead)
    # The lead's foreign key names the contact: the contact's row goes first.
    session.flush()
    link_converted([(lead, contact)])
    return contact


def new_contact_of(session: Session, lead: Person) -> Person:
    """The contact a held, unconverted lead converts into, added to the session with
    what the conversion implies (keys, events); the lead is not linked to it yet.

    :func:`link_converted` links it once a flush has inserted the contact. A batch
    (operation 1) links all its leads after its one flush: had the lead pointed to its
    contact through a relationship, the people's self-reference would have made the
    flush sort every person row by row (docs/decisions.md, "The booking's flush (issue 23)").
    """
    assert lead.kind == LEAD
    if lead.merged_into:
        # A merged lead stands for its survivor (``resolve``); a contact of its own would
        # be a second live copy of the person, and the merge could not be undone as made.
        raise NotConvertible(
            f"lead {lead.id} was merged into {lead.merged_into}; work on that record instead"
        )
    assert not lead.converted_contact_id
    values = {name: getattr(lead, name) for name in PERSON_FIELDS}
    # Both times set here: a change applied before the flush (the booking's own fields)
    # must not leave updated_at earlier than a created_at the flush would stamp later.
    now = utcnow()
    contact = Person(
        id=new_id(RecordKind.CONTACT), kind=CONTACT, created_at=now, updated_at=now, **values
    )
    session.add(contact)
    note_new_person(session, contact)
    events.person_created(session, contact)
    events.lead_converted(session, lead, contact)
    return contact


def link_converted(pairs: Sequence[tuple[Person, Person]]) -> None:
    """Point each converted lead to its contact (:func:`new_contact_of`), whose row a
    flush has inserted: the next flush updates the leads."""
    for lead, contact in pairs:
        lead.converted_contact_id = contact.id
        lead.updated_at = utcnow()
