"""A task's image, prepared by the run's backend: built from the task's Dockerfile or
taken from its prebuilt ``docker_image``, every image reference mapped first.

The harness does not know which backend it has: it describes the image
(:class:`~hermes_sandbox.ImageSource`: the task's ``environment/`` folder with
its Dockerfile rewritten through the run's
:class:`~hermes_benchmarks._image_map.ImageMap`, or the mapped reference) and the backend's
``prepare_image`` class method makes it ready: docker pulls an absent image from its
registry (with the user's docker credentials) or builds the Dockerfile (with the network,
or offline with ``offline_builds``; cached by its inputs and its bases' ids), Modal
builds it in its cloud, Daytona when the sandbox is created (both with the provider's
network, from a context folder kept under ``contexts_dir``). The build tag is
``hermes-bench/<task>:<hash>``, the hash covering the environment folder and the
rewritten Dockerfile. An image that cannot be had fails in one line naming it and the
``image_map`` option.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_benchmarks._compose import ComposeService
from hermes_benchmarks._errors import ImageError
from hermes_benchmarks._image_map import DockerfileBases, ImageMap
from hermes_benchmarks._task import Task
from hermes_sandbox import (
    BuildNetwork,
    ImageSource,
    ImageUnavailableError,
    PreparedImage,
    SandboxError,
    default_backends,
)

if TYPE_CHECKING:
    from hermes_sandbox.backends.docker import ServiceSpec

__all__ = [
    "TaskImage",
    "VerifierImage",
    "build_task_image",
    "build_verifier_image",
    "default_contexts_dir",
    "prepare_service_images",
    "prepare_task_image",
    "show_pull_progress",
    "task_image_tag",
]


@dataclass(frozen=True)
class TaskImage:
    """What a task's sandboxes start from on the run's backend.

    Attributes:
        name: the docker tag (``hermes-bench/<task>:<hash>``; on Modal and Daytona the
            tag the same build has on docker, its cache key), or the prebuilt image.
        options: the ``create_sandbox`` options that select it: ``image``, or
            ``modal_image``, or ``daytona_image`` and ``create_timeout``.
    """

    name: str
    options: Mapping[str, Any] = field(default_factory=dict)


def task_image_tag(task: Task, dockerfile_text: str, *, verifier: bool = False) -> str:
    """``hermes-bench/<task>:<hash of the environment folder and the Dockerfile used>``
    (``hermes-bench/<task>-verifier:<hash of tests/ ...>`` for a verifier image)."""
    tree = task.tests_hash() if verifier else task.environment_hash()
    return _tag(task.name, "-verifier" if verifier else "", tree, dockerfile_text)


def _tag(name: str, suffix: str, tree: str, dockerfile_text: str) -> str:
    """``hermes-bench/<name, docker-safe><suffix>:<hash of tree and dockerfile_text>``."""
    safe = re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-._") or "task"
    digest = hashlib.sha256(f"{tree}\0{dockerfile_text}".encode())
    return f"hermes-bench/{safe}{suffix}:{digest.hexdigest()[:16]}"


@dataclass(frozen=True)
class VerifierImage:
    """The image a separate verifier runs in, and whether that image owns ``/tests``
    (built from ``tests/Dockerfile``: the tests are not uploaded over it)."""

    tag: str
    owns_tests: bool


@dataclass(frozen=True)
class _Build:
    """How the run prepares images: its backend, options and network for builds."""

    backend: str = "docker"
    options: Mapping[str, Any] = field(default_factory=dict)
    offline: bool = False
    build_network: BuildNetwork = "default"
    on_progress: Callable[[str], None] | None = None


#: Pull statuses too fine to show (every layer reports each).
_QUIET_STATUSES = (
    "Pulling fs layer",
    "Waiting",
    "Downloading",
    "Verifying Checksum",
    "Download complete",
    "Extracting",
    "Already exists",
)


def show_pull_progress(line: str) -> None:
    """The default ``on_progress``: a pull's start, each layer it completes, its end and
    its retries go to stderr (above the live bar, which shows what is printed there);
    build steps and a layer's finer statuses are left out."""
    if not line.startswith("pull ") or line.rstrip().endswith(_QUIET_STATUSES):
        return
    sys.stderr.write(f"hermes-bench: {line}\n")


def _unavailable(task: Task, what: str, error: ImageUnavailableError) -> ImageError:
    """One line naming the image, why it could not be had, and ``image_map``."""
    image = error.reference
    return ImageError(
        f"task {task.name}: {what} needs {image}, which could not be had ({error}); build, "
        f"load or pull it, or map it to an image you have with image_map (e.g. "
        f"--env.image_map '[\"{image}=hermes-sandbox/debian:bookworm\"]')"
    )


async def _prepare(task: Task, source: ImageSource, how: _Build, what: str) -> PreparedImage:
    """``source`` prepared on the run's backend.

    Raises:
        ImageError: the image could not be had, naming the task (and, for an image that
            is absent and cannot be pulled, the image and ``image_map``); also when the
            backend cannot be reached (the docker daemon does not answer) or one of its
            image options is wrong.
    """
    try:
        backend = default_backends.get(how.backend)
        return await backend.prepare_image(source, how.options)
    except ImageUnavailableError as error:
        raise _unavailable(task, what, error) from None
    except SandboxError as error:
        raise ImageError(
            f"task {task.name}: {what} build on {how.backend} failed: {error}"
        ) from None
    except ValueError as error:  # an option of the backend's image options
        raise ImageError(f"task {task.name}: {what} on {how.backend}: {error}") from None


async def _source(
    task: Task,
    dockerfile: Path | None,
    prebuilt: str | None,
    mapping: ImageMap,
    timeout: float,
    how: _Build,
    *,
    verifier: bool,
) -> ImageSource:
    """What to prepare: the mapped ``prebuilt`` reference, else ``dockerfile`` rewritten.

    Raises:
        ImageError: an image reference names a variable no ``ARG`` default sets.
    """
    common: dict[str, Any] = {
        "timeout": timeout,
        "offline": how.offline,
        "build_network": how.build_network,
        "on_progress": how.on_progress,
    }
    if prebuilt:
        image = mapping.resolve(prebuilt)
        return ImageSource(image, reference=image, **common)
    if dockerfile is None:
        raise ImageError(f"task {task.name} has neither a Dockerfile nor a docker_image")
    rewritten = await _rewritten(task, dockerfile, mapping)
    tag = task_image_tag(task, rewritten.text, verifier=verifier)
    return ImageSource(tag, context=dockerfile.parent, dockerfile_text=rewritten.text, **common)


async def _rewritten(task: Task, dockerfile: Path, mapping: ImageMap) -> DockerfileBases:
    """``dockerfile`` (the task's or its verifier's) with its images mapped.

    Raises:
        ImageError: an image reference names a variable no ``ARG`` default sets.
    """
    original = await asyncio.to_thread(dockerfile.read_text, encoding="utf-8")
    rewritten = mapping.rewrite_dockerfile(original)
    if rewritten.unresolved:
        raise ImageError(
            f"task {task.name}: the image {rewritten.unresolved[0]} in its Dockerfile uses a "
            "variable no ARG default sets; give the ARG a default in the Dockerfile"
        )
    return rewritten


async def build_task_image(
    task: Task,
    image_map: ImageMap | None = None,
    *,
    timeout_multiplier: float = 1.0,
    base_url: str | None = None,
    offline: bool = False,
    build_network: BuildNetwork = "default",
) -> str:
    """The docker image tag to run ``task`` in, pulled or built first when needed
    (:func:`prepare_task_image` on the docker backend at ``base_url``).

    Raises:
        ImageError: an image is absent and cannot be pulled (offline, no such image,
            refused credentials) or a reference holds an unresolvable variable (one line
            naming it and ``image_map``), or the build failed or ran past
            ``build_timeout_sec * timeout_multiplier`` (the message holds the step).
    """
    image = await prepare_task_image(
        task,
        image_map,
        timeout_multiplier=timeout_multiplier,
        sandbox_options={"base_url": base_url} if base_url else {},
        offline=offline,
        build_network=build_network,
    )
    return image.name


async def build_verifier_image(
    task: Task,
    image_map: ImageMap | None = None,
    *,
    timeout_multiplier: float = 1.0,
    base_url: str | None = None,
    offline: bool = False,
    build_network: BuildNetwork = "default",
    backend: str = "docker",
    sandbox_options: Mapping[str, Any] | None = None,
) -> VerifierImage:
    """The image ``task``'s separate verifier runs in, prepared first when needed.

    ``[verifier.environment] docker_image`` when given (mapped; pulled when absent
    unless ``offline``); else ``tests/Dockerfile`` built with ``tests/`` as its context
    (the image owns ``/tests``); else the task's own image, also when
    ``[verifier.environment]`` only sets limits (harbor refuses that case; here it means
    "the task's image with the verifier's CPUs and memory").

    Raises:
        ImageError: as :func:`build_task_image`, for whichever image is used.
    """
    mapping = image_map or ImageMap()
    options = {**(sandbox_options or {}), **({"base_url": base_url} if base_url else {})}
    how = _Build(backend, options, offline, build_network, show_pull_progress)
    section = task.config.verifier.environment
    dockerfile = task.verifier_dockerfile
    if (section is None or not section.docker_image) and dockerfile is None:
        image = await _task_image(task, mapping, timeout_multiplier, how)
        return VerifierImage(image.name, False)
    limits = section or task.config.environment
    timeout = limits.build_timeout_sec * timeout_multiplier
    prebuilt = section.docker_image if section is not None else None
    source = await _source(task, dockerfile, prebuilt, mapping, timeout, how, verifier=True)
    prepared = await _prepare(task, source, how, "verifier image")
    return VerifierImage(prepared.name, not prebuilt)


async def _task_image(
    task: Task, mapping: ImageMap, timeout_multiplier: float, how: _Build
) -> PreparedImage:
    config = task.config.environment
    timeout = config.build_timeout_sec * timeout_multiplier
    source = await _source(
        task, task.dockerfile, config.docker_image, mapping, timeout, how, verifier=False
    )
    return await _prepare(task, source, how, "image")


def default_contexts_dir() -> Path:
    """Where the build contexts of Modal and Daytona images are kept:
    ``$XDG_CACHE_HOME/hermes-bench/build-contexts`` (``~/.cache`` by default)."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "hermes-bench" / "build-contexts"


async def prepare_task_image(
    task: Task,
    image_map: ImageMap | None = None,
    *,
    backend: str = "docker",
    timeout_multiplier: float = 1.0,
    sandbox_options: Mapping[str, Any] | None = None,
    contexts_dir: Path | None = None,
    offline: bool = False,
    build_network: BuildNetwork = "default",
    on_progress: Callable[[str], None] | None = None,
) -> TaskImage:
    """The image ``task`` runs in on ``backend``, prepared by that backend's
    ``prepare_image`` (see the module's docstring).

    ``sandbox_options`` are the run's other ``create_sandbox`` options (docker's
    ``base_url``; Modal's ``sdk``, ``client`` and ``app_name``); the backend reads those
    it needs. ``contexts_dir``: where build contexts are kept by backends that build
    later or elsewhere (default :func:`default_contexts_dir`). ``offline``: pull nothing
    and build without a network (air-gapped machines); ``build_network``: the network
    of a networked build's ``RUN`` steps (``default`` or ``host``). ``on_progress`` gets
    the pull and build progress lines (default :func:`show_pull_progress`).

    Raises:
        ImageError: the image could not be had: absent and not pullable (offline, no
            such image, refused credentials: one line naming it and ``image_map``), an
            unresolvable variable in an image reference, the provider's SDK missing, the
            build failed or ran past ``build_timeout_sec * timeout_multiplier`` (one line
            naming the task), or its build context could not be written.
    """
    options = {
        **(sandbox_options or {}),
        "contexts_dir": contexts_dir or default_contexts_dir(),
    }
    how = _Build(backend, options, offline, build_network, on_progress or show_pull_progress)
    prepared = await _task_image(task, image_map or ImageMap(), timeout_multiplier, how)
    return TaskImage(prepared.name, dict(prepared.options))


async def _service_image(
    task: Task, service: ComposeService, mapping: ImageMap, timeout: float, how: _Build
) -> str:
    what = f"service {service.name}'s image"
    common: dict[str, Any] = {
        "timeout": timeout,
        "offline": how.offline,
        "build_network": how.build_network,
        "on_progress": how.on_progress,
    }
    if service.context is None:
        image = mapping.resolve(service.image or "")
        source = ImageSource(image, reference=image, **common)
    else:
        rewritten = await _rewritten(task, service.context / service.dockerfile, mapping)
        # hermes-bench/<task>-<service>:<hash of the task's environment folder and the
        # service's Dockerfile used>
        tag = _tag(f"{task.name}-{service.name}", "", task.environment_hash(), rewritten.text)
        source = ImageSource(
            tag,
            context=service.context,
            dockerfile_text=rewritten.text,
            **common,
        )
    return (await _prepare(task, source, how, what)).name


async def prepare_service_images(
    task: Task,
    image_map: ImageMap | None = None,
    *,
    timeout_multiplier: float = 1.0,
    sandbox_options: Mapping[str, Any] | None = None,
    offline: bool = False,
    build_network: BuildNetwork = "default",
    on_progress: Callable[[str], None] | None = None,
) -> list[ServiceSpec]:
    """The services of ``task``'s compose file (none without one) with their images
    ready on the docker daemon: each built from its context (its Dockerfile's images
    mapped, as the task's own), or its ``image`` mapped and pulled when absent; cached
    as the task's image is.

    Raises:
        ImageError: as :func:`build_task_image`, naming the service.
    """
    if task.compose is None:
        return []
    how = _Build(
        "docker",
        dict(sandbox_options or {}),
        offline,
        build_network,
        on_progress or show_pull_progress,
    )
    mapping = image_map or ImageMap()
    timeout = task.config.environment.build_timeout_sec * timeout_multiplier
    return [
        dataclasses.replace(
            service.spec, image=await _service_image(task, service, mapping, timeout, how)
        )
        for service in task.compose.services
    ]
