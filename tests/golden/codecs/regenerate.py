"""Writes tests/golden/codecs/codecs.json: the codes, decoded values and packed bytes of every
codec on fixed inputs. Run it ONLY when the wire format is changed on purpose (and say so in the
commit and the changelog); test_golden_codecs.py reads the file and fails on any difference.

    python tests/golden/codecs/regenerate.py
"""
import json
import math
import os

import numpy as np

import quantcodec as qc

HERE = os.path.dirname(os.path.abspath(__file__))

SCALARS = [
    qc.Bounded(-2048, 2048, 20), qc.Bounded(-2048, 2048, 18, mode="bins"), qc.Bounded(-64, 192, 14),
    qc.Bounded(0, 1, 1), qc.Bounded(-1.5, 3.25, 32), qc.Fixed(1e-7, 32), qc.Fixed(0.001, 20),
    qc.Fixed(0.25, 12, signed=False, offset=-10.0), qc.Fixed(1.0, 64), qc.Angle(16), qc.Angle(12, signed=True, unit="deg"),
    qc.Angle(32), qc.PowerCurve(50, 2, 10), qc.PowerCurve(8, 3, 16), qc.Half(), qc.Grid(64.0, 20, 16), qc.Grid(0.5, 40, 24),
]
EXACT = [qc.UInt(8), qc.UInt(64), qc.Int(12), qc.Int(64), qc.Bool(), qc.Enum(["idle", "walk", "run", "jump"]), qc.Enum(5)]
MULTI = [qc.Quat(9), qc.Quat(10), qc.Quat(12), qc.Quat(20), qc.Quat(7, mode="bins"), qc.UnitVector(8), qc.UnitVector(12),
         qc.UnitVector(16), qc.UnitVector(32)]
COMPOSITE = [
    qc.Vector(qc.Bounded(-2048, 2048, 18), qc.Bounded(-64, 192, 14), qc.Bounded(-2048, 2048, 18)),
    qc.NearlyZero(qc.Vector(*[qc.PowerCurve(50, 2, 10)] * 3), 0.01),
    qc.NearlyZero(qc.Bounded(-10, 10, 12), 0.05),
]


def hexf(v):
    return float(v).hex()


def main():
    rng = np.random.default_rng(1234)
    out = []
    for c in SCALARS:
        x = np.concatenate([rng.uniform(-3000, 3000, 12), rng.uniform(-2, 2, 12),
                            [0.0, -0.0, 1.0, -1.0, 0.5, 1e-300, 5e-324, 1e300, -1e300, math.inf, -math.inf, math.nan]])
        codes = c.quantize(x)
        vals = c.dequantize(codes)
        out.append({"spec": c.spec(), "inputs": [hexf(v) for v in x], "codes": [int(v) for v in codes],
                    "values": [hexf(v) for v in vals],
                    "packed": qc.pack(np.asarray(codes).astype(np.int64).view(np.uint64) & np.uint64((1 << c.bits) - 1 if c.bits < 64 else 2**64 - 1), c.bits).hex()})
    for c in EXACT:
        if isinstance(c, qc.Enum):
            x = rng.integers(0, c.n, 20)
        elif isinstance(c, qc.Bool):
            x = rng.integers(0, 2, 20)
        elif isinstance(c, qc.Int):
            x = np.concatenate([rng.integers(-2 ** (c.bits - 1), 2 ** (c.bits - 1) - 1, 18, dtype=np.int64), [-2 ** (c.bits - 1), 2 ** (c.bits - 1) - 1]])
        else:
            x = np.concatenate([rng.integers(0, 2 ** min(c.bits, 63), 18, dtype=np.uint64), np.array([0, 2 ** c.bits - 1], dtype=np.uint64)])
        codes = c.quantize(x)
        out.append({"spec": c.spec(), "inputs": [int(v) for v in x], "codes": [int(v) for v in codes],
                    "packed": qc.pack(np.asarray(codes).astype(np.int64).view(np.uint64) & np.uint64((1 << c.bits) - 1 if c.bits < 64 else 2**64 - 1), c.bits).hex()})
    for c in MULTI:
        x = rng.normal(size=(16, c.ncomp))
        x[0] = [0.5] * c.ncomp
        x[1] = [1 / math.sqrt(2), -1 / math.sqrt(2), 0, 0][: c.ncomp] if c.ncomp == 4 else [0, 0, -1]
        x[2] = -x[3]
        codes = c.quantize(x)
        vals = c.dequantize(codes)
        out.append({"spec": c.spec(), "inputs": [[hexf(v) for v in row] for row in x], "codes": [int(v) for v in codes],
                    "values": [[hexf(v) for v in row] for row in vals], "packed": qc.pack(codes, c.bits).hex()})
    for c in COMPOSITE:
        shape = (16, 3) if c.ncomp == 3 else (16,)
        x = rng.uniform(-20, 20, shape)
        x[:4] = 0.001
        codes = c.quantize(x)
        vals = c.dequantize(codes)
        out.append({"spec": c.spec(), "inputs": np.vectorize(hexf, otypes=[object])(x).tolist(), "codes": codes.tolist(),
                    "values": np.vectorize(hexf, otypes=[object])(vals).tolist()})
    with open(os.path.join(HERE, "codecs.json"), "w") as f:
        json.dump({"format": 1, "cases": out}, f, indent=1)
        f.write("\n")
    print(f"wrote {len(out)} cases")


if __name__ == "__main__":
    main()
