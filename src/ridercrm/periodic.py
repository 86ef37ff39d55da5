"""Work that a process repeats every few seconds in a background thread of its own.

`serve` runs three such rounds beside the server (the waiting list's timer, the
duplicates re-check, the weekly counts' fold), and `ridercrm deliver` runs the first.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable


def every(
    seconds: float,
    work: Callable[[threading.Event], object],
    *,
    name: str,
    log: logging.Logger,
    failure: str,
) -> Callable[[], None]:
    """Run ``work`` every ``seconds`` in a daemon thread named ``name``; return its stop.

    ``work`` gets the stop event, so a long round can end early. A round that fails is
    logged (``failure``) and the next one tries again: what it had to do is still there.
    The stop waits up to 30 s for a round in progress.
    """
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(seconds):
            try:
                work(stop)
            except Exception:
                log.exception(failure)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()

    def stop_it() -> None:
        stop.set()
        thread.join(timeout=30)

    return stop_it
