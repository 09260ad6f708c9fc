"""The compiled codecs against the plain-NumPy reference (quantcodec._reference), bit for bit.

For a broad set of codec parameters, every path of the core (array quantize / dequantize / roundtrip
/ valid, with float64, float32, non-contiguous, byte-swapped and ``out=`` inputs, and the per-value
path with Python and NumPy scalars) must give exactly the reference's codes, and decoded float64
values with exactly the reference's bits (compared through ``.view(np.uint64)``, so NaN payloads and
signed zeros count). The inputs are random (all bit patterns and in-range), the range ends and the
decision edges of every rule with their ulp neighbours, NaNs of both signs with payloads, infinities,
signed zeros, subnormals and huge values.

Both sides must also raise the same error types for bad input (STYLE.md: core and reference raise
the same types): RangeError for a zero / non-finite quaternion or vector and for exact data out of
range, DecodeError for codes that are not valid, SchemaError for bad parameters, TypeError for
inputs of the wrong dtype.
"""

import math
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest

import quantcodec as qc
from quantcodec import _reference as ref
from quantcodec.errors import DecodeError, RangeError, SchemaError

N_RANDOM = 50_000          # random values of each kind (wide, in range): 100k per codec
N_SLOW = 6_000             # the same for PowerCurve, whose reference calls math.pow per element
N_CODES = 20_000           # random codes for codecs too wide to decode every code
N_MULTI = 12_000           # random quaternions / vectors per codec
N_PER_VALUE = 150          # values through the per-value path

INF = math.inf
NAN_BITS = [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001, 0xFFF0000000000001,
            0x7FF4000000000000, 0x7FFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF, 0x7FF8DEADBEEF0000,
            0xFFF0000004000000]
SPECIAL = np.concatenate([
    np.array(NAN_BITS, dtype=np.uint64).view(np.float64),
    np.array([0.0, -0.0, INF, -INF, 5e-324, -5e-324, 1e-323, 2.2250738585072009e-308,
              -2.2250738585072009e-308, 2.2250738585072014e-308, -2.2250738585072014e-308, 1e-300,
              -1e-300, 1e-30, -1e-30, 1e300, -1e300, 1.7976931348623157e308, -1.7976931348623157e308,
              0.5, -0.5, 0.49999999999999994, -0.49999999999999994, 1.5, -1.5, 2.5, -2.5, 1.0, -1.0,
              math.pi, -math.pi, 2 * math.pi, -2 * math.pi, 360.0, -360.0, 180.0, -180.0, 65504.0,
              65520.0, -65520.0, 2.0 ** 53, 2.0 ** 53 + 2, 2.0 ** 63, -(2.0 ** 63), 2.0 ** 64,
              -(2.0 ** 64), 1e20, -1e20, 4503599627370495.5, -4503599627370495.5]),
])


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------

def _rng(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _hex(v):
    v = np.asarray(v)
    if v.ndim:
        return "(" + ", ".join(_hex(t) for t in v) + ")"
    if v.dtype.kind == "f":
        f = float(v)
        s = f.hex()
        if f != f:
            s += f"[bits {int(np.float64(f).view(np.uint64)):#018x}]"
        return s
    return repr(v.item())


def _show(a, i):
    a = np.asarray(a)
    if a.ndim == 0:
        return _hex(a) if a.dtype.kind == "f" else repr(a.tolist())
    if a.dtype.kind == "f":
        return _hex(a[i])
    return repr(a[i].tolist())


def _fail(what, ne, inputs, got, want, limit=6):
    """Report the mismatching rows (first axis) of ``ne`` with their inputs as float.hex."""
    rows = np.flatnonzero(ne.reshape(ne.shape[0], -1).any(axis=1)) if ne.ndim else np.array([0])
    lines = [f"{what}: {len(rows)} mismatching rows of {ne.shape[0] if ne.ndim else 1}"]
    for i in rows[:limit]:
        inp = _hex(np.asarray(inputs)[i]) if inputs is not None else "-"
        lines.append(f"  [{i}] input {inp}: core {_show(got, i)}, reference {_show(want, i)}")
    pytest.fail("\n".join(lines))


def same_codes(got, want, inputs=None, what="codes"):
    """Equal integer codes (the core's uint32/int32 widened to the reference's 64-bit dtype)."""
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype.kind in "iub" and want.dtype.kind in "iub", (got.dtype, want.dtype)
    if want.dtype.kind == "b" or got.dtype.kind == "b":
        ne = got.astype(bool) != want.astype(bool)
    elif got.dtype.kind == want.dtype.kind:
        ne = got.astype(want.dtype) != want
    else:   # compare as Python ints (e.g. an int64 Vector code against uint64 reference codes)
        ne = np.array([int(a) != int(b) for a, b in zip(got.ravel().tolist(), want.ravel().tolist())],
                      dtype=bool).reshape(got.shape)
    if ne.any():
        _fail(what, ne, inputs, got, want)


def same_floats(got, want, inputs=None, what="values"):
    """Bit-identical float64 arrays: NaN payloads and signed zeros included."""
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.dtype == np.float64, f"{what}: dtype {got.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    g = np.ascontiguousarray(got, dtype=np.float64).view(np.uint64)
    w = np.ascontiguousarray(want, dtype=np.float64).view(np.uint64)
    ne = g != w
    if ne.any():
        _fail(what, ne, inputs, got, want)


def same_float(got, want, what):
    assert type(got) is float, f"{what}: per-value result is {type(got).__name__}, not float"
    assert np.float64(got).view(np.uint64) == np.float64(want).view(np.uint64), \
        f"{what}: core {_hex(np.float64(got))}, reference {_hex(np.float64(want))}"


def ulps(x, k=2):
    """``x`` with its ``k`` float64 neighbours on either side."""
    x = np.asarray(x, dtype=np.float64).ravel()
    out = [x]
    up = down = x
    for _ in range(k):
        up = np.nextafter(up, INF)
        down = np.nextafter(down, -INF)
        out += [up, down]
    return np.concatenate(out)


def ulps32(x, k=2):
    """float32 values near ``x`` and their ``k`` float32 neighbours on either side."""
    with np.errstate(over="ignore", invalid="ignore"):
        x = np.asarray(x, dtype=np.float64).astype(np.float32).ravel()
    out = [x]
    up = down = x
    for _ in range(k):
        up = np.nextafter(up, np.float32(INF))
        down = np.nextafter(down, np.float32(-INF))
        out += [up, down]
    return np.concatenate(out)


def wide_random(rng, n):
    """Every bit pattern (all exponents, NaN payloads, subnormals) and log-uniform magnitudes."""
    pats = np.frombuffer(rng.bytes(8 * (n // 2)), dtype=np.uint64).view(np.float64)
    mags = rng.choice([-1.0, 1.0], n - n // 2) * 10.0 ** rng.uniform(-15, 15, n - n // 2)
    return np.concatenate([pats, mags])


def sample_ks(rng, top, n=2048):
    """Integers 0..top: all of them when few, else both ends and a random sample."""
    if top <= 2 * n:
        return np.arange(top + 1, dtype=np.float64)
    mid = rng.integers(0, top, n, endpoint=True, dtype=np.uint64).astype(np.float64)
    ends = np.arange(16, dtype=np.float64)
    return np.concatenate([ends, float(top) - ends, mid, np.array([float(top // 2), float(top // 2 + 1)])])


def to_f32(x):
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(x, dtype=np.float64).astype(np.float32)


def to_f64(x):
    """float32 -> float64, exact (a signalling NaN comes out quiet, as in the core's C conversion)."""
    with np.errstate(invalid="ignore"):
        return np.asarray(x).astype(np.float64)


def rq(f, *args):
    """A reference call with NumPy's floating-point warnings silenced (the suite turns warnings into
    errors; the reference's own invalid / overflow steps are part of its rules)."""
    with np.errstate(all="ignore"):
        return f(*args)


def raises_type(fn):
    """The exception type ``fn()`` raises, or None."""
    try:
        with np.errstate(all="ignore"):
            fn()
    except Exception as e:   # noqa: BLE001 - we compare the types
        return type(e)
    return None


def expected_dtype(bits, signed):
    if signed:
        return np.dtype(np.int32) if bits <= 32 else np.dtype(np.int64)
    return np.dtype(np.uint32) if bits <= 32 else np.dtype(np.uint64)


# ----------------------------------------------------------------------------------------------
# scalar float codecs: cases
# ----------------------------------------------------------------------------------------------

@dataclass
class Scalar:
    id: str
    core: Any
    q: Callable                    # reference quantize
    dq: Callable                   # reference dequantize
    valid: Callable                # reference valid
    code_bits: int                 # the code space: 0 .. 2**code_bits - 1 (signed: two's complement)
    signed: bool = False
    windows: list = field(default_factory=list)   # (lo, hi) for in-range uniform values
    edges: Any = None              # decision edges, ends and their ulp neighbours (float64)
    n: int = N_RANDOM
    noncanonical: list = field(default_factory=list)   # in-range codes that are not valid

    def code_range(self):
        if self.signed:
            return -(1 << (self.code_bits - 1)), (1 << (self.code_bits - 1)) - 1
        return 0, (1 << self.code_bits) - 1


def bounded_case(lo, hi, bits, mode):
    c = qc.Bounded(lo, hi, bits, mode=mode)
    rng = _rng("bounded", lo, hi, bits, mode)
    R = hi - lo
    if mode != "bins":
        L = 2 ** bits - (2 if mode == "midpoint" else 1)
        ks = sample_ks(rng, L)
        step = R / float(L)
        e = [lo + (ks + 0.5) * step, lo + ((ks + 0.5) * R) / L, lo + ks * step, lo + (ks * R) / L]
    else:
        N = 2 ** bits
        ks = sample_ks(rng, N)
        step = R / float(N)
        e = [lo + ks * step, lo + (ks * R) / N, lo + (ks + 0.5) * step]
    edges = ulps(np.concatenate(e + [np.array([lo, hi, lo - step, hi + step])]), 3)
    return Scalar(
        f"Bounded({lo!r},{hi!r},{bits},{mode})", c,
        lambda x: ref.bounded_quantize(x, lo, hi, bits, mode),
        lambda k: ref.bounded_dequantize(k, lo, hi, bits, mode),
        lambda k: ref.bounded_valid(k, bits, mode),
        bits, windows=[(lo, hi), (lo - 0.25 * R, hi + 0.25 * R)], edges=edges,
        noncanonical=[2 ** bits - 1] if mode == "midpoint" else [])


def fixed_case(step, bits, signed, offset):
    c = qc.Fixed(step, bits, signed=signed, offset=offset)
    rng = _rng("fixed", step, bits, signed, offset)
    smin, smax = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2 ** bits - 1)
    small = np.arange(-8, 9, dtype=np.float64)
    mid = rng.integers(smin, smax, 2000, endpoint=True, dtype=np.int64 if signed else np.uint64)
    ends = np.concatenate([float(smin) + small, float(smax) + small, float(smin + smax) / 2 + small])
    ks = np.concatenate([small, mid.astype(np.float64), ends])
    vs = np.concatenate([ks, ks + 0.5, ks - 0.5, np.array([0.49999999999999994, -0.49999999999999994,
                                                             1.4999999999999998, -2.5000000000000004])])
    edges = ulps(np.concatenate([offset + vs * step, np.array([offset, offset + step / 2, offset - step / 2])]), 3)
    span = (smax - smin) * step
    return Scalar(
        f"Fixed({step!r},{bits},signed={signed},offset={offset!r})", c,
        lambda x: ref.fixed_quantize(x, step, bits, signed, offset),
        lambda k: ref.fixed_dequantize(k, step, bits, signed, offset),
        lambda k: ref.fixed_valid(k, bits, signed),
        bits, signed=signed,
        windows=[(offset + smin * step, offset + smax * step), (offset - 100 * step, offset + 100 * step),
                 (offset + smin * step - 0.1 * span, offset + smax * step + 0.1 * span)],
        edges=edges)


def angle_case(bits, signed, unit):
    c = qc.Angle(bits, signed=signed, unit=unit)
    rng = _rng("angle", bits, signed, unit)
    full = ref.angle_full_turn(unit)
    N = 2 ** bits
    ks = sample_ks(rng, N)
    base = np.concatenate([(ks + 0.5) * full / N, ((ks + 0.5) / N) * full, ks * full / N])
    turns = np.array([0.0, 1.0, -1.0, -3.0, 7.0, 1000.0, -12345.0])
    e = [base, -base, (base[:, None] + turns * full).ravel(),
         np.array([full, -full, full / 2, -full / 2, 1e-300, -1e-300, 5e-324, -5e-324,
                   359.999, 0.001, -0.001, 1e16, -1e16, 1e22, 1e300, -1e300])]
    return Scalar(
        f"Angle({bits},signed={signed},{unit})", c,
        lambda x: ref.angle_quantize(x, bits, signed, unit),
        lambda k: ref.angle_dequantize(k, bits, signed, unit),
        lambda k: ref.angle_valid(k, bits),
        bits, windows=[(0.0, full), (-full / 2, full / 2), (-50 * full, 50 * full)],
        edges=ulps(np.concatenate(e), 2))


def power_case(vmax, power, bits):
    c = qc.PowerCurve(vmax, power, bits)
    rng = _rng("power", vmax, power, bits)
    L = 2 ** (bits - 1) - 1
    ms = sample_ks(rng, L, 600)
    e = np.concatenate([vmax * ((ms + 0.5) / L) ** power, vmax * (ms / L) ** power, np.array([vmax])])
    edges = ulps(np.concatenate([e, -e]), 2)
    return Scalar(
        f"PowerCurve({vmax!r},{power!r},{bits})", c,
        lambda x: ref.power_quantize(x, vmax, power, bits),
        lambda k: ref.power_dequantize(k, vmax, power, bits),
        lambda k: ref.power_valid(k, bits),
        bits, windows=[(-vmax, vmax), (-1.5 * vmax, 1.5 * vmax), (-vmax * 1e-3, vmax * 1e-3)],
        edges=edges, n=N_SLOW, noncanonical=[1 << (bits - 1)])


def half_case():
    allh = np.arange(1 << 16, dtype=np.uint64).astype(np.uint16).view(np.float16).astype(np.float64)
    pos = allh[:0x7C00]                      # +0 .. 65504, increasing
    mids = (pos[:-1] + pos[1:]) / 2          # exact: ties between neighbours
    top = np.array([65504.0, 65520.0, 65519.99999999999, 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26,
                    2.0 ** -14, 2.0 ** -14 - 2.0 ** -25])
    e = np.concatenate([allh, ulps(np.concatenate([mids, top]), 1), -ulps(np.concatenate([mids, top]), 1)])
    return Scalar("Half()", qc.Half(), ref.half_quantize, ref.half_dequantize, ref.half_valid, 16,
                  windows=[(-70000.0, 70000.0), (-1.0, 1.0), (-1e-4, 1e-4)], edges=e)


def grid_case(cs, cb, ob):
    c = qc.Grid(cs, cb, ob)
    rng = _rng("grid", cs, cb, ob)
    lim = cs * 2.0 ** (cb - 1)
    cells = np.concatenate([np.arange(-4, 5, dtype=np.float64),
                            rng.integers(-(2 ** (cb - 1)), 2 ** (cb - 1), 300, dtype=np.int64).astype(np.float64),
                            2.0 ** (cb - 1) + np.arange(-3, 3), -(2.0 ** (cb - 1)) + np.arange(-3, 3)])
    offs = np.concatenate([sample_ks(rng, 2 ** ob, 64), rng.uniform(0, 2 ** ob, 64)]) / 2.0 ** ob
    e = [((cells[:, None] + offs) * cs).ravel(), (cells[:, None] * cs + offs * cs).ravel(),
         np.array([lim, -lim, 0.0, -1e-300, -5e-324, 1e-300, -cs / 2 ** (ob + 1), cs * (1 - 2.0 ** -60)])]
    return Scalar(
        f"Grid({cs!r},{cb},{ob})", c,
        lambda x: ref.grid_quantize(x, cs, cb, ob),
        lambda k: ref.grid_dequantize(k, cs, cb, ob),
        lambda k: ref.grid_valid(k, cb, ob),
        cb + ob, windows=[(-lim, lim), (-1.25 * lim, 1.25 * lim), (-1000 * cs, 1000 * cs), (-cs, cs)],
        edges=ulps(np.concatenate(e), 2))


def _all_scalars():
  with np.errstate(all="ignore"):   # edges of huge ranges overflow to inf: kept, they are inputs too
   return (
    [bounded_case(lo, hi, bits, mode)
     for (lo, hi) in [(-1.0, 1.0), (-2048.0, 2048.0), (-3.0, 7.0), (0.1, 0.7)]
     for bits in (1, 2, 8, 16, 31, 32) for mode in ("endpoints", "bins", "midpoint")
     if not (mode == "midpoint" and bits < 2)]
    + [bounded_case(-1e300, 1e300, b, m) for b in (1, 26) for m in ("endpoints", "bins")]
    + [bounded_case(-1e298, 1e298, 32, m) for m in ("endpoints", "bins", "midpoint")]   # (2e300 * 2**32 overflows)
    + [bounded_case(1.0, 1.0000000000000002, b, m) for b in (1, 8) for m in ("endpoints", "bins")]
    + [bounded_case(-5e-324, 5e-324, 3, m) for m in ("endpoints", "bins", "midpoint")]
    + [bounded_case(-1e300, 1e300, 26, "midpoint"), bounded_case(1.0, 1.0000000000000002, 8, "midpoint"),
       bounded_case(-3.0, 3.0, 2, "midpoint"), bounded_case(-0.1, 0.1, 9, "midpoint")]
    + [fixed_case(step, bits, signed, offset)
       for (step, offset) in [(1e-7, 0.0), (0.01, 100.0), (0.25, -3.5), (1.0, 0.0), (0.1, -1e6)]
       for bits in (1, 2, 16, 32, 53, 64) for signed in (True, False)]
    + [fixed_case(step, bits, s, 0.0) for step in (3.0, 1e-300) for bits in (31, 33, 63) for s in (True, False)]
    + [angle_case(bits, signed, unit) for bits in (1, 2, 9, 16, 31, 32) for signed in (False, True)
       for unit in ("rad", "deg")]
    + [power_case(vmax, power, bits)
       for (vmax, bits) in [(1.0, 2), (50.0, 8), (0.3, 16), (1e6, 32), (10.0, 3)]
       for power in (1.0, 1.5, 2.0, 3.0)]
    + [half_case()]
    + [grid_case(cs, cb, ob) for (cs, cb, ob) in [
        (1.0, 1, 1), (0.5, 8, 8), (64.0, 20, 16), (100.0, 16, 16), (3.0, 32, 32), (1.0, 62, 1),
        (256.0, 63, 1), (1e-3, 1, 63), (0.1, 60, 4), (2.0, 54, 10), (1e-3, 40, 24), (0.75, 2, 62)]]
   )


SCALARS = _all_scalars()
SCALAR_IDS = [c.id for c in SCALARS]

def scalar_inputs(case):
    """(float64 inputs, float32 inputs) for a scalar case."""
    rng = _rng("inputs", case.id)
    n = case.n
    per = max(1, n // len(case.windows))
    inr = np.concatenate([rng.uniform(lo, hi, per) for lo, hi in case.windows]
                         + [np.array([lo for lo, hi in case.windows] + [hi for lo, hi in case.windows])])
    with np.errstate(all="ignore"):
        inr = inr[np.isfinite(inr)]
    edges = case.edges
    if case.n < N_RANDOM and edges.size > 4 * n:
        edges = rng.choice(edges, 4 * n, replace=False)
    x64 = np.concatenate([SPECIAL, edges, wide_random(rng, n), inr])
    x32 = np.concatenate([to_f32(x64[: SPECIAL.size]), ulps32(edges[: 4 * n], 1), to_f32(wide_random(rng, n)),
                          to_f32(inr), np.frombuffer(rng.bytes(4 * 2000), dtype=np.float32)])
    return x64, x32


def ref_codes(case, x):
    return rq(case.q, x)


def ref_decode(dq, codes):
    """The reference's decode of many codes, each distinct code decoded once (its code checks are
    Python loops); the values are bit for bit what it gives code by code."""
    u, inv = np.unique(codes, return_inverse=True)
    return rq(dq, u)[inv.reshape(codes.shape)]


class Prepared:
    """One scalar case with its inputs and the reference's answers, computed once for all its tests
    (the module-scoped fixture makes pytest run a case's tests together, then drop them)."""

    def __init__(self, case):
        self.case = case
        self.x64, self.x32 = scalar_inputs(case)
        self.x32r = to_f64(self.x32)                  # exact
        self.q64 = ref_codes(case, self.x64)
        self.q32 = ref_codes(case, self.x32r)
        self.rt64 = ref_decode(case.dq, self.q64)
        self.rt32 = ref_decode(case.dq, self.q32)


@pytest.fixture(scope="module", params=SCALARS, ids=SCALAR_IDS)
def scalar(request):
    return Prepared(request.param)


def code_sample(case):
    """The codes to decode: every code of a narrow codec, else both ends, powers of two and a sample."""
    lo, hi = case.code_range()
    dt = expected_dtype(case.code_bits, case.signed)
    if hi - lo < (1 << 16) + 1:
        codes = np.arange(lo, hi + 1, dtype=np.int64)
    else:
        rng = _rng("codes", case.id)
        n = N_CODES if case.n == N_RANDOM else N_SLOW
        if case.signed:
            r = rng.integers(lo, hi, n, endpoint=True, dtype=np.int64)
            special = [lo, lo + 1, -1, 0, 1, hi - 1, hi] + [(1 << j) for j in range(case.code_bits - 1)] \
                + [-(1 << j) for j in range(case.code_bits - 1)]
            codes = np.concatenate([r, np.array(special, dtype=np.int64)])
        else:
            r = rng.integers(0, hi, n, endpoint=True, dtype=np.uint64)
            special = [0, 1, 2, hi - 2, hi - 1, hi, hi >> 1, (hi >> 1) + 1] + [(1 << j) for j in range(case.code_bits)] \
                + [(1 << j) - 1 for j in range(1, case.code_bits)]
            codes = np.concatenate([r, np.array(special, dtype=np.uint64)])
    codes = codes.astype(dt)
    if case.noncanonical:
        codes = codes[~np.isin(codes, np.array(case.noncanonical, dtype=dt))]
    return codes


# ----------------------------------------------------------------------------------------------
# scalar float codecs: tests
# ----------------------------------------------------------------------------------------------

def test_scalar_quantize_float64(scalar):
    case, x, want = scalar.case, scalar.x64, scalar.q64
    got = case.core.quantize(x)
    assert got.dtype == expected_dtype(case.code_bits, case.signed) == case.core.code_dtype
    same_codes(got, want, x, f"{case.id}.quantize(float64)")
    # out=, non-contiguous, byte-swapped and read-only inputs read the same values
    out = np.full(x.shape, 7, dtype=got.dtype)
    assert case.core.quantize(x, out=out) is out
    same_codes(out, want, x, f"{case.id}.quantize(out=)")
    inter = np.empty(2 * x.size)
    inter[1::2] = x
    same_codes(case.core.quantize(inter[1::2]), want, x, f"{case.id}.quantize(strided)")
    same_codes(case.core.quantize(x.astype(">f8")), want, x, f"{case.id}.quantize(big-endian)")
    ro = x.copy()
    ro.flags.writeable = False
    same_codes(case.core.quantize(ro.reshape(-1, 1)).ravel(), want, x, f"{case.id}.quantize(2-d read-only)")


def test_scalar_quantize_float32(scalar):
    case, x32, x, want = scalar.case, scalar.x32, scalar.x32r, scalar.q32
    same_codes(case.core.quantize(x32), want, x, f"{case.id}.quantize(float32)")
    same_codes(case.core.quantize(x32.astype(">f4")), want, x, f"{case.id}.quantize(big-endian float32)")


def test_scalar_roundtrip(scalar):
    case = scalar.case
    same_floats(case.core.roundtrip(scalar.x64), scalar.rt64, scalar.x64, f"{case.id}.roundtrip(float64)")
    same_floats(case.core.roundtrip(scalar.x32), scalar.rt32, scalar.x32r, f"{case.id}.roundtrip(float32)")
    out = np.empty(scalar.x64.shape)
    assert case.core.roundtrip(scalar.x64, out=out) is out
    same_floats(out, scalar.rt64, scalar.x64, f"{case.id}.roundtrip(out=)")
    # roundtrip is dequantize(quantize(x)) on the core's own path too
    same_floats(case.core.dequantize(case.core.quantize(scalar.x64)), scalar.rt64, scalar.x64,
                f"{case.id}.dequantize(quantize(x))")


def test_scalar_dequantize(scalar):
    case = scalar.case
    codes = code_sample(case)
    want = rq(case.dq, codes)
    same_floats(case.core.dequantize(codes), want, codes, f"{case.id}.dequantize")
    out = np.empty(codes.shape)
    assert case.core.dequantize(codes, out=out) is out
    same_floats(out, want, codes, f"{case.id}.dequantize(out=)")
    # codes in another integer dtype convert
    wide = codes.astype(np.int64 if case.signed or case.code_bits < 64 else np.uint64)
    same_floats(case.core.dequantize(wide[::-1]), want[::-1], wide[::-1], f"{case.id}.dequantize(int64)")


def _valid_probe(case):
    """Random integer codes in and out of the code space, negative ones included, as int64 / uint64
    arrays, plus Python ints of any size."""
    rng = _rng("valid", case.id)
    lo, hi = case.code_range()
    b = case.code_bits
    arrays = []
    if b <= 61:
        arrays.append(rng.integers(lo - 8 - (hi - lo) // 8, hi + 8 + (hi - lo) // 8, 20_000, dtype=np.int64))
        arrays.append(np.array([lo - 1, lo, lo + 1, hi - 1, hi, hi + 1, -1, 0, 1, -(2 ** 63), 2 ** 63 - 1]
                               + case.noncanonical, dtype=np.int64))
    else:
        arrays.append(rng.integers(-(2 ** 63), 2 ** 63 - 1, 20_000, endpoint=True, dtype=np.int64))
        arrays.append(np.array([-(2 ** 63), -1, 0, 1, 2 ** 63 - 1], dtype=np.int64))
    u = np.frombuffer(rng.bytes(8 * 5000), dtype=np.uint64)
    arrays.append(u >> rng.integers(0, 64, u.size, dtype=np.uint64))
    arrays.append(np.array([0, 1, 2 ** 64 - 1, 2 ** 63, 2 ** 32, 2 ** 32 - 1, 2 ** 31], dtype=np.uint64))
    arrays.append(rng.integers(-(2 ** 31), 2 ** 31 - 1, 3000, dtype=np.int32))
    arrays.append(rng.integers(0, 2 ** 32 - 1, 3000, dtype=np.uint32))
    ints = [lo - 1, lo, hi, hi + 1, -1, 0, 1, 2 ** 64, 2 ** 64 - 1, -(2 ** 64), 2 ** 100, -(2 ** 100),
            2 ** 63, -(2 ** 63) - 1] + case.noncanonical
    return arrays, ints


def test_scalar_valid(scalar):
    case = scalar.case
    arrays, ints = _valid_probe(case)
    for a in arrays:
        got = case.core.valid(a)
        assert isinstance(got, np.ndarray) and got.dtype == bool and got.shape == a.shape
        same_codes(got, rq(case.valid, a), a, f"{case.id}.valid({a.dtype})")
    obj = np.array(ints, dtype=object)
    same_codes(np.asarray(case.core.valid(obj), dtype=bool), rq(case.valid, obj), obj, f"{case.id}.valid(object)")
    for v in ints:
        got = case.core.valid(v)
        assert got is True or got is False, f"{case.id}.valid({v}) returned {got!r}"
        assert got == bool(rq(case.valid, v)), f"{case.id}.valid({v}): core {got}, reference {not got}"
        if -(2 ** 63) <= v < 2 ** 63:
            assert case.core.valid(np.int64(v)) == got, f"{case.id}.valid(np.int64({v}))"
        if 0 <= v < 2 ** 64:
            assert case.core.valid(np.uint64(v)) == got, f"{case.id}.valid(np.uint64({v}))"


def test_scalar_per_value(scalar):
    case, x, x32 = scalar.case, scalar.x64, scalar.x32
    rng = _rng("per-value", case.id)
    pick = np.concatenate([np.arange(SPECIAL.size), rng.integers(SPECIAL.size, x.size, N_PER_VALUE)])
    xs = x[pick]
    codes = ref_codes(case, xs)
    rts = rq(case.dq, codes)
    for v, c, r in zip(xs.tolist(), codes.tolist(), rts.tolist()):
        what = f"{case.id} at {float(v).hex()}"
        for arg in (v, np.float64(v)):
            got = case.core.quantize(arg)
            assert type(got) is int, f"{what}: quantize({type(arg).__name__}) gave {type(got).__name__}"
            assert got == c, f"{what}: quantize({type(arg).__name__}) core {got}, reference {c}"
            same_float(case.core.roundtrip(arg), r, f"{what}: roundtrip({type(arg).__name__})")
    x32s = x32[rng.integers(0, x32.size, N_PER_VALUE)]
    codes32 = ref_codes(case, to_f64(x32s))
    rts32 = rq(case.dq, codes32)
    for v, c, r in zip(x32s, codes32.tolist(), rts32.tolist()):
        what = f"{case.id} at float32 {float(v).hex()}"
        assert case.core.quantize(v) == c, f"{what}: quantize core {case.core.quantize(v)}, reference {c}"
        same_float(case.core.roundtrip(v), r, f"{what}: roundtrip")
    # Python ints (converted to float64 like NumPy does)
    for v in (0, 1, -1, 3, -7, 1000, 2 ** 53 + 1, -(2 ** 53) - 1, 2 ** 62 + 2 ** 9 + 1):
        c = int(rq(case.q, np.array([v]))[0])
        assert case.core.quantize(v) == c, f"{case.id}: quantize({v}) core {case.core.quantize(v)}, reference {c}"
        same_float(case.core.roundtrip(v), float(rq(case.dq, np.array([c]))[0]), f"{case.id}: roundtrip({v})")
    # per-value dequantize: Python ints and NumPy integer scalars
    cs = code_sample(case)
    cs = cs[rng.integers(0, cs.size, N_PER_VALUE)]
    want = rq(case.dq, cs)
    for c, w in zip(cs.tolist(), want.tolist()):
        same_float(case.core.dequantize(c), w, f"{case.id}: dequantize({c})")
        same_float(case.core.dequantize(case.core.code_dtype.type(c)), w, f"{case.id}: dequantize(np {c})")


def _bad_codes(case):
    lo, hi = case.code_range()
    return [lo - 1, hi + 1, -1 if lo == 0 else lo - 5, 2 ** 64, -(2 ** 64), 2 ** 100] + case.noncanonical


@pytest.mark.parametrize("side", ["core", "reference"])
def test_scalar_invalid_code_raises_decode_error(scalar, side):
    """Every code that is not valid (outside the code space, or not canonical) makes decoding raise
    DecodeError, per value and in an array, on both sides."""
    case = scalar.case
    wrong = []
    for v in _bad_codes(case):
        assert not case.core.valid(v)
        if side == "core":
            calls = [("per value", lambda: case.core.dequantize(v))]
            if -(2 ** 63) <= v < 2 ** 63:
                calls.append(("int64 array", lambda: case.core.dequantize(np.array([0, v, 0], dtype=np.int64))))
            if 0 <= v < 2 ** 64:
                calls.append(("uint64 array", lambda: case.core.dequantize(np.array([v], dtype=np.uint64))))
        else:
            calls = [("per value", lambda: case.dq(v))]
            if -(2 ** 63) <= v < 2 ** 63:
                calls.append(("int64 array", lambda: case.dq(np.array([v], dtype=np.int64))))
        for how, fn in calls:
            got = raises_type(fn)
            if got is not DecodeError:
                wrong.append(f"dequantize({v}) ({how}) raised {got}")
    if wrong:
        pytest.fail(f"{side} {case.id}: {len(wrong)} calls did not raise DecodeError:\n  " + "\n  ".join(wrong[:12]))


@pytest.mark.parametrize("case", [c for c in SCALARS if c.id in (
    "Bounded(-1.0,1.0,8,endpoints)", "Fixed(0.01,16,signed=True,offset=100.0)", "Angle(16,signed=True,deg)",
    "PowerCurve(50.0,2.0,8)", "Half()", "Grid(3.0,32,32)")], ids=lambda c: c.id)
def test_scalar_wrong_dtype_is_type_error_on_both_sides(case):
    for bad in (np.array([1 + 2j, 3j]), np.array(["1.0", "2"]), np.array([1.0], dtype=np.longdouble),
                np.array(["2020-01-01"], dtype="datetime64[D]")):
        core_t = raises_type(lambda: case.core.quantize(bad))
        ref_t = raises_type(lambda: case.q(bad))
        assert core_t is TypeError and ref_t is TypeError, (bad.dtype, core_t, ref_t)
    for bad in (np.array([1.0, 2.0]), np.array(["1"])):
        core_t = raises_type(lambda: case.core.dequantize(bad))
        ref_t = raises_type(lambda: case.dq(bad))
        assert core_t is TypeError and ref_t is TypeError, (bad.dtype, core_t, ref_t)


# ----------------------------------------------------------------------------------------------
# Quat and UnitVector
# ----------------------------------------------------------------------------------------------

@dataclass
class Multi:
    id: str
    core: Any
    q: Callable
    dq: Callable
    valid: Callable
    k: int           # components
    cbits: int       # bits per component
    mode: str
    code_bits: int


QUATS = [Multi(f"Quat({b},{m})", qc.Quat(b, mode=m),
               (lambda x, b=b, m=m: ref.quat_quantize(x, b, m)),
               (lambda c, b=b, m=m: ref.quat_dequantize(c, b, m)),
               (lambda c, b=b, m=m: ref.quat_valid(c, b, m)), 4, b, m, 2 + 3 * b)
         for b in range(2, 21) for m in ("endpoints", "bins", "midpoint")]
UVECS = [Multi(f"UnitVector({b})", qc.UnitVector(b),
               (lambda x, b=b: ref.unitvec_quantize(x, b)),
               (lambda c, b=b: ref.unitvec_dequantize(c, b)),
               (lambda c, b=b: ref.unitvec_valid(c, b)), 3, b, "endpoints", 2 * b)
         for b in range(2, 33)]
MULTIS = QUATS + UVECS
MULTI_IDS = [c.id for c in MULTIS]

S2 = math.sqrt(0.5)


def _signs(rows):
    """Every sign pattern of every row (with -0.0 for a negated zero)."""
    rows = np.asarray(rows, dtype=np.float64)
    k = rows.shape[1]
    pats = np.array([[-1.0 if (p >> j) & 1 else 1.0 for j in range(k)] for p in range(1 << k)])
    return (rows[:, None, :] * pats[None, :, :]).reshape(-1, k)


def multi_inputs(case):
    rng = _rng("multi-in", case.id)
    k, b = case.k, case.cbits
    n = N_MULTI
    g = rng.standard_normal((n, k))
    dom = rng.standard_normal((n // 4, k)) * rng.uniform(0, 0.3, (n // 4, 1))
    dom[np.arange(n // 4), rng.integers(0, k, n // 4)] = rng.choice([-1.0, 1.0], n // 4)
    # decision edges of one component, the others random and small
    if case.k == 4:
        lo, hi = -S2, S2
        mode = case.mode
    else:
        lo, hi, mode = -1.0, 1.0, "endpoints"
    L = 2 ** b if mode == "bins" else 2 ** b - (2 if mode == "midpoint" else 1)
    ks = sample_ks(rng, L, 256)
    R = hi - lo
    e = lo + ((ks + 0.5) * R) / L if mode != "bins" else lo + (ks * R) / L
    e = ulps(e, 1)
    e = e[np.abs(e) <= hi]
    m = e.size
    if k == 4:
        rest = rng.uniform(-0.25, 0.25, (m, 2))
        w = np.sqrt(np.maximum(0.0, 1.0 - e * e - (rest * rest).sum(axis=1)))
        edge_rows = np.column_stack([rest[:, 0], e, rest[:, 1], w])
        edge_rows = np.concatenate([edge_rows, edge_rows[:, [1, 3, 0, 2]], -edge_rows[:, [3, 2, 1, 0]]])
        special = _signs([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1], [S2, S2, 0, 0],
                          [0.5, 0.5, 0.5, 0.5], [0.5, 0.5, 0.5, 0.4999999999999999], [1, 1e-300, 0, 0],
                          [5e-324, 0, 0, 0], [5e-324, 5e-324, 0, 5e-324], [1e308, 1e308, 1e308, 1e308],
                          [1.7976931348623157e308, 1, 0, 0], [1e-310, 2e-310, 3e-310, 4e-310]])
        special = np.concatenate([special, special[:, [3, 0, 1, 2]], special[:, [2, 3, 0, 1]]])
    else:
        # octahedron points: (p, q, 1 - |p| - |q|) for p at an edge, both hemispheres
        qv = rng.uniform(-1, 1, m) * (1 - np.abs(e))
        z = (1.0 - np.abs(e)) - np.abs(qv)
        edge_rows = np.column_stack([e, qv, z])
        edge_rows = np.concatenate([edge_rows, edge_rows[:, [1, 0, 2]], edge_rows * [1, 1, -1],
                                    edge_rows[:, [2, 0, 1]]])
        special = _signs([[1, 0, 0], [1, 1, 0], [1, 1, 1], [0, 0, 1], [0, 1, 0], [0.5, 0.5, 1e-300],
                          [5e-324, 0, 0], [5e-324, 5e-324, 5e-324], [1e308, 1e308, 1e308],
                          [1.7976931348623157e308, 1, 0], [1, 1, 1e-17], [0.25, 0.75, 0.0], [1e-310, 3e-310, 2e-310]])
        special = np.concatenate([special, special[:, [2, 0, 1]], special[:, [1, 2, 0]]])
    scaled = np.concatenate([g[:200] * 1e300, g[200:400] * 1e-300, g[400:600] * 5e-320, g[600:800] * 1e-150])
    x = np.concatenate([special, edge_rows, g, dom, scaled])
    x = x[np.isfinite(x).all(axis=1) & (np.abs(x).max(axis=1) > 0)]
    x32 = to_f32(np.concatenate([special, edge_rows, g, dom, g[:500] * 1e30, g[500:1000] * 1e-40]))
    x32 = x32[np.isfinite(x32).all(axis=1) & (np.abs(x32).max(axis=1) > 0)]
    return x, x32


def multi_codes(case):
    rng = _rng("multi-codes", case.id)
    dt = expected_dtype(case.code_bits, False)
    top = (1 << case.code_bits) - 1
    if case.code_bits <= 14:
        codes = np.arange(top + 1, dtype=np.uint64)
    else:
        r = rng.integers(0, top, N_CODES, endpoint=True, dtype=np.uint64)
        special = [0, 1, top, top - 1] + [(1 << j) for j in range(case.code_bits)] \
            + [(1 << j) - 1 for j in range(1, case.code_bits + 1)]
        codes = np.concatenate([r, np.array(special, dtype=np.uint64)])
    return codes.astype(dt)


class PreparedMulti:
    def __init__(self, case):
        self.case = case
        self.x, self.x32 = multi_inputs(case)
        self.codes = multi_codes(case)


@pytest.fixture(scope="module", params=MULTIS, ids=MULTI_IDS)
def multi(request):
    return PreparedMulti(request.param)


def test_multi_quantize_and_roundtrip(multi):
    case, x, x32 = multi.case, multi.x, multi.x32
    for xin, xr, what in ((x, x, "float64"), (x32, to_f64(x32), "float32")):
        want = rq(case.q, xr)
        got = case.core.quantize(xin)
        assert got.dtype == expected_dtype(case.code_bits, False) == case.core.code_dtype
        same_codes(got, want, xr, f"{case.id}.quantize({what})")
        same_floats(case.core.roundtrip(xin), rq(case.dq, want), xr, f"{case.id}.roundtrip({what})")
    want = rq(case.q, x)
    # out=, a non-contiguous view, big-endian and (N, 2, k) shapes
    out = np.zeros(x.shape[0], dtype=case.core.code_dtype)
    assert case.core.quantize(x, out=out) is out
    same_codes(out, want, x, f"{case.id}.quantize(out=)")
    wide = np.zeros((x.shape[0], case.k + 2))
    wide[:, 1:-1] = x
    same_codes(case.core.quantize(wide[:, 1:-1]), want, x, f"{case.id}.quantize(strided)")
    same_codes(case.core.quantize(x.astype(">f8")), want, x, f"{case.id}.quantize(big-endian)")
    m = x.shape[0] // 2 * 2
    same_codes(case.core.quantize(x[:m].reshape(-1, 2, case.k)), want[:m].reshape(-1, 2), x[:m].reshape(-1, 2, case.k),
               f"{case.id}.quantize(3-d)")


def test_multi_dequantize_and_valid(multi):
    case, codes = multi.case, multi.codes
    ok = np.asarray(rq(case.valid, codes), dtype=bool)
    same_codes(case.core.valid(codes), ok, codes, f"{case.id}.valid")
    good = codes[ok]
    want = rq(case.dq, good)
    same_floats(case.core.dequantize(good), want, good, f"{case.id}.dequantize")
    out = np.empty(good.shape + (case.k,))
    assert case.core.dequantize(good, out=out) is out
    same_floats(out, want, good, f"{case.id}.dequantize(out=)")
    # out-of-range and negative codes
    rng = _rng("multi-valid", case.id)
    probe = [np.frombuffer(rng.bytes(8 * 4000), dtype=np.uint64) >> rng.integers(0, 64, 4000, dtype=np.uint64),
             rng.integers(-(2 ** 40), 2 ** 40, 4000, dtype=np.int64),
             rng.integers(-5, (1 << min(case.code_bits, 62)) + 5, 4000, dtype=np.int64)]
    for a in probe:
        same_codes(case.core.valid(a), rq(case.valid, a), a, f"{case.id}.valid({a.dtype})")
    # per value: dequantize and valid of Python ints
    sample = codes[rng.integers(0, codes.size, 300)]
    sample_ok = np.asarray(rq(case.valid, sample), dtype=bool)
    for c in sample[sample_ok].tolist():
        got = case.core.dequantize(c)
        assert type(got) is tuple and len(got) == case.k
        same_floats(np.array(got), rq(case.dq, c), None, f"{case.id}.dequantize({c}) (per value)")
    top = (1 << case.code_bits) - 1
    for c in sample.tolist() + [-1, 0, top, top + 1, 2 ** 64, -(2 ** 70)]:
        r = bool(rq(case.valid, c))
        got = case.core.valid(c)
        assert got is r, f"{case.id}.valid({c}) (per value): core {got!r}, reference {r}"


def test_multi_per_value(multi):
    case, x, x32 = multi.case, multi.x, multi.x32
    rng = _rng("multi-pv", case.id)
    rows = np.concatenate([x[:60], x[rng.integers(0, x.shape[0], 60)]])
    want = rq(case.q, rows)
    rts = rq(case.dq, want)
    for row, c, rt in zip(rows, want.tolist(), rts):
        what = f"{case.id} at {_hex(row)}"
        for arg in (tuple(row.tolist()), row, tuple(np.float64(v) for v in row)):
            got = case.core.quantize(arg)
            assert type(got) is int and got == c, f"{what}: quantize({type(arg).__name__}) core {got!r}, reference {c}"
        got = case.core.roundtrip(tuple(row.tolist()))
        assert type(got) is tuple
        same_floats(np.array(got), rt, None, f"{what}: roundtrip (per value)")
    rows32 = x32[rng.integers(0, x32.shape[0], 60)]
    want32 = rq(case.q, to_f64(rows32))
    for row, c in zip(rows32, want32.tolist()):
        assert case.core.quantize(row) == c, f"{case.id} at float32 {_hex(row)}"
        assert case.core.quantize(tuple(row)) == c, f"{case.id} at float32 scalars {_hex(row)}"


@pytest.mark.parametrize("case", [c for c in MULTIS if c.cbits in (2, 9, 20, 32)], ids=lambda c: c.id)
def test_multi_bad_rows_raise_range_error_on_both_sides(case):
    k = case.k
    good = np.tile(np.eye(k)[0], (8, 1))
    for badrow in (np.zeros(k), np.full(k, -0.0), np.array([math.nan] + [0.0] * (k - 1)),
                   np.array([1.0, -math.inf] + [0.0] * (k - 2)), np.array([0.0] * (k - 1) + [math.nan]),
                   np.full(k, math.inf), np.array(NAN_BITS[1:1 + k], dtype=np.uint64).view(np.float64)):
        a = good.copy()
        a[5] = badrow
        a[7] = badrow
        for side, fn in (("core", lambda: case.core.quantize(a)), ("reference", lambda: case.q(a)),
                         ("core roundtrip", lambda: case.core.roundtrip(a)),
                         ("core float32", lambda: case.core.quantize(a.astype(np.float32)))):
            try:
                with np.errstate(all="ignore"):
                    fn()
            except RangeError as e:
                assert "row 5" in str(e), f"{side} {case.id}: {e} does not name row 5"
            else:
                pytest.fail(f"{side} {case.id}: no RangeError for row {_hex(badrow)}")
        for side, fn in (("core", lambda: case.core.quantize(tuple(badrow.tolist()))),
                         ("core array", lambda: case.core.quantize(badrow)),
                         ("core roundtrip", lambda: case.core.roundtrip(tuple(badrow.tolist()))),
                         ("reference", lambda: case.q(badrow))):
            got = raises_type(fn)
            assert got is RangeError, f"{side} {case.id}: quantize({_hex(badrow)}) raised {got}, not RangeError"


@pytest.mark.parametrize("side", ["core", "reference"])
@pytest.mark.parametrize("case", [c for c in MULTIS if c.cbits in (2, 3, 9, 20, 32)], ids=lambda c: c.id)
def test_multi_invalid_code_raises_decode_error(case, side):
    top = (1 << case.code_bits) - 1
    bad = [-1, top + 1, 2 ** 64, -(2 ** 64)]
    if case.k == 4:   # smallest-three codes that are not valid (e.g. all three kept values at the top)
        m = (1 << case.cbits) - 1
        cand = np.array([idx << (3 * case.cbits) | m << (2 * case.cbits) | m << case.cbits | m for idx in range(4)]
                        + multi_codes(case).tolist(), dtype=np.uint64)
        inval = cand[~np.asarray(ref.quat_valid(cand, case.cbits, case.mode), dtype=bool)]
        assert case.cbits <= 3 or inval.size
        assert not case.core.valid(inval).any()
        bad += inval[:4].tolist() + inval[:: max(1, inval.size // 20)].tolist()
    wrong = []
    for v in bad:
        if side == "core":
            calls = [("per value", lambda: case.core.dequantize(v))]
            if 0 <= v < 2 ** 64:
                calls.append(("uint64 array", lambda: case.core.dequantize(np.array([0, v], dtype=np.uint64))))
            if -(2 ** 63) <= v < 2 ** 63:
                calls.append(("int64 array", lambda: case.core.dequantize(np.array([v], dtype=np.int64))))
        else:
            calls = [("per value", lambda: case.dq(v))]
            if -(2 ** 63) <= v < 2 ** 63:
                calls.append(("int64 array", lambda: case.dq(np.array([v], dtype=np.int64))))
        for how, fn in calls:
            got = raises_type(fn)
            if got is not DecodeError:
                wrong.append(f"dequantize({v}) ({how}) raised {got}")
    if wrong:
        pytest.fail(f"{side} {case.id}: {len(wrong)} calls did not raise DecodeError:\n  " + "\n  ".join(wrong[:12]))


@pytest.mark.parametrize("case", [c for c in QUATS if c.cbits in (2, 5, 9, 20)], ids=lambda c: c.id)
def test_quat_valid_per_value_matches_array_and_reference(case):
    """valid(int) is the same predicate as valid(array) and the reference's quat_valid."""
    codes = multi_codes(case)
    rng = _rng("qv", case.id)
    sample = codes[rng.integers(0, codes.size, 2000)]
    want = np.asarray(ref.quat_valid(sample, case.cbits, case.mode), dtype=bool)
    assert want.any() and (case.cbits <= 3 or (~want).any())
    per_value = np.array([case.core.valid(int(c)) for c in sample.tolist()], dtype=bool)
    same_codes(per_value, want, sample, f"{case.id}.valid(int)")


# ----------------------------------------------------------------------------------------------
# exact codecs: UInt, Int, Bool, Enum
# ----------------------------------------------------------------------------------------------

@dataclass
class Exact:
    id: str
    core: Any
    q: Callable
    dq: Callable
    valid: Callable
    lo: int
    hi: int
    signed: bool
    bits: int


EXACTS = (
    [Exact(f"UInt({b})", qc.UInt(b), (lambda x, b=b: ref.uint_quantize(x, b)),
           (lambda c, b=b: ref.uint_dequantize(c, b)), (lambda c, b=b: ref.uint_valid(c, b)),
           0, 2 ** b - 1, False, b) for b in (1, 2, 8, 31, 32, 33, 53, 63, 64)]
    + [Exact(f"Int({b})", qc.Int(b), (lambda x, b=b: ref.int_quantize(x, b)),
             (lambda c, b=b: ref.int_dequantize(c, b)), (lambda c, b=b: ref.int_valid(c, b)),
             -(2 ** (b - 1)), 2 ** (b - 1) - 1, True, b) for b in (1, 2, 8, 31, 32, 33, 53, 63, 64)]
    + [Exact("Bool()", qc.Bool(), ref.bool_quantize, ref.bool_dequantize, ref.bool_valid, 0, 1, False, 1)]
    + [Exact(f"Enum({n})", qc.Enum(n), (lambda x, n=n: ref.enum_quantize(x, n)),
             (lambda c, n=n: ref.enum_dequantize(c, n)), (lambda c, n=n: ref.enum_valid(c, n)),
             0, n - 1, False, ref.enum_bits(n)) for n in (1, 2, 5, 8, 1000)]
)
EXACT_IDS = [c.id for c in EXACTS]


def exact_values(case):
    rng = _rng("exact", case.id)
    lo, hi = case.lo, case.hi
    ends = [v for v in {lo, lo + 1, hi - 1, hi, 0, 1, -1, (lo + hi) // 2} if lo <= v <= hi]
    dt = np.int64 if case.signed or hi < 2 ** 63 else np.uint64
    r = rng.integers(lo, hi, 5000, endpoint=True, dtype=dt)
    return np.concatenate([np.array(ends, dtype=dt), r])


@pytest.mark.parametrize("case", EXACTS, ids=EXACT_IDS)
def test_exact_quantize_dequantize_valid(case):
    v = exact_values(case)
    want = rq(case.q, v)
    got = case.core.quantize(v)
    assert got.dtype == case.core.code_dtype
    same_codes(got, want, v, f"{case.id}.quantize(int)")
    # integral floats (exactly representable ones) give the same codes
    fv = v[np.abs(v.astype(np.float64)) < 2.0 ** 53] if v.dtype == np.int64 else v[v < 2 ** 53]
    same_codes(case.core.quantize(fv.astype(np.float64)), rq(case.q, fv.astype(np.float64)), fv,
               f"{case.id}.quantize(float)")
    same_codes(case.core.dequantize(got), rq(case.dq, want), want, f"{case.id}.dequantize")
    same_codes(case.core.roundtrip(v), rq(case.dq, want), v, f"{case.id}.roundtrip")
    # valid over random codes in and out of range
    rng = _rng("exact-valid", case.id)
    probes = [rng.integers(-(2 ** 63), 2 ** 63 - 1, 3000, endpoint=True, dtype=np.int64),
              np.frombuffer(rng.bytes(8 * 3000), dtype=np.uint64) >> rng.integers(0, 64, 3000, dtype=np.uint64),
              rng.integers(-3, 1 << min(case.bits + 1, 62), 3000, dtype=np.int64),
              np.array([case.lo - 1, case.hi + 1, 2 ** 64, -(2 ** 64), 2 ** 100], dtype=object)]
    for a in probes:
        same_codes(np.asarray(case.core.valid(a), dtype=bool), rq(case.valid, a), a, f"{case.id}.valid({a.dtype})")
    # per value
    for x in v[:40].tolist() + [case.lo, case.hi]:
        c = int(rq(case.q, x))
        got = case.core.quantize(x)
        assert type(got) is int and got == c, f"{case.id}.quantize({x}): core {got!r}, reference {c}"
        assert case.core.valid(x) is bool(rq(case.valid, x))
        d = case.core.dequantize(x)
        r = rq(case.dq, x)
        assert d == r.item() and type(d) is type(r.item()), f"{case.id}.dequantize({x}): core {d!r}, reference {r!r}"
    for x in (case.lo - 1, case.hi + 1, 2 ** 64, -(2 ** 70)):
        assert case.core.valid(x) is False and not bool(rq(case.valid, x))


@pytest.mark.parametrize("case", EXACTS, ids=EXACT_IDS)
def test_exact_bad_input_same_error_types(case):
    """Out-of-range or non-integer values: RangeError; invalid codes: DecodeError, on both sides."""
    bad_values = [case.lo - 1, case.hi + 1, 2 ** 64, -(2 ** 64)]
    bad_floats = [0.5, -0.25, math.nan, math.inf, -math.inf, float(case.hi) * 2 + 2, float(case.lo) * 2 - 2]
    for x in bad_values:
        for side, fn in (("core", lambda: case.core.quantize(x)), ("reference", lambda: case.q(x))):
            got = raises_type(fn)
            assert got is RangeError, f"{side} {case.id}.quantize({x}) raised {got}, not RangeError"
        if -(2 ** 63) <= x < 2 ** 63:
            a = np.array([case.lo, x], dtype=np.int64)
            for side, fn in (("core", lambda: case.core.quantize(a)), ("reference", lambda: case.q(a))):
                got = raises_type(fn)
                assert got is RangeError, f"{side} {case.id}.quantize(array with {x}) raised {got}"
    for f in bad_floats:
        a = np.array([float(case.lo), f])
        for side, fn in (("core", lambda: case.core.quantize(a)), ("reference", lambda: case.q(a))):
            got = raises_type(fn)
            assert got is RangeError, f"{side} {case.id}.quantize(array with {f!r}) raised {got}"
    for c in bad_values + [2 ** 100]:
        for side, fn in (("core", lambda: case.core.dequantize(c)), ("reference", lambda: case.dq(c))):
            got = raises_type(fn)
            assert got is DecodeError, f"{side} {case.id}.dequantize({c}) raised {got}, not DecodeError"
        if -(2 ** 63) <= c < 2 ** 63:
            a = np.array([case.lo, c], dtype=np.int64)
            for side, fn in (("core", lambda: case.core.dequantize(a)), ("reference", lambda: case.dq(a))):
                got = raises_type(fn)
                assert got is DecodeError, f"{side} {case.id}.dequantize(array with {c}) raised {got}"


def test_enum_labels_per_value_against_reference():
    labels = ["idle", "walk", "run", "jump", "fall"]
    e = qc.Enum(labels)
    for i, lab in enumerate(labels):
        assert e.quantize(lab) == int(ref.enum_quantize(lab, labels)) == i
        assert e.quantize(i) == int(ref.enum_quantize(i, labels)) == i
        assert e.dequantize(i) == ref.enum_dequantize(i, labels) == lab
        assert e.valid(i) is bool(ref.enum_valid(i, labels)) is True
    for bad in ("swim", "", "IDLE"):
        assert raises_type(lambda: e.quantize(bad)) is RangeError
        assert raises_type(lambda: ref.enum_quantize(bad, labels)) is RangeError
    for bad in (5, -1, 2 ** 64):
        assert raises_type(lambda: e.dequantize(bad)) is DecodeError
        assert raises_type(lambda: ref.enum_dequantize(bad, labels)) is DecodeError
        assert raises_type(lambda: e.quantize(bad)) is RangeError
        assert raises_type(lambda: ref.enum_quantize(bad, labels)) is RangeError
    # arrays carry indices (SPEC 2: never labels)
    codes = np.array([4, 0, 2, 1], dtype=np.uint32)
    same_codes(e.quantize(np.array([4, 0, 2, 1])), ref.enum_quantize(np.array([4, 0, 2, 1]), labels))
    same_codes(e.valid(np.array([-1, 0, 4, 5, 7])), ref.enum_valid(np.array([-1, 0, 4, 5, 7]), labels))
    same_codes(e.dequantize(codes), codes)


# ----------------------------------------------------------------------------------------------
# composites: Vector and NearlyZero
# ----------------------------------------------------------------------------------------------

def _ref_of(codec):
    """(quantize, dequantize, valid) reference functions of a scalar codec."""
    k = codec.kind
    if k == "Bounded":
        a = (codec.min, codec.max, codec.bits, codec.mode)
        return (lambda x: ref.bounded_quantize(x, *a), lambda c: ref.bounded_dequantize(c, *a),
                lambda c: ref.bounded_valid(c, a[2], a[3]))
    if k == "Fixed":
        a = (codec.step_size, codec.bits, codec.signed, codec.offset)
        return (lambda x: ref.fixed_quantize(x, *a), lambda c: ref.fixed_dequantize(c, *a),
                lambda c: ref.fixed_valid(c, a[1], a[2]))
    if k == "Angle":
        a = (codec.bits, codec.signed, codec.unit)
        return (lambda x: ref.angle_quantize(x, *a), lambda c: ref.angle_dequantize(c, *a),
                lambda c: ref.angle_valid(c, a[0]))
    if k == "PowerCurve":
        a = (codec.max, codec.pow, codec.bits)
        return (lambda x: ref.power_quantize(x, *a), lambda c: ref.power_dequantize(c, *a),
                lambda c: ref.power_valid(c, a[2]))
    if k == "Half":
        return ref.half_quantize, ref.half_dequantize, ref.half_valid
    if k == "Grid":
        a = (codec.cell_size, codec.cell_bits, codec.offset_bits)
        return (lambda x: ref.grid_quantize(x, *a), lambda c: ref.grid_dequantize(c, *a),
                lambda c: ref.grid_valid(c, a[1], a[2]))
    if k == "UInt":
        return (lambda x: ref.uint_quantize(x, codec.bits), lambda c: ref.uint_dequantize(c, codec.bits),
                lambda c: ref.uint_valid(c, codec.bits))
    if k == "Int":
        return (lambda x: ref.int_quantize(x, codec.bits), lambda c: ref.int_dequantize(c, codec.bits),
                lambda c: ref.int_valid(c, codec.bits))
    if k == "Bool":
        return ref.bool_quantize, ref.bool_dequantize, ref.bool_valid
    raise AssertionError(k)


VECTORS = [
    qc.Vector(qc.Bounded(-2048, 2048, 18), qc.Bounded(-64, 192, 14, mode="bins"), qc.Bounded(-2048, 2048, 18)),
    qc.Vector(qc.Fixed(0.01, 16), qc.Angle(12, unit="deg"), qc.PowerCurve(10, 2, 9), qc.Half(), qc.Grid(1.0, 20, 16)),
    qc.Vector(qc.Fixed(1e-7, 64, signed=False), qc.Grid(0.5, 40, 24), qc.Bounded(0, 1, 32)),
    qc.Vector(qc.Angle(16, signed=True), qc.Fixed(0.5, 8, signed=False, offset=-10.0)),
]
EXACT_VECTORS = [qc.Vector(qc.UInt(8), qc.Int(12), qc.Bool()), qc.Vector(qc.Int(64), qc.UInt(63))]


def _vector_inputs(vec, n=4000):
    rng = _rng("vec", repr(vec))
    cols = []
    for c in vec.codecs:
        case_x = rng.choice(np.concatenate([SPECIAL, wide_random(rng, 2000)]), n)
        inr = rng.uniform(-1.2, 1.2, n) * {"Bounded": 2100.0, "Fixed": 400.0, "Angle": 10.0, "PowerCurve": 12.0,
                                          "Half": 70000.0, "Grid": 6e5}[c.kind]
        cols.append(np.where(rng.random(n) < 0.3, case_x, inr))
    return np.column_stack(cols)


@pytest.mark.parametrize("vec", VECTORS, ids=repr)
def test_vector_against_reference(vec):
    refs = [_ref_of(c) for c in vec.codecs]
    qs, dqs, vs = zip(*refs)
    x = _vector_inputs(vec)
    for xin, xr, what in ((x, x, "float64"), (to_f32(x), to_f64(to_f32(x)), "float32")):
        want = rq(ref.vector_quantize, xr, qs)
        got = vec.quantize(xin)
        assert got.dtype == vec.code_dtype and got.shape == x.shape
        same_codes(got, want, xr, f"{vec!r}.quantize({what})")
        dec = rq(ref.vector_dequantize, want, dqs)
        same_floats(vec.dequantize(got), dec, xr, f"{vec!r}.dequantize({what})")
        same_floats(vec.roundtrip(xin), dec, xr, f"{vec!r}.roundtrip({what})")
    # strided input
    big = np.zeros((x.shape[0], 2 * x.shape[1]))
    big[:, ::2] = x
    same_codes(vec.quantize(big[:, ::2]), rq(ref.vector_quantize, x, qs), x, f"{vec!r}.quantize(strided)")
    # valid over random component codes in and out of range
    rng = _rng("vec-valid", repr(vec))
    codes = np.column_stack([rng.integers(-3, (1 << min(c.bits, 61)) + 3, 3000, dtype=np.int64) for c in vec.codecs])
    same_codes(vec.valid(codes), rq(ref.vector_valid, codes, vs), codes, f"{vec!r}.valid")
    # per value: tuples of Python floats and NumPy scalars
    want = rq(ref.vector_quantize, x[:80], qs)
    dec = rq(ref.vector_dequantize, want, dqs)
    for row, c, d in zip(x[:80], want.tolist(), dec):
        got = vec.quantize(tuple(row.tolist()))
        assert got == tuple(c), f"{vec!r}.quantize({_hex(row)}): core {got}, reference {tuple(c)}"
        assert vec.quantize(row) == tuple(c)
        same_floats(np.array(vec.roundtrip(tuple(row.tolist()))), d, None, f"{vec!r}.roundtrip({_hex(row)})")
        same_floats(np.array(vec.dequantize(tuple(c))), d, None, f"{vec!r}.dequantize({c})")
        assert vec.valid(tuple(c)) is True


@pytest.mark.parametrize("vec", EXACT_VECTORS, ids=repr)
def test_exact_vector_against_reference(vec):
    refs = [_ref_of(c) for c in vec.codecs]
    qs, dqs, vs = zip(*refs)
    rng = _rng("xvec", repr(vec))
    lo = [(-(2 ** (c.bits - 1)) if c.kind == "Int" else 0) for c in vec.codecs]
    hi = [((2 ** (c.bits - 1)) if c.kind == "Int" else 2 ** c.bits) - 1 for c in vec.codecs]
    # the reference converts to float64 first: keep to values it holds exactly (|x| <= 2**53)
    x = np.column_stack([np.concatenate([np.array([max(a, -(2 ** 53)), min(b, 2 ** 53), 0]),
                                         rng.integers(max(a, -(2 ** 53)), min(b, 2 ** 53), 2000, endpoint=True)])
                         for a, b in zip(lo, hi)])
    want = rq(ref.vector_quantize, x, qs)
    same_codes(vec.quantize(x), want, x, f"{vec!r}.quantize")
    codes = vec.quantize(x)
    # values compared as numbers: the reference's vector_dequantize gives float64, the core keeps the
    # components' integer dtypes where NumPy can stack them (all values here are below 2**53, exact either way)
    for got in (vec.dequantize(codes), vec.roundtrip(x)):
        want = rq(ref.vector_dequantize, codes, dqs)
        assert got.shape == want.shape
        ne = got.astype(np.float64) != want
        if ne.any():
            _fail(f"{vec!r}.dequantize", ne, codes, got, want)
    probe = np.column_stack([rng.integers(max(a - 3, -(2 ** 63)), min(b + 3, 2 ** 63 - 1), 2000, dtype=np.int64)
                             for a, b in zip(lo, hi)])
    same_codes(vec.valid(probe), rq(ref.vector_valid, probe, vs), probe, f"{vec!r}.valid")


NEARLY_ZEROS = [
    qc.NearlyZero(qc.Bounded(-10, 10, 12), 0.05),
    qc.NearlyZero(qc.Fixed(0.01, 16), 0.0),
    qc.NearlyZero(qc.PowerCurve(50, 2, 10), 0.1),
    qc.NearlyZero(qc.Vector(qc.Bounded(-10, 10, 12), qc.Bounded(-10, 10, 12), qc.Bounded(-1, 1, 8)), 0.1),
    qc.NearlyZero(qc.Vector(qc.Fixed(0.001, 20), qc.Half()), 1e-3),
]


def _nz_ref(nz):
    vec = nz.inner.kind == "Vector"
    if vec:
        qs, dqs, vs = zip(*[_ref_of(c) for c in nz.inner.codecs])
        # nearly_zero_valid takes the inner validity per component, (..., k), and reduces it itself
        return (lambda x: ref.vector_quantize(x, qs), lambda c: ref.vector_dequantize(c, dqs),
                lambda c: np.stack([np.asarray(f(c[..., i]), dtype=bool) for i, f in enumerate(vs)], axis=-1), True)
    q, dq, v = _ref_of(nz.inner)
    return q, dq, v, False


def _nz_inputs(nz, n=5000):
    rng = _rng("nz", repr(nz))
    t = nz.threshold
    k = nz.ncomp
    near = ulps(np.array([t, -t, 0.0, -0.0, 5e-324, t * 2, t / 2]), 2)
    near = np.concatenate([near, to_f32(near).astype(np.float64)])     # float32 neighbours of threshold
    base = np.concatenate([rng.uniform(-3 * t - 0.1, 3 * t + 0.1, n), rng.uniform(-12, 12, n // 2),
                           rng.choice(np.concatenate([SPECIAL, near]), n)])
    x = rng.choice(base, (2 * n, k))
    x[: near.size, :] = near[:, None]
    return x if k > 1 else x[:, 0]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("nz", NEARLY_ZEROS, ids=repr)
def test_nearly_zero_arrays_against_reference(nz, dtype):
    """The flag decision |x| <= threshold is made in float64 for float32 input too (SPEC 0)."""
    q, dq, v, vec = _nz_ref(nz)
    x = _nz_inputs(nz)
    xin = x if dtype == "float64" else to_f32(x)
    xr = to_f64(xin)
    want = rq(ref.nearly_zero_quantize, xr, nz.threshold, q, vec)
    got = nz.quantize(xin)
    assert got.dtype == nz.code_dtype
    same_codes(got, want, xr, f"{nz!r}.quantize({dtype})")
    dec = rq(ref.nearly_zero_dequantize, want, dq, vec)
    same_floats(nz.dequantize(want.astype(nz.code_dtype)), dec, xr, f"{nz!r}.dequantize({dtype})")
    same_floats(nz.roundtrip(xin), dec, xr, f"{nz!r}.roundtrip({dtype})")


@pytest.mark.parametrize("nz", NEARLY_ZEROS, ids=repr)
def test_nearly_zero_valid_and_per_value_against_reference(nz):
    q, dq, v, vec = _nz_ref(nz)
    x = _nz_inputs(nz)
    # valid: flags 0/1/2, zero and non-zero inner codes
    rng = _rng("nz-valid", repr(nz))
    codes = rng.integers(-1, 4, (3000, 1 + nz.ncomp), dtype=np.int64)
    codes[:, 0] = rng.integers(-1, 3, 3000)
    codes[::3, 1:] = 0
    same_codes(nz.valid(codes), rq(ref.nearly_zero_valid, codes, v, vec), codes, f"{nz!r}.valid")
    # per value
    want = rq(ref.nearly_zero_quantize, x[:100], nz.threshold, q, vec)
    dec = rq(ref.nearly_zero_dequantize, want, dq, vec)
    for xv, c, d in zip(x[:100], want.tolist(), dec):
        arg = tuple(xv.tolist()) if vec else float(xv)
        code = (c[0], tuple(c[1:]) if vec else c[1])
        got = nz.quantize(arg)
        assert got == code, f"{nz!r}.quantize({_hex(xv)}): core {got}, reference {code}"
        same_floats(np.array(nz.roundtrip(arg), dtype=np.float64), d, None, f"{nz!r}.roundtrip({_hex(xv)})")
        same_floats(np.array(nz.dequantize(code), dtype=np.float64), d, None, f"{nz!r}.dequantize({code})")


@pytest.mark.parametrize("nz", NEARLY_ZEROS, ids=repr)
def test_nearly_zero_bad_codes_decode_error_on_both_sides(nz):
    q, dq, v, vec = _nz_ref(nz)
    k = nz.ncomp
    for bad in ([2] + [0] * k, [0, 1] + [0] * (k - 1), [0] * k + [1], [-1] + [0] * k):
        a = np.array([[1] + [0] * k, bad], dtype=np.int64)
        core_t = raises_type(lambda: nz.dequantize(a))
        ref_t = raises_type(lambda: ref.nearly_zero_dequantize(a, dq, vec))
        assert core_t is DecodeError and ref_t is DecodeError, (bad, core_t, ref_t)
        assert not nz.valid(a)[1] and not ref.nearly_zero_valid(a, v, vec)[1]


# ----------------------------------------------------------------------------------------------
# bad construction parameters: SchemaError on both sides
# ----------------------------------------------------------------------------------------------

SCHEMA_ERRORS = [
    ("Bounded bits 0", lambda: qc.Bounded(0, 1, 0), lambda: ref.bounded_step(0, 1, 0)),
    ("Bounded bits 33", lambda: qc.Bounded(0, 1, 33), lambda: ref.bounded_step(0, 1, 33)),
    ("Bounded min == max", lambda: qc.Bounded(1, 1, 8), lambda: ref.bounded_step(1, 1, 8)),
    ("Bounded min > max", lambda: qc.Bounded(2, 1, 8), lambda: ref.bounded_step(2, 1, 8)),
    ("Bounded NaN min", lambda: qc.Bounded(math.nan, 1, 8), lambda: ref.bounded_step(math.nan, 1, 8)),
    ("Bounded inf max", lambda: qc.Bounded(0, math.inf, 8), lambda: ref.bounded_step(0, math.inf, 8)),
    ("Bounded mode", lambda: qc.Bounded(0, 1, 8, mode="round"), lambda: ref.bounded_step(0, 1, 8, "round")),
    ("Bounded bits float", lambda: qc.Bounded(0, 1, 8.0), lambda: ref.bounded_step(0, 1, 8.0)),
    ("Bounded bits bool", lambda: qc.Bounded(0, 1, True), lambda: ref.bounded_step(0, 1, True)),
    ("Bounded midpoint bits 1", lambda: qc.Bounded(0, 1, 1, mode="midpoint"),
     lambda: ref.bounded_step(0, 1, 1, "midpoint")),
    ("Bounded range * 2**bits overflows", lambda: qc.Bounded(-1e300, 1e300, 32),
     lambda: ref.bounded_step(-1e300, 1e300, 32)),
    ("Bounded bins range * 2**bits overflows", lambda: qc.Bounded(-1e300, 1e300, 27, mode="bins"),
     lambda: ref.bounded_step(-1e300, 1e300, 27, "bins")),
    ("Bounded near -max", lambda: qc.Bounded(-1.7e308, -1.6e308, 16), lambda: ref.bounded_step(-1.7e308, -1.6e308, 16)),
    ("Fixed step 0", lambda: qc.Fixed(0.0, 8), lambda: ref.fixed_step(0.0, 8)),
    ("Fixed code * step overflows", lambda: qc.Fixed(1e300, 64), lambda: ref.fixed_step(1e300, 64)),
    ("Fixed unsigned code * step overflows", lambda: qc.Fixed(1e290, 64, signed=False),
     lambda: ref.fixed_step(1e290, 64, False)),
    ("Fixed offset + code * step overflows", lambda: qc.Fixed(1e300, 20, offset=-1.797e308),
     lambda: ref.fixed_step(1e300, 20, True, -1.797e308)),
    ("Fixed step < 0", lambda: qc.Fixed(-1.0, 8), lambda: ref.fixed_step(-1.0, 8)),
    ("Fixed step NaN", lambda: qc.Fixed(math.nan, 8), lambda: ref.fixed_step(math.nan, 8)),
    ("Fixed bits 65", lambda: qc.Fixed(1.0, 65), lambda: ref.fixed_step(1.0, 65)),
    ("Fixed bits 0", lambda: qc.Fixed(1.0, 0), lambda: ref.fixed_step(1.0, 0)),
    ("Fixed offset inf", lambda: qc.Fixed(1.0, 8, offset=math.inf), lambda: ref.fixed_step(1.0, 8, True, math.inf)),
    ("Angle bits 33", lambda: qc.Angle(33), lambda: ref.angle_step(33)),
    ("Angle bits 0", lambda: qc.Angle(0), lambda: ref.angle_step(0)),
    ("Angle unit", lambda: qc.Angle(8, unit="grad"), lambda: ref.angle_step(8, False, "grad")),
    ("PowerCurve max 0", lambda: qc.PowerCurve(0.0, 2, 8), lambda: ref.power_step(0.0, 2, 8)),
    ("PowerCurve pow < 1", lambda: qc.PowerCurve(1.0, 0.5, 8), lambda: ref.power_step(1.0, 0.5, 8)),
    ("PowerCurve pow NaN", lambda: qc.PowerCurve(1.0, math.nan, 8), lambda: ref.power_step(1.0, math.nan, 8)),
    ("PowerCurve bits 1", lambda: qc.PowerCurve(1.0, 2, 1), lambda: ref.power_step(1.0, 2, 1)),
    ("PowerCurve bits 33", lambda: qc.PowerCurve(1.0, 2, 33), lambda: ref.power_step(1.0, 2, 33)),
    ("Quat bits 1", lambda: qc.Quat(1), lambda: ref.quat_component_step(1)),
    ("Quat bits 21", lambda: qc.Quat(21), lambda: ref.quat_component_step(21)),
    ("Quat mode", lambda: qc.Quat(9, mode="x"), lambda: ref.quat_quantize((0, 0, 0, 1), 9, "x")),
    ("UnitVector bits 1", lambda: qc.UnitVector(1), lambda: ref.unitvec_valid(0, 1)),
    ("UnitVector bits 33", lambda: qc.UnitVector(33), lambda: ref.unitvec_valid(0, 33)),
    ("Grid cell_bits 0", lambda: qc.Grid(1.0, 0, 8), lambda: ref.grid_step(1.0, 0, 8)),
    ("Grid offset_bits 0", lambda: qc.Grid(1.0, 8, 0), lambda: ref.grid_step(1.0, 8, 0)),
    ("Grid cell_bits 64", lambda: qc.Grid(1.0, 64, 1), lambda: ref.grid_step(1.0, 64, 1)),
    ("Grid bits 65", lambda: qc.Grid(1.0, 33, 32), lambda: ref.grid_step(1.0, 33, 32)),
    ("Grid cell_size 0", lambda: qc.Grid(0.0, 8, 8), lambda: ref.grid_step(0.0, 8, 8)),
    ("Grid cell_size inf", lambda: qc.Grid(math.inf, 8, 8), lambda: ref.grid_step(math.inf, 8, 8)),
    ("Grid cell * cell_size overflows", lambda: qc.Grid(1e300, 63, 1), lambda: ref.grid_step(1e300, 63, 1)),
    ("UInt bits 65", lambda: qc.UInt(65), lambda: ref.uint_valid(0, 65)),
    ("UInt bits 0", lambda: qc.UInt(0), lambda: ref.uint_valid(0, 0)),
    ("Int bits 65", lambda: qc.Int(65), lambda: ref.int_valid(0, 65)),
    ("Enum 0 variants", lambda: qc.Enum(0), lambda: ref.enum_bits(0)),
    ("NearlyZero threshold < 0", lambda: qc.NearlyZero(qc.Bounded(0, 1, 8), -1.0),
     lambda: ref.nearly_zero_quantize([0.0], -1.0, lambda x: x)),
    ("NearlyZero threshold NaN", lambda: qc.NearlyZero(qc.Bounded(0, 1, 8), math.nan),
     lambda: ref.nearly_zero_quantize([0.0], math.nan, lambda x: x)),
]


@pytest.mark.parametrize("core_fn,ref_fn", [(c, r) for _, c, r in SCHEMA_ERRORS], ids=[n for n, _, _ in SCHEMA_ERRORS])
def test_bad_parameters_schema_error_on_both_sides(core_fn, ref_fn):
    assert raises_type(core_fn) is SchemaError
    assert raises_type(ref_fn) is SchemaError


# ----------------------------------------------------------------------------------------------
# IntRange: code = value - lo over [lo, hi] (issue 25 item 3)
# ----------------------------------------------------------------------------------------------

INTRANGES = [(0, 100), (-40, 85), (-(2 ** 40), 2 ** 40), (5, 6), (-(2 ** 63), -1), (0, 2 ** 63 - 1),
             (2 ** 62, 2 ** 63 - 1), (-3, 2 ** 32 - 4), (-3, 2 ** 32 - 3)]


@pytest.mark.parametrize("lo,hi", INTRANGES, ids=[f"IntRange({lo},{hi})" for lo, hi in INTRANGES])
def test_intrange_against_reference(lo, hi):
    core = qc.IntRange(lo, hi)
    assert core.bits == ref.intrange_bits(lo, hi)
    assert core.code_dtype == (np.uint32 if core.bits <= 32 else np.uint64)
    rng = _rng("intrange", f"{lo},{hi}")
    ends = sorted({lo, lo + 1, hi - 1, hi, (lo + hi) // 2} | ({0} if lo <= 0 <= hi else set()))
    v = np.concatenate([np.array(ends, dtype=np.int64), rng.integers(lo, hi, 3000, endpoint=True, dtype=np.int64)])
    want = ref.intrange_quantize(v, lo, hi)
    got = core.quantize(v)
    assert got.dtype == core.code_dtype
    same_codes(got, want, v, "IntRange.quantize")
    back = core.dequantize(got)
    assert back.dtype == np.int64
    same_codes(back, ref.intrange_dequantize(want, lo, hi), want, "IntRange.dequantize")
    assert np.array_equal(back, v) and np.array_equal(core.roundtrip(v), v)
    fv = v[np.abs(v.astype(np.float64)) < 2.0 ** 53]
    same_codes(core.quantize(fv.astype(np.float64)), ref.intrange_quantize(fv.astype(np.float64), lo, hi), fv,
               "IntRange.quantize(float)")
    span = hi - lo
    probes = np.array([-1, 0, 1, span - 1, span, span + 1, 2 ** 63, 2 ** 64 - 1, 2 ** 64, -(2 ** 70)], dtype=object)
    same_codes(np.asarray(core.valid(probes), dtype=bool), ref.intrange_valid(probes, lo, hi), probes, "IntRange.valid")
    for x in ends:
        c = int(ref.intrange_quantize(x, lo, hi))
        assert core.quantize(x) == c and type(core.quantize(x)) is int
        assert core.dequantize(c) == x == int(ref.intrange_dequantize(c, lo, hi))
    for x in (lo - 1, hi + 1, 0.5):
        assert raises_type(lambda: core.quantize(x)) is RangeError
        assert raises_type(lambda: ref.intrange_quantize(x, lo, hi)) is RangeError
    for c in (-1, span + 1, 2 ** 64):
        assert core.valid(c) is False
        assert raises_type(lambda: core.dequantize(c)) is DecodeError
        assert raises_type(lambda: ref.intrange_dequantize(c, lo, hi)) is DecodeError
