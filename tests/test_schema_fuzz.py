"""Untrusted input (SPEC 4): decode, decode_codes and decode_many of random and mutated messages
raise DecodeError and nothing else, and whatever they accept is in range and canonical (it
re-encodes to the very same bytes).

Each run tries over 20 000 inputs from a fixed seed (plus `QC_FUZZ_SEED` / `QC_FUZZ_N` to widen it);
`python tests/test_schema_fuzz.py SECONDS` fuzzes for longer and prints the count.
"""

import math
import os
import sys

import numpy as np
import pytest

import quantcodec as qc
from quantcodec.tools.examples import player_state

SEED = int(os.environ.get("QC_FUZZ_SEED", "20240601"))
N_MESSAGES = int(os.environ.get("QC_FUZZ_N", "6000"))      # per schema; 4 schemas -> 24 000 per run


def schemas():
    return [
        player_state(),
        qc.Schema("Sparse", [
            ("a", qc.Enum(3)), ("p", qc.PowerCurve(1, 1, 3)), ("q", qc.Quat(3)),
            ("z", qc.NearlyZero(qc.Enum(["x", "y", "z"]), 0.5)),
            ("w", qc.NearlyZero(qc.Vector(qc.PowerCurve(2, 3, 4), qc.Enum(5)), 0.1)),
        ]),
        qc.Schema("Wide", [
            ("u", qc.UInt(64)), ("i", qc.Int(64)), ("f", qc.Fixed(1e-7, 64)), ("g", qc.Grid(4.0, 40, 24)),
            ("h", qc.Half()), ("s", qc.Angle(7, signed=True, unit="deg")), ("e", qc.Enum(["one"])),
            ("v", qc.UnitVector(11)), ("b", qc.Bounded(0, 1, 3, mode="bins")), ("fu", qc.Fixed(0.25, 5, signed=False)),
        ]),
        qc.Schema("Quats", [("q1", qc.Quat(2)), ("q2", qc.Quat(20, mode="bins")), ("t", qc.Bool())]),
    ]


# ---------------------------------------------------------------------------------- range checks

def check_value(codec, v):
    """`v` is a value `codec` can decode to (raises AssertionError otherwise)."""
    kind = codec.kind
    if kind == "Vector":
        assert isinstance(v, tuple) and len(v) == len(codec.codecs)
        for c, x in zip(codec.codecs, v):
            check_value(c, x)
    elif kind == "NearlyZero":
        inner = codec.inner
        zero = (0.0,) * len(inner.codecs) if inner.kind == "Vector" else 0.0
        if v != zero or type(v) is not type(zero):
            check_value(inner, v)
    elif kind == "Bounded":
        assert type(v) is float and codec.min <= v <= codec.max
    elif kind == "Fixed":
        b = codec.bits
        lo, hi = ((-(1 << (b - 1)), (1 << (b - 1)) - 1) if codec.signed else (0, (1 << b) - 1))
        assert type(v) is float and codec.dequantize(lo) <= v <= codec.dequantize(hi)
    elif kind == "Angle":
        turn = 360.0 if codec.unit == "deg" else 2 * math.pi
        lo, hi = (-turn / 2, turn / 2) if codec.signed else (0.0, turn)
        assert type(v) is float and lo <= v < hi
    elif kind == "PowerCurve":
        assert type(v) is float and abs(v) <= codec.max
    elif kind == "Half":
        assert type(v) is float and (math.isnan(v) or float(np.float16(v)) == v)
    elif kind == "Grid":
        half = codec.cell_size * 2.0 ** (codec.cell_bits - 1)
        assert type(v) is float and -half <= v <= half
    elif kind == "UInt":
        assert type(v) is int and 0 <= v < 2 ** codec.bits
    elif kind == "Int":
        assert type(v) is int and -(2 ** (codec.bits - 1)) <= v < 2 ** (codec.bits - 1)
    elif kind == "Bool":
        assert type(v) is bool
    elif kind == "Enum":
        if codec.labels is None:
            assert type(v) is int and 0 <= v < codec.n
        else:
            assert v in codec.labels
    elif kind in ("Quat", "UnitVector"):
        assert isinstance(v, tuple) and len(v) == (4 if kind == "Quat" else 3)
        assert all(math.isfinite(x) and abs(x) <= 1.0 for x in v)
        assert abs(math.sqrt(sum(x * x for x in v)) - 1.0) < 1e-12
    else:  # pragma: no cover
        raise AssertionError(kind)


def check_accepted(schema, data, values):
    assert list(values) == list(schema.names)
    for name, codec in schema.fields:
        check_value(codec, values[name])
    codes = schema.decode_codes(data)
    assert schema.valid(codes)
    assert schema.encode_codes(codes) == bytes(data)      # canonical: nothing else decodes to these codes
    assert schema.dequantize(codes) == values or _nan_equal(schema.dequantize(codes), values)


def _nan_equal(a, b):
    return all(str(a[k]) == str(b[k]) for k in a)


# ---------------------------------------------------------------------------------- message generators

def valid_messages(schema, rng, n):
    """Valid messages from random code tuples (every code chosen uniformly among the valid ones)."""
    msgs = []
    plan = schema._plan
    for _ in range(n):
        row = []
        for s, t in enumerate(plan.slot_table()):
            row.append(int(rng.integers(0, 1 << min(t["bits"], 63), dtype=np.int64)) if t["bits"] else 0)
        m = np.array([row], dtype=np.uint64)
        # make it valid: clear inner slots of 0 flags; retry invalid codes a few times
        for _ in range(50):
            at = plan.valid_matrix(m)
            if at is None:
                break
            _, s = at
            bits = plan.slot_table()[s]["bits"]
            m[0, s] = rng.integers(0, 1 << min(bits, 63), dtype=np.int64) if rng.random() < 0.8 else 0
        if plan.valid_matrix(m) is None:
            msgs.append(plan.encode_matrix(m))
    return msgs


def mutate(data, rng):
    data = bytearray(data)
    op = rng.integers(0, 6)
    if op == 0 and data:                          # truncate
        return bytes(data[:rng.integers(0, len(data))])
    if op == 1:                                   # extend
        return bytes(data) + bytes(rng.integers(0, 256, rng.integers(1, 4), dtype=np.uint8))
    if op == 2 and data:                          # flip 1..3 bits
        for _ in range(rng.integers(1, 4)):
            i = int(rng.integers(0, 8 * len(data)))
            data[i >> 3] ^= 1 << (i & 7)
        return bytes(data)
    if op == 3 and data:                          # overwrite a byte
        data[rng.integers(0, len(data))] = rng.integers(0, 256)
        return bytes(data)
    if op == 4:                                   # random bytes of a nearby length
        return bytes(rng.integers(0, 256, rng.integers(0, len(data) + 3), dtype=np.uint8))
    return bytes(data)                            # unchanged (valid)


def fuzz_one(schema, data):
    """Decode `data` every way; return (accepted, rejected) counts."""
    ok = bad = 0
    for view in (data, memoryview(data)):
        try:
            values = schema.decode(view)
        except qc.DecodeError:
            bad += 1
            with pytest.raises(qc.DecodeError):
                schema.decode_codes(data)
        else:
            ok += 1
            check_accepted(schema, data, values)
    return ok, bad


def fuzz_many(schema, rng, msgs):
    """decode_many over a few concatenated valid messages' codes, mutated."""
    plan = schema._plan
    k = int(rng.integers(1, 5))
    picks = [msgs[int(i)] for i in rng.integers(0, len(msgs), k)]
    mats = [plan.decode_matrix(m, 1) for m in picks]
    stream = plan.encode_matrix(np.concatenate(mats))
    data = mutate(stream, rng)
    count = k + int(rng.integers(-1, 2)) if rng.random() < 0.2 else k
    count = max(count, 0)
    try:
        cols = schema.decode_many(data, count)
    except qc.DecodeError:
        return 0, 1
    m = plan.decode_matrix(data, count)
    assert plan.valid_matrix(m) is None
    assert plan.encode_matrix(m) == data                  # canonical
    want = plan.dequantize_matrix(m)
    for name in schema.names:
        assert np.array_equal(cols[name], want[name], equal_nan=cols[name].dtype.kind == "f")
        assert cols[name].shape[0] == count
    for name, codec in schema.fields:
        if codec.kind in ("Bounded",):
            assert np.all((cols[name] >= codec.min) & (cols[name] <= codec.max))
        if codec.kind == "Quat":
            assert np.allclose(np.linalg.norm(cols[name], axis=1), 1.0, atol=1e-12)
    return 1, 0


def run(n_per_schema, seed):
    rng = np.random.default_rng(seed)
    tried = ok = bad = 0
    for schema in schemas():
        msgs = valid_messages(schema, rng, 64)
        assert len(msgs) > 32
        for m in msgs:
            assert schema.decode_codes(m) is not None
        for i in range(n_per_schema):
            base = msgs[int(rng.integers(0, len(msgs)))]
            data = mutate(base, rng)
            a, b = fuzz_one(schema, data)
            tried += 1
            ok += a > 0
            bad += b > 0
            if i % 8 == 0:
                a, b = fuzz_many(schema, rng, msgs)
                tried += 1
                ok += a
                bad += b
    return tried, ok, bad


def test_fuzz_decode():
    tried, ok, bad = run(N_MESSAGES, SEED)
    assert tried >= 20000
    assert ok > 1000 and bad > 5000          # both outcomes are exercised


def test_fuzz_any_bytes_short():
    """Every message of up to 2 bytes, for a schema of 14..16 bits (exhaustive)."""
    s = qc.Schema("Tiny", [("a", qc.Enum(3)), ("p", qc.PowerCurve(1, 1, 3)),
                           ("z", qc.NearlyZero(qc.Enum(["x", "y", "z"]), 0.5)), ("q", qc.Quat(2))])
    accepted = 0
    for n in range(3):
        for v in range(1 << (8 * n)):
            data = v.to_bytes(n, "little")
            try:
                values = s.decode(data)
            except qc.DecodeError:
                continue
            accepted += 1
            check_accepted(s, data, values)
    assert accepted > 100


if __name__ == "__main__":      # a longer run: python tests/test_schema_fuzz.py SECONDS
    import time
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    end = time.time() + seconds
    total = seed = 0
    while time.time() < end:
        t, o, b = run(2000, SEED + 1 + seed)
        total += t
        seed += 1
    print(f"{total} inputs tried over {seed} seeds, only DecodeError or in-range canonical values")
