"""Conformance checks of what a verifier needs after the agent's turn: ``stop_processes``
leaves nothing of the agent running, and ``exec(..., session=False)`` is out of reach of
what the agent did to the shell session."""

from __future__ import annotations

import asyncio

from hermes_sandbox._errors import SandboxClosedError
from hermes_sandbox.testing.bench import Bench
from hermes_sandbox.testing.probes import (
    appeared,
    expect,
    expect_equal,
    expect_raises,
    gone,
    sleeper,
    token,
)

__all__ = ["CHECKS"]


async def stop_processes_kills_everything_the_commands_left(bench: Bench) -> None:
    """``stop_processes()`` kills background writers, ``setsid nohup`` daemons and
    double-forked children; the sandbox and its session stay usable; a second call is
    harmless."""
    name = token()
    async with bench.sandbox() as sandbox:
        await sandbox.stop_processes()  # nothing ran yet
        writer = "while true; do echo x >> growing.txt; sleep 0.05; done"
        started = await sandbox.exec(
            f"(exec -a {name} bash -c '{writer}') & "
            f"setsid nohup bash -c '{sleeper(name)}' </dev/null >/dev/null 2>&1 & "
            f"bash -c '{sleeper(name)} &' </dev/null >/dev/null 2>&1; "
            "mkdir -p kept && cd kept && export HERMES_KEPT=yes; echo started",
            timeout=30,
        )
        expect_equal(started.output, "started\n", "output of the command starting the jobs")
        await appeared(name, 3, within=10)
        await sandbox.stop_processes()
        expect_equal(await gone(name), [], "processes left after stop_processes()")
        before = len(await sandbox.read_file("growing.txt"))
        await asyncio.sleep(0.5)
        after = len(await sandbox.read_file("growing.txt"))
        expect_equal(after, before, "size of the background writer's file 0.5 s after the stop")
        expect_equal((await sandbox.exec("echo ok")).output, "ok\n", "a command after the stop")
        result = await sandbox.exec('echo "${PWD##*/} $HERMES_KEPT"')
        expect_equal(result.output, "kept yes\n", "the session's cwd and exports after the stop")
        await sandbox.stop_processes()
        expect_equal((await sandbox.exec("echo again")).output, "again\n", "after a second stop")
    with expect_raises(SandboxClosedError, "stop_processes() on a closed sandbox"):
        await sandbox.stop_processes()


async def stop_processes_ends_a_running_command(bench: Bench) -> None:
    """``stop_processes()`` during an ``exec`` kills that command too (it returns, not
    at its timeout)."""
    name = token()
    async with bench.sandbox() as sandbox:
        running = asyncio.ensure_future(
            sandbox.exec(f"{sleeper(name)} & {sleeper(name)}", timeout=120)
        )
        try:
            await appeared(name, 2, within=10)
            await sandbox.stop_processes()
            result = await asyncio.wait_for(running, 60)
        finally:
            running.cancel()
        expect(not result.timed_out, f"the stopped command ran to its timeout: {result!r}")
        expect(result.exit_code != 0, f"the stopped command reports success: {result!r}")
        expect_equal(await gone(name), [], "processes left after stop_processes()")
        expect_equal((await sandbox.exec("echo ok")).output, "ok\n", "a command after the stop")


# Poison a verifier could meet: a variable, a cwd, a PATH entry shadowing ``head``, and a
# function shadowing ``cat`` in every bash started later (through ``BASH_ENV``).
_POISON = (
    "mkdir -p poison/bin && printf 'the truth\\n' > note.txt && "
    "printf '#!/bin/sh\\necho path-poisoned\\n' > poison/bin/head && chmod +x poison/bin/head && "
    "printf 'cat() { echo function-poisoned; }\\n' > poison/env.sh && "
    'export BASH_ENV="$PWD/poison/env.sh" PATH="$PWD/poison/bin:$PATH" HERMES_POISON=1 && '
    "cat() { echo function-poisoned; } && export -f cat && cd poison"
)
_LOOK = (
    'echo "var=${HERMES_POISON-unset}"; echo "cwd=${PWD##*/}"; head -n 1 ../note.txt 2>&1; '
    "bash -c 'cat ../note.txt' 2>&1"
)


async def a_command_outside_the_session_sees_none_of_its_state(bench: Bench) -> None:
    """``exec(..., session=False)`` sees no exported variable, cwd, PATH change or
    function of earlier commands, runs in ``workdir`` with the configured ``env``,
    and leaves the session as it was."""
    async with bench.sandbox(env={"HERMES_GIVEN": "configured"}) as sandbox:
        await sandbox.exec(_POISON)
        inside = await sandbox.exec(_LOOK)
        expect_equal(
            inside.output,
            "var=1\ncwd=poison\npath-poisoned\nfunction-poisoned\n",
            "the poisoned session (the check's own set-up)",
        )
        outside = await sandbox.exec(
            'echo "var=${HERMES_POISON-unset} given=$HERMES_GIVEN"; pwd; '
            "head -n 1 note.txt 2>&1; bash -c 'cat note.txt' 2>&1; cat note.txt; "
            'type -t cat; echo "${BASH_ENV-no BASH_ENV}"',
            session=False,
        )
        expect_equal(
            outside.output,
            f"var=unset given=configured\n{sandbox.workdir}\nthe truth\nthe truth\nthe truth\n"
            "file\nno BASH_ENV\n",
            "a command outside the session",
        )
        changed = await sandbox.exec(
            "cd / && export HERMES_OUTSIDE=1 HERMES_POISON=2; exit 3", session=False
        )
        expect_equal(changed.exit_code, 3, "exit code of a command outside the session")
        after = await sandbox.exec(_LOOK + '; echo "outside=${HERMES_OUTSIDE-unset}"')
        expect_equal(
            after.output,
            "var=1\ncwd=poison\npath-poisoned\nfunction-poisoned\noutside=unset\n",
            "the session after commands outside it",
        )


async def a_command_outside_the_session_is_bounded_like_any(bench: Bench) -> None:
    """``exec(..., session=False)`` has the same timeout (its whole tree killed) and
    output bound as a session command."""
    name = token()
    async with bench.sandbox(max_output_chars=1000) as sandbox:
        result = await sandbox.exec(
            f"echo before; {sleeper(name)} & {sleeper(name)}", timeout=1.5, session=False
        )
        expect(result.timed_out, "the result says timed_out")
        expect_equal(result.exit_code, 124, "exit code at the timeout")
        expect(result.output.startswith("before\n"), f"output so far kept: {result.output!r}")
        expect_equal(await gone(name), [], "processes of the command left after its timeout")
        big = await sandbox.exec("seq 1 100000", session=False)
        expect(big.truncated, "100000 lines over a 1000-character limit are truncated")
        expect(big.output.endswith("100000\n"), f"tail kept: {big.output[-50:]!r}")


async def per_call_env_workdir_and_user_outside_the_session(bench: Bench) -> None:
    """``exec(..., session=False, env=..., workdir=...)`` adds variables and picks the
    start directory for that one command only; overrides with ``session=True`` and a bad
    variable name are refused with ``ValueError``; ``user=`` runs as that user on a
    backend with ``supports_user`` and is refused with ``ValueError`` elsewhere."""
    async with bench.sandbox(env={"HERMES_GIVEN": "configured"}) as sandbox:
        await sandbox.exec("mkdir -p sub && cd sub && export HERMES_SESSION=kept")
        result = await sandbox.exec(
            'echo "$HERMES_GIVEN $HERMES_CALL ${HERMES_SESSION-unset}"; pwd',
            session=False,
            env={"HERMES_CALL": "it's per call", "HERMES_GIVEN": "overridden"},
            workdir="elsewhere/deep",
        )
        expect_equal(
            result.output,
            f"overridden it's per call unset\n{sandbox.resolve('elsewhere/deep')}\n",
            "a command with per-call env and workdir",
        )
        plain = await sandbox.exec('echo "$HERMES_GIVEN ${HERMES_CALL-unset}"; pwd', session=False)
        expect_equal(
            plain.output,
            f"configured unset\n{sandbox.workdir}\n",
            "the next command outside the session",
        )
        inside = await sandbox.exec('echo "${PWD##*/} $HERMES_SESSION ${HERMES_CALL-unset}"')
        expect_equal(inside.output, "sub kept unset\n", "the session after per-call overrides")
        with expect_raises(ValueError, "exec(env=...) in the session"):
            await sandbox.exec("true", env={"A": "1"})
        with expect_raises(ValueError, "exec(workdir=...) in the session"):
            await sandbox.exec("true", workdir="/tmp")
        with expect_raises(ValueError, "exec(env=...) with a name that is not a variable"):
            await sandbox.exec("true", session=False, env={"A-B": "1"})
        if sandbox.supports_user:
            who = await sandbox.exec("id -u", session=False, user="4321")
            expect_equal(who.output, "4321\n", "exec(user='4321') on a backend with users")
        else:
            with expect_raises(ValueError, "exec(user=...) on a backend without users"):
                await sandbox.exec("id -u", session=False, user="4321")


CHECKS = [
    stop_processes_kills_everything_the_commands_left,
    stop_processes_ends_a_running_command,
    a_command_outside_the_session_sees_none_of_its_state,
    a_command_outside_the_session_is_bounded_like_any,
    per_call_env_workdir_and_user_outside_the_session,
]
