"""Shared atheris entry point: ``python fuzz/fuzz_<target>.py [libFuzzer flags] CORPUS_DIR...``.

quantcodec's Python modules (schema, snapshot) and the target functions are instrumented for
atheris' Python coverage. The compiled modules report native coverage to libFuzzer only when
they were built with ``-fsanitize=fuzzer-no-link`` (see ``fuzz/README.md`` and
``fuzz/run.sh --native``); otherwise libFuzzer sees the Python-level edges alone.
"""

import os
import sys

import atheris

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# the source tree, after PYTHONPATH and site-packages: an installed or instrumented build wins
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

with atheris.instrument_imports(include=["quantcodec", "fuzzlib"]):
    import quantcodec  # noqa: F401
    import fuzzlib


def main(target_name):
    target = getattr(fuzzlib, target_name)
    if target_name == "snapshot_decode":
        fuzzlib.world()          # build the scene before the first input, not inside it
    elif target_name == "schema_decode":
        fuzzlib.schemas()

    def test_one_input(data):
        target(data)

    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
