"""A task's ``environment/docker-compose.yaml``, read as harbor reads it: a file merged
over harbor's own base configuration, whose ``main`` service is the agent's container
(configured by the harness) and whose other services run beside it, reached by their
names (an API server at ``http://api-server:5000``, an MCP server, a database).

What is run here: each other service's ``build`` (a context folder below
``environment/`` and its ``dockerfile``) or ``image``, ``command``,
``entrypoint``, ``environment``, ``working_dir``, ``user``, ``healthcheck`` and
``depends_on`` (a list, or conditions ``service_started``, ``service_healthy``,
``service_completed_successfully``); ``main``'s ``depends_on`` (what the agent's
container waits for) and ``environment`` (under ``[environment.env]``, which wins).
``expose``, ``ports``, ``restart``, ``container_name``, ``hostname`` and ``x-`` keys
change nothing of what a trial sees here and are passed over. Any other key
(``volumes``, ``networks``, ``env_file``, ...) is refused when the task is read, in one
line naming it, rather than run differently from harbor.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import yaml

from hermes_benchmarks._errors import TaskError

if TYPE_CHECKING:  # the docker backend is imported only for a task that has services
    from hermes_sandbox.backends.docker import Condition, Healthcheck, ServiceSpec

__all__ = ["COMPOSE_FILES", "ComposeFile", "ComposeService", "read_compose"]

#: The names harbor looks for in ``environment/``, first found wins.
COMPOSE_FILES: Final = ("docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml")

_SERVICE_KEYS: Final = frozenset(
    {
        "build",
        "image",
        "command",
        "entrypoint",
        "environment",
        "working_dir",
        "user",
        "healthcheck",
        "depends_on",
    }
)
_MAIN_KEYS: Final = frozenset({"depends_on", "environment"})
_PASSED_OVER: Final = frozenset({"expose", "ports", "restart", "container_name", "hostname"})
_TOP_KEYS: Final = frozenset({"services", "version", "name"})
_DURATION: Final = re.compile(r"(\d+(?:\.\d+)?)(us|ms|s|m|h)")
_UNITS: Final = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True)
class ComposeService:
    """One service beside the agent's container: how it runs (``spec``, whose ``image``
    is left empty until prepared) and where its image comes from: a build ``context``
    folder with its ``dockerfile``, or a prebuilt ``image``."""

    spec: ServiceSpec
    context: Path | None = None
    dockerfile: str = "Dockerfile"
    image: str | None = None

    @property
    def name(self) -> str:
        """The service's name (the host name it is reached by)."""
        return self.spec.name


@dataclass(frozen=True)
class ComposeFile:
    """A task's compose file: the services beside the agent's container, what that
    container waits for, and the environment it adds to it."""

    path: Path
    services: tuple[ComposeService, ...]
    main_depends_on: Mapping[str, Condition] = field(default_factory=dict)
    main_environment: Mapping[str, str] = field(default_factory=dict)


def read_compose(environment_dir: Path) -> ComposeFile | None:
    """The compose file of a task's ``environment/`` folder, checked; None when it has
    none, or when it declares no service beside ``main``.

    Raises:
        TaskError: the file is not YAML, or holds a key not run here, a wrong value, a
            ``depends_on`` naming no service or forming a cycle, or a build context
            outside ``environment/`` (one line naming the file and the key).
    """
    path = next(
        (environment_dir / n for n in COMPOSE_FILES if (environment_dir / n).is_file()), None
    )
    if path is None:
        return None
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise TaskError(f"{path} is not valid YAML: {first}") from None
    where = str(path)
    top = _mapping(raw, where)
    _refuse(top, _TOP_KEYS, where, "")
    services = _mapping(top.get("services") or {}, f"{where}: services")
    main = _mapping(services.get("main") or {}, f"{where}: services.main")
    _refuse(main, _MAIN_KEYS | _PASSED_OVER, where, "services.main.")
    others = tuple(
        _service(
            str(name), _mapping(body or {}, f"{where}: services.{name}"), environment_dir, where
        )
        for name, body in services.items()
        if name != "main"
    )
    if not others:
        return None
    compose = ComposeFile(
        path=path,
        services=others,
        main_depends_on=_depends_on(main.get("depends_on"), where, "main"),
        main_environment=_environment(main.get("environment"), where, "main"),
    )
    _check_order(compose, where)
    return compose


def _mapping(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TaskError(f"{where} must be a mapping, got {type(value).__name__}")
    return {str(k): v for k, v in value.items()}


def _refuse(body: Mapping[str, Any], allowed: frozenset[str], where: str, prefix: str) -> None:
    for key in body:
        if key not in allowed and key not in _PASSED_OVER and not key.startswith("x-"):
            raise TaskError(
                f"{where}: {prefix}{key} is not run by hermes-bench (it runs services' build "
                "or image, command, entrypoint, environment, working_dir, user, healthcheck "
                "and depends_on): remove it, or run this task with harbor"
            )


def _service(name: str, body: Mapping[str, Any], root: Path, where: str) -> ComposeService:
    _refuse(body, _SERVICE_KEYS, where, f"services.{name}.")
    build = body.get("build")
    image = body.get("image")
    context: Path | None = None
    dockerfile = "Dockerfile"
    if build is not None:
        spec = (
            {"context": build}
            if isinstance(build, str)
            else _mapping(build, f"{where}: services.{name}.build")
        )
        _refuse(spec, frozenset({"context", "dockerfile"}), where, f"services.{name}.build.")
        context = (root / str(spec.get("context", "."))).resolve()
        if not context.is_relative_to(root.resolve()) or not context.is_dir():
            raise TaskError(
                f"{where}: services.{name}.build.context must be a folder inside "
                f"{root}, got {spec.get('context')!r}"
            )
        dockerfile = str(spec.get("dockerfile", "Dockerfile"))
        if not (context / dockerfile).is_file():
            raise TaskError(f"{where}: services.{name}: {context / dockerfile} is missing")
    elif not isinstance(image, str) or not image:
        raise TaskError(f"{where}: services.{name} needs a build or an image")
    from hermes_sandbox.backends.docker import ServiceSpec

    running = ServiceSpec(
        name=name,
        image="",
        command=_argv(body.get("command"), where, f"{name}.command"),
        entrypoint=_argv(body.get("entrypoint"), where, f"{name}.entrypoint"),
        environment=_environment(body.get("environment"), where, name),
        working_dir=_text(body.get("working_dir"), where, f"{name}.working_dir"),
        user=_text(body.get("user"), where, f"{name}.user"),
        healthcheck=_healthcheck(body.get("healthcheck"), where, name),
        depends_on=_depends_on(body.get("depends_on"), where, name),
    )
    prebuilt = str(image) if image and context is None else None
    return ComposeService(running, context=context, dockerfile=dockerfile, image=prebuilt)


def _text(value: object, where: str, key: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str | int):
        raise TaskError(f"{where}: services.{key} must be a string, got {value!r}")
    return str(value)


def _argv(value: object, where: str, key: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return tuple(shlex.split(value))
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return tuple(str(v) for v in value)
    raise TaskError(f"{where}: services.{key} must be a string or a list of strings")


def _environment(value: object, where: str, name: str) -> dict[str, str]:
    """Compose's ``environment``: a mapping or ``KEY=VALUE`` entries; a key without a
    value takes the host's value (left out when the host has none)."""
    if value is None:
        return {}
    pairs: list[tuple[str, object]] = []
    if isinstance(value, dict):
        pairs = [(str(k), v) for k, v in value.items()]
    elif isinstance(value, list):
        for entry in value:
            key, sep, rest = str(entry).partition("=")
            pairs.append((key, rest if sep else None))
    else:
        raise TaskError(f"{where}: services.{name}.environment must be a mapping or a list")
    found: dict[str, str] = {}
    for key, raw in pairs:
        if raw is None:
            host = os.environ.get(key)
            if host is not None:
                found[key] = host
        elif isinstance(raw, bool):
            found[key] = "true" if raw else "false"
        else:
            found[key] = str(raw)
    return found


def _seconds(value: object, where: str, key: str) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value) / 1e9  # the engine's form: nanoseconds
    text = str(value).strip()
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise TaskError(f"{where}: {key} must be a duration such as 2s or 1m30s, got {value!r}")
    return sum(float(n) * _UNITS[u] for n, u in parts)


def _healthcheck(value: object, where: str, name: str) -> Healthcheck | None:
    from hermes_sandbox.backends.docker import Healthcheck

    if value is None:
        return None
    body = _mapping(value, f"{where}: services.{name}.healthcheck")
    if body.get("disable") is True:
        return None
    test = body.get("test")
    if isinstance(test, str):
        argv: tuple[str, ...] = ("CMD-SHELL", test)
    elif isinstance(test, list) and test and test[0] in ("CMD", "CMD-SHELL", "NONE"):
        argv = tuple(str(t) for t in test)
    else:
        raise TaskError(
            f"{where}: services.{name}.healthcheck.test must be a string or a list starting "
            "with CMD, CMD-SHELL or NONE"
        )
    key = f"services.{name}.healthcheck"
    retries = body.get("retries", 3)
    if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
        raise TaskError(f"{where}: {key}.retries must be a whole number, got {retries!r}")
    return Healthcheck(
        test=argv,
        interval=_seconds(body.get("interval", "30s"), where, f"{key}.interval"),
        timeout=_seconds(body.get("timeout", "30s"), where, f"{key}.timeout"),
        retries=retries,
        start_period=_seconds(body.get("start_period", "0s"), where, f"{key}.start_period"),
    )


def _depends_on(value: object, where: str, name: str) -> dict[str, Condition]:
    from hermes_sandbox.backends.docker import CONDITIONS

    if value is None:
        return {}
    if isinstance(value, list):
        return {str(needed): "service_started" for needed in value}
    found: dict[str, Condition] = {}
    for needed, body in _mapping(value, f"{where}: services.{name}.depends_on").items():
        condition = _mapping(body or {}, f"{where}: services.{name}.depends_on.{needed}").get(
            "condition", "service_started"
        )
        if condition not in CONDITIONS:
            raise TaskError(
                f"{where}: services.{name}.depends_on.{needed}.condition must be one of "
                f"{', '.join(CONDITIONS)}, got {condition!r}"
            )
        found[needed] = condition
    return found


def _check_order(compose: ComposeFile, where: str) -> None:
    from hermes_sandbox.backends.docker import service_order

    try:
        service_order([service.spec for service in compose.services])
    except ValueError as error:
        raise TaskError(f"{where}: {error}") from None
    names = {s.name for s in compose.services}
    for needed in compose.main_depends_on:
        if needed not in names:
            raise TaskError(f"{where}: services.main depends on {needed!r}, which is not a service")
