"""Building schemas from several codecs and checking them (docs/codecs.md, schema-format.md, choosing-bits.md).

A typed user program: `mypy --strict` must pass on it (tests/typing/check.py), and it runs.
"""
from __future__ import annotations

from typing import Dict, Tuple

import numpy as np
import numpy.typing as npt

import quantcodec as qc


def build() -> qc.Schema:
    position = qc.Vector(qc.Bounded(-2048, 2048, 18), qc.Bounded(-64, 192, 14), qc.Bounded(-2048, 2048, 18))
    velocity = qc.NearlyZero(qc.Vector(*[qc.PowerCurve(50, 2, 10)] * 3), 0.01)
    yaw: qc.Angle = qc.Angle.for_error(0.01, unit="deg")
    x: qc.Bounded = qc.Bounded.for_step(-2048, 2048, 1 / 256, mode="bins")
    lat: qc.Fixed = qc.Fixed.for_step(-180, 180, 1e-7)
    g: qc.Grid = qc.Grid.for_error(2_000_000, 0.0005, cell_size=64)
    q: qc.Quat = qc.Quat.for_error(0.55)
    u: qc.UnitVector = qc.UnitVector.for_error(0.1)
    p: qc.PowerCurve = qc.PowerCurve.for_error(50, 2, 0.1)
    bits: int = qc.bits_for(4096, 1 / 512, mode="bins")
    fields: Dict[str, qc.Codec] = {
        "position": position, "rotation": q, "velocity": velocity, "yaw": yaw, "x": x, "lat": lat,
        "grid": g, "normal": u, "speed": p,
        "health": qc.IntRange(0, 100), "ammo": qc.UInt(8), "delta": qc.Int(8), "alt": qc.Fixed(0.001, 32),
        "state": qc.Enum(["idle", "walk", "run"]), "grounded": qc.Bool(), "h": qc.Half(),
    }
    schema = qc.Schema("Everything", fields, version=2, strict=False)
    assert schema.describe().startswith("Schema")
    nbytes: int = schema.nbytes
    fp: str = schema.fingerprint
    schema.check_fingerprint(fp)
    steps: Dict[str, object] = schema.steps
    errs = schema.max_errors
    clamped: Dict[str, int] = schema.clamped
    again = qc.Schema.from_json(schema.to_json())
    assert again == schema
    spec = schema.spec()
    assert qc.Schema.from_spec(spec) == schema
    toml: str = schema.to_toml()
    qc.check_lockstep(schema, again, fields=["position"])
    c: qc.Codec = qc.codec_from_spec(position.spec())
    step: float = x.step
    err: float = x.max_error
    ok: bool = qc.Bounded(0, 1, 4).valid(15)
    code: int = x.quantize(12.5)
    val: float = x.dequantize(code)
    arr: npt.NDArray[np.uint32] = x.quantize(np.zeros(10))
    out = np.empty(10, dtype=np.uint32)
    x.quantize(np.zeros(10), out=out)
    qcode: int = q.quantize((0.0, 0.0, 0.0, 1.0))
    quat: Tuple[float, float, float, float] = q.roundtrip((0.0, 0.0, 0.0, 1.0))
    vcode: Tuple[int, ...] = position.quantize((1.0, 2.0, 3.0))
    label = qc.Enum(["idle", "walk"]).dequantize(1)
    print(nbytes, fp, steps, errs, clamped, toml[:10], c, step, err, ok, val, arr, qcode, quat, vcode, label, bits)
    return schema


if __name__ == "__main__":
    build()
