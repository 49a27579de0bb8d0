"""What the loop needs from a model endpoint: a ``ChatServer`` that opens sessions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from hermes_loop._errors import EndpointError

# EndpointError lives in hermes_loop._errors (the package's error tree); it is re-exported
# here because every endpoint raises it.
__all__ = ["ChatServer", "ChatSession", "EndpointError", "ModelTurn", "SamplingParams"]


@dataclass(frozen=True, slots=True)
class SamplingParams:
    """Per-request sampling settings; ``extra_body`` is merged into the request as is."""

    temperature: float | None = 1.0
    max_tokens: int | None = None
    extra_body: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ModelTurn:
    """One assistant answer in OpenAI shape.

    ``message`` is ``{"role": "assistant", "content": ..., "tool_calls": [...]}``
    (``tool_calls`` only when there are calls; arguments are JSON strings).
    """

    message: dict[str, Any]
    reasoning: str | None = None
    finish_reason: str | None = None
    usage: Mapping[str, int] = field(default_factory=dict)


class ChatSession(Protocol):
    """One rollout's conversation with the model."""

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        params: SamplingParams,
    ) -> ModelTurn:
        """The model's next turn.

        Raises:
            EndpointError: when the endpoint keeps failing after retries, or keeps
                answering the wrong shape (kind ``bad_response``). Nothing else that
                comes over the wire may escape: ``AgentLoop`` catches only this.
        """
        ...

    def managed_state(self) -> dict[str, Any] | None:
        """Token-level state (Phase 2), or ``None`` when the server has none."""
        ...


class ChatServer(Protocol):
    """A model endpoint; ``session()`` is called once per rollout."""

    def session(self, task_id: str) -> ChatSession:
        """A session for the rollout ``task_id``."""
        ...
