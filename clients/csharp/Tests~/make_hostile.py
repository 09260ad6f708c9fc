"""Write the hostile limits stream of the C# tests (wire-format section 19) to OUT.bin.

A server that would make a client hold far more than its default bound (256 MiB): a hello of
history 256 (a window of 511 snapshots) and max_datagram 1200, a full packet of 20,000 entities
of the kit's Pose schema (12 slots: 2,080,256 bytes each in the cost model) in fragments, then
200 unchanged deltas, each acked as it is sent. The client must decode only what fits and refuse
the rest with kind ``limits``. OUT.bin holds the datagrams, each as a 4-byte little-endian length
and its bytes (the runner's format). Deterministic apart from the stream id and start time.

    python clients/csharp/Tests~/make_hostile.py conformance/schemas/pose.json OUT.bin [N] [DELTAS]
"""
import json
import struct
import sys

import numpy as np
import quantcodec as qc


def main(argv):
    schema_path, out = argv[1], argv[2]
    n = int(argv[3]) if len(argv) > 3 else 20000
    deltas = int(argv[4]) if len(argv) > 4 else 200
    schema = qc.Schema.from_spec(json.load(open(schema_path)))
    ids = np.arange(1, n + 1, dtype=np.uint64)
    rng = np.random.default_rng(33)
    columns = {
        "position": rng.uniform(-60, 60, (n, 3)) * np.array([1.0, 0.25, 1.0]) + np.array([0.0, 15.0, 0.0]),
        "rotation": np.tile(np.array([0.0, 0.0, 0.0, 1.0]), (n, 1)),
        "velocity": np.zeros((n, 3)),
        "yaw": rng.uniform(0, 6.28, n),
        "health": np.full(n, 100),
        "state": np.zeros(n, dtype=np.int64),
        "grounded": np.ones(n, dtype=bool),
    }
    snap = qc.Snapshot(schema, ids, columns)
    enc = qc.SnapshotEncoder(schema, history=256, max_datagram=1200)
    datagrams = [enc.hello()]
    for seq in range(1 + deltas):
        datagrams.extend(enc.encode_datagrams(seq, snap))
        enc.ack(seq)
    with open(out, "wb") as f:
        for d in datagrams:
            f.write(struct.pack("<I", len(d)))
            f.write(d)


if __name__ == "__main__":
    main(sys.argv)
