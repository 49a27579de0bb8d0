"""The ``docker`` backend: one container per task, reached only through the docker API.

Each sandbox is a container started from a locally built image (see ``image``): network
off (``network_mode="none"``) unless ``network=True``, never privileged,
``no-new-privileges``, a CPU limit (``cpus``, 1 CPU by default), a process limit
(``pids_limit``, 256 by default, so a fork bomb stays inside), a memory limit when
``memory_mb`` is given, and a tiny init (docker's ``--init``) whose child, the *keeper*,
holds the container open, removes it after ``terminal_lifetime`` should the host process
die without closing it (``AutoRemove``), and kills every process in the container on
``SIGUSR1``.

A container keeps its image's own environment: its ``ENV`` (``PATH`` and all), its
``WORKDIR`` (commands start there unless ``workdir`` says otherwise; ``/workspace`` when
neither does) and its ``USER`` (commands run as that user unless ``user`` says otherwise;
``exec(..., session=False, user=...)`` picks one for a single command); ``env`` adds to
the image's variables.

What the backend itself runs in a container never comes from anything a command can
change: the keeper, the command wrapper, the kill and stop scripts and the ``mkdir`` of
uploads run as ``/.hermes/bash`` and ``/.hermes/busybox``, static binaries (Debian's
``bash-static`` and ``busybox-static``) on a docker volume mounted read-only in every
container (filled once per daemon from the busybox base image, see ``_helper``). A
command is root in its container but has no ``CAP_SYS_ADMIN``: it cannot write to that
mount, remount it or shadow it, so a ``bash``, ``setsid`` or ``kill`` planted in
``/usr/local/bin`` or first on ``PATH`` changes nothing of what the harness runs; the
kill and stop scripts use only the helper's builtins and ``/proc``, and files move through
the daemon's archive API. Images without bash work the same way (commands run in the
helper's bash). The keeper and the stop and kill scripts run as root, whatever the user
of the commands.

Commands run through shells kept open in the container (``_session``): one ``docker
exec`` of the helper's bash per command running at the same time (and per user), whose
stdin carries the commands and whose output, read straight from the daemon's socket with
asyncio (the upgraded ``/exec/{id}/start`` stream), goes into an ``OutputCollector`` as it
arrives; a random token after each command's last byte ends it and carries its status,
so a command costs about a millisecond instead of the tens an ``exec`` takes to start.
Each command runs in its own session (``setsid``) with stdin ``/dev/null``; at its
timeout, or when the awaiting task is cancelled, a separate exec kills that session's
every process (the shell session lives on); when even that exec cannot start (a fork bomb
filled the process limit) the keeper is told to kill everything. A shell session that
dies (a command may kill it) fails only its running command and is replaced. Files move
as tar streams through the archive endpoints (``upload_file``/``download_file`` stream the
file through a plain HTTP connection, ``_transfer``).

Every container carries the labels ``hermes-sandbox=1`` and ``hermes-sandbox.run=RUN_ID``
(one id per Python process), plus any ``labels`` option, so leftovers are easy to find:
``list_containers`` and ``remove_containers`` find and remove them by run id or by any
of their labels.

The modules, each importing only those above it in this list:

- ``_sdk``: loading the docker SDK (an optional extra), reading its errors;
- ``_errors``: ``DockerUnreachableError``, ``ImageBuildError``;
- ``_stream``: ``ExecStream``, an exec's raw output stream;
- ``_daemon``: ``DockerDaemon``, the wrapper of one daemon connection;
- ``_cache``, ``_pull``, ``_rootfs``, ``_dockerfile``, ``image``: having images, cached by
  tag: pulled from registries with the user's docker credentials, the base images from
  Debian's packages, a task's image from its Dockerfile (with the network, or offline;
  cached by its inputs and its bases' ids); ``cli``
  (``python -m hermes_sandbox.backends.docker``) builds base images from a shell;
- ``_labels``: ``RUN_ID`` and the labels on every container;
- ``_helper``: the read-only helper volume (static bash and busybox) every container
  mounts;
- ``_spec``: ``ContainerSpec``, the options checked;
- ``_scripts``: the bash the backend runs inside containers;
- ``_session``: ``SessionPool``, the shells kept open that run commands;
- ``_launch``: ``start_container``, a container of a spec, with its keeper;
- ``pool``: ``DockerWarmPool``, containers started ahead of time;
- ``_archive``, ``_transfer``: tar streams for files;
- ``_sandbox``: ``DockerSandbox``;
- ``_cleanup``: ``list_containers``, ``remove_containers``, ``remove_networks`` by run or
  labels;
- ``_services``: ``ServiceGroup``, service containers (Compose's ``services``) beside a
  sandbox on a network of their own;
- ``_prepare``: the backend's hooks ``DockerSandbox.prepare_image`` and
  ``DockerSandbox.reap_run`` (``DockerImageOptions``).
"""

from __future__ import annotations

from hermes_sandbox.backends.docker._cleanup import (
    list_containers,
    remove_containers,
    remove_networks,
)
from hermes_sandbox.backends.docker._daemon import DockerDaemon, resolve_docker_host
from hermes_sandbox.backends.docker._errors import DockerUnreachableError, ImageBuildError
from hermes_sandbox.backends.docker._image import (
    BUSYBOX_IMAGE,
    DEFAULT_IMAGE,
    build_dockerfile_image,
    build_image,
    ensure_image,
    image_exists,
)
from hermes_sandbox.backends.docker._labels import (
    LABEL,
    LABEL_POOL,
    LABEL_RUN,
    LABEL_TASK,
    RUN_ID,
)
from hermes_sandbox.backends.docker._launch import LIFETIME_GRACE, start_container
from hermes_sandbox.backends.docker._pool import DockerWarmPool
from hermes_sandbox.backends.docker._prepare import DockerImageOptions
from hermes_sandbox.backends.docker._pull import pull_image
from hermes_sandbox.backends.docker._sandbox import DockerSandbox
from hermes_sandbox.backends.docker._services import (
    CONDITIONS,
    Condition,
    Healthcheck,
    ServiceGroup,
    ServiceSpec,
    service_order,
)
from hermes_sandbox.backends.docker._spec import (
    DEFAULT_CPUS,
    DEFAULT_PIDS_LIMIT,
    ContainerSpec,
)

__all__ = [
    "BUSYBOX_IMAGE",
    "CONDITIONS",
    "DEFAULT_CPUS",
    "DEFAULT_IMAGE",
    "DEFAULT_PIDS_LIMIT",
    "LABEL",
    "LABEL_POOL",
    "LABEL_RUN",
    "LABEL_TASK",
    "LIFETIME_GRACE",
    "RUN_ID",
    "Condition",
    "ContainerSpec",
    "DockerDaemon",
    "DockerImageOptions",
    "DockerSandbox",
    "DockerUnreachableError",
    "DockerWarmPool",
    "Healthcheck",
    "ImageBuildError",
    "ServiceGroup",
    "ServiceSpec",
    "build_dockerfile_image",
    "build_image",
    "ensure_image",
    "image_exists",
    "list_containers",
    "pull_image",
    "remove_containers",
    "remove_networks",
    "resolve_docker_host",
    "service_order",
    "start_container",
]
