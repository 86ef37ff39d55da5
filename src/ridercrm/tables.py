"""Tables the commands print: readable by people, whole in any output.

On a terminal a table is drawn with Rich, and a cell too wide for the terminal wraps
onto more lines instead of being cut off with an ellipsis. Anywhere else (a pipe, a
file, a narrow CI log) it is plain text in aligned columns, never truncated, so
``grep`` and ``awk`` see every name whole. ``--json`` is the form for programs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table


def print_table(
    console: Console, columns: Sequence[str], rows: Sequence[Sequence[Any]], *, title: str = ""
) -> None:
    """Print ``rows`` under ``columns``: Rich on a terminal, aligned plain text elsewhere."""
    cells = [["" if value is None else str(value) for value in row] for row in rows]
    if console.is_terminal:
        table = Table(*columns, title=title or None, title_justify="left")
        for column in table.columns:
            column.overflow = "fold"
        for row in cells:
            table.add_row(*row)
        console.print(table)
        return
    widths = [max([len(name), *(len(row[i]) for row in cells)]) for i, name in enumerate(columns)]
    lines = [title] if title else []
    for row in [list(columns), *cells]:
        lines.append(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )
    console.out("\n".join(lines), highlight=False)


def print_json(console: Console, value: Any) -> None:
    """``value`` as indented JSON, for programs (``--json``)."""
    console.out(json.dumps(value, indent=2, default=str, ensure_ascii=False), highlight=False)
