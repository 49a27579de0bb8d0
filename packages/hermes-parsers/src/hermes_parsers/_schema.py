"""Tool schemas, and converting untyped parameter text to the types they declare.

Some formats (qwen3_coder, glm45, glm47) write each parameter value as bare text. Given
the tools' JSON schemas, a value is converted to its declared type; without a schema
the format decides (see ``coerce_value``'s ``fallback``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from hermes_parsers._arguments import load_json

__all__ = ["ToolSchemas", "coerce_value"]

_STRING_TYPES = frozenset({"string", "str", "text", "varchar", "char", "enum"})
_INT_TYPES = frozenset({"integer", "int", "long", "short"})
_NUMBER_TYPES = frozenset({"number", "float", "double", "num"})
_BOOL_TYPES = frozenset({"boolean", "bool"})
_JSON_TYPES = frozenset({"object", "array", "dict", "list"})


class ToolSchemas:
    """Parameter schemas by tool name, taken from OpenAI ``tools`` entries.

    Accepts ``{"type": "function", "function": {...}}`` entries or bare function dicts;
    entries without a name are ignored.
    """

    __slots__ = ("_params",)

    def __init__(self, tools: Iterable[Mapping[str, Any]]) -> None:
        self._params: dict[str, dict[str, Any]] = {}
        for tool in tools:
            function = tool.get("function", tool)
            if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
                continue
            parameters = function.get("parameters") or {}
            props = parameters.get("properties") if isinstance(parameters, Mapping) else None
            self._params[function["name"]] = dict(props) if isinstance(props, Mapping) else {}

    def __bool__(self) -> bool:
        return bool(self._params)

    def param(self, tool: str, name: str) -> Mapping[str, Any] | None:
        """The JSON schema of ``tool``'s parameter ``name``, or ``None`` if not declared."""
        params = self._params.get(tool)
        if params is None:
            return None
        schema = params.get(name)
        return schema if isinstance(schema, Mapping) else None


def _declared_types(schema: Mapping[str, Any]) -> list[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared.lower()]
    if isinstance(declared, list):
        return [t.lower() for t in declared if isinstance(t, str)]
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            return [
                t
                for option in options
                if isinstance(option, Mapping)
                for t in _declared_types(option)
            ]
    if "enum" in schema:
        return ["enum"]
    if "properties" in schema:
        return ["object"]
    if "items" in schema:
        return ["array"]
    return []


def _as_json(text: str) -> tuple[bool, Any]:
    try:
        return True, load_json(text)
    except ValueError:
        return False, None


def _convert(text: str, kind: str) -> tuple[bool, Any]:
    stripped = text.strip()
    if kind in _STRING_TYPES:
        return True, text
    if kind == "null":
        return (True, None) if stripped.lower() in {"null", "none"} else (False, None)
    if kind in _BOOL_TYPES:
        lowered = stripped.lower()
        if lowered in {"true", "false"}:
            return True, lowered == "true"
        return False, None
    if kind in _INT_TYPES or kind.startswith(("int", "uint")):
        try:
            return True, int(stripped)
        except ValueError:
            return False, None
    if kind in _NUMBER_TYPES:
        ok, value = _as_json(stripped)
        if ok and isinstance(value, int | float) and not isinstance(value, bool):
            return True, value
        return False, None
    if kind in _JSON_TYPES:
        ok, value = _as_json(stripped)
        wanted = dict if kind in {"object", "dict"} else list
        return (True, value) if ok and isinstance(value, wanted) else (False, None)
    return False, None


def coerce_value(
    text: str,
    schema: Mapping[str, Any] | None,
    *,
    fallback: Literal["string", "json"] = "string",
) -> Any:
    """Convert a parameter's raw text to the type its schema declares.

    With a schema, the declared types are tried in order (a ``null`` literal is ``None``
    wherever the schema allows null); text that fits none stays a string. Without a
    schema, ``fallback="string"`` keeps the text as it is and ``fallback="json"`` decodes
    it when it is valid JSON (else keeps the text). Never raises.
    """
    if schema is None:
        if fallback == "json":
            ok, value = _as_json(text.strip())
            if ok:
                return value
        return text
    kinds = _declared_types(schema)
    if text.strip().lower() == "null" and ("null" in kinds or not kinds):
        return None
    for kind in kinds:
        ok, value = _convert(text, kind)
        if ok:
            return value
    if not kinds:
        ok, value = _as_json(text.strip())
        return value if ok else text
    return text
