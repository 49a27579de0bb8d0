"""Responders: what the scripted model server answers (``Script``, ``Replay``, ``Policy``).

A responder maps a request to a ``Turn``. ``Script`` and ``Replay`` keep no
per-conversation state: the reply to a request is turn ``k`` where ``k`` is the number of
assistant messages already in the request, so one server serves any number of concurrent
rollouts. ``Policy`` calls a function (e.g. an oracle that runs a task's reference
solution).

Responders are built from turns in code, or from script files (``_script_files``, whose
docstring gives the schema of a script and of a turn).
"""

from __future__ import annotations

import asyncio
import inspect
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from functools import cached_property
from typing import Any

from hermes_loop._errors import HermesLoopError
from hermes_loop.server._turns import Call, ScriptError, Turn
from hermes_loop.templates._chat_template import parse_prompt
from hermes_parsers import ToolCallParser

__all__ = [
    "ModelRequest",
    "Policy",
    "PolicyFunction",
    "Replay",
    "Responder",
    "Script",
    "ScriptExhaustedError",
]


class ScriptExhaustedError(HermesLoopError, LookupError):
    """A request asks for a turn past the end of a script or replay.

    The server answers it with HTTP 400 (``type: "script_exhausted"``, not retried).
    """

    def __init__(self, model: str, turns: int, index: int) -> None:
        self.model = model
        self.turns = turns
        self.index = index
        super().__init__(
            f"script {model!r} has {turns} turn(s); this request asks for turn {index + 1} "
            f"(it already holds {index} assistant message(s))"
        )


class ModelRequest:
    """One request, as a responder sees it.

    Attributes:
        endpoint: ``"chat"`` (``/v1/chat/completions``), ``"responses"``
            (``/v1/responses``) or ``"generate"`` (``/generate``).
        model: the model (script) name the request was routed to.
        turn_index: the number of assistant turns already in the conversation.
        body: the decoded JSON request body.
        prompt_text: for ``generate``, the decoded prompt; ``None`` for chat.
        prompt_token_ids: for ``generate``, the prompt token ids; ``None`` for chat.
        messages: the conversation as OpenAI messages of the roles ``system``,
            ``user``, ``assistant`` and ``tool`` (a chat request's ``developer`` and
            ``function`` messages and a Responses input are read into these; for
            ``generate``, parsed back from the prompt text on first access).
        tools: the tool schemas offered (in the chat completions shape), or ``None``.
        max_tokens: the request's ``max_tokens`` / ``max_completion_tokens`` /
            ``max_output_tokens`` or ``None``.
    """

    def __init__(
        self,
        *,
        endpoint: str,
        model: str,
        turn_index: int,
        body: Mapping[str, Any],
        parser: ToolCallParser,
        messages: list[dict[str, Any]] | None = None,
        tools: list[dict[str, Any]] | None = None,
        prompt_text: str | None = None,
        prompt_token_ids: list[int] | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.model = model
        self.turn_index = turn_index
        self.body = body
        self.prompt_text = prompt_text
        self.prompt_token_ids = prompt_token_ids
        self._parser = parser
        self._messages = messages
        self._tools = tools

    @cached_property
    def _parsed(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
        if self._messages is not None:
            return self._messages, self._tools
        return parse_prompt(self.prompt_text or "", parser=self._parser)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation so far (OpenAI messages)."""
        return self._parsed[0]

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        """The OpenAI tool schemas in the request (or the prompt's ``<tools>`` block)."""
        return self._parsed[1]

    @property
    def max_tokens(self) -> int | None:
        """The completion token budget asked for, if any."""
        for key in ("max_completion_tokens", "max_tokens", "max_output_tokens", "max_new_tokens"):
            value = self.body.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        params = self.body.get("sampling_params")
        if isinstance(params, Mapping):
            value = params.get("max_new_tokens")
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return None

    def __repr__(self) -> str:
        return (
            f"ModelRequest(endpoint={self.endpoint!r}, model={self.model!r}, "
            f"turn_index={self.turn_index})"
        )


class Responder(ABC):
    """Decides the reply to each request."""

    @abstractmethod
    async def respond(self, request: ModelRequest) -> Turn:
        """The turn to answer ``request`` with.

        Raises:
            ScriptExhaustedError: when there is no turn for this request.
        """

    def static_turns(self) -> Sequence[Turn]:
        """Turns known in advance; the server pre-renders and pre-tokenizes them."""
        return ()


class Script(Responder):
    """Answer with ``turns[k]``, ``k`` = assistant messages already in the request.

    Args:
        turns: ``Turn`` objects, strings (content only) or schema mappings.
        name: used in error messages.

    Raises:
        ScriptError: if a turn breaks the schema (the message names the turn).
    """

    def __init__(self, turns: Iterable[Turn | str | Mapping[str, Any]], *, name: str = "") -> None:
        self.name = name
        converted: list[Turn] = []
        for index, turn in enumerate(turns):
            try:
                converted.append(Turn.coerce(turn))
            except ScriptError as exc:
                raise exc.at(f"turn {index}") from None
        self.turns: tuple[Turn, ...] = tuple(converted)

    def __len__(self) -> int:
        return len(self.turns)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self.turns)} turns, name={self.name!r})"

    async def respond(self, request: ModelRequest) -> Turn:
        """``turns[request.turn_index]``.

        Raises:
            ScriptExhaustedError: past the last turn.
        """
        index = request.turn_index
        if 0 <= index < len(self.turns):
            return self.turns[index]
        raise ScriptExhaustedError(request.model, len(self.turns), index)

    def static_turns(self) -> Sequence[Turn]:
        """All the turns."""
        return self.turns


class Replay(Script):
    """Replay the assistant turns of a recorded conversation.

    Args:
        messages: OpenAI messages (e.g. ``AgentResult.messages`` saved as JSON); the
            assistant ones become the script, with their content, tool calls (ids kept)
            and reasoning (``reasoning_content`` or ``reasoning``).
        name: used in error messages.

    Raises:
        ScriptError: if an assistant message cannot be read (the message names it).
    """

    def __init__(self, messages: Iterable[Mapping[str, Any]], *, name: str = "") -> None:
        turns: list[Turn] = []
        for index, message in enumerate(messages):
            if not isinstance(message, Mapping):
                raise ScriptError(f"messages[{index}] is not an object")
            if message.get("role") != "assistant":
                continue
            try:
                turns.append(_turn_from_message(message))
            except ScriptError as exc:
                raise exc.at(f"messages[{index}]") from None
        super().__init__(turns, name=name)


def _turn_from_message(message: Mapping[str, Any]) -> Turn:
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content if isinstance(part, Mapping))
    reasoning = message.get("reasoning_content")
    if reasoning is None:
        reasoning = message.get("reasoning")
    calls: list[Call] = []
    for index, raw in enumerate(message.get("tool_calls") or ()):
        try:
            call = Call.from_dict(raw)
        except ScriptError as exc:
            raise exc.nested(f"tool_calls[{index}]") from None
        decoded = call.decoded_arguments()
        if isinstance(call.arguments, str) and decoded is not None:
            call = Call(call.name, decoded, call.id)
        calls.append(call)
    return Turn(content=content, tool_calls=calls, reasoning=reasoning)


PolicyFunction = Callable[[ModelRequest], "Turn | str | Mapping[str, Any] | Awaitable[Any]"]


class Policy(Responder):
    """Answer with ``fn(request)``: any function of the request.

    ``fn`` may be sync (run in a worker thread, so it may block) or async; it returns a
    ``Turn``, a string (content only) or a turn mapping. It may raise
    ``ScriptExhaustedError`` to say it has nothing more to say.

    Args:
        fn: the policy.
        name: used in error messages.
    """

    def __init__(self, fn: PolicyFunction, *, name: str = "") -> None:
        self.fn = fn
        self.name = name
        self._is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            type(fn).__call__
        )

    def __repr__(self) -> str:
        return f"Policy({self.fn!r}, name={self.name!r})"

    async def respond(self, request: ModelRequest) -> Turn:
        """Call ``fn`` (in a thread if it is sync) and convert its result.

        Raises:
            ScriptError: if ``fn`` returns something that is not a turn.
            Exception: whatever ``fn`` raises.
        """
        if self._is_async:
            result: Any = self.fn(request)
        else:
            result = await asyncio.to_thread(self.fn, request)
        if inspect.isawaitable(result):
            result = await result
        return Turn.coerce(result)
