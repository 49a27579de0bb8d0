"""Phase 2 prompts: the model's own template, BOS exactly once, the end of turn as a stop.

Against the scripted model server on 127.0.0.1; the real-model check of the same promises
(Gemma 3 270M on llama.cpp) is in ``test_real_model.py``.
"""

from __future__ import annotations

from typing import Any

from hermes_loop import AgentLoop, GenerateChatServer, SamplingParams, Tool
from hermes_loop.server import Call, ModelRequest, ModelServer, Policy, Script, Turn
from hermes_loop.templates._chat_template import CHATML_JINJA_TEMPLATE, IM_END, render_prompt
from hermes_loop.templates._jinja_template import JinjaChatTemplate
from hermes_loop.templates._tokenizer import HFTokenizer, load_tokenizer

SHIPPED = load_tokenizer()
BOS = "<|endoftext|>"
BOS_ID = SHIPPED.token_to_id(BOS)
USER = [{"role": "user", "content": "Echo hi."}]
ECHO = Tool(
    "echo",
    "Echo text.",
    {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    lambda arguments, call: f"echo: {arguments['text']}",
)


def _tokenizer(*, template: str | None, bos: bool) -> HFTokenizer:
    return HFTokenizer(
        SHIPPED.backend,
        bos_token=BOS if bos else None,
        add_bos_token=bos,
        chat_template=template,
    )


def _endpoint(tokenizer: HFTokenizer, url: str = "http://127.0.0.1:9", **options: Any) -> Any:
    return GenerateChatServer(base_url=url, tokenizer=tokenizer, max_retries=0, **options)


def test_the_tokenizers_own_template_is_used_when_it_has_one() -> None:
    own = "{% for m in messages %}[{{ m.role }}] {{ m.content }}<|im_end|>\n{% endfor %}"
    endpoint = _endpoint(_tokenizer(template=own, bos=False))
    assert isinstance(endpoint.render, JinjaChatTemplate)
    assert (
        endpoint.render(USER, tools=None, add_generation_prompt=True)
        == "[user] Echo hi.<|im_end|>\n"
    )
    assert endpoint.stop_text == IM_END
    # The shipped tokenizer carries the ChatML/Hermes template: the same text either way.
    shipped = _endpoint(SHIPPED)
    assert shipped.render(USER, tools=None) == render_prompt(USER)


def test_the_builtin_template_is_used_when_the_tokenizer_has_none() -> None:
    endpoint = _endpoint(_tokenizer(template=None, bos=False))
    tools = [ECHO.schema()]
    assert endpoint.render(USER, tools=tools) == render_prompt(USER, tools)
    assert endpoint.stop_text == IM_END
    assert endpoint.stop == (IM_END,)


def test_bos_starts_the_prompt_once_when_the_tokenizer_says_so() -> None:
    text = render_prompt(USER)
    without = _endpoint(_tokenizer(template=None, bos=False))
    assert without.prompt_ids(text) == SHIPPED.encode(text)
    builtin = _endpoint(_tokenizer(template=None, bos=True))
    assert builtin.prompt_ids(text) == [BOS_ID, *SHIPPED.encode(text)]
    # A template that writes BOS itself: the text's own BOS, not a second one.
    writes_bos = _endpoint(_tokenizer(template="{{ bos_token }}" + CHATML_JINJA_TEMPLATE, bos=True))
    own_text = writes_bos.render(USER, tools=None, add_generation_prompt=True)
    assert own_text == BOS + text
    assert writes_bos.prompt_ids(own_text) == [BOS_ID, *SHIPPED.encode(text)]


def test_stop_text_defaults_to_the_templates_end_of_turn_then_eos() -> None:
    gemma_like = (
        "{% for m in messages %}<start_of_turn>{{ m.role }}\n{{ m.content }}<end_of_turn>\n"
        "{% endfor %}"
    )
    endpoint = _endpoint(_tokenizer(template=gemma_like, bos=False))
    assert endpoint.stop_text == "<end_of_turn>"
    assert endpoint.stop == ("<end_of_turn>", IM_END)
    silent = _endpoint(_tokenizer(template="{{ messages[0].content }}", bos=False))
    assert silent.stop_text == SHIPPED.eos_token
    chosen = _endpoint(_tokenizer(template=None, bos=False), stop_text="END")
    assert chosen.stop == ("END", IM_END)


async def test_requests_carry_bos_once_and_the_stop_strings() -> None:
    seen: list[ModelRequest] = []
    script = Script([Turn(tool_calls=[Call("echo", {"text": "hi"})]), Turn("Done.")])

    async def policy(request: ModelRequest) -> Turn:
        seen.append(request)
        return await script.respond(request)

    async with ModelServer(Policy(policy)) as server:
        endpoint = _endpoint(_tokenizer(template=None, bos=True), url=server.url)
        async with AgentLoop(endpoint, [ECHO], max_turns=3) as loop:
            result = await loop.run(USER)
        await endpoint.aclose()
    assert result.finished_naturally
    assert result.final_response == "Done."
    assert len(seen) == 2
    for request in seen:
        assert request.body["stop"] == [IM_END]
        ids = request.prompt_token_ids
        assert ids is not None
        assert ids[0] == BOS_ID
        assert ids.count(BOS_ID) == 1


async def test_the_completion_is_read_up_to_the_stop_string() -> None:
    script = Script(["The answer.END trailing text the server did not cut"])
    async with ModelServer(script) as server:
        endpoint = _endpoint(_tokenizer(template=None, bos=False), url=server.url, stop_text="END")
        turn = await endpoint.session("t").complete(USER, None, SamplingParams())
        await endpoint.aclose()
    assert turn.message["content"] == "The answer."
