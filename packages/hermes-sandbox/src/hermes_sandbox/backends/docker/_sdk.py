"""Loading the docker SDK (an optional extra) and reading its errors."""

from __future__ import annotations

from typing import Any

from hermes_sandbox._errors import BackendUnavailableError

__all__ = ["explain", "load_sdk"]


def load_sdk() -> Any:
    """The ``docker`` package, imported on first use.

    Raises:
        BackendUnavailableError: if it is not installed (the message says how to install it).
    """
    try:
        import docker  # type: ignore[import-untyped]
    except ImportError as exc:  # pragma: no cover - the extra is installed in this repo
        raise BackendUnavailableError(
            "the docker backend needs the docker SDK: pip install 'hermes-sandbox[docker]'"
        ) from exc
    return docker


def explain(exc: BaseException) -> str:
    """What the daemon said in an SDK error (its ``explanation``), else the error's text."""
    explanation = getattr(exc, "explanation", None)
    return str(explanation or exc)
