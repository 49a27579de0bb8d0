"""What the ``file`` toolset does in a sandbox: read numbered lines (``read_lines``),
write a file (``write_text``) and replace exact text (``patch_file``); searching is
``_search.py`` (``search_files``), the tools themselves ``_file_tools.py``.

Relative paths are taken from the sandbox's working directory (``Sandbox.workdir``), not
from wherever the terminal ``cd``-ed to. ``read_file`` and ``search_files`` run small
shell pipelines inside the sandbox, so a huge file or a huge match list never crosses
into this process: only the requested slice does. ``write_file`` and ``patch`` go
through the backend's file transfer, so content of any size and any bytes survives.
"""

from __future__ import annotations

import difflib
import posixpath
import shlex
from typing import Any

from hermes_sandbox._base import Sandbox
from hermes_sandbox._errors import SandboxError
from hermes_sandbox._processes import DEFAULT_PATH

__all__ = [
    "DEFAULT_READ_LIMIT",
    "NOT_FOUND",
    "PREAMBLE",
    "patch_file",
    "read_cap",
    "read_lines",
    "resolve_path",
    "write_text",
]

DEFAULT_READ_LIMIT = 500
#: Characters of one line ``read_file`` shows before cutting it.
MAX_LINE_CHARS = 2000
#: Most characters one ``read_file`` answer carries (less if the sandbox's output limit is
#: smaller).
MAX_READ_CHARS = 50_000
_MAX_DIFF_CHARS = 6000

# The helper scripts run in a subshell so nothing they set leaks into the session, and
# put the standard directories first on PATH so a session that broke its PATH can still
# read files.
PREAMBLE = f'PATH="{DEFAULT_PATH}:$PATH"\n'

NOT_FOUND, _IS_DIR, _NO_ACCESS, _BINARY = 102, 103, 104, 106

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
    if code == NOT_FOUND:
        return FileNotFoundError(f"no such file or directory: {path}")
    if code == _IS_DIR:
        return IsADirectoryError(
            f"{path} is a directory; list it with the terminal (ls) or use search_files"
        )
    if code == _NO_ACCESS:
        return PermissionError(f"permission denied: {path}")
    detail = output.strip()[-500:] or "no output"
    return SandboxError(f"{what} {path} failed in the sandbox (exit code {code}): {detail}")


def read_cap(sandbox: Sandbox) -> int:
    """Most characters one answer read from ``sandbox`` carries."""
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
    cap = read_cap(sandbox)
    script = _READ_SCRIPT.format(
        preamble=PREAMBLE,
        path=shlex.quote(target),
        start=offset,
        end=offset + limit - 1,
        width=min(MAX_LINE_CHARS, cap),
        cap=cap,
        not_found=NOT_FOUND,
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
