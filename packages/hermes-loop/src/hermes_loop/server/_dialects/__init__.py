"""The wire dialects the model server speaks, one module each.

- ``openai_chat``: OpenAI's ``POST /v1/chat/completions`` (JSON or SSE stream), with
  ``chat_input`` reading every role and content part of its messages.
- ``openai_responses``: OpenAI's Responses API, ``POST /v1/responses`` (JSON or SSE
  stream of the Responses events), with ``responses_input`` reading its input into the
  same chat messages.
- ``vllm_generate``: ``POST /generate`` as Atropos' managed vLLM server speaks it.
- ``sglang_generate``: ``POST /generate`` in SGLang's shape.

Each reads a request body into the server's own request object (a ``ParsedRequest``
subclass, which becomes the ``ModelRequest`` a responder sees) and writes a prepared
``Completion`` as that dialect's payload (a bad body is a ``wire.Rejected``, answered
as an OpenAI-shaped 400). They neither read nor write HTTP: the server's routes do.
"""

from __future__ import annotations

#: Nothing here is public: the model server uses these modules (``hermes_loop.server``).
__all__: list[str] = []
