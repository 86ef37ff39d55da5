"""The package metadata installs without deprecation warnings."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_license_is_an_spdx_string_with_a_setuptools_that_reads_it() -> None:
    """A TOML table as ``project.license`` makes setuptools >= 77 warn three times per
    install; the SPDX string form needs setuptools 77 or later to build."""
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    assert isinstance(config["project"]["license"], str)
    requires = config["build-system"]["requires"]
    setuptools = next(r for r in requires if r.startswith("setuptools"))
    found = re.fullmatch(r"setuptools>=(\d+)(\.\d+)*", setuptools)
    assert found, setuptools
    assert int(found.group(1)) >= 77
