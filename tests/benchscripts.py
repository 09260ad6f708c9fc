"""Load a script of bench/ by path, for the tests that run the benchmarks' code.

bench/ is not a package on sys.path when pytest runs against the installed wheel, and putting
the checkout root first would shadow the installed package: the file is loaded by its path."""

import importlib.util
import pathlib
import sys

BENCH = pathlib.Path(__file__).resolve().parents[1] / "bench"


def load(name):
    """bench/<name>.py as the module ``quantcodec_bench_<name>`` (registered in sys.modules)."""
    mod_name = f"quantcodec_bench_{name}"
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = mod
    path = list(sys.path)
    try:
        spec.loader.exec_module(mod)
    finally:
        # a script may extend sys.path for its imports: never for the rest of the session (a
        # checkout root on it would shadow the installed package in spawned processes)
        sys.path[:] = path
    return mod
