"""``python my_env.py serve|process|evaluate``: the command line of every environment.

Options are Atropos' own: ``--config FILE.yaml`` (sections ``env:`` and ``openai:``),
``--env.X VALUE`` / ``--env.X=VALUE`` for the environment config and ``--openai.X
VALUE`` for the model endpoint; CLI over YAML over ``config_init()``. Unlike Atropos'
CLI, ``process`` and ``evaluate`` do not force wandb on (``--env.use_wandb true`` asks
for it), ``--env.x=-1`` and ``--env.x -1`` both work, an unknown option or a bad value
is one line naming the option, and SIGTERM stops like Ctrl-C: in-flight rollouts
cancelled, every sandbox closed, every line already written intact.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, get_args

import yaml
from atroposlib.envs.server_handling.server_baseline import APIServerConfig, ServerBaseline
from pydantic import BaseModel, ValidationError

from hermes_envs.errors import CliError, HermesEnvsError, TokenizerLoadError
from hermes_envs.options_help import describe_options
from hermes_envs.progress import RichProgress
from hermes_envs.redaction import redacting_logs
from hermes_envs.runnable import RunnableEnv, RunnableEnvClass

if TYPE_CHECKING:
    from hermes_envs.env_config import HermesAgentEnvConfig

__all__ = [
    "COMMANDS",
    "OPENAI_ALIASES",
    "ResolvedConfig",
    "check_value",
    "parse_flags",
    "resolve_config",
    "run_cli",
    "run_command",
]

COMMANDS = ("serve", "process", "evaluate")
_SERVER_MANAGER_FLAGS = ("slurm", "testing", "max_n_completions", "proxy_url")


class _Bare(str):
    """The value of a flag given without one: ``"true"``, allowed for booleans only."""

    __slots__ = ()


#: Aliases of server options: both spellings work on every command.
OPENAI_ALIASES: dict[str, str] = {"model": "model_name", "model_name": "model"}


def check_value(key: str, value: str, annotation: Any) -> None:
    """Refuse a flag given without a value unless its option is a boolean.

    Raises:
        CliError: ``--KEY`` was given bare and its option (``annotation``) is not a bool.
    """
    if isinstance(value, _Bare) and not _is_boolean(annotation):
        raise CliError(f"--{key} needs a value: --{key} VALUE (only yes/no options stand alone)")


def _is_boolean(annotation: Any) -> bool:
    if annotation is bool:
        return True
    return bool(get_args(annotation)) and all(
        arg is bool or arg is type(None) for arg in get_args(annotation)
    )


def parse_flags(args: Sequence[str]) -> dict[str, str]:
    """``--key value`` / ``--key=value`` pairs (a flag with no value means ``true``, which
    :func:`check_value` allows for boolean options only).

    Raises:
        CliError: for an argument that is not a ``--flag``.
    """
    flags: dict[str, str] = {}
    index = 0
    while index < len(args):
        arg = args[index]
        if not arg.startswith("--") or arg == "--":
            raise CliError(f"unexpected argument {arg!r}: options look like --env.NAME VALUE")
        key, eq, value = arg[2:].partition("=")
        if not eq:
            following = args[index + 1] if index + 1 < len(args) else None
            if following is None or following.startswith("--"):
                value = _Bare("true")
            else:
                value = following
                index += 1
        flags[key] = value
        index += 1
    return flags


def _section(flags: dict[str, str], prefix: str, model: type[BaseModel]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in flags.items():
        if not key.startswith(prefix):
            continue
        name = key[len(prefix) :]
        if prefix == "openai." and name not in model.model_fields:
            name = OPENAI_ALIASES.get(name, name)
        if name not in model.model_fields:
            known = ", ".join(sorted(model.model_fields))
            raise CliError(f"unknown option --{key}; known --{prefix}NAME: {known}")
        check_value(key, value, model.model_fields[name].annotation)
        out[name] = None if value in ("None", "null") else value
    return out


def _known_keys(section: dict[str, Any], model: type[BaseModel], where: str) -> dict[str, Any]:
    """``section`` of a YAML config with aliases resolved; an unknown key is refused.

    Raises:
        CliError: a key that is not an option of ``model`` (one line naming the file's
            section and the known options).
    """
    out: dict[str, Any] = {}
    for key, value in section.items():
        name = str(key)
        if name not in model.model_fields and where == "openai":
            name = OPENAI_ALIASES.get(name, name)
        if name not in model.model_fields:
            known = ", ".join(sorted(model.model_fields))
            raise CliError(f"--config: unknown key {where}.{key}; known {where} keys: {known}")
        out[name] = value
    return out


def _one_line(error: ValidationError, prefix: str) -> str:
    parts = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"]) or "(config)"
        message = str(item["msg"]).removeprefix("Value error, ")
        value = item.get("input")
        shown = f" (got {value!r})" if isinstance(value, str | int | float) else ""
        if "got" in message:
            shown = ""
        parts.append(f"{prefix}{where}: {message}{shown}")
    return "; ".join(parts)


def _load_yaml(path: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise CliError(f"--config {path}: cannot read it ({exc.strerror or exc})") from exc
    except yaml.YAMLError as exc:
        raise CliError(f"--config {path}: not valid YAML ({exc})") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CliError(f"--config {path}: the top level must be a mapping with env: / openai:")
    return data


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
    from hermes_envs.env_config import HermesAgentEnvConfig

    flags = parse_flags(args)
    yaml_config = _load_yaml(flags.pop("config")) if "config" in flags else {}
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
    unknown_sections = sorted(set(yaml_config) - {"env", "openai", "slurm", "testing"})
    if unknown_sections:
        raise CliError(f"--config: unknown section {unknown_sections[0]!r}; use env: and openai:")
    yaml_env = yaml_config.get("env") or {}
    if not isinstance(yaml_env, dict):
        raise CliError("--config: the env: section must be a mapping")
    env_values.update(_known_keys(yaml_env, env_model, "env"))
    env_values.update(_section(flags, "env.", env_model))
    if env_values.get("wandb_name") is None:
        env_values["wandb_name"] = name
    try:
        env_config = env_model(**env_values)
    except ValidationError as exc:
        raise CliError(_one_line(exc, "env.")) from None

    servers = _resolve_servers(default_servers, yaml_config.get("openai"), flags)
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
    default: Any, yaml_openai: Any, flags: dict[str, str]
) -> ServerBaseline | APIServerConfig | list[APIServerConfig]:
    cli_openai = _section(flags, "openai.", APIServerConfig)
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
            yaml_openai = _known_keys(yaml_openai, APIServerConfig, "openai")
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
        raise CliError(_one_line(exc, "openai.")) from None


def _run(main: Callable[[], Awaitable[None]]) -> int:
    """Run ``main`` with SIGTERM cancelling it as Ctrl-C does. 0, 130 (Ctrl-C) or 143."""
    stopped: list[int] = []

    async def guarded() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None

        def on_term() -> None:
            stopped.append(signal.SIGTERM)
            task.cancel()

        # Not possible off the main thread (or on Windows): then only Ctrl-C stops cleanly.
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGTERM, on_term)
        try:
            await main()
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGTERM)

    try:
        asyncio.run(guarded())
    except KeyboardInterrupt:
        return 130
    except asyncio.CancelledError:
        return 143 if stopped else 130
    return 0


def _class_name(env_cls: RunnableEnvClass) -> str:
    return str(getattr(env_cls, "__name__", "environment"))


def _usage(env_cls: RunnableEnvClass) -> str:
    return (
        f"usage: {Path(sys.argv[0]).name} {{serve,process,evaluate}} [--config FILE.yaml] "
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
) -> int:
    """Run one command of ``env_cls``; returns the exit status (2 for a bad command line,
    1 for a start-up failure, 130/143 when interrupted)."""
    out = out or sys.stdout
    err = err or sys.stderr
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_usage(env_cls), file=out if argv else err)
        return 0 if argv else 2
    command, rest = argv[0], list(argv[1:])
    if command not in COMMANDS:
        print(f"error: unknown command {command!r}; choose serve, process or evaluate", file=err)
        return 2
    if any(arg in ("-h", "--help") for arg in rest):
        print(_usage(env_cls), file=out)
        return 0
    try:
        resolved = resolve_config(env_cls, command, rest)
    except CliError as exc:
        print(f"error: {exc}", file=err)
        return 2
    try:
        env = env_cls(resolved.env, resolved.servers, resolved.slurm, resolved.testing)
    except (TokenizerLoadError, ValueError, TypeError) as exc:
        print(f"error: {exc}", file=err)
        return 1
    return run_command(env, command, out=out, err=err)


def run_command(
    env: RunnableEnv,
    command: str,
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Run ``command`` (serve, process or evaluate) on an environment already built;
    returns the exit status (0; 1 when the run stopped with a ``HermesEnvsError``, e.g.
    ``process`` or ``serve`` without a tokenizer or a ``setup()`` that could not load a
    dataset, said in one line on ``err``; 130/143 when interrupted). ``env.stats`` holds
    the run's counters afterwards.

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
