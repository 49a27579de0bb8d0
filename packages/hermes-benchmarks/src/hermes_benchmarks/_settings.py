"""How the trials of a run are set up: :class:`TrialSettings` (backend, image map,
timeout multiplier, retries), shared by the trial runner and the verifier."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from hermes_benchmarks._image_map import ImageMap

__all__ = ["TrialSettings"]


@dataclass(frozen=True)
class TrialSettings:
    """How trials run.

    Attributes:
        backend: the sandbox backend (``docker``; ``modal`` and ``daytona`` build the
            task images there).
        image_map: base-image rewrites for air-gapped machines.
        timeout_multiplier: scales the agent, verifier and image-build timeouts.
        infra_retries: extra attempts after an infrastructure failure.
        sandbox_options: more options for ``create_sandbox`` (e.g. docker's ``base_url``).
        contexts_dir: where Modal and Daytona build contexts are kept (default
            ``~/.cache/hermes-bench/build-contexts``).
        offline_builds: pull nothing and build without a network (air-gapped machines).
        build_network: the network of networked builds' ``RUN`` steps (``default``, or
            ``host`` to reach a mirror on 127.0.0.1).
        network: the sandboxes' network: ``task`` (each task's ``allow_internet``),
            ``off``, or ``host`` (the host's network for tasks that allow the internet).
        start_ahead: how many trials' sandboxes a run starts ahead of their trial, while
            the trials before them run (:mod:`~hermes_benchmarks._start_ahead`); None:
            the backend's default (:attr:`sandboxes_ahead`); 0: none.
    """

    backend: str = "docker"
    image_map: ImageMap = field(default_factory=ImageMap)
    timeout_multiplier: float = 1.0
    infra_retries: int = 1
    sandbox_options: Mapping[str, Any] = field(default_factory=dict)
    contexts_dir: Path | None = None
    offline_builds: bool = False
    build_network: Literal["default", "host"] = "default"
    network: Literal["task", "off", "host"] = "task"
    start_ahead: int | None = None

    def __post_init__(self) -> None:
        if self.timeout_multiplier <= 0:
            raise ValueError(f"timeout_multiplier must be positive, got {self.timeout_multiplier}")
        if self.infra_retries < 0:
            raise ValueError(f"infra_retries must be 0 or more, got {self.infra_retries}")
        if self.start_ahead is not None and self.start_ahead < 0:
            raise ValueError(f"start_ahead must be 0 or more, got {self.start_ahead}")

    @property
    def sandboxes_ahead(self) -> int:
        """How many sandboxes a run starts ahead: ``start_ahead``, else 1 on docker (a
        container's start is most of a short trial; an idle one costs next to nothing)
        and 0 on the other backends (a cloud sandbox waiting is paid for; a local one
        starts in milliseconds)."""
        if self.start_ahead is not None:
            return self.start_ahead
        return 1 if self.backend == "docker" else 0
