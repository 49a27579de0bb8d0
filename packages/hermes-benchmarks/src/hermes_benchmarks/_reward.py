"""Reading the reward a task's tests wrote: ``reward.txt`` or ``reward.json``.

``reward.txt`` holds one number. ``reward.json`` holds a number, or an object with a
numeric ``"reward"`` (harbor's multi-metric files carry more keys; the others are kept
by the caller as details). Anything else — no file, an empty file, text, NaN, infinity,
a boolean — is a verifier failure, never a 0 for the model.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

from hermes_benchmarks._errors import RewardError

__all__ = ["REWARD_FILES", "parse_reward"]

#: The file names a verifier may write its reward to, in the order they are looked for.
REWARD_FILES = ("reward.txt", "reward.json")


def _number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RewardError("reward_unreadable", f"{where} holds {value!r}, not a number")
    number = float(value)
    if not math.isfinite(number):
        raise RewardError("reward_unreadable", f"{where} holds {value!r}, not a finite number")
    return number


def parse_reward(files: Mapping[str, bytes | None]) -> float:
    """The reward from the verifier's output files (name to bytes; None for absent).

    ``reward.txt`` wins when both exist.

    Raises:
        RewardError: kind ``reward_missing`` when neither file exists; kind
            ``reward_unreadable`` when the file is not UTF-8, empty, or not a finite
            number (or a JSON object without a numeric ``reward``).
    """
    for name in REWARD_FILES:
        data = files.get(name)
        if data is None:
            continue
        try:
            text = data.decode("utf-8").strip()
        except UnicodeDecodeError:
            raise RewardError("reward_unreadable", f"{name} is not UTF-8 text") from None
        if not text:
            raise RewardError("reward_unreadable", f"{name} is empty")
        if name == "reward.txt":
            try:
                return _number(float(text), name)
            except ValueError:
                raise RewardError(
                    "reward_unreadable", f"{name} holds {text[:80]!r}, not a number"
                ) from None
        try:
            value = json.loads(text)
        except ValueError:
            raise RewardError("reward_unreadable", f"{name} is not valid JSON") from None
        if isinstance(value, dict):
            if "reward" not in value:
                raise RewardError(
                    "reward_unreadable", f'{name} is an object without a "reward" key'
                )
            value = value["reward"]
        return _number(value, name)
    raise RewardError(
        "reward_missing",
        "the tests wrote no reward.txt or reward.json to /logs/verifier",
    )
