"""The unit of work: what a change implies, recorded by the service, written at the commit.

A change implies rows besides its own: a person's matching keys (people/index.py), the
outbox's events (events/service.py), riders' messages (notifications/service.py). The
service that makes the change records each with the :class:`Effect` its feature declares
(``effect.add(session, row)``, or ``effect.note(session, key, value)`` for one note per
key, the first kept); the transaction boundary writes them all in bulk, in the same
transaction, just before the outermost commit (after a flush of the ORM's rows, which
they may name). One at a time they would cost a statement each: a 200-item booking
implies about 700 events and 1,200 messages.

Savepoints: an effect recorded inside a savepoint that rolls back is dropped with it
(a refused item leaves no key, event or message behind; a person whose insert rolled
back gets no keys); a transaction that rolls back writes none.

Explicit, not ambient: :func:`install` registers the unit of work on one session
factory, and ``db.session_factory`` does so for every factory it makes (``create_app``'s,
each command's, the background workers', the tests'); never on the ``Session`` class
and never at import. A session whose factory lacks it (a bare ``sessionmaker``) refuses
to record an effect (``RuntimeError``): its effects would silently never be written.

How: a session's pending effects live in one :class:`Changes` in ``session.info``. Each
open savepoint keeps a mark, the size of every effect's pending rows when it began.
A rollback cuts every effect back to the mark of the savepoint rolled back. SQLAlchemy
tells that a savepoint ended (``after_transaction_end``) before it tells whether it was
rolled back (``after_soft_rollback``), so the mark of the savepoint that just ended
waits for that; a failed flush inside a savepoint reports the rollback of its own
subtransaction while the savepoint is still open, and then the savepoint is only
closed, so its mark is found among the open ones. Rows hold no reference to a
transaction: tuples of strings and times are something the garbage collector stops
tracking, where transactions kept until the commit are dozens of objects it walks
(bench/README.md, Events).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

from sqlalchemy import event
from sqlalchemy.orm import Session, SessionTransaction, sessionmaker

T = TypeVar("T")

_INSTALLED = "ridercrm.unit_of_work"
_CHANGES = "ridercrm.changes"


class Effect(Generic[T]):
    """A kind of row a change implies, written by ``write(session, rows)`` at the commit.

    ``keyed``: the rows are notes, one per key (``note``), handed to ``write`` as a dict
    in the order they were first noted; else a list in the order added (``add``).
    ``first``: written before the other effects (a change to stored rows that the
    others' new rows must not undergo: superseding a course's queued messages).
    """

    __slots__ = ("first", "keyed", "name", "write")

    def __init__(
        self,
        name: str,
        write: Callable[[Session, Any], None],
        *,
        keyed: bool = False,
        first: bool = False,
    ):
        self.name = name
        self.write = write
        self.keyed = keyed
        self.first = first

    def __repr__(self) -> str:
        return f"Effect({self.name!r})"

    def add(self, session: Session, row: T) -> None:
        """Record a row this transaction implies."""
        changes = session.info.get(_CHANGES) or _changes(session)
        rows = changes.pending.get(self)
        if rows is None:
            rows = changes.start(self)
        rows.append(row)

    def note(self, session: Session, key: Hashable, value: T) -> None:
        """Record a note for ``key`` unless this transaction noted one already."""
        changes = session.info.get(_CHANGES) or _changes(session)
        notes = changes.pending.get(self)
        if notes is None:
            notes = changes.start(self)
        if key not in notes:
            notes[key] = value

    def pending(self, session: Session) -> Any:
        """This transaction's rows not written yet (the list or dict itself: may be changed
        in place, as a message superseded before it is written)."""
        changes: Changes | None = session.info.get(_CHANGES)
        rows = None if changes is None else changes.pending.get(self)
        if rows is None:
            return {} if self.keyed else []
        return rows


class Changes:
    """One session's pending effects and what its transaction keeps until it ends."""

    __slots__ = ("ended", "marks", "memo", "pending")

    def __init__(self) -> None:
        self.pending: dict[Effect[Any], Any] = {}
        # Open savepoints, innermost last: (savepoint, each effect's size when it began).
        self.marks: list[tuple[SessionTransaction, dict[Effect[Any], int]]] = []
        # The savepoint that ended last, until SQLAlchemy says whether it rolled back.
        self.ended: tuple[SessionTransaction, dict[Effect[Any], int]] | None = None
        # What a feature reads once a transaction (caches), forgotten when it ends.
        self.memo: dict[str, Any] = {}

    def start(self, effect: Effect[Any]) -> Any:
        rows: Any = {} if effect.keyed else []
        self.pending[effect] = rows
        return rows

    def sizes(self) -> dict[Effect[Any], int]:
        return {effect: len(rows) for effect, rows in self.pending.items()}

    def cut_back(self, sizes: dict[Effect[Any], int]) -> None:
        """Drop what was recorded since ``sizes`` were taken (LIFO: rows are only added)."""
        for effect, rows in self.pending.items():
            size = sizes.get(effect, 0)
            if effect.keyed:
                while len(rows) > size:
                    rows.popitem()
            else:
                del rows[size:]


def install(factory: sessionmaker[Session]) -> sessionmaker[Session]:
    """Write the effects recorded in every session ``factory`` makes; return the factory.

    Registered on this factory only (once, however often called). Whether it already is
    is read from the factory's own ``info``, not from ``event.contains``: SQLAlchemy
    answers that from a registry keyed by ``id()`` of the factory's class, so a new
    factory whose class reuses a collected one's id would be taken as installed and get
    no listener (its keys, events and messages silently never written).
    """
    info = dict(factory.kw.get("info") or {})
    if not info.get(_INSTALLED):
        event.listen(factory, "after_transaction_create", _mark_savepoint)
        event.listen(factory, "after_transaction_end", _end)
        event.listen(factory, "after_soft_rollback", _drop_rolled_back)
        event.listen(factory, "before_commit", _write)
        info[_INSTALLED] = True
        factory.configure(info=info)
    return factory


def installed(session: Session) -> bool:
    """Whether the session's factory writes recorded effects."""
    return bool(session.info.get(_INSTALLED))


def memo(session: Session) -> dict[str, Any]:
    """A dict kept for the session's current transaction, for what a feature reads once a
    transaction (the webhook endpoints, who stopped reminders): forgotten when it ends."""
    return _changes(session).memo


def _changes(session: Session) -> Changes:
    changes: Changes | None = session.info.get(_CHANGES)
    if changes is None:
        if not session.info.get(_INSTALLED):
            raise RuntimeError(
                "this session's factory has no unit of work: its keys, events and messages "
                "would never be written; wrap it in ridercrm.unit_of_work.install"
            )
        changes = session.info[_CHANGES] = Changes()
    return changes


def _mark_savepoint(session: Session, transaction: SessionTransaction) -> None:
    if transaction.nested:
        changes = _changes(session)
        changes.marks.append((transaction, changes.sizes()))


def _end(session: Session, transaction: SessionTransaction) -> None:
    if transaction.parent is None:
        # Committed (written by _write) or rolled back: either way nothing is left.
        session.info.pop(_CHANGES, None)
        return
    changes: Changes | None = session.info.get(_CHANGES)
    if changes is None or not transaction.nested:
        return
    marks = changes.marks
    for place in range(len(marks) - 1, -1, -1):
        if marks[place][0] is transaction:
            # Released or rolled back: SQLAlchemy tells which only after this.
            changes.ended = marks[place]
            del marks[place:]
            return


def _drop_rolled_back(session: Session, previous: SessionTransaction) -> None:
    changes: Changes | None = session.info.get(_CHANGES)
    if changes is None:
        return
    ended, changes.ended = changes.ended, None
    # A failed flush reports its own subtransaction, before the savepoint around it (which
    # the database rolled back) ends: its context manager then only closes it.
    rolled_back = previous
    while not rolled_back.nested and rolled_back.parent is not None:
        rolled_back = rolled_back.parent
    if ended is not None and ended[0] is rolled_back:
        changes.cut_back(ended[1])
        return
    for savepoint, sizes in reversed(changes.marks):
        if savepoint is rolled_back:
            changes.cut_back(sizes)
            return


def _write(session: Session) -> None:
    # before_commit also fires for a savepoint's release: effects wait for the outer commit.
    if session.in_nested_transaction():
        return
    changes: Changes | None = session.info.get(_CHANGES)
    if changes is None:
        return
    while any(changes.pending.values()):
        pending, changes.pending = changes.pending, {}
        # The rows effects name (people, courses) go first: foreign keys.
        session.flush()
        for effect, rows in sorted(pending.items(), key=lambda item: not item[0].first):
            if rows:
                effect.write(session, rows)
