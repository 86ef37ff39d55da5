"""Rows a change implies, kept with its session and inserted together when it commits.

Outbox events and riders' messages are written in the transaction of the change they
announce, but one at a time they would cost a statement each (a 200-item booking records
about 700 events and 1,200 messages). So a feature adds them to a :class:`PendingRows`
of its own, and the outermost commit inserts them in bulk. A row added inside a savepoint
that rolls back is discarded with it.

How: each open savepoint keeps a mark, its place in the list. SQLAlchemy tells that a
savepoint ended (``after_transaction_end``) before it tells whether it was rolled back
(``after_soft_rollback``), so the mark of the savepoint that just ended waits for that.
The rows hold no reference to a transaction: a tuple of strings and a time is something
the garbage collector stops tracking, where transactions kept until the commit are dozens
of objects it walks (bench/README.md, Events).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from sqlalchemy import event
from sqlalchemy.orm import Session, SessionTransaction

T = TypeVar("T")


class PendingRows(Generic[T]):
    """A kind of row kept with a session until its outermost commit, where ``write``
    inserts them; ``also_clear`` names the ``session.info`` keys the kind keeps for one
    transaction (caches), cleared with it."""

    def __init__(
        self,
        name: str,
        write: Callable[[Session, list[T]], None],
        *,
        also_clear: tuple[str, ...] = (),
    ) -> None:
        self._rows = f"ridercrm.{name}.pending"
        self._marks = f"ridercrm.{name}.marks"
        self._closed = f"ridercrm.{name}.closed"
        self._write = write
        self._clear = (self._rows, self._marks, self._closed, *also_clear)
        event.listen(Session, "after_transaction_create", self._mark_savepoint)
        event.listen(Session, "after_transaction_end", self._close_mark)
        event.listen(Session, "after_soft_rollback", self._discard_rolled_back)
        event.listen(Session, "before_commit", self._insert)

    def add(self, session: Session, row: T) -> None:
        session.info.setdefault(self._rows, []).append(row)

    def rows(self, session: Session) -> list[T]:
        """This transaction's rows not inserted yet (the list itself: may be changed)."""
        rows: list[T] = session.info.get(self._rows, [])
        return rows

    def flush(self, session: Session) -> None:
        """Insert this transaction's rows now."""
        pending = session.info.pop(self._rows, None)
        if pending:
            self._write(session, pending)

    def _mark_savepoint(self, session: Session, transaction: SessionTransaction) -> None:
        if transaction.nested:
            began = len(session.info.get(self._rows, ()))
            session.info.setdefault(self._marks, []).append((transaction, began))

    def _close_mark(self, session: Session, transaction: SessionTransaction) -> None:
        if transaction.parent is None:
            for name in self._clear:
                session.info.pop(name, None)
            return
        marks = session.info.get(self._marks, [])
        for place in range(len(marks) - 1, -1, -1):
            if marks[place][0] is transaction:
                # Released or rolled back: SQLAlchemy tells which only after this.
                session.info[self._closed] = marks[place]
                del marks[place:]
                return

    def _discard_rolled_back(self, session: Session, previous: SessionTransaction) -> None:
        closed = session.info.pop(self._closed, None)
        if closed is not None and closed[0] is previous:
            del session.info.get(self._rows, [])[closed[1] :]

    def _insert(self, session: Session) -> None:
        # before_commit also fires for a savepoint's release: rows wait for the outer commit.
        if session.in_nested_transaction():
            return
        self.flush(session)
