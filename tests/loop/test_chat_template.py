"""ChatML/Hermes prompt rendering: exact shape, the prefix property, and its inverse."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_loop._errors import HermesLoopError
from hermes_loop.server import Call, Turn, render_turn
from hermes_loop.templates._chat_template import (
    CHATML_JINJA_TEMPLATE,
    GENERATION_PROMPT,
    IM_END,
    parse_prompt,
    render_prompt,
)
from hermes_loop.templates._jinja_template import (
    ChatTemplateError,
    ChatTemplateUnavailableError,
    JinjaChatTemplate,
)
from hermes_parsers import get_parser

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "terminal",
            "description": "Run a command.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
]

CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "List /tmp and /var."},
    {
        "role": "assistant",
        "content": "Listing both.",
        "reasoning_content": "Two calls.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "terminal", "arguments": '{"command": "ls /tmp"}'},
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "terminal", "arguments": '{"command": "ls /var"}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"},
    {"role": "tool", "tool_call_id": "call_2", "content": "log"},
    {"role": "assistant", "content": "a.txt and log."},
    {
        "role": "user",
        "content": [{"type": "text", "text": "Thanks"}, {"type": "text", "text": "!"}],
    },
]

EXPECTED = (
    "<|im_start|>system\nYou are terse.\n\n# Tools\n\n"
    "You may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
    + json.dumps(TOOLS[0])
    + "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n'
    "<|im_start|>user\nList /tmp and /var.<|im_end|>\n"
    "<|im_start|>assistant\n<think>\nTwo calls.\n</think>\n\nListing both.\n"
    '<tool_call>\n{"name": "terminal", "arguments": {"command": "ls /tmp"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "terminal", "arguments": {"command": "ls /var"}}\n</tool_call>'
    "<|im_end|>\n"
    "<|im_start|>tool\n<tool_response>\na.txt\n</tool_response>\n"
    "<tool_response>\nlog\n</tool_response><|im_end|>\n"
    "<|im_start|>assistant\na.txt and log.<|im_end|>\n"
    "<|im_start|>user\nThanks!<|im_end|>\n"
    "<|im_start|>assistant\n"
)


def test_renders_the_hermes_chatml_shape_exactly() -> None:
    assert render_prompt(CONVERSATION, TOOLS) == EXPECTED


def test_without_tools_or_system_there_is_no_system_block() -> None:
    text = render_prompt([{"role": "user", "content": "hi"}])
    assert text == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert render_prompt([{"role": "user", "content": "hi"}], add_generation_prompt=False) == (
        "<|im_start|>user\nhi<|im_end|>\n"
    )


def test_system_without_tools_is_a_plain_block() -> None:
    text = render_prompt([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}])
    assert text.startswith("<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n")


def test_tools_without_system_message_keep_only_the_tools_preamble() -> None:
    text = render_prompt([{"role": "user", "content": "hi"}], TOOLS)
    assert text.startswith("<|im_start|>system\n# Tools\n\n")


def test_raw_assistant_text_is_written_verbatim() -> None:
    raw = '<think>\nhm\n</think>\n\n<tool_call>\n{"name": "x", "arguments": {}}\n</tool_call>'
    text = render_prompt(
        [{"role": "user", "content": "go"}, {"role": "assistant", "content": raw}],
        add_generation_prompt=False,
    )
    assert text.endswith(f"<|im_start|>assistant\n{raw}<|im_end|>\n")


def test_markup_in_content_beside_calls_is_kept_not_refused() -> None:
    message = {
        "role": "assistant",
        "content": "broken <tool_call>{oops",
        "tool_calls": [{"id": "c", "function": {"name": "ls", "arguments": "{}"}}],
    }
    text = render_prompt([message], add_generation_prompt=False)
    assert "broken <tool_call>{oops\n<tool_call>\n" in text


BROKEN_CALL: dict[str, Any] = {
    "role": "assistant",
    "content": "Trying.",
    "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "echo", "arguments": "{not json"}},
        {"id": "c2", "type": "function", "function": {"name": "echo", "arguments": '{"a": 1}'}},
    ],
}


def test_broken_arguments_in_history_are_written_verbatim() -> None:
    text = render_prompt([{"role": "user", "content": "go"}, BROKEN_CALL])
    assert (
        "<|im_start|>assistant\nTrying.\n"
        '<tool_call>\n{"name": "echo", "arguments": {not json}\n</tool_call>\n'
        '<tool_call>\n{"name": "echo", "arguments": {"a": 1}}\n</tool_call><|im_end|>\n'
    ) in text
    # The scripted server writes such a call the same way, so the prefix property holds.
    turn = Turn(content="Trying.", tool_calls=[Call("echo", "{not json"), Call("echo", {"a": 1})])
    assert f"<|im_start|>assistant\n{render_turn(turn, get_parser('hermes'))}<|im_end|>" in text


def test_bad_messages_name_the_offending_index() -> None:
    with pytest.raises(ValueError, match=r"messages\[1\]: unknown role 'robot'"):
        render_prompt([{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}])
    image = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}
    with pytest.raises(ValueError, match=r"messages\[0\]\.content\[0\]: only text parts"):
        render_prompt([image])
    call = {"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}
    with pytest.raises(ValueError, match=r"messages\[0\]"):
        render_prompt([call])


def test_parse_prompt_reads_the_conversation_back() -> None:
    messages, tools = parse_prompt(render_prompt(CONVERSATION, TOOLS))
    assert tools == TOOLS
    assert [m["role"] for m in messages] == [m["role"] for m in CONVERSATION]
    assert messages[0]["content"] == "You are terse."
    assistant = messages[2]
    assert assistant["content"] == "Listing both."
    assert assistant["reasoning_content"] == "Two calls."
    calls = assistant["tool_calls"]
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [
        {"command": "ls /tmp"},
        {"command": "ls /var"},
    ]
    assert [messages[3]["tool_call_id"], messages[4]["tool_call_id"]] == [c["id"] for c in calls]
    assert messages[4]["content"] == "log"
    assert messages[6]["content"] == "Thanks!"


# The prefix property -------------------------------------------------------------------

_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="<>"), max_size=30
)
_ARGS = st.dictionaries(
    st.text(min_size=1, max_size=8),
    st.one_of(st.integers(), st.text(max_size=10), st.booleans(), st.none()),
    max_size=3,
)
_TURNS = st.builds(
    Turn,
    content=st.one_of(st.none(), _TEXT),
    tool_calls=st.lists(
        st.builds(Call, name=st.from_regex(r"[a-z_]{1,12}", fullmatch=True), arguments=_ARGS),
        max_size=3,
    ),
    reasoning=st.one_of(st.none(), _TEXT),
)


def _history(draw_user: str, tools: bool) -> tuple[list[dict[str, Any]], Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": draw_user}]
    return messages, TOOLS if tools else None


@settings(max_examples=200, deadline=None)
@given(
    user=_TEXT,
    turns=st.lists(_TURNS, min_size=1, max_size=4),
    results=st.lists(_TEXT, min_size=3, max_size=3),
    tools=st.booleans(),
    system=st.one_of(st.none(), _TEXT),
)
def test_prefix_property_holds_for_generated_completions(
    user: str, turns: list[Turn], results: list[str], tools: bool, system: str | None
) -> None:
    parser = get_parser("hermes")
    schemas = TOOLS if tools else None
    messages: list[dict[str, Any]] = [{"role": "user", "content": user}]
    if system is not None:
        messages.insert(0, {"role": "system", "content": system})
    for turn in turns:
        prompt = render_prompt(messages, schemas)
        completion = render_turn(turn, parser)
        parsed = parser.parse(completion).to_message()
        messages.append(parsed)
        for call in parsed.get("tool_calls") or ():
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": results[0]})
        if not parsed.get("tool_calls"):
            messages.append({"role": "user", "content": results[1]})
        longer = render_prompt(messages, schemas)
        assert longer.startswith(prompt + completion + IM_END), (prompt, completion, longer)
        # Also without a generation prompt at the end of the longer conversation.
        assert render_prompt(messages[:-1], schemas, add_generation_prompt=False).startswith(
            prompt + completion + IM_END
        )


def test_prefix_property_on_a_concrete_tool_round() -> None:
    parser = get_parser("hermes")
    turn = Turn(
        content="Checking.",
        reasoning="Need ls.",
        tool_calls=[Call("terminal", {"command": "ls"})],
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What is here?"}]
    prompt = render_prompt(messages, TOOLS)
    assert prompt.endswith(GENERATION_PROMPT)
    completion = render_turn(turn, parser)
    message = parser.parse(completion).to_message()
    messages += [message, {"role": "tool", "tool_call_id": "x", "content": "a b c"}]
    assert render_prompt(messages, TOOLS).startswith(prompt + completion + IM_END + "\n")


# The Jinja twin (checked when jinja2 is installed) ------------------------------------


def _jinja_render(messages: list[dict[str, Any]], tools: Any, add_generation_prompt: bool) -> str:
    return JinjaChatTemplate(CHATML_JINJA_TEMPLATE)(messages, tools, add_generation_prompt)


def test_jinja_template_matches_render_prompt() -> None:
    for tools in (None, TOOLS):
        for cut in range(1, len(CONVERSATION) + 1):
            messages = CONVERSATION[:cut]
            for generation in (True, False):
                assert _jinja_render(messages, tools, generation) == render_prompt(
                    messages, tools, generation
                ), (tools, cut, generation)


def test_jinja_template_matches_with_dict_arguments_and_reasoning_field() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "reasoning": "  think  ",
            "tool_calls": [{"function": {"name": "ls", "arguments": {"path": "/ü"}}}],
        },
        {"role": "tool", "content": "x"},
        BROKEN_CALL,
    ]
    assert _jinja_render(messages, None, True) == render_prompt(messages)


# A model's own Jinja template ------------------------------------------------------------

GEMMA_LIKE = (
    "{{ bos_token }}{% for m in messages %}<start_of_turn>{{ m.role }}\n{{ m.content }}"
    "<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)


def test_own_template_gets_bos_and_eos_and_extra_variables() -> None:
    template = JinjaChatTemplate(
        GEMMA_LIKE + "{{ eos_token }}{% if flag %}!{% endif %}",
        bos_token="<bos>",
        eos_token="<eos>",
    )
    text = template([{"role": "user", "content": "hé"}], flag=True)
    assert text == "<bos><start_of_turn>user\nhé<end_of_turn>\n<start_of_turn>model\n<eos>!"


def test_end_of_turn_is_what_follows_an_assistant_message() -> None:
    assert JinjaChatTemplate(CHATML_JINJA_TEMPLATE).end_of_turn() == IM_END
    assert JinjaChatTemplate(GEMMA_LIKE).end_of_turn() == "<end_of_turn>"
    nothing = "{% for m in messages %}{{ m.content }}{% endfor %}"
    assert JinjaChatTemplate(nothing).end_of_turn() is None
    refuses = "{{ raise_exception('no assistant turns here') }}"
    assert JinjaChatTemplate(refuses).end_of_turn() is None


# {% generation %} blocks ---------------------------------------------------------------


def test_generation_spans_mark_each_assistant_turn_and_change_no_text() -> None:
    template = JinjaChatTemplate(CHATML_JINJA_TEMPLATE)
    assert template.marks_generation
    text, spans = template.render_spans(CONVERSATION, TOOLS, add_generation_prompt=True)
    assert text == template(CONVERSATION, TOOLS) == EXPECTED
    marked = [text[start:end] for start, end in spans]
    assert marked == [
        "<think>\nTwo calls.\n</think>\n\nListing both.\n"
        '<tool_call>\n{"name": "terminal", "arguments": {"command": "ls /tmp"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "terminal", "arguments": {"command": "ls /var"}}\n</tool_call>'
        "<|im_end|>",
        "a.txt and log.<|im_end|>",
    ]
    # Each span starts right after the assistant header and ends before the newline.
    for start, end in spans:
        assert text[:start].endswith(GENERATION_PROMPT)
        assert text[end] == "\n"


def test_a_template_without_blocks_marks_nothing() -> None:
    template = JinjaChatTemplate(GEMMA_LIKE)
    assert not template.marks_generation
    text, spans = template.render_spans([{"role": "user", "content": "x"}])
    assert text == template([{"role": "user", "content": "x"}], add_generation_prompt=False)
    assert spans == []


def test_a_block_written_elsewhere_than_rendered_is_refused() -> None:
    # A block inside a macro is rendered into the macro's buffer and written later, so
    # the offset seen while rendering is not where its text ends up.
    inside_macro = (
        "{% macro turn(m) %}[{% generation %}{{ m.content }}{% endgeneration %}]{% endmacro %}"
        "{% for m in messages %}{{ m.role }}: {{ turn(m) }}\n{% endfor %}"
    )
    template = JinjaChatTemplate(inside_macro)
    assert template.marks_generation
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    assert template(messages) == "user: [hi]\nassistant: [yo]\n"
    with pytest.raises(ChatTemplateError, match="not written where it is rendered"):
        template.render_spans(messages)


def test_tools_and_documents_are_none_when_not_given_as_in_transformers() -> None:
    probe = JinjaChatTemplate(
        "{% if tools is not none %}T{{ tools | length }}{% endif %}"
        "{% if documents is none %}D{% endif %}{% if tools is defined %}d{% endif %}"
    )
    assert probe([]) == "Dd"
    assert probe([], tools=[]) == "T0Dd"
    assert probe([], tools=TOOLS) == "T1Dd"


def test_template_errors_name_the_cause() -> None:
    assert issubclass(ChatTemplateError, HermesLoopError)
    assert issubclass(ChatTemplateError, ValueError)
    with pytest.raises(ChatTemplateError, match="does not compile"):
        JinjaChatTemplate("{% for %}")
    refuses = JinjaChatTemplate("{{ raise_exception('roles must alternate') }}")
    with pytest.raises(ChatTemplateError, match="refused the conversation: roles must alternate"):
        refuses([{"role": "user", "content": "x"}])
    with pytest.raises(ChatTemplateError, match="unknown role robot"):
        JinjaChatTemplate(CHATML_JINJA_TEMPLATE)([{"role": "robot", "content": "x"}])


def test_missing_jinja2_names_the_extra() -> None:
    assert issubclass(ChatTemplateUnavailableError, HermesLoopError)
    assert issubclass(ChatTemplateUnavailableError, ImportError)
    code = (
        "import sys\n"
        "sys.modules['jinja2'] = None\n"
        "from hermes_loop.templates._jinja_template import JinjaChatTemplate,"
        " ChatTemplateUnavailableError\n"
        "try:\n    JinjaChatTemplate('x')\n"
        "except ChatTemplateUnavailableError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "hermes-loop[server]" in out.stdout


# What a template reads of a message: keys, names that are dict methods or dunders (the
# sandbox answers those as attributes, or refuses them), missing names.
_PROBE_NAMES = ["role", "content", "items", "keys", "get", "__class__", "__init__", "mro", "x"]
_PROBE = (
    "".join(
        f"{{% if m.{name} is defined %}}[{name}:{{{{ m.{name} is callable }}}}"
        f"{{% if m.{name} is string %}}={{{{ m.{name} }}}}{{% endif %}}]{{% endif %}}"
        for name in _PROBE_NAMES
    )
    + "{% for k, v in m.items() %}({{ k }}={{ v }}){% endfor %}{{ m.get('role', '-') }}"
)


class _Message(dict[str, Any]):
    """A dict subclass: the short road to a plain dict's keys does not apply to it."""

    @property
    def role(self) -> str:
        return "from-property"


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.sampled_from(_PROBE_NAMES), st.text(max_size=3), max_size=6),
    st.booleans(),
)
def test_a_dict_reads_in_the_template_as_in_jinjas_own_sandbox(
    message: dict[str, Any], subclass: bool
) -> None:
    from jinja2 import sandbox

    ours = JinjaChatTemplate(_PROBE)
    jinja = sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    given_message = _Message(message) if subclass else message
    expected = jinja.from_string(_PROBE).render(m=given_message)
    assert ours._template.render(m=given_message) == expected


def test_an_unsafe_attribute_stays_refused_by_the_sandbox() -> None:
    from jinja2.exceptions import SecurityError

    reads_mro = JinjaChatTemplate("{{ m.__class__.__mro__ }}")
    with pytest.raises((ChatTemplateError, SecurityError)):
        reads_mro([], m={"role": "user"})
    assert JinjaChatTemplate("{{ m.role }}|{{ m.nothing }}")([], m={"role": "user"}) == "user|"
