"""Task images and sandbox networks on a real dockerd, with traffic to 127.0.0.1 only:
prebuilt images pulled from a registry on loopback (``.ci/services/registry.sh``), every
image reference mapped or refused in one line, and each sandbox's network as its task
asks (harbor's ``allow_internet``) or as the run forces it."""

from __future__ import annotations

import shutil
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_benchmarks import ImageError, ImageMap, Task, TrialSettings, load_task, run_trial
from hermes_benchmarks.images import (
    build_verifier_image,
    prepare_task_image,
    show_pull_progress,
)
from hermes_benchmarks.sandboxes import (
    allows_internet,
    close_fully,
    sandbox_network,
    start_sandbox,
)
from hermes_sandbox import Sandbox
from hermes_sandbox.backends.docker import BUSYBOX_IMAGE, DEFAULT_IMAGE, DockerDaemon
from tests.benchmarks.docker_support import SHIPPED, docker_skip_reason
from tests.sandbox.support import http_server, images_removed_after

REASON = docker_skip_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")

#: The open registry ``.ci/services/registry.sh`` starts on loopback.
REGISTRY = "127.0.0.1:5055"


@pytest.fixture
def api() -> Iterator[Any]:
    daemon = DockerDaemon.open()
    yield daemon.api
    daemon.close()


@pytest.fixture
def images(api: Any) -> Iterator[list[str]]:
    """Tags a test makes; removed afterwards."""
    with images_removed_after(api) as made:
        yield made


def copy_task(tmp_path: Path, name: str = "write-greeting", **environment: str) -> Path:
    """A copy of a shipped task with more ``[environment]`` lines (TOML values as text)."""
    target = tmp_path / name
    shutil.copytree(SHIPPED / name, target)
    with (target / "task.toml").open("a") as toml:  # [environment] ends the file
        for key, value in environment.items():
            toml.write(f"{key} = {value}\n")
    return target


def need_registry() -> None:
    try:
        with urllib.request.urlopen(f"http://{REGISTRY}/v2/", timeout=2):
            return
    except (OSError, urllib.error.HTTPError):
        pytest.skip(f"no registry answers on {REGISTRY}: run .ci/services/registry.sh as root")


def push(api: Any, source: str, target: str) -> None:
    """``source`` pushed to the registry as ``target``; the local tag removed."""
    repository, _, tag = target.rpartition(":")
    api.tag(source, repository, tag)
    try:
        for message in api.push(repository, tag=tag, stream=True, decode=True):
            assert "error" not in message, message
    finally:
        api.remove_image(target)


async def test_a_prebuilt_docker_image_is_pulled_from_its_registry(
    tmp_path: Path, api: Any, images: list[str]
) -> None:
    need_registry()
    reference = f"{REGISTRY}/hermes-test/task-{uuid.uuid4().hex[:8]}:1"
    push(api, DEFAULT_IMAGE, reference)
    images.append(reference)
    folder = copy_task(tmp_path, docker_image=f'"{reference}"')
    (folder / "environment" / "Dockerfile").unlink()
    task = load_task(folder)
    with pytest.raises(ImageError) as caught:
        await prepare_task_image(task, offline=True)
    message = str(caught.value)
    assert reference in message
    assert "image_map" in message
    assert "\n" not in message
    lines: list[str] = []
    image = await prepare_task_image(task, on_progress=lines.append)
    assert image.options == {"image": reference}
    assert api.inspect_image(reference)["Id"] == api.inspect_image(DEFAULT_IMAGE)["Id"]
    assert lines, "the pull's progress was reported"


def test_pull_progress_shows_starts_layers_done_and_retries_only(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for line in (
        "pull r/x:1: 1: Pulling from r/x",
        "pull r/x:1: abc: Downloading",
        "pull r/x:1: abc: Pull complete",
        "pull r/x:1: attempt 1 failed (boom); retrying",
        "build t:1: Step 1/2 : FROM r/x:1",
    ):
        show_pull_progress(line)
    shown = capsys.readouterr().err.splitlines()
    assert shown == [
        "hermes-bench: pull r/x:1: 1: Pulling from r/x",
        "hermes-bench: pull r/x:1: abc: Pull complete",
        "hermes-bench: pull r/x:1: attempt 1 failed (boom); retrying",
    ]


async def test_a_build_pulls_its_absent_base_from_the_registry(
    tmp_path: Path, api: Any, images: list[str]
) -> None:
    need_registry()
    base = f"{REGISTRY}/hermes-test/base-{uuid.uuid4().hex[:8]}:1"
    push(api, DEFAULT_IMAGE, base)
    images.append(base)
    folder = copy_task(tmp_path)
    (folder / "environment" / "Dockerfile").write_text(f"FROM {base}\nRUN echo built > /b\n")
    task = load_task(folder)
    with pytest.raises(ImageError, match=r"needs .*base-.*image_map"):
        await prepare_task_image(task, offline=True)
    image = await prepare_task_image(task)
    images.insert(0, image.name)
    assert api.inspect_image(base)["Id"] == api.inspect_image(DEFAULT_IMAGE)["Id"]
    assert image.name.startswith("hermes-bench/write-greeting:")


async def test_a_task_image_is_rebuilt_when_its_base_is_rebuilt_under_the_same_tag(
    tmp_path: Path, api: Any, images: list[str]
) -> None:
    from hermes_sandbox.backends.docker import build_dockerfile_image

    base = f"hermes-test/task-base-{uuid.uuid4().hex[:8]}:1"
    base_context = tmp_path / "base"
    base_context.mkdir()
    folder = copy_task(tmp_path / "task")
    (folder / "environment" / "Dockerfile").write_text(f"FROM {base}\nRUN cat /v > /seen\n")
    task = load_task(folder)

    async def task_image_after_base(version: str) -> tuple[str, str]:
        (base_context / "Dockerfile").write_text(f"FROM {BUSYBOX_IMAGE}\nRUN echo {version} > /v\n")
        await build_dockerfile_image(base_context, base, network="none")
        image = await prepare_task_image(task, offline=True)
        return image.name, str(api.inspect_image(image.name)["Id"])

    tag, first = await task_image_after_base("one")
    images.extend([tag, base])
    assert await task_image_after_base("one") == (tag, first), "nothing changed: reused"
    again, second = await task_image_after_base("two")
    assert again == tag  # same task inputs, same tag ...
    assert second != first  # ... rebuilt on the new base


async def test_every_image_reference_is_mapped_and_an_unmapped_one_named(
    tmp_path: Path, images: list[str]
) -> None:
    folder = copy_task(tmp_path)
    (folder / "environment" / "Dockerfile").write_text(
        "FROM python:3.13-slim\n"
        "COPY --from=vendor/tools:7 /bin/busybox /opt/busybox\n"
        "RUN /opt/busybox true\n"
    )
    task = load_task(folder)
    with pytest.raises(ImageError) as caught:
        await prepare_task_image(
            task, ImageMap.parse([f"python:3.13-slim={DEFAULT_IMAGE}"]), offline=True
        )
    message = str(caught.value)
    assert "vendor/tools:7" in message
    assert "image_map" in message
    assert "\n" not in message
    both = ImageMap.parse([f"python:3.13-slim={DEFAULT_IMAGE}", f"vendor/tools:7={BUSYBOX_IMAGE}"])
    image = await prepare_task_image(task, both, offline=True)
    images.append(image.name)
    assert image.name.startswith("hermes-bench/write-greeting:")


async def test_the_verifier_environments_docker_image_is_mapped(tmp_path: Path) -> None:
    folder = copy_task(tmp_path)
    with (folder / "task.toml").open("a") as toml:
        toml.write('\n[verifier.environment]\ndocker_image = "vendor/checker:3"\n')
    task = load_task(folder)
    with pytest.raises(ImageError, match=r"vendor/checker:3.*image_map"):
        await build_verifier_image(task, ImageMap(), offline=True)
    mapped = await build_verifier_image(
        task, ImageMap.parse([f"vendor/checker:3={BUSYBOX_IMAGE}"]), offline=True
    )
    assert (mapped.tag, mapped.owns_tests) == (BUSYBOX_IMAGE, False)


@pytest.mark.parametrize(
    ("allow_internet", "choice", "mode"),
    [
        (False, "task", "none"),
        (True, "task", "bridge"),
        (True, "off", "none"),
        (True, "host", "host"),
        (False, "host", "none"),
    ],
)
async def test_the_sandbox_network_follows_the_task_and_the_run(
    tmp_path: Path, api: Any, allow_internet: bool, choice: Any, mode: str
) -> None:
    folder = copy_task(tmp_path, allow_internet=str(allow_internet).lower())
    task = load_task(folder)
    assert task.config.environment.allow_internet is allow_internet
    sandbox = await start_sandbox(
        "docker",
        {},
        task_id=f"net-{uuid.uuid4().hex[:8]}",
        image={"image": BUSYBOX_IMAGE},
        cpus=1,
        memory_mb=256,
        lifetime=60,
        network=sandbox_network(task.config.environment.allow_internet, choice),
    )
    try:
        container = getattr(sandbox, "container_id", None)
        assert container is not None
        assert api.inspect_container(container)["HostConfig"]["NetworkMode"] == mode
    finally:
        await close_fully(sandbox)


async def test_a_wrong_image_option_is_an_image_error_in_one_line(tmp_path: Path) -> None:
    task = load_task(copy_task(tmp_path))
    with pytest.raises(ImageError) as caught:
        await prepare_task_image(task, sandbox_options={"pull_attempts": 0}, offline=True)
    assert "pull_attempts" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_harbors_default_allows_the_internet(tmp_path: Path) -> None:
    environment = load_task(copy_task(tmp_path)).config.environment
    assert environment.allow_internet is True
    assert allows_internet(environment) is True
    for mode, allowed in (("no-network", False), ("public", True), ("allowlist", True)):
        folder = copy_task(tmp_path / mode, network_mode=f'"{mode}"', allow_internet="true")
        assert allows_internet(load_task(folder).config.environment) is allowed
    with pytest.raises(ValueError, match="network must be"):
        sandbox_network(True, "bridge")  # type: ignore[arg-type]


class Fetcher:
    """An agent that fetches ``http://127.0.0.1:<port>/`` with bash alone and keeps what
    it got (empty when the connection fails)."""

    name = "fetcher"

    def __init__(self, port: int) -> None:
        self.port = port
        self.got: list[str] = []

    async def run(self, task: Task, sandbox: Sandbox, *, timeout: float) -> None:
        result = await sandbox.exec(
            f"exec 3<>/dev/tcp/127.0.0.1/{self.port} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3"
            " && cat <&3 | tail -n 1",
            timeout=20,
        )
        self.got.append(result.output if result.exit_code == 0 else "")


async def test_with_host_networking_the_agent_reaches_loopback_only_if_the_task_allows(
    tmp_path: Path, images: list[str]
) -> None:
    payload = f"service-{uuid.uuid4().hex}"
    settings = TrialSettings(infra_retries=0, network="host")
    with http_server(payload.encode()) as port:
        for allow, reaches in ((True, True), (False, False)):
            task = load_task(copy_task(tmp_path / str(allow), allow_internet=str(allow).lower()))
            agent = Fetcher(port)
            await run_trial(task, agent, settings, trial=0)
            assert agent.got, "the agent ran"
            assert (payload in agent.got[0]) is reaches, agent.got
