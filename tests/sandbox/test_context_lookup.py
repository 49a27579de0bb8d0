"""ToolContext(task_id) without a pool: the pool a running environment bound."""

from __future__ import annotations

import asyncio

import pytest

from hermes_sandbox import SandboxPool
from hermes_sandbox._context import ToolContext
from hermes_sandbox._pool import bind_sandbox_pool, current_sandbox_pool


async def test_the_reference_spelling_reaches_the_bound_pool_s_sandbox() -> None:
    async with SandboxPool("local", terminal_timeout=20, isolation="none") as pool:
        sandbox = await pool.get("task-1")
        await sandbox.write_file("marker.txt", "from the rollout")
        with bind_sandbox_pool(pool):

            async def reward() -> str:  # a task started inside sees the bound pool
                ctx = ToolContext("task-1")
                try:
                    return str((await ctx.aread_file("marker.txt"))["content"])
                finally:
                    await ctx.acleanup()

            assert await asyncio.create_task(reward()) == "from the rollout"
        assert current_sandbox_pool() is None


def test_without_a_bound_pool_it_is_one_clear_error() -> None:
    with pytest.raises(TypeError, match=r"ToolContext\('t'\) has no pool: pass pool="):
        ToolContext("t")
