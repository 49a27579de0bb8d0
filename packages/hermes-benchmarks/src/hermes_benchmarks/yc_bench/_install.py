"""Where the ``yc-bench`` command comes from: its own Python >= 3.12 environment.

yc-bench needs Python 3.12 or newer while the harness may run on 3.11, so the simulation
never shares the harness's interpreter. The agent's sandbox gets the folder holding
``yc-bench`` (and the ``python`` beside it) first on its ``PATH``. That folder is, in
order:

1. ``yc_bench_command``: an existing ``yc-bench`` executable (a path, or a name on
   ``PATH``), with the Python of its environment beside it;
2. else a virtual environment made once (and reused) in ``yc_bench_venv`` from
   ``yc_bench_python`` (or the first Python >= 3.12 found: ``python3.12``..``python3.14``
   on ``PATH``, then pyenv's versions), with ``yc-bench==<version>`` installed into it by
   ``uv`` when one is found, else by ``pip``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from hermes_benchmarks._errors import HermesBenchmarksError

__all__ = [
    "MIN_PYTHON",
    "YC_BENCH_VERSION",
    "YCBenchInstall",
    "YCBenchMissingError",
    "default_venv_dir",
    "ensure_yc_bench",
    "find_python",
    "python_version",
]

#: The yc-bench release the suite is written against.
YC_BENCH_VERSION = "0.1.0"
#: The oldest Python yc-bench runs on.
MIN_PYTHON = (3, 12)
_CANDIDATES = ("python3.12", "python3.13", "python3.14")


class YCBenchMissingError(HermesBenchmarksError):
    """No usable yc-bench: no Python >= 3.12, a failed install, or a broken command."""


@dataclass(frozen=True)
class YCBenchInstall:
    """A usable yc-bench: the folder holding ``yc-bench`` and its ``python``."""

    bin_dir: Path

    @property
    def command(self) -> Path:
        """The ``yc-bench`` executable."""
        return self.bin_dir / "yc-bench"

    @property
    def python(self) -> Path:
        """The Python of yc-bench's environment."""
        return self.bin_dir / "python"


def python_version(python: str | os.PathLike[str]) -> tuple[int, int] | None:
    """``(major, minor)`` of the interpreter ``python``, or None when it does not run."""
    try:
        done = subprocess.run(
            [os.fspath(python), "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    parts = done.stdout.split()
    if done.returncode != 0 or len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1])


def find_python(pyenv_root: Path | None = None) -> Path | None:
    """The first Python >= 3.12 on this machine, or None. Blocking.

    Looks for ``python3.12``, ``python3.13``, ``python3.14`` on ``PATH``, then in
    ``pyenv_root/versions/*/bin`` (default ``$PYENV_ROOT`` or ``~/.pyenv``).
    """
    for name in _CANDIDATES:
        found = shutil.which(name)
        if found and (python_version(found) or (0, 0)) >= MIN_PYTHON:
            return Path(found)
    root = pyenv_root or Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    for version_dir in sorted((root / "versions").glob("3.*"), reverse=True):
        python = version_dir / "bin" / "python3"
        if python.exists() and (python_version(python) or (0, 0)) >= MIN_PYTHON:
            return python
    return None


def default_venv_dir(version: str = YC_BENCH_VERSION) -> Path:
    """``~/.cache/hermes-benchmarks/yc-bench-<version>`` (``$XDG_CACHE_HOME`` respected)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "hermes-benchmarks" / f"yc-bench-{version}"


def _from_command(command: str) -> YCBenchInstall:
    found = shutil.which(command)
    if found is None:
        raise YCBenchMissingError(
            f"yc_bench_command {command!r} is not an executable (nor a name on PATH); "
            "point --env.yc_bench_command at the yc-bench of a Python >= 3.12 environment"
        )
    install = YCBenchInstall(Path(found).resolve().parent)
    if not install.python.exists():
        raise YCBenchMissingError(
            f"yc_bench_command {found}: no python beside it in {install.bin_dir}; install "
            "yc-bench into a virtual environment and point at its bin/yc-bench"
        )
    return install


def _run(argv: list[str], what: str, timeout: float) -> None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError) as error:
        raise YCBenchMissingError(f"{what} failed: {error}") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise YCBenchMissingError(f"{what} failed (exit {done.returncode}): {tail[0]}")


def _works(install: YCBenchInstall) -> bool:
    if not install.command.exists():
        return False
    done = subprocess.run(
        [os.fspath(install.command), "--help"],
        capture_output=True,
        timeout=120,
        check=False,
    )
    return done.returncode == 0


def ensure_yc_bench(
    *,
    command: str | None = None,
    python: str | None = None,
    venv_dir: str | os.PathLike[str] | None = None,
    version: str = YC_BENCH_VERSION,
    uv: str | None = "uv",
    install_timeout: float = 900.0,
) -> YCBenchInstall:
    """A working yc-bench (see the module's docstring for the order). Blocking.

    Raises:
        YCBenchMissingError: ``command`` is not an executable with a python beside it;
            no Python >= 3.12 was given or found (the message names
            ``--env.yc_bench_python`` and ``--env.yc_bench_command``); the given python
            is older; or making the environment or installing yc-bench failed.
    """
    if command:
        return _from_command(command)
    venv = Path(venv_dir) if venv_dir else default_venv_dir(version)
    install = YCBenchInstall(venv / "bin")
    if _works(install):
        return install
    chosen = Path(python) if python else find_python()
    if chosen is None:
        raise YCBenchMissingError(
            "yc-bench needs Python >= 3.12 and none was found (python3.12..3.14 on PATH, "
            "~/.pyenv/versions); pass --env.yc_bench_python PATH, or --env.yc_bench_command "
            "pointing at an installed yc-bench"
        )
    found = python_version(chosen)
    if found is None or found < MIN_PYTHON:
        shown = "does not run" if found is None else f"is Python {found[0]}.{found[1]}"
        raise YCBenchMissingError(
            f"yc_bench_python {chosen} {shown}; yc-bench needs Python >= 3.12"
        )
    uv_path = shutil.which(uv) if uv else None
    spec = f"yc-bench=={version}"
    if uv_path:
        _run([uv_path, "venv", "-q", "-p", os.fspath(chosen), os.fspath(venv)], "uv venv", 300)
        _run(
            [uv_path, "pip", "install", "-q", "--python", os.fspath(install.python), spec],
            f"installing {spec} with uv",
            install_timeout,
        )
    else:
        _run([os.fspath(chosen), "-m", "venv", "--clear", os.fspath(venv)], "python -m venv", 300)
        _run(
            [os.fspath(install.python), "-m", "pip", "install", "-q", spec],
            f"installing {spec} with pip",
            install_timeout,
        )
    if not _works(install):
        raise YCBenchMissingError(f"{install.command} does not run after installing {spec}")
    return install
