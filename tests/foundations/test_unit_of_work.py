"""The unit of work is registered on the factories that ask for it, never at import."""

from __future__ import annotations

import json
import subprocess
import sys

from sqlalchemy import event
from sqlalchemy.orm import Session

from ridercrm import unit_of_work

# Imports every module of ridercrm (the migrations and ``__main__`` aside, which run
# something when imported), then counts the listeners a plain Session has, by event.
_IMPORT_ALL = """
import importlib, json, pkgutil
import ridercrm
from sqlalchemy.orm import Session
for found in pkgutil.walk_packages(ridercrm.__path__, "ridercrm."):
    if found.name.endswith("__main__") or ".migrations" in found.name:
        continue
    importlib.import_module(found.name)
session = Session()
counts = {name: len(getattr(session.dispatch, name)) for name in session.dispatch._event_names}
print(json.dumps({name: count for name, count in counts.items() if count}))
"""


def test_importing_ridercrm_registers_no_listener_on_session() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_ALL], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {}
    # Nor in this process, which has built apps and factories by now.
    for name, listener in (
        ("after_transaction_create", unit_of_work._mark_savepoint),
        ("after_transaction_end", unit_of_work._end),
        ("after_soft_rollback", unit_of_work._drop_rolled_back),
        ("before_commit", unit_of_work._write),
    ):
        assert not event.contains(Session, name, listener), name
