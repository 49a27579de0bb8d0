"""Running a task's tests: in the agent's sandbox (shared mode) or in a fresh one (separate).

Shared mode (:func:`verify`), as harbor runs it: the agent's processes (the services
it started) keep running; ``/logs/verifier`` is emptied and ``/tests`` removed and
uploaded fresh from the task folder (the agent never saw them), then ``/bin/bash
/tests/test.sh`` runs outside the agent's shell session (no variable, function or
``PATH`` change of the agent's session reaches it) under the verifier's timeout. When the
tests end, a docker sandbox is checked for processes that could still write the reward
(:data:`QUIET_CHECK`); with none left the reward is read once (nothing can change it
any more). Otherwise (and on other backends) it is read at the instant the tests end and
again :data:`REWARD_SETTLE` seconds later (content and time stamp): a change is a
process of the agent writing it, and the trial fails (``reward_tampered``). A missing or
unreadable reward is the tests' verdict: a scored 0 (see :mod:`hermes_benchmarks.verdicts`).

Separate mode (:func:`verify_separately`): the tests run in a new sandbox from the
verifier's image (:func:`~hermes_benchmarks.images.build_verifier_image`) with the
verifier's CPUs and memory and the network off; it receives only what the trial kept
(``/logs/artifacts`` and the declared artifacts, restored at their paths), so nothing
else the agent did — files, processes, a planted ``/tests`` or reward — can reach it.
"""

from __future__ import annotations

import asyncio
import logging
import shlex
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from hermes_benchmarks._errors import ArtifactsError, ImageError, RewardError, TrialInfraError
from hermes_benchmarks._record import TrialRecord
from hermes_benchmarks._reward import REWARD_FILES, parse_reward
from hermes_benchmarks._settings import TrialSettings
from hermes_benchmarks._task import Task
from hermes_benchmarks.artifacts import ArtifactManifest, restore_artifacts
from hermes_benchmarks.images import build_verifier_image
from hermes_benchmarks.sandboxes import close_fully, sandbox_daemon, start_sandbox
from hermes_benchmarks.verdicts import ScoredFailure, backend_answers, sandbox_gone
from hermes_sandbox import ExecResult, FileChangedError, Sandbox, SandboxError

__all__ = ["REWARD_SETTLE", "TESTS_DIR", "VERIFIER_DIR", "verify", "verify_separately"]

log = logging.getLogger(__name__)

#: Where the task's ``tests/`` folder is uploaded just before the verifier runs.
TESTS_DIR = "/tests"
#: Where the tests write their reward (and anything else they log).
VERIFIER_DIR = "/logs/verifier"
#: Seconds allowed for emptying the verifier's folders before the tests run.
PREPARE_TIMEOUT = 60.0
#: Seconds between the two reads of the reward in shared mode (a change is tampering).
REWARD_SETTLE = 0.25
#: A check run as root once the tests have ended in a docker sandbox (bash builtins only:
#: nothing from the container's ``PATH``): exit 0 when no process is left that could
#: still write the reward, i.e. every live process is init (pid 1), the sandbox's keeper
#: (init's earliest child), one the daemon started (parent 0: the command sessions) or
#: one of this check's own session; 1 when another one lives (a service the agent or the
#: tests left, or a process rewriting the reward). Then nothing can change the reward any
#: more (only the harness starts processes), so a single read is final; otherwise it is
#: read twice :data:`REWARD_SETTLE` seconds apart.
QUIET_CHECK = r"""
read -r l < /proc/$$/stat || exit 2
set -- ${l##*") "}
mine=$4 keep= first=
for p in /proc/[0-9]*; do
  read -r l < "$p/stat" 2>/dev/null || continue
  set -- ${l##*") "}
  [ "$2" = 1 ] || continue
  if [ -z "$keep" ] || [ "${20}" -lt "$first" ]; then keep=${p#/proc/} first=${20}; fi
done
for p in /proc/[0-9]*; do
  q=${p#/proc/}
  if [ "$q" = 1 ] || [ "$q" = "$keep" ]; then continue; fi
  read -r l < "$p/stat" 2>/dev/null || continue
  set -- ${l##*") "}
  case $1 in Z|X) continue ;; esac
  if [ "$2" = 0 ] || [ "$4" = "$mine" ]; then continue; fi
  exit 1
done
exit 0
"""
#: The shell the tests run in: an absolute path, not whatever ``bash`` the agent put
#: earlier on PATH.
TEST_SHELL = "/bin/bash"


def _tail(text: str, limit: int = 300) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def _exec_user(sandbox: Sandbox, user: str | int | None) -> dict[str, Any]:
    """The ``exec`` keyword that runs the tests as harbor does: as ``[verifier] user``,
    else as the image's own ``USER`` (not the agent's ``[agent] user``). Empty on a
    backend that cannot switch users (the tests then run as its own user)."""
    if not sandbox.supports_user:
        return {}
    if user is None:
        user = getattr(sandbox, "image_user", "") or "0"
    return {"user": str(user)}


def _as_root(sandbox: Sandbox) -> dict[str, Any]:
    """The ``exec`` keyword that runs the harness's own set-up as root, whatever user the
    agent's commands run as (empty where the backend cannot switch users)."""
    return {"user": "0"} if sandbox.supports_user else {}


async def _reward_file(sandbox: Sandbox, name: str) -> bytes | None:
    """The content of reward file ``name`` (None: absent).

    Raises:
        ScoredFailure: kind ``reward_tampered`` when it kept changing while it was read
            (a process the agent left running rewrites it).
    """
    try:
        return await sandbox.read_file(f"{VERIFIER_DIR}/{name}")
    except (FileNotFoundError, IsADirectoryError):
        return None
    except FileChangedError as error:
        raise ScoredFailure(
            "reward_tampered",
            f"{VERIFIER_DIR}/{name} kept changing while it was read: a process the agent "
            f"left running writes it ({error})",
        ) from None


async def _reward_files(sandbox: Sandbox) -> dict[str, bytes | None]:
    """The reward files' contents (None: absent), read at the same time.

    Raises:
        ScoredFailure: as :func:`_reward_file`.
        SandboxError: a read failed (the first such failure, in file order).
    """
    read = await asyncio.gather(
        *(_reward_file(sandbox, name) for name in REWARD_FILES), return_exceptions=True
    )
    files: dict[str, bytes | None] = {}
    for name, outcome in zip(REWARD_FILES, read, strict=True):
        if isinstance(outcome, BaseException):
            raise outcome
        files[name] = outcome
    return files


async def _reward_times(sandbox: Sandbox) -> dict[str, str | None]:
    """The modification times of the reward files (docker only; empty elsewhere)."""
    container = getattr(sandbox, "container_id", None)
    if sandbox.backend != "docker" or not isinstance(container, str):
        return {}
    daemon = await sandbox_daemon(sandbox)
    try:
        stats = await asyncio.gather(
            *(daemon.stat(container, f"{VERIFIER_DIR}/{name}") for name in REWARD_FILES)
        )
    finally:
        daemon.close()
    return {
        name: None if stat is None else str(stat.get("mtime"))
        for name, stat in zip(REWARD_FILES, stats, strict=True)
    }


async def _reward_state(
    sandbox: Sandbox, timed: bool
) -> tuple[dict[str, bytes | None], dict[str, str | None]]:
    times = await _reward_times(sandbox) if timed else {}
    return await _reward_files(sandbox), times


async def _nothing_left_running(sandbox: Sandbox) -> bool:
    """Whether no process in ``sandbox`` can write the reward any more (docker only, by
    :data:`QUIET_CHECK`; False elsewhere, when the check fails, or when it cannot run)."""
    if sandbox.backend != "docker":
        return False
    try:
        checked = await sandbox.exec(
            QUIET_CHECK, timeout=PREPARE_TIMEOUT, session=False, **_as_root(sandbox)
        )
    except SandboxError:
        return False
    return checked.exit_code == 0 and not checked.timed_out


async def _settled_reward(sandbox: Sandbox, settle: float) -> dict[str, bytes | None]:
    """The reward files once the tests have ended, in shared mode: read once when no
    process is left that could write them (:func:`_nothing_left_running`), else read,
    read again ``settle`` seconds later (content and time stamp) and compared.

    Raises:
        ScoredFailure: kind ``reward_tampered`` when they changed (or kept changing while
            read).
        SandboxError: a read failed.
    """
    if await _nothing_left_running(sandbox):
        return await _reward_files(sandbox)
    files, times = await _reward_state(sandbox, True)
    await asyncio.sleep(settle)
    later_files, later_times = await _reward_state(sandbox, True)
    if later_files != files or later_times != times:
        changed = [
            n
            for n in REWARD_FILES
            if later_files.get(n) != files.get(n) or later_times.get(n) != times.get(n)
        ]
        raise ScoredFailure(
            "reward_tampered",
            f"{VERIFIER_DIR}/{changed[0]} changed after the tests ended: a process the "
            "agent left running writes it",
        )
    return files


async def verify(
    task: Task,
    sandbox: Sandbox,
    *,
    timeout: float,
    upload_tests: bool = True,
    settle: float = 0.0,
    before_tests: Awaitable[object] | None = None,
    lap: Callable[[str], None] | None = None,
    record: TrialRecord | None = None,
) -> float:
    """Run ``task``'s tests in ``sandbox`` and return the reward they wrote.

    ``upload_tests=False``: the sandbox's image owns ``/tests`` (a verifier image built
    from ``tests/Dockerfile``); it is left as it is and must hold ``test.sh``.
    ``settle``: when positive (shared mode, where the agent's processes still run), the
    reward is read once if no process is left that could write it (docker:
    :data:`QUIET_CHECK`), else at the instant the tests end and again ``settle`` seconds
    later; a change of its content or of its time stamp is tampering. ``before_tests``:
    awaited once the tests are in place, before they start (work that must see the
    sandbox as the agent left it, done meanwhile). ``lap`` is called with ``verifier``
    and ``integrity`` as each piece ends (the wait for ``before_tests``, and the check
    with the reads of the reward, are ``integrity``). ``record``: where the tests' output
    (``verifier/test-stdout.txt``) and exit status (``verifier/result.json``) are kept.

    Raises:
        ScoredFailure: kind ``reward_missing`` / ``reward_unreadable`` when the tests
            ended without a readable reward (whatever their exit status),
            ``verifier_timeout`` when they ran past ``timeout`` while the sandbox's
            backend answers, ``reward_tampered`` when the reward changed after they
            ended, ``tests_blocked`` when the agent's sandbox refused the verifier's
            folders (``upload_tests`` and ``settle`` given: shared mode).
        TrialInfraError: kind ``verifier_crash`` when the verifier's folders could not
            be prepared in a fresh sandbox or the image owns no ``/tests/test.sh``;
            ``daemon`` when the tests timed out and the backend does not answer.
        SandboxError: the sandbox failed under the verifier (the caller attributes it);
            also what ``before_tests`` raised.
    """
    tick = lap or (lambda _step: None)
    # The old folder is moved away in one step before it is removed, so a process
    # writing into it cannot make the removal fail (it then writes into the new one,
    # which the second read of the reward catches).
    fresh = (
        f'old={VERIFIER_DIR}.old-$$; rm -rf "$old"; '
        f'{{ [ ! -e {VERIFIER_DIR} ] || mv -T {VERIFIER_DIR} "$old"; }} && rm -rf "$old"'
    )
    if upload_tests:
        prepare = f"{fresh} && rm -rf {TESTS_DIR} && mkdir -p {VERIFIER_DIR} {TESTS_DIR}"
    else:
        prepare = (
            f"{fresh} && mkdir -p {VERIFIER_DIR} && {{ [ -f {TESTS_DIR}/test.sh ]"
            f" || {{ echo 'the verifier image has no {TESTS_DIR}/test.sh: its Dockerfile must "
            f"COPY the tests there'; exit 1; }}; }}"
        )
    prepared = await sandbox.exec(
        prepare, timeout=PREPARE_TIMEOUT, session=False, **_as_root(sandbox)
    )
    if prepared.exit_code != 0:
        message = f"could not prepare {VERIFIER_DIR} and {TESTS_DIR}: {_tail(prepared.output)}"
        if upload_tests and settle > 0:
            raise ScoredFailure("tests_blocked", f"the agent's sandbox {message}")
        raise TrialInfraError("verifier_crash", message)
    if upload_tests:
        await sandbox.upload_dir(task.tests_dir, TESTS_DIR)
    if before_tests is not None:
        tick("verifier")
        await before_tests
        tick("integrity")
    exports = "".join(
        f"export {name}={shlex.quote(value)}; "
        for name, value in task.resolved_env("verifier").items()
    )
    ran = await sandbox.exec(
        f"{exports}{TEST_SHELL} {TESTS_DIR}/test.sh",
        timeout=timeout,
        session=False,
        **_exec_user(sandbox, task.config.verifier.user),
    )
    if record is not None:
        await _keep_output(record, ran)
    if ran.timed_out:
        if sandbox.backend == "docker" and not await backend_answers(sandbox):
            raise TrialInfraError(
                "daemon", f"the tests ran past their {timeout:g}s timeout and the daemon is gone"
            )
        raise ScoredFailure("verifier_timeout", f"the tests ran past their {timeout:g}s timeout")
    tick("verifier")
    if settle > 0:
        files = await _settled_reward(sandbox, settle)
        tick("integrity")
    else:
        files = await _reward_files(sandbox)
    try:
        return parse_reward(files)
    except RewardError as error:
        detail = f" (the tests exited with status {ran.exit_code}: {_tail(ran.output)})"
        raise ScoredFailure(
            error.kind, str(error) + (detail if ran.exit_code != 0 else "")
        ) from None


async def _keep_output(record: TrialRecord, ran: ExecResult) -> None:
    """Keep the tests' output and exit status in the trial's record (a failure to write
    them is logged: the verdict does not depend on them)."""
    try:
        await record.awrite_text("verifier/test-stdout.txt", ran.output)
        await record.awrite_json(
            "verifier/result.json",
            {
                "exit_code": ran.exit_code,
                "timed_out": ran.timed_out,
                "output_truncated": ran.truncated,
            },
        )
    except OSError as error:
        log.warning("could not keep the verifier's output in %s: %s", record.folder, error)


async def verify_separately(
    task: Task,
    folder: Path,
    manifest: ArtifactManifest,
    settings: TrialSettings,
    *,
    task_id: str,
    lap: Callable[[str], None] | None = None,
    record: TrialRecord | None = None,
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
        return await verify(
            task, sandbox, timeout=timeout, upload_tests=not image.owns_tests, record=record
        )
    except ArtifactsError as error:
        raise TrialInfraError("verifier_crash", str(error)) from None
    except SandboxError as error:
        if await sandbox_gone(sandbox):
            raise ScoredFailure(
                "sandbox_died",
                f"the verifier's sandbox stopped under the tests run on the agent's artifacts: "
                f"{type(error).__name__}: {error}",
            ) from None
        raise TrialInfraError("verifier_crash", f"{type(error).__name__}: {error}") from None
    finally:
        try:
            await close_fully(sandbox)
        except Exception as error:  # the verdict stands; the backend reaps the container
            log.warning("could not close verifier sandbox %s: %s", task_id, error)
        tick("verifier")
