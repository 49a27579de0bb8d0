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
- ``check_model_endpoint``: the endpoint answers ``GET {base_url}/models`` and lists the
  model (rules below).
- ``check_hub``: a tokenizer or dataset named on the Hugging Face hub needs the hub; one
  that does not answer fails at once, naming ``HF_HUB_OFFLINE`` and the local-folder
  option (instead of the hub client's retries).
- ``check_writable``: the output folder can be made and written to.
- ``check_limits``: a sandbox backend that runs no image (``local``) accepts every task's
  CPUs and memory.

The model check's rules, for what OpenAI-compatible servers answer on ``/v1/models``:
no answer (refused, timed out) or an error status stops the run; 401/403 names the key;
404/405/501 (a server without the route) skips the check; a list that does not name the
model stops the run, except llama.cpp's (``owned_by: llamacpp``: it serves its one model
under any name) and a name that the list holds with an Ollama-style ``:latest`` suffix.
vLLM (``--served-model-name``), SGLang, OpenRouter and ``hermes-model-server`` list the
names they accept.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import tempfile
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_envs._errors import EnvSetupError
from hermes_sandbox import SandboxError, SandboxPool, create_sandbox

if TYPE_CHECKING:
    from atroposlib.envs.server_handling.server_baseline import APIServerConfig

__all__ = [
    "CLOUD_BACKENDS",
    "IMAGELESS_BACKENDS",
    "check_backend",
    "check_endpoint_key",
    "check_endpoints",
    "check_hub",
    "check_isolation",
    "check_limits",
    "check_model_endpoint",
    "check_writable",
    "start_wandb",
]

#: Backends whose sandboxes need an SDK and credentials (probed before the first rollout).
CLOUD_BACKENDS = ("modal", "daytona")
#: Backends that run commands without an image; ``check_limits`` checks these.
IMAGELESS_BACKENDS = ("local",)

_FROM = "set by the environment's config_init, the YAML or the command line"


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


#: Seconds the model endpoint and the hub get to answer a check.
CHECK_TIMEOUT = 10.0


def _reason(exc: BaseException) -> str:
    """The short cause of a failed connection (``[Errno 111] Connection refused``)."""
    text = str(getattr(exc, "reason", None) or exc)
    found = re.search(r"\[Errno -?\d+\] [^'\")\]]+", text)
    if found:
        return found.group(0).strip()
    if isinstance(exc, TimeoutError) or "timed out" in text:
        return f"no answer in {CHECK_TIMEOUT:g} s"
    return _first_line(exc)


def _get_models(url: str, api_key: str | None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(request, timeout=CHECK_TIMEOUT) as answer:
            return int(answer.status), bytes(answer.read(4 << 20))
    except urllib.error.HTTPError as exc:
        return int(exc.code), b""


def _serves(body: bytes, model: str) -> list[str] | None:
    """The listed model ids when ``model`` is not among them (``None``: it is served, or
    the answer is not a list this check can read)."""
    try:
        entries = json.loads(body).get("data")
    except (ValueError, AttributeError):
        return None
    if not isinstance(entries, list):
        return None
    ids = [str(e.get("id")) for e in entries if isinstance(e, dict) and "id" in e]
    if any(isinstance(e, dict) and e.get("owned_by") == "llamacpp" for e in entries):
        return None  # llama.cpp serves its one model whatever name a request gives
    if model in ids or f"{model}:latest" in ids:
        return None
    return ids


async def check_model_endpoint(
    base_url: str,
    model: str,
    api_key: str | None,
    *,
    url_option: str = "--openai.base_url",
    model_option: str = "--openai.model",
    key_hint: str = "export OPENAI_API_KEY or pass --openai.api_key",
) -> None:
    """Ask ``GET {base_url}/models`` before any rollout: the endpoint must answer and list
    ``model`` (the rules in this module's docstring). The request runs in a thread.

    Raises:
        EnvSetupError: one line naming the option to change: no answer or an error
            status (``url_option``), a refused key (``key_hint``), a model not listed
            (``model_option``, with up to five of the served names).
    """
    url = f"{base_url.rstrip('/')}/models"
    try:
        status, body = await asyncio.to_thread(_get_models, url, api_key)
    except (OSError, ValueError) as exc:  # URLError, timeouts, a malformed URL
        raise EnvSetupError(
            f"the model endpoint {base_url} does not answer ({_reason(exc)}): start the "
            f"model server or pass {url_option} URL of one that runs"
        ) from None
    if status in (401, 403):
        raise EnvSetupError(
            f"the model endpoint {base_url} refused the API key (HTTP {status} on "
            f"/models): {key_hint}"
        )
    if status in (404, 405, 501):
        return  # no /models route on this server: nothing to check
    if status >= 400:
        raise EnvSetupError(
            f"the model endpoint {base_url} answers /models with HTTP {status}: wait until "
            f"it is ready or pass {url_option} URL of another"
        )
    served = _serves(body, model)
    if served is not None:
        shown = ", ".join(served[:5]) + (f" (+{len(served) - 5} more)" if len(served) > 5 else "")
        raise EnvSetupError(
            f"the model endpoint {base_url} does not serve the model {model!r} (it serves: "
            f"{shown or 'nothing'}): pass {model_option} NAME with one of them"
        )


async def check_endpoints(servers: Sequence[APIServerConfig], config: object = None) -> None:
    """:func:`check_model_endpoint` for each chat-completions (``server_type`` openai)
    server with a ``base_url``, with its ``model_name`` and key (``api_key``, else
    ``OPENAI_API_KEY``). An environment whose ``config`` names an ``agent`` other than
    ``hermes`` (a benchmark suite run by its oracle or a ``module:Class`` agent) does not
    need the endpoint: nothing is checked. Environments call it after ``setup()`` and
    before the first rollout.

    Raises:
        EnvSetupError: one line naming ``--openai.base_url``, the key or
            ``--openai.model``.
    """
    if getattr(config, "agent", "hermes") != "hermes":
        return
    for server in servers:
        if server.server_type == "openai" and server.base_url:
            key = server.api_key or os.environ.get("OPENAI_API_KEY")
            await check_model_endpoint(str(server.base_url), server.model_name, key)


def check_hub(
    name: str | None,
    what: str,
    option: str,
    *,
    repo_type: str = "model",
    instead: str | None = None,
) -> None:
    """When ``name`` is a Hugging Face hub name (not a local folder or file) and the hub
    is not in offline mode (``HF_HUB_OFFLINE``), ask the hub about the ``repo_type``
    repository (``model`` or ``dataset``) once, without retries (blocking: at most
    ``CHECK_TIMEOUT`` seconds). A hub that answers, whatever it answers, passes, as does
    a name the hub client refuses to send: the loader then says what is wrong with it.
    ``instead`` is what the error tells the user to do besides offline mode (default:
    ``pass {option} a local folder``).

    Raises:
        EnvSetupError: the hub does not answer (one line naming ``HF_HUB_OFFLINE`` and
            ``option`` or ``instead``).
    """
    if not name or name.lower() == "none" or Path(name).expanduser().exists():
        return
    from huggingface_hub import HfApi, constants
    from huggingface_hub.errors import HfHubHTTPError, HFValidationError

    if constants.HF_HUB_OFFLINE:
        return
    try:
        HfApi().repo_info(name, repo_type=repo_type, timeout=CHECK_TIMEOUT)
    except (HfHubHTTPError, HFValidationError):
        return  # the hub answered, or the name is not one the hub could hold
    except Exception as exc:  # the hub client raises several kinds of connection error
        raise EnvSetupError(
            f"cannot reach the Hugging Face hub at {constants.ENDPOINT} for {what} "
            f"{name!r} ({_reason(exc)}): set HF_HUB_OFFLINE=1 to use the local cache, or "
            + (instead or f"pass {option} a local folder")
        ) from None


def check_writable(folder: str | os.PathLike[str], option: str | None) -> None:
    """Make ``folder`` (and its parents) and write and remove a file in it (blocking).

    Raises:
        EnvSetupError: it cannot be made or written (one line: "output folder X cannot
            be written (why): make it writable or pass ``option`` another folder"; only
            "make it writable" where ``option`` is None, a folder no option chooses).
    """
    where = Path(folder)
    try:
        where.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=where, prefix=".write-check-"):
            pass
    except OSError as exc:
        instead = f" or pass {option} another folder" if option else ""
        raise EnvSetupError(
            f"output folder {where} cannot be written ({exc.strerror or exc}): make it "
            f"writable{instead}"
        ) from None


def check_limits(
    backend: str,
    tasks: Iterable[tuple[str, float | None, int | None]],
    option: str = "--env.terminal_backend",
    **options: Any,
) -> None:
    """Make (without starting) a sandbox of ``backend`` with each task's CPUs and memory
    (``(name, cpus, memory_mb)``; one sandbox per distinct pair): a backend that cannot
    honour them refuses here instead of in every trial. Only backends that run no image
    (``IMAGELESS_BACKENDS``) are checked: the others take the limits with the task's image,
    which the trial makes.

    Raises:
        EnvSetupError: one line naming the first task refused, why, and ``option``.
    """
    if backend not in IMAGELESS_BACKENDS:
        return
    seen: set[tuple[float | None, int | None]] = set()
    for name, cpus, memory_mb in tasks:
        if (cpus, memory_mb) in seen:
            continue
        seen.add((cpus, memory_mb))
        try:
            create_sandbox(backend, task_id="preflight", cpus=cpus, memory_mb=memory_mb, **options)
        except (SandboxError, ValueError) as exc:
            raise EnvSetupError(
                f"the {backend} backend cannot run task {name!r} (cpus {cpus}, memory_mb "
                f"{memory_mb}): {_first_line(exc)}; pass {option} docker (or another "
                "backend that enforces them)"
            ) from None


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
