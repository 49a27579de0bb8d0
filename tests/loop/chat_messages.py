"""Typed OpenAI chat values for tests that drive the model server with the ``openai`` client.

The SDK types its requests with TypedDicts and its replies with pydantic models; these
helpers turn a reply back into a request message and narrow tool calls to the function
kind, which is the only kind the scripted server sends.
"""

from __future__ import annotations

from typing import cast

from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionMessage,
    ChatCompletionMessageFunctionToolCall,
)


class ReasoningAssistantMessage(ChatCompletionAssistantMessageParam, total=False):
    """An assistant message with the ``reasoning_content`` field the server reads and sends."""

    reasoning_content: str


def as_param(message: ChatCompletionMessage) -> ChatCompletionAssistantMessageParam:
    """``message`` dumped (``None`` fields dropped) as the assistant message to send back.

    A dumped ``ChatCompletionMessage`` has exactly the assistant-message fields (plus any
    extra the server sent, such as ``reasoning_content``), so the cast states a known shape.
    """
    return cast(ChatCompletionAssistantMessageParam, message.model_dump(exclude_none=True))


def function_calls(message: ChatCompletionMessage) -> list[ChatCompletionMessageFunctionToolCall]:
    """The tool calls of ``message``, each checked to be a function call.

    Raises:
        AssertionError: ``message`` has no tool calls, or one is not a function call.
    """
    assert message.tool_calls is not None, f"no tool calls in {message}"
    calls = []
    for call in message.tool_calls:
        assert isinstance(call, ChatCompletionMessageFunctionToolCall), call
        calls.append(call)
    return calls
