"""Conformance provider for the ``local`` backend in its isolated mode (``isolation="bwrap"``).

Commands run under Debian's bubblewrap: their own pid, ipc, uts and network namespaces,
only the host's system directories shown (read-only) besides the sandbox's own, and
``pids_limit`` held by a cgroup. So beyond plain local's capabilities it declares
``process_limit`` (a fork bomb stays inside) and ``network_off``. Needs ``bwrap``
(``.ci/services/bubblewrap.sh``).
"""

from __future__ import annotations

import contextlib
import pathlib
import shutil
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

from hermes_sandbox import Sandbox, create_sandbox

NAME = "local-bwrap"
CAPS = {"concurrency_64", "host_paths", "session_escape", "process_limit", "network_off"}


def unavailable() -> str | None:
    """Why isolated local sandboxes cannot be tested here, or None."""
    if not sys.platform.startswith("linux"):
        return f"bubblewrap needs Linux namespaces, which {sys.platform} does not have"
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (bash .ci/services/bubblewrap.sh)"
    return None


@contextlib.asynccontextmanager
async def provide(tmp_path: pathlib.Path) -> AsyncIterator[Callable[..., Sandbox]]:
    """A factory of isolated local sandboxes (closing them is the suite's job)."""

    def factory(**options: Any) -> Sandbox:
        return create_sandbox("local", isolation="bwrap", **options)

    yield factory
