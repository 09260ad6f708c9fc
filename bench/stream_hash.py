"""SHA-256 of every packet of the bench scene's streams: a refactoring of the coders must print the
same digests (the golden files and the conformance kit pin the format on small cases; this pins
it on the whole bench run, lossy acks and entity churn included).

Streams: the scene (300 bodies, 10 s at 60 Hz, seed 0) in the scene schema (NearlyZero velocity)
and in Gaffer's payload (the rest bit), acks 6 ticks late; then the same with 10% of the packets
and acks lost, and with entity churn (bodies removed and added). Each packet is decoded when it
arrives (the client acks its latest) and the decoded snapshots are hashed too.

    python bench/stream_hash.py [--bodies 300] [--seconds 10]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import sys

here = os.path.dirname(os.path.abspath(__file__))
try:
    import quantcodec  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.dirname(here))

from quantcodec import DecodeError, SnapshotDecoder, SnapshotEncoder  # noqa: E402
from quantcodec.tools.link import default_schema  # noqa: E402
from quantcodec.tools.scene import simulate  # noqa: E402


def stream(scene, schema, lag, loss, seed=1):
    """(digest of the packets, digest of the decoded snapshots, packets, bytes)."""
    rng = random.Random(seed)
    enc = SnapshotEncoder(schema, history=64, predict=True, stream_id=0x5EED)
    dec = SnapshotDecoder(schema, history=64)
    hp, hd = hashlib.sha256(), hashlib.sha256()
    acks = []       # (tick it reaches the server, seq)
    npk = nbytes = 0
    names = set(schema.names)
    for k in range(scene.positions.shape[0]):
        cols = {"position": scene.positions[k], "rotation": scene.orientations[k],
                "velocity": scene.velocities[k], "rest": scene.at_rest[k]}
        snap = schema.snapshot(scene.ids[k], {n: v for n, v in cols.items() if n in names})
        for t, seq in [a for a in acks if a[0] <= k]:
            enc.ack(seq)
        acks = [a for a in acks if a[0] > k]
        seq = k & 0xFFFF
        packet = enc.encode(seq, snap)
        hello = enc.hello() if enc.last_baseline is None else None
        hp.update(len(packet).to_bytes(4, "little") + packet)
        npk += 1
        nbytes += len(packet)
        if hello is not None:
            dec.decode(hello)
        if rng.random() < loss:
            continue
        try:
            view = dec.decode(packet)
        except DecodeError as e:
            hd.update(b"E" + str(e).encode())
            continue
        if view is None:
            continue
        hd.update(view.seq.to_bytes(2, "little") + view.ids.tobytes() + view.matrix.tobytes())
        if rng.random() >= loss:
            acks.append((k + lag, dec.latest))
    return hp.hexdigest(), hd.hexdigest(), npk, nbytes


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bodies", type=int, default=300)
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args(argv)
    scenes = {False: simulate(args.bodies, args.seconds, 60, 0),
              True: simulate(args.bodies, args.seconds, 60, 0, churn=True)}
    schemas = {"scene": default_schema(velocity=True), "gaffer": default_schema(velocity=False, rest=True)}
    total = hashlib.sha256()
    for churn in (False, True):
        for name, schema in schemas.items():
            for loss in (0.0, 0.1):
                hp, hd, npk, nbytes = stream(scenes[churn], schema, 6, loss)
                total.update((hp + hd).encode())
                print(f"{name:6s} churn={int(churn)} loss={loss:.1f}: {npk} packets, {nbytes} bytes, "
                      f"packets {hp[:16]}, decoded {hd[:16]}")
    print(f"all: {total.hexdigest()}")


if __name__ == "__main__":
    main()
