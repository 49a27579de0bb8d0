"""Entry point for ``python -m hermes_parsers`` (the same as the ``hermes-parsers`` command)."""

from hermes_parsers.cli import main

raise SystemExit(main(prog="python -m hermes_parsers"))
