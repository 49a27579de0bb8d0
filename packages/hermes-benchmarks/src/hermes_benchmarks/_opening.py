"""The first steps of an attempt: the task's image, its services, the agent's sandbox."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes_benchmarks._clock import Clock
from hermes_benchmarks._errors import ImageError, TaskError, TrialInfraError
from hermes_benchmarks._settings import TrialSettings
from hermes_benchmarks._task import Task, user_option
from hermes_benchmarks._teardowns import close_all
from hermes_benchmarks.images import TaskImage, prepare_service_images, prepare_task_image
from hermes_benchmarks.sandboxes import allows_internet, sandbox_network, start_sandbox
from hermes_sandbox import Sandbox, SandboxError, finish

if TYPE_CHECKING:
    from hermes_sandbox.backends.docker import ServiceGroup

__all__ = [
    "OPEN_STEPS",
    "Opened",
    "attempt_lifetime",
    "attempt_task_id",
    "open_attempt",
    "task_options",
]

#: The steps :func:`open_attempt` times, in order.
OPEN_STEPS = ("image", "services", "sandbox_start")


@dataclass(frozen=True)
class Opened:
    """An attempt's started sandbox and the services beside it (None: the task has none)."""

    sandbox: Sandbox
    services: ServiceGroup | None


def attempt_task_id(run_id: str, task: Task, trial: int, number: int) -> str:
    """The sandbox task id of attempt ``number`` of ``trial`` of ``task`` in run ``run_id``."""
    return f"{run_id or 'bench'}-{task.name}-{trial}-{number}"


def attempt_lifetime(task: Task, settings: TrialSettings) -> float:
    """Seconds the agent's sandbox must live: the agent's timeout, and the verifier's when
    the tests run in the same sandbox (both times the multiplier)."""
    config = task.config
    agent = config.agent.timeout_sec * settings.timeout_multiplier
    if config.verifier.environment_mode == "separate":
        return agent
    return agent + config.verifier.timeout_sec * settings.timeout_multiplier


async def open_attempt(
    task: Task,
    settings: TrialSettings,
    *,
    task_id: str,
    clock: Clock,
    lifetime: float,
) -> Opened:
    """The task's image prepared (step ``image``), its compose services started and
    waited for (``services``, when it has them), and the agent's sandbox started from the
    image (``sandbox_start``) with the task's limits, options and network, living at
    least ``lifetime`` seconds (and the backend's margin). When the sandbox fails to start
    (or the caller is cancelled) the services are removed before this raises.

    Raises:
        TrialInfraError: kind ``image_build`` when an image cannot be had;
            ``sandbox_start`` when a service or the sandbox does not start.
    """
    config = task.config
    with clock.step("image"):
        image = await _image(task, settings)
    network = sandbox_network(allows_internet(config.environment), settings.network)
    services: ServiceGroup | None = None
    if task.compose is not None:
        with clock.step("services"):
            services = await _services(task, settings, network)
        network = {"network": True, "network_mode": services.network}
    try:
        with clock.step("sandbox_start"):
            try:
                sandbox = await start_sandbox(
                    settings.backend,
                    task_options(task, settings),
                    task_id=task_id,
                    cpus=config.environment.cpus,
                    memory_mb=config.environment.memory_mb,
                    image=image.options,
                    lifetime=lifetime,
                    network=network,
                )
            except (SandboxError, ValueError, TaskError) as error:
                raise TrialInfraError("sandbox_start", f"{type(error).__name__}: {error}") from None
    except BaseException:
        if services is not None:
            await finish(close_all(None, services, task_id))
        raise
    return Opened(sandbox, services)


def task_options(task: Task, settings: TrialSettings) -> dict[str, Any]:
    """The sandbox options: the run's, with the task's ``[environment] env`` (over its
    compose file's ``main`` environment) and ``workdir`` and the agent's ``user``. No
    workdir: commands start where the image says (the backend's choice)."""
    options = dict(settings.sandbox_options)
    environment = task.config.environment
    from_compose = dict(task.compose.main_environment) if task.compose else {}
    if environment.env or from_compose:
        options["env"] = {
            **dict(options.get("env") or {}),
            **from_compose,
            **task.resolved_env("environment"),
        }
    if environment.workdir:
        options["workdir"] = environment.workdir
    options.update(user_option(task.config.agent.user, settings.backend))
    return options


async def _image(task: Task, settings: TrialSettings) -> TaskImage:
    try:
        return await prepare_task_image(
            task,
            settings.image_map,
            backend=settings.backend,
            timeout_multiplier=settings.timeout_multiplier,
            sandbox_options=settings.sandbox_options,
            contexts_dir=settings.contexts_dir,
            offline=settings.offline_builds,
            build_network=settings.build_network,
        )
    except ImageError as error:
        raise TrialInfraError("image_build", str(error)) from None
    except SandboxError as error:  # the daemon is unreachable
        raise TrialInfraError("image_build", f"{type(error).__name__}: {error}") from None


async def _services(
    task: Task, settings: TrialSettings, network: Mapping[str, Any]
) -> ServiceGroup:
    """The task's compose services started and waited for (what its ``main`` service
    depends on), on a network of their own: internal unless the task's sandbox would have
    a network (``network``: what :func:`sandbox_network` gives it).

    Raises:
        TrialInfraError: kind ``image_build`` when a service's image cannot be had;
            ``sandbox_start`` when the backend is not docker or a service does not start
            or become ready.
    """
    from hermes_sandbox.backends.docker import ServiceGroup

    compose = task.compose
    assert compose is not None
    if settings.backend != "docker":
        raise TrialInfraError(
            "sandbox_start",
            f"task {task.name} runs services ({compose.path.name}), which only the docker "
            f"backend starts, not {settings.backend}: run it with --env.terminal_backend docker",
        )
    try:
        specs = await prepare_service_images(
            task,
            settings.image_map,
            timeout_multiplier=settings.timeout_multiplier,
            sandbox_options=settings.sandbox_options,
            offline=settings.offline_builds,
            build_network=settings.build_network,
        )
    except ImageError as error:
        raise TrialInfraError("image_build", str(error)) from None
    group = ServiceGroup(
        specs,
        wait_for=compose.main_depends_on,
        internet=bool(network.get("network")),
        base_url=settings.sandbox_options.get("base_url"),
        ready_timeout=max(task.config.environment.build_timeout_sec, 60.0),
    )
    try:
        await group.start()
    except SandboxError as error:
        raise TrialInfraError("sandbox_start", f"task {task.name}: {error}") from None
    return group
