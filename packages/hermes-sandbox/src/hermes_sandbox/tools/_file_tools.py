"""The ``file`` toolset: the ``read_file``, ``write_file``, ``search_files`` and ``patch``
tools (their schemas and handlers) over ``_files.py`` and ``_search.py``."""

from __future__ import annotations

from typing import Any

from hermes_sandbox.tools._files import DEFAULT_READ_LIMIT, patch_file, read_lines, write_text
from hermes_sandbox.tools._search import DEFAULT_SEARCH_RESULTS, MAX_SEARCH_RESULTS, search_files
from hermes_sandbox.tools._spec import InvocationLike, SandboxSource, SandboxTool

__all__ = ["file_tools"]

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
