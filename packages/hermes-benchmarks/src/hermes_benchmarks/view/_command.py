"""``hermes-bench view OUT [--out FILE] [--serve] [--port N]`` (arguments and serving
shared with ``hermes-envs view``: ``hermes_envs.view``)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from hermes_benchmarks.view._page import PAGE_NAME, render_page
from hermes_benchmarks.view._records import load_run
from hermes_envs.view import parse_view_args, publish

__all__ = ["VIEW_USAGE", "view_main"]

VIEW_USAGE = (
    "usage: hermes-bench view OUT [--out FILE] [--serve] [--port N]\n"
    "  Writes OUT/view.html: the run in OUT (a --env.output_dir) as one self-contained\n"
    "  page (summary, trials to sort and filter, each trial's transcript, verifier output,\n"
    "  timings and artifacts). --out FILE writes it elsewhere (for a read-only OUT);\n"
    "  --serve also serves OUT on http://127.0.0.1:N/ until Ctrl-C (N: --port, default\n"
    "  a free port)."
)


def view_main(args: Sequence[str]) -> int:
    """Run ``hermes-bench view``; the exit status (2 for bad arguments, 1 for a folder
    that is not a run or a page that cannot be written)."""
    parsed = parse_view_args(args, VIEW_USAGE)
    if isinstance(parsed, int):
        return parsed
    folder, out = parsed.given, parsed.out
    if not folder.is_dir():
        print(f"error: {folder} is not a folder: give a run's --env.output_dir", file=sys.stderr)
        return 1
    try:
        data = load_run(folder)
    except OSError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if parsed.serve and out is not None and out.resolve().parent != folder.resolve():
        print("note: --serve serves OUT; the page written with --out is not in it", file=sys.stderr)
    target = out or folder / PAGE_NAME
    return publish(render_page(data), target, serve=parsed.serve, folder=folder, port=parsed.port)
