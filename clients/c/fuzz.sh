#!/bin/sh
# Builds fuzz_decode.c with libFuzzer (clang, Debian's libclang-rt-14-dev) into build/, makes a
# seed corpus from the conformance kit's streams (each stream's datagrams, a window at a time,
# raw and with the packets' checks stripped so the harness reseals mutated packets, each under a
# mode: unkeyed or keyed checks, the decoder or the session client with its replies, max_bytes),
# and runs it: ./fuzz.sh [RUNS] (default 1000000). Not part of run-tests.
set -e
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
runs=${1:-1000000}
mkdir -p "$here/build/corpus2"
clang -g -O2 -std=c99 -ffp-contract=off -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -o "$here/build/fuzz_decode" "$here/fuzz_decode.c" -lm
python3 - "$root" "$here/build/corpus2" <<'PY'
import os, struct, sys, zlib
root, out = sys.argv[1], sys.argv[2]
def datagrams(path):
    b = open(path, "rb").read(); p = 0; out = []
    while p + 4 <= len(b):
        n = struct.unpack_from("<I", b, p)[0]; p += 4; out.append(b[p:p + n]); p += n
    return out
k = 0
# the mode byte (fuzz_decode.c): bit 0 keyed, bit 1 the session client, bits 2-3 max_bytes
modes = [0, 1, 2, 3, 2 | 4, 3 | 8]
for name in sorted(os.listdir(os.path.join(root, "conformance", "streams"))):
    if not name.endswith(".bin") or name.startswith(("all_kinds", "one_bit")):
        continue            # (the target's schema is pose)
    ds = datagrams(os.path.join(root, "conformance", "streams", name))
    keyed = name.startswith("keyed")          # (sealed with the kit's key, the harness's)
    T = 8 if keyed else 4
    hellos = [d for d in ds if d[:4] == b"QCHL"]
    for start in range(0, len(ds), 6):
        for how in (0, 1):
            mode = modes[k % len(modes)] | (1 if keyed else 0)
            rec = bytes([mode])
            if hellos and how == 1:
                # the hello's body, sealed by the harness with the mode's hello check
                rec += struct.pack("<HB", len(hellos[0]) - T, 3) + hellos[0][:-T]
            for d in ds[start:start + 8]:
                if how == 1 and d[:4] != b"QCHL" and len(d) > T:
                    rec += struct.pack("<HB", len(d) - T, 1) + d[:-T]
                else:
                    rec += struct.pack("<HB", len(d), 0) + d
            open(os.path.join(out, "seed%04d" % k), "wb").write(rec); k += 1
# the keepalive stream whole, through the session client (mode 2): its junk runs past the 31
# calls of qc_client_reply without a reply due, so the keep-alives' oracle is reached from the start
ka = os.path.join(root, "conformance", "streams", "keepalive.bin")
if os.path.exists(ka):
    rec = bytes([2]) + b"".join(struct.pack("<HB", len(d), 0) + d for d in datagrams(ka))
    open(os.path.join(out, "seed%04d" % k), "wb").write(rec); k += 1
print(f"{k} seed inputs")
PY
cd "$here/build"
QC_FUZZ_SCHEMA="$root/conformance/schemas/pose.json" ./fuzz_decode corpus2 -runs="$runs" -max_len=8192 -rss_limit_mb=2048 -print_final_stats=1
