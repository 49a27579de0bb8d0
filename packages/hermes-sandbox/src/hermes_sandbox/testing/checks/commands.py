"""Conformance checks of running commands: exit codes, output, timeouts, cancellation."""

from __future__ import annotations

import asyncio
import time
import tracemalloc

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


async def exit_codes(bench: Bench) -> None:
    """Exit codes come back as the shell sets them (127 for a missing command, 137 for
    SIGKILL), with the duration measured."""
    async with bench.sandbox() as sandbox:
        for command, code in (("true", 0), ("false", 1), ("exit 3", 3), ("(exit 42)", 42)):
            expect_equal((await sandbox.exec(command)).exit_code, code, f"exit code of {command!r}")
        missing = await sandbox.exec("hermes-no-such-command-xyz")
        expect_equal(missing.exit_code, 127, "exit code of a missing command")
        expect(
            "hermes-no-such-command-xyz" in missing.output,
            f"a missing command's output names it: {missing.output!r}",
        )
        killed = await sandbox.exec("kill -9 $$")
        expect_equal(killed.exit_code, 137, "exit code of a shell killed by SIGKILL")
        expect(not killed.timed_out, "a killed command is not reported as timed out")
        result = await sandbox.exec("echo done")
        expect_equal(result.to_dict(), {"output": "done\n", "exit_code": 0}, "echo done")
        expect(result.duration > 0, f"the duration is measured, got {result.duration!r}")


async def a_closed_pipe_ends_the_writer_quietly(bench: Bench) -> None:
    """SIGPIPE has its default action in commands (Python itself ignores it)."""
    async with bench.sandbox() as sandbox:
        result = await sandbox.exec('yes | head -n 2; echo "status ${PIPESTATUS[0]}"')
        expect_equal(result.output, "y\ny\nstatus 141\n", "output of yes | head")


async def stdout_and_stderr_interleave_in_order(bench: Bench) -> None:
    """stdout and stderr come back as one stream, in the order they were written."""
    async with bench.sandbox() as sandbox:
        result = await sandbox.exec(
            "echo out1; echo err1 >&2; sleep 0.05; echo out2; echo err2 >&2"
        )
        expect_equal(result.output, "out1\nerr1\nout2\nerr2\n", "interleaved output")


async def commands_with_awkward_quoting_run_verbatim(bench: Bench) -> None:
    """Quotes, dollars, backslashes, backticks and heredocs reach bash unchanged."""
    async with bench.sandbox() as sandbox:
        command = (
            "printf '%s|' \"it's\" 'a \"quoted\" word' '$HOME' 'back\\slash' '`tick`'\n"
            "cat <<'EOF'\nheredoc $NOT_EXPANDED\nEOF"
        )
        result = await sandbox.exec(command)
        expect_equal(
            result.output,
            'it\'s|a "quoted" word|$HOME|back\\slash|`tick`|heredoc $NOT_EXPANDED\n',
            "output of the quoted command",
        )
        expect_equal(result.exit_code, 0, "exit code of the quoted command")


async def stdin_is_empty(bench: Bench) -> None:
    """A command's stdin is empty (``cat`` ends at once)."""
    async with bench.sandbox() as sandbox:
        result = await sandbox.exec("cat; echo rc=$?", timeout=10)
        expect_equal(result.output, "rc=0\n", "output of cat with an empty stdin")
        expect(not result.timed_out, "cat with an empty stdin timed out")


async def unicode_output(bench: Bench) -> None:
    """UTF-8 output comes back as the same text."""
    async with bench.sandbox() as sandbox:
        text = "héllo wörld ✓ 日本語 🚀 ĳ"
        result = await sandbox.exec(f"printf '%s\\n' '{text}'")
        expect_equal(result.output, text + "\n", "unicode output")


async def binary_output_is_decoded_with_replacement(bench: Bench) -> None:
    """Bytes that are not UTF-8 are replaced, not fatal."""
    async with bench.sandbox() as sandbox:
        result = await sandbox.exec(r"printf 'a\377\376b\000c\n'; echo tail")
        expect_equal(result.exit_code, 0, "exit code")
        expect(
            result.output.startswith("a\ufffd\ufffdb") and result.output.endswith("c\ntail\n"),
            f"binary output decoded with replacement characters, got {result.output!r}",
        )


async def output_over_the_limit_keeps_head_and_tail(bench: Bench) -> None:
    """Output over ``max_output_chars`` keeps its head and tail with a marker between."""
    async with bench.sandbox(max_output_chars=1000) as sandbox:
        result = await sandbox.exec("seq 1 100000")
        expect_equal(result.exit_code, 0, "exit code of seq")
        expect(result.truncated, "100000 lines over a 1000-character limit are truncated")
        expect(result.output.startswith("1\n2\n3\n"), f"head kept: {result.output[:50]!r}")
        expect(result.output.endswith("99999\n100000\n"), f"tail kept: {result.output[-50:]!r}")
        expect("truncated" in result.output, "a marker says the output was truncated")
        expect(len(result.output) < 1200, f"{len(result.output)} characters kept of 1000")


async def a_gigabyte_of_output_is_cut_and_memory_stays_bounded(bench: Bench) -> None:
    """A gigabyte of output is cut, and the client's memory stays bounded meanwhile."""
    async with bench.sandbox(max_output_chars=10_000) as sandbox:
        tracing = not tracemalloc.is_tracing()
        if tracing:
            tracemalloc.start()
        try:
            result = await sandbox.exec(
                "yes hermes-output | head -c 1000000000; echo; echo END-OF-OUTPUT", timeout=600
            )
            _, peak = tracemalloc.get_traced_memory()
        finally:
            if tracing:
                tracemalloc.stop()
        expect_equal(result.exit_code, 0, f"exit code (output ends {result.output[-500:]!r})")
        expect(result.truncated, "a gigabyte of output is truncated")
        expect(
            result.output.startswith("hermes-output\nhermes-output\n"),
            f"head kept: {result.output[:50]!r}",
        )
        expect(result.output.endswith("END-OF-OUTPUT\n"), f"tail kept: {result.output[-50:]!r}")
        expect(len(result.output) < 10_200, f"{len(result.output)} characters kept of 10000")
        expect(peak < 64 * 2**20, f"peak traced memory {peak / 2**20:.0f} MiB for 1 GB of output")


async def timeout_kills_the_whole_process_tree(bench: Bench) -> None:
    """At the timeout the command's whole process tree dies; exit code 124."""
    name = token()
    async with bench.sandbox() as sandbox:
        started = time.monotonic()
        result = await sandbox.exec(
            f"{sleeper(name)} & bash -c '{sleeper(name)} & wait' & sleep 300", timeout=1.5
        )
        expect(time.monotonic() - started < 15, "a 1.5 s timeout returned within 15 s")
        expect(result.timed_out, "the result says timed_out")
        expect_equal(result.exit_code, 124, "exit code at the timeout")
        expect_equal(await gone(name), [], "processes of the command left after its timeout")
        expect_equal((await sandbox.exec("echo alive")).output, "alive\n", "a command after it")


async def timeout_keeps_the_output_so_far(bench: Bench) -> None:
    """A command killed at its timeout keeps the output it wrote."""
    async with bench.sandbox() as sandbox:
        result = await sandbox.exec("echo before; sleep 300", timeout=1)
        expect(result.timed_out, "the result says timed_out")
        expect(result.output.startswith("before\n"), f"output so far kept: {result.output!r}")


async def timeout_kills_a_process_that_left_the_session(bench: Bench) -> None:
    """Processes that left the command's session (setsid, nohup) die at the timeout."""
    bench.needs("session_escape")
    name = token()
    async with bench.sandbox() as sandbox:
        result = await sandbox.exec(
            f"setsid bash -c '{sleeper(name)}' </dev/null >/dev/null 2>&1 & "
            f"nohup bash -c '{sleeper(name)} & {sleeper(name)}' >/dev/null 2>&1 & sleep 300",
            timeout=1.5,
        )
        expect(result.timed_out, "the result says timed_out")
        expect_equal(await gone(name), [], "processes that left the session, after the timeout")


async def background_jobs_outlive_their_command_until_close(bench: Bench) -> None:
    """A background job does not hold its command up, and lives until ``close()``."""
    name = token()
    async with bench.sandbox() as sandbox:
        started = time.monotonic()
        result = await sandbox.exec(f"{sleeper(name)} & echo started", timeout=20)
        expect(time.monotonic() - started < 10, "the command did not wait for its job")
        expect(not result.timed_out, "a command with a background job timed out")
        expect_equal(result.output, "started\n", "output of the command")
        expect_equal(result.exit_code, 0, "exit code of the command")
        await appeared(name, 1)
        await sandbox.close()
        expect_equal(await gone(name), [], "background processes left after close()")


async def cancelling_an_exec_kills_its_tree(bench: Bench) -> None:
    """Cancelling an ``exec`` kills the command's process tree; the sandbox stays usable."""
    name = token()
    async with bench.sandbox() as sandbox:
        task = asyncio.ensure_future(
            sandbox.exec(f"{sleeper(name)} & bash -c '{sleeper(name)}' & sleep 300")
        )
        await appeared(name, 2, within=5)
        task.cancel()
        with expect_raises(asyncio.CancelledError, "awaiting a cancelled exec"):
            await task
        expect_equal(await gone(name), [], "processes of a cancelled command")
        expect_equal((await sandbox.exec("echo alive")).output, "alive\n", "a command after it")


CHECKS = [
    exit_codes,
    a_closed_pipe_ends_the_writer_quietly,
    stdout_and_stderr_interleave_in_order,
    commands_with_awkward_quoting_run_verbatim,
    stdin_is_empty,
    unicode_output,
    binary_output_is_decoded_with_replacement,
    output_over_the_limit_keeps_head_and_tail,
    a_gigabyte_of_output_is_cut_and_memory_stays_bounded,
    timeout_kills_the_whole_process_tree,
    timeout_keeps_the_output_so_far,
    timeout_kills_a_process_that_left_the_session,
    background_jobs_outlive_their_command_until_close,
    cancelling_an_exec_kills_its_tree,
]
