"""atheris harness: ``fuzzlib.snapshot_decode`` (layout and invariants in its docstring)."""

from _harness import main

if __name__ == "__main__":
    main("snapshot_decode")
