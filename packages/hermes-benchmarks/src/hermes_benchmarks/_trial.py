"""One trial: a task's image, a sandbox, the agent under its timeout, the verifier.

The steps of an attempt, each timed (``timings``: ``image``, ``sandbox_start``,
``agent``, ``artifacts``, ``verifier``, ``teardown``, plus ``verifier_image`` and
``verifier_start`` in separate mode and ``services`` for a task with a compose file, in
seconds) and each with the infrastructure failure kind it stops the attempt with:

1. image: :func:`~hermes_benchmarks.images.prepare_task_image` (cached; built on docker,
   or by Modal or Daytona when they are the backend) — ``image_build``;
   services (a task whose ``environment/docker-compose.yaml`` declares them; docker
   only): their images prepared the same way (``image_build``), then started on a
   network of their own and waited for as ``main``'s ``depends_on`` asks
   (``sandbox_start``); the sandbox joins that network and reaches each by its name;
   they are removed after the sandbox;
2. sandbox on the chosen backend from that image, with the task's CPUs and memory, its
   ``[environment] env`` and ``workdir`` (none: where the image says) — ``sandbox_start``;
3. the agent on the instruction, cancelled at ``[agent] timeout_sec`` x multiplier; it
   raising :class:`TrialInfraError` keeps its kind (``model_endpoint``), anything else
   is ``agent_crash``. The processes it started keep running (services the tests probe,
   as in harbor);
4. the artifacts are kept (:func:`~hermes_benchmarks.artifacts.collect_artifacts`:
   ``/logs/artifacts`` and the declared ones) when the run keeps them (``output_dir``)
   or the task verifies separately;
5. shared mode: the agent's changes to the system are read from the daemon
   (:func:`~hermes_benchmarks.changes.system_changes`, the ``integrity`` timing) and the
   tests run in the same sandbox (:func:`~hermes_benchmarks._verifier.verify`, reward read
   twice); separate mode: the agent's sandbox is closed and the tests run in a fresh one
   holding only the kept artifacts (:func:`~hermes_benchmarks._verifier.verify_separately`).

What the agent did is scored: a verifier that ends without a readable reward, a reward
changed after the tests, tests past their timeout, and a sandbox stopped from inside
while its daemon answers (the agent killed its keeper) are a ``fail`` with reward 0 and
their ``error_kind`` (:data:`~hermes_benchmarks.verdicts.SCORED_KINDS`). Only what the
infrastructure did is an ``infra_error``.

The sandboxes are closed whatever happens (cancellation included); given a
:class:`Teardowns`, the agent's sandbox is closed in the background once the verdict is
known (the run awaits them all before it ends: the next trial starts meanwhile, and the
``teardown`` timing is then only the time the trial waited, about 0). Infrastructure
failures are retried ``infra_retries`` times; every attempt is kept in the result. With
``output_dir``, the last attempt's artifact folder becomes ``output_dir/artifacts/<task>/
<trial>`` in one rename (named in the result's ``artifacts``); a declared artifact the
agent did not leave is listed in ``extra["missing_artifacts"]``.

**Agent timeout.** As in harbor and on the Terminal-Bench leaderboard, an agent that runs
out of time is stopped and verified as it stands: the tests decide pass or fail, and the
result says ``extra["agent_timed_out"] = True``. Running out of time is the model's
doing, so it is scored; it is not retried and never counted as an infrastructure
failure (which would hide slow models from the score).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_benchmarks._agents import Agent
from hermes_benchmarks._clock import Clock
from hermes_benchmarks._errors import TrialInfraError
from hermes_benchmarks._opening import attempt_lifetime, attempt_task_id, open_attempt
from hermes_benchmarks._record import TrialRecord, agent_secrets, recording
from hermes_benchmarks._results import (
    Attempt,
    TrialResult,
    TrialStatus,
    failed_attempt,
    infra_attempt,
)
from hermes_benchmarks._settings import TrialSettings
from hermes_benchmarks._start_ahead import StartedAhead
from hermes_benchmarks._task import Task
from hermes_benchmarks._teardowns import Teardowns, close_all, close_sandbox
from hermes_benchmarks._verifier import REWARD_SETTLE, verify, verify_separately
from hermes_benchmarks.artifacts import ArtifactManifest, collect_artifacts, promote_folder
from hermes_benchmarks.changes import SystemChanges, system_changes
from hermes_benchmarks.verdicts import ScoredFailure, sandbox_gone
from hermes_sandbox import Sandbox, SandboxError

if TYPE_CHECKING:
    from hermes_sandbox.backends.docker import ServiceGroup

__all__ = [
    "ARTIFACTS_DIR",
    "TrialSettings",
    "reverify_trial",
    "run_attempt",
    "run_trial",
]

log = logging.getLogger(__name__)

#: The folder of a run's ``output_dir`` holding each trial's kept artifacts.
ARTIFACTS_DIR = "artifacts"


async def _agent(agent: Agent, task: Task, sandbox: Sandbox, timeout: float) -> bool:
    """Run the agent; whether it timed out."""
    try:
        async with asyncio.timeout(timeout):
            await agent.run(task, sandbox, timeout=timeout)
    except TimeoutError:
        return True
    except TrialInfraError:
        raise
    except Exception as error:  # the agent's own failure: anything may go wrong
        raise TrialInfraError("agent_crash", f"{type(error).__name__}: {error}") from error
    return False


async def _keep(
    task: Task, sandbox: Sandbox, staging: Path, separate: bool
) -> ArtifactManifest | None:
    """The artifacts copied into ``staging``; a failure stops a separate-mode attempt
    (its verifier needs them) and only loses them in shared mode."""
    try:
        return await collect_artifacts(task, sandbox, staging)
    except (SandboxError, OSError) as error:
        if separate:
            raise TrialInfraError(
                "verifier_crash",
                f"could not copy the artifacts out of the agent's sandbox: "
                f"{type(error).__name__}: {error}",
            ) from None
        log.warning("could not keep the artifacts of %s: %s", task.name, error)
        return None


async def _attributed(sandbox: Sandbox | None, error: Exception, kind: str) -> Attempt | None:
    """A scored ``sandbox_died`` attempt when ``sandbox`` is gone while its backend
    answers (the agent stopped it from inside); None when the failure stays ``kind``."""
    if sandbox is None:
        return None
    if await sandbox_gone(sandbox, error):
        return failed_attempt(
            "sandbox_died", f"the agent's sandbox stopped during the trial ({kind}: {error})"
        )
    return None


async def _finish(diffing: asyncio.Future[SystemChanges | None]) -> SystemChanges | None:
    """The changes read, or None when reading them failed or was not needed (it is
    cancelled if still under way)."""
    if not diffing.done():
        diffing.cancel()
    await asyncio.wait({diffing})
    if diffing.cancelled() or diffing.exception() is not None:
        return None
    return diffing.result()


def _graded(reward: float, timings: dict[str, float]) -> Attempt:
    """The attempt whose tests wrote ``reward``: a pass at 1 or more, else a fail."""
    status: TrialStatus = "pass" if reward >= 1.0 else "fail"
    return Attempt(status=status, reward=reward, timings=timings)


async def _retried(retries: int, attempt: Callable[[int], Awaitable[Attempt]]) -> list[Attempt]:
    """``attempt(0)``, ``attempt(1)``, ... while each is an infrastructure failure, at most
    ``1 + retries`` of them; every attempt made, in order."""
    attempts: list[Attempt] = []
    for number in range(retries + 1):
        attempts.append(await attempt(number))
        if attempts[-1].status != "infra_error":
            break
    return attempts


async def run_attempt(
    task: Task,
    agent: Agent,
    settings: TrialSettings,
    *,
    task_id: str,
    staging: Path | None = None,
    teardowns: Teardowns | None = None,
    ahead: StartedAhead | None = None,
) -> tuple[Attempt, bool, ArtifactManifest | None]:
    """One attempt at a trial: its verdict, whether the agent ran out of time, and the
    manifest of the artifacts kept in ``staging`` (None when none were kept).

    ``staging``: the folder to keep the artifacts in; required for a separate-mode task.
    ``teardowns``: where the agent's sandbox is closed in the background at the end
    (default: it is closed before this returns). ``ahead``: the sandbox started ahead for
    this attempt (:mod:`~hermes_benchmarks._start_ahead`), taken instead of starting one.
    Never raises for infrastructure failures (they are the attempt's ``infra_error``) or
    scored failures (status ``fail``, reward 0, an ``error_kind``); only cancellation
    propagates, after every sandbox is closed. In shared mode on docker the attempt
    holds the agent's system changes and the reasons they make it suspect.

    Raises:
        ValueError: the task verifies separately and no ``staging`` folder is given.
    """
    config = task.config
    separate = config.verifier.environment_mode == "separate"
    if separate and staging is None:
        raise ValueError(f"task {task.name} verifies separately: give a staging folder")
    clock = Clock()
    agent_timeout = config.agent.timeout_sec * settings.timeout_multiplier
    verifier_timeout = config.verifier.timeout_sec * settings.timeout_multiplier
    sandbox: Sandbox | None = None
    services: ServiceGroup | None = None
    timed_out = False
    manifest: ArtifactManifest | None = None
    changes: SystemChanges | None = None
    diffing: asyncio.Future[SystemChanges | None] | None = None
    record = TrialRecord(staging, secrets=agent_secrets(agent)) if staging is not None else None
    try:
        opened = await ahead.take(clock, teardowns) if ahead is not None else None
        if opened is None:
            opened = await open_attempt(
                task,
                settings,
                task_id=task_id,
                clock=clock,
                lifetime=attempt_lifetime(task, settings),
            )
        sandbox, services = opened.sandbox, opened.services
        open_session = getattr(sandbox, "open_session", None)
        if not separate and callable(open_session):
            # The root shell the verifier's steps run in opens while the agent works (on
            # docker, opening one is a ``docker exec``): none when the agent's own is root.
            open_session("0")
        with clock.step("agent"), recording(record):
            timed_out = await _agent(agent, task, sandbox, agent_timeout)
        if not separate:
            # The agent's changes are read (through the daemon) while its artifacts are
            # kept and the tests put in place, and before the tests start (so that
            # nothing the tests write is counted).
            diffing = asyncio.ensure_future(system_changes(sandbox))
        if staging is not None:
            with clock.step("artifacts"):
                manifest = await _keep(task, sandbox, staging, separate)
        if separate and staging is not None and manifest is not None:
            closing, sandbox = sandbox, None
            with clock.step("teardown"):
                await close_sandbox(closing, task_id)
            reward = await verify_separately(
                task,
                staging,
                manifest,
                settings,
                task_id=f"{task_id}-v",
                lap=clock.lap,
                record=record,
            )
        else:
            if diffing is None:
                diffing = asyncio.ensure_future(system_changes(sandbox))
            with clock.step("verifier"):
                try:
                    reward = await verify(
                        task,
                        sandbox,
                        timeout=verifier_timeout,
                        settle=REWARD_SETTLE,
                        before_tests=diffing,
                        lap=clock.lap,
                        record=record,
                    )
                except SandboxError as error:
                    raise TrialInfraError(
                        "verifier_crash", f"{type(error).__name__}: {error}"
                    ) from None
                finally:
                    changes = await _finish(diffing)
    except ScoredFailure as failure:
        died = None
        if failure.kind == "tests_blocked":  # refused because the container is stopping?
            died = await _attributed(sandbox, failure, failure.kind)
        attempt = died or failed_attempt(failure.kind, str(failure))
    except TrialInfraError as error:
        died = None
        if error.kind in ("agent_crash", "verifier_crash"):
            died = await _attributed(sandbox, error, error.kind)
        attempt = died or infra_attempt(error.kind, str(error), clock.timings)
    except SandboxError as error:  # the sandbox failed under the agent or its artifacts
        died = await _attributed(sandbox, error, "agent_crash")
        attempt = died or infra_attempt(
            "agent_crash", f"{type(error).__name__}: {error}", clock.timings
        )
    else:
        attempt = _graded(reward, clock.timings)
    finally:
        if diffing is not None and not diffing.done():
            await _finish(diffing)
        if sandbox is not None or services is not None:
            with clock.step("teardown"):
                if teardowns is not None:
                    teardowns.close(sandbox, task_id, services)
                else:
                    await close_all(sandbox, services, task_id)
    update: dict[str, Any] = {"timings": dict(clock.timings)}
    if changes is not None:
        update.update(
            system_changes=changes.changes,
            system_changes_total=changes.total,
            suspect_reasons=changes.reasons,
        )
    return attempt.model_copy(update=update), timed_out, manifest


async def run_trial(
    task: Task,
    agent: Agent,
    settings: TrialSettings,
    *,
    trial: int,
    run_id: str = "",
    output_dir: str | os.PathLike[str] | None = None,
    teardowns: Teardowns | None = None,
    ahead: StartedAhead | None = None,
) -> TrialResult:
    """Run ``trial`` of ``task`` with ``agent``: up to ``1 + infra_retries`` attempts.

    The result's verdict is that of the last attempt; every attempt is kept. With
    ``output_dir``, the artifacts of the last attempt are kept in
    ``output_dir/artifacts/<task>/<trial>`` (its path relative to ``output_dir`` is the
    result's ``artifacts``); a separate-mode task without ``output_dir`` keeps them in a
    temporary folder removed at the end. ``teardowns``: where the attempts' sandboxes are
    closed in the background (the caller awaits :meth:`Teardowns.wait` before its run
    ends); by default each is closed before its attempt returns. ``ahead``: the sandbox
    started ahead for the first attempt (a run's :class:`~hermes_benchmarks._start_ahead.
    StartsAhead`), which it takes (a retry starts its own).

    Raises:
        OSError: the artifact folder could not be moved into place (disk full, say).
    """
    scratch: Path | None = None
    keep = Path(output_dir) / ARTIFACTS_DIR / task.name if output_dir is not None else None
    if keep is not None:
        await asyncio.to_thread(_clear_partials, keep, trial)
        base: Path | None = keep
    elif task.config.verifier.environment_mode == "separate":
        scratch = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="hermes-bench-art-"))
        base = scratch
    else:
        base = None
    stagings: list[Path] = []
    manifest: ArtifactManifest | None = None
    timed_out = False
    kept: str | None = None

    async def attempt(number: int) -> Attempt:
        nonlocal timed_out, manifest
        task_id = attempt_task_id(run_id, task, trial, number)
        staging = None
        if base is not None:
            staging = base / f".{trial}.partial-{uuid.uuid4().hex[:8]}"
            stagings.append(staging)
        made, timed_out, manifest = await run_attempt(
            task,
            agent,
            settings,
            task_id=task_id,
            staging=staging,
            teardowns=teardowns,
            ahead=ahead if number == 0 else None,
        )
        return made

    try:
        attempts = await _retried(settings.infra_retries, attempt)
        if keep is not None and (manifest is not None or stagings[-1].is_dir()):
            await asyncio.to_thread(promote_folder, stagings[-1], keep / str(trial))
            kept = f"{ARTIFACTS_DIR}/{task.name}/{trial}"
    finally:
        await asyncio.shield(asyncio.to_thread(_remove_all, stagings, scratch))
    extra: dict[str, Any] = {"agent_timed_out": True} if timed_out else {}
    if manifest is not None and manifest.missing:
        extra["missing_artifacts"] = manifest.missing
    return TrialResult.from_attempts(
        task.name,
        trial,
        attempts,
        difficulty=task.difficulty,
        agent=agent.name,
        artifacts=kept,
        extra=extra,
    )


async def reverify_trial(
    task: Task,
    folder: Path,
    original: TrialResult,
    settings: TrialSettings,
    *,
    run_id: str = "",
) -> TrialResult:
    """Verify ``original`` again from the artifacts kept in ``folder``, in a fresh verifier
    sandbox (:func:`~hermes_benchmarks._verifier.verify_separately`), without the agent.

    Up to ``1 + infra_retries`` attempts. The result keeps the original's trial, agent,
    difficulty, artifacts and extra, adds ``extra["rescored_from"]`` (the original
    status and reward) and ``extra["tests_changed"] = True`` when the task's ``tests/``
    differ from those the run had, and has the new verdict and attempts.

    Raises:
        ArtifactsError: ``folder`` holds no artifact manifest.
    """
    manifest = await asyncio.to_thread(ArtifactManifest.load, folder)

    async def attempt(number: int) -> Attempt:
        clock = Clock()
        task_id = f"{run_id or 'rescore'}-{task.name}-{original.trial}-r{number}"
        try:
            reward = await verify_separately(
                task, folder, manifest, settings, task_id=task_id, lap=clock.lap
            )
        except ScoredFailure as failure:
            made = failed_attempt(failure.kind, str(failure))
            return made.model_copy(update={"timings": dict(clock.timings)})
        except TrialInfraError as error:
            return infra_attempt(error.kind, str(error), clock.timings)
        return _graded(reward, clock.timings)

    attempts = await _retried(settings.infra_retries, attempt)
    extra = dict(original.extra)
    extra["rescored_from"] = {"status": original.status, "reward": original.reward}
    if manifest.tests_hash is not None and manifest.tests_hash != task.tests_hash():
        extra["tests_changed"] = True
    return TrialResult.from_attempts(
        task.name,
        original.trial,
        attempts,
        difficulty=original.difficulty,
        agent=original.agent,
        artifacts=original.artifacts,
        extra=extra,
    )


def _clear_partials(keep: Path, trial: int) -> None:
    """Remove the unfinished artifact folders a killed run left for ``trial``."""
    if keep.is_dir():
        for leftover in keep.glob(f".{trial}.partial-*"):
            shutil.rmtree(leftover, ignore_errors=True)


def _remove_all(stagings: list[Path], scratch: Path | None) -> None:
    for folder in [*stagings, *([scratch] if scratch else [])]:
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
