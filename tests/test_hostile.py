"""Hostile values: NaN, infinities, subnormals, -0.0, range ends and one ulp past them, empty
arrays, non-contiguous, byte-swapped and read-only arrays and buffers.

Every case runs through the per-value path and the array path (and the schema paths where a
clamp is counted), and both must give the same codes. The table in docs/hostile-input.md is
this file in prose.
"""

import math

import numpy as np
import pytest

import quantcodec as qc

nx = np.nextafter
NAN, INF = math.nan, math.inf
TAU = 2 * math.pi


def up(x):
    return float(nx(x, math.inf))


def down(x):
    return float(nx(x, -math.inf))


def same(a, b):
    """Exact equality of floats, NaN (with its sign) and -0.0 included."""
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b) and math.copysign(1, a) == math.copysign(1, b)
    return a == b and math.copysign(1, a) == math.copysign(1, b)


def codes_both(c, x):
    """quantize(x) per value, and through float64 and float32 arrays; all must agree when x is
    representable in float32 (else only float64 is compared)."""
    per = c.quantize(x)
    arr = c.quantize(np.array([x, x], dtype=np.float64))
    assert arr.dtype == c.code_dtype
    assert arr.tolist() == [per, per], (c, x, per, arr)
    with np.errstate(over="ignore"):
        fits32 = np.isnan(x) or float(np.float32(x)) == x
    if fits32:
        arr32 = c.quantize(np.array([x, x], dtype=np.float32))
        assert arr32.tolist() == [per, per], (c, x, per, arr32)
    return per


def roundtrip_both(c, x):
    per = c.roundtrip(x)
    arr = c.roundtrip(np.array([x], dtype=np.float64))
    assert arr.dtype == np.float64 and same(arr[0], per), (c, x, per, arr)
    assert same(per, c.dequantize(c.quantize(x)))
    return per


# ----------------------------------------------------------------------- non-finite floats

GRID36 = qc.Grid(64.0, 20, 16)

NONFINITE = [
    # codec, nan code, +inf code, -inf code  (SPEC section 1, "Non-finite floats")
    (qc.Bounded(-2, 2, 8), 0, 255, 0),
    (qc.Bounded(-2, 2, 8, mode="bins"), 0, 255, 0),
    (qc.Bounded(0, 1, 32), 0, 2**32 - 1, 0),
    (qc.Fixed(0.5, 8), 0, 127, -128),
    (qc.Fixed(0.5, 8, signed=False, offset=1.0), 0, 255, 0),
    (qc.Fixed(0.001, 64), 0, 2**63 - 1, -(2**63)),
    (qc.Fixed(1.0, 64, signed=False), 0, 2**64 - 1, 0),
    (qc.Angle(8), 0, 0, 0),
    (qc.Angle(12, signed=True, unit="deg"), 0, 0, 0),
    (qc.PowerCurve(50, 2, 10), 0, 511, 1023),
    (qc.Grid(1.0, 4, 4), 0, 0b0111_1111, 0b1000_0000),
    (GRID36, 0, (2**19 - 1) << 16 | 0xFFFF, 2**19 << 16),
]


@pytest.mark.parametrize("c, nan, pinf, ninf", NONFINITE, ids=[repr(t[0]) for t in NONFINITE])
def test_nonfinite_floats_substitute(c, nan, pinf, ninf):
    assert codes_both(c, NAN) == nan
    assert codes_both(c, -NAN) == nan
    assert codes_both(c, INF) == pinf
    assert codes_both(c, -INF) == ninf
    s = qc.Schema("NF", [("v", c)])
    for x in (NAN, INF, -INF):
        v = roundtrip_both(c, x)
        assert math.isfinite(v)
        s.reset_clamped()
        s.encode({"v": x})
        s.encode_many({"v": np.array([x])})
        assert s.clamped == {"v": 2}, x          # every substitution counts as a clamp


def test_half_keeps_nonfinite_bit_identical_to_numpy():
    h = qc.Half()
    xs = [NAN, -NAN, INF, -INF]
    want = np.array(xs).astype(np.float16).view(np.uint16).tolist()
    assert want == [0x7E00, 0xFE00, 0x7C00, 0xFC00]
    assert [codes_both(h, x) for x in xs] == want
    back = [roundtrip_both(h, x) for x in xs]
    assert math.isnan(back[0]) and math.copysign(1, back[0]) == 1
    assert math.isnan(back[1]) and math.copysign(1, back[1]) == -1
    assert back[2:] == [INF, -INF]


def test_half_nan_payloads_propagate_like_numpy():
    """NumPy keeps the top bits of a NaN's payload (never letting it become an infinity), so
    every float16 NaN code can come out of quantize, and every one is valid."""
    bits = np.array([0x7FF0000000000001, 0x7FF4000000000000, 0x7FF8000000000001, 0xFFF0040000000000,
                     0x7FFFFFFFFFFFFFFF, 0xFFF8000000000000], dtype=np.uint64)
    x = bits.view(np.float64)
    want = x.astype(np.float16).view(np.uint16).tolist()
    assert want == [0x7C01, 0x7D00, 0x7E00, 0xFC01, 0x7FFF, 0xFE00]
    h = qc.Half()
    assert h.quantize(x).tolist() == want
    assert [h.quantize(float(v)) for v in x] == want
    assert all(h.valid(c) for c in want)
    assert all(math.isnan(h.dequantize(c)) for c in want)


@pytest.mark.parametrize("c, what", [(qc.Quat(9), "quaternion"), (qc.UnitVector(10), "vector")])
@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "zero"])
def test_quat_and_unitvector_reject_nonfinite_and_zero(c, what, bad):
    k = 4 if what == "quaternion" else 3
    v = [0.0] * k
    if bad != "zero":
        v[1] = float(bad)
    reason = "zero" if bad == "zero" else "non-finite"
    with pytest.raises(qc.RangeError, match=f"{reason} {what}"):
        c.quantize(tuple(v))
    with pytest.raises(qc.RangeError, match=f"{reason} {what}"):
        c.roundtrip(tuple(v))
    with pytest.raises(qc.RangeError, match=f"{reason} {what}"):
        c.quantize(np.array(v))                      # a (k,) array is one value
    good = [0.0] * (k - 1) + [1.0]
    batch = np.array([good, good, good, v, good])
    with pytest.raises(qc.RangeError, match=f"row 3: {reason} {what}"):
        c.quantize(batch)
    with pytest.raises(qc.RangeError, match=f"row 3: {reason} {what}"):
        c.roundtrip(batch.astype(np.float32))


EXACT = [qc.UInt(8), qc.Int(8), qc.Bool(), qc.Enum(3), qc.UInt(64), qc.Int(64)]


@pytest.mark.parametrize("c", EXACT, ids=repr)
@pytest.mark.parametrize("x", [NAN, INF, -INF, 0.5, 5e-324])
def test_exact_codecs_reject_nonfinite_and_fractions(c, x):
    if isinstance(c, qc.Enum):
        with pytest.raises(TypeError, match="label or an index"):
            c.quantize(x)
    else:
        with pytest.raises(qc.RangeError, match="not an integer"):
            c.quantize(x)
    with pytest.raises(qc.RangeError, match="row 2: .* is not an integer"):
        c.quantize(np.array([1.0, 0.0, x]))


def test_nonfinite_in_a_schema_counts_as_a_clamp_and_strict_raises():
    fields = [("b", qc.Bounded(-1, 1, 8)), ("a", qc.Angle(8)), ("h", qc.Half()),
              ("q", qc.Quat(9))]
    s = qc.Schema("NF", fields)
    q = (0.0, 0.0, 0.0, 1.0)
    for rec, counted in [({"b": NAN, "a": 0.0, "h": 0.0, "q": q}, "b"),
                         ({"b": 0.0, "a": INF, "h": 0.0, "q": q}, "a"),
                         ({"b": 0.0, "a": 0.0, "h": INF, "q": q}, None),    # Half keeps it
                         ({"b": 0.0, "a": 0.0, "h": NAN, "q": q}, None)]:
        s.reset_clamped()
        s.encode(rec)
        per = {k: v for k, v in s.clamped.items() if v}
        s.reset_clamped()
        s.encode_many({"b": np.array([rec["b"]]), "a": np.array([rec["a"]]),
                       "h": np.array([rec["h"]]), "q": np.array([q])})
        arr = {k: v for k, v in s.clamped.items() if v}
        assert per == arr == ({counted: 1} if counted else {})
    strict = qc.Schema("NF", fields, strict=True)
    with pytest.raises(qc.RangeError, match="field 'b'"):
        strict.encode({"b": NAN, "a": 0.0, "h": 0.0, "q": q})
    with pytest.raises(qc.RangeError, match="field 'a': row 1"):
        strict.encode_many({"b": np.zeros(2), "a": np.array([0.0, -INF]), "h": np.zeros(2),
                            "q": np.array([q, q])})
    assert strict.decode(strict.encode({"b": 0.0, "a": 0.0, "h": INF, "q": q}))["h"] == INF
    with pytest.raises(qc.RangeError, match="non-finite quaternion"):
        s.encode({"b": 0.0, "a": 0.0, "h": 0.0, "q": (NAN, 0.0, 0.0, 1.0)})


# -------------------------------------------------------------------- subnormals and -0.0

TINY = [5e-324, -5e-324, 2.2250738585072014e-308, -2.2250738585072014e-308, -0.0]


@pytest.mark.parametrize("c", [qc.Bounded(-2, 2, 8), qc.Bounded(-2, 2, 9, mode="bins"), qc.Fixed(0.5, 8),
                               qc.Fixed(0.25, 6, signed=False, offset=-1.0), qc.Angle(8),
                               qc.Angle(10, signed=True, unit="deg"), qc.PowerCurve(50, 2, 10)], ids=repr)
def test_subnormals_and_negative_zero_encode_as_zero(c):
    zero = codes_both(c, 0.0)
    for x in TINY:
        assert codes_both(c, x) == zero, x
        assert same(roundtrip_both(c, x), c.roundtrip(0.0))


def test_powercurve_never_produces_the_negative_zero_code():
    c = qc.PowerCurve(50, 2, 10)
    for x in [-0.0, -5e-324, -1e-300, -(50 / 511**2) / 5]:    # all round to m = 0
        assert codes_both(c, x) == 0
        assert same(roundtrip_both(c, x), 0.0)                  # exactly +0.0
    assert not c.valid(1 << 9)
    with pytest.raises(qc.DecodeError):
        c.dequantize(1 << 9)
    with pytest.raises(qc.DecodeError, match="row 1"):
        c.dequantize(np.array([0, 1 << 9], dtype=np.uint32))


def test_grid_near_zero_and_negative_zero():
    g = qc.Grid(1.0, 4, 4)
    assert codes_both(g, -0.0) == codes_both(g, 0.0) == 0
    for x in TINY:
        assert abs(roundtrip_both(g, x) - x) <= g.max_error


def test_half_subnormals_and_signed_zero_match_numpy():
    h = qc.Half()
    xs = [0.0, -0.0, 5e-324, -5e-324, 2.0**-24, -(2.0**-24), 2.0**-25, 2.0**-25 * (1 + 2**-52),
          3 * 2.0**-26, 2.0**-14, down(2.0**-14), 2.0**-14 - 2.0**-24, 1e-310]
    want = np.array(xs).astype(np.float16).view(np.uint16).tolist()
    assert [codes_both(h, x) for x in xs] == want
    assert want[:2] == [0, 0x8000] and want[4] == 1 and want[6] == 0
    for x in xs:
        assert same(roundtrip_both(h, x), float(np.float16(x)))


@pytest.mark.parametrize("c", [qc.Quat(9), qc.UnitVector(12)], ids=repr)
def test_tiny_and_huge_unit_inputs_normalize(c):
    k = 4 if isinstance(c, qc.Quat) else 3
    ones = tuple([1.0] * k)
    axis = tuple([1.0] + [0.0] * (k - 1))
    for v, like in [((5e-324,) + (0.0,) * (k - 1), axis), ((-5e-324,) + (-0.0,) * (k - 1), axis if k == 4 else None),
                    ((1e-310,) * k, ones), ((1e308,) * k, ones), ((-1e308,) * k, None if k == 3 else ones)]:
        code = c.quantize(v)
        assert c.quantize(np.array([v, v])).tolist() == [code, code]
        if like is not None:
            assert code == c.quantize(like), v
        back = c.dequantize(code)
        assert abs(math.sqrt(sum(x * x for x in back)) - 1) < 1e-12


def test_nearlyzero_negative_zero_and_nan():
    c = qc.NearlyZero(qc.Bounded(-1, 1, 8), 0.01)
    assert c.quantize(-0.0) == (0, 0)
    assert c.quantize(np.array([-0.0, 5e-324])).tolist() == [[0, 0], [0, 0]]
    assert same(c.roundtrip(-0.0), 0.0)
    # NaN is not "nearly zero": it is sent with the flag set, as the inner codec's code 0
    assert c.quantize(NAN) == (1, 0)
    assert c.quantize(np.array([NAN])).tolist() == [[1, 0]]
    assert c.quantize(-INF) == (1, 0) and c.quantize(INF) == (1, 255)


# --------------------------------------------------------------------- range ends, one ulp

# codec, [(x, code, clamped)] ; "clamped" is what a schema counts (and strict=True rejects)
ENDS = [
    (qc.Bounded(-1, 1, 8), [(-1.0, 0, False), (1.0, 255, False), (up(1.0), 255, True),
                            (down(-1.0), 0, True), (down(1.0), 255, False), (up(-1.0), 0, False)]),
    (qc.Bounded(-1, 1, 8, mode="bins"), [(-1.0, 0, False), (1.0, 255, False), (up(1.0), 255, True),
                                         (down(-1.0), 0, True), (down(1.0), 255, False)]),
    (qc.Fixed(0.5, 8), [(63.5, 127, False), (up(63.5), 127, False), (down(63.75), 127, False),
                        (63.75, 127, True), (-64.0, -128, False), (down(-64.0), -128, False),
                        (-64.25, -128, True), (up(-64.25), -128, False)]),
    (qc.Fixed(0.5, 7, signed=False, offset=-10.0), [(-10.0, 0, False), (down(-10.0), 0, False),
                                                     (-10.25, 0, True), (53.5, 127, False), (53.75, 127, True)]),
    (qc.PowerCurve(50, 2, 10), [(50.0, 511, False), (up(50.0), 511, True), (-50.0, 1023, False),
                                (down(-50.0), 1023, True), (down(50.0), 511, False)]),
    (qc.Grid(1.0, 4, 4), [(down(8.0), 127, False), (8.0, 127, True), (-8.0, 128, False),
                          (down(-8.0), 128, True), (up(-8.0), 128, False)]),
    (qc.Angle(8), [(TAU, 0, False), (down(TAU), 0, False), (up(TAU), 0, False), (math.pi, 128, False),
                   (-TAU / 512, 255, False), (down(0.0), 0, False), (3 * TAU + TAU / 256, 1, False)]),
    (qc.Angle(8, signed=True, unit="deg"), [(180.0, 128, False), (-180.0, 128, False), (360.0, 0, False),
                                            (down(360.0), 0, False), (-0.0, 0, False)]),
]


@pytest.mark.parametrize("c, cases", ENDS, ids=[repr(e[0]) for e in ENDS])
def test_range_ends_and_one_ulp_past(c, cases):
    s = qc.Schema("Ends", [("v", c)])
    strict = qc.Schema("Ends", [("v", c)], strict=True)
    for x, code, clamped in cases:
        assert codes_both(c, x) == code, x
        s.reset_clamped()
        assert s.quantize({"v": x}) == (code,)
        assert s.clamped["v"] == int(clamped), x
        s.reset_clamped()
        assert s.quantize_many({"v": np.array([0.0, x])})["v"].tolist()[1] == code
        assert s.clamped["v"] == int(clamped), x
        if clamped:
            with pytest.raises(qc.RangeError, match="field 'v'"):
                strict.encode({"v": x})
            with pytest.raises(qc.RangeError, match="field 'v': row 1"):
                strict.encode_many({"v": np.array([0.0, x])})
        else:
            assert strict.decode(strict.encode({"v": x})) == {"v": c.dequantize(code)}


def test_bounded_ends_decode_exactly():
    c = qc.Bounded(-2048, 2048, 20)
    assert c.roundtrip(-2048.0) == -2048.0 and c.roundtrip(2048.0) == 2048.0
    assert c.roundtrip(np.array([-2048.0, 2048.0, up(2048.0)])).tolist() == [-2048.0, 2048.0, 2048.0]


def test_angle_signed_half_turn_decodes_to_minus_half_turn():
    c = qc.Angle(8, signed=True)
    assert c.roundtrip(math.pi) == -math.pi
    assert c.roundtrip(np.array([math.pi]))[0] == -math.pi
    assert qc.Angle(8).roundtrip(down(TAU)) == 0.0


def test_half_overflow_edges_match_numpy():
    h = qc.Half()
    xs = [65504.0, 65519.99, 65520.0, -65520.0, up(65504.0), 1e300, -1e300, 2.0**15 * (2 - 2**-11)]
    with np.errstate(over="ignore"):
        want = np.array(xs).astype(np.float16).view(np.uint16).tolist()
    assert want[:4] == [0x7BFF, 0x7BFF, 0x7C00, 0xFC00]
    assert [codes_both(h, x) for x in xs] == want


@pytest.mark.parametrize("c, lo, hi", [(qc.UInt(8), 0, 255), (qc.Int(8), -128, 127), (qc.UInt(64), 0, 2**64 - 1),
                                       (qc.Int(64), -(2**63), 2**63 - 1), (qc.Bool(), 0, 1), (qc.Enum(3), 0, 2),
                                       (qc.UInt(1), 0, 1), (qc.Int(1), -1, 0)], ids=repr)
def test_exact_range_ends(c, lo, hi):
    for v in (lo, hi):
        assert c.dequantize(c.quantize(v)) == (bool(v) if isinstance(c, qc.Bool) else v)
        assert c.valid(c.quantize(v))
    arr = c.quantize(np.array([lo, hi], dtype=np.uint64 if hi >= 2**63 else np.int64))
    assert [int(v) for v in arr] == [lo, hi]
    for v in (lo - 1, hi + 1):
        with pytest.raises(qc.RangeError, match=str(v)):
            c.quantize(v)
        assert not c.valid(v)
    if hi + 1 < 2**63:
        with pytest.raises(qc.RangeError, match="row 1"):
            c.quantize(np.array([lo, hi + 1], dtype=np.int64))
    if lo - 1 >= -(2**63) and hi < 2**63:
        with pytest.raises(qc.RangeError, match="row 2"):
            c.quantize(np.array([lo, hi, lo - 1], dtype=np.int64))


def test_nearlyzero_threshold_is_inclusive():
    c = qc.NearlyZero(qc.Bounded(-1, 1, 8), 0.01)
    for x in (0.01, -0.01):
        assert c.quantize(x) == (0, 0)
    assert c.quantize(up(0.01))[0] == 1 and c.quantize(down(-0.01))[0] == 1
    arr = c.quantize(np.array([0.01, up(0.01), -0.01, down(-0.01)]))
    assert arr[:, 0].tolist() == [0, 1, 0, 1]
    v = qc.NearlyZero(qc.Vector(qc.Bounded(-1, 1, 8), qc.Bounded(-1, 1, 8)), 0.01)
    assert v.quantize((0.01, -0.01))[0] == 0
    assert v.quantize((0.01, down(-0.01)))[0] == 1
    assert v.quantize(np.array([[0.01, -0.01], [up(0.01), 0.0]]))[:, 0].tolist() == [0, 1]


# ------------------------------------------------------------------------ hostile codes

@pytest.mark.parametrize("c, bad", [(qc.Bounded(-1, 1, 8), [256, -1, 2**64, 2**200]),
                                    (qc.PowerCurve(50, 2, 10), [512, 1024, -1]),
                                    (qc.Enum(3), [3, 4, -1]), (qc.UInt(8), [256, -1]),
                                    (qc.Int(8), [128, -129]), (qc.Half(), [65536, -1]),
                                    (qc.Fixed(0.5, 8), [128, -129]), (qc.Angle(8), [256])], ids=lambda v: repr(v))
def test_invalid_codes_raise_decode_error_and_valid_never_raises(c, bad):
    for code in bad:
        assert c.valid(code) is False
        with pytest.raises(qc.DecodeError):
            c.dequantize(code)
    fitting = [b for b in bad if -(2**63) <= b < 2**63]
    if fitting:
        assert not np.any(c.valid(np.array(fitting, dtype=np.int64)))
        with pytest.raises(qc.DecodeError, match="row 1"):
            c.dequantize(np.array([0, fitting[0]], dtype=np.int64))


# ---------------------------------------------------------------------------- empty arrays

EMPTY_CASES = [
    (qc.Bounded(-1, 1, 8), (0,), (0,)),
    (qc.Fixed(0.5, 40), (0,), (0,)),
    (qc.Half(), (0,), (0,)),
    (qc.Grid(64.0, 20, 16), (0,), (0,)),
    (qc.UInt(8), (0,), (0,)),
    (qc.Enum(["a", "b"]), (0,), (0,)),
    (qc.Quat(9), (0, 4), (0,)),
    (qc.UnitVector(10), (0, 3), (0,)),
    (qc.Vector(qc.Bounded(-1, 1, 8), qc.UInt(4)), (0, 2), (0, 2)),
    (qc.NearlyZero(qc.Bounded(-1, 1, 8), 0.1), (0,), (0, 2)),
    (qc.NearlyZero(qc.Vector(qc.Bounded(-1, 1, 8), qc.Bounded(-1, 1, 8)), 0.1), (0, 2), (0, 3)),
]


@pytest.mark.parametrize("c, vshape, cshape", EMPTY_CASES, ids=[repr(e[0]) for e in EMPTY_CASES])
def test_empty_arrays(c, vshape, cshape):
    for dt in (np.float64, np.float32):
        codes = c.quantize(np.empty(vshape, dtype=dt))
        assert codes.shape == cshape and codes.dtype.kind in "iu"
        back = c.roundtrip(np.empty(vshape, dtype=dt))
        assert back.shape == vshape
    values = c.dequantize(np.empty(cshape, dtype=codes.dtype))
    assert values.shape == vshape
    assert c.valid(np.empty(cshape, dtype=codes.dtype)).shape == cshape[:1]


def test_empty_streams_and_batches():
    assert qc.pack(np.empty(0, dtype=np.uint32), 7) == b""
    assert qc.pack([], 64) == b""
    assert qc.unpack(b"", 0, 13).shape == (0,)
    r = qc.BitReader(b"")
    assert r.read_array(0, 64).shape == (0,)
    assert r.read(0) == 0
    r.finish()
    with pytest.raises(qc.DecodeError):
        r.read(1)
    w = qc.BitWriter()
    w.write_array(np.empty(0, dtype=np.int64), 5)
    assert w.getvalue() == b"" and w.bit_length == 0
    s = qc.Schema("E", [("p", qc.Vector(qc.Bounded(-1, 1, 8), qc.Bounded(-1, 1, 8))), ("q", qc.Quat(9)),
                        ("e", qc.Enum(["a", "b"])), ("n", qc.NearlyZero(qc.Bounded(-1, 1, 8), 0.1))])
    cols = {"p": np.empty((0, 2)), "q": np.empty((0, 4)), "e": np.empty(0, dtype=np.uint32), "n": np.empty(0)}
    assert s.encode_many(cols) == b""
    out = s.decode_many(b"", 0)
    assert {k: v.shape for k, v in out.items()} == {"p": (0, 2), "q": (0, 4), "e": (0,), "n": (0,)}
    with pytest.raises(qc.DecodeError, match="too long"):
        s.decode_many(b"\x00", 0)
    with pytest.raises(qc.DecodeError):
        s.decode(b"")
    enc = qc.SnapshotEncoder(s)
    dec = qc.SnapshotDecoder.from_hello(s, enc.hello())
    view = dec.decode(enc.encode(7, s.snapshot(np.empty(0, dtype=np.uint64), cols)))
    assert view.seq == 7 and len(view.ids) == 0 and view.records() == {}
    assert view.columns["q"].shape == (0, 4)


# ------------------------------------------- non-contiguous, byte-swapped, read-only arrays

def _variants(x):
    """(name, array) views of x's values that are not plain C-contiguous native arrays."""
    big = np.zeros((2 * x.shape[0],) + x.shape[1:], dtype=x.dtype)
    big[::2] = x
    ro = x.copy()
    ro.setflags(write=False)
    fortran = np.asfortranarray(x)
    swapped = x.astype(x.dtype.newbyteorder(">" if x.dtype.byteorder in "=<" else "<"))
    ro_swapped_strided = big.astype(swapped.dtype)[::2]
    ro_swapped_strided.setflags(write=False)
    out = [("strided", big[::2]), ("read-only", ro), ("byte-swapped", swapped),
           ("read-only byte-swapped strided", ro_swapped_strided),
           ("read-only frombuffer", np.frombuffer(x.tobytes(), dtype=x.dtype).reshape(x.shape))]
    if x.ndim == 2:
        out.append(("fortran", fortran))
        out.append(("transposed view", np.ascontiguousarray(x.T).T))
    return out


def _values(c, rng, n=40):
    if isinstance(c, qc.Quat):
        return rng.normal(size=(n, 4))
    if isinstance(c, qc.UnitVector):
        return rng.normal(size=(n, 3))
    if isinstance(c, (qc.Vector, qc.NearlyZero)):
        k = len(c.inner.codecs) if isinstance(c, qc.NearlyZero) and isinstance(c.inner, qc.Vector) else \
            (len(c.codecs) if isinstance(c, qc.Vector) else 0)
        a = rng.uniform(-1.2, 1.2, (n, k) if k else n)
        a[::5] = 0.0
        return a
    if isinstance(c, (qc.UInt, qc.Enum, qc.Bool)):
        return rng.integers(0, 2 if isinstance(c, qc.Bool) else 3, n).astype(np.int64)
    a = rng.uniform(-70, 70, n)
    a[:6] = [NAN, INF, -INF, -0.0, 5e-324, 1e300]
    return a


LAYOUT_CODECS = [qc.Bounded(-1, 1, 12), qc.Fixed(0.5, 8), qc.Angle(10, signed=True), qc.PowerCurve(50, 2, 10),
                 qc.Half(), qc.Grid(1.0, 8, 8), qc.UInt(8), qc.Enum(3), qc.Bool(), qc.Quat(9), qc.UnitVector(10),
                 qc.Vector(qc.Bounded(-1, 1, 8), qc.Fixed(0.01, 12)),
                 qc.NearlyZero(qc.Vector(qc.Bounded(-1, 1, 8), qc.Bounded(-1, 1, 8)), 0.1),
                 qc.NearlyZero(qc.Bounded(-1, 1, 8), 0.1)]


@pytest.mark.parametrize("c", LAYOUT_CODECS, ids=repr)
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_array_layouts_are_read_never_modified(c, dt):
    with np.errstate(over="ignore"):
        x = _values(c, np.random.default_rng(7)).astype(dt)
    want_q = c.quantize(np.ascontiguousarray(x))
    want_rt = c.roundtrip(np.ascontiguousarray(x))
    for name, v in _variants(x):
        before = v.copy()
        assert np.array_equal(c.quantize(v), want_q), name
        assert np.array_equal(c.roundtrip(v), want_rt, equal_nan=True), name
        assert np.array_equal(v, before, equal_nan=True) and v.dtype == before.dtype, name
    codes = want_q
    want_dq = c.dequantize(codes)
    for name, v in _variants(codes):
        before = v.copy()
        assert np.array_equal(c.dequantize(v), want_dq, equal_nan=True), name
        assert np.array_equal(c.valid(v), c.valid(codes)), name
        assert np.array_equal(v, before), name


def test_small_hostile_arrays_as_one_value():
    q = qc.Quat(9)
    v = np.array([0.1, -0.2, 0.3, 0.9], dtype=">f4")
    v.setflags(write=False)
    assert q.quantize(v) == q.quantize(tuple(float(t) for t in v))
    strided = np.array([0.1, 9, -0.2, 9, 0.3, 9, 0.9, 9])[::2]
    assert q.quantize(strided) == q.quantize((0.1, -0.2, 0.3, 0.9))
    b = qc.Bounded(-1, 1, 8)
    assert b.quantize(np.float32(0.25)) == b.quantize(np.array([0.25], dtype=">f8"))[0]
    assert b.quantize(np.array(0.25, dtype=">f8")) == b.quantize(0.25)


HUGE_INT_CODECS = [
    qc.Bounded(0, 1, 8), qc.Bounded(-1, 1, 8, mode="bins"), qc.Fixed(0.5, 8), qc.Fixed(0.5, 8, signed=False),
    qc.Fixed(1.0, 64), qc.Angle(8), qc.PowerCurve(10, 2, 8), qc.Half(), qc.Grid(1.0, 8, 8),
    qc.UInt(8), qc.Int(8), qc.UInt(64), qc.Bool(), qc.Enum(3),
    qc.NearlyZero(qc.Bounded(0, 1, 8), 0.1), qc.NearlyZero(qc.Fixed(0.5, 8), 0.1), qc.NearlyZero(qc.UInt(8), 0.1),
    qc.Vector(qc.Bounded(0, 1, 8), qc.Fixed(0.5, 8)),
    qc.NearlyZero(qc.Vector(qc.Bounded(0, 1, 8), qc.Bounded(-1, 1, 8)), 0.1),
    qc.Quat(9), qc.UnitVector(8),
]


def _outcome(f):
    try:
        return f()
    except (qc.RangeError, TypeError) as e:
        return type(e)


@pytest.mark.parametrize("h", [10**400, -10**400, 2**1024, 2**64], ids=["1e400", "-1e400", "2**1024", "2**64"])
@pytest.mark.parametrize("c", HUGE_INT_CODECS, ids=repr)
def test_huge_python_ints_per_value_as_in_a_schema(c, h):
    # An int too large for a double is +-inf on every float path (NearlyZero's flag test once
    # raised OverflowError); the per-value calls give what a schema gives.
    x = h if c.ncomp == 1 else (h,) + (0,) * (c.ncomp - 1)
    s = qc.Schema("S", [("a", c)])
    q = _outcome(lambda: c.quantize(x))
    assert q == _outcome(lambda: s.quantize({"a": x})[0])
    assert _outcome(lambda: c.roundtrip(x)) == _outcome(lambda: s.roundtrip({"a": x})["a"])
    if isinstance(c, (qc.Quat, qc.UnitVector)) and abs(h) >= 2**1024:      # +-inf: non-finite
        assert q is qc.RangeError
    if c == qc.NearlyZero(qc.Bounded(0, 1, 8), 0.1):
        assert q == ((1, 255) if h > 0 else (1, 0))


@pytest.mark.parametrize("x, err", [(np.array([1 + 1j]), TypeError), (np.array(["1.0"]), TypeError),
                                    (np.array([1.0], dtype=object), TypeError),
                                    (np.array(["2020-01-01"], dtype="datetime64[D]"), TypeError)])
def test_unsafe_dtypes_raise_type_error(x, err):
    c = qc.Bounded(-1, 1, 8)
    with pytest.raises(err):
        c.quantize(x)
    with pytest.raises(err):
        c.roundtrip(x)


def test_safe_dtypes_convert():
    c = qc.Bounded(-4, 4, 8)
    want = c.quantize(np.array([1.0, 2.0, 0.0, 1.0]))
    for a in (np.array([1, 2, 0, 1], dtype=np.int8), np.array([1, 2, 0, 1], dtype=">u2"),
              np.array([1, 2, 0, 1], dtype=np.float16), np.array([True, False, False, True])[[0, 0, 1, 0]]):
        got = c.quantize(a)
        if a.dtype == bool:
            assert got.tolist() == c.quantize(np.array([1.0, 1.0, 0.0, 1.0])).tolist()
        else:
            assert got.tolist() == want.tolist()


def test_out_must_be_writable_contiguous_and_right_dtype():
    c = qc.Bounded(-1, 1, 8)
    x = np.zeros(4)
    ro = np.empty(4, dtype=np.uint32)
    ro.setflags(write=False)
    with pytest.raises(ValueError):
        c.quantize(x, out=ro)
    with pytest.raises(ValueError):
        c.quantize(x, out=np.empty(8, dtype=np.uint32)[::2])
    with pytest.raises(TypeError):
        c.quantize(x, out=np.empty(4, dtype=np.uint16))
    with pytest.raises(ValueError):
        c.quantize(x, out=np.empty(5, dtype=np.uint32))


# ------------------------------------------------ hostile buffers for the decoders

def _buffers(data):
    ro = np.frombuffer(data, dtype=np.uint8)
    return [data, bytearray(data), memoryview(data), memoryview(bytearray(data)).toreadonly(), ro,
            memoryview(b"\x00" + data + b"\x00")[1:-1]]


def _strided(data):
    return np.frombuffer(bytes(b for x in data for b in (x, 0xEE)), dtype=np.uint8)[::2]


def test_decoders_accept_every_contiguous_buffer_and_never_modify_it():
    s = qc.Schema("B", [("b", qc.Bounded(-1, 1, 8)), ("u", qc.UInt(16)), ("q", qc.Quat(9))])
    rec = {"b": 0.5, "u": 7, "q": (0.0, 0.0, 0.0, 1.0)}
    msg = s.encode(rec)
    want = s.decode(msg)
    many = s.encode_many({"b": np.array([0.5, -0.5]), "u": np.array([1, 2]), "q": np.array([rec["q"]] * 2)})
    enc = qc.SnapshotEncoder(s)
    hello = enc.hello()
    for buf in _buffers(hello):             # the hello, through from_hello and through decode
        before = bytes(buf)
        assert qc.SnapshotDecoder.from_hello(s, buf).stream_id == enc.stream_id
        assert qc.SnapshotDecoder(s).decode(buf) is None
        assert bytes(buf) == before
    dec = qc.SnapshotDecoder.from_hello(s, hello)
    pkt = enc.encode(3, s.snapshot(np.array([4, 5], dtype=np.uint64),
                                   {"b": np.array([0.1, 0.2]), "u": np.array([1, 2]), "q": np.array([rec["q"]] * 2)}))
    for buf in _buffers(msg):
        before = bytes(buf)
        assert s.decode(buf) == want
        assert s.decode_codes(buf) == s.decode_codes(msg)
        assert bytes(buf) == before
    for buf in _buffers(many):
        assert s.decode_many(buf, 2)["u"].tolist() == [1, 2]
        assert qc.BitReader(buf).read(8) == many[0]
        assert qc.unpack(buf, 2, 8).tolist() == list(many[:2])
    for buf in _buffers(pkt):
        before = bytes(buf)
        assert dec.decode(buf).ids.tolist() == [4, 5]
        assert bytes(buf) == before


def test_non_contiguous_buffers_are_refused_with_a_clear_error():
    s = qc.Schema("B", [("b", qc.Bounded(-1, 1, 8)), ("u", qc.UInt(16))])
    msg = s.encode({"b": 0.5, "u": 7})
    assert len(msg) == 3            # (a strided view of one byte would count as contiguous)
    with pytest.raises(ValueError, match="contiguous"):
        s.decode(_strided(msg))
    with pytest.raises(ValueError, match="contiguous"):
        s.decode_many(_strided(msg), 1)
    with pytest.raises(ValueError, match="contiguous"):
        qc.BitReader(_strided(msg))
    with pytest.raises(ValueError, match="contiguous"):
        qc.unpack(_strided(msg), 1, 8)
    with pytest.raises(ValueError, match="contiguous"):
        qc.SnapshotDecoder(s).decode(_strided(msg))
    enc = qc.SnapshotEncoder(s)
    pkt = enc.encode(0, s.snapshot([1], {"b": [0.5], "u": [7]}))
    with pytest.raises(ValueError, match="contiguous"):
        qc.SnapshotDecoder.from_hello(s, _strided(enc.hello()))
    with pytest.raises(ValueError, match="contiguous"):
        qc.SnapshotDecoder.from_hello(s, enc.hello()).decode(_strided(pkt))
    with pytest.raises(TypeError):
        s.decode("not bytes")
    with pytest.raises(TypeError):
        qc.SnapshotDecoder(s).decode(None)


def test_schema_columns_in_hostile_layouts():
    s = qc.Schema("L", [("p", qc.Vector(qc.Bounded(-10, 10, 12), qc.Bounded(-10, 10, 12), qc.Fixed(0.01, 16))),
                        ("q", qc.Quat(9)), ("n", qc.UnitVector(10)), ("v", qc.NearlyZero(qc.Bounded(-5, 5, 10), 0.1)),
                        ("h", qc.Half()), ("u", qc.UInt(8)), ("e", qc.Enum(["a", "b", "c"])), ("b", qc.Bool())])
    r = np.random.default_rng(4)
    n = 30
    cols = {"p": r.uniform(-12, 12, (n, 3)), "q": r.normal(size=(n, 4)), "n": r.normal(size=(n, 3)),
            "v": np.where(r.random(n) < 0.3, 0.0, r.uniform(-6, 6, n)), "h": r.normal(scale=1e4, size=n),
            "u": r.integers(0, 256, n), "e": r.integers(0, 3, n), "b": r.random(n) < 0.5}
    cols["h"][:3] = [NAN, -INF, -0.0]
    want = s.encode_many(cols)
    want_codes = s.quantize_many(cols)
    ids = np.arange(n, dtype=np.uint64)
    want_snap = s.snapshot(ids, cols).codes
    variants = {name: dict(cols) for name, _ in _variants(cols["p"])}
    for k, a in cols.items():
        for name, v in _variants(a):
            variants[name][k] = v
    for name, vcols in variants.items():
        before = {k: v.copy() for k, v in vcols.items()}
        assert s.encode_many(vcols) == want, name
        got = s.quantize_many(vcols)
        assert all(np.array_equal(got[k], want_codes[k]) for k in want_codes), name
        snap = s.snapshot(ids, vcols).codes
        assert all(np.array_equal(snap[k], want_snap[k]) for k in want_snap), name
        assert all(np.array_equal(vcols[k], before[k], equal_nan=True) for k in vcols), name
    codes_variants = {name: dict(want_codes) for name, _ in _variants(want_codes["p"])}
    for k, a in want_codes.items():
        for name, v in _variants(a):
            codes_variants[name][k] = v
    want_values = s.dequantize_many(want_codes)
    for name, vcodes in codes_variants.items():
        got = s.dequantize_many(vcodes)
        assert all(np.array_equal(got[k], want_values[k], equal_nan=True) for k in got), name
