"""Per-task images on a real dockerd: mapped bases, offline builds, cache, clear failures."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hermes_benchmarks import ImageError, ImageMap, build_task_image, load_task
from hermes_sandbox.backends.docker import DEFAULT_IMAGE, DockerDaemon, image_exists
from tests.benchmarks.docker_support import SHIPPED, docker_skip_reason

REASON = docker_skip_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


def copy_task(tmp_path: Path, name: str, dockerfile: str | None = None) -> Path:
    target = tmp_path / name
    shutil.copytree(SHIPPED / name, target)
    if dockerfile is not None:
        (target / "environment" / "Dockerfile").write_text(dockerfile)
    return target


def remove(tag: str) -> None:
    daemon = DockerDaemon.open()
    try:
        daemon.api.remove_image(tag, force=True)
    finally:
        daemon.close()


async def test_a_mapped_base_builds_offline_and_is_cached(tmp_path: Path) -> None:
    folder = copy_task(
        tmp_path,
        "count-errors",
        "FROM python:3.13-slim\nWORKDIR /app\nCOPY service.log /app/service.log\n"
        "RUN grep -c ERROR /app/service.log > /app/.built\n",
    )
    task = load_task(folder)
    image_map = ImageMap.parse([f"python:3.13-slim={DEFAULT_IMAGE}"])
    tag = await build_task_image(task, image_map)
    try:
        assert tag.startswith("hermes-bench/count-errors:")
        assert image_exists(tag)
        # The task folder itself is untouched: the rewrite happens in a copy.
        assert "python:3.13-slim" in (folder / "environment" / "Dockerfile").read_text()
        daemon = DockerDaemon.open()
        try:
            first_id = daemon.api.inspect_image(tag)["Id"]
            assert await build_task_image(task, image_map) == tag
            assert daemon.api.inspect_image(tag)["Id"] == first_id, "unchanged inputs: no rebuild"
        finally:
            daemon.close()
        (folder / "environment" / "service.log").write_text("x ERROR y\n")
        changed = await build_task_image(load_task(folder), image_map)
        assert changed != tag, "a changed build context gets a new tag"
        remove(changed)
    finally:
        remove(tag)


async def test_an_unmapped_missing_base_names_the_image_and_the_option(tmp_path: Path) -> None:
    task = load_task(copy_task(tmp_path, "write-greeting", "FROM nowhere/absent:1\n"))
    with pytest.raises(ImageError) as caught:
        await build_task_image(task, ImageMap(), offline=True)
    message = str(caught.value)
    assert "nowhere/absent:1" in message
    assert "image_map" in message
    assert "\n" not in message


async def test_a_failing_step_is_an_image_error_naming_the_task(tmp_path: Path) -> None:
    task = load_task(copy_task(tmp_path, "write-greeting", f"FROM {DEFAULT_IMAGE}\nRUN exit 7\n"))
    with pytest.raises(ImageError, match="task write-greeting: image build on docker failed"):
        await build_task_image(task, ImageMap())


async def test_a_prebuilt_image_is_used_through_the_map(tmp_path: Path) -> None:
    folder = copy_task(tmp_path, "write-greeting")
    (folder / "environment" / "Dockerfile").unlink()
    (folder / "task.toml").write_text('[environment]\ndocker_image = "vendor/prebuilt:2"\n')
    task = load_task(folder)
    with pytest.raises(ImageError, match="vendor/prebuilt:2"):
        await build_task_image(task, ImageMap(), offline=True)
    mapped = ImageMap.parse([f"vendor/prebuilt:2={DEFAULT_IMAGE}"])
    assert await build_task_image(task, mapped) == DEFAULT_IMAGE
