"""What makes an import safe to run again: rows that describe a person already stored
(by the matcher) are skipped or update that person, and an identical file is refused.

docs/decisions.md, Import: matches are looked for among the people stored before the
import began, of the import's own kind (a contacts file matches contacts, a leads file
unconverted leads), with the matcher of operations 3 and 4. On an empty store nothing is
looked up, so a first import costs what it did.
"""

from __future__ import annotations

import datetime as dt
import enum
import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ridercrm.matching.score import Thresholds
from ridercrm.matching.service import DEFAULT_THRESHOLDS, match_identity
from ridercrm.people.blocking import Identity
from ridercrm.people.models import LEAD, PERSON_FIELDS, Person
from ridercrm.people.service import apply_changes
from ridercrm.transfer.columns import Target
from ridercrm.transfer.models import ImportRun


class OnMatch(enum.StrEnum):
    """What an import does with a row that matches a stored person."""

    skip = "skip"  # report it and leave the stored person as it is (the default)
    update = "update"  # write the row's non-empty values to the stored person
    add = "add"  # store the row as another person, as if nothing matched


def file_digest(path: Path) -> str:
    """The SHA-256 of a file's bytes (OSError if it cannot be read)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def earlier_runs(session: Session, *, target: Target, digest: str) -> list[ImportRun]:
    """The imports of a file with these bytes into this target, oldest first."""
    return list(
        session.scalars(
            select(ImportRun)
            .where(ImportRun.target == target.name, ImportRun.sha256 == digest)
            .order_by(ImportRun.id)
        )
    )


class Matcher:
    """Finds the stored person an imported row describes, and skips or updates it."""

    def __init__(
        self,
        session: Session,
        target: Target,
        on_match: OnMatch,
        thresholds: Thresholds = DEFAULT_THRESHOLDS,
        stored_before: dt.datetime | None = None,
    ) -> None:
        self.session = session
        self.kind = target.person_kind
        self.on_match = on_match
        self.thresholds = thresholds  # the app's RIDERCRM_MATCH_* settings
        # A resumed import matches among the people stored before it first began, never
        # those its earlier batches stored (their created_at is the run's own time).
        self.stored_before = stored_before
        earlier = () if stored_before is None else (Person.created_at < stored_before,)
        # Nobody stored yet: nothing to match, and the import stays as fast as before.
        self.active = (
            self.kind is not None
            and on_match is not OnMatch.add
            and session.scalar(select(Person.id).where(Person.kind == self.kind, *earlier).limit(1))
            is not None
        )
        self.added: set[str] = set()  # ids this import stored: never a match

    def match(self, values: Mapping[str, Any]) -> Person | None:
        """The stored person (of the import's kind) the row's values describe, or None."""
        identity = Identity.of(values)
        found = match_identity(
            self.session,
            query=identity,
            assets=[],
            leads_only=self.kind == LEAD,
            thresholds=self.thresholds,
        ).person
        if found is None or found.kind != self.kind or found.id in self.added:
            return None
        person = self.session.get(Person, found.id)
        if person is not None and person.created_at == self.stored_before:
            return None  # stored by this very import, before it was resumed
        return person

    def update(self, person: Person, values: Mapping[str, Any]) -> None:
        """Write the row's non-empty field values to the person (an empty cell erases nothing)."""
        changes = {name: values[name] for name in PERSON_FIELDS if values.get(name) is not None}
        apply_changes(self.session, person, changes)
