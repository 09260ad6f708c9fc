"""atheris harness: ``fuzzlib.schema_decode`` (layout and invariants in its docstring)."""

from _harness import main

if __name__ == "__main__":
    main("schema_decode")
