"""In shared mode on docker, the root command session the verifier's steps run in is
opened while the agent works, not after it."""

from __future__ import annotations

import asyncio
import time

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
    """Runs one command, then watches (up to 20 s) for a second command session of its
    container to be opened while it still works."""

    name = "counts-sessions"

    def __init__(self) -> None:
        self.seen = 0

    async def run(self, task: Task, sandbox: Sandbox, *, timeout: float) -> None:
        started = time.time() - 1
        await sandbox.exec("true")
        container = str(getattr(sandbox, "container_id", ""))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            self.seen = await asyncio.to_thread(_execs, container, started)
            if self.seen >= 2:
                return
            await asyncio.sleep(0.1)


async def test_the_verifier_root_session_opens_while_the_agent_works() -> None:
    agent = CountsSessions()
    task = load_task(SHIPPED / "write-greeting")
    result = await run_trial(task, agent, TrialSettings(infra_retries=0), trial=0)
    assert result.status == "fail", result.error  # it did not solve the task
    assert agent.seen >= 2
