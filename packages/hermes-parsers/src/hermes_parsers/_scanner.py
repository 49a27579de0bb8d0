"""Incremental, linear-time scanning of text into content and marked regions.

A format is described by ``Region``s: an opening marker, a closing marker (or none: the
region runs to the end of the text) and a function that reads the region's body. The
``MarkerScanner`` is fed text in arbitrary chunks and emits segments as soon as they are
certain; fed the same text in any chunking it emits the same segments. Each character
is examined a bounded number of times, so time is linear in the input.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from hermes_parsers._segments import Content, Malformed, Reasoning, Segment

__all__ = ["BodyReader", "MarkerScanner", "Region", "RegionSet", "Scanner", "reasoning_region"]


class BodyReader(Protocol):
    """Reads a region body into segments.

    Args:
        body: the text between the markers.
        raw: the whole region as written, markers included.
        offset: where ``body`` starts in the whole text.
        terminated: False when the text ended before the closing marker.
    """

    def __call__(self, body: str, raw: str, offset: int, terminated: bool) -> list[Segment]: ...


class Scanner(Protocol):
    """What a format gives the parser: feed text in chunks, then finish."""

    def feed(self, text: str) -> list[Segment]:
        """Consume the next chunk; return segments now certain."""
        ...

    def finish(self) -> list[Segment]:
        """The text is complete; return the remaining segments."""
        ...


@dataclass(frozen=True, slots=True)
class Region:
    """A marked region.

    ``read`` is ``None`` for a reasoning region (its body becomes ``Reasoning``).
    With ``retry_nested`` a body that reads as malformed but contains the opening
    marker again is treated as a stray opener followed by a real region.
    """

    start: str
    end: str | None
    read: BodyReader | None = None
    retry_nested: bool = True


class RegionSet(tuple[Region, ...]):
    """The regions of a format, with what a ``MarkerScanner`` derives from them worked out
    once (a parser keeps one and hands it to every scanner it makes)."""

    markers: tuple[str, ...]
    #: The markers' first characters: a chunk holding none of them is all content.
    firsts: tuple[str, ...]
    longest: int

    def __new__(cls, regions: Iterable[Region]) -> RegionSet:
        made = super().__new__(cls, regions)
        made.markers = tuple(region.start for region in made)
        made.firsts = tuple(dict.fromkeys(marker[0] for marker in made.markers if marker))
        made.longest = max(map(len, made.markers), default=0)
        return made


def reasoning_region(start: str = "<think>", end: str = "</think>") -> Region:
    """A ``<think>...</think>`` style region whose body is reasoning."""
    return Region(start, end, None)


def _pending_prefix(text: str, markers: Sequence[str]) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of some marker.

    Only the occurrences of a marker's first character within its length of the end are
    tried, so a chunk pays a few C searches, not one comparison per possible size."""
    best = 0
    size = len(text)
    for marker in markers:
        first = marker[0]
        at = text.find(first, max(0, size - len(marker) + 1))
        while 0 <= at < size - best:
            if marker.startswith(text[at:]):
                best = size - at
                break
            at = text.find(first, at + 1)
    return best


class MarkerScanner:
    """Scans text into ``Content`` and regions; see the module docstring."""

    def __init__(self, regions: Iterable[Region], *, open_region: Region | None = None) -> None:
        """Create a scanner; ``open_region`` starts the text already inside that region
        (for prompts that end with an opening ``<think>``). Pass a ``RegionSet`` to skip
        working out what the scanner derives from the regions."""
        if type(regions) is not RegionSet:
            regions = RegionSet(regions)
        self._regions = regions
        self._markers = regions.markers
        self._firsts = regions.firsts
        self._longest = regions.longest
        self._carry = ""  # content mode: text that may begin a marker
        self._pos = 0  # absolute offset of the first character not yet emitted
        self._region: Region | None = open_region
        self._body: list[str] = []
        self._tail = ""  # last len(end) - 1 characters of the body
        self._body_offset = 0
        self._opened_by_text = open_region is None

    @property
    def openers(self) -> tuple[str, ...]:
        """The opening markers of the regions: text holding none of them is content."""
        return self._markers

    def feed(self, text: str) -> list[Segment]:
        """Consume the next chunk; return segments now certain."""
        out: list[Segment] = []
        if self._region is None and not self._carry:
            # Outside any region, a chunk without a marker's first character can neither
            # hold a marker nor end in the beginning of one: all of it is content.
            for first in self._firsts:
                if first in text:
                    break
            else:
                if text:
                    out.append(Content(text))
                    self._pos += len(text)
                return out
        s = self._carry + text
        self._carry = ""
        # Next occurrence of each opening marker in ``s`` at or after ``i`` (-1: none left),
        # cached so that each marker is searched for once per occurrence, not once per region.
        ahead: dict[str, int] = {}
        i, size = 0, len(s)
        while i < size:
            if self._region is None:
                i = self._scan_content(s, i, ahead, out)
            else:
                i = self._scan_region(s, i, out)
        return out

    def finish(self) -> list[Segment]:
        """The text is complete; return the remaining segments."""
        out: list[Segment] = []
        if self._region is not None:
            self._close_region("".join(self._body), False, out)
        elif self._carry:
            out.append(Content(self._carry))
            self._pos += len(self._carry)
            self._carry = ""
        return out

    def scan(self, text: str) -> list[Segment]:
        """All segments of a complete ``text`` given to a fresh scanner: the same as
        ``feed(text) + finish()`` (up to how content is split), without the bookkeeping
        that chunked input needs.

        Raises:
            RuntimeError: if this scanner was already fed.
        """
        if self._pos or self._carry or self._body:
            raise RuntimeError("scan() needs a fresh scanner; use feed() and finish()")
        out: list[Segment] = []
        region, by_text = self._region, self._opened_by_text
        self._region = None
        ahead: dict[str, int] = {}
        longest = self._longest
        pos, size = 0, len(text)
        while True:
            if region is not None:
                end = region.end
                index = -1 if end is None else text.find(end, pos)
                if index < 0:
                    _read_region(region, text[pos:], False, pos, by_text, out)
                    return out
                _read_region(region, text[pos:index], True, pos, by_text, out)
                pos = index + len(end)  # type: ignore[arg-type]
                region = None
            if pos >= size:
                return out
            found, chosen = self._next_opener(text, pos, ahead)
            if chosen is None or (size - found < longest and self._cut_short(text, found, chosen)):
                out.append(Content(text[pos:]))
                return out
            if found > pos:
                out.append(Content(text[pos:found]))
            pos = found + len(chosen.start)
            region, by_text = chosen, True

    def _next_opener(self, s: str, i: int, ahead: dict[str, int]) -> tuple[int, Region | None]:
        """The first opening marker at or after ``i`` (the longest of those starting at the
        same place) and its region, or ``(-1, None)``. ``ahead`` remembers each marker's
        next index (-1: none left), so that each is searched for once per occurrence."""
        found, chosen = -1, None
        for candidate in self._regions:
            marker = candidate.start
            index = ahead.get(marker, -2)
            if index < i and index != -1:  # unknown (-2) or behind us: search again
                index = s.find(marker, i)
                ahead[marker] = index
            if index >= 0 and (
                chosen is None
                or index < found
                or (index == found and len(marker) > len(chosen.start))
            ):
                found, chosen = index, candidate
        return found, chosen

    def _cut_short(self, text: str, found: int, region: Region) -> bool:
        """Whether a longer marker than ``region``'s begins at ``found`` but ``text`` ends
        inside it (``scan``: the rest is content, as ``finish`` would leave it; ``feed``:
        it may still complete in the next chunk)."""
        rest = len(text) - found
        return any(
            len(region.start) < len(other.start) > rest and other.start.startswith(text[found:])
            for other in self._regions
        )

    # content mode ---------------------------------------------------------------
    def _scan_content(self, s: str, i: int, ahead: dict[str, int], out: list[Segment]) -> int:
        """Emit content from ``s[i:]`` up to the next opening marker; return the new index."""
        found, region = self._next_opener(s, i, ahead)
        if region is None:
            keep = _pending_prefix(s, self._markers)
            self._emit_content(s[i : len(s) - keep], out)
            self._carry = s[len(s) - keep :]
            return len(s)
        if len(s) - found < self._longest and self._cut_short(s, found, region):
            # A longer marker that also starts here might still be completing.
            self._emit_content(s[i:found], out)
            self._carry = s[found:]
            return len(s)
        self._emit_content(s[i:found], out)
        self._pos += len(region.start)
        self._enter(region)
        return found + len(region.start)

    def _emit_content(self, text: str, out: list[Segment]) -> None:
        if text:
            out.append(Content(text))
            self._pos += len(text)

    def _enter(self, region: Region) -> None:
        self._region = region
        self._body = []
        self._tail = ""
        self._body_offset = self._pos
        self._opened_by_text = True

    # region mode ----------------------------------------------------------------
    def _scan_region(self, s: str, i: int, out: list[Segment]) -> int:
        """Look for the region's end in ``s[i:]``; close it or keep the body; return new index."""
        region = self._region
        assert region is not None
        end = region.end
        if end is None:
            self._body.append(s[i:])
            return len(s)
        tail = self._tail
        if tail:
            # The closing marker may have begun in an earlier chunk.
            probe = (tail + s[i : i + len(end) - 1]).find(end)
            if 0 <= probe < len(tail):
                before = "".join(self._body)
                self._close_region(before[: len(before) - len(tail) + probe], True, out)
                return i + probe + len(end) - len(tail)
        index = s.find(end, i)
        if index >= 0:
            body = "".join(self._body) + s[i:index] if self._body else s[i:index]
            self._close_region(body, True, out)
            return index + len(end)
        piece = s[i:]
        self._body.append(piece)
        keep = len(end) - 1
        if keep:
            self._tail = piece[-keep:] if len(piece) >= keep else (tail + piece)[-keep:]
        return len(s)

    def _close_region(self, body: str, terminated: bool, out: list[Segment]) -> None:
        region = self._region
        assert region is not None
        offset = self._body_offset
        self._region = None
        self._body = []
        self._tail = ""
        self._pos = offset + len(body) + (len(region.end) if terminated and region.end else 0)
        _read_region(region, body, terminated, offset, self._opened_by_text, out)


def _read_region(
    region: Region, body: str, terminated: bool, offset: int, by_text: bool, out: list[Segment]
) -> None:
    """Append the segments of one region to ``out``: ``body`` starts at ``offset`` in
    the text; ``by_text``: the opening marker is in the text (not prefilled)."""
    start = region.start if by_text else ""
    end = region.end if terminated and region.end else ""
    if region.read is None:
        out.append(Reasoning(body))
        return
    segments = region.read(body, start + body + end, offset, terminated)
    nested = -1
    if region.retry_nested:
        for segment in segments:
            if type(segment) is Malformed:
                nested = body.rfind(region.start)
                break
    if nested >= 0:
        inner = body[nested + len(region.start) :]
        out.append(
            Malformed(
                start + body[:nested],
                f"{region.start!r} opened but never closed",
                offset - len(start),
            )
        )
        inner_offset = offset + nested + len(region.start)
        out.extend(region.read(inner, region.start + inner + end, inner_offset, terminated))
        return
    out.extend(segments)
