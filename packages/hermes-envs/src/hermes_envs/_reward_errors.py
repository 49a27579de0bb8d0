"""A reward function that raises is the environment's bug, not the infrastructure's.

``run_rollout`` records such a rollout as a ``RewardError`` (never a score, never an
infrastructure failure, never retried); ``RewardErrors`` logs each once with its
traceback, counts it, and stops the run with ``RewardFunctionError`` (one line naming the
environment's ``compute_reward``) after ``limit`` in a row. The rollout is dropped from its
group, so nothing is trained on a reward nobody computed. The reference scored such a
rollout 0.0 (and trained on it): this differs on purpose.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from hermes_envs._errors import RewardFunctionError

__all__ = ["RewardError", "RewardErrors", "RewardFunctionError"]

logger = logging.getLogger("hermes_envs.reward")


@dataclass(frozen=True, slots=True)
class RewardError:
    """``compute_reward`` raised ``exception`` (or returned no number: ``exception`` is
    then a ``TypeError`` saying what it returned) for the rollout ``task_id``."""

    task_id: str
    exception: BaseException

    @property
    def message(self) -> str:
        """``Type: text`` of the exception."""
        exc = self.exception
        return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class RewardErrors:
    """Counts ``compute_reward`` failures of one environment; ``limit`` in a row stop the
    run (``max_reward_errors`` in the config)."""

    def __init__(self, env_name: str, limit: int) -> None:
        self.env_name = env_name
        self.limit = limit
        self.total = 0
        self.in_a_row = 0
        #: The error that stopped the run; every later failure (rollouts already running
        #: finish after the limit) raises the same message: the run stops with one.
        self.stopped: RewardFunctionError | None = None

    def succeeded(self) -> None:
        """A reward was computed: the run of failures ends."""
        self.in_a_row = 0

    def failed(self, error: RewardError) -> None:
        """Log ``error`` once with its traceback and count it.

        Raises:
            RewardFunctionError: when this makes ``limit`` failures in a row.
        """
        self.total += 1
        self.in_a_row += 1
        exc = error.exception
        logger.error(
            "%s.compute_reward raised on rollout %s; the rollout is dropped from its group "
            "(not scored, not retried)",
            self.env_name,
            error.task_id,
            exc_info=(type(exc), exc, exc.__traceback__),
        )
        if self.stopped is None and self.in_a_row >= self.limit:
            self.stopped = RewardFunctionError(
                f"{self.env_name}.compute_reward raised on {self.limit} rollouts in a row "
                f"(last: {error.message}); fix the environment's compute_reward (tracebacks "
                "logged above; --env.max_reward_errors sets this limit)"
            )
        if self.stopped is not None:
            raise RewardFunctionError(str(self.stopped))
