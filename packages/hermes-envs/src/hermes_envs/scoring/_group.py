"""A group of scored rollouts as Atropos scored data, and Atropos' checks before it is
written.

Plain data in, plain data out: the environment builds its groups with these functions,
and so does the token worker process (``hermes_envs.scoring.worker``), so both write the
same lines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hermes_envs.scoring._tokens import TokenizedRollout

__all__ = ["OPTIONAL_GROUP_FIELDS", "ScoredRollout", "scored_group", "skip_reason", "wire_messages"]

#: The fields Atropos' ``handle_send_to_api`` sets to ``None`` when a group lacks them.
OPTIONAL_GROUP_FIELDS = (
    "ref_logprobs",
    "overrides",
    "group_overrides",
    "distill_token_ids",
    "distill_logprobs",
)


@dataclass(frozen=True, slots=True)
class ScoredRollout:
    """What a group holds of one scored rollout."""

    task_id: str
    messages: Sequence[Mapping[str, Any]]
    score: float
    tokens: TokenizedRollout


def wire_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` as Atropos' API takes them: a message without text content (a pure
    tool-call turn has ``None``) gets ``""``."""
    out = []
    for message in messages:
        copy = dict(message)
        if copy.get("content") is None:
            copy["content"] = ""
        out.append(copy)
    return out


def scored_group(
    rollouts: Sequence[ScoredRollout], group_size: int
) -> tuple[dict[str, Any], list[tuple[str, int]]]:
    """Atropos scored data of ``rollouts`` (tokens, masks, scores, messages; inference
    logprobs when every rollout has them; ``group_overrides`` naming the size when it is
    not ``group_size``), and ``(task_id, turns)`` of each rollout with token drift."""
    group: dict[str, Any] = {
        "tokens": [],
        "masks": [],
        "scores": [],
        "messages": [],
        "group_overrides": {},
    }
    drift: list[tuple[str, int]] = []
    logprobs: list[list[float]] = []
    for rollout in rollouts:
        tokens = rollout.tokens
        if tokens.drift:
            drift.append((rollout.task_id, tokens.drift))
        group["tokens"].append(tokens.tokens)
        group["masks"].append(tokens.masks)
        group["scores"].append(rollout.score)
        group["messages"].append(wire_messages(rollout.messages))
        if tokens.logprobs is not None:
            logprobs.append(tokens.logprobs)
    if logprobs and len(logprobs) == len(rollouts):
        group["inference_logprobs"] = logprobs
    if len(rollouts) != group_size:
        group["group_overrides"] = {"group_size": len(rollouts)}
    return group, drift


def skip_reason(
    group: dict[str, Any], group_size: int, ensure_scores_are_not_same: bool
) -> str | None:
    """Why Atropos would not write ``group`` (its token lists do not match its group
    size, or scores must differ and are all the same), or ``None``: then the optional
    fields it lacks are set to ``None``, as Atropos does."""
    overrides = group.get("group_overrides") or {}
    size = overrides.get("group_size", group_size)
    if None in group or len(group.get("tokens", [])) != size:
        return (
            f"skipping a group whose token lists do not match its group size ({size}): "
            f"{str(group)[:200]}"
        )
    if ensure_scores_are_not_same and len(set(group["scores"])) == 1:
        return "skipping a group whose scores are all the same"
    for name in OPTIONAL_GROUP_FIELDS:
        group.setdefault(name, None)
    return None
