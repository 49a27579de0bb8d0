"""The local backend's options: what it takes and how it checks them."""

from __future__ import annotations

import os
from typing import Literal

from hermes_sandbox._options import SandboxOptions
from hermes_sandbox._processes import MARKER_VARIABLE

__all__ = ["DEFAULT_TMP_SIZE_MB", "ISOLATION_MODES", "Isolation", "check_options"]

Isolation = Literal["none", "bwrap", "auto"]
#: Values of the ``isolation`` option.
ISOLATION_MODES: tuple[Isolation, ...] = ("none", "bwrap", "auto")
#: The size of an isolated sandbox's private ``/tmp`` unless ``tmp_size_mb`` says.
DEFAULT_TMP_SIZE_MB = 1024

_UNSUPPORTED_LIMITS = ("cpus",)
_OPTIONS = ("isolation", "tmp_size_mb", "host_dirs")


def check_options(options: SandboxOptions) -> tuple[Isolation, int, tuple[str, ...]]:
    """The isolation, ``/tmp`` size and host directories asked for.

    Raises:
        ValueError: for anything the local backend cannot do as asked.
    """
    unknown = sorted(str(k) for k in options.extra if k not in _OPTIONS)
    if unknown:
        raise ValueError(
            f"local backend: unknown option(s) {', '.join(unknown)}; it takes the common "
            "SandboxOptions fields (image, workdir, terminal_timeout, terminal_lifetime, env, "
            "memory_mb, pids_limit, network, max_output_chars), isolation ('none', 'bwrap', "
            "'auto'), tmp_size_mb and host_dirs"
        )
    isolation = options.extra.get("isolation", "auto")
    if isolation not in ISOLATION_MODES:
        raise ValueError(
            f"local backend: isolation must be one of {', '.join(ISOLATION_MODES)}, "
            f"got {isolation!r}"
        )
    limits = [name for name in _UNSUPPORTED_LIMITS if getattr(options, name) is not None]
    if limits:
        raise ValueError(
            f"local backend: cannot enforce {', '.join(limits)}; leave them unset or use "
            "the docker backend for CPU limits"
        )
    for name in ("pids_limit", "memory_mb"):
        value = getattr(options, name)
        if value is not None and not _positive_int(value):
            raise ValueError(f"local backend: {name} must be a positive integer, got {value!r}")
    tmp_size = options.extra.get("tmp_size_mb", DEFAULT_TMP_SIZE_MB)
    if not _positive_int(tmp_size):
        raise ValueError(
            f"local backend: tmp_size_mb must be a positive integer (MB), got {tmp_size!r}"
        )
    host_dirs = options.extra.get("host_dirs", ())
    if isinstance(host_dirs, str) or not all(
        isinstance(d, str) and os.path.isabs(d) for d in host_dirs
    ):
        raise ValueError(
            "local backend: host_dirs must be a list of absolute host directory paths, "
            f"got {host_dirs!r}"
        )
    for key, value in options.env.items():
        if not isinstance(key, str) or not key or "=" in key or "\0" in key:
            raise ValueError(f"env: invalid variable name {key!r}")
        if not isinstance(value, str) or "\0" in value:
            raise ValueError(f"env[{key!r}] must be a string without NUL bytes, got {value!r}")
        if key == MARKER_VARIABLE:
            raise ValueError(f"env: {MARKER_VARIABLE} is reserved by the local backend")
    dirs = tuple(os.path.normpath(d) for d in host_dirs)
    return isolation, tmp_size, dirs


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1
