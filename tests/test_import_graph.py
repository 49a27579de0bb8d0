"""The import graph of the workspace: no package has an import cycle (issue 14: "The
import graph has no cycle"), checked for hermes_parsers, hermes_loop, hermes_sandbox,
hermes_envs and hermes_benchmarks; no package imports a name another package has not
declared public (issue 25, see ``declared_surface``); hermes-loop's model server is a
separate subpackage the loop never imports.

Every ``import`` and ``from ... import`` in every module of the package counts, wherever
it stands: at the top, inside a function (the usual way a cycle is hidden), or under
``if TYPE_CHECKING``. ``from package import name`` is an edge to the submodule when
``name`` is one, else to the package's ``__init__``. The implicit import of a module's
parent packages is not an edge (a package's ``__init__`` re-exporting its submodules is
the normal layout, not a cycle).
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

#: Every package of the workspace, by import name.
PACKAGES = ("hermes_parsers", "hermes_loop", "hermes_sandbox", "hermes_envs", "hermes_benchmarks")


def module_files(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> source file, for every ``.py`` under ``root``."""
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join([package, *parts])] = path
    return found


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute name ``from <node.module>`` refers to inside ``module``."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base.pop()
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports_of(module: str, path: Path, modules: set[str]) -> set[str]:
    """The package's modules that ``module`` imports anywhere in its source."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    wanted: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            wanted.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, is_package, node)
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                wanted.add(submodule if submodule in modules else source)
    return {name for name in wanted if name in modules and name != module}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path ``[a, b, ..., a]``, or ``None``."""
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        path: list[str] = []
        on_path: set[str] = set()
        stack: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        path.append(start)
        on_path.add(start)
        while stack:
            node, pending = stack[-1]
            if not pending:
                stack.pop()
                path.pop()
                on_path.discard(node)
                done.add(node)
                continue
            nxt = pending.pop(0)
            if nxt in on_path:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in done:
                stack.append((nxt, sorted(graph[nxt])))
                path.append(nxt)
                on_path.add(nxt)
    return None


def package_files(package: str) -> dict[str, Path]:
    """Dotted module name -> source file, for every module of the installed ``package``."""
    spec = importlib.util.find_spec(package)
    assert spec is not None, f"{package} is not installed"
    assert spec.origin is not None, f"{package} has no source file"
    return module_files(Path(spec.origin).parent, package)


def package_graph(package: str) -> dict[str, set[str]]:
    """The import graph of ``package``'s modules, read from its source (nothing imported)."""
    files = package_files(package)
    names = set(files)
    return {name: imports_of(name, path, names) for name, path in files.items()}


@pytest.mark.parametrize("package", PACKAGES)
def test_the_package_import_graph_has_no_cycle(package: str) -> None:
    graph = package_graph(package)
    assert len(graph) > 5  # the walk found the package's modules
    cycle = find_cycle(graph)
    assert cycle is None, f"import cycle in {package}: " + " -> ".join(cycle or [])


def test_function_local_imports_count(tmp_path: Path) -> None:
    """The walk sees an import hidden in a function and a relative one: a two-module
    cycle made only of such imports is found."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "a.py").write_text("def f():\n    from pkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import f\n"
    )
    files = module_files(pkg, "pkg")
    graph = {name: imports_of(name, path, set(files)) for name, path in files.items()}
    assert graph["pkg.sub.a"] == {"pkg.sub.b"}
    assert graph["pkg.sub.b"] == {"pkg.sub.a"}
    assert find_cycle(graph) == ["pkg.sub.a", "pkg.sub.b", "pkg.sub.a"]


def test_an_acyclic_graph_passes() -> None:
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def literal_all(path: Path) -> list[str] | None:
    """The ``__all__`` a module's source assigns (a literal list or tuple of strings), or
    ``None`` when it assigns none.

    Raises:
        ValueError: if ``__all__`` is assigned something other than a literal.
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            assert node.value is not None
            try:
                names = ast.literal_eval(node.value)
            except ValueError:
                names = None
            if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
                raise ValueError(f"{path}: __all__ is not a literal list of strings")
            return list(names)
    return None


def is_public(module: str) -> bool:
    """No part of the dotted name starts with an underscore (httpx's convention)."""
    return not any(part.startswith("_") for part in module.split("."))


def declared_surface(files: dict[str, Path]) -> dict[str, set[str]]:
    """What other packages may import, as module -> names: the package root's
    ``__all__`` and that of every public subpackage (a folder whose dotted name has no
    part starting with ``_``, e.g. ``hermes_loop.server``, ``hermes_sandbox.tools``).

    A plain module's ``__all__`` (``hermes_envs.launcher``,
    ``hermes_sandbox.backends.option_check``) says what its own package's modules use; it
    is not a promise to other packages. The surface is what the packages' exported-members
    tests pin, so a name another package imports is a pinned name. A public subpackage is
    also importable as a module.
    """
    surface: dict[str, set[str]] = {}
    for module, path in files.items():
        if path.name == "__init__.py" and is_public(module):
            surface[module] = set(literal_all(path) or ())
    return surface


def outside_the_surface(files: dict[str, Path]) -> list[str]:
    """Every import, in every module of ``files``, of a module or name of another package
    that is not in that package's ``declared_surface``; one line each (an import written
    twice in a module counted once)."""
    surface = declared_surface(files)
    found: list[str] = []
    for module, path in sorted(files.items()):
        package = module.split(".")[0]
        tree = ast.parse(path.read_text(), filename=str(path))
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    other = alias.name.split(".")[0]
                    if other != package and alias.name in files and alias.name not in surface:
                        found.append(f"{module} imports module {alias.name}")
            elif isinstance(node, ast.ImportFrom):
                source = _absolute(module, is_package, node)
                if source.split(".")[0] == package or source not in files:
                    continue
                for alias in node.names:
                    if f"{source}.{alias.name}" in surface:
                        continue
                    if alias.name not in surface.get(source, ()):
                        found.append(f"{module} imports {source}.{alias.name}")
    return list(dict.fromkeys(found))


def workspace_files() -> dict[str, Path]:
    """Dotted module name -> source file, for every module of every package."""
    files: dict[str, Path] = {}
    for package in PACKAGES:
        files.update(package_files(package))
    return files


def test_packages_import_only_what_other_packages_declare_public() -> None:
    files = workspace_files()
    surface = declared_surface(files)
    assert set(PACKAGES) <= set(surface)  # every root declares __all__
    # The examples are code users copy: they keep to the declared surface too.
    examples = Path(__file__).resolve().parents[1] / "examples"
    example_files = {f"examples.{path.stem}": path for path in sorted(examples.glob("*.py"))}
    assert example_files
    offenders = outside_the_surface({**files, **example_files})
    assert offenders == [], (
        "imports of names another package has not declared public (promote the name to "
        "that package's or public subpackage's __all__, or stop using it):\n" + "\n".join(offenders)
    )


def test_an_import_outside_the_surface_is_found(tmp_path: Path) -> None:
    """A name in a plain module's ``__all__``, a module imported whole, a name missing
    from a subpackage's ``__all__`` and a private subpackage are outside; the root's and a
    public subpackage's names, and the subpackage itself, are inside."""
    lib = tmp_path / "lib"
    (lib / "sub").mkdir(parents=True)
    (lib / "_hidden").mkdir()
    (lib / "__init__.py").write_text('__all__ = ["top"]\ntop = 1\n')
    (lib / "plain.py").write_text('__all__ = ["helper"]\nhelper = 1\n')
    (lib / "sub" / "__init__.py").write_text('__all__ = ["shown"]\nshown = hidden = 1\n')
    (lib / "_hidden" / "__init__.py").write_text('__all__ = ["x"]\nx = 1\n')
    app = tmp_path / "app"
    app.mkdir()
    (app / "__init__.py").write_text(
        "from lib import top\nfrom lib import sub\nfrom lib.sub import shown\n"
        "import lib.sub\n"
        "def f():\n    from lib.plain import helper\n    import lib.plain\n"
        "    from lib.sub import hidden\n    from lib._hidden import x\n"
    )
    files = {**module_files(lib, "lib"), **module_files(app, "app")}
    assert outside_the_surface(files) == [
        "app imports lib.plain.helper",
        "app imports module lib.plain",
        "app imports lib.sub.hidden",
        "app imports lib._hidden.x",
    ]


def test_a_computed_all_is_refused(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("__all__ = sorted(['b', 'a'])\n")
    with pytest.raises(ValueError, match="not a literal"):
        literal_all(module)


def loop_imports(graph: dict[str, set[str]], part: str) -> dict[str, set[str]]:
    """For each hermes_loop module inside ``hermes_loop.<part>``: the hermes_loop modules
    outside it that it imports."""
    inside = f"hermes_loop.{part}"
    return {
        module: {name for name in wanted if not name.startswith(inside)}
        for module, wanted in graph.items()
        if module == inside or module.startswith(inside + ".")
    }


def test_the_loop_never_imports_the_model_server() -> None:
    graph = package_graph("hermes_loop")
    server = {name for name in graph if name.startswith("hermes_loop.server")}
    assert len(server) > 5
    offenders = sorted(
        f"{module} imports {sorted(wanted & server)}"
        for module, wanted in graph.items()
        if module not in server and wanted & server
    )
    assert offenders == []


def test_the_server_and_the_templates_use_only_the_errors_and_the_templates() -> None:
    """The model server (half the package) and the chat templates and tokenizers are
    separate parts: the server builds on the templates and the errors only, the templates
    on the errors only (either may use the lazy-export helper)."""
    graph = package_graph("hermes_loop")
    allowed = {"hermes_loop", "hermes_loop._errors", "hermes_loop._lazy"}
    templates = loop_imports(graph, "templates")
    assert len(templates) > 5
    for module, wanted in templates.items():
        assert wanted <= allowed, f"{module} imports {sorted(wanted - allowed)}"
    for module, wanted in loop_imports(graph, "server").items():
        outside = {name for name in wanted if not name.startswith("hermes_loop.templates")}
        assert outside <= allowed, f"{module} imports {sorted(outside - allowed)}"
