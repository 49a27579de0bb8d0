"""Grouping tools into named toolsets and choosing which ones a rollout gets."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from hermes_loop._errors import HermesLoopError, ToolDefinitionError
from hermes_loop._tools import Tool, ToolLike, check_tool

__all__ = ["ToolRegistry", "ToolSet", "UnknownToolsetError"]

T = TypeVar("T", bound=ToolLike)


class UnknownToolsetError(HermesLoopError, KeyError):
    """A toolset or distribution name that is not registered (also a ``KeyError``)."""

    def __init__(self, kind: str, name: str, known: Iterable[str]) -> None:
        self.kind = kind
        self.name = name
        self.known = sorted(known)
        super().__init__(name)

    def __str__(self) -> str:
        known = ", ".join(self.known) or "(none registered)"
        return f"unknown {self.kind} {self.name!r}; known: {known}"


class ToolSet:
    """The tools one rollout may call, by name, in a stable order.

    It holds the tools it is given (any ``ToolLike``: ``Tool``, hermes-sandbox's
    ``SandboxTool``, ...) as they are.
    """

    __slots__ = ("_tools",)

    def __init__(self, tools: Iterable[ToolLike] = ()) -> None:
        """Raises ``ToolDefinitionError`` (a ``ValueError``) if two tools share a name, or
        a tool that is not a ``Tool`` (checked when built) has an invalid name or
        parameters schema (``check_tool``)."""
        self._tools = _by_name(tools, checked=False)

    @classmethod
    def _of_checked(cls, tools: Iterable[ToolLike]) -> ToolSet:
        """A ``ToolSet`` of tools already checked (a registry's), without checking again."""
        made = cls.__new__(cls)
        made._tools = _by_name(tools, checked=True)
        return made

    def __iter__(self) -> Iterator[ToolLike]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def get(self, name: str) -> ToolLike | None:
        """The tool called ``name``, or ``None``."""
        return self._tools.get(name)

    @property
    def names(self) -> list[str]:
        """Tool names in order."""
        return list(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI ``tools`` entries for all tools."""
        return [tool.schema() for tool in self._tools.values()]


class ToolRegistry:
    """Tools grouped into named toolsets, plus named toolset distributions.

    A distribution maps toolset names to the probability (0-1, or a percentage above
    1) that a rollout gets that toolset; ``select(distribution=..., seed=...)`` draws
    each toolset independently with a seeded generator, so a seed always gives the same
    toolsets. No state is shared between registries.
    """

    def __init__(self) -> None:
        self._toolsets: dict[str, dict[str, ToolLike]] = {}
        self._distributions: dict[str, dict[str, float]] = {}

    def add(self, tool: T, *, toolset: str | None = None) -> T:
        """Put ``tool`` (any ``ToolLike``, kept as it is) into ``toolset`` (default: the
        tool's own ``toolset``; created if new) and return it.

        Raises:
            ToolDefinitionError: (a ``ValueError``) if a different tool of that name is
                already in the registry, neither ``toolset`` nor ``tool.toolset`` names a
                toolset, or the tool's name or parameters schema is invalid
                (``check_tool``).
        """
        toolset = toolset or tool.toolset
        if not toolset:
            raise ToolDefinitionError(
                f"tool {tool.name!r} names no toolset: pass add(tool, toolset=...)"
            )
        for name, tools in self._toolsets.items():
            existing = tools.get(tool.name)
            if existing is not None and existing is not tool:
                raise ToolDefinitionError(
                    f"a different tool named {tool.name!r} is in toolset {name!r}"
                )
        if not isinstance(tool, Tool):  # a Tool checked itself when built
            check_tool(tool)
        self._toolsets.setdefault(toolset, {})[tool.name] = tool
        return tool

    def add_distribution(self, name: str, weights: Mapping[str, float]) -> None:
        """Register a named distribution over toolsets.

        Raises:
            UnknownToolsetError: if it names a toolset that is not registered.
            ValueError: if a weight is negative or above 100.
        """
        normalised: dict[str, float] = {}
        for toolset, weight in weights.items():
            if toolset not in self._toolsets:
                raise UnknownToolsetError("toolset", toolset, self._toolsets)
            if not 0 <= weight <= 100:
                raise ValueError(f"distribution {name!r}: weight of {toolset!r} must be 0-100")
            normalised[toolset] = weight / 100 if weight > 1 else float(weight)
        self._distributions[name] = normalised

    @property
    def toolsets(self) -> list[str]:
        """Registered toolset names, sorted."""
        return sorted(self._toolsets)

    @property
    def distributions(self) -> list[str]:
        """Registered distribution names, sorted."""
        return sorted(self._distributions)

    def select(
        self,
        enabled: Sequence[str] | None = None,
        disabled: Sequence[str] | None = None,
        distribution: str | None = None,
        seed: int | str | None = None,
    ) -> ToolSet:
        """The tools for one rollout.

        ``enabled=None`` means every toolset; ``disabled`` is removed afterwards. With
        ``distribution``, toolsets are first drawn from it (at least one is always
        drawn: the likeliest, if chance drew none), then ``enabled``/``disabled`` filter.

        Raises:
            UnknownToolsetError: for a toolset or distribution name that is not registered.
        """
        for name in (*(enabled or ()), *(disabled or ())):
            if name not in self._toolsets:
                raise UnknownToolsetError("toolset", name, self._toolsets)
        chosen = list(self._toolsets) if enabled is None else list(dict.fromkeys(enabled))
        if distribution is not None:
            weights = self._distributions.get(distribution)
            if weights is None:
                raise UnknownToolsetError("distribution", distribution, self._distributions)
            drawn = self._draw(weights, seed)
            chosen = [name for name in chosen if name in drawn]
        blocked = set(disabled or ())
        tools: dict[str, ToolLike] = {}
        for name in chosen:
            if name not in blocked:
                for tool in self._toolsets[name].values():
                    tools.setdefault(tool.name, tool)
        return ToolSet._of_checked(tools.values())

    @staticmethod
    def _draw(weights: Mapping[str, float], seed: int | str | None) -> set[str]:
        rng = random.Random(seed)
        drawn = {name for name, p in sorted(weights.items()) if rng.random() < p}
        if not drawn and weights:
            drawn = {max(sorted(weights), key=lambda name: weights[name])}
        return drawn


def _by_name(tools: Iterable[ToolLike], *, checked: bool) -> dict[str, ToolLike]:
    """``tools`` by name, in order; each one not ``checked`` before and not a ``Tool``
    (which checked itself when built) goes through ``check_tool``.

    Raises:
        ToolDefinitionError: two tools share a name, or ``check_tool`` refused one.
    """
    by_name: dict[str, ToolLike] = {}
    for tool in tools:
        if tool.name in by_name:
            raise ToolDefinitionError(f"two tools are named {tool.name!r}")
        if not checked and not isinstance(tool, Tool):
            check_tool(tool)
        by_name[tool.name] = tool
    return by_name
