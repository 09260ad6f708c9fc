"""Write Tests~/data/lockstep_*: the lockstep test of the C# client (run-tests reads them).

Two schemas share fields (position, rotation, velocity, yaw) with the same codecs: a full-state
schema (PlayerFull, every field) and a delta schema (PlayerDelta, the moving fields only). The
server sends one entity's full record with PlayerFull (schema.encode) and a snapshot stream of the
same entity (and others) with PlayerDelta (hello, a full packet, deltas with extrapolation). The
C# test decodes both and checks that the shared fields decode onto the same values, bit for bit,
at the tick the full record was taken. Deterministic: python Tests~/make_lockstep.py rewrites the
same bytes.

    . /work/venv/bin/activate; python clients/csharp/Tests~/make_lockstep.py
"""
import json
import math
import pathlib
import struct

import numpy as np
import quantcodec as qc

HERE = pathlib.Path(__file__).resolve().parent / "data"

SHARED = [
    ("position", qc.Vector(qc.Bounded(-512, 512, 20), qc.Bounded(-16, 112, 16), qc.Bounded(-512, 512, 20))),
    ("rotation", qc.Quat(11)),
    ("velocity", qc.NearlyZero(qc.Vector(*[qc.PowerCurve(40, 2, 11)] * 3), 0.02)),
    ("yaw", qc.Angle(14, signed=True)),
]
FULL = qc.Schema("PlayerFull", SHARED + [("health", qc.UInt(7)), ("state", qc.Enum(["idle", "run", "jump"])),
                                         ("grounded", qc.Bool())], version=2)
DELTA = qc.Schema("PlayerDelta", SHARED, version=1)
STARTED = 1_796_191_290_073_528   # the committed stream's hello (its microseconds when first written)


def main():
    HERE.mkdir(exist_ok=True)
    qc.check_lockstep(FULL, DELTA)
    rng = np.random.default_rng(7)
    n = 24
    ids = np.arange(10, 10 + 3 * n, 3, dtype=np.uint64)
    pos = rng.uniform(-100, 100, (n, 3))
    pos[:, 1] = rng.uniform(0, 50, n)
    vel = rng.normal(0, 3, (n, 3))
    vel[::4] = 0.0
    yaw = rng.uniform(-3, 3, n)
    ang = rng.uniform(0, 2 * math.pi, n)
    enc = qc.SnapshotEncoder(DELTA, history=16, predict=True, stream_id=0x1234, max_datagram=600)
    enc._started_us = STARTED     # the hello's clock, fixed (as the conformance kit fixes it)
    datagrams = [enc.hello()]
    records = []
    for tick in range(30):
        pos += vel * 0.05
        yaw = (yaw + 0.01) % (2 * math.pi) - math.pi
        ang += 0.02
        rot = np.stack([np.zeros(n), np.sin(ang / 2), np.zeros(n), np.cos(ang / 2)], axis=1)
        snap = DELTA.snapshot(ids, {"position": pos, "rotation": rot, "velocity": vel, "yaw": yaw})
        datagrams += enc.encode_datagrams(tick, snap)
        enc.ack(tick - 2) if tick >= 2 else None
        if tick in (0, 9, 29):
            row = 5 if tick != 29 else 4      # (row 4 rests: velocity 0)
            rec = {"position": pos[row].tolist(), "rotation": rot[row].tolist(), "velocity": vel[row].tolist(),
                   "yaw": float(yaw[row]), "health": 99, "state": "run", "grounded": tick == 9}
            records.append({"tick": tick, "id": int(ids[row]), "hex": FULL.encode(rec).hex(),
                            "codes": [str(c) for c in _flat(FULL.quantize(rec))]})
    (HERE / "lockstep_full.json").write_text(FULL.to_json() + "\n")
    (HERE / "lockstep_delta.json").write_text(DELTA.to_json() + "\n")
    with open(HERE / "lockstep_stream.bin", "wb") as f:
        for d in datagrams:
            f.write(struct.pack("<I", len(d)) + d)
    (HERE / "lockstep_records.json").write_text(json.dumps({"records": records}, indent=1) + "\n")


def _flat(codes):
    out = []
    for c in codes:
        if isinstance(c, tuple) and len(c) == 2 and isinstance(c[1], tuple):
            out.append(c[0])
            out.extend(c[1])
        elif isinstance(c, tuple):
            out.extend(c)
        else:
            out.append(c)
    return [int(x) & 0xFFFFFFFFFFFFFFFF for x in out]


if __name__ == "__main__":
    main()
