"""The private event loop behind ToolContext's blocking methods fails with the package's
error (``ToolContextError``, still a ``RuntimeError``) and a kind saying why."""

from __future__ import annotations

import asyncio

import pytest

from hermes_sandbox import SandboxError, ToolContextError
from hermes_sandbox._blocking import LoopThread, try_run_on_loop


async def answer() -> int:
    return 42


def test_run_after_stop_is_loop_stopped() -> None:
    thread = LoopThread("test-loop")
    assert thread.run(answer()) == 42
    thread.stop()
    with pytest.raises(ToolContextError) as caught:
        thread.run(answer())
    assert caught.value.kind == "loop_stopped"
    assert isinstance(caught.value, SandboxError)
    assert isinstance(caught.value, RuntimeError)


def test_a_blocking_call_from_the_loops_own_thread_is_reentrant() -> None:
    thread = LoopThread("test-loop")
    try:

        async def inner() -> int:
            return thread.run(answer())  # would wait for itself

        with pytest.raises(ToolContextError) as caught:
            thread.run(inner())
        assert caught.value.kind == "reentrant"
    finally:
        thread.stop()


async def test_try_run_on_the_running_loop_itself_is_reentrant() -> None:
    coro = answer()
    with pytest.raises(ToolContextError) as caught:
        try_run_on_loop(asyncio.get_running_loop(), coro, start_within=1.0)
    coro.close()
    assert caught.value.kind == "reentrant"
