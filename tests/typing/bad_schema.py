"""Misuse of Schema, the codecs and the interpolator: mypy --strict must flag each line marked
`# E: <code>` (tests/typing/check.py). Never run."""
from __future__ import annotations

import numpy as np

import quantcodec as qc
from quantcodec.interpolation import Interpolator

schema = qc.Schema(123, 456)  # E: arg-type
schema.encode_many(5)  # E: arg-type
k: int = schema.fingerprint  # E: assignment
schema.name = "other"  # E: misc
schema.snapshot([1], {"x": [0.5]}, bad="ignore")  # E: arg-type
code: int = qc.Bounded(0, 1, 8).quantize(np.zeros(3))  # E: assignment
qc.UInt(8).quantize("x")  # E: arg-type
b: bool = qc.Enum(3).valid(np.array([0, 1]))  # E: assignment
t: int = Interpolator(schema).sample(1.0).b  # E: assignment
