"""Plain NumPy/Python reference of every quantcodec wire rule: the test oracle.

This module is the executable form of SPEC.md sections 0-2. It is deliberately simple, vectorized
NumPy written operation by operation in IEEE double precision, so that the compiled core can be
compared against it code for code, with exact equality. It is never imported by the package
itself and is never a silent fallback: tests and the worst-case search (tools/search.py, outside
the package) import it directly.

Conventions
-----------
* Every float computation is done in float64, whatever the input dtype. Inputs may be Python
  numbers, sequences or NumPy arrays of any shape; float and integer dtypes are accepted, anything
  else raises ``TypeError``.
* Quantizers return code arrays: ``uint64`` for unsigned codes, ``int64`` for the signed codecs
  (``Fixed(signed=True)``, ``Int``). (The core returns ``uint32``/``int32`` for codes of up to 32
  bits; the values are the same.) Dequantizers return ``float64`` arrays.
* Dequantizers raise ``DecodeError`` for any code that is not valid: outside the code space
  (``0 .. 2**bits - 1``), PowerCurve's negative zero, a Quat code that ``quat_valid`` rejects
  (SPEC: decoders reject every code that is not valid); ``*_valid`` functions never raise for
  any integer and return a bool array.
* The float operation order written in each docstring is part of the contract: ``a + b + c`` is
  ``(a + b) + c`` and ``lo + (code * R) / L`` is exactly that. Only correctly rounded operations
  are used (``+ - * /``, ``sqrt``, ``floor``, ``trunc``, ``fmod``), except ``pow`` in
  :func:`power_quantize` / :func:`power_dequantize`, which calls ``math.pow`` (the C library's
  ``pow``) element by element, exactly what the core calls.
* Compiled code that reproduces these rules must not contract ``a * b + c`` into a fused
  multiply-add (``-ffp-contract=off``): FMA rounds once instead of twice and changes codes.
"""

import math

import numpy as np

from .errors import DecodeError, RangeError, SchemaError

__all__ = [
    # Bounded
    "bounded_quantize", "bounded_dequantize", "bounded_step", "bounded_max_error", "bounded_valid",
    "bits_for", "bounded_bits_for_step", "bounded_bits_for_error",
    # Fixed
    "fixed_quantize", "fixed_dequantize", "fixed_step", "fixed_max_error", "fixed_valid",
    # Angle
    "angle_full_turn", "angle_quantize", "angle_dequantize", "angle_step", "angle_max_error", "angle_valid",
    # PowerCurve
    "power_quantize", "power_dequantize", "power_step", "power_max_error", "power_valid",
    # Half
    "half_quantize", "half_dequantize", "half_valid",
    # Quat
    "QUAT_LIMIT", "quat_normalize", "quat_quantize", "quat_dequantize", "quat_component_step", "quat_valid",
    # UnitVector
    "unitvec_quantize", "unitvec_dequantize", "unitvec_valid",
    # Grid
    "grid_quantize", "grid_dequantize", "grid_step", "grid_max_error", "grid_valid",
    # exact data
    "uint_quantize", "uint_dequantize", "uint_valid",
    "int_quantize", "int_dequantize", "int_valid",
    "bool_quantize", "bool_dequantize", "bool_valid",
    "enum_bits", "enum_quantize", "enum_dequantize", "enum_valid",
    # composites
    "nearly_zero_quantize", "nearly_zero_dequantize", "nearly_zero_valid",
    "vector_quantize", "vector_dequantize", "vector_valid",
]

_MODES = ("endpoints", "bins", "midpoint")


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------

def _f64(x):
    """``x`` as a float64 array (a copy when it converts). Floats, ints and bools are accepted
    (anything NumPy casts to float64 under the 'safe' rule); other dtypes raise ``TypeError``."""
    a = np.asarray(x)
    if a.dtype == np.float64:
        return a
    if a.dtype.kind not in "biuf" or not np.can_cast(a.dtype, np.float64, "safe"):
        raise TypeError(f"expected a float or integer array, got dtype {a.dtype}")
    return a.astype(np.float64)


def _int_array(code):
    """Integer codes as an object array of Python ints (any size; never overflows)."""
    a = np.asarray(code) if isinstance(code, (np.ndarray, np.generic)) else np.array(code, dtype=object)
    if a.dtype.kind == "O":
        out = np.empty(a.shape, dtype=object)
        for i, v in enumerate(a.flat):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"expected integer codes, got {type(v).__name__}")
            out.flat[i] = int(v)
        return out
    if a.dtype.kind not in "iu":
        raise TypeError(f"expected integer codes, got dtype {a.dtype}")
    return a.astype(object)


def _in_range(code, lo, hi):
    """Bool array: ``lo <= code <= hi`` for integers of any size (never raises on big ints)."""
    a = _int_array(code)
    if a.ndim == 0:
        v = a[()]
        return np.asarray(lo <= v <= hi)
    return np.array([lo <= v <= hi for v in a.ravel()], dtype=bool).reshape(a.shape)


def _codes(code, nbits, what="code"):
    """Unsigned codes as a uint64 array after checking they lie in ``0 .. 2**nbits - 1``."""
    ok = _in_range(code, 0, (1 << nbits) - 1)
    if not ok.all():
        bad = int(np.flatnonzero(~ok.ravel())[0])
        v = _int_array(code).ravel()[bad]
        where = f"element {bad}: " if np.ndim(code) else ""
        raise DecodeError(f"{where}{what} {v} outside 0..{(1 << nbits) - 1}")
    return np.asarray(_int_array(code).astype(np.uint64), dtype=np.uint64)


def _scodes(code, nbits, what="code"):
    """Signed codes as an int64 array after checking they lie in ``-2**(nbits-1) .. 2**(nbits-1) - 1``."""
    lo, hi = -(1 << (nbits - 1)), (1 << (nbits - 1)) - 1
    ok = _in_range(code, lo, hi)
    if not ok.all():
        bad = int(np.flatnonzero(~ok.ravel())[0])
        v = _int_array(code).ravel()[bad]
        where = f"element {bad}: " if np.ndim(code) else ""
        raise DecodeError(f"{where}{what} {v} outside {lo}..{hi}")
    return np.asarray(_int_array(code).astype(np.int64), dtype=np.int64)


def _check_bits(bits, lo, hi, name="bits"):
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) or not lo <= bits <= hi:
        raise SchemaError(f"{name} must be an integer in {lo}..{hi}, got {bits!r}")
    return int(bits)


def _check_mode(mode):
    if mode not in _MODES:
        raise SchemaError(f"mode must be 'endpoints', 'bins' or 'midpoint', got {mode!r}")
    return mode


def _check_finite(name, v):
    v = float(v)
    if not math.isfinite(v):
        raise SchemaError(f"{name} must be finite, got {v!r}")
    return v


def _sgn(t):
    """``1.0 if t >= 0 else -1.0`` elementwise (so -0.0 gives +1.0)."""
    return np.where(t >= 0, 1.0, -1.0)


# ----------------------------------------------------------------------------------------------
# Bounded(min, max, bits, mode)
# ----------------------------------------------------------------------------------------------

def _bounded_params(lo, hi, bits, mode):
    lo = _check_finite("min", lo)
    hi = _check_finite("max", hi)
    if not lo < hi:
        raise SchemaError(f"min must be below max, got min={lo!r}, max={hi!r}")
    bits = _check_bits(bits, 1, 32)
    # every valid code must decode to a finite value: code * R and (code + 0.5) * R stay below
    # R * 2**bits, which must be finite (R itself too)
    if not math.isfinite((hi - lo) * float(2 ** bits)):
        raise SchemaError(f"the range max - min times 2**bits overflows, got min={lo!r}, max={hi!r}, bits={bits}")
    mode = _check_mode(mode)
    if mode == "midpoint" and bits < 2:
        raise SchemaError(f"mode='midpoint' needs bits >= 2, got bits={bits}")
    return lo, hi, bits, mode


def _top(bits, mode):
    """The top code L: ``2**bits - 1`` (endpoints), ``2**bits - 2`` (midpoint; bins: its last bin)."""
    return 2 ** bits - (2 if mode == "midpoint" else 1)


def bounded_quantize(x, lo, hi, bits, mode="endpoints"):
    """Bounded rule, value(s) -> uint64 code(s).

    ``R = hi - lo``.

    endpoints: ``L = float(2**bits - 1)``; ``t = (x - lo) / R``; ``t = t if t > 0 else 0.0`` (NaN
    goes to 0); ``t = t if t < 1 else 1.0``; ``code = floor(t * L + 0.5)``.

    bins: ``t = (x - lo) / R``; if not ``t > 0`` (NaN, at or below ``lo``) the code is 0; else
    ``code = min(2**bits - 1, floor(t * 2**bits))`` taken in float (so +inf gives the top code).

    midpoint: as endpoints with ``L = float(2**bits - 2)`` (an even number of intervals).
    """
    lo, hi, bits, mode = _bounded_params(lo, hi, bits, mode)
    x = _f64(x)
    R = hi - lo
    with np.errstate(invalid="ignore", over="ignore"):
        t = (x - lo) / R
        if mode != "bins":
            L = float(_top(bits, mode))
            t = np.where(t > 0, t, 0.0)
            t = np.where(t < 1, t, 1.0)
            c = np.floor(t * L + 0.5)
        else:
            N = float(2 ** bits)
            c = np.where(t > 0, np.minimum(N - 1.0, np.floor(t * N)), 0.0)
    return c.astype(np.uint64)


def bounded_dequantize(code, lo, hi, bits, mode="endpoints"):
    """Bounded rule, code(s) -> float64 value(s).

    endpoints: code 0 -> exactly ``lo``; code ``L`` -> exactly ``hi``; otherwise
    ``lo + (code * R) / L`` with ``R = hi - lo``, ``L = float(2**bits - 1)``.

    bins: ``lo + ((code + 0.5) * R) / 2**bits`` (the bin centre).

    midpoint: as endpoints with ``L = float(2**bits - 2)``, and code ``L / 2`` -> exactly
    ``(lo + hi) * 0.5`` (0.0 in a symmetric range). (Codes above ``L`` are not valid; given one,
    the same formula extrapolates.)
    """
    lo, hi, bits, mode = _bounded_params(lo, hi, bits, mode)
    c = _codes(code, bits)
    if mode == "midpoint" and (c == np.uint64(2 ** bits - 1)).any():
        raise DecodeError(f"code {2 ** bits - 1} is not a level of the midpoint rule (its top code is {2 ** bits - 2})")
    return _bounded_dq(c, lo, hi, bits, mode)


def _bounded_dq(c, lo, hi, bits, mode):
    """bounded_dequantize on checked uint64 codes (midpoint's 2**bits - 1 extrapolates: for
    quat_valid, which refuses it)."""
    R = hi - lo
    cf = c.astype(np.float64)
    if mode == "endpoints":
        L = float(2 ** bits - 1)
        v = lo + (cf * R) / L
        v = np.where(c == 0, lo, v)
        v = np.where(c == 2 ** bits - 1, hi, v)
        return v.astype(np.float64)
    if mode == "midpoint":
        L = 2 ** bits - 2
        v = lo + (cf * R) / float(L)
        v = np.where(c == 0, lo, v)
        v = np.where(c == L // 2, (lo + hi) * 0.5, v)
        v = np.where(c == L, hi, v)
        return v.astype(np.float64)
    N = float(2 ** bits)
    return lo + ((cf + 0.5) * R) / N


def bounded_step(lo, hi, bits, mode="endpoints"):
    """``R / (2**bits - 1)`` for endpoints, ``R / 2**bits`` for bins, ``R / (2**bits - 2)`` for
    midpoint (``R = hi - lo``)."""
    lo, hi, bits, mode = _bounded_params(lo, hi, bits, mode)
    R = hi - lo
    return R / float(2 ** bits) if mode == "bins" else R / float(_top(bits, mode))


def bounded_max_error(lo, hi, bits, mode="endpoints"):
    """Half a step, for in-range inputs."""
    return bounded_step(lo, hi, bits, mode) / 2.0


def bounded_valid(code, bits, mode="endpoints"):
    """Every code of ``bits`` bits is one ``quantize`` can produce, but for midpoint's ``2**bits - 1``."""
    bits = _check_bits(bits, 1, 32)
    return _in_range(code, 0, _top(bits, _check_mode(mode)) if mode == "midpoint" else (1 << bits) - 1)


def bits_for(range, max_error, mode="endpoints"):  # noqa: A002 (SPEC's parameter name)
    """SPEC ``qc.bits_for``, the literal formula in float64 with ``math.log2``:
    endpoints ``ceil(log2(range / (2 * max_error) + 1))``, bins ``ceil(log2(range / (2 * max_error)))``,
    midpoint ``ceil(log2(range / (2 * max_error) + 2))``, never below 0."""
    _check_mode(mode)
    r = range / (2.0 * max_error)
    if mode == "endpoints":
        r = r + 1.0
    elif mode == "midpoint":
        r = r + 2.0
    if not r > 0:
        return 0
    return max(0, math.ceil(math.log2(r)))


def _fewest_bits(lo, hi, target, mode, what):
    first = 2 if mode == "midpoint" else 1
    lo, hi, _, mode = _bounded_params(lo, hi, first, mode)
    target = float(target)
    if not (target > 0 and math.isfinite(target)):
        raise SchemaError(f"{what} must be positive and finite, got {target!r}")
    for bits in range(first, 33):
        got = bounded_step(lo, hi, bits, mode)
        if what == "max_error":
            got = got / 2.0
        if got <= target:
            return bits
    raise SchemaError(f"{what} {target!r} needs more than 32 bits over [{lo!r}, {hi!r}]")


def bounded_bits_for_step(lo, hi, step, mode="endpoints"):
    """``Bounded.for_step``: the fewest bits (1..32) whose actual float64 step is at most ``step``."""
    return _fewest_bits(lo, hi, step, mode, "step")


def bounded_bits_for_error(lo, hi, max_error, mode="endpoints"):
    """``Bounded.for_error``: the fewest bits (1..32) whose actual ``step / 2`` is at most ``max_error``."""
    return _fewest_bits(lo, hi, max_error, mode, "max_error")


# ----------------------------------------------------------------------------------------------
# Fixed(step, bits, signed, offset)
# ----------------------------------------------------------------------------------------------

def _fixed_params(step, bits, offset, signed=True):
    step = _check_finite("step", step)
    if not step > 0:
        raise SchemaError(f"step must be positive, got {step!r}")
    bits = _check_bits(bits, 1, 64)
    offset = _check_finite("offset", offset)
    # every valid code must decode to a finite value; offset + float(code) * step is monotonic in
    # the code, so the end codes decide
    for c in ((-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)):
        if not math.isfinite(offset + float(c) * step):
            raise SchemaError(f"code {c} would decode to a non-finite value, got step={step!r}, bits={bits}, "
                              f"offset={offset!r}")
    return step, bits, offset


def fixed_quantize(x, step, bits, signed=True, offset=0.0):
    """Fixed rule, value(s) -> int64 (signed) / uint64 code(s).

    ``v = (x - offset) / step``; NaN -> code 0. Round half away from zero, exactly:
    ``r = trunc(v); f = v - r`` (exact); ``r = r + sign(v)`` when ``|f| >= 0.5``.
    (``floor(|v| + 0.5)`` is wrong: it rounds 0.49999999999999994 up.)
    Clamp in float, before any integer conversion, to ``[-2**(bits-1), 2**(bits-1) - 1]`` (signed)
    or ``[0, 2**bits - 1]``: ``r >= 2**(bits-1)`` (resp. ``2**bits``) gives the top code, which is
    not representable as a float at 64 bits. +-inf clamp to the end codes.
    """
    step, bits, offset = _fixed_params(step, bits, offset, signed)
    x = _f64(x)
    with np.errstate(invalid="ignore", over="ignore"):
        v = (x - offset) / step
        r = np.trunc(v)
        f = v - r                                  # NaN for +-inf: |f| >= 0.5 is False
        r = np.where(np.abs(f) >= 0.5, r + np.sign(v), r)
    nan = np.isnan(v)
    if signed:
        top = 2.0 ** (bits - 1)                   # exactly representable
        hi, lo = (1 << (bits - 1)) - 1, -(1 << (bits - 1))
        over = r >= top
        under = r < -top
        mid = np.where(over | under | nan, 0.0, r).astype(np.int64)
        out = np.where(over, np.int64(hi), np.where(under, np.int64(lo), mid))
        return np.where(nan, np.int64(0), out).astype(np.int64)
    top = 2.0 ** bits
    hi = (1 << bits) - 1
    over = r >= top
    under = r < 0
    mid = np.where(over | under | nan, 0.0, r).astype(np.uint64)
    out = np.where(over, np.uint64(hi), np.where(under, np.uint64(0), mid))
    return np.where(nan, np.uint64(0), out).astype(np.uint64)


def fixed_dequantize(code, step, bits, signed=True, offset=0.0):
    """``offset + float(code) * step`` (the code converted to float64 first; exact up to 2**53)."""
    step, bits, offset = _fixed_params(step, bits, offset, signed)
    c = _scodes(code, bits) if signed else _codes(code, bits)
    return offset + c.astype(np.float64) * step


def fixed_step(step, bits, signed=True, offset=0.0):
    """The step itself."""
    return _fixed_params(step, bits, offset, signed)[0]


def fixed_max_error(step, bits, signed=True, offset=0.0):
    """Half a step, inside the clamping range."""
    return fixed_step(step, bits, signed, offset) / 2.0


def fixed_valid(code, bits, signed=True):
    """Signed: ``-2**(bits-1) <= code <= 2**(bits-1) - 1``; unsigned: ``0 <= code <= 2**bits - 1``."""
    bits = _check_bits(bits, 1, 64)
    if signed:
        return _in_range(code, -(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    return _in_range(code, 0, (1 << bits) - 1)


# ----------------------------------------------------------------------------------------------
# Angle(bits, signed, unit)
# ----------------------------------------------------------------------------------------------

def angle_full_turn(unit="rad"):
    """``2 * math.pi`` for ``"rad"``, ``360.0`` for ``"deg"``."""
    if unit == "rad":
        return 2.0 * math.pi
    if unit == "deg":
        return 360.0
    raise SchemaError(f"unit must be 'rad' or 'deg', got {unit!r}")


def angle_quantize(x, bits, signed=False, unit="rad"):
    """Angle rule, value(s) -> uint64 code(s) (``signed`` only changes decoding).

    Non-finite -> code 0. ``w = fmod(x, full)``; ``if w < 0: w = w + full``;
    ``code = floor(w / full * 2**bits + 0.5) mod 2**bits`` (divide, then multiply by ``2**bits``).
    """
    bits = _check_bits(bits, 1, 32)
    full = angle_full_turn(unit)
    x = _f64(x)
    fin = np.isfinite(x)
    xs = np.where(fin, x, 0.0)
    w = np.fmod(xs, full)
    w = np.where(w < 0, w + full, w)
    N = float(2 ** bits)
    c = np.floor(w / full * N + 0.5).astype(np.uint64) & np.uint64(2 ** bits - 1)
    return np.where(fin, c, np.uint64(0)).astype(np.uint64)


def angle_dequantize(code, bits, signed=False, unit="rad"):
    """Unsigned: ``(code * full) / 2**bits`` in ``[0, full)``. Signed: ``sc = code - 2**bits`` when
    ``code >= 2**(bits-1)`` else ``code``, value ``(sc * full) / 2**bits`` in ``[-full/2, full/2)``."""
    bits = _check_bits(bits, 1, 32)
    full = angle_full_turn(unit)
    c = _codes(code, bits).astype(np.float64)
    N = float(2 ** bits)
    if signed:
        c = np.where(c >= N / 2.0, c - N, c)
    return (c * full) / N


def angle_step(bits, signed=False, unit="rad"):
    """``full / 2**bits``."""
    return angle_full_turn(unit) / float(2 ** _check_bits(bits, 1, 32))


def angle_max_error(bits, signed=False, unit="rad"):
    """Half a step, measured around the circle."""
    return angle_step(bits, signed, unit) / 2.0


def angle_valid(code, bits):
    """Every code of ``bits`` bits."""
    return _in_range(code, 0, (1 << _check_bits(bits, 1, 32)) - 1)


# ----------------------------------------------------------------------------------------------
# PowerCurve(max, pow, bits)
# ----------------------------------------------------------------------------------------------

def _power_params(vmax, power, bits):
    vmax = _check_finite("max", vmax)
    if not vmax > 0:
        raise SchemaError(f"max must be positive, got {vmax!r}")
    power = _check_finite("pow", power)
    if not power >= 1:
        raise SchemaError(f"pow must be >= 1, got {power!r}")
    return vmax, power, _check_bits(bits, 2, 32)


def _root(t, power, inv):
    """``t ** (1 / pow)``: ``t`` for pow 1, ``math.sqrt(t)`` for pow 2 (correctly rounded on every
    platform), else ``math.pow(t, 1.0 / pow)``."""
    if power == 1.0:
        return t
    if power == 2.0:
        return math.sqrt(t)
    return math.pow(t, inv)


def _raise(r, power):
    """``r ** pow``: ``r`` for pow 1, ``r * r`` for pow 2, else ``math.pow(r, pow)``."""
    if power == 1.0:
        return r
    if power == 2.0:
        return r * r
    return math.pow(r, power)


def power_quantize(x, vmax, power, bits):
    """PowerCurve rule, value(s) -> uint64 code(s).

    ``L = float(2**(bits-1) - 1)``; ``a = |x|``; NaN -> code 0; ``a = min(a, max)`` (+-inf -> max);
    ``m = floor(root(a / max) * L + 0.5)`` where ``root(t)`` is ``t ** (1 / pow)`` computed as ``t``
    for pow 1, ``sqrt(t)`` for pow 2 and ``math.pow(t, 1.0 / pow)`` otherwise; ``m == 0`` gives code
    0 (whatever the sign); otherwise the code is ``(1 << (bits-1)) | m`` when ``x < 0``, else ``m``.
    ``math.pow`` is applied element by element (the C library's ``pow``, as in the core).
    """
    vmax, power, bits = _power_params(vmax, power, bits)
    x = _f64(x)
    L = float(2 ** (bits - 1) - 1)
    inv = 1.0 / power
    sign = np.uint64(1 << (bits - 1))
    flat = x.ravel()
    out = np.empty(flat.shape, dtype=np.uint64)
    for i, xv in enumerate(flat.tolist()):
        if xv != xv:
            out[i] = 0
            continue
        a = abs(xv)
        a = a if a < vmax else vmax
        m = math.floor(_root(a / vmax, power, inv) * L + 0.5)
        if m == 0:
            out[i] = 0
        elif xv < 0:
            out[i] = np.uint64(m) | sign
        else:
            out[i] = m
    return out.reshape(x.shape)


def power_dequantize(code, vmax, power, bits):
    """``m = code & (2**(bits-1) - 1)``; ``m == 0`` -> +0.0; else ``v = max * (m / L) ** pow`` (as ``r``
    for pow 1, ``r * r`` for pow 2, ``math.pow(r, pow)`` otherwise),
    negated when the sign bit is set."""
    vmax, power, bits = _power_params(vmax, power, bits)
    c = _codes(code, bits)
    L = float(2 ** (bits - 1) - 1)
    mask = (1 << (bits - 1)) - 1
    flat = c.ravel()
    bad = [i for i, cv in enumerate(flat.tolist()) if cv >> (bits - 1) and not cv & mask]
    if bad:
        raise DecodeError(f"code {flat[bad[0]]} (sign bit set, magnitude 0) is not a valid PowerCurve code")
    out = np.empty(flat.shape, dtype=np.float64)
    for i, cv in enumerate(flat.tolist()):
        m = cv & mask
        if m == 0:
            out[i] = 0.0
            continue
        v = vmax * _raise(float(m) / L, power)
        out[i] = -v if cv >> (bits - 1) else v
    return out.reshape(c.shape)


def power_step(vmax, power, bits):
    """The top-of-range step ``max * (1 - math.pow((L - 1) / L, pow))``."""
    vmax, power, bits = _power_params(vmax, power, bits)
    L = float(2 ** (bits - 1) - 1)
    return vmax * (1.0 - math.pow((L - 1.0) / L, power))


def power_max_error(vmax, power, bits):
    """The true worst error ``max * (1 - math.pow((L - 0.5) / L, pow))`` (half the top bin, rounded
    in the curve's domain)."""
    vmax, power, bits = _power_params(vmax, power, bits)
    L = float(2 ** (bits - 1) - 1)
    return vmax * (1.0 - math.pow((L - 0.5) / L, power))


def power_valid(code, bits):
    """``code < 2**bits`` and not (sign bit set and ``m == 0``): negative zero is never produced."""
    bits = _check_bits(bits, 2, 32)
    ok = _in_range(code, 0, (1 << bits) - 1)
    neg_zero = _in_range(code, 1 << (bits - 1), 1 << (bits - 1))
    return ok & ~neg_zero


# ----------------------------------------------------------------------------------------------
# Half
# ----------------------------------------------------------------------------------------------

def half_quantize(x):
    """IEEE binary16 bits (as uint64) of float64 value(s), round to nearest even.

    Written on the integer bits of the double so it documents the rule; it is bit-identical to
    ``np.asarray(x, np.float64).astype(np.float16).view(np.uint16)`` (tested over every half, every
    tie between neighbours and random doubles):

    * +-inf, and finite values whose rounded magnitude reaches 65520 or more, -> +-inf (0x7c00).
    * NaN -> ``sign | (0x7c00 + (mantissa >> 42))``, and 0x7c01 when those top 10 payload bits are
      all zero (it must stay a NaN): a NaN keeps its sign and the top of its payload.
    * Subnormal halves (multiples of 2**-24) and zero, with the sign kept (-0.0 -> 0x8000).
    """
    x = _f64(x)
    b = np.ascontiguousarray(x).view(np.uint64)
    sign = (b >> np.uint64(63)) << np.uint64(15)
    e_field = ((b >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64)
    mant = b & np.uint64((1 << 52) - 1)
    # significand with the hidden bit; double subnormals (e_field 0) round to zero anyway
    M = np.where(e_field > 0, mant | np.uint64(1 << 52), mant)
    e = np.where(e_field > 0, e_field - 1023, -1022)
    # value = M * 2**(e - 52); the half's quantum is 2**(max(e, -14) - 10)
    shift = 42 + np.maximum(0, -14 - e)
    shift = np.minimum(shift, 63).astype(np.uint64)
    q = M >> shift
    rem = M & ((np.uint64(1) << shift) - np.uint64(1))
    halfway = np.uint64(1) << (shift - np.uint64(1))
    up = (rem > halfway) | ((rem == halfway) & ((q & np.uint64(1)) == np.uint64(1)))
    q = q + up.astype(np.uint64)
    # normal halves: ((e + 14) << 10) + q (q includes the hidden 2**10, a rounding carry moves the
    # exponent up); subnormal halves: q itself
    eh = np.maximum(e, -14) + 14
    h = (eh.astype(np.uint64) << np.uint64(10)) + q
    h = np.where((e > 15) | (h >= np.uint64(0x7C00)), np.uint64(0x7C00), h)
    nan_payload = np.uint64(0x7C00) + (mant >> np.uint64(42))
    nan_payload = np.where(nan_payload == np.uint64(0x7C00), np.uint64(0x7C01), nan_payload)
    h = np.where(e_field == 0x7FF, np.where(mant == 0, np.uint64(0x7C00), nan_payload), h)
    return (sign | h).astype(np.uint64)


def half_dequantize(code):
    """binary16 bits -> float64, exactly (NumPy's ``float16 -> float64``): subnormals
    ``m * 2**-24``, normals ``(1024 + m) * 2**(e - 25)``, infinities, and NaN with its sign and
    payload moved to the top of the double's mantissa (``m << 42``)."""
    c = _codes(code, 16)
    flat = c.ravel()
    neg = (flat >> np.uint64(15)) == np.uint64(1)
    e = ((flat >> np.uint64(10)) & np.uint64(0x1F)).astype(np.int64)
    mbits = flat & np.uint64(0x3FF)
    m = mbits.astype(np.float64)
    v = np.where(e == 0, m * 2.0 ** -24, np.ldexp(1024.0 + m, np.minimum(e, 30) - 25))
    v = np.where(neg, -v, v)
    special = ((flat >> np.uint64(15)) << np.uint64(63)) | np.uint64(0x7FF << 52) | (mbits << np.uint64(42))
    v = np.where(e == 31, special.view(np.float64), v)
    return v.reshape(c.shape)


def half_valid(code):
    """Every 16-bit code (each NaN payload 1..1023 comes from some double NaN)."""
    return _in_range(code, 0, 0xFFFF)


# ----------------------------------------------------------------------------------------------
# Quat(bits, mode): smallest three
# ----------------------------------------------------------------------------------------------

#: The kept components' range is ``[-QUAT_LIMIT, QUAT_LIMIT]``, ``QUAT_LIMIT = math.sqrt(0.5)``.
QUAT_LIMIT = math.sqrt(0.5)

_KEPT = ((1, 2, 3), (0, 2, 3), (0, 1, 3), (0, 1, 2))


def _row_error(bad, what):
    idx = np.flatnonzero(bad.ravel())
    if idx.size:
        raise RangeError(what if bad.ndim == 0 else f"row {int(idx[0])}: {what}")


def _check_rows(v, k, what):
    if v.ndim == 0 or v.shape[-1] != k:
        raise ValueError(f"expected a {what} of {k} components (shape (..., {k})), got shape {v.shape}")
    fin = np.isfinite(v).all(axis=-1)
    _row_error(~fin, f"non-finite {what}")
    m = np.abs(v).max(axis=-1)
    _row_error(m == 0, f"zero {what}")
    return m


def quat_normalize(q):
    """The encoder's normalization of (x, y, z, w): ``m = max |q_i|`` (zero or non-finite raises
    ``RangeError``, naming the first bad row); ``q = q / m``;
    ``n = sqrt(((q0*q0 + q1*q1) + q2*q2) + q3*q3)``; ``q = q / n``."""
    q = _f64(q)
    m = _check_rows(q, 4, "quaternion")
    q = q / m[..., None]
    n = np.sqrt(((q[..., 0] * q[..., 0] + q[..., 1] * q[..., 1]) + q[..., 2] * q[..., 2]) + q[..., 3] * q[..., 3])
    return q / n[..., None]


def quat_component_step(bits, mode="endpoints"):
    """One kept component's step: ``R / L`` (endpoints) or ``R / 2**bits`` (bins), ``R = 2 * sqrt(0.5)``
    computed as ``sqrt(0.5) - (-sqrt(0.5))``."""
    _check_bits(bits, 2, 20)
    return bounded_step(-QUAT_LIMIT, QUAT_LIMIT, bits, mode)


def quat_quantize(q, bits=9, mode="endpoints"):
    """Smallest three, quaternion(s) ``(..., 4)`` as (x, y, z, w) -> uint64 code(s) ``(...)``.

    1. :func:`quat_normalize`.
    2. ``idx``: the largest ``|q_i|``, first index on a tie (strict ``>`` scan from index 0).
    3. If ``q[idx] < 0``, negate all four (q and -q are the same rotation and give one code).
    4. The kept components in increasing index order ``a, b, c`` are each quantized with the
       Bounded rule of ``mode`` over ``lo = -sqrt(0.5)``, ``hi = sqrt(0.5)``, ``bits``.
    5. ``code = idx << (3*bits) | a << (2*bits) | b << bits | c`` (``2 + 3*bits`` bits).
    """
    bits = _check_bits(bits, 2, 20)
    _check_mode(mode)
    q = quat_normalize(q)
    aq = np.abs(q)
    idx = np.zeros(q.shape[:-1], dtype=np.int64)
    best = aq[..., 0]
    for i in (1, 2, 3):
        upd = aq[..., i] > best
        idx = np.where(upd, i, idx)
        best = np.where(upd, aq[..., i], best)
    big = np.take_along_axis(q, idx[..., None], axis=-1)[..., 0]
    q = np.where((big < 0)[..., None], -q, q)
    kept = np.array(_KEPT)[idx]                                    # (..., 3) indices
    kv = np.take_along_axis(q, kept, axis=-1)
    c = bounded_quantize(kv, -QUAT_LIMIT, QUAT_LIMIT, bits, mode)
    b = np.uint64(bits)
    return ((idx.astype(np.uint64) << (np.uint64(3) * b)) | (c[..., 0] << (np.uint64(2) * b))
            | (c[..., 1] << b) | c[..., 2])


def _quat_split(code, bits):
    c = _codes(code, 2 + 3 * bits)
    b = np.uint64(bits)
    mask = np.uint64((1 << bits) - 1)
    idx = (c >> (np.uint64(3) * b)).astype(np.int64)
    comps = np.stack([(c >> (np.uint64(2) * b)) & mask, (c >> b) & mask, c & mask], axis=-1)
    return idx, comps


def quat_dequantize(code, bits=9, mode="endpoints"):
    """Smallest three, code(s) -> unit quaternion(s) ``(..., 4)`` float64.

    The three kept values decode with the Bounded rule of ``mode`` over ``[-sqrt(0.5), sqrt(0.5)]``;
    ``s = (a*a + b*b) + c*c``; ``d = sqrt(max(0.0, 1.0 - s))`` goes at ``idx`` (the others in
    increasing index order); ``n = sqrt(((q0*q0 + q1*q1) + q2*q2) + q3*q3)``; each divided by ``n``.
    """
    bits = _check_bits(bits, 2, 20)
    _check_mode(mode)
    idx, comps = _quat_split(code, bits)
    ok = np.asarray(quat_valid(code, bits, mode))
    if not ok.all():
        raise DecodeError(f"code {_int_array(code).ravel()[int(np.flatnonzero(~ok.ravel())[0])]} is not a valid Quat code")
    v = bounded_dequantize(comps, -QUAT_LIMIT, QUAT_LIMIT, bits, mode)
    a, b, c = v[..., 0], v[..., 1], v[..., 2]
    s = (a * a + b * b) + c * c
    d = np.sqrt(np.maximum(0.0, 1.0 - s))
    out = np.empty(idx.shape + (4,), dtype=np.float64)
    kept = np.array(_KEPT)[idx]
    np.put_along_axis(out, kept, v, axis=-1)
    np.put_along_axis(out, idx[..., None], d[..., None], axis=-1)
    n = np.sqrt(((out[..., 0] * out[..., 0] + out[..., 1] * out[..., 1]) + out[..., 2] * out[..., 2])
                + out[..., 3] * out[..., 3])
    return out / n[..., None]


def quat_valid(code, bits=9, mode="endpoints"):
    """Whether ``code`` can be a smallest-three code: ``code < 2**(2 + 3*bits)`` and the three kept
    values, each shrunk toward zero by one component step, fit a unit quaternion whose dropped
    component is the largest.

    Decode ``a, b, c`` (Bounded rule); ``st`` = :func:`quat_component_step`;
    ``a' = max(0.0, |a| - st)`` (likewise ``b'``, ``c'``); ``s = (a'*a' + b'*b') + c'*c'``;
    valid iff ``s <= 1.0`` and ``sqrt(1.0 - s) >= max(a', b', c')``; for midpoint also each kept
    component's code is at most ``2**bits - 2`` (``2**bits - 1`` is not a level).

    Why every code ``quat_quantize`` produces passes: the encoder's kept components ``k`` come
    from a unit quaternion whose dropped component ``d`` satisfies ``d >= |k|`` for each of them.
    Quantizing moves each by at most ``st / 2``, so ``a' <= max(0, |k| - st/2) <= |k|`` (with a
    margin of ``st / 2 >= 6.7e-7`` against float rounding, which is about 1e-16 here). Hence
    ``s <= k1^2 + k2^2 + k3^2 = 1 - d^2 <= 1`` and ``sqrt(1 - s) >= d >= max|k| >= max(a', b', c')``.
    Codes that fail have kept values too large to sit beside a largest dropped component, e.g.
    all three at the top of the range.
    """
    bits = _check_bits(bits, 2, 20)
    _check_mode(mode)
    inr = _in_range(code, 0, (1 << (2 + 3 * bits)) - 1)
    out = np.zeros(inr.shape, dtype=bool)
    if not inr.any():
        return out
    flat_ok = inr.ravel()
    codes = _int_array(code).ravel()[flat_ok]
    _, comps = _quat_split(codes.astype(np.uint64), bits)
    v = _bounded_dq(comps, -QUAT_LIMIT, QUAT_LIMIT, bits, mode)
    st = quat_component_step(bits, mode)
    sh = np.maximum(0.0, np.abs(v) - st)
    a, b, c = sh[..., 0], sh[..., 1], sh[..., 2]
    s = (a * a + b * b) + c * c
    with np.errstate(invalid="ignore"):
        ok = (s <= 1.0) & (np.sqrt(np.maximum(0.0, 1.0 - s)) >= np.maximum(np.maximum(a, b), c))
    if mode == "midpoint":
        ok &= (comps <= np.uint64(_top(bits, mode))).all(axis=-1)
    res = out.ravel()
    res[flat_ok] = ok
    return res.reshape(inr.shape)


# ----------------------------------------------------------------------------------------------
# UnitVector(bits): octahedral
# ----------------------------------------------------------------------------------------------

def unitvec_quantize(v, bits):
    """Octahedral, vector(s) ``(..., 3)`` -> uint64 code(s) ``(...)``.

    ``m = max |v_i|`` (zero or non-finite raises ``RangeError``); ``v = v / m``;
    ``s = (|x| + |y|) + |z|``; ``p = x / s``, ``q = y / s``; if ``z < 0``:
    ``p, q = (1 - |q|) * sgn(p), (1 - |p|) * sgn(q)`` (simultaneously, from the old p, q;
    ``sgn(t) = 1.0 if t >= 0 else -1.0``). ``p`` and ``q`` are quantized with the Bounded
    endpoints rule over ``[-1, 1]`` with ``bits``; ``code = (pc << bits) | qc``.
    """
    bits = _check_bits(bits, 2, 32)
    v = _f64(v)
    m = _check_rows(v, 3, "vector")
    v = v / m[..., None]
    x, y, z = v[..., 0], v[..., 1], v[..., 2]
    s = (np.abs(x) + np.abs(y)) + np.abs(z)
    p = x / s
    q = y / s
    neg = z < 0
    pf = (1.0 - np.abs(q)) * _sgn(p)
    qf = (1.0 - np.abs(p)) * _sgn(q)
    p = np.where(neg, pf, p)
    q = np.where(neg, qf, q)
    pc = bounded_quantize(p, -1.0, 1.0, bits, "endpoints")
    qc = bounded_quantize(q, -1.0, 1.0, bits, "endpoints")
    return (pc << np.uint64(bits)) | qc


def unitvec_dequantize(code, bits):
    """Octahedral, code(s) -> unit vector(s) ``(..., 3)`` float64.

    ``p``, ``q`` by the Bounded endpoints decode over ``[-1, 1]``; ``z = (1 - |p|) - |q|``;
    if ``z < 0``: ``p, q = (1 - |q|) * sgn(p), (1 - |p|) * sgn(q)`` (old values);
    ``n = sqrt((p*p + q*q) + z*z)``; the result is ``(p / n, q / n, z / n)``.
    """
    bits = _check_bits(bits, 2, 32)
    c = _codes(code, 2 * bits)
    mask = np.uint64((1 << bits) - 1)
    p = bounded_dequantize((c >> np.uint64(bits)) & mask, -1.0, 1.0, bits, "endpoints")
    q = bounded_dequantize(c & mask, -1.0, 1.0, bits, "endpoints")
    z = (1.0 - np.abs(p)) - np.abs(q)
    neg = z < 0
    pf = (1.0 - np.abs(q)) * _sgn(p)
    qf = (1.0 - np.abs(p)) * _sgn(q)
    p = np.where(neg, pf, p)
    q = np.where(neg, qf, q)
    n = np.sqrt((p * p + q * q) + z * z)
    return np.stack([p / n, q / n, z / n], axis=-1)


def unitvec_valid(code, bits):
    """``0 <= code < 2**(2*bits)``."""
    return _in_range(code, 0, (1 << (2 * _check_bits(bits, 2, 32))) - 1)


# ----------------------------------------------------------------------------------------------
# Grid(cell_size, cell_bits, offset_bits)
# ----------------------------------------------------------------------------------------------

def _grid_params(cell_size, cell_bits, offset_bits):
    cs = _check_finite("cell_size", cell_size)
    if not cs > 0:
        raise SchemaError(f"cell_size must be positive, got {cs!r}")
    cb = _check_bits(cell_bits, 1, 63, "cell_bits")
    ob = _check_bits(offset_bits, 1, 63, "offset_bits")
    if cb + ob > 64:
        raise SchemaError(f"cell_bits + offset_bits must be at most 64, got {cb} + {ob}")
    # every valid code must decode to a finite value; the end codes decide (monotonic)
    for cell, off in ((-(1 << (cb - 1)), 0), ((1 << (cb - 1)) - 1, (1 << ob) - 1)):
        if not math.isfinite((float(cell) + (float(off) + 0.5) / float(2 ** ob)) * cs):
            raise SchemaError(f"cell_size * 2**(cell_bits - 1) overflows, got cell_size={cs!r}, "
                              f"cell_bits={cb}, offset_bits={ob}")
    return cs, cb, ob


def grid_quantize(x, cell_size, cell_bits, offset_bits):
    """Grid rule, value(s) -> uint64 code(s).

    ``u = x / cs``; NaN -> code 0; ``cell = floor(u)``; ``t = u - cell`` (exact, but 1.0 when ``u``
    is a tiny negative); ``off = min(2**ob - 1, floor(t * 2**ob))`` with the min taken in integers;
    with ``cmin = -2**(cb-1)``, ``cmax = 2**(cb-1) - 1``: ``cell < cmin`` -> ``cell = cmin, off = 0``;
    ``cell > cmax`` -> ``cell = cmax, off = 2**ob - 1`` (+inf likewise, -inf -> ``cmin, 0``).
    The comparisons are made in float against the exact powers of two (``cell >= 2**(cb-1)``, not
    ``cell > float(cmax)``, which rounds up to ``2**(cb-1)`` from 55 cell bits on).
    ``code = ((cell mod 2**cb) << ob) | off``.
    """
    cs, cb, ob = _grid_params(cell_size, cell_bits, offset_bits)
    x = _f64(x)
    with np.errstate(invalid="ignore", over="ignore"):
        u = x / cs
        cell = np.floor(u)
        t = u - cell
        N = float(2 ** ob)
        off = np.floor(t * N)
    # min(2**ob - 1, off) taken in integers: 2**ob - 1 is not a float from 54 bits up, and t can be
    # exactly 1.0 (u a tiny negative: u - floor(u) rounds to 1)
    off_top = off >= N
    off = np.where(off_top, 0.0, off)
    nan = np.isnan(u)
    lo_f = -(2.0 ** (cb - 1))
    under = cell < lo_f
    over = cell >= 2.0 ** (cb - 1)             # i.e. cell > cmax (cmax may not be a float at 64 bits)
    safe = ~(nan | under | over)
    cell_i = np.where(safe, cell, 0.0).astype(np.int64)
    off_i = np.where(safe, off, 0.0).astype(np.uint64)
    off_i = np.where(safe & off_top, np.uint64((1 << ob) - 1), off_i)
    cell_i = np.where(under, np.int64(-(1 << (cb - 1))), cell_i)
    cell_i = np.where(over, np.int64((1 << (cb - 1)) - 1), cell_i)
    off_i = np.where(under, np.uint64(0), off_i)
    off_i = np.where(over, np.uint64((1 << ob) - 1), off_i)
    cell_u = cell_i.astype(np.int64).view(np.uint64) & np.uint64((1 << cb) - 1)
    code = (cell_u << np.uint64(ob)) | off_i
    return np.where(nan, np.uint64(0), code).astype(np.uint64)


def grid_dequantize(code, cell_size, cell_bits, offset_bits):
    """``cell`` = the high ``cb`` bits sign-extended, ``off`` the low ``ob`` bits;
    ``value = (cell + (off + 0.5) / 2**ob) * cs``."""
    cs, cb, ob = _grid_params(cell_size, cell_bits, offset_bits)
    c = _codes(code, cb + ob)
    off = (c & np.uint64((1 << ob) - 1)).astype(np.float64)
    cu = ((c >> np.uint64(ob)) & np.uint64((1 << cb) - 1)).ravel()
    # sign-extend from cb bits: move the cell's sign bit to bit 63, then shift back arithmetically
    cell_i = (cu << np.uint64(64 - cb)).view(np.int64) >> np.int64(64 - cb)
    cell = cell_i.astype(np.float64).reshape(c.shape)
    return (cell + (off + 0.5) / float(2 ** ob)) * cs


def grid_step(cell_size, cell_bits, offset_bits):
    """``cs / 2**ob``."""
    cs, cb, ob = _grid_params(cell_size, cell_bits, offset_bits)
    return cs / float(2 ** ob)


def grid_max_error(cell_size, cell_bits, offset_bits):
    """Half a step, inside ``+-cs * 2**(cb-1)``."""
    return grid_step(cell_size, cell_bits, offset_bits) / 2.0


def grid_valid(code, cell_bits, offset_bits):
    """Every code of ``cell_bits + offset_bits`` bits."""
    return _in_range(code, 0, (1 << (cell_bits + offset_bits)) - 1)


# ----------------------------------------------------------------------------------------------
# exact data: UInt, Int, Bool, Enum, IntRange
# ----------------------------------------------------------------------------------------------

def _exact_ints(x, lo, hi, what, bools=False):
    """Integer values checked against ``lo..hi``; out of range or not an integer -> RangeError;
    bools -> TypeError unless ``bools`` (Bool takes them; a health of True is a bug)."""
    a = np.asarray(x)
    if a.dtype.kind == "b" and not bools:
        raise TypeError(f"expected integers for {what}, got bool")
    if a.dtype.kind == "f":
        flat = a.ravel()
        bad = ~np.isfinite(flat) | (flat != np.trunc(flat))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            where = f"element {i}: " if a.ndim else ""
            raise RangeError(f"{where}{flat[i]!r} is not an integer for {what}")
        a = np.array([int(v) for v in flat.tolist()], dtype=object).reshape(a.shape)
    elif a.dtype.kind == "b":
        a = a.astype(np.int64)
    ok = _in_range(a, lo, hi)
    if not ok.all():
        i = int(np.flatnonzero(~ok.ravel())[0])
        v = _int_array(a).ravel()[i]
        where = f"element {i}: " if a.ndim else ""
        raise RangeError(f"{where}{v} outside {lo}..{hi} for {what}")
    return _int_array(a)


def uint_quantize(x, bits):
    """``code = x`` for ``0 <= x <= 2**bits - 1``; anything else raises ``RangeError``."""
    bits = _check_bits(bits, 1, 64)
    return _exact_ints(x, 0, (1 << bits) - 1, f"UInt({bits})").astype(np.uint64)


def uint_dequantize(code, bits):
    """``value = code``."""
    return _codes(code, _check_bits(bits, 1, 64))


def uint_valid(code, bits):
    return _in_range(code, 0, (1 << _check_bits(bits, 1, 64)) - 1)


def int_quantize(x, bits):
    """``code = x`` (signed) for ``-2**(bits-1) <= x <= 2**(bits-1) - 1``; else ``RangeError``.
    On the wire it is two's complement in ``bits`` bits."""
    bits = _check_bits(bits, 1, 64)
    return _exact_ints(x, -(1 << (bits - 1)), (1 << (bits - 1)) - 1, f"Int({bits})").astype(np.int64)


def int_dequantize(code, bits):
    """``value = code``."""
    return _scodes(code, _check_bits(bits, 1, 64))


def int_valid(code, bits):
    bits = _check_bits(bits, 1, 64)
    return _in_range(code, -(1 << (bits - 1)), (1 << (bits - 1)) - 1)


def bool_quantize(x):
    """``True`` -> 1, ``False`` -> 0 (also 0/1 integers; anything else raises ``RangeError``)."""
    return _exact_ints(np.asarray(x), 0, 1, "Bool()", bools=True).astype(np.uint64)


def bool_dequantize(code):
    """Code 1 -> ``True``, 0 -> ``False``."""
    return _codes(code, 1).astype(bool)


def bool_valid(code):
    return _in_range(code, 0, 1)


def enum_bits(n):
    """``ceil(log2(n))`` in exact integer arithmetic: 0 bits for a single variant."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise SchemaError(f"an Enum needs at least one variant, got {n!r}")
    return (int(n) - 1).bit_length()


def enum_quantize(x, labels_or_count):
    """A label (or an index) -> its index; an unknown label or an index ``>= n`` raises ``RangeError``."""
    labels = None if isinstance(labels_or_count, (int, np.integer)) else list(labels_or_count)
    n = len(labels) if labels is not None else int(labels_or_count)
    enum_bits(n)
    if isinstance(x, str):
        if labels is None or x not in labels:
            raise RangeError(f"{x!r} is not a label of this Enum")
        return np.asarray(labels.index(x), dtype=np.uint64)
    return _exact_ints(x, 0, n - 1, f"Enum({n})").astype(np.uint64)


def enum_dequantize(code, labels_or_count):
    """An index -> its label (``Enum(labels)``) or the index itself (``Enum(n)``); ``>= n`` raises
    ``DecodeError``."""
    labels = None if isinstance(labels_or_count, (int, np.integer)) else list(labels_or_count)
    n = len(labels) if labels is not None else int(labels_or_count)
    ok = _in_range(code, 0, n - 1)
    if not ok.all():
        raise DecodeError(f"enum code {_int_array(code).ravel()[int(np.flatnonzero(~ok.ravel())[0])]} outside 0..{n - 1}")
    c = _int_array(code).astype(np.uint64)
    if labels is None:
        return c
    if c.ndim == 0:
        return labels[int(c)]
    return np.array([labels[int(v)] for v in c.ravel()], dtype=object).reshape(c.shape)


def enum_valid(code, labels_or_count):
    n = int(labels_or_count) if isinstance(labels_or_count, (int, np.integer)) else len(list(labels_or_count))
    return _in_range(code, 0, n - 1)


def intrange_bits(lo, hi):
    """``(hi - lo).bit_length()``: the fewest bits holding ``0 .. hi - lo``. ``lo < hi``, both
    within int64 and ``hi - lo < 2**63``, else ``SchemaError``."""
    for v in (lo, hi):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise SchemaError(f"IntRange bounds must be integers, got {v!r}")
        if not -(1 << 63) <= int(v) < (1 << 63):
            raise SchemaError(f"IntRange bound {int(v)} is outside int64")
    lo, hi = int(lo), int(hi)
    if not lo < hi or hi - lo >= (1 << 63):
        raise SchemaError(f"IntRange needs lo < hi and hi - lo < 2**63, got {lo}..{hi}")
    return (hi - lo).bit_length()


def intrange_quantize(x, lo, hi):
    """``code = x - lo`` for an integer ``lo <= x <= hi``; anything else raises ``RangeError``
    (exact data: never clamped)."""
    intrange_bits(lo, hi)
    v = _exact_ints(x, int(lo), int(hi), f"IntRange({lo}, {hi})")
    return np.asarray(np.vectorize(lambda t: t - int(lo), otypes=[object])(v) if v.ndim else
                      v[()] - int(lo)).astype(np.uint64)


def intrange_dequantize(code, lo, hi):
    """``value = lo + code`` (int64); a code above ``hi - lo`` raises ``DecodeError``."""
    intrange_bits(lo, hi)
    ok = _in_range(code, 0, int(hi) - int(lo))
    if not ok.all():
        raise DecodeError(f"IntRange code {_int_array(code).ravel()[int(np.flatnonzero(~ok.ravel())[0])]} "
                          f"outside 0..{int(hi) - int(lo)}")
    c = _int_array(code)
    return np.asarray(np.vectorize(lambda t: t + int(lo), otypes=[object])(c) if c.ndim else
                      c[()] + int(lo)).astype(np.int64)


def intrange_valid(code, lo, hi):
    """``0 <= code <= hi - lo``."""
    return _in_range(code, 0, int(hi) - int(lo))


# ----------------------------------------------------------------------------------------------
# composites: NearlyZero, Vector
# ----------------------------------------------------------------------------------------------

def nearly_zero_quantize(x, threshold, inner_quantize, vector=False):
    """NearlyZero: codes ``(..., 1 + k)`` with the flag in column 0 (``k = 1`` for a scalar inner).

    The flag is 0 when ``|x| <= threshold`` (for a vector, every component), and the inner code is
    then all zeros; otherwise the flag is 1 and the inner code is ``inner_quantize(x)``. NaN is not
    ``<= threshold``, so it is sent through ``inner``.
    """
    threshold = _check_finite("threshold", threshold)
    if not threshold >= 0:
        raise SchemaError(f"threshold must be >= 0, got {threshold!r}")
    x = _f64(x)
    small = np.abs(x) <= threshold
    if vector:
        small = small.all(axis=-1)
    inner = np.asarray(inner_quantize(x))
    if not vector:
        inner = inner[..., None]
    flag = (~small).astype(inner.dtype)
    inner = np.where(small[..., None], inner.dtype.type(0), inner)
    return np.concatenate([flag[..., None], inner], axis=-1)


def nearly_zero_dequantize(code, inner_dequantize, vector=False):
    """Flag 0 -> exactly ``0.0`` (every component); flag 1 -> ``inner_dequantize(inner_code)``.
    A flag other than 0/1, or flag 0 with a non-zero inner code, raises ``DecodeError``."""
    c = np.asarray(code)
    flag, inner = c[..., 0], c[..., 1:]
    if not np.isin(flag, (0, 1)).all():
        raise DecodeError("NearlyZero flag must be 0 or 1")
    if ((flag == 0)[..., None] & (inner != 0)).any():
        raise DecodeError("NearlyZero: flag 0 with a non-zero inner code")
    val = np.asarray(inner_dequantize(inner if vector else inner[..., 0]), dtype=np.float64)
    zero = flag == 0
    if vector:
        return np.where(zero[..., None], 0.0, val)
    return np.where(zero, 0.0, val)


def nearly_zero_valid(code, inner_valid, vector=False):
    """Flag 0 with an all-zero inner code, or flag 1 with a valid inner code."""
    c = _int_array(code)
    flag, inner = c[..., 0], c[..., 1:]
    f0 = _in_range(flag, 0, 0)
    f1 = _in_range(flag, 1, 1)
    zeros = np.array([v == 0 for v in inner.ravel()], dtype=bool).reshape(inner.shape).all(axis=-1)
    iv = np.asarray(inner_valid(inner if vector else inner[..., 0]), dtype=bool)
    if vector:
        iv = iv.all(axis=-1)
    return (f0 & zeros) | (f1 & iv)


def vector_quantize(x, quantizers):
    """Componentwise: ``x[..., i]`` through ``quantizers[i]``; codes ``(..., k)``. int64 if any
    component is signed, else uint64."""
    x = _f64(x)
    if x.shape[-1:] != (len(quantizers),):
        raise ValueError(f"expected shape (..., {len(quantizers)}), got {x.shape}")
    cols = [np.asarray(f(x[..., i])) for i, f in enumerate(quantizers)]
    dt = np.int64 if any(c.dtype.kind == "i" for c in cols) else np.uint64
    return np.stack([c.astype(dt) for c in cols], axis=-1)


def vector_dequantize(code, dequantizers):
    """Componentwise decode; values ``(..., k)`` float64."""
    c = np.asarray(code)
    return np.stack([np.asarray(f(c[..., i]), dtype=np.float64) for i, f in enumerate(dequantizers)], axis=-1)


def vector_valid(code, validators):
    """Every component valid."""
    c = _int_array(code)
    ok = np.ones(c.shape[:-1], dtype=bool)
    for i, f in enumerate(validators):
        ok &= np.asarray(f(c[..., i]), dtype=bool)
    return ok
