"""The docker backend's own errors."""

from __future__ import annotations

from hermes_sandbox._errors import SandboxError, SandboxStartError

__all__ = ["DockerUnreachableError", "ImageBuildError"]


class DockerUnreachableError(SandboxStartError):
    """The docker daemon did not answer; the message says where it was looked for."""


class ImageBuildError(SandboxError):
    """An image could not be built; the message says what is missing or what failed."""
