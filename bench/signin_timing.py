"""Console sign-in answer times: an unknown name, a known name with a wrong password, and
a name locked for the client's address (issue 26, item 15: a locked name must not answer
faster than the others, or its time tells that the name exists).

In-process (Starlette's TestClient) on a fresh SQLite store with the per-address bound
off; the three kinds are interleaved, each timed as wall milliseconds of one POST.

    make bench NAME=signin_timing ARGS="--rounds 15 [--previous DIR]"

``--previous DIR``: a checkout of the previous commit; both builds' medians side by side.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fastapi.testclient import TestClient
from sqlalchemy import create_engine

from bench import harness
from bench.report import code_version
from ridercrm.app import create_app
from ridercrm.config import Settings
from ridercrm.db import session_factory, session_scope
from ridercrm.migrate import upgrade
from ridercrm.staff import service


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    harness.add_previous(parser)
    args = parser.parse_args()
    if (status := harness.compare_with_previous(args, "bench.signin_timing")) is not None:
        raise SystemExit(status)
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(
            database_url=f"sqlite:///{folder}/store.sqlite3",
            refused_rate_limit="off",
            rate_limit="off",
            console_lockout_attempts=args.rounds + 2,  # known stays open
        )
        engine = create_engine(settings.database_url)
        upgrade(engine)
        engine.dispose()
        app = create_app(settings)
        with session_scope(session_factory(app.state.context.engine), write=True) as session:
            service.create_user(session, name="locked", role="staff", password="x" * 16)
            service.create_user(session, name="known", role="staff", password="x" * 16)
        with TestClient(app) as client:
            page = client.get("/console/login").text
            found = re.search(r'name="csrf" value="([^"]+)"', page)
            assert found, page
            token = found.group(1)

            def attempt(name: str) -> tuple[float, str]:
                form = {"csrf": token, "username": name, "password": "a guess, not it"}
                started = time.perf_counter()
                answer = client.post("/console/login", data=form)
                return (time.perf_counter() - started) * 1000, answer.text

            for _ in range(args.rounds + 2):
                attempt("locked")
            assert "locked until" in attempt("locked")[1]
            times: dict[str, list[float]] = {"unknown": [], "known": [], "locked": []}
            for _ in range(args.rounds):
                for name in times:
                    elapsed, text = attempt("nobody" if name == "unknown" else name)
                    assert ("locked until" in text) == (name == "locked"), text
                    times[name].append(elapsed)
        app.state.context.engine.dispose()
    print(f"code {code_version()}, {args.rounds} rounds, interleaved")
    for name, values in times.items():
        print(f"{name:8} median {statistics.median(values):7.1f} ms")


if __name__ == "__main__":
    main()
