"""``POST /generate`` as Atropos' managed vLLM server speaks it.

The custom vLLM server of ``example_trainer/vllm_api_server.py`` in atroposlib 0.4.0,
called by Atropos' ``VLLMServer``: request ``{"prompt": {"prompt_token_ids": [...]},
"logprobs": 0, "n", "max_tokens", ...}`` (``prompt`` may also be text); answer
``{"text": [...], "prompt": str, "finish_reasons": [...]}`` plus, when ``logprobs`` is
given (as vLLM does), ``"logprobs": [[[{"<id>": lp}], ...]], "prompt_token_ids": [...],
"token_ids": [[...]]``, and ``prompt_logprobs`` when asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hermes_loop.server._completions import logprob_of
from hermes_loop.server._dialects.generate import Generated, GenerateRequest, read_generate
from hermes_loop.server._wire import int_field
from hermes_loop.templates._tokenizer import Tokenizer

__all__ = ["VllmRequest", "read_vllm", "vllm_payload"]


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmRequest(GenerateRequest):
    """A vLLM ``/generate`` request."""

    logprobs: bool
    prompt_logprobs: bool


def read_vllm(body: Mapping[str, Any], tokenizer: Tokenizer) -> VllmRequest:
    """Read a vLLM ``/generate`` body.

    Raises:
        Rejected: 400 for a bad prompt, ``n`` or ``max_tokens``.
    """
    prompt = body.get("prompt")
    if isinstance(prompt, dict):
        prompt = prompt.get("prompt_token_ids", prompt.get("prompt"))
    return read_generate(
        VllmRequest,
        body,
        prompt=prompt,
        prompt_field="prompt.prompt_token_ids (or prompt)",
        params=body,
        max_tokens=int_field(body, "max_tokens", "max_completion_tokens", "max_new_tokens"),
        tokenizer=tokenizer,
        logprobs=body.get("logprobs") is not None,
        prompt_logprobs=body.get("prompt_logprobs") is not None,
    )


def vllm_payload(request: VllmRequest, reply: Generated) -> dict[str, Any]:
    """The answer body: ``n`` identical samples (the scripted model is deterministic)."""
    n = request.n
    payload: dict[str, Any] = {
        "text": [reply.text] * n,
        "prompt": request.prompt_text,
        "finish_reasons": [reply.finish_reason] * n,
    }
    if request.logprobs:
        entries = [[{str(t): lp}] for t, lp in zip(reply.token_ids, reply.logprobs, strict=True)]
        payload["logprobs"] = [entries] * n
        payload["prompt_token_ids"] = request.prompt_token_ids
        payload["token_ids"] = [list(reply.token_ids)] * n
    if request.prompt_logprobs:
        prompt_ids = request.prompt_token_ids or []
        payload["prompt_logprobs"] = [None] + [
            {str(t): logprob_of(i, t)} for i, t in enumerate(prompt_ids) if i
        ]
    return payload
