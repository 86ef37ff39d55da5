"""API writes while console sign-in guesses stream in, on SQLite (security, third round).

One `ridercrm serve` on a fresh SQLite store. Threads of this process post sign-in
attempts with an unknown name, without pause and without the per-address bound
(RIDERCRM_REFUSED_RATE_LIMIT off, as if from as many addresses as threads), while this
process creates contacts through the admin API one after another; each write's wall
time is measured, in milliseconds.

    .venv/bin/python -m bench.signin_guess_bench --guessers 2 --writes 40

Another build: ``PYTHONPATH=<export>/src`` (the server runs with this environment).
Before the fix each guess held SQLite's write turn for its Argon2 check, so a write
waited behind the guesses queued before it.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
from testkit.factories import person_body
from testkit.serve import free_port, run_cli, running_server

from bench.match_perf import percentile


def guess(base: str, stop: threading.Event, answered: list[int]) -> None:
    with httpx.Client(base_url=base, timeout=60) as client:
        page = client.get("/console/login").text
        token = re.search(r'name="csrf" value="([^"]+)"', page)
        assert token, page
        form = {"csrf": token.group(1), "username": "nobody", "password": "a guess, not it"}
        while not stop.is_set():
            answered.append(client.post("/console/login", data=form).status_code)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--guessers", type=int, default=2)
    parser.add_argument("--writes", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        env = {
            **os.environ,
            "RIDERCRM_DATABASE_URL": f"sqlite:///{folder}/store.sqlite3",
            "RIDERCRM_REFUSED_RATE_LIMIT": "off",
            "RIDERCRM_RATE_LIMIT": "off",
            "RIDERCRM_CONSOLE_ADMIN_FILE": f"{folder}/admin.txt",
        }
        run_cli(["db", "upgrade"], env, timeout=120)
        created = run_cli(
            ["keys", "create", "--name", "bench", "--scope", "admin"], env, timeout=60
        )
        key = created.strip().splitlines()[-1]
        log = Path(folder) / "server.log"
        with running_server(env, free_port(), log) as (base, _pid):
            stop = threading.Event()
            answered: list[int] = []
            threads = [
                threading.Thread(target=guess, args=(base, stop, answered))
                for _ in range(args.guessers)
            ]
            for thread in threads:
                thread.start()
            time.sleep(2)  # the guesses under way
            times = []
            with httpx.Client(base_url=base, timeout=60) as api:
                headers = {"Authorization": f"Bearer {key}"}
                for n in range(args.writes):
                    body = person_body(email=f"p{n}@example.com")
                    started = time.perf_counter()
                    answer = api.post("/admin/contacts", json=body, headers=headers)
                    times.append((time.perf_counter() - started) * 1000)
                    assert answer.status_code == 201, answer.text
            stop.set()
            for thread in threads:
                thread.join()
    print(
        f"guessers {args.guessers}, writes {args.writes}: median"
        f" {statistics.median(times):.0f} ms, p90 {percentile(times, 0.9):.0f} ms,"
        f" max {max(times):.0f} ms; {len(answered)} guesses answered {sorted(set(answered))}"
    )


if __name__ == "__main__":
    main()
