"""Tool dispatch: ordering, concurrency, every failure as a readable message."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from hermes_loop import HandlerThreadPool, Tool, ToolInvocation, ToolRunner, ToolSet

SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer"}, "text": {"type": "string"}},
    "required": ["n"],
    "additionalProperties": False,
}


def call(name: str, arguments: Any, call_id: str = "c1") -> dict[str, Any]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


@pytest.fixture
def executor() -> Any:
    pool = ThreadPoolExecutor(8)
    yield pool
    pool.shutdown(wait=True, cancel_futures=True)


def runner(executor: ThreadPoolExecutor, *tools: Tool, **options: Any) -> ToolRunner:
    return ToolRunner(ToolSet(tools), executor=executor, **options)


async def test_calls_run_concurrently_and_keep_their_order(executor: ThreadPoolExecutor) -> None:
    running = 0
    peak = 0

    async def slow(arguments: dict[str, Any], inv: ToolInvocation) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.05 * (5 - arguments["n"]))
        running -= 1
        return f"done {arguments['n']}"

    run = runner(executor, Tool("slow", "", SCHEMA, slow), concurrency=3)
    calls = [call("slow", {"n": i}, f"c{i}") for i in range(5)]
    outcomes = await run.run(calls, turn=0, task_id="t")
    assert [o.message["content"] for o in outcomes] == [f"done {i}" for i in range(5)]
    assert [o.message["tool_call_id"] for o in outcomes] == [f"c{i}" for i in range(5)]
    assert peak == 3


async def test_blocking_handlers_run_in_the_pool(executor: ThreadPoolExecutor) -> None:
    main = threading.get_ident()

    def blocking(arguments: dict[str, Any], inv: ToolInvocation) -> dict[str, Any]:
        time.sleep(0.01)
        return {"thread_is_main": threading.get_ident() == main, "task": inv.task_id}

    run = runner(executor, Tool("b", "", SCHEMA, blocking))
    (outcome,) = await run.run([call("b", {"n": 1})], turn=2, task_id="task-9")
    assert json.loads(outcome.message["content"]) == {"thread_is_main": False, "task": "task-9"}
    assert outcome.error is None


@pytest.mark.parametrize(
    ("name", "arguments", "kind", "needle"),
    [
        ("nope", {"n": 1}, "unknown_tool", "unknown tool 'nope'; available tools: ok"),
        ("ok", "{not json", "invalid_arguments", "not a JSON object"),
        ("ok", "[1, 2]", "invalid_arguments", "not a JSON object"),
        ("ok", {"n": "one"}, "invalid_arguments", "n: 'one' is not of type 'integer'"),
        ("ok", {}, "invalid_arguments", "'n' is a required property"),
        ("ok", {"n": 1, "extra": 2}, "invalid_arguments", "Additional properties"),
    ],
)
async def test_bad_calls_become_tool_errors(
    executor: ThreadPoolExecutor, name: str, arguments: Any, kind: str, needle: str
) -> None:
    run = runner(executor, Tool("ok", "", SCHEMA, lambda a, i: "fine"))
    (outcome,) = await run.run([call(name, arguments)], turn=4, task_id="t")
    assert outcome.message["role"] == "tool"
    assert outcome.message["content"].startswith("Error: ")
    assert needle in outcome.message["content"]
    assert outcome.error is not None
    assert outcome.error.kind == kind
    assert outcome.error.turn == 4
    assert outcome.error.tool_name == name


async def test_handler_exception_and_timeout(executor: ThreadPoolExecutor) -> None:
    def boom(arguments: dict[str, Any], inv: ToolInvocation) -> str:
        raise RuntimeError("disk on fire")

    seen_cancel = threading.Event()

    def stuck(arguments: dict[str, Any], inv: ToolInvocation) -> str:
        inv.cancelled.wait(5)
        seen_cancel.set()
        return "late"

    async def stuck_async(arguments: dict[str, Any], inv: ToolInvocation) -> str:
        await asyncio.sleep(10)
        return "never"

    run = runner(
        executor,
        Tool("boom", "", SCHEMA, boom),
        Tool("stuck", "", SCHEMA, stuck, timeout=0.1),
        Tool("stuck_async", "", SCHEMA, stuck_async, timeout=0.1),
    )
    calls = [
        call("boom", {"n": 1}, "a"),
        call("stuck", {"n": 1}, "b"),
        call("stuck_async", {"n": 1}, "c"),
    ]
    boom_out, stuck_out, async_out = await run.run(calls, turn=0, task_id="t")
    assert boom_out.message["content"] == "Error: tool 'boom' failed: RuntimeError: disk on fire"
    assert stuck_out.error is not None
    assert stuck_out.error.kind == "timeout"
    assert "timed out after 0.1s" in stuck_out.message["content"]
    assert async_out.error is not None
    assert async_out.error.kind == "timeout"
    # The blocking handler was told to stop.
    assert await asyncio.to_thread(seen_cancel.wait, 2)


async def test_output_is_capped_and_binary_is_safe(executor: ThreadPoolExecutor) -> None:
    run = runner(
        executor,
        Tool("big", "", SCHEMA, lambda a, i: "x" * 10_000 + "END"),
        Tool("bin", "", SCHEMA, lambda a, i: b"\xff\xfeok\x00"),
        max_output_chars=1000,
    )
    big, binary = await run.run(
        [call("big", {"n": 1}, "1"), call("bin", {"n": 1}, "2")], turn=0, task_id="t"
    )
    text = big.message["content"]
    assert len(text) <= 1000
    assert "characters truncated" in text
    assert text.endswith("END")
    assert binary.message["content"] == "\ufffd\ufffdok\\0"


async def test_cancellation_cancels_running_calls(executor: ThreadPoolExecutor) -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def forever(arguments: dict[str, Any], inv: ToolInvocation) -> str:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    run = runner(executor, Tool("f", "", SCHEMA, forever))
    task = asyncio.create_task(
        run.run([call("f", {"n": 1}, "a"), call("f", {"n": 2}, "b")], turn=0, task_id="t")
    )
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled.is_set()
    leftovers = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert leftovers == []


@pytest.mark.parametrize("kind", [SystemExit, KeyboardInterrupt])
@pytest.mark.parametrize("blocking", [True, False], ids=["blocking", "async"])
async def test_system_exit_and_keyboard_interrupt_in_a_handler_are_tool_errors(
    executor: ThreadPoolExecutor, kind: type[BaseException], blocking: bool
) -> None:
    def quit_blocking(arguments: dict[str, Any], inv: ToolInvocation) -> str:
        raise kind(3)

    async def quit_async(arguments: dict[str, Any], inv: ToolInvocation) -> str:
        raise kind(3)

    handler = quit_blocking if blocking else quit_async
    run = runner(
        executor, Tool("quit", "", SCHEMA, handler), Tool("ok", "", SCHEMA, lambda a, i: "fine")
    )
    try:
        alone = await run.run([call("quit", {"n": 1})], turn=0, task_id="t")
        # Two calls run as tasks of a task group: the exception must not reach the task.
        together = await run.run(
            [call("quit", {"n": 1}, "a"), call("ok", {"n": 2}, "b")], turn=1, task_id="t"
        )
    except BaseException as exc:  # turn an escape into a failure, not a dead test session
        pytest.fail(f"{exc!r} escaped ToolRunner.run")
    for outcome in (alone[0], together[0]):
        assert outcome.error is not None
        assert outcome.error.kind == "exception"
        assert outcome.message["content"] == f"Error: tool 'quit' failed: {kind.__name__}: 3"
    assert together[1].message["content"] == "fine"


async def test_a_call_that_never_got_a_thread_is_not_the_models_error() -> None:
    release = threading.Event()
    entered = threading.Semaphore(0)

    def hang(arguments: dict[str, Any], inv: ToolInvocation) -> str:
        entered.release()
        release.wait(30)  # ignores inv.cancelled, like a handler stuck in a syscall
        return "finally"

    pool = HandlerThreadPool(2)
    try:
        run = ToolRunner(
            ToolSet([Tool("hang", "", SCHEMA, hang), Tool("ok", "", SCHEMA, lambda a, i: "ok")]),
            executor=pool,
            timeout=1.0,  # generous: the hung calls must start before it
        )
        first = await run.run(
            [call("hang", {"n": 1}, "a"), call("hang", {"n": 2}, "b")], turn=0, task_id="t"
        )
        assert [o.error.kind if o.error else None for o in first] == ["timeout", "timeout"]
        assert [o.not_run for o in first] == [None, None]
        assert run.abandoned == 2
        assert pool.busy == 2
        # Both threads are held by abandoned handlers: the next call never starts.
        (starved,) = await run.run([call("ok", {"n": 3}, "c")], turn=1, task_id="t")
        assert starved.error is None
        assert starved.not_run is not None
        assert "no thread took the call to 'ok' within 1s" in starved.not_run
        assert (
            "(2 of 2 handler threads busy; 2 handlers abandoned past their timeout"
            in starved.not_run
        )
        assert starved.message["tool_call_id"] == "c"
        assert "was not run (infrastructure failure)" in starved.message["content"]
        # Once the hung handlers return, the threads serve calls again.
        release.set()
        for _ in range(1000):  # the done-callbacks run on the pool's threads
            if not (run.abandoned or pool.busy):
                break
            await asyncio.sleep(0.01)
        assert run.abandoned == 0
        (served,) = await run.run([call("ok", {"n": 4}, "d")], turn=2, task_id="t")
        assert served.message["content"] == "ok"
        assert served.error is None
        assert served.not_run is None
        # The starved call was dropped, never run late: only the two hung calls entered.
        assert entered.acquire(blocking=False)
        assert entered.acquire(blocking=False)
        assert not entered.acquire(blocking=False)
    finally:
        release.set()
        pool.shutdown(wait=True)


async def test_a_tools_own_check_serves_every_runner_and_other_tools_get_one(
    executor: ThreadPoolExecutor,
) -> None:
    from hermes_loop._tools import ToolCheck, tool_check

    from .tool_likes import OwnTool

    async def echo(arguments: dict[str, Any], invocation: ToolInvocation) -> str:
        return str(arguments["n"])

    tool = Tool("echo", "Echo n.", SCHEMA, echo)
    assert tool_check(tool) is tool_check(tool)  # made once, with the tool
    plain = OwnTool("plain", SCHEMA)  # a ToolLike that is no Tool
    made = tool_check(plain)
    assert isinstance(made, ToolCheck)
    assert made is not tool_check(plain)
    # Runners made per rollout (as an environment makes a loop per group) check the
    # arguments alike with the tool's own check.
    for _ in range(2):
        bad, good = await runner(executor, tool).run(
            [call("echo", {"n": "x"}), call("echo", {"n": 3}, "c2")], turn=0, task_id="t"
        )
        assert bad.error is not None
        assert bad.error.kind == "invalid_arguments"
        assert "is not of type 'integer'" in bad.message["content"]
        assert good.error is None
        assert good.message["content"] == "3"
