"""Conformance checks of the optional capabilities (``CAPABILITIES``): each is skipped
for a provider that does not declare it."""

from __future__ import annotations

import asyncio
import socket
import time

from hermes_sandbox.testing.bench import Bench
from hermes_sandbox.testing.probes import expect, expect_equal

__all__ = ["CHECKS"]


async def sixty_four_sandboxes_at_once(bench: Bench) -> None:
    """64 sandboxes start, run and keep their own state at once (``concurrency_64``)."""
    bench.needs("concurrency_64")
    sandboxes = [bench.sandbox() for _ in range(64)]
    try:
        await asyncio.gather(*(s.start() for s in sandboxes))
        results = await asyncio.gather(
            *(s.exec(f"echo {i}; export N={i}") for i, s in enumerate(sandboxes))
        )
        expect_equal(
            [r.output for r in results], [f"{i}\n" for i in range(64)], "outputs of 64 sandboxes"
        )
        again = await asyncio.gather(*(s.exec('echo "$N"') for s in sandboxes))
        expect_equal(
            [r.output for r in again], [f"{i}\n" for i in range(64)], "each sandbox's own state"
        )
    finally:
        await asyncio.gather(*(s.close() for s in sandboxes))


async def fork_bomb_is_contained_by_the_process_limit(bench: Bench) -> None:
    """A fork bomb under ``pids_limit`` does not take the sandbox down
    (``process_limit``)."""
    bench.needs("process_limit")
    async with bench.sandbox(pids_limit=64) as sandbox:
        started = time.monotonic()
        await sandbox.exec("bomb() { bomb | bomb & }; bomb; sleep 60", timeout=10)
        expect(time.monotonic() - started < 60, "the fork bomb's command returned in time")
        survived = await sandbox.exec("echo survived", timeout=30)
        expect_equal(survived.output, "survived\n", "a command after the fork bomb")


async def network_off_leaves_only_loopback(bench: Bench) -> None:
    """``network=False`` leaves only ``lo`` and cannot reach a port on the host
    (``network_off``)."""
    bench.needs("network_off")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        async with bench.sandbox(network=False) as sandbox:
            interfaces = await sandbox.exec("ls /sys/class/net")
            expect_equal(interfaces.output.split(), ["lo"], "network interfaces")
            probe = await sandbox.exec(
                f"(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null; echo rc=$?", timeout=20
            )
            expect(probe.output.strip() != "rc=0", "the sandbox reached a port on the host")


CHECKS = [
    sixty_four_sandboxes_at_once,
    fork_bomb_is_contained_by_the_process_limit,
    network_off_leaves_only_loopback,
]
