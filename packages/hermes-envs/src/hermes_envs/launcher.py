"""``hermes-envs``: the console script of hermes-envs, a small table of subcommands
(``run`` and ``view``).

``hermes-envs run MODULE[:Class] {serve,process,evaluate} [options]`` runs an
environment's command line (:func:`hermes_envs._cli.run_cli`) as ``python -m MODULE
COMMAND`` would, but quietly: the environment's module is imported only after this
entry point has muted transformers' "None of PyTorch, TensorFlow >= 2.0, or Flax have
been found" banner, which atroposlib's import of transformers would print otherwise.
``MODULE`` is a dotted module name (``hermes_envs.envs.terminal_test``) or a ``.py``
file (loaded as ``python FILE`` would run it, except that its folder is not put on
``sys.path``: a module it imports must be importable); ``:Class`` picks the environment
class when the module defines several.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType

__all__ = [
    "SUBCOMMANDS",
    "LaunchError",
    "environment_class",
    "main",
    "quiet_libraries",
    "reader_gone",
    "run_main",
]

USAGE = (
    "usage: hermes-envs run MODULE[:Class] {serve,process,evaluate} [--config FILE.yaml] "
    "[--env.NAME VALUE ...] [--openai.NAME VALUE ...]\n"
    "  run        run an environment's command (MODULE: a dotted module name or a .py "
    "file; MODULE[:Class] COMMAND --help lists its options)\n"
    "  view       open a process or evaluate output in the browser (hermes-envs view "
    "--help)\n"
    "  --version  print the version"
)

#: The start of the banner transformers logs when imported without a deep-learning
#: framework (it only ever tokenizes here).
_BANNER = "None of PyTorch, TensorFlow >= 2.0, or Flax have been found"


class _DropBanner(logging.Filter):
    """Drops transformers' no-framework banner; lets every other record through."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(_BANNER)


@contextlib.contextmanager
def quiet_libraries() -> Iterator[None]:
    """While the block runs, transformers' no-framework banner is not logged (a filter
    on its logger, removed when the block ends; every other record passes)."""
    drop = _DropBanner()
    logger = logging.getLogger("transformers")
    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)


class LaunchError(Exception):
    """``MODULE[:Class]`` names no environment; the message says what to pass."""


def _import(target: str) -> ModuleType:
    path = Path(target)
    if target.endswith(".py"):
        if not path.is_file():
            raise LaunchError(f"{target}: no such file")
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise LaunchError(f"{target}: cannot load it as a Python module")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        if exc.name is not None and target.startswith(exc.name):
            raise LaunchError(
                f"no module named {target!r}: give a module name or a .py file"
            ) from None
        raise


def environment_class(spec: str) -> type:
    """The environment class ``MODULE[:Class]`` names (imported here).

    Raises:
        LaunchError: no such module, file or class, or the module defines no
            environment or several (then ``:Class`` must pick one).
    """
    from hermes_envs._base_env import HermesAgentBaseEnv

    target, _, name = spec.partition(":")
    module = _import(target)
    if name:
        found = getattr(module, name, None)
        if not (isinstance(found, type) and issubclass(found, HermesAgentBaseEnv)):
            raise LaunchError(f"{target} has no environment class {name!r}")
        return found
    defined = [
        value
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, HermesAgentBaseEnv)
        and value.__module__ == module.__name__
    ]
    if len(defined) != 1:
        names = ", ".join(sorted(cls.__name__ for cls in defined)) or "none"
        raise LaunchError(
            f"{target} defines {len(defined)} environment classes ({names}): "
            f"pass {target}:ClassName"
        )
    return defined[0]


def run_main(args: Sequence[str]) -> int:
    """``hermes-envs run MODULE[:Class] COMMAND ...``: the exit status of the command (2 for
    a module that names no environment)."""
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, file=sys.stdout if args else sys.stderr)
        return 0 if args else 2
    with quiet_libraries():
        from hermes_envs._cli import run_cli

        try:
            env_cls = environment_class(args[0])
        except LaunchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return run_cli(env_cls, list(args[1:]), prog=f"hermes-envs run {args[0]}")  # type: ignore[arg-type]


def view_main(args: Sequence[str]) -> int:
    """``hermes-envs view OUT ...`` (:func:`hermes_envs.view.view_main`, imported here:
    the viewer needs none of the environment's libraries)."""
    from hermes_envs.view import view_main as view

    return view(args)


#: The subcommands of ``hermes-envs``: name -> function of the remaining arguments.
SUBCOMMANDS: dict[str, Callable[[Sequence[str]], int]] = {"run": run_main, "view": view_main}


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``hermes-envs``; returns the exit status (2 for an unknown subcommand; 0 also
    when stdout's reader went away, as ``hermes-envs ... | head`` does)."""
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except BrokenPipeError:
        return reader_gone()


def reader_gone() -> int:
    """After a ``BrokenPipeError`` on stdout (its reader went away, as ``... | head``
    does): point stdout at ``/dev/null`` so the interpreter's last flush goes nowhere, and
    return 0, the exit status of a command whose output was simply not all read."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
    return 0


def _main(args: list[str]) -> int:
    if args and args[0] in ("--version", "-V"):
        from importlib.metadata import version

        print(f"hermes-envs {version('hermes-envs')}")
        return 0
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE, file=sys.stdout if args else sys.stderr)
        return 0 if args else 2
    command = SUBCOMMANDS.get(args[0])
    if command is None:
        print(
            f"error: unknown command {args[0]!r}; choose {', '.join(SUBCOMMANDS)}",
            file=sys.stderr,
        )
        return 2
    return command(args[1:])


if __name__ == "__main__":
    sys.exit(main())
