"""Backends by name: ``create_sandbox``, ``register_backend`` and entry points.

Built-in backends are imported lazily (their SDKs are optional extras); third-party
backends register with ``@register_backend("name")`` or the ``hermes_sandbox.backends``
entry-point group.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, TypeVar

from hermes_sandbox._base import Sandbox
from hermes_sandbox._errors import UnknownBackendError
from hermes_sandbox._options import SandboxOptions

__all__ = [
    "ENTRY_POINT_GROUP",
    "BackendRegistry",
    "create_sandbox",
    "default_backends",
    "register_backend",
]

ENTRY_POINT_GROUP = "hermes_sandbox.backends"

#: Built-in backends: name -> "module:Class", imported on first use.
BUILTIN = {
    "local": "hermes_sandbox.backends.local:LocalSandbox",
    "docker": "hermes_sandbox.backends.docker:DockerSandbox",
    "ssh": "hermes_sandbox.backends.jobs.ssh:SSHSandbox",
    "modal": "hermes_sandbox.backends.cloud.modal:ModalSandbox",
    "daytona": "hermes_sandbox.backends.cloud.daytona:DaytonaSandbox",
    "singularity": "hermes_sandbox.backends.jobs.singularity:SingularitySandbox",
}

S = TypeVar("S", bound=type[Sandbox])


class BackendRegistry:
    """Sandbox classes by backend name."""

    def __init__(self, builtin: dict[str, str] | None = None, *, group: str | None = None) -> None:
        self._lazy = dict(builtin or {})
        self._classes: dict[str, type[Sandbox]] = {}
        self._group = group
        self._plugins_loaded = group is None

    def register(self, name: str) -> Callable[[S], S]:
        """Class decorator registering a ``Sandbox`` subclass as backend ``name``.

        Raises:
            TypeError: if the class is not a ``Sandbox`` subclass.
        """

        def decorator(cls: S) -> S:
            if not (isinstance(cls, type) and issubclass(cls, Sandbox)):
                raise TypeError(f"@register_backend({name!r}) needs a Sandbox subclass")
            cls.backend = name
            self._classes[name] = cls
            return cls

        return decorator

    def names(self) -> list[str]:
        """All backend names, sorted."""
        self._load_plugins()
        return sorted(set(self._classes) | set(self._lazy))

    def get(self, name: str) -> type[Sandbox]:
        """The class of backend ``name`` (importing it on first use).

        Raises:
            UnknownBackendError: a ``KeyError`` listing the known backends.
        """
        if name not in self._classes and name not in self._lazy:
            self._load_plugins()
        if name in self._classes:
            return self._classes[name]
        target = self._lazy.get(name)
        if target is None:
            raise UnknownBackendError(name, self.names())
        module, _, attr = target.partition(":")
        cls = getattr(importlib.import_module(module), attr)
        self._classes[name] = cls
        return cls  # type: ignore[no-any-return]

    def _load_plugins(self) -> None:
        if self._plugins_loaded or self._group is None:
            return
        self._plugins_loaded = True
        for point in entry_points(group=self._group):
            if point.name not in self._classes and point.name not in self._lazy:
                self._lazy[point.name] = point.value


default_backends = BackendRegistry(BUILTIN, group=ENTRY_POINT_GROUP)


def register_backend(name: str) -> Callable[[S], S]:
    """Register a ``Sandbox`` subclass as backend ``name`` in the default registry."""
    return default_backends.register(name)


def create_sandbox(backend: str, *, task_id: str | None = None, **options: Any) -> Sandbox:
    """A new, not yet started sandbox of ``backend``; start it with ``await sb.start()``
    or ``async with create_sandbox(...) as sb``.

    ``options`` are ``SandboxOptions`` fields; the rest go to the backend as ``extra``.
    ``"local"`` sandboxes are isolated (bubblewrap) by default where this machine allows
    it (its ``isolation="auto"``); ``isolation="none"`` runs commands directly on the host.

    Raises:
        UnknownBackendError: for an unknown backend (lists the known ones).
        BackendUnavailableError: if the backend's SDK or binary is missing.
        ValueError: for invalid options.
    """
    cls = default_backends.get(backend)
    return cls(SandboxOptions.from_kwargs(**options), task_id=task_id)
