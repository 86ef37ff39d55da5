"""Structured logs: one JSON object per line, and never personal data.

Personal data lives in the audit trail only; log lines carry ids, operations,
statuses and timings. Tracebacks keep their frames but name each exception by its
type alone: the messages of database errors quote the values being written
(SQLAlchemy adds ``[parameters: ...]``, PostgreSQL a ``DETAIL: Key (email)=(...)``).
"""

from __future__ import annotations

import json
import logging
import traceback
from typing import Any

_STANDARD = set(vars(logging.makeLogRecord({})))


def safe_traceback(error: BaseException) -> list[str]:
    """The traceback lines of ``error`` and of the exceptions it came from, oldest
    first as Python prints them, with every exception's message left out."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        if current.__cause__ is not None:
            current = current.__cause__
        elif current.__suppress_context__:
            current = None
        else:
            current = current.__context__
    lines: list[str] = []
    for index, item in enumerate(reversed(chain)):
        if index:
            lines += ["", "The above exception led to the following exception:", ""]
        lines.append("Traceback (most recent call last):")
        for entry in traceback.format_tb(item.__traceback__):
            lines.extend(entry.rstrip("\n").splitlines())
        kind = type(item)
        lines.append(f"{kind.__module__}.{kind.__qualname__} (message not logged)")
    return lines


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
            entry["error"] = type(record.exc_info[1]).__name__
            entry["traceback"] = safe_traceback(record.exc_info[1])
        return json.dumps(entry, default=str)


class PlainFormatter(logging.Formatter):
    """Plain text lines, with the same message-free tracebacks as the JSON lines."""

    def formatException(self, ei: Any) -> str:
        error = ei[1] if ei else None
        return "\n".join(safe_traceback(error)) if error is not None else ""

    def format(self, record: logging.LogRecord) -> str:
        # A handler elsewhere may have cached the full traceback text on the record.
        cached, record.exc_text = record.exc_text, None
        try:
            return super().format(record)
        finally:
            record.exc_text = cached


def configure_logging(level: str = "INFO", *, as_json: bool = True) -> None:
    handler = logging.StreamHandler()
    if as_json:
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(PlainFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger("ridercrm")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
