"""Docstrings and comments cite docs/decisions.md by section title; each title must exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CITATION = re.compile(r'docs/decisions\.md, ((?:"[^"]+"(?:, )?)+)')


def test_every_cited_decision_section_exists() -> None:
    headings = {
        line.removeprefix("## ").strip()
        for line in (ROOT / "docs" / "decisions.md").read_text().splitlines()
        if line.startswith("## ")
    }
    cited: dict[str, set[str]] = {}
    for path in (ROOT / "src" / "ridercrm").rglob("*.py"):
        for match in CITATION.finditer(path.read_text()):
            for title in re.findall(r'"([^"]+)"', match.group(1)):
                cited.setdefault(title, set()).add(str(path.relative_to(ROOT)))
    assert cited, "no citation found: the pattern no longer matches the sources"
    missing = {title: sorted(paths) for title, paths in cited.items() if title not in headings}
    assert not missing, f"sections cited but not in docs/decisions.md: {missing}"


def test_no_citation_points_outside_the_repository() -> None:
    outside = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "src" / "ridercrm").rglob("*.py")
        if re.search(r"\bDESIGN §", path.read_text())
    ]
    assert not outside
