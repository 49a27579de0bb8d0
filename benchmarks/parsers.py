"""Parser speed, as ratios against baselines measured in the same run.

For every registered format:
- ``vs json.loads``: time to ``parse()`` a realistic turn (content and four calls)
  divided by the time ``json.loads`` takes on the same calls' argument strings. Bar: <= 3.
- ``stream/parse``: time to stream the same text in 4-character chunks over ``parse()``.
- growth ``10x/1x``: time at ten times the input over time at one time the input, for the
  realistic turn (ten times the calls), 100k unterminated opening markers (10k vs 100k),
  deeply nested JSON arguments (depth 1k vs 10k), and every repeated partial construct of
  the format's vocabulary (``hermes_parsers.adversarial.growth_units``: each marker, and
  each piece of a rendered call from one marker to another, opened and left unclosed;
  20k vs 200k characters, parsed and streamed in 64-character chunks; the worst unit is
  shown). Linear growth is about 10; the script flags anything above 20 as super-linear.

Prints a table; exits 1 if a bar is missed. Run: ``./dev bench`` or
``uv run python benchmarks/parsers.py [--quick]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from hermes_parsers import ToolCall, ToolCallParser, get_parser, list_parsers
from hermes_parsers.adversarial import growth_units
from hermes_parsers.tool_call import FunctionCall

LINEAR_LIMIT = 20.0
JSON_LIMIT = 3.0


def best_time(fn: Callable[[], object], *, budget: float) -> float:
    """The fastest of repeated runs of ``fn`` within about ``budget`` seconds (GC off, as
    ``timeit`` does, so one format's garbage does not bill the next)."""
    gc.collect()
    gc.disable()
    try:
        return _best_time(fn, budget)
    finally:
        gc.enable()


def _best_time(fn: Callable[[], object], budget: float) -> float:
    best = float("inf")
    deadline = time.perf_counter() + budget
    runs = 0
    while runs < 3 or (time.perf_counter() < deadline and runs < 10_000):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
        runs += 1
    return best


def sample_calls(parser: ToolCallParser, count: int) -> list[ToolCall]:
    """``count`` calls with realistic arguments (a shell command, a file body, numbers)."""
    calls = []
    for i in range(count):
        arguments = {
            "command": f"grep -rn 'def handler_{i}' src/ | head -n 20",
            "content": "\n".join(f"line {j}: value = {j * 3.5}" for j in range(12)),
            "options": {"timeout": 30 + i, "retries": [1, 2, 4], "verbose": i % 2 == 0},
        }
        call_id = f"functions.run_{i % 4}:{i}" if parser.carries_ids else f"call_{i}"
        text = json.dumps(arguments, ensure_ascii=False)
        calls.append(ToolCall(call_id, FunctionCall(f"run_{i % 4}", text)))
    return calls


def realistic(parser: ToolCallParser, count: int) -> tuple[str, list[str]]:
    calls = sample_calls(parser, count)
    content = "Let me look at the repository first." if parser.content_with_calls else None
    return parser.render(content, calls), [c.function.arguments for c in calls]


def nested_text(parser: ToolCallParser, depth: int) -> str:
    call = ToolCall("functions.deep:0", FunctionCall("deep", "{}"))
    text = parser.render(None, [call])
    # Splice a deeply nested value into the rendered arguments object.
    return text.replace("{}", '{"a": ' + "[" * depth + "]" * depth + "}", 1)


def growth(fn: Callable[[str], object], small: str, large: str, budget: float) -> float:
    """Time of ``fn(large)`` over time of ``fn(small)``. A ratio above the linear limit is
    measured again with five times the budget and the smaller kept: with dozens of units
    per format, the largest of many noisy ratios is otherwise a false alarm."""
    ratio = 0.0
    for attempt in (budget, 5 * budget):
        again = best_time(lambda: fn(large), budget=attempt) / max(
            best_time(lambda: fn(small), budget=attempt), 1e-7
        )
        ratio = again if ratio == 0.0 else min(ratio, again)
        if ratio <= LINEAR_LIMIT:
            break
    return ratio


def worst_partial_growth(parser: ToolCallParser, budget: float) -> tuple[float, float, str]:
    """The largest 10x/1x time ratio over the format's growth units, for ``parse`` and
    for streaming, and the label of the unit that gave the larger one (each timing gets
    ``budget`` seconds)."""
    worst_parse, worst_stream, worst = 0.0, 0.0, ""

    def stream_all(text: str) -> None:
        stream = parser.stream()
        for i in range(0, len(text), 64):
            stream.feed(text[i : i + 64])
        stream.close()

    for label, unit in growth_units(parser).items():
        small = unit * max(1, 20_000 // len(unit))
        large = small * 10
        parsed = growth(parser.parse, small, large, budget)
        streamed = growth(stream_all, small, large, budget)
        if max(parsed, streamed) > max(worst_parse, worst_stream):
            worst = label
        worst_parse, worst_stream = max(worst_parse, parsed), max(worst_stream, streamed)
    return worst_parse, worst_stream, worst


def measure(name: str, budget: float) -> dict[str, Any]:
    parser = get_parser(name)
    text, arguments = realistic(parser, 4)
    parse_t = best_time(lambda: parser.parse(text), budget=budget)
    json_t = best_time(lambda: [json.loads(a) for a in arguments], budget=budget)

    def stream_all() -> None:
        stream = parser.stream()
        for i in range(0, len(text), 4):
            stream.feed(text[i : i + 4])
        stream.close()

    stream_t = best_time(stream_all, budget=budget)
    big, _ = realistic(parser, 40)
    growth_calls = best_time(lambda: parser.parse(big), budget=budget) / parse_t
    marker = (parser.markers or ("<tool_call>",))[0]
    small_adv, big_adv = marker * 10_000, marker * 100_000
    adv_1 = best_time(lambda: parser.parse(small_adv), budget=budget)
    growth_adv = best_time(lambda: parser.parse(big_adv), budget=budget) / adv_1
    deep_1, deep_10 = nested_text(parser, 1_000), nested_text(parser, 10_000)
    nested_1 = best_time(lambda: parser.parse(deep_1), budget=budget)
    growth_nested = best_time(lambda: parser.parse(deep_10), budget=budget) / nested_1
    g_partial, g_partial_stream, worst_unit = worst_partial_growth(parser, max(budget / 5, 0.02))
    return {
        "g_partial": g_partial,
        "g_partial_stream": g_partial_stream,
        "worst_unit": worst_unit,
        "vs_json": parse_t / json_t,
        "stream": stream_t / parse_t,
        "parse_us": parse_t * 1e6,
        "g_calls": growth_calls,
        "g_adv": growth_adv,
        "g_nested": growth_nested,
    }


def main() -> int:
    cli = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    cli.add_argument("--quick", action="store_true", help="shorter timing budget")
    cli.add_argument("--format", action="append", help="only these formats")
    args = cli.parse_args()
    budget = 0.05 if args.quick else 0.3
    header = (
        f"{'format':<14}{'parse us':>10}{'vs json.loads':>15}{'stream/parse':>14}"
        f"{'10x calls':>11}{'10x open tags':>15}{'10x nesting':>13}"
        f"{'10x partials':>14}{'(stream)':>10}  worst partial"
    )
    print(header)
    print("-" * len(header))
    missed = []
    # Each format is measured in a fresh interpreter: the allocator state one format's
    # megabyte-sized inputs leave behind would otherwise bill the next one's.
    spawn = multiprocessing.get_context("spawn")
    for name in args.format or list_parsers():
        with ProcessPoolExecutor(1, mp_context=spawn) as worker:
            r = worker.submit(measure, name, budget).result()
        print(
            f"{name:<14}{r['parse_us']:>10.1f}{r['vs_json']:>15.2f}{r['stream']:>14.2f}"
            f"{r['g_calls']:>11.1f}{r['g_adv']:>15.1f}{r['g_nested']:>13.1f}"
            f"{r['g_partial']:>14.1f}{r['g_partial_stream']:>10.1f}  {r['worst_unit'][:40]}"
        )
        if r["vs_json"] > JSON_LIMIT:
            missed.append(f"{name}: parse is {r['vs_json']:.2f}x json.loads (bar {JSON_LIMIT})")
        for key in ("g_calls", "g_adv", "g_nested", "g_partial", "g_partial_stream"):
            if r[key] > LINEAR_LIMIT:
                missed.append(f"{name}: {key} grew {r[key]:.1f}x for 10x input")
    print()
    print("\n".join(missed) if missed else "all bars met")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
