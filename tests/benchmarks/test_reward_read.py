"""The reward's read after the tests in shared mode (docker): read once when no process is
left that could write it, read twice ``settle`` seconds apart when one is."""

from __future__ import annotations

import asyncio

import pytest

from hermes_benchmarks import load_task
from hermes_benchmarks._verifier import QUIET_CHECK, verify
from hermes_benchmarks.verdicts import ScoredFailure
from hermes_sandbox import Sandbox, create_sandbox
from tests.benchmarks.docker_support import SHIPPED, docker_skip_reason

REASON = docker_skip_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")

#: A settle no test could sit through: verify returns within the test's own timeout only
#: when it reads the reward once.
FOREVER = 3600.0


async def quiet(sandbox: Sandbox) -> int:
    checked = await sandbox.exec(QUIET_CHECK, session=False, user="0")
    return checked.exit_code


async def test_the_check_tells_a_container_with_a_process_left_from_one_without() -> None:
    async with create_sandbox("docker") as sandbox:
        await sandbox.exec("echo hi; sleep 0.1")
        assert await quiet(sandbox) == 0
        await sandbox.exec("sleep 600 >/dev/null 2>&1 &")  # reparented to init
        assert await quiet(sandbox) == 1
        await sandbox.exec("kill $(pidof sleep)", session=False, user="0")
        await asyncio.sleep(0.2)
        assert await quiet(sandbox) == 0
        await sandbox.exec("setsid nohup sleep 600 >/dev/null 2>&1 &")
        assert await quiet(sandbox) == 1


async def test_with_nothing_left_running_the_reward_is_read_once() -> None:
    task = load_task(SHIPPED / "write-greeting")
    async with create_sandbox("docker", workdir="/app") as sandbox:
        await sandbox.exec("echo 'hello, world' > /app/greeting.txt")
        async with asyncio.timeout(120):
            reward = await verify(task, sandbox, timeout=30, settle=FOREVER)
    assert reward == 1.0


async def test_with_a_process_left_the_reward_is_read_twice_and_a_rewrite_caught() -> None:
    task = load_task(SHIPPED / "write-greeting")
    async with create_sandbox("docker", workdir="/app") as sandbox:
        # A service left running: no rewrite, the verdict stands after the second read.
        await sandbox.exec("echo 'hello, world' > /app/greeting.txt; sleep 600 >/dev/null 2>&1 &")
        assert await verify(task, sandbox, timeout=30, settle=0.3) == 1.0
        # A writer left running that changes the reward after the tests: caught.
        await sandbox.exec("echo wrong > /app/greeting.txt")
        loop = (
            "while :; do mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; "
            "sleep 0.1; done"
        )
        await sandbox.exec(f"setsid nohup bash -c '{loop}' >/dev/null 2>&1 &")
        with pytest.raises(ScoredFailure) as caught:
            await verify(task, sandbox, timeout=30, settle=0.3)
    assert caught.value.kind == "reward_tampered"
