"""``ExecResult``: what running a command returns."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ExecResult"]


@dataclass(frozen=True, slots=True)
class ExecResult:
    """The outcome of one command.

    ``output`` is stdout and stderr interleaved as the command wrote them, decoded as
    UTF-8 (bad bytes replaced), cut to ``max_output_chars`` with a visible marker.
    ``exit_code`` is the command's status; ``124`` and ``timed_out=True`` when it was
    killed at its timeout.
    """

    output: str
    exit_code: int
    timed_out: bool = False
    truncated: bool = False
    duration: float = 0.0

    def to_dict(self) -> dict[str, str | int]:
        """``{"output": str, "exit_code": int}``, the shape ``ToolContext.terminal`` returns."""
        return {"output": self.output, "exit_code": self.exit_code}
