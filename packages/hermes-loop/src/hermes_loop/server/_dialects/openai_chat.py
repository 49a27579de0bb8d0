"""OpenAI chat completions (``POST /v1/chat/completions``): request in, payload out.

Read: ``messages`` (every role of the API, read as the prompt's four by
``chat_input.normalize_messages``), ``tools``, ``model``, ``max_tokens`` /
``max_completion_tokens``, ``n`` (1 only), ``stream`` with
``stream_options.include_usage``, ``logprobs``, and vLLM's ``return_token_ids``.
Written: a ``chat.completion`` object, or the ``chat.completion.chunk`` events of a
stream, with ``usage`` counted by the tokenizer on the rendered prompt and completion.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from hermes_loop.server._completions import Completion, truncated_message
from hermes_loop.server._conversations import chat_key, chat_turn_index
from hermes_loop.server._dialects.chat_input import normalize_messages
from hermes_loop.server._dialects.request import ParsedRequest
from hermes_loop.server._wire import Rejected, int_field
from hermes_loop.templates._tokenizer import Tokenizer
from hermes_parsers import ToolCallParser

__all__ = [
    "ChatReply",
    "ChatRequest",
    "chat_events",
    "chat_payload",
    "chat_reply",
    "chat_request",
    "read_chat",
]

#: Characters of content or arguments per streamed chunk.
STREAM_PIECE = 24


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatRequest(ParsedRequest):
    """A chat completions request, with the options that shape its answer."""

    max_tokens: int | None
    stream: bool
    include_usage: bool
    logprobs: bool
    return_token_ids: bool


Request = TypeVar("Request", bound=ChatRequest)


def read_chat(body: Mapping[str, Any]) -> ChatRequest:
    """Read a chat completions body.

    Raises:
        Rejected: 400 for missing or malformed ``messages`` (an unknown role, a malformed
            content part or tool call: the message names ``messages[i]``), ``tools`` that are not a
            list, ``n`` other than 1, or a ``max_tokens`` that is not a positive integer.
    """
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise Rejected(400, "'messages' must be a non-empty list of messages", param="messages")
    messages = normalize_messages(messages)
    tools = body.get("tools") or None
    if tools is not None and not isinstance(tools, list):
        raise Rejected(400, "'tools' must be a list of tool schemas", param="tools")
    n = body.get("n")
    if n is not None and n != 1:
        raise Rejected(
            400, f"n={n!r} is not supported: the scripted model returns one choice (n=1)", param="n"
        )
    max_tokens = int_field(body, "max_completion_tokens", "max_tokens")
    if max_tokens is not None and max_tokens < 1:
        raise Rejected(400, f"max_tokens must be >= 1, got {max_tokens}", param="max_tokens")
    options = body.get("stream_options")
    return chat_request(
        ChatRequest,
        body,
        endpoint="chat",
        messages=messages,
        tools=tools,
        max_tokens=max_tokens,
        include_usage=bool(isinstance(options, dict) and options.get("include_usage")),
        logprobs=bool(body.get("logprobs")),
        return_token_ids=bool(body.get("return_token_ids")),
    )


def chat_request(
    kind: type[Request],
    body: Mapping[str, Any],
    *,
    endpoint: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    max_tokens: int | None,
    **options: Any,
) -> Request:
    """A ``kind`` request (``ChatRequest`` or a dialect's subclass of it) from the parts
    its dialect read from ``body``: the conversation names the turn and its key, and
    ``model`` and ``stream`` are read from ``body`` as sent; ``options`` are the
    dialect's own fields."""
    return kind(
        endpoint=endpoint,
        body=body,
        model=body.get("model"),
        turn_index=chat_turn_index(messages),
        conversation=chat_key(messages),
        messages=messages,
        tools=tools,
        max_tokens=max_tokens,
        stream=bool(body.get("stream")),
        **options,
    )


@dataclass(frozen=True, slots=True)
class ChatReply:
    """A completion as the answer to one chat request (cut to its ``max_tokens``)."""

    message: dict[str, Any]
    finish_reason: str
    token_ids: Sequence[int]
    prompt_token_ids: list[int]
    logprobs: list[dict[str, Any]] | None

    @property
    def usage(self) -> dict[str, int]:
        """OpenAI's ``usage`` object."""
        prompt, completion = len(self.prompt_token_ids), len(self.token_ids)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }


def _token_logprobs(
    ids: Sequence[int], completion: Completion, tokenizer: Tokenizer
) -> list[dict[str, Any]]:
    out = []
    for index, token in enumerate(ids):
        text = tokenizer.decode([token])
        out.append(
            {
                "token": text,
                "logprob": completion.logprobs[index],
                "bytes": list(text.encode("utf-8")),
                "top_logprobs": [],
            }
        )
    return out


def chat_reply(
    request: ChatRequest,
    completion: Completion,
    prompt_ids: list[int],
    tokenizer: Tokenizer,
    parser: ToolCallParser,
) -> ChatReply:
    """The answer ``completion`` gives ``request``.

    A ``max_tokens`` shorter than the completion cuts it: the message is what a client
    would parse from the cut text, and the finish reason is ``length`` (unless the turn
    forces one).
    """
    ids: Sequence[int] = completion.token_ids
    if request.max_tokens is not None and request.max_tokens < len(ids):
        ids = ids[: request.max_tokens]
        message = truncated_message(ids, tokenizer, parser)
        finish = completion.turn.finish_reason or "length"
    else:
        message = completion.message_for(request.turn_index)
        finish = completion.finish_reason
    if message.get("tool_calls") is None:
        message.pop("tool_calls", None)
    logprobs = _token_logprobs(ids, completion, tokenizer) if request.logprobs else None
    return ChatReply(message, finish, ids, prompt_ids, logprobs)


def chat_payload(
    request: ChatRequest, reply: ChatReply, *, ident: str, created: int, model: str
) -> dict[str, Any]:
    """The ``chat.completion`` object."""
    logprobs = None if reply.logprobs is None else {"content": reply.logprobs}
    choice: dict[str, Any] = {
        "index": 0,
        "message": reply.message,
        "logprobs": logprobs,
        "finish_reason": reply.finish_reason,
    }
    payload: dict[str, Any] = {
        "id": ident,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [choice],
        "usage": reply.usage,
    }
    if request.return_token_ids:
        payload["prompt_token_ids"] = reply.prompt_token_ids
        choice["token_ids"] = list(reply.token_ids)
    return payload


def _pieces(text: str, size: int = STREAM_PIECE) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def chat_events(
    request: ChatRequest, reply: ChatReply, *, ident: str, created: int, model: str
) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` events of a streamed answer (``[DONE]`` not included).

    Role first, then reasoning, content and each tool call (name, then its arguments in
    pieces), then the finish reason; with ``include_usage`` a last chunk carries the usage
    and every other chunk ``"usage": null``, as OpenAI streams it.
    """
    base = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model}

    def chunk(delta: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}
        event: dict[str, Any] = {**base, "choices": [choice]}
        if request.include_usage:
            event["usage"] = None
        return event

    message = reply.message
    events = [chunk({"role": "assistant", "content": ""})]
    reasoning = message.get("reasoning_content")
    if reasoning:
        events += [chunk({"reasoning_content": piece}) for piece in _pieces(reasoning)]
    content = message.get("content")
    if content:
        events += [chunk({"content": piece}) for piece in _pieces(content)]
    for index, call in enumerate(message.get("tool_calls") or ()):
        function = call["function"]
        head = {"index": index, "id": call["id"], "type": "function",
                "function": {"name": function["name"], "arguments": ""}}  # fmt: skip
        events.append(chunk({"tool_calls": [head]}))
        for piece in _pieces(function["arguments"]):
            delta = {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
            events.append(chunk(delta))
    events.append(chunk({}, reply.finish_reason))
    if request.include_usage:
        events.append({**base, "choices": [], "usage": reply.usage})
    return events
