"""HandlerThreadPool: daemon threads on demand, any exception to the future, shutdown."""

from __future__ import annotations

import asyncio
import json
import threading
from concurrent.futures import CancelledError
from typing import Any

import pytest

from hermes_loop import HandlerThreadPool, Tool, ToolInvocation, ToolRunner, ToolSet


def test_threads_are_daemons_started_only_when_needed() -> None:
    pool = HandlerThreadPool(4, thread_name_prefix="probe")
    try:
        assert pool.threads == 0
        names = [pool.submit(lambda: threading.current_thread().name).result(5) for _ in range(3)]
        # Each call found the previous thread idle again: one thread served them all.
        assert names == ["probe-1"] * 3
        assert pool.threads == 1
        daemon = pool.submit(lambda: threading.current_thread().daemon).result(5)
        assert daemon is True
    finally:
        pool.shutdown(wait=True)
    assert pool.threads == 0


def test_the_pool_never_runs_more_than_max_workers_at_once() -> None:
    pool = HandlerThreadPool(2)
    release = threading.Event()
    lock = threading.Lock()
    running = peak = 0
    entered = threading.Semaphore(0)

    def work() -> None:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        entered.release()
        release.wait(5)
        with lock:
            running -= 1

    try:
        futures = [pool.submit(work) for _ in range(5)]
        assert pool.threads == 2
        assert entered.acquire(timeout=5)
        assert entered.acquire(timeout=5)  # two run at once; the other three wait
        release.set()
        for future in futures:
            future.result(5)
        assert peak == 2
    finally:
        release.set()
        pool.shutdown(wait=True)


@pytest.mark.parametrize("kind", [ValueError, SystemExit, KeyboardInterrupt])
def test_whatever_a_function_raises_goes_to_its_future(kind: type[BaseException]) -> None:
    def fail() -> None:
        raise kind("boom")

    pool = HandlerThreadPool(1)
    try:
        with pytest.raises(kind, match="boom"):
            pool.submit(fail).result(5)
        assert pool.submit(lambda: "still serving").result(5) == "still serving"
    finally:
        pool.shutdown(wait=True)


def test_shutdown_cancels_queued_work_and_refuses_more() -> None:
    pool = HandlerThreadPool(1)
    release = threading.Event()
    running = pool.submit(release.wait, 5)
    queued = pool.submit(lambda: "never")
    pool.shutdown(wait=False, cancel_futures=True)
    with pytest.raises(CancelledError):
        queued.result(5)
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.submit(lambda: None)
    release.set()
    assert running.result(5) is True
    with pytest.raises(ValueError, match="at least 1"):
        HandlerThreadPool(0)


async def test_a_call_queued_when_the_pool_shuts_down_is_not_run() -> None:
    release = threading.Event()
    entered = threading.Event()

    def hold(arguments: dict[str, Any], inv: ToolInvocation) -> str:
        entered.set()
        release.wait(5)
        return "held"

    pool = HandlerThreadPool(1)
    tools = ToolSet([Tool("hold", "", {"type": "object"}, hold)])
    run = ToolRunner(tools, executor=pool, timeout=30)
    calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": "hold", "arguments": "{}"}}
        for i in range(2)
    ]
    try:
        task = asyncio.create_task(run.run(calls, turn=0, task_id="t"))
        await asyncio.to_thread(entered.wait, 5)
        pool.shutdown(wait=False, cancel_futures=True)
        release.set()
        first, second = await task
    finally:
        release.set()
    assert first.message["content"] == "held"
    assert second.error is None
    assert second.not_run == "the handler thread pool was shut down"
    assert json.dumps(second.message)  # still a well-formed tool message
