"""The bash programs the backend runs inside a container (the command sessions' own loop
is in ``_session``).

Every one runs as the helper's static bash (``HELPER_BASH``, see ``_helper``) with
``harness_argv``, and calls any program it needs by the helper's absolute path
(``HELPER_BUSYBOX``): nothing here is looked up on the container's ``PATH``, which a
command may have filled with impostors.

- ``KEEPER``: init's only child, which holds the container open until its deadline.
- ``KILL_SCRIPT``: kills a command's session and every descendant.
- ``STOP_SCRIPT``: kills every process of the container but init, the keeper and itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from hermes_sandbox._processes import kill_functions
from hermes_sandbox.backends.docker._helper import HELPER_BASH, HELPER_BUSYBOX

__all__ = [
    "HARNESS_ENV",
    "KEEPER",
    "KILL_SCRIPT",
    "STOP_SCRIPT",
    "harness_argv",
]

#: Variables set for the backend's own scripts so that the image's ``BASH_ENV``/``ENV``
#: (a file bash would source first) does not run in them.
HARNESS_ENV: Final[Mapping[str, str]] = {"BASH_ENV": "", "ENV": ""}


def harness_argv(script: str, name: str, *args: str) -> list[str]:
    """The command line that runs ``script`` in the helper's bash (``$0`` = ``name``)."""
    return [HELPER_BASH, "--noprofile", "--norc", "-c", script, name, *args]


# The keeper, init's only child. $1: seconds until it exits (the container then stops and
# the daemon removes it); $2: seconds to set on SIGUSR2 (a warm-pool container re-armed by
# its new owner). SIGUSR1 kills every process but init and itself. It waits on a fifo
# nobody writes, so its loop needs no process, and works when the process limit is full.
_KEEPER = r"""
trap 'kill -9 -1 2>/dev/null' USR1
trap 'end=$((SECONDS + $2))' USR2
trap 'exit 0' TERM
f=/tmp/.hermes-keeper-$$
if BB mkfifo "$f" && exec 3<>"$f"; then
  BB rm -f "$f"
  nap() { read -r -t "$1" -u 3 _; }
else
  nap() { BB sleep "$1" & wait "$!"; }
fi
end=$((SECONDS + $1))
while [ "$SECONDS" -lt "$end" ]; do nap "$((end - SECONDS))"; done
"""

# Kills a command's session ($1: its id = the leader's pid): every process of the session
# and every descendant of one (setsid children too), frozen first so none forks meanwhile,
# then the group and the leader (in case setsid has not run yet); three passes catch forks
# in flight (``__hs_kill`` of ``hermes_sandbox._processes``, without a marker pattern:
# builtins only, so it runs even when the process limit is nearly full).
KILL_SCRIPT: Final = kill_functions(HELPER_BUSYBOX) + '__hs_kill s "$1" ""\nexit 0\n'

# Kills every process of the container but init (pid 1), the keeper and itself: frozen,
# then SIGKILLed, pass after pass until a pass finds none left (zombies aside: init reaps
# them), exit 1 if they kept coming. After a few passes it pauses between them (an
# external sleep; a killed process is not a zombie at once on a loaded machine). The
# keeper is init's earliest child (it started with the container, before any command
# could), so a process that calls itself "hermes-keeper" is not spared. Otherwise
# builtins only, as ``KILL_SCRIPT``.
_STOP = r"""
me=$$ keep= first=
for p in /proc/[0-9]*; do
  read -r l < "$p/stat" 2>/dev/null || continue
  set -- ${l##*") "}
  [ "$2" = 1 ] || continue
  if [ -z "$keep" ] || [ "${20}" -lt "$first" ]; then keep=${p#/proc/} first=${20}; fi
done
n=0
while [ "$n" -lt 50 ]; do
  doomed=()
  for p in /proc/[0-9]*; do
    q=${p#/proc/}
    case $q in 1|"$me"|"$keep") continue ;; esac
    read -r l < "$p/stat" 2>/dev/null || continue
    set -- ${l##*") "}
    case $1 in Z|X) continue ;; esac
    doomed+=("$q")
  done
  [ "${#doomed[@]}" -gt 0 ] || exit 0
  kill -STOP "${doomed[@]}" 2>/dev/null
  kill -9 "${doomed[@]}" 2>/dev/null
  n=$((n + 1))
  [ "$n" -lt 3 ] || BB sleep 0.05 2>/dev/null
done
exit 1
"""

# ``BB`` in the two scripts above stands for the helper's busybox.
KEEPER: Final = _KEEPER.replace("BB ", f"{HELPER_BUSYBOX} ")
STOP_SCRIPT: Final = _STOP.replace("BB ", f"{HELPER_BUSYBOX} ")
