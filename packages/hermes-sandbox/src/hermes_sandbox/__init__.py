"""hermes-sandbox: where an agent's commands run, and how reward code reaches the same box.

Besides sandboxes, their tools and ``ToolContext``, the package exports what the
packages built on it share: the images a sandbox runs (``ImageSource``,
``PreparedImage``, ``BuildNetwork``, ``ImageUnavailableError``, the Dockerfile
``image_references`` / ``rewrite_references``), this process's ``RUN_ID`` (the label of
every container it starts), the ``DEFAULT_PATH`` commands run with, ``finish`` (await a
cleanup to its end even when cancelled) and ``bind_sandbox_pool``.
"""

from __future__ import annotations

from hermes_sandbox._base import Sandbox
from hermes_sandbox._context import ToolContext
from hermes_sandbox._dockerfile import image_references, rewrite_references
from hermes_sandbox._errors import (
    BackendUnavailableError,
    BrowserPageError,
    BrowserUnavailableError,
    ConformanceError,
    FileChangedError,
    SandboxClosedError,
    SandboxError,
    SandboxStartError,
    ToolContextError,
    UnknownBackendError,
    WebProviderError,
)
from hermes_sandbox._lifecycle import (
    RUN_ID,
    BuildNetwork,
    ImageSource,
    ImageUnavailableError,
    PreparedImage,
)
from hermes_sandbox._options import SandboxOptions
from hermes_sandbox._pool import SandboxPool, bind_sandbox_pool
from hermes_sandbox._processes import DEFAULT_PATH
from hermes_sandbox._registry import create_sandbox, default_backends, register_backend
from hermes_sandbox._result import ExecResult
from hermes_sandbox._signals import stop_on_sigterm
from hermes_sandbox._teardown import finish
from hermes_sandbox.tools import SandboxTool, sandbox_tools

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_PATH",
    "RUN_ID",
    "BackendUnavailableError",
    "BrowserPageError",
    "BrowserUnavailableError",
    "BuildNetwork",
    "ConformanceError",
    "ExecResult",
    "FileChangedError",
    "ImageSource",
    "ImageUnavailableError",
    "PreparedImage",
    "Sandbox",
    "SandboxClosedError",
    "SandboxError",
    "SandboxOptions",
    "SandboxPool",
    "SandboxStartError",
    "SandboxTool",
    "ToolContext",
    "ToolContextError",
    "UnknownBackendError",
    "WebProviderError",
    "__version__",
    "bind_sandbox_pool",
    "create_sandbox",
    "default_backends",
    "finish",
    "image_references",
    "register_backend",
    "rewrite_references",
    "sandbox_tools",
    "stop_on_sigterm",
]
