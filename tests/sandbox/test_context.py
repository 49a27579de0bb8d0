"""ToolContext over the local backend: the reference's methods, sync and awaitable."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hermes_sandbox import (
    BrowserUnavailableError,
    ExecResult,
    SandboxClosedError,
    SandboxPool,
    ToolContextError,
)
from hermes_sandbox._context import ToolContext
from hermes_sandbox._options import SandboxOptions
from hermes_sandbox.backends.local import LocalSandbox
from hermes_sandbox.testing.probes import gone, host_processes
from hermes_sandbox.tools import SandboxTool, WebProviderError
from tests.sandbox.support import OwnLoopCheckSandbox


@pytest.fixture
async def pool() -> AsyncIterator[SandboxPool]:
    async with SandboxPool("local", terminal_timeout=20) as made:
        yield made


def context_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("hermes-toolcontext-")]


# --- the reference's example -------------------------------------------------------------


async def test_reference_reward_function_runs_sync_inside_the_event_loop(
    pool: SandboxPool,
) -> None:
    # The rollout used the sandbox first...
    sandbox = await pool.get("task-1")
    await sandbox.exec("mkdir -p work && cd work && echo 'print(1)' > solution.py")

    async def compute_reward(ctx: ToolContext) -> float:
        # ...and reward code, written as in the reference, calls the sync methods from
        # inside the running event loop.
        test = ctx.terminal("python3 solution.py")
        if test["exit_code"] != 0:
            return 0.0
        content = ctx.read_file("work/solution.py")
        return 1.0 if content.get("content") == "print(1)\n" else 0.5

    ctx = ToolContext("task-1", pool)
    assert await compute_reward(ctx) == 1.0
    # The terminal kept the rollout's working directory.
    assert ctx.terminal("basename $PWD") == {"output": "work\n", "exit_code": 0}
    ctx.cleanup()
    assert "task-1" not in pool
    assert sandbox.closed
    assert context_threads() == []


async def test_sync_methods_from_a_worker_thread(pool: SandboxPool) -> None:
    ctx = ToolContext("t", pool)

    def reward() -> dict[str, Any]:
        ctx.write_file("a.txt", "hello")
        return ctx.terminal("cat a.txt; exit 4")

    assert await asyncio.to_thread(reward) == {"output": "hello", "exit_code": 4}
    await ctx.acleanup()
    assert context_threads() == []


def test_sync_methods_without_any_event_loop(tmp_path: Path) -> None:
    pool = SandboxPool("local")
    with ToolContext("plain", pool) as ctx:
        assert ctx.terminal("echo plain")["output"] == "plain\n"
        assert ctx.write_file("x/y.txt", b"\x00\x01")["bytes_written"] == 2
        assert ctx.download_file("x/y.txt", tmp_path / "y.bin") == {"ok": True}
        assert (tmp_path / "y.bin").read_bytes() == b"\x00\x01"
    assert "plain" not in pool
    assert context_threads() == []
    asyncio.run(pool.close_all())


# --- shapes ----------------------------------------------------------------------------------


async def test_terminal_shape_and_timeout(pool: SandboxPool) -> None:
    ctx = ToolContext("t", pool)
    assert await ctx.aterminal("echo a; echo b >&2") == {"output": "a\nb\n", "exit_code": 0}
    slow = await ctx.aterminal("sleep 30", timeout=0.3)
    assert slow["exit_code"] == 124
    assert set(slow) == {"output", "exit_code"}
    with pytest.raises(ValueError, match="timeout must be positive"):
        await ctx.aterminal("ls", timeout=-1)
    await ctx.acleanup()


async def test_read_write_and_search(pool: SandboxPool) -> None:
    ctx = ToolContext("t", pool)
    written = await ctx.awrite_file("src/m.py", "def f():\n    return 'é'\n")
    assert written["bytes_written"] == len("def f():\n    return 'é'\n".encode())
    read = await ctx.aread_file("src/m.py")
    assert read["content"] == "def f():\n    return 'é'\n"
    assert read["path"] == written["path"]
    missing = await ctx.aread_file("src/none.py")
    assert missing["content"] is None
    assert "No such file" in missing["error"]
    assert not missing.get("content")  # the reference's `if content.get("content")` check
    directory = await ctx.aread_file("src")
    assert directory["content"] is None
    lines = await ctx.aread_lines("src/m.py", offset=2)
    assert lines["content"] == "     2|    return 'é'"
    found = await ctx.asearch("return", "src")
    assert found["count"] == 1
    assert found["matches"][0]["line"] == 2
    assert found["matches"][0]["path"].endswith("/src/m.py")
    assert found["truncated"] is False
    fixed = ctx.search("f()", fixed_strings=True)
    assert fixed["count"] == 1
    bad = await ctx.asearch("(", "src")
    assert bad["count"] == 0
    assert "search failed" in bad["error"]
    gone = await ctx.asearch("x", "nowhere")
    assert "no such file or directory" in gone["error"]
    await ctx.acleanup()


async def test_transfers(pool: SandboxPool, tmp_path: Path) -> None:
    ctx = ToolContext("t", pool)
    local = tmp_path / "in"
    (local / "nested" / "deeper").mkdir(parents=True)
    (local / "top.txt").write_text("top")
    (local / "nested" / "deeper" / "bin.dat").write_bytes(bytes(range(256)) * 1000)
    assert await ctx.aupload_dir(local, "up") == {"ok": True}
    assert ctx.upload_file(local / "top.txt", "single/top.txt") == {"ok": True}
    listing = await ctx.aterminal("cd up && find . -type f | sort && cat ../single/top.txt")
    assert listing["output"] == "./nested/deeper/bin.dat\n./top.txt\ntop"
    out = tmp_path / "out"
    assert await ctx.adownload_dir("up", out) == {"ok": True}
    assert (out / "nested" / "deeper" / "bin.dat").read_bytes() == bytes(range(256)) * 1000
    assert ctx.download_file("single/top.txt", tmp_path / "t.txt") == {"ok": True}
    assert (tmp_path / "t.txt").read_text() == "top"
    failed = await ctx.adownload_file("nothing.txt", tmp_path / "n.txt")
    assert failed["ok"] is False
    assert "No such file" in failed["error"]
    failed_dir = await ctx.adownload_dir("no-dir", tmp_path / "nd")
    assert failed_dir["ok"] is False
    not_a_dir = await ctx.aupload_dir(local / "top.txt", "x")
    assert not_a_dir["ok"] is False
    assert "not a directory" in not_a_dir["error"]
    await ctx.acleanup()


# --- call_tool -------------------------------------------------------------------------------


async def test_call_tool_runs_sandbox_tools_and_extra_tools(pool: SandboxPool) -> None:
    seen: list[str] = []

    async def custom(arguments: dict[str, Any], invocation: Any) -> str:
        seen.append(invocation.task_id)
        return f"custom {arguments['n']}"

    def blocking(arguments: dict[str, Any], invocation: Any) -> dict[str, Any]:
        return {"thread": threading.current_thread().name}

    extra = [
        SandboxTool("custom", "c", {"type": "object"}, custom, toolset="mine"),
        # A sync handler, as an agent loop's tool may have: run in a worker thread.
        type("SyncTool", (), {"name": "blocking", "handler": staticmethod(blocking)})(),
    ]
    ctx = ToolContext("t", pool, tools=extra)
    answer = await ctx.acall_tool("terminal", {"command": "echo via tool"})
    assert answer == {"output": "via tool\n", "exit_code": 0}
    await ctx.acall_tool("write_file", {"path": "w.txt", "content": "one two"})
    patched = ctx.call_tool("patch", {"path": "w.txt", "old_string": "two", "new_string": "2"})
    assert patched["replacements"] == 1
    assert (await ctx.aread_file("w.txt"))["content"] == "one 2"
    assert await ctx.acall_tool("custom", {"n": 3}) == "custom 3"
    assert seen == ["t"]
    assert (await ctx.acall_tool("blocking"))["thread"] != threading.current_thread().name
    refused = await ctx.acall_tool("read_file", {"path": "absent.txt"})
    assert refused["error"].startswith("FileNotFoundError: no such file or directory: /")
    with pytest.raises(KeyError, match=r"unknown tool 'nope'; known tools: .*terminal"):
        await ctx.acall_tool("nope", {})
    await ctx.acleanup()


# --- web without a provider --------------------------------------------------------------


async def test_web_search_without_provider_is_a_clear_error(pool: SandboxPool) -> None:
    ctx = ToolContext("t", pool)
    with pytest.raises(WebProviderError, match="TAVILY_API_KEY or FIRECRAWL_API_KEY"):
        await ctx.aweb_search("python")
    with pytest.raises(WebProviderError, match="search provider"):
        ctx.web_search("python")
    refused = await ctx.aweb_extract("file:///etc/passwd")
    assert refused == {
        "results": [
            {
                "url": "file:///etc/passwd",
                "error": "only http and https URLs can be opened, not 'file:///etc/passwd'",
            }
        ]
    }
    with pytest.raises(BrowserUnavailableError, match="no browser") as caught:
        await ctx.abrowser_snapshot()
    assert caught.value.kind == "not_configured"
    assert isinstance(caught.value, RuntimeError)  # what callers caught before
    await ctx.acleanup()


# --- concurrency, cancellation, cleanup -------------------------------------------------


async def test_awaitable_twins_at_high_concurrency(pool: SandboxPool) -> None:
    contexts = [ToolContext(f"task-{i}", pool) for i in range(48)]
    answers = await asyncio.gather(
        *(ctx.aterminal(f"sleep 0.2; echo {i}") for i, ctx in enumerate(contexts))
    )
    assert [a["output"] for a in answers] == [f"{i}\n" for i in range(48)]
    assert context_threads() == []  # no helper thread for the awaitable twins
    await asyncio.gather(*(ctx.acleanup() for ctx in contexts))
    assert len(pool) == 0


async def test_sync_calls_from_threads_run_on_the_home_loop(pool: SandboxPool) -> None:
    ctx = ToolContext("shared", pool)  # made on this loop: its home loop

    def work(i: int) -> str:
        return str(ctx.terminal(f"echo {i}")["output"])

    outputs = await asyncio.gather(*(asyncio.to_thread(work, i) for i in range(16)))
    assert outputs == [f"{i}\n" for i in range(16)]
    assert context_threads() == []  # no helper loop was needed
    ctx.cleanup()


async def test_without_a_home_loop_threads_share_one_helper(pool: SandboxPool) -> None:
    ctx = await asyncio.to_thread(ToolContext, "shared", pool)  # made outside any loop

    def work(i: int) -> str:
        return str(ctx.terminal(f"echo {i}")["output"])

    outputs = await asyncio.gather(*(asyncio.to_thread(work, i) for i in range(16)))
    assert outputs == [f"{i}\n" for i in range(16)]
    assert len(context_threads()) == 1
    ctx.cleanup()
    assert context_threads() == []


class LoopBoundSandbox(LocalSandbox):
    """A local sandbox that, like a backend holding one SSH connection, works only on the
    event loop it was started on."""

    async def _start(self) -> None:
        self.home = asyncio.get_running_loop()
        await super()._start()

    async def _on_home_loop(self) -> None:
        token = self.home.create_future()
        self.home.call_soon_threadsafe(token.set_result, None)
        await token  # RuntimeError on any other loop, as asyncio says it

    async def _run(self, script: str, **options: Any) -> ExecResult:
        await self._on_home_loop()
        return await super()._run(script, **options)

    async def _read_bytes(self, path: str) -> bytes:
        await self._on_home_loop()
        return await super()._read_bytes(path)


@pytest.fixture
async def bound_pool() -> AsyncIterator[SandboxPool]:
    def make(task_id: str) -> LoopBoundSandbox:
        return LoopBoundSandbox(SandboxOptions(), task_id=task_id)

    async with SandboxPool(factory=make) as made:
        yield made


async def test_loop_bound_sandbox_from_worker_threads(bound_pool: SandboxPool) -> None:
    sandbox = await bound_pool.get("bound")  # the rollout made it on this loop
    await sandbox.exec("echo data > f.txt")
    ctx = ToolContext("bound", bound_pool)

    def reward() -> tuple[dict[str, Any], dict[str, Any]]:
        return ctx.terminal("cat f.txt"), ctx.read_file("f.txt")

    ran, read = await asyncio.to_thread(reward)
    assert ran == {"output": "data\n", "exit_code": 0}
    assert read["content"] == "data\n"
    await asyncio.to_thread(ctx.cleanup)
    assert sandbox.closed


async def test_loop_bound_sandbox_blocking_call_on_its_loop_says_what_to_do(
    bound_pool: SandboxPool,
) -> None:
    await bound_pool.get("bound")
    ctx = ToolContext("bound", bound_pool)
    assert (await ctx.aterminal("echo twin")) == {"output": "twin\n", "exit_code": 0}
    with pytest.raises(
        ToolContextError, match=r"use the awaitable twins \(await ctx\.aterminal"
    ) as caught:
        ctx.terminal("echo blocked")
    assert caught.value.kind == "loop_blocked"
    await ctx.acleanup()


async def test_a_loop_refusal_is_recognised_by_situation_not_by_wording() -> None:
    def make(task_id: str) -> OwnLoopCheckSandbox:
        return OwnLoopCheckSandbox(SandboxOptions(), task_id=task_id)

    async with SandboxPool(factory=make) as pool:
        await pool.get("own")
        ctx = ToolContext("own", pool)
        with pytest.raises(ToolContextError, match="use the awaitable twins") as caught:
            ctx.terminal("echo blocked")
        assert caught.value.kind == "loop_blocked"
        assert "may only be used from the thread that opened it" in str(caught.value)
        assert (await ctx.aterminal("echo twin"))["output"] == "twin\n"
        await ctx.acleanup()


async def test_a_blocked_home_loop_does_not_deadlock(pool: SandboxPool) -> None:
    await pool.get("blocked")
    ctx = ToolContext("blocked", pool)
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(1) as executor:
        # Blocks this loop until the worker is done: the worker cannot use the home loop.
        answer = executor.submit(ctx.terminal, "echo fallback").result(timeout=30)
    assert answer == {"output": "fallback\n", "exit_code": 0}
    assert time.monotonic() - started < 15
    await ctx.acleanup()


async def test_cancelling_an_awaitable_call_kills_the_command(pool: SandboxPool) -> None:
    ctx = ToolContext("t", pool)
    marker = "hermes-ctx-cancel-4821"
    task = asyncio.create_task(ctx.aterminal(f"bash -c 'sleep 60; echo {marker}'"))
    for _ in range(100):
        if bool(host_processes(marker)):
            break
        await asyncio.sleep(0.05)
    assert bool(host_processes(marker))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await gone(marker, within=5.0) == []
    await ctx.acleanup()


async def test_a_sync_call_from_the_helper_loop_fails_clearly(pool: SandboxPool) -> None:
    async def reenter(arguments: dict[str, Any], invocation: Any) -> Any:
        return ctx.terminal("echo nested")  # blocking call on the helper's own loop

    ctx = ToolContext("t", pool, tools=[SandboxTool("reenter", "", {}, reenter, toolset="x")])
    answer = ctx.call_tool("reenter")
    assert "await the async twin instead" in answer["error"]
    ctx.cleanup()


async def test_cleanup_is_final_and_idempotent(pool: SandboxPool) -> None:
    ctx = ToolContext("t", pool)
    ctx.terminal("echo warm")
    sandbox = await pool.get("t")
    ctx.cleanup()
    ctx.cleanup()
    await ctx.acleanup()
    assert sandbox.closed
    with pytest.raises(RuntimeError, match="was cleaned up"):
        ctx.terminal("echo again")
    with pytest.raises(ToolContextError, match="was cleaned up") as caught:
        await ctx.aread_file("x")
    assert caught.value.kind == "cleaned_up"
    async with ToolContext("u", pool) as other:
        await other.aterminal("true")
    assert "u" not in pool


async def test_a_dead_sandbox_raises_instead_of_scoring(pool: SandboxPool) -> None:
    ctx = ToolContext("t", pool)
    await ctx.aterminal("echo state > kept.txt")
    sandbox = await pool.get("t")
    await sandbox.close()  # the backend died under the reward code
    # Never a fresh, empty sandbox that would make the model's work look missing (score 0):
    with pytest.raises(SandboxClosedError):
        await ctx.aterminal("cat kept.txt")
    with pytest.raises(SandboxClosedError):
        ctx.read_file("kept.txt")
    with pytest.raises(SandboxClosedError):
        await ctx.acall_tool("terminal", {"command": "true"})
    await ctx.acleanup()


async def test_a_rollout_sandbox_closed_before_the_reward_raises(pool: SandboxPool) -> None:
    rollout = await pool.get("t")
    await rollout.exec("echo state > kept.txt")
    await rollout.close()  # expired between the rollout and the reward
    ctx = ToolContext("t", pool)
    with pytest.raises(SandboxClosedError, match="'t' was closed"):
        await ctx.aterminal("cat kept.txt")
    await ctx.acleanup()
    fresh = ToolContext("never-rolled-out", pool)  # no rollout sandbox: one is made
    assert (await fresh.aterminal("echo hi"))["output"] == "hi\n"
    await fresh.acleanup()


def test_ctrl_c_during_a_sync_call_kills_the_command(tmp_path: Path) -> None:
    import subprocess
    import sys
    import textwrap

    marker = "hermes-ctx-sigint-7730"
    script = tmp_path / "reward.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import os, signal, threading
            from hermes_sandbox import SandboxPool
            from hermes_sandbox._context import ToolContext

            ctx = ToolContext("k", SandboxPool("local"))
            ctx.terminal("true")
            threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
            try:
                ctx.terminal("sleep 60; echo {marker}")
            except KeyboardInterrupt:
                print("interrupted", flush=True)
            ctx.cleanup()
            print("clean", flush=True)
            """
        )
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.stdout.split() == ["interrupted", "clean"], done.stderr
    assert time.monotonic() - started < 30
    assert not bool(host_processes(marker))
