#!/bin/sh
# Build the library, the runner and the tests into build~/ (only when a source changed).
# Usage: build.sh  (prints nothing on success; exit 1 and the compiler's output on failure)
set -e
here=$(cd "$(dirname "$0")" && pwd)
out="$here/build~"
mkdir -p "$out"
MCS="mcs -langversion:7 -warnaserror -optimize+ -r:System.Numerics.dll -nologo"
stale() {   # stale TARGET SOURCES...: whether TARGET is missing or older than a source
    t=$1; shift
    [ -f "$t" ] || return 0
    for s in "$@"; do [ "$s" -nt "$t" ] && return 0; done
    return 1
}
lock="$out/.lock"
exec 9>"$lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi
# The library is every .cs file under Runtime/ that Unity compiles into the QuantCodec assembly
# (Runtime/QuantCodec.asmdef): subfolders included, except hidden ones and those ending in "~",
# which Unity skips. runtime-sources prints them, one a line (a path may hold spaces).
set -f
old_ifs=$IFS
IFS='
'
# shellcheck disable=SC2046
set -- $("$here/runtime-sources")
IFS=$old_ifs
set +f
[ $# -gt 0 ] || { echo "build.sh: no .cs file under Runtime/" >&2; exit 1; }
# (rebuilt too when the list changed: a file removed or renamed)
list=$(printf '%s\n' "$@")
if stale "$out/QuantCodec.dll" "$@" "$here/runtime-sources" \
        || [ "$list" != "$(cat "$out/QuantCodec.sources" 2>/dev/null)" ]; then
    $MCS -target:library -out:"$out/QuantCodec.dll.tmp" "$@"
    mv "$out/QuantCodec.dll.tmp" "$out/QuantCodec.dll"
    printf '%s\n' "$list" > "$out/QuantCodec.sources"
fi
if stale "$out/qc-decode.exe" "$out/QuantCodec.dll" "$here"/Tools~/QcDecode.cs; then
    $MCS -r:"$out/QuantCodec.dll" -out:"$out/qc-decode.exe.tmp" "$here"/Tools~/QcDecode.cs
    mv "$out/qc-decode.exe.tmp" "$out/qc-decode.exe"
fi
