"""Service containers beside a sandbox (Docker Compose's ``services``): each on a network
of the group's own, reachable from the sandbox by its service name, started in the order
their ``depends_on`` asks and waited for (started, healthy, or exited with 0).

A task whose environment holds an API server, a database or an MCP server beside the
agent's container (harbor's ``environment/docker-compose.yaml``) runs in a
:class:`ServiceGroup`: ``await group.start(wait_for=...)``, then a docker sandbox with
``network=True, network_mode=group.network``, then ``await group.close()``. The network
is ``internal`` (no route out) unless ``internet=True``. Every container and the network
carry the package's labels and this process's ``RUN_ID``, so ``remove_containers`` by
run removes the containers a killed run left.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Final, Literal, Self

from hermes_sandbox._errors import SandboxStartError
from hermes_sandbox._teardown import finish
from hermes_sandbox.backends.docker._daemon import DockerDaemon
from hermes_sandbox.backends.docker._labels import LABEL, LABEL_RUN, RUN_ID
from hermes_sandbox.backends.docker._sdk import explain, load_sdk

__all__ = [
    "CONDITIONS",
    "Condition",
    "Healthcheck",
    "ServiceGroup",
    "ServiceSpec",
    "service_order",
]

#: What a dependant waits for: the service's container running, its healthcheck passing,
#: or its command ending with exit code 0 (Compose's ``depends_on`` conditions).
Condition = Literal["service_started", "service_healthy", "service_completed_successfully"]

#: The conditions, in the order of :data:`Condition`.
CONDITIONS: Final = ("service_started", "service_healthy", "service_completed_successfully")

#: Seconds between two looks at a service's state while waiting for it.
_POLL: Final = 0.1
#: Log lines of a failed service quoted in the error.
_TAIL: Final = 3


@dataclass(frozen=True)
class Healthcheck:
    """A service's healthcheck (Docker's ``HEALTHCHECK``), durations in seconds.

    ``test``: ``("CMD", program, *args)``, ``("CMD-SHELL", "command")`` or ``("NONE",)``.
    """

    test: tuple[str, ...]
    interval: float = 30.0
    timeout: float = 30.0
    retries: int = 3
    start_period: float = 0.0

    def engine(self) -> dict[str, Any]:
        """The daemon's form: durations in nanoseconds."""
        return {
            "test": list(self.test),
            "interval": round(self.interval * 1e9),
            "timeout": round(self.timeout * 1e9),
            "retries": self.retries,
            "start_period": round(self.start_period * 1e9),
        }


@dataclass(frozen=True)
class ServiceSpec:
    """One service: its name (the host name the sandbox reaches it by), the image it runs
    (on the daemon already: prepare it first) and how.

    ``command``/``entrypoint``: None keeps the image's. ``depends_on``: the services this
    one waits for before it starts, each with its :data:`Condition`.
    """

    name: str
    image: str
    command: tuple[str, ...] | None = None
    entrypoint: tuple[str, ...] | None = None
    environment: Mapping[str, str] = field(default_factory=dict)
    working_dir: str | None = None
    user: str | None = None
    healthcheck: Healthcheck | None = None
    depends_on: Mapping[str, Condition] = field(default_factory=dict)


def service_order(services: Sequence[ServiceSpec]) -> list[ServiceSpec]:
    """``services`` in an order where each comes after those it depends on (stable: the
    given order where ``depends_on`` allows).

    Raises:
        ValueError: two services share a name, a service depends on one that is not
            given or with an unknown condition, or the dependencies form a cycle.
    """
    by_name: dict[str, ServiceSpec] = {}
    for service in services:
        if not service.name or service.name in by_name:
            raise ValueError(f"services: the name {service.name!r} is empty or given twice")
        by_name[service.name] = service
    for service in services:
        for needed, condition in service.depends_on.items():
            if needed not in by_name:
                raise ValueError(
                    f"service {service.name!r} depends on {needed!r}, which is not a service"
                )
            if condition not in CONDITIONS:
                raise ValueError(
                    f"service {service.name!r}: unknown depends_on condition {condition!r} "
                    f"(one of {', '.join(CONDITIONS)})"
                )
    ordered: list[ServiceSpec] = []
    placed: set[str] = set()
    while len(ordered) < len(services):
        ready = [s for s in services if s.name not in placed and set(s.depends_on) <= placed]
        if not ready:
            stuck = sorted(set(by_name) - placed)
            raise ValueError(f"services: depends_on forms a cycle among {', '.join(stuck)}")
        ordered.append(ready[0])
        placed.add(ready[0].name)
    return ordered


class ServiceGroup:
    """Service containers on a network of their own, for one sandbox (see the module's
    docstring). Use as ``async with ServiceGroup(...) as group`` or call :meth:`start`
    and :meth:`close`; closing is safe at any point and removes whatever was started."""

    def __init__(
        self,
        services: Sequence[ServiceSpec],
        *,
        internet: bool = False,
        base_url: str | None = None,
        wait_for: Mapping[str, Condition] | None = None,
        labels: Mapping[str, str] | None = None,
        ready_timeout: float = 300.0,
    ) -> None:
        """Nothing starts until :meth:`start`.

        ``wait_for``: the conditions :meth:`start` waits for once every service is
        started (the sandbox's own ``depends_on``). ``labels``: put on the network and
        every container (with the package's own and the run's). ``ready_timeout``:
        seconds each wait for a condition may take.

        Raises:
            ValueError: as :func:`service_order`; ``wait_for`` names a service not given
                or an unknown condition; ``ready_timeout`` is not positive.
        """
        if ready_timeout <= 0:
            raise ValueError(f"ready_timeout must be positive, got {ready_timeout}")
        self._services = service_order(services)
        names = {service.name for service in self._services}
        self._wait_for = dict(wait_for or {})
        for name, condition in self._wait_for.items():
            if name not in names:
                raise ValueError(f"depends_on names {name!r}, which is not a service")
            if condition not in CONDITIONS:
                raise ValueError(f"unknown depends_on condition {condition!r} for {name!r}")
        self._started = False
        self._internet = internet
        self._base_url = base_url
        self._labels = {**dict(labels or {}), LABEL: "1", LABEL_RUN: RUN_ID}
        self._ready_timeout = ready_timeout
        #: The network's name: give it to the sandbox as ``network_mode``.
        self.network = f"hermes-services-{uuid.uuid4().hex[:12]}"
        self._daemon: DockerDaemon | None = None
        self._network_made = False
        self._containers: dict[str, str] = {}

    async def start(self) -> None:
        """Create the network, start every service in dependency order (each after the
        conditions it depends on hold), then wait for ``wait_for``. On any failure
        everything started is removed before the error propagates.

        Raises:
            RuntimeError: the group was started before.
            SandboxStartError: the network or a container could not be made, a service
                exited, turned unhealthy or was not ready within ``ready_timeout`` (one
                line naming the service, with its last log lines), or the daemon does not
                answer (``DockerUnreachableError``).
        """
        if self._started:
            raise RuntimeError("this service group was started already: make a new one")
        self._started = True
        try:
            await finish(self._open())
            for service in self._services:
                for needed, condition in service.depends_on.items():
                    await self._wait(needed, condition)
                await finish(self._run(service))
            for name, condition in self._wait_for.items():
                await self._wait(name, condition)
        except BaseException:
            with contextlib.suppress(Exception):
                await self.close()
            raise

    async def _open(self) -> None:
        self._daemon = await DockerDaemon.connect(self._base_url)
        docker = load_sdk()
        try:
            await self._daemon.call(
                self._daemon.api.create_network,
                self.network,
                driver="bridge",
                internal=not self._internet,
                labels=self._labels,
            )
        except docker.errors.APIError as exc:
            raise SandboxStartError(
                f"docker: could not create the services' network {self.network}: {explain(exc)}"
            ) from exc
        self._network_made = True

    async def _run(self, service: ServiceSpec) -> None:
        daemon = self._daemon
        assert daemon is not None
        docker = load_sdk()
        api = daemon.api
        name = f"{self.network}-{service.name}"

        def create_and_start() -> str:
            networking = api.create_networking_config(
                {self.network: api.create_endpoint_config(aliases=[service.name])}
            )
            created = api.create_container(
                image=service.image,
                command=list(service.command) if service.command is not None else None,
                entrypoint=list(service.entrypoint) if service.entrypoint is not None else None,
                environment=dict(service.environment),
                working_dir=service.working_dir,
                user=service.user,
                name=name,
                hostname=service.name,
                labels=self._labels,
                healthcheck=service.healthcheck.engine() if service.healthcheck else None,
                host_config=api.create_host_config(
                    network_mode=self.network, security_opt=["no-new-privileges"]
                ),
                networking_config=networking,
                detach=True,
            )
            container = str(created["Id"])
            self._containers[service.name] = container
            api.start(container)
            return container

        try:
            await daemon.call(create_and_start)
        except docker.errors.APIError as exc:
            raise SandboxStartError(
                f"docker: service {service.name!r} (image {service.image}) could not start: "
                f"{explain(exc)}"
            ) from exc

    async def _wait(self, name: str, condition: Condition) -> None:
        daemon = self._daemon
        assert daemon is not None
        container = self._containers[name]
        deadline = time.monotonic() + self._ready_timeout
        while True:
            state: dict[str, Any] = (
                await daemon.call(daemon.api.inspect_container, container)
            ).get("State") or {}
            status = state.get("Status")
            health = (state.get("Health") or {}).get("Status")
            exited = status in ("exited", "dead")
            code = state.get("ExitCode")
            if condition == "service_started" and status == "running":
                return
            if condition == "service_completed_successfully" and exited and code == 0:
                return
            if exited:
                raise SandboxStartError(
                    f"docker: service {name!r} exited with code {code} before it was "
                    f"{condition.removeprefix('service_').replace('_', ' ')}"
                    f"{await self._tail(container)}"
                )
            if condition == "service_healthy":
                if health == "healthy":
                    return
                if health is None:
                    raise SandboxStartError(
                        f"docker: service {name!r} has no healthcheck, so it can never be "
                        "service_healthy: give it one or wait for service_started"
                    )
                if health == "unhealthy":
                    raise SandboxStartError(
                        f"docker: service {name!r} is unhealthy{await self._tail(container)}"
                    )
            if time.monotonic() > deadline:
                raise SandboxStartError(
                    f"docker: service {name!r} was not {condition} within "
                    f"{self._ready_timeout:g} s{await self._tail(container)}"
                )
            await asyncio.sleep(_POLL)

    async def _tail(self, container: str) -> str:
        """``: last log lines: ...`` (one line), or nothing when there are none."""
        daemon = self._daemon
        assert daemon is not None
        try:
            raw = await daemon.call(daemon.api.logs, container, tail=_TAIL)
        except Exception:
            return ""
        text = bytes(raw).decode("utf-8", "replace").strip()
        if not text:
            return ""
        return ": last log lines: " + " | ".join(text.splitlines()[-_TAIL:])[:400]

    def container(self, name: str) -> str:
        """The id of service ``name``'s container.

        Raises:
            KeyError: no such service was started.
        """
        return self._containers[name]

    async def close(self) -> None:
        """Remove every service container and the network (idempotent; finishes even
        when the caller is cancelled meanwhile, which is re-raised after).

        Raises:
            asyncio.CancelledError: the caller was cancelled while the group closed.
        """
        await finish(self._close())

    async def _close(self) -> None:
        daemon, self._daemon = self._daemon, None
        if daemon is None:
            return
        docker = load_sdk()
        try:
            containers, self._containers = list(self._containers.values()), {}
            for container in containers:
                with contextlib.suppress(Exception):
                    await daemon.remove_container(container)
            if self._network_made:
                self._network_made = False
                with contextlib.suppress(docker.errors.NotFound):
                    await daemon.call(daemon.api.remove_network, self.network)
        finally:
            daemon.close()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
