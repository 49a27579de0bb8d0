"""``hermes-bench {terminalbench2|tblite} {evaluate|check} --config FILE --env.X --openai.X``.

``evaluate`` runs the configured agent (``env.agent``: ``hermes`` on the ``openai:``
endpoint, ``oracle``, or ``module:Class``) over the suite's tasks; ``check`` runs the
oracle over every task and reports each task whose oracle fails (exit status 1 then);
``rescore OUT`` re-verifies a finished run from the artifacts it kept
(:mod:`hermes_benchmarks._rescore`); ``list`` prints the tasks (name, tier, category,
timeouts, image, verifier mode) without running anything. ``hermes-bench samples`` prints
the folder of the six sample tasks shipped with the package; ``hermes-bench view OUT``
writes a run's page (:mod:`hermes_benchmarks.view`).
Settings merge in that order: the suite's ``default.yaml``, ``--config FILE``, then
``--env.NAME VALUE`` / ``--openai.NAME VALUE``. Every bad option answers in one line on
stderr (exit status 2); a failure to start (no such tasks folder, a dataset that cannot
be loaded, results that need ``--env.resume true``) in one line too (exit status 1). The
tasks come from ``env.tasks_dir`` or, when it is unset, ``env.dataset_name``. Before the
first trial the output folder, the backend's support of the tasks' CPUs and memory and
the hermes agent's endpoint (``/models`` lists the model) are checked, each failure one
line (exit status 1). Ctrl-C and SIGTERM stop the run cleanly (the project's signal
policy, ``hermes_sandbox.stop_on_sigterm``): every sandbox closed, the results written so
far kept; exit status 130 after Ctrl-C, 143 after SIGTERM.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError
from rich.console import Console
from rich.table import Table

from hermes_benchmarks._config import BenchConfig, OpenAISection, Suite
from hermes_benchmarks._errors import HermesBenchmarksError
from hermes_benchmarks.suites import SUITES, YC_BENCH, default_yaml

if TYPE_CHECKING:
    from hermes_benchmarks._agents import Agent
    from hermes_benchmarks._summary import RunSummary
    from hermes_benchmarks._task import Task
    from hermes_benchmarks.progress import RunDisplay

# The agent loop, the endpoints (openai) and the run machinery are imported where a
# command needs them, so that --help and a bad option answer at once.

__all__ = ["COMMANDS", "USAGE", "main"]

COMMANDS = ("evaluate", "check", "rescore", "list")
USAGE = (
    f"usage: hermes-bench {{{'|'.join(SUITES)}}} {{{'|'.join(COMMANDS)}}} "
    "[OUT (rescore)] [--config FILE] [--env.NAME VALUE] [--openai.NAME VALUE] "
    "| hermes-bench view OUT [--serve] | hermes-bench samples"
)


class _Refusal(Exception):
    """A one-line answer and its exit status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def _build(model: type[BaseModel], values: dict[str, Any], section: str) -> Any:
    from hermes_envs import one_line

    try:
        return model.model_validate(values)
    except ValidationError as error:
        raise _Refusal(one_line(error, section), 2) from None
    except ValueError as error:  # a list option that is neither JSON nor comma-separated
        raise _Refusal(f"{section}: {error}", 2) from None


def resolve(suite: Suite, args: Sequence[str]) -> tuple[BenchConfig, OpenAISection]:
    """The suite's settings: ``default.yaml`` < ``--config`` < ``--env.X``/``--openai.X``,
    read as every command line reads them (:func:`hermes_envs.parse_flags`).

    Raises:
        _Refusal: a bad option, file or value (one line).
    """
    # hermes_envs' command line pulls in atroposlib's config types: imported when options
    # are read.
    from hermes_envs import (
        CliError,
        flag_section,
        parse_flags,
        read_config_file,
        read_yaml,
        yaml_section,
    )

    sections = ("env", "openai")
    try:
        flags = parse_flags(args)
        default = f"{suite.name} default.yaml"
        layers = [(default, read_yaml(default_yaml(suite), default, sections))]
        if "config" in flags:
            path = flags.pop("config")
            layers.append((f"--config {path}", read_config_file(path, sections)))
        for key in flags:
            section, dot, name = key.partition(".")
            if not dot or section not in sections or not name:
                raise CliError(
                    f"unknown option --{key}; options are --config, --env.NAME, --openai.NAME"
                )
        env: dict[str, Any] = {}
        openai: dict[str, Any] = {}
        for origin, layer in layers:
            env.update(yaml_section(layer, "env", BenchConfig, origin))
            openai.update(yaml_section(layer, "openai", OpenAISection, origin))
        env.update(flag_section(flags, "env", BenchConfig))
        openai.update(flag_section(flags, "openai", OpenAISection))
    except CliError as error:
        raise _Refusal(str(error), 2) from None
    return _build(BenchConfig, env, "env"), _build(OpenAISection, openai, "openai")


def _agent(command: str, config: BenchConfig, openai: OpenAISection) -> Agent:
    from hermes_benchmarks._agents import HermesAgent
    from hermes_benchmarks._evaluation import choose_agent
    from hermes_benchmarks._oracle import OracleAgent

    if command == "check":
        return OracleAgent()

    def hermes() -> Agent:
        return HermesAgent(
            openai.base_url,
            openai.model,
            api_key_env=openai.api_key_env,
            temperature=openai.temperature,
            max_tokens=openai.max_tokens,
            max_turns=config.max_turns,
        )

    return choose_agent(config.agent, hermes)


async def _evaluate(
    suite: Suite, command: str, config: BenchConfig, openai: OpenAISection, display: RunDisplay
) -> RunSummary:
    from hermes_benchmarks._evaluation import load_suite_tasks, run_suite

    tasks = await asyncio.to_thread(load_suite_tasks, suite, config)
    agent = _agent(command, config, openai)
    await _check_before_running(suite, command, config, openai, tasks)
    return await run_suite(suite, config, tasks, agent, on_progress=display)


async def _check_before_running(
    suite: Suite, command: str, config: BenchConfig, openai: OpenAISection, tasks: Sequence[Task]
) -> None:
    """Before the first trial: the settings themselves (image map, leaderboard mode), then
    the backend accepts every task's CPUs and memory, and the hermes agent's endpoint
    lists its model. That the output folder is writable is checked once, when the run
    opens it (:func:`hermes_benchmarks.run.open_results`), also before any trial.

    Raises:
        ImageMapError: an ``image_map`` entry is not ``FROM=TO``.
        SettingsError: leaderboard mode refuses the settings, or a task runs compose
            services on a backend other than docker.
        EnvSetupError: one line naming the option to change.
    """
    from hermes_benchmarks._errors import SettingsError
    from hermes_benchmarks._evaluation import leaderboard_notes, trial_settings
    from hermes_envs import check_limits, check_model_endpoint

    trial_settings(config)
    leaderboard_notes(suite, config)

    with_services = [t.name for t in tasks if t.compose is not None]
    if with_services and config.terminal_backend != "docker":
        raise SettingsError(
            f"task {with_services[0]} runs services beside the agent's container (its "
            f"docker-compose.yaml), which only the docker backend starts, not "
            f"{config.terminal_backend}: pass --env.terminal_backend docker or leave it out "
            "with --env.task_filter"
        )
    limits = [(t.name, t.config.environment.cpus, t.config.environment.memory_mb) for t in tasks]
    check_limits(config.terminal_backend, limits)
    if command != "check" and config.agent == "hermes":
        await check_model_endpoint(
            openai.base_url,
            openai.model,
            os.environ.get(openai.api_key_env),
            key_hint=f"export {openai.api_key_env} with the endpoint's key",
        )


def _report(console: Console, command: str, summary: RunSummary, config: BenchConfig) -> int:
    from hermes_benchmarks._report import results_tables
    from hermes_benchmarks.run import SUMMARY_FILE

    for table in results_tables(summary):
        console.print(table)
    for note in summary.notes:
        console.print(note, highlight=False)
    console.print(f"summary: {Path(config.output_dir) / SUMMARY_FILE}", highlight=False)
    broken = []
    if command == "check":
        broken = [task for task in summary.tasks if task.passed < task.trials]
        for task in broken:
            counts = {**task.failure_kinds, **task.error_kinds}
            kinds = ", ".join(f"{kind} x{n}" for kind, n in counts.items())
            console.print(
                f"oracle fails on {task.task} ({config.terminal_backend}): "
                f"{task.passed}/{task.trials} passed" + (f" ({kinds})" if kinds else ""),
                highlight=False,
            )
    overall = summary.overall
    if overall.trials and not overall.scored:
        kinds = ", ".join(f"{kind} x{n}" for kind, n in summary.error_kinds.items())
        print(
            f"error: nothing was scored: all {overall.trials} trials ended in infrastructure "
            f"errors ({kinds}); see results.jsonl in {config.output_dir}",
            file=sys.stderr,
        )
        return 1
    return 1 if broken else 0


def _list(console: Console, suite: Suite, config: BenchConfig) -> int:
    """Print the suite's tasks (from ``tasks_dir`` or the dataset) without running any:
    a table on a terminal, tab-separated lines with a header when piped."""
    from hermes_benchmarks._evaluation import load_suite_tasks

    tasks = load_suite_tasks(suite, config)
    header = ("task", "tier", "category", "agent_s", "verifier_s", "image", "verifier")
    rows = []
    for task in tasks:
        task_config = task.config
        image = task_config.environment.docker_image or (
            "Dockerfile" if task.dockerfile is not None else "-"
        )
        rows.append(
            (
                task.name,
                task.difficulty or "-",
                task_config.metadata.category or "-",
                f"{task_config.agent.timeout_sec:g}",
                f"{task_config.verifier.timeout_sec:g}",
                image,
                task_config.verifier.environment_mode,
            )
        )
    if not console.is_terminal:
        for row in (header, *rows):
            print("\t".join(row))
        return 0
    table = Table(title=f"{suite.name}: {len(tasks)} tasks", title_justify="left")
    for column in header:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*row)
    console.print(table)
    return 0


_COMMAND_HELP = {
    "evaluate": "run the agent (env.agent) over the suite's tasks",
    "check": "run the oracle over every task; exit 1 naming each task whose oracle fails",
    "rescore": "re-verify a finished run OUT from the artifacts it kept (OUT first)",
    "list": "print the tasks (name, tier, category, timeouts, image) without running any",
}


def _command_help(suite: str, command: str) -> str:
    """``hermes-bench SUITE COMMAND --help``: what it does and every option with its type,
    default and description."""
    from hermes_envs import describe_options

    what = _COMMAND_HELP.get(command, f"unknown command {command!r}")
    out = "rescore OUT " if command == "rescore" else f"{command} "
    return "\n".join(
        [
            f"usage: hermes-bench {suite} {out}[--config FILE] [--env.NAME VALUE] "
            "[--openai.NAME VALUE]",
            f"  {what}",
            "  settings: the suite's default.yaml < --config FILE.yaml < the options below",
            "env options:",
            *describe_options(BenchConfig, "env"),
            "openai options (the model endpoint; --openai.model_name is --openai.model):",
            *describe_options(OpenAISection, "openai"),
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``hermes-bench``; the exit status (0 also when stdout's reader went away, as
    ``hermes-bench ... | head`` does)."""
    from hermes_envs import quiet_libraries, reader_gone  # a light import: --help stays fast

    try:
        with quiet_libraries():  # no transformers banner when a command imports Atropos
            return _main(list(sys.argv[1:] if argv is None else argv))
    except BrokenPipeError:
        return reader_gone()


def _main(args: list[str]) -> int:
    if args and args[0] in ("--version", "-V"):
        from importlib.metadata import version

        print(f"hermes-bench {version('hermes-benchmarks')}")
        return 0
    asks_help = "--help" in args or "-h" in args
    if asks_help and len(args) >= 2 and args[0] in SUITES and args[0] != YC_BENCH.name:
        print(_command_help(args[0], args[1]))
        return 0
    if not args or args[0] in ("-h", "--help", "help") or (asks_help and args[0] != YC_BENCH.name):
        print(USAGE, file=sys.stdout if args else sys.stderr)
        return 0 if args else 2
    if args[0] == "samples":  # where the shipped sample tasks are
        from hermes_benchmarks._samples import sample_tasks_dir

        print(sample_tasks_dir())
        return 0
    if args[0] == "view":  # a finished run in the browser
        from hermes_benchmarks.view import view_main

        return view_main(args[1:])
    if args[0] == YC_BENCH.name:  # its own environment and options (hermes-envs' CLI)
        from hermes_benchmarks.suites.yc_bench import main as yc_bench_main

        return yc_bench_main(args[1:])
    console = Console(highlight=False, soft_wrap=True)
    try:
        suite = SUITES.get(args[0])
        if suite is None:
            raise _Refusal(f"unknown suite {args[0]!r}; choose {' or '.join(SUITES)}", 2)
        if len(args) < 2 or args[1] not in COMMANDS:
            got = repr(args[1]) if len(args) > 1 else "none"
            raise _Refusal(f"unknown command {got}; choose {' or '.join(COMMANDS)}", 2)
        command = args[1]
        if command == "rescore" and (len(args) < 3 or args[2].startswith("--")):
            raise _Refusal("rescore needs the run's folder: hermes-bench SUITE rescore OUT", 2)
        rest = args[3:] if command == "rescore" else args[2:]
        config, openai = resolve(suite, rest)
        if command == "list":
            return _list(console, suite, config)
        from hermes_benchmarks._rescore import RESCORE_DIR, rescore_command
        from hermes_benchmarks.progress import RunDisplay
        from hermes_sandbox import stop_on_sigterm

        with stop_on_sigterm() as stop:
            try:
                if command == "rescore":
                    return asyncio.run(rescore_command(args[2], config, console))
                with RunDisplay(console) as display:
                    summary = asyncio.run(_evaluate(suite, command, config, openai, display))
            except KeyboardInterrupt:
                kept = Path(args[2]) / RESCORE_DIR if command == "rescore" else config.output_dir
                print(
                    f"interrupted: every sandbox closed, results so far kept in {kept}; "
                    "finish with the same command and --env.resume true",
                    file=sys.stderr,
                )
                return stop.exit_status
        return _report(console, command, summary, config)
    except _Refusal as refusal:
        print(f"error: {refusal}", file=sys.stderr)
        return refusal.status
    except HermesBenchmarksError as error:
        status = 2 if isinstance(error, ValueError) else 1
        print(f"error: {error}", file=sys.stderr)
        return status
    except RuntimeError as error:  # a check before the first trial (hermes_envs.check_limits, ...)
        from hermes_envs import HermesEnvsError

        if not isinstance(error, HermesEnvsError):
            raise
        print(f"error: {error}", file=sys.stderr)
        return 1
