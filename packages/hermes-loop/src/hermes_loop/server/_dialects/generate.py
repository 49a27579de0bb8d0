"""What the two ``/generate`` dialects (vLLM's and SGLang's) share.

The prompt is token ids or text; the turn index and the conversation key are read from
its ChatML text. The completion is the turn's token ids (end-of-turn token last), cut to
``max_tokens`` (finish reason ``length``); its text leaves special tokens out unless
``skip_special_tokens`` is false, as vLLM and SGLang do by default. Sampling parameters
(``temperature``, ``top_p``, ``stop``...) are accepted and ignored: the scripted model is
deterministic. Without ``max_tokens`` the whole turn is returned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from hermes_loop.server._completions import Completion
from hermes_loop.server._conversations import prompt_key, prompt_turn_index
from hermes_loop.server._dialects.request import ParsedRequest
from hermes_loop.server._wire import Rejected, int_field
from hermes_loop.templates._tokenizer import Tokenizer

__all__ = ["GenerateRequest", "Generated", "generated", "read_generate"]

#: The most samples one request may ask for.
MAX_N = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class GenerateRequest(ParsedRequest):
    """A ``/generate`` request: the prompt, and how many samples of what length."""

    n: int
    max_tokens: int | None
    skip_special_tokens: bool


Request = TypeVar("Request", bound=GenerateRequest)


def _prompt_ids(prompt: Any, field: str, tokenizer: Tokenizer) -> list[int]:
    if isinstance(prompt, str):
        try:
            return tokenizer.encode(prompt)
        except (TypeError, UnicodeError) as exc:
            raise Rejected(400, f"{field}: the tokenizer cannot encode it ({exc})") from None
    if isinstance(prompt, list) and all(
        isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in prompt
    ):
        return prompt
    raise Rejected(400, f"{field} must be a list of token ids or a string")


def read_generate(
    kind: type[Request],
    body: Mapping[str, Any],
    *,
    prompt: Any,
    prompt_field: str,
    params: Mapping[str, Any],
    max_tokens: int | None,
    tokenizer: Tokenizer,
    **options: Any,
) -> Request:
    """A ``kind`` request from the parts its dialect found in ``body``.

    Args:
        kind: the dialect's request class.
        body: the decoded body.
        prompt: the prompt as sent (token ids or text).
        prompt_field: the prompt's field name, for error messages.
        params: where ``n`` and ``skip_special_tokens`` are (the body, or SGLang's
            ``sampling_params``).
        max_tokens: the completion budget the dialect read.
        tokenizer: decodes the prompt ids (and encodes a text prompt).
        **options: the dialect's own fields.

    Raises:
        Rejected: 400 for a prompt that is neither token ids nor text, an ``n`` outside
            1-64 or a negative ``max_tokens``.
    """
    prompt_ids = _prompt_ids(prompt, prompt_field, tokenizer)
    n = int_field(params, "n")
    n = 1 if n is None else n
    if not 1 <= n <= MAX_N:
        raise Rejected(400, f"n must be between 1 and {MAX_N}, got {n}")
    if max_tokens is not None and max_tokens < 0:
        raise Rejected(400, f"max_tokens must be >= 0, got {max_tokens}")
    text = tokenizer.decode(prompt_ids)
    return kind(
        endpoint="generate",
        body=body,
        model=body.get("model"),
        turn_index=prompt_turn_index(text),
        conversation=prompt_key(text),
        prompt_text=text,
        prompt_token_ids=prompt_ids,
        n=n,
        max_tokens=max_tokens,
        skip_special_tokens=params.get("skip_special_tokens", True) is not False,
        **options,
    )


@dataclass(frozen=True, slots=True)
class Generated:
    """The tokens one ``/generate`` request gets back."""

    token_ids: Sequence[int]
    logprobs: Sequence[float]
    text: str
    finish_reason: str


def generated(request: GenerateRequest, completion: Completion, tokenizer: Tokenizer) -> Generated:
    """``completion`` cut to ``request.max_tokens``, with its text as the request asks."""
    ids: Sequence[int] = completion.token_ids
    logprobs: Sequence[float] = completion.logprobs
    cut = request.max_tokens is not None and request.max_tokens < len(ids)
    if cut:
        ids, logprobs = ids[: request.max_tokens], logprobs[: request.max_tokens]
        text = tokenizer.decode(ids, skip_special_tokens=request.skip_special_tokens)
    elif request.skip_special_tokens:
        text = completion.visible_text
    else:
        text = tokenizer.decode(ids)
    finish = "length" if cut or completion.turn.finish_reason == "length" else "stop"
    return Generated(ids, logprobs, text, finish)
