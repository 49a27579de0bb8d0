"""``search_files``: lines matching a pattern in the files under a path of a sandbox,
found by ripgrep where the sandbox has it, else by grep; only the requested matches
cross into this process."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Literal

from hermes_sandbox._base import Sandbox
from hermes_sandbox._errors import SandboxError
from hermes_sandbox.tools._files import NOT_FOUND, PREAMBLE, read_cap, resolve_path

__all__ = [
    "DEFAULT_SEARCH_RESULTS",
    "MAX_SEARCH_RESULTS",
    "SearchMatch",
    "SearchResult",
    "search_files",
]

DEFAULT_SEARCH_RESULTS = 100
MAX_SEARCH_RESULTS = 1000
#: Characters of a search match line kept (including ``path:line:``).
MAX_MATCH_CHARS = 500


@dataclass(frozen=True, slots=True)
class SearchMatch:
    """One matching line."""

    path: str
    line: int
    text: str

    def to_dict(self) -> dict[str, Any]:
        """``{"path", "line", "text"}``."""
        return {"path": self.path, "line": self.line, "text": self.text}


@dataclass(frozen=True, slots=True)
class SearchResult:
    """Matches of a search (at most the requested number), and whether there were more."""

    matches: list[SearchMatch] = field(default_factory=list)
    truncated: bool = False
    engine: str = ""
    warnings: list[str] = field(default_factory=list)

    def to_text(self) -> str:
        """``path:line:text`` lines, as grep prints them."""
        return "\n".join(f"{m.path}:{m.line}:{m.text}" for m in self.matches)


_MATCH_LINE = re.compile(r"^(.+?):(\d+):(.*)$", re.DOTALL)


async def search_files(
    sandbox: Sandbox,
    pattern: str,
    path: str = ".",
    *,
    file_glob: str | None = None,
    ignore_case: bool = False,
    fixed_strings: bool = False,
    max_results: int = DEFAULT_SEARCH_RESULTS,
    engine: Literal["auto", "rg", "grep"] = "auto",
) -> SearchResult:
    """Lines matching ``pattern`` in the files under ``path``.

    Uses ripgrep when the sandbox has ``rg`` (it skips hidden and git-ignored files, and
    the pattern is a Rust regex), else ``grep -rnIE`` (POSIX extended regex; skips binary
    files and ``.git``). ``engine`` forces one of them.

    Raises:
        ValueError: for an empty pattern, a bad ``max_results``, an invalid regex, or
            ``engine="rg"`` when the sandbox has no ripgrep.
        FileNotFoundError: if ``path`` does not exist.
        SandboxError: if the sandbox could not run the search.
    """
    if not isinstance(pattern, str) or not pattern:
        raise ValueError("'pattern' must be a non-empty string")
    if (
        isinstance(max_results, bool)
        or not isinstance(max_results, int)
        or not 1 <= max_results <= MAX_SEARCH_RESULTS
    ):
        raise ValueError(f"'max_results' must be 1-{MAX_SEARCH_RESULTS}, got {max_results!r}")
    if engine not in ("auto", "rg", "grep"):
        raise ValueError(f"engine must be 'auto', 'rg' or 'grep', got {engine!r}")
    target = resolve_path(sandbox, path)
    cap = read_cap(sandbox)  # bytes of matches, safely under the sandbox's output limit
    q = shlex.quote
    rg = ["rg", "--line-number", "--no-heading", "--with-filename", "--color=never"]
    grep = ["grep", "-r", "-n", "-H", "-I", "--exclude-dir=.git"]
    if ignore_case:
        rg.append("--ignore-case")
        grep.append("-i")
    if fixed_strings:
        rg.append("--fixed-strings")
        grep.append("-F")
    else:
        grep.append("-E")
    if file_glob:
        rg.append(f"--glob={q(file_glob)}")
        grep.append(f"--include={q(file_glob)}")
    rg.append(f'--regexp={q(pattern)} -- "$p"')
    grep.append(f'--regexp={q(pattern)} -- "$p"')
    if engine == "rg":
        choose = "if command -v rg >/dev/null 2>&1; then echo rg >&3; {rg}; else exit 107; fi"
    elif engine == "grep":
        choose = "echo grep >&3; {grep}"
    else:
        choose = (
            "if command -v rg >/dev/null 2>&1; then echo rg >&3; {rg}; "
            "else echo grep >&3; {grep}; fi"
        )
    script = (
        f"(\n{PREAMBLE}p={q(target)}\n"
        f'[ -e "$p" ] || exit {NOT_FOUND}\n'
        "exec 3>&1\n"
        "{ " + choose.format(rg=" ".join(rg), grep=" ".join(grep)) + "; } 2>&1 "
        f"| cut -c1-{MAX_MATCH_CHARS} | head -n {max_results + 1} | head -c {cap}\n"
        "exit ${PIPESTATUS[0]}\n)"
    )
    result = await sandbox.exec(script)
    if result.exit_code == NOT_FOUND:
        raise FileNotFoundError(f"no such file or directory: {target}")
    if result.exit_code == 107:
        raise ValueError("ripgrep (rg) is not installed in the sandbox; use engine='grep'")
    lines = result.output.split("\n")
    used = ""
    if lines and lines[0] in ("rg", "grep"):
        used = lines.pop(0)
    cut_short = len("\n".join(lines).encode()) >= cap
    if cut_short:  # the byte cap ended the list, maybe inside a line
        lines.pop()
    matches: list[SearchMatch] = []
    other: list[str] = []
    for line in lines:
        if not line:
            continue
        found = _MATCH_LINE.match(line)
        if found:
            matches.append(SearchMatch(found[1], int(found[2]), found[3]))
        else:
            other.append(line)
    # rg/grep exit 1 for "no match"; 2 for errors (141 when head closed the pipe early).
    truncated = len(matches) > max_results or cut_short
    if result.exit_code not in (0, 1, 141) and not matches:
        detail = "\n".join(other).strip()[:1000] or result.output.strip()[:1000]
        if result.exit_code == 2:
            raise ValueError(f"search failed: {detail or 'invalid pattern or unreadable path'}")
        raise SandboxError(
            f"search in {target} failed in the sandbox (exit code {result.exit_code}): {detail}"
        )
    return SearchResult(matches[:max_results], truncated, used, other[:20])
