"""Each package's version lives in one place: ``__version__``, which the build reads."""

from __future__ import annotations

import importlib
import importlib.metadata
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = sorted(p.name for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").exists())


@pytest.mark.parametrize("package", PACKAGES)
def test_the_version_lives_in_the_package_only(package: str) -> None:
    project = tomllib.loads((ROOT / "packages" / package / "pyproject.toml").read_text())
    module = package.replace("-", "_")
    assert "version" not in project["project"], "the version belongs in __version__ only"
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["hatch"]["version"]["path"] == f"src/{module}/__init__.py"
    installed = importlib.metadata.version(package)
    assert importlib.import_module(module).__version__ == installed
