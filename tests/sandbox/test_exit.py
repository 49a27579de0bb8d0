"""A program that is interrupted, or ends without closing its pool, leaves nothing behind.

Each test runs a real child Python process holding a ``SandboxPool`` with three sandboxes,
each running a background process and (for Ctrl-C) a foreground command, then either
sends it SIGINT (what Ctrl-C does), sends it SIGTERM (it runs under
``stop_on_sigterm()``), or lets it reach the end of its program without closing anything.
Afterwards no process, workdir or container of the child may remain.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from hermes_sandbox import SandboxOptions
from hermes_sandbox.testing.probes import host_processes
from tests.sandbox.support import kill_9_child

CHILD = textwrap.dedent(
    """
    import asyncio, json, sys
    from hermes_sandbox import SandboxPool, stop_on_sigterm

    backend, mode, name = sys.argv[1], sys.argv[2], sys.argv[3]
    options = json.loads(sys.argv[4])
    sleeper = f"(exec -a {name} sleep 300)"

    async def setup(pool):
        boxes = [await pool.get(f"task-{i}") for i in range(3)]
        for box in boxes:
            await box.exec(sleeper + " &")
        print(json.dumps([box.workdir for box in boxes]), flush=True)
        return boxes

    async def interrupted():
        async with SandboxPool(backend, **options) as pool:
            boxes = await setup(pool)
            await asyncio.gather(*(box.exec(sleeper, timeout=600) for box in boxes))

    if mode == "interrupt":
        asyncio.run(interrupted())
    elif mode == "terminate":
        with stop_on_sigterm():
            asyncio.run(interrupted())
    elif mode == "terminate-unprotected":  # what happens without it (the test's control)
        asyncio.run(interrupted())
    else:  # "exit": the program ends with the pool and its sandboxes still open
        loop = asyncio.new_event_loop()
        pool = SandboxPool(backend, **options)
        loop.run_until_complete(setup(pool))
        print("leaving", flush=True)
    """
)


def _run_child(backend: str, mode: str, options: dict[str, Any]) -> tuple[str, list[str], str]:
    """Run the child; for ``interrupt`` send SIGINT once its commands run. Returns the
    process name its commands carry, their workdirs, and the child's stderr."""
    name = f"hermes-exit-{uuid.uuid4().hex[:10]}"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, backend, mode, name, json.dumps(options)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        first = child.stdout.readline()
        if not first:
            pytest.fail(f"the child failed before its sandboxes ran: {child.communicate()[1]}")
        workdirs = json.loads(first)
        if mode != "exit":
            deadline = time.monotonic() + 30
            while len(host_processes(name)) < 6 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(host_processes(name)) >= 6, "the foreground commands did not start"
            child.send_signal(signal.SIGINT if mode == "interrupt" else signal.SIGTERM)
        _, stderr = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    if mode in ("interrupt", "terminate"):
        assert child.returncode != 0, stderr
        assert "KeyboardInterrupt" in stderr, stderr
    elif mode == "terminate-unprotected":
        assert child.returncode == -signal.SIGTERM, stderr
    else:
        assert child.returncode == 0, stderr
    return name, workdirs, stderr


def _left_processes(name: str, within: float = 10.0) -> list[int]:
    deadline = time.monotonic() + within
    while host_processes(name) and time.monotonic() < deadline:
        time.sleep(0.05)
    return host_processes(name)


LOCAL_MODES = [
    pytest.param("none", id="plain"),
    pytest.param(
        "bwrap",
        id="isolated",
        marks=pytest.mark.skipif(
            shutil.which("bwrap") is None,
            reason="bubblewrap is not installed (bash .ci/services/bubblewrap.sh)",
        ),
    ),
]


@pytest.mark.parametrize("isolation", LOCAL_MODES)
@pytest.mark.parametrize("mode", ["interrupt", "terminate", "exit"])
def test_local_sandboxes_are_gone_after_ctrl_c_sigterm_or_exit(mode: str, isolation: str) -> None:
    name, workdirs, stderr = _run_child("local", mode, {"isolation": isolation})
    assert _left_processes(name) == []
    assert [path for path in workdirs if os.path.exists(path)] == []
    assert "emergency teardown" not in stderr


@pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="bubblewrap is not installed (bash .ci/services/bubblewrap.sh)",
)
def test_sigterm_without_stop_on_sigterm_leaves_no_process_and_reap_orphans_the_rest() -> None:
    """The same child with the default options (isolated where bubblewrap works), SIGTERM
    without ``stop_on_sigterm()``: it dies on the spot, its sandboxes with it (bubblewrap
    dies with its owner); the directories stay until ``reap_orphans()``."""
    from hermes_sandbox.backends.local import reap_orphans

    name, workdirs, _ = _run_child("local", "terminate-unprotected", {})
    try:
        assert _left_processes(name) == []
        assert [path for path in workdirs if os.path.exists(path)] == workdirs
    finally:
        removed = reap_orphans()
    assert set(workdirs) <= set(removed)
    assert [path for path in workdirs if os.path.exists(path)] == []


@pytest.mark.parametrize("mode", ["interrupt", "terminate", "exit"])
def test_docker_containers_are_gone_after_ctrl_c_sigterm_or_exit(mode: str) -> None:
    from tests.sandbox.providers.docker import docker_setup

    setup = docker_setup()
    if setup.reason or setup.image_problem:
        pytest.skip(f"docker unavailable here: {setup.reason or setup.image_problem}")
    from hermes_sandbox.backends.docker import LABEL, DockerDaemon

    mark = f"exit-{uuid.uuid4().hex[:8]}"
    options = {"image": setup.image, "labels": {"hermes-test.exit": mark}}
    name, _, stderr = _run_child("docker", mode, options)
    assert _left_processes(name) == []
    daemon = DockerDaemon.open()
    try:
        found = daemon.api.containers(
            all=True, filters={"label": [f"{LABEL}=1", f"hermes-test.exit={mark}"]}
        )
    finally:
        daemon.close()
    assert found == [], stderr


def test_reap_orphans_removes_what_a_killed_process_left(tmp_path: Path) -> None:
    from hermes_sandbox.backends.local import LocalSandbox, reap_orphans

    name = f"hermes-orphan-{uuid.uuid4().hex[:10]}"
    root = kill_9_child(name, tmp_path)
    assert Path(root).parent == tmp_path
    assert Path(root).is_dir()
    assert len(host_processes(name)) == 1  # the orphan still runs

    alive = LocalSandbox(SandboxOptions(), task_id="alive")  # this process's: spared
    asyncio.run(alive.start())
    try:
        assert reap_orphans(str(tmp_path)) == [root]
        assert not Path(root).exists()
        assert _left_processes(name) == []
        assert Path(alive.root).is_dir()
        assert reap_orphans(str(tmp_path)) == []
    finally:
        asyncio.run(alive.close())


def test_reap_orphans_of_a_missing_directory_finds_nothing(tmp_path: Path) -> None:
    from hermes_sandbox.backends.local import reap_orphans

    assert reap_orphans(str(tmp_path / "nowhere")) == []


def test_stop_on_sigterm_raises_keyboard_interrupt_and_restores_the_handler() -> None:
    from hermes_sandbox import stop_on_sigterm

    def mine(signum: int, frame: object) -> None:
        raise AssertionError("the previous handler must not run inside the block")

    previous = signal.signal(signal.SIGTERM, mine)
    try:
        with stop_on_sigterm(), pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGTERM)
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_stop_on_sigterm_follows_an_ignored_sigint() -> None:
    from hermes_sandbox import stop_on_sigterm

    before = signal.getsignal(signal.SIGTERM)  # what the process had (a library may set one)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with stop_on_sigterm():
            signal.raise_signal(signal.SIGTERM)  # ignored, as Ctrl-C would be
    finally:
        signal.signal(signal.SIGINT, previous)
    assert signal.getsignal(signal.SIGTERM) == before


def test_stop_on_sigterm_refuses_other_threads() -> None:
    import threading

    from hermes_sandbox import stop_on_sigterm

    failures: list[BaseException] = []

    def attempt() -> None:
        try:
            with stop_on_sigterm():
                pass
        except RuntimeError as exc:
            failures.append(exc)

    thread = threading.Thread(target=attempt)
    thread.start()
    thread.join()
    assert len(failures) == 1
    assert "main thread" in str(failures[0])
