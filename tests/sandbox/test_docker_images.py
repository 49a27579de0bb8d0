"""The docker backend's images on a real dockerd: pulls from registries on 127.0.0.1 (with
and without credentials), networked and offline builds, the cache following its bases,
and the backend's hooks (``prepare_image``, ``reap_run``).

The registries are Debian's docker-registry, started by ``.ci/services/registry.sh``;
those tests skip when it is not running.
"""

from __future__ import annotations

import asyncio
import base64
import json
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_sandbox import create_sandbox, default_backends
from hermes_sandbox._lifecycle import RUN_ID, ImageSource, ImageUnavailableError
from hermes_sandbox.backends.docker import (
    ImageBuildError,
    build_dockerfile_image,
    list_containers,
)
from tests.sandbox.providers.docker import DockerSetup
from tests.sandbox.support import http_server, images_removed_after

#: The registries ``.ci/services/registry.sh`` starts (and its throwaway user).
OPEN_REGISTRY = "127.0.0.1:5055"
AUTH_REGISTRY = "127.0.0.1:5056"
REGISTRY_USER = "hermes"
REGISTRY_PASSWORD = "hermes-registry-test"
NO_REGISTRY = "127.0.0.1:5059"  # nothing listens there


@pytest.fixture
def images(api: Any) -> Iterator[list[str]]:
    """Tags a test makes; removed afterwards."""
    with images_removed_after(api) as made:
        yield made


def _registry_answers(host: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://{host}/v2/", timeout=2):
            return True
    except urllib.error.HTTPError as error:
        return error.code == 401
    except OSError:
        return False


def _need_registry(host: str) -> None:
    if not _registry_answers(host):
        pytest.skip(f"no registry answers on {host}: run .ci/services/registry.sh as root")


def _docker_config(tmp_path: Path, registry: str, password: str = REGISTRY_PASSWORD) -> Path:
    """A docker client config holding credentials for ``registry`` (as `docker login`)."""
    token = base64.b64encode(f"{REGISTRY_USER}:{password}".encode()).decode()
    folder = tmp_path / "docker-config"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"auths": {registry: {"auth": token}}}))
    return folder / "config.json"


def _push(api: Any, source: str, target: str, credentials: dict[str, str] | None = None) -> None:
    """Tag ``source`` as ``target``, push it, and remove the local tag."""
    repository, _, tag = target.rpartition(":")
    api.tag(source, repository, tag)
    try:
        for message in api.push(
            repository, tag=tag, stream=True, decode=True, auth_config=credentials
        ):
            assert "error" not in message, message
    finally:
        api.remove_image(target)


def _prepared(source: ImageSource, **options: Any) -> Any:
    return default_backends.get("docker").prepare_image(source, options)


async def test_an_absent_image_is_pulled_from_a_loopback_registry_with_progress(
    setup: DockerSetup, api: Any, images: list[str]
) -> None:
    _need_registry(OPEN_REGISTRY)
    reference = f"{OPEN_REGISTRY}/hermes-test/pulled-{uuid.uuid4().hex[:8]}:1"
    _push(api, setup.small_image, reference)
    images.append(reference)
    lines: list[str] = []
    prepared = await _prepared(
        ImageSource(reference, reference=reference, on_progress=lines.append)
    )
    assert prepared.options == {"image": reference}
    assert api.inspect_image(reference)["Id"] == api.inspect_image(setup.small_image)["Id"]
    assert any(line.startswith(f"pull {reference}:") for line in lines)
    # Offline, an image that is present is used as it is; an absent one is refused.
    await _prepared(ImageSource(reference, reference=reference, offline=True))
    api.remove_image(reference)
    with pytest.raises(ImageUnavailableError) as caught:
        await _prepared(ImageSource(reference, reference=reference, offline=True))
    assert caught.value.kind == "missing_offline"
    assert reference in str(caught.value)
    assert "\n" not in str(caught.value)


async def test_a_registry_with_credentials_pulls_with_the_docker_config(
    setup: DockerSetup, api: Any, images: list[str], tmp_path: Path
) -> None:
    _need_registry(AUTH_REGISTRY)
    reference = f"{AUTH_REGISTRY}/hermes-test/private-{uuid.uuid4().hex[:8]}:1"
    login = {"username": REGISTRY_USER, "password": REGISTRY_PASSWORD}
    _push(api, setup.small_image, reference, login)
    images.append(reference)
    source = ImageSource(reference, reference=reference)

    empty = tmp_path / "empty" / "config.json"
    empty.parent.mkdir()
    empty.write_text("{}")
    with pytest.raises(ImageUnavailableError) as caught:
        await _prepared(source, docker_config=str(empty), pull_wait=0)
    assert caught.value.kind == "unauthorized"
    assert "docker login" in str(caught.value)
    assert "\n" not in str(caught.value)

    wrong = _docker_config(tmp_path / "wrong", AUTH_REGISTRY, password="not-it")
    with pytest.raises(ImageUnavailableError) as caught:
        await _prepared(source, docker_config=str(wrong), pull_wait=0)
    assert caught.value.kind == "unauthorized"
    assert "refused the credentials" in str(caught.value)

    good = _docker_config(tmp_path, AUTH_REGISTRY)
    prepared = await _prepared(source, docker_config=str(good))
    assert prepared.name == reference
    assert api.inspect_image(reference)["Id"] == api.inspect_image(setup.small_image)["Id"]


async def test_an_image_the_registry_lacks_is_not_found_in_one_line(setup: DockerSetup) -> None:
    _need_registry(OPEN_REGISTRY)
    reference = f"{OPEN_REGISTRY}/hermes-test/absent-{uuid.uuid4().hex[:8]}:1"
    with pytest.raises(ImageUnavailableError) as caught:
        await _prepared(ImageSource(reference, reference=reference), pull_wait=0)
    assert caught.value.kind == "not_found"
    assert caught.value.reference == reference
    assert reference in str(caught.value)
    assert "\n" not in str(caught.value)


async def test_an_unreachable_registry_is_retried_then_reported(setup: DockerSetup) -> None:
    reference = f"{NO_REGISTRY}/hermes-test/x:1"
    lines: list[str] = []
    with pytest.raises(ImageUnavailableError) as caught:
        await _prepared(
            ImageSource(reference, reference=reference, on_progress=lines.append),
            pull_attempts=3,
            pull_wait=0,
        )
    assert caught.value.kind == "pull_failed"
    assert "after 3 attempts" in str(caught.value)
    assert "\n" not in str(caught.value)
    assert sum("retrying" in line for line in lines) == 2


async def test_a_base_rebuilt_under_its_tag_rebuilds_the_image_built_on_it(
    setup: DockerSetup, api: Any, images: list[str], tmp_path: Path
) -> None:
    base = f"hermes-test/base-{uuid.uuid4().hex[:8]}:1"
    task = f"hermes-test/on-base-{uuid.uuid4().hex[:8]}:1"
    images.extend([task, base])
    (tmp_path / "base").mkdir()
    (tmp_path / "task").mkdir()
    (tmp_path / "task" / "Dockerfile").write_text(f"FROM {base}\nRUN cat /version > /seen\n")

    async def build_base(version: str) -> None:
        (tmp_path / "base" / "Dockerfile").write_text(
            f"FROM {setup.small_image}\nRUN echo {version} > /version\n"
        )
        await build_dockerfile_image(tmp_path / "base", base, network="none")

    async def seen() -> bytes:
        await build_dockerfile_image(tmp_path / "task", task, network="none")
        async with create_sandbox("docker", image=task) as sb:
            return await sb.read_file("/seen")

    await build_base("one")
    assert await seen() == b"one\n"
    first = api.inspect_image(task)["Id"]
    assert await seen() == b"one\n"
    assert api.inspect_image(task)["Id"] == first, "nothing changed: no rebuild"
    await build_base("two")  # same tag, new image id
    assert await seen() == b"two\n"
    assert api.inspect_image(task)["Id"] != first


async def test_every_image_a_build_reads_is_checked_offline(
    setup: DockerSetup, tmp_path: Path, images: list[str]
) -> None:
    absent = "nowhere.invalid/tools:1"
    for line in (f"COPY --from={absent} /bin/x /x", f"RUN --mount=from={absent},target=/m true"):
        (tmp_path / "Dockerfile").write_text(f"FROM {setup.small_image} AS base\n{line}\n")
        tag = f"hermes-test/refs-{uuid.uuid4().hex[:8]}:1"
        images.append(tag)
        with pytest.raises(ImageUnavailableError) as caught:
            await build_dockerfile_image(tmp_path, tag, network="none")
        assert caught.value.reference == absent
        assert caught.value.kind == "missing_offline"
        assert "\n" not in str(caught.value)


async def test_copy_from_an_image_on_the_daemon_builds(
    setup: DockerSetup, api: Any, tmp_path: Path, images: list[str]
) -> None:
    tag = f"hermes-test/copy-from-{uuid.uuid4().hex[:8]}:1"
    images.append(tag)
    (tmp_path / "Dockerfile").write_text(
        f"FROM {setup.small_image}\nCOPY --from={setup.small_image} /bin/bash /copied-bash\n"
    )
    await build_dockerfile_image(tmp_path, tag, network="none")
    async with create_sandbox("docker", image=tag) as sb:
        assert (await sb.exec("test -x /copied-bash && echo yes")).output == "yes\n"


async def test_a_build_on_the_host_network_fetches_from_a_server_on_loopback(
    setup: DockerSetup, tmp_path: Path, images: list[str]
) -> None:
    payload = f"package-{uuid.uuid4().hex}".encode()
    with http_server(payload) as port:
        (tmp_path / "Dockerfile").write_text(
            f"FROM {setup.small_image}\nRUN wget -q -O /fetched http://127.0.0.1:{port}/pkg\n"
        )
        tag = f"hermes-test/fetch-{uuid.uuid4().hex[:8]}:1"
        images.append(tag)
        source = ImageSource(tag, context=tmp_path, build_network="host", timeout=120)
        prepared = await _prepared(source)
        async with create_sandbox("docker", **prepared.options) as sb:
            assert await sb.read_file("/fetched") == payload
        # The same fetch, offline (another step first: no layer of the build above is reused).
        (tmp_path / "Dockerfile").write_text(
            f"FROM {setup.small_image}\nENV OFFLINE=1\n"
            f"RUN wget -q -O /fetched http://127.0.0.1:{port}/pkg\n"
        )
        offline = f"hermes-test/fetch-offline-{uuid.uuid4().hex[:8]}:1"
        images.append(offline)
        with pytest.raises(ImageBuildError, match=r"failed at Step 3/\d : RUN wget"):
            await _prepared(ImageSource(offline, context=tmp_path, offline=True, timeout=120))


async def test_builds_have_the_daemons_default_network_unless_offline(
    setup: DockerSetup, tmp_path: Path, images: list[str]
) -> None:
    for network, expected in (("default", True), ("none", False)):
        # A step of its own per network: the builder's layer cache ignores the network.
        (tmp_path / "Dockerfile").write_text(
            f"FROM {setup.small_image}\nRUN echo {network} && ls /sys/class/net > /net.txt\n"
        )
        tag = f"hermes-test/net-{uuid.uuid4().hex[:8]}:1"
        images.append(tag)
        await build_dockerfile_image(tmp_path, tag, network=network)  # type: ignore[arg-type]
        async with create_sandbox("docker", image=tag) as sb:
            interfaces = (await sb.read_file("/net.txt")).split()
        assert (interfaces != [b"lo"]) is expected, interfaces


async def test_a_dockerfile_text_replaces_the_contexts_dockerfile(
    setup: DockerSetup, tmp_path: Path, images: list[str]
) -> None:
    (tmp_path / "Dockerfile").write_text("FROM nowhere.invalid/never:1\n")
    (tmp_path / "data.txt").write_text("data\n")
    tag = f"hermes-test/text-{uuid.uuid4().hex[:8]}:1"
    images.append(tag)
    text = f"FROM {setup.small_image}\nCOPY . /ctx\n"
    prepared = await _prepared(
        ImageSource(tag, context=tmp_path, dockerfile_text=text, offline=True)
    )
    async with create_sandbox("docker", **prepared.options) as sb:
        assert (await sb.exec("cat /ctx/Dockerfile /ctx/data.txt")).output == text + "data\n"
    assert (tmp_path / "Dockerfile").read_text() == "FROM nowhere.invalid/never:1\n"


async def test_reap_run_removes_the_containers_of_that_run_only(setup: DockerSetup) -> None:
    backend = default_backends.get("docker")
    marked = {"purpose": f"reap-{uuid.uuid4().hex[:8]}"}
    sb = create_sandbox("docker", image=setup.small_image, labels=marked)
    await sb.start()
    try:
        assert await backend.reap_run(f"other-{uuid.uuid4().hex[:8]}") == 0
        assert len(list_containers(run_id=RUN_ID, labels=marked)) == 1
        assert await backend.reap_run(RUN_ID) >= 1
        assert list_containers(run_id=RUN_ID, labels=marked) == []
    finally:
        await sb.close()
    unreachable = {"base_url": "unix:///nonexistent/docker.sock"}
    assert await backend.reap_run(RUN_ID, unreachable) == 0


async def test_a_backend_without_builds_refuses_a_dockerfile_in_one_line(tmp_path: Path) -> None:
    backend = default_backends.get("local")
    source = ImageSource("x:1", context=tmp_path)
    with pytest.raises(ImageUnavailableError) as caught:
        await backend.prepare_image(source)
    assert caught.value.kind == "unsupported"
    assert "\n" not in str(caught.value)
    prepared = await backend.prepare_image(ImageSource("r:1", reference="r:1"))
    assert prepared.options == {"image": "r:1"}


def test_image_sources_are_checked() -> None:
    with pytest.raises(ValueError, match="exactly one of reference= and context="):
        ImageSource("x")
    with pytest.raises(ValueError, match="timeout must be positive"):
        ImageSource("x", reference="x", timeout=0)
    with pytest.raises(ValueError, match="build_network"):
        ImageSource("x", reference="x", build_network="bridge")  # type: ignore[arg-type]
    assert ImageSource("x", reference="x", offline=True, build_network="host").network == "none"


def test_the_run_id_is_the_docker_label_value() -> None:
    from hermes_sandbox.backends.docker import RUN_ID as DOCKER_RUN_ID

    assert DOCKER_RUN_ID == RUN_ID
    assert asyncio.iscoroutinefunction(default_backends.get("docker").reap_run)
