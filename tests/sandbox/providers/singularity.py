"""Conformance provider for the ``singularity`` backend, run through the recording
apptainer stand-in (tests/sandbox/fakes/apptainer_standin.py).

``StandIn`` writes a config file and a two-line shim executable into a directory; the
shim's path goes to the backend as ``binary``. Nothing is put on PATH and the test
process's environment is not touched. Each sandbox gets its own workdir under
``bind_root`` (the stand-in emulates a bind with a symlink, so destinations must differ).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import pathlib
import shlex
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from hermes_sandbox import Sandbox, create_sandbox

NAME = "singularity"
STANDIN_SCRIPT = pathlib.Path(__file__).resolve().parent.parent / "fakes" / "apptainer_standin.py"
# host_paths: the stand-in runs commands on this host (a bind is a symlink), so sandbox
# paths are host paths. session_escape: children that call setsid die at the timeout
# (environment marker sweep). Not declared: process_limit and network_off. The backend
# asks for them (--pids-limit, --net --network none; test_singularity.py checks the
# flags), but enforcing them is apptainer's job, which a stand-in without namespaces and
# cgroups cannot do; only a real apptainer (the live test) shows them.
CAPS = {"concurrency_64", "host_paths", "session_escape"}


def unavailable() -> str | None:
    """Why the stand-in cannot run here, or None."""
    if not STANDIN_SCRIPT.is_file():
        return f"the apptainer stand-in is missing: {STANDIN_SCRIPT}"
    if not pathlib.Path("/proc/self/stat").exists():
        return "the apptainer stand-in needs /proc (Linux)"
    return None


class StandIn:
    """A configured apptainer stand-in living in ``directory``."""

    def __init__(self, directory: pathlib.Path) -> None:
        self.directory = directory
        self.state_dir = directory / "instances"
        self.log = directory / "calls.jsonl"
        self.bind_root = directory / "container"
        self.host_dir = directory / "host"
        self.image = directory / "image.sif"
        self.binary = directory / "bin" / "apptainer"

    def install(self) -> StandIn:
        """Write the config, the shim and a placeholder image."""
        for path in (self.state_dir, self.bind_root, self.host_dir, self.binary.parent):
            path.mkdir(parents=True, exist_ok=True)
        config = self.directory / "standin.json"
        config.write_text(
            json.dumps(
                {
                    "state_dir": str(self.state_dir),
                    "log": str(self.log),
                    "bind_root": str(self.bind_root),
                }
            )
        )
        self.image.write_bytes(b"stand-in image\n")
        self.binary.write_text(
            "#!/bin/sh\n"
            f"exec {shlex.quote(sys.executable)} {shlex.quote(str(STANDIN_SCRIPT))} "
            f'--standin-config {shlex.quote(str(config))} "$@"\n'
        )
        self.binary.chmod(0o755)
        return self

    def options(self, **overrides: Any) -> dict[str, Any]:
        """``create_sandbox("singularity", ...)`` options that use this stand-in."""
        return {
            "binary": str(self.binary),
            "image": str(self.image),
            "workdir": str(self.bind_root / uuid.uuid4().hex[:12] / "workspace"),
            "host_dir": str(self.host_dir),
            **overrides,
        }

    def calls(self) -> list[dict[str, Any]]:
        """The recorded invocations (argv and environment variable names)."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line]

    def instances(self) -> list[str]:
        """Instances that are still running."""
        return sorted(p.name for p in self.state_dir.iterdir()) if self.state_dir.exists() else []

    def leftovers(self) -> list[str]:
        """Instances, host directories and bind symlinks still present."""
        found = [f"instance {name}" for name in self.instances()]
        found += [f"host dir {p}" for p in sorted(self.host_dir.iterdir())]
        found += [f"bind {p}" for p in sorted(self.bind_root.rglob("*")) if p.is_symlink()]
        return found


def _state_leftovers(sandboxes: list[Sandbox]) -> list[str]:
    """Shell state directories that outlived their (closed) sandboxes."""
    return [
        f"shell state {sandbox._state_dir}"
        for sandbox in sandboxes
        if pathlib.Path(sandbox._state_dir).exists()
    ]


@contextlib.asynccontextmanager
async def provide(tmp_path: pathlib.Path) -> AsyncIterator[Callable[..., Sandbox]]:
    """A factory of singularity sandboxes driving the stand-in; afterwards it stops any
    instance still running.

    Raises:
        AssertionError: (at exit, once every sandbox made is closed) naming the
            instances, host directories, binds and shell state directories left.
    """
    standin = StandIn(tmp_path / "apptainer").install()
    made: list[Sandbox] = []

    def factory(**options: Any) -> Sandbox:
        sandbox = create_sandbox(NAME, **standin.options(**options))
        made.append(sandbox)
        return sandbox

    try:
        yield factory
    finally:
        left = standin.leftovers() + _state_leftovers(made)
        for name in standin.instances():
            stop = await asyncio.create_subprocess_exec(
                str(standin.binary),
                "instance",
                "stop",
                "--force",
                name,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
            )
            await stop.wait()
    if left:
        raise AssertionError(f"singularity sandboxes left behind: {left}")
