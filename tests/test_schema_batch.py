"""Schema.decode_many of fixed-width records (no NearlyZero field), which reads each slot's codes
at a constant bit offset per record and dequantizes them with the codecs' array loops
(quantcodec/_plan.pyx, `_decode_fixed`): against the general path (decode_matrix, then
dequantize_valid), values and dtypes bit for bit, and errors word for word, on every kind, on
widths of 1 to 64 bits, on records whose last bytes are read near the end of the message, on
mutated messages, and with each set of array loops this machine runs."""

import numpy as np
import pytest

import quantcodec as qc
from quantcodec import _codecs

from conftest import SIMD_LEVELS as LEVELS  # noqa: E402


def fixed_kinds():
    """One field of every kind and option a fixed-width record can hold (no NearlyZero)."""
    return qc.Schema("Fixed", [
        ("b_end", qc.Bounded(-10, 10, 12)),
        ("b_bins", qc.Bounded(0, 1, 5, mode="bins")),
        ("b_mid", qc.Bounded(-1, 1, 7, mode="midpoint")),
        ("b_one", qc.Bounded(0, 1, 1)),
        ("b32", qc.Bounded(-1e6, 1e6, 32)),
        ("fx", qc.Fixed(0.5, 8, offset=10.0)),
        ("fx_u", qc.Fixed(0.01, 12, signed=False)),
        ("fx64", qc.Fixed(1e-7, 64)),
        ("ang", qc.Angle(12)),
        ("ang_sd", qc.Angle(10, signed=True, unit="deg")),
        ("pc", qc.PowerCurve(50, 2, 10)),
        ("half", qc.Half()),
        ("u64", qc.UInt(64)),
        ("u58", qc.UInt(58)),
        ("i64", qc.Int(64)),
        ("i7", qc.Int(7)),
        ("flag", qc.Bool()),
        ("enum", qc.Enum(["a", "b", "c"])),
        ("enum_1", qc.Enum(["only"])),
        ("quat", qc.Quat(9)),
        ("quat_bins", qc.Quat(11, mode="bins")),
        ("quat_mid", qc.Quat(8, mode="midpoint")),
        ("uvec", qc.UnitVector(12)),
        ("vec", qc.Vector(qc.Bounded(-1, 1, 8), qc.Angle(8), qc.Half())),
        ("grid", qc.Grid(16.0, 40, 24)),
        ("hp", qc.IntRange(0, 100)),
        ("wide", qc.IntRange(-2 ** 40, 2 ** 40)),
    ])


POSE = qc.Schema("Pose", [
    ("position", qc.Vector(qc.Bounded(-2048, 2048, 18), qc.Bounded(-64, 192, 14), qc.Bounded(-2048, 2048, 18))),
    ("rotation", qc.Quat(9)),
])


def random_codes(schema, n, rng):
    """The code matrix of n records of random values (floats spread over many magnitudes, some
    clamped; integers over their whole range)."""
    cols = {name: _values_of(codec, n, rng) for name, codec in schema.fields}
    return schema._plan.quantize_matrix(cols)[0]


def _values_of(codec, n, rng):
    kind = codec.kind
    if kind == "Vector":
        return np.stack([_values_of(c, n, rng) for c in codec.codecs], axis=1).astype(np.float64)
    if kind in ("Quat", "UnitVector"):
        return rng.normal(size=(n, 4 if kind == "Quat" else 3))
    spec = codec.spec()
    if kind == "UInt":
        return rng.integers(0, 2 ** spec["bits"] - 1, n, endpoint=True, dtype=np.uint64)
    if kind == "Int":
        b = spec["bits"]
        return rng.integers(-2 ** (b - 1), 2 ** (b - 1) - 1, n, endpoint=True, dtype=np.int64)
    if kind == "Bool":
        return rng.random(n) < 0.5
    if kind == "Enum":
        return rng.integers(0, len(spec["labels"]) if "labels" in spec else spec["count"], n)
    if kind == "IntRange":
        return rng.integers(spec["lo"], spec["hi"], n, endpoint=True, dtype=np.int64)
    return rng.normal(size=n) * 10.0 ** rng.uniform(-3, 7, n)


def general(schema, data, n):
    """What decode_many gave before the direct path, and still gives for other records."""
    plan = schema._plan
    return plan.dequantize_valid(plan.decode_matrix(data, n))


def outcome(fn):
    try:
        return ("ok", fn())
    except Exception as e:     # noqa: BLE001 - compared, type and text
        return (type(e), str(e))


def assert_same(a, b):
    assert a[0] == b[0], (a, b)
    if a[0] != "ok":
        assert a == b
        return
    assert list(a[1]) == list(b[1])
    for name in a[1]:
        x, y = a[1][name], b[1][name]
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert x.tobytes() == y.tobytes(), name


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 9, 63, 64, 65, 300])
def test_every_kind_equals_the_general_path(level, n):
    s = fixed_kinds()
    assert s._plan.min_bits == s._plan.max_bits
    rng = np.random.default_rng(n)
    mat = random_codes(s, n, rng)
    data = s._plan.encode_matrix(mat)
    got = s.decode_many(data, n)
    assert_same(("ok", got), ("ok", general(s, data, n)))
    # and each field as its codec dequantizes its codes
    codes = s._plan.matrix_to_codes(mat)
    for name, codec in s.fields:
        want = np.asarray(codec.dequantize(codes[name]))
        assert got[name].dtype == want.dtype and got[name].tobytes() == want.tobytes(), name


@pytest.mark.parametrize("bits", [1, 7, 8, 9, 31, 32, 33, 56, 57, 58, 63, 64])
@pytest.mark.parametrize("lead", [0, 1, 5])
def test_widths_and_offsets(level, bits, lead):
    # a field of every width, at every offset within the byte, and records whose codes sit in the
    # message's last 8 bytes (read without a load past the end)
    fields = [("u", qc.UInt(bits))]
    if lead:
        fields.insert(0, ("lead", qc.UInt(lead)))
    s = qc.Schema("W", fields + [("b", qc.Bounded(0, 1, 3))])
    rng = np.random.default_rng(bits * 10 + lead)
    for n in (1, 2, 5, 17):
        mat = random_codes(s, n, rng)
        data = s._plan.encode_matrix(mat)
        got = s.decode_many(data, n)
        assert_same(("ok", got), ("ok", general(s, data, n)))
        assert got["u"].tolist() == mat[:, 1 if lead else 0].tolist()


def test_pose_against_numpy_and_levels():
    rng = np.random.default_rng(0)
    n = 1000
    pos = rng.uniform(-2000, 2000, (n, 3))
    quat = rng.normal(size=(n, 4))
    data = POSE.encode_many({"position": pos, "rotation": quat})
    before = _codecs._simd()
    try:
        outs = []
        for lv in LEVELS:
            _codecs._simd_select(lv)
            outs.append(POSE.decode_many(data, n))
            assert_same(("ok", outs[-1]), ("ok", general(POSE, data, n)))
        for o in outs[1:]:
            assert_same(("ok", o), ("ok", outs[0]))
    finally:
        _codecs._simd_select(before)


def test_vector_of_exact_and_float_components():
    # (the general path: a Vector mixing kinds dequantizes through its codec)
    s = qc.Schema("M", [("b", qc.Bounded(0, 1, 3)), ("mixed", qc.Vector(qc.Bounded(-1, 1, 8), qc.UInt(4), qc.Int(5)))])
    rng = np.random.default_rng(3)
    mat = random_codes(s, 10, rng)
    data = s._plan.encode_matrix(mat)
    assert_same(("ok", s.decode_many(data, 10)), ("ok", general(s, data, 10)))


def test_errors_are_the_general_paths():
    s = fixed_kinds()
    n = 12
    data = s._plan.encode_matrix(random_codes(s, n, np.random.default_rng(1)))
    pad = (-n * s._plan.max_bits) % 8
    cases = [
        (data, n - 1), (data, n + 1), (data + b"\x00", n), (data[:-1], n), (b"", 1),
        (data, 0), (data, -1), (data, 2.0), (data, True), (data, np.int64(n)),
        (bytearray(data), n), (memoryview(data), n), (memoryview(data)[::2], n // 2), ("text", 1), (None, 1),
    ]
    if pad:
        bad_pad = bytearray(data)
        bad_pad[-1] |= 0x80
        cases.append((bytes(bad_pad), n))
    for d, c in cases:
        assert_same(outcome(lambda: s.decode_many(d, c)), outcome(lambda: general(s, d, c)))


FRAGILE = qc.Schema("Fragile", [
    ("b", qc.Bounded(0, 1, 3)), ("enum", qc.Enum(["a", "b", "c"])), ("mid", qc.Bounded(-1, 1, 2, mode="midpoint")),
    ("pc", qc.PowerCurve(50, 2, 3)), ("quat", qc.Quat(3)), ("qmid", qc.Quat(2, mode="midpoint")),
    ("hp", qc.IntRange(0, 4)), ("i", qc.Int(5)),
])


@pytest.mark.parametrize("schema", [fixed_kinds(), FRAGILE], ids=["all", "fragile"])
@pytest.mark.parametrize("seed", range(6))
def test_mutated_messages(level, schema, seed):
    # flipped bits: an invalid code (Enum, midpoint Bounded and Quat, PowerCurve's negative zero,
    # Quat, IntRange) anywhere raises the general path's error, and a valid one decodes the same
    rng = np.random.default_rng(seed)
    s = schema
    n = 9
    data = bytearray(s._plan.encode_matrix(random_codes(s, n, rng)))
    nbits = n * s._plan.max_bits
    for _ in range(60):
        d = bytearray(data)
        for b in rng.integers(0, nbits, int(rng.integers(1, 4))):
            d[b >> 3] ^= 1 << (b & 7)
        d = bytes(d)
        assert_same(outcome(lambda: s.decode_many(d, n)), outcome(lambda: general(s, d, n)))


def test_invalid_code_in_the_last_record_names_it():
    s = qc.Schema("E", [("b", qc.Bounded(0, 1, 3)), ("e", qc.Enum(["a", "b", "c"]))])
    mat = np.zeros((4, 2), dtype=np.uint64)
    data = bytearray(s._plan.encode_matrix(mat))
    data[2] |= 0x3 << 2          # record 3's enum code: bits 18..19 -> 3
    with pytest.raises(qc.DecodeError) as e:
        s.decode_many(bytes(data), 4)
    assert str(e.value) == "record 3: field 'e': code 3 is not valid for Enum(['a', 'b', 'c']) at bit 18"
