"""The package's import graph has no circle (docs/internals.md: calls go down only), and no test
module imports another (shared helpers live in tests/helpers.py, conftest.py, refdecoder.py, ...).

Every import counts, at module level or inside a function (a deferred import is still a dependency,
only one that fails later), in the Python modules and the Cython ones (`import`, `from .. import`,
and `cimport`, which imports the other module when this one loads). Imports under
`if TYPE_CHECKING:` alone do not count: the interpreter never runs them, they only name types for
the type checker (snapshot.py's signatures take a Schema, whose module imports snapshot)."""

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "quantcodec"
TESTS = Path(__file__).resolve().parent
# The graph is read from the sources (.pyx included): against an installed wheel, run from a copy of
# tests/ (tools/check_wheels.sh), there are none, and an empty graph would pass vacuously.
needs_sources = pytest.mark.skipif(not (PKG / "__init__.py").is_file(),
                                   reason="quantcodec/'s sources are not beside tests/ (a wheel's test run)")

_PYX_IMPORT = re.compile(r"^\s*(?:from\s+(\.*[\w.]*)\s+c?import\s+([\w, ()*]+)|c?import\s+([\w.]+))", re.M)


def _module_name(path):
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module, level, name, package):
    """The absolute module name an import refers to."""
    if level:
        base = package.split(".")
        base = base[:len(base) - (level - 1)] if level > 1 else base
        return ".".join(base + ([name] if name else []))
    return name


def _imports(path, modules):
    """The quantcodec modules that the module at `path` imports, anywhere in it."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()

    def add(target, names=()):
        # `from pkg import mod` imports the submodule pkg.mod when there is one (and the package
        # pkg, as every module of pkg does: only a name that is not a submodule needs pkg itself)
        subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in modules]
        found.update(subs)
        if target in modules and len(subs) < max(1, len(names)):
            found.add(target)

    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        tree = ast.parse(text)
        typing_only = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and (
                    (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
                    or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")):
                for stmt in node.body:
                    typing_only.update(id(n) for n in ast.walk(stmt))
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                for a in node.names:
                    add(a.name)
            elif isinstance(node, ast.ImportFrom):
                add(_resolve(node.module or "", node.level, node.module or "", package) if node.level
                    else node.module, [a.name for a in node.names])
    else:                                   # .pyx / .pxd: no Python parser, the import lines
        text = re.sub(r'"""[\s\S]*?"""', "", text)
        for m in _PYX_IMPORT.finditer(text):
            if m.group(3):
                add(m.group(3))
                continue
            mod = m.group(1)
            level = len(mod) - len(mod.lstrip("."))
            mod = mod.lstrip(".")
            names = [n.strip(" ()") for n in m.group(2).split(",")]
            add(_resolve(mod, level, mod, package) if level else mod, names)
    found.discard(name)
    return found


def _graph():
    files = [p for p in PKG.rglob("*") if p.suffix in (".py", ".pyx") and "__pycache__" not in p.parts]
    modules = {_module_name(p) for p in files}
    graph = {_module_name(p): _imports(p, modules) for p in files}
    # a .pxd is its module's C interface: its cimports are the module's too
    for p in PKG.glob("*.pxd"):
        if _module_name(p) in graph:
            graph[_module_name(p)] |= _imports(p, modules)
    return graph


def _cycle(graph):
    """One import circle as a list of modules, or None."""
    state, stack = {}, []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state:
                c = visit(n)
                if c:
                    return c
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            c = visit(m)
            if c:
                return c
    return None


@needs_sources
def test_the_import_graph_sees_the_known_edges():
    graph = _graph()
    assert "quantcodec._arrays" in graph["quantcodec._codecs"]           # a cimport
    assert "quantcodec._codecs" in graph["quantcodec._plan"]
    assert "quantcodec.snapshot" in graph["quantcodec.schema"]
    assert "quantcodec.tools.progress" in graph["quantcodec.tools.demo"]  # a deferred import
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


@needs_sources
def test_no_import_circle_in_the_package():
    graph = _graph()
    # the package's __init__ imports its modules; a module importing `quantcodec` itself (the tools,
    # for `qc.Schema`) sits above it, which is no circle unless __init__ imports that module back
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def test_no_test_module_imports_another():
    tests = {p.stem for p in TESTS.glob("test_*.py")}
    bad = []
    for p in sorted(TESTS.glob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            bad += [f"{p.name} imports {n}" for n in names if n.split(".")[0] in tests]
        bad += [f"{p.name} imports {m} in a child process" for m in
                re.findall(r"import (test_\w+)", p.read_text(encoding="utf-8")) if m in tests and p.stem != "test_imports"]
    assert not bad, bad


def test_loading_repository_scripts_leaves_sys_path_alone():
    """tools/search.py and the bench scripts the tests load may extend sys.path for their own
    imports; the loaders put it back, or a checkout root left on it shadows the installed package
    in every process spawned later (a doc example's ProcessPool failed so in a clean clone)."""
    import benchscripts
    from helpers import repo_tool

    before = list(sys.path)
    repo_tool("search")
    benchscripts.load("context_study")
    assert sys.path == before
