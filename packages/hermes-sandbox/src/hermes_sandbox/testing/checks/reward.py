"""Conformance checks of reward code's access to a sandbox through ``ToolContext``."""

from __future__ import annotations

from typing import Any

from hermes_sandbox._context import ToolContext
from hermes_sandbox._errors import ConformanceError, ToolContextError
from hermes_sandbox._pool import SandboxPool
from hermes_sandbox.testing.bench import Bench
from hermes_sandbox.testing.probes import expect, expect_equal

__all__ = ["CHECKS", "LIMITED"]

_TASK = "reward"


async def blocking_tool_context_calls_on_the_sandboxs_loop(bench: Bench) -> None:
    """Blocking ``ToolContext`` calls made inside a coroutine on the sandbox's own event
    loop (``ctx.terminal(...)`` in an ``async def compute_reward``) work: commands,
    timeouts, files and ``cleanup``; a provider declaring the limit ``blocking_on_loop``
    must instead raise ``ToolContextError(kind="loop_blocked")`` and keep the awaitable
    twins working."""
    declared = bench.limit("blocking_on_loop")
    pool = SandboxPool(factory=lambda task_id: bench.sandbox())
    try:
        sandbox = await pool.get(_TASK)  # the rollout's sandbox, made on this loop
        await sandbox.exec("echo made > rollout.txt")
        ctx = ToolContext(_TASK, pool)
        # Every call below blocks this loop (the sandbox's) until it returns, as a
        # synchronous call in a reward coroutine does.
        if declared is not None:
            _expect_refusal(ctx)
            expect_equal(
                await ctx.aterminal("cat rollout.txt"),
                {"output": "made\n", "exit_code": 0},
                "await ctx.aterminal after the refused blocking call",
            )
            await ctx.acleanup()
            return
        expect_equal(
            ctx.terminal("cat rollout.txt; echo more >> rollout.txt"),
            {"output": "made\n", "exit_code": 0},
            "ctx.terminal on the sandbox's loop",
        )
        timed_out = ctx.terminal("echo started; sleep 60", timeout=1)
        expect_equal(timed_out["exit_code"], 124, "exit code of ctx.terminal at its timeout")
        expect_equal(ctx.write_file("from-reward.txt", "reward")["bytes_written"], 6, "write")
        read = ctx.read_file("rollout.txt")
        expect_equal(read.get("content"), "made\nmore\n", "ctx.read_file on the sandbox's loop")
        missing = ctx.read_file("no-such-file.txt")
        expect(missing.get("content") is None and missing.get("error"), f"missing: {missing}")
        # The loop drives the sandbox as before once the blocking calls are done.
        after = await sandbox.exec("cat from-reward.txt")
        expect_equal(after.output, "reward", "the rollout's loop reading what the reward wrote")
        expect_equal(
            await ctx.aterminal("echo twin"),
            {"output": "twin\n", "exit_code": 0},
            "await ctx.aterminal after blocking calls",
        )
        ctx.cleanup()  # blocking as well: it closes the sandbox
        expect(sandbox.closed, "ctx.cleanup() on the sandbox's loop left the sandbox open")
    finally:
        await pool.close_all()


def _expect_refusal(ctx: ToolContext) -> None:
    try:
        answer: Any = ctx.terminal("echo works")
    except ToolContextError as exc:
        expect_equal(exc.kind, "loop_blocked", f"kind of the ToolContextError ({exc})")
        return
    raise ConformanceError(
        "the provider declares the limit 'blocking_on_loop', yet a blocking ctx.terminal "
        f"on the sandbox's loop worked ({answer!r}); remove the declaration"
    )


CHECKS = [blocking_tool_context_calls_on_the_sandboxs_loop]

#: The known limit (``testing.LIMITS``) each check verifies when a provider declares it.
LIMITED = {blocking_tool_context_calls_on_the_sandboxs_loop.__name__: "blocking_on_loop"}
