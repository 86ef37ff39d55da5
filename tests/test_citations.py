"""Docstrings and comments cite docs/decisions.md by section title; each title must exist.

Sources, tests, benchmarks and testkit alike: none cites a file outside the repository
(the design notes it was built from, "DESIGN §n").
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("src/ridercrm", "tests", "bench", "testkit")
THIS = Path(__file__).resolve()
CITATION = re.compile(r'docs/decisions\.md, ((?:"[^"]+"(?:, )?)+)')


def sources() -> list[Path]:
    return [path for top in SOURCES for path in (ROOT / top).rglob("*.py") if path != THIS]


def test_every_cited_decision_section_exists() -> None:
    headings = {
        line.removeprefix("## ").strip()
        for line in (ROOT / "docs" / "decisions.md").read_text().splitlines()
        if line.startswith("## ")
    }
    cited: dict[str, set[str]] = {}
    for path in sources():
        for match in CITATION.finditer(path.read_text()):
            for title in re.findall(r'"([^"]+)"', match.group(1)):
                cited.setdefault(title, set()).add(str(path.relative_to(ROOT)))
    assert cited, "no citation found: the pattern no longer matches the sources"
    missing = {title: sorted(paths) for title, paths in cited.items() if title not in headings}
    assert not missing, f"sections cited but not in docs/decisions.md: {missing}"


def test_no_citation_points_outside_the_repository() -> None:
    outside = [
        str(path.relative_to(ROOT))
        for path in sources()
        if re.search(r"\bDESIGN §|\binterface §", path.read_text())
    ]
    assert not outside
