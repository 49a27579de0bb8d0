"""A run closes its trials' sandboxes in the background: a trial's result comes back
while its container is still being removed, and every container is gone once the run's
teardowns are awaited (also when the run is cancelled meanwhile)."""

from __future__ import annotations

import asyncio

import pytest

from hermes_benchmarks import OracleAgent, TrialSettings, load_task, run_trial
from hermes_benchmarks._teardowns import Teardowns
from hermes_sandbox.backends.docker import LABEL_TASK, RUN_ID, list_containers
from tests.benchmarks.docker_support import SHIPPED, docker_skip_reason

REASON = docker_skip_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")

SETTINGS = TrialSettings(infra_retries=0)
RUN = "teardown-test"


async def _left(trial: int) -> list[str]:
    """The containers of this process still there for ``trial`` of write-greeting."""
    labels = {LABEL_TASK: f"{RUN}-write-greeting-{trial}-0"}
    return await asyncio.to_thread(list_containers, run_id=RUN_ID, labels=labels)


async def test_a_trial_returns_before_its_sandbox_is_closed_and_the_run_waits_for_it() -> None:
    teardowns = Teardowns()
    task = load_task(SHIPPED / "write-greeting")
    result = await run_trial(
        task, OracleAgent(), SETTINGS, trial=0, run_id=RUN, teardowns=teardowns
    )
    assert (result.status, result.reward) == ("pass", 1.0), result.error
    assert teardowns.pending == 1  # the trial did not wait for it
    await teardowns.wait()
    assert teardowns.pending == 0
    assert await _left(0) == []


async def test_a_cancelled_wait_still_sees_every_sandbox_closed() -> None:
    teardowns = Teardowns()
    task = load_task(SHIPPED / "write-greeting")
    await run_trial(task, OracleAgent(), SETTINGS, trial=1, run_id=RUN, teardowns=teardowns)
    waiting = asyncio.ensure_future(teardowns.wait())
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert teardowns.pending == 0
    assert await _left(1) == []
