"""``python my_env.py serve|process|evaluate``: the command line of every environment.

Options are Atropos' own: ``--config FILE.yaml`` (sections ``env:`` and ``openai:``),
``--env.X VALUE`` / ``--env.X=VALUE`` for the environment config and ``--openai.X
VALUE`` for the model endpoint; CLI over YAML over ``config_init()``. Unlike Atropos'
CLI, ``process`` and ``evaluate`` do not force wandb on (``--env.use_wandb true`` asks
for it), ``--env.x=-1`` and ``--env.x -1`` both work, an unknown option or a bad value
is one line naming the option, and SIGTERM stops like Ctrl-C (the project's signal
policy, ``hermes_sandbox.stop_on_sigterm``): in-flight rollouts cancelled, every sandbox
closed, every line already written intact; exit status 130 after Ctrl-C, 143 after
SIGTERM.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from atroposlib.envs.server_handling.server_baseline import APIServerConfig, ServerBaseline
from pydantic import ValidationError

from hermes_envs._config_layers import (
    flag_section,
    one_line,
    parse_flags,
    read_config_file,
    yaml_section,
)
from hermes_envs._errors import CliError, HermesEnvsError, TokenizerLoadError
from hermes_envs._options_help import describe_options
from hermes_envs._preflight import check_hub, check_writable
from hermes_envs._progress import RichProgress
from hermes_envs._redaction import redacting_logs
from hermes_envs.runnable import RunnableEnv, RunnableEnvClass
from hermes_sandbox import stop_on_sigterm

if TYPE_CHECKING:
    from hermes_envs._env_config import HermesAgentEnvConfig

__all__ = [
    "COMMANDS",
    "ResolvedConfig",
    "resolve_config",
    "run_cli",
    "run_command",
]

COMMANDS = ("serve", "process", "evaluate")
_SERVER_MANAGER_FLAGS = ("slurm", "testing", "max_n_completions", "proxy_url")
#: The sections of an env's ``--config`` file.
_SECTIONS = ("env", "openai", "slurm", "testing")


class ResolvedConfig:
    """What a command runs with: the env config, the server configs, Atropos' flags."""

    def __init__(
        self,
        env: HermesAgentEnvConfig,
        servers: ServerBaseline | APIServerConfig | list[APIServerConfig],
        slurm: bool,
        testing: bool,
    ) -> None:
        self.env = env
        self.servers = servers
        self.slurm = slurm
        self.testing = testing


def resolve_config(env_cls: RunnableEnvClass, command: str, args: Sequence[str]) -> ResolvedConfig:
    """Merge ``config_init()`` < YAML < CLI for ``command``.

    Raises:
        CliError: for an unknown option, an unreadable config file, an invalid value
            (one line naming the option and what is allowed), or a ``config_init()``
            that does not return a ``HermesAgentEnvConfig``.
    """
    # Loaded by now: ``env_cls`` extends it. Imported here so that importing the command
    # line does not load Atropos' config module (and transformers with it).
    from hermes_envs._env_config import HermesAgentEnvConfig

    flags = parse_flags(args)
    config_path = flags.pop("config", None)
    yaml_config = read_config_file(config_path, _SECTIONS) if config_path is not None else {}
    origin = f"--config {config_path}"
    default_env, default_servers = env_cls.config_init()
    if not isinstance(default_env, HermesAgentEnvConfig):
        raise CliError(
            f"{_class_name(env_cls)}.config_init() returned a {type(default_env).__name__}; it "
            "must return a HermesAgentEnvConfig (or a subclass) and the server configs"
        )
    env_model: type[HermesAgentEnvConfig] = type(default_env)
    unknown = [
        key
        for key in flags
        if not key.startswith(("env.", "openai.")) and key not in _SERVER_MANAGER_FLAGS
    ]
    if unknown:
        raise CliError(
            f"unknown option --{unknown[0]}; options are --config, --env.NAME, --openai.NAME"
        )

    env_values = default_env.model_dump()
    name = env_cls.name or _class_name(env_cls)
    if command == "process":
        env_values.update(ensure_scores_are_not_same=False, include_messages=True)
        if env_values.get("data_path_to_save_groups") is None:
            env_values["data_path_to_save_groups"] = f"data/{name}.jsonl"
    if command == "evaluate" and env_values.get("data_dir_to_save_evals") is None:
        env_values["data_dir_to_save_evals"] = f"data/{name}_eval"
    env_values.update(yaml_section(yaml_config, "env", env_model, origin))
    env_values.update(flag_section(flags, "env", env_model))
    if env_values.get("wandb_name") is None:
        env_values["wandb_name"] = name
    try:
        env_config = env_model(**env_values)
    except ValidationError as exc:
        raise CliError(one_line(exc, "env")) from None

    servers = _resolve_servers(default_servers, yaml_config.get("openai"), flags, origin)
    manager = {key: flags[key] for key in ("slurm", "testing") if key in flags}
    manager.update({key: yaml_config[key] for key in ("slurm", "testing") if key in yaml_config})
    truthy = ("1", "true", "yes", "True")
    return ResolvedConfig(
        env_config,
        servers,
        str(manager.get("slurm", False)) in truthy,
        str(manager.get("testing", False)) in truthy,
    )


def _resolve_servers(
    default: Any, yaml_openai: Any, flags: dict[str, str], origin: str
) -> ServerBaseline | APIServerConfig | list[APIServerConfig]:
    cli_openai = flag_section(flags, "openai", APIServerConfig)
    try:
        if isinstance(yaml_openai, list) and len(yaml_openai) >= 2:
            if cli_openai:
                raise CliError(
                    "--openai.* options cannot be used when the YAML lists several servers"
                )
            return [APIServerConfig(**entry) for entry in yaml_openai]
        if isinstance(default, list) and len(default) >= 2 and not (yaml_openai or cli_openai):
            return list(default)
        if isinstance(yaml_openai, list):
            yaml_openai = yaml_openai[0] if yaml_openai else {}
        if isinstance(yaml_openai, dict):
            yaml_openai = yaml_section({"openai": yaml_openai}, "openai", APIServerConfig, origin)
        # Only the fields set somewhere are passed on, so that the env can tell a value
        # chosen by someone (e.g. openai.timeout) from Atropos' default.
        if isinstance(default, APIServerConfig):
            base = default.model_dump(exclude_unset=True)
        elif isinstance(default, list) and default:
            base = default[0].model_dump(exclude_unset=True)
        elif isinstance(default, ServerBaseline) and not (yaml_openai or cli_openai):
            return default
        elif isinstance(default, ServerBaseline):
            base = default.model_dump(exclude_unset=True)
        else:
            base = {}
        base.update(yaml_openai or {})
        base.update(cli_openai)
        return APIServerConfig(**base)
    except ValidationError as exc:
        raise CliError(one_line(exc, "openai")) from None


def _run(main: Callable[[], Awaitable[None]]) -> int:
    """Run ``main`` under the project's signal policy (``hermes_sandbox.stop_on_sigterm``:
    SIGTERM takes Ctrl-C's path, the main task is cancelled and everything closes): 0,
    130 after Ctrl-C, 143 after SIGTERM. Off the main thread, where Python delivers no
    signals, only a cancellation stops it (130)."""
    if threading.current_thread() is not threading.main_thread():
        return 130 if _interrupted(main) else 0
    with stop_on_sigterm() as stop:
        return stop.exit_status if _interrupted(main) else 0


def _interrupted(main: Callable[[], Awaitable[None]]) -> bool:
    """Run ``main`` to its end; whether Ctrl-C, SIGTERM or a cancellation stopped it."""

    async def run() -> None:
        await main()

    try:
        asyncio.run(run())
    except (KeyboardInterrupt, asyncio.CancelledError):
        return True
    return False


def _class_name(env_cls: RunnableEnvClass) -> str:
    return str(getattr(env_cls, "__name__", "environment"))


def _usage(env_cls: RunnableEnvClass, prog: str | None) -> str:
    return (
        f"usage: {prog or Path(sys.argv[0]).name} {{serve,process,evaluate}} [--config FILE.yaml] "
        "[--env.NAME VALUE ...] [--openai.NAME VALUE ...]\n"
        f"  serve     run {_class_name(env_cls)} against an Atropos API (run-api) for RL\n"
        "  process   write scored groups to JSONL (--env.data_path_to_save_groups)\n"
        "  evaluate  run evaluate(); metrics.json and samples.jsonl in "
        "--env.data_dir_to_save_evals\n"
        "  --config FILE.yaml: env: and openai: sections (command line over YAML over "
        "config_init())\n"
        f"env options ({_class_name(env_cls)}):\n"
        + "\n".join(describe_options(env_cls.env_config_cls, "env"))
        + "\nopenai options (the model endpoint; --openai.model is --openai.model_name):\n"
        + "\n".join(describe_options(APIServerConfig, "openai"))
    )


def run_cli(
    env_cls: RunnableEnvClass,
    argv: Sequence[str],
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    prog: str | None = None,
) -> int:
    """Run one command of ``env_cls``; returns the exit status (2 for a bad command line,
    1 for a start-up failure or a failed check before the first rollout, 130/143 when
    interrupted). ``prog`` is the command shown in the usage (default: the script's
    name)."""
    out = out or sys.stdout
    err = err or sys.stderr
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_usage(env_cls, prog), file=out if argv else err)
        return 0 if argv else 2
    command, rest = argv[0], list(argv[1:])
    if command not in COMMANDS:
        print(f"error: unknown command {command!r}; choose serve, process or evaluate", file=err)
        return 2
    if any(arg in ("-h", "--help") for arg in rest):
        print(_usage(env_cls, prog), file=out)
        return 0
    try:
        resolved = resolve_config(env_cls, command, rest)
    except CliError as exc:
        print(f"error: {exc}", file=err)
        return 2
    try:
        check_hub(resolved.env.tokenizer_name, "the tokenizer", "--env.tokenizer_name")
        env = env_cls(resolved.env, resolved.servers, resolved.slurm, resolved.testing)
    except (HermesEnvsError, TokenizerLoadError, ValueError, TypeError) as exc:
        print(f"error: {exc}", file=err)
        return 1
    return run_command(
        env, command, out=out, err=err, check=lambda: _check_before_running(command, resolved)
    )


async def _check_before_running(command: str, resolved: ResolvedConfig) -> None:
    """What ``run_cli`` checks once the environment is built and before it runs (the
    model endpoints are checked by the environment's own preflight): ``evaluate``'s
    folder is writable.

    Raises:
        EnvSetupError: one line naming the option to change.
    """
    where = resolved.env.data_dir_to_save_evals
    if command == "evaluate" and where is not None:
        await asyncio.to_thread(check_writable, where, "--env.data_dir_to_save_evals")


def run_command(
    env: RunnableEnv,
    command: str,
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    check: Callable[[], Awaitable[None]] | None = None,
) -> int:
    """Run ``command`` (serve, process or evaluate) on an environment already built;
    returns the exit status (0; 1 when the run stopped with a ``HermesEnvsError``, e.g.
    ``process`` or ``serve`` without a tokenizer, a failed ``check`` or a ``setup()`` that
    could not load a dataset, said in one line on ``err``; 130/143 when interrupted).
    ``check`` runs after the tokenizer is found and before anything is shown or started.
    ``env.stats`` holds the run's counters afterwards.

    Raises:
        ValueError: for a command other than serve, process or evaluate.
    """
    out = out or sys.stdout
    err = err or sys.stderr
    runners = {
        "process": lambda: _process(env, out),
        "evaluate": lambda: _evaluate(env, out),
        "serve": lambda: _run(env.env_manager),
    }
    if command not in runners:
        raise ValueError(f"unknown command {command!r}; choose serve, process or evaluate")
    with redacting_logs(env.redactor):
        try:
            if command != "evaluate":
                _require_tokenizer(env, command)
            if check is not None:
                status = _check_first(env, check)
                if status:
                    return status
            return runners[command]()
        except HermesEnvsError as exc:
            print(f"error: {env.redactor(str(exc))}", file=err, flush=True)
            return 1


def _require_tokenizer(env: RunnableEnv, command: str) -> None:
    # Checked before anything is shown or started, so the error is the only output.
    try:
        env.require_tokenizer(command)
    except HermesEnvsError:
        _run(env.close)
        raise


def _check_first(env: RunnableEnv, check: Callable[[], Awaitable[None]]) -> int:
    """Run ``check``; 0, or 130/143 when interrupted (the env is closed then).

    Raises:
        HermesEnvsError: what ``check`` raised (the env is closed first).
    """
    try:
        status = _run(check)
    except HermesEnvsError:
        _run(env.close)
        raise
    if status:
        _run(env.close)
    return status


def _process(env: RunnableEnv, out: TextIO) -> int:
    path = env.config.data_path_to_save_groups
    total = env.config.total_steps
    env.n_groups_to_process = total
    env.group_size_to_process = env.config.group_size
    print(f"writing scored groups to {path}", file=out, flush=True)
    with RichProgress("groups", total) as progress:
        env.reporter = progress
        status = _run(env.process_manager)
    stats = env.stats
    verb = "wrote" if status == 0 else "stopped; kept"
    print(
        f"{verb} {stats.groups_done} group(s) to {path} "
        f"({stats.rollouts_done} rollouts, {stats.infra_failures} infra failure(s), "
        f"{stats.reward_errors} reward error(s), "
        f"{stats.groups_requeued} group(s) requeued, {stats.token_drift} drift)",
        file=out,
        flush=True,
    )
    return status


def _evaluate(env: RunnableEnv, out: TextIO) -> int:
    where = env.config.data_dir_to_save_evals
    print(f"writing evaluation results to {where}", file=out, flush=True)
    with RichProgress("items", None) as progress:
        env.reporter = progress
        status = _run(env.run_evaluate)
    print(
        f"{'evaluated' if status == 0 else 'stopped after'} {env.stats.groups_done} item(s) "
        f"({env.stats.infra_failures} infra failure(s), {env.stats.reward_errors} reward "
        f"error(s)); results in {where}",
        file=out,
        flush=True,
    )
    stats = env.stats
    if status == 0 and stats.eval_scored == 0 and stats.groups_done:
        print(
            f"error: nothing was scored: all {stats.groups_done} item(s) ended in "
            f"infrastructure failures or reward errors; see the samples in {where}",
            file=sys.stderr,
            flush=True,
        )
        return 1
    return status
