"""YC-Bench's command line: ``python -m hermes_benchmarks.suites.yc_bench {evaluate|check}``
(also ``hermes-bench yc-bench {evaluate|check}``).

``evaluate`` is :class:`~hermes_benchmarks.yc_bench.env.YCBenchEvalEnv`'s ``evaluate``
with hermes-envs' options (``--config FILE``, ``--env.NAME``, ``--openai.NAME``: e.g.
``--env.presets '["fast_test"]' --env.seeds '[1]' --openai.base_url URL
--openai.model_name M``); the shipped ``yc-bench.yaml`` beside this file holds the
defaults. ``check`` plays the same runs with the scripted greedy player through a model
server on 127.0.0.1 (no model needed) and exits 1 when a run ended in an infrastructure
failure: it checks yc-bench, its environment and the harness end to end.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main"]

USAGE = (
    "usage: hermes-bench yc-bench {evaluate|check} [--config FILE] [--env.NAME VALUE] "
    "[--openai.NAME VALUE]"
)


def _help() -> str:
    """``--help``: the two commands and every option ``evaluate`` and ``check`` take."""
    from atroposlib.envs.server_handling.server_baseline import APIServerConfig

    from hermes_benchmarks.yc_bench.env import YCBenchEvalEnv
    from hermes_envs import describe_options

    return "\n".join(
        [
            USAGE,
            "  evaluate  play the runs with the model at --openai.base_url (results in "
            "--env.output_dir)",
            "  check     play them with the scripted greedy player (no model needed); exit "
            "1 on an infrastructure failure",
            "  --config FILE.yaml: env: and openai: sections (command line over YAML over "
            "the shipped yc-bench.yaml)",
            "env options (YCBenchEvalEnv):",
            *describe_options(YCBenchEvalEnv.env_config_cls, "env"),
            "openai options (the model endpoint; --openai.model is --openai.model_name):",
            *describe_options(APIServerConfig, "openai"),
        ]
    )


def _check(args: list[str]) -> int:
    from hermes_benchmarks.run import SUMMARY_FILE
    from hermes_benchmarks.yc_bench._player import PLAYER_MODEL, greedy_player
    from hermes_benchmarks.yc_bench.env import YCBenchEvalEnv
    from hermes_envs import CliError, resolve_config, run_cli
    from hermes_loop.server import ModelServerThread, Policy

    try:
        resolved = resolve_config(YCBenchEvalEnv, "evaluate", args)
    except CliError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    player = Policy(greedy_player(), name=PLAYER_MODEL)
    with ModelServerThread(player) as server:
        endpoint = ["--openai.base_url", server.base_url, "--openai.model_name", PLAYER_MODEL]
        status = run_cli(YCBenchEvalEnv, ["evaluate", *args, *endpoint, "--openai.api_key", "x"])
    summary = Path(str(getattr(resolved.env, "output_dir", ""))) / SUMMARY_FILE
    if status != 0 or not summary.exists():
        return status or 1
    infra = json.loads(summary.read_text(encoding="utf-8"))["overall"]["infra_errors"]
    if infra:
        print(f"check: {infra} run(s) ended in an infrastructure failure", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``evaluate`` or ``check``; the exit status (2 for a bad command line)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print(USAGE, file=sys.stderr)
        return 2
    if args[0] in ("-h", "--help", "help"):
        print(_help())
        return 0
    if args[0] not in ("evaluate", "check"):
        print(f"error: unknown command {args[0]!r}; choose evaluate or check", file=sys.stderr)
        return 2
    if any(arg in ("-h", "--help") for arg in args[1:]):
        print(_help())  # check takes evaluate's options (the endpoint's aside)
        return 0
    if args[0] == "check":
        return _check(args[1:])
    from hermes_benchmarks.yc_bench.env import YCBenchEvalEnv
    from hermes_envs import run_cli

    return run_cli(YCBenchEvalEnv, ["evaluate", *args[1:]], prog="hermes-bench yc-bench")


if __name__ == "__main__":
    sys.exit(main())
