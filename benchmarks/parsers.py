"""Parser speed, as ratios against baselines measured in the same run.

For every registered format, against the reference (NousResearch/hermes-agent's own
parsers, ``environments/tool_call_parsers/``, a copy of which is kept as test data in
``benchmarks/reference_parsers/``), on the same inputs, per input kind:

- ``no call``: 20 KB of prose and code-like text holding none of the format's openers.
  Bar: ``parse`` at most 1.1x the substring searches for the format's ``openers``
  (``opener in text`` for each, the work the answer needs; the 0.1 is room for the call
  itself, under half a microsecond, where the searches cannot be beaten); the reference
  (one search for its one marker, which ours cannot match where the format reads more
  markers than the reference does) is shown beside it, with no bar. ``stream``: the same
  text fed in 640-character chunks against 64-character chunks, time per chunk: a chunk
  passed through at C speed costs about the same whatever its size (bar 3.0x; Python
  work per character would make it about 10x).
- ``one call``, ``four calls``, ``100 KB argument``, ``malformed`` (the one-call text with
  a ``:`` missing in the arguments' JSON; mistral's in the v11 ``[TOOL_CALLS]name{args}``
  form, the one the reference reads): ``parse`` then reading each call's
  ``arguments`` string (what the reference returns), against the reference's ``parse``.
  Bar: at most 1.0x where both give the same answer (content and calls, arguments compared
  as JSON); where they differ the ratio is shown and marked ``differs``, with no bar.

Every figure is a ratio, the median over paired rounds (31; 11 with ``--quick``): each
round times both sides back to back, in alternating order, over enough calls for the pair
to take about 2 ms, in CPU time of the thread (``time.thread_time``), so that the other
processes of a loaded machine neither bill a side for their time nor hit one side more
than the other; the machine's load average is printed at the start and at the end.

Then, as before:
- ``vs json.loads``: time to ``parse()`` a realistic turn (content and four calls)
  divided by the time ``json.loads`` takes on the same calls' argument strings (median of
  paired rounds). Bar: <= 3.
- ``stream/parse``: time to stream the same text in 4-character chunks over ``parse()``.
- growth ``10x/1x`` (the fastest time of each side over 7 interleaved rounds in CPU
  time of the thread; a ratio above the limit is measured again with three times the
  rounds and the smaller kept): time at ten times the input over time at one time the input, for the
  realistic turn (ten times the calls), 100k unterminated opening markers (10k vs 100k),
  deeply nested JSON arguments (depth 1k vs 10k), and every repeated partial construct of
  the format's vocabulary (``hermes_parsers.adversarial.growth_units``: each marker, and
  each piece of a rendered call from one marker to another, opened and left unclosed;
  20k vs 200k characters, parsed and streamed in 64-character chunks; the worst unit is
  shown). Linear growth is about 10; the script flags anything above 20 as super-linear.

Prints tables; exits 1 if a bar is missed. The whole run takes about 90 s of CPU time
(one format after another, so about that much wall time on a quiet machine). Run: ``./dev bench`` or
``uv run python benchmarks/parsers.py [--quick] [--format NAME] [--no-growth]``.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import multiprocessing
import os
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from hermes_parsers import FunctionCall, ToolCall, ToolCallParser, get_parser, list_parsers
from hermes_parsers.adversarial import growth_units

LINEAR_LIMIT = 20.0
JSON_LIMIT = 3.0
REFERENCE_LIMIT = 1.0
SEARCH_LIMIT = 1.1
CHUNK_GROWTH_LIMIT = 3.0
KINDS = ("no call", "one call", "four calls", "100 KB argument", "malformed")
STREAM_CHUNK = 64


def load() -> str:
    """The machine's load averages (1, 5, 15 minutes) and its CPU count."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def paired(ours: Callable[[], object], base: Callable[[], object], rounds: int) -> float:
    """The median over ``rounds`` of (time of ``ours``) / (time of ``base``), each round
    timing both back to back, in alternating order, over the same number of calls (enough
    for both sides together to take about 2 ms). GC is off while timing, as in ``timeit``."""
    calls = 1
    while True:
        start = time.thread_time()
        for _ in range(calls):
            ours()
            base()
        if time.thread_time() - start > 0.002 or calls >= 1 << 20:
            break
        calls *= 2
    ratios = []
    gc.collect()
    gc.disable()
    try:
        for round_ in range(rounds):
            times = {}
            for side in (("ours", ours), ("base", base))[:: 1 if round_ % 2 else -1]:
                fn = side[1]
                start = time.thread_time()
                for _ in range(calls):
                    fn()
                times[side[0]] = time.thread_time() - start
            ratios.append(times["ours"] / max(times["base"], 1e-9))
    finally:
        gc.enable()
    return statistics.median(ratios)


def prose(size: int) -> str:
    """``size`` characters of prose and code-like text (with ``<``, ``[``, ``|`` and
    quotes, but no braces and none of any format's markers)."""
    para = (
        "The function returns early when the index is out of range; otherwise it reads "
        "a[i] and compares it, so if a < b the loop goes on (see line 42 | step 3). Values "
        "like 3.5, -7 and 'quoted text' are kept as written, and x > 0 holds after it.\n"
    )
    return (para * (size // len(para) + 1))[:size]


def kind_inputs(parser: ToolCallParser) -> dict[str, str]:
    """The text of each input kind, rendered in the format (see the module docstring)."""
    one, _ = realistic(parser, 1)
    four, _ = realistic(parser, 4)
    big_args = json.dumps({"path": "notes.txt", "content": prose(100_000)})
    big = parser.render(None, [ToolCall("functions.write:0", FunctionCall("write", big_args))])
    broken = one.replace('"timeout": ', '"timeout" ', 1)
    assert broken != one
    texts = {
        "no call": prose(20_000),
        "one call": one,
        "four calls": four,
        "100 KB argument": big,
        "malformed": broken,
    }
    if parser.name == "mistral":
        # The reference reads the v11+ per-call form as ``name{args}`` (the ``[ARGS]``
        # token dropped, as a decode that skips special tokens leaves it); ours reads both.
        texts = {kind: text.replace("[ARGS]", "") for kind, text in texts.items()}
    return texts


def answer(content: str | None, calls: list[Any] | None) -> tuple[Any, ...]:
    """A parse's answer in a comparable shape: stripped content, calls' names and decoded
    arguments (``None`` for arguments that are not JSON)."""

    def decoded(text: str) -> Any:
        try:
            return json.loads(text)
        except ValueError:
            return None

    text = (content or "").strip() or None
    return text, [(c.function.name, decoded(c.function.arguments)) for c in calls or ()]


def plain_figures(parser: ToolCallParser, text: str, rounds: int) -> dict[str, float]:
    """``parse`` of text holding no opener against the substring searches for the format's
    openers; streaming it in 640-character chunks against 64-character chunks, per chunk
    (a chunk passed through at C speed costs about the same whatever its size; work per
    character in Python would make it about ten times as much)."""
    openers = parser.openers
    assert not any(opener in text for opener in openers), "no-call text holds markup"

    def searches() -> None:
        for opener in openers:
            if opener in text:
                break

    def streamer(size: int) -> Callable[[], None]:
        chunks = [text[i : i + size] for i in range(0, len(text), size)]

        def stream_all() -> None:
            stream = parser.stream()
            for chunk in chunks:
                stream.feed(chunk)
            stream.close()

        return stream_all

    large = STREAM_CHUNK * 10
    per_chunk = paired(streamer(large), streamer(STREAM_CHUNK), rounds) * 10
    return {
        "vs_search": paired(lambda: parser.parse(text), searches, rounds),
        "stream_chunk_growth": per_chunk,
    }


def reference_rows(name: str, rounds: int) -> list[dict[str, Any]]:
    """One row per input kind: ours against the reference (and, for ``no call``, against
    the substring searches for the format's openers)."""
    import reference_parsers  # test data beside this script (see the module docstring)

    parser = get_parser(name)
    reference = reference_parsers.get_parser(name)
    rows = []
    for kind, text in kind_inputs(parser).items():

        def ours(text: str = text) -> None:
            result = parser.parse(text)
            for call in result.tool_calls or ():
                call.function.arguments  # noqa: B018 - the string the reference returns

        def theirs(text: str = text) -> None:
            reference.parse(text)

        same = answer(*parser.parse(text)) == answer(*reference.parse(text))
        row: dict[str, Any] = {"kind": kind, "same": same}
        row["vs_reference"] = paired(ours, theirs, rounds)
        if kind == "no call":
            row |= plain_figures(parser, text, rounds)
        rows.append(row)
    return rows


def per_call(fn: Callable[[], object], rounds: int) -> float:
    """The median CPU time of the thread for one call of ``fn``, over ``rounds`` runs of
    enough calls to take about 2 ms (GC off, as in ``timeit``). Only the ``parse us``
    column uses it; every bar is a ratio from ``paired``."""
    calls = 1
    while True:
        start = time.thread_time()
        for _ in range(calls):
            fn()
        if time.thread_time() - start > 0.002 or calls >= 1 << 20:
            break
        calls *= 2
    times = []
    gc.collect()
    gc.disable()
    try:
        for _ in range(rounds):
            start = time.thread_time()
            for _ in range(calls):
                fn()
            times.append((time.thread_time() - start) / calls)
    finally:
        gc.enable()
    return statistics.median(times)


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


def growth(fn: Callable[[str], object], small: str, large: str, rounds: int) -> float:
    """Time of ``fn(large)`` over time of ``fn(small)``: the fastest of ``rounds`` paired
    rounds on each side (interleaved, CPU time of the thread, GC off), as the fastest run
    is the one least disturbed by other processes' use of the shared caches. A ratio above
    the linear limit is measured again with three times the rounds and the smaller kept:
    with dozens of units per format, the largest of many noisy ratios is otherwise a false
    alarm."""
    ratio = _growth(fn, small, large, rounds)
    if ratio > LINEAR_LIMIT:
        ratio = min(ratio, _growth(fn, small, large, 3 * rounds))
    return ratio


def _growth(fn: Callable[[str], object], small: str, large: str, rounds: int) -> float:
    calls = 1  # of the small input, so that it takes about as long as one large one
    while True:
        start = time.thread_time()
        for _ in range(calls):
            fn(small)
        if time.thread_time() - start > 0.0005 or calls >= 1 << 16:
            break
        calls *= 2
    best_small = best_large = float("inf")
    gc.collect()
    gc.disable()
    try:
        for _ in range(rounds):
            start = time.thread_time()
            for _ in range(calls):
                fn(small)
            middle = time.thread_time()
            fn(large)
            end = time.thread_time()
            best_small = min(best_small, (middle - start) / calls)
            best_large = min(best_large, end - middle)
    finally:
        gc.enable()
    return best_large / max(best_small, 1e-9)


def worst_partial_growth(parser: ToolCallParser, rounds: int) -> tuple[float, float, str]:
    """The largest 10x/1x time ratio over the format's growth units, for ``parse`` and
    for streaming, and the label of the unit that gave the larger one (each ratio the
    median of ``rounds`` paired rounds)."""
    worst_parse, worst_stream, worst = 0.0, 0.0, ""

    def stream_all(text: str) -> None:
        stream = parser.stream()
        for i in range(0, len(text), 64):
            stream.feed(text[i : i + 64])
        stream.close()

    for label, unit in growth_units(parser).items():
        small = unit * max(1, 20_000 // len(unit))
        large = small * 10
        parsed = growth(parser.parse, small, large, rounds)
        streamed = growth(stream_all, small, large, rounds)
        if max(parsed, streamed) > max(worst_parse, worst_stream):
            worst = label
        worst_parse, worst_stream = max(worst_parse, parsed), max(worst_stream, streamed)
    return worst_parse, worst_stream, worst


def keep_freed_memory() -> bool:
    """Ask the C allocator (glibc's ``mallopt``) to keep freed memory for reuse rather than
    hand blocks of up to 32 MB back to the kernel; return whether it could. Without this,
    every copy of a megabyte-sized input comes back from the kernel as fresh pages, whose
    faults (kernel CPU time, about 1 us a page) bill the large side of a growth ratio and
    not the small one, whose copies fit in memory the allocator kept: 10x the input then
    measures about 25x, where counting the parser's own steps gives 10x
    (``tests/parsers/test_growth.py``)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    trim_threshold, mmap_threshold, limit = -1, -3, 32 << 20
    return bool(mallopt(mmap_threshold, limit)) and bool(mallopt(trim_threshold, 2 * limit))


def measure(name: str, rounds: int, growth_rounds: int, growth_too: bool) -> dict[str, Any]:
    """Every figure of one format (run in a fresh interpreter, see ``main``)."""
    kept = keep_freed_memory()
    parser = get_parser(name)
    text, arguments = realistic(parser, 4)

    def parse() -> None:
        parser.parse(text)

    vs_json = paired(parse, lambda: [json.loads(a) for a in arguments], rounds)

    def stream_all() -> None:
        stream = parser.stream()
        for i in range(0, len(text), 4):
            stream.feed(text[i : i + 4])
        stream.close()

    figures: dict[str, Any] = {
        "kept": kept,
        "vs_json": vs_json,
        "stream": paired(stream_all, parse, growth_rounds),
        "parse_us": per_call(parse, growth_rounds) * 1e6,
        "reference": reference_rows(name, rounds),
    }
    if not growth_too:
        return figures

    def ten_times(small: str, large: str) -> float:
        return growth(parser.parse, small, large, growth_rounds)

    big, _ = realistic(parser, 40)
    marker = (parser.markers or ("<tool_call>",))[0]
    g_partial, g_partial_stream, worst_unit = worst_partial_growth(parser, growth_rounds)
    return figures | {
        "g_partial": g_partial,
        "g_partial_stream": g_partial_stream,
        "worst_unit": worst_unit,
        "g_calls": ten_times(text, big),
        "g_adv": ten_times(marker * 10_000, marker * 100_000),
        "g_nested": ten_times(nested_text(parser, 1_000), nested_text(parser, 10_000)),
    }


def main() -> int:
    cli = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    cli.add_argument("--quick", action="store_true", help="fewer rounds")
    cli.add_argument("--format", action="append", help="only these formats")
    cli.add_argument("--no-growth", action="store_true", help="skip the growth columns")
    args = cli.parse_args()
    rounds = 11 if args.quick else 31
    growth_rounds = 3 if args.quick else 7
    print(f"hermes-parsers against the reference and json.loads ({load()} at start)")
    results: dict[str, dict[str, Any]] = {}
    # Each format is measured in a fresh interpreter: the allocator state one format's
    # megabyte-sized inputs leave behind would otherwise bill the next one's.
    spawn = multiprocessing.get_context("spawn")
    for name in args.format or list_parsers():
        with ProcessPoolExecutor(1, mp_context=spawn) as worker:
            results[name] = worker.submit(
                measure, name, rounds, growth_rounds, not args.no_growth
            ).result()
    if not all(r["kept"] for r in results.values()):
        print("(the allocator could not be asked to keep freed memory: growth ratios of")
        print(" megabyte-sized inputs include the kernel's page faults)")
    missed = reference_table(results) + json_table(results, growth_too=not args.no_growth)
    print()
    print(f"({load()} at the end)")
    print("\n".join(missed) if missed else "all bars met")
    return 1 if missed else 0


def reference_table(results: dict[str, dict[str, Any]]) -> list[str]:
    """Print ours over the reference per format and input kind; return the missed bars."""
    missed = []
    print()
    print("ours / reference (median of paired rounds; 'differs': answers differ, no bar)")
    header = f"{'format':<14}" + "".join(f"{kind:>17}" for kind in KINDS)
    header += f"{'no call/search':>16}{'stream 10x chunk':>18}"
    print(header)
    print("-" * len(header))
    for name, r in results.items():
        cells = []
        for row in r["reference"]:
            mark = "" if row["same"] else " differs"
            cells.append(f"{row['vs_reference']:.2f}{mark}".rjust(17))
            bar_applies = row["same"] and row["kind"] != "no call"
            if bar_applies and row["vs_reference"] > REFERENCE_LIMIT:
                missed.append(
                    f"{name}: {row['kind']} is {row['vs_reference']:.2f}x the reference "
                    f"(bar {REFERENCE_LIMIT})"
                )
            if row["kind"] == "no call":
                plain = row
        cells.append(f"{plain['vs_search']:>16.2f}{plain['stream_chunk_growth']:>18.2f}")
        if plain["vs_search"] > SEARCH_LIMIT:
            missed.append(
                f"{name}: no-call parse is {plain['vs_search']:.2f}x the substring searches "
                f"for its openers (bar {SEARCH_LIMIT})"
            )
        if plain["stream_chunk_growth"] > CHUNK_GROWTH_LIMIT:
            missed.append(
                f"{name}: a no-call chunk ten times larger costs "
                f"{plain['stream_chunk_growth']:.2f}x as much to stream (bar {CHUNK_GROWTH_LIMIT})"
            )
        print(f"{name:<14}" + "".join(cells))
    return missed


def json_table(results: dict[str, dict[str, Any]], *, growth_too: bool) -> list[str]:
    """Print the json.loads, streaming and growth figures; return the missed bars."""
    missed = []
    print()
    header = f"{'format':<14}{'parse us':>10}{'vs json.loads':>15}{'stream/parse':>14}"
    if growth_too:
        header += (
            f"{'10x calls':>11}{'10x open tags':>15}{'10x nesting':>13}"
            f"{'10x partials':>14}{'(stream)':>10}  worst partial"
        )
    print(header)
    print("-" * len(header))
    for name, r in results.items():
        line = f"{name:<14}{r['parse_us']:>10.1f}{r['vs_json']:>15.2f}{r['stream']:>14.2f}"
        if r["vs_json"] > JSON_LIMIT:
            missed.append(f"{name}: parse is {r['vs_json']:.2f}x json.loads (bar {JSON_LIMIT})")
        if growth_too:
            line += (
                f"{r['g_calls']:>11.1f}{r['g_adv']:>15.1f}{r['g_nested']:>13.1f}"
                f"{r['g_partial']:>14.1f}{r['g_partial_stream']:>10.1f}  {r['worst_unit'][:40]}"
            )
            for key in ("g_calls", "g_adv", "g_nested", "g_partial", "g_partial_stream"):
                if r[key] > LINEAR_LIMIT:
                    missed.append(f"{name}: {key} grew {r[key]:.1f}x for 10x input")
        print(line)
    return missed


if __name__ == "__main__":
    sys.exit(main())
