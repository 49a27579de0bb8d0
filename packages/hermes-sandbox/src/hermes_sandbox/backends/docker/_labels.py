"""The labels that mark this package's containers, and this process's run id."""

from __future__ import annotations

from typing import Final

from hermes_sandbox._lifecycle import RUN_ID

__all__ = ["LABEL", "LABEL_POOL", "LABEL_RUN", "LABEL_TASK", "RUN_ID"]

# RUN_ID (one id per Python process, put on every container it starts as label
# ``LABEL_RUN``) is ``hermes_sandbox._lifecycle.RUN_ID``, re-exported here.
#: ``hermes-sandbox=1`` on every container of this package.
LABEL: Final = "hermes-sandbox"
#: The run (``RUN_ID``) that started the container.
LABEL_RUN: Final = "hermes-sandbox.run"
#: The task id of the sandbox that owns the container.
LABEL_TASK: Final = "hermes-sandbox.task"
#: The warm pool that started the container (see ``DockerWarmPool``).
LABEL_POOL: Final = "hermes-sandbox.pool"
