"""Streams of schemas too large for one compiled reader, made by the Python encoder.

    python support/wide_stream.py OUT_DIR [--schema wide|scalars] [--entities N] [--ticks T]
                                  [--max-datagram B] [--time PASSES]

writes OUT_DIR/SCHEMA.json and OUT_DIR/SCHEMA.bin (length-prefixed datagrams). `wide`: 19 fields
(8 Vectors of 3 Bounded, 3 Quats, 8 Bounded scalars); `scalars`: 40 Bounded scalars. N entities
(200), 30% of them moving a tick, T ticks (90), the acks 6 ticks late (of the packets delivered;
one ack in seven lost), one packet in ten lost, max_datagram B (1200: fragments). With --time, the
median milliseconds of PASSES decodes of the whole stream by the package's SnapshotDecoder (a new
one each pass) are printed as JSON.

test/fastpath.test.mjs runs it when the Python package imports (QC_PYTHON, default python3): the
compiled reader, which reads these schemas' fields in parts (src/fastpath.mjs), and the
interpreted path must decode them alike. bench_wide.mjs times them.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

# The installed package (pip install . from the repository's root), never the source tree.
try:
    from quantcodec import Bounded, Quat, Schema, SnapshotDecoder, SnapshotEncoder, Vector
except ImportError as e:
    raise SystemExit(f"wide_stream.py: {sys.executable} cannot import the quantcodec package ({e}); install it "
                     "(python -m venv .venv && .venv/bin/pip install . from the repository's root) and pass "
                     "--python .venv/bin/python to bench_wide.mjs")


def schema_of(name):
    if name == "scalars":
        return Schema("Scalars", [(f"s{i}", Bounded(-100, 100, 16)) for i in range(40)])
    fields = [(f"v{i}", Vector(*[Bounded(-100, 100, 16)] * 3)) for i in range(8)]
    fields += [(f"q{i}", Quat(9)) for i in range(3)]
    fields += [(f"s{i}", Bounded(-100, 100, 12)) for i in range(8)]
    return Schema("Wide", fields)


def stream(schema, n, ticks, max_datagram):
    rng = np.random.default_rng(19)
    ids = np.arange(1, n + 1, dtype=np.uint64) * 3
    state = {}
    for name, codec in schema.fields:
        if isinstance(codec, Quat):
            state[name] = rng.normal(size=(n, 4))
        else:
            state[name] = rng.uniform(-50, 50, (n, 3) if isinstance(codec, Vector) else n)
    enc = SnapshotEncoder(schema, max_datagram=max_datagram, stream_id=0x19)
    datagrams = [enc.hello()]
    delivered = set()
    for t in range(ticks):
        moving = rng.random(n) < 0.3
        columns = {}
        for name, a in state.items():
            if a.ndim == 2 and a.shape[1] == 4:
                a[moving] += rng.normal(0, 0.05, (int(moving.sum()), 4))
                columns[name] = a / np.linalg.norm(a, axis=1, keepdims=True)
            else:
                a[moving] += rng.normal(0, 0.3, a[moving].shape)
                np.clip(a, -99, 99, out=a)
                columns[name] = a
        if t - 6 in delivered and t % 7 != 3:      # (an ack lost now and then too)
            enc.ack(t - 6)
        packet = enc.encode_datagrams(t, schema.snapshot(ids, columns))
        if t % 10 != 5:
            datagrams += packet
            delivered.add(t)
    return datagrams


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--schema", choices=("wide", "scalars"), default="wide")
    ap.add_argument("--entities", type=int, default=200)
    ap.add_argument("--ticks", type=int, default=90)
    ap.add_argument("--max-datagram", type=int, default=1200)
    ap.add_argument("--time", type=int, default=0, metavar="PASSES")
    a = ap.parse_args()
    schema = schema_of(a.schema)
    datagrams = stream(schema, a.entities, a.ticks, a.max_datagram)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, f"{a.schema}.json"), "w") as f:
        f.write(schema.to_json())
    with open(os.path.join(a.out, f"{a.schema}.bin"), "wb") as f:
        for d in datagrams:
            f.write(len(d).to_bytes(4, "little") + d)
    if a.time:
        times = []
        for _ in range(a.time):
            dec = SnapshotDecoder(schema)
            t0 = time.perf_counter()
            for d in datagrams:
                dec.decode(d)
            times.append((time.perf_counter() - t0) * 1e3)
        print(json.dumps({"ms": sorted(times)[len(times) // 2]}))


if __name__ == "__main__":
    main()
