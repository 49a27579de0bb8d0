"""Run summaries (pass@k, tiers, infra apart) and reading the verifier's reward."""

from __future__ import annotations

from math import comb

import pytest

from hermes_benchmarks import Attempt, RewardError, TrialResult, parse_reward, pass_at_k, summarize


def trial(task: str, n: int, status: str, difficulty: str | None = None) -> TrialResult:
    reward = {"pass": 1.0, "fail": 0.0}.get(status)
    kind = "verifier_crash" if status == "infra_error" else None
    attempt = Attempt(status=status, reward=reward, error_kind=kind)  # type: ignore[arg-type]
    return TrialResult.from_attempts(task, n, [attempt], difficulty=difficulty)


def test_suspect_passes_are_counted_apart_beside_the_clean_pass_rate() -> None:
    suspect = Attempt(status="pass", reward=1.0, suspect_reasons=["/etc/ld.so.preload: x"])
    scored_zero = Attempt(status="fail", reward=0.0, error_kind="reward_missing")
    results = [
        TrialResult.from_attempts("a", 0, [suspect]),
        trial("a", 1, "pass"),
        TrialResult.from_attempts("b", 0, [scored_zero]),
        trial("b", 1, "fail"),
    ]
    assert results[0].suspect
    assert not results[1].suspect
    summary = summarize(results)
    overall = summary.overall
    assert (overall.passed, overall.suspect_passed, overall.scored) == (2, 1, 4)
    assert overall.pass_rate == pytest.approx(0.5)
    assert overall.clean_pass_rate == pytest.approx(0.25)
    assert {t.task: t.suspect_passed for t in summary.tasks} == {"a": 1, "b": 0}
    # A scored failure's kind is counted among the failures, not the infra errors.
    assert summary.failure_kinds == {"reward_missing": 1}
    assert summary.error_kinds == {}
    assert overall.mean_reward == pytest.approx(0.5)


@pytest.mark.parametrize(("n", "c", "k"), [(5, 0, 1), (5, 2, 1), (5, 2, 3), (5, 5, 5), (10, 3, 4)])
def test_pass_at_k_matches_the_definition(n: int, c: int, k: int) -> None:
    # Brute force over every k-subset: the chance that a subset holds a pass.
    from itertools import combinations

    outcomes = [1] * c + [0] * (n - c)
    subsets = list(combinations(outcomes, k))
    expected = sum(1 for s in subsets if any(s)) / comb(n, k)
    assert pass_at_k(n, c, k) == pytest.approx(expected)


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, 1, 0), (3, 1, 4), (0, 0, 1)])
def test_pass_at_k_refuses_impossible_counts(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError, match="pass@k needs"):
        pass_at_k(n, c, k)


def test_infra_errors_are_reported_apart_and_never_lower_the_mean() -> None:
    results = [
        trial("a", 0, "pass", "easy"),
        trial("a", 1, "fail", "easy"),
        trial("b", 0, "infra_error", "hard"),
        trial("b", 1, "pass", "hard"),
        trial("c", 0, "infra_error", "hard"),
    ]
    summary = summarize(results)
    overall = summary.overall
    assert (overall.trials, overall.scored, overall.passed, overall.failed) == (5, 3, 2, 1)
    assert overall.infra_errors == 2
    assert overall.mean_reward == pytest.approx(2 / 3)
    assert summary.error_kinds == {"verifier_crash": 2}
    assert summary.unscored_tasks == ["c"]
    by_task = {t.task: t for t in summary.tasks}
    assert by_task["a"].pass_at_k == {1: 0.5, 2: 1.0}
    assert by_task["b"].pass_at_k == {1: 1.0}
    assert by_task["c"].mean_reward is None
    assert by_task["c"].pass_at_k == {}
    # pass@1 overall: mean over tasks that have a scored trial (a: 0.5, b: 1.0).
    assert overall.pass_at_k[1] == pytest.approx(0.75)
    assert set(summary.tiers) == {"easy", "hard"}
    assert summary.tiers["hard"].scored == 1
    assert summary.tiers["hard"].infra_errors == 2
    assert summary.to_json()["overall"]["infra_errors"] == 2


def test_difficulty_from_the_task_list_when_results_carry_none() -> None:
    summary = summarize([trial("a", 0, "pass")], difficulties={"a": "medium"})
    assert summary.tasks[0].difficulty == "medium"
    assert set(summary.tiers) == {"medium"}


def test_an_empty_run_summarizes_to_zeros() -> None:
    summary = summarize([])
    assert summary.overall.trials == 0
    assert summary.overall.mean_reward is None


@pytest.mark.parametrize(
    ("files", "reward"),
    [
        ({"reward.txt": b"1\n"}, 1.0),
        ({"reward.txt": b" 0.25 "}, 0.25),
        ({"reward.json": b"0"}, 0.0),
        ({"reward.json": b'{"reward": 0.5, "tests": 4}'}, 0.5),
        ({"reward.txt": b"1", "reward.json": b"0"}, 1.0),
        ({"reward.txt": None, "reward.json": b"1.0"}, 1.0),
    ],
)
def test_a_reward_is_read(files: dict[str, bytes | None], reward: float) -> None:
    assert parse_reward(files) == reward


@pytest.mark.parametrize(
    ("files", "kind", "text"),
    [
        ({}, "reward_missing", "wrote no reward.txt or reward.json"),
        ({"reward.txt": None}, "reward_missing", "wrote no"),
        ({"reward.txt": b""}, "reward_unreadable", "reward.txt is empty"),
        ({"reward.txt": b"passed"}, "reward_unreadable", "not a number"),
        ({"reward.txt": b"nan"}, "reward_unreadable", "not a finite number"),
        ({"reward.txt": b"inf"}, "reward_unreadable", "not a finite number"),
        ({"reward.txt": b"\xff\xfe"}, "reward_unreadable", "not UTF-8"),
        ({"reward.json": b"{"}, "reward_unreadable", "not valid JSON"),
        ({"reward.json": b'{"score": 1}'}, "reward_unreadable", 'without a "reward" key'),
        ({"reward.json": b"true"}, "reward_unreadable", "not a number"),
        ({"reward.json": b'"1"'}, "reward_unreadable", "not a number"),
    ],
)
def test_no_readable_reward_is_a_verifier_failure(
    files: dict[str, bytes | None], kind: str, text: str
) -> None:
    with pytest.raises(RewardError) as caught:
        parse_reward(files)
    assert caught.value.kind == kind
    assert text in str(caught.value)
