"""Making a sequence of commands behave like one shell session.

Each command runs in a fresh ``bash``, but the working directory and the exported
environment carry over from the previous command, as a shell user expects: the wrapper
restores them from a state directory before the command and saves them after it, even
when the command calls ``exit``. Backends run ``bash -c <wrapped script>``.

The wrapper is built for speed: bash builtins only (no ``mkdir`` or ``$(cat ...)`` child
process per command) and one state file read and written per command (``export -p`` plus
the cwd, quoted with ``printf %q`` so that any directory name survives). A command that
cannot change the state (``is_stateless``: one program with plain arguments, e.g.
``ls -la src`` or ``python3 test.py``) runs as the script's last line without the saving
trap, so that bash replaces itself with the program instead of forking it, exactly as a
bare ``bash -c`` of that command does.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable

__all__ = ["STATE_DIR_PREFIX", "is_stateless", "wrap_command", "wrap_fresh"]

STATE_DIR_PREFIX = "/tmp/.hermes-shell-"

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def wrap_command(
    command: str,
    *,
    state_dir: str,
    workdir: str,
    direct: bool = True,
    unsaved: Iterable[str] = (),
) -> str:
    """The bash script that runs ``command`` inside the persisted shell state.

    cwd and exported variables carry over from the previous command, also when the
    command calls ``exit``; a saved cwd that is gone falls back to ``workdir``.

    Args:
        command: the user's shell command (any bash, multi-line allowed).
        state_dir: a directory private to this sandbox where the state is kept (made if
            missing; once it is removed, nothing more is saved).
        workdir: where the first command starts (and the fallback if the saved cwd is gone;
            re-created if it was deleted).
        direct: whether a stateless command may run directly (False when a program name
            could be a function from the environment, ``BASH_FUNC_*``).
        unsaved: variables the backend sets afresh for every command (e.g. a marker); they
            are left out of the saved state, so each command sees its own value.

    Raises:
        ValueError: if a name in ``unsaved`` is not a shell variable name.
    """
    drop = list(unsaved)
    for name in drop:
        if not _NAME.fullmatch(name):
            raise ValueError(f"unsaved: {name!r} is not a shell variable name")
    state = shlex.quote(state_dir)
    home = shlex.quote(workdir)
    restore = (
        f"__hs={state}\n"
        '[ -d "$__hs" ] || mkdir -p "$__hs" 2>/dev/null\n'
        '[ -f "$__hs/state" ] && . "$__hs/state" 2>/dev/null\n'
        f'[ -d "$__hc" ] && [ -x "$__hc" ] && cd -- "$__hc" || cd -- {home} 2>/dev/null'
        f" || {{ mkdir -p -- {home} && cd -- {home}; }}"
        f" || {{ echo 'sandbox: cannot enter the working directory '{home} >&2; exit 1; }}\n"
        "unset __hc __hs\n"
    )
    if direct and is_stateless(command):
        return f"{restore}{command.strip()}\n"
    forget = f"unset -v {' '.join(drop)} 2>/dev/null; " if drop else ""
    return (
        f"{restore}__hs={state}\n"
        f'__hermes_save() {{ __rc=$?; {forget}[ -d "$__hs" ] &&'
        ' { export -p; printf \'__hc=%q\\n\' "$PWD"; } >"$__hs/state"; exit $__rc; }\n'
        "trap __hermes_save EXIT\n"
        f"eval {shlex.quote(command)}\n"
    )


def wrap_fresh(command: str, *, workdir: str) -> str:
    """The bash script that runs ``command`` outside the shell session.

    The command runs in a fresh ``bash --noprofile --norc`` (the running bash, ``$BASH``,
    not one found through ``PATH``) in ``workdir`` (created if missing), with the
    environment the script itself was started with: the sandbox's configured ``env``
    and the backend's defaults (each backend sets a ``PATH``, e.g.
    ``hermes_sandbox._processes.DEFAULT_PATH``). It neither reads nor writes the session's
    saved state: exported variables, the cwd, ``BASH_ENV`` and the functions it would
    define, set by earlier commands, are not seen, and nothing this command changes
    reaches later session commands.
    """
    home = shlex.quote(workdir)
    return (
        f"cd -- {home} 2>/dev/null || {{ mkdir -p -- {home} && cd -- {home}; }}"
        f" || {{ echo 'sandbox: cannot enter the working directory '{home} >&2; exit 1; }}\n"
        f'exec "$BASH" --noprofile --norc -c {shlex.quote(command)}\n'
    )


# One word of a "stateless" command: bare characters without shell meaning, or quoted
# text without expansions, or a concatenation of these.
_PLAIN_WORD = r"""(?:[A-Za-z0-9_./:=,+@%^~*?\[\]-]|'[^']*'|"[^"$`\\!]*")+"""
_STATELESS = re.compile(rf"[ \t]*[A-Za-z0-9_./+-][A-Za-z0-9_./+,@%:-]*(?:[ \t]+{_PLAIN_WORD})*\s*")
# Builtins and keywords that may change the cwd or the exported environment, or that are
# not what they seem as a first word; a stateless command starts with none of them.
_SHELL_WORDS = frozenset({
    ".", ":", "[", "[[", "]]", "alias", "bg", "bind", "break", "builtin", "caller", "case",
    "cd", "command", "compgen", "complete", "compopt", "continue", "coproc", "declare",
    "dirs", "disown", "do", "done", "elif", "else", "enable", "esac", "eval", "exec", "exit",
    "export", "fc", "fg", "fi", "for", "function", "getopts", "hash", "help", "history", "if",
    "in", "jobs", "let", "local", "logout", "mapfile", "popd", "printf", "pushd", "read",
    "readarray", "readonly", "return", "select", "set", "shift", "shopt", "source", "suspend",
    "then", "time", "times", "trap", "typeset", "ulimit", "umask", "unalias", "unset",
    "until", "wait", "while"
})  # fmt: skip


def is_stateless(command: str) -> bool:
    """Whether ``command`` is one program with plain arguments, which cannot change the
    shell's cwd or exported variables (no expansions, operators, redirections or
    assignments, and not a builtin or keyword that could)."""
    if len(command) > 4096 or not _STATELESS.fullmatch(command):
        return False
    first = command.split(None, 1)[0]
    return first not in _SHELL_WORDS
