"""`hermes-bench`: help and every bad option answer in one clear line, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hermes_benchmarks._config import leaderboard_problems
from hermes_benchmarks._evaluation import trial_settings
from hermes_benchmarks.cli import USAGE, resolve
from hermes_benchmarks.suites import SUITES, TBLITE, TERMINALBENCH2, default_yaml
from tests.benchmarks.docker_support import SHIPPED, docker_skip_reason, run_bench


def test_help_is_one_line_on_stdout() -> None:
    done = run_bench("--help")
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, USAGE, "")


def test_no_arguments_is_the_usage_line_on_stderr() -> None:
    done = run_bench()
    assert (done.returncode, done.stderr.strip()) == (2, USAGE)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["nosuite", "evaluate"], "unknown suite 'nosuite'; choose terminalbench2 or tblite"),
        (["tblite"], "unknown command none; choose evaluate or check"),
        (["tblite", "run"], "unknown command 'run'"),
        (["tblite", "evaluate", "stray"], "unexpected argument 'stray'"),
        (["tblite", "evaluate", "--bogus", "1"], "unknown option --bogus"),
        (["tblite", "evaluate", "--env.nope", "1"], "unknown option --env.nope; known env"),
        (["tblite", "evaluate", "--openai.nope", "1"], "unknown option --openai.nope"),
        (["tblite", "evaluate", "--env.n_trials", "zero"], "env.n_trials: Input should be"),
        (["tblite", "evaluate", "--env.n_trials", "0"], "env.n_trials: Input should be greater"),
        (
            ["tblite", "evaluate", "--env.task_filter", "[1"],
            "env.task_filter: '[1' is not a JSON list",
        ),
        (["tblite", "evaluate", "--config", "/nonexistent.yaml"], "--config /nonexistent.yaml"),
        (
            ["tblite", "evaluate", "--env.dataset_name", "/nonexistent/tasks.parquet"],
            "no such file or folder; set --env.tasks_dir",
        ),
        (
            ["tblite", "evaluate", "--env.dataset_name", "hermes-bench-tests/no-such-dataset"],
            "cannot reach the Hugging Face hub",
        ),
        (
            ["tblite", "evaluate", "--env.dataset_name", "null"],
            "no tasks: set --env.tasks_dir",
        ),
        (["tblite", "evaluate", "--env.tasks_dir", "/nonexistent"], "does not exist"),
        (["tblite", "evaluate", "--env.start_ahead", "-1"], "env.start_ahead"),
        (
            [
                "tblite",
                "evaluate",
                "--env.tasks_dir",
                str(SHIPPED),
                "--env.image_map",
                "justone",
            ],
            "FROM=TO",
        ),
        (
            [
                "tblite",
                "evaluate",
                "--env.tasks_dir",
                str(SHIPPED),
                "--env.agent",
                "no_such_module_here:Agent",
            ],
            "cannot import",
        ),
        (
            [
                "terminalbench2",
                "evaluate",
                "--env.tasks_dir",
                str(SHIPPED),
                "--env.leaderboard",
                "true",
            ],
            "leaderboard mode refuses these settings (n_trials is 1, under 5)",
        ),
    ],
)
def test_every_bad_option_answers_in_one_line(args: list[str], says: str) -> None:
    done = run_bench(*args, cwd=Path(__file__).parents[2])
    lines = done.stderr.strip().splitlines()
    assert done.returncode in (1, 2), done.stderr
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: "), lines[0]
    assert says in lines[0], lines[0]
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def test_a_bad_config_file_names_itself(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    for text, says in [
        ("env: [1, 2]\n", "env: must be a mapping"),
        ("- a\n", "the top level must be a mapping"),
        ("extra: {}\n", "unknown section 'extra'"),
        ("env: {n_trials: 1\n", "not valid YAML"),
    ]:
        config.write_text(text)
        done = run_bench("tblite", "check", "--config", str(config))
        lines = done.stderr.strip().splitlines()
        assert (done.returncode, len(lines)) == (2, 1), done.stderr
        assert says in lines[0], done.stderr


def test_settings_merge_default_then_config_then_flags(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("env:\n  n_trials: 3\n  max_concurrent_tasks: 7\nopenai:\n  model: m1\n")
    env, openai = resolve(
        TBLITE,
        [
            "--config",
            str(config),
            "--env.n_trials=5",
            "--env.task_filter",
            "a,b*",
            "--env.image_map",
            '["x:1=y:2"]',
            "--env.resume",
        ],
    )
    assert (env.n_trials, env.max_concurrent_tasks, env.resume) == (5, 7, True)
    assert trial_settings(env).sandboxes_ahead == 1  # docker's default
    ahead, _ = resolve(TBLITE, ["--env.start_ahead", "0", "--env.terminal_backend", "modal"])
    assert (ahead.start_ahead, trial_settings(ahead).start_ahead) == (0, 0)
    assert env.task_filter == ["a", "b*"]
    assert env.image_map == ["x:1=y:2"]
    assert env.dataset_name == "NousResearch/openthoughts-tblite"
    assert openai.model == "m1"


def test_each_suite_ships_a_default_yaml_with_its_dataset() -> None:
    assert set(SUITES) == {"terminalbench2", "tblite", "yc-bench"}
    assert TBLITE.tiers == ("easy", "medium", "hard", "extreme")
    for suite in (TERMINALBENCH2, TBLITE):
        env, _ = resolve(suite, [])
        assert env.dataset_name == suite.dataset_name
        assert "output_dir: runs/" + suite.name in default_yaml(suite)


def test_leaderboard_problems_name_every_non_comparable_setting() -> None:
    env, _ = resolve(TERMINALBENCH2, ["--env.n_trials", "5"])
    assert leaderboard_problems(env, TERMINALBENCH2) == []
    env, _ = resolve(
        TERMINALBENCH2,
        ["--env.timeout_multiplier", "2", "--env.task_filter", "a", "--env.agent", "oracle"],
    )
    assert leaderboard_problems(env, TERMINALBENCH2) == [
        "n_trials is 1, under 5",
        "timeout_multiplier is 2, not 1",
        "task_filter leaves tasks out",
        "the agent is the oracle",
    ]
    assert leaderboard_problems(env, TBLITE) == ["tblite has no leaderboard mode"]


def test_help_imports_neither_the_endpoints_nor_atropos() -> None:
    # hermes-bench --help answers at once: the agent loop's endpoints (openai) and
    # atroposlib are imported only by the commands that need them.
    probe = (
        "import sys\n"
        "from hermes_benchmarks.cli import main\n"
        "main(['--help'])\n"
        "heavy = [m for m in ('openai', 'atroposlib', 'hermes_loop._loop', 'datasets')"
        " if m in sys.modules]\n"
        "print(heavy, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stderr.strip() == "[]"
    assert done.stdout.strip() == USAGE


def test_model_and_model_name_are_one_option_and_bare_flags_are_yes_no_only(
    tmp_path: Path,
) -> None:
    _, openai = resolve(TBLITE, ["--openai.model_name", "m1"])
    assert openai.model == "m1"
    config = tmp_path / "c.yaml"
    config.write_text("openai:\n  model_name: m2\n")
    _, openai = resolve(TBLITE, ["--config", str(config)])
    assert openai.model == "m2"
    env, _ = resolve(TBLITE, ["--env.resume"])
    assert env.resume is True
    done = run_bench("tblite", "evaluate", "--env.output_dir", "--env.n_trials", "1")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.strip() == (
        "error: --env.output_dir needs a value: --env.output_dir VALUE "
        "(only yes/no options stand alone)"
    )


def test_a_run_with_nothing_scored_exits_non_zero(tmp_path: Path) -> None:
    if (reason := docker_skip_reason()) is not None:
        pytest.skip(reason)
    done = run_bench(
        "tblite",
        "evaluate",
        "--env.tasks_dir",
        str(SHIPPED),
        "--env.task_filter",
        "write-greeting",
        "--env.agent",
        "oracle",
        "--env.unofficial",
        "true",
        "--env.infra_retries",
        "0",
        "--env.offline_builds",
        "true",
        "--env.image_map",
        "hermes-sandbox/debian:bookworm=hermes-test/absent-base:1",
        "--env.output_dir",
        str(tmp_path / "out"),
    )
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "error: nothing was scored: all 1 trials ended in infrastructure errors (image_build x1)"
    )


def test_command_help_lists_every_option_and_version_answers() -> None:
    from hermes_benchmarks._config import BenchConfig, OpenAISection

    done = run_bench("tblite", "evaluate", "--help")
    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert lines[0].startswith("usage: hermes-bench tblite evaluate")
    for prefix, model in (("env", BenchConfig), ("openai", OpenAISection)):
        for name, field in model.model_fields.items():
            (line,) = [x for x in lines if x.split()[:1] == [f"--{prefix}.{name}"]]
            assert "(default " in line, line
            assert field.description
            assert field.description.split(" (")[0][:30] in line, line
    (network,) = [x for x in lines if x.split()[:1] == ["--env.network"]]
    assert network.split()[1:4] == ["task|off|host", "(default", "'task')"]
    done = run_bench("--version")
    assert done.returncode == 0
    assert done.stdout.startswith("hermes-bench ")
