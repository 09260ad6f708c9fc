"""The array loops of every instruction set this machine runs (quantcodec/_loops.pxd, compiled into
_codecs for the baseline and into _loops_avx2 / _loops_avx512 on x86-64) against the reference,
bit for bit: codes, decoded values (compared as uint64 bits), clamp counts, and the row and kind
of every error. test_core_vs_reference.py covers the paths broadly with the default loops; this
file runs the same rules through each set of loops, on the inputs where the SIMD forms differ from
the scalar ones: exact bin edges and their neighbours, the power-of-two range shortcut, codes of
31 and 32 bits (int32 versus 64-bit conversions), both Bounded modes, strided Vector columns, bad
rows found by the second pass, and invalid codes found while decoding.
"""

import math

import numpy as np
import pytest

import quantcodec as qc
from quantcodec import _codecs
from quantcodec import _reference as ref
from quantcodec.errors import DecodeError, RangeError

from conftest import SIMD_LEVELS as LEVELS  # noqa: E402


def _bits(a):
    a = np.ascontiguousarray(a, dtype=np.float64)
    return a.view(np.uint64)


def _edges(lo, hi, bits, mode, rng, n=400):
    """Values at, and one ulp around, the points where the code changes."""
    L = 2 ** bits - 1 if mode == "endpoints" else 2 ** bits
    k = rng.integers(0, L, n).astype(np.float64)
    e = lo + (k + (0.5 if mode == "endpoints" else 0.0)) / L * (hi - lo)
    return np.concatenate([e, np.nextafter(e, np.inf), np.nextafter(e, -np.inf)])


def _scalar_inputs(lo, hi, bits, mode, rng):
    r = hi - lo
    special = [lo, hi, np.nextafter(lo, -np.inf), np.nextafter(hi, np.inf), np.nan, -np.nan, np.inf, -np.inf,
               0.0, -0.0, 5e-324, -5e-324, 1e300, -1e300]
    return np.concatenate([rng.uniform(lo - 0.1 * r, hi + 0.1 * r, 3000), _edges(lo, hi, bits, mode, rng),
                           np.array(special)])


# (the widest range: R * 2**32 must be finite, so that no code decodes to inf)
BOUNDED = [(-2048.0, 2048.0), (-64.0, 192.0), (-1.3, 7.77), (0.0, 2.0 ** -1030), (-1e298, 1e298)]


@pytest.mark.parametrize("mode", ["endpoints", "bins"])
@pytest.mark.parametrize("lo, hi", BOUNDED)
@pytest.mark.parametrize("bits", [1, 9, 20, 31, 32])
def test_bounded(level, mode, lo, hi, bits):
    rng = np.random.default_rng(bits * 1000 + BOUNDED.index((lo, hi)) * 2 + (mode == "bins"))
    c = qc.Bounded(lo, hi, bits, mode=mode)
    x = _scalar_inputs(lo, hi, bits, mode, rng)
    for dt in (np.float64, np.float32):
        with np.errstate(over="ignore"):
            xa = x.astype(dt)
        x64 = xa.astype(np.float64)
        codes, clamped = c._quantize_count(xa)
        with np.errstate(all="ignore"):
            expect = ref.bounded_quantize(x64, lo, hi, bits, mode)
            n_out = int(np.count_nonzero(~((x64 >= lo) & (x64 <= hi))))
        assert codes.dtype == np.uint32
        np.testing.assert_array_equal(codes, expect.astype(np.uint32))
        assert clamped == n_out
        with np.errstate(all="ignore"):
            values = ref.bounded_dequantize(expect, lo, hi, bits, mode)
        np.testing.assert_array_equal(_bits(c.dequantize(codes)), _bits(values))
        np.testing.assert_array_equal(_bits(c.roundtrip(xa)), _bits(values))
        out32 = np.empty(codes.shape, np.float32)
        with np.errstate(over="ignore"):
            values32 = values.astype(np.float32)
        np.testing.assert_array_equal(c.dequantize(codes, out=out32).view(np.uint32), values32.view(np.uint32))
    if bits < 32:
        bad = codes.copy()
        bad[1234] = 2 ** bits
        bad[2000] = 2 ** 32 - 1
        with pytest.raises(DecodeError, match=r"row 1234: code %d is not a valid code" % 2 ** bits):
            c.dequantize(bad)


def test_bounded_columns_of_a_vector(level):
    """Strided loops: each column of a Vector is its own codec, codes of another dtype."""
    rng = np.random.default_rng(7)
    v = qc.Vector(qc.Bounded(-2048, 2048, 18), qc.Bounded(-1, 1, 12, mode="bins"), qc.Fixed(0.01, 20))
    x = np.column_stack([rng.uniform(-2100, 2100, 5000), rng.uniform(-1.1, 1.1, 5000), rng.uniform(-5e3, 5e3, 5000)])
    codes = v.quantize(x)
    assert codes.dtype == np.int64
    for j in range(2):
        c = v.codecs[j]
        np.testing.assert_array_equal(codes[:, j], ref.bounded_quantize(x[:, j], c.min, c.max, c.bits, c.mode))
        np.testing.assert_array_equal(_bits(v.dequantize(codes)[:, j]),
                                      _bits(ref.bounded_dequantize(codes[:, j], c.min, c.max, c.bits, c.mode)))
    codes[321, 1] = -1
    with pytest.raises(DecodeError, match=r"row 321\[1\]: code -1"):
        v.dequantize(codes)


def _quaternions(rng, n):
    q = rng.normal(size=(n, 4))
    ties = np.abs(rng.normal(size=(n // 4, 1))) * rng.choice([-1.0, 1.0], (n // 4, 4))   # all four equal
    pairs = rng.normal(size=(n // 4, 4))
    pairs[:, 1] = pairs[:, 0] * rng.choice([-1.0, 1.0], n // 4)
    fixed = np.array([[0.5, 0.5, 0.5, 0.5], [1, 0, 0, 0], [0, 0, 0, -1], [math.sqrt(0.5), -math.sqrt(0.5), 0, 0],
                      [1e-300, 0, 0, 0], [5e-324, 5e-324, 0, 0], [1e300, 1e300, -1e300, 1e300]])
    return np.concatenate([q, ties, pairs, fixed])


@pytest.mark.parametrize("mode", ["endpoints", "bins"])
@pytest.mark.parametrize("bits", [2, 3, 9, 10, 11, 16, 20])
def test_quat(level, mode, bits):
    rng = np.random.default_rng(bits + 100 * (mode == "bins"))
    c = qc.Quat(bits, mode=mode)
    q = _quaternions(rng, 2000)
    for dt in (np.float64, np.float32):
        with np.errstate(over="ignore"):
            qa = q.astype(dt)
        qa = qa[np.isfinite(qa).all(axis=1) & (np.abs(qa).max(axis=1) > 0)]
        codes = c.quantize(qa)
        expect = ref.quat_quantize(qa.astype(np.float64), bits, mode)
        np.testing.assert_array_equal(codes.astype(np.uint64), expect)
        values = ref.quat_dequantize(expect, bits, mode)
        np.testing.assert_array_equal(_bits(c.dequantize(codes)), _bits(values))
        np.testing.assert_array_equal(_bits(c.roundtrip(qa)), _bits(values))
    # random codes: the decoder checks each one (the same verdict as Quat.valid and the reference)
    codes = rng.integers(0, 2 ** (2 + 3 * bits), 5000, dtype=np.uint64).astype(c.code_dtype)
    ok = ref.quat_valid(codes.astype(np.uint64), bits, mode)
    np.testing.assert_array_equal(c.valid(codes), ok)
    np.testing.assert_array_equal(_bits(c.dequantize(codes[ok])), _bits(ref.quat_dequantize(codes[ok], bits, mode)))
    if not ok.all():
        first = int(np.flatnonzero(~ok)[0])
        with pytest.raises(DecodeError, match=r"row %d: code %d is not a valid code" % (first, codes[first])):
            c.dequantize(codes)


@pytest.mark.parametrize("bits", [2, 12, 31, 32])
def test_unit_vector(level, bits):
    rng = np.random.default_rng(bits)
    c = qc.UnitVector(bits)
    v = np.concatenate([rng.normal(size=(3000, 3)), [[0, 0, 1], [0, 0, -1], [1, 0, 0], [1, 1, -1], [-1, -1, -1e-17]]])
    for dt in (np.float64, np.float32):
        va = v.astype(dt)
        codes = c.quantize(va)
        expect = ref.unitvec_quantize(va.astype(np.float64), bits)
        np.testing.assert_array_equal(codes.astype(np.uint64), expect)
        values = ref.unitvec_dequantize(expect, bits)
        np.testing.assert_array_equal(_bits(c.dequantize(codes)), _bits(values))
        np.testing.assert_array_equal(_bits(c.roundtrip(va)), _bits(values))
    codes = rng.integers(0, 2 ** (2 * bits), 3000, dtype=np.uint64).astype(c.code_dtype)
    np.testing.assert_array_equal(_bits(c.dequantize(codes)), _bits(ref.unitvec_dequantize(codes, bits)))
    if bits < 32:
        codes[77] = 2 ** (2 * bits)
        with pytest.raises(DecodeError, match=r"row 77: code"):
            c.dequantize(codes)


@pytest.mark.parametrize("codec, k", [(qc.Quat(9), 4), (qc.Quat(12, mode="bins"), 4), (qc.UnitVector(16), 3)])
@pytest.mark.parametrize("bad, what", [([0.0] * 4, "zero"), ([-0.0, 0.0, -0.0, 0.0], "zero"),
                                       ([np.nan, 0, 0, 1], "non-finite"), ([0, np.inf, 0, 0], "non-finite"),
                                       ([np.inf, np.nan, 0, 0], "non-finite")])
def test_first_bad_row(level, codec, k, bad, what):
    """The vector loops do not stop at a bad row: a second pass must name the first one."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(300, k))
    x[41] = bad[:k]
    x[200] = 0.0
    for dt in (np.float64, np.float32):
        with pytest.raises(RangeError, match=r"row 41: %s" % what):
            codec.quantize(x.astype(dt))
        with pytest.raises(RangeError, match=r"row 41: %s" % what):
            codec.roundtrip(x.astype(dt))


def test_select():
    assert LEVELS[0] == "baseline"
    before = _codecs._simd()
    assert before in LEVELS
    try:
        for name in LEVELS:
            assert _codecs._simd_select(name) == name
            assert _codecs._simd() == name
        with pytest.raises(ValueError, match="not available"):
            _codecs._simd_select("sse9")
    finally:
        _codecs._simd_select(before)
