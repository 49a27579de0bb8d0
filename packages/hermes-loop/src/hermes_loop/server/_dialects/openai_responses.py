"""OpenAI's Responses API (``POST /v1/responses``): request in, payload out.

The shapes are those of the ``openai`` package's ``openai.types.responses``.

Read: ``input`` (a string, or a list of items: messages of any role with text or
``input_*`` content parts, ``function_call``, ``function_call_output``,
``custom_tool_call``, ``custom_tool_call_output`` and ``reasoning`` items),
``instructions``, ``tools`` (function tools in the Responses shape, ``{"type":
"function", "name", "parameters", ...}``), ``tool_choice``, ``parallel_tool_calls``,
``max_output_tokens``, ``stream``, ``include`` (``message.output_text.logprobs``) and
``model``. The input becomes the chat messages the chat route would have read
(``responses_input``), so scripts, replays and policies answer both routes alike. The
server keeps no responses, so ``previous_response_id``, ``conversation`` and
``item_reference`` items are refused with a 400 that says to send the items themselves.

Written: a ``response`` object whose ``output`` holds a ``reasoning`` item (the turn's
reasoning as ``reasoning_text``), a ``message`` item (``output_text``) and one
``function_call`` item per tool call, with ``usage`` counted by the tokenizer; or, for
``stream``, the Responses server-sent events (``response.created`` ...
``response.completed``), each with its ``sequence_number``. A reply cut by
``max_output_tokens`` is ``status: "incomplete"`` with ``incomplete_details.reason:
"max_output_tokens"``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hermes_loop.server._dialects.openai_chat import (
    STREAM_PIECE,
    ChatReply,
    ChatRequest,
    chat_request,
)
from hermes_loop.server._dialects.responses_input import chat_tool, input_messages
from hermes_loop.server._wire import Rejected, int_field

__all__ = [
    "ResponsesRequest",
    "read_responses",
    "responses_events",
    "responses_output",
    "responses_payload",
]

_LOGPROBS = "message.output_text.logprobs"


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponsesRequest(ChatRequest):
    """A Responses API request: its input as chat messages, and what its answer echoes."""

    instructions: str | None = None
    tools_sent: list[Any] = field(default_factory=list)
    tool_choice: Any = "auto"
    parallel_tool_calls: bool = True
    temperature: float | None = None
    top_p: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def _number(body: Mapping[str, Any], key: str) -> float | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Rejected(400, f"{key} must be a number, got {value!r}", param=key)
    return float(value)


def read_responses(body: Mapping[str, Any]) -> ResponsesRequest:
    """Read a Responses API body.

    Raises:
        Rejected: 400 for a missing or malformed ``input`` (the message names
            ``input[i]`` and what was expected), ``instructions`` that are not a string,
            ``tools`` that are not a list of tool objects, a ``max_output_tokens`` that is
            not a positive integer, or a ``previous_response_id`` / ``conversation`` (the
            server keeps no state: send the whole conversation).
    """
    for key in ("previous_response_id", "conversation"):
        if body.get(key) is not None:
            raise Rejected(
                400,
                f"{key} is not supported: the scripted model server keeps no responses; "
                "send the whole conversation in 'input'",
                param=key,
            )
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise Rejected(400, "'instructions' must be a string", param="instructions")
    messages = input_messages(body, instructions)
    sent = body.get("tools")
    if sent is not None and not isinstance(sent, list):
        raise Rejected(400, "'tools' must be a list of tools", param="tools")
    tools = [chat_tool(tool, i) for i, tool in enumerate(sent or ())] or None
    max_tokens = int_field(body, "max_output_tokens")
    if max_tokens is not None and max_tokens < 1:
        raise Rejected(
            400, f"max_output_tokens must be >= 1, got {max_tokens}", param="max_output_tokens"
        )
    include = body.get("include")
    logprobs = (isinstance(include, list) and _LOGPROBS in include) or bool(
        body.get("top_logprobs")
    )
    metadata = body.get("metadata")
    return chat_request(
        ResponsesRequest,
        body,
        endpoint="responses",
        messages=messages,
        tools=tools,
        max_tokens=max_tokens,
        include_usage=False,
        logprobs=logprobs,
        return_token_ids=False,
        instructions=instructions,
        tools_sent=list(sent or ()),
        tool_choice=body.get("tool_choice") or "auto",
        parallel_tool_calls=body.get("parallel_tool_calls") is not False,
        temperature=_number(body, "temperature"),
        top_p=_number(body, "top_p"),
        metadata=dict(metadata) if isinstance(metadata, Mapping) else {},
    )


def _status(reply: ChatReply) -> tuple[str, dict[str, str] | None]:
    if reply.finish_reason == "length":
        return "incomplete", {"reason": "max_output_tokens"}
    if reply.finish_reason == "content_filter":
        return "incomplete", {"reason": "content_filter"}
    return "completed", None


def responses_output(
    request: ResponsesRequest, reply: ChatReply, *, new_id: Callable[[str], str]
) -> list[dict[str, Any]]:
    """The ``output`` items of the answer: reasoning, message, function calls (in order).

    A message item is written when the reply has text, or has neither text nor calls.
    """
    message = reply.message
    status = "completed" if _status(reply)[0] == "completed" else "incomplete"
    items: list[dict[str, Any]] = []
    reasoning = message.get("reasoning_content")
    if reasoning:
        items.append(
            {
                "id": new_id("rs"),
                "type": "reasoning",
                "summary": [],
                "content": [{"type": "reasoning_text", "text": reasoning}],
                "status": status,
            }
        )
    calls = message.get("tool_calls") or ()
    content = message.get("content") or ""
    if content or not calls:
        text = {
            "type": "output_text",
            "text": content,
            "annotations": [],
            "logprobs": reply.logprobs or [],
        }
        items.append(
            {
                "id": new_id("msg"),
                "type": "message",
                "role": "assistant",
                "status": status,
                "content": [text],
            }
        )
    for call in calls:
        function = call["function"]
        items.append(
            {
                "id": new_id("fc"),
                "type": "function_call",
                "call_id": call["id"],
                "name": function["name"],
                "arguments": function["arguments"],
                "status": status,
            }
        )
    return items


def _usage(reply: ChatReply) -> dict[str, Any]:
    prompt, completion = len(reply.prompt_token_ids), len(reply.token_ids)
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + completion,
    }


def responses_payload(
    request: ResponsesRequest,
    reply: ChatReply,
    output: Sequence[Mapping[str, Any]],
    *,
    ident: str,
    created: int,
    model: str,
) -> dict[str, Any]:
    """The ``response`` object (``status`` completed, or incomplete when cut)."""
    status, details = _status(reply)
    return {
        "id": ident,
        "object": "response",
        "created_at": created,
        "completed_at": created,
        "status": status,
        "error": None,
        "incomplete_details": details,
        "model": model,
        "instructions": request.instructions,
        "output": list(output),
        "tools": request.tools_sent,
        "tool_choice": request.tool_choice,
        "parallel_tool_calls": request.parallel_tool_calls,
        "max_output_tokens": request.max_tokens,
        "temperature": request.temperature,
        "top_p": request.top_p,
        "metadata": request.metadata,
        "previous_response_id": None,
        "store": False,
        "text": {"format": {"type": "text"}},
        "truncation": "disabled",
        "usage": _usage(reply),
    }


def _pieces(text: str) -> list[str]:
    return [text[i : i + STREAM_PIECE] for i in range(0, len(text), STREAM_PIECE)] or [""]


def _item_events(item: Mapping[str, Any], index: int) -> list[dict[str, Any]]:
    """The events of one output item, from ``output_item.added`` to ``output_item.done``."""
    ident, kind = item["id"], item["type"]
    at = {"item_id": ident, "output_index": index}
    events: list[dict[str, Any]] = []
    if kind == "function_call":
        events.append(
            {"type": "response.output_item.added", "output_index": index,
             "item": {**item, "arguments": "", "status": "in_progress"}}
        )  # fmt: skip
        events += [
            {"type": "response.function_call_arguments.delta", **at, "delta": piece}
            for piece in _pieces(item["arguments"])
        ]
        events.append(
            {"type": "response.function_call_arguments.done", **at,
             "name": item["name"], "arguments": item["arguments"]}
        )  # fmt: skip
    else:
        events.append(
            {"type": "response.output_item.added", "output_index": index,
             "item": {**item, "content": [], "status": "in_progress"}}
        )  # fmt: skip
        is_message = kind == "message"
        delta, done = (
            ("response.output_text.delta", "response.output_text.done")
            if is_message
            else ("response.reasoning_text.delta", "response.reasoning_text.done")
        )
        for number, part in enumerate(item["content"]):
            empty = {**part, "text": ""}
            if is_message:
                empty["logprobs"] = []
            where = {**at, "content_index": number}
            events.append({"type": "response.content_part.added", **where, "part": empty})
            extra: dict[str, Any] = {"logprobs": []} if is_message else {}
            events += [
                {"type": delta, **where, "delta": piece, **extra} for piece in _pieces(part["text"])
            ]
            events.append({"type": done, **where, "text": part["text"], **extra})
            events.append({"type": "response.content_part.done", **where, "part": part})
    events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    return events


def responses_events(payload: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The server-sent events of a streamed answer whose final object is ``payload``.

    ``response.created`` and ``response.in_progress`` (the response without output or
    usage), each output item's events, then ``response.completed`` (or
    ``response.incomplete``) with the whole response; ``sequence_number`` counts from 0.
    """
    opening = {**payload, "status": "in_progress", "output": [], "usage": None}
    opening.update(completed_at=None, incomplete_details=None)
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": opening},
        {"type": "response.in_progress", "response": opening},
    ]
    for index, item in enumerate(payload["output"]):
        events += _item_events(item, index)
    final = "response.completed" if payload["status"] == "completed" else "response.incomplete"
    events.append({"type": final, "response": dict(payload)})
    return [{**event, "sequence_number": number} for number, event in enumerate(events)]
