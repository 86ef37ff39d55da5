"""FEBRL benchmark: public data we did not write, loaded by `ridercrm import`, asked over HTTP.

Run from the repository root (needs the `bench` extra: `pip install -e '.[dev,bench]'`):

    .venv/bin/python -m bench.matching.febrl                      # FEBRL 1, 2 and 3
    .venv/bin/python -m bench.matching.febrl --previous OLD/ridercrm --write
    .venv/bin/python -m bench.matching.febrl --held-out           # FEBRL 4, once, at the end

For each data set (``febrl_data.py`` says how the store and the queries are made): a
fresh SQLite database per matcher, the originals imported with ``ridercrm import
contacts`` (refused rows are counted), ``ridercrm serve`` on 127.0.0.1, every query sent
to ``POST /crm/people/match`` twice -- with the licence (``drivers_license`` =
``soc_sec_id``) and without. ``--previous`` names a checkout of the previous commit (its
src/ run with this venv: ``make bench NAME=matching.febrl ARGS="--previous DIR"``) or
another build's ``ridercrm`` command (the previous matcher, e.g. a checkout of main with
its own virtualenv), measured the same way in the same run; the CRM rule (``baseline.py``, Salesforce's standard rule) answers
in-process from the originals our import stored. Precision, recall, F1 and false
positives per data set and recall per kind of damage (``damage.py``), the household
guard's ceiling, and (``--figures``) a development report with the true record's verdict
for a sample of our misses -- never for the held-out set.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from testkit import serve

from bench import harness
from bench.matching import damage, febrl_data, febrl_report, service
from bench.matching.febrl_data import Ask, Asks, Store
from bench.matching.metrics import Score

DEV_SETS = (1, 2, 3)
HELD_OUT_SET = 4


@dataclass
class Matcher:
    """One build of ridercrm under test: its name and its command (None: this venv's),
    and what its environment adds (the previous checkout's src/ on PYTHONPATH)."""

    name: str
    command: str | None
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Answers:
    """One matcher's answers on one data set."""

    stored: set[str] = field(default_factory=set)  # rec-N-org the import accepted
    refused: dict[str, str] = field(default_factory=dict)  # rec-N-org -> the import's reason
    by_run: dict[str, dict[int, str | None]] = field(default_factory=dict)  # run -> answers
    explained: dict[str, dict[int, Any]] = field(default_factory=dict)  # run -> explanations
    problems: int = 0
    seconds: float = 0.0


@dataclass
class DataSetResult:
    number: int
    originals: int
    duplicates: int
    store: Store
    asks: Asks
    answers: dict[str, Answers]  # matcher name -> answers
    baseline: dict[int, str | None]

    def expected(self, ask: Ask, matcher: str) -> tuple[bool, str | None]:
        """(asked, expected id) of one query for one matcher: a duplicate whose original
        that matcher's import refused is left out of its figures."""
        if ask.stranger:
            return True, None
        if ask.original not in self.answers[matcher].stored:
            return False, None
        return True, self.store.ids[ask.original]


RUNS = ("licence", "no licence")


def log(message: str) -> None:
    print(f"[febrl] {message}", file=sys.stderr, flush=True)


def import_store(store: Store, directory: Path, env: dict[str, str], command: str | None) -> Any:
    """Import the originals; (stored rec ids, refused rec id -> reason)."""
    import subprocess

    path = directory / "contacts.csv"
    store.write(path)
    done = subprocess.run(
        [command or serve.ridercrm_command(), "import", "contacts", str(path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=service.COMMAND_TIMEOUT_S,
        check=False,
    )
    if done.returncode not in (0, 1):
        raise serve.BenchError(f"import failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    by_line = {line: row["id"] for line, row in enumerate(store.rows, start=2)}
    by_person = {person_id: rec_id for rec_id, person_id in store.ids.items()}
    refused: dict[str, str] = {}
    for text in (done.stdout + done.stderr).splitlines():
        if text.startswith("line ") and ":" in text:
            number, reason = text[5:].split(":", 1)
            if number.strip().isdigit() and int(number) in by_line:
                refused[by_person[by_line[int(number)]]] = reason.strip()
    stored = {rec_id for rec_id in store.ids if rec_id not in refused}
    return stored, refused


def ask_matcher(
    matcher: Matcher, store: Store, asks: Asks, directory: Path, explain: bool, train: bool
) -> Answers:
    """Load the store into a fresh database for ``matcher`` and ask every query twice."""
    result = Answers()
    started = time.perf_counter()
    env = {**service.environment(directory / "store.db"), **matcher.env}
    serve.run_cli(
        ["db", "upgrade"], env, timeout=service.COMMAND_TIMEOUT_S, command=matcher.command
    )
    result.stored, result.refused = import_store(store, directory, env, matcher.command)
    if train and matcher.name == "new":  # the previous matcher has nothing to train
        serve.run_cli(["match", "train"], env, timeout=service.COMMAND_TIMEOUT_S)
    output = serve.run_cli(
        ["keys", "create", "--name", "bench", "--scope", "admin"],
        env,
        timeout=service.COMMAND_TIMEOUT_S,
        command=matcher.command,
    )
    key = output.strip().splitlines()[-1].strip()
    port = serve.free_port()
    with serve.running_server(env, port, directory / "server.log", matcher.command) as (url, _):
        for run in RUNS:
            queries = [febrl_report.query_of(ask, None, run == "licence") for ask in asks.asks]
            answers = service.ask_all(url, key, queries)
            result.by_run[run] = answers.predictions
            result.problems += len(answers.problems)
            if explain:
                wrong = [
                    q
                    for q, ask in zip(queries, asks.asks, strict=True)
                    if (ask.stranger and answers.predictions[q.number] is not None)
                    or (
                        not ask.stranger
                        and answers.predictions[q.number] != store.ids.get(ask.original)
                    )
                ]
                result.explained[run] = service.explain(url, key, wrong)
    result.seconds = time.perf_counter() - started
    return result


def run_data_set(
    number: int, matchers: list[Matcher], seed: int, explain: bool, train: bool
) -> DataSetResult:
    originals, duplicates = febrl_data.load(number)
    store = febrl_data.make_store(originals, seed)
    asks = febrl_data.make_asks(originals, duplicates, store, seed)
    log(
        f"FEBRL {number}: {len(originals)} originals ({len(store.rows)} in the store), "
        f"{len(duplicates)} duplicates, {len(asks.asks)} queries"
    )
    answers: dict[str, Answers] = {}
    for matcher in matchers:
        with tempfile.TemporaryDirectory(prefix="ridercrm-febrl-") as tmp:
            answers[matcher.name] = ask_matcher(
                matcher, store, asks, Path(tmp), explain and matcher is matchers[0], train
            )
        got = answers[matcher.name]
        log(
            f"  {matcher.name}: stored {len(got.stored)}, refused {len(got.refused)}, "
            f"asked in {got.seconds:.0f} s, {got.problems} HTTP problems"
        )
    baseline = febrl_report.baseline_answers(store, asks, answers[matchers[0].name].stored)
    return DataSetResult(number, len(originals), len(duplicates), store, asks, answers, baseline)


def score(
    result: DataSetResult, matcher: str, predictions: dict[int, str | None]
) -> dict[str, Score]:
    """Label -> Score: "all", every kind of damage, the damaged-field counts, "stranger"."""
    scores: dict[str, Score] = {}
    for ask in result.asks.asks:
        asked, expected = result.expected(ask, matcher)
        if not asked:
            continue
        query = febrl_report.query_of(ask, expected, False)
        labels = ["all"]
        if ask.stranger:
            labels.append("stranger")
        else:
            labels += [*damage.kinds(ask.found), damage.size(ask.found)]
        for label in labels:
            scores.setdefault(label, Score()).add(query, predictions.get(ask.number))
    return scores


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.matching.febrl", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--sets", type=int, nargs="+", default=list(DEV_SETS), choices=DEV_SETS)
    parser.add_argument(
        "--held-out", action="store_true", help="FEBRL 4 instead (held out: run it once, last)"
    )
    parser.add_argument("--seed", type=int, default=20261122, help="hold-out and e-mail seed")
    parser.add_argument(
        "--previous",
        default=None,
        help="a checkout of the previous commit, or the previous build's ridercrm command",
    )
    parser.add_argument("--write", action="store_true", help="update bench/README.md")
    parser.add_argument("--figures", type=Path, default=None, help="write a development report")
    parser.add_argument("--no-explain", action="store_true", help="don't re-ask our misses")
    parser.add_argument(
        "--train", action="store_true", help="`ridercrm match train` after the import (new only)"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    matchers = [Matcher("new", None)]
    if args.previous:
        matchers.append(Matcher("previous", *harness.previous_command(args.previous)))
    sets = [HELD_OUT_SET] if args.held_out else args.sets
    explain = not args.no_explain and not args.held_out
    results = [run_data_set(n, matchers, args.seed, explain, args.train) for n in sets]
    text = febrl_report.markdown(results, matchers, score, args)
    print(text)
    if args.figures and not args.held_out:
        args.figures.write_text(text + "\n\n" + febrl_report.misses(results, score), "utf-8")
        log(f"wrote {args.figures}")
    if args.write:
        febrl_report.write_readme(text, held_out=args.held_out)


if __name__ == "__main__":
    main()
