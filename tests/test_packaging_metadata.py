"""Every package's wheel and sdist carry the MIT LICENSE and an index page's classifiers.

Built with ``uv build`` as a release would be: the LICENSE (the repository's, copied
into each package folder, since a license file must lie inside the package) is in the
wheel's ``.dist-info/licenses/`` and at the top of the sdist, named by ``License-File``
beside ``License-Expression: MIT``; the classifiers give the status, the Python versions
of ``requires-python`` and the operating system (Linux where the package needs its
namespaces: sandbox, envs, benchmarks).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from email.message import Message
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = sorted(p.name for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").exists())
LINUX_ONLY = {"hermes-sandbox", "hermes-envs", "hermes-benchmarks"}
LICENSE = (ROOT / "LICENSE").read_text()


def _uv() -> str:
    found = os.environ.get("UV") or shutil.which("uv")
    if not found:
        pytest.skip("uv is not available to build the packages (run the tests through ./dev test)")
    return found


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [_uv(), "build", "--all-packages", "--out-dir", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    return out


def _built(dist: Path, package: str, suffix: str) -> Path:
    (found,) = dist.glob(f"{package.replace('-', '_')}-*{suffix}")
    return found


def _wheel(dist: Path, package: str) -> tuple[Message, dict[str, str]]:
    """The wheel's METADATA and its license files (path -> text)."""
    with zipfile.ZipFile(_built(dist, package, ".whl")) as archive:
        names = archive.namelist()
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        licenses = {n: archive.read(n).decode() for n in names if ".dist-info/licenses/" in n}
        return Parser().parsestr(archive.read(metadata).decode()), licenses


def _sdist(dist: Path, package: str) -> tuple[Message, dict[str, str]]:
    """The sdist's PKG-INFO and its top-level LICENSE files (path -> text)."""
    with tarfile.open(_built(dist, package, ".tar.gz")) as archive:
        names = archive.getnames()
        (info,) = [n for n in names if n.count("/") == 1 and n.endswith("/PKG-INFO")]

        def text(name: str) -> str:
            member = archive.extractfile(name)
            assert member is not None
            return member.read().decode()

        top = {n: text(n) for n in names if n.count("/") == 1 and n.endswith("/LICENSE")}
        return Parser().parsestr(text(info)), top


def test_every_package_ships_the_repository_license() -> None:
    assert LICENSE.startswith("MIT License\n")
    for package in PACKAGES:
        assert (ROOT / "packages" / package / "LICENSE").read_text() == LICENSE, package
        project = tomllib.loads((ROOT / "packages" / package / "pyproject.toml").read_text())
        assert project["project"]["license"] == "MIT"
        assert project["project"]["license-files"] == ["LICENSE"]


@pytest.mark.parametrize("package", PACKAGES)
def test_wheel_and_sdist_hold_the_license(dist: Path, package: str) -> None:
    for metadata, licenses in (_wheel(dist, package), _sdist(dist, package)):
        assert metadata["License-Expression"] == "MIT"
        assert metadata.get_all("License-File") == ["LICENSE"]
        assert list(licenses.values()) == [LICENSE], sorted(licenses)


def _minors(requires: str, versions: list[str]) -> tuple[list[int], list[int]]:
    """The classifiers' minor versions, and the run from requires-python's lowest one
    to the highest classified (what the classifiers must be: no gap, no version below)."""
    match = re.fullmatch(r">=3\.(\d+)", requires)
    assert match, f"requires-python {requires!r} is not of the form >=3.N"
    minors = [int(version.split(".")[1]) for version in versions]
    return minors, list(range(int(match.group(1)), max(minors, default=0) + 1))


@pytest.mark.parametrize("package", PACKAGES)
def test_classifiers_say_status_python_and_os(dist: Path, package: str) -> None:
    metadata, _ = _wheel(dist, package)
    sdist_metadata, _ = _sdist(dist, package)
    classifiers = metadata.get_all("Classifier") or []
    assert (sdist_metadata.get_all("Classifier") or []) == classifiers
    assert sum(c.startswith("Development Status :: ") for c in classifiers) == 1
    requires = metadata["Requires-Python"]
    versions = [
        c.removeprefix("Programming Language :: Python :: ")
        for c in classifiers
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    ]
    classified, expected_run = _minors(requires, versions)
    assert classified == expected_run
    assert f"{sys.version_info.major}.{sys.version_info.minor}" in versions
    assert "Programming Language :: Python :: 3 :: Only" in classifiers
    systems = [c for c in classifiers if c.startswith("Operating System :: ")]
    expected = "POSIX :: Linux" if package in LINUX_ONLY else "OS Independent"
    assert systems == [f"Operating System :: {expected}"]
    assert "Typing :: Typed" in classifiers
    # A license expression replaces the deprecated license classifiers (PEP 639).
    assert not [c for c in classifiers if c.startswith("License :: ")]
