#!/usr/bin/env bash
# Run the atheris fuzz targets, each bounded in inputs and in time.
#
#   fuzz/run.sh [target ...]                  # bitreader schema snapshot session (default: all four)
#   RUNS=1000000 MAX_TIME=1800 fuzz/run.sh schema
#   fuzz/run.sh --build-native /tmp/qc-native # copy the tree there and build it with clang,
#                                             # -fsanitize=fuzzer-no-link,address
#   NATIVE=/tmp/qc-native fuzz/run.sh         # fuzz that build: libFuzzer also sees the
#                                             # compiled modules' edges, ASan checks every access
#
# Needs `pip install atheris` (the `fuzz` extra, Linux x86-64, CPython 3.11-3.13). New inputs
# go to fuzz/work/<target>/ (the seed corpus fuzz/corpus/<target>/ is only read); crashes to
# fuzz/artifacts/. A crash file replays with `python fuzz/fuzz_<target>.py <file>`; add it
# to tests/test_fuzz_regressions.py.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"

if [[ "${1:-}" == "--build-native" ]]; then
    dest="${2:?usage: fuzz/run.sh --build-native DIR}"
    # (setup.py runs in this Python, not in pip's isolated build: the build's own requirements,
    # pyproject.toml's [build-system], must be here; an older setuptools refuses its license field)
    python -c 'import sys, Cython, setuptools
v = lambda s: tuple(int(p) for p in s.split(".")[:2] if p.isdigit())
sys.exit(v(Cython.__version__) < (3, 1) or v(setuptools.__version__) < (77,))' 2>/dev/null || {
        echo "fuzz/run.sh --build-native: needs the build's requirements in $(command -v python):" \
             "pip install 'setuptools>=77' 'Cython>=3.1'" >&2
        exit 2
    }
    mkdir -p "$dest"
    (cd "$root" && tar --exclude=./build --exclude=./.git --exclude='./.venv*' --exclude=./fuzz/work \
        --exclude='./quantcodec/*.so' --exclude='./quantcodec/*.c' -cf - .) | tar -xf - -C "$dest"
    cd "$dest"
    CC=clang CXX=clang++ LDSHARED="clang -shared" CFLAGS="-fsanitize=fuzzer-no-link" QUANTCODEC_ASAN=1 \
        python setup.py build_ext --inplace -q
    echo "built $dest; now: NATIVE=$dest $0"
    exit 0
fi

RUNS="${RUNS:-1000000}"
MAX_TIME="${MAX_TIME:-3600}"
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=(bitreader schema snapshot session)

mkdir -p "$here/artifacts"
if [[ -n "${NATIVE:-}" ]]; then
    export PYTHONPATH="$NATIVE${PYTHONPATH:+:$PYTHONPATH}"
    export LD_PRELOAD="$(python -c 'import atheris, os; print(os.path.join(atheris.path(), "asan_with_fuzzer.so"))')"
    # numpy raises MemoryError for a refused huge allocation; ASan must let malloc return NULL
    export ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:${ASAN_OPTIONS:-}"
fi

for t in "${targets[@]}"; do
    mkdir -p "$here/work/$t"
    echo "== $t: -runs=$RUNS -max_total_time=$MAX_TIME ${NATIVE:+(native build $NATIVE)}"
    python "$here/fuzz_$t.py" -runs="$RUNS" -max_total_time="$MAX_TIME" -print_final_stats=1 \
        -artifact_prefix="$here/artifacts/$t-" "$here/work/$t" "$here/corpus/$t"
done
