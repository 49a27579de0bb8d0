"""The Responses API's input, read into the chat messages and tools the prompt renders.

``input`` is a string (one user message) or a list of items: messages of any role with
text or ``input_*`` content parts, ``function_call``, ``function_call_output``,
``custom_tool_call``, ``custom_tool_call_output`` and ``reasoning`` items. They become
the chat messages the chat route would have read: an assistant turn's reasoning,
message and calls, in that order, make one assistant message, so turn *k* answers an
input holding *k* assistant turns. ``item_reference`` items are refused (the server
stores no items). Tools in the Responses shape (``{"type": "function", "name",
"parameters", ...}``) become chat completions tools. Anything malformed is a 400 naming
``input[i]`` or ``tools[i]`` and what was expected.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hermes_loop.server._dialects.chat_input import content_text
from hermes_loop.server._wire import Rejected

__all__ = ["chat_tool", "input_messages"]

_ITEM_TYPES = (
    "message",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "reasoning",
)
_MESSAGE_ROLES = ("user", "system", "developer", "assistant")


def _bad(where: str, problem: str, param: str = "input") -> Rejected:
    return Rejected(400, f"{where}: {problem}", param=param)


def _string(item: Mapping[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise _bad(where, f"needs {key!r} (a non-empty string)")
    return value


class _Turns:
    """Builds chat messages from input items, one assistant message per assistant turn."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self._text: list[str] | None = None
        self._calls: list[dict[str, Any]] = []
        self._reasoning: str | None = None
        self._open = False

    def flush(self) -> None:
        if not self._open:
            return
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(self._text) if self._text is not None else None,
        }
        if self._calls:
            message["tool_calls"] = self._calls
        if self._reasoning:
            message["reasoning_content"] = self._reasoning
        self.messages.append(message)
        self._text, self._calls, self._reasoning, self._open = None, [], None, False

    def reasoning(self, text: str) -> None:
        if self._open:
            self.flush()
        self._open, self._reasoning = True, text

    def text(self, text: str) -> None:
        if self._text is not None or self._calls:
            self.flush()
        self._open, self._text = True, [text]

    def call(self, call_id: str, name: str, arguments: str) -> None:
        self._open = True
        function = {"name": name, "arguments": arguments}
        self._calls.append({"id": call_id, "type": "function", "function": function})

    def other(self, message: dict[str, Any]) -> None:
        self.flush()
        self.messages.append(message)


def _reasoning_text(item: Mapping[str, Any], where: str) -> str:
    for key, kind in (("content", "reasoning_text"), ("summary", "summary_text")):
        parts = item.get(key)
        if parts is None:
            continue
        if not isinstance(parts, list):
            raise _bad(f"{where}.{key}", f"must be a list of {kind} parts")
        texts = []
        for j, part in enumerate(parts):
            if not isinstance(part, Mapping) or not isinstance(part.get("text"), str):
                raise _bad(f"{where}.{key}[{j}]", f"must be a {kind} part with 'text'")
            texts.append(part["text"])
        if texts:
            return "\n\n".join(texts)
    return ""


def _output_text(output: Any, where: str) -> str:
    if isinstance(output, str):
        return output
    return content_text(output, f"{where}.output", param="input") or ""


def _read_item(item: Any, index: int, turns: _Turns) -> None:
    where = f"input[{index}]"
    if not isinstance(item, Mapping):
        raise _bad(where, f"an input item must be an object, got {type(item).__name__}")
    kind = item.get("type")
    if kind is None and "role" in item:
        kind = "message"
    if kind == "message":
        role = item.get("role")
        if role not in _MESSAGE_ROLES:
            raise _bad(where, f"unknown role {role!r}; expected one of {', '.join(_MESSAGE_ROLES)}")
        text = content_text(item.get("content"), where, param="input") or ""
        if role == "assistant":
            turns.text(text)
        else:
            turns.other({"role": "user" if role == "user" else "system", "content": text})
    elif kind in ("function_call", "custom_tool_call"):
        key = "arguments" if kind == "function_call" else "input"
        arguments = item.get(key, "")
        if not isinstance(arguments, str):
            raise _bad(where, f"{key!r} must be a string, got {type(arguments).__name__}")
        call_id = _string(item, "call_id", where)
        turns.call(call_id, _string(item, "name", where), arguments or "{}")
    elif kind in ("function_call_output", "custom_tool_call_output"):
        call_id = _string(item, "call_id", where)
        content = _output_text(item.get("output"), where)
        turns.other({"role": "tool", "tool_call_id": call_id, "content": content})
    elif kind == "reasoning":
        turns.reasoning(_reasoning_text(item, where))
    elif kind == "item_reference":
        raise _bad(
            where,
            "an item_reference needs stored items, and the scripted model server stores none; "
            "send the items themselves",
        )
    else:
        raise _bad(
            where, f"input item type {kind!r} is not served here; expected {', '.join(_ITEM_TYPES)}"
        )


def input_messages(body: Mapping[str, Any], instructions: str | None) -> list[dict[str, Any]]:
    """The chat messages of ``body``'s ``input``, after a system message holding
    ``instructions`` when they are given.

    Raises:
        Rejected: 400 for an ``input`` that is neither a string nor a non-empty list,
            or an item of the wrong shape (the message names ``input[i]``).
    """
    raw = body.get("input")
    turns = _Turns()
    if instructions:
        turns.other({"role": "system", "content": instructions})
    if isinstance(raw, str):
        turns.other({"role": "user", "content": raw})
    elif isinstance(raw, list) and raw:
        for index, item in enumerate(raw):
            _read_item(item, index, turns)
    else:
        raise Rejected(
            400, "'input' must be a string or a non-empty list of input items", param="input"
        )
    turns.flush()
    return turns.messages


def chat_tool(tool: Any, index: int) -> Any:
    """The Responses tool ``tools[index]`` in the chat completions shape the prompt renders
    (a hosted tool, or one already in that shape, as it was sent).

    Raises:
        Rejected: 400 for a tool that is not an object, or a function or custom tool
            without a name.
    """
    where = f"tools[{index}]"
    if not isinstance(tool, Mapping):
        raise _bad(where, f"a tool must be an object, got {type(tool).__name__}", "tools")
    kind = tool.get("type")
    if kind not in ("function", "custom"):
        return dict(tool)  # a hosted tool: shown to the prompt as it was sent
    if "function" in tool and kind == "function":
        return dict(tool)  # already in the chat completions shape
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise _bad(where, f"a {kind} tool needs 'name' (a non-empty string)", "tools")
    function: dict[str, Any] = {"name": name}
    if isinstance(tool.get("description"), str):
        function["description"] = tool["description"]
    if kind == "function" and isinstance(tool.get("parameters"), Mapping):
        function["parameters"] = tool["parameters"]
    return {"type": "function", "function": function}
