"""HTML to readable text (``html_to_text``), standard library only."""

from __future__ import annotations

import re
import urllib.parse
from html.parser import HTMLParser

__all__ = ["html_to_text"]

_SKIP_TAGS = frozenset(
    {"script", "style", "noscript", "template", "svg", "canvas", "iframe", "object"}
)
# Blocks separated by a blank line, and tags that only start a new line.
_PARAGRAPH_TAGS = frozenset(
    {
        "address", "article", "aside", "blockquote", "details", "dl", "fieldset",
        "figcaption", "figure", "footer", "form", "header", "hr", "main", "nav", "ol", "p",
        "pre", "section", "summary", "table", "ul", "h1", "h2", "h3", "h4", "h5", "h6",
    }
)  # fmt: skip
_LINE_TAGS = frozenset({"br", "dd", "div", "dt", "li", "tr"})
# Inside <pre>, whitespace is kept by standing in for it with characters that the final
# whitespace folding leaves alone.
_PRE_KEEP = str.maketrans({"\n": "\x00", " ": "\x01", "\t": "\x02"})
_PRE_RESTORE = str.maketrans({"\x00": "\n", "\x01": " ", "\x02": "\t"})


class _TextExtractor(HTMLParser):
    """HTML to readable text: headings as ``#``, list items as ``-``, links as
    ``[text](url)``, scripts/styles dropped, ``<pre>`` kept verbatim."""

    def __init__(self, base_url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base_url = base_url
        self.title = ""
        self._in_title = False
        self._skip = 0
        self._pre = 0
        self._parts: list[str] = []
        self._link: str | None = None
        self._link_text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
            return
        if tag in _SKIP_TAGS:
            self._skip += 1
            return
        if self._skip:
            return
        if tag in _PARAGRAPH_TAGS:
            self._break(2)
        elif tag in _LINE_TAGS:
            self._break(1)
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self._parts.append("#" * int(tag[1]) + " ")
        elif tag == "li":
            self._parts.append("- ")
        elif tag == "pre":
            self._pre += 1
        elif tag in ("td", "th"):
            self._parts.append(" | ")
        elif tag == "a":
            href = dict(attrs).get("href")
            if href and not href.startswith(("#", "javascript:", "mailto:")):
                self._link = urllib.parse.urljoin(self.base_url, href)
                self._link_text = []
        elif tag == "img":
            alt = (dict(attrs).get("alt") or "").strip()
            if alt:
                self._emit(f"[image: {alt}]")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
            return
        if tag in _SKIP_TAGS:
            self._skip = max(0, self._skip - 1)
            return
        if self._skip:
            return
        if tag == "a" and self._link is not None:
            self._close_link()
            return
        if tag == "pre":
            self._pre = max(0, self._pre - 1)
        if tag in _PARAGRAPH_TAGS:
            self._break(2)
        elif tag in _LINE_TAGS and tag != "br":
            self._break(1)

    def _break(self, lines: int) -> None:
        """End the current line; ``lines=2`` also leaves a blank line. Breaks do not add
        up: two list items are one line apart, not two."""
        pending = 0
        for part in reversed(self._parts):
            kept = part.rstrip(" \n")
            pending += part[len(kept) :].count("\n")
            if kept:
                break
        if pending < lines:
            self._parts.append("\n" * (lines - pending))

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
            return
        if self._skip:
            return
        self._emit(data)

    def _emit(self, data: str) -> None:
        if self._link is not None:
            self._link_text.append(data)
        elif self._pre:
            self._parts.append(data.translate(_PRE_KEEP))
        else:
            self._parts.append(re.sub(r"\s+", " ", data))

    def _close_link(self) -> None:
        text = " ".join("".join(self._link_text).split())
        link, self._link = self._link, None
        if text:
            self._parts.append(f"[{text}]({link})")

    def text(self) -> str:
        if self._link is not None:  # an <a> never closed: keep its text, drop the link
            self._link = None
            self._parts.append(" ".join("".join(self._link_text).split()))
        lines = [" ".join(line.split()) for line in "".join(self._parts).split("\n")]
        text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n ")
        return text.translate(_PRE_RESTORE)


def html_to_text(html: str, base_url: str = "") -> tuple[str, str]:
    """``(title, text)`` of an HTML document."""
    parser = _TextExtractor(base_url)
    parser.feed(html)
    parser.close()
    return " ".join(parser.title.split()), parser.text()
