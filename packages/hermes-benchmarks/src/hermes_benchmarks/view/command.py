"""``hermes-bench view OUT [--out FILE] [--serve] [--port N]``."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from hermes_benchmarks.view.page import PAGE_NAME, write_page
from hermes_benchmarks.view.records import load_run
from hermes_benchmarks.view.serve import RunServer

__all__ = ["VIEW_USAGE", "view_main"]

VIEW_USAGE = (
    "usage: hermes-bench view OUT [--out FILE] [--serve] [--port N]\n"
    "  Writes OUT/view.html: the run in OUT (a --env.output_dir) as one self-contained\n"
    "  page (summary, trials to sort and filter, each trial's transcript, verifier output,\n"
    "  timings and artifacts). --out FILE writes it elsewhere (for a read-only OUT);\n"
    "  --serve also serves OUT on http://127.0.0.1:N/ until Ctrl-C (N: --port, default\n"
    "  a free port)."
)


def _refuse(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def view_main(args: Sequence[str]) -> int:
    """Run ``hermes-bench view``; the exit status (2 for bad arguments, 1 for a folder
    that is not a run or a page that cannot be written)."""
    rest = list(args)
    if not rest or rest[0] in ("-h", "--help"):
        print(VIEW_USAGE, file=sys.stdout if rest else sys.stderr)
        return 0 if rest else 2
    folder = Path(rest.pop(0))
    out: Path | None = None
    serve = False
    port = 0
    while rest:
        option = rest.pop(0)
        if option == "--serve":
            serve = True
        elif option in ("--out", "--port"):
            if not rest or rest[0].startswith("--"):
                return _refuse(f"{option} needs a value")
            value = rest.pop(0)
            if option == "--out":
                out = Path(value)
            elif not value.isdigit() or int(value) > 65535:
                return _refuse(f"--port: {value!r} is not a port number (0-65535)")
            else:
                port = int(value)
        else:
            return _refuse(f"unknown option {option!r}; options are --out FILE, --serve, --port N")
    if not folder.is_dir():
        print(f"error: {folder} is not a folder: give a run's --env.output_dir", file=sys.stderr)
        return 1
    try:
        data = load_run(folder)
    except OSError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    target = out or folder / PAGE_NAME
    try:
        write_page(data, target)
    except OSError as error:
        print(
            f"error: cannot write {target} ({error.strerror or error}); "
            "pass --out FILE to write the page elsewhere",
            file=sys.stderr,
        )
        return 1
    print(f"page: {target.resolve().as_uri()}")
    if not serve:
        return 0
    if out is not None and out.resolve().parent != folder.resolve():
        print("note: --serve serves OUT; the page written with --out is not in it", file=sys.stderr)
    try:
        server = RunServer(folder, port=port)
    except OSError as error:
        print(f"error: cannot serve on port {port} ({error.strerror or error})", file=sys.stderr)
        return 1
    with server:
        print(f"serving {folder} at {server.url}{target.name} (Ctrl-C stops)", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            print("stopped", file=sys.stderr)
    return 0
