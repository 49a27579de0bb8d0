"""``ContainerSpec``: what a container is made from, checked from the sandbox options.

A warm-pool container serves a sandbox whose spec is equal to the pool's.
"""

from __future__ import annotations

import math
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from hermes_sandbox._options import SandboxOptions
from hermes_sandbox.backends.docker._image import DEFAULT_IMAGE
from hermes_sandbox.backends.option_check import check_extra

__all__ = [
    "DEFAULT_CPUS",
    "DEFAULT_PIDS_LIMIT",
    "DEFAULT_WORKDIR",
    "EXTRA_KEYS",
    "MIN_CPUS",
    "ContainerSpec",
    "check_user",
]

#: Processes a container may hold unless ``pids_limit`` says otherwise (a fork bomb stays
#: inside).
DEFAULT_PIDS_LIMIT: Final = 256
#: CPUs a container may use unless ``cpus`` says otherwise, so a busy (or hostile)
#: command cannot take the whole host.
DEFAULT_CPUS: Final = 1.0
#: The smallest CPU limit the daemon accepts.
MIN_CPUS: Final = 0.01
#: Where commands start when neither ``workdir`` nor the image's ``WORKDIR`` says.
DEFAULT_WORKDIR: Final = "/workspace"
#: A user as docker takes it: a name or id, optionally ``:group``.
_USER: Final = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.-]*(?::[A-Za-z0-9_.][A-Za-z0-9_.-]*)?")
#: The docker backend's options beyond ``SandboxOptions``.
EXTRA_KEYS: Final = frozenset({"base_url", "pool", "runtime", "network_mode", "labels"})


@dataclass(frozen=True, slots=True)
class ContainerSpec:
    """What a container is made from; a warm-pool container serves a sandbox whose spec
    is equal."""

    image: str = DEFAULT_IMAGE
    #: The container's working directory; ``None``: the image's ``WORKDIR``, else
    #: ``DEFAULT_WORKDIR``.
    workdir: str | None = None
    cpus: float = DEFAULT_CPUS
    memory_mb: int | None = None
    pids_limit: int = DEFAULT_PIDS_LIMIT
    network_mode: str = "none"
    runtime: str | None = None
    lifetime: float = 3600.0
    labels: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_options(cls, options: SandboxOptions) -> ContainerSpec:
        """The spec of ``options`` (common fields plus docker's ``extra`` keys).

        Raises:
            ValueError: for unknown ``extra`` keys or values of the wrong kind, naming the
                option.
        """
        extra = dict(options.extra)
        check_extra("docker", extra, EXTRA_KEYS)
        for key in ("base_url", "runtime", "network_mode"):
            if extra.get(key) is not None and not isinstance(extra[key], str):
                raise ValueError(f"docker: option {key!r} must be a string, got {extra[key]!r}")
        labels = extra.get("labels") or {}
        if not isinstance(labels, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
        ):
            raise ValueError(f"docker: option 'labels' must map str to str, got {labels!r}")
        network_mode = extra.get("network_mode")
        if not options.network:
            if network_mode not in (None, "none"):
                raise ValueError(
                    f"docker: network_mode={network_mode!r} needs network=True "
                    "(the network is off by default)"
                )
            network_mode = "none"
        elif network_mode in (None, "none"):
            network_mode = "bridge"
        if options.memory_mb is not None and options.memory_mb < 6:
            raise ValueError(f"docker: memory_mb must be at least 6, got {options.memory_mb!r}")
        pids = DEFAULT_PIDS_LIMIT if options.pids_limit is None else options.pids_limit
        if pids < 8:
            raise ValueError(f"docker: pids_limit must be at least 8, got {pids!r}")
        workdir = options.workdir
        if workdir is not None and not posixpath.isabs(workdir):
            raise ValueError(f"docker: workdir must be an absolute path, got {workdir!r}")
        if options.user is not None:
            check_user(options.user, "option 'user'")
        return cls(
            image=options.image or DEFAULT_IMAGE,
            workdir=workdir,
            cpus=_cpus(options.cpus),
            memory_mb=options.memory_mb,
            pids_limit=pids,
            network_mode=str(network_mode),
            runtime=extra.get("runtime"),
            lifetime=options.terminal_lifetime,
            labels=tuple(sorted(labels.items())),
        )


def check_user(user: object, what: str = "exec(user=...)") -> str:
    """``user`` if docker can take it (a name or uid, optionally ``:group``).

    Raises:
        ValueError: otherwise, naming it and ``what`` was given.
    """
    if not isinstance(user, str) or not _USER.fullmatch(user):
        raise ValueError(
            f"docker: {what} must be a user name or uid[:gid] (e.g. 'app' or '1000:1000'), "
            f"got {user!r}"
        )
    return user


def _cpus(cpus: object) -> float:
    """The CPU limit for option ``cpus`` (``None``: ``DEFAULT_CPUS``).

    Raises:
        ValueError: for anything but a finite number of at least ``MIN_CPUS``.
    """
    if cpus is None:
        return DEFAULT_CPUS
    if (
        isinstance(cpus, bool)
        or not isinstance(cpus, int | float)
        or not math.isfinite(cpus)
        or cpus < MIN_CPUS
    ):
        raise ValueError(
            f"docker: option 'cpus' must be a number of CPUs of at least {MIN_CPUS} "
            f"(e.g. 0.5 or 2), got {cpus!r}; leave it unset for the default of {DEFAULT_CPUS:g}"
        )
    return float(cpus)
