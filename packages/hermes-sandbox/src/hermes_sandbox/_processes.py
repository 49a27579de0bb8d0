"""Process control shared by every backend: the marker, the default ``PATH``, and killing.

Every process a sandbox's command starts carries ``MARKER_VARIABLE=<mark>`` in its
environment, and so do its descendants, also those that left the command's session or
process group (``setsid``, ``nohup ... &``, double-forking daemons). A backend finds a
command's (or a whole sandbox's) leftovers by that entry, or by walking ``/proc`` from
the command's process group or session. This module holds both ways once:

- in Python, for backends that read this host's ``/proc`` (``local``): ``environ_needle``,
  ``marked_pids``, ``sweep``;
- in bash, for backends that run the kill inside the sandbox (``modal``, ``daytona``,
  ``ssh``, ``singularity``, ``docker``): ``kill_functions`` returns the definitions of
  ``__hs_tree``, ``__hs_marked``, ``__hs_kill``, ``__hs_sweep`` and
  ``__hs_kill_groups`` (documented at their text below), and ``marker_pattern`` the
  extended regular expression that selects a mark's processes.

The bash functions use builtins, except for reading environments (``grep``, bounded by
``timeout`` where it exists) and a pause between sweep rounds (``sleep``): ``__hs_tree``
and ``__hs_kill`` without a pattern fork no process, so they work when a process limit
is full, and run the external programs only by the path given to ``kill_functions``
(docker gives its read-only helper's busybox: nothing comes from the container's
``PATH``).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
from typing import Final

__all__ = [
    "DEFAULT_PATH",
    "MARKER_VARIABLE",
    "environ_needle",
    "kill_functions",
    "marked_pids",
    "marker_pattern",
    "sweep",
]

#: The environment variable that tags every process of a sandbox's commands.
MARKER_VARIABLE: Final = "HERMES_SANDBOX_MARKER"

#: ``PATH`` a backend gives commands when the sandbox's own ``env`` sets none.
DEFAULT_PATH: Final = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# Rounds of a sweep before it gives up on processes that keep reappearing.
_SWEEP_ROUNDS = 50


# --- Python, on this host's /proc -------------------------------------------------------


def environ_needle(mark: str, *, exact: bool = False) -> bytes:
    """What a process's ``/proc/<pid>/environ`` (with a NUL put before it) contains if it
    carries ``mark`` (``exact``: that mark and no longer one that starts with it)."""
    return f"\0{MARKER_VARIABLE}={mark}{chr(0) if exact else ''}".encode()


def marked_pids(needle: bytes) -> list[int]:
    """Processes (not this one) whose environment holds ``needle`` (``environ_needle``);
    empty on a system without ``/proc``. Blocking."""
    me = os.getpid()
    head = needle[1:]
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []
    found = []
    for pid in pids:
        if pid == me:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            continue
        if environ.startswith(head) or needle in environ:
            found.append(pid)
    return found


def sweep(needle: bytes) -> int:
    """Kill every process whose environment holds ``needle``; returns how many kills were
    sent (0 on a system without ``/proc``).

    Processes are first stopped (SIGSTOP), round after round until a round finds no new
    one, so that a process that keeps forking (a fork bomb) cannot replace the ones being
    killed; then all are killed (SIGKILL, repeated until none is left). Blocking.
    """
    stopped: set[int] = set()
    for _ in range(_SWEEP_ROUNDS):
        fresh = [pid for pid in marked_pids(needle) if pid not in stopped]
        if not fresh:
            break
        for pid in fresh:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGSTOP)
        stopped.update(fresh)
    sent = 0
    for _ in range(_SWEEP_ROUNDS):
        found = marked_pids(needle)
        if not found:
            break
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                sent += 1
    return sent


# --- bash, inside a sandbox ----------------------------------------------------------


def marker_pattern(mark: str, tail: str = "") -> str:
    """The extended regular expression (for ``grep -zE`` on ``/proc/*/environ``) of the
    processes carrying ``mark`` followed by what the regular expression ``tail`` matches
    (empty: exactly ``mark``; e.g. ``r"\\.[0-9]+"`` for the commands ``<mark>.<n>``)."""
    return f"^{MARKER_VARIABLE}={re.escape(mark)}{tail}$"


# ``@name`` stands for an external program; ``kill_functions`` resolves it.
_FUNCTIONS = r"""
__hs_tree() {
  local -A parent=() found=()
  local p l pp pg sid grew=1
  for p in /proc/[0-9]*; do
    read -r l 2>/dev/null <"$p/stat" || continue
    l=${l##*") "}; l=${l#* }; pp=${l%% *}; l=${l#* }; pg=${l%% *}; l=${l#* }; sid=${l%% *}
    p=${p#/proc/}
    parent[$p]=$pp
    if [ "$p" = "$2" ]; then found[$p]=1
    elif [ "$1" = g ] && [ "$pg" = "$2" ]; then found[$p]=1
    elif [ "$1" = s ] && [ "$sid" = "$2" ]; then found[$p]=1; fi
  done
  while [ "$grew" = 1 ]; do
    grew=0
    for p in "${!parent[@]}"; do
      if [ -z "${found[$p]}" ] && [ -n "${found[${parent[$p]}]}" ]; then
        found[$p]=1 grew=1
      fi
    done
  done
  __hs_found=("${!found[@]}")
}
__hs_marked() {
  local f
  if command -v @timeout >/dev/null 2>&1; then
    set -- @timeout -s KILL 10 @grep -lszE -- "$1"
  else
    set -- @grep -lszE -- "$1"
  fi
  for f in $("$@" /proc/[0-9]*/environ); do f=${f#/proc/}; __hs_found+=("${f%%/*}"); done
}
__hs_kill() {
  local round
  for round in 1 2 3; do
    __hs_found=()
    if [ -n "$2" ]; then kill -STOP -- "-$2"; __hs_tree "$1" "$2"; fi
    [ -z "$3" ] || __hs_marked "$3"
    [ "${#__hs_found[@]}" -gt 0 ] || return 0
    kill -STOP "${__hs_found[@]}"; kill -KILL "${__hs_found[@]}"
    [ -z "$2" ] || kill -KILL -- "-$2"
  done
} 2>/dev/null
__hs_sweep() {
  local n=0
  while [ "$n" -lt 50 ]; do
    __hs_found=()
    __hs_marked "$1"
    [ "${#__hs_found[@]}" -gt 0 ] || return 0
    kill -STOP "${__hs_found[@]}"; kill -KILL "${__hs_found[@]}"
    n=$((n + 1))
    [ "$n" -lt 3 ] || @sleep 0.05
  done
  return 1
} 2>/dev/null
__hs_kill_groups() {
  local -A doomed=()
  local p l pg sid
  for p in /proc/[0-9]*/stat; do
    read -r l 2>/dev/null <"$p" || continue
    l=${l##*") "}; l=${l#* }; l=${l#* }; pg=${l%% *}; l=${l#* }; sid=${l%% *}
    case $1 in *" $pg:$sid "*) doomed[$pg]=1 ;; esac
  done
  for pg in "${!doomed[@]}"; do kill -9 -- "-$pg"; done
  return 0
} 2>/dev/null
"""
_TOOL = re.compile(r"@([a-z]+)")

# What the functions do (the text above has no room for comments: it is sent with every
# kill).
#
# __hs_tree MODE ID: sets the array __hs_found to process ID, every member of process
#   group ID (MODE g) or session ID (MODE s), and all their descendants (found by parent
#   links, so children that left the group or session with setsid are found too).
# __hs_marked ERE: adds to __hs_found every process with an environment entry matching
#   ERE (reading another process's environ can block while it holds its memory map lock:
#   each read is bounded by timeout where it exists).
# __hs_kill MODE ID ERE: freezes and SIGKILLs ID's tree (__hs_tree) and every process
#   matching ERE; three rounds, so that processes forked meanwhile die too. ID or ERE may
#   be empty. Without ERE it forks nothing.
# __hs_sweep ERE: freezes and SIGKILLs every process matching ERE, round after round
#   until none is left; status 1 if they still came after 50 rounds.
# __hs_kill_groups " PGID:SID ... ": SIGKILLs each process group listed that still
#   belongs to its session (so a group id reused by another session is spared).


def kill_functions(busybox: str | None = None) -> str:
    """The bash definitions of the kill functions (described in this module's source).

    Args:
        busybox: the absolute path of a busybox to run ``grep``, ``timeout`` and
            ``sleep`` through; None runs them from ``PATH``.
    """
    prefix = "" if busybox is None else f"{busybox} "
    return _TOOL.sub(lambda found: prefix + found[1], _FUNCTIONS)
