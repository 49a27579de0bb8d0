"""Conformance provider for the ``local`` backend in its plain mode (``isolation="none"``):
commands run directly on this host.

Nothing to set up: the factory makes local sandboxes, each in its own temporary
directory. Capabilities: ``concurrency_64``, ``host_paths`` (sandbox paths are host paths,
so the suite can check that ``close`` removes the workdir) and ``session_escape`` (a
process that left the command's session with ``setsid`` still dies at the timeout).
Not declared: ``process_limit`` and ``network_off``; the local backend enforces neither
(it rejects ``pids_limit`` and ignores ``network``), so a fork bomb would hit the host.
"""

from __future__ import annotations

import contextlib
import pathlib
import shutil
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

from hermes_sandbox import Sandbox, create_sandbox

NAME = "local"
CAPS = {"concurrency_64", "host_paths", "session_escape"}


def unavailable() -> str | None:
    """Why the local backend cannot be tested here, or None."""
    if not sys.platform.startswith("linux"):
        return f"the conformance checks read /proc, which {sys.platform} does not have"
    if shutil.which("bash") is None:
        return "bash is not installed"
    return None


@contextlib.asynccontextmanager
async def provide(tmp_path: pathlib.Path) -> AsyncIterator[Callable[..., Sandbox]]:
    """A factory of local sandboxes (closing them is the suite's job)."""

    def factory(**options: Any) -> Sandbox:
        return create_sandbox(NAME, isolation="none", **options)

    yield factory
