"""The layered settings of every command line (the env scripts, ``hermes-envs run``,
``hermes-bench``): YAML files and ``--SECTION.NAME VALUE`` flags read into sections, and
each refusal as one line.

Both command lines use these functions, so a config file, a flag, an alias
(``--openai.model`` is ``--openai.model_name``) and a bad value mean and say the same
everywhere: an unknown YAML section or key and an unknown flag are refused naming the
known ones; a flag given without a value stands for ``true`` on yes/no options only;
``None``/``null`` unset a value.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, get_args

import yaml
from pydantic import BaseModel, ValidationError

from hermes_envs._errors import CliError

__all__ = [
    "OPENAI_ALIASES",
    "check_value",
    "flag_section",
    "one_line",
    "parse_flags",
    "read_config_file",
    "read_yaml",
    "yaml_section",
]


class _Bare(str):
    """The value of a flag given without one: ``"true"``, allowed for booleans only."""

    __slots__ = ()


#: Aliases of server options: both spellings work on every command.
OPENAI_ALIASES: dict[str, str] = {"model": "model_name", "model_name": "model"}


def check_value(key: str, value: str, annotation: Any) -> None:
    """Refuse a flag given without a value unless its option is a boolean.

    Raises:
        CliError: ``--KEY`` was given bare and its option (``annotation``) is not a bool.
    """
    if isinstance(value, _Bare) and not _is_boolean(annotation):
        raise CliError(f"--{key} needs a value: --{key} VALUE (only yes/no options stand alone)")


def _is_boolean(annotation: Any) -> bool:
    if annotation is bool:
        return True
    return bool(get_args(annotation)) and all(
        arg is bool or arg is type(None) for arg in get_args(annotation)
    )


def parse_flags(args: Sequence[str]) -> dict[str, str]:
    """``--key value`` / ``--key=value`` pairs (a flag with no value means ``true``, which
    :func:`check_value` allows for boolean options only).

    Raises:
        CliError: for an argument that is not a ``--flag``.
    """
    flags: dict[str, str] = {}
    index = 0
    while index < len(args):
        arg = args[index]
        if not arg.startswith("--") or arg == "--":
            raise CliError(f"unexpected argument {arg!r}: options look like --env.NAME VALUE")
        key, eq, value = arg[2:].partition("=")
        if not eq:
            following = args[index + 1] if index + 1 < len(args) else None
            if following is None or following.startswith("--"):
                value = _Bare("true")
            else:
                value = following
                index += 1
        flags[key] = value
        index += 1
    return flags


def _field(name: str, model: type[BaseModel], section: str) -> str | None:
    """The field of ``model`` that ``name`` names (aliases resolved in ``openai``)."""
    if name not in model.model_fields and section == "openai":
        name = OPENAI_ALIASES.get(name, name)
    return name if name in model.model_fields else None


def flag_section(flags: Mapping[str, str], section: str, model: type[BaseModel]) -> dict[str, Any]:
    """The ``--SECTION.NAME VALUE`` flags of ``section`` as ``model`` field values
    (``None``/``null`` become ``None``).

    Raises:
        CliError: a name that is not a field of ``model`` (the known ones listed), or a
            bare flag for an option that is not a yes/no one.
    """
    prefix = f"{section}."
    out: dict[str, Any] = {}
    for key, value in flags.items():
        if not key.startswith(prefix):
            continue
        name = _field(key[len(prefix) :], model, section)
        if name is None:
            known = ", ".join(sorted(model.model_fields))
            raise CliError(f"unknown option --{key}; known {section} options: {known}")
        check_value(key, value, model.model_fields[name].annotation)
        out[name] = None if value in ("None", "null") else value
    return out


def yaml_section(
    data: Mapping[str, Any], section: str, model: type[BaseModel], origin: str
) -> dict[str, Any]:
    """The ``section:`` mapping of a config file as ``model`` field values (aliases
    resolved; a missing or empty section is ``{}``).

    Raises:
        CliError: the section is not a mapping, or holds a key that is not a field of
            ``model`` (one line naming ``origin``, the key and the known keys).
    """
    value = data.get(section)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise CliError(f"{origin}: {section}: must be a mapping")
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = _field(str(key), model, section)
        if name is None:
            known = ", ".join(sorted(model.model_fields))
            raise CliError(f"{origin}: unknown key {section}.{key}; known {section} keys: {known}")
        out[name] = item
    return out


def read_yaml(text: str, origin: str, sections: Collection[str]) -> dict[str, Any]:
    """A config file's text as its top-level mapping (empty text: ``{}``).

    Raises:
        CliError: not YAML, not a mapping, or a section other than ``sections`` (one line
            naming ``origin``).
    """
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise CliError(f"{origin}: not valid YAML ({str(error).splitlines()[0]})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CliError(f"{origin}: the top level must be a mapping with env: / openai:")
    unknown = sorted(set(map(str, data)) - set(sections))
    if unknown:
        raise CliError(f"{origin}: unknown section {unknown[0]!r}; use env: and openai:")
    return data


def read_config_file(path: str | Path, sections: Collection[str]) -> dict[str, Any]:
    """``--config PATH``: :func:`read_yaml` of the file.

    Raises:
        CliError: the file cannot be read, or :func:`read_yaml` refuses it.
    """
    origin = f"--config {path}"
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise CliError(f"{origin}: cannot read it ({error.strerror or error})") from None
    return read_yaml(text, origin, sections)


def one_line(error: ValidationError, section: str) -> str:
    """Every problem of a ``ValidationError`` of ``section``'s settings, on one line:
    ``SECTION.NAME: what is wrong (got VALUE)``, joined with ``; ``."""
    parts = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"]) or "(config)"
        message = str(item["msg"]).removeprefix("Value error, ")
        value = item.get("input")
        shown = f" (got {value!r})" if isinstance(value, str | int | float) else ""
        if "got" in message:
            shown = ""
        parts.append(f"{section}.{where}: {message}{shown}")
    return "; ".join(parts)
