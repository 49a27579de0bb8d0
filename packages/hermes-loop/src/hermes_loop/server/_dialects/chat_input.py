"""Chat messages of every role the chat completions API has, in the four the prompt reads.

OpenAI's chat completions API takes the roles ``developer``, ``system``, ``user``,
``assistant``, ``tool`` and ``function`` (``openai.types.chat.ChatCompletionRole``); the
ChatML prompt the server renders (``hermes_loop.templates._chat_template``) has ``system``,
``user``, ``assistant`` and ``tool``. ``normalize_messages`` maps one onto the other:

- ``developer`` becomes ``system`` (newer OpenAI models' name for it);
- ``function`` (the deprecated function-calling reply: ``name`` and ``content``) becomes
  a ``tool`` message for the call of that name;
- an assistant's deprecated ``function_call`` becomes one tool call, a ``custom`` tool
  call (``{"custom": {"name", "input"}}``) a call whose arguments are its raw input, and
  a ``refusal`` stands as the content when there is none;
- content given as a list of parts becomes one string: text (and refusal) parts as
  their text, an ``image_url`` part as ``[image]``, ``input_audio`` as ``[audio]`` and
  ``file`` as ``[file NAME]`` (a scripted model reads no media; the marks keep the
  prompt's token count honest about their presence).

A message already in the prompt's form (one of the four roles, string content, function
tool calls with string arguments) is passed on as it was sent, so the common request
costs no copy; any other is rebuilt with only the fields the prompt reads (a
participant's ``name``, ``audio`` and cache breakpoints are dropped). Anything malformed
is a 400 naming ``messages[i]`` and what was expected.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from hermes_loop.server._wire import Rejected

__all__ = ["CHAT_ROLES", "content_text", "normalize_messages"]

#: The roles of today's chat completions API, as ``openai.types.chat.ChatCompletionRole``.
CHAT_ROLES = ("developer", "system", "user", "assistant", "tool", "function")

_MEDIA_MARKS = {"image_url": "[image]", "input_audio": "[audio]"}


def _bad(where: str, problem: str, param: str = "messages") -> Rejected:
    return Rejected(400, f"{where}: {problem}", param=param)


def _part_text(part: Any, where: str, param: str) -> str:
    if not isinstance(part, Mapping):
        raise _bad(where, f"a content part must be an object, got {type(part).__name__}", param)
    kind = part.get("type")
    if kind in ("text", "refusal", "input_text", "output_text"):
        key = "refusal" if kind == "refusal" else "text"
        text = part.get(key)
        if not isinstance(text, str):
            raise _bad(where, f"a {kind!r} part needs {key!r} (a string)", param)
        return text
    if kind in _MEDIA_MARKS:
        if not isinstance(part.get(kind), Mapping):
            raise _bad(where, f"an {kind!r} part needs {kind!r} (an object)", param)
        return _MEDIA_MARKS[kind]
    if kind == "input_image":
        return "[image]"
    if kind in ("file", "input_file"):
        file = part.get("file", part) if kind == "file" else part
        name = file.get("filename") if isinstance(file, Mapping) else None
        return f"[file {name}]" if isinstance(name, str) and name else "[file]"
    raise _bad(
        where,
        f"unknown content part type {kind!r}; expected text, image_url, input_audio, file "
        "or refusal (chat), or input_text, input_image, input_file, output_text (responses)",
        param,
    )


def content_text(content: Any, where: str, *, param: str = "messages") -> str | None:
    """``content`` (a string, ``None`` or a list of parts) as one string (``None`` stays).

    Raises:
        Rejected: 400 naming ``where`` for content that is neither, or a malformed part.
    """
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, Sequence) and not isinstance(content, bytes | bytearray):
        return "".join(
            _part_text(part, f"{where}.content[{j}]", param) for j, part in enumerate(content)
        )
    raise _bad(
        f"{where}.content",
        f"expected a string or a list of content parts, got {type(content).__name__}",
        param,
    )


def _function(call: Mapping[str, Any], where: str) -> dict[str, Any]:
    name, arguments = call.get("name"), call.get("arguments")
    if not isinstance(name, str) or not name:
        raise _bad(where, "needs 'name' (a non-empty string)")
    if arguments is None:
        arguments = "{}"
    if isinstance(arguments, Mapping):
        arguments = json.dumps(dict(arguments), ensure_ascii=False)
    if not isinstance(arguments, str):
        raise _bad(where, f"'arguments' must be a JSON string, got {type(arguments).__name__}")
    return {"name": name, "arguments": arguments}


def _tool_call(call: Any, where: str) -> dict[str, Any]:
    if not isinstance(call, Mapping):
        raise _bad(where, f"a tool call must be an object, got {type(call).__name__}")
    if call.get("type") == "custom":
        custom = call.get("custom")
        if not isinstance(custom, Mapping) or not isinstance(custom.get("name"), str):
            raise _bad(where, "a 'custom' tool call needs custom.name and custom.input")
        raw = custom.get("input")
        function = {"name": custom["name"], "arguments": raw if isinstance(raw, str) else ""}
    else:
        inner = call.get("function")
        if not isinstance(inner, Mapping):
            raise _bad(where, "a tool call needs 'function' (an object with name and arguments)")
        function = _function(inner, f"{where}.function")
    return {"id": call.get("id"), "type": "function", "function": function}


def _assistant(message: Mapping[str, Any], where: str) -> dict[str, Any]:
    content = content_text(message.get("content"), where)
    refusal = message.get("refusal")
    if not content and isinstance(refusal, str) and refusal:
        content = refusal
    out: dict[str, Any] = {"role": "assistant", "content": content}
    raw_calls = message.get("tool_calls")
    if raw_calls is not None and not isinstance(raw_calls, list):
        raise _bad(f"{where}.tool_calls", f"must be a list, got {type(raw_calls).__name__}")
    calls = [_tool_call(call, f"{where}.tool_calls[{k}]") for k, call in enumerate(raw_calls or ())]
    legacy = message.get("function_call")
    if legacy is not None:
        if not isinstance(legacy, Mapping):
            raise _bad(f"{where}.function_call", "must be an object with name and arguments")
        function = _function(legacy, f"{where}.function_call")
        calls.append({"id": f"call_{function['name']}", "type": "function", "function": function})
    if calls:
        out["tool_calls"] = calls
    for key in ("reasoning_content", "reasoning"):
        if message.get(key) is not None:
            out[key] = message[key]
    return out


def _plain(message: Mapping[str, Any]) -> bool:
    """Whether ``message`` is already in the prompt's form (then it is kept as sent)."""
    role = message.get("role")
    content = message.get("content")
    if role in ("system", "user", "tool"):
        return isinstance(content, str)
    if role != "assistant" or not (content is None or isinstance(content, str)):
        return False
    if message.get("function_call") is not None or message.get("refusal"):
        return False
    calls = message.get("tool_calls")
    if calls is None:
        return True
    return isinstance(calls, list) and all(
        isinstance(call, Mapping)
        and call.get("type", "function") == "function"
        and isinstance(call.get("function"), Mapping)
        and isinstance(call["function"].get("name"), str)
        and isinstance(call["function"].get("arguments"), str)
        for call in calls
    )


def normalize_messages(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """``messages`` (any chat completions roles) as ``system``/``user``/``assistant``/``tool``.

    A message already in that form (a string content, function tool calls with string
    arguments) is kept as it was sent, the same object.

    Raises:
        Rejected: 400 naming ``messages[i]`` for a message that is not an object, an
            unknown role, malformed content, tool calls or a ``function`` message
            without a name.
    """
    out: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        role = message.get("role") if isinstance(message, Mapping) else None
        if not isinstance(message, Mapping) or not isinstance(role, str):
            raise _bad(where, "must be an object with a 'role'")
        if isinstance(message, dict) and _plain(message):
            out.append(message)
        elif role in ("system", "developer", "user"):
            text = content_text(message.get("content"), where)
            out.append({"role": "user" if role == "user" else "system", "content": text or ""})
        elif role == "assistant":
            out.append(_assistant(message, where))
        elif role in ("tool", "function"):
            entry: dict[str, Any] = {
                "role": "tool",
                "content": content_text(message.get("content"), where) or "",
            }
            if role == "function":
                name = message.get("name")
                if not isinstance(name, str) or not name:
                    raise _bad(where, "a 'function' message needs 'name' (the function called)")
                entry["tool_call_id"] = f"call_{name}"
                entry["name"] = name
            elif message.get("tool_call_id") is not None:
                entry["tool_call_id"] = message["tool_call_id"]
            out.append(entry)
        else:
            raise _bad(where, f"unknown role {role!r}; expected one of {', '.join(CHAT_ROLES)}")
    return out
