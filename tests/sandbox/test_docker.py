"""docker backend: what the conformance suite does not cover (limits, isolation, the warm
pool, the keeper, leaks, errors, the image builder), against a real dockerd."""

from __future__ import annotations

import asyncio
import contextlib
import re
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_sandbox import SandboxClosedError, SandboxStartError, create_sandbox
from hermes_sandbox.backends.docker import DockerSandbox
from tests.sandbox.providers.docker import DockerSetup

#: Every test here must leave no container of this process behind (``setup``, ``api``
#: and the check: tests/sandbox/conftest.py).
pytestmark = pytest.mark.usefixtures("no_container_leaks")


@contextlib.asynccontextmanager
async def sandbox(setup: DockerSetup, **options: Any) -> AsyncIterator[Any]:
    made = create_sandbox("docker", **{"image": setup.image, **options})
    async with made as started:
        yield started


async def _process_count(sb: Any) -> int:
    # Processes in the container besides init, the keeper and this exec's own shells.
    result = await sb.exec("ls -d /proc/[0-9]* | wc -l")
    return int(result.output.strip())


# --------------------------------------------------------------------------------------
# isolation and limits
# --------------------------------------------------------------------------------------
async def test_limits_are_applied(setup: DockerSetup, api: Any) -> None:
    async with sandbox(setup, cpus=0.5, memory_mb=256, pids_limit=100) as sb:
        host = (await asyncio.to_thread(api.inspect_container, sb.container_id))["HostConfig"]
        assert host["NanoCpus"] == 500_000_000
        assert host["Memory"] == 256 * 1024 * 1024
        assert host["MemorySwap"] == 256 * 1024 * 1024
        assert host["PidsLimit"] == 100
        inside = await sb.exec(
            "cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max"
        )
        assert inside.output.strip() == "100"


async def test_one_cpu_by_default(setup: DockerSetup, api: Any) -> None:
    """Without ``cpus`` a container may use one CPU (a fork bomb or a busy loop cannot
    take the whole host); the option overrides it (``test_limits_are_applied``)."""
    async with sandbox(setup) as sb:
        host = (await asyncio.to_thread(api.inspect_container, sb.container_id))["HostConfig"]
        assert host["NanoCpus"] == 1_000_000_000
        inside = await sb.exec(
            "cat /sys/fs/cgroup/cpu.max 2>/dev/null || "
            "echo $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us)"
        )
        quota, period = map(int, inside.output.split())
        assert quota == period  # one CPU's worth of time per period


@pytest.mark.parametrize("bad", [0, -1, 0.001, float("nan"), float("inf"), "2", True])
def test_bad_cpus_are_rejected_naming_the_option(bad: object) -> None:
    from hermes_sandbox.backends.docker import DockerWarmPool

    with pytest.raises(ValueError, match=r"option 'cpus' must be a number .* at least 0\.01"):
        create_sandbox("docker", cpus=bad)
    with pytest.raises(ValueError, match=r"option 'cpus'"):
        DockerWarmPool(size=1, cpus=bad)


async def test_more_cpus_than_the_host_has_is_explained(setup: DockerSetup) -> None:
    sb = create_sandbox("docker", image=setup.image, cpus=4096)
    with pytest.raises(
        SandboxStartError, match=r"option 'cpus' \(4096\) asks for more CPUs than the daemon"
    ):
        await sb.start()
    await sb.close()


async def test_default_pids_limit_and_network_none(setup: DockerSetup, api: Any) -> None:
    async with sandbox(setup) as sb:
        info = await asyncio.to_thread(api.inspect_container, sb.container_id)
        assert info["HostConfig"]["PidsLimit"] == 256
        assert info["HostConfig"]["NetworkMode"] == "none"
        interfaces = await sb.exec("ls /sys/class/net")
        assert interfaces.output.split() == ["lo"]


async def test_not_privileged(setup: DockerSetup, api: Any) -> None:
    async with sandbox(setup) as sb:
        host = (await asyncio.to_thread(api.inspect_container, sb.container_id))["HostConfig"]
        assert host["Privileged"] is False
        assert "no-new-privileges" in host["SecurityOpt"]
        caps = await sb.exec("grep CapEff /proc/self/status")
        effective = int(caps.output.split()[1], 16)
        cap_sys_admin = 1 << 21
        assert not effective & cap_sys_admin
        mount = await sb.exec("mkdir -p /mnt/x && mount -t tmpfs none /mnt/x")
        assert mount.exit_code != 0


async def test_host_environment_does_not_leak(setup: DockerSetup) -> None:
    async with sandbox(setup, env={"ONLY": "this"}) as sb:
        names = (await sb.exec("env | cut -d= -f1 | sort")).output.split()
        assert "ONLY" in names
        assert set(names) <= {"ONLY", "PATH", "HOME", "LANG", "HOSTNAME", "PWD", "OLDPWD"} | {
            "SHLVL",
            "_",
        }


async def test_labels(setup: DockerSetup, api: Any) -> None:
    from hermes_sandbox.backends.docker import LABEL, LABEL_RUN, LABEL_TASK, RUN_ID

    async with sandbox(setup, labels={"team": "x"}) as sb:
        labels = (await asyncio.to_thread(api.inspect_container, sb.container_id))["Config"][
            "Labels"
        ]
        assert labels[LABEL] == "1"
        assert labels[LABEL_RUN] == RUN_ID
        assert labels[LABEL_TASK] == sb.task_id
        assert labels["team"] == "x"


async def test_containers_are_found_and_removed_by_their_labels(
    setup: DockerSetup, api: Any
) -> None:
    from hermes_sandbox.backends.docker import (
        LABEL,
        LABEL_RUN,
        RUN_ID,
        list_containers,
        remove_containers,
    )

    group = f"g-{uuid.uuid4().hex[:8]}"

    def made(part: str) -> Any:
        return create_sandbox(
            "docker", image=setup.image, labels={"hermes-test.group": group, "part": part}
        )

    first, second = made("a"), made("b")
    # Carries the same label but not hermes-sandbox's own: never listed, never removed.
    foreign = await asyncio.to_thread(
        api.create_container, setup.image, command=["true"], labels={"hermes-test.group": group}
    )
    try:
        await asyncio.gather(first.start(), second.start())
        in_group = {"hermes-test.group": group}
        assert sorted(list_containers(labels=in_group)) == sorted(
            [first.container_id, second.container_id]
        )
        assert list_containers(labels={**in_group, "part": "a"}) == [first.container_id]
        assert list_containers(run_id=RUN_ID, labels={**in_group, "part": "b"}) == [
            second.container_id
        ]
        assert list_containers(run_id="no-such-run", labels=in_group) == []
        assert remove_containers(labels={**in_group, "part": "a"}) == 1
        assert list_containers(labels=in_group) == [second.container_id]
        assert remove_containers(labels={LABEL_RUN: RUN_ID, **in_group}) == 1
        assert list_containers(labels=in_group) == []
        assert remove_containers(labels=in_group) == 0
        kept = (await asyncio.to_thread(api.inspect_container, foreign["Id"]))["Config"]
        assert kept["Labels"]["hermes-test.group"] == group
        assert LABEL not in kept["Labels"]
    finally:
        await asyncio.gather(first.close(), second.close())  # their containers are gone
        await asyncio.to_thread(api.remove_container, foreign["Id"], force=True)


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        ({"": "x"}, "invalid label name ''"),
        ({"a=b": "x"}, "invalid label name 'a=b'"),
        ({"k": 1}, "labels['k'] must be a string"),
        (["k=v"], "labels must map label names to values"),
    ],
)
def test_bad_labels_are_refused_naming_them(bad: Any, named: str) -> None:
    from hermes_sandbox.backends.docker import list_containers, remove_containers

    for call in (list_containers, remove_containers):
        with pytest.raises(ValueError, match=re.escape(named)):
            call(labels=bad, base_url="unix:///nonexistent/docker.sock")


def test_a_run_id_contradicting_the_labels_is_refused() -> None:
    from hermes_sandbox.backends.docker import LABEL_RUN, remove_containers

    with pytest.raises(ValueError, match="contradicts"):
        remove_containers(run_id="a", labels={LABEL_RUN: "b"}, base_url="unix:///nonexistent")


# --------------------------------------------------------------------------------------
# killing
# --------------------------------------------------------------------------------------
async def test_fork_bomb_is_contained(setup: DockerSetup) -> None:
    async with sandbox(setup, pids_limit=64) as sb:
        started = time.monotonic()
        bomb = await sb.exec("b() { b | b & }; b; sleep 30", timeout=5)
        assert bomb.timed_out
        assert bomb.exit_code == 124
        assert time.monotonic() - started < 30
        after = await sb.exec("echo alive")
        assert after.output == "alive\n"
        assert await _process_count(sb) < 10


async def test_timeout_kills_setsid_children(setup: DockerSetup) -> None:
    async with sandbox(setup) as sb:
        result = await sb.exec(
            "setsid sleep 1001 & (sleep 1002 &) ; sleep 1003; echo never", timeout=2
        )
        assert result.timed_out
        assert "never" not in result.output
        left = await sb.exec("cat /proc/[0-9]*/cmdline | tr '\\0' ' '")
        assert "sleep 100" not in left.output


async def test_tiny_timeout_kills_only_that_command(setup: DockerSetup) -> None:
    async with sandbox(setup) as sb:
        await sb.exec("nohup sleep 1000 >/dev/null 2>&1 &")
        result = await sb.exec("sleep 1001", timeout=0.01)
        assert result.timed_out
        assert result.exit_code == 124
        left = (await sb.exec("cat /proc/[0-9]*/cmdline | tr '\\0' ' '")).output
        assert "sleep 1000" in left
        assert "sleep 1001" not in left


async def test_cancelled_exec_kills_the_command(setup: DockerSetup) -> None:
    async with sandbox(setup) as sb:
        task = asyncio.ensure_future(sb.exec("sleep 1000 & sleep 1001", timeout=60))
        await asyncio.sleep(1.0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        left = await sb.exec("cat /proc/[0-9]*/cmdline | tr '\\0' ' '")
        assert "sleep 100" not in left.output
        assert (await sb.exec("echo still usable")).exit_code == 0


async def test_cancelled_exec_then_close_leaves_nothing(setup: DockerSetup) -> None:
    from hermes_sandbox.backends.docker import RUN_ID, list_containers

    sb = create_sandbox("docker", image=setup.image)
    await sb.start()
    task = asyncio.ensure_future(sb.exec("sleep 1000"))
    await asyncio.sleep(0.5)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await sb.close()
    await sb.close()  # idempotent
    assert list_containers(run_id=RUN_ID) == []


async def test_cancelled_start_leaves_nothing(setup: DockerSetup) -> None:
    from hermes_sandbox.backends.docker import RUN_ID, list_containers

    sb = create_sandbox("docker", image=setup.image)
    task = asyncio.ensure_future(sb.start())
    await asyncio.sleep(0.05)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await sb.close()
    assert list_containers(run_id=RUN_ID) == []


async def test_concurrent_execs_in_one_sandbox(setup: DockerSetup) -> None:
    async with sandbox(setup) as sb:
        slow = asyncio.ensure_future(sb.exec("sleep 30", timeout=1))
        fast = await sb.exec("echo quick")
        assert fast.output == "quick\n"
        assert (await slow).timed_out


# --------------------------------------------------------------------------------------
# lifecycle, the keeper, leaks
# --------------------------------------------------------------------------------------
async def test_close_after_the_container_died(setup: DockerSetup, api: Any) -> None:
    from hermes_sandbox.backends.docker import DockerSandbox

    sb = create_sandbox("docker", image=setup.image)
    assert isinstance(sb, DockerSandbox)
    await sb.start()
    await asyncio.to_thread(api.remove_container, sb.container_id, force=True)
    with pytest.raises(SandboxClosedError, match="gone"):
        await sb.exec("true")
    await sb.close()


async def test_keeper_removes_an_abandoned_container(setup: DockerSetup, api: Any) -> None:
    """A container whose owner vanished goes away by itself after its deadline."""
    from hermes_sandbox.backends.docker import (
        LABEL,
        LABEL_RUN,
        RUN_ID,
        ContainerSpec,
        DockerDaemon,
        start_container,
    )

    daemon = await DockerDaemon.connect()
    try:
        container = await start_container(
            daemon,
            ContainerSpec(image=setup.image),
            labels={LABEL: "1", LABEL_RUN: RUN_ID},
            deadlines=(2, 2),
        )
        deadline = time.monotonic() + 20
        gone = False
        while time.monotonic() < deadline and not gone:
            await asyncio.sleep(0.5)
            found = await asyncio.to_thread(api.containers, all=True, filters={"id": container})
            gone = not found
        if not gone:
            await daemon.remove_container(container)
        assert gone
    finally:
        daemon.close()


async def test_keeper_kills_everything_on_usr1(setup: DockerSetup) -> None:
    async with sandbox(setup) as sb:
        await sb.exec("nohup sleep 1000 >/dev/null 2>&1 & nohup sleep 1001 >/dev/null 2>&1 &")
        assert "sleep 1000" in (await sb.exec("cat /proc/[0-9]*/cmdline | tr '\\0' ' '")).output
        await sb._daemon.signal(sb.container_id, "SIGUSR1")
        await asyncio.sleep(0.5)
        left = await sb.exec("cat /proc/[0-9]*/cmdline | tr '\\0' ' '")
        assert "sleep 100" not in left.output


async def test_background_process_survives_a_finished_command(setup: DockerSetup) -> None:
    async with sandbox(setup) as sb:
        started = await sb.exec("nohup sleep 1000 >/dev/null 2>&1 &")
        assert started.exit_code == 0
        assert "sleep 1000" in (await sb.exec("cat /proc/[0-9]*/cmdline | tr '\\0' ' '")).output


# --------------------------------------------------------------------------------------
# the warm pool
# --------------------------------------------------------------------------------------
async def test_warm_pool_start_is_fast(setup: DockerSetup) -> None:
    from hermes_sandbox.backends.docker import DockerSandbox, DockerWarmPool

    async with DockerWarmPool(size=2, image=setup.image) as warm:
        assert len(warm) == 2
        ready = {container for container, _ in warm._idle}
        sb = create_sandbox("docker", image=setup.image, pool=warm)
        assert isinstance(sb, DockerSandbox)
        started = time.monotonic()
        await sb.start()
        elapsed = time.monotonic() - started
        try:
            assert sb.container_id in ready
            assert elapsed < 0.5, f"start from the warm pool took {elapsed:.3f}s"
            assert (await sb.exec("echo warm")).output == "warm\n"
        finally:
            await sb.close()
        await asyncio.wait_for(_refilled(warm, 2), 30)


async def _refilled(warm: Any, size: int) -> None:
    while len(warm) < size:  # noqa: ASYNC110 - the pool has no event to wait on
        await asyncio.sleep(0.1)


async def test_warm_pool_spec_mismatch_starts_a_fresh_container(setup: DockerSetup) -> None:
    from hermes_sandbox.backends.docker import DockerWarmPool

    async with DockerWarmPool(size=1, image=setup.image) as warm:
        ready = {container for container, _ in warm._idle}
        async with sandbox(setup, pool=warm, pids_limit=99) as sb:
            assert sb.container_id not in ready
        assert len(warm) == 1


async def test_warm_pool_container_that_died_is_replaced(setup: DockerSetup, api: Any) -> None:
    from hermes_sandbox import SandboxPool
    from hermes_sandbox.backends.docker import DockerSandbox, DockerWarmPool

    async with DockerWarmPool(size=1, image=setup.image) as warm:
        (dead, _) = warm._idle[0]
        await asyncio.to_thread(api.remove_container, dead, force=True)
        async with SandboxPool("docker", image=setup.image, pool=warm) as tasks:
            sb = await tasks.get("task-1")
            assert isinstance(sb, DockerSandbox)
            assert sb.container_id != dead
            assert (await sb.exec("echo fresh")).output == "fresh\n"


async def test_warm_pool_close_removes_idle_containers(setup: DockerSetup) -> None:
    from hermes_sandbox.backends.docker import RUN_ID, DockerWarmPool, list_containers

    warm = await DockerWarmPool(size=3, image=setup.image).start()
    assert len(list_containers(run_id=RUN_ID)) == 3
    await warm.close()
    await warm.close()
    assert list_containers(run_id=RUN_ID) == []


async def test_warm_pool_reports_a_missing_image(setup: DockerSetup) -> None:
    from hermes_sandbox.backends.docker import DockerWarmPool

    with pytest.raises(SandboxStartError, match="not on the daemon"):
        await DockerWarmPool(size=1, image="hermes-sandbox/absent:none").start()


# --------------------------------------------------------------------------------------
# files
# --------------------------------------------------------------------------------------
async def test_files_through_archives(setup: DockerSetup, tmp_path: Any) -> None:
    async with sandbox(setup) as sb:
        await sb.write_file("/opt/deep/er/f.bin", bytes(range(256)))
        assert await sb.read_file("/opt/deep/er/f.bin") == bytes(range(256))
        await sb.exec("chmod 755 /opt/deep/er/f.bin && ln -s deep/er/f.bin /opt/link")
        await sb.write_file("/opt/link", b"#!/bin/sh\necho via link\n")
        assert (await sb.exec("/opt/deep/er/f.bin")).output == "via link\n"  # mode kept
        assert await sb.read_file("/opt/link") == b"#!/bin/sh\necho via link\n"
        with pytest.raises(FileNotFoundError):
            await sb.read_file("/opt/none")
        with pytest.raises(IsADirectoryError):
            await sb.read_file("/opt/deep")
        with pytest.raises(IsADirectoryError):
            await sb.write_file("/opt/deep", b"x")
        with pytest.raises(NotADirectoryError):
            await sb.write_file("/opt/deep/er/f.bin/inside", b"x")
        with pytest.raises(FileNotFoundError):
            await sb.download_dir("/opt/none", tmp_path / "none")
        await sb.download_dir("/opt", tmp_path / "opt")
        assert (tmp_path / "opt" / "deep" / "er" / "f.bin").read_bytes().startswith(b"#!/bin/sh")
        (tmp_path / "up" / "a").mkdir(parents=True)
        (tmp_path / "up" / "a" / "x.txt").write_text("x")
        await sb.upload_dir(tmp_path / "up", "/srv/new/place")
        assert await sb.read_file("/srv/new/place/a/x.txt") == b"x"


async def test_file_uploads_and_downloads_stream(setup: DockerSetup, tmp_path: Any) -> None:
    source = tmp_path / "big.bin"
    payload = bytes(range(256)) * 40_000 + b"tail"  # not a multiple of the tar block
    source.write_bytes(payload)
    async with sandbox(setup) as sb:
        await sb.upload_file(source, "/srv/new/deep/big.bin")  # parents made
        assert (await sb.exec("wc -c < /srv/new/deep/big.bin")).output.strip() == str(len(payload))
        await sb.exec("chmod 750 /srv/new/deep/big.bin && ln -s deep/big.bin /srv/new/link")
        await sb.upload_file(source, "/srv/new/link")  # through the link, mode kept
        assert (await sb.exec("stat -c %a /srv/new/deep/big.bin")).output == "750\n"
        await sb.download_file("/srv/new/link", tmp_path / "back" / "big.bin")
        assert (tmp_path / "back" / "big.bin").read_bytes() == payload
        await sb.upload_file(tmp_path / "back" / "big.bin", "relative.bin")
        assert (await sb.exec("cmp relative.bin /srv/new/deep/big.bin && echo same")).output == (
            "same\n"
        )
        with pytest.raises(FileNotFoundError):
            await sb.upload_file(tmp_path / "absent.bin", "/tmp/x")
        with pytest.raises(IsADirectoryError):
            await sb.upload_file(source, "/srv/new")
        with pytest.raises(NotADirectoryError):
            await sb.upload_file(source, "/srv/new/deep/big.bin/inside")
        with pytest.raises(FileNotFoundError):
            await sb.download_file("/srv/none", tmp_path / "none")
        with pytest.raises(IsADirectoryError):
            await sb.download_file("/srv/new", tmp_path / "dir")


async def test_write_file_in_workdir_is_seen_by_commands(setup: DockerSetup) -> None:
    async with sandbox(setup) as sb:
        await sb.write_file("note.txt", "hello")
        assert (await sb.exec("cat note.txt")).output == "hello"


# --------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------
async def test_missing_image_says_how_to_build(setup: DockerSetup) -> None:
    sb = create_sandbox("docker", image="hermes-sandbox/debian:missing")
    with pytest.raises(
        SandboxStartError, match=r"python -m hermes_sandbox\.backends\.docker build"
    ):
        await sb.start()
    await sb.close()


async def test_unreachable_daemon_is_explained(tmp_path: Any) -> None:
    from hermes_sandbox.backends.docker import DockerUnreachableError

    sb = create_sandbox("docker", base_url=f"unix://{tmp_path}/no.sock")
    with pytest.raises(DockerUnreachableError, match=r"cannot reach the daemon.*start dockerd"):
        await sb.start()
    await sb.close()


def test_unknown_and_bad_options_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"unknown option.*colour"):
        create_sandbox("docker", colour="red")
    with pytest.raises(ValueError, match="needs network=True"):
        create_sandbox("docker", network_mode="host")
    with pytest.raises(ValueError, match="pids_limit"):
        create_sandbox("docker", pids_limit=1)
    with pytest.raises(ValueError, match="DockerWarmPool"):
        create_sandbox("docker", pool=object())


def test_network_on_uses_bridge_unless_told() -> None:
    from hermes_sandbox.backends.docker import DockerSandbox

    sb = create_sandbox("docker", network=True)
    assert isinstance(sb, DockerSandbox)
    assert sb.spec.network_mode == "bridge"
    sb = create_sandbox("docker", network=True, network_mode="host")
    assert isinstance(sb, DockerSandbox)
    assert sb.spec.network_mode == "host"


# --------------------------------------------------------------------------------------
# images
# --------------------------------------------------------------------------------------
def test_image_builder_cli(setup: DockerSetup, capsys: pytest.CaptureFixture[str]) -> None:
    from hermes_sandbox.backends.docker import BUSYBOX_IMAGE
    from hermes_sandbox.backends.docker._cli import main

    assert main(["exists", "--kind", "busybox"]) == 0
    assert main(["exists", "--tag", "hermes-sandbox/none:none", "--kind", "busybox"]) == 1
    assert main(["build", "--kind", "busybox"]) == 0  # cached: nothing rebuilt
    assert BUSYBOX_IMAGE in capsys.readouterr().out


def test_image_builder_runs_as_a_module(setup: DockerSetup) -> None:
    """The command line runs with ``python -m hermes_sandbox.backends.docker``, without
    the warning ``-m`` gives for a module its package already imported."""
    done = subprocess.run(
        [
            sys.executable,
            "-W",
            "error",
            "-m",
            "hermes_sandbox.backends.docker",
            "exists",
            "--kind",
            "busybox",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


async def test_busybox_image_runs_the_shell_session(setup: DockerSetup) -> None:
    async with sandbox(setup, image=setup.small_image) as sb:
        assert (await sb.exec("cd /tmp && export A=1")).exit_code == 0
        assert (await sb.exec("echo $A; pwd")).output == "1\n/tmp\n"
        await sb.write_file("/tmp/x", b"\x00\xff")
        assert await sb.read_file("/tmp/x") == b"\x00\xff"
        result = await sb.exec("sleep 100", timeout=1)
        assert result.timed_out


async def test_binary_output_and_large_output_are_bounded(setup: DockerSetup) -> None:
    async with sandbox(setup, max_output_chars=1000) as sb:
        result = await sb.exec("head -c 50000000 /dev/urandom | base64 -w0")
        assert result.truncated
        assert len(result.output) < 1200
        raw = await sb.exec("printf '\\xff\\xfeok'")
        assert raw.output.endswith("ok")


# --------------------------------------------------------------------------------------
# images from a Dockerfile
# --------------------------------------------------------------------------------------
@pytest.fixture
def image_tags(api: Any) -> Iterator[list[str]]:
    """Tags a test builds; removed afterwards."""
    tags: list[str] = []
    yield tags
    for tag in tags:
        with contextlib.suppress(Exception):
            api.remove_image(tag, force=True)


def _new_tag(tags: list[str]) -> str:
    tags.append(f"hermes-test/dockerfile-{uuid.uuid4().hex[:8]}:1")
    return tags[-1]


async def test_dockerfile_image_is_built_offline_and_cached_by_its_inputs(
    setup: DockerSetup, api: Any, tmp_path: Path, image_tags: list[str]
) -> None:
    from hermes_sandbox.backends.docker import build_dockerfile_image

    (tmp_path / "Dockerfile").write_text(
        f"FROM {setup.small_image}\n"
        "COPY . /ctx\n"
        "RUN cp /ctx/hello.txt /copy.txt && ls /sys/class/net > /net.txt\n"
    )
    (tmp_path / "hello.txt").write_text("hi\n")
    (tmp_path / "secret.txt").write_text("not for the image\n")
    (tmp_path / ".dockerignore").write_text("# comment\nsecret.txt\n")
    tag = _new_tag(image_tags)
    assert await build_dockerfile_image(tmp_path, tag, timeout=120, network="none") == tag
    first = (await asyncio.to_thread(api.inspect_image, tag))["Id"]
    async with sandbox(setup, image=tag) as sb:
        assert await sb.read_file("/copy.txt") == b"hi\n"
        assert (await sb.read_file("/net.txt")).split() == [b"lo"]  # built with no network
        assert (await sb.exec("ls /ctx")).output.split() == ["Dockerfile", "hello.txt"]

    (tmp_path / "secret.txt").write_text("changed, but ignored\n")
    await build_dockerfile_image(tmp_path, tag, timeout=120, network="none")
    assert (await asyncio.to_thread(api.inspect_image, tag))["Id"] == first  # cached

    (tmp_path / "hello.txt").write_text("changed\n")
    await build_dockerfile_image(tmp_path, tag, timeout=120, network="none")
    second = (await asyncio.to_thread(api.inspect_image, tag))["Id"]
    assert second != first
    found = await asyncio.to_thread(api.images, all=True, quiet=True)
    assert first not in found  # the replaced image is removed


async def test_dockerfile_build_errors_say_what_failed(
    setup: DockerSetup, tmp_path: Path, image_tags: list[str]
) -> None:
    from hermes_sandbox._lifecycle import ImageUnavailableError
    from hermes_sandbox.backends.docker import ImageBuildError, build_dockerfile_image

    (tmp_path / "Dockerfile").write_text(
        f"FROM {setup.small_image}\nRUN echo about-to-fail && false\n"
    )
    (tmp_path / "Dockerfile.absent").write_text("FROM hermes-sandbox/absent:none\n")
    with pytest.raises(ImageBuildError, match=r"(?s)failed at Step 2/\d : RUN.*about-to-fail"):
        await build_dockerfile_image(tmp_path, _new_tag(image_tags), timeout=120)
    with pytest.raises(ImageUnavailableError, match="hermes-sandbox/absent:none is not on the"):
        await build_dockerfile_image(
            tmp_path,
            _new_tag(image_tags),
            dockerfile="Dockerfile.absent",
            timeout=120,
            network="none",
        )
    with pytest.raises(ImageBuildError, match=r"no Dockerfile 'nope' inside the build context"):
        await build_dockerfile_image(tmp_path, "hermes-test/x:1", dockerfile="nope")
    with pytest.raises(ImageBuildError, match="not a directory"):
        await build_dockerfile_image(tmp_path / "none", "hermes-test/x:1")
    with pytest.raises(ValueError, match="timeout must be a positive"):
        await build_dockerfile_image(tmp_path, "hermes-test/x:1", timeout=0)
    with pytest.raises(ValueError, match="tag must be an image name"):
        await build_dockerfile_image(tmp_path, "has space")


@pytest.mark.parametrize("how", ["timeout", "cancel"])
async def test_a_dockerfile_build_stopped_early_leaves_no_container(
    setup: DockerSetup, api: Any, tmp_path: Path, image_tags: list[str], how: str
) -> None:
    from hermes_sandbox.backends.docker import ImageBuildError, build_dockerfile_image

    marker = f"build-{uuid.uuid4().hex[:8]}"
    (tmp_path / "Dockerfile").write_text(
        f"FROM {setup.small_image}\nRUN echo {marker} && sleep 300\n"
    )
    if how == "timeout":
        with pytest.raises(ImageBuildError, match=r"took longer than 3s and was stopped"):
            await build_dockerfile_image(tmp_path, _new_tag(image_tags), timeout=3)
    else:
        task = asyncio.ensure_future(
            build_dockerfile_image(tmp_path, _new_tag(image_tags), timeout=300)
        )
        for _ in range(300):  # the step's container starts (up to 60 s under load)
            if await _containers_running(api, marker):
                break
            await asyncio.sleep(0.2)
        assert await _containers_running(api, marker)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert await _containers_running(api, marker) == []


async def _containers_running(api: Any, marker: str) -> list[str]:
    found = await asyncio.to_thread(api.containers, all=True)
    return [c["Id"] for c in found if marker in c.get("Command", "")]


async def test_the_first_command_shell_opens_at_start_and_the_first_command_uses_it(
    setup: DockerSetup, api: Any
) -> None:
    async with sandbox(setup) as sb:
        since = time.time() - 1
        container = sb.container_id

        def execs() -> int:
            events = api.events(
                since=int(since), until=time.time(), decode=True,
                filters={"container": container, "event": "exec_create"},
            )  # fmt: skip
            return sum(1 for _ in events)

        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # opened without any command asking
            if await asyncio.to_thread(execs) == 1:
                break
            await asyncio.sleep(0.05)
        assert await asyncio.to_thread(execs) == 1
        assert (await sb.exec("echo one")).output == "one\n"
        assert (await sb.exec("echo two")).output == "two\n"
        assert await asyncio.to_thread(execs) == 1  # both ran in the shell opened at start


async def test_root_commands_share_the_shells_of_an_agent_that_works_as_root(
    setup: DockerSetup,
) -> None:
    # The shell kept open for commands is the same process for the image's own user
    # (root here) and for the harness's root commands; a non-root agent's is its own.
    async with sandbox(setup) as sb:
        agents = await sb.exec("echo $PPID")
        roots = await sb.exec("echo $PPID", session=False, user="0")
        assert agents.exit_code == roots.exit_code == 0
        assert agents.output == roots.output
    async with sandbox(setup, user="nobody") as sb:
        agents = await sb.exec("echo $PPID")
        roots = await sb.exec("echo $PPID", session=False, user="0")
        assert agents.output != roots.output


async def test_open_daemon_speaks_the_sandboxs_api_version_and_needs_it_started(
    setup: DockerSetup,
) -> None:
    made = create_sandbox("docker", image=setup.image)
    assert isinstance(made, DockerSandbox)
    with pytest.raises(SandboxClosedError):
        made.open_daemon()
    async with made as sb:
        daemon = sb.open_daemon()
        try:
            assert re.fullmatch(r"\d+\.\d+", daemon.version), daemon.version
            info = await daemon.call(daemon.api.inspect_container, sb.container_id)
            assert info["State"]["Running"] is True
        finally:
            daemon.close()
    with pytest.raises(SandboxClosedError):
        made.open_daemon()
