"""Teardown when the usual ``await close()`` cannot run: cancellation, no event loop, GC."""

from __future__ import annotations

import asyncio
import gc
import threading

import pytest

from hermes_sandbox import SandboxClosedError, SandboxOptions, SandboxPool
from hermes_sandbox._teardown import finish, run_detached, start_or_run
from tests.sandbox.support import FakeSandbox, Maker, fake


async def test_finish_completes_the_cleanup_then_passes_the_cancellation_on() -> None:
    steps: list[str] = []

    async def cleanup() -> str:
        steps.append("begin")
        await asyncio.sleep(0.05)
        steps.append("end")
        return "done"

    async def caller() -> str:
        return await finish(cleanup())

    task = asyncio.ensure_future(caller())
    await asyncio.sleep(0.01)
    task.cancel()
    await asyncio.sleep(0)
    task.cancel()  # a second cancellation (asyncio.run's clean-up round) changes nothing
    with pytest.raises(asyncio.CancelledError):
        await task
    assert steps == ["begin", "end"]


async def test_finish_returns_the_result_and_raises_the_cleanups_error() -> None:
    async def ok() -> int:
        return 7

    async def broken() -> None:
        raise OSError("disk gone")

    assert await finish(ok()) == 7
    with pytest.raises(OSError, match="disk gone"):
        await finish(broken())


async def test_run_detached_refuses_a_running_loop() -> None:
    async def nothing() -> None:
        return None

    with pytest.raises(RuntimeError, match="running event loop"):
        run_detached(nothing(), timeout=1)


def test_run_detached_runs_threads_and_bounds_the_time() -> None:
    async def uses_a_thread() -> str:
        return await asyncio.to_thread(lambda: threading.current_thread().name)

    assert run_detached(uses_a_thread(), timeout=5) == "hermes-teardown"

    async def forever() -> None:
        await asyncio.sleep(3600)

    with pytest.raises(TimeoutError):
        run_detached(forever(), timeout=0.05)


def test_start_or_run_starts_a_thread() -> None:
    seen: list[str] = []
    thread = start_or_run(lambda: seen.append(threading.current_thread().name), name="x-1")
    assert thread is not None
    thread.join()
    assert seen == ["x-1"]


async def test_close_during_start_tears_down_what_the_start_made() -> None:
    gate = asyncio.Event()
    sandbox = FakeSandbox(SandboxOptions(), task_id="t", gate=gate)
    starting = asyncio.ensure_future(sandbox.start())
    await asyncio.sleep(0.01)
    await sandbox.close()
    assert sandbox.closes == 0  # nothing to close yet: the start is still making it
    gate.set()
    with pytest.raises(SandboxClosedError, match="closed while starting"):
        await starting
    assert sandbox.closes == 1
    assert not sandbox.started


async def test_close_now_tears_down_once_and_close_then_does_nothing() -> None:
    sandbox = await fake().start()
    await asyncio.to_thread(sandbox.close_now)
    assert sandbox.closed
    assert sandbox.closes == 1
    await asyncio.to_thread(sandbox.close_now)
    await sandbox.close()
    assert sandbox.closes == 1
    with pytest.raises(SandboxClosedError):
        await sandbox.exec("true")


async def test_close_now_of_an_unstarted_sandbox_is_free() -> None:
    sandbox = fake()
    sandbox.close_now()
    assert sandbox.closed
    assert sandbox.closes == 0


async def test_close_now_reports_a_failing_teardown_without_raising(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken(FakeSandbox):
        async def _close(self) -> None:
            raise OSError("the daemon is gone")

    sandbox = await Broken(SandboxOptions(), task_id="b").start()
    await asyncio.to_thread(sandbox.close_now)
    assert "emergency teardown of sandbox b failed: the daemon is gone" in caplog.text


async def test_a_pool_collected_unclosed_tears_its_sandboxes_down() -> None:
    maker = Maker()
    pool = SandboxPool(factory=maker)
    await pool.get("a")
    await pool.get("b")
    await pool.release("b")
    del pool
    gc.collect()
    assert [s.closes for s in maker.made] == [1, 1]


async def test_pool_close_now_closes_everything_and_the_pool() -> None:
    maker = Maker()
    pool = SandboxPool(factory=maker)
    await pool.get("a")
    await asyncio.to_thread(pool.close_now)
    assert maker.made[0].closes == 1
    assert len(pool) == 0
    with pytest.raises(RuntimeError, match="closed"):
        await pool.get("a")
    await pool.close_all()  # still fine afterwards
    assert maker.made[0].closes == 1


async def test_pool_context_manager_closes_on_cancellation() -> None:
    maker = Maker()
    entered = asyncio.Event()

    async def run() -> None:
        async with SandboxPool(factory=maker) as pool:
            await pool.get("a")
            entered.set()
            await asyncio.sleep(3600)

    task = asyncio.ensure_future(run())
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert maker.made[0].closes == 1
