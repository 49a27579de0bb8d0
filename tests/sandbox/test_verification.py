"""``stop_processes`` and ``exec(session=False)``: the edges the conformance suite does not
cover (before start, the base hook, a cgroup, PATH, docker's keeper, the isolated
helper outside a namespace)."""

from __future__ import annotations

import json
import marshal
import socket
import subprocess
import sys

import pytest

from hermes_sandbox import SandboxClosedError, SandboxError, create_sandbox
from hermes_sandbox._base import Sandbox
from hermes_sandbox._options import SandboxOptions
from hermes_sandbox._processes import DEFAULT_PATH
from hermes_sandbox.backends.local import LocalSandbox, helper
from hermes_sandbox.testing.probes import appeared, gone, host_processes, token


class NoStopHook(LocalSandbox):
    """A backend that does not say how to stop its processes (the base hook)."""

    async def _stop_processes(self) -> None:
        await Sandbox._stop_processes(self)


async def test_stop_processes_before_start_is_a_no_op_and_after_close_raises() -> None:
    sandbox = create_sandbox("local")
    await sandbox.stop_processes()
    assert not sandbox.started  # it did not start the sandbox to stop nothing
    async with sandbox:
        await sandbox.stop_processes()  # started, nothing ran
    with pytest.raises(SandboxClosedError, match="is closed"):
        await sandbox.stop_processes()


async def test_a_backend_without_the_hook_raises_a_clear_error() -> None:
    async with NoStopHook(SandboxOptions()) as sandbox:
        with pytest.raises(SandboxError, match="does not implement _stop_processes"):
            await sandbox.stop_processes()


async def test_stop_processes_in_a_cgroup_kills_what_dropped_its_marker() -> None:
    name = token()
    try:
        sandbox = await create_sandbox("local", pids_limit=64).start()
    except SandboxError as exc:
        pytest.skip(f"no cgroup here: {exc}")
    async with sandbox:
        await sandbox.exec(
            f"setsid env -u HERMES_SANDBOX_MARKER bash -c '(exec -a {name} sleep 300)' "
            "</dev/null >/dev/null 2>&1 &"
        )
        await appeared(name, 1)
        await sandbox.stop_processes()
        assert await gone(name) == []


async def test_outside_the_session_the_configured_or_default_path_holds() -> None:
    async with create_sandbox("local", env={"PATH": "/usr/bin:/bin"}) as sandbox:
        await sandbox.exec("export PATH=/nowhere:$PATH")
        result = await sandbox.exec('echo "$PATH"', session=False)
        assert result.output == "/usr/bin:/bin\n"
    async with create_sandbox("local") as sandbox:
        await sandbox.exec("export PATH=/nowhere:$PATH")
        result = await sandbox.exec('echo "$PATH"', session=False)
        # The default, with the folder of the sandbox's python and python3 first.
        assert result.output.endswith(f":{DEFAULT_PATH}\n")
        assert "/nowhere" not in result.output


async def test_outside_the_session_a_missing_workdir_is_made_again() -> None:
    async with create_sandbox("local") as sandbox:
        await sandbox.exec(f"rm -rf {sandbox.workdir}")
        result = await sandbox.exec("pwd", session=False)
        assert (result.output, result.exit_code) == (f"{sandbox.workdir}\n", 0)


def _docker_image() -> str:
    from tests.sandbox.providers.docker import docker_setup

    setup = docker_setup()
    if setup.reason or setup.image_problem:
        pytest.skip(setup.reason or setup.image_problem or "")
    return setup.image


async def test_docker_stop_spares_the_keeper_not_a_process_named_like_it() -> None:
    image = _docker_image()
    name = token()
    async with create_sandbox("docker", image=image) as sandbox:
        # Orphans, so init's children, as the keeper is; one even calls itself so.
        await sandbox.exec(
            f"(exec -a hermes-keeper-{name} sleep 300 &); (exec -a {name} sleep 300 &)"
        )
        await appeared(name, 2)
        await sandbox.stop_processes()
        assert await gone(name) == []
        assert (await sandbox.exec("echo alive")).output == "alive\n"  # keeper still there
        await sandbox.stop_processes()
        assert host_processes(name) == []


def test_the_isolated_helper_refuses_to_stop_outside_a_pid_namespace() -> None:
    """Outside bubblewrap, ``kill(-1)`` would reach every process of this user: the
    helper answers with an error instead (and this test process survives)."""
    ours, theirs = socket.socketpair()
    linker_ours, linker_theirs = socket.socketpair()  # the helper's second socket
    process = subprocess.Popen(
        [
            sys.executable,
            "-I",
            "-S",
            helper.__file__,
            str(theirs.fileno()),
            str(linker_theirs.fileno()),
        ],
        pass_fds=[theirs.fileno(), linker_theirs.fileno()],
    )
    theirs.close()
    linker_theirs.close()
    try:
        ours.settimeout(30)
        data, _ = helper.frame(marshal.dumps({"op": "stop", "id": 7}))
        ours.sendall(data)
        decoder = helper.Decoder(json.loads)
        answers: list[dict[str, object]] = []
        while not any(a.get("id") == 7 for a in answers):
            chunk = ours.recv(65536)
            assert chunk, "the helper closed the socket without answering"
            answers += decoder.feed(chunk, [])
        answer = next(a for a in answers if a.get("id") == 7)
        assert answer["stopped"] == 0
        assert "not in a pid namespace" in str(answer["error"])
    finally:
        ours.close()
        linker_ours.close()
        process.wait(timeout=30)
