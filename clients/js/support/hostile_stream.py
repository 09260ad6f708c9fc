"""The hostile stream of docs/wire-format.md section 19, made by the Python encoder: a hello of
history 256, a full packet of 20,000 entities of the kit's pose schema, then 200 deltas where
nothing changed, each against the full packet (a server that ignores the client's acks), all as
the encoder sends them (max_datagram 1200: the full packet in fragments).

    python support/hostile_stream.py OUT_DIR        # writes OUT_DIR/pose.json, OUT_DIR/hostile.bin

test/limits.test.mjs runs it when the Python package imports (QC_PYTHON, default python3) and
checks that the client refuses (kind limits) exactly the snapshots past its default bound.
"""
import os
import sys

import numpy as np

from quantcodec import SnapshotEncoder
from quantcodec import conformance as cf


def main(out):
    schema = cf.kit_schemas()["pose"]
    rng = np.random.default_rng(33)
    world = cf._World(schema, rng, n=20000, first_id=0, id_step=1)
    snap = world.snapshot()
    enc = SnapshotEncoder(schema, history=256, max_datagram=1200, stream_id=0x5EED)
    datagrams = [enc.hello()] + list(enc.encode_datagrams(0, snap))
    enc.ack(0)
    for seq in range(1, 201):
        datagrams += list(enc.encode_datagrams(seq, snap))
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "pose.json"), "w") as f:
        f.write(schema.to_json())
    cf.write_datagrams(os.path.join(out, "hostile.bin"), datagrams)


if __name__ == "__main__":
    main(sys.argv[1])
