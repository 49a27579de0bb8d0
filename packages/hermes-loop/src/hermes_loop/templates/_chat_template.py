"""ChatML / Hermes prompt rendering of OpenAI messages and tools (and its inverse).

The shape follows the chat templates that Hermes 3 and Qwen 2.5 ship in their
``tokenizer_config.json`` (checked against Qwen2.5-Instruct's and Qwen3's published
templates and vLLM's ``examples/tool_chat_template_hermes.jinja``)::

    <|im_start|>system
    {system prompt}

    # Tools

    You may call one or more functions to assist with the user query.

    You are provided with function signatures within <tools></tools> XML tags:
    <tools>
    {one tool schema as JSON per line}
    </tools>

    For each function call, return a json object with function name and arguments within <too…
    <tool_call>
    {"name": <function-name>, "arguments": <args-json-object>}
    </tool_call><|im_end|>
    <|im_start|>user
    {content}<|im_end|>
    <|im_start|>assistant
    <think>
    {reasoning}
    </think>

    {content}
    <tool_call>
    {"name": "terminal", "arguments": {"command": "ls"}}
    </tool_call><|im_end|>
    <|im_start|>tool
    <tool_response>
    {first tool result}
    </tool_response>
    <tool_response>
    {second tool result}
    </tool_response><|im_end|>
    <|im_start|>assistant

Choices, where the published templates differ or are silent:

- The system block and the tools preamble are Qwen's (no default system prompt is
  injected, as in Qwen 3); without tools and without a system message there is no
  system block.
- Tool results use Hermes 3's ``tool`` role (Qwen writes them as a ``user`` turn);
  consecutive results share one block, one ``<tool_response>`` each.
- Assistant tool calls are written by the ``hermes_parsers`` parser's ``render``, so the
  history reads exactly as the model wrote it; reasoning (``reasoning_content`` or
  ``reasoning``) is kept in the history as a ``<think>`` block, which Hermes/Qwen 2.5
  templates never drop; empty reasoning writes no block (it would read back as none).
  An assistant message without tool calls is written verbatim, so raw model text
  (markup included) can be replayed as ``content``.

The promise the agent loop relies on (the *prefix property*): for a completion text the
server generated in canonical form (``parser.render(...)``), rendering ``messages[:k]``
with the generation prompt, then the completion, then ``<|im_end|>``, is a prefix of the
rendering of the longer conversation in which that completion was appended as the parsed
assistant message.

``CHATML_JINJA_TEMPLATE`` is the same template in Jinja, as shipped in the test tokenizer's
``tokenizer_config.json`` for ``transformers``' ``apply_chat_template``. It gives the same
text as ``render_prompt`` for the ``hermes`` format whenever tool-call arguments are
objects or canonical JSON strings (``json.dumps(..., ensure_ascii=False)``), which is what
the scripted server returns.
"""

from __future__ import annotations

import json
import re
from collections.abc import Hashable, Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_parsers import ToolCallParser

__all__ = [
    "CHATML_JINJA_TEMPLATE",
    "GENERATION_PROMPT",
    "IM_END",
    "IM_START",
    "parse_prompt",
    "render_blocks",
    "render_call",
    "render_prompt",
]

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
GENERATION_PROMPT = f"{IM_START}assistant\n"

_TOOLS_HEAD = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
_TOOLS_TAIL = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)


def _parser(parser: str | ToolCallParser) -> ToolCallParser:
    if not isinstance(parser, str):
        return parser
    # Imported on first use: whoever only renders a tokenizer's own template (the token
    # worker) does not load every parser format (about 30 ms of start-up).
    from hermes_parsers import get_parser

    return get_parser(parser)


def _text(content: Any, where: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        pieces: list[str] = []
        for j, part in enumerate(content):
            kind = part.get("type", "text") if isinstance(part, Mapping) else None
            if kind != "text" or not isinstance(part.get("text"), str):
                raise ValueError(
                    f"{where}.content[{j}]: only text parts can be rendered, got {part!r}"
                )
            pieces.append(part["text"])
        return "".join(pieces)
    raise ValueError(
        f"{where}.content: expected a string or a list of text parts, got {type(content).__name__}"
    )


def _think(reasoning: str) -> str:
    return f"<think>\n{reasoning.strip()}\n</think>\n\n"


def render_call(call: Any, parser: ToolCallParser, *, where: str = "tool call") -> str:
    """One tool call (OpenAI-shaped, or ``{"name", "arguments"}``) in ``parser``'s markup.

    Arguments that are not a JSON object (a model that wrote broken JSON) cannot be
    written by the format itself; they are written verbatim in the Hermes shape
    ``<tool_call>\\n{"name": ..., "arguments": RAW}\\n</tool_call>``, as the Jinja
    template does.

    Raises:
        ValueError: if the call has no name (the message starts with ``where``).
    """
    function = call.get("function", call) if isinstance(call, Mapping) else None
    name = function.get("name") if isinstance(function, Mapping) else None
    if not isinstance(name, str) or not name:
        raise ValueError(f"{where}: a tool call needs function.name (a string), got {call!r}")
    try:
        return parser.render(None, [call])
    except ValueError:
        pass
    arguments = function.get("arguments") if isinstance(function, Mapping) else None
    if isinstance(arguments, str) and arguments.strip():
        raw = arguments
    elif arguments is None or isinstance(arguments, str):
        raw = "{}"
    else:
        raw = json.dumps(arguments, ensure_ascii=False)
    head = json.dumps(name, ensure_ascii=False)
    return f'<tool_call>\n{{"name": {head}, "arguments": {raw}}}\n</tool_call>'


def _assistant_body(message: Mapping[str, Any], where: str, parser: ToolCallParser) -> str:
    content = _text(message.get("content"), where)
    reasoning = message.get("reasoning_content")
    if reasoning is None:
        reasoning = message.get("reasoning")
    if reasoning is not None and not isinstance(reasoning, str):
        raise ValueError(f"{where}: reasoning must be a string, got {type(reasoning).__name__}")
    if reasoning is not None and not reasoning.strip():
        reasoning = None  # an empty think block reads back as no reasoning
    calls = message.get("tool_calls") or None
    if not calls:
        return (_think(reasoning) if reasoning is not None else "") + content
    try:
        return parser.render(content, calls, reasoning=reasoning)
    except ValueError:
        pass
    # The content holds markup this format would read back as calls (e.g. a malformed
    # call the parser kept as text), or a call's arguments are not a JSON object (a model
    # wrote broken arguments): write the content as it is, then each call.
    rendered_calls = "\n".join(
        render_call(call, parser, where=f"{where}.tool_calls[{index}]")
        for index, call in enumerate(calls)
    )
    head = _think(reasoning) if reasoning is not None else ""
    text = content.strip()
    return head + (f"{text}\n{rendered_calls}" if text else rendered_calls)


def _assistant_key(message: Mapping[str, Any]) -> Hashable | None:
    """A hashable key for an assistant message made only of strings, else ``None``."""
    content = message.get("content")
    reasoning = message.get("reasoning_content")
    other = message.get("reasoning")
    if not all(v is None or isinstance(v, str) for v in (content, reasoning, other)):
        return None
    calls: list[tuple[str, str]] = []
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            return None
        name, arguments = function.get("name"), function.get("arguments")
        if not isinstance(name, str) or not isinstance(arguments, str):
            return None
        calls.append((name, arguments))
    return (content, reasoning, other, tuple(calls))


def render_blocks(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None = None,
    add_generation_prompt: bool = True,
    *,
    parser: str | ToolCallParser = "hermes",
    cache: MutableMapping[Hashable, str] | None = None,
) -> list[str]:
    """``render_prompt`` as its blocks: one ``<|im_start|>...<|im_end|>\\n`` per turn.

    ``"".join(render_blocks(...)) == render_prompt(...)``; each block starts with
    ``<|im_start|>`` (the generation prompt is the last block when asked for), so a
    tokenizer that splits on its special tokens encodes the blocks independently.

    Args:
        messages, tools, add_generation_prompt, parser: as ``render_prompt``.
        cache: optional memo of rendered assistant messages (keyed by their content,
            reasoning and calls) kept by the caller across calls with the same
            ``parser``; the caller bounds its size.

    Raises:
        ValueError: as ``render_prompt`` (an unknown role, a non-text content part, or
            a tool call that cannot be rendered, naming the offending ``messages[i]``).
        KeyError: if ``parser`` names no registered format.
    """
    fmt = _parser(parser)
    parts: list[str] = []
    start = 0
    system: str | None = None
    if messages and messages[0].get("role") == "system":
        system = _text(messages[0].get("content"), "messages[0]")
        start = 1
    if tools:
        lines = "".join("\n" + json.dumps(tool, ensure_ascii=False) for tool in tools)
        lead = f"{system}\n\n" if system is not None else ""
        parts.append(f"{IM_START}system\n{lead}{_TOOLS_HEAD}{lines}{_TOOLS_TAIL}{IM_END}\n")
    elif system is not None:
        parts.append(f"{IM_START}system\n{system}{IM_END}\n")
    count = len(messages)
    i = start
    while i < count:
        message = messages[i]
        where = f"messages[{i}]"
        role = message.get("role")
        if role in ("user", "system"):
            parts.append(f"{IM_START}{role}\n{_text(message.get('content'), where)}{IM_END}\n")
        elif role == "assistant":
            key = _assistant_key(message) if cache is not None else None
            block = cache.get(key) if cache is not None and key is not None else None
            if block is None:
                block = f"{IM_START}assistant\n{_assistant_body(message, where, fmt)}{IM_END}\n"
                if cache is not None and key is not None:
                    cache[key] = block
            parts.append(block)
        elif role == "tool":
            results: list[str] = []
            while i < count and messages[i].get("role") == "tool":
                body = _text(messages[i].get("content"), f"messages[{i}]")
                results.append(f"<tool_response>\n{body}\n</tool_response>")
                i += 1
            parts.append(f"{IM_START}tool\n" + "\n".join(results) + f"{IM_END}\n")
            continue
        else:
            raise ValueError(
                f"{where}: unknown role {role!r}; expected system, user, assistant or tool"
            )
        i += 1
    if add_generation_prompt:
        parts.append(GENERATION_PROMPT)
    return parts


def render_prompt(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None = None,
    add_generation_prompt: bool = True,
    *,
    parser: str | ToolCallParser = "hermes",
) -> str:
    """Render OpenAI chat messages (and tool schemas) as ChatML prompt text.

    Args:
        messages: OpenAI-shaped messages (roles ``system``, ``user``, ``assistant``,
            ``tool``); content is a string, ``None`` or a list of text parts.
        tools: OpenAI tool schemas, written one JSON object per line in ``<tools>``.
        add_generation_prompt: end with ``<|im_start|>assistant\\n``.
        parser: the ``hermes_parsers`` format assistant tool calls are written in.

    Returns:
        The prompt text (special tokens as text, e.g. ``<|im_start|>``).

    Raises:
        ValueError: for an unknown role, a non-text content part, or a tool call that
            cannot be rendered (no name, arguments that are not a JSON object); the
            message names the offending ``messages[i]``.
        KeyError: if ``parser`` names no registered format.
    """
    return "".join(render_blocks(messages, tools, add_generation_prompt, parser=parser))


_BLOCK = re.compile(r"<\|im_start\|>([^\n]*)\n(.*?)(?:<\|im_end\|>\n?|\Z)", re.DOTALL)
_RESPONSE = re.compile(r"<tool_response>\n(.*?)\n</tool_response>", re.DOTALL)


def parse_prompt(
    text: str, *, parser: str | ToolCallParser = "hermes"
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """Read ChatML prompt text back into ``(messages, tools)`` (the inverse of ``render_prompt``).

    Assistant turns are parsed with ``parser`` (tool calls get the parser's ids and each
    following tool message the matching ``tool_call_id``); a trailing open generation
    prompt is dropped. Text outside ``<|im_start|>`` blocks is ignored.

    Raises:
        KeyError: if ``parser`` names no registered format.
    """
    fmt = _parser(parser)
    messages: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] | None = None
    pending_ids: list[str] = []
    for match in _BLOCK.finditer(text):
        role, body = match.group(1).strip(), match.group(2)
        closed = match.group(0).find(IM_END) >= 0
        if role == "assistant" and not closed and not body:
            continue
        if role == "system" and not messages and _TOOLS_HEAD in body:
            system, _, rest = body.partition(_TOOLS_HEAD)
            listing = rest.partition("\n</tools>")[0]
            tools = [json.loads(line) for line in listing.splitlines() if line.strip()]
            if system:
                messages.append({"role": "system", "content": system.removesuffix("\n\n")})
            continue
        if role == "assistant":
            message = fmt.parse(body).to_message()
            pending_ids = [call["id"] for call in message.get("tool_calls") or ()]
            messages.append(message)
        elif role == "tool":
            for result in _RESPONSE.findall(body):
                call_id = pending_ids.pop(0) if pending_ids else ""
                messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
        else:
            messages.append({"role": role, "content": body})
    return messages, tools


CHATML_JINJA_TEMPLATE = r"""{#- ChatML + Hermes tool calls, as chat_template.render_prompt -#}
{%- macro text(content) %}
    {%- if content is string %}
        {{- content }}
    {%- elif content is not none and content is defined %}
        {%- for part in content %}
            {{- part.text }}
        {%- endfor %}
    {%- endif %}
{%- endmacro %}
{%- set has_system = messages and messages[0].role == 'system' %}
{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if has_system %}
        {{- text(messages[0].content) + '\n\n' }}
    {%- endif %}
    {{- '# Tools\n\nYou may call one or more functions to assist with the user query.\n\n'
        'You are provided with function signatures within <tools></tools> XML tags:\n<tools>' }}
    {%- for tool in tools %}
        {{- '\n' + tool | tojson }}
    {%- endfor %}
    {{- '\n</tools>\n\nFor each function call, return a json object with function name and '
        'arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n'
        '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' }}
{%- elif has_system %}
    {{- '<|im_start|>system\n' + text(messages[0].content) + '<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if loop.first and message.role == 'system' %}
    {%- elif message.role == 'user' or message.role == 'system' %}
        {{- '<|im_start|>' + message.role + '\n' + text(message.content) + '<|im_end|>\n' }}
    {%- elif message.role == 'assistant' %}
        {{- '<|im_start|>assistant\n' }}
        {%- generation %}
        {%- if message.reasoning_content is defined and message.reasoning_content is not none %}
            {%- set reasoning = message.reasoning_content | trim %}
        {%- elif message.reasoning is defined and message.reasoning is not none %}
            {%- set reasoning = message.reasoning | trim %}
        {%- else %}
            {%- set reasoning = '' %}
        {%- endif %}
        {%- if reasoning %}
            {{- '<think>\n' + reasoning + '\n</think>\n\n' }}
        {%- endif %}
        {%- set content = text(message.content) %}
        {%- if message.tool_calls %}
            {%- if content | trim %}
                {{- content | trim + '\n' }}
            {%- endif %}
            {%- for call in message.tool_calls %}
                {%- if call.function is defined %}
                    {%- set call = call.function %}
                {%- endif %}
                {%- if not loop.first %}
                    {{- '\n' }}
                {%- endif %}
                {{- '<tool_call>\n{"name": ' + call.name | tojson + ', "arguments": ' }}
                {%- if call.arguments is string and call.arguments | trim %}
                    {{- call.arguments }}
                {%- elif call.arguments is mapping %}
                    {{- call.arguments | tojson }}
                {%- else %}
                    {{- '{}' }}
                {%- endif %}
                {{- '}\n</tool_call>' }}
            {%- endfor %}
        {%- else %}
            {{- content }}
        {%- endif %}
        {{- '<|im_end|>' }}
        {%- endgeneration %}
        {{- '\n' }}
    {%- elif message.role == 'tool' %}
        {%- if loop.first or loop.previtem.role != 'tool' %}
            {{- '<|im_start|>tool\n' }}
        {%- else %}
            {{- '\n' }}
        {%- endif %}
        {{- '<tool_response>\n' + text(message.content) + '\n</tool_response>' }}
        {%- if loop.last or loop.nextitem.role != 'tool' %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- else %}
        {{- raise_exception('unknown role ' + message.role
                            + '; expected system, user, assistant or tool') }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
"""
