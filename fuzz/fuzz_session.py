"""atheris harness: ``fuzzlib.session_receive`` (layout and invariants in its docstring)."""

from _harness import main

if __name__ == "__main__":
    main("session_receive")
