"""The migrations on both databases: up, down, up again, and agreement with the models."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SAWarning
from testkit.databases import POSTGRES_ENV, postgres_url

from ridercrm.config import Settings
from ridercrm.db import build_engine
from ridercrm.migrate import alembic_config, current_revision, downgrade, head_revision, upgrade
from ridercrm.models import Base

APP_TABLES = {table.name for table in Base.metadata.sorted_tables}
# Tables the newest migration drops (0014: the duplicates re-check marks moved into
# people.duplicate_touched_at): back after a downgrade by one.
DROPPED_BY_HEAD = {"duplicate_touched"}
# Migrations that change data, not the schema (0029: the keys of Greek-lettered names).
DATA_ONLY = {"0029"}


@pytest.fixture
def postgres_database() -> Iterator[str]:
    """A new, empty PostgreSQL database of its own, dropped afterwards."""
    url = postgres_url()
    if url is None:
        pytest.skip(
            f"PostgreSQL tests need {POSTGRES_ENV} (e.g. postgresql+psycopg://postgres@127.0.0.1:5432/test)"
        )
    name = f"ridercrm_migration_test_{os.getpid()}"
    server = create_engine(make_url(url).set(database="postgres"), isolation_level="AUTOCOMMIT")
    with server.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(url).set(database=name).render_as_string(hide_password=False)
    finally:
        with server.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        server.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgresql)])
def empty_engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """An engine on a database with nothing in it, not even an alembic_version table."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'empty.db'}"
    else:
        url = request.getfixturevalue("postgres_database")
    engine = build_engine(Settings(database_url=url))
    assert inspect(engine).get_table_names() == []
    yield engine
    engine.dispose()


def tables(engine: Engine) -> set[str]:
    return set(inspect(engine).get_table_names()) - {"alembic_version"}


def schema_objects(engine: Engine) -> set[str]:
    """The tables, each table's columns, named indexes and foreign keys: what one migration
    may add or take away."""
    inspector = inspect(engine)
    names = tables(engine)
    with warnings.catch_warnings():
        # SQLite does not reflect expression indexes (see differences below).
        warnings.filterwarnings("ignore", "Skipped unsupported reflection", SAWarning)
        return (
            names
            | {
                f"{table}.{index['name']}"
                for table in names
                for index in inspector.get_indexes(table)
            }
            | {
                f"{table}.{column['name']}"
                for table in names
                for column in inspector.get_columns(table)
            }
            | {
                f"{table}({', '.join(key['constrained_columns'])}) -> {key['referred_table']}"
                for table in names
                for key in inspector.get_foreign_keys(table)
            }
        )


def differences(engine: Engine) -> list[object]:
    with engine.connect() as connection, warnings.catch_warnings():
        # SQLite cannot reflect expression indexes, so they are not compared there
        # (test_every_index_of_the_models_exists checks that they exist).
        warnings.filterwarnings("ignore", "Skipped unsupported reflection", SAWarning)
        warnings.filterwarnings("ignore", "autogenerate skipping", UserWarning)
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return list(compare_metadata(context, Base.metadata))


def test_upgrade_from_empty_to_head_down_one_and_up_again(empty_engine: Engine) -> None:
    head = head_revision(empty_engine)
    assert head is not None
    script = ScriptDirectory.from_config(alembic_config(empty_engine))
    previous = script.get_revision(head).down_revision
    assert isinstance(previous, str)

    upgrade(empty_engine)
    assert current_revision(empty_engine) == head
    assert tables(empty_engine) == APP_TABLES
    at_head = schema_objects(empty_engine)

    downgrade(empty_engine, "-1")
    assert current_revision(empty_engine) == previous
    assert tables(empty_engine) <= APP_TABLES | DROPPED_BY_HEAD
    if head in DATA_ONLY:
        # a migration of data alone (0029: keys recomputed) leaves the schema as it was
        assert schema_objects(empty_engine) == at_head
    else:
        # Down one undid the newest migration's change to the schema: a table, a column,
        # an index or a foreign key it added is gone, or one it took away (0028:
        # person_keys' foreign key to people) is back.
        assert at_head ^ schema_objects(empty_engine)

    upgrade(empty_engine)
    assert current_revision(empty_engine) == head
    assert tables(empty_engine) == APP_TABLES
    assert differences(empty_engine) == []


def test_downgrade_to_base_removes_every_table(empty_engine: Engine) -> None:
    upgrade(empty_engine)
    downgrade(empty_engine, "base")
    assert current_revision(empty_engine) is None
    assert tables(empty_engine) == set()
    upgrade(empty_engine)
    assert tables(empty_engine) == APP_TABLES


def test_each_revision_upgrades_and_downgrades_alone(empty_engine: Engine) -> None:
    script = ScriptDirectory.from_config(alembic_config(empty_engine))
    revisions = [revision.revision for revision in script.walk_revisions("base", "heads")]
    revisions.reverse()
    for revision in revisions:
        upgrade(empty_engine, revision)
        assert current_revision(empty_engine) == revision
    for revision in reversed(revisions):
        assert current_revision(empty_engine) == revision
        downgrade(empty_engine, "-1")
    assert tables(empty_engine) == set()


def test_models_and_migrations_agree(empty_engine: Engine) -> None:
    upgrade(empty_engine)
    assert differences(empty_engine) == []


def test_upgrade_twice_is_harmless(empty_engine: Engine) -> None:
    upgrade(empty_engine)
    upgrade(empty_engine)
    assert current_revision(empty_engine) == head_revision(empty_engine)


def test_every_index_of_the_models_exists(empty_engine: Engine) -> None:
    # compare_metadata cannot see expression indexes on SQLite; look them up by name.
    upgrade(empty_engine)
    wanted = {index.name for table in Base.metadata.sorted_tables for index in table.indexes}
    # an expression index (the people's name indexes were until 0030), and those names'
    assert {
        "ix_audit_records_who",
        "ix_people_last_first_search",
        "ix_people_first_name_search",
    } <= wanted
    if empty_engine.dialect.name == "sqlite":
        query = "SELECT name FROM sqlite_master WHERE type = 'index'"
    else:
        query = "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()"
    with empty_engine.connect() as connection:
        present = {name for (name,) in connection.execute(text(query)) if name.startswith("ix_")}
    assert present == wanted


def test_0025_rebuilds_every_persons_keys_in_one_b_tree(empty_engine: Engine) -> None:
    """0025 recomputes each stored person's keys (a stale or missing key put right, a key
    of no one's dropped) and leaves person_keys without its index on person_id."""
    from sqlalchemy import delete, insert, select
    from testkit.factories import person_body

    from ridercrm.db import session_factory, session_scope
    from ridercrm.people import service
    from ridercrm.people.blocking import stored_keys
    from ridercrm.people.index import identity_of
    from ridercrm.people.models import CONTACT, PersonKey
    from ridercrm.people.schemas import PersonCreate

    upgrade(empty_engine)
    sessions = session_factory(empty_engine)
    expected: dict[str, set[int]] = {}
    with session_scope(sessions, write=True) as session:
        for n in range(3):
            body = person_body(
                first_name=f"Ann{'a' * n}", email=f"ann{n}@example.com", drivers_license=f"L12{n}"
            )
            person = service.create_person(
                session, kind=CONTACT, data=PersonCreate.model_validate(body)
            )
            expected[person.id] = stored_keys(identity_of(person))
    downgrade(empty_engine, "0024")
    first, second, _third = sorted(expected)
    with empty_engine.begin() as connection:
        # A store whose keys went wrong: one person's all gone, another's partly, one stale.
        connection.execute(delete(PersonKey).where(PersonKey.person_id == first))
        connection.execute(
            delete(PersonKey).where(
                PersonKey.person_id == second, PersonKey.key == min(expected[second])
            )
        )
        connection.execute(insert(PersonKey).values(key=12345, person_id=second))
    upgrade(empty_engine)
    with empty_engine.connect() as connection:
        stored: dict[str, set[int]] = {}
        for key, person_id in connection.execute(select(PersonKey.key, PersonKey.person_id)):
            stored.setdefault(person_id, set()).add(key)
    assert stored == expected
    assert inspect(empty_engine).get_indexes("person_keys") == []


def test_0028_keeps_every_key_and_takes_the_foreign_key_away(empty_engine: Engine) -> None:
    """person_keys loses its foreign key to people (and gets it back going down) with
    every key row of a stored person kept; on SQLite it stays one B-tree (WITHOUT ROWID)."""
    from sqlalchemy import insert, select
    from testkit.factories import person_body

    from ridercrm.db import session_factory, session_scope
    from ridercrm.people import service
    from ridercrm.people.models import CONTACT, PersonKey
    from ridercrm.people.schemas import PersonCreate

    upgrade(empty_engine)
    with session_scope(session_factory(empty_engine), write=True) as session:
        for n in range(3):
            body = person_body(first_name=f"Bea{'a' * n}", email=f"bea{n}@example.com")
            service.create_person(session, kind=CONTACT, data=PersonCreate.model_validate(body))

    def keys() -> set[tuple[int, str]]:
        with empty_engine.connect() as connection:
            rows = connection.execute(select(PersonKey.key, PersonKey.person_id))
            return {(key, person_id) for key, person_id in rows}

    def one_b_tree() -> bool:
        if empty_engine.dialect.name != "sqlite":
            return True
        with empty_engine.connect() as connection:
            sql = connection.execute(
                text("SELECT sql FROM sqlite_master WHERE name = 'person_keys'")
            ).scalar_one()
        return "WITHOUT ROWID" in sql

    stored = keys()
    assert len(stored) > 20
    assert inspect(empty_engine).get_foreign_keys("person_keys") == []
    with empty_engine.begin() as connection:  # a key of no one: going down drops it
        connection.execute(insert(PersonKey).values(key=12345, person_id="003NOBODY"))
    downgrade(empty_engine, "0027")
    assert [
        key["referred_table"] for key in inspect(empty_engine).get_foreign_keys("person_keys")
    ] == ["people"]
    assert keys() == stored
    assert one_b_tree()
    upgrade(empty_engine)
    assert inspect(empty_engine).get_foreign_keys("person_keys") == []
    assert keys() == stored
    assert one_b_tree()


def test_0029_recomputes_the_keys_of_greek_lettered_names_only(empty_engine: Engine) -> None:
    """A person whose name is written in Greek letters had keys made from those letters:
    0029 replaces them with the keys of the name in Latin letters (ELOT 743), and leaves
    everyone else's keys as they were."""
    from sqlalchemy import delete, insert, select
    from testkit.factories import person_body

    from ridercrm.db import session_factory, session_scope
    from ridercrm.people import service
    from ridercrm.people.blocking import stored_keys
    from ridercrm.people.index import identity_of
    from ridercrm.people.models import CONTACT, PersonKey
    from ridercrm.people.schemas import PersonCreate

    upgrade(empty_engine)
    ids: dict[str, str] = {}
    expected: dict[str, set[int]] = {}
    with session_scope(session_factory(empty_engine), write=True) as session:
        for label, first, last in (("greek", "Γιώργος", "Παπαδόπουλος"), ("latin", "Ann", "Lee")):
            body = person_body(first_name=first, last_name=last, email=f"{label}@example.com")
            person = service.create_person(
                session, kind=CONTACT, data=PersonCreate.model_validate(body)
            )
            ids[label] = person.id
            expected[person.id] = stored_keys(identity_of(person))
    downgrade(empty_engine, "0028")
    with empty_engine.begin() as connection:
        # the Greek-lettered person's keys as the earlier code made them: other ones
        connection.execute(delete(PersonKey).where(PersonKey.person_id == ids["greek"]))
        connection.execute(insert(PersonKey).values(key=12345, person_id=ids["greek"]))
        # someone else's stale key is not 0029's business
        connection.execute(insert(PersonKey).values(key=67890, person_id=ids["latin"]))
    upgrade(empty_engine)
    stored: dict[str, set[int]] = {}
    with empty_engine.connect() as connection:
        for key, person_id in connection.execute(select(PersonKey.key, PersonKey.person_id)):
            stored.setdefault(person_id, set()).add(key)
    assert stored[ids["greek"]] == expected[ids["greek"]]
    assert stored[ids["latin"]] == expected[ids["latin"]] | {67890}


def test_0029_marks_the_people_it_rekeys_for_the_duplicates_recheck(
    empty_engine: Engine,
) -> None:
    """Γιώργος Παπαδόπουλος and his Latin-lettered record were two names to the scans
    before 0029; with the new keys and names they are a pair. The re-check takes only
    the people a write marked: 0029 rewrites keys, so it marks the people it re-keys,
    or only a full scan would ever propose the pair (matching already finds it)."""
    import datetime as dt

    from sqlalchemy import insert, update
    from testkit.factories import person_body

    from ridercrm.db import session_factory, session_scope, utcnow
    from ridercrm.duplicates import recheck
    from ridercrm.duplicates.models import DuplicateScan
    from ridercrm.people import service
    from ridercrm.people.models import CONTACT, LEAD, Person
    from ridercrm.people.schemas import PersonCreate

    upgrade(empty_engine)
    ids: dict[str, str] = {}
    with session_scope(session_factory(empty_engine), write=True) as session:
        for label, kind, first, last in (
            ("greek", CONTACT, "Γιώργος", "Παπαδόπουλος"),
            ("latin", LEAD, "Giorgos", "Papadopoulos"),
            ("other", LEAD, "Ann", "Lee"),
        ):
            body = person_body(first_name=first, last_name=last, email=f"{label}@example.com")
            person = service.create_person(
                session, kind=kind, data=PersonCreate.model_validate(body)
            )
            ids[label] = person.id
    downgrade(empty_engine, "0028")
    now = utcnow()
    with empty_engine.begin() as connection:
        # a scan ran at 0028 and the re-checker cleared every mark since
        connection.execute(
            insert(DuplicateScan).values(
                started_at=now - dt.timedelta(hours=1), finished_at=now - dt.timedelta(hours=1)
            )
        )
        earlier = now - dt.timedelta(days=1)
        connection.execute(update(Person).values(duplicate_touched_at=earlier, updated_at=earlier))
    upgrade(empty_engine)
    with session_scope(session_factory(empty_engine)) as session:
        assert recheck.waiting(session) == {ids["greek"]}
        # the mark is not a change of the person: their updated_at stays
        assert session.get(Person, ids["greek"]).updated_at < now  # type: ignore[union-attr]


def test_0030_stores_every_persons_names_as_the_search_reads_them(empty_engine: Engine) -> None:
    """People stored before 0030 have no search forms of their names: 0030 computes them
    (Greek letters in Latin ones, accents and case gone) and the name search finds a
    Greek-lettered person by a Latin prefix, and a Latin-lettered one by a Greek prefix."""
    from sqlalchemy import select
    from testkit.factories import person_body

    from ridercrm.db import session_factory, session_scope
    from ridercrm.people import repository, service
    from ridercrm.people.models import CONTACT, Person
    from ridercrm.people.schemas import PersonCreate

    upgrade(empty_engine)
    ids: dict[str, str] = {}
    with session_scope(session_factory(empty_engine), write=True) as session:
        for label, first, last in (
            ("greek", "Γιώργος", "Παπαδόπουλος"),
            ("latin", "Zoë", "O'Brien"),
            ("latin greek", "Nikos", "Papadakis"),
        ):
            body = person_body(first_name=first, last_name=last, email=f"{label[:5]}@example.com")
            person = service.create_person(
                session, kind=CONTACT, data=PersonCreate.model_validate(body)
            )
            ids[label] = person.id
    downgrade(empty_engine, "0029")
    upgrade(empty_engine)
    with empty_engine.connect() as connection:
        stored = {
            row.id: (row.first_name_search, row.last_name_search)
            for row in connection.execute(
                select(Person.id, Person.first_name_search, Person.last_name_search)
            )
        }
    assert stored == {
        ids["greek"]: ("giorgos", "papadopoulos"),
        ids["latin"]: ("zoe", "o'brien"),
        ids["latin greek"]: ("nikos", "papadakis"),
    }
    with session_scope(session_factory(empty_engine)) as session:

        def found(query: str) -> set[str]:
            return {p.id for p in repository.search(session, query=query, limit=10)}

        assert found("Papad") == {ids["greek"], ids["latin greek"]}
        assert found("Παπαδ") == {ids["greek"], ids["latin greek"]}
        assert found("Παπαδό") == {ids["greek"]}
        assert found("zoe o'b") == {ids["latin"]}
