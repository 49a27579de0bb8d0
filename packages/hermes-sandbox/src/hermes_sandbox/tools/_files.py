"""The ``file`` toolset: ``read_file``, ``write_file``, ``search_files`` and ``patch``.

Relative paths are taken from the sandbox's working directory (``Sandbox.workdir``), not
from wherever the terminal ``cd``-ed to. ``read_file`` and ``search_files`` run small
shell pipelines inside the sandbox, so a huge file or a huge match list never crosses
into this process: only the requested slice does. ``write_file`` and ``patch`` go
through the backend's file transfer, so content of any size and any bytes survives.
"""

from __future__ import annotations

import difflib
import posixpath
import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Literal

from hermes_sandbox._base import Sandbox
from hermes_sandbox._errors import SandboxError
from hermes_sandbox._processes import DEFAULT_PATH
from hermes_sandbox.tools._spec import InvocationLike, SandboxSource, SandboxTool

__all__ = [
    "DEFAULT_READ_LIMIT",
    "DEFAULT_SEARCH_RESULTS",
    "SearchMatch",
    "SearchResult",
    "file_tools",
    "patch_file",
    "read_lines",
    "resolve_path",
    "search_files",
    "write_text",
]

DEFAULT_READ_LIMIT = 500
DEFAULT_SEARCH_RESULTS = 100
MAX_SEARCH_RESULTS = 1000
#: Characters of one line ``read_file`` shows before cutting it.
MAX_LINE_CHARS = 2000
#: Characters of a search match line kept (including ``path:line:``).
MAX_MATCH_CHARS = 500
#: Most characters one ``read_file`` answer carries (less if the sandbox's output limit is
#: smaller).
MAX_READ_CHARS = 50_000
_MAX_DIFF_CHARS = 6000

# The helper scripts run in a subshell so nothing they set leaks into the session, and
# put the standard directories first on PATH so a session that broke its PATH can still
# read files.
_PREAMBLE = f'PATH="{DEFAULT_PATH}:$PATH"\n'

_NOT_FOUND, _IS_DIR, _NO_ACCESS, _BINARY = 102, 103, 104, 106

_READ_SCRIPT = """(
{preamble}export LC_ALL=C
f={path}
[ -e "$f" ] || exit {not_found}
[ -d "$f" ] && exit {is_dir}
[ -r "$f" ] || exit {no_access}
size=$(wc -c < "$f") || exit 105
nul=$(head -c 8192 "$f" | tr -dc '\\000' | wc -c)
if [ "$nul" -gt 0 ]; then echo "$size"; exit {binary}; fi
total=$(awk 'END {{ print NR }}' "$f")
echo "$size $total"
awk -v a={start} -v b={end} -v w={width} -v cap={cap} '
NR > b {{ exit }}
NR >= a {{
  line = $0; tag = "L"
  if (length(line) > w) {{ line = substr(line, 1, w); tag = "C" }}
  used += length(line) + 2
  if (used > cap) {{ print "X" NR; exit }}
  print tag line
}}' "$f"
)"""


def resolve_path(sandbox: Sandbox, path: str) -> str:
    """``path`` made absolute (relative paths start at the sandbox's ``workdir``) and
    normalised (``a/./b/../c`` becomes ``a/c``).

    Raises:
        ValueError: if ``path`` is not a non-empty string.
    """
    if not isinstance(path, str) or not path:
        raise ValueError(f"a path must be a non-empty string, got {path!r}")
    return posixpath.normpath(sandbox.resolve(path))


def _error_for_exit(code: int, path: str, output: str, what: str) -> Exception:
    if code == _NOT_FOUND:
        return FileNotFoundError(f"no such file or directory: {path}")
    if code == _IS_DIR:
        return IsADirectoryError(
            f"{path} is a directory; list it with the terminal (ls) or use search_files"
        )
    if code == _NO_ACCESS:
        return PermissionError(f"permission denied: {path}")
    detail = output.strip()[-500:] or "no output"
    return SandboxError(f"{what} {path} failed in the sandbox (exit code {code}): {detail}")


def _read_cap(sandbox: Sandbox) -> int:
    # Leave room under the sandbox's output limit for the header and the line tags.
    return max(200, min(MAX_READ_CHARS, sandbox.options.max_output_chars * 3 // 4))


async def read_lines(
    sandbox: Sandbox, path: str, *, offset: int = 1, limit: int = DEFAULT_READ_LIMIT
) -> dict[str, Any]:
    """Lines ``offset`` .. ``offset + limit - 1`` of a text file, numbered from 1.

    Returns ``{"path", "content", "total_lines", "start_line", "end_line", "size_bytes"}``
    with ``content`` as ``"     7|text"`` lines; ``next_offset`` and a ``note`` say how
    to continue when the file goes on. Lines over 2000 characters are cut (marked) and
    one answer carries at most about 50,000 characters.

    Raises:
        ValueError: for ``offset``/``limit`` below 1, or a binary file.
        FileNotFoundError, IsADirectoryError, PermissionError: as the names say.
        SandboxError: if the sandbox could not run the read.
    """
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 1:
        raise ValueError(f"'offset' must be a line number >= 1, got {offset!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"'limit' must be a number of lines >= 1, got {limit!r}")
    target = resolve_path(sandbox, path)
    cap = _read_cap(sandbox)
    script = _READ_SCRIPT.format(
        preamble=_PREAMBLE,
        path=shlex.quote(target),
        start=offset,
        end=offset + limit - 1,
        width=min(MAX_LINE_CHARS, cap),
        cap=cap,
        not_found=_NOT_FOUND,
        is_dir=_IS_DIR,
        no_access=_NO_ACCESS,
        binary=_BINARY,
    )
    result = await sandbox.exec(script)
    if result.exit_code == _BINARY:
        shown = result.output.strip().splitlines()[0] if result.output.strip() else "?"
        raise ValueError(
            f"{target} is a binary file ({shown} bytes); inspect it with the terminal "
            "(e.g. xxd, file, strings) instead"
        )
    if result.exit_code != 0:
        raise _error_for_exit(result.exit_code, target, result.output, "reading")
    header, _, body = result.output.partition("\n")
    try:
        size_text, total_text = header.split()
        size, total = int(size_text), int(total_text)
    except ValueError:
        raise SandboxError(
            f"reading {target}: unexpected answer from the sandbox: {header[:200]!r}"
        ) from None
    numbered: list[str] = []
    cut_lines: list[int] = []
    stopped_at: int | None = None
    number = offset
    for raw in body.split("\n"):
        if not raw:
            continue
        tag, text = raw[0], raw[1:]
        if tag == "X":
            stopped_at = int(text)
            break
        if tag == "C":
            text += " … [line cut]"
            cut_lines.append(number)
        numbered.append(f"{number:>6}|{text}")
        number += 1
    end_line = offset + len(numbered) - 1
    answer: dict[str, Any] = {
        "path": target,
        "content": "\n".join(numbered),
        "total_lines": total,
        "start_line": offset,
        "end_line": max(end_line, offset - 1),
        "size_bytes": size,
    }
    notes: list[str] = []
    if total and offset > total:
        notes.append(f"offset {offset} is past the end: the file has {total} lines")
    elif end_line < total:
        answer["next_offset"] = end_line + 1
        reason = " (answer size limit reached)" if stopped_at is not None else ""
        notes.append(
            f"showing lines {offset}-{end_line} of {total}{reason}; "
            f"call read_file with offset={end_line + 1} to continue"
        )
    if cut_lines:
        notes.append(
            f"{len(cut_lines)} line(s) longer than {MAX_LINE_CHARS} characters were cut "
            "(use the terminal to see them whole)"
        )
    if notes:
        answer["note"] = "; ".join(notes)
    return answer


async def write_text(sandbox: Sandbox, path: str, content: str | bytes) -> dict[str, Any]:
    """Create or replace a file (parent directories are created).

    Returns ``{"path", "bytes_written"}``.

    Raises:
        SandboxError: if the sandbox could not write it.
    """
    data = content.encode() if isinstance(content, str) else bytes(content)
    target = resolve_path(sandbox, path)
    await sandbox.write_file(target, data)
    return {"path": target, "bytes_written": len(data)}


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
    cap = _read_cap(sandbox)  # bytes of matches, safely under the sandbox's output limit
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
        f"(\n{_PREAMBLE}p={q(target)}\n"
        f'[ -e "$p" ] || exit {_NOT_FOUND}\n'
        "exec 3>&1\n"
        "{ " + choose.format(rg=" ".join(rg), grep=" ".join(grep)) + "; } 2>&1 "
        f"| cut -c1-{MAX_MATCH_CHARS} | head -n {max_results + 1} | head -c {cap}\n"
        "exit ${PIPESTATUS[0]}\n)"
    )
    result = await sandbox.exec(script)
    if result.exit_code == _NOT_FOUND:
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


async def patch_file(
    sandbox: Sandbox, path: str, old_string: str, new_string: str, *, replace_all: bool = False
) -> dict[str, Any]:
    """Replace the exact text ``old_string`` with ``new_string`` in a UTF-8 text file.

    ``old_string`` must occur exactly once unless ``replace_all``. Returns
    ``{"path", "replacements", "diff"}`` with a unified diff of the change.

    Raises:
        ValueError: if ``old_string`` is empty, equal to ``new_string``, missing or
            ambiguous (the message says where it occurs), or the file is not UTF-8 text.
        FileNotFoundError, IsADirectoryError: as the names say.
        SandboxError: if the sandbox could not read or write the file.
    """
    if not isinstance(old_string, str) or not old_string:
        raise ValueError("'old_string' must be the non-empty text to replace")
    if not isinstance(new_string, str):
        raise ValueError("'new_string' must be a string")
    if old_string == new_string:
        raise ValueError("'old_string' and 'new_string' are the same; nothing to change")
    target = resolve_path(sandbox, path)
    data = await sandbox.read_file(target)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{target} is not UTF-8 text; edit it with the terminal instead") from None
    count = text.count(old_string)
    if count == 0:
        raise ValueError(_missing_message(target, text, old_string))
    if count > 1 and not replace_all:
        lines = _occurrence_lines(text, old_string)
        shown = ", ".join(str(n) for n in lines[:10]) + (", ..." if len(lines) > 10 else "")
        raise ValueError(
            f"old_string occurs {count} times in {target} (starting on lines {shown}); "
            "include more surrounding lines to make it unique, or set replace_all=true"
        )
    updated = (
        text.replace(old_string, new_string)
        if replace_all
        else text.replace(old_string, new_string, 1)
    )
    await sandbox.write_file(target, updated.encode("utf-8"))
    diff = "".join(
        difflib.unified_diff(
            text.splitlines(keepends=True),
            updated.splitlines(keepends=True),
            fromfile=f"a{target}",
            tofile=f"b{target}",
            n=2,
        )
    )
    if len(diff) > _MAX_DIFF_CHARS:
        diff = diff[:_MAX_DIFF_CHARS] + f"\n[... diff cut at {_MAX_DIFF_CHARS} characters ...]"
    return {"path": target, "replacements": count if replace_all else 1, "diff": diff}


def _occurrence_lines(text: str, needle: str) -> list[int]:
    lines: list[int] = []
    start = text.find(needle)
    while start != -1:
        lines.append(text.count("\n", 0, start) + 1)
        start = text.find(needle, start + 1)
    return lines


def _missing_message(target: str, text: str, old_string: str) -> str:
    message = (
        f"old_string was not found in {target}; it must match the file exactly, "
        "including whitespace and indentation (read the file again and copy the text)"
    )
    first = next((line.strip() for line in old_string.splitlines() if line.strip()), "")
    if first:
        near = [n for n, line in enumerate(text.splitlines(), 1) if first in line]
        if near:
            shown = ", ".join(str(n) for n in near[:5])
            message += f"; its first line appears (with other surroundings) on line(s) {shown}"
    return message


# --- tools -----------------------------------------------------------------------------

_PATHS = (
    "Absolute, or relative to the sandbox's starting directory (not to where the terminal "
    "cd-ed to)."
)

_READ_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "File to read. " + _PATHS,
        },
        "offset": {
            "type": "integer",
            "minimum": 1,
            "description": "First line to show (1-based; default 1).",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "description": f"Most lines to show (default {DEFAULT_READ_LIMIT}).",
        },
    },
    "required": ["path"],
    "additionalProperties": False,
}

_WRITE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "File to create or overwrite (parent directories are created). "
            + _PATHS,
        },
        "content": {"type": "string", "description": "The complete new content of the file."},
    },
    "required": ["path", "content"],
    "additionalProperties": False,
}

_SEARCH_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {
            "type": "string",
            "description": "Regular expression to look for (or plain text with fixed_strings).",
        },
        "path": {
            "type": "string",
            "description": "File or directory to search (default: the starting directory). "
            + _PATHS,
        },
        "file_glob": {
            "type": "string",
            "description": "Only search files whose name matches this glob, e.g. '*.py'.",
        },
        "ignore_case": {"type": "boolean", "description": "Match case-insensitively."},
        "fixed_strings": {"type": "boolean", "description": "Treat pattern as plain text."},
        "max_results": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_SEARCH_RESULTS,
            "description": f"Most matches to return (default {DEFAULT_SEARCH_RESULTS}).",
        },
    },
    "required": ["pattern"],
    "additionalProperties": False,
}

_PATCH_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "File to edit. " + _PATHS},
        "old_string": {
            "type": "string",
            "description": "Exact text to replace, including "
            "whitespace; must occur exactly once unless replace_all is true.",
        },
        "new_string": {"type": "string", "description": "Text to put in its place."},
        "replace_all": {"type": "boolean", "description": "Replace every occurrence."},
    },
    "required": ["path", "old_string", "new_string"],
    "additionalProperties": False,
}


def file_tools(pool: SandboxSource) -> list[SandboxTool]:
    """The ``file`` toolset over ``pool``'s sandboxes: ``read_file``, ``write_file``,
    ``search_files`` and ``patch``."""

    async def read_file(arguments: dict[str, Any], invocation: InvocationLike) -> dict[str, Any]:
        sandbox = await pool.get(invocation.task_id)
        return await read_lines(
            sandbox,
            _text_argument(arguments, "path"),
            offset=arguments.get("offset", 1),
            limit=arguments.get("limit", DEFAULT_READ_LIMIT),
        )

    async def write_file(arguments: dict[str, Any], invocation: InvocationLike) -> dict[str, Any]:
        path = _text_argument(arguments, "path")
        content = arguments.get("content")
        if not isinstance(content, str):
            raise ValueError("'content' must be a string")
        sandbox = await pool.get(invocation.task_id)
        return await write_text(sandbox, path, content)

    async def search(arguments: dict[str, Any], invocation: InvocationLike) -> dict[str, Any]:
        sandbox = await pool.get(invocation.task_id)
        found = await search_files(
            sandbox,
            _text_argument(arguments, "pattern"),
            arguments.get("path") or ".",
            file_glob=arguments.get("file_glob") or None,
            ignore_case=bool(arguments.get("ignore_case", False)),
            fixed_strings=bool(arguments.get("fixed_strings", False)),
            max_results=arguments.get("max_results", DEFAULT_SEARCH_RESULTS),
        )
        answer: dict[str, Any] = {"matches": found.to_text(), "count": len(found.matches)}
        if found.truncated:
            answer["truncated"] = True
            answer["note"] = (
                f"more than {len(found.matches)} matches; narrow the pattern, path or "
                "file_glob, or raise max_results"
            )
        if not found.matches:
            answer["note"] = "no matches"
        if found.warnings:
            answer["warnings"] = "\n".join(found.warnings)
        return answer

    async def patch(arguments: dict[str, Any], invocation: InvocationLike) -> dict[str, Any]:
        path = _text_argument(arguments, "path")
        sandbox = await pool.get(invocation.task_id)
        return await patch_file(
            sandbox,
            path,
            arguments.get("old_string"),  # type: ignore[arg-type]  # checked inside
            arguments.get("new_string"),  # type: ignore[arg-type]
            replace_all=bool(arguments.get("replace_all", False)),
        )

    return [
        SandboxTool(
            "read_file",
            "Read a text file from your sandbox with line numbers ('   12|text'). Long files "
            f"come in pages of {DEFAULT_READ_LIMIT} lines: pass offset/limit to see more.",
            _READ_PARAMETERS,
            read_file,
            toolset="file",
        ),
        SandboxTool(
            "write_file",
            "Create or overwrite a file in your sandbox with the given content.",
            _WRITE_PARAMETERS,
            write_file,
            toolset="file",
        ),
        SandboxTool(
            "search_files",
            "Search file contents in your sandbox for a regular expression (ripgrep when "
            "available, else grep) and get matching lines as path:line:text.",
            _SEARCH_PARAMETERS,
            search,
            toolset="file",
        ),
        SandboxTool(
            "patch",
            "Edit a file by replacing an exact piece of text with new text. old_string must "
            "match the file exactly (whitespace included) and occur once, unless "
            "replace_all is true. Returns a diff of the change.",
            _PATCH_PARAMETERS,
            patch,
            toolset="file",
        ),
    ]


def _text_argument(arguments: dict[str, Any], name: str) -> str:
    value = arguments.get(name)
    if not isinstance(value, str) or not value:
        raise ValueError(f"'{name}' must be a non-empty string")
    return value
