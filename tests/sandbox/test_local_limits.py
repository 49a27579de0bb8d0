"""The local backend's process limit and its teardown under a fork bomb (issue 12, item 10).

Fork bombs here are safe for a shared machine: they run only where a cgroup bounds them
(``pids_limit=64``, or a test cgroup of 48 around a child process), and they stop
forking by themselves after a few seconds. Tests skip, saying why, where no cgroup with
the pids controller can be made.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_sandbox import SandboxStartError, create_sandbox
from hermes_sandbox.backends.local import LocalSandbox
from hermes_sandbox.backends.local._cgroup import (
    CgroupUnavailableError,
    PidsCgroup,
    find_pids_parent,
)
from hermes_sandbox.testing.probes import host_processes

try:
    find_pids_parent()
    NO_CGROUP = ""
except CgroupUnavailableError as exc:
    NO_CGROUP = str(exc)

needs_cgroup = pytest.mark.skipif(bool(NO_CGROUP), reason=f"no pids cgroup here: {NO_CGROUP}")

MODES = [
    pytest.param("none", id="plain"),
    pytest.param(
        "bwrap",
        id="isolated",
        marks=pytest.mark.skipif(shutil.which("bwrap") is None, reason="no bubblewrap"),
    ),
]

#: A fork bomb in the background that stops forking after ``seconds``.
BOMB = (
    "end=$((EPOCHSECONDS + {seconds})); "
    "bomb() {{ (( EPOCHSECONDS < end )) && {{ bomb | bomb & }}; }}; bomb"
)


@needs_cgroup
@pytest.mark.parametrize("isolation", MODES)
async def test_pids_limit_contains_a_fork_bomb_and_close_leaves_nothing(isolation: str) -> None:
    name = f"hermes-bomb-{uuid.uuid4().hex[:8]}"
    sandbox = create_sandbox("local", pids_limit=64, isolation=isolation)
    assert isinstance(sandbox, LocalSandbox)
    async with sandbox:
        await sandbox.exec(f"(exec -a {name} sleep 300) &")
        result = await sandbox.exec(BOMB.format(seconds=3) + "; sleep 3", timeout=2)
        assert result.timed_out
        # The bomb hit the limit (bash reports the refused forks) and the host did not.
        count = await sandbox.exec("ls /proc | grep -c '^[0-9]' || true", timeout=30)
        assert count.exit_code == 0
        assert (await sandbox.exec("echo survived", timeout=30)).output == "survived\n"
        assert len(host_processes(name)) == 1  # the background job is still there
        cgroup = sandbox._cgroup
        assert cgroup is not None
        assert len(cgroup.pids()) <= 64 + 3
    assert host_processes(name) == []
    assert not any([await asyncio.to_thread(os.path.exists, path) for path in cgroup.paths])
    assert not await asyncio.to_thread(os.path.exists, sandbox.root)


@needs_cgroup
async def test_a_plain_sandbox_cannot_exceed_its_pids_limit() -> None:
    async with create_sandbox("local", pids_limit=5, isolation="none") as sandbox:
        result = await sandbox.exec("for i in 1 2 3 4 5 6 7 8; do sleep 5 & done; wait", timeout=30)
        assert "fork" in result.output  # bash: fork: retry / Resource temporarily unavailable
        again = await sandbox.exec("echo ok")
        assert again.output == "ok\n"


def test_a_cgroup_that_cannot_be_made_is_reported_clearly() -> None:
    with pytest.raises(CgroupUnavailableError, match=r"cannot make the cgroup .*no-such-parent"):
        PidsCgroup.create(f"no-such-parent-{uuid.uuid4().hex[:6]}/child", 10)
    assert issubclass(CgroupUnavailableError, SandboxStartError)


# close() when no thread can start ----------------------------------------------------
CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from hermes_sandbox import create_sandbox

    isolation, name, bomb = sys.argv[1], sys.argv[2], sys.argv[3]

    async def main():
        sandbox = await create_sandbox("local", isolation=isolation).start()
        await sandbox.exec(f"(exec -a {name} sleep 300) &")
        print(sandbox.workdir, flush=True)
        await sandbox.exec(bomb)  # the shell returns at once; the bomb fills the cgroup
        await asyncio.sleep(2)
        await sandbox.close()  # must kill everything although no thread can start
        print("closed", flush=True)

    asyncio.run(main())
    """
)


@pytest.fixture
def small_cgroup() -> Iterator[PidsCgroup]:
    """A cgroup of at most 48 processes to run a child in; everything in it is killed and
    the cgroup removed afterwards."""
    if NO_CGROUP:
        pytest.skip(f"no pids cgroup here: {NO_CGROUP}")
    cgroup = PidsCgroup.create(f"hermes-test-{uuid.uuid4().hex[:8]}", 48)
    try:
        yield cgroup
    finally:
        assert cgroup.remove(10.0)


@pytest.mark.parametrize("isolation", MODES)
def test_close_kills_everything_when_the_bomb_used_up_the_process_ids(
    isolation: str, small_cgroup: PidsCgroup
) -> None:
    name = f"hermes-bomb-{uuid.uuid4().hex[:8]}"
    program = [sys.executable, "-c", CHILD, isolation, name, BOMB.format(seconds=10)]
    child = subprocess.run(
        ["/bin/sh", "-c", f'echo $$ >"{small_cgroup.procs_file}" && exec "$@"', "sh", *program],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 0, child.stderr
    workdir, closed = child.stdout.split()
    assert closed == "closed"
    # SIGKILLed processes take a moment to be gone; none may be left after that.
    deadline = time.monotonic() + 10
    while (host_processes(name) or small_cgroup.pids()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert host_processes(name) == []
    assert not Path(workdir).exists()
    assert small_cgroup.pids() == []  # nothing of the sandbox is left in the test cgroup
