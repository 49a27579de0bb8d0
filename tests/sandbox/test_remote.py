"""What the ``modal`` and ``daytona`` backends share (``RemoteShellSandbox``), checked on
each over its fake SDK: timeouts and cancellation kill the command's whole process tree,
the host environment stays out, start and close leave nothing behind, and a missing SDK
or missing credentials are reported with what to do.

Each test runs once per backend, and is skipped for a backend whose SDK is not installed.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hermes_sandbox import SandboxClosedError, SandboxStartError
from tests.sandbox.fakes.remote_support import (
    DAYTONA,
    MODAL,
    FakeRemote,
    MakeSandbox,
    RemoteBackend,
    checked_fake,
    wait_for,
)

#: What ``start()`` says without credentials: the start of the error, and the setting
#: it names.
NO_CREDENTIALS = {
    "modal": ("modal: not authenticated", "MODAL_TOKEN_ID"),
    "daytona": ("daytona: no credentials", "DAYTONA_API_KEY"),
}


@pytest.fixture(params=[MODAL, DAYTONA], ids=lambda backend: backend.name)
def backend(request: pytest.FixtureRequest) -> RemoteBackend:
    chosen: RemoteBackend = request.param
    reason = chosen.unavailable()
    if reason is not None:
        pytest.skip(reason)
    return chosen


@pytest.fixture
async def fake(backend: RemoteBackend, tmp_path: Path) -> AsyncIterator[FakeRemote]:
    async with checked_fake(backend.new_fake(tmp_path / "fake")) as sdk:
        yield sdk


@pytest.fixture
def make(backend: RemoteBackend, fake: FakeRemote, tmp_path: Path) -> MakeSandbox:
    return backend.factory(fake, tmp_path / "work")


# --- commands ------------------------------------------------------------------------------


async def test_timeout_kills_the_whole_tree(make: MakeSandbox, fake: FakeRemote) -> None:
    async with make() as sb:
        started = time.monotonic()
        result = await sb.exec(
            "echo before; sleep 300 & sleep 301 & (sleep 302; echo x) & wait", timeout=1
        )
        elapsed = time.monotonic() - started
        machine = fake.sandboxes[0].machine
        await wait_for(lambda: not any("sleep 30" in c for c in machine.commands()), 5)
        after = await sb.exec("echo still usable")
    assert result.timed_out
    assert result.exit_code == 124
    assert result.output == "before\n"
    assert elapsed < 10
    assert after.output == "still usable\n"
    assert after.exit_code == 0


async def test_cancelled_exec_kills_its_command(make: MakeSandbox, fake: FakeRemote) -> None:
    async with make() as sb:
        task = asyncio.create_task(sb.exec("sleep 313; echo done", timeout=600))

        def sleeping() -> bool:
            return bool(fake.sandboxes) and any(
                "sleep 313" in c for c in fake.sandboxes[0].machine.commands()
            )

        await wait_for(sleeping)
        machine = fake.sandboxes[0].machine
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await wait_for(lambda: not any("sleep 313" in c for c in machine.commands()), 10)
        assert (await sb.exec("echo ok")).output == "ok\n"


async def test_nothing_of_a_run_is_left_once_its_background_job_ends(
    make: MakeSandbox, fake: FakeRemote
) -> None:
    # The job holds the output past the runner's grace; the runner reports and exits,
    # the reader drains the job's output. Once the job ends, nothing of that run may be
    # left (the runner's byte counter used to wait forever for a FIFO the runner removed).
    async with make() as sb:
        result = await sb.exec("(sleep 1.5; echo late) & echo started")
        assert result.output == "started\n"
        machine = fake.sandboxes[0].machine
        await wait_for(lambda: not any("echo late" in c for c in machine.commands()), 10)


async def test_stop_processes_kills_commands_and_jobs_of_this_sandbox_only(
    make: MakeSandbox, fake: FakeRemote
) -> None:
    async with make() as sb, make() as other:
        await other.exec("sleep 341 &")
        running = asyncio.create_task(sb.exec("sleep 342 & sleep 343", timeout=600))
        await wait_for(lambda: len(fake.sandboxes) == 2)
        machines = [s.machine for s in fake.sandboxes]

        def seen(text: str) -> bool:
            return any(text in c for m in machines for c in m.commands())

        await wait_for(lambda: seen("sleep 343") and seen("sleep 341"))
        await sb.stop_processes()
        result = await asyncio.wait_for(running, 30)
        assert (result.exit_code, result.timed_out) == (137, False)
        await wait_for(lambda: not seen("sleep 342") and not seen("sleep 343"))
        assert seen("sleep 341")  # the other sandbox's job
        assert (await sb.exec("echo ok")).output == "ok\n"


async def test_host_secrets_stay_out(make: MakeSandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_TEST_HOST_SECRET", "s3cr3t-value")
    async with make(env={"ASKED_FOR": "yes"}) as sb:
        result = await sb.exec("env")
    assert "s3cr3t-value" not in result.output
    assert "ASKED_FOR=yes" in result.output


# --- lifecycle -----------------------------------------------------------------------------


async def test_close_leaves_nothing_and_is_idempotent(make: MakeSandbox, fake: FakeRemote) -> None:
    sb = make()
    await sb.start()
    await sb.exec("setsid sleep 317 >/dev/null 2>&1 & sleep 318 >/dev/null 2>&1 &")
    machine = fake.sandboxes[0].machine
    assert machine.root.exists()
    await sb.close()
    await sb.close()
    assert not fake.live_sandboxes()
    assert not machine.root.exists()
    assert not machine.processes()
    with pytest.raises(SandboxClosedError):
        await sb.exec("true")


async def test_sandbox_that_died_reports_closed_and_closes(
    make: MakeSandbox, fake: FakeRemote
) -> None:
    sb = make()
    await sb.start()
    await fake.sandboxes[0].destroy()
    with pytest.raises(SandboxClosedError, match="is gone"):
        await sb.exec("true")
    with pytest.raises(SandboxClosedError):
        await sb.read_file("x")
    await sb.close()


async def test_start_failure_destroys_the_sandbox(
    backend: RemoteBackend, fake: FakeRemote, tmp_path: Path
) -> None:
    (tmp_path / "file").write_text("not a directory")
    sb = backend.sandbox(fake, tmp_path / "file" / "work")
    with pytest.raises(SandboxStartError, match="cannot run commands"):
        await sb.start()
    assert fake.sandboxes
    assert not fake.live_sandboxes()
    await sb.close()


async def test_cancelled_start_leaves_nothing(make: MakeSandbox, fake: FakeRemote) -> None:
    cancelled = 0
    for delay in (0, 0.001, 0.005, 0.01, 0.02, 0.05):
        sb = make()
        task = asyncio.create_task(sb.start())
        await asyncio.sleep(delay)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            cancelled += 1
        await sb.close()
        assert not fake.live_sandboxes()
        assert not fake.leaked_processes()
    assert cancelled


# --- set-up errors ---------------------------------------------------------------------------


def _run_python(code: str, home: Path) -> str:
    """Run ``code`` in a fresh interpreter with an empty home; its stdout and stderr."""
    env = {"PATH": os.defpath, "HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=home, capture_output=True, text=True, timeout=120
    )
    return done.stdout + done.stderr


def test_missing_sdk_names_the_extra(backend: RemoteBackend, tmp_path: Path) -> None:
    out = _run_python(
        f"import sys\nsys.modules[{backend.name!r}] = None\n"
        "from hermes_sandbox import create_sandbox, BackendUnavailableError\n"
        f"try:\n    create_sandbox({backend.name!r})\n"
        "except BackendUnavailableError as exc:\n    print('ERR', exc)\n",
        tmp_path,
    )
    assert "ERR" in out
    assert f"pip install 'hermes-sandbox[{backend.name}]'" in out


def test_missing_credentials_is_a_start_error(backend: RemoteBackend, tmp_path: Path) -> None:
    out = _run_python(
        "import asyncio\nfrom hermes_sandbox import create_sandbox, SandboxStartError\n"
        "async def main():\n"
        f"    sb = create_sandbox({backend.name!r})\n"
        "    try:\n        await sb.start()\n"
        "    except SandboxStartError as exc:\n        print('ERR', exc)\n"
        "    await sb.close()\n"
        "asyncio.run(main())\n",
        tmp_path,
    )
    error, setting = NO_CREDENTIALS[backend.name]
    assert f"ERR {error}" in out
    assert setting in out


async def test_output_is_complete_when_the_reader_is_slower_than_the_command(
    make: MakeSandbox,
) -> None:
    # The in-sandbox reader copies the head one byte per system call, so 400 kB take it
    # well over the moment the command's shell exits: the runner must wait for it when
    # no background job holds the output, not report the little read so far.
    async with make(max_output_chars=1_000_000) as sb:
        result = await sb.exec("head -c 400000 /dev/zero | tr '\\0' a; echo; echo END")
    assert result.exit_code == 0
    assert not result.truncated
    assert result.output == "a" * 400_000 + "\nEND\n"
