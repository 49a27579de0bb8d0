"""The ``daytona`` backend, offline against ``FakeAsyncDaytona`` at the SDK boundary, and
live against Daytona when ``DAYTONA_API_KEY`` is set. What it shares with the ``modal``
backend is checked on both in ``test_remote.py``."""

from __future__ import annotations

import os
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("daytona", reason="the Daytona SDK is not installed (hermes-sandbox[daytona])")

import daytona

from hermes_sandbox import SandboxError, SandboxStartError, create_sandbox
from hermes_sandbox.backends.cloud.daytona import daytona_dockerfile_image
from tests.sandbox.fakes import check_call
from tests.sandbox.fakes.daytona_fake import (
    REAL_DAYTONA,
    FakeAsyncDaytona,
    FakeAsyncSandbox,
)
from tests.sandbox.fakes.remote_support import (
    DAYTONA,
    MakeSandbox,
    checked_fake,
    dockerfile_context,
    exercise_every_call,
    live_checks,
)


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[FakeAsyncDaytona]:
    async with checked_fake(FakeAsyncDaytona(tmp_path / "fake")) as fake:
        yield fake


@pytest.fixture
def make(client: FakeAsyncDaytona, tmp_path: Path) -> MakeSandbox:
    return DAYTONA.factory(client, tmp_path / "work")


# --- commands ------------------------------------------------------------------------------


async def test_exit_code_output_and_session_state(make: MakeSandbox, tmp_path: Path) -> None:
    async with make(env={"GREETING": "hi"}) as sb:
        first = await sb.exec("echo one; echo two >&2; mkdir -p d; cd d; export C=3; exit 5")
        second = await sb.exec('pwd; echo "$C $GREETING"')
    assert first.output == "one\ntwo\n"
    assert first.exit_code == 5
    assert second.output == f"{tmp_path / 'work' / 'd'}\n3 hi\n"


async def test_huge_output_never_reaches_the_daemon_buffer(make: MakeSandbox) -> None:
    # The Daytona daemon keeps a command's whole output in memory and returns it in one
    # response; the runner must cut it down inside the sandbox.
    async with make(max_output_chars=2000) as sb:
        tracemalloc.start()
        try:
            result = await sb.exec("printf A; head -c 200000000 /dev/zero; printf Z", timeout=120)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert result.truncated
    assert result.output.startswith("A\x00")
    assert result.output.endswith("\x00Z")
    assert f"[... {200_000_002 - 2000} bytes truncated ...]" in result.output
    assert peak < 20_000_000


# --- files ---------------------------------------------------------------------------------


async def test_file_round_trips_and_errors(make: MakeSandbox, tmp_path: Path) -> None:
    blob = bytes(range(256)) * 200_000
    async with make() as sb:
        await sb.write_file("n/e/s/t/blob.bin", blob)
        assert await sb.read_file("n/e/s/t/blob.bin") == blob
        source = tmp_path / "up"
        (source / "x").mkdir(parents=True)
        (source / "x" / "y.txt").write_text("y")
        await sb.upload_dir(source, "tree")
        await sb.download_dir("tree", tmp_path / "down")
        with pytest.raises(FileNotFoundError, match="daytona sandbox"):
            await sb.read_file("missing")
        with pytest.raises(IsADirectoryError):
            await sb.read_file("n/e")
        with pytest.raises(IsADirectoryError):
            await sb.write_file("n/e", b"x")
        with pytest.raises(NotADirectoryError):
            await sb.write_file("n/e/s/t/blob.bin/inner", b"x")
    assert (tmp_path / "down" / "x" / "y.txt").read_text() == "y"


# --- lifecycle -----------------------------------------------------------------------------


async def test_create_parameters(make: MakeSandbox, client: FakeAsyncDaytona) -> None:
    async with make(
        image="python:3.12-slim",
        cpus=1.5,
        memory_mb=1500,
        env={"A": "1"},
        terminal_lifetime=600,
        target="eu",
    ) as sb:
        params = client.sandboxes[0].params
        assert sb.task_id in params.labels.values()
    assert isinstance(params, daytona.CreateSandboxFromImageParams)
    assert params.image == "python:3.12-slim"
    assert params.resources is not None
    assert (params.resources.cpu, params.resources.memory) == (2, 2)
    assert params.env_vars == {"A": "1"}
    assert params.network_block_all is True
    assert params.ephemeral is True
    assert params.auto_delete_interval == 0
    assert params.ttl_minutes == 11
    assert params.target == "eu"
    async with make(network=True, snapshot="my-snap"):
        pass
    second = client.sandboxes[1].params
    assert isinstance(second, daytona.CreateSandboxFromSnapshotParams)
    assert second.snapshot == "my-snap"
    assert second.network_block_all is False


async def test_close_keeps_the_given_client(make: MakeSandbox, client: FakeAsyncDaytona) -> None:
    sb = make()
    await sb.start()
    await sb.close()
    await sb.close()
    assert client.sandboxes[0].deleted
    assert not client.closed


class _SlowStartClient(FakeAsyncDaytona):
    """Creates the sandbox, then times out as the SDK does (sandbox id attached)."""

    async def create(
        self, params: Any = None, *, timeout: float = 60, on_snapshot_create_logs: Any = None
    ) -> FakeAsyncSandbox:
        sandbox = await super().create(params, timeout=timeout)
        error = daytona.DaytonaTimeoutError("Failed to create sandbox: timed out")
        error._attach_sandbox_id(sandbox.sandbox_id)
        raise error


async def test_sandbox_created_past_the_timeout_is_deleted(tmp_path: Path) -> None:
    client = _SlowStartClient(tmp_path / "fake")
    sb = create_sandbox("daytona", client=client, workdir=str(tmp_path / "w"))
    with pytest.raises(SandboxStartError, match="timed out"):
        await sb.start()
    assert client.sandboxes
    assert not client.live_sandboxes()


def test_bad_options_are_rejected(client: FakeAsyncDaytona) -> None:
    with pytest.raises(
        ValueError, match=r"daytona backend: unknown option\(s\) 'size'; known daytona options: "
    ):
        create_sandbox("daytona", client=client, size="xl")
    with pytest.raises(ValueError, match="pids_limit"):
        create_sandbox("daytona", client=client, pids_limit=64)
    with pytest.raises(ValueError, match="together with an image"):
        create_sandbox("daytona", client=client, cpus=2)
    image = daytona.Image.base("debian:12-slim")
    assert create_sandbox("daytona", client=client, cpus=2, daytona_image=image) is not None
    with pytest.raises(ValueError, match="create_timeout"):
        create_sandbox("daytona", client=client, create_timeout=0)


# --- images built from a Dockerfile ----------------------------------------------------------


async def test_a_sandbox_from_a_dockerfile_image_uploads_its_context_with_the_resources(
    make: MakeSandbox, client: FakeAsyncDaytona, tmp_path: Path
) -> None:
    context = dockerfile_context(tmp_path / "ctx")
    image = daytona_dockerfile_image(context / "Dockerfile")
    assert isinstance(image, daytona.Image)
    assert image.dockerfile() == (context / "Dockerfile").read_text()
    async with make(daytona_image=image, cpus=2, memory_mb=3000, create_timeout=900):
        pass
    sandbox = client.sandboxes[0]
    params = sandbox.params
    assert isinstance(params, daytona.CreateSandboxFromImageParams)
    assert params.image is image
    assert params.resources is not None
    assert (params.resources.cpu, params.resources.memory) == (2, 3)
    assert params.network_block_all is True
    # What the Dockerfile copies, read when the sandbox was created; nothing else.
    assert sandbox.uploaded_context == {"data.txt": b"payload\n", "sub/inner.txt": b"inner\n"}
    [create] = [c for c in client.calls if c.name == "create"]
    assert create.kwargs == {"timeout": 900}


async def test_a_context_gone_before_the_sandbox_starts_fails_the_start(
    make: MakeSandbox, tmp_path: Path
) -> None:
    context = dockerfile_context(tmp_path / "ctx")
    image = daytona_dockerfile_image(context / "Dockerfile")
    (context / "data.txt").unlink()
    with pytest.raises(SandboxStartError, match=r"from the daytona_image: .*data.txt"):
        await make(daytona_image=image).start()


def test_a_bad_dockerfile_is_refused_in_one_line(tmp_path: Path) -> None:
    context = dockerfile_context(tmp_path / "ctx")
    with pytest.raises(SandboxError, match=r"cannot use the Dockerfile .*nope"):
        daytona_dockerfile_image(context / "nope")
    (context / "Dockerfile").write_text("FROM debian:12-slim\nCOPY ../outside.txt /x\n")
    (tmp_path / "outside.txt").write_text("secret")
    with pytest.raises(SandboxError, match="cannot use the Dockerfile"):
        daytona_dockerfile_image(context / "Dockerfile")


# --- the fake is faithful to the real SDK ----------------------------------------------------


async def test_every_sdk_call_exists_on_the_real_sdk(tmp_path: Path) -> None:
    slow = _SlowStartClient(tmp_path / "slow")
    with pytest.raises(SandboxStartError):
        await create_sandbox("daytona", client=slow).start()
    client = FakeAsyncDaytona(tmp_path / "fake")
    try:
        await exercise_every_call(DAYTONA.sandbox(client, tmp_path / "w", env={"K": "v"}))
    finally:
        await client.aclose()
    used = {(c.owner, c.name) for c in client.calls}
    assert {
        ("AsyncDaytona", "create"),
        ("AsyncSandbox", "id"),
        ("AsyncSandbox", "process"),
        ("AsyncSandbox", "fs"),
        ("AsyncSandbox", "delete"),
        ("AsyncProcess", "exec"),
        ("AsyncFileSystem", "upload_file"),
        ("AsyncFileSystem", "download_file"),
    } <= used
    for call in client.calls:
        check_call(REAL_DAYTONA, call)


# --- live ----------------------------------------------------------------------------------

live = pytest.mark.skipif(
    not os.environ.get("DAYTONA_API_KEY"),
    reason="live Daytona test: set DAYTONA_API_KEY (and DAYTONA_API_URL if self-hosted)",
)


@live
async def test_live_daytona_sandbox() -> None:
    async with create_sandbox("daytona", terminal_lifetime=600, workdir="/tmp/hermes-work") as sb:
        await live_checks(sb, "DAYTONA_API_KEY")


@live
async def test_live_daytona_image_from_a_dockerfile(tmp_path: Path) -> None:
    context = dockerfile_context(tmp_path / "ctx")
    image = daytona_dockerfile_image(context / "Dockerfile")
    async with create_sandbox(
        "daytona",
        daytona_image=image,
        cpus=1,
        memory_mb=1024,
        create_timeout=900,
        terminal_lifetime=600,
        workdir="/tmp",
    ) as sb:
        result = await sb.exec("cat /data.txt /sub/inner.txt")
    assert result.output == "payload\ninner\n"
