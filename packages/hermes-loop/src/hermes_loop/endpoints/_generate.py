"""``GenerateChatServer``: Phase 2, raw generation with real token ids and logprobs.

The endpoint is the ``/generate`` route that Atropos' managed vLLM server speaks: token
ids in; text, token ids and per-token logprobs out. The loop renders the conversation
with a chat template, tokenizes it, and parses tool calls out of the raw text with a
``hermes_parsers`` parser. It records what a trainer needs, in the shape of Atropos'
``ManagedServer`` nodes: for each sequence ``tokens`` (prompt and completions),
``masked_tokens`` (``-100`` where no loss applies, the token id where it does) and
``logprobs`` (``1.0`` on masked positions).

The prompt ids are the ones the model's own chat template and tokenizer give: the
tokenizer's own Jinja chat template when it ships one (``tokenizer.chat_template``), else
the built-in ChatML/Hermes template (``hermes_loop.templates._chat_template``); a prompt starts with
the BOS token when the tokenizer says prompts do (``tokenizer.add_bos_token``) and the
template did not write it. The template's end-of-turn text (``<|im_end|>`` for ChatML) is
sent as a stop string, so generation ends there even on a model for which that text is
several tokens, and the completion is read up to it.

A conversation stays one sequence while each new prompt extends the previous prompt
plus completion as text: the new suffix is tokenized alone and appended, so the tokens
the model generated are kept exactly (never re-tokenized) and the stop token is never
doubled. When a prompt does not extend the sequence (e.g. a trimmed history), a new
sequence starts.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Unpack

from hermes_loop.endpoints._base import ChatSession, ModelTurn, SamplingParams
from hermes_loop.endpoints._client import ClientOptions, HTTPEndpoint
from hermes_loop.endpoints._errors import bad_response, type_name
from hermes_parsers import ToolCallParser, get_parser

if TYPE_CHECKING:
    from hermes_loop.templates._tokenizer import Tokenizer

__all__ = ["GenerateChatServer", "Renderer", "read_generation"]

_ROUTE = "/generate"
_DECIMAL = re.compile(r"-?[0-9]{1,20}")

Renderer = Callable[..., str]
"""``render(messages, tools=..., add_generation_prompt=True) -> prompt text``."""


def _default_render(tokenizer: Tokenizer, parser: ToolCallParser) -> tuple[Renderer, str | None]:
    """The tokenizer's own chat template if it has one, else ChatML/Hermes; and the
    template's end-of-turn text (``None`` when it cannot be told)."""
    if tokenizer.chat_template:
        from hermes_loop.templates._jinja_template import JinjaChatTemplate

        template = JinjaChatTemplate(
            tokenizer.chat_template, bos_token=tokenizer.bos_token, eos_token=tokenizer.eos_token
        )
        return template, template.end_of_turn()
    from hermes_loop.templates._chat_template import IM_END, render_prompt

    return partial(render_prompt, parser=parser), IM_END


def _cut_at_stop(text: str, stops: Sequence[str]) -> str:
    """``text`` up to the first stop string in it (all of it when none occurs)."""
    end = len(text)
    for stop in stops:
        found = text.find(stop) if stop else -1
        if found != -1:
            end = min(end, found)
    return text[:end]


class GenerateChatServer(HTTPEndpoint):
    """A raw-generation endpoint driven as a chat server.

    Args:
        base_url: the server root, e.g. ``"http://127.0.0.1:9001"`` (``/generate`` is
            appended; a trailing ``/v1`` is dropped).
        tokenizer: the model's tokenizer (``hermes_loop.templates._tokenizer.load_tokenizer``).
        parser: a ``hermes_parsers`` parser or its name (the config's ``tool_call_parser``).
        render: the chat template; by default the tokenizer's own
            (``tokenizer.chat_template``, rendered by
            ``hermes_loop.templates._jinja_template.JinjaChatTemplate``), else
            ``hermes_loop.templates._chat_template.render_prompt`` (ChatML/Hermes, tool calls
            written in ``parser``'s format).
        stop_text: the template's end-of-turn text; by default the text the template
            writes after an assistant message (``<|im_end|>`` for ChatML), else the
            tokenizer's EOS token. It and the EOS token are sent as stop strings, and a
            completion is read up to the first of them.
        model: the model name sent with every request (``None``: none is sent).
        **options: the client's options, as ``OpenAIChatServer``.

    Raises:
        ChatTemplateUnavailableError: the tokenizer ships a chat template but ``jinja2``
            is missing (``hermes_loop.templates._jinja_template``; install ``hermes-loop[server]``).
        ChatTemplateError: the tokenizer's chat template does not compile.
        KeyError: ``parser`` names no registered format.
    """

    def __init__(
        self,
        *,
        base_url: str,
        tokenizer: Tokenizer,
        parser: str | ToolCallParser = "hermes",
        render: Renderer | None = None,
        stop_text: str | None = None,
        model: str | None = None,
        **options: Unpack[ClientOptions],
    ) -> None:
        super().__init__(base_url.rstrip("/").removesuffix("/v1"), model, **options)
        self.tokenizer = tokenizer
        self.parser = get_parser(parser) if isinstance(parser, str) else parser
        end_of_turn: str | None = None
        if render is None:
            render, end_of_turn = _default_render(tokenizer, self.parser)
        self.render = render
        self.stop_text: str = stop_text or end_of_turn or tokenizer.eos_token
        self.stop: tuple[str, ...] = tuple(dict.fromkeys((self.stop_text, tokenizer.eos_token)))
        self._bos: list[int] = (
            [tokenizer.bos_token_id]
            if tokenizer.add_bos_token and tokenizer.bos_token_id is not None
            else []
        )

    def prompt_ids(self, prompt_text: str) -> list[int]:
        """The token ids of a whole prompt: BOS first when the tokenizer's prompts start
        with it and ``prompt_text`` does not already, then the text's own tokens."""
        bos = self._bos
        token = self.tokenizer.bos_token
        if bos and token and prompt_text.startswith(token):
            bos = []
        return bos + self.tokenizer.encode(prompt_text)

    def session(self, task_id: str) -> ChatSession:
        """A fresh token record for one rollout."""
        return _GenerateSession(self)

    async def generate(
        self, prompt_ids: list[int], params: SamplingParams
    ) -> tuple[list[int], list[float], str]:
        """POST ``/generate``; return (completion token ids, their logprobs, finish reason).

        Raises:
            EndpointError: on HTTP failure after retries, or a response of the wrong shape.
        """
        body: dict[str, Any] = {"prompt": {"prompt_token_ids": prompt_ids}, "logprobs": 0, "n": 1}
        body["stop"] = list(self.stop)
        if self.model is not None:
            body["model"] = self.model
        vocab = getattr(self.tokenizer, "vocab_size", None)
        read = functools.partial(read_generation, vocab_size=vocab if type(vocab) is int else None)
        return await self.post_checked("/generate", self.sampled(body, params), read)


def read_generation(
    data: Any, *, vocab_size: int | None = None
) -> tuple[list[int], list[float], str]:
    """(token ids, logprobs, finish reason) of the first sample of a ``/generate`` answer.

    The answer is vLLM's shape: ``logprobs[0]`` holds one ``[{"<id>": logprob}]`` (or
    ``{"<id>": logprob}``) per generated token; ``token_ids[0]``, ``text[0]`` and
    ``finish_reasons[0]`` are checked when present and must agree with it. Ids must be
    integers in ``[0, vocab_size)`` and logprobs finite numbers.

    Raises:
        EndpointError: of kind ``bad_response``, naming the first field of the wrong shape.
    """
    if not isinstance(data, dict):
        raise bad_response(_ROUTE, f"the body is {type_name(data)}, not an object")
    positions = _first_sample(data, "logprobs", required=True)
    ids: list[int] = []
    logprobs: list[float] = []
    for index, entry in enumerate(positions):
        pair = entry[0] if isinstance(entry, list) and entry else entry
        if not isinstance(pair, dict) or len(pair) != 1:
            raise bad_response(
                _ROUTE, f"logprobs[0][{index}] is not one {{token id: logprob}} pair"
            )
        ((token, logprob),) = pair.items()
        ids.append(_token_id(token, f"logprobs[0][{index}]", vocab_size))
        if isinstance(logprob, bool) or not isinstance(logprob, int | float):
            raise bad_response(_ROUTE, f"logprobs[0][{index}] has a logprob that is not a number")
        if not math.isfinite(logprob):
            raise bad_response(_ROUTE, f"logprobs[0][{index}] has the logprob {logprob}")
        logprobs.append(float(logprob))
    token_ids = _first_sample(data, "token_ids", required=False)
    if token_ids is not None:
        listed = [_token_id(t, f"token_ids[0][{i}]", vocab_size) for i, t in enumerate(token_ids)]
        if listed != ids:
            raise bad_response(
                _ROUTE,
                f"token_ids[0] ({len(listed)} ids) disagrees with the ids of logprobs[0] "
                f"({len(ids)} ids)",
            )
    _first_sample(data, "text", required=False, item=str)  # unused: the ids are decoded
    finish = _first_sample(data, "finish_reasons", required=False, item=str)
    return ids, logprobs, "stop" if finish is None else finish


def _first_sample(data: dict[str, Any], key: str, *, required: bool, item: type = list) -> Any:
    """``data[key][0]``, checked to be an ``item``; ``None`` if absent and not required."""
    value = data.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, list) or not value:
        raise bad_response(_ROUTE, f"{key!r} is {type_name(value)}, not a non-empty array")
    first = value[0]
    if not isinstance(first, item):
        expected = "an array" if item is list else "a string"
        raise bad_response(_ROUTE, f"{key}[0] is {type_name(first)}, not {expected}")
    return first


def _token_id(raw: Any, where: str, vocab_size: int | None) -> int:
    """A token id written as an int or as a decimal string (vLLM's dict keys)."""
    if isinstance(raw, str) and _DECIMAL.fullmatch(raw):
        raw = int(raw)
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise bad_response(_ROUTE, f"{where} has the token id {raw!r:.40}, not an integer")
    if raw < 0 or (vocab_size is not None and raw >= vocab_size):
        limit = f"[0, {vocab_size})" if vocab_size is not None else "0 or more"
        raise bad_response(_ROUTE, f"{where} has the token id {raw}, outside {limit}")
    return raw


@dataclass(slots=True)
class _Node:
    full_text: str
    tokens: list[int]
    masked_tokens: list[int]
    logprobs: list[float]
    finish_reason: str = ""
    turns: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "full_text": self.full_text,
            "tokens": list(self.tokens),
            "masked_tokens": list(self.masked_tokens),
            "logprobs": list(self.logprobs),
            "finish_reason": self.finish_reason,
            "turns": list(self.turns),
        }


class _GenerateSession:
    def __init__(self, server: GenerateChatServer) -> None:
        self._server = server
        self._nodes: list[_Node] = []
        self._turns: list[dict[str, Any]] = []
        # Raw completion text of the assistant messages this session produced, by
        # identity, so the next prompt replays exactly what the model wrote.
        self._raw: dict[int, tuple[dict[str, Any], str]] = {}

    def managed_state(self) -> dict[str, Any] | None:
        return {"nodes": [node.as_dict() for node in self._nodes], "turns": list(self._turns)}

    def _for_render(self, messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        out: list[Mapping[str, Any]] = []
        for message in messages:
            known = self._raw.get(id(message))
            if known is not None and known[0] is message:
                out.append({"role": "assistant", "content": known[1]})
            else:
                out.append(message)
        return out

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        params: SamplingParams,
    ) -> ModelTurn:
        server = self._server
        tokenizer = server.tokenizer
        prompt_text = server.render(
            self._for_render(messages), tools=tools, add_generation_prompt=True
        )
        node = self._nodes[-1] if self._nodes else None
        if node is not None and prompt_text.startswith(node.full_text):
            suffix = tokenizer.encode(prompt_text[len(node.full_text) :])
            prompt_ids = node.tokens + suffix
        else:
            suffix = server.prompt_ids(prompt_text)
            prompt_ids = list(suffix)
            node = _Node("", [], [], [])
            self._nodes.append(node)
        ids, logprobs, finish = await server.generate(prompt_ids, params)
        completion_text = tokenizer.decode(ids)
        node.tokens = prompt_ids + ids
        node.masked_tokens += [-100] * len(suffix) + ids
        node.logprobs += [1.0] * len(suffix) + logprobs
        node.full_text = prompt_text + completion_text
        node.finish_reason = finish
        node.turns.append(len(self._turns))
        self._turns.append(
            {
                "prompt_token_ids": prompt_ids,
                "completion_token_ids": ids,
                "completion_logprobs": logprobs,
                "finish_reason": finish,
                "node": len(self._nodes) - 1,
            }
        )
        raw = _cut_at_stop(completion_text, server.stop)
        parsed = server.parser.parse(raw)
        message = parsed.to_message()
        message.pop("reasoning_content", None)
        self._raw[id(message)] = (message, raw)
        if parsed.tool_calls:
            finish = "tool_calls" if finish == "stop" else finish
        usage = {"prompt_tokens": len(prompt_ids), "completion_tokens": len(ids)}
        return ModelTurn(message, parsed.reasoning, finish, usage)
