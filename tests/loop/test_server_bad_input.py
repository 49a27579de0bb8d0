"""Scripts and requests the model server cannot use: a clear error naming what is wrong.

Deep nesting and lone surrogates in a script are a ``ScriptError`` naming the file, the
turn and the field when the script is built, never a ``RecursionError`` or ``TypeError``
when the server starts; the same in a request is a 400, never a 500.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest
from openai.types.chat import ChatCompletionUserMessageParam

from hermes_loop._errors import HermesLoopError
from hermes_loop.server import (
    Call,
    Fault,
    ModelServer,
    Replay,
    Script,
    ScriptError,
    ScriptExhaustedError,
    ServerStartError,
    Turn,
    load_script_file,
)
from hermes_loop.server._json_limits import MAX_DEPTH
from tests.loop.chat_messages import function_calls

USER: ChatCompletionUserMessageParam = {"role": "user", "content": "go"}
DEEP = 100_000


def nested(depth: int) -> dict[str, Any]:
    """``{"a": {"a": ... {}}}``: ``depth`` objects, built without recursion."""
    top: dict[str, Any] = {}
    inner = top
    for _ in range(depth - 1):
        inner["a"] = {}
        inner = inner["a"]
    return top


def test_errors_share_the_package_root() -> None:
    assert issubclass(ScriptError, HermesLoopError)
    assert issubclass(ScriptError, ValueError)
    assert issubclass(ScriptExhaustedError, HermesLoopError)
    assert issubclass(ScriptExhaustedError, LookupError)
    assert issubclass(ServerStartError, HermesLoopError)
    assert issubclass(ServerStartError, RuntimeError)


# Deep nesting ------------------------------------------------------------------------


def test_a_100k_deep_argument_in_a_file_names_file_turn_and_field(tmp_path: Path) -> None:
    deep = "[" * DEEP + "]" * DEEP
    path = tmp_path / "deep.json"
    path.write_text(
        '{"scripts": {"agent": ["first", {"tool_calls": [{"name": "t", "arguments": '
        '{"x": ' + deep + "}}]}]}}",
        encoding="utf-8",
    )
    with pytest.raises(ScriptError) as caught:
        load_script_file(path)
    assert str(caught.value) == (
        f"{path}: script 'agent': turn 1: field 'tool_calls[0].arguments': "
        f"nested more than {MAX_DEPTH} levels deep"
    )


def test_deep_values_elsewhere_in_a_file_are_named_too(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('[{"content": ' + "[" * DEEP + "]" * DEEP + "}]", encoding="utf-8")
    with pytest.raises(ScriptError, match=r"deep\.json: turn 0: field 'content': must be a str"):
        load_script_file(path)
    unclosed = tmp_path / "unclosed.json"
    unclosed.write_text("[" * DEEP, encoding="utf-8")
    with pytest.raises(ScriptError, match=r"unclosed\.json: not valid JSON"):
        load_script_file(unclosed)


def test_a_deep_file_that_is_fine_otherwise_still_loads(tmp_path: Path) -> None:
    # A deep value in a field the schema ignores ("description") does not stop the load.
    path = tmp_path / "ok.json"
    deep = "[" * DEEP + "]" * DEEP
    path.write_text('{"description": ' + deep + ', "turns": ["hi"]}', encoding="utf-8")
    assert [turn.content for turn in load_script_file(path)["ok"].turns] == ["hi"]


def test_a_yaml_file_too_deep_to_read_names_the_file(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    path = tmp_path / "deep.yaml"
    path.write_text("- content: " + "[" * 1000 + "]" * 1000 + "\n", encoding="utf-8")
    with pytest.raises(ScriptError, match=r"deep\.yaml: nested too deeply to read as YAML"):
        load_script_file(path)


def test_deep_arguments_built_in_python_are_refused_when_the_call_is_made() -> None:
    with pytest.raises(ScriptError, match=r"^turn 1: field 'tool_calls\[0\].arguments': nested"):
        Script(["ok", {"tool_calls": [{"name": "t", "arguments": nested(DEEP)}]}])
    with pytest.raises(ScriptError, match=f"field 'arguments': nested more than {MAX_DEPTH}"):
        Call("t", nested(MAX_DEPTH + 1))
    with pytest.raises(ScriptError, match="field 'arguments': the JSON text is nested too deep"):
        Call("t", "[" * DEEP + "]" * DEEP)
    # Broken JSON text stays allowed: it plays a model writing broken arguments.
    assert Call("t", "[" * 10).arguments == "[" * 10


async def test_arguments_at_the_depth_limit_are_served_whole() -> None:
    arguments = nested(MAX_DEPTH)
    async with ModelServer([Turn(tool_calls=[Call("t", arguments)])]) as running:
        api = openai.AsyncOpenAI(base_url=running.base_url, api_key="test", max_retries=0)
        async with api:
            reply = await api.chat.completions.create(model="scripted", messages=[USER])
    calls = function_calls(reply.choices[0].message)
    assert json.loads(calls[0].function.arguments) == arguments


# Lone surrogates and values JSON cannot carry ----------------------------------------


@pytest.mark.parametrize(
    ("turn", "message"),
    [
        ('{"content": "hi \\ud800"}', r"turn 1: field 'content': holds a lone surrogate '\\ud800'"),
        ('{"reasoning": "\\udfff"}', r"turn 1: field 'reasoning': holds a lone surrogate"),
        (
            '{"tool_calls": [{"name": "t", "arguments": {"k": ["a", "\\ud800"]}}]}',
            r"turn 1: field 'tool_calls\[0\].arguments.k\[1\]': holds a lone surrogate",
        ),
        (
            '{"tool_calls": [{"name": "t", "arguments": {"\\ud800": 1}}]}',
            r"turn 1: field 'tool_calls\[0\].arguments': a key holds a lone surrogate",
        ),
        (
            '{"tool_calls": [{"name": "t\\ud800", "arguments": {}}]}',
            r"turn 1: field 'tool_calls\[0\].name': holds a lone surrogate",
        ),
        (
            '{"tool_calls": [{"name": "t", "arguments": "{\\"k\\": \\"\\\\ud800\\"}"}]}',
            r"turn 1: field 'tool_calls\[0\].arguments': holds a lone surrogate",
        ),
        (
            '{"content": "x", "faults": [{"status": 500, "message": "\\ud800"}]}',
            r"turn 1: field 'faults\[0\].message': holds a lone surrogate",
        ),
    ],
)
def test_a_lone_surrogate_names_file_turn_and_field(
    tmp_path: Path, turn: str, message: str
) -> None:
    path = tmp_path / "surrogate.json"
    path.write_text(f'["fine", {turn}]', encoding="utf-8")
    with pytest.raises(ScriptError, match=message) as caught:
        load_script_file(path)
    assert str(caught.value).startswith(f"{path}: turn 1: field ")


def test_a_lone_surrogate_in_a_model_name_or_replay(tmp_path: Path) -> None:
    path = tmp_path / "named.json"
    path.write_text('{"model": "m\\ud800", "turns": ["hi"]}', encoding="utf-8")
    with pytest.raises(ScriptError, match=r"named\.json: the model name holds a lone surrogate"):
        load_script_file(path)
    recorded = [USER, {"role": "assistant", "content": "bad \ud800"}]
    with pytest.raises(ScriptError, match=r"^messages\[1\]: field 'content': holds a lone"):
        Replay(recorded)


def test_surrogates_and_non_json_values_in_python_never_reach_the_server() -> None:
    with pytest.raises(ScriptError, match="field 'content': holds a lone surrogate"):
        ModelServer(["\ud800"])
    with pytest.raises(ScriptError, match=r"field 'arguments.k': a set is not a JSON value"):
        Call("t", {"k": {1, 2}})
    with pytest.raises(ScriptError, match=r"field 'arguments.k': nan is not a JSON number"):
        Call("t", {"k": float("nan")})
    with pytest.raises(ScriptError, match=r"field 'arguments': has a key 1 that is not a str"):
        Call("t", {1: "x"})  # type: ignore[dict-item]
    with pytest.raises(ScriptError, match="field 'message': holds a lone surrogate"):
        Fault(status=500, message="\udc80")


def test_files_that_are_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes('["café"]'.encode("latin-1"))
    with pytest.raises(ScriptError, match=r"latin1\.json: not UTF-8 text"):
        load_script_file(path)


# Requests ----------------------------------------------------------------------------


async def test_bad_text_and_nesting_in_requests_are_400s() -> None:
    async with ModelServer(["ok"]) as running, aiohttp.ClientSession() as http:
        chat = running.base_url + "/chat/completions"
        lone = b'{"model": "scripted", "messages": [{"role": "user", "content": "\\ud800"}]}'
        async with http.post(chat, data=lone) as response:
            assert response.status == 400
            error = (await response.json())["error"]["message"]
            assert error.startswith("cannot render the conversation: the tokenizer cannot")
        deep = b'{"messages": ' + b"[" * DEEP + b"]" * DEEP + b"}"
        async with http.post(chat, data=deep) as response:
            assert response.status == 400
            assert "nests too deeply" in (await response.json())["error"]["message"]
        generate = running.url + "/generate"
        async with http.post(generate, data=b'{"prompt": "\\udc00"}') as response:
            assert response.status == 400
            assert "prompt" in (await response.json())["error"]["message"]
        async with http.post(generate, data=b'{"text": "\\udc00"}') as response:
            assert response.status == 400
            assert "input_ids (or text)" in (await response.json())["error"]["message"]


async def test_bad_ports_name_the_port() -> None:
    with pytest.raises(ValueError, match=r"port must be 0-65535 .*got 99999"):
        ModelServer(["ok"], port=99999)
    async with ModelServer(["ok"]) as first:
        second = ModelServer(["ok"], port=first.port)
        with pytest.raises(OSError, match=rf"cannot listen on 127\.0\.0\.1:{first.port}: "):
            await second.start()
