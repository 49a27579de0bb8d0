"""The docker backend's hooks around its sandboxes: preparing an image (pulled, or built
from a Dockerfile and its context) and removing what a run left (its containers, by run
label). ``DockerSandbox.prepare_image`` and ``DockerSandbox.reap_run`` call these."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_sandbox._lifecycle import ImageSource, PreparedImage
from hermes_sandbox.backends.docker._cleanup import remove_containers, remove_networks
from hermes_sandbox.backends.docker._daemon import DockerDaemon
from hermes_sandbox.backends.docker._dockerfile import build_dockerfile_image
from hermes_sandbox.backends.docker._errors import DockerUnreachableError
from hermes_sandbox.backends.docker._labels import LABEL_RUN
from hermes_sandbox.backends.docker._pull import PULL_ATTEMPTS, PULL_WAIT, ensure_reference

__all__ = ["DockerImageOptions", "prepare_docker_image", "reap_docker_run"]


@dataclass(frozen=True)
class DockerImageOptions:
    """What the docker backend's hooks read from the run's options.

    Attributes:
        base_url: the daemon (default ``$DOCKER_HOST`` or the local socket).
        docker_config: the docker client configuration holding registry credentials
            (default: the docker client's, ``~/.docker/config.json``).
        pull_attempts, pull_wait: attempts at a pull that fails in a way that may pass,
            and the seconds before the first retry (doubling).
    """

    base_url: str | None = None
    docker_config: str | os.PathLike[str] | None = None
    pull_attempts: int = PULL_ATTEMPTS
    pull_wait: float = PULL_WAIT

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None) -> DockerImageOptions:
        """The options of that name in ``options`` (others are left to other readers).

        Raises:
            ValueError: one of them has the wrong type.
        """
        given = dict(options or {})
        made = cls(
            base_url=given.get("base_url"),
            docker_config=given.get("docker_config"),
            pull_attempts=given.get("pull_attempts", PULL_ATTEMPTS),
            pull_wait=given.get("pull_wait", PULL_WAIT),
        )
        if made.base_url is not None and not isinstance(made.base_url, str):
            raise ValueError(f"docker: option 'base_url' must be a string, got {made.base_url!r}")
        if made.docker_config is not None and not isinstance(made.docker_config, str | Path):
            raise ValueError(
                f"docker: option 'docker_config' must be a path, got {made.docker_config!r}"
            )
        if not isinstance(made.pull_attempts, int) or made.pull_attempts < 1:
            raise ValueError(
                f"docker: option 'pull_attempts' must be an int of at least 1, "
                f"got {made.pull_attempts!r}"
            )
        if not isinstance(made.pull_wait, int | float) or made.pull_wait < 0:
            raise ValueError(f"docker: option 'pull_wait' must be >= 0, got {made.pull_wait!r}")
        return made


async def prepare_docker_image(
    source: ImageSource, options: Mapping[str, Any] | None = None
) -> PreparedImage:
    """``source`` on the daemon: a reference pulled when absent (unless offline), a
    Dockerfile built (see ``build_dockerfile_image``: cached by its inputs and its
    bases' ids); the ``image`` option that selects it.

    Raises:
        ValueError: an option of ``DockerImageOptions`` has the wrong type.
        ImageUnavailableError: an image is absent and offline, or its pull failed.
        ImageBuildError: the build failed or ran past ``source.timeout``.
        DockerUnreachableError: the daemon does not answer.
    """
    chosen = DockerImageOptions.from_options(options)
    if source.reference is not None:
        reference = source.reference
        daemon = await DockerDaemon.connect(chosen.base_url)
        try:
            await daemon.call(
                ensure_reference,
                daemon.api,
                reference,
                offline=source.offline,
                docker_config=chosen.docker_config,
                on_progress=source.on_progress,
                attempts=chosen.pull_attempts,
                wait=chosen.pull_wait,
            )
        finally:
            daemon.close()
        return PreparedImage(reference, {"image": reference})
    assert source.context is not None  # ImageSource holds one of the two
    tag = await build_dockerfile_image(
        source.context,
        source.name,
        dockerfile_text=source.dockerfile_text,
        timeout=source.timeout,
        network=source.network,
        base_url=chosen.base_url,
        docker_config=chosen.docker_config,
        on_progress=source.on_progress,
        pull_attempts=chosen.pull_attempts,
        pull_wait=chosen.pull_wait,
    )
    return PreparedImage(tag, {"image": tag})


async def reap_docker_run(run_id: str, options: Mapping[str, Any] | None = None) -> int:
    """Remove every container of this package labelled with run ``run_id``, then the
    service networks of that run left unused; how many containers were removed. A daemon
    that does not answer removes nothing.

    Raises:
        ValueError: an empty ``run_id`` or a bad ``base_url``.
    """
    if not run_id:
        raise ValueError("run_id must be a non-empty run id")
    chosen = DockerImageOptions.from_options(options)
    try:
        removed = await asyncio.to_thread(
            remove_containers, labels={LABEL_RUN: run_id}, base_url=chosen.base_url
        )
        await asyncio.to_thread(
            remove_networks, labels={LABEL_RUN: run_id}, base_url=chosen.base_url
        )
        return removed
    except DockerUnreachableError:
        return 0
