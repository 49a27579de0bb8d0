"""The scripted model server reads every role and content part of the chat completions API.

Clients such as inspect-ai send ``developer`` messages; older ones send ``function``
messages and ``function_call``; multimodal clients send image, audio and file parts. The
server reads them all as the prompt's four roles, and refuses only what the API has not.
"""

from __future__ import annotations

import typing
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionRole

from hermes_loop.server import Call, ModelRequest, ModelServer, Policy, Script, Turn
from hermes_loop.server._dialects.chat_input import CHAT_ROLES
from hermes_loop.templates._chat_template import render_prompt
from hermes_loop.templates._tokenizer import load_tokenizer

TOKENIZER = load_tokenizer()


def client(server: ModelServer) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)


def test_the_server_knows_every_role_of_the_openai_package() -> None:
    assert set(CHAT_ROLES) == set(typing.get_args(ChatCompletionRole))


async def test_developer_role_is_answered_as_a_system_prompt() -> None:
    seen: list[list[dict[str, Any]]] = []

    def policy(request: ModelRequest) -> Turn:
        seen.append(request.messages)
        return Turn("hello from the script")

    messages: list[ChatCompletionMessageParam] = [
        {"role": "developer", "content": "You are terse."},
        {"role": "user", "content": "Say hello."},
    ]
    async with ModelServer(Policy(policy)) as server, client(server) as api:
        reply = await api.chat.completions.create(model="scripted", messages=messages)
    assert reply.choices[0].message.content == "hello from the script"
    assert seen == [
        [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say hello."}]
    ]
    assert reply.usage is not None
    as_system = [{"role": "system", "content": "You are terse."}, messages[1]]
    assert reply.usage.prompt_tokens == len(TOKENIZER.encode(render_prompt(as_system)))


async def test_every_role_and_content_part_in_one_conversation() -> None:
    seen: list[ModelRequest] = []

    def policy(request: ModelRequest) -> Turn:
        seen.append(request)
        return Turn("done")

    messages: list[ChatCompletionMessageParam] = [
        {"role": "system", "content": [{"type": "text", "text": "sys"}]},
        {"role": "developer", "content": [{"type": "text", "text": "dev"}], "name": "ops"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look: "},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}},
                {"type": "input_audio", "input_audio": {"data": "AA==", "format": "wav"}},
                {"type": "file", "file": {"filename": "a.pdf", "file_data": "AA=="}},
            ],
        },
        {"role": "assistant", "content": None, "function_call": {"name": "ls", "arguments": "{}"}},
        {"role": "function", "name": "ls", "content": "a.txt"},
        {
            "role": "assistant",
            "content": [{"type": "refusal", "refusal": "I will not."}],
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
                {"id": "c2", "type": "custom", "custom": {"name": "patch", "input": "*** x"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "b.txt"}]},
        {"role": "tool", "tool_call_id": "c2", "content": "patched"},
        {"role": "assistant", "content": None, "refusal": "No."},
        {"role": "user", "content": "and now?"},
    ]
    async with ModelServer(Policy(policy)) as server, client(server) as api:
        reply = await api.chat.completions.create(model="scripted", messages=messages)
    assert reply.choices[0].message.content == "done"
    (request,) = seen
    assert request.turn_index == 3
    assert [m["role"] for m in request.messages] == [
        "system", "system", "user", "assistant", "tool", "assistant", "tool", "tool",
        "assistant", "user",
    ]  # fmt: skip
    assert request.messages[2]["content"] == "look: [image][audio][file a.pdf]"
    assert request.messages[3]["tool_calls"][0]["function"] == {"name": "ls", "arguments": "{}"}
    assert request.messages[4] == {
        "role": "tool", "content": "a.txt", "tool_call_id": "call_ls", "name": "ls"
    }  # fmt: skip
    assert request.messages[5]["content"] == "I will not."
    custom = request.messages[5]["tool_calls"][1]
    assert custom == {
        "id": "c2", "type": "function", "function": {"name": "patch", "arguments": "*** x"}
    }  # fmt: skip
    assert request.messages[6]["content"] == "b.txt"
    assert request.messages[8]["content"] == "No."


@pytest.mark.parametrize(
    ("message", "words"),
    [
        ({"role": "critic", "content": "x"}, ["messages[1]", "unknown role 'critic'", "developer"]),
        ({"role": "user", "content": [{"type": "video", "url": "x"}]}, ["messages[1].content[0]"]),
        ({"role": "user", "content": [{"type": "text"}]}, ["messages[1].content[0]", "'text'"]),
        ({"role": "user", "content": 42}, ["messages[1].content", "int"]),
        ({"role": "function", "content": "x"}, ["messages[1]", "'name'"]),
        ({"role": "assistant", "tool_calls": [{"id": "c"}]}, ["messages[1].tool_calls[0]"]),
        ({"role": "assistant", "tool_calls": "ls"}, ["messages[1].tool_calls", "list"]),
    ],
)
async def test_malformed_messages_are_a_400_naming_the_message(
    message: dict[str, Any], words: list[str]
) -> None:
    messages: Any = [{"role": "user", "content": "hi"}, message]
    async with ModelServer(Script(["never"])) as server, client(server) as api:
        with pytest.raises(openai.BadRequestError) as caught:
            await api.chat.completions.create(model="scripted", messages=messages)
    text = caught.value.message
    assert all(word in text for word in words), text
    assert "\n" not in text


async def test_a_developer_conversation_is_served_turn_by_turn() -> None:
    script = Script([Turn(tool_calls=[Call("terminal", {"command": "ls"})]), Turn("a.txt")])
    async with ModelServer(script) as server, client(server) as api:
        messages: list[ChatCompletionMessageParam] = [
            {"role": "developer", "content": "Use the terminal."},
            {"role": "user", "content": "What is here?"},
        ]
        first = await api.chat.completions.create(model="scripted", messages=messages)
        (call,) = first.choices[0].message.tool_calls or []
        assert call.type == "function"
        messages += [
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": call.function.name,
                            "arguments": call.function.arguments,
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call.id, "content": "a.txt"},
        ]
        second = await api.chat.completions.create(model="scripted", messages=messages)
    assert second.choices[0].message.content == "a.txt"
