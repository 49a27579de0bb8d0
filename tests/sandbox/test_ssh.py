"""The ``ssh`` backend against Debian's sshd on a loopback port (see providers/ssh.py)."""

from __future__ import annotations

import asyncio
import os
import pathlib
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from hermes_sandbox import (
    Sandbox,
    SandboxClosedError,
    SandboxStartError,
    create_sandbox,
)
from tests.sandbox.providers import ssh as provider

pytestmark = pytest.mark.skipif(
    provider.unavailable() is not None, reason=str(provider.unavailable())
)


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[provider.SshServer]:
    with provider.SshServer(tmp_path_factory.mktemp("sshd")) as server:
        yield server


@pytest.fixture
def remote_base(sshd: provider.SshServer, tmp_path: pathlib.Path) -> pathlib.Path:
    """A fresh remote base directory per test, so leftovers are this test's own."""
    base = tmp_path / "remote"
    base.mkdir(mode=0o700)
    return base


async def _connect(sshd: provider.SshServer) -> Any:
    """An asyncssh connection of the caller's own to the test server."""
    import asyncssh

    return await asyncssh.connect(
        "127.0.0.1",
        port=sshd.port,
        username=sshd.user,
        client_keys=[str(sshd.client_key_path)],
        known_hosts=([asyncssh.import_public_key(sshd.host_public_key)], [], []),
        config=None,
    )


async def test_exec_output_exit_code_and_session_state(
    sshd: provider.SshServer, remote_base: pathlib.Path
) -> None:
    async with create_sandbox("ssh", **sshd.options(base_dir=str(remote_base))) as sandbox:
        result = await sandbox.exec("echo out; echo err >&2; echo out2; exit 7")
        assert result.exit_code == 7
        assert result.output == "out\nerr\nout2\n"
        assert not result.timed_out
        assert (await sandbox.exec("pwd")).output.strip() == sandbox.workdir
        assert sandbox.workdir.startswith(str(remote_base) + "/")
        await sandbox.exec("mkdir -p sub && cd sub && export GREETING='hi there'")
        again = await sandbox.exec('pwd; echo "$GREETING"')
        assert again.output == f"{sandbox.workdir}/sub\nhi there\n"
        unicode = await sandbox.exec("printf 'h\\xc3\\xa9llo \\xf0\\x9f\\x8c\\x8d \\xff\\n'")
        assert unicode.output == "héllo 🌍 \ufffd\n"


async def test_environment_is_only_options_env(
    sshd: provider.SshServer, remote_base: pathlib.Path
) -> None:
    options = sshd.options(base_dir=str(remote_base), env={"API_TOKEN": "given", "X": "a b'c"})
    async with create_sandbox("ssh", **options) as sandbox:
        listing = (await sandbox.exec("env -0 | sort -z | tr '\\0' '\\n'")).output
    names = {line.split("=", 1)[0] for line in listing.splitlines() if "=" in line}
    allowed = {"API_TOKEN", "X", "PATH", "HOME", "LANG", "PWD", "OLDPWD", "SHLVL", "_"}
    allowed.add("HERMES_SANDBOX_MARKER")
    assert names <= allowed
    assert "API_TOKEN=given" in listing
    assert "X=a b'c" in listing
    # Nothing of the test process's (host's) environment, nor sshd's session variables.
    assert not names & (set(os.environ) - allowed)
    assert not names & {"SSH_CONNECTION", "SSH_CLIENT", "USER", "MAIL", "SHELL"}


async def test_timeout_kills_the_whole_process_tree(
    sshd: provider.SshServer, remote_base: pathlib.Path, wait_dead: Callable[..., Awaitable[bool]]
) -> None:
    async with create_sandbox("ssh", **sshd.options(base_dir=str(remote_base))) as sandbox:
        started = time.monotonic()
        result = await sandbox.exec(
            "sleep 300 & echo $! > bg.pid; (sleep 300; echo never) & echo ready; wait",
            timeout=1.5,
        )
        assert time.monotonic() - started < 10
        assert result.timed_out
        assert result.exit_code == 124
        assert result.output.startswith("ready")
        pid = int((await sandbox.read_file("bg.pid")).decode())
        assert await wait_dead(pid), "the background child survived the timeout"
        # The session still works after a timeout.
        assert (await sandbox.exec("echo alive")).output == "alive\n"


async def test_processes_that_left_the_session_die_too(
    sshd: provider.SshServer,
    remote_base: pathlib.Path,
    alive: Callable[[int], bool],
    wait_dead: Callable[..., Awaitable[bool]],
) -> None:
    async with create_sandbox("ssh", **sshd.options(base_dir=str(remote_base))) as sandbox:
        result = await sandbox.exec(
            "setsid sleep 301 </dev/null >/dev/null 2>&1 & echo $! > escaped.pid; sleep 300",
            timeout=1,
        )
        assert result.timed_out
        escaped = int((await sandbox.read_file("escaped.pid")).decode())
        assert await wait_dead(escaped), "a setsid child survived the timeout"
        await sandbox.exec("setsid sleep 302 </dev/null >/dev/null 2>&1 & echo $! > later.pid")
        later = int((await sandbox.read_file("later.pid")).decode())
        assert alive(later)
        # A later command's timeout leaves earlier commands' processes alone ...
        assert (await sandbox.exec("sleep 300", timeout=0.5)).timed_out
        assert alive(later)
    # ... and close() ends them.
    assert await wait_dead(later), "a setsid child survived close()"


async def test_cancelling_exec_kills_the_command(
    sshd: provider.SshServer,
    remote_base: pathlib.Path,
    wait_dead: Callable[..., Awaitable[bool]],
    cancel_running: Callable[[Sandbox], Awaitable[int]],
) -> None:
    async with create_sandbox("ssh", **sshd.options(base_dir=str(remote_base))) as sandbox:
        pid = await cancel_running(sandbox)
        assert await wait_dead(pid)


async def test_close_removes_everything_and_is_idempotent(
    sshd: provider.SshServer,
    remote_base: pathlib.Path,
    alive: Callable[[int], bool],
    wait_dead: Callable[..., Awaitable[bool]],
    entries: Callable[[pathlib.Path], list[str] | None],
) -> None:
    sandbox = create_sandbox("ssh", **sshd.options(base_dir=str(remote_base)))
    await sandbox.start()
    await sandbox.exec("nohup sleep 300 >/dev/null 2>&1 & echo $! > daemon.pid; cd /; export A=1")
    pid = int((await sandbox.read_file(f"{sandbox.workdir}/daemon.pid")).decode())
    state_dir = sandbox._state_dir
    assert entries(pathlib.Path(state_dir)) is not None
    assert alive(pid)
    await sandbox.close()
    await sandbox.close()
    assert await wait_dead(pid), "a process left running by a command survived close()"
    assert entries(remote_base) == []
    assert entries(pathlib.Path(state_dir)) is None
    with pytest.raises(SandboxClosedError):
        await sandbox.exec("true")


async def test_given_workdir_is_created_and_kept(
    sshd: provider.SshServer,
    remote_base: pathlib.Path,
    tmp_path: pathlib.Path,
    entries: Callable[[pathlib.Path], list[str] | None],
) -> None:
    workdir = tmp_path / "project"
    options = sshd.options(base_dir=str(remote_base), workdir=str(workdir))
    async with create_sandbox("ssh", **options) as sandbox:
        assert (await sandbox.exec("pwd; echo $HOME")).output.splitlines()[0] == str(workdir)
        await sandbox.write_file("keep.txt", "kept")
    assert (workdir / "keep.txt").read_text() == "kept"
    assert entries(remote_base) == []


async def test_files_binary_large_and_nested(
    sshd: provider.SshServer, remote_base: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    async with create_sandbox("ssh", **sshd.options(base_dir=str(remote_base))) as sandbox:
        blob = bytes(range(256)) * 4096
        await sandbox.write_file("deep/er/blob.bin", blob)
        assert await sandbox.read_file("deep/er/blob.bin") == blob
        big = os.urandom(50 * 1024 * 1024)
        await sandbox.write_file("/tmp/../" + sandbox.workdir.lstrip("/") + "/big.bin", big)
        assert await sandbox.read_file("big.bin") == big
        assert (await sandbox.exec("wc -c < big.bin")).output.strip() == str(len(big))
        assert await sandbox.read_file("/proc/self/comm") != b""
        with pytest.raises(FileNotFoundError):
            await sandbox.read_file("missing.txt")
        with pytest.raises(IsADirectoryError):
            await sandbox.read_file("deep")
        with pytest.raises(IsADirectoryError):
            await sandbox.write_file("deep", b"x")

        tree = tmp_path / "tree"
        (tree / "a" / "b").mkdir(parents=True)
        (tree / "a" / "b" / "c.txt").write_text("nested")
        (tree / "top.bin").write_bytes(b"\x00\xff" * 10)
        await sandbox.upload_dir(tree, "uploaded")
        listing = (await sandbox.exec("cd uploaded && find . -type f | sort")).output
        assert listing.split() == ["./a/b/c.txt", "./top.bin"]
        back = tmp_path / "back"
        await sandbox.download_dir("uploaded", back)
        assert (back / "a" / "b" / "c.txt").read_text() == "nested"
        assert (back / "top.bin").read_bytes() == b"\x00\xff" * 10
        with pytest.raises(FileNotFoundError):
            await sandbox.download_dir("no-such-dir", tmp_path / "nothing")


async def test_output_is_bounded(sshd: provider.SshServer, remote_base: pathlib.Path) -> None:
    options = sshd.options(base_dir=str(remote_base), max_output_chars=1000)
    async with create_sandbox("ssh", **options) as sandbox:
        result = await sandbox.exec("head -c 100000000 /dev/zero | tr '\\0' x; echo; echo END")
        assert result.truncated
        assert result.exit_code == 0
        assert len(result.output) < 1200
        assert result.output.startswith("x" * 400)
        assert result.output.endswith("END\n")


async def test_close_works_after_the_server_died(tmp_path: pathlib.Path) -> None:
    server = provider.SshServer(tmp_path / "dying").start()
    sandbox = create_sandbox("ssh", **server.options())
    try:
        await sandbox.start()
        assert (await sandbox.exec("echo up")).output == "up\n"
    finally:
        server.stop()
    started = time.monotonic()
    with pytest.raises(SandboxClosedError):
        await sandbox.exec("echo down")
    await sandbox.close()
    await sandbox.close()
    assert time.monotonic() - started < 30


async def test_shared_connection_is_left_open(
    sshd: provider.SshServer,
    remote_base: pathlib.Path,
    entries: Callable[[pathlib.Path], list[str] | None],
) -> None:
    options = sshd.options(base_dir=str(remote_base))
    conn = await _connect(sshd)
    try:
        shared = {"connection": conn, "base_dir": options["base_dir"]}
        first = create_sandbox("ssh", **shared)
        second = create_sandbox("ssh", **shared)
        async with first, second:
            one, two = await asyncio.gather(first.exec("echo 1"), second.exec("echo 2"))
            assert (one.output, two.output) == ("1\n", "2\n")
            assert first.workdir != second.workdir
        assert not conn.is_closed()
        assert (await conn.run("echo still", check=True)).stdout == "still\n"
    finally:
        conn.close()
        await conn.wait_closed()
    assert entries(remote_base) == []


async def test_untrusted_host_key_is_refused(
    sshd: provider.SshServer, remote_base: pathlib.Path
) -> None:
    import asyncssh

    stranger = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode()
    options = sshd.options(base_dir=str(remote_base), host_key=stranger)
    with pytest.raises(SandboxStartError, match="host key"):
        await create_sandbox("ssh", **options).start()
    known_hosts = remote_base.parent / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{sshd.port} {stranger}\n")
    options = sshd.options(base_dir=str(remote_base), host_key=None, known_hosts=known_hosts)
    with pytest.raises(SandboxStartError, match="host key"):
        await create_sandbox("ssh", **options).start()
    known_hosts.write_text(f"[127.0.0.1]:{sshd.port} {sshd.host_public_key}\n")
    async with create_sandbox("ssh", **options) as sandbox:
        assert (await sandbox.exec("echo trusted")).output == "trusted\n"


async def test_wrong_client_key_and_closed_port_are_clear_errors(
    sshd: provider.SshServer,
    remote_base: pathlib.Path,
    entries: Callable[[pathlib.Path], list[str] | None],
) -> None:
    import asyncssh

    wrong = remote_base.parent / "wrong_key"
    asyncssh.generate_private_key("ssh-ed25519").write_private_key(str(wrong))
    options = sshd.options(base_dir=str(remote_base), key_path=str(wrong))
    with pytest.raises(SandboxStartError, match="refused authentication"):
        await create_sandbox("ssh", **options).start()
    closed_port = provider.free_port()
    options = sshd.options(base_dir=str(remote_base), port=closed_port)
    with pytest.raises(SandboxStartError, match="cannot connect"):
        await create_sandbox("ssh", **options).start()
    assert entries(remote_base) == []


def test_bad_options_are_rejected(sshd: provider.SshServer) -> None:
    with pytest.raises(
        ValueError, match=r"ssh backend: unknown option\(s\) 'hostname'; known ssh options: "
    ):
        create_sandbox("ssh", **sshd.options(hostname="x"))
    with pytest.raises(ValueError, match="needs host"):
        create_sandbox("ssh")
    with pytest.raises(ValueError, match="pids_limit"):
        create_sandbox("ssh", **sshd.options(pids_limit=10))
    with pytest.raises(ValueError, match="only one of"):
        create_sandbox("ssh", **sshd.options(insecure_skip_host_key_check=True))
    with pytest.raises(ValueError, match="port"):
        create_sandbox("ssh", **sshd.options(port="22"))
    with pytest.raises(ValueError, match="environment variable name"):
        create_sandbox("ssh", **sshd.options(env={"BAD-NAME": "x"}))
    with pytest.raises(ValueError, match="reserved"):
        create_sandbox("ssh", **sshd.options(env={"HERMES_SANDBOX_MARKER": "x"}))
    with pytest.raises(ValueError, match="absolute"):
        create_sandbox("ssh", **sshd.options(base_dir="relative/dir"))


async def test_many_sandboxes_at_once(
    sshd: provider.SshServer,
    remote_base: pathlib.Path,
    entries: Callable[[pathlib.Path], list[str] | None],
) -> None:
    sandboxes = [
        create_sandbox("ssh", **sshd.options(base_dir=str(remote_base))) for _ in range(24)
    ]
    try:
        await asyncio.gather(*(s.start() for s in sandboxes))
        results = await asyncio.gather(*(s.exec(f"echo {i}") for i, s in enumerate(sandboxes)))
        assert [r.output for r in results] == [f"{i}\n" for i in range(24)]
    finally:
        await asyncio.gather(*(s.close() for s in sandboxes))
    assert entries(remote_base) == []


async def test_another_loop_gets_its_own_connection_while_the_sandboxs_loop_is_blocked(
    sshd: provider.SshServer,
    remote_base: pathlib.Path,
    entries: Callable[[pathlib.Path], list[str] | None],
) -> None:
    from hermes_sandbox._blocking import LoopThread

    async with create_sandbox("ssh", **sshd.options(base_dir=str(remote_base))) as sandbox:
        await sandbox.exec("export FROM_HOME=1; cd /tmp")
        private = LoopThread("hermes-test-ssh-private")
        try:
            # Blocks this loop (the sandbox's) until the private loop is done.
            ran = private.run(sandbox.exec('echo "$FROM_HOME $PWD"; sleep 30', timeout=1))
            assert (ran.output, ran.exit_code) == ("1 /tmp\n", 124)
            private.run(sandbox.write_file("f.txt", "away"))
            assert private.run(sandbox.read_file("f.txt")) == b"away"
        finally:
            private.stop()
        assert (await sandbox.exec(f"cat {sandbox.workdir}/f.txt")).output == "away"
    assert entries(remote_base) == []


async def test_a_shared_connection_refuses_blocking_tool_context_calls_on_its_loop(
    sshd: provider.SshServer, remote_base: pathlib.Path
) -> None:
    from hermes_sandbox import SandboxPool, ToolContext, ToolContextError

    conn = await _connect(sshd)
    try:
        async with SandboxPool(
            "ssh", connection=conn, base_dir=str(remote_base / "shared")
        ) as pool:
            await pool.get("shared")
            ctx = ToolContext("shared", pool)
            with pytest.raises(ToolContextError, match="use the awaitable twins") as caught:
                ctx.terminal("echo blocked")
            assert caught.value.kind == "loop_blocked"
            assert (await ctx.aterminal("echo twin"))["output"] == "twin\n"
            await ctx.acleanup()
    finally:
        conn.close()
        await conn.wait_closed()
