"""``OpenAIChatServer``: Phase 1, a server that parses tool calls itself."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Unpack

from hermes_loop.endpoints._base import ChatSession, ModelTurn, SamplingParams
from hermes_loop.endpoints._client import ClientOptions, HTTPEndpoint
from hermes_loop.endpoints._errors import bad_response, type_name
from hermes_loop.templates._reasoning import split_reasoning

__all__ = ["OpenAIChatServer", "read_chat_answer"]

_ROUTE = "/chat/completions"


class OpenAIChatServer(HTTPEndpoint):
    """Any OpenAI-compatible ``/v1/chat/completions`` endpoint (vLLM, SGLang, OpenRouter...).

    Args:
        base_url: e.g. ``"http://127.0.0.1:8000/v1"``.
        model: the model name sent with every request.
        **options: the client's ``api_key``, ``api_key_env`` (default
            ``"OPENAI_API_KEY"``), ``timeout`` (600 s), ``max_retries`` (3; also the
            retries of complete answers of the wrong shape, see ``read_chat_answer``),
            ``extra_body``, ``client`` and ``ssl_context``, as ``HTTPEndpoint`` describes
            them.

    Raises:
        ValueError: if neither ``base_url`` nor ``client`` is given.
    """

    def __init__(
        self, *, base_url: str | None = None, model: str, **options: Unpack[ClientOptions]
    ) -> None:
        super().__init__(base_url, model, **options)
        self.model: str = model

    def session(self, task_id: str) -> ChatSession:
        """Phase 1 keeps no per-rollout state, so the server is its own session."""
        return _Session(self)


class _Session:
    __slots__ = ("_server",)

    def __init__(self, server: OpenAIChatServer) -> None:
        self._server = server

    def managed_state(self) -> dict[str, Any] | None:
        return None

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        params: SamplingParams,
    ) -> ModelTurn:
        server = self._server
        request: dict[str, Any] = {"model": server.model, "messages": list(messages)}
        if tools:
            request["tools"] = tools
        # The messages are plain JSON already: post them as they are, skipping the SDK's
        # per-field request transform and response model (the client's retries, timeouts
        # and errors still apply), and check the answer's shape here.
        return await server.post_checked(_ROUTE, server.sampled(request, params), read_chat_answer)


def read_chat_answer(data: Any) -> ModelTurn:
    """The assistant turn in a decoded ``/chat/completions`` answer.

    Only ``choices[0]`` is read. ``content``, ``reasoning_content``/``reasoning`` and
    ``finish_reason`` must be strings or null; ``tool_calls`` null or an array of
    ``{"id", "type": "function", "function": {"name", "arguments"}}`` with a non-empty
    name and string arguments; ``usage`` null or an object of non-negative integers.

    Raises:
        EndpointError: of kind ``bad_response``, naming the first field of the wrong shape.
    """
    if not isinstance(data, dict):
        raise bad_response(_ROUTE, f"the body is {type_name(data)}, not a chat completion")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise bad_response(_ROUTE, f"'choices' is {_shown(choices)}, not a non-empty array")
    choice = choices[0]
    if not isinstance(choice, dict):
        raise bad_response(_ROUTE, f"choices[0] is {type_name(choice)}, not an object")
    message = choice.get("message")
    if not isinstance(message, dict):
        raise bad_response(_ROUTE, f"choices[0].message is {type_name(message)}, not an object")
    content = _optional_text(message, "content")
    reasoning = _optional_text(message, "reasoning_content") or _optional_text(message, "reasoning")
    finish = _optional_text(choice, "finish_reason", where="choices[0]")
    if content is not None and ("<think>" in content or "</think>" in content):
        content, inline = split_reasoning(content)
        reasoning = reasoning or inline
    out: dict[str, Any] = {"role": "assistant", "content": content}
    calls = _tool_calls(message.get("tool_calls"))
    if calls:
        out["tool_calls"] = calls
    return ModelTurn(out, reasoning, finish, _usage(data.get("usage")))


def _shown(value: Any) -> str:
    return "an empty array" if value == [] else type_name(value)


def _optional_text(
    parent: dict[str, Any], key: str, *, where: str = "choices[0].message"
) -> str | None:
    value = parent.get(key)
    if value is not None and not isinstance(value, str):
        raise bad_response(_ROUTE, f"{where}.{key} is {type_name(value)}, not a string")
    return _utf8(value, f"{where}.{key}")


def _utf8(value: str | None, where: str) -> str | None:
    """``value`` when UTF-8 can hold it. JSON may escape a lone surrogate (``"\\ud800"``),
    which decodes to a string no UTF-8 writer (JSONL, logs) can write: such an answer
    is of the wrong shape, as any other malformed one.

    Raises:
        EndpointError: of kind ``bad_response``, naming the field.
    """
    if value is not None and not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise bad_response(
                _ROUTE, f"{where} holds a lone surrogate (U+{ord(exc.object[exc.start]):04X})"
            ) from None
    return value


def _tool_calls(raw: Any) -> list[dict[str, Any]]:
    if raw is None:
        return []
    where = "choices[0].message.tool_calls"
    if not isinstance(raw, list):
        raise bad_response(_ROUTE, f"{where} is {type_name(raw)}, not an array")
    calls = []
    for index, call in enumerate(raw):
        at = f"{where}[{index}]"
        if not isinstance(call, dict):
            raise bad_response(_ROUTE, f"{at} is {type_name(call)}, not an object")
        if call.get("type", "function") != "function":
            raise bad_response(_ROUTE, f"{at}.type is {call.get('type')!r}, not 'function'")
        call_id = call.get("id")
        if call_id is not None and not isinstance(call_id, str):
            raise bad_response(_ROUTE, f"{at}.id is {type_name(call_id)}, not a string")
        function = call.get("function")
        if not isinstance(function, dict):
            raise bad_response(_ROUTE, f"{at}.function is {type_name(function)}, not an object")
        name, arguments = function.get("name"), function.get("arguments")
        if not isinstance(name, str) or not name:
            raise bad_response(_ROUTE, f"{at}.function.name is {_shown_name(name)}")
        if not isinstance(arguments, str):
            raise bad_response(
                _ROUTE, f"{at}.function.arguments is {type_name(arguments)}, not a JSON string"
            )
        _utf8(name, f"{at}.function.name")
        _utf8(arguments, f"{at}.function.arguments")
        _utf8(call_id, f"{at}.id")
        calls.append(
            {
                "id": call_id or "",
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
        )
    return calls


def _shown_name(name: Any) -> str:
    return "empty" if name == "" else f"{type_name(name)}, not a string"


def _usage(raw: Any) -> dict[str, int]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise bad_response(_ROUTE, f"'usage' is {type_name(raw)}, not an object")
    counts = {}
    for key in ("prompt_tokens", "completion_tokens"):
        value = raw.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise bad_response(_ROUTE, f"usage.{key} is {value!r:.40}, not a count")
        counts[key] = value
    return counts
