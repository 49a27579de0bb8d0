"""Sandboxes started ahead of their trial, while the trials before it run.

A run knows the order of its trials. When a trial starts, :class:`StartsAhead` starts
the image, and the sandbox, of the next trials in that order (``TrialSettings.start_ahead``
of them at most, waiting: one on docker by default), so that a trial finds its sandbox
started, or under way, instead of waiting the whole container start (about 0.2 s on
docker, most of a short trial). What it runs is exactly what the trial would have run
(:func:`~hermes_benchmarks._opening.open_attempt`, with the trial's first attempt's task
id); only the start is earlier. The trial's ``image`` and ``sandbox_start`` timings are
then the part of each it waited for.

Not started ahead: a task with compose services (they would run before their trial),
and the retries of a trial (they start their own). A sandbox that waited longer than
:data:`MAX_WAIT` for its trial is closed and the trial starts a fresh one (its lifetime
had :data:`MAX_WAIT` added for the wait). Whatever a trial did not take is closed when
the run ends (:meth:`StartsAhead.aclose`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from hermes_benchmarks._clock import Clock
from hermes_benchmarks._opening import (
    OPEN_STEPS,
    Opened,
    attempt_lifetime,
    attempt_task_id,
    open_attempt,
)
from hermes_benchmarks._settings import TrialSettings
from hermes_benchmarks._task import Task
from hermes_benchmarks._teardowns import Teardowns, close_all
from hermes_sandbox import finish

__all__ = ["MAX_WAIT", "StartedAhead", "StartsAhead"]

#: Seconds a sandbox started ahead may wait for its trial.
MAX_WAIT = 600.0


class StartedAhead:
    """One trial's first sandbox, being started (or started) ahead of the trial."""

    def __init__(
        self, task: Task, settings: TrialSettings, task_id: str, *, max_wait: float = MAX_WAIT
    ) -> None:
        self.task_id = task_id
        self.max_wait = max_wait
        self.clock = Clock()
        #: When the start ended (``time.monotonic``), None while under way.
        self.ended_at: float | None = None
        #: Whether a trial took it (from then on, the trial closes what it holds).
        self.taken = False
        self._work: asyncio.Task[Opened] = asyncio.ensure_future(
            open_attempt(
                task,
                settings,
                task_id=task_id,
                clock=self.clock,
                lifetime=attempt_lifetime(task, settings) + max_wait,
            )
        )
        self._work.add_done_callback(self._ended)

    def _ended(self, _: asyncio.Task[Opened]) -> None:
        self.ended_at = time.monotonic()

    async def ended(self) -> None:
        """Return once the start has ended (started, failed or stopped)."""
        await asyncio.wait({self._work})

    async def take(self, clock: Clock, teardowns: Teardowns | None) -> Opened | None:
        """The started sandbox (and services), now the caller's, once its start ends; the
        wait counted on ``clock`` as the ``image`` and ``sandbox_start`` steps it waited
        for. None when it waited longer than ``max_wait`` for the trial (it is closed, in
        the background of ``teardowns`` when given): the caller starts its own. A
        cancellation while waiting stops the start and closes what it made before it
        propagates.

        Raises:
            TrialInfraError: the start failed (kind ``image_build`` or ``sandbox_start``),
                as the trial's own start would have.
            asyncio.CancelledError: the caller was cancelled while it waited.
        """
        self.taken = True
        since = time.monotonic()
        stale = self.ended_at is not None and since - self.ended_at > self.max_wait
        try:
            opened = await asyncio.shield(self._work)
        except asyncio.CancelledError:
            await finish(self.discard())
            raise
        finally:
            if not stale:
                clock.waited(since, self.clock, OPEN_STEPS)
        if not stale:
            return opened
        if teardowns is not None:
            teardowns.close(opened.sandbox, self.task_id, opened.services)
        else:
            await close_all(opened.sandbox, opened.services, self.task_id)
        return None

    async def discard(self) -> None:
        """Stop the start if under way, and close what it made (failures logged)."""
        if not self._work.done():
            self._work.cancel()
        await asyncio.wait({self._work})
        if self._work.cancelled() or self._work.exception() is not None:
            return
        opened = self._work.result()
        await close_all(opened.sandbox, opened.services, self.task_id)


class StartsAhead:
    """The sandboxes of a run's trials started ahead (see the module's docstring).

    Args:
        settings: the run's trial settings (``start_ahead``: how many may wait at once;
            0 turns this off).
        order: the run's trials, (task, trial number), in the order they start.
        run_id: the run's id, as the trials are given it.
        max_wait: seconds a sandbox started ahead may wait for its trial.
    """

    def __init__(
        self,
        settings: TrialSettings,
        order: Sequence[tuple[Task, int]],
        *,
        run_id: str,
        max_wait: float = MAX_WAIT,
    ) -> None:
        self._settings = settings
        self._max_wait = max_wait
        self._order = list(order)
        self._run_id = run_id
        self._ahead = settings.sandboxes_ahead
        self._made: dict[int, StartedAhead] = {}
        self._begun: set[int] = set()
        self._next = 0

    def begin(self, index: int) -> StartedAhead | None:
        """Trial ``index`` of the order starts now: its sandbox started ahead, if any (the
        caller must :meth:`StartedAhead.take` it), and the next trials' starting."""
        self._begun.add(index)
        mine = self._made.get(index)
        self._next = max(self._next, index + 1)
        waiting = self.waiting - (mine is not None)  # the caller takes its own now
        while waiting < self._ahead and self._next < len(self._order):
            ahead = self._next
            self._next += 1
            task, trial = self._order[ahead]
            if ahead in self._begun or task.compose is not None:
                continue
            task_id = attempt_task_id(self._run_id, task, trial, 0)
            self._made[ahead] = StartedAhead(task, self._settings, task_id, max_wait=self._max_wait)
            waiting += 1
        return mine

    @property
    def waiting(self) -> int:
        """How many sandboxes started ahead no trial has taken yet."""
        return sum(1 for made in self._made.values() if not made.taken)

    async def aclose(self) -> None:
        """Stop the starts no trial took and close what they made (the run is ending);
        runs to the end when cancelled meanwhile (then re-raised).

        Raises:
            asyncio.CancelledError: the caller was cancelled meanwhile.
        """
        left = [made for made in self._made.values() if not made.taken]
        for made in left:
            made.taken = True
        if left:
            await finish(_discard_all(left))


async def _discard_all(left: Sequence[StartedAhead]) -> None:
    await asyncio.gather(*(made.discard() for made in left))
