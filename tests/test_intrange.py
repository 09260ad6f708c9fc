"""qc.IntRange(lo, hi): an exact integer over [lo, hi] in the fewest bits (issue 25, item 3).

UInt(7) takes 101..127 for a health of 0..100 silently; IntRange(0, 100) refuses them."""

import json
import pickle
import re

import numpy as np
import pytest

import quantcodec as qc
from quantcodec import _framing


def test_health_0_100_refuses_what_uint7_takes():
    assert qc.UInt(7).quantize(127) == 127            # the gap IntRange closes
    h = qc.IntRange(0, 100)
    assert h.bits == 7
    with pytest.raises(qc.RangeError, match=re.escape("IntRange(lo=0, hi=100): value 101 outside 0..100")):
        h.quantize(101)
    assert not h.valid(101) and h.valid(100)
    with pytest.raises(qc.DecodeError, match=re.escape("IntRange(lo=0, hi=100): code 127 is not a valid code")):
        h.dequantize(127)


@pytest.mark.parametrize("lo,hi,bits", [(0, 1, 1), (0, 100, 7), (-40, 85, 7), (5, 6, 1), (0, 127, 7), (0, 128, 8),
                                        (-(2 ** 40), 2 ** 40, 42), (-(2 ** 63), -1, 63), (0, 2 ** 63 - 1, 63),
                                        (-3, 2 ** 32 - 4, 32), (-3, 2 ** 32 - 3, 33)])
def test_bits_codes_and_dtypes(lo, hi, bits):
    c = qc.IntRange(lo, hi)
    assert c.bits == bits == (hi - lo).bit_length()
    assert c.lo == lo and c.hi == hi and c.step == 1 and c.max_error == 0.0
    assert c.code_dtype == (np.uint32 if bits <= 32 else np.uint64)
    for v in (lo, hi, (lo + hi) // 2):
        code = c.quantize(v)
        assert type(code) is int and code == v - lo
        assert c.dequantize(code) == v and type(c.dequantize(code)) is int
        assert c.roundtrip(v) == v
    a = np.array([lo, hi, (lo + hi) // 2], dtype=np.int64)
    codes = c.quantize(a)
    assert codes.dtype == c.code_dtype and codes.tolist() == [0, hi - lo, (lo + hi) // 2 - lo]
    back = c.dequantize(codes)
    assert back.dtype == np.int64 and back.tolist() == a.tolist()
    out = np.empty(3, dtype=c.code_dtype)
    assert c.quantize(a, out=out) is out and out.tolist() == codes.tolist()
    vout = np.empty(3, dtype=np.int64)
    assert c.dequantize(codes, out=vout) is vout and vout.tolist() == a.tolist()
    assert c.valid(np.array([0, hi - lo], dtype=np.uint64)).tolist() == [True, True]
    assert c.valid(-1) is False and c.valid(hi - lo + 1) is False and c.valid(2 ** 100) is False


def test_errors_name_the_value_and_the_range():
    c = qc.IntRange(-40, 85)
    for v in (-41, 86, 2 ** 64, -(2 ** 70)):
        with pytest.raises(qc.RangeError, match=re.escape(f"IntRange(lo=-40, hi=85): value {v} outside -40..85")):
            c.quantize(v)
    with pytest.raises(qc.RangeError, match=re.escape("IntRange(lo=-40, hi=85): 2.5 is not an integer")):
        c.quantize(2.5)
    with pytest.raises(qc.RangeError, match=re.escape("IntRange(lo=-40, hi=85): nan is not an integer")):
        c.quantize(float("nan"))
    with pytest.raises(TypeError, match="IntRange: expected an integer, got str"):
        c.quantize("3")
    assert c.quantize(3.0) == 43 and c.quantize(np.int8(-40)) == 0
    with pytest.raises(TypeError, match="IntRange: expected an integer, got bool"):
        c.quantize(True)                  # a bool is not an integer (issue 35, item 4)
    with pytest.raises(qc.RangeError, match=re.escape("IntRange.quantize: row 1: value 86 outside -40..85")) as e:
        c.quantize(np.array([0, 86, 99]))
    assert e.value.row == 1
    with pytest.raises(qc.RangeError, match=re.escape("IntRange.quantize: row 2: 0.5 is not an integer")):
        c.quantize(np.array([0.0, 1.0, 0.5]))
    with pytest.raises(qc.RangeError, match=re.escape("IntRange.quantize: row 0: value 18446744073709551615 outside -40..85")):
        c.quantize(np.array([2 ** 64 - 1], dtype=np.uint64))
    with pytest.raises(qc.DecodeError, match=re.escape("IntRange.dequantize: row 1: code 126 is not a valid code of IntRange(lo=-40, hi=85)")):
        c.dequantize(np.array([0, 126], dtype=np.uint32))
    with pytest.raises(qc.DecodeError, match=re.escape("IntRange(lo=-40, hi=85): code -1 is not a valid code")):
        c.dequantize(-1)


@pytest.mark.parametrize("args,msg", [
    ((5, 5), "IntRange: lo must be less than hi, got lo=5, hi=5"),
    ((6, 5), "IntRange: lo must be less than hi, got lo=6, hi=5"),
    ((0.0, 5), "IntRange: lo must be an integer, got 0.0"),
    ((0, "5"), "IntRange: hi must be an integer, got '5'"),
    ((True, 5), "IntRange: lo must be an integer, got True"),
    ((0, 2 ** 63), f"IntRange: hi must be within int64, got {2 ** 63}"),
    ((-(2 ** 63) - 1, 0), f"IntRange: lo must be within int64, got {-(2 ** 63) - 1}"),
    ((-(2 ** 63), 0), f"IntRange: hi - lo must be below 2**63, got {2 ** 63} (lo={-(2 ** 63)}, hi=0)"),
])
def test_bad_parameters_are_schema_errors(args, msg):
    with pytest.raises(qc.SchemaError, match=re.escape(msg)):
        qc.IntRange(*args)


def test_immutable_hashable_picklable_spec():
    c = qc.IntRange(-40, 85)
    assert repr(qc.IntRange(0, 100)) == "IntRange(lo=0, hi=100)"
    assert c == qc.IntRange(-40, 85) and hash(c) == hash(qc.IntRange(-40, 85))
    assert c != qc.IntRange(-40, 86) and c != qc.IntRange(-41, 85) and c != qc.UInt(7)
    assert pickle.loads(pickle.dumps(c)) == c
    with pytest.raises(AttributeError):
        c.lo = 3
    assert c.spec() == {"kind": "IntRange", "lo": -40, "hi": 85}
    assert json.dumps(c.spec()) == '{"kind": "IntRange", "lo": -40, "hi": 85}'
    assert qc.codec_from_spec(c.spec()) == c
    with pytest.raises(qc.SchemaError, match="IntRange spec: missing key 'hi'"):
        qc.codec_from_spec({"kind": "IntRange", "lo": 0})
    assert _framing.KIND_CODES["IntRange"] == 15


SCHEMA = qc.Schema("Player", [
    ("health", qc.IntRange(0, 100)),
    ("temp", qc.IntRange(-40, 85)),
    ("money", qc.IntRange(-(2 ** 40), 2 ** 40)),
    ("pos", qc.Vector(qc.Bounded(-10, 10, 12), qc.IntRange(-3, 3))),
    ("dz", qc.NearlyZero(qc.IntRange(-5, 5), 0)),
], version=2)


def test_schema_records_and_batches():
    rec = {"health": 100, "temp": -40, "money": -(2 ** 40), "pos": (1.5, -3), "dz": 4}
    assert SCHEMA.bits == 7 + 7 + 42 + 12 + 3 + 1 + 4
    codes = SCHEMA.quantize(rec)
    assert codes[:3] == (100, 0, 0) and codes[3][1] == 0 and codes[4] == (1, 9)
    got = SCHEMA.decode(SCHEMA.encode(rec))
    assert got["health"] == 100 and got["temp"] == -40 and got["money"] == -(2 ** 40)
    assert got["pos"][1] == -3 and got["dz"] == 4
    assert SCHEMA.decode(SCHEMA.encode(dict(rec, dz=0)))["dz"] == 0
    assert SCHEMA.valid(codes) and not SCHEMA.valid((101,) + codes[1:])
    with pytest.raises(qc.RangeError, match=r"health.*value 101 outside 0\.\.100"):
        SCHEMA.encode(dict(rec, health=101))
    with pytest.raises(qc.RangeError, match="value 4 outside -3..3"):
        SCHEMA.encode(dict(rec, pos=(0.0, 4)))
    # a wire code above hi - lo is refused by the decoder
    w = qc.BitWriter()
    w.write(101, 7)
    w.write(0, 64 - 7)
    w.write(0, SCHEMA.bits - 64)
    with pytest.raises(qc.DecodeError, match="health"):
        SCHEMA.decode(w.getvalue())
    cols = {"health": np.array([0, 100, 57]), "temp": np.array([85, -40, 0], dtype=np.int16),
            "money": np.array([2 ** 40, -(2 ** 40), 12345]), "pos": np.array([[0.0, 3], [1.0, -3], [2.0, 0]]),
            "dz": np.array([0, -5, 5])}
    q = SCHEMA.quantize_many(cols)
    assert q["health"].tolist() == [0, 100, 57] and q["temp"].tolist() == [125, 0, 40]
    assert q["money"].dtype == np.uint64 and q["money"].tolist() == [2 ** 41, 0, 2 ** 40 + 12345]
    back = SCHEMA.decode_many(SCHEMA.encode_many(cols), 3)
    for k in ("health", "temp", "money"):
        assert back[k].tolist() == cols[k].tolist()
    assert back["pos"][:, 1].tolist() == [3, -3, 0] and back["dz"].tolist() == [0, -5, 5]
    with pytest.raises(qc.RangeError, match="value 101 outside 0..100"):
        SCHEMA.quantize_many(dict(cols, health=np.array([0, 101, 3])))


def test_schema_spec_json_toml_and_fingerprint():
    for s2 in (qc.Schema.from_spec(SCHEMA.spec()), qc.Schema.from_json(SCHEMA.to_json())):
        assert s2 == SCHEMA and s2.fingerprint == SCHEMA.fingerprint
    assert json.loads(SCHEMA.to_json())["fields"][1]["codec"] == {"kind": "IntRange", "lo": -40, "hi": 85}
    t = SCHEMA.to_toml()
    assert 'kind = "IntRange", lo = -40, hi = 85' in t
    assert qc.Schema.from_toml(t).fingerprint == SCHEMA.fingerprint if hasattr(qc.Schema, "from_toml") else True
    fps = {qc.Schema("P", [("h", c)]).fingerprint for c in
           (qc.IntRange(0, 100), qc.IntRange(0, 101), qc.IntRange(1, 100), qc.UInt(7))}
    assert len(fps) == 4


def test_schema_load_toml(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(SCHEMA.to_toml())
    assert qc.Schema.load(p).fingerprint == SCHEMA.fingerprint


def test_snapshots_and_delta_stream():
    enc = qc.SnapshotEncoder(SCHEMA)
    dec = qc.SnapshotDecoder.from_hello(SCHEMA, enc.hello())
    rng = np.random.default_rng(25)
    ids = np.arange(40)
    cols = {"health": rng.integers(0, 101, 40), "temp": rng.integers(-40, 86, 40),
            "money": rng.integers(-(2 ** 40), 2 ** 40, 40, endpoint=True),
            "pos": np.stack([rng.uniform(-10, 10, 40), rng.integers(-3, 4, 40)], axis=1),
            "dz": rng.integers(-5, 6, 40)}
    for seq in range(1, 30):
        snap = SCHEMA.snapshot(ids, cols)
        view = dec.decode(enc.encode(seq, snap))
        want = SCHEMA.decode_many(SCHEMA.encode_many(cols), 40)
        for k in ("health", "temp", "money", "dz"):
            assert view.columns[k].tolist() == want[k].tolist(), (seq, k)
        enc.ack(seq)
        # small moves, clipped to the range (the ordered slot's short differences)
        cols = dict(cols, health=np.clip(cols["health"] + rng.integers(-2, 3, 40), 0, 100),
                    temp=np.clip(cols["temp"] + rng.integers(-1, 2, 40), -40, 85))
    rec = view.records()[3]
    assert isinstance(rec["health"], int) and 0 <= rec["health"] <= 100


@pytest.mark.parametrize("others", [(qc.UInt(3),), (qc.UInt(40), qc.Bool()), (qc.Int(8),), (qc.Enum(5),)])
@pytest.mark.parametrize("lo, hi", [(-5, -2), (2**33, 2**33 + 5), (-2**62, 2**62 - 1), (0, 100)])
def test_a_vector_of_exact_components_holds_an_intrange_value(lo, hi, others):
    """A Vector of exact components decodes each IntRange value as lo + code, in a dtype that
    holds it (int64), whatever the other components (an interpolation parity probe found
    Vector(IntRange(-5, -2), UInt(3)) decoding -5 as 4294967291: the vector's code dtype,
    uint32, held the values; IntRange(2**33, ...) came back mod 2**32). Snapshot.columns,
    Vector.dequantize and .roundtrip alike; the component alone is the reference."""
    vec = qc.Vector(qc.IntRange(lo, hi), *others)
    rng = np.random.default_rng(lo & 0xFFFF)
    vals = np.stack([rng.integers(lo, hi, 50, endpoint=True)]
                    + [rng.integers(0, 2, 50) for _ in others], axis=1)
    want = vals[:, 0]
    got = vec.dequantize(vec.quantize(vals))
    assert got.dtype == np.int64 and np.array_equal(got[:, 0], want)
    assert np.array_equal(vec.roundtrip(vals)[:, 0], want)
    assert np.array_equal(got[:, 1:], vals[:, 1:])
    schema = qc.Schema("V", [("v", vec)])
    snap = schema.snapshot(np.arange(50, dtype=np.uint64), {"v": vals})
    assert np.array_equal(snap.columns["v"][:, 0], want)
    assert [r["v"][0] for r in snap.records().values()] == want.tolist()


def test_a_vector_refuses_an_intrange_beside_a_64_bit_unsigned_component():
    # (no NumPy dtype holds both: int64 values beside ones up to 2**64 - 1)
    with pytest.raises(qc.SchemaError, match="cannot share one value array with an IntRange"):
        qc.Vector(qc.IntRange(0, 5), qc.UInt(64))
    vec = qc.Vector(qc.IntRange(0, 5), qc.UInt(63))
    assert vec.dequantize(vec.quantize([[3, 2**63 - 1]])).tolist() == [[3, 2**63 - 1]]
