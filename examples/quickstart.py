"""The main job, end to end, on the embedded defaults: no model, no network, no keys.

``TerminalTestEnv`` (hermes-envs) runs its ``process`` command: each task asks the agent
to write a file with known content; a scripted "oracle" model server (a real HTTP server
on 127.0.0.1) plays a model that solves them; the agent's tool calls run in ``local``
sandboxes (bubblewrap-isolated where that works); the reward reads each file back
through the rollout's ``ToolContext``; the scored groups (tokens, masks, scores,
messages) go to a JSONL file, which this script then summarises.

Run: ``./dev demo`` (or ``uv run python examples/quickstart.py``); ``./dev demo --help``
lists the options. Exit status 0 when every task scored 1.0 with no infrastructure
failure, 1 otherwise, 130/143 when interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from hermes_envs import (
    CliError,
    RunStats,
    TerminalTestEnv,
    resolve_config,
    run_command,
    terminal_test_oracle,
)
from hermes_envs.envs import TASKS
from hermes_loop.server import ModelServerThread, Policy


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """The demo's options (``--help`` prints them and exits)."""
    parser = argparse.ArgumentParser(
        prog="./dev demo",
        description=(
            "Run TerminalTestEnv's `process` end to end against a scripted oracle model "
            "server on 127.0.0.1, print a summary table and the path of the scored-groups "
            "JSONL. Needs no model, network or API key."
        ),
    )
    parser.add_argument(
        "--groups",
        type=int,
        default=len(TASKS),
        help=f"groups to score, one task each, round robin (default: {len(TASKS)}, every task)",
    )
    parser.add_argument("--group-size", type=int, default=2, help="rollouts per group (default: 2)")
    parser.add_argument(
        "--phase",
        type=int,
        choices=(1, 2),
        default=1,
        help="1: /v1/chat/completions, tokens from the chat template; 2: /generate, exact "
        "token ids and logprobs from the server (default: 1)",
    )
    parser.add_argument(
        "--backend",
        default="local",
        help="sandbox backend, e.g. local or docker (default: local)",
    )
    parser.add_argument(
        "--isolation",
        choices=("auto", "bwrap", "none"),
        default="auto",
        help="local backend only: bubblewrap namespaces (bwrap), plain commands (none), or "
        "bwrap where it works (auto, the default)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where to write the scored groups (default: a new temporary directory)",
    )
    return parser.parse_args(argv)


def process_argv(args: argparse.Namespace, base_url: str, out: Path) -> list[str]:
    """TerminalTestEnv's ``process`` options for ``args`` against the model server at
    ``base_url``."""
    argv = [
        "--env.data_path_to_save_groups",
        str(out),
        "--env.total_steps",
        str(args.groups),
        "--env.group_size",
        str(args.group_size),
        "--env.terminal_backend",
        args.backend,
        "--openai.base_url",
        base_url,
        "--openai.server_type",
        "openai" if args.phase == 1 else "vllm",
    ]
    if args.backend == "local":
        argv += ["--env.sandbox_options", json.dumps({"isolation": args.isolation})]
    return argv


def summarise(path: Path, stats: RunStats) -> dict[str, Any]:
    """Counts over the groups written to ``path`` (a missing file counts as none)."""
    groups = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    scores = [score for group in groups for score in group["scores"]]
    tokens = [len(t) for group in groups for t in group["tokens"]]
    trained = [
        sum(1 for mask in masks if mask != -100) for group in groups for masks in group["masks"]
    ]
    prompts = {group["messages"][0][0]["content"] for group in groups}
    return {
        "tasks": len(prompts),
        "groups": len(groups),
        "rollouts": len(scores),
        "mean score": sum(scores) / len(scores) if scores else 0.0,
        "infra failures": stats.infra_failures,
        "tokens": sum(tokens),
        "trained tokens": sum(trained),
    }


def show(summary: dict[str, Any], path: Path) -> None:
    """The summary table and the JSONL path."""
    table = Table(title="TerminalTestEnv process (oracle model)")
    for name in summary:
        table.add_column(name, justify="right")
    table.add_row(
        *(f"{value:.3f}" if isinstance(value, float) else str(value) for value in summary.values())
    )
    Console(width=120).print(table)
    print(f"scored groups: {path}")


def main(argv: Sequence[str]) -> int:
    """Run the demo; returns the exit status."""
    args = parse_args(argv)
    if args.groups < 1 or args.group_size < 1:
        print("error: --groups and --group-size must be at least 1", file=sys.stderr)
        return 2
    out = args.out or Path(tempfile.mkdtemp(prefix="hermes-demo-")) / "terminal-test.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    with ModelServerThread(Policy(terminal_test_oracle, name="terminal-test")) as server:
        base_url = server.base_url if args.phase == 1 else server.url
        try:
            resolved = resolve_config(TerminalTestEnv, "process", process_argv(args, base_url, out))
        except CliError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        env = TerminalTestEnv(resolved.env, resolved.servers)
        status = run_command(env, "process", out=sys.stdout)
    summary = summarise(out, env.stats)
    show(summary, out)
    if status != 0:
        return status
    good = (
        summary["groups"] == args.groups
        and summary["mean score"] == 1.0
        and summary["infra failures"] == 0
    )
    print("ok" if good else "check failed: expected every group scored 1.0, no infra failure")
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
