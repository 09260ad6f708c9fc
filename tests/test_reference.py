"""The reference rules (quantcodec._reference) against hand-computed values, the worked figures of
SPEC.md and of the seed documents, a plain-Python transliteration of each rule (to catch slips in
the vectorized NumPy), NumPy's float16 conversion, and the error bounds."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quantcodec import _reference as ref
from quantcodec._maxerr import QUAT_MAX_ERROR, UNITVEC_MAX_ERROR
from helpers import repo_tool

_search = repo_tool("search")          # tools/search.py (the oracle's angle measures)
quat_angle_deg, unitvec_angle_deg = _search.quat_angle_deg, _search.unitvec_angle_deg
from quantcodec.errors import DecodeError, RangeError, SchemaError

MODES = ("endpoints", "bins")
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 0.49999999999999994, 1e-300, -1e-300, 5e-324,
           1e300, -1e300, math.inf, -math.inf, math.nan, math.pi, -math.pi, 2 * math.pi, 359.999, 0.001]


def _values(seed=0, n=5000, scale=10.0):
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.uniform(-scale, scale, n), rng.standard_normal(n) * scale / 3, np.array(SPECIAL)])
    return x


def _same_float(a, b):
    """Bit-identical float64 arrays (NaNs and signed zeros compared by bits)."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    return a.shape == b.shape and bool((a.view(np.uint64) == b.view(np.uint64)).all())


# ----------------------------------------------------------------------------------------------
# plain-Python transliterations of the rules, one value at a time
# ----------------------------------------------------------------------------------------------

def bounded_q1(x, lo, hi, bits, mode):
    R = hi - lo
    t = (x - lo) / R
    if mode == "endpoints":
        L = float(2 ** bits - 1)
        t = t if t > 0 else 0.0
        t = t if t < 1 else 1.0
        return math.floor(t * L + 0.5)
    if not t > 0:
        return 0
    N = float(2 ** bits)
    v = t * N
    if v >= N:                      # also +inf, which math.floor refuses
        return 2 ** bits - 1
    return int(min(N - 1.0, math.floor(v)))


def bounded_d1(c, lo, hi, bits, mode):
    R = hi - lo
    if mode == "endpoints":
        L = 2 ** bits - 1
        if c == 0:
            return lo
        if c == L:
            return hi
        return lo + (c * R) / float(L)
    return lo + ((c + 0.5) * R) / float(2 ** bits)


def fixed_q1(x, step, bits, signed, offset):
    v = (x - offset) / step
    if math.isnan(v):
        return 0
    if math.isinf(v):
        r = v
    else:
        r = float(math.trunc(v))
        f = v - r
        if abs(f) >= 0.5:
            r += math.copysign(1.0, v)
    if signed:
        lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    else:
        lo, hi = 0, 2 ** bits - 1
    if r < lo:
        return lo
    if r > hi:   # compares exactly: Python compares int and float exactly
        return hi
    return int(r)


def angle_q1(x, bits, full):
    if not math.isfinite(x):
        return 0
    w = math.fmod(x, full)
    if w < 0:
        w = w + full
    return math.floor(w / full * 2 ** bits + 0.5) % 2 ** bits


def grid_q1(x, cs, cb, ob):
    u = x / cs
    if math.isnan(u):
        return 0
    cmin, cmax = -(2 ** (cb - 1)), 2 ** (cb - 1) - 1
    if u == math.inf:
        cell, off = cmax, 2 ** ob - 1
    elif u == -math.inf:
        cell, off = cmin, 0
    else:
        cellf = math.floor(u)
        t = u - cellf
        off = min(2 ** ob - 1, math.floor(t * 2 ** ob))
        cell = cellf
        if cell < cmin:
            cell, off = cmin, 0
        elif cell > cmax:
            cell, off = cmax, 2 ** ob - 1
    return ((cell % 2 ** cb) << ob) | off


def grid_d1(code, cs, cb, ob):
    off = code & (2 ** ob - 1)
    cell = code >> ob
    if cell >= 2 ** (cb - 1):
        cell -= 2 ** cb
    return (float(cell) + (off + 0.5) / 2.0 ** ob) * cs


def quat_q1(q, bits, mode):
    m = max(abs(v) for v in q)
    q = [v / m for v in q]
    n = math.sqrt(((q[0] * q[0] + q[1] * q[1]) + q[2] * q[2]) + q[3] * q[3])
    q = [v / n for v in q]
    idx = 0
    for i in range(1, 4):
        if abs(q[i]) > abs(q[idx]):
            idx = i
    if q[idx] < 0:
        q = [-v for v in q]
    kept = [q[i] for i in range(4) if i != idx]
    c = [bounded_q1(k, -math.sqrt(0.5), math.sqrt(0.5), bits, mode) for k in kept]
    return idx << (3 * bits) | c[0] << (2 * bits) | c[1] << bits | c[2]


def quat_d1(code, bits, mode):
    mask = 2 ** bits - 1
    idx = code >> (3 * bits)
    c = [(code >> (2 * bits)) & mask, (code >> bits) & mask, code & mask]
    a, b, cc = (bounded_d1(v, -math.sqrt(0.5), math.sqrt(0.5), bits, mode) for v in c)
    s = (a * a + b * b) + cc * cc
    d = math.sqrt(max(0.0, 1.0 - s))
    out = [a, b, cc]
    out.insert(idx, d)
    n = math.sqrt(((out[0] * out[0] + out[1] * out[1]) + out[2] * out[2]) + out[3] * out[3])
    return [v / n for v in out]


def _sgn(t):
    return 1.0 if t >= 0 else -1.0


def unitvec_q1(v, bits):
    m = max(abs(t) for t in v)
    x, y, z = (t / m for t in v)
    s = (abs(x) + abs(y)) + abs(z)
    p, q = x / s, y / s
    if z < 0:
        p, q = (1.0 - abs(q)) * _sgn(p), (1.0 - abs(p)) * _sgn(q)
    pc = bounded_q1(p, -1.0, 1.0, bits, "endpoints")
    qc = bounded_q1(q, -1.0, 1.0, bits, "endpoints")
    return (pc << bits) | qc


def unitvec_d1(code, bits):
    mask = 2 ** bits - 1
    p = bounded_d1((code >> bits) & mask, -1.0, 1.0, bits, "endpoints")
    q = bounded_d1(code & mask, -1.0, 1.0, bits, "endpoints")
    z = (1.0 - abs(p)) - abs(q)
    if z < 0:
        p, q = (1.0 - abs(q)) * _sgn(p), (1.0 - abs(p)) * _sgn(q)
    n = math.sqrt((p * p + q * q) + z * z)
    return [p / n, q / n, z / n]


# ----------------------------------------------------------------------------------------------
# Bounded
# ----------------------------------------------------------------------------------------------

class TestBounded:
    def test_seed_drift_example(self):
        # seed 001: 3 in +-4 at 10 bits (bins) is code 896; decoded with the wrong range or bit count
        c = ref.bounded_quantize(3.0, -4, 4, 10, "bins")
        assert int(c) == 896
        assert ref.bounded_dequantize(c, -8, 8, 10, "bins") == pytest.approx(6.01, abs=0.005)
        assert float(ref.bounded_dequantize(c, -8, 8, 10, "bins")) == 6.0078125
        assert float(ref.bounded_dequantize(c, -4, 4, 11, "bins")) == -0.498046875
        assert round(float(ref.bounded_dequantize(c, -4, 4, 11, "bins")), 2) == -0.50

    def test_seed_clamping_example(self):
        # 5 and 500 both decode to 3.996 in +-4 (10 bits, bins)
        c = ref.bounded_quantize([5.0, 500.0, 4.0, math.inf], -4, 4, 10, "bins")
        assert c.tolist() == [1023] * 4
        assert ref.bounded_dequantize(c, -4, 4, 10, "bins").tolist() == [3.99609375] * 4

    def test_seed_bin_edge_example(self):
        # 1 +- 0.000001 decodes as 0.75 or 1.25 with 16 bins in +-4
        c = ref.bounded_quantize([1 - 1e-6, 1.0, 1 + 1e-6], -4, 4, 4, "bins")
        assert c.tolist() == [9, 10, 10]
        assert ref.bounded_dequantize(c, -4, 4, 4, "bins").tolist() == [0.75, 1.25, 1.25]

    def test_bits_for(self):
        # 1024 units at +-0.5: 11 bits with endpoints, 10 with bins
        assert ref.bits_for(1024, 0.5) == 11
        assert ref.bits_for(1024, 0.5, "endpoints") == 11
        assert ref.bits_for(1024, 0.5, "bins") == 10
        # +-2048 at a step of 1/256 (max error 1/512): bins 20, endpoints 21
        assert ref.bits_for(4096, 1 / 512, "bins") == 20
        assert ref.bits_for(4096, 1 / 512, "endpoints") == 21
        assert ref.bounded_bits_for_step(-2048, 2048, 1 / 256, "bins") == 20
        assert ref.bounded_bits_for_step(-2048, 2048, 1 / 256, "endpoints") == 21
        assert ref.bounded_bits_for_error(-2048, 2048, 1 / 512, "bins") == 20
        assert ref.bounded_bits_for_error(-2048, 2048, 1 / 512, "endpoints") == 21
        # a 64-unit axis at 1 mm: 15 bits, 1.95 mm step, 0.98 mm error (seed 001)
        assert ref.bits_for(64, 0.001, "bins") == 15
        assert ref.bounded_step(0, 64, 15, "bins") == pytest.approx(0.00195, abs=5e-6)
        assert ref.bounded_max_error(0, 64, 15, "bins") == pytest.approx(0.00098, abs=5e-6)
        # never below 0
        assert ref.bits_for(1, 10, "bins") == 0
        assert ref.bits_for(1, 10, "endpoints") == 1     # log2(1/20 + 1) > 0
        assert ref.bits_for(0, 10, "endpoints") == 0

    @pytest.mark.parametrize("mode", MODES)
    def test_for_step_is_fewest(self, mode):
        for lo, hi, step in [(-2048, 2048, 1 / 256), (0, 1, 0.01), (-1, 1, 0.3), (-5, 7, 1e-6)]:
            b = ref.bounded_bits_for_step(lo, hi, step, mode)
            assert ref.bounded_step(lo, hi, b, mode) <= step
            if b > 1:
                assert ref.bounded_step(lo, hi, b - 1, mode) > step
        with pytest.raises(SchemaError, match="step"):
            ref.bounded_bits_for_step(0, 1, 1e-12, mode)

    def test_endpoints_hand_values(self):
        # L = 3 over [-1, 1]: grid -1, -1/3, 1/3, 1
        c = ref.bounded_quantize([-1.0, -0.99, -2 / 3, -0.5, 0.0, 0.5, 1.0, 7.0, -7.0, math.nan], -1, 1, 2)
        assert c.dtype == np.uint64
        assert c.tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 0, 0]
        d = ref.bounded_dequantize(np.arange(4), -1, 1, 2)
        assert d.tolist() == [-1.0, -1 + (1 * 2.0) / 3.0, -1 + (2 * 2.0) / 3.0, 1.0]
        # code 0 and code L decode to exactly min and max, even where lo + (L*R)/L would not
        lo, hi = 0.1, 0.7
        assert ref.bounded_dequantize([0, 2 ** 20 - 1], lo, hi, 20).tolist() == [0.1, 0.7]

    def test_bins_hand_values(self):
        c = ref.bounded_quantize([-4.0, -4.5, -3.5001, -3.5, 0.0, 3.9999, 4.0, math.inf, -math.inf, math.nan], -4, 4, 4, "bins")
        assert c.tolist() == [0, 0, 0, 1, 8, 15, 15, 15, 0, 0]     # -3.5 is the lower edge of bin 1
        assert ref.bounded_dequantize([0, 15], -4, 4, 4, "bins").tolist() == [-3.75, 3.75]

    @pytest.mark.parametrize("mode", MODES)
    @pytest.mark.parametrize("lo,hi,bits", [(-4, 4, 10), (-2048, 2048, 20), (0.1, 0.7, 1), (-64, 192, 14), (-1, 1, 32)])
    def test_matches_transliteration(self, mode, lo, hi, bits):
        x = _values(bits, 3000, scale=abs(hi) * 1.3)
        got = ref.bounded_quantize(x, lo, hi, bits, mode)
        want = [bounded_q1(float(v), float(lo), float(hi), bits, mode) for v in x]
        assert got.tolist() == want
        codes = np.concatenate([got, np.array([0, 2 ** bits - 1, 2 ** (bits - 1)], dtype=np.uint64)])
        dec = ref.bounded_dequantize(codes, lo, hi, bits, mode)
        assert _same_float(dec, [bounded_d1(int(c), float(lo), float(hi), bits, mode) for c in codes])

    @pytest.mark.parametrize("mode", MODES)
    @pytest.mark.parametrize("lo,hi,bits", [(-4, 4, 10), (-2048, 2048, 18), (-64, 192, 14), (0, 1, 3), (-1e6, 1e6, 32)])
    def test_error_bound(self, mode, lo, hi, bits):
        x = np.random.default_rng(bits).uniform(lo, hi, 100_000)
        x = np.concatenate([x, [lo, hi]])
        err = np.abs(ref.bounded_dequantize(ref.bounded_quantize(x, lo, hi, bits, mode), lo, hi, bits, mode) - x)
        bound = ref.bounded_max_error(lo, hi, bits, mode)
        assert err.max() <= bound * (1 + 1e-9)
        assert err.max() >= bound * 0.9            # the bound is reached, not loose
        step = ref.bounded_step(lo, hi, bits, mode)
        assert step == (hi - lo) / (2.0 ** bits - 1 if mode == "endpoints" else 2.0 ** bits)

    @given(st.floats(allow_nan=True, allow_infinity=True, width=64))
    @settings(max_examples=300, deadline=None)
    def test_any_float(self, x):
        for mode in MODES:
            c = int(ref.bounded_quantize(x, -3.5, 17.25, 7, mode))
            assert c == bounded_q1(x, -3.5, 17.25, 7, mode)
            assert 0 <= c < 128

    def test_float32_input_computed_in_float64(self):
        x32 = np.array([0.1, 1.7, -3.3], dtype=np.float32)
        assert ref.bounded_quantize(x32, -4, 4, 20).tolist() == \
            ref.bounded_quantize(x32.astype(np.float64), -4, 4, 20).tolist()
        assert ref.bounded_quantize(np.array([1, 2, 3], dtype=np.int16), -4, 4, 8).tolist() == \
            ref.bounded_quantize([1.0, 2.0, 3.0], -4, 4, 8).tolist()
        with pytest.raises(TypeError):
            ref.bounded_quantize(np.array(["a"]), -4, 4, 8)
        with pytest.raises(TypeError):
            ref.bounded_quantize(np.array([1j]), -4, 4, 8)

    def test_bad_parameters(self):
        with pytest.raises(SchemaError, match="bits"):
            ref.bounded_quantize(0.0, -1, 1, 0)
        with pytest.raises(SchemaError, match="bits"):
            ref.bounded_quantize(0.0, -1, 1, 33)
        with pytest.raises(SchemaError, match="min"):
            ref.bounded_quantize(0.0, 1, 1, 8)
        with pytest.raises(SchemaError, match="max"):
            ref.bounded_quantize(0.0, 0, math.inf, 8)
        with pytest.raises(SchemaError, match="mode"):
            ref.bounded_quantize(0.0, 0, 1, 8, "round")

    def test_valid_and_decode_range(self):
        assert ref.bounded_valid([0, 255, 256, -1, 2 ** 70], 8).tolist() == [True, True, False, False, False]
        assert bool(ref.bounded_valid(-1, 8)) is False
        with pytest.raises(DecodeError, match="256"):
            ref.bounded_dequantize(256, -1, 1, 8)
        with pytest.raises(DecodeError, match="element 1"):
            ref.bounded_dequantize([0, -1], -1, 1, 8)


# ----------------------------------------------------------------------------------------------
# Fixed
# ----------------------------------------------------------------------------------------------

class TestFixed:
    def test_round_half_away_from_zero_exactly(self):
        v = [0.49999999999999994, 0.5, -0.5, 1.5, 2.5, -2.5, 1.4999999999999998, -0.49999999999999994, 0.0, -0.0]
        assert ref.fixed_quantize(v, 1.0, 8).tolist() == [0, 1, -1, 2, 3, -3, 1, 0, 0, 0]

    def test_degE7(self):
        # MAVLink lat/lon: Fixed(1e-7, 32)
        c = ref.fixed_quantize([47.3977419, -122.0840575, 180.0, -180.0], 1e-7, 32)
        assert c.dtype == np.int64
        assert c.tolist() == [473977419, -1220840575, 1800000000, -1800000000]
        assert ref.fixed_dequantize(c, 1e-7, 32)[0] == 473977419 * 1e-7

    def test_clamp_nan_inf(self):
        x = [1000.0, -1000.0, math.inf, -math.inf, math.nan, 127.4, -128.4, 127.5, -128.5]
        assert ref.fixed_quantize(x, 1.0, 8).tolist() == [127, -128, 127, -128, 0, 127, -128, 127, -128]
        u = ref.fixed_quantize(x, 1.0, 8, signed=False)
        assert u.dtype == np.uint64
        assert u.tolist() == [255, 0, 255, 0, 0, 127, 0, 128, 0]

    def test_64_bits(self):
        x = [1e300, -1e300, 2.0 ** 63, -(2.0 ** 63), 2.0 ** 62, math.inf, math.nan]
        assert ref.fixed_quantize(x, 1.0, 64).tolist() == [2 ** 63 - 1, -(2 ** 63), 2 ** 63 - 1, -(2 ** 63), 2 ** 62, 2 ** 63 - 1, 0]
        top = float(np.nextafter(2.0 ** 64, 0))      # the largest float below 2**64
        assert ref.fixed_quantize([2.0 ** 64, top, -1.0], 1.0, 64, signed=False).tolist() == [2 ** 64 - 1, int(top), 0]

    def test_offset(self):
        c = ref.fixed_quantize([100.0, 100.375, 99.625, 100.625, 100.0015], 0.25, 16, offset=100.0)
        assert c.tolist() == [0, 2, -2, 3, 0]
        assert ref.fixed_dequantize(c, 0.25, 16, offset=100.0).tolist() == [100.0, 100.5, 99.5, 100.75, 100.0]
        # 100.0015 - 100 is 0.0014999999999929514 in doubles: the rule rounds what the subtraction gives
        assert int(ref.fixed_quantize(100.0015, 0.001, 16, offset=100.0)) == 1
        # NaN encodes to the code of offset
        assert int(ref.fixed_quantize(math.nan, 0.001, 16, offset=100.0)) == 0

    @pytest.mark.parametrize("step,bits,signed,offset", [(1.0, 8, True, 0.0), (0.01, 12, False, -5.0), (1e-7, 32, True, 0.0),
                                                          (0.25, 64, True, 3.0), (3.0, 64, False, 0.0), (0.1, 1, True, 0.0)])
    def test_matches_transliteration(self, step, bits, signed, offset):
        x = np.concatenate([_values(bits, 2000, scale=step * 2.0 ** min(bits, 60)), _values(bits + 1, 2000, scale=step * 300)])
        x = np.concatenate([x, np.arange(-40, 41) * step * 0.5 + offset])
        got = ref.fixed_quantize(x, step, bits, signed, offset)
        assert got.tolist() == [fixed_q1(float(v), step, bits, signed, offset) for v in x]

    @given(st.floats(allow_nan=True, allow_infinity=True, width=64))
    @settings(max_examples=300, deadline=None)
    def test_any_float(self, x):
        assert int(ref.fixed_quantize(x, 0.5, 10)) == fixed_q1(x, 0.5, 10, True, 0.0)
        assert int(ref.fixed_quantize(x, 0.5, 10, False)) == fixed_q1(x, 0.5, 10, False, 0.0)

    def test_error_bound(self):
        x = np.random.default_rng(3).uniform(-60, 60, 100_000)
        err = np.abs(ref.fixed_dequantize(ref.fixed_quantize(x, 0.01, 16), 0.01, 16) - x)
        assert err.max() <= 0.005 * (1 + 1e-9)

    def test_valid(self):
        assert ref.fixed_valid([-128, 127, 128, -129], 8).tolist() == [True, True, False, False]
        assert ref.fixed_valid([0, 255, -1, 256], 8, signed=False).tolist() == [True, True, False, False]
        assert ref.fixed_valid([2 ** 63 - 1, -(2 ** 63), 2 ** 63], 64).tolist() == [True, True, False]
        with pytest.raises(SchemaError, match="step"):
            ref.fixed_quantize(1.0, 0.0, 8)
        with pytest.raises(SchemaError, match="bits"):
            ref.fixed_quantize(1.0, 1.0, 65)


# ----------------------------------------------------------------------------------------------
# Angle
# ----------------------------------------------------------------------------------------------

class TestAngle:
    def test_wraparound(self):
        # 359.999 and 0.001 degrees are neighbours (both code 0 at 16 bits)
        c = ref.angle_quantize([359.999, 0.001, 0.0, -0.0, -1e-20, 360.0, 720.5, -90.0, 90.0, 180.0], 16, unit="deg")
        assert c.tolist() == [0, 0, 0, 0, 0, 0, 91, 49152, 16384, 32768]
        assert ref.angle_step(16, unit="deg") == 360 / 65536
        assert round(ref.angle_step(16, unit="deg"), 4) == 0.0055

    def test_nonfinite(self):
        assert ref.angle_quantize([math.nan, math.inf, -math.inf], 12).tolist() == [0, 0, 0]

    def test_decode(self):
        assert ref.angle_dequantize([0, 16384, 32768, 49152, 65535], 16, unit="deg").tolist() == \
            [0.0, 90.0, 180.0, 270.0, 65535 * 360.0 / 65536]
        assert ref.angle_dequantize([0, 16384, 32768, 49152, 65535], 16, signed=True, unit="deg").tolist() == \
            [0.0, 90.0, -180.0, -90.0, -360.0 / 65536]
        assert float(ref.angle_dequantize(2 ** 9, 10)) == math.pi
        assert int(ref.angle_quantize(math.pi, 10)) == 512
        assert int(ref.angle_quantize(-math.pi, 10)) == 512

    @pytest.mark.parametrize("bits,unit", [(16, "deg"), (1, "rad"), (12, "rad"), (32, "deg"), (32, "rad")])
    def test_matches_transliteration(self, bits, unit):
        full = ref.angle_full_turn(unit)
        x = np.concatenate([_values(bits, 3000, scale=5 * full), np.arange(-64, 65) * full / 128])
        got = ref.angle_quantize(x, bits, unit=unit)
        assert got.tolist() == [angle_q1(float(v), bits, full) for v in x]

    @pytest.mark.parametrize("bits", [8, 16, 24])
    def test_error_around_the_circle(self, bits):
        x = np.random.default_rng(bits).uniform(-720, 720, 100_000)
        d = ref.angle_dequantize(ref.angle_quantize(x, bits, unit="deg"), bits, unit="deg")
        diff = np.abs((d - x + 180.0) % 360.0 - 180.0)
        assert diff.max() <= ref.angle_max_error(bits, unit="deg") * (1 + 1e-6)


# ----------------------------------------------------------------------------------------------
# PowerCurve
# ----------------------------------------------------------------------------------------------

class TestPowerCurve:
    def test_hand_values(self):
        # PowerCurve(50, 2, 10): L = 511, sign in bit 9
        x = [0.0, -0.0, 50.0, -50.0, 1e9, -math.inf, math.inf, math.nan, -1e-9, 12.5, -12.5]
        c = ref.power_quantize(x, 50, 2, 10)
        assert c.tolist() == [0, 0, 511, 1023, 511, 1023, 511, 0, 0, 256, 512 | 256]
        # m = floor(sqrt(12.5/50) * 511 + 0.5) = floor(256.0) = 256
        d = ref.power_dequantize(c, 50, 2, 10)
        assert d.tolist()[:8] == [0.0, 0.0, 50.0, -50.0, 50.0, -50.0, 50.0, 0.0]
        assert math.copysign(1.0, d[1]) == 1.0         # zero decodes to +0.0
        assert d[9] == 50 * math.pow(256 / 511, 2) and d[10] == -d[9]

    def test_step_and_max_error(self):
        assert ref.power_step(50, 2, 10) == 50 * (1 - math.pow(510 / 511, 2))
        assert ref.power_max_error(50, 2, 10) == 50 * (1 - math.pow(510.5 / 511, 2))

    @pytest.mark.parametrize("vmax,power,bits", [(50, 2, 10), (1, 1, 8), (1000, 3.5, 16), (7, 1.5, 2), (2.5, 2, 32)])
    def test_error_bound_is_reached(self, vmax, power, bits):
        x = np.random.default_rng(bits).uniform(-vmax, vmax, 50_000)
        err = np.abs(ref.power_dequantize(ref.power_quantize(x, vmax, power, bits), vmax, power, bits) - x)
        me = ref.power_max_error(vmax, power, bits)
        assert err.max() <= me * (1 + 1e-9)
        L = 2 ** (bits - 1) - 1
        edge = vmax * math.pow((L - 0.5) / L, power) + me * 1e-6    # just above the top decision edge
        assert abs(float(ref.power_dequantize(ref.power_quantize(edge, vmax, power, bits), vmax, power, bits)) - edge) \
            == pytest.approx(me, rel=1e-5)

    def test_valid(self):
        assert ref.power_valid([0, 1, 511, 512, 513, 1023, 1024, -1], 10).tolist() == \
            [True, True, True, False, True, True, False, False]
        with pytest.raises(SchemaError, match="pow"):
            ref.power_quantize(1.0, 50, 0.5, 10)
        with pytest.raises(SchemaError, match="bits"):
            ref.power_quantize(1.0, 50, 2, 1)


# ----------------------------------------------------------------------------------------------
# Half: NumPy is the reference
# ----------------------------------------------------------------------------------------------

class TestHalf:
    def test_every_code_decodes_like_numpy(self):
        codes = np.arange(65536, dtype=np.uint16)
        want = codes.view(np.float16).astype(np.float64)
        assert _same_float(ref.half_dequantize(codes), want)

    def test_every_code_round_trips(self):
        codes = np.arange(65536, dtype=np.uint64)
        assert (ref.half_quantize(ref.half_dequantize(codes)) == codes).all()
        assert ref.half_valid(codes).all()
        assert ref.half_valid([65536, -1]).tolist() == [False, False]

    def test_ties_and_neighbours_like_numpy(self):
        finite = np.arange(0, 0x7C00, dtype=np.uint16).view(np.float16).astype(np.float64)
        mids = (finite[:-1] + finite[1:]) / 2.0          # exact in float64
        x = np.concatenate([mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf),
                            [65504.0, 65519.99, 65520.0, 1e300, 2.0 ** -25, 2.0 ** -26, 5e-324, 0.0]])
        x = np.concatenate([x, -x])
        with np.errstate(over="ignore"):
            want = x.astype(np.float16).view(np.uint16)
        assert (ref.half_quantize(x) == want).all()

    def test_random_doubles_and_nans_like_numpy(self):
        rng = np.random.default_rng(5)
        bits = rng.integers(0, 2 ** 64, size=200_000, dtype=np.uint64)
        nans = (np.uint64(0x7FF) << np.uint64(52)) | rng.integers(1, 2 ** 52, size=20_000, dtype=np.uint64)
        nans = np.concatenate([nans, nans | np.uint64(1 << 63), np.array([0x7FF0000000000001, 0xFFF8000000000000], dtype=np.uint64)])
        x = np.concatenate([bits, nans]).view(np.float64)
        x = np.concatenate([x, np.exp(rng.uniform(-40, 12, 100_000)) * rng.choice([-1.0, 1.0], 100_000)])
        with np.errstate(over="ignore", invalid="ignore"):
            want = x.astype(np.float16).view(np.uint16)
        assert (ref.half_quantize(x) == want).all()

    def test_hand_values(self):
        x = [1.0, -2.0, 65504.0, 65519.99, 65520.0, math.inf, -math.inf, -0.0, 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -25, 1 / 3]
        assert [hex(int(c)) for c in ref.half_quantize(x)] == \
            ["0x3c00", "0xc000", "0x7bff", "0x7bff", "0x7c00", "0x7c00", "0xfc00", "0x8000", "0x1", "0x0", "0x2", "0x3555"]
        nan = ref.half_quantize([math.nan, -math.nan])
        assert [int(c) & 0x7C00 == 0x7C00 and int(c) & 0x3FF != 0 for c in nan] == [True, True]
        assert [int(c) >> 15 for c in nan] == [0, 1]     # a NaN keeps its sign


# ----------------------------------------------------------------------------------------------
# Quat
# ----------------------------------------------------------------------------------------------

def _random_quats(n, seed):
    q = np.random.default_rng(seed).standard_normal((n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


class TestQuat:
    def test_identity_hand_value(self):
        for mode in MODES:
            c = int(ref.quat_quantize([0.0, 0.0, 0.0, 1.0], 9, mode))
            assert c == (3 << 27) | (256 << 18) | (256 << 9) | 256
        assert int(ref.quat_quantize([0.0, 0.0, 0.0, -2.0], 9)) == (3 << 27) | (256 << 18) | (256 << 9) | 256
        # the first index wins a tie
        assert int(ref.quat_quantize([0.5, 0.5, 0.5, 0.5], 9)) >> 27 == 0

    def test_sign_flip_example(self):
        # seed 001: (0.10, 0.21, 0.31, -0.92) at 9 bits is 0.14 deg off with the flip (bins, the seed's rule)
        q = np.array([0.10, 0.21, 0.31, -0.92])
        qn = ref.quat_normalize(q)
        a = float(quat_angle_deg(qn, ref.quat_dequantize(ref.quat_quantize(q, 9, "bins"), 9, "bins")))
        assert a < 0.14 and round(a, 2) == 0.14
        assert float(quat_angle_deg(qn, ref.quat_dequantize(ref.quat_quantize(q, 9), 9))) <= QUAT_MAX_ERROR["endpoints", 9]
        # without the flip the three are sent with the wrong sign relative to the rebuilt w: ~90 deg off
        c = ref.bounded_quantize(qn[:3], -ref.QUAT_LIMIT, ref.QUAT_LIMIT, 9, "bins")
        code = (3 << 27) | (int(c[0]) << 18) | (int(c[1]) << 9) | int(c[2])
        wrong = float(quat_angle_deg(qn, ref.quat_dequantize(code, 9, "bins")))
        assert 89.0 < wrong < 93.0

    @pytest.mark.parametrize("mode", MODES)
    def test_tie_round_trips(self, mode):
        s = math.sqrt(0.5)
        for q in ([s, -s, 0.0, 0.0], [-s, s, 0.0, 0.0], [0.0, s, 0.0, s], [0.0, 0.0, -s, -s], [1.0, -1.0, 0.0, 0.0]):
            c = ref.quat_quantize(q, 9, mode)
            assert int(c) == int(ref.quat_quantize(-np.asarray(q), 9, mode))
            assert bool(ref.quat_valid(c, 9, mode))
            p = ref.quat_dequantize(c, 9, mode)
            assert float(quat_angle_deg(ref.quat_normalize(q), p)) <= QUAT_MAX_ERROR[mode, 9]
        # (1/sqrt2, -1/sqrt2, 0, 0) drops index 0 and keeps -1/sqrt2, which is exactly the bottom code
        c = int(ref.quat_quantize([s, -s, 0.0, 0.0], 9, "endpoints"))
        assert c >> 27 == 0 and (c >> 18) & 511 == 0

    @pytest.mark.parametrize("mode", MODES)
    @pytest.mark.parametrize("bits", [2, 4, 9, 12, 20])
    def test_q_and_minus_q_identical(self, mode, bits):
        q = _random_quats(20_000, bits)
        assert (ref.quat_quantize(q, bits, mode) == ref.quat_quantize(-q, bits, mode)).all()

    @pytest.mark.parametrize("mode", MODES)
    @pytest.mark.parametrize("bits", [2, 3, 9, 20])
    def test_matches_transliteration(self, mode, bits):
        q = np.concatenate([_random_quats(500, 7) * 3.0, [[0.5, 0.5, 0.5, 0.5], [0, 0, 0, 1e-300], [1e300, 1e300, 0, 0]]])
        codes = ref.quat_quantize(q, bits, mode)
        assert codes.tolist() == [quat_q1([float(v) for v in row], bits, mode) for row in q]
        dec = ref.quat_dequantize(codes, bits, mode)
        assert _same_float(dec, [quat_d1(int(c), bits, mode) for c in codes])

    @pytest.mark.parametrize("mode", MODES)
    @pytest.mark.parametrize("bits", [3, 9, 10, 16])
    def test_error_within_table(self, mode, bits):
        q = _random_quats(100_000, 11)
        p = ref.quat_dequantize(ref.quat_quantize(q, bits, mode), bits, mode)
        a = quat_angle_deg(ref.quat_normalize(q), p)
        assert a.max() <= QUAT_MAX_ERROR[mode, bits]
        np.testing.assert_allclose(np.linalg.norm(p, axis=1), 1.0, rtol=0, atol=4e-16)

    @pytest.mark.parametrize("bad,what", [([0, 0, 0, 0], "zero quaternion"), ([0, math.nan, 0, 1], "non-finite"),
                                          ([math.inf, 0, 0, 1], "non-finite")])
    def test_bad_quaternions(self, bad, what):
        with pytest.raises(RangeError, match=what):
            ref.quat_quantize(bad, 9)
        arr = np.tile([0.0, 0.0, 0.0, 1.0], (40, 1))
        arr[37] = bad
        with pytest.raises(RangeError, match=f"row 37: {what}"):
            ref.quat_quantize(arr, 9)

    @pytest.mark.parametrize("mode", MODES)
    @pytest.mark.parametrize("bits", [2, 3, 5, 9, 20])
    def test_every_produced_code_is_valid(self, mode, bits):
        s = math.sqrt(0.5)
        q = np.concatenate([_random_quats(50_000, bits), np.eye(4), -np.eye(4), [[s, s, 0, 0], [s, -s, 0, 0], [0.5] * 4],
                            ref.quat_normalize(0.5 + _random_quats(20_000, 1) * 1e-3),
                            ref.quat_normalize(np.array([s, s, 0, 0]) + _random_quats(20_000, 2) * 1e-4)])
        assert ref.quat_valid(ref.quat_quantize(q, bits, mode), bits, mode).all()

    @pytest.mark.parametrize("mode", MODES)
    def test_invalid_codes(self, mode):
        bits = 9
        top = (1 << bits) - 1
        mid = 1 << (bits - 1)
        codes = [(0 << 27) | (top << 18) | (top << 9) | top,          # three kept at +0.707: longer than 1
                 (2 << 27) | (top << 18) | (top << 9) | mid,          # two at 0.707: no room for a larger dropped one
                 (1 << 27) | (mid << 18) | (mid << 9) | mid,          # near identity: fine
                 1 << 29, -1, 2 ** 100]
        assert ref.quat_valid(codes, bits, mode).tolist() == [False, False, True, False, False, False]
        with pytest.raises(DecodeError):
            ref.quat_dequantize(1 << 29, bits, mode)

    def test_valid_small_bits_exhaustive(self):
        # at 4 bits, the codes quantize produces (by dense sampling) are all valid, and some codes are not
        # (at 2 bits every code passes: shrinking by a whole step leaves at most 0.236 per component)
        assert ref.quat_valid(np.arange(2 ** 8), 2).all()
        bits = 4
        for mode in MODES:
            produced = set(ref.quat_quantize(_random_quats(200_000, 3), bits, mode).tolist())
            valid = set(np.flatnonzero(ref.quat_valid(np.arange(2 ** (2 + 3 * bits)), bits, mode)).tolist())
            assert produced <= valid
            assert len(valid) < 2 ** (2 + 3 * bits)

    def test_component_step(self):
        assert ref.quat_component_step(9) == 2 * math.sqrt(0.5) / 511
        assert ref.quat_component_step(9, "bins") == 2 * math.sqrt(0.5) / 512


# ----------------------------------------------------------------------------------------------
# UnitVector
# ----------------------------------------------------------------------------------------------

def _random_dirs(n, seed):
    v = np.random.default_rng(seed).standard_normal((n, 3))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


class TestUnitVector:
    def test_hand_values(self):
        b = 8
        L, mid = 255, 128
        c = ref.unitvec_quantize([[0, 0, 1], [0, 0, -1], [1, 0, 0], [-0.0, 0, -1], [0, -1, 0], [1, 1, 1]], b)
        assert c.tolist() == [(mid << 8) | mid, (L << 8) | L, (L << 8) | mid, (L << 8) | L, (mid << 8) | 0,
                              (170 << 8) | 170]
        d = ref.unitvec_dequantize(c, b)
        assert d[1].tolist() == [0.0, 0.0, -1.0]          # the -z pole decodes exactly
        assert d[2].tolist()[0] == pytest.approx(1.0, abs=1e-4)

    @pytest.mark.parametrize("bits", [2, 8, 16, 32])
    def test_matches_transliteration(self, bits):
        v = np.concatenate([_random_dirs(1000, bits) * 2.5, np.eye(3), -np.eye(3), [[-0.0, 0.0, -1.0], [1, 1, -1], [1e-300, 0, -1e-300]]])
        codes = ref.unitvec_quantize(v, bits)
        assert codes.tolist() == [unitvec_q1([float(t) for t in row], bits) for row in v]
        assert _same_float(ref.unitvec_dequantize(codes, bits), [unitvec_d1(int(c), bits) for c in codes])

    @pytest.mark.parametrize("bits", [4, 8, 12, 16, 24])
    def test_error_within_table(self, bits):
        v = _random_dirs(100_000, 21)
        d = ref.unitvec_dequantize(ref.unitvec_quantize(v, bits), bits)
        assert unitvec_angle_deg(v, d).max() <= UNITVEC_MAX_ERROR[bits]

    def test_bad_vectors(self):
        with pytest.raises(RangeError, match="zero vector"):
            ref.unitvec_quantize([0, 0, 0], 8)
        arr = np.ones((10, 3))
        arr[3, 1] = math.nan
        with pytest.raises(RangeError, match="row 3: non-finite vector"):
            ref.unitvec_quantize(arr, 8)

    def test_valid(self):
        assert ref.unitvec_valid([0, 2 ** 16 - 1, 2 ** 16, -1], 8).tolist() == [True, True, False, False]
        assert ref.unitvec_valid(2 ** 64 - 1, 32).tolist() is True


# ----------------------------------------------------------------------------------------------
# Grid
# ----------------------------------------------------------------------------------------------

class TestGrid:
    def test_hand_values(self):
        c = ref.grid_quantize([3.7, -0.25, 0.0, -1e-300, 1e9, -1e9, math.inf, -math.inf, math.nan], 1.0, 16, 8)
        assert c.tolist() == [(3 << 8) | 179, (0xFFFF << 8) | 192, 0, (0xFFFF << 8) | 255, (0x7FFF << 8) | 255,
                              0x8000 << 8, (0x7FFF << 8) | 255, 0x8000 << 8, 0]
        d = ref.grid_dequantize(c, 1.0, 16, 8)
        assert d[:2].tolist() == [3 + 179.5 / 256, -1 + 192.5 / 256]

    @pytest.mark.parametrize("cs,cb,ob", [(1.0, 16, 8), (64.0, 24, 16), (0.5, 1, 3), (3.0, 40, 24), (1.0, 63, 1), (2.0, 1, 63)])
    def test_matches_transliteration(self, cs, cb, ob):
        x = np.concatenate([_values(cb, 3000, scale=cs * 2.0 ** min(cb, 60)), _values(ob, 2000, scale=cs * 100)])
        got = ref.grid_quantize(x, cs, cb, ob)
        assert got.tolist() == [grid_q1(float(v), cs, cb, ob) for v in x]
        assert _same_float(ref.grid_dequantize(got, cs, cb, ob), [grid_d1(int(c), cs, cb, ob) for c in got])

    def test_wide_fields(self):
        # cell = 2**(cb-1) is past cmax even where float(cmax) rounds up to it (cb >= 55): clamp, never wrap
        for cb, ob in [(63, 1), (60, 4), (54, 10)]:
            c = ref.grid_quantize([2.0 ** (cb - 1), -(2.0 ** (cb - 1))], 1.0, cb, ob)
            assert c.tolist() == [(((1 << (cb - 1)) - 1) << ob) | ((1 << ob) - 1), (1 << (cb - 1)) << ob]
        # a tiny negative: u - floor(u) rounds to 1.0, the offset saturates at 2**ob - 1 (in integers)
        assert int(ref.grid_quantize(-1e-300, 2.0, 1, 63)) == 2 ** 64 - 1
        assert int(ref.grid_quantize(-1e-300, 1.0, 16, 8)) == (0xFFFF << 8) | 255

    def test_bad_parameters(self):
        for cb, ob, what in [(0, 8, "cell_bits"), (8, 0, "offset_bits"), (40, 25, "at most 64"), (64, 1, "cell_bits")]:
            with pytest.raises(SchemaError, match=what):
                ref.grid_quantize(0.0, 1.0, cb, ob)

    def test_error_and_cell_bits(self):
        cs, cb, ob = 64.0, 24, 16
        x = np.random.default_rng(2).uniform(-cs * 2 ** 23, cs * 2 ** 23, 100_000)
        c = ref.grid_quantize(x, cs, cb, ob)
        err = np.abs(ref.grid_dequantize(c, cs, cb, ob) - x)
        assert err.max() <= ref.grid_max_error(cs, cb, ob) * (1 + 1e-6)
        # moving inside one cell changes only the offset bits
        y = 1000 * cs + np.linspace(0, cs, 1000, endpoint=False)
        assert len(set((ref.grid_quantize(y, cs, cb, ob) >> np.uint64(ob)).tolist())) == 1


# ----------------------------------------------------------------------------------------------
# exact data and composites
# ----------------------------------------------------------------------------------------------

class TestExact:
    def test_uint_int_bool_enum(self):
        assert ref.uint_quantize([0, 255], 8).tolist() == [0, 255]
        with pytest.raises(RangeError, match="256"):
            ref.uint_quantize(256, 8)
        with pytest.raises(RangeError, match="element 1"):
            ref.uint_quantize([0, -1], 8)
        assert ref.int_quantize([-128, 127], 8).tolist() == [-128, 127]
        with pytest.raises(RangeError):
            ref.int_quantize(128, 8)
        with pytest.raises(RangeError, match="not an integer"):
            ref.int_quantize(1.5, 8)
        assert ref.uint_quantize(2 ** 64 - 1, 64).tolist() == 2 ** 64 - 1
        assert ref.int_valid([-(2 ** 63), 2 ** 63 - 1, 2 ** 63, -1], 64).tolist() == [True, True, False, True]
        assert ref.uint_valid([-1, 2 ** 64 - 1, 2 ** 64, 2 ** 200], 64).tolist() == [False, True, False, False]
        assert ref.bool_quantize([True, False]).tolist() == [1, 0]
        assert ref.bool_dequantize([1, 0]).tolist() == [True, False]
        labels = ["idle", "walk", "run"]
        assert ref.enum_bits(3) == 2 and ref.enum_bits(1) == 0 and ref.enum_bits(4) == 2 and ref.enum_bits(5) == 3
        assert int(ref.enum_quantize("run", labels)) == 2
        assert ref.enum_dequantize(1, labels) == "walk"
        assert ref.enum_valid([0, 2, 3, -1], labels).tolist() == [True, True, False, False]
        with pytest.raises(DecodeError):
            ref.enum_dequantize(3, labels)
        with pytest.raises(RangeError):
            ref.enum_quantize("fly", labels)

    def test_nearly_zero(self):
        inner = lambda x: ref.power_quantize(x, 50, 2, 10)       # noqa: E731
        inner_d = lambda c: ref.power_dequantize(c, 50, 2, 10)   # noqa: E731
        c = ref.nearly_zero_quantize([0.0, 0.01, -0.01, 0.0100001, -5.0, math.nan], 0.01, inner)
        assert c[:, 0].tolist() == [0, 0, 0, 1, 1, 1]
        assert c[:3, 1].tolist() == [0, 0, 0]
        d = ref.nearly_zero_dequantize(c, inner_d)
        assert d[:3].tolist() == [0.0, 0.0, 0.0] and d[4] == float(inner_d(inner(-5.0)))
        # vectors: every component at most the threshold
        vq = lambda x: ref.vector_quantize(x, [inner] * 3)           # noqa: E731
        c = ref.nearly_zero_quantize([[0.001, -0.002, 0.0], [0.001, 0.5, 0.0]], 0.01, vq, vector=True)
        assert c.shape == (2, 4) and c[:, 0].tolist() == [0, 1] and c[0, 1:].tolist() == [0, 0, 0]
        vv = lambda cc: ref.vector_valid(cc, [lambda k: ref.power_valid(k, 10)] * 3)   # noqa: E731
        assert ref.nearly_zero_valid(c, vv, vector=True).tolist() == [True, True]
        assert ref.nearly_zero_valid([[0, 1, 0, 0], [2, 0, 0, 0]], vv, vector=True).tolist() == [False, False]
        with pytest.raises(SchemaError, match="threshold"):
            ref.nearly_zero_quantize(0.0, -1.0, inner)

    def test_vector(self):
        qs = [lambda x: ref.bounded_quantize(x, -2048, 2048, 18), lambda x: ref.bounded_quantize(x, -64, 192, 14),
              lambda x: ref.bounded_quantize(x, -2048, 2048, 18)]
        c = ref.vector_quantize([[0.0, 0.0, 0.0], [2048.0, 192.0, -2048.0]], qs)
        assert c.tolist() == [[131072, 4096, 131072], [2 ** 18 - 1, 2 ** 14 - 1, 0]]
