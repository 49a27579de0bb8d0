"""Reading task folders in the Terminal-Bench 2 / harbor layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_benchmarks import TaskError, load_task, load_tasks
from hermes_benchmarks._samples import sample_tasks_dir

TOML = """\
version = "1.0"
artifacts = ["/app/out.txt"]

[metadata]
difficulty = "Medium"
category = "sysadmin"
tags = ["files"]
author_name = "someone"

[verifier]
timeout_sec = 30.0

[agent]
timeout_sec = 120

[environment]
build_timeout_sec = 300
cpus = 2
memory_mb = 1024
"""


def make_task(root: Path, name: str, toml: str = TOML, dockerfile: bool = True) -> Path:
    folder = root / name
    (folder / "tests").mkdir(parents=True)
    (folder / "environment").mkdir()
    (folder / "solution").mkdir()
    (folder / "instruction.md").write_text("Write hi to /app/out.txt\n")
    (folder / "task.toml").write_text(toml)
    (folder / "tests" / "test.sh").write_text("#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n")
    (folder / "solution" / "solve.sh").write_text("echo hi > /app/out.txt\n")
    if dockerfile:
        (folder / "environment" / "Dockerfile").write_text("FROM python:3.13-slim\n")
    return folder


def test_a_full_task_reads_with_every_field(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path, "write-hi"))
    assert task.name == "write-hi"
    assert task.instruction == "Write hi to /app/out.txt"
    assert task.difficulty == "medium"
    assert task.config.metadata.category == "sysadmin"
    assert task.config.metadata.tags == ["files"]
    assert task.config.verifier.timeout_sec == 30.0
    assert task.config.verifier.environment_mode == "shared"
    assert task.config.agent.timeout_sec == 120.0
    assert task.config.environment.cpus == 2.0
    assert task.config.environment.memory_mb == 1024
    assert [a.source for a in task.config.artifacts] == ["/app/out.txt"]
    assert task.dockerfile == task.path / "environment" / "Dockerfile"
    assert task.solution_script == task.path / "solution" / "solve.sh"


def test_defaults_fill_a_minimal_task_toml(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path, "bare", toml=""))
    assert task.difficulty is None
    assert task.config.agent.timeout_sec == 600.0
    assert task.config.verifier.timeout_sec == 600.0
    assert task.config.environment.build_timeout_sec == 600.0
    assert task.config.environment.cpus == 1.0


def test_separate_verifier_environment(tmp_path: Path) -> None:
    toml = '[verifier]\nenvironment_mode = "separate"\n[verifier.environment]\ncpus = 1\n'
    task = load_task(make_task(tmp_path, "sep", toml=toml))
    assert task.config.verifier.environment_mode == "separate"
    assert task.config.verifier.environment is not None


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        ("[agent]\ntimeout_sec = -1\n", "agent.timeout_sec: Input should be greater than 0"),
        ("[environment]\ncpus = 0\n", "environment.cpus: Input should be greater than 0"),
        ('[verifier]\nenvironment_mode = "elsewhere"\n', "verifier.environment_mode"),
        ('artifacts = ["relative/path"]\n', "artifact paths must be absolute"),
        ("[agent\n", "is not valid TOML"),
        ('[metadata]\ntags = "not-a-list"\n', "metadata.tags"),
        (
            '[verifier]\nenvironment_mode = "shared"\n[verifier.environment]\ncpus = 1\n',
            "[verifier.environment] cannot apply",
        ),
        (
            '[verifier]\nenvironment_mode = "elsewhere"\n[verifier.environment]\ncpus = 1\n',
            "verifier.environment_mode",
        ),
        ('artifacts = ["/app/../etc/passwd"]\n', "artifact paths must be absolute and below /"),
        ('artifacts = ["/"]\n', "artifact paths must be absolute and below /"),
        (
            'artifacts = [{ source = "/app/x", destination = "../x" }]\n',
            "artifact destinations must be relative paths",
        ),
        (
            'artifacts = [{ source = "/app/x", destination = "/x" }]\n',
            "artifact destinations must be relative paths",
        ),
        ('artifacts = [{ source = "/app/x", service = "api" }]\n', "only the task's own"),
    ],
)
def test_a_wrong_value_names_the_file_and_field(tmp_path: Path, toml: str, expected: str) -> None:
    folder = make_task(tmp_path, "bad", toml=toml)
    with pytest.raises(TaskError) as caught:
        load_task(folder)
    message = str(caught.value)
    assert str(folder / "task.toml") in message
    assert expected in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("remove", "expected"),
    [
        ("instruction.md", "instruction.md is missing"),
        ("task.toml", "task.toml is missing"),
        ("tests/test.sh", "test.sh is missing"),
        ("environment/Dockerfile", "no environment/Dockerfile and no [environment] docker_image"),
    ],
)
def test_a_missing_file_is_named(tmp_path: Path, remove: str, expected: str) -> None:
    folder = make_task(tmp_path, "t")
    (folder / remove).unlink()
    with pytest.raises(TaskError, match=r".*") as caught:
        load_task(folder)
    assert expected in str(caught.value)


def test_an_empty_instruction_is_refused(tmp_path: Path) -> None:
    folder = make_task(tmp_path, "t")
    (folder / "instruction.md").write_text("  \n")
    with pytest.raises(TaskError, match=r"instruction\.md is empty"):
        load_task(folder)


def test_a_prebuilt_image_stands_in_for_the_dockerfile(tmp_path: Path) -> None:
    toml = '[environment]\ndocker_image = "ghcr.io/x/y:1"\n'
    task = load_task(make_task(tmp_path, "pre", toml=toml, dockerfile=False))
    assert task.dockerfile is None
    assert task.config.environment.docker_image == "ghcr.io/x/y:1"


def test_environment_hash_follows_the_build_inputs(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path, "h"))
    first = task.environment_hash()
    assert first == load_task(task.path).environment_hash()
    (task.environment_dir / "extra.txt").write_text("data")
    second = task.environment_hash()
    assert second != first
    (task.environment_dir / "extra.txt").chmod(0o755)
    assert task.environment_hash() != second
    # Files outside environment/ (tests, solution) do not change the image.
    third = task.environment_hash()
    (task.path / "tests" / "more.py").write_text("x = 1")
    assert task.environment_hash() == third


def test_load_tasks_reads_every_task_folder_sorted(tmp_path: Path) -> None:
    for name in ("b-task", "a-task", "c-other"):
        make_task(tmp_path, name)
    (tmp_path / "not-a-task").mkdir()
    assert [t.name for t in load_tasks(tmp_path)] == ["a-task", "b-task", "c-other"]
    assert [t.name for t in load_tasks(tmp_path, ["c-other", "a-*"])] == ["a-task", "c-other"]


def test_a_filter_that_matches_nothing_lists_the_known_tasks(tmp_path: Path) -> None:
    make_task(tmp_path, "a-task")
    with pytest.raises(TaskError, match=r"task_filter names no task: nope \(known tasks: a-task\)"):
        load_tasks(tmp_path, ["a-task", "nope"])


def test_a_folder_without_tasks_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="holds no task folder"):
        load_tasks(tmp_path)
    with pytest.raises(TaskError, match="does not exist"):
        load_tasks(tmp_path / "missing")


SHIPPED = sample_tasks_dir()
FAULTY = Path(__file__).parent / "faulty_tasks"


def test_the_shipped_tasks_read_and_each_has_an_oracle() -> None:
    tasks = load_tasks(SHIPPED)
    assert len(tasks) >= 6
    for task in tasks:
        assert task.solution_script is not None, task.name
        assert task.dockerfile is not None, task.name
        assert task.difficulty in {"easy", "medium", "hard", "extreme"}, task.name
        assert task.dockerfile.read_text().startswith("FROM hermes-sandbox/debian:bookworm")
    assert len({t.environment_hash() for t in tasks}) == len(tasks)
    assert [t.name for t in load_tasks(FAULTY)] == ["crashing-tests", "unreadable-reward"]


def test_verifier_environment_implies_separate_mode(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path, "implied", toml="[verifier.environment]\ncpus = 2\n"))
    assert task.config.verifier.environment_mode == "separate"
    plain = load_task(make_task(tmp_path, "plain", toml=""))
    assert plain.config.verifier.environment_mode == "shared"


def test_a_tests_dockerfile_is_the_verifier_image(tmp_path: Path) -> None:
    folder = make_task(tmp_path, "own-image", toml='[verifier]\nenvironment_mode = "separate"\n')
    task = load_task(folder)
    assert task.verifier_dockerfile is None
    (folder / "tests" / "Dockerfile").write_text("FROM hermes-sandbox/debian:bookworm\n")
    before = task.tests_hash()
    assert load_task(folder).verifier_dockerfile == folder / "tests" / "Dockerfile"
    (folder / "tests" / "test.sh").write_text("#!/bin/sh\necho 0 > /logs/verifier/reward.txt\n")
    assert task.tests_hash() != before


def test_artifacts_take_plain_paths_and_harbors_object_form(tmp_path: Path) -> None:
    toml = (
        'artifacts = ["/app/out.txt", { source = "/app/data/", destination = "kept/data" },'
        ' { source = "/var/log/x.log", service = "main" }]\n'
    )
    task = load_task(make_task(tmp_path, "forms", toml=toml))
    specs = task.config.artifacts
    assert [a.source for a in specs] == ["/app/out.txt", "/app/data", "/var/log/x.log"]
    assert [a.stored_as for a in specs] == ["app/out.txt", "kept/data", "var/log/x.log"]


HARBOR_FIELDS = """\
[agent]
user = "agent"

[verifier]
user = 1000

[verifier.env]
TOKEN = "${HERMES_TEST_TOKEN}"
MODE = "${HERMES_TEST_UNSET_VARIABLE:-strict}"

[solution.env]
SOLVER = "oracle"

[environment]
workdir = "/srv/app"

[environment.env]
GREETING = "hello ${HERMES_TEST_UNSET_VARIABLE:-world}"
"""


def test_harbors_env_workdir_and_user_fields_are_read(tmp_path: Path) -> None:
    host = {"HERMES_TEST_TOKEN": "t0k"}
    task = load_task(make_task(tmp_path, "fields", HARBOR_FIELDS))
    config = task.config
    assert config.environment.workdir == "/srv/app"
    assert (config.agent.user, config.verifier.user) == ("agent", 1000)
    assert task.resolved_env("environment", host) == {"GREETING": "hello world"}
    assert task.resolved_env("verifier", host) == {"TOKEN": "t0k", "MODE": "strict"}
    assert task.resolved_env("solution", host) == {"SOLVER": "oracle"}


def test_a_template_naming_a_missing_host_variable_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    task = load_task(make_task(tmp_path, "fields", HARBOR_FIELDS))
    with pytest.raises(TaskError, match=r"\[verifier.env\] TOKEN needs \$\{HERMES_TEST_TOKEN\}"):
        task.resolved_env("verifier", {})


def test_a_relative_workdir_is_refused(tmp_path: Path) -> None:
    toml = '[environment]\nworkdir = "app"\n'
    with pytest.raises(TaskError, match=r"environment\.workdir: .*must be an absolute path"):
        load_task(make_task(tmp_path, "relative", toml))
