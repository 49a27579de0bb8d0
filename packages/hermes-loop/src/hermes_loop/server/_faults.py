"""Fault injection: what a scripted turn's ``Fault`` phases do to the request answering it.

Attempts at a turn are counted per ``(model, conversation, turn index)``, so the retries
of one rollout walk through the phases in order while other rollouts keep their own count
(see ``hermes_loop.server._turns``). Before the answer, a fault may wait (``delay``), never
answer (``hang``, until the server closes), drop the connection (``disconnect``) or answer
with an HTTP error (``status``); ``truncate`` is left to the route, which sends half of
its answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable

from hermes_loop.server._turns import Fault, Turn
from hermes_loop.server._wire import Dropped, Rejected

__all__ = ["FaultInjector"]

_MESSAGES = {
    429: "rate limit reached (scripted fault)",
    500: "internal server error (scripted fault)",
    502: "bad gateway (scripted fault)",
    503: "service unavailable (scripted fault)",
}


def _retry_after(seconds: float) -> dict[str, str]:
    whole = seconds == int(seconds)
    return {
        "Retry-After": str(int(seconds)) if whole else str(seconds),
        "retry-after-ms": str(round(seconds * 1000)),
    }


class FaultInjector:
    """Counts attempts at each turn and applies the fault phase each attempt falls in.

    Args:
        closing: set when the server shuts down; a hung or delayed request then ends
            (its connection is dropped) instead of holding the shutdown up.
    """

    def __init__(self, closing: asyncio.Event) -> None:
        self._closing = closing
        self._attempts: dict[Hashable, int] = {}

    async def before_answer(self, slot: Hashable, turn: Turn) -> Fault | None:
        """Count one attempt at ``turn`` in ``slot`` and apply its fault.

        Returns the fault when the route still has to act on it (``truncate``, or a
        ``delay`` already waited out), else ``None``.

        Raises:
            Rejected: for a ``status`` fault (with ``Retry-After`` when scripted).
            Dropped: for ``disconnect``, for ``hang`` once the server closes, and for a
                ``delay`` the server's shutdown cuts short.
        """
        attempt = self._attempts.get(slot, 0)
        self._attempts[slot] = attempt + 1
        fault = turn.fault_for(attempt)
        if fault is None:
            return None
        if fault.delay:
            await self._sleep(fault.delay)
        if fault.hang:
            await self._closing.wait()
            raise Dropped
        if fault.disconnect:
            raise Dropped
        if fault.status is not None:
            headers = _retry_after(fault.retry_after) if fault.retry_after is not None else {}
            kind = "rate_limit_error" if fault.status == 429 else "server_error"
            message = fault.message or _MESSAGES.get(
                fault.status, f"HTTP {fault.status} (scripted fault)"
            )
            raise Rejected(fault.status, message, kind, code=fault.status, headers=headers)
        return fault

    async def _sleep(self, seconds: float) -> None:
        """Sleep, or drop the request if the server closes meanwhile."""
        try:
            await asyncio.wait_for(self._closing.wait(), timeout=seconds)
        except TimeoutError:
            return
        raise Dropped
