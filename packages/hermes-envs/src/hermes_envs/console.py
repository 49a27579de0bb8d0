"""The ``hermes-envs`` console script: ``hermes-envs SUBCOMMAND ...``.

Each subcommand is a ``module:function`` taking the remaining arguments and returning
the exit status, imported only when it runs (``hermes-envs --help`` imports nothing of
the package). Add a subcommand by adding a row to :data:`SUBCOMMANDS`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import Final

__all__ = ["SUBCOMMANDS", "main"]

#: name -> (``module:function``, one-line description).
SUBCOMMANDS: Final[dict[str, tuple[str, str]]] = {
    "view": (
        "hermes_envs.view.command:view_main",
        "open a process or evaluate output in the browser",
    ),
}


def _usage() -> str:
    width = max(len(name) for name in SUBCOMMANDS)
    lines = [f"  {name:<{width}}  {about}" for name, (_, about) in SUBCOMMANDS.items()]
    return "usage: hermes-envs SUBCOMMAND [ARGS]\n\nsubcommands:\n" + "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``hermes-envs``; the exit status (2 for a missing or unknown subcommand)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(_usage(), file=sys.stdout if args else sys.stderr)
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in SUBCOMMANDS:
        print(
            f"error: unknown subcommand {name!r}; subcommands: {', '.join(SUBCOMMANDS)}",
            file=sys.stderr,
        )
        return 2
    module, _, function = SUBCOMMANDS[name][0].partition(":")
    run = getattr(importlib.import_module(module), function)
    status: int = run(rest)
    return status


if __name__ == "__main__":
    sys.exit(main())
