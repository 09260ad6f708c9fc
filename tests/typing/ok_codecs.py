"""Codec calls on arrays and scalars, and the attributes the docs use (docs/codecs.md,
docs/hostile-input.md, SPEC section 4).

A typed user program: `mypy --strict` must pass on it (tests/typing/check.py), and it runs.
"""
from __future__ import annotations

from typing import List, Tuple

import numpy as np
import numpy.typing as npt

import quantcodec as qc


def main() -> None:
    x = qc.Bounded(-2048, 2048, 20)
    xs: npt.NDArray[np.float64] = np.linspace(-100, 100, 1000)
    codes = x.quantize(xs)                              # an array, not an int
    assert codes.shape == (1000,)
    back: npt.NDArray[np.float64] = x.roundtrip(np.array([0.5, 1.0]))
    one: int = x.quantize(3.5)
    value: float = x.dequantize(one)
    ok: bool = qc.UInt(8).valid(255)
    flags: List[np.bool_] = list(qc.Enum(3).valid(np.array([0, 2, 3])))
    assert [bool(f) for f in flags] == [True, True, False]
    q: Tuple[float, float, float, float] = qc.Quat(9).roundtrip((0.0, 0.0, 0.0, 1.0))
    n: int = qc.UInt(8).quantize(200)
    label = qc.Enum(["idle", "walk"]).dequantize(1)
    assert label == "walk"
    flag: bool = qc.Bool().dequantize(1)
    vec = qc.Vector(qc.Bounded(0, 1, 8), qc.UInt(4)).quantize((0.5, 3))
    assert len(vec) == 2
    s = qc.Schema("S", [("x", x)])
    fp: str = s.fingerprint
    name: str = s.name
    version: int = s.version
    try:
        s.snapshot([1, 2], {"x": [0.0, float("nan")]})
    except qc.RangeError as e:
        ident: int = e.id
        row: int = e.row
        assert (ident, row) == (2, 1)
    else:
        raise AssertionError("a NaN is a bad body")
    print(back[0], value, ok, q, n, flag, fp, name, version)


if __name__ == "__main__":
    main()
