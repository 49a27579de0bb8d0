"""Per-task images on Modal and Daytona: the right SDK calls with the right Dockerfile,
build context and resources, through the fakes of the sandbox tests (the clouds cannot be
reached here), and live runs of the oracle when credentials are set."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("modal", reason="the Modal SDK is not installed (hermes-sandbox[modal])")
pytest.importorskip("daytona", reason="the Daytona SDK is not installed (hermes-sandbox[daytona])")

import daytona

from hermes_benchmarks import ImageError, ImageMap, Task, TrialSettings, load_task, run_trial
from hermes_benchmarks._results import Attempt
from hermes_benchmarks._trial import run_attempt
from hermes_benchmarks.images import prepare_task_image
from hermes_sandbox import Sandbox
from hermes_sandbox.backends.cloud.daytona import DAYTONA_START_MARGIN
from tests.benchmarks.docker_support import SHIPPED
from tests.sandbox.fakes.daytona_fake import FakeAsyncDaytona
from tests.sandbox.fakes.modal_fake import FakeDockerfileImage, FakeModal
from tests.sandbox.fakes.remote_support import checked_fake

#: The shipped tasks build FROM the local base image; on a cloud a public image stands in.
CLOUD_BASE = "hermes-sandbox/debian:bookworm=debian:bookworm-slim"
MAPPED = ImageMap.parse([CLOUD_BASE])


def copy_task(tmp_path: Path, name: str = "count-errors") -> Path:
    target = tmp_path / "tasks" / name
    shutil.copytree(SHIPPED / name, target)
    return target


class LooksAndLeaves:
    """An agent that notes its sandbox and crashes, so no verifier runs on the fake (whose
    sandboxes are folders of this host: ``/tests`` there would be the host's)."""

    name = "looks-and-leaves"

    def __init__(self) -> None:
        self.backends: list[str] = []

    async def run(self, task: Task, sandbox: Sandbox, *, timeout: float) -> None:
        self.backends.append(sandbox.backend)
        assert (await sandbox.exec("echo inside")).output == "inside\n"
        raise RuntimeError("leaves before the verifier")


async def attempt_on(
    backend: str, fake: dict[str, Any], task: Task, tmp_path: Path, **settings: Any
) -> Attempt:
    """One attempt at ``task`` on ``backend`` through ``fake`` (its backend option), by an
    agent that checks it is in that backend's sandbox."""
    agent = LooksAndLeaves()
    chosen = TrialSettings(
        backend=backend,
        image_map=MAPPED,
        infra_retries=0,
        sandbox_options={**fake, "workdir": str(tmp_path / "work")},
        contexts_dir=tmp_path / "contexts",
        **settings,
    )
    attempt, _, _ = await run_attempt(task, agent, chosen, task_id=f"{backend}-trial")
    assert agent.backends == [backend]
    return attempt


# --- Modal ---------------------------------------------------------------------------------


async def test_modal_builds_the_mapped_dockerfile_with_the_task_context(tmp_path: Path) -> None:
    folder = copy_task(tmp_path)
    task = load_task(folder)
    contexts = tmp_path / "contexts"
    async with checked_fake(FakeModal(tmp_path / "fake")) as fake:
        image = await prepare_task_image(
            task, MAPPED, backend="modal", sandbox_options={"sdk": fake}, contexts_dir=contexts
        )
        [built] = fake.images
        assert isinstance(built, FakeDockerfileImage)
        assert image.options == {"modal_image": built}
        assert image.name.startswith("hermes-bench/count-errors:")
        # from_dockerfile(path, context_dir=...) on a kept copy of environment/, whose
        # Dockerfile names the mapped base; built at once in the backend's App.
        [context] = [p for p in contexts.iterdir() if not p.name.startswith(".")]
        assert built.path == str(context / "Dockerfile")
        assert built.context_dir == str(context)
        assert built.built_in == fake.apps["hermes-sandbox"]
        assert built.dockerfile_text is not None
        assert built.dockerfile_text.splitlines()[0] == "FROM debian:bookworm-slim"
        assert "COPY service.log /app/service.log" in built.dockerfile_text
        assert (
            built.context_files["service.log"]
            == (folder / "environment" / "service.log").read_bytes()
        )
        assert "hermes-sandbox/debian" in (folder / "environment" / "Dockerfile").read_text()


async def test_a_modal_trial_runs_in_the_built_image_with_the_task_resources(
    tmp_path: Path,
) -> None:
    task = load_task(copy_task(tmp_path))
    async with checked_fake(FakeModal(tmp_path / "fake")) as fake:
        attempt = await attempt_on("modal", {"sdk": fake}, task, tmp_path)
        [sandbox] = fake.sandboxes
        [image] = fake.images
        kwargs = sandbox.create_kwargs
        assert kwargs["image"] is image
        assert (kwargs["cpu"], kwargs["memory"]) == (1.0, 512)
        assert kwargs["block_network"] is False  # harbor's default: allow_internet
        assert sandbox.terminated, "the sandbox is closed after the attempt"
    assert attempt.error_kind == "agent_crash"
    assert attempt.error is not None
    assert "leaves before the verifier" in attempt.error
    assert {"image", "sandbox_start", "agent", "teardown"} <= set(attempt.timings)


async def test_a_modal_build_failure_is_an_image_build_infra_error(tmp_path: Path) -> None:
    task = load_task(copy_task(tmp_path))
    async with checked_fake(FakeModal(tmp_path / "fake", build_error="step 3/3 failed")) as fake:
        with pytest.raises(ImageError) as caught:
            await prepare_task_image(
                task,
                MAPPED,
                backend="modal",
                sandbox_options={"sdk": fake},
                contexts_dir=tmp_path / "contexts",
            )
        message = str(caught.value)
        assert message.startswith("task count-errors: image build on modal failed: ")
        assert "step 3/3 failed" in message
        assert "\n" not in message
        settings = TrialSettings(
            backend="modal",
            image_map=MAPPED,
            infra_retries=1,
            sandbox_options={"sdk": fake},
            contexts_dir=tmp_path / "contexts",
        )
        result = await run_trial(task, LooksAndLeaves(), settings, trial=0)
        assert not fake.sandboxes, "no sandbox is made without its image"
    assert result.status == "infra_error"
    assert [a.error_kind for a in result.attempts] == ["image_build", "image_build"]


async def test_a_modal_build_runs_under_the_task_build_timeout(tmp_path: Path) -> None:
    task = load_task(copy_task(tmp_path))  # build_timeout_sec = 120
    async with checked_fake(FakeModal(tmp_path / "fake", build_seconds=60)) as fake:
        with pytest.raises(ImageError, match=r"took longer than 0\.12s"):
            await prepare_task_image(
                task,
                MAPPED,
                backend="modal",
                timeout_multiplier=0.001,
                sandbox_options={"sdk": fake},
                contexts_dir=tmp_path / "contexts",
            )


async def test_the_kept_context_is_cached_by_the_environment_hash(tmp_path: Path) -> None:
    folder = copy_task(tmp_path)
    contexts = tmp_path / "contexts"

    async def prepare(fake: FakeModal) -> str:
        image = await prepare_task_image(
            load_task(folder),
            MAPPED,
            backend="modal",
            sandbox_options={"sdk": fake},
            contexts_dir=contexts,
        )
        return image.name

    async with checked_fake(FakeModal(tmp_path / "fake")) as fake:
        first = await prepare(fake)
        [kept] = list(contexts.iterdir())
        stamp = (kept / "service.log").stat().st_mtime_ns
        assert await prepare(fake) == first
        assert list(contexts.iterdir()) == [kept], "unchanged inputs: the same context"
        assert (kept / "service.log").stat().st_mtime_ns == stamp, "not copied again"
        (folder / "environment" / "service.log").write_text("x ERROR y\n")
        changed = await prepare(fake)
        assert changed != first
        assert len(list(contexts.iterdir())) == 2
        assert fake.images[-1].context_files["service.log"] == b"x ERROR y\n"


async def test_a_prebuilt_image_comes_from_its_registry_after_mapping(tmp_path: Path) -> None:
    folder = copy_task(tmp_path)
    (folder / "environment" / "Dockerfile").unlink()
    with (folder / "task.toml").open("a") as toml:
        toml.write('docker_image = "python:3.13-slim"\n')
    task = load_task(folder)
    image_map = ImageMap.parse(["python:3.13-slim=registry.example/python:3.13-slim"])
    async with checked_fake(FakeModal(tmp_path / "fake")) as fake:
        image = await prepare_task_image(
            task, image_map, backend="modal", sandbox_options={"sdk": fake}
        )
        assert not fake.images
    assert image.options == {"image": "registry.example/python:3.13-slim"}


async def test_a_from_variable_without_default_fails_on_the_clouds_too(tmp_path: Path) -> None:
    folder = copy_task(tmp_path)
    (folder / "environment" / "Dockerfile").write_text("ARG BASE\nFROM $BASE\n")
    for backend in ("modal", "daytona"):
        with pytest.raises(ImageError, match="uses a variable no ARG default sets"):
            await prepare_task_image(
                load_task(folder), backend=backend, contexts_dir=tmp_path / "contexts"
            )


# --- Daytona -------------------------------------------------------------------------------


async def test_a_daytona_trial_creates_its_sandbox_from_the_dockerfile_image(
    tmp_path: Path,
) -> None:
    folder = copy_task(tmp_path)
    with (folder / "task.toml").open("a") as toml:
        toml.write("allow_internet = false\n")  # the [environment] table ends the file
    task = load_task(folder)
    async with checked_fake(FakeAsyncDaytona(tmp_path / "fake")) as client:
        attempt = await attempt_on(
            "daytona", {"client": client}, task, tmp_path, timeout_multiplier=2.0
        )
        [sandbox] = client.sandboxes
        params = sandbox.params
        assert isinstance(params, daytona.CreateSandboxFromImageParams)
        assert isinstance(params.image, daytona.Image)
        dockerfile = params.image.dockerfile()
        assert dockerfile.splitlines()[0] == "FROM debian:bookworm-slim"
        assert sandbox.uploaded_context == {
            "service.log": (folder / "environment" / "service.log").read_bytes()
        }
        assert params.resources is not None
        assert (params.resources.cpu, params.resources.memory) == (1, 1)  # 512 MB: 1 GiB
        assert params.network_block_all is True  # the task turned the internet off
        [create] = [c for c in client.calls if c.name == "create"]
        assert create.kwargs == {"timeout": 120 * 2.0 + DAYTONA_START_MARGIN}
        assert sandbox.deleted
    assert attempt.error_kind == "agent_crash"


async def test_a_daytona_context_that_cannot_be_kept_is_an_image_error(tmp_path: Path) -> None:
    task = load_task(copy_task(tmp_path))
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the contexts folder should be")
    with pytest.raises(ImageError, match=r"cannot keep the build context of .*blocked"):
        await prepare_task_image(task, MAPPED, backend="daytona", contexts_dir=blocked)


# --- live ----------------------------------------------------------------------------------


def _oracle_on_cloud(
    backend: str, output: Path, *more: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    script = "import sys; from hermes_benchmarks.cli import main; sys.exit(main())"
    return subprocess.run(
        [
            sys.executable,
            "-c",
            script,
            "terminalbench2",
            "check",
            "--env.terminal_backend",
            backend,
            "--env.tasks_dir",
            str(SHIPPED),
            "--env.output_dir",
            str(output),
            "--env.image_map",
            f'["{CLOUD_BASE}"]',
            *more,
        ],
        capture_output=True,
        text=True,
        timeout=3600,
        env=env,
    )


@pytest.mark.parametrize(
    ("backend", "credentials", "kind", "says"),
    [
        ("modal", ("MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET"), "image_build", "MODAL_TOKEN_ID"),
        ("daytona", ("DAYTONA_API_KEY",), "sandbox_start", "DAYTONA_API_KEY"),
    ],
)
def test_check_without_credentials_reports_each_task_with_the_reason(
    tmp_path: Path, backend: str, credentials: tuple[str, ...], kind: str, says: str
) -> None:
    home = tmp_path / "home"  # no ~/.modal.toml there
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in credentials}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(tmp_path / "cache"))
    done = _oracle_on_cloud(
        backend,
        tmp_path / "out",
        "--env.task_filter",
        "write-greeting",
        "--env.infra_retries",
        "0",
        env=env,
    )
    assert done.returncode == 1, done.stderr
    assert f"oracle fails on write-greeting ({backend}): 0/1 passed ({kind} x1)" in done.stdout
    [line] = (tmp_path / "out" / "results.jsonl").read_text().splitlines()
    row = json.loads(line)
    assert (row["status"], row["error_kind"]) == ("infra_error", kind)
    assert says in row["error"]


@pytest.mark.skipif(
    not (os.environ.get("MODAL_TOKEN_ID") and os.environ.get("MODAL_TOKEN_SECRET")),
    reason="live Modal test: set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET to run it",
)
def test_live_the_oracle_passes_every_shipped_task_on_modal(tmp_path: Path) -> None:
    done = _oracle_on_cloud("modal", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.skipif(
    not os.environ.get("DAYTONA_API_KEY"),
    reason="live Daytona test: set DAYTONA_API_KEY (and DAYTONA_API_URL if self-hosted)",
)
def test_live_the_oracle_passes_every_shipped_task_on_daytona(tmp_path: Path) -> None:
    done = _oracle_on_cloud("daytona", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
