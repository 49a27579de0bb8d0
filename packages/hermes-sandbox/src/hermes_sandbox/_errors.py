"""Every exception hermes-sandbox raises, under one root: ``SandboxError``.

A caller catches the whole package's failures with one ``except SandboxError``. Where
callers already rely on a builtin base, the class keeps it as a second base
(``UnknownBackendError`` is a ``KeyError``; the web, browser and ``ToolContext`` errors
are ``RuntimeError``\\ s, as before). Errors that come in several kinds carry a ``kind``
(a ``Literal``), so code can tell them apart without reading their message::

    SandboxError
    ├── SandboxStartError            the sandbox could not be created or started
    ├── SandboxClosedError           closed, expired or died
    ├── BackendUnavailableError      the backend's SDK or binary is missing
    ├── UnknownBackendError          (also KeyError) no backend of that name
    ├── ToolContextError             (also RuntimeError) kind: ToolContextErrorKind
    ├── WebProviderError             (also RuntimeError) kind: WebProviderErrorKind
    ├── BrowserUnavailableError      (also RuntimeError) kind: BrowserUnavailableKind
    ├── BrowserPageError             (also RuntimeError) kind: BrowserPageErrorKind
    └── ConformanceError             (also AssertionError) a backend failed the
                                     hermes_sandbox.testing suite

Bad arguments raise ``ValueError`` and file problems inside a sandbox raise the
matching ``OSError`` (``FileNotFoundError``, ...), as Python code expects: those are the
caller's or the model's doing, not the package's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

__all__ = [
    "BackendUnavailableError",
    "BrowserPageError",
    "BrowserPageErrorKind",
    "BrowserUnavailableError",
    "BrowserUnavailableKind",
    "ConformanceError",
    "FileChangedError",
    "SandboxClosedError",
    "SandboxError",
    "SandboxStartError",
    "ToolContextError",
    "ToolContextErrorKind",
    "UnknownBackendError",
    "WebProviderError",
    "WebProviderErrorKind",
]

#: Why a ``ToolContext`` refused a call: it was cleaned up (``"cleaned_up"``); a
#: blocking method was called from a tool the context itself runs (``"reentrant"``); a
#: blocking call could not reach the event loop the sandbox belongs to (``"loop_blocked"``);
#: the context's private event loop was already stopped (``"loop_stopped"``).
ToolContextErrorKind = Literal["cleaned_up", "reentrant", "loop_blocked", "loop_stopped"]

#: Why a web provider failed: it cannot search (``"no_search"``), its SDK is not
#: installed (``"sdk_missing"``), it has no API key (``"no_api_key"``), or the service
#: call failed (``"request_failed"``).
WebProviderErrorKind = Literal["no_search", "sdk_missing", "no_api_key", "request_failed"]

#: Why there is no browser: Playwright or Chromium is missing (``"not_installed"``),
#: Chromium would not start (``"launch_failed"``), the browser was closed (``"closed"``),
#: or the ``ToolContext`` was given none (``"not_configured"``).
BrowserUnavailableKind = Literal["not_installed", "launch_failed", "closed", "not_configured"]

#: What went wrong with a page: it would not open (``"navigation"``), none is open for
#: the task (``"no_page"``), or it could not be read (``"snapshot"``).
BrowserPageErrorKind = Literal["navigation", "no_page", "snapshot"]


class SandboxError(Exception):
    """Base class: something went wrong with a sandbox or the package's tools (not with
    the command run in a sandbox)."""


class SandboxStartError(SandboxError):
    """The sandbox could not be created or started; the message says why and what to do."""


class SandboxClosedError(SandboxError):
    """The sandbox was closed, expired (``terminal_lifetime``) or died."""


class FileChangedError(SandboxError, OSError):
    """A file read from a sandbox kept changing while it was read (something in the
    sandbox rewrites it); reading it again once nothing writes it may succeed."""


class BackendUnavailableError(SandboxError):
    """The backend's SDK or binary is missing; the message names the extra to install."""


class UnknownBackendError(SandboxError, KeyError):
    """``create_sandbox`` was given a backend name that is not registered (a ``KeyError``
    too; ``known`` lists the registered names)."""

    def __init__(self, name: str, known: Iterable[str]) -> None:
        self.name = name
        self.known = sorted(known)
        super().__init__(name)

    def __str__(self) -> str:
        return f"unknown sandbox backend {self.name!r}; known backends: {', '.join(self.known)}"


class ToolContextError(SandboxError, RuntimeError):
    """A ``ToolContext`` could not carry out a call; ``kind`` says why."""

    def __init__(self, message: str, *, kind: ToolContextErrorKind) -> None:
        super().__init__(message)
        self.kind: ToolContextErrorKind = kind


class WebProviderError(SandboxError, RuntimeError):
    """A web provider is missing, misconfigured or failed (not a problem of one page);
    ``kind`` says which."""

    def __init__(self, message: str, *, kind: WebProviderErrorKind = "request_failed") -> None:
        super().__init__(message)
        self.kind: WebProviderErrorKind = kind


class BrowserUnavailableError(SandboxError, RuntimeError):
    """Chromium or Playwright is missing, the browser would not start, or it was closed;
    ``kind`` says which."""

    def __init__(self, message: str, *, kind: BrowserUnavailableKind = "not_installed") -> None:
        super().__init__(message)
        self.kind: BrowserUnavailableKind = kind


class BrowserPageError(SandboxError, RuntimeError):
    """A page could not be opened or read (bad URL, network error, timeout, no page);
    ``kind`` says which. The tools report it to the model as data."""

    def __init__(self, message: str, *, kind: BrowserPageErrorKind = "navigation") -> None:
        super().__init__(message)
        self.kind: BrowserPageErrorKind = kind


class ConformanceError(SandboxError, AssertionError):
    """A backend failed checks of the conformance suite (``hermes_sandbox.testing``);
    ``failures`` maps each failed check's name to what went wrong."""

    def __init__(self, message: str, *, failures: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.failures: dict[str, str] = dict(failures or {})
