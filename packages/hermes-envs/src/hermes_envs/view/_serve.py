"""``--serve``: a run's folder over HTTP on the loopback interface, until Ctrl-C (used by
``hermes-envs view`` and ``hermes-bench view``)."""

from __future__ import annotations

import functools
import http.server
from pathlib import Path
from typing import Any

__all__ = ["RunServer"]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """No line per request."""


class RunServer:
    """Serves ``folder`` (read-only, GET and HEAD) at ``http://host:port/``.

    ``port`` 0 picks a free port; ``url`` says which. Use as a context manager, and
    call :meth:`serve_forever` (blocking) or run it in a thread.

    Raises:
        OSError: (at construction) the address is in use or cannot be bound.
    """

    def __init__(self, folder: Path, *, host: str = "127.0.0.1", port: int = 0) -> None:
        handler = functools.partial(_Quiet, directory=str(folder))
        self._server = http.server.ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
        bound_host, bound_port = self._server.server_address[:2]
        self.url = f"http://{bound_host!s}:{bound_port}/"

    def serve_forever(self) -> None:
        """Answer requests until :meth:`shutdown` (from another thread) or Ctrl-C."""
        self._server.serve_forever(poll_interval=0.2)

    def shutdown(self) -> None:
        """Stop :meth:`serve_forever` (call from another thread)."""
        self._server.shutdown()

    def __enter__(self) -> RunServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.server_close()
