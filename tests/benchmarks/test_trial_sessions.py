"""In shared mode on docker, the root command session the verifier's steps run in is
opened while the agent works, not after it; an agent that works as root has it already
(its own session is root's), so no second one is opened."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from hermes_benchmarks import Task, TrialSettings, load_task, run_trial
from hermes_sandbox import Sandbox
from hermes_sandbox.backends.docker import DockerDaemon
from tests.benchmarks.docker_support import SHIPPED, docker_skip_reason

REASON = docker_skip_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


def _execs(container: str, since: float) -> int:
    """How many execs the daemon created in ``container`` since ``since``."""
    daemon = DockerDaemon.open()
    try:
        events = daemon.api.events(
            since=int(since), until=time.time(), decode=True,
            filters={"container": container, "event": "exec_create"},
        )  # fmt: skip
        return sum(1 for _ in events)
    finally:
        daemon.close()


class CountsSessions:
    """Runs one command, then watches (up to ``watch`` seconds) for a second command
    session of its container to be opened while it still works."""

    name = "counts-sessions"

    def __init__(self, watch: float = 20.0) -> None:
        self.seen = 0
        self.watch = watch

    async def run(self, task: Task, sandbox: Sandbox, *, timeout: float) -> None:
        started = time.time() - 1
        await sandbox.exec("true")
        container = str(getattr(sandbox, "container_id", ""))
        deadline = time.monotonic() + self.watch
        while time.monotonic() < deadline:
            self.seen = await asyncio.to_thread(_execs, container, started)
            if self.seen >= 2:
                return
            await asyncio.sleep(0.1)


async def test_the_verifier_root_session_opens_while_a_non_root_agent_works() -> None:
    agent = CountsSessions()
    task = load_task(Path(__file__).parent / "tasks_harbor" / "agent-user")
    assert task.config.agent.user == "agent"
    result = await run_trial(task, agent, TrialSettings(infra_retries=0), trial=0)
    assert result.status == "fail", result.error  # it did not solve the task
    assert agent.seen >= 2


async def test_an_agent_working_as_root_shares_its_session_with_the_verifier() -> None:
    agent = CountsSessions(watch=1.5)
    task = load_task(SHIPPED / "write-greeting")
    result = await run_trial(task, agent, TrialSettings(infra_retries=0), trial=0)
    assert result.status == "fail", result.error  # the tests ran, in the same sandbox
    assert agent.seen == 1
