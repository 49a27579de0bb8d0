"""The ``singularity`` backend, driven through the recording apptainer stand-in
(tests/sandbox/fakes/apptainer_standin.py), and live when a real binary exists."""

from __future__ import annotations

import asyncio
import os
import pathlib
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from hermes_sandbox import (
    BackendUnavailableError,
    Sandbox,
    SandboxClosedError,
    SandboxStartError,
    create_sandbox,
)
from hermes_sandbox.backends.jobs.singularity import CLI_ENV_KEEP, SingularitySandbox, find_binary
from tests.sandbox.providers import singularity as provider

pytestmark = pytest.mark.skipif(
    provider.unavailable() is not None, reason=str(provider.unavailable())
)


@pytest.fixture
def standin(tmp_path: pathlib.Path) -> provider.StandIn:
    return provider.StandIn(tmp_path / "apptainer").install()


def _commands(standin: provider.StandIn, *prefix: str) -> list[list[str]]:
    return [c["argv"] for c in standin.calls() if c["argv"][: len(prefix)] == list(prefix)]


async def test_instance_lifecycle_is_driven_through_the_cli(standin: provider.StandIn) -> None:
    sandbox = create_sandbox("singularity", **standin.options())
    assert isinstance(sandbox, SingularitySandbox)
    async with sandbox:
        assert standin.instances() == [sandbox.instance_name]
        host_dir = sandbox.host_dir
        assert host_dir is not None
        assert (await sandbox.exec("echo hello")).output == "hello\n"
    (start,) = _commands(standin, "instance", "start")
    assert start[:4] == ["instance", "start", "--containall", "--writable-tmpfs"]
    assert ["--bind", f"{host_dir}:{sandbox.workdir}"] == start[4:6]
    assert start[6:9] == ["--net", "--network", "none"]
    assert start[-2:] == [str(standin.image), sandbox.instance_name]
    execs = _commands(standin, "exec")
    assert execs
    assert all(argv[1:3] == ["--cleanenv", sandbox.instance] for argv in execs)
    assert _commands(standin, "instance", "stop") == [
        ["instance", "stop", "--force", sandbox.instance_name]
    ]
    assert standin.leftovers() == []
    # The CLI never sees more of this process's environment than it needs.
    allowed = set(CLI_ENV_KEEP) | {"PWD", "OLDPWD", "SHLVL", "_"}
    for call in standin.calls():
        assert set(call["env"]) <= allowed, call


async def test_limits_network_and_extra_flags(standin: provider.StandIn) -> None:
    options = standin.options(
        cpus=1.5,
        memory_mb=512,
        pids_limit=64,
        network=True,
        overlay=str(standin.directory),
        containall=False,
        start_args=["--hostname", "box"],
    )
    async with create_sandbox("singularity", **options):
        pass
    (start,) = _commands(standin, "instance", "start")
    assert start[2:5] == ["--contain", "--overlay", str(standin.directory)]
    assert "--net" not in start
    flags = start[start.index("--bind") + 2 : -2]
    assert flags == [
        "--cpus",
        "1.5",
        "--memory",
        "512M",
        "--pids-limit",
        "64",
        "--hostname",
        "box",
    ]


async def test_exec_output_env_and_session_state(standin: provider.StandIn) -> None:
    options = standin.options(env={"API_TOKEN": "given", "SPACED": "a b'c"})
    async with create_sandbox("singularity", **options) as sandbox:
        result = await sandbox.exec("echo out; echo err >&2; echo out2; exit 5")
        assert (result.output, result.exit_code) == ("out\nerr\nout2\n", 5)
        assert (await sandbox.exec("pwd")).output == f"{sandbox.workdir}\n"
        await sandbox.exec("mkdir -p d && cd d && export KEPT=yes")
        assert (await sandbox.exec('pwd; echo "$KEPT"')).output == f"{sandbox.workdir}/d\nyes\n"
        listing = (await sandbox.exec("env")).output
    names = {line.split("=", 1)[0] for line in listing.splitlines() if "=" in line}
    assert "API_TOKEN=given" in listing
    assert "SPACED=a b'c" in listing
    assert not names & (set(os.environ) - {"PATH", "HOME", "LANG", "PWD", "OLDPWD", "SHLVL", "_"})


async def test_timeout_and_cancel_kill_the_whole_tree(
    standin: provider.StandIn,
    wait_dead: Callable[..., Awaitable[bool]],
    cancel_running: Callable[[Sandbox], Awaitable[int]],
) -> None:
    async with create_sandbox("singularity", **standin.options()) as sandbox:
        result = await sandbox.exec(
            "sleep 300 & echo $! > bg.pid; "
            "setsid sleep 301 </dev/null >/dev/null 2>&1 & echo $! > escaped.pid; "
            "echo ready; sleep 300",
            timeout=1,
        )
        assert result.timed_out
        assert result.exit_code == 124
        assert result.output == "ready\n"
        for name in ("bg.pid", "escaped.pid"):
            pid = int((await sandbox.read_file(name)).decode())
            assert await wait_dead(pid), f"{name} survived the timeout"
        shell = await cancel_running(sandbox)
        assert await wait_dead(shell)
        assert (await sandbox.exec("echo still")).output == "still\n"


async def test_close_leaves_nothing(
    standin: provider.StandIn,
    wait_dead: Callable[..., Awaitable[bool]],
    entries: Callable[[pathlib.Path], list[str] | None],
) -> None:
    sandbox = create_sandbox("singularity", **standin.options())
    await sandbox.start()
    await sandbox.exec("nohup sleep 300 >/dev/null 2>&1 & echo $! > daemon.pid")
    daemon = int((await sandbox.read_file("daemon.pid")).decode())
    state_dir = pathlib.Path(sandbox._state_dir)
    assert entries(state_dir) is not None
    await sandbox.close()
    await sandbox.close()
    assert await wait_dead(daemon)
    assert entries(state_dir) is None
    assert standin.leftovers() == []
    with pytest.raises(SandboxClosedError):
        await sandbox.exec("true")


async def test_close_after_the_instance_died(standin: provider.StandIn) -> None:
    sandbox = create_sandbox("singularity", **standin.options())
    assert isinstance(sandbox, SingularitySandbox)
    await sandbox.start()
    stop = await asyncio.create_subprocess_exec(
        str(standin.binary),
        "instance",
        "stop",
        sandbox.instance_name,
        stderr=asyncio.subprocess.DEVNULL,
    )
    await stop.wait()
    with pytest.raises(SandboxClosedError, match="gone"):
        await sandbox.exec("echo hi")
    with pytest.raises(SandboxClosedError):
        await sandbox.read_file("x")
    await sandbox.close()
    assert standin.leftovers() == []


async def test_files_binary_large_and_nested(
    standin: provider.StandIn, tmp_path: pathlib.Path
) -> None:
    async with create_sandbox("singularity", **standin.options()) as sandbox:
        blob = bytes(range(256)) * 1024
        await sandbox.write_file("a/b/blob.bin", blob)
        assert await sandbox.read_file("a/b/blob.bin") == blob
        big = os.urandom(50 * 1024 * 1024)
        await sandbox.write_file("big.bin", big)
        assert await sandbox.read_file("big.bin") == big
        with pytest.raises(FileNotFoundError):
            await sandbox.read_file("missing")
        with pytest.raises(IsADirectoryError):
            await sandbox.read_file("a")
        with pytest.raises(IsADirectoryError):
            await sandbox.write_file("a", b"x")
        tree = tmp_path / "tree"
        (tree / "x" / "y").mkdir(parents=True)
        (tree / "x" / "y" / "z.txt").write_text("deep")
        await sandbox.upload_dir(tree, "up")
        assert (await sandbox.exec("cat up/x/y/z.txt")).output == "deep"
        await sandbox.download_dir("up", tmp_path / "down")
        assert (tmp_path / "down" / "x" / "y" / "z.txt").read_text() == "deep"
        with pytest.raises(FileNotFoundError):
            await sandbox.download_dir("nowhere", tmp_path / "none")


async def test_output_is_bounded(standin: provider.StandIn) -> None:
    options = standin.options(max_output_chars=1000)
    async with create_sandbox("singularity", **options) as sandbox:
        result = await sandbox.exec("head -c 50000000 /dev/zero | tr '\\0' y; echo; echo END")
    assert result.truncated
    assert len(result.output) < 1200
    assert result.output.endswith("END\n")


async def test_start_failures_are_clear_and_leave_nothing(standin: provider.StandIn) -> None:
    missing = standin.directory / "missing.sif"
    with pytest.raises(SandboxStartError, match=r"instance start.*could not open image"):
        await create_sandbox("singularity", **standin.options(image=str(missing))).start()
    with pytest.raises(SandboxStartError, match="unknown flag"):
        await create_sandbox("singularity", **standin.options(start_args=["--bogus"])).start()
    assert standin.leftovers() == []


def test_bad_options(standin: provider.StandIn, tmp_path: pathlib.Path) -> None:
    with pytest.raises(BackendUnavailableError, match="binary="):
        create_sandbox("singularity", **standin.options(binary=str(tmp_path / "no-apptainer")))
    with pytest.raises(ValueError, match="needs image"):
        create_sandbox("singularity", **standin.options(image=None))
    with pytest.raises(
        ValueError,
        match=r"singularity backend: unknown option\(s\) 'bind'; known singularity options: ",
    ):
        create_sandbox("singularity", **standin.options(bind="/x"))
    with pytest.raises(ValueError, match="workdir"):
        create_sandbox("singularity", **standin.options(workdir="/a:b"))
    with pytest.raises(ValueError, match="reserved"):
        create_sandbox("singularity", **standin.options(env={"HERMES_SANDBOX_MARKER": "1"}))
    with pytest.raises(ValueError, match="start_args"):
        create_sandbox("singularity", **standin.options(start_args="--net"))
    assert find_binary(str(standin.binary)) == str(standin.binary)
    assert find_binary(str(tmp_path / "nothing")) is None


# live ------------------------------------------------------------------------------
REAL_BINARY = find_binary()


@pytest.mark.skipif(REAL_BINARY is None, reason="no apptainer or singularity binary on PATH")
async def test_live_instance(
    tmp_path: pathlib.Path, entries: Callable[[pathlib.Path], list[str] | None]
) -> None:
    """Against the real CLI. The image: $HERMES_SINGULARITY_IMAGE, else a Debian image
    pulled from Docker Hub (skipped when it cannot be fetched)."""
    image = os.environ.get("HERMES_SINGULARITY_IMAGE", "docker://debian:bookworm-slim")
    options: dict[str, Any] = {
        "image": image,
        "host_dir": str(tmp_path),
        "env": {"GIVEN": "yes"},
        "network": True,
    }
    sandbox = create_sandbox("singularity", **options)
    assert isinstance(sandbox, SingularitySandbox)
    try:
        await sandbox.start()
    except SandboxStartError as exc:
        if image.startswith("docker://") and "HERMES_SINGULARITY_IMAGE" not in os.environ:
            pytest.skip(f"cannot start {image} here (set HERMES_SINGULARITY_IMAGE): {exc}")
        raise
    try:
        result = await sandbox.exec("echo out; echo err >&2; echo $GIVEN; exit 3")
        assert (result.output, result.exit_code) == ("out\nerr\nyes\n", 3)
        await sandbox.exec("cd /tmp && export KEPT=1")
        assert (await sandbox.exec("pwd; echo $KEPT")).output == "/tmp\n1\n"
        timed = await sandbox.exec("sleep 300 & sleep 300", timeout=2)
        assert timed.timed_out
        left = await sandbox.exec("ps -eo args 2>/dev/null | grep -c '^sleep 300' || true")
        assert left.output.strip() in ("0", "")
        await sandbox.write_file("f.bin", b"\x00\x01" * 1000)
        assert await sandbox.read_file("f.bin") == b"\x00\x01" * 1000
    finally:
        await sandbox.close()
    assert entries(tmp_path) == []
    listing = await asyncio.create_subprocess_exec(
        str(REAL_BINARY), "instance", "list", stdout=asyncio.subprocess.PIPE
    )
    out, _ = await listing.communicate()
    assert sandbox.instance_name not in out.decode()
