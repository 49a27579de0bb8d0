"""A rollout as harbor's ATIF trajectory (Agent Trajectory Interchange Format).

``atif_trajectory(result, ...)`` turns an :class:`~hermes_loop._result.AgentResult` into
the JSON object harbor writes as ``trajectory.json`` per trial (RFC 0001 of
harbor-framework/harbor; schema version :data:`ATIF_VERSION`), so that tools built for
harbor's trajectories (its viewer, SFT/RL converters) read ours:

- every ``system``/``developer`` message is a ``system`` step, every ``user`` message a
  ``user`` step, every assistant message an ``agent`` step with its text, its reasoning
  (``reasoning_content``), its tool calls (arguments as objects) and, as its
  ``observation``, the tool messages that answered those calls;
- an agent step's ``metrics`` hold that model call's token counts, and its ``extra`` the
  seconds the call and its tools took (``model_seconds``, ``tools_seconds``), from the
  result's ``turns``; its ``timestamp`` is when the request was sent;
- ``final_metrics`` sums the tokens; the root ``extra`` keeps how the rollout ended
  (``stop_reason``, ``turns_used``, ``tool_errors``, ``infra_error``).

Arguments that are not a JSON object (the model wrote malformed JSON) appear as ``{}``
with the raw text in the call's ``extra["raw_arguments"]``: ATIF requires an object, and
nothing the model wrote is lost.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from hermes_loop._result import AgentResult, TurnRecord

__all__ = ["ATIF_VERSION", "atif_trajectory"]

#: The ATIF version written (harbor 0.26 reads 1.0 to 1.8; 1.6 added content parts and
#: the agent's ``tool_definitions``, which are what we write beyond 1.0).
ATIF_VERSION: Final = "ATIF-v1.6"

_SYSTEM_ROLES: Final = frozenset({"system", "developer"})


def atif_trajectory(
    result: AgentResult,
    *,
    agent_name: str = "hermes-agent",
    agent_version: str = "0",
    model_name: str | None = None,
    session_id: str | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    notes: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ATIF trajectory of ``result`` as a JSON-ready dict.

    Args:
        result: the rollout (its ``messages`` and, when the loop recorded them, its
            per-turn ``turns``).
        agent_name, agent_version, model_name: the root ``agent`` object.
        session_id: the run's id (default: the result's ``task_id``).
        tools: the tool schemas the agent was given (OpenAI shape), kept as the agent's
            ``tool_definitions``.
        notes, extra: the root ``notes`` and fields added to the root ``extra``.

    Never raises on what a model or tool wrote: unknown roles become ``user`` steps with
    the role kept in ``extra``, non-text content is kept as its JSON text.
    """
    steps: list[dict[str, Any]] = []
    turns = list(result.turns)
    reasoning = list(result.reasoning_per_turn)
    agent_index = 0
    last_agent: dict[str, Any] | None = None
    for message in result.messages:
        role = message.get("role")
        if role == "tool":
            step = last_agent if last_agent is not None else _orphan_step(steps)
            _observe(step, message)
            continue
        if role == "assistant":
            turn = turns[agent_index] if agent_index < len(turns) else None
            thought = reasoning[agent_index] if agent_index < len(reasoning) else None
            last_agent = _agent_step(message, turn, thought, model_name)
            steps.append(last_agent)
            agent_index += 1
            continue
        last_agent = None
        source = "system" if role in _SYSTEM_ROLES else "user"
        step = {"source": source, "message": _text(message.get("content"))}
        if role not in ("system", "user"):
            step["extra"] = {"role": role}
        steps.append(step)
    if not steps:  # ATIF needs one step; an empty rollout keeps that it was empty
        steps.append({"source": "system", "message": "", "extra": {"empty": True}})
    for number, step in enumerate(steps, start=1):
        step["step_id"] = number
    agent: dict[str, Any] = {"name": agent_name, "version": agent_version}
    if model_name:
        agent["model_name"] = model_name
    if tools:
        agent["tool_definitions"] = [dict(tool) for tool in tools]
    trajectory: dict[str, Any] = {
        "schema_version": ATIF_VERSION,
        "session_id": session_id or result.task_id or "rollout",
        "agent": agent,
        "steps": [_ordered(step) for step in steps],
        "final_metrics": _final_metrics(result, len(steps)),
        "extra": {
            "stop_reason": result.stop_reason,
            "turns_used": result.turns_used,
            "finished_naturally": result.finished_naturally,
            "tool_errors": [_tool_error(error) for error in result.tool_errors],
            "infra_error": _infra(result),
            **dict(extra or {}),
        },
    }
    if notes:
        trajectory["notes"] = notes
    return trajectory


def _agent_step(
    message: Mapping[str, Any],
    turn: TurnRecord | None,
    thought: str | None,
    model_name: str | None,
) -> dict[str, Any]:
    step: dict[str, Any] = {"source": "agent", "message": _text(message.get("content"))}
    if turn is not None:
        step["timestamp"] = (
            datetime.fromtimestamp(turn.started_at, UTC).isoformat().replace("+00:00", "Z")
        )
    if model_name:
        step["model_name"] = model_name
    thought = thought or message.get("reasoning_content") or message.get("reasoning")
    if isinstance(thought, str) and thought:
        step["reasoning_content"] = thought
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        step["tool_calls"] = [_tool_call(call, index) for index, call in enumerate(calls)]
    if turn is not None:
        metrics: dict[str, Any] = {}
        for ours, theirs in (
            ("prompt_tokens", "prompt_tokens"),
            ("completion_tokens", "completion_tokens"),
            ("cached_tokens", "cached_tokens"),
        ):
            if ours in turn.usage:
                metrics[theirs] = int(turn.usage[ours])
        if metrics:
            step["metrics"] = metrics
        step["extra"] = {
            "model_seconds": turn.model_seconds,
            "tools_seconds": turn.tools_seconds,
        }
    return step


def _tool_call(call: Any, index: int) -> dict[str, Any]:
    if not isinstance(call, Mapping):
        return {
            "tool_call_id": f"call_{index}",
            "function_name": "",
            "arguments": {},
            "extra": {"raw": _text(call)},
        }
    function = call.get("function")
    function = function if isinstance(function, Mapping) else {}
    raw = function.get("arguments")
    made: dict[str, Any] = {
        "tool_call_id": str(call.get("id") or f"call_{index}"),
        "function_name": str(function.get("name") or ""),
        "arguments": {},
    }
    if isinstance(raw, Mapping):
        made["arguments"] = dict(raw)
        return made
    try:
        parsed = json.loads(raw) if isinstance(raw, str) and raw.strip() else {}
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        made["arguments"] = parsed
    else:
        made["extra"] = {"raw_arguments": raw if isinstance(raw, str) else _text(raw)}
    return made


def _observe(step: dict[str, Any], message: Mapping[str, Any]) -> None:
    result: dict[str, Any] = {"content": _text(message.get("content"))}
    call_id = message.get("tool_call_id")
    if isinstance(call_id, str) and call_id:
        result["source_call_id"] = call_id
    name = message.get("name")
    if isinstance(name, str) and name:
        result["extra"] = {"name": name}
    step.setdefault("observation", {"results": []})["results"].append(result)


def _orphan_step(steps: list[dict[str, Any]]) -> dict[str, Any]:
    """A system step that holds tool messages no assistant message asked for."""
    if steps and steps[-1].get("extra", {}).get("orphan_tool_results"):
        return steps[-1]
    step: dict[str, Any] = {
        "source": "system",
        "message": "",
        "extra": {"orphan_tool_results": True},
    }
    steps.append(step)
    return step


def _text(content: Any) -> str:
    """Message content as text: strings as they are, text parts joined, else JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(part, Mapping) and part.get("type") == "text" for part in content
    ):
        return "".join(str(part.get("text", "")) for part in content)
    try:
        return json.dumps(content, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(content)


def _final_metrics(result: AgentResult, steps: int) -> dict[str, Any]:
    metrics: dict[str, Any] = {"total_steps": steps}
    if result.turns:
        totals: dict[str, int] = {}
        for turn in result.turns:
            for key in ("prompt_tokens", "completion_tokens", "cached_tokens"):
                if key in turn.usage:
                    totals[key] = totals.get(key, 0) + int(turn.usage[key])
        for key, value in totals.items():
            metrics[f"total_{key}"] = value
    else:
        for key in ("prompt_tokens", "completion_tokens"):
            if key in result.usage:
                metrics[f"total_{key}"] = int(result.usage[key])
    return metrics


def _tool_error(error: Any) -> dict[str, Any]:
    return {
        "turn": error.turn,
        "tool_name": error.tool_name,
        "kind": error.kind,
        "error": error.error,
        "call_id": error.call_id,
    }


def _infra(result: AgentResult) -> dict[str, Any] | None:
    infra = result.infra_error
    if infra is None:
        return None
    return {
        "kind": infra.kind,
        "message": infra.message,
        "turn": infra.turn,
        "status": infra.status,
    }


_ORDER: Final = (
    "step_id",
    "timestamp",
    "source",
    "model_name",
    "message",
    "reasoning_content",
    "tool_calls",
    "observation",
    "metrics",
    "extra",
)


def _ordered(step: dict[str, Any]) -> dict[str, Any]:
    """The step's keys in the RFC's order (easier to read in the file)."""
    return {key: step[key] for key in _ORDER if key in step}
