"""What the conformance checks use to look at a sandbox from outside: expectations that
fail with a ``ConformanceError`` naming what was seen, and probes of this host's
processes (through ``/proc``) by a unique token in their command line.

Processes are found by ``exec -a TOKEN``, which also finds the processes of local
containers; a backend whose commands run on another machine passes those checks
trivially.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hermes_sandbox._errors import ConformanceError

__all__ = [
    "CheckSkipped",
    "Raised",
    "appeared",
    "expect",
    "expect_equal",
    "expect_raises",
    "gone",
    "host_processes",
    "sleeper",
    "token",
]


class CheckSkipped(Exception):
    """Raised by a check that does not apply to the provider (the reason is its text)."""


def expect(condition: object, message: str) -> None:
    """Fail the check with ``message`` unless ``condition`` is true.

    Raises:
        ConformanceError: if ``condition`` is false.
    """
    if not condition:
        raise ConformanceError(message)


def expect_equal(actual: Any, expected: Any, what: str) -> None:
    """Fail the check unless ``actual == expected``; the message shows both.

    Raises:
        ConformanceError: if they differ.
    """
    if actual != expected:
        raise ConformanceError(f"{what}: expected {expected!r}, got {actual!r}")


class Raised:
    """What ``expect_raises`` caught (``value`` is set once the block has raised)."""

    value: BaseException | None = None


@contextlib.contextmanager
def expect_raises(
    kind: type[BaseException] | tuple[type[BaseException], ...],
    what: str,
    *,
    match: str | None = None,
) -> Iterator[Raised]:
    """The block must raise ``kind`` (with ``match`` found in its text, if given).
    Other exceptions pass through, and fail the check as unexpected errors.

    Raises:
        ConformanceError: if the block raised nothing, or a text not matching ``match``.
    """
    caught = Raised()
    try:
        yield caught
    except kind as exc:
        caught.value = exc
        if match is not None and not re.search(match, str(exc)):
            raise ConformanceError(
                f"{what}: raised {type(exc).__name__}({str(exc)!r}), which does not match {match!r}"
            ) from exc
        return
    names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
    raise ConformanceError(f"{what}: expected {names}, nothing was raised")


def token() -> str:
    """A unique process name to find on this host."""
    return f"hermes-probe-{uuid.uuid4().hex[:12]}"


def sleeper(name: str, seconds: int = 300) -> str:
    """A bash fragment starting a process named ``name`` that sleeps."""
    return f"(exec -a {name} sleep {seconds})"


def host_processes(name: str) -> list[int]:
    """Live processes (not zombies) whose command line contains ``name``."""
    needle = name.encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            if needle in Path(f"/proc/{entry}/cmdline").read_bytes():
                found.append(int(entry))
    return found


async def gone(name: str, within: float = 10.0) -> list[int]:
    """Wait until no process carries ``name``; what is still there after ``within``."""
    deadline = time.monotonic() + within
    while True:
        left = await asyncio.to_thread(host_processes, name)
        if not left or time.monotonic() > deadline:
            return left
        await asyncio.sleep(0.05)


async def appeared(name: str, count: int, within: float = 10.0) -> None:
    """Wait until at least ``count`` processes carry ``name`` (or ``within`` passed)."""
    deadline = time.monotonic() + within
    while len(await asyncio.to_thread(host_processes, name)) < count:
        if time.monotonic() > deadline:
            return
        await asyncio.sleep(0.05)
