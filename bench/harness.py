"""What the crash, concurrency and load scripts share, and every benchmark's --previous.

- a fresh database: a SQLite file in a temporary directory, or a PostgreSQL database
  of this process's own (``ridercrm_<label>_<pid>``) created next to the configured
  one with AUTOCOMMIT and dropped at the end;
- a real ``ridercrm serve`` (any number of workers) in its own process group, so a
  SIGKILL reaches the workers too; started with ``match_perf``'s environment, health
  wait and stop;
- a snapshot of the stored records read straight from the database, and the checks
  that hold on any database the service wrote, whatever happened to it: every course
  has its status history and it replays, nothing points to a missing record, every
  contact made by a lead conversion is linked from its lead, and ``person_keys`` is
  exactly what ``identity_of`` + ``stored_keys`` give for each stored person.

- ``--previous DIR`` (:func:`add_previous`, :func:`compare_with_previous`): the same
  benchmark run on this build and on another checkout's, alternately, its output printed
  side by side (a ``build`` column in each table).

Only 127.0.0.1 is used; every wait is bounded.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, make_url, select, text
from sqlalchemy.pool import NullPool

from bench import match_perf
from ridercrm.audit.models import AuditRecord
from ridercrm.config import Settings
from ridercrm.courses import rules
from ridercrm.courses.models import Asset, AssetStatusChange
from ridercrm.db import build_engine
from ridercrm.people.blocking import stored_keys
from ridercrm.people.index import identity_of
from ridercrm.people.models import CONTACT, LEAD, Person, PersonKey

ROOT = Path(__file__).resolve().parent.parent
POSTGRES_ENV = "RIDERCRM_TEST_POSTGRES_URL"
POSTGRES_DEFAULT = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
KILL_WAIT_S = 15.0
# Load runs must not be throttled by a per-key rate limit: both spellings are
# harmless where the setting does not exist (unknown RIDERCRM_* variables are ignored).
NO_RATE_LIMIT = {"RIDERCRM_RATE_LIMIT": "off"}


class HarnessError(Exception):
    """The harness itself could not do its work (not a finding about the service)."""


# --------------------------------------------------------------------------- databases


def postgres_base_url(explicit: str | None = None) -> str:
    """The PostgreSQL server to create databases on: --pg-url, $RIDERCRM_TEST_POSTGRES_URL
    or the local default; a plain postgresql:// URL gets the psycopg driver."""
    url = explicit or os.environ.get(POSTGRES_ENV) or POSTGRES_DEFAULT
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
    host = make_url(url).host or ""
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise HarnessError(f"only a PostgreSQL on 127.0.0.1 is used, not {host!r}")
    return url


def _admin_engine(base_url: str) -> Any:
    return create_engine(base_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)


def slug(label: str) -> str:
    """``label`` with every character but letters and digits made ``_``: fit for a file's
    or a database's name (a variant's label has a comma, a space and an ``=``)."""
    return "".join(c if c.isalnum() else "_" for c in label)


@contextlib.contextmanager
def fresh_database(
    kind: str, label: str, directory: Path, pg_url: str | None = None
) -> Iterator[str]:
    """Yield the URL of a new, empty database; drop it (PostgreSQL) at the end."""
    if kind == "sqlite":
        yield f"sqlite:///{directory / (label + '.db')}"
        return
    if kind != "postgresql":
        raise HarnessError(f"unknown database kind {kind!r}")
    with scratch_postgres(postgres_base_url(pg_url), f"ridercrm_{label}_{os.getpid()}") as url:
        yield url


@contextlib.contextmanager
def scratch_postgres(base: str, name: str, template: str | None = None) -> Iterator[str]:
    """Yield the URL of a new PostgreSQL database ``name`` on ``base``'s server (empty, or
    a copy of ``template``); drop it at the end."""
    engine = _admin_engine(base)
    create = f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else "")
    try:
        with engine.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            connection.execute(text(create))
        try:
            yield make_url(base).set(database=name).render_as_string(hide_password=False)
        finally:
            with engine.connect() as connection:
                connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        engine.dispose()


def admin_key(url: str) -> str:
    """Migrate the database and create an admin key with the ``ridercrm`` command."""
    return match_perf.create_key(url)


# --------------------------------------------------------------------------- server


class Server:
    """``ridercrm serve`` in its own process group; start, kill (SIGKILL) and stop it.

    Each start writes its own log file; :meth:`log_text` reads them all.
    """

    def __init__(
        self,
        url: str,
        key: str,
        directory: Path,
        *,
        workers: int = 1,
        name: str = "server",
        env: dict[str, str] | None = None,
    ) -> None:
        self.url, self.key, self.directory = url, key, directory
        self.workers, self.name = workers, name
        self.extra_env = {**NO_RATE_LIMIT, **(env or {})}
        self.process: subprocess.Popen[bytes] | None = None
        self.base = ""
        self.logs: list[Path] = []

    def start(self) -> str:
        if self.process is not None and self.process.poll() is None:
            raise HarnessError("the server is already running")
        port = match_perf.free_port()
        extra = dict(self.extra_env)
        if self.workers > 1:
            metrics = self.directory / f"metrics-{self.name}-{port}"
            metrics.mkdir()
            extra["PROMETHEUS_MULTIPROC_DIR"] = str(metrics)
        log = self.directory / f"{self.name}-{len(self.logs) + 1}-{port}.log"
        self.logs.append(log)
        command = [str(match_perf.RIDERCRM), "serve", "--host", "127.0.0.1", "--port", str(port)]
        command += ["--workers", str(self.workers)]
        with log.open("wb") as output:
            self.process = subprocess.Popen(
                command,
                cwd=self.directory,  # a first start's credentials files go here
                env=match_perf.server_env(self.url, extra),
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.base = f"http://127.0.0.1:{port}"
        try:
            match_perf._wait_healthy(match_perf.Server(self.process, self.base, self.key, log))
            self._wait_workers()
        except BaseException:
            self.stop()
            raise
        return self.base

    def _wait_workers(self) -> None:
        """/healthz answered; now the database too, a few times on fresh connections."""
        deadline = time.monotonic() + match_perf.SERVER_START_S
        good = 0
        while good < 3 * self.workers:
            if time.monotonic() > deadline:
                raise HarnessError("the server did not become ready")
            try:
                ready = httpx.get(self.base + "/readyz", timeout=10, trust_env=False)
                good = good + 1 if ready.status_code == 200 else 0
            except httpx.HTTPError:
                good = 0
                time.sleep(0.1)

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    def kill(self) -> None:
        """SIGKILL the whole process group (the supervisor and every worker)."""
        process = self.process
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=KILL_WAIT_S)
        # Workers are in the same group; make sure none outlives the kill.
        deadline = time.monotonic() + KILL_WAIT_S
        while _group_alive(process.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.process = None

    def stop(self) -> None:
        """Stop gracefully (SIGTERM to the group, SIGKILL after a bounded wait)."""
        process = self.process
        if process is None:
            return
        try:
            match_perf._stop(process)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            self.process = None

    def log_text(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in self.logs if p.exists())

    def log_events(self) -> Counter[str]:
        """How often each JSON log event (and each error class) appeared, all starts."""
        counts: Counter[str] = Counter()
        for line in self.log_text().splitlines():
            if not line.startswith("{"):
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            counts[str(entry.get("event"))] += 1
            if entry.get("error"):
                counts[f"error:{entry['error']}"] += 1
        return counts

    def log_errors(self, limit: int = 8) -> list[str]:
        """The distinct errors logged (class and the innermost frames), most frequent first."""
        seen: Counter[str] = Counter()
        for line in self.log_text().splitlines():
            if not line.startswith("{"):
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("error"):
                lines = [f.strip() for f in entry.get("traceback", []) if f.strip()]
                # The innermost frame of our own code, and the database's error line.
                ours = [f for f in lines if f.startswith("File") and "/ridercrm/" in f][-2:]
                said = [f for f in lines if f.startswith(("sqlalchemy.exc", "psycopg", "sqlite3"))]
                seen[f"{entry['error']} at " + " | ".join(ours + said[:1])] += 1
        return [f"{count} x {text}" for text, count in seen.most_common(limit)]


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def running(server: Server) -> Iterator[Server]:
    server.start()
    try:
        yield server
    finally:
        server.stop()


# --------------------------------------------------------------------------- snapshot

PERSON_COLUMNS = [c.name for c in Person.__table__.columns]
ASSET_COLUMNS = [c.name for c in Asset.__table__.columns]


def _plain(value: Any) -> Any:
    """A stored value as the scripts compare it: dates as ISO text, decimals as text."""
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if value.__class__.__name__ == "Decimal":
        return str(value)
    return value


@dataclass
class Snapshot:
    """Every stored person, course, status change, key and audit id, read at one moment."""

    people: dict[str, dict[str, Any]]
    person_rows: dict[str, Person]
    assets: dict[str, dict[str, Any]]
    by_booking: dict[str, str]
    history: dict[str, list[dict[str, Any]]]
    orphan_history: list[dict[str, Any]]
    keys: dict[str, set[int]]
    audit: dict[str, tuple[int, str]]  # id -> (response status, operation)

    def audit_bodies(self, url: str, texts: list[str]) -> dict[str, list[tuple[str, int]]]:
        """Audit records (id, status) whose stored request body is exactly each text."""
        found: dict[str, list[tuple[str, int]]] = {t: [] for t in texts}
        if not texts:
            return found
        engine = build_engine(Settings(database_url=url))
        try:
            with engine.connect() as connection:
                for body in texts:
                    rows = connection.execute(
                        select(AuditRecord.id, AuditRecord.response_status).where(
                            AuditRecord.request_body == body
                        )
                    ).all()
                    found[body] = [(row.id, row.response_status) for row in rows]
        finally:
            engine.dispose()
        return found


def snapshot(url: str) -> Snapshot:
    engine = build_engine(Settings(database_url=url))
    try:
        with engine.connect() as connection:
            if connection.dialect.name == "postgresql":
                connection.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            rows = connection.execute(select(Person)).all()
            people = {r.id: {c: _plain(getattr(r, c)) for c in PERSON_COLUMNS} for r in rows}
            person_rows = {r.id: r for r in rows}
            assets = {
                r.id: {c: _plain(getattr(r, c)) for c in ASSET_COLUMNS}
                for r in connection.execute(select(Asset)).all()
            }
            history: dict[str, list[dict[str, Any]]] = defaultdict(list)
            orphans = []
            for r in connection.execute(select(AssetStatusChange).order_by(AssetStatusChange.id)):
                row = {
                    "id": r.id,
                    "asset_id": r.asset_id,
                    "from_status": r.from_status,
                    "to_status": r.to_status,
                    "audit_id": r.audit_id,
                }
                if r.asset_id in assets:
                    history[r.asset_id].append(row)
                else:
                    orphans.append(row)
            keys: dict[str, set[int]] = defaultdict(set)
            for r in connection.execute(select(PersonKey.person_id, PersonKey.key)):
                keys[r.person_id].add(int(r.key))
            audit = {
                r.id: (int(r.response_status), r.operation)
                for r in connection.execute(
                    select(AuditRecord.id, AuditRecord.response_status, AuditRecord.operation)
                )
            }
    finally:
        engine.dispose()
    by_booking = {a["booking_number"]: a["id"] for a in assets.values() if a["booking_number"]}
    return Snapshot(
        people=people,
        person_rows=person_rows,
        assets=assets,
        by_booking=by_booking,
        history=dict(history),
        orphan_history=orphans,
        keys=dict(keys),
        audit=audit,
    )


@dataclass
class Invariants:
    violations: list[str] = field(default_factory=list)
    # Status-history rows whose audit id names no stored audit record: allowed only for
    # work whose request got no answer (a crash between the two commits).
    history_without_audit: set[str] = field(default_factory=set)


def check_invariants(snap: Snapshot, *, loaded_contacts: set[str]) -> Invariants:
    """What must hold on any database the service wrote, crashed or not.

    ``loaded_contacts``: the contacts the script created itself; every other contact
    can only have come from a lead conversion.
    """
    found = Invariants()
    bad = found.violations
    for asset_id, asset in snap.assets.items():
        rows = snap.history.get(asset_id, [])
        if not rows:
            bad.append(f"course {asset_id} has no status-history row")
            continue
        try:
            final = rules.replay((r["from_status"], r["to_status"]) for r in rows)
        except ValueError as exc:
            bad.append(f"course {asset_id}: status history does not replay: {exc}")
        else:
            if final != asset["course_status"]:
                bad.append(
                    f"course {asset_id}: status {asset['course_status']!r} but its history"
                    f" ends at {final!r}"
                )
        person = snap.people.get(asset["person_id"])
        if person is None or person["kind"] != CONTACT:
            bad.append(f"course {asset_id} belongs to {asset['person_id']}, not a stored contact")
        for row in rows:
            if row["audit_id"] not in snap.audit:
                found.history_without_audit.add(row["audit_id"])
    for row in snap.orphan_history:
        bad.append(f"status-history row {row['id']} names a missing course {row['asset_id']}")
    pointed: Counter[str] = Counter()
    for person_id, person in snap.people.items():
        target = person["converted_contact_id"]
        if target is None:
            continue
        if person["kind"] != LEAD:
            bad.append(f"{person_id} is a contact with converted_contact_id set")
        contact = snap.people.get(target)
        if contact is None or contact["kind"] != CONTACT:
            bad.append(f"lead {person_id} points to {target}, not a stored contact")
        pointed[target] += 1
    owners = Counter(asset["person_id"] for asset in snap.assets.values())
    for person_id, person in snap.people.items():
        if person["kind"] != CONTACT or person_id in loaded_contacts:
            continue
        if pointed[person_id] != 1:
            bad.append(
                f"contact {person_id} was made by a conversion but {pointed[person_id]} leads"
                " point to it"
            )
        if owners[person_id] == 0:
            bad.append(f"contact {person_id} was made by a conversion but has no course")
    for person_id, row in snap.person_rows.items():
        expected = stored_keys(identity_of(row))
        stored = snap.keys.get(person_id, set())
        if stored != expected:
            bad.append(
                f"person_keys of {person_id} out of step: {len(stored - expected)} stale,"
                f" {len(expected - stored)} missing"
            )
    for person_id in set(snap.keys) - set(snap.people):
        bad.append(f"person_keys rows for {person_id}, who is not stored")
    return found


def previous_build_env(previous: Path) -> dict[str, str]:
    """The environment that runs the ridercrm of ``previous``/src (a worktree of another
    commit) with this checkout's installed packages; HarnessError unless it really does
    (a missing worktree would silently run this build twice)."""
    src = (previous / "src").resolve()
    env = {**os.environ, "PYTHONPATH": str(src)}
    found = subprocess.run(
        [sys.executable, "-c", "import ridercrm; print(ridercrm.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if not found.startswith(str(src) + os.sep):
        raise HarnessError(
            f"{previous} does not hold a build to run (ridercrm imports from {found!r})"
        )
    return env


def previous_command(previous: str) -> tuple[str | None, dict[str, str]]:
    """A ``--previous`` naming another build's ``ridercrm``: a checkout of the previous
    commit (its src/ run by this venv's ``ridercrm``: command None, and the PYTHONPATH to
    add to the environment), or that build's own ``ridercrm`` command (no PYTHONPATH)."""
    if Path(previous).is_dir():
        return None, {"PYTHONPATH": previous_build_env(Path(previous))["PYTHONPATH"]}
    return previous, {}


# --------------------------------------------------------------------------- side by side

PREVIOUS_HELP = (
    "a checkout of the previous commit (git worktree add --detach DIR HEAD~1): run the same"
    " measurement on both builds, alternately, and print both builds' rows side by side"
)
_NUMBER = re.compile(r"(?<![\w.])-?\d(?:,?\d)*(?:\.\d+)?(?!\w)")
# The child imports the package ``ridercrm`` from its build's src/ before the benchmark
# runs: a benchmark that puts this checkout's src/ first on sys.path then still gets every
# ridercrm module from the build under test (a package's modules come from its __path__).
_CHILD = (
    "import runpy, sys; import ridercrm; sys.argv = sys.argv[1:];"
    " runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)"
)


def add_previous(parser: argparse.ArgumentParser) -> None:
    """``--previous DIR`` and ``--previous-rounds N`` on a benchmark's parser."""
    parser.add_argument("--previous", type=Path, metavar="DIR", help=PREVIOUS_HELP)
    parser.add_argument(
        "--previous-rounds",
        type=int,
        default=1,
        metavar="N",
        help="with --previous: runs of each build, alternated (ABBA); numbers are medians",
    )


def _without_previous(argv: list[str]) -> list[str]:
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--previous", "--previous-rounds"):
            skip = True
        elif not arg.startswith(("--previous=", "--previous-rounds=")):
            kept.append(arg)
    return kept


def _median_lines(runs: list[list[str]]) -> list[str]:
    """The first run's lines, each number the median over the runs whose same line has
    the same words around its numbers (decimals and thousands commas as first printed)."""
    out = []
    for n, line in enumerate(runs[0]):
        words = _NUMBER.split(line)
        same = [r[n] for r in runs if n < len(r) and _NUMBER.split(r[n]) == words]
        if len(same) < len(runs) or len(words) == 1:
            out.append(line)
            continue
        columns = zip(*(_NUMBER.findall(s) for s in same), strict=True)
        medians = []
        for column in columns:
            first = column[0]
            value = statistics.median(float(c.replace(",", "")) for c in column)
            places = len(first.split(".")[1]) if "." in first else 0
            text = f"{value:{',' if ',' in first else ''}.{places}f}"
            medians.append(text.rjust(len(first)))
        out.append("".join(w + m for w, m in zip(words, [*medians, ""], strict=True)))
    return out


def side_by_side(lines: dict[str, list[str]]) -> list[str]:
    """Two builds' outputs as one: a line both printed once; a table row of each with a
    ``build`` column in front (the header, this build's, and rule once); any other line
    once per build.
    Outputs of different shapes are printed one after the other."""
    (a, left), (b, right) = lines.items()
    if len(left) != len(right):
        return [f"== {a}", *left, f"== {b}", *right]
    out = []
    in_table = False
    for x, y in zip(left, right, strict=True):
        table = x.startswith("|") and y.startswith("|")
        rule = table and set(x.replace("|", "").strip()) <= set("-: ")
        if table and not in_table:  # the header
            out.append(f"| build {x}")
        elif rule:
            out.append(f"|---{x}")
        elif table:
            out += [f"| {a} {x}", f"| {b} {y}"]
        elif x == y:
            out.append(x)
        else:
            out += [f"{a}: {x}", f"{b}: {y}"]
        in_table = table
    return out


def compare_with_previous(
    args: argparse.Namespace, module: str, *, in_checkout: bool = False
) -> int | None:
    """With ``--previous DIR``: run ``python -m module`` with this command line (less the
    --previous options) on this build and on DIR's, ``--previous-rounds`` times each in
    ABBA order, and print both outputs side by side; return the worst exit status.
    Without it: None, and the benchmark runs as it always did.

    The same benchmark code (this checkout's bench/) measures both; each build's
    ``ridercrm`` comes from its own src/, and so do the ``ridercrm`` commands it starts.
    ``in_checkout``: run in the build's checkout (for what reads files relative to it)."""
    previous: Path | None = getattr(args, "previous", None)  # a subcommand may not take it
    if previous is None:
        return None
    argv = _without_previous(sys.argv[1:])
    if "--write" in argv:
        raise HarnessError("--write and --previous: write the section from one build's run")
    builds: dict[str, tuple[Path, dict[str, str]]] = {}
    for label, root in (("this", ROOT), ("previous", previous.resolve())):
        env = previous_build_env(root)
        env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(ROOT)])
        builds[label] = (root, env)
    outputs: dict[str, list[list[str]]] = {label: [] for label in builds}
    status = 0
    for n in range(args.previous_rounds):
        order = list(builds) if n % 2 == 0 else list(reversed(builds))
        for label in order:
            root, env = builds[label]
            started = time.monotonic()
            done = subprocess.run(
                [sys.executable, "-c", _CHILD, module, *argv],
                cwd=root if in_checkout else ROOT,
                env=env,
                stdout=subprocess.PIPE,
                text=True,
                check=False,
            )
            status = max(status, done.returncode)
            outputs[label].append(done.stdout.splitlines())
            print(
                f"round {n + 1}/{args.previous_rounds}, {label} build ({root.name}):"
                f" {time.monotonic() - started:.1f} s, exit {done.returncode}",
                file=sys.stderr,
                flush=True,
            )
    merged = {
        f"{label} ({_commit(root)})": _median_lines(outputs[label])
        for label, (root, _) in builds.items()
    }
    rounds = f"{args.previous_rounds} runs each, alternated, numbers medians of the runs"
    print(f"{' and '.join(merged)}: {rounds if args.previous_rounds > 1 else 'one run each'};")
    print("a line both builds printed alike is shown once")
    print("\n".join(side_by_side(merged)))
    return status


def _commit(root: Path) -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or "unknown"
