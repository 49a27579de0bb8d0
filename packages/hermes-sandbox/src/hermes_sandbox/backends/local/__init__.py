"""``local``: commands run on this host, in a per-task temporary directory.

Two modes, chosen by the ``isolation`` option (``"none"`` by default; ``"auto"`` picks
``"bwrap"`` where bubblewrap is installed):

**Plain** (``isolation="none"``). Each command is ``bash -c <script>`` started with
``posix_spawn`` in a new session (its own process group), stdin ``/dev/null``, stdout and
stderr into one pipe, and a minimal environment: ``PATH``, ``HOME``, ``LANG``,
``options.env`` and one marker variable, ``HERMES_SANDBOX_MARKER``. The event loop reads
the pipe into a bounded ``OutputCollector`` and learns of the exit through a pidfd: no
thread and no asyncio transport per command. This mode hides the host's environment from
``env`` and nothing more: a command runs as this user and can read the host's
environment through ``/proc/$PPID/environ``, see and signal the host's processes, reach
the network, and read and write any path this user can; so can ``read_file`` and
``write_file``. Use it for trusted commands.

**Isolated** (``isolation="bwrap"``, see ``isolation.py``). The sandbox gets its own pid,
network (unless ``network=True``), IPC and mount namespaces through Debian's
``bubblewrap``: no host process (nor its environment) is visible, the network is only a
loopback device, the host's file system is read-only except the sandbox's directories,
``/tmp``, ``/run`` and ``/dev`` are private, and no capability is kept. A helper inside
starts the commands and opens files, so ``read_file``/``write_file`` reach exactly what
commands reach.

Process limits (both modes): ``pids_limit`` is enforced by a cgroup with the pids
controller made for the sandbox (``cgroup.py``); where none can be made, ``start`` raises
``SandboxStartError`` saying why, rather than running without the limit. The isolated
mode joins the cgroup once, at start; a plain command joins it as its first action, a
cgroup migration per command (free on an idle machine; it waits for an RCU grace
period, about 10 ms under heavy load), so prefer the isolated mode with a limit.

Killing a command's whole process tree (at its timeout, when the awaiting task is
cancelled): ``SIGKILL`` to its process group, then every process whose environment
carries the command's marker (``sweep.py``; in the isolated mode the helper does this
inside the namespace). Background jobs outlive their command, as a shell user expects,
until the sandbox closes. ``close`` kills everything without starting a thread (a fork
bomb may have used up the process ids): the isolated mode kills the namespace's pid 1
(the kernel then kills every process in it); the plain mode kills its cgroup (with
``pids_limit``) and stops, then kills every marked process (reading ``/proc`` in a
thread, or inline when no thread can start). A plain-mode process that drops the marker
from its environment *and* leaves the process group escapes the last of these.

A command returns when its shell exits. If a background job still holds the output pipe
then, the command returns after a short grace and the job's later output is drained and
discarded (so the job is not killed by SIGPIPE) until it ends or the sandbox closes.

Paths in the sandbox are host paths. ``workdir`` defaults to a fresh temporary directory
(also ``HOME``), removed by ``close``; a ``workdir`` given in the options is created if
missing and left in place. cwd and exports carry over through ``shell.wrap_command``.

A process killed with SIGKILL closes nothing: isolated sandboxes die with it (their
helper's socket closes); ``reap_orphans()`` removes what the sandboxes of
dead processes left (their directories and cgroups, named after the owning process id,
and any of their commands still running).
"""

from __future__ import annotations

from hermes_sandbox.backends.local.sandbox import (
    DEFAULT_PATH,
    ISOLATION_MODES,
    Isolation,
    LocalSandbox,
)
from hermes_sandbox.backends.local.sweep import MARKER_VARIABLE, reap_orphans
from hermes_sandbox.shell import is_stateless

__all__ = [
    "DEFAULT_PATH",
    "ISOLATION_MODES",
    "MARKER_VARIABLE",
    "Isolation",
    "LocalSandbox",
    "is_stateless",
    "reap_orphans",
]
