"""Conformance provider for the ``docker`` backend: a real dockerd and a locally built image.

``docker_setup()`` (computed once per test process) makes sure a daemon answers: when
none does, it starts ``dockerd`` itself, with its default bridge network (root and Debian's
``docker.io`` needed; CI's ``.ci/services/docker.sh`` normally has one running already)
and stops it again when the test process exits. It then makes sure both images exist,
building what is missing (the debian one needs root + debootstrap and about a minute; the
busybox one seconds). The conformance suite needs the debian image; the docker-specific
tests fall back to the busybox one. ``HERMES_DOCKER_TEST_IMAGE`` picks another image (it
must exist). When nothing works, ``unavailable()`` says why and the tests are skipped.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import pathlib
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from hermes_sandbox import Sandbox, create_sandbox

NAME = "docker"
CAPS = {"process_limit", "network_off", "concurrency_64", "session_escape"}
DAEMON_WAIT = 60.0


@dataclass(frozen=True)
class DockerSetup:
    """What the docker tests run against (``reason`` is set when they cannot run)."""

    reason: str | None = None
    image: str = ""
    small_image: str = ""
    #: Why the debian image is missing (``image`` is then the busybox one, which suits the
    #: docker-specific tests but not the conformance suite's ``exec -a`` process probes).
    image_problem: str | None = None
    started_daemon: bool = False


def _daemon_answers() -> bool:
    from hermes_sandbox.backends.docker import DockerDaemon, DockerUnreachableError

    try:
        DockerDaemon.open().close()
    except DockerUnreachableError:
        return False
    return True


def _start_dockerd() -> str | None:
    """Start a dockerd in the background; None when it answers, else why not."""
    dockerd = shutil.which("dockerd") or (
        "/usr/sbin/dockerd" if os.path.exists("/usr/sbin/dockerd") else None
    )
    if dockerd is None:
        return (
            "no docker daemon answers and dockerd is not installed "
            "(apt-get install docker.io, or run .ci/services/docker.sh)"
        )
    if os.geteuid() != 0:
        return (
            "no docker daemon answers and starting dockerd needs root "
            "(run .ci/services/docker.sh as root)"
        )
    log_path = pathlib.Path(tempfile.gettempdir()) / "hermes-test-dockerd.log"
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [dockerd],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    deadline = time.monotonic() + DAEMON_WAIT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log_path.read_text(errors="replace")[-1500:]
            return f"dockerd exited with {process.returncode}; its log ({log_path}) ends:\n{tail}"
        if _daemon_answers():
            atexit.register(_stop_dockerd, process)
            return None
        time.sleep(0.5)
    _stop_dockerd(process)
    return f"dockerd did not answer within {DAEMON_WAIT:g}s (log: {log_path})"


def _stop_dockerd(process: subprocess.Popen[bytes]) -> None:
    """Stop the dockerd these tests started (only that one, by its pid)."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@functools.cache
def docker_setup() -> DockerSetup:
    """Daemon and images for this test process (computed once)."""
    try:
        # The docker SDK ships no type information (no py.typed, no bundled stubs).
        import docker  # type: ignore[import-untyped]  # noqa: F401
    except ImportError:
        return DockerSetup(
            reason="the docker SDK is not installed (pip install 'hermes-sandbox[docker]')"
        )
    from hermes_sandbox._errors import SandboxError
    from hermes_sandbox.backends.docker import (
        BUSYBOX_IMAGE,
        DEFAULT_IMAGE,
        build_image,
        image_exists,
    )

    started = False
    if not _daemon_answers():
        reason = _start_dockerd()
        if reason is not None:
            return DockerSetup(reason=reason)
        started = True
    try:
        small = build_image("busybox")
    except SandboxError as exc:
        small = ""
        small_error = str(exc)
    else:
        small_error = ""
    chosen = os.environ.get("HERMES_DOCKER_TEST_IMAGE")
    if chosen:
        if not image_exists(chosen):
            return DockerSetup(reason=f"HERMES_DOCKER_TEST_IMAGE={chosen} is not on the daemon")
        return DockerSetup(image=chosen, small_image=small or chosen, started_daemon=started)
    try:
        image = build_image("debian")
    except SandboxError as exc:
        if not small:
            return DockerSetup(
                reason=f"no image can be built: debian: {exc}; busybox: {small_error}"
            )
        return DockerSetup(
            image=BUSYBOX_IMAGE,
            small_image=small,
            image_problem=f"the debian image {DEFAULT_IMAGE} cannot be built here: {exc}",
            started_daemon=started,
        )
    return DockerSetup(image=image, small_image=small or image, started_daemon=started)


def docker_or_skip() -> DockerSetup:
    """:func:`docker_setup`, or the calling test (or fixture) skipped, saying why."""
    found = docker_setup()
    if found.reason:
        pytest.skip(f"docker tests need a daemon and an image: {found.reason}")
    return found


def unavailable() -> str | None:
    """Why the docker backend cannot be tested here, or None."""
    setup = docker_setup()
    return setup.reason or setup.image_problem


def leaked() -> list[str]:
    """Ids of containers this test process started that still exist."""
    from hermes_sandbox.backends.docker import RUN_ID, list_containers

    return list_containers(run_id=RUN_ID)


@contextlib.asynccontextmanager
async def provide(tmp_path: pathlib.Path) -> AsyncIterator[Callable[..., Sandbox]]:
    """A factory of docker sandboxes; afterwards every one is closed and none is left.

    Raises:
        AssertionError: (at exit) if containers of this process outlived their sandboxes.
    """
    from hermes_sandbox.backends.docker import RUN_ID, remove_containers

    setup = docker_setup()
    made: list[Sandbox] = []

    def factory(**options: Any) -> Sandbox:
        sandbox = create_sandbox(NAME, **{"image": setup.image, **options})
        made.append(sandbox)
        return sandbox

    try:
        yield factory
    finally:
        for sandbox in made:
            await sandbox.close()
        left = leaked()
        if left:
            remove_containers(run_id=RUN_ID)
            raise AssertionError(f"docker containers left after every sandbox closed: {left}")
