"""What every benchmark's report needs: the machine, the code measured, its README section."""

from __future__ import annotations

import contextlib
import os
import platform
import re
import sqlite3
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "bench" / "README.md"
NOTES = "### Notes"  # a hand-written subsection at the end of a section, kept by write_section


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        found = re.search(
            r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(), re.MULTILINE
        )
        if found:
            return found.group(1).strip()
    return platform.processor() or "unknown"


def machine() -> dict[str, str]:
    return {
        "nproc": str(os.cpu_count()),
        "cpu": cpu_model(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "system": f"{platform.system()} {platform.release()}",
    }


def code_version() -> str:
    """The commit of the ridercrm measured (the first on $PYTHONPATH, else this
    checkout's), and whether its src/ had uncommitted changes (others work in this tree)."""
    root = ROOT
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if entry and (Path(entry) / "ridercrm").is_dir():
            root = Path(entry).resolve().parent
            break

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--", "src")
    except (OSError, subprocess.SubprocessError):
        return "unknown (not a git checkout)"
    return f"commit {head}" + (" with uncommitted changes in src/" if dirty else "")


def write_section(text: str, readme: Path = README) -> None:
    """Put ``text``, which starts with its ``## `` heading, in place of that section of
    ``readme`` (re-read just before writing), or append it. Every other section is left
    alone, and so is a hand-written ``### Notes`` subsection at the end of the old one."""
    heading = text.split("\n", 1)[0]
    current = readme.read_text(encoding="utf-8") if readme.exists() else "# Benchmarks\n"
    pattern = re.compile(rf"^{re.escape(heading)}\n.*?(?=^## |\Z)", re.MULTILINE | re.DOTALL)
    found = pattern.search(current)
    if found is None:
        updated = current.rstrip("\n") + "\n\n" + text.rstrip("\n") + "\n"
    else:
        old = found.group(0)
        notes = old.find("\n" + NOTES)
        kept = old[notes:].strip("\n") if notes >= 0 else ""
        new = text.rstrip("\n") + ("\n\n" + kept if kept else "") + "\n\n"
        updated = current[: found.start()] + new + current[found.end() :]
    readme.write_text(updated.rstrip("\n") + "\n", encoding="utf-8")
