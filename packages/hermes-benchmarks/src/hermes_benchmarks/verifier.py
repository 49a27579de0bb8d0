"""Running a task's tests: in the agent's sandbox (shared mode) or in a fresh one (separate).

Verification that cannot be gamed. Shared mode (:func:`verify`): the caller has already
killed every process the agent started (``Sandbox.stop_processes``); here
``/logs/verifier`` is emptied and ``/tests`` removed and uploaded fresh from the task
folder (the agent never saw them), then ``bash /tests/test.sh`` runs in a fresh bash
outside the agent's shell session (no variable, function or ``PATH`` change of the agent
reaches it) under the verifier's timeout. The reward is read from what the tests wrote; a
missing or unreadable reward is a verifier failure, never a 0.

Separate mode (:func:`verify_separately`): the tests run in a new sandbox from the
verifier's image (:func:`~hermes_benchmarks.images.build_verifier_image`) with the
verifier's CPUs and memory and the network off; it receives only what the trial kept
(``/logs/artifacts`` and the declared artifacts, restored at their paths), so nothing
else the agent did — files, processes, a planted ``/tests`` or reward — can reach it.
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Callable
from pathlib import Path

from hermes_benchmarks.artifacts import ArtifactManifest, restore_artifacts
from hermes_benchmarks.errors import ArtifactsError, ImageError, RewardError, TrialInfraError
from hermes_benchmarks.images import build_verifier_image
from hermes_benchmarks.reward import REWARD_FILES, parse_reward
from hermes_benchmarks.sandboxes import close_fully, start_sandbox
from hermes_benchmarks.settings import TrialSettings
from hermes_benchmarks.task import Task
from hermes_sandbox import Sandbox, SandboxError

__all__ = ["TESTS_DIR", "VERIFIER_DIR", "verify", "verify_separately"]

log = logging.getLogger(__name__)

#: Where the task's ``tests/`` folder is uploaded just before the verifier runs.
TESTS_DIR = "/tests"
#: Where the tests write their reward (and anything else they log).
VERIFIER_DIR = "/logs/verifier"
#: Seconds allowed for emptying the verifier's folders before the tests run.
PREPARE_TIMEOUT = 60.0


def _tail(text: str, limit: int = 300) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


async def verify(
    task: Task, sandbox: Sandbox, *, timeout: float, upload_tests: bool = True
) -> float:
    """Run ``task``'s tests in ``sandbox`` and return the reward they wrote.

    ``upload_tests=False``: the sandbox's image owns ``/tests`` (a verifier image built
    from ``tests/Dockerfile``); it is left as it is and must hold ``test.sh``.

    Raises:
        TrialInfraError: kind ``verifier_timeout`` when the tests ran past ``timeout``;
            ``verifier_crash`` when the verifier's folders could not be prepared, the
            image owns no ``/tests/test.sh``, or the tests exited non-zero without a
            reward; ``reward_missing`` / ``reward_unreadable`` when they exited cleanly
            without a readable one.
        SandboxError: the sandbox failed under the verifier (the caller's infra failure).
    """
    if upload_tests:
        prepare = f"rm -rf {VERIFIER_DIR} {TESTS_DIR} && mkdir -p {VERIFIER_DIR} {TESTS_DIR}"
    else:
        prepare = (
            f"rm -rf {VERIFIER_DIR} && mkdir -p {VERIFIER_DIR} && {{ [ -f {TESTS_DIR}/test.sh ]"
            f" || {{ echo 'the verifier image has no {TESTS_DIR}/test.sh: its Dockerfile must "
            f"COPY the tests there'; exit 1; }}; }}"
        )
    prepared = await sandbox.exec(prepare, timeout=PREPARE_TIMEOUT, session=False)
    if prepared.exit_code != 0:
        raise TrialInfraError(
            "verifier_crash",
            f"could not prepare {VERIFIER_DIR} and {TESTS_DIR}: {_tail(prepared.output)}",
        )
    if upload_tests:
        await sandbox.upload_dir(task.tests_dir, TESTS_DIR)
    exports = "".join(
        f"export {name}={shlex.quote(value)}; " for name, value in task.config.verifier.env.items()
    )
    ran = await sandbox.exec(f"{exports}bash {TESTS_DIR}/test.sh", timeout=timeout, session=False)
    if ran.timed_out:
        raise TrialInfraError("verifier_timeout", f"the tests ran past their {timeout:g}s timeout")
    files: dict[str, bytes | None] = {}
    for name in REWARD_FILES:
        try:
            files[name] = await sandbox.read_file(f"{VERIFIER_DIR}/{name}")
        except (FileNotFoundError, IsADirectoryError):
            files[name] = None
    try:
        return parse_reward(files)
    except RewardError as error:
        if ran.exit_code != 0 and error.kind == "reward_missing":
            raise TrialInfraError(
                "verifier_crash",
                f"the tests exited with status {ran.exit_code} and wrote no reward: "
                f"{_tail(ran.output)}",
            ) from None
        raise TrialInfraError(error.kind, str(error)) from None


async def verify_separately(
    task: Task,
    folder: Path,
    manifest: ArtifactManifest,
    settings: TrialSettings,
    *,
    task_id: str,
    lap: Callable[[str], None] | None = None,
) -> float:
    """Run ``task``'s tests in a fresh verifier sandbox holding only the artifacts kept in
    ``folder``; the reward they wrote. The sandbox is closed whatever happens.

    The verifier's image and limits: ``[verifier.environment]`` (its ``docker_image``,
    or ``tests/Dockerfile``, and its CPUs and memory), else the task's own image and
    ``[environment]`` limits. Its timeout is ``[verifier] timeout_sec`` x the settings'
    multiplier. ``lap`` is called with ``verifier_image``, ``verifier_start`` and
    ``verifier`` as each step ends (for the trial's timings).

    Raises:
        TrialInfraError: kind ``image_build`` when the verifier's image cannot be had;
            ``verifier_crash`` when its sandbox does not start, the artifacts cannot be
            restored, or the sandbox fails under the tests; otherwise as :func:`verify`.
    """
    tick = lap or (lambda _step: None)
    config = task.config
    timeout = config.verifier.timeout_sec * settings.timeout_multiplier
    base_url = settings.sandbox_options.get("base_url")
    try:
        image = await build_verifier_image(
            task,
            settings.image_map,
            timeout_multiplier=settings.timeout_multiplier,
            base_url=base_url,
            offline=settings.offline_builds,
            build_network=settings.build_network,
        )
    except (ImageError, SandboxError) as error:
        raise TrialInfraError("image_build", f"verifier image: {error}") from None
    finally:
        tick("verifier_image")
    limits = config.verifier.environment or config.environment
    try:
        sandbox = await start_sandbox(
            settings.backend,
            settings.sandbox_options,
            task_id=task_id,
            image={"image": image.tag},
            cpus=limits.cpus,
            memory_mb=limits.memory_mb,
            lifetime=timeout,
        )
    except (SandboxError, ValueError) as error:
        raise TrialInfraError(
            "verifier_crash",
            f"the verifier's sandbox did not start: {type(error).__name__}: {error}",
        ) from None
    finally:
        tick("verifier_start")
    try:
        await restore_artifacts(manifest, folder, sandbox)
        return await verify(task, sandbox, timeout=timeout, upload_tests=not image.owns_tests)
    except ArtifactsError as error:
        raise TrialInfraError("verifier_crash", str(error)) from None
    except SandboxError as error:
        raise TrialInfraError("verifier_crash", f"{type(error).__name__}: {error}") from None
    finally:
        try:
            await close_fully(sandbox)
        except Exception as error:  # the verdict stands; the backend reaps the container
            log.warning("could not close verifier sandbox %s: %s", task_id, error)
        tick("verifier")
