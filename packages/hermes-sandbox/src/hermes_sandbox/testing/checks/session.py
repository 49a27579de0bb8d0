"""Conformance checks of the shell session: working directory and exports carry over."""

from __future__ import annotations

import uuid

from hermes_sandbox.testing.bench import Bench
from hermes_sandbox.testing.probes import expect_equal

__all__ = ["CHECKS"]


async def cwd_and_exports_persist_between_commands(bench: Bench) -> None:
    """``cd`` and ``export`` carry over between commands (also after a failing one),
    file paths stay relative to the workdir, and a new sandbox starts fresh."""
    async with bench.sandbox() as sandbox:
        home = (await sandbox.exec("pwd")).output.strip()
        expect_equal(home, sandbox.workdir, "the first command's directory")
        await sandbox.exec("mkdir -p 'sub dir/inner' && cd 'sub dir/inner'")
        expect_equal(
            (await sandbox.exec("pwd")).output.strip(), f"{home}/sub dir/inner", "after cd"
        )
        await sandbox.exec("export GREETING='hello world'; export EMPTY=")
        result = await sandbox.exec('echo "$GREETING|${EMPTY-unset}"')
        expect_equal(result.output, "hello world|\n", "exported variables")
        result = await sandbox.exec("cd ..; export LEVEL=2; exit 7")
        expect_equal(result.exit_code, 7, "exit code of a failing command")
        expect_equal(
            (await sandbox.exec('pwd; echo "$LEVEL"')).output,
            f"{home}/sub dir\n2\n",
            "state saved by a command that exited early with a failure",
        )
        await sandbox.exec("unset GREETING")
        expect_equal(
            (await sandbox.exec('echo "${GREETING-gone}"')).output, "gone\n", "after unset"
        )
        await sandbox.write_file("note.txt", "from the api")
        expect_equal(
            (await sandbox.exec("cat ../note.txt")).output,
            "from the api",
            "a relative path of the file API (relative to the workdir, not the cwd)",
        )
    async with bench.sandbox() as other:
        expect_equal((await other.exec('echo "${LEVEL-fresh}"')).output, "fresh\n", "a new sandbox")


async def a_deleted_cwd_falls_back_to_the_workdir(bench: Bench) -> None:
    """When the current directory was deleted, the next command starts in the workdir."""
    async with bench.sandbox() as sandbox:
        await sandbox.exec("mkdir gone-soon && cd gone-soon")
        await sandbox.exec("rmdir ../gone-soon")
        result = await sandbox.exec("pwd")
        expect_equal(result.output.strip(), sandbox.workdir, "directory after losing the cwd")
        expect_equal(result.exit_code, 0, "exit code of pwd")


async def a_given_workdir_is_created_and_used(bench: Bench) -> None:
    """A ``workdir`` option is created and commands and relative paths use it."""
    workdir = f"/tmp/hermes-conformance-{uuid.uuid4().hex}"
    async with bench.sandbox(workdir=workdir) as sandbox:
        try:
            expect_equal((await sandbox.exec("pwd")).output.strip(), workdir, "pwd")
            await sandbox.write_file("inside.txt", "x")
            expect_equal((await sandbox.exec("ls")).output, "inside.txt\n", "ls of the workdir")
        finally:
            await sandbox.exec(f"rm -rf '{workdir}'")


CHECKS = [
    cwd_and_exports_persist_between_commands,
    a_deleted_cwd_falls_back_to_the_workdir,
    a_given_workdir_is_created_and_used,
]
