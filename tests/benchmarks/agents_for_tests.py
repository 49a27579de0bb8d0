"""Agents the trial tests drive (importable as ``tests.benchmarks.agents_for_tests:Class``)."""

from __future__ import annotations

import asyncio

from hermes_benchmarks import Task
from hermes_sandbox import Sandbox


class RewardWriter:
    """Cheats: writes a perfect reward where the verifier will look, and does nothing else."""

    name = "reward-writer"

    async def run(self, task: Task, sandbox: Sandbox, *, timeout: float) -> None:
        await sandbox.exec("mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt")


class BackgroundRewriter:
    """Cheats: leaves a detached process rewriting a perfect reward, then returns."""

    name = "background-rewriter"

    async def run(self, task: Task, sandbox: Sandbox, *, timeout: float) -> None:
        loop = "while :; do mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; done"
        await sandbox.exec(f"setsid nohup bash -c '{loop}' >/dev/null 2>&1 &")
        await sandbox.exec("sleep 0.3")


class SlowRewriter:
    """Cheats: leaves a detached process rewriting a perfect reward ten times a second."""

    name = "slow-rewriter"

    async def run(self, task: Task, sandbox: Sandbox, *, timeout: float) -> None:
        loop = (
            "while :; do mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; "
            "sleep 0.1; done"
        )
        await sandbox.exec(f"setsid nohup bash -c '{loop}' >/dev/null 2>&1 &")


class SessionPoisoner:
    """Cheats: puts a fake ``cat`` first on the ``PATH`` of the agent's shell session."""

    name = "session-poisoner"

    async def run(self, task: Task, sandbox: Sandbox, *, timeout: float) -> None:
        await sandbox.exec(
            "mkdir -p /tmp/evil && printf '#!/bin/sh\\necho hello, world\\n' > /tmp/evil/cat"
            " && chmod +x /tmp/evil/cat && export PATH=/tmp/evil:$PATH"
            " && cat() { echo 'hello, world'; } && export -f cat"
        )


class Sleeper:
    """Never finishes: stopped at its timeout."""

    name = "sleeper"

    async def run(self, task: Task, sandbox: Sandbox, *, timeout: float) -> None:
        await sandbox.exec("sleep 3600 &")
        await asyncio.sleep(3600)


class Crasher:
    """Raises: an agent crash (infrastructure, retried)."""

    name = "crasher"

    async def run(self, task: Task, sandbox: Sandbox, *, timeout: float) -> None:
        raise RuntimeError("agent exploded")


class NotAnAgent:
    """Has no ``run``."""

    name = "nothing"


class SeparateTamperer:
    """Leaves wrong answers in the tasks_separate tasks' files, and cheats every way that
    works on a verifier sharing its container: a ``cat`` on the default ``PATH`` that
    prints each expected answer, a reward written ahead, a planted ``/tests/test.sh``, a
    background process rewriting the reward, a link out of ``/logs/artifacts``."""

    name = "separate-tamperer"

    async def run(self, task: Task, sandbox: Sandbox, *, timeout: float) -> None:
        liar = (
            '#!/bin/sh\ncase "$1" in\n*answer.txt) echo 42;;\n*work.log) echo solved;;\n'
            "*verifier-marker) echo verifier-image;;\n*result.txt) echo ok;;\n"
            '*) exec /bin/cat "$@";;\nesac\n'
        )
        await sandbox.write_file("/usr/local/bin/cat", liar)
        await sandbox.exec(
            "chmod +x /usr/local/bin/cat && echo wrong > /app/answer.txt && "
            "echo wrong > /app/result.txt && mkdir -p /app/bin /logs/verifier /logs/artifacts"
            " /tests && printf '#!/bin/sh\\necho 42\\n' > /app/answer.sh && "
            "printf '#!/bin/sh\\necho ok\\n' > /app/bin/check && "
            "chmod +x /app/answer.sh /app/bin/check && echo 1 > /logs/verifier/reward.txt && "
            "printf '#!/bin/bash\\necho 1 > /logs/verifier/reward.txt\\n' > /tests/test.sh"
            " && ln -s /logs/verifier/reward.txt /logs/artifacts/reward-link"
        )
        loop = "while :; do mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; done"
        await sandbox.exec(f"setsid nohup bash -c '{loop}' >/dev/null 2>&1 &")
