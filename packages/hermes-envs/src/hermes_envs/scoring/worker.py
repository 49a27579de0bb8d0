"""The token worker: a child process that makes Phase 1 group lines.

Making a group's line (the chat-template render, the token ids, the JSON text) is pure
Python and holds the GIL for about a millisecond per rollout; on the environment's own
thread that delays the event loop running the next rollouts. ``TokenWorker`` starts
this module as ``python -m hermes_envs.scoring.worker`` and sends it the work instead.

Protocol (UTF-8 lines, surrogates passed through):

- in, first: the set-up, one JSON object: ``tokenizer`` (the ``tokenizers`` JSON of a
  fast tokenizer), ``encode_special_tokens``, ``chat_template`` (a ``ChatTemplateSpec``
  as a JSON object), ``eos_token``, ``group_size``, ``ensure_scores_are_not_same``, and
  ``record_tokens`` (optional, false by default: whether a token's text is the
  tokenizer's ``decode([id])``, so that the worker may make the records' token texts);
- out: ``ready``, once it has made a line of a sample conversation (``LineMaker.warm_up``:
  the chat template compiled and the code of a line loaded, so that the first group is
  answered as fast as the others: ``process`` holds at most twice its workers' groups,
  and every group waiting on a slow first answer keeps a rollout from starting);
- in, then: one request per line: ``{"id", "tools", "rollouts": [{"task_id",
  "messages", "score"}]}``, and ``"record_tokens": true`` to get each row's ``tokens``
  entry of its rollout record (``hermes_envs.scoring._record_tokens``) too;
- out: one answer per request, in order: a JSON header (``id``; ``drift``: ``[task_id,
  turns]`` pairs; ``skip``: why Atropos would not write the group; or ``error``), a
  tab, and the group's line (empty when skipped or failed); when the record tokens were
  asked for, the set-up allows them and the line was made: a tab and the JSON text of
  each row's entry, tab-separated, in the order of the rows (JSON text holds no tab).

The worker ignores SIGINT (its parent decides when it stops) and ends with its stdin.
"""

from __future__ import annotations

import io
import json
import signal
import sys
from collections.abc import Mapping
from typing import Any, TextIO

from hermes_envs._chunk_texts import packed
from hermes_envs._group_file import LineEncoder
from hermes_envs._tokenizer import ChatTemplateSpec, TemplateRenderer
from hermes_envs.scoring._encoding import TextEncoder
from hermes_envs.scoring._group import ScoredRollout, scored_group, skip_reason
from hermes_envs.scoring._record_tokens import RecordTokensText
from hermes_envs.scoring._tokens import chat_template_tokens

__all__ = ["LineMaker", "main"]


#: The sample conversation ``LineMaker.warm_up`` makes lines of: a user message, a tool
#: call, its output and an answer (every kind of message a rollout holds).
_SAMPLE_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "terminal",
            "description": "Run a command.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
]
_SAMPLE_MESSAGES = [
    {"role": "user", "content": "Write hello into greeting.txt."},
    {
        "role": "assistant",
        "content": "Writing it.",
        "tool_calls": [
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": "terminal", "arguments": '{"command": "echo hello"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_0", "content": "done"},
    {"role": "assistant", "content": "Done."},
]


class _FastTokenizer:
    """What ``TextEncoder`` uses of a fast ``transformers`` tokenizer: its backend."""

    is_fast = True

    def __init__(self, backend: Any) -> None:
        self.backend_tokenizer = backend

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return list(self.backend_tokenizer.encode(text, add_special_tokens=add_special_tokens).ids)


class LineMaker:
    """Group lines from plain data: what the environment makes on its tokenizer thread
    for a Phase 1 group, from the set-up described in the module docstring.

    Raises:
        KeyError: if the set-up lacks a field.
        Exception: whatever ``tokenizers`` raises for a tokenizer it cannot read.
    """

    def __init__(self, setup: Mapping[str, Any]) -> None:
        from tokenizers import Tokenizer

        backend = Tokenizer.from_str(setup["tokenizer"])
        backend.encode_special_tokens = bool(setup["encode_special_tokens"])
        self._encoder = TextEncoder(_FastTokenizer(backend))
        self._renderer = TemplateRenderer(ChatTemplateSpec(**setup["chat_template"]))
        self._eos_token = str(setup["eos_token"])
        self._group_size = int(setup["group_size"])
        self._ensure_scores_differ = bool(setup["ensure_scores_are_not_same"])
        self._lines = LineEncoder()
        self._record_tokens: RecordTokensText | None = None
        if setup.get("record_tokens"):
            self._record_tokens = RecordTokensText(
                lambda ids: backend.decode_batch(ids, skip_special_tokens=False)
            )

    def warm_up(self) -> bool:
        """Make the lines (and record token texts) of a sample conversation, with tools
        and without, and forget them: the templates are compiled and the code a line
        runs is loaded before the first request. Changes no answer (what it leaves
        behind is what any line leaves: remembered texts of the same ids). Returns
        whether both were made (a template may refuse the sample: nothing is lost, the
        first request then pays for what was not done here); never raises.
        """
        made = True
        for tools in (_SAMPLE_TOOLS, None):
            rollouts = [
                {"task_id": "warm-up", "messages": _SAMPLE_MESSAGES, "score": score}
                for score in (0.0, 1.0)  # scores that differ: a line Atropos would write
            ]
            try:
                self.make({"id": 0, "tools": tools, "rollouts": rollouts, "record_tokens": True})
            except Exception:
                made = False
        return made

    def make(self, request: Mapping[str, Any]) -> tuple[dict[str, Any], str, list[str]]:
        """The answer header, line and record token texts (empty unless asked for,
        allowed by the set-up and the line made) of one request.

        Raises:
            ValueError: if the chat template cannot render a conversation.
            KeyError, TypeError: if the request is malformed.
        """
        tools = request.get("tools")
        rollouts = []
        for rollout in request["rollouts"]:
            tokens = chat_template_tokens(
                rollout["messages"],
                render=self._renderer,
                encode_many=self._encoder.encode_many,
                eos_token=self._eos_token,
                tools=tools,
                marked=self._renderer.marked,
            )
            rollouts.append(
                ScoredRollout(rollout["task_id"], rollout["messages"], rollout["score"], tokens)
            )
        group, drift = scored_group(rollouts, self._group_size)
        header: dict[str, Any] = {"id": request["id"], "drift": drift}
        reason = skip_reason(group, self._group_size, self._ensure_scores_differ)
        if reason is not None:
            header["skip"] = reason
            return header, "", []
        # Each row's ids packed once, for the line and the records' token texts.
        rows = {name: [packed(row) for row in group[name]] for name in ("tokens", "masks")}
        line = self._lines.encode(group, rows)
        made = self._record_tokens
        if made is None or not request.get("record_tokens"):
            return header, line, []
        texts = [
            made.text(ids, masks, score, (tokens, marks))
            for ids, masks, score, tokens, marks in zip(
                group["tokens"],
                group["masks"],
                group["scores"],
                rows["tokens"],
                rows["masks"],
                strict=True,
            )
        ]
        return header, line, texts


def serve(source: TextIO, sink: TextIO) -> int:
    """Answer the requests of ``source`` on ``sink`` until ``source`` ends; returns the
    exit status (2 when the set-up could not be read)."""
    first = source.readline()
    if not first:
        return 0
    try:
        maker = LineMaker(json.loads(first))
    except Exception as exc:
        print(f"hermes-envs token worker: bad set-up: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    maker.warm_up()
    sink.write("ready\n")
    sink.flush()
    for text in source:
        request: dict[str, Any] = {}
        try:
            request = json.loads(text)
            header, line, texts = maker.make(request)
        except Exception as exc:
            header, line = {"id": request.get("id"), "error": f"{type(exc).__name__}: {exc}"}, ""
            texts = []
        sink.write("\t".join([json.dumps(header), line, *texts]) + "\n")
        sink.flush()
    return 0


def main() -> int:
    """The worker process: stdin to stdout, as the module docstring says."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    source = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="surrogatepass")
    sink = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", errors="surrogatepass")
    return serve(source, sink)


if __name__ == "__main__":
    sys.exit(main())
