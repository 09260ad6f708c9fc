"""The Python side of clients/js/bench.mjs: makes the bench scene's datagram streams (as
bench/bench_snapshot.py makes its ticks: acks 6 ticks late, full history) and times the Python
library's SnapshotDecoder.decode of the same datagrams when asked, so that both sides are measured
in one run, alternately.

    python support/bench_peer.py OUTDIR        (then, on stdin: "K N" -> the mean wall and CPU us of N decodes)
"""
import json
import os
import sys
import time

import numpy as np

# The installed package (pip install . from the repository's root), never the source tree: a
# clean clone's sources have no compiled extensions, and putting them first on sys.path would
# shadow the installed package and fail with an ImportError.
try:
    from quantcodec import SnapshotDecoder, SnapshotEncoder
    from quantcodec.tools.scene import simulate
    from quantcodec.tools.link import default_schema
except ImportError as e:
    sys.exit(f"bench_peer.py: {sys.executable} cannot import the quantcodec package ({e}); install it "
             "(python -m venv .venv && .venv/bin/pip install . from the repository's root) and pass "
             "--python .venv/bin/python to bench.mjs")

TICKS = (280, 150, 60)      # mostly at rest, a pile settling, everything moving
LAG = 6
MAX_DATAGRAM = 65507        # one datagram a packet: the decode itself is timed, not reassembly


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    scene = simulate(1000, 5.0, 60, 0)
    schema = default_schema(velocity=True)
    with open(os.path.join(out, "schema.json"), "w") as f:
        f.write(schema.to_json())
    decoders, last, info = {}, {}, []
    for k in TICKS:
        enc = SnapshotEncoder(schema, max_datagram=MAX_DATAGRAM)
        dec = SnapshotDecoder.from_hello(schema, enc.hello())
        datagrams = [enc.hello()]
        snaps = {}
        for j in range(max(0, k - enc.history + 1), k + 1):
            snaps[j] = schema.snapshot(scene.ids[j], scene.columns(j))
            if j - LAG in snaps:
                enc.ack(j - LAG)
            ds = enc.encode_datagrams(j, snaps[j])
            if enc.last_baseline is None and j > max(0, k - enc.history + 1):
                datagrams.append(enc.hello())
            datagrams.extend(ds)
            if j < k:
                for d in ds:
                    dec.decode(d)
        assert len(ds) == 1 and enc.last_baseline == k - LAG
        view = dec.decode(ds[0])
        assert view == snaps[k]
        changed = float(np.mean(np.any(snaps[k].matrix != snaps[k - LAG].matrix, axis=1)))
        with open(os.path.join(out, f"tick{k}.bin"), "wb") as f:
            for d in datagrams:
                f.write(len(d).to_bytes(4, "little") + d)
        decoders[k], last[k] = dec, ds[0]
        info.append({"tick": k, "changed": changed, "bytes": len(ds[0]), "file": f"tick{k}.bin",
                     "ids": [int(i) for i in view.ids[:3]], "seq": view.seq})
    print(json.dumps(info), flush=True)
    for line in sys.stdin:
        k, n = map(int, line.split())
        dec, d = decoders[k], last[k]
        decode = dec.decode
        c0, t0 = time.process_time(), time.perf_counter()
        for _ in range(n):
            decode(d)
        t1, c1 = time.perf_counter(), time.process_time()
        print((t1 - t0) / n * 1e6, (c1 - c0) / n * 1e6, flush=True)


if __name__ == "__main__":
    main()
