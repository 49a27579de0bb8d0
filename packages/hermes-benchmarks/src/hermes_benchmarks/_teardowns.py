"""Closing a trial's sandbox and services: at once, or in the background of a run."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from hermes_benchmarks.sandboxes import close_fully
from hermes_sandbox import Sandbox, finish

if TYPE_CHECKING:
    from hermes_sandbox.backends.docker import ServiceGroup

__all__ = ["Teardowns", "close_all", "close_sandbox"]

log = logging.getLogger(__name__)


async def close_all(sandbox: Sandbox | None, services: ServiceGroup | None, task_id: str) -> None:
    """Close ``sandbox``, then remove ``services`` (the sandbox uses their network); a
    failure is logged (the attempt's verdict stands; the backend's ``reap_run`` removes
    what is left), never raised."""
    if sandbox is not None:
        await close_sandbox(sandbox, task_id)
    if services is not None:
        try:
            await services.close()
        except Exception as error:  # the attempt's verdict stands; reap_run removes them
            log.warning("could not remove the services of %s: %s", task_id, error)


async def close_sandbox(sandbox: Sandbox, task_id: str) -> None:
    """Close ``sandbox`` to the end; a failure is logged, never raised."""
    try:
        await close_fully(sandbox)
    except Exception as error:  # the attempt's verdict stands; the backend reaps it
        log.warning("could not close sandbox %s: %s", task_id, error)


class Teardowns:
    """The sandboxes of a run being closed in the background: :meth:`close` starts one,
    :meth:`wait` (before the run ends, also when it is cancelled) sees every one closed."""

    def __init__(self) -> None:
        self._closing: set[asyncio.Task[None]] = set()

    @property
    def pending(self) -> int:
        """How many sandboxes are still being closed."""
        return len(self._closing)

    def close(
        self, sandbox: Sandbox | None, task_id: str, services: ServiceGroup | None = None
    ) -> None:
        """Start closing ``sandbox``, then removing ``services`` (a failure is logged, as
        in a trial)."""
        closing = asyncio.ensure_future(close_all(sandbox, services, task_id))
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)

    async def wait(self) -> None:
        """Return once every sandbox started closing is closed; a cancellation that
        arrives meanwhile is re-raised after that.

        Raises:
            asyncio.CancelledError: the caller was cancelled while they closed.
        """
        await finish(self._all())

    async def _all(self) -> None:
        while self._closing:
            await asyncio.wait(set(self._closing))
