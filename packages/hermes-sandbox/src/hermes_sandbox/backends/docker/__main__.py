"""``python -m hermes_sandbox.backends.docker``: see ``cli``."""

import sys

from hermes_sandbox.backends.docker._cli import main

sys.exit(main())
