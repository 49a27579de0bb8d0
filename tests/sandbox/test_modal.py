"""The ``modal`` backend, offline against ``FakeModal`` at the SDK boundary, and live
against Modal when ``MODAL_TOKEN_ID`` and ``MODAL_TOKEN_SECRET`` are set. What it shares
with the ``daytona`` backend is checked on both in ``test_remote.py``."""

from __future__ import annotations

import asyncio
import os
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

pytest.importorskip("modal", reason="the Modal SDK is not installed (hermes-sandbox[modal])")

from hermes_sandbox import SandboxClosedError, SandboxError, create_sandbox
from hermes_sandbox.backends.cloud.modal import build_modal_image
from tests.sandbox.fakes.modal_fake import (
    REAL_MODAL,
    Call,
    FakeApp,
    FakeDockerfileImage,
    FakeImage,
    FakeModal,
    check_call,
)
from tests.sandbox.fakes.remote_support import (
    MODAL,
    MakeSandbox,
    checked_fake,
    dockerfile_context,
    exercise_every_call,
    live_checks,
)


@pytest.fixture
async def fake(tmp_path: Path) -> AsyncIterator[FakeModal]:
    async with checked_fake(FakeModal(tmp_path / "fake")) as sdk:
        yield sdk


@pytest.fixture
def make(fake: FakeModal, tmp_path: Path) -> MakeSandbox:
    return MODAL.factory(fake, tmp_path / "work")


# --- commands ------------------------------------------------------------------------------


async def test_exit_code_and_interleaved_output(make: MakeSandbox) -> None:
    async with make() as sb:
        result = await sb.exec("echo one; echo two >&2; echo three; exit 7")
    assert result.output == "one\ntwo\nthree\n"
    assert result.exit_code == 7
    assert not result.timed_out
    assert not result.truncated


async def test_cwd_and_exports_persist(make: MakeSandbox, tmp_path: Path) -> None:
    async with make(env={"GREETING": "hi"}) as sb:
        await sb.exec("mkdir -p sub && cd sub && export COLOR=blue")
        result = await sb.exec('pwd; echo "$COLOR $GREETING"')
    assert result.output == f"{tmp_path / 'work' / 'sub'}\nblue hi\n"


async def test_output_is_bounded_inside_the_sandbox(make: MakeSandbox) -> None:
    async with make(max_output_chars=1000) as sb:
        tracemalloc.start()
        try:
            result = await sb.exec(
                "printf HEAD; head -c 300000000 /dev/zero | tr '\\0' x; printf TAIL", timeout=120
            )
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert result.exit_code == 0
    assert result.truncated
    assert result.output.startswith("HEADxxx")
    assert result.output.endswith("xxxTAIL")
    assert f"[... {300_000_008 - 1000} bytes truncated ...]" in result.output
    assert len(result.output) < 1200
    assert peak < 20_000_000


async def test_output_between_head_and_limit_is_whole(make: MakeSandbox) -> None:
    async with make(max_output_chars=100) as sb:
        result = await sb.exec("seq -s, 1 30 | tr -d '\\n'")
    assert result.output == ",".join(str(n) for n in range(1, 31))  # 80 bytes: head + tail
    assert not result.truncated


async def test_binary_and_unicode_output(make: MakeSandbox) -> None:
    async with make() as sb:
        result = await sb.exec(
            "printf 'h\\303\\251llo \\342\\234\\223 '; printf '\\000\\377\\376'; echo"
        )
    assert result.output.startswith("héllo ✓ ")
    assert "\ufffd" in result.output


async def test_output_that_looks_like_the_runner_trailer(make: MakeSandbox) -> None:
    async with make() as sb:
        result = await sb.exec("echo '__hermes_end_0123__ 5 9 1'; printf 'x:cut'; exit 3")
    assert result.output == "__hermes_end_0123__ 5 9 1\nx:cut"
    assert result.exit_code == 3
    assert not result.timed_out


async def test_concurrent_execs_in_one_sandbox(make: MakeSandbox) -> None:
    async with make() as sb:
        results = await asyncio.gather(*(sb.exec(f"sleep 0.2; echo {n}") for n in range(8)))
    assert [r.output for r in results] == [f"{n}\n" for n in range(8)]


# --- files ---------------------------------------------------------------------------------


async def test_file_round_trips(make: MakeSandbox, tmp_path: Path) -> None:
    blob = bytes(range(256)) * 200_000  # 51.2 MB
    async with make() as sb:
        await sb.write_file("deep/er/blob.bin", blob)
        await sb.write_file("text.txt", "héllo\n")
        assert await sb.read_file("deep/er/blob.bin") == blob
        assert (await sb.exec("cat text.txt")).output == "héllo\n"
        source = tmp_path / "up"
        (source / "a" / "b").mkdir(parents=True)
        (source / "a" / "b" / "c.bin").write_bytes(b"\x00\x01")
        (source / "top.txt").write_text("top")
        await sb.upload_dir(source, "tree")
        await sb.download_dir("tree", tmp_path / "down")
        await sb.download_file("text.txt", tmp_path / "one" / "text.txt")
    assert (tmp_path / "down" / "a" / "b" / "c.bin").read_bytes() == b"\x00\x01"
    assert (tmp_path / "down" / "top.txt").read_text() == "top"
    assert (tmp_path / "one" / "text.txt").read_text() == "héllo\n"


async def test_file_errors(make: MakeSandbox, tmp_path: Path) -> None:
    async with make() as sb:
        await sb.exec("mkdir -p adir")
        with pytest.raises(FileNotFoundError, match="modal sandbox"):
            await sb.read_file("missing.txt")
        with pytest.raises(IsADirectoryError):
            await sb.read_file("adir")
        with pytest.raises(IsADirectoryError):
            await sb.write_file("adir", b"x")
        await sb.write_file("afile", b"x")
        with pytest.raises(NotADirectoryError):
            await sb.write_file("afile/inner", b"x")
        with pytest.raises(FileNotFoundError):
            await sb.download_dir("no-such-dir", tmp_path / "never")


async def test_big_file_read_falls_back_to_streaming(tmp_path: Path) -> None:
    sdk = FakeModal(tmp_path / "fake", read_limit=1000)
    try:
        async with create_sandbox("modal", sdk=sdk, workdir=str(tmp_path / "w")) as sb:
            await sb.write_file("big", b"z" * 5000)
            assert await sb.read_file("big") == b"z" * 5000
        assert any(c.name == "copy_to_local" for c in sdk.calls)
    finally:
        await sdk.aclose()


# --- lifecycle -----------------------------------------------------------------------------


async def test_create_arguments(make: MakeSandbox, fake: FakeModal) -> None:
    sb = make(
        image="python:3.12-slim",
        cpus=2,
        memory_mb=1024,
        env={"A": "1"},
        terminal_lifetime=600,
        app_name="my-app",
        gpu="T4",
    )
    async with sb:
        pass
    kwargs = fake.sandboxes[0].create_kwargs
    assert kwargs["app"] == FakeApp("my-app", fake.apps["my-app"].app_id)
    assert kwargs["image"] == FakeImage("python:3.12-slim")
    assert kwargs["block_network"] is True
    assert kwargs["cpu"] == 2.0
    assert kwargs["memory"] == 1024
    assert kwargs["gpu"] == "T4"
    assert kwargs["env"] == {"A": "1"}
    assert kwargs["timeout"] == 660
    async with make(network=True):
        pass
    assert fake.sandboxes[1].create_kwargs["block_network"] is False
    assert "image" not in fake.sandboxes[1].create_kwargs


async def test_lifetime_closes_the_sandbox(make: MakeSandbox, fake: FakeModal) -> None:
    sb = make(terminal_lifetime=1)
    await sb.start()
    await asyncio.sleep(1.1)
    with pytest.raises(SandboxClosedError, match="lifetime"):
        await sb.exec("true")
    assert fake.sandboxes[0].terminated


def test_bad_options_are_rejected(fake: FakeModal) -> None:
    with pytest.raises(
        ValueError, match=r"modal backend: unknown option\(s\) 'colour'; known modal options: "
    ):
        create_sandbox("modal", sdk=fake, colour="red")
    with pytest.raises(ValueError, match="pids_limit"):
        create_sandbox("modal", sdk=fake, pids_limit=64)


# --- images built from a Dockerfile ----------------------------------------------------------


async def test_an_image_is_built_from_a_dockerfile_and_used_by_the_sandbox(
    make: MakeSandbox, fake: FakeModal, tmp_path: Path
) -> None:
    context = dockerfile_context(tmp_path / "ctx")
    image = await build_modal_image(
        context / "Dockerfile", context, timeout=60, sdk=fake, app_name="bench-images"
    )
    assert isinstance(image, FakeDockerfileImage)
    [made] = [c for c in fake.calls if c.name == "from_dockerfile"]
    assert made.args == (str(context / "Dockerfile"),)
    assert made.kwargs == {"context_dir": str(context)}
    # Built now, in the named App, from what the files held at that moment.
    assert image.built_in == fake.apps["bench-images"]
    assert image.object_id is not None
    assert image.dockerfile_text == (context / "Dockerfile").read_text()
    assert image.context_files == {
        "Dockerfile": (context / "Dockerfile").read_bytes(),
        "data.txt": b"payload\n",
        "sub/inner.txt": b"inner\n",
        "unused.bin": b"not copied",
    }
    async with make(modal_image=image, cpus=2, memory_mb=3000):
        pass
    kwargs = fake.sandboxes[0].create_kwargs
    assert kwargs["image"] is image
    assert (kwargs["cpu"], kwargs["memory"]) == (2.0, 3000)
    assert not [c for c in fake.calls if c.name == "from_registry"]


async def test_a_failed_image_build_names_the_image_for_its_logs(tmp_path: Path) -> None:
    context = dockerfile_context(tmp_path / "ctx")
    sdk = FakeModal(tmp_path / "fake", build_error="RUN step 2 exited with 1")
    with pytest.raises(SandboxError, match=r"could not build .*im-fake.*RUN step 2 exited"):
        await build_modal_image(context / "Dockerfile", context, timeout=60, sdk=sdk)


async def test_an_image_build_past_its_timeout_fails(tmp_path: Path) -> None:
    context = dockerfile_context(tmp_path / "ctx")
    sdk = FakeModal(tmp_path / "fake", build_seconds=30)
    with pytest.raises(SandboxError, match=r"took longer than 0.2s"):
        await build_modal_image(context / "Dockerfile", context, timeout=0.2, sdk=sdk)
    with pytest.raises(ValueError, match="timeout"):
        await build_modal_image(context / "Dockerfile", context, timeout=0, sdk=sdk)


async def test_a_missing_dockerfile_fails_the_build(tmp_path: Path) -> None:
    context = dockerfile_context(tmp_path / "ctx")
    sdk = FakeModal(tmp_path / "fake")
    with pytest.raises(SandboxError, match=r"could not build the image of .*nope"):
        await build_modal_image(context / "nope", context, timeout=60, sdk=sdk)


# --- the fake is faithful to the real SDK ----------------------------------------------------


async def test_every_sdk_call_exists_on_the_real_sdk(tmp_path: Path) -> None:
    sdk = FakeModal(tmp_path / "fake", read_limit=10)
    context = dockerfile_context(tmp_path / "ctx")
    try:
        await exercise_every_call(
            MODAL.sandbox(sdk, tmp_path / "w", image="debian:12", env={"K": "v"}, cpus=1)
        )
        await build_modal_image(context / "Dockerfile", context, timeout=60, sdk=sdk)
    finally:
        await sdk.aclose()
    used = {(c.owner, c.name) for c in sdk.calls}
    assert {
        ("App", "lookup"),
        ("Image", "from_registry"),
        ("Image", "from_dockerfile"),
        ("Image", "build"),
        ("Sandbox", "create"),
        ("Sandbox", "exec"),
        ("Sandbox", "terminate"),
        ("Sandbox", "filesystem"),
        ("ContainerProcess", "wait"),
        ("ContainerProcess", "stdout"),
        ("ContainerProcess", "stderr"),
        ("StreamReader", "__aiter__"),
        ("SandboxFilesystem", "read_bytes"),
        ("SandboxFilesystem", "write_bytes"),
        ("SandboxFilesystem", "copy_to_local"),
    } <= used
    for call in sdk.calls:
        check_call(REAL_MODAL, call)


def test_signature_check_catches_a_wrong_call() -> None:
    with pytest.raises(TypeError, match="rejects"):
        check_call(REAL_MODAL, Call("Sandbox", "create", "aio", (), {"block_networks": True}))
    with pytest.raises(AttributeError):
        check_call(REAL_MODAL, Call("Sandbox", "open_file", "aio"))


# --- live ----------------------------------------------------------------------------------

live = pytest.mark.skipif(
    not (os.environ.get("MODAL_TOKEN_ID") and os.environ.get("MODAL_TOKEN_SECRET")),
    reason="live Modal test: set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET to run it",
)


@live
async def test_live_modal_sandbox() -> None:
    async with create_sandbox("modal", image="debian:12-slim", terminal_lifetime=600) as sb:
        await live_checks(sb, "MODAL_TOKEN_SECRET")


@live
async def test_live_modal_image_from_a_dockerfile(tmp_path: Path) -> None:
    context = dockerfile_context(tmp_path / "ctx")
    image = await build_modal_image(context / "Dockerfile", context, timeout=900)
    async with create_sandbox(
        "modal", modal_image=image, cpus=1, memory_mb=1024, terminal_lifetime=600
    ) as sb:
        result = await sb.exec("cat /data.txt /sub/inner.txt")
    assert result.output == "payload\ninner\n"
