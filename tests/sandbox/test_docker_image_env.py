"""docker backend: a container keeps its image's environment, working directory and user
(options layered on top), and what the backend itself runs comes from the read-only
helper mount, never from what a command could change. Against a real dockerd."""

from __future__ import annotations

import asyncio
import contextlib
import io
import tarfile
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from hermes_sandbox import create_sandbox
from tests.sandbox.providers.docker import DockerSetup

#: An image of its own PATH, WORKDIR and USER, as task images have them.
DOCKERFILE = """\
FROM {base}
RUN mkdir -p /opt/venv/bin /app /home/app && \\
    printf '#!/bin/sh\\necho venv-tool "$@"\\n' > /opt/venv/bin/vtool && \\
    chmod 755 /opt/venv/bin/vtool && chown 1234 /app /home/app
ENV PATH=/opt/venv/bin:$PATH HERMES_IMAGE_VAR=from-image HOME=/home/app
WORKDIR /app
USER 1234
"""

#: The processes a timeout, a cancel or a stop must kill are ``sleep`` with these numbers
#: of seconds (busybox's applets take their name from ``argv[0]``, so no ``exec -a``).
BG, FG, CANCELLED = "7100001", "7100002", "7100003"


#: No test here leaves a container of this process behind (``setup``, ``api`` and the
#: check: tests/sandbox/conftest.py).
pytestmark = pytest.mark.usefixtures("no_container_leaks")


@pytest.fixture(scope="module")
def task_image(setup: DockerSetup, api: Any) -> Iterator[str]:
    """A small image with ``ENV PATH=/opt/venv/bin:$PATH``, ``WORKDIR /app``, ``USER 1234``."""
    tag = f"hermes-test/image-env:{uuid.uuid4().hex[:8]}"
    dockerfile = DOCKERFILE.format(base=setup.small_image).encode()
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as archive:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        archive.addfile(info, io.BytesIO(dockerfile))
    context.seek(0)
    for _ in api.build(
        fileobj=context, custom_context=True, tag=tag, network_mode="none", rm=True, decode=True
    ):
        pass
    api.inspect_image(tag)  # the build worked
    yield tag
    with contextlib.suppress(Exception):
        api.remove_image(tag, force=True)


@pytest.fixture(scope="module")
def bashless_image(setup: DockerSetup, api: Any) -> Iterator[str]:
    """An image with busybox and a few applets, and no bash (an alpine-like base)."""
    from hermes_sandbox.backends.docker import BUSYBOX_IMAGE

    holder = api.create_container(BUSYBOX_IMAGE, command=["/bin/true"])
    try:
        bits, _ = api.get_archive(holder["Id"], "/bin/busybox")
        with tarfile.open(fileobj=io.BytesIO(b"".join(bits))) as got:
            extracted = got.extractfile("busybox")
            assert extracted is not None
            busybox = extracted.read()
    finally:
        api.remove_container(holder["Id"], force=True)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name in ("bin", "tmp", "root", "etc"):
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if name == "tmp" else 0o755
            archive.addfile(info)
        info = tarfile.TarInfo("bin/busybox")
        info.size, info.mode = len(busybox), 0o755
        archive.addfile(info, io.BytesIO(busybox))
        for applet in ("sh", "mkdir", "cat", "ls", "sleep", "id", "echo", "rm"):
            link = tarfile.TarInfo(f"bin/{applet}")
            link.type, link.linkname = tarfile.SYMTYPE, "busybox"
            archive.addfile(link)
    tag = f"hermes-test/no-bash:{uuid.uuid4().hex[:8]}"
    repository, _, version = tag.partition(":")
    api.import_image_from_data(
        buffer.getvalue(), repository=repository, tag=version, changes=["ENV PATH=/bin"]
    )
    yield tag
    with contextlib.suppress(Exception):
        api.remove_image(tag, force=True)


@contextlib.asynccontextmanager
async def sandbox(image: str, **options: Any) -> AsyncIterator[Any]:
    async with create_sandbox("docker", image=image, **options) as started:
        yield started


async def _running(sb: Any, needle: str) -> bool:
    # Read as root outside the session: a command's processes may belong to any user.
    listed = await sb.exec("cat /proc/[0-9]*/cmdline | tr '\\0' ' '", session=False, user="0")
    return needle in listed.output


# --------------------------------------------------------------------------------------
# the image's environment, workdir and user
# --------------------------------------------------------------------------------------
async def test_the_image_environment_workdir_and_user_hold(task_image: str) -> None:
    async with sandbox(task_image) as sb:
        assert sb.workdir == "/app"
        assert sb.user == "1234"
        result = await sb.exec('echo "$PATH|$HERMES_IMAGE_VAR|$HOME"; pwd; id -u; vtool ok')
        path, var, home = result.output.splitlines()[0].split("|")
        assert path.startswith("/opt/venv/bin:")
        assert (var, home) == ("from-image", "/home/app")
        assert result.output.splitlines()[1:] == ["/app", "1234", "venv-tool ok"]
        fresh = await sb.exec("pwd; id -u; vtool", session=False)
        assert fresh.output == "/app\n1234\nvenv-tool\n"
        # Files the sandbox writes land in the image's workdir.
        await sb.write_file("note.txt", "hi")
        assert (await sb.exec("cat /app/note.txt")).output == "hi"


async def test_options_are_layered_on_the_image(task_image: str) -> None:
    async with sandbox(
        task_image, workdir="/srv/work", user="0", env={"HERMES_IMAGE_VAR": "mine", "EXTRA": "1"}
    ) as sb:
        assert (sb.workdir, sb.user) == ("/srv/work", "0")
        result = await sb.exec('pwd; id -u; echo "$HERMES_IMAGE_VAR $EXTRA"; vtool')
        assert result.output == "/srv/work\n0\nmine 1\nvenv-tool\n"


async def test_one_command_as_another_user(task_image: str) -> None:
    async with sandbox(task_image) as sb:
        root = await sb.exec("id -u; pwd; echo $HERMES_IMAGE_VAR", session=False, user="0")
        assert root.output == "0\n/app\nfrom-image\n"
        assert (await sb.exec("id -u")).output == "1234\n"
        # A user the image does not know: docker's own words, as docker exec gives them.
        unknown = await sb.exec("true", session=False, user="nosuchuser")
        assert unknown.exit_code == 126
        assert "unable to find user nosuchuser" in unknown.output
        assert (await sb.exec("id -u")).output == "1234\n"
        with pytest.raises(ValueError, match=r"exec\(user=\.\.\.\) must be a user name or uid"):
            await sb.exec("true", session=False, user="bad user")
        with pytest.raises(ValueError, match="option 'user'"):
            create_sandbox("docker", user="no good")


async def test_stop_and_timeouts_reach_a_non_root_users_processes(task_image: str) -> None:
    async with sandbox(task_image) as sb:
        await sb.exec(f"nohup sleep {BG} >/dev/null 2>&1 &")
        assert await _running(sb, f"sleep {BG}")
        timed = await sb.exec(f"sleep {FG} & sleep 1001", timeout=1)
        assert timed.timed_out
        assert not await _running(sb, f"sleep {FG}")
        await sb.stop_processes()
        assert not await _running(sb, f"sleep {BG}")


async def test_the_default_image_has_no_workdir_so_workspace_is_used(setup: DockerSetup) -> None:
    async with sandbox(setup.image) as sb:
        assert (sb.workdir, sb.user) == ("/workspace", "")
        assert (await sb.exec("pwd; id -u")).output == "/workspace\n0\n"


# --------------------------------------------------------------------------------------
# the helper: nothing the harness runs comes from what a command can change
# --------------------------------------------------------------------------------------
#: What an agent does to switch the harness's helpers off: a ``bash``, ``setsid``,
#: ``kill``, ``sleep`` and ``mkdir`` that do nothing, first on the container's PATH and
#: on the session's.
IMPOSTORS = (
    "for tool in bash setsid kill sleep mkdir; do "
    "printf '#!/bin/sh\\nexit 0\\n' > /usr/local/bin/$tool && chmod 755 /usr/local/bin/$tool; "
    "done; mkdir -p /tmp/evil && cp /usr/local/bin/bash /usr/local/bin/kill /tmp/evil/ && "
    'export PATH="/tmp/evil:$PATH"'
)


async def test_kill_stop_and_timeouts_survive_impostors_on_path(setup: DockerSetup) -> None:
    async with sandbox(setup.image) as sb:
        planted = await sb.exec(IMPOSTORS)
        assert planted.exit_code == 0, planted.output
        assert (await sb.exec("bash -c 'echo real'; command -v bash")).output == "/tmp/evil/bash\n"
        await sb.exec(f"/bin/sleep {BG} >/dev/null 2>&1 &")
        assert await _running(sb, f"sleep {BG}")
        timed = await sb.exec(f"/bin/sleep {FG}; echo never", timeout=1)
        assert timed.timed_out
        assert timed.exit_code == 124
        assert not await _running(sb, f"sleep {FG}")
        cancelled = asyncio.ensure_future(sb.exec(f"/bin/sleep {CANCELLED}; echo never"))
        for _ in range(100):
            if await _running(sb, f"sleep {CANCELLED}"):
                break
            await asyncio.sleep(0.05)
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        assert not await _running(sb, f"sleep {CANCELLED}")
        await sb.stop_processes()
        assert not await _running(sb, f"sleep {BG}")
        await sb.write_file("/srv/made/by/the/harness.txt", b"ok")  # mkdir from the helper
        assert await sb.read_file("/srv/made/by/the/harness.txt") == b"ok"
        assert (await sb.exec("echo still")).output == "still\n"


async def test_the_helper_mount_is_read_only(setup: DockerSetup) -> None:
    async with sandbox(setup.image) as sb:
        listed = await sb.exec("ls /.hermes")
        assert listed.output.split() == ["bash", "busybox"]
        for attempt in (
            "echo evil > /.hermes/bash",
            "rm -f /.hermes/busybox",
            "mv /.hermes /.hermes-gone",
            "mount -o remount,rw /.hermes",
            "mount -t tmpfs none /.hermes",
        ):
            result = await sb.exec(attempt)
            assert result.exit_code != 0, attempt
        assert (await sb.exec("ls /.hermes")).output.split() == ["bash", "busybox"]
        assert (await sb.exec("/.hermes/busybox true && echo intact")).output == "intact\n"


async def test_an_image_without_bash_works(bashless_image: str) -> None:
    async with sandbox(bashless_image) as sb:
        assert (await sb.exec("cd /tmp && export A=1")).exit_code == 0
        assert (await sb.exec('echo "$A $BASH"; pwd')).output == "1 /.hermes/bash\n/tmp\n"
        timed = await sb.exec("sleep 100", timeout=1)
        assert timed.timed_out
        await sb.write_file("/srv/x/y.txt", b"\x00\xff")
        assert await sb.read_file("/srv/x/y.txt") == b"\x00\xff"
        await sb.stop_processes()


# --------------------------------------------------------------------------------------
# commands through a shell kept open
# --------------------------------------------------------------------------------------
async def test_a_session_killed_mid_command_is_replaced(setup: DockerSetup) -> None:
    async with sandbox(setup.image) as sb:
        await sb.exec("cd /tmp && export KEPT=yes")
        first = sb._sessions._sessions[0]
        died = await sb.exec("echo before; kill -9 $PPID; echo after")
        assert died.exit_code == 137
        assert died.output == "before\nafter\n"
        assert first.ended.is_set()
        result = await sb.exec('echo "$KEPT $PWD"')
        assert result.output == "yes /tmp\n"
        assert sb._sessions._sessions[0] is not first


async def test_commands_share_sessions_and_run_side_by_side(setup: DockerSetup) -> None:
    async with sandbox(setup.image) as sb:
        for _ in range(5):
            assert (await sb.exec("echo one")).output == "one\n"
        assert len(sb._sessions._sessions) == 1
        slow = asyncio.ensure_future(sb.exec("sleep 30; echo never", timeout=2))
        fast = await asyncio.gather(*(sb.exec(f"echo {i}") for i in range(3)))
        assert [r.output for r in fast] == ["0\n", "1\n", "2\n"]
        timed = await slow
        assert timed.timed_out
        assert "never" not in timed.output
        # The timed-out command's session lives on and takes the next command.
        assert all(not s.ended.is_set() for s in sb._sessions._sessions)
        assert (await sb.exec("echo next")).output == "next\n"


async def test_output_left_by_a_background_job_retires_its_session(setup: DockerSetup) -> None:
    async with sandbox(setup.image) as sb:
        started = await sb.exec("(sleep 0.3; echo late) &")
        assert started.output == ""
        await asyncio.sleep(0.6)
        retired = sb._sessions._sessions[0]
        assert retired.retired
        assert (await sb.exec("echo clean")).output == "clean\n"
        assert retired not in sb._sessions._sessions


async def test_commands_cancelled_at_once_leave_no_busy_shell(setup: DockerSetup) -> None:
    async with sandbox(setup.image) as sb:
        await sb.exec("nohup sleep 7100009 >/dev/null 2>&1 &")
        for delay in (0, 0, 0.001, 0.005, 0.02):
            task = asyncio.ensure_future(sb.exec("sleep 7100008"))
            await asyncio.sleep(delay)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for _ in range(100):  # the cancelled commands' ends are read in the background
            if not any(s.busy for s in sb._sessions._sessions):
                break
            await asyncio.sleep(0.05)
        assert not any(s.busy for s in sb._sessions._sessions)
        assert not await _running(sb, "sleep 7100008")
        assert await _running(sb, "sleep 7100009")  # a cancel kills only its own command
        assert (await sb.exec("echo fine")).output == "fine\n"
