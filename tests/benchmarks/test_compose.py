"""A task's docker-compose.yaml read as harbor reads it (merged over the harness's base:
``main`` is the agent's container, the other services run beside it), and what is not
run here refused in one line when the task is read, never run differently; harbor's
multi-step tasks refused the same way."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from hermes_benchmarks import load_task
from hermes_benchmarks._errors import TaskError
from hermes_sandbox.backends.docker import Healthcheck

TOML = """version = "1.0"
[agent]
timeout_sec = 60
[verifier]
timeout_sec = 30
"""


def make_task(root: Path, compose: str | None, *, toml: str = TOML) -> Path:
    folder = root / "task"
    (folder / "environment" / "api").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "task.toml").write_text(toml)
    (folder / "instruction.md").write_text("Use the api.")
    (folder / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    (folder / "environment" / "Dockerfile").write_text("FROM hermes-sandbox/debian:bookworm\n")
    (folder / "environment" / "api" / "Dockerfile").write_text(
        "FROM hermes-sandbox/debian:bookworm\n"
    )
    if compose is not None:
        (folder / "environment" / "docker-compose.yaml").write_text(textwrap.dedent(compose))
    return folder


def error_of(folder: Path) -> str:
    with pytest.raises(TaskError) as caught:
        load_task(folder)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_harbors_multi_container_shape_is_read(tmp_path: Path) -> None:
    folder = make_task(
        tmp_path,
        """
        services:
          main:
            depends_on:
              api:
                condition: service_healthy
            environment:
              API_URL: http://api:5000
          api:
            build:
              context: ./api
            expose: ["5000"]
            environment:
              - MODE=test
              - DEBUG=true
            command: python3 server.py --port 5000
            healthcheck:
              test: ["CMD", "python3", "-c", "import socket"]
              interval: 2s
              timeout: 5s
              retries: 15
              start_period: 1m30s
          cache:
            image: redis:7
            depends_on: [api]
            healthcheck:
              test: redis-cli ping
        x-notes: ignored
        """,
    )
    task = load_task(folder)
    compose = task.compose
    assert compose is not None
    assert compose.main_depends_on == {"api": "service_healthy"}
    assert compose.main_environment == {"API_URL": "http://api:5000"}
    api, cache = compose.services
    assert api.context == (folder / "environment" / "api").resolve()
    assert api.image is None
    assert api.spec.command == ("python3", "server.py", "--port", "5000")
    assert api.spec.environment == {"MODE": "test", "DEBUG": "true"}
    assert api.spec.healthcheck == Healthcheck(
        ("CMD", "python3", "-c", "import socket"),
        interval=2.0,
        timeout=5.0,
        retries=15,
        start_period=90.0,
    )
    assert cache.image == "redis:7"
    assert cache.context is None
    assert cache.spec.depends_on == {"api": "service_started"}
    assert cache.spec.healthcheck is not None
    assert cache.spec.healthcheck.test == ("CMD-SHELL", "redis-cli ping")


def test_a_compose_file_with_only_main_adds_no_services(tmp_path: Path) -> None:
    folder = make_task(tmp_path, "services:\n  main:\n    expose: ['80']\n")
    assert load_task(folder).compose is None


@pytest.mark.parametrize(
    ("compose", "expected"),
    [
        (
            "services:\n  db:\n    image: postgres\n    volumes: ['data:/var/lib']\n",
            "services.db.volumes is not run by hermes-bench",
        ),
        (
            "services:\n  main:\n    network_mode: host\n  db:\n    image: postgres\n",
            "services.main.network_mode is not run by hermes-bench",
        ),
        ("services:\n  db:\n    image: postgres\nvolumes:\n  data: {}\n", "volumes is not run"),
        ("services:\n  db:\n    command: run\n", "services.db needs a build or an image"),
        (
            "services:\n  db:\n    build: ../../outside\n",
            "services.db.build.context must be a folder inside",
        ),
        (
            "services:\n  db:\n    build: {context: ./api, dockerfile: Other.Dockerfile}\n",
            "Other.Dockerfile is missing",
        ),
        (
            "services:\n  main:\n    depends_on: [db]\n  api:\n    image: x\n",
            "services.main depends on 'db', which is not a service",
        ),
        (
            "services:\n  a:\n    image: x\n    depends_on: [b]\n  b:\n    image: x\n"
            "    depends_on: [a]\n",
            "depends_on forms a cycle among a, b",
        ),
        (
            "services:\n  a:\n    image: x\n    healthcheck: {test: ok, interval: soon}\n",
            "healthcheck.interval must be a duration such as 2s or 1m30s",
        ),
        (
            "services:\n  a:\n    image: x\n    depends_on: {b: {condition: service_ready}}\n"
            "  b:\n    image: x\n",
            "condition must be one of service_started",
        ),
        ("services: [a, b]\n", "services must be a mapping"),
        ("services:\n  a: {image: [x\n", "is not valid YAML"),
    ],
)
def test_what_is_not_run_here_is_refused_in_one_line(
    tmp_path: Path, compose: str, expected: str
) -> None:
    assert expected in error_of(make_task(tmp_path, compose))


def test_services_with_a_separate_verifier_are_refused(tmp_path: Path) -> None:
    toml = TOML + "[verifier.environment]\ncpus = 1\n"
    toml = toml.replace("[verifier]\n", '[verifier]\nenvironment_mode = "separate"\n')
    folder = make_task(tmp_path, "services:\n  db:\n    image: x\n", toml=toml)
    assert "with a separate verifier" in error_of(folder)


def test_harbors_multi_step_tasks_are_refused_by_name(tmp_path: Path) -> None:
    toml = 'schema_version = "1.1"\n[[steps]]\nname = "scaffold"\n[[steps]]\nname = "more"\n'
    folder = make_task(tmp_path, None, toml=toml)
    (folder / "instruction.md").unlink()  # a multi-step task keeps its instructions per step
    message = error_of(folder)
    assert "declares [[steps]] (harbor's multi-step tasks)" in message
    assert "hermes-bench does not run yet" in message


def test_a_task_with_services_on_another_backend_stops_before_any_trial(
    tmp_path: Path,
) -> None:
    from .docker_support import run_bench

    tasks = tmp_path / "tasks"
    tasks.mkdir()
    folder = make_task(tasks, "services:\n  db:\n    image: x\n")
    out = tmp_path / "run"
    done = run_bench(
        "terminalbench2",
        "check",
        "--env.tasks_dir",
        str(folder.parent),
        "--env.terminal_backend",
        "local",
        "--env.output_dir",
        str(out),
    )
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr[-2000:]
    assert "task task runs services beside the agent's container" in errors[0]
    assert "pass --env.terminal_backend docker" in errors[0]
    assert not (out / "results.jsonl").exists()
