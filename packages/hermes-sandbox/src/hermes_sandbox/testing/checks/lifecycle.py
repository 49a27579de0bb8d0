"""Conformance checks of isolation and lifecycle: the host environment stays out,
``close()`` is final and leaves nothing, pools are torn down however a run ends,
lifetimes expire, bad options are refused."""

from __future__ import annotations

import asyncio
import os

from hermes_sandbox._errors import SandboxClosedError
from hermes_sandbox._pool import SandboxPool
from hermes_sandbox.testing.bench import Bench
from hermes_sandbox.testing.probes import (
    appeared,
    expect,
    expect_equal,
    expect_raises,
    gone,
    host_processes,
    sleeper,
    token,
)

__all__ = ["CHECKS", "SYSTEM_VARIABLES"]

#: Environment variables a backend or image may set on its own (not leaks when equal).
SYSTEM_VARIABLES = frozenset(
    {
        "PATH", "HOME", "LANG", "LANGUAGE", "LC_ALL", "PWD", "OLDPWD", "SHLVL", "_", "TERM",
        "HOSTNAME", "USER", "LOGNAME", "SHELL", "MAIL", "TZ", "DEBIAN_FRONTEND", "container",
    }
)  # fmt: skip


async def host_environment_is_invisible(bench: Bench) -> None:
    """Commands see the ``env`` they were given and nothing of the host's environment
    (API keys included); under pytest, ``PYTEST_CURRENT_TEST`` is a canary."""
    async with bench.sandbox(env={"HERMES_VISIBLE": "given on purpose"}) as sandbox:
        result = await sandbox.exec("env")
        seen = dict(line.split("=", 1) for line in result.output.splitlines() if "=" in line)
        expect_equal(seen.get("HERMES_VISIBLE"), "given on purpose", "a variable passed in env")
        expect("PYTEST_CURRENT_TEST" not in seen, "PYTEST_CURRENT_TEST reached the sandbox")
        leaked = sorted(
            name
            for name, value in os.environ.items()
            if name not in SYSTEM_VARIABLES
            and not name.startswith("LC_")
            and seen.get(name) == value
        )
        expect_equal(leaked, [], "host variables visible in the sandbox")


async def close_is_idempotent_and_final(bench: Bench) -> None:
    """``close()`` works unstarted and twice; a closed sandbox raises
    ``SandboxClosedError``."""
    sandbox = bench.sandbox()
    await sandbox.close()  # never started: nothing to do
    sandbox = bench.sandbox()
    async with sandbox:
        expect_equal((await sandbox.exec("echo hi")).output, "hi\n", "echo hi")
    expect(sandbox.closed, "a sandbox is closed after its 'async with'")
    await sandbox.close()
    with expect_raises(SandboxClosedError, "exec on a closed sandbox"):
        await sandbox.exec("echo again")
    with expect_raises(SandboxClosedError, "read_file on a closed sandbox"):
        await sandbox.read_file("anything")


async def close_kills_everything_and_removes_the_workdir(bench: Bench) -> None:
    """``close()`` kills background and ``nohup`` processes (and removes the workdir
    where sandbox paths are host paths)."""
    name = token()
    sandbox = await bench.started()
    await sandbox.write_file("leftover.txt", "x")
    await sandbox.exec(f"{sleeper(name)} & nohup bash -c '{sleeper(name)}' >/dev/null 2>&1 &")
    await appeared(name, 2, within=5)
    await sandbox.close()
    expect_equal(await gone(name), [], "processes left after close()")
    if bench.has("host_paths"):
        exists = await asyncio.to_thread(os.path.exists, sandbox.workdir)
        expect(not exists, f"the workdir {sandbox.workdir} is still there after close()")


async def _pool_with_sleepers(bench: Bench, name: str, count: int = 3) -> SandboxPool:
    """A pool of ``count`` started sandboxes, each with a background process ``name``."""
    pool = SandboxPool(factory=lambda task_id: bench.sandbox(task_id=task_id))
    boxes = await asyncio.gather(*(pool.get(f"task-{i}") for i in range(count)))
    await asyncio.gather(*(box.exec(f"{sleeper(name)} &") for box in boxes))
    await appeared(name, count, within=10)
    return pool


def _nothing_left(bench: Bench, workdirs: list[str], name: str) -> list[str]:
    """What a torn-down pool left: processes, host workdirs, the provider's leftovers."""
    left = [f"process {pid}" for pid in host_processes(name)]
    if bench.has("host_paths"):
        left += [path for path in workdirs if os.path.exists(path)]
    if bench.provider.leaked is not None:
        left += bench.provider.leaked()
    return left


async def cancelling_a_run_closes_its_pool(bench: Bench) -> None:
    """Cancelling the task that runs a pool (what Ctrl-C under ``asyncio.run`` does)
    while commands run closes every sandbox and leaves nothing."""
    name = token()
    running = asyncio.Event()
    workdirs: list[str] = []

    async def run() -> None:
        pool = await _pool_with_sleepers(bench, name)
        async with pool:
            boxes = [await pool.get(task_id) for task_id in pool.task_ids]
            workdirs.extend(box.workdir for box in boxes)
            foreground = [asyncio.ensure_future(b.exec(sleeper(name), timeout=600)) for b in boxes]
            await appeared(name, 2 * len(boxes), within=10)
            running.set()
            await asyncio.gather(*foreground)

    task = asyncio.ensure_future(run())
    await asyncio.wait_for(running.wait(), 60)
    task.cancel()
    with expect_raises(asyncio.CancelledError, "awaiting the cancelled run"):
        await task
    expect_equal(await gone(name), [], "processes left after the cancelled run")
    left = await asyncio.to_thread(_nothing_left, bench, workdirs, name)
    expect_equal(left, [], "what the cancelled run left")


def _abandon_pool(bench: Bench, name: str) -> tuple[SandboxPool, list[str]]:
    """On a private event loop (as a program that ends without closing its pool): a
    pool with running sandboxes, the loop then closed."""

    async def make() -> tuple[SandboxPool, list[str]]:
        pool = await _pool_with_sleepers(bench, name)
        return pool, [(await pool.get(task_id)).workdir for task_id in pool.task_ids]

    return asyncio.run(make())


async def a_pool_left_open_is_torn_down_without_an_event_loop(bench: Bench) -> None:
    """``SandboxPool.close_now()`` (what the interpreter-exit hook runs) tears down a pool
    whose event loop has ended, and the pool refuses further use."""
    name = token()
    pool, workdirs = await asyncio.to_thread(_abandon_pool, bench, name)
    expect(len(host_processes(name)) >= 3, "the abandoned pool's processes are running")
    await asyncio.to_thread(pool.close_now)
    expect_equal(await gone(name), [], "processes left after close_now()")
    left = await asyncio.to_thread(_nothing_left, bench, workdirs, name)
    expect_equal(left, [], "what close_now() left")
    with expect_raises(RuntimeError, "get() on a torn-down pool", match="closed"):
        await pool.get("task-0")


async def lifetime_expiry_closes_the_sandbox(bench: Bench) -> None:
    """Past ``terminal_lifetime`` the sandbox closes and says so."""
    async with bench.sandbox(terminal_lifetime=2) as sandbox:
        expect_equal((await sandbox.exec("true")).exit_code, 0, "exit code of true")
        await asyncio.sleep(max(0.0, sandbox.remaining_lifetime) + 0.1)
        with expect_raises(SandboxClosedError, "exec after the lifetime", match="lifetime"):
            await sandbox.exec("true")
        expect(sandbox.closed, "the sandbox is closed after its lifetime")


async def bad_options_are_rejected_clearly(bench: Bench) -> None:
    """Unknown backend options and non-positive timeouts raise ``ValueError`` naming
    them."""
    with expect_raises(ValueError, "an unknown option", match="hermes_no_such_option"):
        await bench.started(hermes_no_such_option=1)
    with expect_raises(ValueError, "terminal_timeout=0", match="terminal_timeout"):
        bench.sandbox(terminal_timeout=0)
    async with bench.sandbox() as sandbox:
        with expect_raises(ValueError, "exec with timeout=0", match="timeout"):
            await sandbox.exec("true", timeout=0)


CHECKS = [
    host_environment_is_invisible,
    close_is_idempotent_and_final,
    close_kills_everything_and_removes_the_workdir,
    cancelling_a_run_closes_its_pool,
    a_pool_left_open_is_torn_down_without_an_event_loop,
    lifetime_expiry_closes_the_sandbox,
    bad_options_are_rejected_clearly,
]
