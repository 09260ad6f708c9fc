"""The codec protocol of SPEC sections 0-2 on the compiled core: construction, identity, the
per-value and array paths, dtypes, out=, hostile inputs, validity and the error bounds."""

import copy
import json
import math
import pickle
import re

import numpy as np
import pytest

import quantcodec as qc

RNG = np.random.default_rng(20261130)

FLOAT_CODECS = [
    qc.Bounded(-2048, 2048, 20),
    qc.Bounded(-4, 4, 10, mode="bins"),
    qc.Bounded(0.0, 1.0, 1),
    qc.Bounded(-1.5, 3.25, 32),
    qc.Fixed(1e-7, 32),
    qc.Fixed(0.01, 16, signed=False, offset=-100.0),
    qc.Fixed(0.5, 64),
    qc.Angle(16),
    qc.Angle(12, signed=True, unit="deg"),
    qc.PowerCurve(50, 2, 10),
    qc.PowerCurve(10, 1, 8),
    qc.Half(),
    qc.Grid(64.0, 20, 16),
    qc.Grid(1.0, 32, 32),
]
EXACT_CODECS = [qc.UInt(8), qc.UInt(64), qc.Int(8), qc.Int(64), qc.Bool(), qc.Enum(["idle", "walk", "run"]), qc.Enum(5), qc.Enum(1)]
MULTI_CODECS = [qc.Quat(9), qc.Quat(20), qc.Quat(4, mode="bins"), qc.UnitVector(12), qc.UnitVector(32)]
COMPOSITE_CODECS = [
    qc.Vector(qc.Bounded(-2048, 2048, 18), qc.Bounded(-64, 192, 14), qc.Bounded(-2048, 2048, 18)),
    qc.Vector(qc.Fixed(0.001, 20), qc.UInt(4)),
    qc.NearlyZero(qc.Vector(*[qc.PowerCurve(50, 2, 10)] * 3), 0.01),
    qc.NearlyZero(qc.Bounded(-10, 10, 12), 0.05),
]
ALL_CODECS = FLOAT_CODECS + EXACT_CODECS + MULTI_CODECS + COMPOSITE_CODECS


# ----------------------------------------------------------------------------------------------
# identity: ==, hash, pickle, repr, spec

@pytest.mark.parametrize("codec", ALL_CODECS, ids=repr)
def test_identity(codec):
    clone = qc.codec_from_spec(codec.spec())
    assert clone == codec and hash(clone) == hash(codec)
    assert pickle.loads(pickle.dumps(codec)) == codec
    assert copy.deepcopy(codec) == codec
    import json
    assert qc.codec_from_spec(json.loads(json.dumps(codec.spec()))) == codec
    assert eval(repr(codec), {**vars(qc), "inf": math.inf}) == codec
    with pytest.raises(AttributeError):
        codec.bits = 3
    with pytest.raises(AttributeError):
        codec.something = 1


def test_repr_and_equality_by_parameters():
    assert repr(qc.Bounded(-2048, 2048, 20)) == "Bounded(min=-2048.0, max=2048.0, bits=20, mode='endpoints')"
    assert qc.Bounded(-2048, 2048, 20) == qc.Bounded(-2048.0, 2048.0, 20)
    assert qc.Bounded(-2048, 2048, 20) != qc.Bounded(-2048, 2048, 20, mode="bins")
    assert qc.Bounded(0, 1, 8) != qc.UInt(8)
    assert len({qc.Quat(9), qc.Quat(9), qc.Quat(10)}) == 2
    assert repr(qc.Enum(["a", "b"])) == "Enum(['a', 'b'])"
    assert repr(qc.Bool()) == "Bool()"


def test_bits():
    assert qc.Quat(9).bits == 29
    assert qc.Quat(10).bits == 32
    assert qc.UnitVector(12).bits == 24
    assert qc.Enum(["idle", "walk", "run", "jump"]).bits == 2
    assert qc.Enum(5).bits == 3
    assert qc.Enum(1).bits == 0
    assert qc.Grid(64.0, 20, 16).bits == 36
    assert qc.NearlyZero(qc.Vector(*[qc.PowerCurve(50, 2, 10)] * 3), 0.01).bits == 31
    assert qc.Vector(qc.Bounded(-2048, 2048, 18), qc.Bounded(-64, 192, 14), qc.Bounded(-2048, 2048, 18)).bits == 50


# ----------------------------------------------------------------------------------------------
# construction errors name the parameter and the value

@pytest.mark.parametrize("make, words", [
    (lambda: qc.Bounded(0, 1, 0), ["bits", "0"]),
    (lambda: qc.Bounded(0, 1, 33), ["bits", "33"]),
    (lambda: qc.Bounded(1, 1, 8), ["min", "max"]),
    (lambda: qc.Bounded(2, 1, 8), ["min", "max"]),
    (lambda: qc.Bounded(float("nan"), 1, 8), ["min", "nan"]),
    (lambda: qc.Bounded(0, float("inf"), 8), ["max", "inf"]),
    (lambda: qc.Bounded(-1e308, 1e308, 8), ["range"]),
    (lambda: qc.Bounded(-1e300, 1e300, 32), ["2**bits", "min=-1e+300", "max=1e+300", "bits=32"]),
    (lambda: qc.Bounded(-1e300, 1e300, 32, mode="bins"), ["2**bits", "min=-1e+300", "max=1e+300", "bits=32"]),
    (lambda: qc.Bounded(-1.7e308, -1.6e308, 16), ["2**bits", "min=-1.7e+308", "max=-1.6e+308", "bits=16"]),
    (lambda: qc.Fixed(1e300, 64), ["non-finite", "step=1e+300", "bits=64", "offset=0.0"]),
    (lambda: qc.Fixed(1e290, 64, signed=False), ["non-finite", "step=1e+290", "bits=64"]),
    (lambda: qc.Fixed(1e300, 20, offset=1.797e308), ["non-finite", "code 524287", "offset=1.797e+308"]),
    (lambda: qc.Grid(1e300, 63, 1), ["non-finite", "cell_size=1e+300", "cell_bits=63", "offset_bits=1"]),
    (lambda: qc.Bounded(0, 1, 8, mode="round"), ["mode", "round"]),
    (lambda: qc.Bounded(0, 1, 8.0), ["bits", "8.0"]),
    (lambda: qc.Bounded("0", 1, 8), ["min", "'0'"]),
    (lambda: qc.Fixed(0, 16), ["step", "0"]),
    (lambda: qc.Fixed(-0.1, 16), ["step", "-0.1"]),
    (lambda: qc.Fixed(0.1, 65), ["bits", "65"]),
    (lambda: qc.Fixed(0.1, 16, offset=float("nan")), ["offset", "nan"]),
    (lambda: qc.Angle(0), ["bits", "0"]),
    (lambda: qc.Angle(33), ["bits", "33"]),
    (lambda: qc.Angle(8, unit="grad"), ["unit", "grad"]),
    (lambda: qc.PowerCurve(0, 2, 8), ["max", "0"]),
    (lambda: qc.PowerCurve(1, 0.5, 8), ["pow", "0.5"]),
    (lambda: qc.PowerCurve(1, 2, 1), ["bits", "1"]),
    (lambda: qc.UInt(0), ["bits", "0"]),
    (lambda: qc.Int(65), ["bits", "65"]),
    (lambda: qc.Enum([]), ["labels"]),
    (lambda: qc.Enum(["a", "a"]), ["duplicate", "a"]),
    (lambda: qc.Enum(0), ["count", "0"]),
    (lambda: qc.Quat(1), ["bits", "1"]),
    (lambda: qc.Quat(21), ["bits", "21"]),
    (lambda: qc.UnitVector(1), ["bits", "1"]),
    (lambda: qc.UnitVector(33), ["bits", "33"]),
    (lambda: qc.Grid(0, 8, 8), ["cell_size", "0"]),
    (lambda: qc.Grid(1, 40, 30), ["cell_bits", "offset_bits", "70"]),
    (lambda: qc.NearlyZero(qc.Bounded(0, 1, 8), -0.1), ["threshold", "-0.1"]),
    (lambda: qc.NearlyZero(qc.Quat(9), 0.1), ["inner"]),
    (lambda: qc.Vector(qc.Quat(9)), ["component 0"]),
    (lambda: qc.Vector(), ["at least one"]),
])
def test_bad_parameters(make, words):
    with pytest.raises(qc.SchemaError) as e:
        make()
    for w in words:
        assert w in str(e.value)
    assert isinstance(e.value, ValueError) and isinstance(e.value, qc.CodecError)


def test_codec_from_spec_errors():
    with pytest.raises(qc.SchemaError, match="unknown codec kind"):
        qc.codec_from_spec({"kind": "Float"})
    with pytest.raises(qc.SchemaError, match="missing"):
        qc.codec_from_spec({"kind": "NearlyZero", "inner": {"kind": "Bool"}})
    with pytest.raises(qc.SchemaError):
        qc.codec_from_spec({"kind": "Bounded", "min": 0, "max": 1, "bits": 8, "colour": 1})
    with pytest.raises(qc.SchemaError):
        qc.codec_from_spec([1, 2])


def _nest(wrap, depth=20000):
    c = {"kind": "Bool"}
    for _ in range(depth):
        c = wrap(c)
    return c


@pytest.mark.parametrize("wrap, words", [
    (lambda c: {"kind": "Vector", "codecs": [c]}, ["Vector", "component 0", "scalar codec", "Vector spec"]),
    (lambda c: {"kind": "NearlyZero", "inner": c, "threshold": 0.1}, ["NearlyZero", "inner", "NearlyZero spec"]),
    (lambda c: {"kind": "NearlyZero", "inner": {"kind": "Vector", "codecs": [c]}, "threshold": 0.1},
     ["Vector", "component 0", "NearlyZero spec"]),
    (lambda c: {"kind": "Vector", "codecs": [{"kind": "Bool"}, {"kind": "NearlyZero", "inner": c, "threshold": 0}]},
     ["Vector", "component 1", "NearlyZero spec"]),
], ids=["Vector", "NearlyZero", "NearlyZero(Vector)", "Vector(NearlyZero)"])
def test_codec_from_spec_deeply_nested_is_a_schema_error(wrap, words):
    # The nested kind is checked before recursing: 20000 levels once overflowed the C stack
    # (Cython functions have no recursion limit) and killed the process.
    spec = _nest(wrap)
    with pytest.raises(qc.SchemaError) as e:
        qc.codec_from_spec(spec)
    for w in words:
        assert w in str(e.value)
    with pytest.raises(qc.SchemaError, match="field 'a'"):
        qc.Schema.from_spec({"name": "s", "version": 1, "fields": [{"name": "a", "codec": spec}]})


def test_codec_from_spec_nested_kinds():
    for bad in ("Quat", "UnitVector"):
        with pytest.raises(qc.SchemaError, match=f"component 0 must be a scalar codec, got a {bad} spec"):
            qc.codec_from_spec({"kind": "Vector", "codecs": [{"kind": bad, "bits": 9}]})
        with pytest.raises(qc.SchemaError, match=f"inner must be a scalar codec or a Vector, got a {bad} spec"):
            qc.codec_from_spec({"kind": "NearlyZero", "inner": {"kind": bad, "bits": 9}, "threshold": 0.1})
    with pytest.raises(qc.SchemaError, match="codecs must be a list"):
        qc.codec_from_spec({"kind": "Vector", "codecs": {"kind": "Bool"}})
    # the deepest legal nesting still builds
    spec = {"kind": "NearlyZero", "threshold": 0.01,
            "inner": {"kind": "Vector", "codecs": [{"kind": "Bool"}, {"kind": "Bounded", "min": 0, "max": 1, "bits": 8}]}}
    assert qc.codec_from_spec(spec) == qc.NearlyZero(qc.Vector(qc.Bool(), qc.Bounded(0, 1, 8)), 0.01)


def test_exception_hierarchy():
    for e in (qc.SchemaError, qc.RangeError, qc.DecodeError):
        assert issubclass(e, qc.CodecError) and issubclass(e, ValueError)


# ----------------------------------------------------------------------------------------------
# SPEC worked figures

def test_bounded_rules_and_figures():
    b = qc.Bounded(-4, 4, 10)
    assert b.step == 8 / 1023 and b.max_error == 4 / 1023
    assert b.quantize(-4.0) == 0 and b.dequantize(0) == -4.0
    assert b.quantize(4.0) == 1023 and b.dequantize(1023) == 4.0
    assert b.quantize(float("nan")) == 0
    assert b.quantize(5.0) == 1023 and b.quantize(-500.0) == 0
    assert b.quantize(float("inf")) == 1023 and b.quantize(float("-inf")) == 0
    bins = qc.Bounded(-4, 4, 10, mode="bins")
    assert bins.step == 8 / 1024
    # 5 and 500 both decode to 3.996 in +-4 (bins, 10 bits)
    assert round(bins.roundtrip(5.0), 3) == 3.996 == round(bins.roundtrip(500.0), 3)
    assert bins.quantize(-4.0) == 0 and bins.quantize(4.0) == 1023
    assert bins.dequantize(0) == -4 + 0.5 * 8 / 1024
    # 16 bins in +-4: 1 +- 1e-6 is on a bin edge
    b16 = qc.Bounded(-4, 4, 4, mode="bins")
    assert b16.roundtrip(1 - 1e-6) == 0.75 and b16.roundtrip(1 + 1e-6) == 1.25


@pytest.mark.parametrize("make", [
    "Bounded(-1e300, 1e300, 26)", "Bounded(-1e300, 1e300, 26, mode='bins')",
    "Bounded(-1e298, 1e298, 32)", "Bounded(-1e298, 1e298, 32, mode='bins')",
    "Bounded(-1.7976931348623157e308, -1.7e308, 4, mode='bins')",
    "Bounded(1.79e308, 1.7976931348623157e308, 7)", "Bounded(0, 2.0 ** 991, 32, mode='bins')",
    "Fixed(1e300, 19)", "Fixed(2.0 ** 960, 64)", "Fixed(2.0 ** 959, 64, signed=False)",
    "Fixed(1e300, 18, offset=1.79e308)", "Fixed(1e300, 18, signed=False, offset=-1.79e308)",
    "Grid(2.0 ** 961, 63, 1)", "Grid(1e300, 24, 40)", "Grid(1e-300, 1, 63)",
    "PowerCurve(1.7976931348623157e308, 1, 32)", "PowerCurve(1.7976931348623157e308, 3.5, 16)",
])
def test_huge_but_legal_parameters_decode_every_code_finite(make):
    # The widest parameters still accepted: every valid code, the end codes included, decodes
    # to a finite value (Bounded: within [min, max]), in order, on the per-value and array paths.
    c = eval(make, vars(qc))
    if isinstance(c, qc.Fixed) and c.signed:
        lo, hi = -(1 << (c.bits - 1)), (1 << (c.bits - 1)) - 1
    elif isinstance(c, qc.PowerCurve):
        lo, hi = 0, (1 << (c.bits - 1)) - 1
    else:
        lo, hi = 0, (1 << c.bits) - 1
    codes = sorted({max(lo, min(hi, k)) for k in
                    [lo, lo + 1, lo + 2, (lo + hi) // 2, (lo + hi) // 2 + 1, hi - 2, hi - 1, hi]
                    + [lo + (hi - lo) * i // 97 for i in range(98)]})
    values = [c.dequantize(k) for k in codes]
    assert all(math.isfinite(v) for v in values), (c, codes, values)
    if not isinstance(c, qc.Grid):      # (a Grid code holds a signed cell in its high bits)
        assert values == sorted(values)
    arr = c.dequantize(np.array(codes, dtype=c.code_dtype))
    assert np.isfinite(arr).all() and arr.tolist() == values
    if isinstance(c, qc.Bounded):
        assert all(c.min <= v <= c.max for v in values)
        assert c.mode == "bins" or (values[0] == c.min and values[-1] == c.max)
    with np.errstate(over="ignore"):
        rt = c.roundtrip(np.array([-math.inf, -1e308, 0.0, 1e308, math.inf]))
    assert np.isfinite(rt).all()


def test_bounded_for_step_says_when_the_range_allows_no_more_bits():
    with pytest.raises(qc.SchemaError, match=r"needs more than 26 bits.*2\*\*27 overflows"):
        qc.Bounded.for_step(-1e300, 1e300, 1e290)
    assert qc.Bounded.for_step(-1e300, 1e300, 4e292).bits == 26


def test_bits_for_and_for_step():
    assert qc.bits_for(1024, 0.5) == 11
    assert qc.bits_for(1024, 0.5, mode="bins") == 10
    assert qc.bits_for(64, 0.001, mode="bins") == 15
    assert qc.bits_for(1, 10) == 1 and qc.bits_for(1, 10, mode="bins") == 0
    assert qc.Bounded.for_step(-2048, 2048, 1 / 256, mode="bins").bits == 20
    assert qc.Bounded.for_step(-2048, 2048, 1 / 256).bits == 21
    assert qc.Bounded.for_error(-2048, 2048, 1 / 512, mode="bins").bits == 20
    assert qc.Bounded.for_error(-512, 512, 0.5).bits == 11
    assert qc.Bounded.for_error(0, 1, 10).bits == 1
    for r, e in [(4096, 1 / 512), (100, 0.01), (7, 0.3), (1, 1e-6)]:
        for mode in ("endpoints", "bins"):
            b = max(1, qc.bits_for(r, e, mode=mode))
            assert qc.Bounded(0, r, b, mode=mode).max_error <= e
            if b > 1:
                assert qc.Bounded(0, r, b - 1, mode=mode).max_error > e
    with pytest.raises(qc.SchemaError, match="more than 32 bits"):
        qc.Bounded.for_step(0, 1, 1e-12)
    with pytest.raises(qc.SchemaError, match="step"):
        qc.Bounded.for_step(0, 1, 0)


def test_fixed_rules():
    f = qc.Fixed(1e-7, 32)
    assert f.quantize(12.3456789) == 123456789
    assert f.code_dtype == np.int32
    g = qc.Fixed(1.0, 8)
    assert [g.quantize(v) for v in (0.5, -0.5, 1.5, -1.5, 0.49999999999999994, 127.4, 200.0, -500.0)] == \
        [1, -1, 2, -2, 0, 127, 127, -128]
    assert g.quantize(float("nan")) == 0
    assert g.quantize(float("inf")) == 127 and g.quantize(float("-inf")) == -128
    u = qc.Fixed(0.25, 4, signed=False, offset=10.0)
    assert u.quantize(10.0) == 0 and u.quantize(9.0) == 0 and u.quantize(20.0) == 15
    assert u.dequantize(3) == 10.75 and u.code_dtype == np.uint32
    big = qc.Fixed(1.0, 64)
    assert big.quantize(1e300) == 2**63 - 1 and big.quantize(-1e300) == -2**63
    assert big.code_dtype == np.int64
    assert qc.Fixed(1.0, 64, signed=False).quantize(1e300) == 2**64 - 1


def test_angle_rules():
    a = qc.Angle(16, unit="deg")
    assert a.step == 360 / 65536
    assert a.quantize(359.999) == 0 == a.quantize(0.001) == a.quantize(360.0) == a.quantize(-720.0)
    assert abs(a.roundtrip(359.999) - 0.0) < a.step
    assert a.quantize(-90.0) == a.quantize(270.0) == 49152
    assert a.quantize(float("nan")) == 0 == a.quantize(float("inf"))
    s = qc.Angle(16, signed=True, unit="deg")
    assert s.dequantize(32768) == -180.0 and s.dequantize(32767) < 180.0 and s.dequantize(65535) < 0
    r = qc.Angle(8)
    assert r.dequantize(128) == math.pi and r.step == 2 * math.pi / 256


def test_power_curve_rules():
    p = qc.PowerCurve(50, 2, 10)
    assert p.quantize(0.0) == 0 and p.dequantize(0) == 0.0
    assert p.quantize(-0.0) == 0 and p.quantize(1e-9) == 0 and p.quantize(-1e-9) == 0
    assert p.quantize(50.0) == 511 and p.quantize(-50.0) == 1023 and p.quantize(1e9) == 511
    assert p.dequantize(511) == 50.0 and p.dequantize(1023) == -50.0
    assert not p.valid(512) and p.valid(513) and not p.valid(1024) and not p.valid(-1)
    with pytest.raises(qc.DecodeError):
        p.dequantize(512)
    L = 511
    assert p.step == 50 * (1 - ((L - 1) / L) ** 2)
    assert p.max_error == 50 * (1 - ((L - 0.5) / L) ** 2)
    assert p.quantize(float("nan")) == 0


def test_half_matches_numpy_everywhere():
    h = qc.Half()
    codes = np.arange(65536, dtype=np.uint32)
    want = codes.astype(np.uint16).view(np.float16).astype(np.float64)
    got = h.dequantize(codes)
    assert np.array_equal(got.view(np.uint64), want.view(np.uint64))
    x = np.concatenate([RNG.normal(0, 1000, 100000), RNG.normal(0, 1e-5, 1000), [0.0, -0.0, 65504, 65520, 65519.99, 1e9, -1e9,
                        np.inf, -np.inf, np.nan, -np.nan, 5.96e-8, 2.98e-8, 2.9802322387695312e-08]])
    with np.errstate(over="ignore"):
        want = x.astype(np.float16).view(np.uint16).astype(np.uint32)
        x32 = x.astype(np.float32)
        want32 = x32.astype(np.float16).view(np.uint16)
    assert np.array_equal(h.quantize(x), want)
    assert np.array_equal(h.quantize(x32), want32)
    assert h.quantize(float("inf")) == 0x7C00 and h.quantize(float("-inf")) == 0xFC00
    assert math.isnan(h.roundtrip(float("nan"))) and math.copysign(1, h.roundtrip(-float("nan"))) == -1


def test_grid_rules():
    g = qc.Grid(64.0, 20, 16)
    assert g.step == 64.0 / 65536
    for x in [0.0, 1.0, -1.0, 123456.789, -33554431.9, 33554431.0, 63.99999]:
        assert abs(g.roundtrip(x) - x) <= g.max_error
    a, b = g.quantize(128.0 + 1.0), g.quantize(128.0 + 60.0)
    assert a >> 16 == b >> 16  # same cell: only the offset bits change
    assert g.quantize(float("nan")) == 0
    top = g.quantize(float("inf"))
    assert top == g.quantize(1e30) and g.roundtrip(1e30) == g.dequantize(top)
    assert g.roundtrip(-1e30) == -64.0 * 2**19 + g.step / 2
    assert g.code_dtype == np.uint64


@pytest.mark.parametrize("cell", [0.1, 0.37, 1.0, 16.0, 75.0])
def test_grid_error_is_max_error_plus_the_decode_rounding(cell):
    # docs/codecs.md, Grid: at x the error is at most max_error + 1.5 ulp(x); within 10% of
    # max_error where the step is 8 ulps of x or more, exact for power-of-two cells from 2 ulps
    for ob in (8, 16, 24, 32):
        g = qc.Grid(cell, 63 - ob, ob)
        for e in range(0, 46, 5):
            if 2.0 ** (e + 1) >= cell * 2.0 ** (62 - ob):
                break
            x = RNG.uniform(2.0**e, 2.0 ** (e + 1), 4000) * RNG.choice([-1, 1], 4000)
            err = np.abs(g.roundtrip(x) - x)
            assert np.all(err <= g.max_error + 1.5 * np.spacing(np.abs(x))), (g, e)
            ulps = g.step / np.spacing(2.0 ** (e + 1))
            if ulps >= 8:
                assert err.max() <= 1.1 * g.max_error, (g, e)
            if ulps >= 2 and math.log2(cell).is_integer():
                assert err.max() <= g.max_error, (g, e)
    # the example the page gives: a step (6e-9) finer than the doubles there (3.7e-9 apart)
    g = qc.Grid(0.1, 40, 24)
    x = RNG.uniform(2**24, 2**25, 20000)
    assert 2.4 * g.max_error < np.abs(g.roundtrip(x) - x).max() <= 2.5 * g.max_error


def test_quat_figures():
    q = qc.Quat(9)
    assert q.bits == 29
    x = (0.10, 0.21, 0.31, -0.92)
    r = q.roundtrip(x)
    n = np.array(x) / np.linalg.norm(x)
    ang = 2 * math.degrees(math.acos(min(1, abs(float(np.dot(n, r))))))
    assert ang < 0.3
    assert q.quantize(x) == q.quantize(tuple(-v for v in x))
    t = (1 / math.sqrt(2), -1 / math.sqrt(2), 0.0, 0.0)
    rt = q.roundtrip(t)
    assert abs(abs(float(np.dot(rt, t))) - 1) < 1e-5
    assert q.quantize(t) >> 27 == 0  # the first of the tied components is dropped
    for bad in [(0, 0, 0, 0), (np.nan, 0, 0, 1), (np.inf, 0, 0, 1)]:
        with pytest.raises(qc.RangeError):
            q.quantize(bad)
    arr = RNG.normal(size=(100, 4))
    arr[37] = 0
    with pytest.raises(qc.RangeError, match="row 37: zero quaternion"):
        q.quantize(arr)
    arr[37] = (1, np.nan, 0, 0)
    with pytest.raises(qc.RangeError, match="row 37: non-finite"):
        q.quantize(arr)
    assert 0.54 < q.max_error < 0.56
    assert 0.27 < qc.Quat(10).max_error < 0.28
    assert 0.068 < qc.Quat(12).max_error < 0.070


def test_unit_vector():
    u = qc.UnitVector(12)
    for v in [(0, 0, 1), (0, 0, -1), (1, 0, 0), (-1, 0, 0), (0, 1, 0), (1, 1, 1), (-1, -2, -3), (1e-300, 0, -1e-300), (1e300, 1e300, 0)]:
        r = u.roundtrip(v)
        n = np.array(v, dtype=float) / np.linalg.norm(np.array(v, dtype=float) / max(map(abs, v)))  / max(map(abs, v))
        assert abs(np.linalg.norm(r) - 1) < 1e-12
        ang = math.degrees(math.acos(min(1.0, float(np.dot(r, n / np.linalg.norm(n))))))
        assert ang <= u.max_error + 1e-9
    for bad in [(0, 0, 0), (np.nan, 0, 1), (0, -np.inf, 1)]:
        with pytest.raises(qc.RangeError):
            u.quantize(bad)
    assert qc.UnitVector(32).code_dtype == np.uint64 and qc.UnitVector(16).code_dtype == np.uint32


def test_exact_codecs():
    assert qc.UInt(8).quantize(255) == 255
    with pytest.raises(qc.RangeError, match="256"):
        qc.UInt(8).quantize(256)
    with pytest.raises(qc.RangeError):
        qc.UInt(8).quantize(-1)
    with pytest.raises(qc.RangeError, match="not an integer"):
        qc.UInt(8).quantize(2.5)
    assert qc.UInt(8).quantize(3.0) == 3
    with pytest.raises(TypeError):
        qc.UInt(8).quantize("3")
    assert qc.Int(8).quantize(-128) == -128
    with pytest.raises(qc.RangeError):
        qc.Int(8).quantize(128)
    assert qc.UInt(64).quantize(2**64 - 1) == 2**64 - 1
    with pytest.raises(qc.RangeError):
        qc.UInt(64).quantize(2**64)
    assert qc.Int(64).roundtrip(-2**63) == -2**63
    b = qc.Bool()
    assert b.quantize(True) == 1 and b.quantize(False) == 0 and b.dequantize(1) is True and b.dequantize(0) is False
    with pytest.raises(qc.RangeError):
        b.quantize(2)
    e = qc.Enum(["idle", "walk", "run", "jump"])
    assert e.quantize("run") == 2 and e.quantize(2) == 2 and e.dequantize(2) == "run"
    with pytest.raises(qc.RangeError, match="'fly'"):
        e.quantize("fly")
    with pytest.raises(qc.RangeError):
        e.quantize(4)
    with pytest.raises(qc.DecodeError):
        e.dequantize(4)
    assert not e.valid(4) and e.valid(3)
    assert qc.Enum(5).dequantize(4) == 4
    with pytest.raises(qc.DecodeError):
        qc.Enum(5).dequantize(5)
    one = qc.Enum(["only"])
    assert one.quantize("only") == 0 and one.dequantize(0) == "only" and not one.valid(1)
    # arrays carry indices
    assert np.array_equal(e.quantize(np.array([0, 3, 1])), [0, 3, 1])
    assert np.array_equal(e.dequantize(np.array([0, 3, 1], dtype=np.uint32)), [0, 3, 1])
    with pytest.raises(qc.RangeError, match="row 1"):
        qc.UInt(4).quantize(np.array([1, 16, 3]))
    with pytest.raises(qc.DecodeError, match="row 2"):
        qc.Enum(3).dequantize(np.array([0, 1, 3]))
    assert qc.Bool().dequantize(np.array([0, 1], dtype=np.uint32)).dtype == np.bool_


# The first value past each exact codec's range, exactly representable in float32 and float16
# (the bound itself, 2**31 - 1 say, is not: compared in the array's own precision it rounded to the
# value, which then passed as in range and wrapped to a wrong code).
EXACT_EDGES = [
    (qc.Int(32), 2.0**31, "-2147483648..2147483647"), (qc.Int(32), -2.0**31 - 256, "-2147483648..2147483647"),
    (qc.UInt(32), 2.0**32, "0..4294967295"), (qc.Int(31), 2.0**30, "-1073741824..1073741823"),
    (qc.UInt(31), 2.0**31, "0..2147483647"), (qc.UInt(25), 2.0**25, "0..33554431"),
    (qc.Int(64), 2.0**63, "-9223372036854775808..9223372036854775807"),
    (qc.UInt(64), 2.0**64, "0..18446744073709551615"),
    (qc.Enum(2**32), 2.0**32, "0..4294967295"), (qc.Enum(2**31), 2.0**31, "0..2147483647"),
    (qc.IntRange(0, 2**31 - 1), 2.0**31, "0..2147483647"),
    (qc.IntRange(-2**31, 2**31 - 1), 2.0**31, "-2147483648..2147483647"),
    (qc.IntRange(-2**31, 2**31 - 1), -2.0**31 - 256, "-2147483648..2147483647"),
    (qc.IntRange(2**62, 2**63 - 1), 2.0**63, "4611686018427387904..9223372036854775807"),
    (qc.Int(12), 2.0**11, "-2048..2047"), (qc.UInt(11), 2.0**11, "0..2047"),
]


def _representable(value, dtype):
    return abs(value) <= float(np.finfo(dtype).max) and float(np.asarray(value, dtype=dtype)) == value


@pytest.mark.parametrize("codec,value,span,dtype", [
    pytest.param(c, v, s, d, id=f"{c!r}-{v}-{d.__name__}") for c, v, s in EXACT_EDGES
    for d in (np.float64, np.float32, np.float16) if _representable(v, d)])
def test_exact_codecs_refuse_the_first_value_past_the_range_in_every_float_dtype(codec, value, span, dtype):
    # SPEC sections 0 and 2: compared in double precision whatever the input dtype; never clamped
    # (each value in the dtypes that hold it exactly)
    name = type(codec).__name__
    ok = float(codec.lo if name == "IntRange" else 1)          # a value inside the range
    msg = rf"{name}\.quantize: row 1: value {re.escape(str(int(value) if name == 'IntRange' else value))} outside {span}$"
    a = np.array([ok, value], dtype=dtype)
    with pytest.raises(qc.RangeError, match="^" + msg) as e:
        codec.quantize(a)
    assert e.value.row == 1
    with pytest.raises(qc.RangeError, match="row 1"):
        codec.roundtrip(a)
    if name != "Enum":                                          # (Enum takes labels and ints only)
        with pytest.raises(qc.RangeError, match=rf"outside {span}"):
            codec.quantize(dtype(value))
    s = qc.Schema("S", [("n", codec), ("v", qc.Vector(codec, codec)), ("z", qc.NearlyZero(codec, 0))])
    good = np.array([ok, ok], dtype=dtype)
    cols = {"n": good, "v": np.stack([good, good], axis=1), "z": good}
    s.encode_many(cols)
    for f, bad in (("n", a), ("v", np.stack([good, a], axis=1)), ("z", a)):
        with pytest.raises(qc.RangeError, match=rf"^field '{f}': " + msg) as e:
            s.encode_many(dict(cols, **{f: bad}))
        assert e.value.row == 1
    if value > 0:
        # the largest integer below it that the dtype holds is in range: it encodes to its exact code
        top = np.floor(np.nextafter(np.asarray(value, dtype=dtype), dtype(0)))
        assert codec.quantize(np.array([top])).tolist() == codec.quantize(np.array([int(top)], dtype=object).astype(np.uint64)).tolist()


@pytest.mark.parametrize("n", [2**31 - 1, 2**31, 2**31 + 1, 2**32 - 1, 2**32])
def test_enum_counts_up_to_2_to_the_32(n):
    # counts above 2**31 - 1 once overflowed a C int (OverflowError); up to 2**32 are legal
    e = qc.Enum(n)
    assert e.n == n and e.bits == 32 - (n <= 2**31) and e.code_dtype == np.uint32
    assert e == qc.codec_from_spec({"kind": "Enum", "count": n}) == qc.codec_from_spec(e.spec())
    assert e.spec() == {"kind": "Enum", "count": n} and repr(e) == f"Enum({n})"
    assert pickle.loads(pickle.dumps(e)) == e and hash(pickle.loads(pickle.dumps(e))) == hash(e)
    top = n - 1
    assert e.quantize(top) == top and e.dequantize(top) == top and e.roundtrip(top) == top and e.label(top) == top
    assert e.valid(top) and e.valid(0) and not e.valid(n) and not e.valid(-1)
    with pytest.raises(qc.RangeError, match=str(n)):
        e.quantize(n)
    with pytest.raises(qc.DecodeError):
        e.dequantize(n)
    a = np.array([0, top], dtype=np.uint64)
    codes = e.quantize(a)
    assert codes.dtype == np.uint32 and codes.tolist() == [0, top]
    assert e.dequantize(codes).tolist() == [0, top] and e.roundtrip(a).tolist() == [0, top]
    assert e.valid(np.array([0, top, n], dtype=np.uint64)).tolist() == [True, True, False]
    with pytest.raises(qc.RangeError, match="row 1"):
        e.quantize(np.array([0, n], dtype=np.uint64))


@pytest.mark.parametrize("n", [0, 2**32 + 1])
def test_enum_count_limits(n):
    with pytest.raises(qc.SchemaError, match=f"count must be in 1..4294967296, got {n}"):
        qc.Enum(n)
    with pytest.raises(qc.SchemaError, match="4294967296"):
        qc.codec_from_spec({"kind": "Enum", "count": n})


def test_nearly_zero():
    nz = qc.NearlyZero(qc.Vector(*[qc.PowerCurve(50, 2, 10)] * 3), 0.01)
    assert nz.quantize((0.0, 0.005, -0.01)) == (0, (0, 0, 0))
    assert nz.roundtrip((0.0, 0.005, -0.01)) == (0.0, 0.0, 0.0)
    flag, inner = nz.quantize((0.0, 0.5, 0.0))
    assert flag == 1 and inner == nz.inner.quantize((0.0, 0.5, 0.0))
    arr = np.array([[0, 0, 0], [0, 0.02, 0], [1, 2, 3]], dtype=np.float32)
    codes = nz.quantize(arr)
    assert codes.shape == (3, 4) and list(codes[:, 0]) == [0, 1, 1] and list(codes[0]) == [0, 0, 0, 0]
    assert np.array_equal(nz.dequantize(codes), nz.roundtrip(arr))
    assert nz.valid((0, (0, 0, 0))) and not nz.valid((0, (1, 0, 0))) and not nz.valid((2, (0, 0, 0)))
    assert list(nz.valid(np.array([[0, 0, 0, 0], [0, 1, 0, 0], [1, 5, 5, 5]]))) == [True, False, True]
    with pytest.raises(qc.DecodeError):
        nz.dequantize(np.array([[0, 1, 0, 0]]))
    s = qc.NearlyZero(qc.Bounded(-10, 10, 12), 0.05)
    assert s.quantize(0.04) == (0, 0) and s.roundtrip(0.04) == 0.0 and s.quantize(0.5)[0] == 1
    assert s.max_error == max(s.inner.max_error, 0.05)
    assert s.quantize(np.array([0.0, 1.0])).shape == (2, 2)


def test_nearly_zero_of_an_enum_takes_labels_as_the_enum_does():
    # SPEC section 2: Enum "encode takes a label or an index"; NearlyZero(Enum([...])) was built but
    # refused labels (TypeError). A label counts as its index for the threshold.
    labels = ["idle", "walk", "run"]
    nz = qc.NearlyZero(qc.Enum(labels), 0)
    assert [nz.quantize(v) for v in ("idle", "walk", "run", np.str_("run"), np.array("walk"))] == \
        [(0, 0), (1, 1), (1, 2), (1, 2), (1, 1)]
    assert [nz.quantize(i) for i in (0, 1, 2)] == [(0, 0), (1, 1), (1, 2)]
    assert nz.roundtrip("walk") == nz.roundtrip(1) == "walk" and nz.roundtrip("idle") == nz.roundtrip(0)
    for form in (["walk", "idle", "run"], np.array(["walk", "idle", "run"]), np.array(["walk", "idle", "run"], dtype=object)):
        assert nz.quantize(form).tolist() == nz.quantize(np.array([1, 0, 2])).tolist() == [[1, 1], [0, 0], [1, 2]]
    assert nz.quantize(np.array([["run"], ["idle"]])).shape == (2, 1, 2)
    with pytest.raises(qc.RangeError, match=r"^Enum\(\['idle', 'walk', 'run'\]\): unknown label 'fly'$"):
        nz.quantize("fly")
    with pytest.raises(qc.RangeError, match=r"^Enum.quantize: row 1: unknown label 'fly'") as e:
        nz.quantize(["walk", "fly"])
    assert e.value.row == 1
    with pytest.raises(qc.RangeError, match="has no labels"):
        qc.NearlyZero(qc.Enum(3), 0).quantize(["walk"])
    # inside a Vector: the Enum components take labels, the others numbers
    nzv = qc.NearlyZero(qc.Vector(qc.Enum(labels), qc.Bounded(-1, 1, 8)), 0.01)
    assert nzv.quantize(("idle", 0.0)) == (0, (0, 0)) and nzv.quantize(("idle", 0.5)) == nzv.quantize((0, 0.5))
    assert nzv.quantize(("run", 0.0)) == nzv.quantize((2, 0.0)) and nzv.quantize(("run", 0.0))[0] == 1
    # arrays as Vector takes them: label columns for the Enum components, numbers for the others
    # (a mixed array is str or object, which a Bounded column refuses in Vector too)
    rows = np.array([("idle", 0.0), ("run", 0.5)], dtype=object)
    for c in (nzv, nzv.inner):
        with pytest.raises(TypeError, match="expected a float or integer array, got dtype object"):
            c.quantize(rows)
    two = qc.NearlyZero(qc.Vector(qc.Enum(labels), qc.Enum(labels)), 0)
    assert two.quantize(np.array([["idle", "idle"], ["idle", "run"]])).tolist() == [[0, 0, 0], [1, 0, 2]]
    # and in a schema: records, batches and the same bytes as by index
    s = qc.Schema("T", [("state", nz), ("pose", nzv), ("pair", two)])
    rec = {"state": "walk", "pose": ("run", 0.5), "pair": ("idle", "walk")}
    assert s.encode(rec) == s.encode({"state": 1, "pose": (2, 0.5), "pair": (0, 1)})
    assert s.encode({"state": np.array("idle"), "pose": ("idle", 0.0), "pair": ["idle", np.array("idle")]}) == \
        s.encode({"state": 0, "pose": (0, 0.0), "pair": (0, 0)})
    assert s.decode(s.encode(rec))["state"] == "walk"
    cols = {"state": np.array(["walk", "idle", "run"]), "pose": np.array([[0, 0.0], [2, 0.5], [1, -0.5]]),
            "pair": np.array([["idle", "idle"], ["run", "idle"], ["idle", "walk"]])}
    by_index = dict(cols, state=np.array([1, 0, 2]), pair=np.array([[0, 0], [2, 0], [0, 1]]))
    assert s.encode_many(cols) == s.encode_many(by_index)
    codes = s.quantize_many(cols)
    assert codes["state"].tolist() == [[1, 1], [0, 0], [1, 2]] and codes["pair"].tolist() == [[0, 0, 0], [1, 2, 0], [1, 0, 1]]
    assert [s.quantize(r) for r in ({"state": "walk", "pose": (0, 0.0), "pair": ("idle", "idle")},
                                    {"state": "idle", "pose": (2, 0.5), "pair": ("run", "idle")})] == \
        [tuple(tuple(map(int, codes[f][i])) if f == "state" else (int(codes[f][i][0]), tuple(map(int, codes[f][i][1:])))
               for f in s.names) for i in (0, 1)]
    rec = {"state": "fly", "pose": (0, 0.0), "pair": (0, 0)}
    with pytest.raises(qc.RangeError, match=r"^field 'state': unknown label 'fly'"):
        s.encode(rec)
    with pytest.raises(qc.RangeError, match=r"^field 'pair'\[1\]: unknown label 'fly'"):
        s.encode(dict(rec, state=0, pair=("idle", "fly")))
    with pytest.raises(qc.RangeError, match=r"^field 'state': Enum.quantize: row 2: unknown label 'fly'") as e:
        s.encode_many(dict(cols, state=np.array(["walk", "idle", "fly"])))
    assert e.value.row == 2


def test_nearly_zero_vector_code_as_lists_reads_as_the_tuple():
    # a code through JSON comes back as [flag, [c0, c1, c2]]: ragged, so one code, not an array
    nz = qc.NearlyZero(qc.Vector(*[qc.Bounded(-1, 1, 8)] * 3), 0.01)
    code = nz.quantize((0.5, 0.2, -0.3))
    for form in ([code[0], list(code[1])], [code[0], code[1]], json.loads(json.dumps(code))):
        assert nz.valid(form) is True
        assert nz.dequantize(form) == nz.dequantize(code)
    assert nz.valid([0, [0, 0, 0]]) and nz.dequantize([0, [0, 0, 0]]) == (0.0, 0.0, 0.0)
    for bad in ([0, [1, 0, 0]], [2, [0, 0, 0]], [1, [256, 0, 0]], [1, [1, 2]]):
        assert nz.valid(bad) is False
        with pytest.raises(qc.DecodeError, match="not a valid code"):
            nz.dequantize(bad)


def test_vector():
    v = qc.Vector(qc.Bounded(-2048, 2048, 18), qc.Bounded(-64, 192, 14), qc.Bounded(-2048, 2048, 18))
    c = v.quantize((1.0, 2.0, 3.0))
    assert c == tuple(comp.quantize(x) for comp, x in zip(v.codecs, (1.0, 2.0, 3.0)))
    arr = RNG.uniform(-100, 100, (50, 3))
    codes = v.quantize(arr)
    assert codes.shape == (50, 3) and codes.dtype == np.uint32
    for j in range(3):
        assert np.array_equal(codes[:, j], v.codecs[j].quantize(arr[:, j]))
    assert np.array_equal(v.dequantize(codes), v.roundtrip(arr))
    assert v.quantize(np.array([1.0, 2.0, 3.0])) == c
    with pytest.raises(ValueError, match=r"\(\.\.\., 3\)"):
        v.quantize(np.zeros((5, 2)))
    bad = codes.copy()
    bad[7, 1] = 1 << 14
    with pytest.raises(qc.DecodeError, match=r"row 7\]?\[1\]"):
        v.dequantize(bad)
    assert v.step == tuple(c.step for c in v.codecs)


# ----------------------------------------------------------------------------------------------
# per-value and array paths agree; dtypes; out=; hostile arrays

def _inputs(codec, n=2000):
    if isinstance(codec, qc.Quat):
        return RNG.normal(size=(n, 4))
    if isinstance(codec, qc.UnitVector):
        return RNG.normal(size=(n, 3))
    if isinstance(codec, (qc.UInt, qc.Int, qc.Bool, qc.Enum)):
        lo = -(2 ** (codec.bits - 1)) if isinstance(codec, qc.Int) else 0
        hi = (2 ** (codec.bits - 1)) if isinstance(codec, qc.Int) else (codec.n if isinstance(codec, qc.Enum) else 2 ** codec.bits)
        return RNG.integers(max(lo, -2**62), min(hi, 2**62), n)
    if isinstance(codec, qc.Vector):
        if all(isinstance(c, (qc.Bounded, qc.Fixed, qc.Angle, qc.PowerCurve, qc.Half, qc.Grid)) for c in codec.codecs):
            return RNG.uniform(-60, 60, (n, len(codec.codecs)))
        return RNG.integers(0, 15, (n, len(codec.codecs)))
    if isinstance(codec, qc.NearlyZero):
        k = codec.inner.ncomp if hasattr(codec.inner, "ncomp") else 1
        x = RNG.uniform(-5, 5, (n, 3) if isinstance(codec.inner, qc.Vector) else n)
        x[::3] = 0.0
        return x
    return RNG.uniform(-3000, 3000, n)


@pytest.mark.parametrize("codec", ALL_CODECS, ids=repr)
def test_per_value_equals_array(codec):
    x = _inputs(codec, 300)
    codes = codec.quantize(x)
    assert codes.dtype == codec.code_dtype
    for i in range(0, 300, 7):
        c1 = codec.quantize(x[i].tolist() if x.ndim > 1 else x[i].item())
        c1 = (c1[0], *c1[1]) if isinstance(codec, qc.NearlyZero) and isinstance(c1[1], tuple) else c1
        assert np.array_equal(np.asarray(c1, dtype=object).astype(codes.dtype), codes[i]), (i, c1, codes[i])
        v1 = codec.dequantize(codec.quantize(x[i].tolist() if x.ndim > 1 else x[i].item()))
        if isinstance(codec, qc.Enum) and codec.labels is not None:
            assert v1 == codec.labels[codes[i]]
            continue
        assert np.allclose(np.asarray(v1, dtype=float), codec.dequantize(codes)[i], rtol=0, atol=0, equal_nan=True)
    assert np.array_equal(codec.roundtrip(x), codec.dequantize(codes), equal_nan=True)
    assert np.all(codec.valid(codes))


@pytest.mark.parametrize("codec", FLOAT_CODECS + MULTI_CODECS, ids=repr)
def test_array_inputs_of_every_layout(codec):
    x = _inputs(codec, 1000)
    want = codec.quantize(x)
    variants = {
        "float32": x.astype(np.float32),
        "noncontiguous": np.repeat(x, 2, axis=0)[::2],
        "byteswapped": x.astype(x.dtype.newbyteorder(">")),
        "fortran": np.asfortranarray(x),
        "list": x.tolist(),
    }
    ro = x.copy()
    ro.flags.writeable = False
    variants["readonly"] = ro
    for name, v in variants.items():
        before = np.array(v, copy=True)
        got = codec.quantize(v)
        if name == "float32":
            assert np.array_equal(got, codec.quantize(np.asarray(v, dtype=np.float64))), name
        else:
            assert np.array_equal(got, want), name
        assert np.array_equal(np.asarray(v), before, equal_nan=True), f"{name} modified"
    if codec.ncomp == 1:
        ints = np.arange(-50, 50)
        assert np.array_equal(codec.quantize(ints), codec.quantize(ints.astype(np.float64)))
    for bad in (np.array(["a", "b"]), np.array([1 + 2j, 3j]), np.array([object(), object()])):
        with pytest.raises(TypeError):
            codec.quantize(bad)


@pytest.mark.parametrize("codec", FLOAT_CODECS + MULTI_CODECS + COMPOSITE_CODECS[:2], ids=repr)
def test_out_arguments(codec):
    x = _inputs(codec, 500)
    codes = codec.quantize(x)
    out = np.empty_like(codes)
    assert codec.quantize(x, out=out) is out and np.array_equal(out, codes)
    vals = codec.dequantize(codes)
    vout = np.empty_like(vals)
    assert codec.dequantize(codes, out=vout) is vout and np.array_equal(vout, vals, equal_nan=True)
    r = np.empty_like(vals)
    assert codec.roundtrip(x, out=r) is r and np.array_equal(r, vals, equal_nan=True)
    f32 = np.empty(vals.shape, np.float32)
    codec.dequantize(codes, out=f32)
    assert np.array_equal(f32, vals.astype(np.float32), equal_nan=True)
    with pytest.raises(TypeError, match="dtype"):
        codec.quantize(x, out=np.empty(codes.shape, np.int8))
    with pytest.raises(ValueError, match="shape"):
        codec.quantize(x, out=np.empty((3,) + codes.shape, codes.dtype))
    with pytest.raises(TypeError):
        codec.quantize(x, out=[0] * len(x))


@pytest.mark.parametrize("codec", FLOAT_CODECS + MULTI_CODECS, ids=repr)
def test_empty_and_scalar_arrays(codec):
    shape = (0, codec.ncomp) if codec.ncomp > 1 else (0,)
    e = codec.quantize(np.empty(shape))
    assert e.shape == shape[:-1] if codec.ncomp > 1 else e.shape == (0,)
    assert codec.dequantize(e).shape == shape
    if codec.ncomp == 1:
        assert codec.quantize(np.float32(1.5)) == codec.quantize(1.5)
        assert codec.quantize(np.int16(3)) == codec.quantize(3.0)
        assert codec.quantize(np.array(2.5)).shape == ()
    else:
        v = np.ones(codec.ncomp, dtype=np.float32)
        assert codec.quantize(v) == codec.quantize(tuple([1.0] * codec.ncomp))


SHAPE_CODECS = ALL_CODECS + [qc.Vector(qc.UInt(8), qc.Int(4)), qc.Vector(qc.Bool(), qc.Bounded(0, 1, 4)),
                             qc.NearlyZero(qc.UInt(8), 0.5), qc.NearlyZero(qc.Bool(), 0.5), qc.NearlyZero(qc.Enum(3), 0.0)]


@pytest.mark.parametrize("lead", [(), (0,), (3,), (2, 3)], ids=str)
@pytest.mark.parametrize("codec", SHAPE_CODECS, ids=repr)
def test_array_shapes_are_kept(codec, lead):
    # Array calls keep the leading shape, 0-d included: the exact codecs once returned (1,) for a
    # 0-d array (np.ascontiguousarray makes every array at least 1-d).
    vec = codec.ncomp > 1 or isinstance(codec, qc.Vector)
    nz = isinstance(codec, qc.NearlyZero)
    vshape = lead + ((codec.ncomp,) if vec else ())
    cshape = lead + ((1 + codec.ncomp,) if nz else (codec.ncomp,) if isinstance(codec, qc.Vector) else ())
    if vec and not lead:
        return              # a (k,) array is one value: the per-value path (test_hostile.py)
    if isinstance(codec, qc.Quat):
        x = np.zeros(vshape)
        x[..., 3] = 1.0
    elif isinstance(codec, qc.UnitVector):
        x = np.zeros(vshape)
        x[..., 2] = 1.0
    else:
        x = np.full(vshape, 0 if isinstance(codec, qc.Enum) else 1, dtype=np.int64)   # ints: every codec takes them
    codes = codec.quantize(x)
    assert isinstance(codes, np.ndarray) and codes.shape == cshape and codes.dtype == codec.code_dtype
    out = np.empty(cshape, codec.code_dtype)
    assert codec.quantize(x, out=out) is out and np.array_equal(out, codes)
    values = codec.dequantize(codes)
    assert isinstance(values, np.ndarray) and values.shape == vshape
    rt = codec.roundtrip(x)
    assert isinstance(rt, np.ndarray) and rt.shape == vshape and np.array_equal(rt, values)
    assert np.shape(codec.valid(codes)) == lead and np.all(codec.valid(codes))


@pytest.mark.parametrize("codec", FLOAT_CODECS + MULTI_CODECS + COMPOSITE_CODECS[:1], ids=repr)
def test_empty_codes_of_any_dtype(codec):
    # [] and an empty float array are "no codes", as for quantize and valid
    cases = [np.empty((0, codec.ncomp))] if isinstance(codec, qc.Vector) else [[], np.empty(0)]
    for empty in cases:
        out = codec.dequantize(empty)
        assert out.size == 0 and out.dtype == np.float64


@pytest.mark.parametrize("codec", FLOAT_CODECS, ids=repr)
def test_non_finite_rules(codec):
    nan, inf = float("nan"), float("inf")
    if isinstance(codec, qc.Half):
        assert codec.quantize(inf) == 0x7C00
        return
    assert codec.quantize(nan) == 0
    arr = codec.quantize(np.array([nan, inf, -inf]))
    assert arr[0] == 0
    if isinstance(codec, qc.Angle):
        assert arr[1] == 0 and arr[2] == 0
    elif not isinstance(codec, qc.PowerCurve):
        # clamp to the end codes: +inf to the top of the range, -inf to the bottom
        assert codec.dequantize(arr[1]) >= codec.dequantize(arr[2])
        assert codec.dequantize(arr[1]) == codec.roundtrip(1e300) and codec.dequantize(arr[2]) == codec.roundtrip(-1e300)


@pytest.mark.parametrize("codec", ALL_CODECS, ids=repr)
def test_valid_never_raises_for_integers(codec):
    for c in (-1, 0, 1, 2**31, 2**32, 2**63, 2**64, 2**200, -2**200):
        r = codec.valid(c)
        assert r in (True, False)
    assert codec.valid(-1) is False or isinstance(codec, (qc.Int,)) or (isinstance(codec, qc.Fixed) and codec.signed)
    assert codec.valid(2**200) is False


@pytest.mark.parametrize("codec", [c for c in FLOAT_CODECS if c.bits < 32] + [qc.UInt(8), qc.Enum(5)], ids=repr)
def test_dequantize_rejects_invalid_codes(codec):
    top = 1 << codec.bits
    with pytest.raises(qc.DecodeError, match="not a valid code"):
        codec.dequantize(top)
    with pytest.raises(qc.DecodeError):
        codec.dequantize(-1)
    codes = np.zeros(10, dtype=np.int64)
    codes[3] = top
    with pytest.raises(qc.DecodeError, match="row 3"):
        codec.dequantize(codes)


# ----------------------------------------------------------------------------------------------
# error bounds over 100k random values plus edges

def _edges(c):
    lo, hi = (c.min, c.max) if isinstance(c, qc.Bounded) else (None, None)
    vals = []
    if lo is not None:
        st = c.step
        k = np.arange(0, 2 ** min(c.bits, 12))
        edges = lo + (k + 0.5) * st if c.mode == "endpoints" else lo + k * st
        vals = np.concatenate([edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf), [lo, hi, np.nextafter(hi, -np.inf)]])
        vals = vals[(vals >= lo) & (vals <= hi)]
    return np.asarray(vals, dtype=float)


@pytest.mark.parametrize("codec", [c for c in FLOAT_CODECS if not isinstance(c, qc.Half)], ids=repr)
def test_error_bound(codec):
    if isinstance(codec, qc.Bounded):
        x = np.concatenate([RNG.uniform(codec.min, codec.max, 100_000), _edges(codec)])
    elif isinstance(codec, qc.Fixed):
        lo = codec.offset + (-(2 ** (codec.bits - 1)) if codec.signed else 0) * codec.step_size
        n = 2 ** (codec.bits - 1) if codec.signed else 2 ** codec.bits
        x = RNG.uniform(lo, lo + (min(n, 2**50) - 1) * codec.step_size, 100_000)
    elif isinstance(codec, qc.Angle):
        full = 360.0 if codec.unit == "deg" else 2 * math.pi
        x = RNG.uniform(-3 * full, 3 * full, 100_000)
        r = codec.roundtrip(x)
        d = np.abs(np.mod(r - x + full / 2, full) - full / 2)
        assert d.max() <= codec.max_error * (1 + 1e-9)
        return
    elif isinstance(codec, qc.PowerCurve):
        x = np.concatenate([RNG.uniform(-codec.max, codec.max, 100_000), [0.0, codec.max, -codec.max]])
    elif isinstance(codec, qc.Grid):
        span = codec.cell_size * 2 ** (codec.cell_bits - 1)
        x = np.concatenate([RNG.uniform(-span, span, 100_000), RNG.uniform(-1000, 1000, 10000)])
    err = np.abs(codec.roundtrip(x) - x)
    tol = 1e-12 * np.maximum(1.0, np.abs(x))
    assert np.all(err <= codec.max_error + tol), float(err.max())


def test_half_relative_error():
    h = qc.Half()
    x = RNG.uniform(-60000, 60000, 100_000)
    rel = np.abs(h.roundtrip(x) - x) / np.abs(x)
    assert rel.max() <= 2.0**-11


def test_quat_error_bound_random():
    q = qc.Quat(9)
    x = RNG.normal(size=(100_000, 4))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    r = q.roundtrip(x)
    dot = np.abs(np.sum(x * r, axis=1))
    ang = 2 * np.degrees(np.arccos(np.minimum(1, dot)))
    assert ang.max() <= q.max_error
    assert np.array_equal(q.quantize(x), q.quantize(-x))
    assert np.allclose(np.linalg.norm(r, axis=1), 1, atol=1e-15)
    assert np.all(q.valid(q.quantize(x)))


@pytest.mark.parametrize("bits,share", [(9, 0.0025), (12, 0.0005)])
def test_quat_requantized_codes_move_once_into_a_two_cycle(bits, share):
    # docs/codecs.md: near a tie of the two largest components, quantize(dequantize(code)) may
    # drop the other one: the same rotation within max_error, and back again on the next trip
    q = qc.Quat(bits)
    x = RNG.normal(size=(100_000, 4))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    c1 = q.quantize(q.roundtrip(x))
    c2 = q.quantize(q.dequantize(c1))
    moved = c2 != c1
    assert 0 < moved.mean() < share
    assert np.array_equal(q.quantize(q.dequantize(c2)), c1)
    top = np.sort(np.abs(q.dequantize(c1[moved])), axis=1)
    assert np.all(top[:, 3] - top[:, 2] < q.step)            # a near tie, every time
    a, b = q.dequantize(c1[moved]), q.dequantize(c2[moved])
    ang = 2 * np.degrees(np.arccos(np.minimum(1, np.abs(np.sum(a * b, axis=1)))))
    assert ang.max() <= q.max_error


@pytest.mark.parametrize("bits", [6, 9])
def test_quat_codes_of_fresh_rotations_either_come_back_or_settle_after_one_trip(bits):
    # docs/codecs.md: of the codes one round trip moves, most come back on the next trip and the
    # rest stay on the new code; from the first round trip on, every code has period 1 or 2
    for mode in ("endpoints", "midpoint"):
        q = qc.Quat(bits, mode=mode)
        x = RNG.normal(size=(100_000, 4))
        k = [q.quantize(x)]
        for _ in range(5):
            k.append(q.quantize(q.dequantize(k[-1])))
        assert all(np.array_equal(k[i], k[i + 2]) for i in range(1, 4))
        moved = k[0] != k[1]
        back, settled = moved & (k[2] == k[0]), moved & (k[2] == k[1])
        assert 0.5 < back.sum() / moved.sum() < 0.9 and 0.1 < settled.sum() / moved.sum() < 0.45
        assert (moved & ~back & ~settled).sum() <= 0.02 * moved.sum()


def test_unit_vector_error_bound_random():
    for bits in (8, 12, 16):
        u = qc.UnitVector(bits)
        x = RNG.normal(size=(100_000, 3))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        r = u.roundtrip(x)
        ang = np.degrees(np.arccos(np.minimum(1, np.sum(x * r, axis=1))))
        assert ang.max() <= u.max_error


def test_codecs_release_the_gil_in_array_paths():
    """A Python thread runs *during* a long array call: some of its ticks fall strictly between the
    call's start and end. The switch interval is set to 5 s, so the main thread is never made to
    hand the GIL over: the ticker can run inside the window only where the call released it. The
    control, a pure-Python loop of the same length, holds the GIL and must show no tick inside its
    window (so the test can fail)."""
    import sys
    import threading
    import time
    if not getattr(sys, "_is_gil_enabled", lambda: True)():
        pytest.skip("no GIL to release (free-threaded build)")
    b = qc.Bounded(-1, 1, 20)
    x = RNG.uniform(-1, 1, 4_000_000)
    out = np.empty(x.shape, dtype=np.uint32)
    ticks = []
    stop = False

    def ticker():
        while not stop:
            ticks.append(time.perf_counter())
            time.sleep(0)               # hands the GIL straight back: the main thread never waits

    def ticks_inside(call):
        n = len(ticks)
        t0 = time.perf_counter()
        call()
        t1 = time.perf_counter()
        return sum(t0 < t < t1 for t in ticks[n:]), t1 - t0

    def hold_the_gil(seconds):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass

    old = sys.getswitchinterval()
    sys.setswitchinterval(5.0)
    t = threading.Thread(target=ticker, daemon=True)
    t.start()
    try:
        while len(ticks) < 3:           # the ticker is running
            time.sleep(0.001)
        # the array call: the ticker must get in at least once in a few calls (it also needs a
        # CPU while the GIL is free; a shared machine can deny it one call, not all of them)
        windows = [ticks_inside(lambda: b.quantize(x, out=out)) for _ in range(10)]
        assert any(n > 0 for n, _ in windows), f"Bounded.quantize held the GIL: {windows}"
        # the control: as long as the longest array call, holding the GIL throughout
        longest = max(d for _, d in windows)
        for _ in range(3):
            n, d = ticks_inside(lambda: hold_the_gil(longest))
            assert n == 0, f"the ticker ran {n} times in {d * 1e3:.1f} ms while the GIL was held"
    finally:
        stop = True
        t.join()
        sys.setswitchinterval(old)


# ------------------------------------------------------------------------------------------------
# Error budgets (issue 25, item 1): for_error (and for_step where the step is uniform) on every
# lossy codec, with Bounded's strict guarantee: the result's max_error (resp. step) is never above
# the request, and one bit fewer would be.


def _around(values):
    """Requests at each codec's own error, an ulp either side of it, and in between."""
    out = []
    for v in values:
        out += [v, math.nextafter(v, 0.0), math.nextafter(v, math.inf), v * 1.37, v * 0.71]
    return out


def _assert_fewest(make, attr, request, got, lo):
    assert getattr(got, attr) <= request, (got, attr, request)
    if got.bits_param > lo:
        assert getattr(make(got.bits_param - 1), attr) > request, (got, request)


class _Bits:
    """A codec with the bit count its constructor takes (`bits` is the total for Quat and
    UnitVector)."""

    def __init__(self, codec, bits_param):
        self.codec, self.bits_param = codec, bits_param

    def __getattr__(self, name):
        return getattr(self.codec, name)


@pytest.mark.parametrize("unit", ["rad", "deg"])
@pytest.mark.parametrize("signed", [False, True])
def test_angle_for_error_and_for_step_are_strict_and_fewest(unit, signed):
    make = lambda b: qc.Angle(b, unit=unit, signed=signed)      # noqa: E731
    for attr, build in (("max_error", qc.Angle.for_error), ("step", qc.Angle.for_step)):
        for request in _around([getattr(make(b), attr) for b in range(1, 33)]):
            try:
                c = build(request, unit=unit, signed=signed)
            except qc.SchemaError:
                assert request < getattr(make(32), attr)
                continue
            assert c.unit == unit and c.signed == signed
            _assert_fewest(make, attr, request, _Bits(c, c.bits), 1)
    assert qc.Angle.for_error(0.01, unit="deg").bits == 15       # 360 / 2**15 / 2 = 0.0055 deg
    assert qc.Angle.for_step(2 * math.pi / 65536) == qc.Angle(16)


@pytest.mark.parametrize("mode", ["endpoints", "bins"])
def test_quat_for_error_is_strict_and_fewest(mode):
    make = lambda b: qc.Quat(b, mode=mode)      # noqa: E731
    for request in _around([make(b).max_error for b in range(2, 21)]):
        try:
            c = qc.Quat.for_error(request, mode=mode)
        except qc.SchemaError as e:
            assert request < make(20).max_error and "max_error" in str(e)
            continue
        assert c.mode == mode
        _assert_fewest(make, "max_error", request, _Bits(c, c.component_bits), 2)
    assert qc.Quat.for_error(0.55) == qc.Quat(9)
    assert qc.Quat.for_error(0.1).component_bits == 12


def test_unit_vector_for_error_is_strict_and_fewest():
    for request in _around([qc.UnitVector(b).max_error for b in range(2, 33)]):
        try:
            c = qc.UnitVector.for_error(request)
        except qc.SchemaError:
            assert request < qc.UnitVector(32).max_error
            continue
        _assert_fewest(qc.UnitVector, "max_error", request, _Bits(c, c.component_bits), 2)


@pytest.mark.parametrize("mx,pw", [(50, 2), (1, 1), (1000, 3.5), (1e-3, 1.25)])
def test_power_curve_for_error_is_strict_and_fewest(mx, pw):
    make = lambda b: qc.PowerCurve(mx, pw, b)       # noqa: E731
    for request in _around([make(b).max_error for b in range(2, 33)]):
        try:
            c = qc.PowerCurve.for_error(mx, pw, request)
        except qc.SchemaError:
            assert request < make(32).max_error
            continue
        assert (c.max, c.pow) == (float(mx), float(pw))
        _assert_fewest(make, "max_error", request, _Bits(c, c.bits), 2)
    assert not hasattr(qc.PowerCurve, "for_step")        # its step is not uniform


def _fixed_covers(c, lo, hi):
    ends = (-(2 ** (c.bits - 1)), 2 ** (c.bits - 1) - 1) if c.signed else (0, 2 ** c.bits - 1)
    return c.offset + float(ends[0]) * c.step <= lo and c.offset + float(ends[1]) * c.step >= hi


@pytest.mark.parametrize("lo,hi,offset", [(-90, 90, 0.0), (0, 9000, 0.0), (-500, 9000, 0.0), (100, 101, 0.0),
                                          (-1, 1, -1.0), (3, 5, 2.5)])
def test_fixed_for_step_and_for_error_cover_the_range_with_fewest_bits(lo, hi, offset):
    for request in _around([1e-7, 1e-3, 0.01, 0.5, 1.0, 7.0, qc.Fixed(0.001, 20).max_error]):
        for attr, build in (("step", qc.Fixed.for_step), ("max_error", qc.Fixed.for_error)):
            c = build(lo, hi, request, offset=offset)
            assert getattr(c, attr) <= request
            assert getattr(c, attr) == request        # Fixed's resolution is exact
            assert c.offset == offset and c.signed == (lo < offset)
            assert _fixed_covers(c, lo, hi)
            if c.bits > 1:
                fewer = qc.Fixed(c.step, c.bits - 1, signed=c.signed, offset=offset)
                assert not _fixed_covers(fewer, lo, hi)
            # every value of the range is within max_error, and none clamps
            xs = np.concatenate([np.linspace(lo, hi, 1001), [lo, hi]])
            codes, clamps = c._quantize_count(xs)
            assert clamps == 0
            assert np.abs(c.dequantize(codes) - xs).max() <= c.max_error * (1 + 1e-9) + 1e-12 * max(abs(lo), abs(hi))
    # MAVLink's degE7: 1e-7 degrees over +-180 takes 32 signed bits
    assert qc.Fixed.for_step(-180, 180, 1e-7) == qc.Fixed(1e-7, 32)
    assert qc.Fixed.for_step(0, 9000, 0.001) == qc.Fixed(0.001, 24, signed=False)
    assert qc.Fixed.for_step(0, 9000, 0.001, signed=True) == qc.Fixed(0.001, 25)


@pytest.mark.parametrize("cell", [64.0, 1.0, 0.3, 1000.0])
def test_grid_for_step_and_for_error_are_strict_and_fewest(cell):
    for extent in (10.0, 1_000.0, 2_097_152.0, 1e7):
        for request in _around([cell / 2 ** b / d for b in (1, 8, 16, 30) for d in (1, 2)]):
            for attr, build in (("step", qc.Grid.for_step), ("max_error", qc.Grid.for_error)):
                try:
                    g = build(extent, request, cell_size=cell)
                except qc.SchemaError as e:
                    assert "more than 64" in str(e)
                    continue
                assert g.cell_size == cell and getattr(g, attr) <= request
                if g.offset_bits > 1:
                    assert getattr(qc.Grid(cell, g.cell_bits, g.offset_bits - 1), attr) > request
                assert cell * 2.0 ** (g.cell_bits - 1) > extent
                if g.cell_bits > 1:
                    assert cell * 2.0 ** (g.cell_bits - 2) <= extent
                xs = np.array([-extent, extent, 0.0, extent / 3])
                codes, clamps = g._quantize_count(xs)
                assert clamps == 0
                if g.max_error > 4 * math.ulp(extent):      # (else a double cannot hold the result)
                    assert np.abs(g.dequantize(codes) - xs).max() <= g.max_error * (1 + 1e-9)
    assert qc.Grid.for_error(2_000_000, 0.0005, cell_size=64) == qc.Grid(64, 16, 16)


@pytest.mark.parametrize("call,needles", [
    (lambda: qc.Angle.for_error(1e-12), ["Angle.for_error", "max_error 1e-12 rad", "Angle(bits=32"]),
    (lambda: qc.Angle.for_step(0), ["Angle.for_step", "step must be positive"]),
    (lambda: qc.Angle.for_error(math.nan, unit="deg"), ["max_error must be finite"]),
    (lambda: qc.Angle.for_error(1, unit="grad"), ["unit"]),
    (lambda: qc.Quat.for_error(1e-5), ["Quat.for_error", "max_error", "degrees", "Quat(bits=20"]),
    (lambda: qc.Quat.for_error(-1), ["max_error must be positive"]),
    (lambda: qc.Quat.for_error(1, mode="middle"), ["mode"]),
    (lambda: qc.UnitVector.for_error(1e-9), ["UnitVector.for_error", "max_error"]),
    (lambda: qc.PowerCurve.for_error(50, 2, 1e-12), ["PowerCurve.for_error", "max_error"]),
    (lambda: qc.PowerCurve.for_error(-1, 2, 0.1), ["max must be positive"]),
    (lambda: qc.PowerCurve.for_error(50, 0.5, 0.1), ["pow"]),
    (lambda: qc.Fixed.for_step(-1, 1, 1e-30), ["Fixed.for_step", "step", "more than 64 bits"]),
    (lambda: qc.Fixed.for_error(-1, 1, math.inf), ["max_error must be finite"]),
    (lambda: qc.Fixed.for_step(1, 0, 0.1), ["min must be less than max"]),
    (lambda: qc.Fixed.for_step(-1, 1, 0.1, signed=False), ["min -1.0 is below offset 0.0", "signed=True"]),
    (lambda: qc.Fixed.for_step(0, 1, 0.1, signed="yes"), ["signed"]),
    (lambda: qc.Grid.for_error(1e15, 1e-10, cell_size=1),
     ["Grid.for_error", "51 cell bits + 33 offset bits", "more than 64"]),
    (lambda: qc.Grid.for_error(1e30, 0.1, cell_size=1), ["extent 1e+30", "63 cell bits"]),
    (lambda: qc.Grid.for_step(0, 0.1, cell_size=1), ["extent must be positive"]),
    (lambda: qc.Grid.for_step(10, 0.1, cell_size=-1), ["cell_size must be positive"]),
    (lambda: qc.Grid.for_step(10, 1e-300, cell_size=1), ["step", "63 offset bits"]),
])
def test_impossible_budgets_say_which_parameter(call, needles):
    with pytest.raises(qc.SchemaError) as info:
        call()
    for needle in needles:
        assert needle in str(info.value), (needle, str(info.value))


def test_budget_constructors_return_plain_codecs():
    # the result is the codec itself: equal to the one built by hand, same spec and fingerprint
    for c, same in ((qc.Angle.for_error(0.5, unit="deg"), qc.Angle(9, unit="deg")),
                    (qc.Quat.for_error(0.3), qc.Quat(10)),
                    (qc.UnitVector.for_error(0.5), qc.UnitVector(9)),
                    (qc.PowerCurve.for_error(50, 2, 0.1), qc.PowerCurve(50, 2, 10)),
                    (qc.Grid.for_step(1000, 1 / 1024, cell_size=64), qc.Grid(64, 5, 16))):
        assert c == same and qc.codec_from_spec(c.spec()) == same


# --------------------------------------------------------------------------------------------
# The kinds' two numberings (issue 36): the kernel's K_* and the wire's, tied by one table.

def _one_of_each_kind():
    return {
        "Bounded": qc.Bounded(-1, 1, 8), "Fixed": qc.Fixed(0.5, 8), "Angle": qc.Angle(10),
        "PowerCurve": qc.PowerCurve(10, 2, 8), "Half": qc.Half(), "UInt": qc.UInt(5), "Int": qc.Int(5),
        "Bool": qc.Bool(), "Enum": qc.Enum(["a", "b"]), "Quat": qc.Quat(9), "UnitVector": qc.UnitVector(12),
        "Vector": qc.Vector(qc.UInt(3), qc.Int(4)), "Grid": qc.Grid(16.0, 8, 8),
        "NearlyZero": qc.NearlyZero(qc.Bounded(-1, 1, 8), 0.1), "IntRange": qc.IntRange(3, 9),
    }


def test_kind_table_ties_the_kernel_and_wire_numberings():
    import pathlib
    import re
    from quantcodec import _codecs, _framing
    table = _codecs.KIND_TABLE
    samples = _one_of_each_kind()
    assert [row[0] for row in table] == list(samples)          # every kind, once, in wire order
    assert sorted(c.__name__ for _, c, _, _ in table) == sorted(set(_codecs.__all__) - {
        "Codec", "codec_from_spec", "bits_for"})                # every codec class of the module
    for name, cls, kernel, wire in table:
        codec = samples[name]
        assert type(codec) is cls and codec.kind == name
        # the descriptor's kind is the table's (Vector and NearlyZero have none: 0)
        assert _codecs._kernel_kind(codec) == kernel, name
    kernels = [k for _, _, k, _ in table if k]
    assert len(set(kernels)) == len(kernels)
    # the hello's numbers come from the table, and the table says what docs/wire-format.md says
    assert _framing.KIND_CODES == {name: wire for name, _, _, wire in table}
    doc = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "wire-format.md").read_text(encoding="utf-8")
    listed = doc[doc.index("Kinds: 1 `Bounded`"):].split(".\n")[0]
    assert dict((n, int(w)) for w, n in re.findall(r"(\d+) `(\w+)`", listed)) == _framing.KIND_CODES
