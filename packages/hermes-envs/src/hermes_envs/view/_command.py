"""``hermes-envs view OUT [--out FILE] [--serve] [--port N]``, and the argument and
serving steps both viewers' commands share (``hermes-bench view`` too)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from hermes_envs.view._load import ViewData, find_output, load_output
from hermes_envs.view._page import fill_template, page_template, write_page_text
from hermes_envs.view._serve import RunServer

__all__ = ["VIEW_USAGE", "ViewArgs", "parse_view_args", "publish", "render_page", "view_main"]

VIEW_USAGE = (
    "usage: hermes-envs view OUT [--out FILE] [--serve] [--port N]\n"
    "  Writes one self-contained page of a process or evaluate output: summary, rollouts\n"
    "  to sort and filter, each rollout's transcript and (process) its tokens with the\n"
    "  trained ones marked. OUT: the group file of process (--env.data_path_to_save_groups,\n"
    "  page: <stem>.view.html beside it) or the folder of evaluate\n"
    "  (--env.data_dir_to_save_evals, page: view.html in it). --out FILE writes it\n"
    "  elsewhere; --serve also serves the page's folder on http://127.0.0.1:N/ until\n"
    "  Ctrl-C (N: --port, default a free port)."
)


@dataclass(frozen=True, slots=True)
class ViewArgs:
    """A view command's arguments: what to show, ``--out``, ``--serve``, ``--port``."""

    given: Path
    out: Path | None
    serve: bool
    port: int


def _refuse(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def parse_view_args(args: Sequence[str], usage: str) -> ViewArgs | int:
    """The arguments ``OUT [--out FILE] [--serve] [--port N]``, or the exit status after
    printing ``usage`` (0 for ``--help``, 2 for none) or a one-line error (2)."""
    rest = list(args)
    if not rest or rest[0] in ("-h", "--help"):
        print(usage, file=sys.stdout if rest else sys.stderr)
        return 0 if rest else 2
    given = Path(rest.pop(0))
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
    return ViewArgs(given, out, serve, port)


def publish(page: str, target: Path, *, serve: bool, folder: Path, port: int) -> int:
    """Write ``page`` to ``target`` and print its URL; with ``serve``, then serve
    ``folder`` on 127.0.0.1 (``port``; 0: a free one) until Ctrl-C. The exit status: 1
    when the page cannot be written or the port not bound (said in one line)."""
    try:
        write_page_text(page, target)
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


def render_page(data: ViewData) -> str:
    """The HTML page showing ``data`` (from :func:`~hermes_envs.view._load.load_output`):
    self-contained, nothing fetched (``hermes_envs.view._page.fill_template``)."""
    page = resources.files("hermes_envs.view").joinpath("rollouts.html").read_text("utf-8")
    return fill_template(page_template(page, "hermes-envs"), data, str(data.get("run", "run")))


def view_main(args: Sequence[str]) -> int:
    """Run ``hermes-envs view``; the exit status (2 for bad arguments, 1 for an output
    that cannot be read or a page that cannot be written)."""
    parsed = parse_view_args(args, VIEW_USAGE)
    if isinstance(parsed, int):
        return parsed
    try:
        output = find_output(parsed.given)
        data = load_output(output)
    except OSError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    target = parsed.out or output.page
    return publish(
        render_page(data),
        target,
        serve=parsed.serve,
        folder=target.resolve().parent,
        port=parsed.port,
    )
