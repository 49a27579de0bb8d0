"""``GroupScheduler``: the loop of ``process``, groups collected concurrently and
written as they finish.

At most ``width`` groups run rollouts at once; up to as many more are being scored (tokens
on the tokenizer thread) or waiting for a slot. A group with too few scored rollouts goes
back to the queue (at most ``infra_retries + 1`` tries); after ``max_dropped_items`` items
in a row given up on, the run stops with ``RunAbortedError``.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Generic, TypeVar

from hermes_envs._errors import RunAbortedError
from hermes_envs._stats import ProgressReporter, RunStats
from hermes_envs.scoring._group_writer import Scored

__all__ = ["GroupScheduler"]

logger = logging.getLogger(__name__)

ItemT = TypeVar("ItemT")


@dataclass(slots=True)
class _Pending(Generic[ItemT]):
    item: ItemT
    attempts: int = 0


@dataclass(slots=True)
class GroupScheduler(Generic[ItemT]):
    """Runs groups until ``target`` are written (``run``).

    Attributes:
        width: groups running rollouts at once (``max_num_workers_per_node``).
        infra_retries: how many more times an unscored group's item is tried.
        max_dropped_items: items in a row given up on before the run stops.
        stats: the run's counters (``groups_done``, ``groups_dropped``).
        reporter: told when the counters change.
        next_item: the next item, ``None`` when there are no more.
        collect: the scored group of an item, collected while holding the semaphore.
        write: writes a scored group (the hook point where a group is done).
        after_write: called after each group written (wandb logging).
        last_failure: the last infrastructure failure, for the stop message.
    """

    width: int
    infra_retries: int
    max_dropped_items: int
    stats: RunStats
    reporter: ProgressReporter
    next_item: Callable[[], Awaitable[ItemT | None]]
    collect: Callable[[ItemT, asyncio.Semaphore], Coroutine[object, object, Scored]]
    write: Callable[[Scored, ItemT], Awaitable[None]]
    after_write: Callable[[], Awaitable[None]]
    last_failure: Callable[[], str | None]

    async def run(self, target: int) -> None:
        """Collect and write groups until ``stats.groups_done`` reaches ``target`` or the
        items run out; every group still running is cancelled however it ends.

        Raises:
            RunAbortedError: after ``max_dropped_items`` items in a row failed every try.
            asyncio.CancelledError: when cancelled; groups already written stay intact.
        """
        width = max(1, self.width)
        retry: deque[_Pending[ItemT]] = deque()
        running: dict[asyncio.Task[Scored], _Pending[ItemT]] = {}
        exhausted = False
        dropped_in_a_row = 0
        slots = asyncio.Semaphore(width)
        try:
            while self.stats.groups_done < target:
                while (
                    len(running) < 2 * width
                    and self.stats.groups_done + len(running) < target
                    and (retry or not exhausted)
                ):
                    pending = retry.popleft() if retry else None
                    if pending is None:
                        item = await self.next_item()
                        if item is None:
                            exhausted = True
                            break
                        pending = _Pending(item)
                    pending.attempts += 1
                    task = asyncio.create_task(self.collect(pending.item, slots))
                    running[task] = pending
                if not running:
                    break
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    pending = running.pop(task)
                    scored = task.result()
                    if scored.scored:
                        await self.write(scored, pending.item)
                        self.stats.groups_done += 1
                        await self.after_write()
                    elif pending.attempts <= self.infra_retries:
                        retry.append(pending)
                    else:
                        self.stats.groups_dropped += 1
                        dropped_in_a_row += 1
                        logger.error("giving up on an item after %d tries", pending.attempts)
                        if dropped_in_a_row >= self.max_dropped_items:
                            raise RunAbortedError(
                                f"{dropped_in_a_row} item(s) in a row failed every try "
                                "for infrastructure reasons; last failure: "
                                f"{self.last_failure() or 'unknown'}; check the model "
                                "endpoint (--openai.base_url, --openai.model_name, "
                                "--openai.api_key) and the sandbox backend "
                                "(--env.max_dropped_items sets this limit)"
                            )
                    if scored.scored:
                        dropped_in_a_row = 0
                    self.reporter.update(self.stats)
        finally:
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
