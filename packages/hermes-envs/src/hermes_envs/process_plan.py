"""``ProcessPlan``: which of ``process``'s fast paths an environment class takes, decided
in one place from the hooks it overrides.

``process`` has four shortcuts past the environment's hooks, each taken only when the
hooks it stands in for are the base class's own (an override is always called):

========================  ==============================================================
fast path                 stands in for (overriding any of them turns it off)
========================  ==============================================================
``own_rollouts``          ``collect_trajectories``, ``collect_trajectory``: ``process``
                          runs a group's rollouts itself (``hermes_envs._reference``'s
                          ``GroupPath.FAST``); off, it calls the environment's method.
``inline_scoring``        ``score_group``: the group is scored by the group writer
                          directly; off, ``score_group`` is called with the outcomes.
``lines_with_tokens``     ``score_group``, ``postprocess_histories``, ``write_group``: a
                          group's file line is made with its tokens, in one hand-off to
                          the tokenizer thread; off, each hook is called in turn.
``token_worker``          the three above and ``tokenize_rollout``: Phase 1 lines may be
                          made in a separate process (``hermes_envs.scoring.worker``).
``prepared_rollouts``     ``run_rollouts``: a group's opening messages and agent loop are
                          made before it waits for a slot (``build_messages`` and
                          ``agent_loop`` are still called, once per group); off, the
                          environment's ``run_rollouts`` is called in the slot.
========================  ==============================================================

``lines_with_tokens`` and ``token_worker`` also depend on the run (wandb off, the group
file ours, Phase 1, the tokenizer's own chat template): the environment checks those at
run time; the plan holds what the class decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hermes_envs._reference import GroupPath, group_path

__all__ = ["FAST_PATH_HOOKS", "ProcessPlan"]

#: Each fast path and the hooks it stands in for.
FAST_PATH_HOOKS: dict[str, tuple[str, ...]] = {
    "own_rollouts": ("collect_trajectories", "collect_trajectory"),
    "inline_scoring": ("score_group",),
    "lines_with_tokens": ("score_group", "postprocess_histories", "write_group"),
    "token_worker": ("score_group", "postprocess_histories", "write_group", "tokenize_rollout"),
    "prepared_rollouts": ("run_rollouts",),
}


@dataclass(frozen=True, slots=True)
class ProcessPlan:
    """The fast paths an environment class may take (see the module docstring)."""

    #: How ``process`` gets a group (``FAST``: ``own_rollouts``).
    group_path: GroupPath
    #: Why ``group_path`` was chosen, in words (logged at debug).
    why: str
    #: The hooks of ``FAST_PATH_HOOKS`` the class overrides.
    overridden: frozenset[str]

    @classmethod
    def of(cls, env_class: type[Any], base: type[Any]) -> ProcessPlan:
        """The plan of ``env_class``, a subclass of ``base`` (``HermesAgentBaseEnv``): a
        hook counts as overridden when ``env_class`` resolves it to another function than
        ``base`` does."""
        hooks = {hook for hooks in FAST_PATH_HOOKS.values() for hook in hooks}
        overridden = frozenset(
            hook for hook in hooks if getattr(env_class, hook) is not getattr(base, hook)
        )
        path, why = group_path(env_class, base)
        return cls(path, why, overridden)

    def allows(self, fast_path: str) -> bool:
        """Whether none of the hooks ``fast_path`` stands in for is overridden.

        Raises:
            KeyError: if ``fast_path`` is not a key of ``FAST_PATH_HOOKS``.
        """
        return not self.overridden.intersection(FAST_PATH_HOOKS[fast_path])

    def overrides(self, hook: str) -> bool:
        """Whether the class overrides ``hook`` (one of the hooks of ``FAST_PATH_HOOKS``)."""
        return hook in self.overridden

    def describe(self) -> str:
        """The plan in one line (for the debug log)."""
        taken = [name for name in FAST_PATH_HOOKS if self.allows(name)]
        return (
            f"group path {self.group_path.value}: {self.why}; fast paths the class allows: "
            f"{', '.join(taken) or 'none'}"
        )
