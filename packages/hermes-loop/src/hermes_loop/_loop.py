"""``AgentLoop``: the multi-turn tool-calling engine."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import replace
from typing import Any

from hermes_loop._dispatch import ToolRunner
from hermes_loop._errors import EndpointError, InvalidMessagesError, ToolDefinitionError
from hermes_loop._handler_pool import HandlerThreadPool
from hermes_loop._result import (
    AgentResult,
    InfraError,
    RolloutProgress,
    StopReason,
    ToolError,
    TurnRecord,
)
from hermes_loop._scope import LoopScope, current_loop_scope
from hermes_loop._tools import Tool, ToolLike
from hermes_loop._toolsets import ToolSet
from hermes_loop.endpoints._base import ChatServer, SamplingParams

__all__ = ["AgentLoop", "HermesAgentLoop"]

_ROLES = frozenset({"system", "user", "assistant", "tool", "developer"})


class AgentLoop:
    """Send messages and tool schemas, run the calls, append results, repeat.

    The loop ends when the model answers without tool calls (``finished_naturally``),
    after ``max_turns`` model calls, or on an infrastructure failure (then the result
    carries ``infra_error``; never a model failure): the endpoint failed, or answered
    the wrong shape, after its retries, or a blocking tool call got no thread within its
    timeout. Tool failures never end a rollout: each becomes a tool message and a
    ``ToolError``. Every tool call id in a rollout's messages is unique: the loop
    replaces an id that is missing or already used by ``call_<turn>_<index>``.

    Args:
        server: a ``ChatServer`` (``OpenAIChatServer`` for Phase 1,
            ``GenerateChatServer`` for Phase 2 with token-level ``managed_state``).
        tools: the ``ToolSet`` (or tools: any ``ToolLike``, e.g. ``Tool`` or
            hermes-sandbox's ``SandboxTool``, taken as they are) this rollout may call.
        max_turns: most model calls per rollout.
        temperature, max_tokens, extra_body: sampling settings for every call.
        tool_concurrency: most calls of one turn running at once.
        tool_timeout: default seconds per tool call (a tool may set its own ``timeout``).
        max_tool_output_chars: longer outputs are cut, with a visible marker.
        executor: thread pool for blocking handlers; by default the loop makes a
            ``HandlerThreadPool`` of ``tool_pool_size`` daemon threads (never joined at
            exit, so a hung handler cannot hold the process) and shuts it down in
            ``aclose()``.
        system_prompt: prepended as a system message when the input has none.
        infra_exceptions: exception types that, raised by a tool handler, are the
            infrastructure's failure rather than the model's (e.g.
            ``hermes_sandbox.SandboxError``): the rollout ends with
            ``stop_reason="infra_error"`` (kind ``tool_infra``). ``ToolInfrastructureError``
            always counts.

    Use as ``async with AgentLoop(...) as loop: result = await loop.run(messages)``;
    one loop may run many rollouts, concurrently.
    """

    def __init__(
        self,
        server: ChatServer,
        tools: ToolSet | Iterable[ToolLike] = (),
        *,
        max_turns: int = 30,
        temperature: float | None = 1.0,
        max_tokens: int | None = None,
        extra_body: Mapping[str, Any] | None = None,
        tool_concurrency: int = 8,
        tool_timeout: float = 120.0,
        max_tool_output_chars: int = 100_000,
        executor: Executor | None = None,
        tool_pool_size: int = 128,
        system_prompt: str | None = None,
        infra_exceptions: tuple[type[BaseException], ...] = (),
    ) -> None:
        if max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, got {max_turns}")
        self.server = server
        self.tools = tools if isinstance(tools, ToolSet) else ToolSet(tools)
        self.max_turns = max_turns
        self.params = SamplingParams(temperature, max_tokens, dict(extra_body or {}) or None)
        self.system_prompt = system_prompt
        self._owns_executor = executor is None
        self._executor = executor or HandlerThreadPool(tool_pool_size)
        self._runner = ToolRunner(
            self.tools,
            executor=self._executor,
            concurrency=tool_concurrency,
            timeout=tool_timeout,
            max_output_chars=max_tool_output_chars,
            infra_exceptions=infra_exceptions,
        )
        self._schemas = self.tools.schemas() or None

    async def __aenter__(self) -> AgentLoop:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    @property
    def abandoned_handlers(self) -> int:
        """Blocking handlers abandoned at their timeout that are still running."""
        return self._runner.abandoned

    async def aclose(self) -> None:
        """Shut down the thread pool if the loop made it (queued calls are dropped;
        running handlers are not killed, and never keep the process from exiting)."""
        if self._owns_executor:
            self._executor.shutdown(wait=False, cancel_futures=True)

    async def run(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        task_id: str | None = None,
        progress: RolloutProgress | None = None,
    ) -> AgentResult:
        """Run one rollout from ``messages`` (OpenAI chat format).

        Nothing the endpoint sends makes this raise: failures and wrong-shape answers
        end the rollout with ``stop_reason="infra_error"``, keeping every turn before.
        ``progress``, when given, is kept up to date as the rollout goes (its lists are
        replaced by the rollout's own at the start), so a caller that cancels the rollout
        still has what it did.

        Raises:
            InvalidMessagesError: (a ``ValueError``) if ``messages`` is empty or a message
                has no valid ``role``.
            asyncio.CancelledError: when cancelled; running tool calls are cancelled too.
        """
        history = _checked_messages(messages)
        used_ids = _call_ids(history)
        if self.system_prompt and history[0].get("role") != "system":
            history.insert(0, {"role": "system", "content": self.system_prompt})
        task = task_id or uuid.uuid4().hex
        session = self.server.session(task)
        reasoning: list[str | None] = []
        errors: list[ToolError] = []
        usage = {"prompt_tokens": 0, "completion_tokens": 0}
        turns: list[TurnRecord] = []
        live = progress if progress is not None else RolloutProgress()
        live.messages, live.reasoning_per_turn, live.tool_errors = history, reasoning, errors
        live.usage, live.turns, live.task_id = usage, turns, task
        stop: StopReason = "max_turns"
        infra: InfraError | None = None
        for turn in range(self.max_turns):
            started_at, sent = time.time(), time.perf_counter()
            try:
                answer = await session.complete(history, self._schemas, self.params)
            except EndpointError as exc:
                stop = "infra_error"
                infra = InfraError(exc.kind, str(exc), turn, exc.status)
                break
            answered = time.perf_counter()
            reasoning.append(answer.reasoning)
            for key in usage:
                usage[key] += int(answer.usage.get(key, 0))
            history.append(answer.message)
            calls = answer.message.get("tool_calls")
            turn_usage = {k: int(v) for k, v in answer.usage.items() if isinstance(v, int)}
            turns.append(TurnRecord(started_at, round(answered - sent, 6), 0.0, turn_usage))
            if not calls:
                stop = "natural"
                break
            _make_ids_unique(calls, used_ids, turn)
            outcomes = await self._runner.run(calls, turn=turn, task_id=task)
            turns[-1] = replace(turns[-1], tools_seconds=round(time.perf_counter() - answered, 6))
            for outcome in outcomes:
                history.append(outcome.message)
                if outcome.error is not None:
                    errors.append(outcome.error)
                if outcome.not_run is not None and infra is None:
                    infra = InfraError("tool_not_started", outcome.not_run, turn)
                if outcome.infra_failure is not None and infra is None:
                    infra = InfraError("tool_infra", outcome.infra_failure, turn)
            if infra is not None:
                stop = "infra_error"
                break
        return AgentResult(
            messages=history,
            turns_used=len(reasoning),
            finished_naturally=stop == "natural",
            reasoning_per_turn=reasoning,
            tool_errors=errors,
            managed_state=session.managed_state(),
            stop_reason=stop,
            infra_error=infra,
            usage=usage,
            task_id=task,
            turns=turns,
        )


class HermesAgentLoop(AgentLoop):
    """``AgentLoop`` that also takes the reference framework's keywords.

    ``HermesAgentLoop(server=..., tool_schemas=..., valid_tool_names=..., max_turns=...,
    task_id=..., temperature=..., max_tokens=..., extra_body=...)`` then ``await
    loop.run(messages)``, as the reference's environments write it:

    - ``server``: a ``ChatServer``; anything else (Atropos' server manager or a managed
      server, as the reference passes ``self.server``) means the endpoint of the
      ``LoopScope`` the running environment bound (``hermes_loop._scope``).
    - ``tool_schemas``: OpenAI tool schemas; each one's handler is the tool of that name
      in ``tools`` if given, else in the bound scope. ``valid_tool_names``, when given,
      keeps only those names (as the reference's loop rejects any other call).
    - ``task_id``: the rollout's id when ``run`` is given none (its sandbox's id).

    Other keywords are ``AgentLoop``'s; the bound scope's ``options`` fill in those not
    given.

    Raises:
        TypeError: if ``server`` is not a ``ChatServer`` and no scope is bound.
        ToolDefinitionError: (a ``ValueError``) if a schema is malformed or names a tool
            with no handler.
    """

    def __init__(
        self,
        server: Any = None,
        tools: ToolSet | Iterable[ToolLike] = (),
        *,
        tool_schemas: Sequence[Mapping[str, Any]] | None = None,
        valid_tool_names: Iterable[str] | None = None,
        task_id: str | None = None,
        **options: Any,
    ) -> None:
        scope = current_loop_scope()
        endpoint = server if callable(getattr(server, "session", None)) else None
        if endpoint is None:
            if scope is None:
                raise TypeError(
                    f"HermesAgentLoop(server=...) got {type(server).__name__}, not a "
                    "ChatServer: pass an OpenAIChatServer/GenerateChatServer, or build the "
                    "loop inside a running HermesAgentBaseEnv (which binds its endpoint)"
                )
            endpoint = scope.server
        if tool_schemas is not None:
            tools = _tools_from_schemas(tool_schemas, valid_tool_names, tools, scope)
        merged = {**(scope.options if scope is not None else {}), **options}
        super().__init__(endpoint, tools, **merged)
        self.task_id = task_id

    async def run(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        task_id: str | None = None,
        progress: RolloutProgress | None = None,
    ) -> AgentResult:
        """``AgentLoop.run`` with the loop's ``task_id`` when none is given.

        Raises:
            InvalidMessagesError: as ``AgentLoop.run``.
            asyncio.CancelledError: when cancelled.
        """
        return await super().run(messages, task_id=task_id or self.task_id, progress=progress)


def _tools_from_schemas(
    schemas: Sequence[Mapping[str, Any]],
    valid_names: Iterable[str] | None,
    given: ToolSet | Iterable[ToolLike],
    scope: LoopScope | None,
) -> list[Tool]:
    """The tools behind OpenAI ``schemas``: each one's handler from ``given`` or the
    scope, with the schema's own description and parameters.

    Raises:
        ToolDefinitionError: for a malformed schema or a name with no handler.
    """
    own = {tool.name: tool for tool in given}
    known: Mapping[str, ToolLike] = scope.tools if scope is not None else {}
    allowed = set(valid_names) if valid_names is not None else None
    tools = []
    for schema in schemas:
        function = schema.get("function") if isinstance(schema, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else None
        if not isinstance(name, str):
            raise ToolDefinitionError(
                f"tool_schemas entry {schema!r} is not an OpenAI tool schema "
                '({"type": "function", "function": {"name": ...}})'
            )
        if allowed is not None and name not in allowed:
            continue
        assert isinstance(function, Mapping)
        tool = own.get(name) or known.get(name)
        if tool is None:
            raise ToolDefinitionError(
                f"tool_schemas names {name!r} but no handler is known for it: pass "
                "tools=[Tool(...)] or build the loop inside a running HermesAgentBaseEnv "
                "that offers it"
            )
        tools.append(
            Tool(
                name,
                str(function.get("description") or tool.description),
                function.get("parameters") or tool.parameters,
                tool.handler,
                tool.timeout,
            )
        )
    return tools


def _checked_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(messages, str | bytes) or not messages:
        raise InvalidMessagesError("messages must be a non-empty list of OpenAI chat messages")
    history = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or message.get("role") not in _ROLES:
            raise InvalidMessagesError(
                f"messages[{index}] needs a 'role' of {sorted(_ROLES)}; got {message!r:.120}"
            )
        history.append(dict(message))
    return history


def _call_ids(history: Sequence[Mapping[str, Any]]) -> set[str]:
    """The tool call ids the input messages already use."""
    found: list[Any] = []
    for message in history:
        found.append(message.get("tool_call_id"))
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            found.extend(call.get("id") for call in calls if isinstance(call, dict))
    return {value for value in found if isinstance(value, str) and value}


def _make_ids_unique(calls: list[dict[str, Any]], used: set[str], turn: int) -> None:
    """Give every call an id not used before in the rollout (in place: a Phase 2 session
    knows its own messages by identity).

    Servers repeat ids (a parser hashing name and arguments, an index per turn), and
    providers reject a history whose ``tool_call_id``s repeat. A fresh id is
    ``call_<turn>_<index>``, with a suffix should even that be taken: deterministic for
    the same rollout.
    """
    for index, call in enumerate(calls):
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id or call_id in used:
            call_id = fresh = f"call_{turn}_{index}"
            suffix = 1
            while call_id in used:
                suffix += 1
                call_id = f"{fresh}_{suffix}"
            call["id"] = call_id
        used.add(call_id)
