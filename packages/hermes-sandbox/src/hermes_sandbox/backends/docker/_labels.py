"""The labels that mark this package's containers, and this process's run id."""

from __future__ import annotations

import uuid
from typing import Final

__all__ = ["LABEL", "LABEL_POOL", "LABEL_RUN", "LABEL_TASK", "RUN_ID"]

#: One id per Python process, put on every container it starts (label ``LABEL_RUN``).
RUN_ID: Final = uuid.uuid4().hex[:12]
#: ``hermes-sandbox=1`` on every container of this package.
LABEL: Final = "hermes-sandbox"
#: The run (``RUN_ID``) that started the container.
LABEL_RUN: Final = "hermes-sandbox.run"
#: The task id of the sandbox that owns the container.
LABEL_TASK: Final = "hermes-sandbox.task"
#: The warm pool that started the container (see ``DockerWarmPool``).
LABEL_POOL: Final = "hermes-sandbox.pool"
