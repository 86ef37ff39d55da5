"""CSV injection (OWASP): a cell a spreadsheet would read as a formula is written quoted.

A cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is run as a
formula by Excel, LibreOffice and Google Sheets when an operator opens the export; the
`people` and `courses` keys can store such values (a first name ``=HYPERLINK(...)``). The
export writes such a cell with an apostrophe in front, which spreadsheets show as text
and never run (https://owasp.org/www-community/attacks/CSV_Injection). The import takes
the apostrophe off again, so an export still reads back unchanged: a cell that begins
with an apostrophe followed by one of those characters (or by another apostrophe) is
always one the export quoted, because the export quotes such a value too.
"""

from __future__ import annotations

import re

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
QUOTE = "'"
_QUOTED_STARTS = (*FORMULA_STARTS, QUOTE)


def neutralise(text: str) -> str:
    """``text`` as a cell no spreadsheet runs as a formula (import reads back ``text``)."""
    if text.startswith(FORMULA_STARTS) or (text.startswith(QUOTE) and text[1:2] in _QUOTED_STARTS):
        return QUOTE + text
    return text


def restore(cell: str) -> str:
    """The value an exported ``cell`` stands for (undoes :func:`neutralise`)."""
    if cell.startswith(QUOTE) and cell[1:2] and cell[1:2] in _QUOTED_STARTS:
        return cell[1:]
    return cell


# Australian exports (Excel, MYOB, most local CRMs) write dates day first: 21/07/2004.
_DAY_FIRST = re.compile(r"^\s*(\d{1,2})[/.](\d{1,2})[/.](\d{4})\s*$")


def iso_date(cell: str) -> str:
    """A date cell written DD/MM/YYYY (or DD.MM.YYYY) as YYYY-MM-DD, as the console's
    search reads it; any other text unchanged, for the field's own rule to judge."""
    found = _DAY_FIRST.match(cell)
    if found is None:
        return cell
    day, month, year = found.groups()
    return f"{year}-{int(month):02d}-{int(day):02d}"
