"""The package's types, as a user meets them (tests/typing/): the typed user programs run, and when
mypy is installed, `mypy --strict` passes on them and flags every misuse marked in the bad_ files
(tests/typing/check.py; .ci/run runs it too). Also: typing.get_type_hints works on every public
class, and the annotations evaluated at run time hold nothing Python 3.9 cannot evaluate."""

import ast
import importlib.util
import os
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import quantcodec
from quantcodec import interest, interpolation, session

ROOT = Path(__file__).resolve().parent.parent
TYPING = Path(__file__).resolve().parent / "typing"
PKG = ROOT / "quantcodec"
OK = sorted(TYPING.glob("ok_*.py"))


def _env():
    """The subprocesses import the quantcodec this process imported."""
    env = dict(os.environ)
    here = str(Path(quantcodec.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


@pytest.mark.parametrize("program", OK, ids=[p.name for p in OK])
def test_typed_programs_run(program):
    proc = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, env=_env(),
                          cwd=TYPING, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_typing_check():
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (not in the test extra; .ci/run installs it and runs "
                    "tests/typing/check.py)")
    proc = subprocess.run([sys.executable, str(TYPING / "check.py")], capture_output=True, text=True,
                          env=_env(), timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _public_classes():
    mods = [(quantcodec, quantcodec.__all__), (interest, interest.__all__),
            (interpolation, interpolation.__all__), (session, session.__all__ + ["LinkStats"])]
    for mod, names in mods:
        for name in names:
            obj = getattr(mod, name)
            if isinstance(obj, type):
                yield f"{mod.__name__}.{name}", obj


@pytest.mark.parametrize("name,cls", list(_public_classes()), ids=lambda x: x if isinstance(x, str) else "")
def test_get_type_hints(name, cls):
    typing.get_type_hints(cls)


_BUILTIN_GENERICS = {"list", "dict", "tuple", "set", "frozenset", "type"}


def _not_39(node):
    """What in an annotation Python 3.9 cannot evaluate: `X | Y`, `list[int]` and the like."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.BitOr):
            return "X | Y"
        if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name) \
                and sub.value.id in _BUILTIN_GENERICS:
            return f"{sub.value.id}[...]"
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            try:
                found = _not_39(ast.parse(sub.value, mode="eval"))
            except SyntaxError:
                continue
            if found:
                return found
    return None


@pytest.mark.skipif(not (PKG / "__init__.py").is_file(), reason="quantcodec/'s sources are not beside tests/")
def test_runtime_annotations_evaluate_on_39():
    """Class-level annotations (dataclasses, NamedTuples, attributes) are evaluated by
    typing.get_type_hints: on Python 3.9 (requires-python >= 3.9) they must use typing.Optional,
    Union, List, ... (`from __future__ import annotations` keeps function annotations unevaluated,
    and the type checker reads those)."""
    bad = []
    for path in sorted(PKG.glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for cls in [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]:
            for stmt in cls.body:
                if isinstance(stmt, ast.AnnAssign):
                    found = _not_39(stmt.annotation)
                    if found:
                        bad.append(f"{path.name}:{stmt.lineno}: {cls.name}: {found}")
    assert not bad, bad
