"""The images a Dockerfile reads: every ``FROM``, ``COPY --from=`` and ``RUN --mount=from=``
that names an image (not a build stage, a stage index or ``scratch``), with where it is
written, so a caller can check, pull or rewrite each one.

``ARG`` defaults declared before the first ``FROM`` are expanded in the references (as
docker does for ``FROM``); a reference still holding a variable after that is reported
as unresolved. Lines continuing an instruction (after a trailing ``\\``) are not read as
instructions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

__all__ = ["DockerfileImages", "ImageReference", "image_references", "rewrite_references"]

_INSTRUCTION = re.compile(r"^\s*(?P<word>[A-Za-z]+)(?P<rest>\s.*)?$")
_ARG = re.compile(r"^\s*ARG\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:=(?P<value>\S*))?\s*$", re.I)
_VARIABLE = re.compile(r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)\}|(?P<bare>[A-Za-z_]\w*))")
_FLAG = re.compile(r"--(?P<name>[A-Za-z-]+)=(?P<value>\S+)")

#: Which instruction names the image.
Kind = Literal["FROM", "COPY --from", "RUN --mount"]


@dataclass(frozen=True)
class ImageReference:
    """One image a Dockerfile names.

    Attributes:
        image: the reference with ``ARG`` defaults expanded.
        written: the reference as written.
        kind: ``FROM``, ``COPY --from`` or ``RUN --mount``.
        line: the index of its line (0-based, physical lines).
        start, end: where ``written`` sits in that line.
    """

    image: str
    written: str
    kind: Kind
    line: int
    start: int
    end: int


@dataclass(frozen=True)
class DockerfileImages:
    """The images a Dockerfile reads: ``references`` (in order) and ``unresolved`` (as
    written: references holding a variable no ``ARG`` default sets)."""

    references: tuple[ImageReference, ...]
    unresolved: tuple[str, ...] = ()

    @property
    def images(self) -> tuple[str, ...]:
        """The distinct images, in the order they first appear."""
        return tuple(dict.fromkeys(ref.image for ref in self.references))


def image_references(text: str) -> DockerfileImages:
    """The images the Dockerfile ``text`` reads (see the module's docstring)."""
    defaults: dict[str, str] = {}
    stages: set[str] = {"scratch"}
    found: list[ImageReference] = []
    unresolved: list[str] = []
    seen_from = False
    continued = False

    def take(word: str, kind: Kind, index: int, start: int) -> None:
        image = _expand(word, defaults)
        if image.lower() in stages or (kind != "FROM" and image.isdigit()):
            return
        if "$" in image:
            unresolved.append(word)
            return
        found.append(ImageReference(image, word, kind, index, start, start + len(word)))

    for index, line in enumerate(text.splitlines()):
        stripped = line.strip()
        was_continued = continued
        if not stripped or stripped.startswith("#"):
            continued = was_continued  # blank and comment lines keep a continuation going
            continue
        continued = stripped.endswith("\\")
        if was_continued:
            continue
        arg = _ARG.match(line)
        if arg and not seen_from and arg.group("value") is not None:
            defaults[arg.group("name")] = arg.group("value").strip("\"'")
            continue
        match = _INSTRUCTION.match(line)
        if not match:
            continue
        word = match.group("word").upper()
        rest_at = match.start("rest") if match.group("rest") else len(line)
        if word == "FROM":
            seen_from = True
            tokens = list(re.finditer(r"\S+", line[rest_at:]))
            position = next(
                (i for i, t in enumerate(tokens) if not t.group().startswith("--")), None
            )
            if position is None:
                continue
            token = tokens[position]
            take(token.group(), "FROM", index, rest_at + token.start())
            if len(tokens) > position + 2 and tokens[position + 1].group().lower() == "as":
                stages.add(tokens[position + 2].group().lower())
        elif word in ("COPY", "ADD"):
            for flag in _leading_flags(line, rest_at):
                if flag.group("name") == "from":
                    take(flag.group("value"), "COPY --from", index, flag.start("value"))
        elif word == "RUN":
            for flag in _leading_flags(line, rest_at):
                if flag.group("name") != "mount":
                    continue
                offset = flag.start("value")
                for part in flag.group("value").split(","):
                    key, _, value = part.partition("=")
                    if key == "from" and value:
                        take(value, "RUN --mount", index, offset + len("from="))
                    offset += len(part) + 1
    return DockerfileImages(tuple(found), tuple(unresolved))


def rewrite_references(text: str, resolve: Callable[[str], str]) -> str:
    """``text`` with every image reference replaced by ``resolve(image)`` (a reference
    ``resolve`` returns unchanged is left as written)."""
    lines = text.splitlines(keepends=True)
    by_line: dict[int, list[ImageReference]] = {}
    for ref in image_references(text).references:
        by_line.setdefault(ref.line, []).append(ref)
    for index, refs in by_line.items():
        line = lines[index]
        for ref in sorted(refs, key=lambda r: r.start, reverse=True):
            target = resolve(ref.image)
            if target != ref.image:
                line = line[: ref.start] + target + line[ref.end :]
        lines[index] = line
    return "".join(lines)


def _leading_flags(line: str, at: int) -> list[re.Match[str]]:
    """The ``--name=value`` flags that open an instruction's arguments."""
    flags: list[re.Match[str]] = []
    position = at
    while True:
        while position < len(line) and line[position] in " \t":
            position += 1
        flag = _FLAG.match(line, position)
        if flag is None:
            return flags
        flags.append(flag)
        position = flag.end()


def _expand(word: str, defaults: Mapping[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group("braced") or match.group("bare")
        return defaults.get(name, match.group(0))

    return _VARIABLE.sub(value, word)
