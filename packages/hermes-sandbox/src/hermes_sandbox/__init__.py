"""hermes-sandbox: where an agent's commands run, and how reward code reaches the same box."""

from __future__ import annotations

from hermes_sandbox.base import Sandbox
from hermes_sandbox.context import ToolContext
from hermes_sandbox.errors import (
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
from hermes_sandbox.options import SandboxOptions
from hermes_sandbox.pool import SandboxPool
from hermes_sandbox.registry import create_sandbox, default_backends, register_backend
from hermes_sandbox.result import ExecResult
from hermes_sandbox.signals import stop_on_sigterm
from hermes_sandbox.tools import SandboxTool, sandbox_tools

__version__ = "0.1.0"

__all__ = [
    "BackendUnavailableError",
    "BrowserPageError",
    "BrowserUnavailableError",
    "ConformanceError",
    "ExecResult",
    "FileChangedError",
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
    "create_sandbox",
    "default_backends",
    "register_backend",
    "sandbox_tools",
    "stop_on_sigterm",
]
