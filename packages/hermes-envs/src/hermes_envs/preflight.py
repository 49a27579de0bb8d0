"""Checks made before any rollout, for settings the reference framework's environments
default to that cannot work here as they are: each fails in one line naming the setting
to change, instead of a traceback or one retried failure per rollout.

- ``check_endpoint_key``: a hosted (``https://``) chat-completions endpoint with no API key
  anywhere (``openai.api_key`` nor ``OPENAI_API_KEY``), as the reference's
  ``config_init``s point at a hosted router with a key read from the environment.
- ``check_backend``: a cloud sandbox backend (``modal``, ``daytona``) starts one sandbox
  first; no SDK or no credentials stops the run before the first rollout.
- ``start_wandb``: ``use_wandb`` on with wandb missing or not logged in.
- ``check_isolation``: a run that holds a secret, on local sandboxes whose isolation is
  ``auto``, must get bubblewrap's isolation: where it cannot run, ``auto`` would fall back
  to plain commands, which can read the secret from the parent's ``/proc``. The run stops
  instead, unless ``isolation="none"`` was chosen explicitly.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from atroposlib.envs.server_handling.server_manager import APIServerConfig

from hermes_envs.errors import EnvSetupError
from hermes_sandbox import SandboxError, SandboxPool

__all__ = [
    "CLOUD_BACKENDS",
    "check_backend",
    "check_endpoint_key",
    "check_isolation",
    "start_wandb",
]

#: Backends whose sandboxes need an SDK and credentials (probed before the first rollout).
CLOUD_BACKENDS = ("modal", "daytona")

_FROM = "set by the environment's config_init, the YAML or the command line"


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def check_endpoint_key(servers: Sequence[APIServerConfig]) -> None:
    """Refuse a hosted endpoint with no key (it would answer 401 to every rollout).

    Raises:
        ValueError: one line naming ``openai.base_url`` and where a key goes.
    """
    for server in servers:
        url = str(server.base_url or "")
        if (
            server.server_type == "openai"
            and url.startswith("https://")
            and not server.api_key
            and not os.environ.get("OPENAI_API_KEY")
        ):
            raise ValueError(
                f"openai.base_url is {url} ({_FROM}), a hosted endpoint, and no API key is "
                "set: export OPENAI_API_KEY, or point --openai.base_url at a local server"
            )


async def check_backend(backend: str, pool: SandboxPool, probe_id: str) -> None:
    """Start (and release) one sandbox of a cloud ``backend`` before any rollout.

    Raises:
        EnvSetupError: one line naming ``env.terminal_backend`` when it cannot start one.
    """
    if backend not in CLOUD_BACKENDS:
        return
    try:
        await pool.get(probe_id)
    except SandboxError as exc:
        raise EnvSetupError(
            f"env.terminal_backend is {backend!r} ({_FROM}) and cannot start a sandbox "
            f"({_first_line(exc)}); pass --env.terminal_backend local (or docker) to run here"
        ) from None
    finally:
        await pool.release(probe_id)


async def check_isolation(options: dict[str, Any], secrets: int) -> None:
    """With ``secrets`` held and local ``options`` whose ``isolation`` is ``auto``, start
    (and close) one sandbox with ``isolation="bwrap"``, which fails where ``auto`` would
    fall back to plain commands.

    Raises:
        EnvSetupError: one line naming the way out, when bubblewrap cannot isolate here.
    """
    if not secrets or options.get("isolation", "auto") != "auto":
        return
    strict = {**options, "isolation": "bwrap"}
    try:
        async with SandboxPool("local", **strict) as pool:
            await pool.get("isolation-check")
    except SandboxError as exc:
        raise EnvSetupError(
            f"this run holds {secrets} secret(s) (API keys from the config or the "
            "environment) and local sandboxes cannot be isolated here "
            f"({_first_line(exc)}), so their commands could read them from /proc: install "
            "bubblewrap (with user namespaces), use --env.terminal_backend docker, or "
            'accept plain commands with --env.sandbox_options \'{"isolation": "none"}\''
        ) from None


async def start_wandb(use_wandb: bool, start: Callable[[], Awaitable[Any] | Any]) -> None:
    """Call ``start`` (what initialises wandb) when ``use_wandb`` is on.

    Raises:
        EnvSetupError: one line naming ``env.use_wandb`` when wandb is missing or refuses
            to start (not logged in, ...).
    """
    if not use_wandb:
        return
    try:
        made = start()
        if isinstance(made, Awaitable):
            await made
    except ImportError:
        raise EnvSetupError(
            f"env.use_wandb is true ({_FROM}) and wandb is not installed: pass "
            "--env.use_wandb false, or pip install wandb"
        ) from None
    except Exception as exc:  # wandb raises many kinds (usage, network, auth)
        raise EnvSetupError(
            f"env.use_wandb is true ({_FROM}) and wandb did not start ({_first_line(exc)}): "
            "pass --env.use_wandb false, or log in (wandb login) or set WANDB_MODE=offline"
        ) from None
