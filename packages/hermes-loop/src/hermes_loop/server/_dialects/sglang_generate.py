"""``POST /generate`` in SGLang's shape.

Request ``{"input_ids": [...]}`` (or ``"text"``), ``"sampling_params": {"max_new_tokens",
"n", "skip_special_tokens", ...}``, ``"return_logprob"``; answer ``{"text", "output_ids",
"meta_info": {"id", "finish_reason", "prompt_tokens", "completion_tokens",
"cached_tokens", "output_token_logprobs"?}}``, or a list of them when ``n > 1``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hermes_loop.server._dialects.generate import Generated, GenerateRequest, read_generate
from hermes_loop.server._wire import Rejected, int_field
from hermes_loop.templates._tokenizer import Tokenizer

__all__ = ["SglangRequest", "is_sglang", "read_sglang", "sglang_payload"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SglangRequest(GenerateRequest):
    """An SGLang ``/generate`` request."""

    return_logprob: bool


def is_sglang(body: Mapping[str, Any]) -> bool:
    """Whether a ``/generate`` body is in SGLang's shape rather than vLLM's."""
    return (
        "input_ids" in body
        or "sampling_params" in body
        or ("text" in body and "prompt" not in body)
    )


def read_sglang(body: Mapping[str, Any], tokenizer: Tokenizer) -> SglangRequest:
    """Read an SGLang ``/generate`` body.

    Raises:
        Rejected: 400 for ``sampling_params`` that are not an object, or a bad prompt,
            ``n`` or ``max_new_tokens``.
    """
    params = body.get("sampling_params") or {}
    if not isinstance(params, dict):
        raise Rejected(400, "'sampling_params' must be an object", param="sampling_params")
    prompt = body.get("input_ids")
    if prompt is None:
        prompt = body.get("text")
    return read_generate(
        SglangRequest,
        body,
        prompt=prompt,
        prompt_field="input_ids (or text)",
        params=params,
        max_tokens=int_field(params, "max_new_tokens"),
        tokenizer=tokenizer,
        return_logprob=bool(body.get("return_logprob")),
    )


def sglang_payload(
    request: SglangRequest, reply: Generated, *, eos_token_id: int, new_id: Callable[[], str]
) -> Any:
    """The answer body: one sample object, or a list of ``n`` of them.

    Args:
        request: the request.
        reply: the generated tokens.
        eos_token_id: reported as the matched stop token.
        new_id: makes each sample's ``meta_info.id``.
    """
    ids = reply.token_ids
    reason: dict[str, Any] = (
        {"type": "length", "length": len(ids)}
        if reply.finish_reason == "length"
        else {"type": "stop", "matched": eos_token_id}
    )
    samples = []
    for _ in range(request.n):
        meta: dict[str, Any] = {
            "id": new_id(),
            "finish_reason": reason,
            "prompt_tokens": len(request.prompt_token_ids or ()),
            "completion_tokens": len(ids),
            "cached_tokens": 0,
        }
        if request.return_logprob:
            meta["output_token_logprobs"] = [
                [lp, t, None] for t, lp in zip(ids, reply.logprobs, strict=True)
            ]
        samples.append({"text": reply.text, "output_ids": list(ids), "meta_info": meta})
    return samples[0] if request.n == 1 else samples
