"""``Answerer``: the steps every model request shares, whatever its dialect.

The request's ``model`` picks the responder (``_routing``), the responder picks the turn,
the turn's fault phase for this attempt is applied (``_faults``), and the turn's
completion is prepared (a script's turns once, when the server is made; other turns per
answer). A chat-shaped request (chat completions or Responses) also gets its reply, with
the prompt counted by the tokenizer on the rendered conversation (``_prompt_ids``).
The routes of ``_app.ModelServer`` write what this returns in their dialect's payload.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from hermes_loop.server._completions import Completion, prepare
from hermes_loop.server._dialects.openai_chat import ChatReply, ChatRequest, chat_reply
from hermes_loop.server._dialects.request import ParsedRequest
from hermes_loop.server._faults import FaultInjector
from hermes_loop.server._prompt_ids import PromptEncoder
from hermes_loop.server._responders import Responder, ScriptExhaustedError
from hermes_loop.server._routing import ModelRouter
from hermes_loop.server._turns import Fault, ScriptError, Turn
from hermes_loop.server._wire import Dropped, Rejected
from hermes_loop.templates._tokenizer import Tokenizer
from hermes_parsers import ToolCallParser

__all__ = ["Answer", "Answerer"]

log = logging.getLogger("hermes_loop.server")


@dataclass(frozen=True, slots=True)
class Answer:
    """The outcome of the steps every model request shares."""

    model: str
    completion: Completion
    fault: Fault | None

    @property
    def truncate(self) -> bool:
        """Whether the turn's fault asks the route to send half of its answer."""
        return self.fault is not None and self.fault.truncate


class Answerer:
    """Answers parsed requests with the turns of the responders ``router`` holds.

    Args:
        router: the responders by model name.
        tokenizer: encodes completions and chat prompts.
        parser: the ``hermes_parsers`` format raw completions are written in.
        closing: set when the server shuts down (hung and delayed faults end then).

    Raises:
        ScriptError: for a script turn the tokenizer cannot encode (naming the script
            and the turn).
    """

    def __init__(
        self,
        router: ModelRouter,
        tokenizer: Tokenizer,
        parser: ToolCallParser,
        closing: asyncio.Event,
    ) -> None:
        self._router = router
        self._tokenizer = tokenizer
        self._parser = parser
        self._prepared: dict[int, Completion] = {}
        for name, each in router.responders.items():
            for index, turn in enumerate(each.static_turns()):
                if id(turn) not in self._prepared:
                    try:
                        self._prepared[id(turn)] = prepare(turn, tokenizer, parser)
                    except (ValueError, TypeError, UnicodeError) as exc:
                        raise ScriptError(str(exc), where=f"script {name!r}: turn {index}") from exc
        self._prompts = PromptEncoder(tokenizer, parser)
        self._faults = FaultInjector(closing)

    async def answer(self, parsed: ParsedRequest) -> Answer:
        """Pick the responder the request's model names, ask it for the turn, apply the
        turn's fault for this attempt, and return the turn's completion.

        Raises:
            Rejected: for a model not served, an exhausted script, a failing responder,
                a turn that cannot be rendered or a ``status`` fault.
            Dropped: for ``hang`` and ``disconnect`` faults.
        """
        model, responder = self._router.pick(parsed.model)
        turn = await self._turn(responder, parsed, model)
        fault = None
        if turn.faults:
            slot = (model, parsed.conversation, parsed.turn_index)
            fault = await self._faults.before_answer(slot, turn)
        return Answer(model, self._completion(turn), fault)

    async def chat_answer(self, parsed: ChatRequest) -> tuple[Answer, ChatReply]:
        """``answer`` for a chat-shaped request (chat completions or Responses), and
        the reply it makes, with the prompt counted on the rendered conversation.

        Raises:
            Rejected: as ``answer``, or 400 for a conversation the template cannot render.
            Dropped: as ``answer``.
        """
        answer = await self.answer(parsed)
        try:
            prompt_ids = self._prompts.encode(parsed.messages or (), parsed.tools)
        except ValueError as exc:
            raise Rejected(400, f"cannot render the conversation: {exc}") from None
        reply = chat_reply(parsed, answer.completion, prompt_ids, self._tokenizer, self._parser)
        return answer, reply

    async def _turn(self, responder: Responder, parsed: ParsedRequest, model: str) -> Turn:
        request = parsed.for_model(model, self._parser)
        try:
            return await responder.respond(request)
        except ScriptExhaustedError as exc:
            raise Rejected(
                400, str(exc), "script_exhausted", code="script_exhausted",
                headers={"x-should-retry": "false"},
            ) from None  # fmt: skip
        except (Rejected, Dropped, asyncio.CancelledError):
            raise
        except Exception as exc:
            log.exception("responder for model %r failed", model)
            raise Rejected(
                500, f"the responder failed: {type(exc).__name__}: {exc}", "responder_error"
            ) from None

    def _completion(self, turn: Turn) -> Completion:
        found = self._prepared.get(id(turn))
        if found is not None and found.turn is turn:
            return found
        try:
            return prepare(turn, self._tokenizer, self._parser)
        except (ValueError, TypeError, UnicodeError) as exc:
            raise Rejected(500, f"cannot render the turn: {exc}", "responder_error") from None
