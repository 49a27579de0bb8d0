"""What a local sandbox sees and what bounds it (issue 22, items 5, 9 and 12): a private
``/workspace`` per sandbox, ``python`` inside, the host's secrets hidden, memory and
``/tmp`` bounded, no bubblewrap left behind, isolation by default. Where a check can
fail, it also runs in the plain mode, where it must see the host."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from hermes_sandbox import SandboxOptions, SandboxPool, SandboxStartError, create_sandbox
from hermes_sandbox.backends.local import LocalSandbox
from hermes_sandbox.backends.local._cgroup import (
    CgroupUnavailableError,
    SandboxCgroups,
    find_parent,
)
from hermes_sandbox.testing.probes import gone, host_processes

NO_BWRAP = shutil.which("bwrap") is None
needs_bwrap = pytest.mark.skipif(
    NO_BWRAP, reason="bubblewrap is not installed (bash .ci/services/bubblewrap.sh)"
)
MODES = [pytest.param("none", id="plain"), pytest.param("bwrap", id="isolated", marks=needs_bwrap)]
CHECKOUT = Path(__file__).resolve().parents[2]

try:
    find_parent("memory")
    NO_MEMORY_CGROUP = ""
except CgroupUnavailableError as exc:
    NO_MEMORY_CGROUP = str(exc)


def local(isolation: str, **options: Any) -> LocalSandbox:
    sandbox = create_sandbox("local", isolation=isolation, **options)
    assert isinstance(sandbox, LocalSandbox)
    return sandbox


# item 5: /workspace and python ---------------------------------------------------------
@needs_bwrap
async def test_concurrent_isolated_sandboxes_each_get_a_private_workspace() -> None:
    host_had = await asyncio.to_thread(os.path.exists, "/workspace")
    before = set(await asyncio.to_thread(os.listdir, "/workspace")) if host_had else set()
    right, wrong = local("bwrap", workdir="/workspace"), local("bwrap", workdir="/workspace")
    async with right, wrong:
        await asyncio.gather(
            right.exec("echo right > answer.txt"), wrong.exec("echo wrong > /workspace/answer.txt")
        )
        assert (await right.exec("pwd; cat /workspace/answer.txt")).output == (
            "/workspace\nright\n"
        )
        assert (await wrong.exec("cat answer.txt")).output == "wrong\n"
        assert await right.read_file("/workspace/answer.txt") == b"right\n"
    # Nothing of theirs landed in the host's /workspace (nor was it made).
    assert await asyncio.to_thread(os.path.exists, "/workspace") == host_had
    if host_had:
        assert set(await asyncio.to_thread(os.listdir, "/workspace")) == before
    assert not await asyncio.to_thread(os.path.exists, right._private_source)


async def test_plain_sandboxes_do_not_share_a_workdir_silently(tmp_path: Path) -> None:
    workdir = str(tmp_path / "shared")
    async with local("none", workdir=workdir) as first:
        second = local("none", workdir=workdir)
        with pytest.raises(SandboxStartError, match=r"in use by another open plain local sandbox"):
            await second.start()
        await second.close()
        await first.exec("echo kept > f")
    # Once the first is closed, the workdir is free again (and kept).
    async with local("none", workdir=workdir) as third:
        assert (await third.exec("cat f")).output == "kept\n"


@pytest.mark.parametrize("isolation", MODES)
async def test_python_and_python3_run_inside(isolation: str) -> None:
    async with local(isolation) as sandbox:
        for name in ("python", "python3"):
            result = await sandbox.exec(f"{name} -c 'import sys; print(sys.version_info[0])'")
            assert (result.output, result.exit_code) == ("3\n", 0), name
        # The standard library works (the installation is there, not only the binary).
        ran = await sandbox.exec("python -c 'import json, sqlite3, ssl; print(json.dumps(1))'")
        assert (ran.output, ran.exit_code) == ("1\n", 0)


# item 9: what the isolation hides and bounds ------------------------------------------
@pytest.mark.parametrize(("isolation", "visible"), [("bwrap", False), ("none", True)])
async def test_the_hosts_secrets_homes_and_checkout_are_hidden(
    isolation: str, visible: bool
) -> None:
    if isolation == "bwrap" and NO_BWRAP:
        pytest.skip("bubblewrap is not installed")
    secret = f"hermes-secret-{uuid.uuid4().hex}"
    probe = Path.home() / f".hermes-view-probe-{uuid.uuid4().hex[:8]}"
    probe.write_text(secret)
    readme = CHECKOUT / "README.md"
    try:
        async with local(isolation) as sandbox:
            home = await sandbox.exec(f"cat {probe}")
            assert (secret in home.output) is visible
            checkout = await sandbox.exec(f"head -c 100 {readme}")
            assert (checkout.exit_code == 0) is visible
            if os.access("/etc/shadow", os.R_OK):  # this user reads it on the host
                shadow = await sandbox.exec("cat /etc/shadow")
                assert (shadow.exit_code == 0 and "root:" in shadow.output) is visible
                with contextlib.nullcontext() if visible else pytest.raises(PermissionError):
                    await sandbox.read_file("/etc/shadow")
            if os.access("/root/.ssh", os.R_OK):
                ssh = await sandbox.exec("ls -d /root/.ssh")
                assert (ssh.exit_code == 0) is visible
            # What commands need is still there.
            assert (await sandbox.exec("ls /usr/bin/env && cat /etc/passwd")).exit_code == 0
    finally:
        probe.unlink()


@pytest.mark.parametrize("isolation", MODES)
async def test_memory_mb_bounds_an_allocation_or_says_it_cannot(
    isolation: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "hermes_sandbox.backends.local")
    async with local(isolation, memory_mb=512) as sandbox:
        big = "python3 -c 'x = b\"a\" * (1536 << 20); print(len(x))'"
        result = await sandbox.exec(big, timeout=120)
        if NO_MEMORY_CGROUP:
            assert "memory_mb=512 is NOT enforced" in caplog.text
            assert len(caplog.text.strip().splitlines()) == 1
        else:
            assert result.exit_code != 0
            assert str(1536 << 20) not in result.output
            assert "NOT enforced" not in caplog.text
            # The sandbox itself survives: only the command was killed.
            assert (await sandbox.exec("echo alive")).output == "alive\n"
            small = await sandbox.exec("python3 -c 'x = b\"a\" * (64 << 20); print(len(x))'")
            assert small.output == f"{64 << 20}\n"


@needs_bwrap
async def test_tmp_and_shm_are_bounded() -> None:
    async with local("bwrap", tmp_size_mb=8) as sandbox:
        sizes = await sandbox.exec("df -k --output=size /tmp /dev/shm /run | tail -n +2")
        tmp, shm, run = (int(size) for size in sizes.output.split())
        assert tmp == 8 * 1024
        assert shm <= 64 * 1024
        assert run <= 64 * 1024
        full = await sandbox.exec("head -c 16M /dev/zero > /tmp/big")
        assert full.exit_code != 0
        assert "No space left" in full.output
        # /var/tmp is /tmp, so bounded too.
        assert (await sandbox.exec("readlink /var/tmp")).output == "../tmp\n"


@needs_bwrap
async def test_sigterm_to_bubblewrap_ends_the_whole_sandbox() -> None:
    name = f"hermes-term-{uuid.uuid4().hex[:8]}"
    sandbox = await local("bwrap").start()
    try:
        await sandbox.exec(f"(exec -a {name} sleep 300) &")
        namespace = sandbox._namespace
        assert namespace is not None
        assert host_processes(name)
        os.kill(namespace.bwrap_pid, signal.SIGTERM)
        assert await gone(name) == []
        assert await gone(sandbox.root) == []  # no bwrap naming its directories
    finally:
        await sandbox.close()


# A child whose sandbox's helper would never see its socket close: a process it forked
# keeps a copy. Only bubblewrap's death with its owner can end the sandbox then.
FORKING_CHILD = textwrap.dedent(
    """
    import asyncio, os, signal, sys, time
    from hermes_sandbox import create_sandbox

    async def main():
        sandbox = await create_sandbox("local", isolation="bwrap").start()
        await sandbox.exec(f"(exec -a {sys.argv[1]}-sleeper sleep 300) &")
        print(sandbox.root, flush=True)
        if os.fork() == 0:  # holds every descriptor of the owner, the helper's socket too
            time.sleep(60)
            os._exit(0)
        os.kill(os.getpid(), signal.SIGKILL)

    asyncio.run(main())
    """
)


@needs_bwrap
def test_sigkill_of_the_owner_leaves_no_bubblewrap(tmp_path: Path) -> None:
    name = f"hermes-owner-{uuid.uuid4().hex[:8]}"
    errors = tmp_path / "stderr.txt"
    with errors.open("w") as stderr:
        child = subprocess.Popen(
            [sys.executable, "-c", FORKING_CHILD, name],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env={**os.environ, "TMPDIR": str(tmp_path)},
            start_new_session=True,
        )
    try:
        assert child.stdout is not None
        root = child.stdout.readline().strip()  # the forked copy keeps stdout open
        assert child.wait(timeout=60) == -signal.SIGKILL, errors.read_text()
        assert root, errors.read_text()
        sleeper = f"{name}-sleeper"
        deadline = time.monotonic() + 10
        while (host_processes(sleeper) or host_processes(root)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert host_processes(sleeper) == []
        assert host_processes(root) == []  # bwrap's command line names the directory
    finally:
        os.killpg(child.pid, signal.SIGKILL)  # the forked copy, in the child's session
        child.stdout.close() if child.stdout else None


@needs_bwrap
def test_a_sandbox_outlives_the_thread_that_started_it() -> None:
    # bubblewrap dies with the thread that started it: that must not be the caller's.
    holder: list[LocalSandbox] = []

    def start_elsewhere() -> None:
        sandbox = local("bwrap")
        asyncio.run(sandbox.start())
        holder.append(sandbox)

    thread = threading.Thread(target=start_elsewhere)
    thread.start()
    thread.join()
    (sandbox,) = holder

    async def use() -> str:
        try:
            await asyncio.sleep(0.3)  # time for a death to be noticed
            return (await sandbox.exec("echo alive")).output
        finally:
            await sandbox.close()

    assert asyncio.run(use()) == "alive\n"


# item 12: isolated by default ----------------------------------------------------------
@needs_bwrap
async def test_create_sandbox_and_sandbox_pool_isolate_by_default() -> None:
    async with create_sandbox("local") as sandbox:
        assert isinstance(sandbox, LocalSandbox)
        assert sandbox.isolated
        init = await sandbox.exec("cat /proc/1/cmdline | tr '\\0' ' '")
        assert init.output.split()[0].endswith("bwrap")  # pid 1 is bubblewrap's
    async with SandboxPool("local") as pool:
        pooled = await pool.get("t")
        assert isinstance(pooled, LocalSandbox)
        assert pooled.isolated


async def test_isolation_none_is_still_plain() -> None:
    async with local("none") as sandbox:
        assert not sandbox.isolated
        assert (await sandbox.exec("echo $PPID")).output == f"{os.getpid()}\n"


@needs_bwrap
async def test_host_dirs_are_shared_and_workdir_mistakes_are_refused(tmp_path: Path) -> None:
    shared = tmp_path / "results"
    shared.mkdir()
    async with local("bwrap", host_dirs=[str(shared)], workdir=str(shared)) as sandbox:
        await sandbox.exec("echo from-inside > out.txt")
        assert (await sandbox.exec("pwd")).output == f"{shared}\n"
    assert (shared / "out.txt").read_text() == "from-inside\n"
    # Mistakes are said at start, in one line, and never fall back to plain commands.
    mistakes: list[tuple[dict[str, Any], str]] = [
        ({"host_dirs": [str(tmp_path / "missing")]}, "no such directory on this host"),
        ({"workdir": "/"}, "would hide"),
        ({"workdir": "/usr/hermes-no-such-dir"}, "lies in the read-only /usr"),
    ]
    for options, message in mistakes:
        sandbox = local("auto", **options)
        with pytest.raises(SandboxStartError, match=message):
            await sandbox.start()
        await sandbox.close()


KILLED_WITH_WORKSPACE = textwrap.dedent(
    """
    import asyncio, os, signal
    from hermes_sandbox import create_sandbox

    async def main():
        sandbox = await create_sandbox("local", isolation="bwrap", workdir="/workspace").start()
        await sandbox.exec("echo mine > answer.txt")
        print(sandbox.root, sandbox._private_source, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    asyncio.run(main())
    """
)


@needs_bwrap
def test_reap_orphans_removes_a_killed_owners_private_workdir_too(tmp_path: Path) -> None:
    from hermes_sandbox.backends.local import reap_orphans

    child = subprocess.run(
        [sys.executable, "-c", KILLED_WITH_WORKSPACE],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    root, private = child.stdout.split()
    assert (Path(private) / "answer.txt").read_text() == "mine\n"
    assert sorted(reap_orphans(str(tmp_path))) == sorted([root, private])
    assert not os.path.exists(root)
    assert not os.path.exists(private)


@pytest.mark.skipif(bool(NO_MEMORY_CGROUP), reason=f"no memory cgroup here: {NO_MEMORY_CGROUP}")
def test_a_memory_cgroup_that_cannot_be_made_is_reported_not_raised() -> None:
    name = f"hermes-no-such-parent-{uuid.uuid4().hex[:6]}/child"
    made = SandboxCgroups.create(name, pids_limit=None, memory_bytes=512 << 20)
    assert made.groups == []
    assert made.memory_problem is not None
    assert "cannot make the cgroup" in made.memory_problem
    assert "\n" not in made.memory_problem  # said in one line


class _OlderBubblewrap(LocalSandbox):
    """A local sandbox whose bubblewrap refuses ``--size`` (before 0.7, or setuid)."""

    fake = ""

    def _choose_bwrap(self) -> str | None:
        return self.fake


@needs_bwrap
async def test_a_bubblewrap_that_cannot_size_tmpfs_still_isolates_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text(
        "#!/bin/sh\n"
        'case " $* " in *" --size "*) echo "bwrap: Unknown option --size" >&2; exit 1;; esac\n'
        f'exec {shutil.which("bwrap")} "$@"\n'
    )
    fake.chmod(0o755)
    caplog.set_level(logging.WARNING, "hermes_sandbox.backends.local")
    sandbox = _OlderBubblewrap(SandboxOptions.from_kwargs(isolation="bwrap"))
    sandbox.fake = str(fake)
    async with sandbox:
        assert sandbox.isolated
        assert (await sandbox.exec("echo inside")).output == "inside\n"
    assert "cannot size tmpfs mounts" in caplog.text
