"""``local``: commands run on this host, in a per-task temporary directory.

Two modes, chosen by the ``isolation`` option (``"auto"`` by default: ``"bwrap"`` where
bubblewrap is installed and works, else ``"none"``, said in one log warning):

**Plain** (``isolation="none"``). Each command is ``bash -c <script>`` started with
``posix_spawn`` in a new session (its own process group), stdin ``/dev/null``, stdout and
stderr into one pipe, and a minimal environment: ``PATH`` (with ``python``/``python3``,
this process's interpreter, first), ``HOME``, ``LANG``, ``options.env`` and one marker
variable, ``HERMES_SANDBOX_MARKER``. The event loop reads the pipe into a bounded
``OutputCollector`` and learns of the exit through a pidfd: no thread and no asyncio
transport per command. This mode hides the host's environment from ``env`` and nothing
more: a command runs as this user and can read the host's environment through
``/proc/$PPID/environ``, see and signal the host's processes, reach the network, and
read and write any path this user can; so can ``read_file`` and ``write_file``. Use it
for trusted commands. A ``workdir`` given in the options is held by one open plain
sandbox at a time (a lock on the directory).

**Isolated** (``isolation="bwrap"``, see ``isolation.py`` and ``layout.py``). The sandbox
gets its own pid, network (unless ``network=True``), IPC and mount namespaces through
Debian's ``bubblewrap``: no host process (nor its environment) is visible, the network is
only a loopback device, only system directories are shown (read-only; ``/etc`` without
its secrets), homes, ``/root`` and checkouts are not, ``/tmp``, ``/run`` and ``/dev`` are
private and of bounded size, the ``workdir`` (``/workspace``) is the sandbox's own, and
no capability is kept. A helper inside starts the commands and opens files, so
``read_file``/``write_file`` reach exactly what commands reach.

Process limits (both modes): ``pids_limit`` is enforced by a cgroup with the pids
controller made for the sandbox (``cgroup.py``); where none can be made, ``start`` raises
``SandboxStartError`` saying why, rather than running without the limit. ``memory_mb``
by a memory cgroup; where none can be made, ``start`` says so in a log warning. The isolated
mode joins the cgroup once, at start; a plain command joins it as its first action, a
cgroup migration per command (free on an idle machine; it waits for an RCU grace
period, about 10 ms under heavy load), so prefer the isolated mode with a limit.

Killing a command's whole process tree (at its timeout, when the awaiting task is
cancelled): ``SIGKILL`` to its process group, then every process whose environment carries
the command's marker (``hermes_sandbox._processes.sweep``; in the isolated mode the helper
does this inside the namespace). Background jobs outlive their command, as a shell user
expects, until the sandbox closes. ``close`` kills everything without starting a thread (a
fork bomb may have used up the process ids): the isolated mode kills the namespace's pid 1
(the kernel then kills every process in it); the plain mode kills its cgroup (with
``pids_limit``) and stops, then kills every marked process (reading ``/proc`` in a thread,
or inline when no thread can start). A plain-mode process that drops the marker from its
environment *and* leaves the process group escapes the last of these.

A command returns when its shell exits. If a background job still holds the output pipe
then, the command returns after a short grace and the job's later output is drained and
discarded (so the job is not killed by SIGPIPE) until it ends or the sandbox closes.

``workdir`` defaults to a fresh temporary directory (also ``HOME``), removed by
``close``. Plain, paths are host paths and a ``workdir`` given in the options is created
if missing and left in place; isolated, one outside the sandbox's home and ``host_dirs``
is a private directory of the sandbox, removed by ``close``. cwd and exports carry over
through ``shell.wrap_command``.

A process killed with SIGKILL closes nothing: isolated sandboxes die with it (bubblewrap
runs with ``--die-with-parent``); ``reap_orphans()`` removes what the sandboxes of
dead processes left (their directories and cgroups, named after the owning process id,
and any of their commands still running).
"""

from __future__ import annotations

from hermes_sandbox._processes import DEFAULT_PATH, MARKER_VARIABLE
from hermes_sandbox._shell import is_stateless
from hermes_sandbox.backends.local._options import DEFAULT_TMP_SIZE_MB, ISOLATION_MODES, Isolation
from hermes_sandbox.backends.local._sandbox import LocalSandbox
from hermes_sandbox.backends.local._sweep import reap_orphans

__all__ = [
    "DEFAULT_PATH",
    "DEFAULT_TMP_SIZE_MB",
    "ISOLATION_MODES",
    "MARKER_VARIABLE",
    "Isolation",
    "LocalSandbox",
    "is_stateless",
    "reap_orphans",
]
