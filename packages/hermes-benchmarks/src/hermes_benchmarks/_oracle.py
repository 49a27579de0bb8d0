"""The oracle agent: the task's reference solution, played through the normal loop.

For each trial a scripted model server (``hermes_loop.server.ModelServer`` with a
``Policy``) answers the hermes agent loop: its first turn calls the ``terminal`` tool with
``bash /solution/solve.sh`` (the task's ``solution/`` folder uploaded to ``/solution``
first, as harbor does), its second says it is done. So the oracle goes through the same
endpoint, loop, tools, timeouts and verifier as a model would: a task whose
oracle fails is broken, or the harness is.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Mapping

from hermes_benchmarks._agents import HermesAgent
from hermes_benchmarks._errors import TrialInfraError
from hermes_benchmarks._task import Task
from hermes_loop.server import Call, ModelRequest, ModelServer, Policy, Turn
from hermes_loop.templates import Tokenizer, load_tokenizer
from hermes_sandbox import Sandbox

__all__ = ["SOLUTION_DIR", "OracleAgent", "oracle_turn"]

#: Where the task's ``solution/`` folder is uploaded for the oracle.
SOLUTION_DIR = "/solution"


def oracle_turn(
    request: ModelRequest, *, timeout: float, env: Mapping[str, str] | None = None
) -> Turn:
    """The oracle's answer to ``request``: run the solution (with ``env``, the task's
    ``[solution] env``, exported), then say done."""
    if request.turn_index == 0:
        exports = "".join(f"export {k}={shlex.quote(v)}; " for k, v in (env or {}).items())
        command = f"{exports}bash {SOLUTION_DIR}/solve.sh"
        return Turn(tool_calls=[Call("terminal", {"command": command, "timeout": timeout})])
    return Turn("done: the reference solution ran.")


class OracleAgent:
    """Runs ``solution/solve.sh`` through the hermes loop and a scripted model server.

    The ``name`` is ``"oracle"``. The scripted servers of its trials share one tokenizer
    (hermes-loop's tiny one, loaded at the first trial) and the hermes agent's tools and
    TLS context.
    """

    name = "oracle"

    def __init__(self) -> None:
        self._tokenizer: Tokenizer | None = None
        self._agent: HermesAgent | None = None

    async def run(self, task: Task, sandbox: Sandbox, *, timeout: float) -> None:
        """Upload ``solution/`` and play it through the loop's terminal tool.

        Raises:
            TrialInfraError: kind ``agent_crash`` when the task ships no
                ``solution/solve.sh``; kind ``model_endpoint`` when the scripted server
                failed.
        """
        script = task.solution_script
        if script is None:
            raise TrialInfraError(
                "agent_crash", f"task {task.name} has no solution/solve.sh for the oracle"
            )
        env = task.resolved_env("solution")
        await sandbox.upload_dir(script.parent, SOLUTION_DIR)

        def answer(request: ModelRequest) -> Turn:
            return oracle_turn(request, timeout=timeout, env=env)

        if self._tokenizer is None:
            self._tokenizer = await asyncio.to_thread(load_tokenizer)
        async with ModelServer(Policy(answer, name="oracle"), tokenizer=self._tokenizer) as server:
            if self._agent is None:  # one for every trial: its tools and TLS made once
                self._agent = HermesAgent(
                    server.base_url, "oracle", max_turns=4, name=self.name, record_output=True
                )
            await self._agent.run_on(server.base_url, task, sandbox, timeout=timeout)
