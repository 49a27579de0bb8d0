"""Old home of ``DockerWarmPool``, kept so that existing imports keep working; it lives in
``hermes_sandbox.backends.docker.pool`` (also exported by ``hermes_sandbox.backends.docker``)."""

from __future__ import annotations

from hermes_sandbox.backends.docker.pool import DockerWarmPool

__all__ = ["DockerWarmPool"]
