"""Schema fuzzing: schemathesis against the service's own OpenAPI document.

Every operation of ``/openapi.json`` is called with bodies, parameters and headers
generated from the document (its examples, the coverage phase's boundary and invalid
values, and random valid and invalid data), in all documented request media types,
with an admin key, no key, a wrong key or a key of another scope, asking for
``application/json`` or ``text/json``. Each response must be no 5xx, and its status,
media type, body and headers must be the ones the document gives for it.

Not part of the default run (marker ``fuzz``); CI runs it as its own step. Bounded
(:data:`MAX_EXAMPLES` per operation) and seeded, so a run is reproducible.
"""

from __future__ import annotations

import json
import os
import shutil
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import schemathesis
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from sqlalchemy import event
from testkit.databases import create_run_database, drop_run_database, postgres_url
from testkit.factories import new_booking

from ridercrm.app import create_app
from ridercrm.config import Settings
from ridercrm.db import session_scope
from ridercrm.keys.service import create_key

pytestmark = pytest.mark.fuzz

# RIDERCRM_FUZZ_EXAMPLES raises the bound for a longer local run; RIDERCRM_FUZZ_SEED
# picks other (still reproducible) cases; RIDERCRM_FUZZ_POSTGRESQL=1 runs on a fresh
# PostgreSQL database next to RIDERCRM_TEST_POSTGRES_URL instead of SQLite.
MAX_EXAMPLES = int(os.environ.get("RIDERCRM_FUZZ_EXAMPLES", "150"))
SEED = int(os.environ.get("RIDERCRM_FUZZ_SEED", "20261120"))
ON_POSTGRESQL = os.environ.get("RIDERCRM_FUZZ_POSTGRESQL", "") not in ("", "0")
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]
CONFIG = {
    "seed": SEED,
    "generation": {"max-examples": MAX_EXAMPLES, "database": "none"},
    "phases": {"stateful": {"enabled": False}},
    # schemathesis' default is 10 s; on a loaded CI machine a long audit listing came
    # close once. A hung request still fails the run.
    "request-timeout": 60,
}


@dataclass
class FuzzEnv:
    """The app under test, its keys and the ids of the records seeded into it."""

    app: FastAPI
    keys: dict[str, str]
    ids: dict[str, str]


def _serialize_text_plain(_ctx: Any, value: Any) -> bytes | None:
    """text/plain carries JSON text (the document gives it the JSON body's schema)."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return value
    return value.encode() if isinstance(value, str) else json.dumps(value).encode()


def _serialize_form(_ctx: Any, value: Any) -> bytes | None:
    """Form bodies as the document describes them: JSON text as the raw body (a string),
    or fields whose values are JSON text, or bracket fields whose values are text."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    if not isinstance(value, dict):
        return json.dumps(value).encode()
    fields = {
        str(name): item if isinstance(item, str) else json.dumps(item)
        for name, item in value.items()
    }
    return urlencode(fields).encode()


def _seed(client: TestClient, admin: dict[str, str]) -> dict[str, str]:
    """A product, a contact, a lead and a booked course, so generated calls can find ids."""

    def created(path: str, body: dict[str, Any]) -> str:
        response = client.post(path, json=body, headers=admin)
        assert response.status_code == 201, response.text
        return str(response.json()["id"])

    product = created("/admin/products", {"name": "Learner", "code": "L1", "price": "249.00"})
    person = {
        "first_name": "Ann",
        "last_name": "Nguyen",
        "date_of_birth": "1999-04-12",
        "email": "ann.nguyen@example.com",
        "postcode": "3064",
        "mobile_phone": "0412 345 678",
    }
    contact = created("/admin/contacts", person)
    lead = created("/admin/leads", {**person, "first_name": "Bea", "email": "bea@example.com"})
    booking = new_booking(contact, product, booking_number="HB-1")
    response = client.post(
        "/crm/people/rider_courses", json={"people_product": [booking]}, headers=admin
    )
    assert response.status_code == 200, response.text
    [result] = response.json()["details"]
    assert result["delivery"] == "true", result
    return {
        "product": product,
        "contact": contact,
        "lead": lead,
        "asset": result["asset_id"],
        "audit": response.headers["X-Audit-Id"],
    }


@pytest.fixture(scope="module")
def fuzz_env(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[FuzzEnv]:
    schemathesis.serializer("text/plain")(_serialize_text_plain)
    schemathesis.serializer("application/x-www-form-urlencoded")(_serialize_form)
    postgres = postgres_url() if ON_POSTGRESQL else None
    if ON_POSTGRESQL and postgres is None:
        pytest.fail("RIDERCRM_FUZZ_POSTGRESQL needs RIDERCRM_TEST_POSTGRES_URL")
    if postgres is not None:
        database_url = create_run_database(postgres, "fuzz")
    else:
        path = tmp_path_factory.mktemp("fuzz") / "ridercrm.db"
        shutil.copy(sqlite_template, path)
        database_url = f"sqlite:///{path}"
    # No rate limit: thousands of calls with one key would otherwise be mostly 429s.
    # No rate limits: the fuzzing checks answers, not floods. (Its unauthenticated
    # cases would pass RIDERCRM_REFUSED_RATE_LIMIT within the minute, and the 429s past
    # it carry no audit id by design: tests/security/test_refused_requests.py.)
    settings = Settings(
        database_url=database_url,
        log_level="WARNING",
        rate_limit="off",
        explain_rate_limit="off",
        refused_rate_limit="off",
    )
    app = create_app(settings)
    engine = app.state.context.engine
    if postgres is None:

        @event.listens_for(engine, "connect")
        def _no_fsync(dbapi_connection: Any, _record: Any) -> None:
            # Durability is not what this run tests; an fsync per commit would be most of it.
            dbapi_connection.execute("PRAGMA synchronous=OFF")

    sessions = app.state.context.sessions
    keys = {}
    with session_scope(sessions, write=True) as session:
        keys["admin"] = create_key(session, name="fuzz-admin", scopes=["admin"])[1]
        keys["narrow"] = create_key(session, name="fuzz-products", scopes=["products"])[1]
    with TestClient(app) as client:
        ids = _seed(client, {"Authorization": f"Bearer {keys['admin']}"})
    yield FuzzEnv(app=app, keys=keys, ids=ids)
    app.state.context.engine.dispose()
    if postgres is not None:
        drop_run_database(postgres, database_url)


@pytest.fixture
def fuzz_counts(request: pytest.FixtureRequest) -> list[tuple[str, object]]:
    """Where each call's operation and status go; reports carry them, also from xdist workers."""
    properties: list[tuple[str, object]] = request.node.user_properties
    return properties


# The document is read from an app of the same routes and base path; the calls go to
# the fixture's app, which has a database. (schemathesis' fixture-based loader does
# not run on pytest 9.2, whose nodes no longer have `_nodeid`; tests/fuzz/conftest.py
# keeps this module from being imported unless the fuzz marker is selected.)
_DOCUMENT_APP = create_app(Settings(database_url="sqlite://", log_level="WARNING"))
schema = schemathesis.openapi.from_asgi(
    "/openapi.json", _DOCUMENT_APP, config=schemathesis.Config.from_dict(CONFIG)
)

# Who calls and what they accept vary with the case: chosen from a hash of what the
# case sends, so a replayed case (Hypothesis shrinking a failure) is sent the same way.
WHO = ("admin",) * 7 + ("none", "wrong", "narrow")
ACCEPT = (None, "application/json", "text/json")
ID_FIELDS = {
    "person_id": ("contact", "lead"),
    "product_id": ("product",),
    "asset_id": ("asset",),
    "audit_id": ("audit",),
    "ID": ("contact", "lead"),
}


class Choices:
    """Deterministic choices drawn from one case's content."""

    def __init__(self, case: schemathesis.Case) -> None:
        headers = sorted(
            (name.lower(), value)
            for name, value in (case.headers or {}).items()
            if name.lower() != "x-schemathesis-testcaseid"
        )
        sent = (case.path, case.path_parameters, case.query, headers, case.body, case.media_type)
        self.state = zlib.crc32(repr(sent).encode())

    def pick(self, options: tuple[Any, ...]) -> Any:
        self.state = zlib.crc32(self.state.to_bytes(4, "big"))
        return options[self.state % len(options)]


def _use_seeded_ids(values: Any, ids: dict[str, str], choices: Choices) -> None:
    """Now and then put a stored record's id where the case names one."""
    if not isinstance(values, dict):
        return
    for name, kinds in ID_FIELDS.items():
        if name in values:
            kind = choices.pick((None, *kinds))
            if kind is not None:
                values[name] = ids[kind]


def _seed_body(body: Any, ids: dict[str, str], choices: Choices) -> None:
    if not isinstance(body, dict):
        return
    for key in ("people_product", "people_data"):
        items = body.get(key)
        if isinstance(items, list):
            for item in items[:3]:
                _use_seeded_ids(item, ids, choices)


@schema.parametrize()
# fuzz_counts is function-scoped on purpose: it collects every example's call.
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_every_response_is_documented(
    case: schemathesis.Case, fuzz_env: FuzzEnv, fuzz_counts: list[tuple[str, object]]
) -> None:
    choices = Choices(case)
    _use_seeded_ids(case.path_parameters, fuzz_env.ids, choices)
    _seed_body(case.body, fuzz_env.ids, choices)
    headers: dict[str, str] = {}
    who = choices.pick(WHO)
    if who == "wrong":
        headers["Authorization"] = "Bearer rcrm_not-a-key"
    elif who != "none":
        headers["Authorization"] = f"Bearer {fuzz_env.keys[who]}"
    else:
        # Drop any key the document's security schemes made schemathesis generate.
        for name in ("Authorization", "X-API-Key"):
            if case.headers:
                case.headers.pop(name, None)
    if case.headers and "Idempotency-Key" in case.headers and choices.pick((False, True, True)):
        # Generated keys come from a small space and would mostly collide (422); keep a
        # third of them, enough for replays and conflicts, and send the rest without one.
        del case.headers["Idempotency-Key"]
    accept = choices.pick(ACCEPT)
    if accept is not None:
        headers["Accept"] = accept
    response = case.call_and_validate(headers=headers, checks=CHECKS, app=fuzz_env.app)
    # Counted by tests/fuzz/conftest.py for the run's summary.
    label = f"{case.operation.method.upper()} {case.operation.path}"
    fuzz_counts.append(("fuzz", (label, response.status_code)))
