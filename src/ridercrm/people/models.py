"""People: contacts and leads share one table (see docs/decisions.md)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import BigInteger, Boolean, Date, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column, validates

from ridercrm.db import Base, UTCDateTime, utcnow
from ridercrm.fields import PERSON_FIELDS
from ridercrm.people.normalize import SEARCH_LENGTH, name_search

__all__ = ["CONTACT", "LEAD", "PERSON_FIELDS", "Person", "PersonKey"]

CONTACT = "contact"
LEAD = "lead"


class Person(Base):
    __tablename__ = "people"

    id: Mapped[str] = mapped_column(String(18), primary_key=True)
    kind: Mapped[str] = mapped_column(String(7))
    first_name: Mapped[str | None] = mapped_column(String(80))
    last_name: Mapped[str] = mapped_column(String(80))
    date_of_birth: Mapped[dt.date | None] = mapped_column(Date)
    email: Mapped[str | None] = mapped_column(String(254))
    postcode: Mapped[str | None] = mapped_column(String(4))
    mobile_phone: Mapped[str | None] = mapped_column(String(40))
    home_phone: Mapped[str | None] = mapped_column(String(40))
    drivers_license: Mapped[str | None] = mapped_column(String(40))
    license_type: Mapped[str | None] = mapped_column(String(3))
    street: Mapped[str | None] = mapped_column(String(255))
    city: Mapped[str | None] = mapped_column(String(80))
    state: Mapped[str | None] = mapped_column(String(80))
    country: Mapped[str | None] = mapped_column(String(80))
    lead_source: Mapped[str | None] = mapped_column(String(40))
    opt_in: Mapped[bool | None] = mapped_column(Boolean)
    converted_contact_id: Mapped[str | None] = mapped_column(
        String(18), ForeignKey("people.id"), unique=True
    )
    # Set when a duplicates merge folded this record into another (the survivor); the
    # record is kept and its id stands for the survivor from then on (docs/decisions.md, "Duplicates (issue 15)").
    merged_into: Mapped[str | None] = mapped_column(String(18), ForeignKey("people.id"))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)
    # When a write last touched this row: set by every insert and update of it, in that
    # same statement, so marking costs a write no round trip. The duplicates re-checker
    # takes the people marked since the first scan and clears the mark (duplicates/recheck.py).
    duplicate_touched_at: Mapped[dt.datetime | None] = mapped_column(
        UTCDateTime, default=utcnow, onupdate=utcnow
    )

    # Where an imported person came from: the import run (import_runs.id; no foreign key,
    # people sit below imports) and the file's line (the header is line 1). Empty for
    # people created any other way.
    import_run_id: Mapped[int | None] = mapped_column(Integer)
    import_line: Mapped[int | None] = mapped_column(Integer)
    # The names as the staff search reads them (normalize.name_search: lower-case words,
    # accents gone, Greek letters in Latin ones), kept by every write of a name: here
    # for the ORM's, transfer.rows.person_rows for bulk ones.
    # docs/decisions.md, "Greek names written in Greek letters".
    first_name_search: Mapped[str | None] = mapped_column(String(SEARCH_LENGTH))
    last_name_search: Mapped[str | None] = mapped_column(String(SEARCH_LENGTH))

    __table_args__ = (
        # Admin and console search by name prefixes, on the names' search forms. E-mail
        # and phone are found through the normalised matching keys (person_keys), so
        # they need no index here.
        Index("ix_people_last_first_search", last_name_search, first_name_search),
        Index("ix_people_first_name_search", first_name_search),
        # Only merged records: with every value NULL the statistics of a full index
        # (ANALYZE) made SQLite scan the table for "merged into this person" instead.
        Index(
            "ix_people_merged_into",
            merged_into,
            sqlite_where=merged_into.is_not(None),
            postgresql_where=merged_into.is_not(None),
        ),
        # The console finds people by date of birth alone.
        Index("ix_people_date_of_birth", date_of_birth),
        Index("ix_people_duplicate_touched_at", duplicate_touched_at),
    )

    @validates("first_name", "last_name")
    def _searched_as(self, name: str, value: str | None) -> str | None:
        """Keep the name's search form in step with the name."""
        setattr(self, f"{name}_search", name_search(value))
        return value


# The blocking keys of each person (people/blocking.py), kept in step on every write
# path by people/index.py; matching looks candidates up by them.
class PersonKey(Base):
    __tablename__ = "person_keys"

    key: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    # No foreign key to people (migration 0028): keys are derived data, written only beside
    # their person in the person's transaction, and people are never deleted; the check
    # of people's primary key a row cost half of what a key row cost to write.
    person_id: Mapped[str] = mapped_column(String(18), primary_key=True)

    # One clustered B-tree on SQLite (no rowid table) and nothing else: no index on
    # person_id. Whoever needs a person's keys computes them from the person's identity
    # (they are a function of it); keys change by difference (old minus new), found by
    # key. A second index doubled what each of a person's keys cost to write and store
    # (docs/decisions.md, "Compact blocking keys").
    __table_args__ = ({"sqlite_with_rowid": False},)
