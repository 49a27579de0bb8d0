"""Pluggable agents: what works in a trial's sandbox before the verifier runs.

An agent is any object with a ``name`` and ``async run(task, sandbox, *, timeout)``. The
trial runner times it (``timeout`` is the agent's budget in seconds, already scaled by the
run's multiplier), cancels it at that budget and verifies what it did (the processes it
left keep running, as services the tests may probe): an agent cannot opt out of that.

- :class:`HermesAgent`: the hermes agent loop on an OpenAI-compatible endpoint, with the
  ``terminal`` and ``file`` tools bound to the trial's sandbox (the default).
- :class:`~hermes_benchmarks._oracle.OracleAgent`: the task's reference solution played
  through the same loop by a scripted model server.
- a user's class, named ``module:Class`` (harbor's custom-agent convention), loaded with
  :func:`load_agent`.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.metadata
import inspect
import json
import logging
import os
import ssl
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final, Protocol, runtime_checkable

from hermes_benchmarks._errors import AgentLoadError, TrialInfraError
from hermes_benchmarks._record import current_record
from hermes_benchmarks._task import Task
from hermes_envs import SANDBOX_FAILURES, InfraFailure, run_agent
from hermes_loop import (
    AgentLoop,
    AgentResult,
    OpenAIChatServer,
    RolloutProgress,
    ToolLike,
    ToolSet,
    atif_trajectory,
)
from hermes_sandbox import Sandbox, SandboxClosedError, sandbox_tools
from hermes_sandbox.tools import SandboxSource

__all__ = [
    "AGENT_TOOLSETS",
    "Agent",
    "HermesAgent",
    "SingleSandbox",
    "TrialSandboxes",
    "load_agent",
    "trial_infra_error",
]

log = logging.getLogger(__name__)

#: The toolsets the hermes agent gets in a benchmark sandbox.
AGENT_TOOLSETS: tuple[str, ...] = ("terminal", "file")


@runtime_checkable
class Agent(Protocol):
    """What the trial runner drives.

    ``run`` works on ``task`` (its ``instruction``) inside ``sandbox``, and returns when
    the agent is done. It may raise :class:`TrialInfraError` (kind ``model_endpoint``)
    when infrastructure outside the sandbox failed; any other exception is recorded as
    an ``agent_crash``. It is cancelled at ``timeout`` seconds.
    """

    name: str

    async def run(self, task: Task, sandbox: Sandbox, *, timeout: float) -> None:
        """Work on ``task`` in ``sandbox``."""
        ...


class SingleSandbox:
    """A ``SandboxSource`` holding one sandbox: every task id reaches it."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    async def get(self, task_id: str) -> Sandbox:
        """The trial's sandbox, whatever ``task_id`` asks for."""
        return self.sandbox


class TrialSandboxes:
    """A ``SandboxSource`` holding the sandboxes of the trials an agent is running, by
    their task id: tools built once reach each trial's own sandbox."""

    def __init__(self) -> None:
        self._by_id: dict[str, Sandbox] = {}

    @contextlib.contextmanager
    def holding(self, sandbox: Sandbox) -> Iterator[None]:
        """Hold ``sandbox`` (under its task id) for the block."""
        self._by_id[sandbox.task_id] = sandbox
        try:
            yield
        finally:
            if self._by_id.get(sandbox.task_id) is sandbox:
                del self._by_id[sandbox.task_id]

    async def get(self, task_id: str) -> Sandbox:
        """The sandbox of the running trial ``task_id``.

        Raises:
            SandboxClosedError: no running trial has that task id (its trial ended).
        """
        try:
            return self._by_id[task_id]
        except KeyError:
            raise SandboxClosedError(
                f"no sandbox for {task_id}: its trial is not running"
            ) from None


class HermesAgent:
    """The hermes agent loop on an OpenAI-compatible endpoint.

    Args:
        base_url: the endpoint (``.../v1``).
        model: the model name sent with each request.
        api_key_env: the environment variable holding the key (never logged).
        api_key: the key itself (wins over ``api_key_env``; sent in the HTTP header only).
        max_turns: the loop's turn budget.
        temperature: sampling temperature.
        max_tokens: per-response token cap, or None.
        system_prompt: prepended to each rollout, or None.
        extra_body: extra request fields.
        name: the agent's name in results and trajectories.
        record_output: also keep what the tool calls printed, in order, as the record's
            ``agent/output.txt`` (the oracle: what ``solve.sh`` printed).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        api_key: str | None = None,
        max_turns: int = 50,
        temperature: float = 1.0,
        max_tokens: int | None = None,
        system_prompt: str | None = None,
        extra_body: dict[str, Any] | None = None,
        name: str = "hermes",
        record_output: bool = False,
    ) -> None:
        self.name = name
        self.record_output = record_output
        self.base_url = base_url
        self.model = model
        self.api_key_env = api_key_env
        self.api_key = api_key
        self.max_turns = max_turns
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.system_prompt = system_prompt
        self.extra_body = extra_body
        self._sandboxes = TrialSandboxes()
        self._toolset: ToolSet | None = None
        self._ssl: ssl.SSLContext | None = None

    def tools(self, sandboxes: SandboxSource) -> Sequence[ToolLike]:
        """The ``terminal`` and ``file`` tools, reaching each trial's sandbox through
        ``sandboxes`` (hermes-sandbox's ``SandboxTool`` objects, which the loop takes as
        they are). Called once per agent: the tools (checked once) serve every trial."""
        return sandbox_tools(sandboxes, toolsets=AGENT_TOOLSETS)

    async def _shared(self) -> tuple[ToolSet, ssl.SSLContext]:
        """The toolset and the TLS context every trial of this agent uses, made at the
        first (a context reads the system's certificates: about 20 ms per client
        otherwise)."""
        if self._toolset is None:
            self._toolset = ToolSet(self.tools(self._sandboxes))
        if self._ssl is None:
            self._ssl = await asyncio.to_thread(ssl.create_default_context)
        return self._toolset, self._ssl

    async def run(self, task: Task, sandbox: Sandbox, *, timeout: float) -> None:
        """Run the loop on the task's instruction until the model stops or its turns end
        (``run_agent``, as every agent run).

        Raises:
            TrialInfraError: kind ``model_endpoint`` when the endpoint failed after its
                retries, ``agent_crash`` when a tool's infrastructure failed (see
                :func:`trial_infra_error`): not the model's 0.
        """
        await self.run_on(self.base_url, task, sandbox, timeout=timeout)

    async def run_on(self, base_url: str, task: Task, sandbox: Sandbox, *, timeout: float) -> None:
        """As :meth:`run`, on the endpoint ``base_url`` (one agent serving trials whose
        endpoints differ, as the oracle's scripted servers do).

        Raises:
            TrialInfraError: as :meth:`run`.
        """
        tools, tls = await self._shared()
        endpoint = OpenAIChatServer(
            base_url=base_url,
            model=self.model,
            api_key=self.api_key,
            api_key_env=self.api_key_env,
            ssl_context=tls,
        )
        progress = RolloutProgress()
        try:
            with self._sandboxes.holding(sandbox):
                async with AgentLoop(
                    endpoint,
                    tools,
                    max_turns=self.max_turns,
                    temperature=self.temperature,
                    max_tokens=self.max_tokens,
                    extra_body=self.extra_body,
                    tool_timeout=timeout,
                    system_prompt=self.system_prompt,
                    infra_exceptions=SANDBOX_FAILURES,
                ) as loop:
                    run = await run_agent(
                        loop,
                        [{"role": "user", "content": task.instruction}],
                        task_id=sandbox.task_id,
                        sandboxes=SingleSandbox(sandbox),
                        progress=progress,
                    )
        except asyncio.CancelledError:  # the trial's timeout: keep the rollout so far
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._keep(progress.result("budget"), tools))
            raise
        finally:
            await endpoint.aclose()
        if run.result is not None:
            await self._keep(run.result, tools)
        if run.failure is not None:
            raise trial_infra_error(run.failure)

    def secrets(self) -> list[str]:
        """The API key this agent sends (never written into a trial's record)."""
        key = self.api_key or os.environ.get(self.api_key_env)
        return [key] if key else []

    async def _keep(self, result: AgentResult, tools: Iterable[ToolLike]) -> None:
        """Write the rollout into the trial's record (when the run keeps one) as harbor's
        ATIF trajectory and as our own result; a failure to write is logged, not raised."""
        record = current_record()
        if record is None:
            return
        trajectory = atif_trajectory(
            result,
            agent_name=self.name,
            agent_version=_version(),
            model_name=self.model,
            tools=[tool.schema() for tool in tools],
        )
        try:
            await record.awrite_json("agent/trajectory.json", trajectory)
            await record.awrite_json("agent/messages.json", result.to_dict())
            if self.record_output:
                printed = [
                    _printed(message.get("content"))
                    for message in result.messages
                    if message.get("role") == "tool"
                ]
                await record.awrite_text("agent/output.txt", "\n".join(printed))
        except OSError as error:
            log.warning("could not keep the agent's conversation in %s: %s", record.folder, error)


#: The trial error kind (``hermes_benchmarks._results.ErrorKind``) of each stage of an
#: agent run's infrastructure failure (``hermes_envs.infra_stage``): a tool
#: that found its sandbox gone is an ``agent_crash``, which the trial runner then
#: attributes to the agent (scored) when the sandbox was stopped from inside.
_TRIAL_KINDS: Final[dict[str, tuple[str, str]]] = {
    "sandbox_start": ("sandbox_start", "the sandbox would not start"),
    "model_endpoint": ("model_endpoint", "the model endpoint failed"),
    "sandbox_lost": ("agent_crash", "a tool's infrastructure failed under the agent"),
}


def trial_infra_error(failure: InfraFailure) -> TrialInfraError:
    """The trial's error for an agent run's infrastructure failure: its kind from the
    failure's stage (``sandbox_lost`` is ``agent_crash``), its message the failure's.

    Raises:
        ValueError: the stage is not one an agent run ends on.
    """
    try:
        kind, what = _TRIAL_KINDS[failure.stage]
    except KeyError:
        raise ValueError(f"{failure.stage!r} is not a stage an agent run ends on") from None
    return TrialInfraError(kind, f"{what} ({failure.message})")


def _printed(content: Any) -> str:
    """What a tool call printed: the terminal tool's ``output`` (its answer is JSON with
    ``output`` and ``exit_code``), else the tool message as it is."""
    text = str(content or "")
    try:
        answer = json.loads(text)
    except ValueError:
        return text
    if isinstance(answer, dict) and isinstance(answer.get("output"), str):
        return str(answer["output"])
    return text


def _version() -> str:
    """hermes-benchmarks' installed version (``"0"`` when it runs from a bare source tree)."""
    try:
        return importlib.metadata.version("hermes-benchmarks")
    except importlib.metadata.PackageNotFoundError:
        return "0"


def load_agent(spec: str, *, kwargs: dict[str, Any] | None = None) -> Agent:
    """The agent ``module:Class`` built with ``kwargs``.

    Raises:
        AgentLoadError: ``spec`` is not ``module:Class``, the module cannot be imported,
            it has no such attribute, it is not a class, building it failed, or the
            object has no ``name`` and ``async run(task, sandbox, *, timeout)``.
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise AgentLoadError(
            f"agent {spec!r} is not of the form module:Class (e.g. my_pkg:MyAgent)"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise AgentLoadError(f"agent {spec!r}: cannot import {module_name}: {error}") from None
    cls = module
    for part in attribute.split("."):
        try:
            cls = getattr(cls, part)
        except AttributeError:
            raise AgentLoadError(f"agent {spec!r}: {module_name} has no {attribute}") from None
    if not inspect.isclass(cls):
        raise AgentLoadError(f"agent {spec!r} is not a class")
    try:
        agent = cls(**(kwargs or {}))
    except Exception as error:  # a user's constructor: anything may go wrong
        raise AgentLoadError(f"agent {spec!r} could not be built: {error}") from None
    run = getattr(agent, "run", None)
    if not isinstance(getattr(agent, "name", None), str) or not inspect.iscoroutinefunction(run):
        raise AgentLoadError(
            f"agent {spec!r} needs a str attribute name and an "
            "`async def run(self, task, sandbox, *, timeout)` method"
        )
    return agent
