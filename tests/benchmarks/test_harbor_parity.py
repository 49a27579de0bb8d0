"""Harbor parity: the oracle passes every task of tasks_harbor/ (harbor-format tasks in
the shapes real tasks have: the image's own PATH and WORKDIR, a service the tests probe,
a ``set -e`` verifier, task.toml's env and workdir, declared artifacts, a separate
verifier, and a service beside the agent's container from the task's
docker-compose.yaml), as harbor's own oracle does on the same images."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_benchmarks import (
    HermesAgent,
    OracleAgent,
    TrialSettings,
    load_task,
    load_tasks,
    run_trial,
)
from hermes_loop.server import Call, ModelServer, Script, Turn
from tests.benchmarks.docker_support import docker_skip_reason, oracle_trials

REASON = docker_skip_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")

HARBOR = Path(__file__).parent / "tasks_harbor"
SETTINGS = TrialSettings(infra_retries=0)


async def test_the_oracle_passes_every_harbor_parity_task() -> None:
    tasks = load_tasks(HARBOR)
    assert {task.name for task in tasks} >= {
        "agent-user",
        "image-path-workdir",
        "multi-container",
        "separate-artifacts",
        "service-probe",
        "set-e-verifier",
        "task-env-workdir",
    }
    results = await oracle_trials(tasks, SETTINGS)
    for name, result in results.items():
        assert (result.status, result.reward) == ("pass", 1.0), (name, result.error)
        assert not result.suspect, (name, result.attempts[-1].suspect_reasons)


async def test_a_server_the_agent_started_is_still_up_for_the_tests() -> None:
    result = await run_trial(load_task(HARBOR / "service-probe"), OracleAgent(), SETTINGS, trial=0)
    assert (result.status, result.reward) == ("pass", 1.0), result.error
    assert "integrity" in result.timings


async def test_a_set_e_verifier_stopping_without_a_reward_is_a_scored_zero() -> None:
    half = "printf 'mode=fast\\n' > /app/config.ini"
    script = Script([Turn(tool_calls=[Call("terminal", {"command": half})]), Turn("done")])
    async with ModelServer(script) as server:
        agent = HermesAgent(server.base_url, "scripted", name="half-done")
        settings = TrialSettings(infra_retries=2)
        task = load_task(HARBOR / "set-e-verifier")
        result = await run_trial(task, agent, settings, trial=0)
    assert (result.status, result.reward, result.error_kind) == ("fail", 0.0, "reward_missing")
    assert len(result.attempts) == 1, "a verdict is not retried"


async def test_task_env_and_workdir_reach_the_agent_and_the_tests() -> None:
    task = load_task(HARBOR / "task-env-workdir")
    assert task.config.environment.workdir == "/srv/project"
    assert task.resolved_env("environment") == {"PROJECT": "hermes"}
    result = await run_trial(task, OracleAgent(), SETTINGS, trial=0)
    assert (result.status, result.reward) == ("pass", 1.0), result.error


def _nothing_left() -> None:
    """No container of this process and no services network is left on the daemon."""
    from hermes_sandbox.backends.docker import RUN_ID, DockerDaemon, list_containers

    assert not list_containers(run_id=RUN_ID)
    daemon = DockerDaemon.open()
    try:
        left = [
            n["Name"] for n in daemon.api.networks() if n["Name"].startswith("hermes-services-")
        ]
    finally:
        daemon.close()
    assert not left


async def test_a_compose_service_is_reached_by_name_and_removed_after() -> None:
    task = load_task(HARBOR / "multi-container")
    assert task.compose is not None
    assert [s.name for s in task.compose.services] == ["api-server"]
    assert task.compose.main_depends_on == {"api-server": "service_healthy"}
    result = await run_trial(task, OracleAgent(), SETTINGS, trial=0)
    assert (result.status, result.reward) == ("pass", 1.0), result.error
    assert "services" in result.timings
    _nothing_left()


async def test_a_run_removes_its_compose_services_before_it_returns(tmp_path: Path) -> None:
    """In a run the sandboxes close in the background; their services go after them,
    and all of it before run_benchmark returns."""
    from hermes_benchmarks import run_benchmark

    task = load_task(HARBOR / "multi-container")
    summary = await run_benchmark(
        [task], OracleAgent(), SETTINGS, output_dir=tmp_path / "run", n_trials=2
    )
    assert (summary.overall.passed, summary.overall.trials) == (2, 2)
    _nothing_left()


async def test_without_its_service_the_same_agent_fails(tmp_path: Path) -> None:
    """The service is what the pass depends on: the same task without its compose file
    fails (the oracle cannot reach api-server), so the pass above is the service's."""
    import shutil

    copy = tmp_path / "multi-container"
    shutil.copytree(HARBOR / "multi-container", copy)
    (copy / "environment" / "docker-compose.yaml").unlink()
    task = load_task(copy)
    assert task.compose is None
    result = await run_trial(task, OracleAgent(), SETTINGS, trial=0)
    assert (result.status, result.reward) == ("fail", 0.0), result.error
