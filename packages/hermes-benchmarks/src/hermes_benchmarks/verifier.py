"""Running a task's tests in the agent's sandbox once the agent is stopped (shared mode).

Verification that cannot be gamed: the caller has already killed every process the
agent started (``Sandbox.stop_processes``); here ``/logs/verifier`` is emptied and
``/tests`` removed and uploaded fresh from the task folder (the agent never saw them),
then ``bash /tests/test.sh`` runs in a fresh bash outside the agent's shell session (no
variable, function or ``PATH`` change of the agent reaches it) under the verifier's
timeout. The reward is read from what the tests wrote; a missing or unreadable reward is
a verifier failure, never a 0.
"""

from __future__ import annotations

import shlex

from hermes_benchmarks.errors import RewardError, TrialInfraError
from hermes_benchmarks.reward import REWARD_FILES, parse_reward
from hermes_benchmarks.task import Task
from hermes_sandbox import Sandbox

__all__ = ["TESTS_DIR", "VERIFIER_DIR", "verify"]

#: Where the task's ``tests/`` folder is uploaded just before the verifier runs.
TESTS_DIR = "/tests"
#: Where the tests write their reward (and anything else they log).
VERIFIER_DIR = "/logs/verifier"
#: Seconds allowed for emptying the verifier's folders before the tests run.
PREPARE_TIMEOUT = 60.0


def _tail(text: str, limit: int = 300) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


async def verify(task: Task, sandbox: Sandbox, *, timeout: float) -> float:
    """Run ``task``'s tests in ``sandbox`` and return the reward they wrote.

    Raises:
        TrialInfraError: kind ``verifier_timeout`` when the tests ran past ``timeout``;
            ``verifier_crash`` when the verifier's folders could not be prepared, or the
            tests exited non-zero without a reward; ``reward_missing`` /
            ``reward_unreadable`` when they exited cleanly without a readable one.
        SandboxError: the sandbox failed under the verifier (the caller's infra failure).
    """
    prepare = f"rm -rf {VERIFIER_DIR} {TESTS_DIR} && mkdir -p {VERIFIER_DIR} {TESTS_DIR}"
    prepared = await sandbox.exec(prepare, timeout=PREPARE_TIMEOUT, session=False)
    if prepared.exit_code != 0:
        raise TrialInfraError(
            "verifier_crash",
            f"could not empty {VERIFIER_DIR} and {TESTS_DIR}: {_tail(prepared.output)}",
        )
    await sandbox.upload_dir(task.tests_dir, TESTS_DIR)
    exports = "".join(
        f"export {name}={shlex.quote(value)}; " for name, value in task.config.verifier.env.items()
    )
    ran = await sandbox.exec(f"{exports}bash {TESTS_DIR}/test.sh", timeout=timeout, session=False)
    if ran.timed_out:
        raise TrialInfraError("verifier_timeout", f"the tests ran past their {timeout:g}s timeout")
    files: dict[str, bytes | None] = {}
    for name in REWARD_FILES:
        try:
            files[name] = await sandbox.read_file(f"{VERIFIER_DIR}/{name}")
        except (FileNotFoundError, IsADirectoryError):
            files[name] = None
    try:
        return parse_reward(files)
    except RewardError as error:
        if ran.exit_code != 0 and error.kind == "reward_missing":
            raise TrialInfraError(
                "verifier_crash",
                f"the tests exited with status {ran.exit_code} and wrote no reward: "
                f"{_tail(ran.output)}",
            ) from None
        raise TrialInfraError(error.kind, str(error)) from None
