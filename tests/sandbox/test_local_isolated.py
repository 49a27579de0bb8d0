"""The local backend's isolated mode (bubblewrap): what it hides from commands and file
tools (issue 12, item 11). Each check runs in plain mode too, where it must see the host:
that shows the check can fail."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from hermes_sandbox import SandboxClosedError, SandboxStartError, create_sandbox
from hermes_sandbox._blocking import LoopThread
from hermes_sandbox.backends.local import LocalSandbox, reap_orphans
from hermes_sandbox.backends.local._isolation import HELPER, Namespace
from hermes_sandbox.backends.local._layout import Layout, host_interpreter
from hermes_sandbox.testing.probes import host_processes
from tests.sandbox.support import kill_9_child

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="bubblewrap is not installed (bash .ci/services/bubblewrap.sh)",
)


def local(isolation: str, **options: Any) -> LocalSandbox:
    sandbox = create_sandbox("local", isolation=isolation, **options)
    assert isinstance(sandbox, LocalSandbox)
    return sandbox


@pytest.mark.parametrize(("isolation", "visible"), [("bwrap", False), ("none", True)])
async def test_host_processes_and_their_environment_are_invisible(
    isolation: str, visible: bool
) -> None:
    secret = f"hermes-secret-{uuid.uuid4().hex}"
    holder = await asyncio.create_subprocess_exec(
        "sleep", "60", env={"PATH": os.defpath, "API_KEY": secret}, stdin=subprocess.DEVNULL
    )
    try:
        async with local(isolation) as sandbox:
            found = await sandbox.exec(f"grep -aoh {secret} /proc/[0-9]*/environ 2>/dev/null")
            parent = await sandbox.exec("cat /proc/$PPID/environ | tr '\\0' '\\n'")
            assert (secret in found.output) is visible
            assert ("HERMES" in parent.output or "PYTHON" in parent.output) is visible
            listed = await sandbox.exec(f"ls -d /proc/{holder.pid} 2>/dev/null; true")
            assert (listed.output.strip() != "") is visible
    finally:
        holder.kill()
        await holder.wait()


@pytest.mark.parametrize(("isolation", "reachable"), [("bwrap", False), ("none", True)])
async def test_the_network_is_off(isolation: str, reachable: bool) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        async with local(isolation) as sandbox:
            probe = await sandbox.exec(
                f"(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null; echo rc=$?", timeout=20
            )
            assert (probe.output.strip() == "rc=0") is reachable
            # The sandbox's own loopback works: an agent may start a server and curl it.
            with socket.socket() as spare:
                spare.bind(("127.0.0.1", 0))
                free = spare.getsockname()[1]
            await sandbox.exec(f"python3 -m http.server {free} --bind 127.0.0.1 >/dev/null 2>&1 &")
            served = await sandbox.exec(
                f"for i in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/{free}) 2>/dev/null && "
                "echo up && break; sleep 0.1; done",
                timeout=30,
            )
            assert served.output == "up\n"


async def test_network_true_keeps_the_hosts_network() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        async with local("bwrap", network=True) as sandbox:
            probe = await sandbox.exec(f"(exec 3<>/dev/tcp/127.0.0.1/{port}); echo rc=$?")
            assert probe.output.strip() == "rc=0"


async def test_the_host_file_system_is_read_only_to_commands_and_file_tools() -> None:
    async with local("bwrap") as sandbox:
        for path in ("/etc/hermes-probe", "/usr/hermes-probe", "/hermes-probe"):
            result = await sandbox.exec(f"echo changed > {path}")
            assert result.exit_code != 0
            assert "Read-only file system" in result.output
            with pytest.raises(OSError, match="Read-only"):
                await sandbox.write_file(path, "changed by write_file")
        # A link in the sandbox to a host file: file tools follow it as commands would.
        await sandbox.exec("ln -s /etc/hostname link")
        with pytest.raises(OSError, match="Read-only"):
            await sandbox.write_file("link", "through the link")
        host = await asyncio.to_thread(Path("/etc/hostname").read_bytes)
        assert await sandbox.read_file("link") == host  # readable, as for commands
        # The sandbox's own directory and /tmp are writable.
        await sandbox.write_file("sub/data.bin", b"\x00\xff")
        assert (await sandbox.exec("od -An -tx1 sub/data.bin")).output.split() == ["00", "ff"]
        probe = f"/tmp/hermes-probe-{uuid.uuid4().hex[:8]}"
        written = await sandbox.exec(f"echo t > {probe} && cat {probe} && rm {probe}")
        assert written.output == "t\n"


async def test_the_hosts_tmp_and_other_sandboxes_are_hidden(tmp_path: Path) -> None:
    async with local("none") as neighbour, local("bwrap") as sandbox:
        await neighbour.write_file("note.txt", "neighbour's")
        seen = await sandbox.exec(f"ls {neighbour.root} 2>&1; ls /tmp")
        assert "note.txt" not in seen.output
        with pytest.raises(FileNotFoundError):
            await sandbox.read_file(f"{neighbour.root}/note.txt")
        assert sandbox.isolated
        assert not neighbour.isolated


async def test_transfers_go_through_the_sandbox(tmp_path: Path) -> None:
    source = tmp_path / "tree"
    (source / "a" / "b").mkdir(parents=True)
    (source / "a" / "b" / "f.txt").write_text("deep")
    (source / "top.bin").write_bytes(bytes(range(256)))
    async with local("bwrap") as sandbox:
        await sandbox.upload_dir(source, "up")
        await sandbox.upload_file(source / "top.bin", "one/top.bin")
        assert (await sandbox.exec("cat up/a/b/f.txt")).output == "deep"
        await sandbox.download_dir("up", tmp_path / "back")
        await sandbox.download_file("one/top.bin", tmp_path / "back.bin")
    assert (tmp_path / "back" / "a" / "b" / "f.txt").read_text() == "deep"
    assert (tmp_path / "back.bin").read_bytes() == bytes(range(256))


async def test_a_sandbox_whose_processes_were_killed_from_inside_reports_it() -> None:
    async with local("bwrap") as sandbox:
        with pytest.raises(SandboxClosedError, match="died"):
            await sandbox.exec("kill -9 -1; sleep 1")
        assert sandbox.closed  # a pool gives the task a fresh sandbox
        assert not await asyncio.to_thread(os.path.exists, sandbox.root)
        with pytest.raises(SandboxClosedError):
            await sandbox.exec("echo after")


async def test_auto_isolates_where_bubblewrap_is_installed() -> None:
    async with local("auto") as sandbox:
        assert sandbox.isolated


async def test_a_bubblewrap_failure_is_reported_at_start(tmp_path: Path) -> None:
    # A program that exits at once in place of bwrap: start says it failed, and how.
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    interpreter = host_interpreter()
    assert interpreter is not None
    layout = Layout(
        writable=[str(tmp_path)],
        private=[],
        readable=[],
        interpreter=interpreter,
        helper=HELPER,
        network=False,
        tmp_size_mb=16,
    )
    with pytest.raises(SandboxStartError, match="No permissions to create new namespace"):
        await Namespace.start(
            bwrap=str(fake), layout=layout, home=str(tmp_path), log_path=str(tmp_path / "log")
        )


def test_kill_9_of_the_owner_takes_the_isolated_sandbox_with_it(tmp_path: Path) -> None:
    name = f"hermes-orphan-{uuid.uuid4().hex[:10]}"
    root = kill_9_child(name, tmp_path, "bwrap")
    deadline = time.monotonic() + 10
    while host_processes(name) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert host_processes(name) == []  # no reap_orphans needed for the processes
    assert reap_orphans(str(tmp_path)) == [root]  # the directory it removes


async def test_concurrent_execs_in_one_isolated_sandbox() -> None:
    async with local("bwrap") as sandbox:
        results = await asyncio.gather(*(sandbox.exec(f"echo {i}") for i in range(20)))
        assert [r.output for r in results] == [f"{i}\n" for i in range(20)]


async def test_concurrent_commands_get_only_their_own_descriptors() -> None:
    # Output pipes of commands started together must not leak into one another.
    async with local("bwrap") as sandbox:
        results = await asyncio.gather(*(sandbox.exec("ls /proc/$$/fd") for _ in range(30)))
        assert {r.output for r in results} == {"0\n1\n2\n"}
        await sandbox.write_file("f", "x")
        listed = await sandbox.exec("ls /proc/$$/fd")  # nor do files opened for file tools
        assert listed.output == "0\n1\n2\n"


async def test_file_errors_name_the_path_and_leave_nothing_behind(tmp_path: Path) -> None:
    async with local("bwrap") as sandbox:
        with pytest.raises(FileNotFoundError, match=r"nowhere\.txt"):
            await sandbox.download_file("nowhere.txt", tmp_path / "out.txt")
        assert not (tmp_path / "out.txt").exists()
        with pytest.raises(FileNotFoundError):
            await sandbox.upload_file(tmp_path / "missing.txt", "copy.txt")
        assert (await sandbox.exec("ls")).output == ""  # no empty copy.txt
        with pytest.raises(IsADirectoryError):
            await sandbox.read_file(".")


def test_an_isolated_sandbox_outlives_the_event_loop_that_started_it() -> None:
    sandbox = local("bwrap")

    async def first() -> str:
        await sandbox.start()
        return (await sandbox.exec("export A=1; sleep 30 & echo background")).output

    async def second() -> tuple[str, bytes]:
        try:
            await sandbox.write_file("f", "x")
            return (await sandbox.exec('echo "$A"')).output, await sandbox.read_file("f")
        finally:
            await sandbox.close()

    assert asyncio.run(first()) == "background\n"
    assert asyncio.run(second()) == ("1\n", b"x")
    assert not os.path.exists(sandbox.root)


def test_an_interpreter_and_a_checkout_under_tmp_still_start(tmp_path: Path) -> None:
    """A CI clone or a throwaway venv under /tmp: the sandbox's /tmp is empty, yet the
    helper must start inside it (it runs on the interpreter the venv was made from)."""
    import hermes_sandbox

    if not tmp_path.is_relative_to("/tmp"):
        pytest.skip(f"pytest's temporary folder {tmp_path} is not under /tmp")
    venv = tmp_path / "venv"
    subprocess.run(["python3", "-m", "venv", "--without-pip", str(venv)], check=True)
    checkout = tmp_path / "checkout"
    shutil.copytree(Path(hermes_sandbox.__file__).parent, checkout / "hermes_sandbox")
    site = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import sysconfig; print(sysconfig.get_path('purelib'))",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(site) / "checkout.pth").write_text(f"{checkout}\n", encoding="utf-8")
    (tmp_path / "host-only").write_text("not for the sandbox", encoding="utf-8")
    script = (
        "import asyncio, hermes_sandbox\n"
        "async def main():\n"
        "    async with hermes_sandbox.create_sandbox('local', isolation='bwrap') as box:\n"
        "        print(hermes_sandbox.__file__)\n"
        f"        print((await box.exec('ls {tmp_path} 2>/dev/null; echo inside')).output)\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    where, listing = done.stdout.split("\n", 1)
    assert where.startswith(str(checkout))
    # The helper runs on the base interpreter: neither the venv nor the checkout is shown.
    assert listing.split() == ["inside"]


async def test_a_second_event_loop_drives_the_sandbox_while_its_own_is_blocked() -> None:
    async with create_sandbox("local", isolation="bwrap") as sandbox:
        await sandbox.exec("export FROM_HOME=1; sleep 300 >/dev/null 2>&1 &")
        for name in ("first", "second"):  # the second reuses the stopped loop's link
            private = LoopThread(f"hermes-test-{name}")
            try:
                # Blocks this loop (the sandbox's) until the private loop is done.
                ran = private.run(sandbox.exec('echo "$FROM_HOME"; sleep 30', timeout=0.5))
                assert (ran.output, ran.exit_code) == ("1\n", 124)
                private.run(sandbox.write_file("from-private.txt", name))
                assert private.run(sandbox.read_file("from-private.txt")) == name.encode()
            finally:
                private.stop()
        assert (await sandbox.exec("cat from-private.txt")).output == "second"
        await sandbox.stop_processes()
        assert (await sandbox.exec("pgrep -c sleep")).output == "0\n"


async def test_the_helper_gets_its_descriptors_whatever_their_numbers() -> None:
    # The descriptors handed to bubblewrap are copied to their places through spare
    # numbers; a source that is itself one of those must not be overwritten first.
    fillers: list[int] = []
    try:
        while True:
            fd = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
            if fd >= 90:
                os.close(fd)
                break
            fillers.append(fd)
        for _ in range(16):  # the sandbox's descriptors start at 90, 91, ... 105
            async with create_sandbox("local", isolation="bwrap") as sandbox:
                assert (await sandbox.exec("echo ok")).output == "ok\n"
            fillers.append(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
    finally:
        for fd in fillers:
            os.close(fd)
