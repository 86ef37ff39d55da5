"""The service under test: a fresh SQLite database loaded by `ridercrm import`, and
`ridercrm serve` on 127.0.0.1, asked through POST /crm/people/match and /crm/leads/match.
"""

from __future__ import annotations

import csv
import json
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from testkit import serve
from testkit.serve import BenchError

from bench.matching.generate import CONTACT, CSV_COLUMNS, LEAD, Person, Query

COMMAND_TIMEOUT_S = 900.0
REQUEST_TIMEOUT_S = 30.0
JSON_HEADERS = {"Content-Type": "application/json"}


# --- the command line -------------------------------------------------------------


def environment(database: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RIDERCRM_")}
    env["RIDERCRM_DATABASE_URL"] = f"sqlite:///{database}"
    env["RIDERCRM_LOG_LEVEL"] = "WARNING"
    return env


def run_cli(args: list[str], env: dict[str, str], command: str | None = None) -> str:
    """``ridercrm ARGS`` of this build, or of another build's ``command``."""
    return serve.run_cli(args, env, timeout=COMMAND_TIMEOUT_S, command=command)


def write_csv(people: Sequence[Person], path: Path) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for person in people:
            writer.writerow(person.csv_row())


@dataclass
class Loaded:
    contacts: int
    leads: int
    seconds: float


def load_store(
    people: Sequence[Person], directory: Path, env: dict[str, str], command: str | None = None
) -> Loaded:
    """Write contacts.csv and leads.csv and import them with the service's own command."""
    contacts = [p for p in people if p.kind == CONTACT]
    leads = [p for p in people if p.kind == LEAD]
    started = time.perf_counter()
    for name, rows in (("contacts", contacts), ("leads", leads)):
        path = directory / f"{name}.csv"
        write_csv(rows, path)
        output = run_cli(["import", name, str(path)], env, command)
        summary = output.strip().splitlines()[-1] if output.strip() else ""
        expected = f"imported {len(rows)} {name if len(rows) != 1 else name[:-1]}, 0 bad rows"
        if summary != expected:
            raise BenchError(f"import {name}: expected {expected!r}, got:\n{output[-3000:]}")
    return Loaded(len(contacts), len(leads), time.perf_counter() - started)


def stored_key_rows(database: Path) -> int | None:
    """Rows in the matcher's person_keys table (None when the table does not exist)."""
    with closing(sqlite3.connect(database)) as connection:
        try:
            return int(connection.execute("SELECT COUNT(*) FROM person_keys").fetchone()[0])
        except sqlite3.OperationalError:
            return None


def create_key(env: dict[str, str], command: str | None = None) -> str:
    run_cli(["db", "upgrade"], env, command)  # `keys create` makes no new database
    output = run_cli(["keys", "create", "--name", "bench", "--scope", "admin"], env, command)
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if not lines:
        raise BenchError("ridercrm keys create printed no key")
    return lines[-1]


# --- the server -----------------------------------------------------------------


@contextmanager
def running_server(
    env: dict[str, str], log_path: Path, command: str | None = None
) -> Iterator[str]:
    """Start `ridercrm serve` on a free port, wait for /healthz, stop it on the way out."""
    with serve.running_server(env, serve.free_port(), log_path, command) as (base_url, _pid):
        yield base_url


# --- queries ----------------------------------------------------------------------


@dataclass
class Answer:
    status: int
    id: str | None
    body: dict[str, Any] | None
    seconds: float
    problem: str | None = None


@dataclass
class Answers:
    by_query: dict[int, Answer] = field(default_factory=dict)
    wall: float = 0.0

    @property
    def predictions(self) -> dict[int, str | None]:
        return {number: answer.id for number, answer in self.by_query.items()}

    @property
    def latencies(self) -> list[float]:
        return [answer.seconds for answer in self.by_query.values()]

    @property
    def problems(self) -> dict[int, str]:
        return {n: a.problem for n, a in self.by_query.items() if a.problem}


def endpoints_available(base_url: str, key: str) -> str | None:
    """None when both match endpoints answer, else what is wrong."""
    body = {
        "person_data": {
            "first_name": "Probe",
            "last_name": "Probe",
            "date_of_birth": "2000-01-01",
            "email": "probe@example.com",
            "postcode": "3000",
            "lead_source": "Web",
        }
    }
    with httpx.Client(base_url=base_url, trust_env=False, timeout=REQUEST_TIMEOUT_S) as client:
        for path in ("/crm/people/match", "/crm/leads/match"):
            response = client.post(path, json=body, headers={"Authorization": f"Bearer {key}"})
            if response.status_code != 200:
                return f"POST {path}: HTTP {response.status_code} {response.text[:200]}"
    return None


def _ask(client: httpx.Client, query: Query, explain: bool = False) -> Answer:
    body: dict[str, Any] = {"person_data": query.person_data}
    if explain:
        body["explain"] = True
    content = json.dumps(body).encode()
    started = time.perf_counter()
    response = client.post(query.path, content=content, headers=JSON_HEADERS)
    seconds = time.perf_counter() - started
    try:
        parsed = response.json()
    except ValueError:
        parsed = None
    if response.status_code != 200 or not isinstance(parsed, dict):
        return Answer(
            response.status_code,
            None,
            parsed if isinstance(parsed, dict) else None,
            seconds,
            f"HTTP {response.status_code}: {response.text[:300]}",
        )
    delivery, found = parsed.get("delivery"), parsed.get("ID")
    problem = None
    if delivery == "true" and isinstance(found, str) and found:
        answer_id: str | None = found
    elif delivery == "false" and found == "":
        answer_id = None
    else:
        answer_id = None
        problem = f"unexpected response shape: {str(parsed)[:300]}"
    return Answer(200, answer_id, parsed, seconds, problem)


def ask_all(base_url: str, key: str, queries: Sequence[Query], workers: int = 1) -> Answers:
    """Send every query once (keep-alive client; ``workers`` threads), time each round trip."""
    answers = Answers()
    headers = {"Authorization": f"Bearer {key}"}
    limits = httpx.Limits(max_connections=workers, max_keepalive_connections=workers)
    with httpx.Client(
        base_url=base_url,
        headers=headers,
        trust_env=False,
        timeout=REQUEST_TIMEOUT_S,
        limits=limits,
    ) as client:
        # Warm-up: a few untimed requests so the first timed one is not the first served.
        for query in queries[: min(20, len(queries))]:
            _ask(client, query)
        started = time.perf_counter()
        if workers <= 1:
            for query in queries:
                answers.by_query[query.number] = _ask(client, query)
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                for query, answer in zip(
                    queries, pool.map(lambda q: _ask(client, q), queries), strict=True
                ):
                    answers.by_query[query.number] = answer
        answers.wall = time.perf_counter() - started
    return answers


def explain(base_url: str, key: str, queries: Sequence[Query]) -> dict[int, Any]:
    """The matcher's explanation (the response's `match` key) for each of ``queries``."""
    found: dict[int, Any] = {}
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(
        base_url=base_url, headers=headers, trust_env=False, timeout=REQUEST_TIMEOUT_S
    ) as client:
        for query in queries:
            answer = _ask(client, query, explain=True)
            found[query.number] = (answer.body or {}).get("match")
    return found
