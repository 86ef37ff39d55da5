"""Structured logs: one JSON object per line, and never personal data.

Personal data lives in the audit trail only; log lines carry ids, operations,
statuses and timings.
"""

from __future__ import annotations

import json
import logging
from typing import Any

_STANDARD = set(vars(logging.makeLogRecord({})))


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        entry.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
        if record.exc_info and record.exc_info[1] is not None:
            # The traceback's frames, not the exception's message: messages of
            # database errors quote the values that were being written.
            entry["error"] = type(record.exc_info[1]).__name__
            entry["traceback"] = self.formatException(record.exc_info).splitlines()[:-1]
        return json.dumps(entry, default=str)


def configure_logging(level: str = "INFO", *, as_json: bool = True) -> None:
    handler = logging.StreamHandler()
    if as_json:
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger("ridercrm")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
