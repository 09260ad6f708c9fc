"""The hostile stream of wire-format section 19 for the C client's limits test (run by run-tests
when `import quantcodec` works; tests/test.c skips the test, saying so, when the file is missing):
a hello of history 256, a full packet of 20,000 `pose` entities, then 200 deltas that change
nothing, all against that first packet (the only one acknowledged). A client with the default
max_bytes (256 MiB) holds what fits and refuses the rest with kind `limits`.

    python make_limits_stream.py REPO_ROOT OUT.bin

Datagrams as the kit's streams: each as a 4-byte little-endian length and its bytes.
"""
import os
import struct
import sys

import numpy as np
import quantcodec as qc


def main():
    root, out = sys.argv[1], sys.argv[2]
    schema = qc.Schema.load(os.path.join(root, "conformance", "schemas", "pose.json"))
    rng = np.random.default_rng(33)
    n = 20000
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    columns = {
        "position": rng.uniform([-60.0, 0.0, -60.0], [60.0, 30.0, 60.0], (n, 3)),
        "rotation": q,
        "velocity": np.zeros((n, 3)),     # at rest: the full packet stays within 256 fragments
        "yaw": rng.uniform(0.0, 6.28, n),
        "health": rng.integers(0, 256, n),
        "state": rng.integers(0, 3, n),
        "grounded": rng.integers(0, 2, n).astype(bool),
    }
    snap = schema.snapshot(np.arange(1, 2 * n, 2, dtype=np.uint64), columns)
    enc = qc.SnapshotEncoder(schema, history=256, max_datagram=1200)
    datagrams = [enc.hello()]
    datagrams += enc.encode_datagrams(0, snap)
    enc.ack(0)
    for seq in range(1, 201):
        datagrams += enc.encode_datagrams(seq, snap)
    with open(out + ".tmp", "wb") as f:
        for d in datagrams:
            f.write(struct.pack("<I", len(d)) + d)
    os.replace(out + ".tmp", out)
    print(f"{out}: {len(datagrams)} datagrams")


if __name__ == "__main__":
    main()
