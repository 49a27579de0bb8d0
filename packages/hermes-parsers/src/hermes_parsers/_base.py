"""``ToolCallParser``: the base class every format derives from."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from hermes_parsers._assembly import Assembler
from hermes_parsers._errors import NotTextError, RenderError
from hermes_parsers._result import ParseResult
from hermes_parsers._scanner import MarkerScanner, Region, RegionSet, Scanner, reasoning_region
from hermes_parsers._schema import ToolSchemas
from hermes_parsers._stream import StreamParser
from hermes_parsers._tool_call import ToolCall

__all__ = ["ToolCallParser"]

_THINK = reasoning_region()
_plain_result = ParseResult._content_only


def markup_check(openers: Sequence[str], *, always: bool = False) -> Callable[[str], bool]:
    """A function telling whether a text holds one of ``openers`` (every text when
    ``always``), at the cost of C-level searches: per group of openers sharing a first
    character, an ``in`` test for that character (a ``memchr``, which rules the group out
    at once for text where it never occurs), then the group's searches: ``in`` for each
    opener holding a character above U+00FF (free on text without such characters), and
    one compiled alternation for the others (one pass for them all; ``in`` for one)."""
    if always or not openers:
        return lambda text: always
    groups: dict[str, list[str]] = {}
    for opener in dict.fromkeys(openers):
        groups.setdefault(opener[0], []).append(opener)
    # Per group: its first character, the openers tested with ``in``, and the search of
    # the alternation of the others (or None). One function runs the whole plan: a call
    # per test would cost more than the tests themselves on short text.
    plan: list[tuple[str, tuple[str, ...], Callable[[str], object] | None]] = []
    for first, group in groups.items():
        # ``in`` answers at once when the opener holds a character wider than any in the
        # text (DeepSeek's fullwidth bars in ASCII text); the expression engine does not.
        needles = [opener for opener in group if max(opener) > "\xff"]
        narrow = [opener for opener in group if max(opener) <= "\xff"]
        search = None
        if len(narrow) > 1:
            longest_first = sorted(narrow, key=len, reverse=True)
            search = re.compile("|".join(map(re.escape, longest_first))).search
        elif narrow:
            needles.append(narrow[0])
        plan.append((first, tuple(needles), search))
    if len(plan) == 1 and plan[0][2] is None:
        only, needles_only, _ = plan[0]

        def holds_group(text: str) -> bool:
            if only in text:
                for needle in needles_only:
                    if needle in text:
                        return True
            return False

        return holds_group

    def holds_markup(text: str) -> bool:
        for first, needles, search in plan:
            if first in text:
                for needle in needles:
                    if needle in text:
                        return True
                if search is not None and search(text) is not None:
                    return True
        return False

    return holds_markup


class ToolCallParser(ABC):
    """Parses one model family's raw output into content, tool calls and reasoning.

    Options (all keyword-only):
        strict: raise ``ParseError`` on malformed markup instead of keeping it as content.
        tools: the OpenAI tool schemas offered to the model; formats whose values are
            untyped text (qwen3_coder, glm45, glm47) convert values to the declared types.
        think_prefilled: the prompt ended inside ``<think>``, so the text starts in
            reasoning and the first ``</think>`` ends it.

    Subclasses set ``name`` and ``markers`` and implement ``_call_regions`` (or
    ``_scanner`` for formats that are not marker-delimited) and ``_render_calls``.
    """

    name: ClassVar[str] = ""
    #: Strings that can open tool-call markup; content containing one cannot be rendered.
    markers: ClassVar[tuple[str, ...]] = ()
    #: Every string the format reads as markup: openers, closers, separators, reasoning
    #: tags. ``hermes_parsers.adversarial.growth_units`` repeats each of them, and every
    #: piece of a rendered call between them, to check that parsing stays linear.
    vocabulary: ClassVar[tuple[str, ...]] = ()
    #: Whether the format carries call ids (so ``render`` then ``parse`` keeps them).
    carries_ids: ClassVar[bool] = False
    #: Whether the format can hold content beside calls (``render`` refuses otherwise).
    content_with_calls: ClassVar[bool] = True
    #: The opening and closing tags ``render`` writes around reasoning.
    reasoning_tags: ClassVar[tuple[str, str]] = ("<think>", "</think>")
    #: Written between each reasoning tag and the reasoning text.
    reasoning_padding: ClassVar[str] = "\n"
    #: Written after the closing reasoning tag, before the content and calls.
    after_reasoning: ClassVar[str] = "\n\n"
    #: Markers written reasoning cannot hold besides its closing tag (the parser would read
    #: them as markup inside the reasoning).
    reasoning_forbidden: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        *,
        strict: bool = False,
        tools: Sequence[Mapping[str, Any]] | None = None,
        think_prefilled: bool = False,
    ) -> None:
        self.strict = strict
        self.think_prefilled = think_prefilled
        self.schemas = ToolSchemas(tools or ())
        #: The scanner's regions, built once per parser (they hold no parse state).
        self._regions: RegionSet | None = None
        #: Tells whether a text holds one of ``openers`` (built on first use).
        self._holds_markup: Callable[[str], bool] | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, strict={self.strict})"

    # parsing --------------------------------------------------------------------
    def parse(self, text: str) -> ParseResult:
        """Parse a complete model output.

        Returns:
            ``ParseResult`` (unpacks as ``content, tool_calls``; has ``.reasoning``).

        Raises:
            NotTextError: (a TypeError) if ``text`` is not a ``str``.
            ParseError: in strict mode, if tool-call markup is malformed.
        """
        if not isinstance(text, str):
            raise NotTextError(f"parse() takes str, got {type(text).__name__}; decode bytes first")
        holds_markup = self._holds_markup or self._markup_check()
        if not holds_markup(text):
            return _plain_result(text.strip() or None)
        quick = self._parse_quick(text)
        return self._parse_markup(text) if quick is None else quick

    def _parse_quick(self, text: str) -> ParseResult | None:
        """``parse`` of the common case (content and well-formed calls), read without the
        scanner, or ``None`` for ``_parse_markup`` to read the text. A format that
        overrides it must give ``_parse_markup``'s result for every text it accepts
        (see ``hermes_parsers._quick``); the default accepts none."""
        del text  # the default reads nothing
        return None

    def _parse_markup(self, text: str) -> ParseResult:
        """``parse`` without the shortcut for text that holds none of ``openers``."""
        return self._parse_with(self._whole_text_scanner(), text)

    def _parse_with(self, scanner: Scanner, text: str) -> ParseResult:
        """The result of ``text`` read whole by ``scanner`` (a fresh one)."""
        assembler = Assembler(self.name, strict=self.strict)
        if type(scanner) is MarkerScanner:
            assembler.add(scanner.scan(text), events=False)
        else:
            assembler.add(scanner.feed(text), events=False)
            assembler.add(scanner.finish(), events=False)
        return assembler.result()

    def _whole_text_scanner(self) -> Scanner:
        """The scanner ``parse`` feeds the whole text to at once, then finishes: by
        default the one streaming uses (``_scanner``)."""
        return self._scanner()

    def stream(self) -> StreamParser:
        """Start an incremental parse; see ``StreamParser``."""
        return StreamParser(self._scanner(), Assembler(self.name, strict=self.strict))

    @property
    def openers(self) -> tuple[str, ...]:
        """The strings that start markup in this format (calls, reasoning, special tokens
        the parser drops). A text holding none of them parses as its own content: ``parse``
        then costs the substring searches for them. Empty when the text starts inside
        reasoning (``think_prefilled``): no text is plain content then."""
        if self.think_prefilled:
            return ()
        return self._openers()

    def _openers(self) -> tuple[str, ...]:
        """``openers`` when the text does not start in reasoning. The default serves
        formats read by a ``MarkerScanner``: the opening markers of its regions."""
        scanner = self._scanner()
        if type(scanner) is not MarkerScanner:
            raise NotImplementedError(f"{type(self).__name__} must define _openers")
        return scanner.openers

    def _markup_check(self) -> Callable[[str], bool]:
        """Build (once) the test behind ``parse``'s shortcut: whether a text holds one of
        ``openers`` (always true with ``think_prefilled``)."""
        check = self._holds_markup = markup_check(self.openers, always=self.think_prefilled)
        return check

    def _scanner(self) -> Scanner:
        regions = self._regions
        if regions is None:
            regions = self._regions = RegionSet((*self._call_regions(), _THINK))
        return MarkerScanner(regions, open_region=_THINK if self.think_prefilled else None)

    def _call_regions(self) -> list[Region]:
        raise NotImplementedError(f"{type(self).__name__} must define _call_regions or _scanner")

    # rendering ------------------------------------------------------------------
    def render(
        self,
        content: str | None,
        tool_calls: Sequence[ToolCall | Mapping[str, Any]] | None = None,
        *,
        reasoning: str | None = None,
    ) -> str:
        """Write content and calls in this model's own raw format (the inverse of ``parse``).

        ``parse(render(c, calls))`` gives back ``c`` (stripped) and the calls (ids too
        where the format carries them).

        The turn is the reasoning (when given, or always with ``think_prefilled``, which
        leaves out the opening tag), then the content, then the calls. A format shapes
        it through hooks, never by overriding this method: ``reasoning_tags``,
        ``reasoning_padding``, ``after_reasoning`` and ``reasoning_forbidden`` for the
        reasoning; ``_render_body`` for how content and calls are joined;
        ``_render_calls`` for the calls; ``_check_rendered`` to refuse a result.

        Raises:
            RenderError: if the content or reasoning holds this format's markup, or the
                format cannot hold content beside calls, or a call cannot be written.
            ToolCallError: if a call given as a mapping has no name or non-object
                arguments.
        """
        calls = [c if isinstance(c, ToolCall) else ToolCall.from_dict(c) for c in tool_calls or ()]
        text = (content or "").strip()
        for marker in (*self.markers, "<think>", "</think>"):
            if marker in text:
                raise RenderError(
                    f"{self.name}: content contains {marker!r}, which this format reads as markup",
                    kind="content",
                )
        head = self._render_reasoning(reasoning)
        if not calls:
            rendered = head + text
        elif text and not self.content_with_calls:
            raise RenderError(
                f"{self.name}: this format cannot hold content beside tool calls", kind="content"
            )
        else:
            rendered = head + self._render_body(text, calls)
        self._check_rendered(rendered, text, calls, reasoning)
        return rendered

    def _render_reasoning(self, reasoning: str | None) -> str:
        """``{open}{pad}{reasoning}{pad}{close}{after}`` from the reasoning hooks (no opening
        tag with ``think_prefilled``); empty when there is no reasoning to write."""
        if reasoning is None and not self.think_prefilled:
            return ""
        thought = (reasoning or "").strip()
        for marker in self._reasoning_stops():
            if marker in thought:
                raise RenderError(
                    f"{self.name}: reasoning contains {marker!r}, which this format reads "
                    "as markup",
                    kind="content",
                )
        opening, closing = self.reasoning_tags
        pad = self.reasoning_padding
        tail = f"{thought}{pad}{closing}{self.after_reasoning}"
        return tail if self.think_prefilled else f"{opening}{pad}{tail}"

    def _reasoning_stops(self) -> tuple[str, ...]:
        """What written reasoning cannot hold: its closing tag and ``reasoning_forbidden``."""
        return (*self.reasoning_forbidden, self.reasoning_tags[1])

    def _render_body(self, content: str, calls: list[ToolCall]) -> str:
        """Content and calls as the template joins them (a newline between, by default)."""
        rendered = self._render_calls(calls)
        return f"{content}\n{rendered}" if content else rendered

    def _check_rendered(
        self, rendered: str, content: str, calls: list[ToolCall], reasoning: str | None
    ) -> None:
        """Refuse a rendered turn the format would not read back (default: accept all).

        Raises:
            RenderError: in formats that check (see the format's ``_check_rendered``).
        """
        del rendered, content, calls, reasoning  # the base accepts every turn

    @abstractmethod
    def _render_calls(self, calls: list[ToolCall]) -> str:
        """The raw text of ``calls`` in this format."""
