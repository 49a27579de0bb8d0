"""Checking a backend's own options (``SandboxOptions.extra``): one check for every
backend, built-in or third-party, so an unknown option is refused the same way
everywhere."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["check_extra"]


def check_extra(backend: str, extra: Mapping[str, Any], known: Iterable[str]) -> None:
    """Reject options in ``extra`` that backend ``backend`` does not know.

    Raises:
        ValueError: naming the backend, the unknown keys and the known ones, e.g.
            ``ssh backend: unknown option(s) 'colour'; known ssh options: base_dir, host``.
    """
    allowed = set(known)
    unknown = sorted(set(extra) - allowed)
    if unknown:
        raise ValueError(
            f"{backend} backend: unknown option(s) {', '.join(map(repr, unknown))}; "
            f"known {backend} options: {', '.join(sorted(allowed)) or '(none)'}"
        )
