"""The value codecs: Python objects whose per-value and array calls run the inline C rules of
`_kernels.pxd`.

Every codec is immutable, hashable, comparable by parameters, picklable and has a `spec()` dict
that `codec_from_spec` turns back into an equal codec.
"""

cimport cython
from cpython.float cimport PyFloat_AS_DOUBLE
from libc.stdint cimport uint64_t, int64_t, uint32_t, int32_t
from libc.math cimport isfinite, atan2, sqrt, pow as c_pow

from quantcodec._kernels cimport *
from quantcodec._arrays cimport (
    buf_pair, pair_acquire, pair_release, check_out, code_input, float_input, dq_array, multi_dq_array,
    multi_q_array, multi_rt_array, q_array, rt_array,
)

import math
import operator

import numpy as np

from .errors import DecodeError, RangeError, SchemaError
# The array loops in use (docs/index.md names quantcodec._codecs._simd()): chosen in _arrays
from ._arrays import _simd, _simd_available, _simd_select
from ._params import (
    bits_for, budget, fewest_bits, fixed_cover, float_param, grid_for, int_param, signed_option, unit_text,
)

__all__ = [
    "Codec", "Bounded", "Fixed", "Angle", "PowerCurve", "Half", "UInt", "Int", "Bool", "Enum",
    "Quat", "UnitVector", "Vector", "Grid", "NearlyZero", "IntRange", "codec_from_spec", "bits_for",
]

_U32 = np.dtype(np.uint32)
_U64 = np.dtype(np.uint64)
_I32 = np.dtype(np.int32)
_I64 = np.dtype(np.int64)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_BOOL = np.dtype(np.bool_)


cdef str _fmt(object v):
    return repr(v)


# ------------------------------------------------------------------------------------------------
# Array calls: the inputs and the dispatch are _arrays.pyx's; here the dtype codes it takes.

cdef inline int _ctype(object dt):
    if dt == _U32:
        return 0
    if dt == _U64:
        return 1
    if dt == _I32:
        return 2
    return 3


cdef inline int _xt(object a):
    return 0 if a.dtype.itemsize == 4 else 1


cdef inline str _row(tuple shape, Py_ssize_t flat):
    if len(shape) <= 1:
        return f"row {flat}"
    return f"row {np.unravel_index(flat, shape)}"


cdef object _at_row(object exc, Py_ssize_t flat):
    """`exc` with attribute ``row``: the flat index of the element it concerns (a schema names
    the entity of that row)."""
    exc.row = flat
    return exc


# ------------------------------------------------------------------------------------------------
# The base class.

cdef class Codec:
    """Base class of every codec. Not constructed directly."""

    def __init__(self, *args, **kwargs):
        raise TypeError("Codec is an abstract base class; use Bounded, Quat, ...")

    @property
    def kind(self):
        return self._key[0]

    @property
    def code_dtype(self):
        """NumPy dtype of array codes."""
        return self._code_dtype

    @property
    def ncomp(self):
        """Floats per value: 1 for scalars, 3 for UnitVector, 4 for Quat, k for a Vector of k."""
        return self.ncomp

    def __eq__(self, other):
        if not isinstance(other, Codec):
            return NotImplemented
        return type(self) is type(other) and self._key == (<Codec>other)._key

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self):
        return hash(self._key)

    def __reduce__(self):
        return (codec_from_spec, (self.spec(),))

    def __repr__(self):
        s = self.spec()
        kind = s.pop("kind")
        return f"{kind}({', '.join(f'{k}={_fmt(v)}' for k, v in s.items())})"

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


cdef inline void _init_desc(Codec c, int kind, int bits):
    c.d.kind = kind
    c.d.bits = bits
    c.bits = bits
    c.d.maxcode = (~(<uint64_t>0)) if bits >= 64 else ((<uint64_t>1 << bits) - 1)


cdef object _udtype(int bits):
    return _U32 if bits <= 32 else _U64


# ------------------------------------------------------------------------------------------------
# Float scalars.

cdef class _FloatScalar(Codec):
    """Shared per-value and array paths of the float scalar codecs."""

    def __init__(self, *args, **kwargs):
        raise TypeError("_FloatScalar is abstract")

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def quantize(self, x, out=None):
        """Value(s) -> integer code(s): a Python int for one number, an array for an array."""
        cdef Py_ssize_t nc = 0
        cdef uint64_t c
        if out is None:
            if type(x) is float:
                c = scalar_q(&self.d, PyFloat_AS_DOUBLE(x), &nc)
                return self._code_obj(c)
            if _is_number(x):
                c = scalar_q(&self.d, _as_double(x), &nc)
                return self._code_obj(c)
        return self._q_array(x, out)[0]

    cdef object _code_obj(self, uint64_t c):
        if qdesc_signed(&self.d):
            return <int64_t>c
        return c

    def _quantize_count(self, x, out=None):
        """Quantize an array and also return how many values were clamped (for schemas)."""
        return self._q_array(x, out)

    cdef tuple _q_array(self, x, out):
        cdef buf_pair b
        cdef Py_ssize_t n, nc = 0
        cdef int xt, ct
        a = float_input(x, type(self).__name__ + ".quantize")
        if out is None:
            out = np.empty(a.shape, dtype=self._code_dtype)
        else:
            check_out(out, a.shape, (self._code_dtype,), type(self).__name__ + ".quantize")
        n = a.size
        if n == 0:
            return out, 0
        xt = _xt(a)
        ct = _ctype(self._code_dtype)
        pair_acquire(&b, a, out)
        try:
            with nogil:
                nc = q_array(&self.d, b.src.buf, xt, 1, b.dst.buf, ct, 1, n)
        finally:
            pair_release(&b)
        return out, nc

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def dequantize(self, code, out=None):
        """Code(s) -> value(s). A code that is not valid raises DecodeError."""
        cdef uint64_t c
        if out is None and type(code) is int and not qdesc_signed(&self.d):
            if 0 <= code <= 0xFFFFFFFFFFFFFFFF:
                c = code
                if scalar_valid(&self.d, c):
                    return scalar_dq(&self.d, c)
        if out is None and _is_int(code):
            c = self._check_code(code)
            return scalar_dq(&self.d, c)
        return self._dq_array(code, out)

    cdef uint64_t _check_code(self, object code) except? 0:
        cdef object ic = int(code)
        if not _valid_int(self, ic):
            raise DecodeError(f"{self!r}: code {ic} is not a valid code")
        return <uint64_t>(ic & 0xFFFFFFFFFFFFFFFF)

    cdef object _dq_array(self, code, out):
        cdef buf_pair b
        cdef Py_ssize_t n, bad
        cdef int ct, ot
        owner = type(self).__name__ + ".dequantize"
        a = code_input(code, self._code_dtype, owner)
        if out is None:
            out = np.empty(a.shape, dtype=_F64)
        else:
            check_out(out, a.shape, (_F64, _F32), owner)
        n = a.size
        if n == 0:
            return out
        ct = _ctype(self._code_dtype)
        ot = 0 if out.dtype == _F32 else 1
        pair_acquire(&b, a, out)
        try:
            with nogil:
                bad = dq_array(&self.d, b.src.buf, ct, 1, b.dst.buf, ot, 1, n)
        finally:
            pair_release(&b)
        if bad >= 0:
            raise DecodeError(f"{owner}: {_row(a.shape, bad)}: code {a.ravel()[bad]} is not a valid code of {self!r}")
        return out

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def roundtrip(self, x, out=None):
        """dequantize(quantize(x)): what the receiver will see."""
        cdef Py_ssize_t nc = 0
        cdef buf_pair b
        cdef Py_ssize_t n
        cdef int xt, ot
        if out is None:
            if type(x) is float:
                return scalar_dq(&self.d, scalar_q(&self.d, PyFloat_AS_DOUBLE(x), &nc))
            if _is_number(x):
                return scalar_dq(&self.d, scalar_q(&self.d, _as_double(x), &nc))
        owner = type(self).__name__ + ".roundtrip"
        a = float_input(x, owner)
        if out is None:
            out = np.empty(a.shape, dtype=_F64)
        else:
            check_out(out, a.shape, (_F64, _F32), owner)
        n = a.size
        if n == 0:
            return out
        xt = _xt(a)
        ot = 0 if out.dtype == _F32 else 1
        pair_acquire(&b, a, out)
        try:
            with nogil:
                rt_array(&self.d, b.src.buf, xt, 1, b.dst.buf, ot, 1, n)
        finally:
            pair_release(&b)
        return out

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def valid(self, code):
        """Whether `code` is one that quantize can produce: a bool, or a bool array."""
        return _valid(self, code)

    @property
    def step(self):
        return self._step()

    @property
    def max_error(self):
        return self._step() / 2.0


cdef inline bint _is_number(object x):
    return isinstance(x, (float, int, np.floating, np.integer)) and not isinstance(x, (bool, np.bool_)) \
        or isinstance(x, (bool, np.bool_))


cdef inline bint _is_int(object x):
    return isinstance(x, (int, np.integer))


cdef double _as_double(object x) except? -1.0:
    try:
        return float(x)
    except OverflowError:
        return float("inf") if x > 0 else float("-inf")


cdef bint _valid_int(Codec c, object ic):
    """Validity of one Python int code of a scalar codec (any size, never raises)."""
    if qdesc_signed(&c.d):
        return c.d.smin <= ic <= c.d.smax
    if ic < 0 or ic > c.d.maxcode:
        return False
    if c.d.kind == K_QUAT:
        return quat_valid(&c.d, <uint64_t>ic)
    return scalar_valid(&c.d, <uint64_t>ic)


cdef object _valid(Codec c, object code):
    cdef Py_ssize_t n
    cdef object res
    if _is_int(code) and not isinstance(code, (bool, np.bool_)):
        return _valid_int(c, int(code))
    if isinstance(code, (bool, np.bool_)):
        return _valid_int(c, int(code))
    if not isinstance(code, (np.ndarray, list, tuple)):
        return False
    a = np.asarray(code)
    if a.dtype.kind not in 'iub':
        if a.dtype == object or a.size == 0:
            return np.array([_valid(c, v) for v in a.ravel()], dtype=bool).reshape(a.shape)
        raise TypeError(f"{type(c).__name__}.valid: codes must be integers, got dtype {a.dtype}")
    signed = qdesc_signed(&c.d)
    if signed:
        return (a >= c.d.smin) & (a <= c.d.smax)
    ok = (a >= 0) & (a <= c.d.maxcode)
    if c.d.kind in (K_POWER, K_QUAT, K_ENUM):
        u64 = np.ascontiguousarray(np.where(ok, a, 0).astype(_U64).ravel())
        n = u64.shape[0]
        res = np.empty(n, dtype=_BOOL)
        if n:
            _valid_loop(&c.d, u64, res, n)
        ok &= res.reshape(a.shape)
    return ok


cdef int _valid_loop(const qdesc* d, object codes, object out, Py_ssize_t n) except -1:
    cdef buf_pair b
    cdef Py_ssize_t i
    cdef const uint64_t* u
    cdef unsigned char* o
    pair_acquire(&b, codes, out)
    try:
        u = <const uint64_t*>b.src.buf
        o = <unsigned char*>b.dst.buf
        with nogil:
            for i in range(n):
                if d.kind == K_QUAT:
                    o[i] = quat_valid(d, u[i])
                else:
                    o[i] = scalar_valid(d, u[i])
    finally:
        pair_release(&b)
    return 0


# The Bounded modes (also Quat's): the kernel constant and the number of intervals L.
_MODES = {"endpoints": M_ENDPOINTS, "bins": M_BINS, "midpoint": M_MIDPOINT}


def _mode_L(str mode, int b):
    """L of the Bounded rule: 2**b - 1 (endpoints), 2**b (bins), 2**b - 2 (midpoint, even)."""
    if mode == "bins":
        return 2.0 ** b
    if mode == "midpoint":
        return 2.0 ** b - 2.0
    return 2.0 ** b - 1.0


cdef class Bounded(_FloatScalar):
    """Bounded(min, max, bits, *, mode='endpoints')

    A float known to lie in [min, max], quantized to `bits` bits.

    mode="endpoints": codes 0 and 2**bits - 1 decode to exactly min and max, step R / (2**bits - 1).
    mode="bins": 2**bits equal bins decoded at their centres, step R / 2**bits.
    mode="midpoint": as endpoints with 2**bits - 2 intervals (bits >= 2): the middle code decodes to
    exactly (min + max) / 2, step R / (2**bits - 2); the code 2**bits - 1 is not valid.
    """
    cdef readonly double min, max
    cdef readonly str mode

    @cython.embedsignature(False)       # (the docstring's: Cython's misplaces keyword-only parameters)
    def __init__(self, min, max, bits, *, mode="endpoints"):
        lo = float_param("Bounded", "min", min)
        hi = float_param("Bounded", "max", max)
        b = int_param("Bounded", "bits", bits, 1, 32)
        if not lo < hi:
            raise SchemaError(f"Bounded: min must be less than max, got min={lo!r}, max={hi!r}")
        if not math.isfinite(hi - lo):
            raise SchemaError(f"Bounded: the range max - min overflows, got min={lo!r}, max={hi!r}")
        if mode not in ("endpoints", "bins", "midpoint"):
            raise SchemaError(f"Bounded: mode must be 'endpoints', 'bins' or 'midpoint', got {mode!r}")
        if mode == "midpoint" and b < 2:
            raise SchemaError(f"Bounded: mode='midpoint' needs bits >= 2 (2**bits - 2 intervals), got bits={b}")
        if not math.isfinite((hi - lo) * 2.0 ** b):
            # Decoding computes code * R (endpoints) or (code + 0.5) * R (bins) before dividing
            # by L: below R * 2**bits, so finite for every valid code when that is.
            raise SchemaError(f"Bounded: the range max - min times 2**bits overflows (valid codes would decode "
                              f"to inf), got min={lo!r}, max={hi!r}, bits={b}")
        _init_desc(self, K_BOUNDED, b)
        self.d.mode = _MODES[mode]
        self.d.lo = lo
        self.d.hi = hi
        self.d.R = hi - lo
        self.d.L = _mode_L(mode, b)
        if mode == "midpoint":
            self.d.maxcode = (<uint64_t>1 << b) - 2     # 2**bits - 1 is not a level
        self.min = lo
        self.max = hi
        self.mode = mode
        self._code_dtype = _U32
        self.group = F_FLOAT
        self.ncomp = 1
        self._key = ("Bounded", lo, hi, b, mode)

    def spec(self):
        return {"kind": "Bounded", "min": self.min, "max": self.max, "bits": self.bits, "mode": self.mode}

    def _step(self):
        return self.d.R / self.d.L

    @classmethod
    def for_step(cls, min, max, step, *, mode="endpoints"):
        """The Bounded codec with the fewest bits whose step is at most `step`."""
        st = float_param("Bounded.for_step", "step", step)
        if st <= 0:
            raise SchemaError(f"Bounded.for_step: step must be positive, got {st!r}")
        return cls._fewest(min, max, st, mode, "step", "Bounded.for_step")

    @classmethod
    def for_error(cls, min, max, max_error, *, mode="endpoints"):
        """The Bounded codec with the fewest bits whose max_error is at most `max_error`."""
        e = float_param("Bounded.for_error", "max_error", max_error)
        if e <= 0:
            raise SchemaError(f"Bounded.for_error: max_error must be positive, got {e!r}")
        return cls._fewest(min, max, e, mode, "max_error", "Bounded.for_error")

    @classmethod
    def _fewest(cls, min, max, target, mode, attr, owner):
        first = 2 if mode == "midpoint" else 1      # midpoint needs 2 intervals at least
        probe = cls(min, max, first, mode=mode)
        for b in range(first, 33):
            try:
                c = cls(min, max, b, mode=mode)
            except SchemaError:
                # (min, max and mode passed with the probe: only the range's limit on bits is left)
                raise SchemaError(f"{owner}: {attr} {target!r} over [{probe.min!r}, {probe.max!r}] needs more than "
                                  f"{b - 1} bits, and the range times 2**{b} overflows") from None
            if getattr(c, attr) <= target:
                return c
        raise SchemaError(f"{owner}: {attr} {target!r} over [{probe.min!r}, {probe.max!r}] needs more than 32 bits")


cdef class Fixed(_FloatScalar):
    """Fixed(step, bits, *, signed=True, offset=0.0)

    Fixed point with an explicit resolution: code = round_half_away((x - offset) / step), clamped."""
    cdef readonly double offset
    cdef bint _signed
    cdef double _stepv

    @cython.embedsignature(False)       # (the docstring's: Cython's misplaces keyword-only parameters)
    def __init__(self, step, bits, *, offset=0.0, **options):
        # `signed` is a C keyword to Cython, so it arrives through **options.
        signed = signed_option("Fixed", options, True)
        st = float_param("Fixed", "step", step)
        if st <= 0:
            raise SchemaError(f"Fixed: step must be positive, got {st!r}")
        b = int_param("Fixed", "bits", bits, 1, 64)
        off = float_param("Fixed", "offset", offset)
        if not isinstance(signed, (bool, np.bool_)):
            raise SchemaError(f"Fixed: signed must be True or False, got {signed!r}")
        # Every valid code must decode to a finite value: offset + code * step, as the kernel
        # computes it (the code converted to a double), is monotonic in the code, so the end
        # codes decide.
        for ec in ((-(1 << (b - 1)), (1 << (b - 1)) - 1) if signed else (0, (1 << b) - 1)):
            if not math.isfinite(off + float(ec) * st):
                raise SchemaError(f"Fixed: code {ec} would decode to a non-finite value (offset + code * step "
                                  f"overflows), got step={st!r}, bits={b}, offset={off!r}")
        _init_desc(self, K_FIXED, b)
        self.d.mode = 1 if signed else 0
        self.d.lo = off
        self.d.hi = st
        if signed:
            self.d.smin = -(1 << (b - 1))
            self.d.smax = (1 << (b - 1)) - 1
            self.d.fmin = -(2.0 ** (b - 1))
            self.d.fmax = 2.0 ** (b - 1)
            self._code_dtype = _I32 if b <= 32 else _I64
        else:
            self.d.smin = 0
            self.d.smax = ((1 << b) - 1) if b < 64 else ((1 << 63) - 1)
            self.d.fmin = 0.0
            self.d.fmax = 2.0 ** b
            self._code_dtype = _udtype(b)
        self._stepv = st
        self.offset = off
        self._signed = bool(signed)
        self.group = F_FLOAT
        self.ncomp = 1
        self._key = ("Fixed", st, b, bool(signed), off)

    @property
    def signed(self):
        return self._signed

    @property
    def step_size(self):
        return self._stepv

    def spec(self):
        return {"kind": "Fixed", "step": self._stepv, "bits": self.bits, "signed": self._signed, "offset": self.offset}

    def _step(self):
        return self._stepv

    @classmethod
    def for_step(cls, min, max, step, *, offset=0.0, **options):
        """The Fixed codec of resolution `step` with the fewest bits whose codes cover [min, max]
        (every value in it lies between the decoded values of the end codes, so none clamps).
        `signed` (keyword) defaults to the fewer bits: unsigned when min >= offset, else signed."""
        st = budget("Fixed.for_step", "step", step)
        return fixed_cover(cls, "Fixed.for_step", "step", st, st, min, max, offset, options)

    @classmethod
    def for_error(cls, min, max, max_error, *, offset=0.0, **options):
        """The Fixed codec whose max_error (half its step) is `max_error`, with the fewest bits
        that cover [min, max]; as `for_step(min, max, 2 * max_error)`."""
        e = budget("Fixed.for_error", "max_error", max_error)
        if not math.isfinite(2.0 * e):
            raise SchemaError(f"Fixed.for_error: max_error must be below half the largest float, got {e!r}")
        return fixed_cover(cls, "Fixed.for_error", "max_error", e, 2.0 * e, min, max, offset, options)


cdef class Angle(_FloatScalar):
    """Angle(bits, *, signed=False, unit='rad')

    An angle with wraparound: 2**bits steps around the circle, decoded in [0, full_turn), or in
    [-half_turn, half_turn) with signed=True. `unit` ("rad" or "deg") and `signed` are
    keyword-only: ``Angle(16, unit="deg")``."""
    cdef bint _signed
    cdef readonly str unit

    # (the signature is written in the docstring: Cython's embedded one misplaces keyword-only
    # parameters, and **options stands for `signed`, a C keyword to Cython)
    @cython.embedsignature(False)
    def __init__(self, bits, *args, unit="rad", **options):
        if args:
            raise TypeError(f"Angle() takes one positional argument, bits; unit and signed are keyword-only: "
                            f"Angle({bits!r}, unit={args[0]!r})" if isinstance(args[0], str) else
                            f"Angle() takes one positional argument, bits; unit and signed are keyword-only "
                            f"(got {len(args) + 1} positional arguments)")
        signed = signed_option("Angle", options, False)
        b = int_param("Angle", "bits", bits, 1, 32)
        if unit not in ("rad", "deg"):
            raise SchemaError(f"Angle: unit must be 'rad' or 'deg', got {unit!r}")
        if not isinstance(signed, (bool, np.bool_)):
            raise SchemaError(f"Angle: signed must be True or False, got {signed!r}")
        _init_desc(self, K_ANGLE, b)
        self.d.mode = 1 if signed else 0
        self.d.lo = 2.0 * math.pi if unit == "rad" else 360.0
        self.d.hi = self.d.lo / 2.0
        self.d.L = 2.0 ** b
        self._signed = bool(signed)
        self.unit = unit
        self._code_dtype = _U32
        self.group = F_FLOAT
        self.ncomp = 1
        self._key = ("Angle", b, bool(signed), unit)

    @property
    def signed(self):
        return self._signed

    def spec(self):
        return {"kind": "Angle", "bits": self.bits, "signed": self._signed, "unit": self.unit}

    def _step(self):
        return self.d.lo / self.d.L

    @classmethod
    def for_step(cls, step, *, unit="rad", **options):
        """The Angle with the fewest bits (1..32) whose step, full_turn / 2**bits, is at most
        `step` (in `unit`). `signed` passes through to the constructor."""
        st = budget("Angle.for_step", "step", step)
        return fewest_bits("Angle.for_step", "step", st, lambda b: cls(b, unit=unit, **options), 1, 32,
                            unit_text(unit))

    @classmethod
    def for_error(cls, max_error, *, unit="rad", **options):
        """The Angle with the fewest bits (1..32) whose max_error, half a step around the circle,
        is at most `max_error` (in `unit`). `signed` passes through to the constructor."""
        e = budget("Angle.for_error", "max_error", max_error)
        return fewest_bits("Angle.for_error", "max_error", e, lambda b: cls(b, unit=unit, **options), 1, 32,
                            unit_text(unit))


cdef class PowerCurve(_FloatScalar):
    """A signed float on a power-law curve: sign bit plus a (bits-1)-bit magnitude."""
    cdef readonly double max
    cdef readonly double pow

    def __init__(self, max, pow, bits):
        m = float_param("PowerCurve", "max", max)
        p = float_param("PowerCurve", "pow", pow)
        b = int_param("PowerCurve", "bits", bits, 2, 32)
        if m <= 0:
            raise SchemaError(f"PowerCurve: max must be positive, got {m!r}")
        if p < 1:
            raise SchemaError(f"PowerCurve: pow must be at least 1, got {p!r}")
        _init_desc(self, K_POWER, b)
        self.d.lo = m
        self.d.hi = p
        self.d.R = 1.0 / p
        self.d.L = 2.0 ** (b - 1) - 1.0
        self.max = m
        self.pow = p
        self._code_dtype = _U32
        self.group = F_FLOAT
        self.ncomp = 1
        self._key = ("PowerCurve", m, p, b)

    def spec(self):
        return {"kind": "PowerCurve", "max": self.max, "pow": self.pow, "bits": self.bits}

    def _step(self):
        L = self.d.L
        return self.max * (1.0 - ((L - 1.0) / L) ** self.pow)

    @property
    def max_error(self):
        L = self.d.L
        return self.max * (1.0 - ((L - 0.5) / L) ** self.pow)

    @classmethod
    def for_error(cls, max, pow, max_error):
        """The PowerCurve over +-`max` with exponent `pow` and the fewest bits (2..32) whose
        max_error (the true worst error, at the top of the range) is at most `max_error`. (No
        for_step: the step is not uniform; `step` is the coarsest one, at the top.)"""
        e = budget("PowerCurve.for_error", "max_error", max_error)
        return fewest_bits("PowerCurve.for_error", "max_error", e, lambda b: cls(max, pow, b), 2, 32, "")


cdef class Half(_FloatScalar):
    """IEEE 754 binary16, bit-identical to NumPy's float16 conversion."""

    def __init__(self):
        _init_desc(self, K_HALF, 16)
        self._code_dtype = _U32
        self.group = F_FLOAT
        self.ncomp = 1
        self._key = ("Half",)

    def spec(self):
        return {"kind": "Half"}

    def _step(self):
        return 32.0   # the gap between the two largest finite halves (65472, 65504)


cdef class Grid(_FloatScalar):
    """A coordinate in a large world: a signed cell index plus a bins-rule offset inside the cell.

    The error is at most max_error (cell_size / 2**offset_bits / 2) plus the decode's rounding,
    under 1.5 ulps of the coordinate: the bound holds (to within 10%) where the step
    cell_size / 2**offset_bits is at least 8 ulps of the largest coordinate encoded, and fails
    where the step is finer than the doubles there (docs/codecs.md, Grid)."""
    cdef readonly double cell_size
    cdef readonly int cell_bits, offset_bits

    def __init__(self, cell_size, cell_bits, offset_bits):
        cs = float_param("Grid", "cell_size", cell_size)
        if cs <= 0:
            raise SchemaError(f"Grid: cell_size must be positive, got {cs!r}")
        cb = int_param("Grid", "cell_bits", cell_bits, 1, 63)
        ob = int_param("Grid", "offset_bits", offset_bits, 1, 63)
        if cb + ob > 64:
            raise SchemaError(f"Grid: cell_bits + offset_bits must be at most 64, got {cb} + {ob} = {cb + ob}")
        # Every valid code must decode to a finite value: (cell + (offset + 0.5) / 2**offset_bits)
        # * cell_size, as the kernel computes it, is monotonic in the code, so the end codes decide.
        for ecell, eoff in ((-(1 << (cb - 1)), 0), ((1 << (cb - 1)) - 1, (1 << ob) - 1)):
            if not math.isfinite((float(ecell) + (float(eoff) + 0.5) / 2.0 ** ob) * cs):
                raise SchemaError(f"Grid: cell_size * 2**(cell_bits - 1) overflows (cell {ecell} would decode to a "
                                  f"non-finite value), got cell_size={cs!r}, cell_bits={cb}, offset_bits={ob}")
        _init_desc(self, K_GRID, cb + ob)
        self.d.cbits = ob
        self.d.lo = cs
        self.d.L = 2.0 ** ob
        self.d.smin = -(1 << (cb - 1))
        self.d.smax = (1 << (cb - 1)) - 1
        self.d.fmin = -(2.0 ** (cb - 1))
        self.d.fmax = 2.0 ** (cb - 1)
        self.cell_size = cs
        self.cell_bits = cb
        self.offset_bits = ob
        self._code_dtype = _udtype(cb + ob)
        self.group = F_FLOAT
        self.ncomp = 1
        self._key = ("Grid", cs, cb, ob)

    def spec(self):
        return {"kind": "Grid", "cell_size": self.cell_size, "cell_bits": self.cell_bits, "offset_bits": self.offset_bits}

    def _step(self):
        return self.cell_size / self.d.L

    @classmethod
    def for_step(cls, extent, step, *, cell_size):
        """The Grid of `cell_size` cells with the fewest offset bits whose step is at most `step`
        and the fewest cell bits that cover [-extent, extent] without a clamp
        (cell_size * 2**(cell_bits - 1) > extent)."""
        st = budget("Grid.for_step", "step", step)
        return grid_for(cls, "Grid.for_step", "step", st, extent, cell_size)

    @classmethod
    def for_error(cls, extent, max_error, *, cell_size):
        """As `for_step`, for a max_error (half the step) of at most `max_error`."""
        e = budget("Grid.for_error", "max_error", max_error)
        return grid_for(cls, "Grid.for_error", "max_error", e, extent, cell_size)


# ------------------------------------------------------------------------------------------------
# Exact scalars: never clamped, a value that does not fit raises RangeError.

cdef object _exact_floats(object a):
    """A float array given to an exact codec, in double precision (SPEC section 0): float16 and
    float32 are widened (exactly) before any comparison with the codec's bounds. Compared in their
    own precision, the bounds would be rounded to it (NumPy compares a float32 array with a Python
    number in float32): Int(32)'s 2**31 - 1 becomes 2**31, and 2**31 itself would pass as in range."""
    if a.dtype.itemsize < 8:
        return a.astype(_F64)
    return a


cdef class _ExactScalar(Codec):

    def __init__(self, *args, **kwargs):
        raise TypeError("_ExactScalar is abstract")

    cdef object _to_int(self, object x):
        """One value -> its int code, or RangeError/TypeError."""
        if isinstance(x, (bool, np.bool_)):
            if self.d.kind != K_BOOL:
                # (True is a Python int, but a health or a count of True is a bug: as Enum)
                raise TypeError(f"{type(self).__name__}: expected an integer, got bool ({x!r})")
            v = int(x)
        elif isinstance(x, (int, np.integer)):
            v = int(x)
        elif isinstance(x, (float, np.floating)):
            fv = float(x)
            if not fv.is_integer():
                raise RangeError(f"{self!r}: {fv!r} is not an integer")
            v = int(fv)
        else:
            raise TypeError(f"{type(self).__name__}: expected an integer, got {type(x).__name__}")
        if not _valid_int(self, v):
            raise RangeError(f"{self!r}: value {v} outside {self._lo()}..{self._hi()}")
        return v

    cdef object _lo(self):
        return self.d.smin if self.d.kind == K_INT else 0

    cdef object _hi(self):
        return self.d.smax if self.d.kind == K_INT else self.d.maxcode

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def quantize(self, x, out=None):
        if out is None and not isinstance(x, (np.ndarray, list, tuple)):
            return self._to_int(x)
        return self._q_array(x, out)

    def _quantize_count(self, x, out=None):
        return self._q_array(x, out), 0

    cdef object _q_array(self, x, out):
        owner = type(self).__name__ + ".quantize"
        a = x if isinstance(x, np.ndarray) else np.asarray(x)
        k = a.dtype.kind
        if k == 'f':
            a = _exact_floats(a)
            bad = ~np.isfinite(a) | (a != np.trunc(a))
            if bad.any():
                i = int(np.flatnonzero(bad.ravel())[0])
                raise _at_row(RangeError(f"{owner}: {_row(a.shape, i)}: {a.ravel()[i].item()!r} is not an integer"), i)
        elif k not in 'iub':
            raise TypeError(f"{owner}: expected an integer array, got dtype {a.dtype}")
        elif k == 'b':
            if self.d.kind != K_BOOL:
                raise TypeError(f"{owner}: expected an integer array, got dtype bool")
            a = a.astype(np.uint8)      # (NumPy cannot compare a bool array with 2**64 - 1)
            k = 'u'
        if a.size:
            lo, hi = self._lo(), self._hi()
            if k == 'f':
                # float(hi) may round up (2**64 - 1 -> 2**64): then reaching it is already out of range
                badm = (a < float(lo)) | ((a >= float(hi)) if float(hi) > hi else (a > float(hi)))
            else:
                badm = (a < lo) | (a > hi)
            if badm.any():
                i = int(np.flatnonzero(badm.ravel())[0])
                raise _at_row(RangeError(f"{owner}: {_row(a.shape, i)}: value {a.ravel()[i]} outside {lo}..{hi}"), i)
        if out is None:
            # (np.ascontiguousarray makes a 0-d array 1-d: reshape keeps the input's shape)
            return np.ascontiguousarray(a, dtype=self._code_dtype).reshape(a.shape)
        check_out(out, a.shape, (self._code_dtype,), owner)
        np.copyto(out, a, casting="unsafe")
        return out

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def dequantize(self, code, out=None):
        if out is None and _is_int(code):
            ic = int(code)
            if not _valid_int(self, ic):
                raise DecodeError(f"{self!r}: code {ic} is not a valid code")
            return self._value(ic)
        owner = type(self).__name__ + ".dequantize"
        a = code_input(code, self._code_dtype, owner)
        ok = _valid(self, a)
        if not np.all(ok):
            i = int(np.flatnonzero(~np.asarray(ok).ravel())[0])
            raise DecodeError(f"{owner}: {_row(a.shape, i)}: code {a.ravel()[i]} is not a valid code of {self!r}")
        vdt = self._value_dtype()
        if out is None:
            return a.astype(vdt)
        check_out(out, a.shape, (vdt,), owner)
        np.copyto(out, a, casting="unsafe")
        return out

    cdef object _value(self, object ic):
        return ic

    cdef object _value_dtype(self):
        return self._code_dtype

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def roundtrip(self, x, out=None):
        if out is None and not isinstance(x, (np.ndarray, list, tuple)):
            return self._value(self._to_int(x))
        codes = self._q_array(x, None)
        return self.dequantize(codes, out)

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def valid(self, code):
        return _valid(self, code)

    @property
    def step(self):
        return 1

    @property
    def max_error(self):
        return 0.0


cdef class UInt(_ExactScalar):
    """An unsigned integer of `bits` bits, 0 .. 2**bits - 1."""

    def __init__(self, bits):
        b = int_param("UInt", "bits", bits, 1, 64)
        _init_desc(self, K_UINT, b)
        self._code_dtype = _udtype(b)
        self.group = F_EXACT
        self.ncomp = 1
        self._key = ("UInt", b)

    def spec(self):
        return {"kind": "UInt", "bits": self.bits}


cdef class Int(_ExactScalar):
    """A two's complement integer of `bits` bits."""

    def __init__(self, bits):
        b = int_param("Int", "bits", bits, 1, 64)
        _init_desc(self, K_INT, b)
        self.d.smin = -(1 << (b - 1))
        self.d.smax = (1 << (b - 1)) - 1
        self._code_dtype = _I32 if b <= 32 else _I64
        self.group = F_EXACT
        self.ncomp = 1
        self._key = ("Int", b)

    def spec(self):
        return {"kind": "Int", "bits": self.bits}


cdef class Bool(_ExactScalar):
    """One bit; decodes to True / False."""

    def __init__(self):
        _init_desc(self, K_BOOL, 1)
        self._code_dtype = _U32
        self.group = F_EXACT
        self.ncomp = 1
        self._key = ("Bool",)

    def spec(self):
        return {"kind": "Bool"}

    cdef object _value(self, object ic):
        return bool(ic)

    cdef object _value_dtype(self):
        return _BOOL

    def __repr__(self):
        return "Bool()"


cdef class Enum(_ExactScalar):
    """One of n variants: Enum(["idle", "walk"]) or Enum(5); ceil(log2(n)) bits."""
    cdef readonly object labels
    cdef readonly long long n     # up to 2**32 variants (32-bit codes): more than an int holds
    cdef dict _index

    def __init__(self, labels_or_count):
        if isinstance(labels_or_count, (int, np.integer)) and not isinstance(labels_or_count, bool):
            n = int_param("Enum", "count", labels_or_count, 1, 1 << 32)
            labels = None
        elif isinstance(labels_or_count, (list, tuple)):
            labels = tuple(labels_or_count)
            n = len(labels)
            if n == 0:
                raise SchemaError("Enum: labels must not be empty")
            for l in labels:
                if not isinstance(l, str):
                    raise SchemaError(f"Enum: labels must be strings, got {l!r}")
            if len(set(labels)) != n:
                dup = sorted({l for l in labels if labels.count(l) > 1})
                raise SchemaError(f"Enum: duplicate labels {dup!r}")
        else:
            raise SchemaError(f"Enum: expected a list of labels or a count, got {labels_or_count!r}")
        b = (n - 1).bit_length()
        _init_desc(self, K_ENUM, b)
        self.d.maxcode = n - 1
        self.n = n
        self.labels = labels
        self._index = {l: i for i, l in enumerate(labels)} if labels is not None else {}
        self._code_dtype = _U32
        self.group = F_EXACT
        self.ncomp = 1
        self._key = ("Enum", labels if labels is not None else n)

    def spec(self):
        if self.labels is None:
            return {"kind": "Enum", "count": self.n}
        return {"kind": "Enum", "labels": list(self.labels)}

    def __repr__(self):
        return f"Enum({list(self.labels)!r})" if self.labels is not None else f"Enum({self.n})"

    cdef object _to_int(self, object x):
        if isinstance(x, str):
            try:
                return self._index[x]
            except KeyError:
                raise RangeError(f"{self!r}: unknown label {x!r}") from None
        if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
            v = int(x)
            if 0 <= v < self.n:
                return v
            raise RangeError(f"{self!r}: index {v} outside 0..{self.n - 1}")
        raise TypeError(f"Enum: expected a label or an index, got {type(x).__name__}")

    cdef object _value(self, object ic):
        return self.labels[ic] if self.labels is not None else ic

    cdef object _q_array(self, x, out):
        # an array (or list) of labels -> their indices; anything else as every exact codec
        a = x if isinstance(x, np.ndarray) else np.asarray(x)
        k = a.dtype.kind
        if k == 'U' or (k == 'O' and a.size and all(isinstance(v, str) for v in a.flat)):
            a = self._indices(a)
        return _ExactScalar._q_array(self, a, out)

    cdef object _indices(self, object a):
        """Labels (a str or object array) -> int64 indices of the same shape; RangeError naming
        the unknown labels and the first row holding one."""
        uniq, inv = np.unique(a.ravel(), return_inverse=True)
        labs = uniq.tolist()
        idx = np.empty(len(labs), dtype=_I64)
        unknown = []
        for j, lab in enumerate(labs):
            v = self._index.get(lab)
            if v is None:
                unknown.append(j)
            else:
                idx[j] = v
        if unknown:
            i = int(np.flatnonzero(np.isin(inv, unknown))[0])
            names = [labs[j] for j in unknown]
            shown = ", ".join(repr(v) for v in names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
            if self.labels is None:
                known = f"{self!r} has no labels: pass indices 0..{self.n - 1}"
            elif len(self.labels) <= 16:
                known = f"the labels are {list(self.labels)!r}"
            else:
                known = f"the labels are {list(self.labels[:16])!r} and {len(self.labels) - 16} more"
            raise _at_row(RangeError(f"Enum.quantize: {_row(a.shape, i)}: unknown label {str(a.ravel()[i])!r}"
                                     + (f" (all unknown labels: {shown})" if len(names) > 1 else "")
                                     + f"; {known}"), i)
        return idx[inv].reshape(a.shape)

    def label(self, index):
        """The label of an index (the index itself for Enum(n))."""
        return self._value(self._to_int(index))


cdef class IntRange(_ExactScalar):
    """An exact integer in [lo, hi]: (hi - lo).bit_length() bits, code = value - lo. Values
    outside are refused (RangeError), never clamped; codes above hi - lo are not valid."""

    def __init__(self, lo, hi):
        for nm, v in (("lo", lo), ("hi", hi)):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise SchemaError(f"IntRange: {nm} must be an integer, got {v!r}")
            if not (-(1 << 63) <= int(v) < (1 << 63)):
                raise SchemaError(f"IntRange: {nm} must be within int64, got {int(v)}")
        l, h = int(lo), int(hi)
        if l >= h:
            raise SchemaError(f"IntRange: lo must be less than hi, got lo={l}, hi={h}")
        if h - l >= (1 << 63):
            raise SchemaError(f"IntRange: hi - lo must be below 2**63, got {h - l} (lo={l}, hi={h})")
        b = (h - l).bit_length()
        _init_desc(self, K_IRANGE, b)
        self.d.maxcode = <uint64_t>(h - l)
        self.d.smin = l
        self.d.smax = h
        self._code_dtype = _udtype(b)
        self.group = F_EXACT
        self.ncomp = 1
        self._key = ("IntRange", l, h)

    @property
    def lo(self):
        return self.d.smin

    @property
    def hi(self):
        return self.d.smax

    def spec(self):
        return {"kind": "IntRange", "lo": self.d.smin, "hi": self.d.smax}

    cdef object _lo(self):
        return self.d.smin

    cdef object _hi(self):
        return self.d.smax

    cdef object _to_int(self, object x):
        if isinstance(x, (bool, np.bool_)):
            raise TypeError(f"IntRange: expected an integer, got bool ({x!r})")
        elif isinstance(x, (int, np.integer)):
            v = int(x)
        elif isinstance(x, (float, np.floating)):
            fv = float(x)
            if not (math.isfinite(fv) and fv.is_integer()):
                raise RangeError(f"{self!r}: {fv!r} is not an integer")
            v = int(fv)
        else:
            raise TypeError(f"IntRange: expected an integer, got {type(x).__name__}")
        if not (self.d.smin <= v <= self.d.smax):
            raise RangeError(f"{self!r}: value {v} outside {self.d.smin}..{self.d.smax}")
        return v - self.d.smin

    cdef object _value(self, object ic):
        return self.d.smin + ic

    cdef object _value_dtype(self):
        return _I64

    cdef object _q_array(self, x, out):
        owner = "IntRange.quantize"
        a = x if isinstance(x, np.ndarray) else np.asarray(x)
        k = a.dtype.kind
        lo, hi = self.d.smin, self.d.smax
        if k == 'f':
            a = _exact_floats(a)
            bad = ~np.isfinite(a) | (a != np.trunc(a))
            if bad.any():
                i = int(np.flatnonzero(bad.ravel())[0])
                raise _at_row(RangeError(f"{owner}: {_row(a.shape, i)}: {a.ravel()[i].item()!r} is not an integer"), i)
        elif k not in 'iu':
            raise TypeError(f"{owner}: expected an integer array, got dtype {a.dtype}")
        if a.size:
            if k == 'f':
                # exact comparisons against the ints (a double may not hold lo or hi exactly)
                flat = a.ravel()
                badm = np.array([not (lo <= int(v) <= hi) for v in flat.tolist()], dtype=bool) \
                    if (abs(lo) > 2**53 or abs(hi) > 2**53) else ((flat < lo) | (flat > hi))
            else:
                flat = a.ravel()
                if k == 'u' and flat.dtype.itemsize == 8:
                    badm = (flat > hi) if hi >= 0 else np.ones(flat.shape, dtype=bool)
                    if lo > 0:
                        badm |= flat < lo
                else:
                    badm = (flat < lo) | (flat > hi)
            if badm.any():
                i = int(np.flatnonzero(badm)[0])
                v = flat[i].item()
                if isinstance(v, float):
                    v = int(v)
                raise _at_row(RangeError(f"{owner}: {_row(a.shape, i)}: value {v} outside {lo}..{hi}"), i)
        # in range: value - lo fits in 0..hi - lo < 2**63; computed in int64 with wraparound
        # (exact, as the true difference fits), from floats through Python ints when not exact
        if k == 'f':
            if abs(lo) > 2**53 or abs(hi) > 2**53:
                codes = np.array([int(v) - lo for v in a.ravel().tolist()], dtype=_U64).reshape(a.shape)
            else:
                codes = (a.astype(_I64) - np.int64(lo)).view(_U64) if a.ndim else \
                    np.asarray(int(a) - lo, dtype=_U64)
        elif k == 'u' and a.dtype.itemsize == 8:
            codes = a.astype(_U64) - np.uint64(lo & 0xFFFFFFFFFFFFFFFF)
        else:
            codes = np.subtract(a.astype(_I64), np.int64(lo), dtype=_I64).view(_U64) if a.ndim else \
                np.asarray(int(a) - lo, dtype=_U64)
        codes = np.asarray(codes).reshape(a.shape)
        if out is None:
            return np.ascontiguousarray(codes, dtype=self._code_dtype).reshape(a.shape)
        check_out(out, a.shape, (self._code_dtype,), owner)
        np.copyto(out, codes, casting="unsafe")
        return out

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def dequantize(self, code, out=None):
        if out is None and _is_int(code):
            ic = int(code)
            if not _valid_int(self, ic):
                raise DecodeError(f"{self!r}: code {ic} is not a valid code")
            return self.d.smin + ic
        owner = "IntRange.dequantize"
        a = code_input(code, self._code_dtype, owner)
        ok = _valid(self, a)
        if not np.all(ok):
            i = int(np.flatnonzero(~np.asarray(ok).ravel())[0])
            raise DecodeError(f"{owner}: {_row(a.shape, i)}: code {a.ravel()[i]} is not a valid code of {self!r}")
        # lo + code is within int64 for every valid code: int64 arithmetic with wraparound is exact
        vals = np.add(a.astype(_U64).view(_I64), np.int64(self.d.smin), dtype=_I64)
        vals = np.asarray(vals).reshape(a.shape)
        if out is None:
            return vals
        check_out(out, a.shape, (_I64,), owner)
        np.copyto(out, vals)
        return out


# ------------------------------------------------------------------------------------------------
# Quat and UnitVector: several floats per code.

cdef object _maxerr_table(str name):
    from . import _maxerr
    return getattr(_maxerr, name)


cdef object _row_error(str owner, tuple shape, Py_ssize_t bad, int status, str what):
    reason = f"zero {what}" if status == ST_ZERO else f"non-finite {what}"
    return RangeError(f"{owner}: {_row(shape, bad)}: {reason}")


cdef class _MultiFloat(Codec):
    """Shared paths of Quat and UnitVector: (..., ncomp) floats <-> (...) codes."""

    def __init__(self, *args, **kwargs):
        raise TypeError("_MultiFloat is abstract")

    cdef str _what(self):
        return "quaternion" if self.group == F_QUAT else "vector"

    cdef object _vec_input(self, x, str owner):
        a = float_input(x, owner)
        if a.ndim == 0 or a.shape[a.ndim - 1] != self.ncomp:
            raise ValueError(f"{owner}: expected shape (..., {self.ncomp}), got {a.shape}")
        return a

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def quantize(self, x, out=None):
        cdef uint64_t c
        cdef int st
        owner = type(self).__name__ + ".quantize"
        if out is None and type(x) is tuple and len(x) == self.ncomp:
            st = self._q1(x, &c)
            if st != ST_OK:
                raise RangeError(f"{owner}: {'zero' if st == ST_ZERO else 'non-finite'} {self._what()} {x!r}")
            return c
        a = self._vec_input(x, owner)
        if a.ndim == 1 and out is None:
            st = self._q1(tuple(a.tolist()), &c)
            if st != ST_OK:
                raise RangeError(f"{owner}: {'zero' if st == ST_ZERO else 'non-finite'} {self._what()} {tuple(a.tolist())!r}")
            return c
        return self._q_arr(a, out, owner)

    cdef int _q1(self, tuple x, uint64_t* c) except -1:
        cdef double v[4]
        cdef int i
        for i in range(self.ncomp):
            o = x[i]
            if isinstance(o, (str, bytes)) or o is None:
                raise TypeError(f"{type(self).__name__}: components must be numbers, got {type(o).__name__}")
            v[i] = _as_double(o)
        if self.group == F_QUAT:
            return quat_q(&self.d, v[0], v[1], v[2], v[3], c)
        return uvec_q(&self.d, v[0], v[1], v[2], c)

    cdef object _q_arr(self, a, out, str owner):
        cdef buf_pair b
        cdef Py_ssize_t n, bad = -1
        cdef int xt, ct, status = 0
        shape = a.shape[:a.ndim - 1]
        if out is None:
            out = np.empty(shape, dtype=self._code_dtype)
        else:
            check_out(out, shape, (self._code_dtype,), owner)
        n = out.size
        if n == 0:
            return out
        xt = _xt(a)
        ct = _ctype(self._code_dtype)
        pair_acquire(&b, a, out)
        try:
            with nogil:
                bad = multi_q_array(&self.d, b.src.buf, xt, b.dst.buf, ct, n, &status)
        finally:
            pair_release(&b)
        if bad >= 0:
            raise _row_error(owner, shape, bad, status, self._what())
        return out

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def dequantize(self, code, out=None):
        cdef double v[4]
        owner = type(self).__name__ + ".dequantize"
        if out is None and _is_int(code):
            ic = int(code)
            if not _valid_int(self, ic):
                raise DecodeError(f"{self!r}: code {ic} is not a valid code")
            if self.group == F_QUAT:
                quat_dq(&self.d, <uint64_t>ic, v)
            else:
                uvec_dq(&self.d, <uint64_t>ic, v)
            return tuple(v[i] for i in range(self.ncomp))
        a = code_input(code, self._code_dtype, owner)
        return self._dq_arr(a, out, owner)      # its loop checks every code (quat_valid for Quat)

    cdef object _dq_arr(self, a, out, str owner):
        cdef buf_pair b
        cdef Py_ssize_t n, bad = -1
        cdef int ct, ot
        shape = a.shape + (self.ncomp,)
        if out is None:
            out = np.empty(shape, dtype=_F64)
        else:
            check_out(out, shape, (_F64, _F32), owner)
        n = a.size
        if n == 0:
            return out
        ct = _ctype(self._code_dtype)
        ot = 0 if out.dtype == _F32 else 1
        pair_acquire(&b, a, out)
        try:
            with nogil:
                bad = multi_dq_array(&self.d, b.src.buf, ct, b.dst.buf, ot, n)
        finally:
            pair_release(&b)
        if bad >= 0:
            raise DecodeError(f"{owner}: {_row(a.shape, bad)}: code {a.ravel()[bad]} is not a valid code of {self!r}")
        return out

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def roundtrip(self, x, out=None):
        cdef buf_pair b
        cdef Py_ssize_t n, bad = -1
        cdef int xt, ot, status = 0
        owner = type(self).__name__ + ".roundtrip"
        if out is None and (type(x) is tuple or (isinstance(x, (list, np.ndarray)) and np.ndim(x) == 1)):
            return self.dequantize(self.quantize(x))
        a = self._vec_input(x, owner)
        if out is None:
            out = np.empty(a.shape, dtype=_F64)
        else:
            check_out(out, a.shape, (_F64, _F32), owner)
        n = a.size // self.ncomp
        if n == 0:
            return out
        xt = _xt(a)
        ot = 0 if out.dtype == _F32 else 1
        pair_acquire(&b, a, out)
        try:
            with nogil:
                bad = multi_rt_array(&self.d, b.src.buf, xt, b.dst.buf, ot, n, &status)
        finally:
            pair_release(&b)
        if bad >= 0:
            raise _row_error(owner, a.shape[:a.ndim - 1], bad, status, self._what())
        return out

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def valid(self, code):
        return _valid(self, code)


cdef class Quat(_MultiFloat):
    """Quat(bits=9, *, mode='endpoints')

    A unit quaternion (x, y, z, w) by smallest three: 2 + 3 * bits bits."""
    cdef readonly str mode
    cdef readonly int component_bits

    @cython.embedsignature(False)       # (the docstring's: Cython's misplaces keyword-only parameters)
    def __init__(self, bits=9, *, mode="endpoints"):
        b = int_param("Quat", "bits", bits, 2, 20)
        if mode not in ("endpoints", "bins", "midpoint"):
            raise SchemaError(f"Quat: mode must be 'endpoints', 'bins' or 'midpoint', got {mode!r}")
        _init_desc(self, K_QUAT, 2 + 3 * b)
        self.bits = 2 + 3 * b
        self.d.cbits = b
        self.d.mode = _MODES[mode]
        self.d.lo = -SQRT1_2
        self.d.hi = SQRT1_2
        self.d.R = SQRT1_2 - (-SQRT1_2)
        self.d.L = _mode_L(mode, b)
        self.mode = mode
        self.component_bits = b
        self._code_dtype = _udtype(2 + 3 * b)
        self.group = F_QUAT
        self.ncomp = 4
        self._key = ("Quat", b, mode)

    def spec(self):
        return {"kind": "Quat", "bits": self.component_bits, "mode": self.mode}

    @property
    def step(self):
        """The step of each of the three sent components."""
        return self.d.R / self.d.L

    @property
    def max_error(self):
        """The worst rotation error in degrees, from the seeded worst-case search (quantcodec.tools.search)."""
        return _maxerr_table("QUAT_MAX_ERROR")[(self.mode, self.component_bits)]

    @classmethod
    def for_error(cls, max_error, *, mode="endpoints"):
        """The Quat with the fewest bits per component (2..20) whose max_error, the worst rotation
        angle in degrees, is at most `max_error` (degrees). (No for_step: the error of a rotation
        is not uniform; `step` is that of the three sent components.)"""
        e = budget("Quat.for_error", "max_error", max_error)
        return fewest_bits("Quat.for_error", "max_error", e, lambda b: cls(b, mode=mode), 2, 20, " degrees")


cdef class UnitVector(_MultiFloat):
    """A unit 3-vector by octahedral mapping: `bits` per each of two coordinates."""
    cdef readonly int component_bits

    def __init__(self, bits):
        b = int_param("UnitVector", "bits", bits, 2, 32)
        _init_desc(self, K_UVEC, 2 * b)
        self.d.cbits = b
        self.d.mode = M_ENDPOINTS
        self.d.lo = -1.0
        self.d.hi = 1.0
        self.d.R = 2.0
        self.d.L = 2.0 ** b - 1.0
        self.component_bits = b
        self._code_dtype = _udtype(2 * b)
        self.group = F_UVEC
        self.ncomp = 3
        self._key = ("UnitVector", b)

    def spec(self):
        return {"kind": "UnitVector", "bits": self.component_bits}

    @property
    def step(self):
        """The step of each of the two octahedral coordinates."""
        return 2.0 / self.d.L

    @property
    def max_error(self):
        """The worst angle error in degrees, from the seeded worst-case search (quantcodec.tools.search)."""
        return _maxerr_table("UNITVEC_MAX_ERROR")[self.component_bits]

    @classmethod
    def for_error(cls, max_error):
        """The UnitVector with the fewest bits per coordinate (2..32) whose max_error, the worst
        angle in degrees, is at most `max_error` (degrees)."""
        e = budget("UnitVector.for_error", "max_error", max_error)
        return fewest_bits("UnitVector.for_error", "max_error", e, lambda b: cls(b), 2, 32, " degrees")


# ------------------------------------------------------------------------------------------------
# Composites.

cdef object _common_dtype(list dts):
    signed = any(dt.kind == 'i' for dt in dts)
    wide = any(dt.itemsize == 8 for dt in dts)
    if signed:
        if wide or any(dt == _U32 for dt in dts):
            return _I64
        return _I32
    return _U64 if wide else _U32


cdef class Vector(Codec):
    """A fixed-length tuple of scalar codecs, each component with its own range."""

    def __init__(self, *codecs):
        if len(codecs) == 1 and isinstance(codecs[0], (list, tuple)):
            codecs = tuple(codecs[0])
        if not codecs:
            raise SchemaError("Vector: needs at least one component codec")
        for i, c in enumerate(codecs):
            if not isinstance(c, (_FloatScalar, _ExactScalar)):
                raise SchemaError(f"Vector: component {i} must be a scalar codec, got {c!r}")
        dts = [(<Codec>c)._code_dtype for c in codecs]
        if any(dt.kind == 'i' for dt in dts) and any(dt == _U64 and (<Codec>c).bits == 64 for dt, c in zip(dts, codecs)):
            raise SchemaError("Vector: a 64-bit unsigned component cannot share one code array with signed components; "
                              "use separate fields")
        if any(isinstance(c, IntRange) for c in codecs) and any(
                isinstance(c, _ExactScalar) and dt == _U64 and (<Codec>c).bits == 64 for dt, c in zip(dts, codecs)):
            raise SchemaError("Vector: a 64-bit unsigned component cannot share one value array with an IntRange "
                              "(its values are int64); use separate fields")
        self.codecs = tuple(codecs)
        self.bits = sum((<Codec>c).bits for c in codecs)
        self.d.kind = 0
        self.d.bits = self.bits
        self._code_dtype = _common_dtype([(<Codec>c)._code_dtype for c in codecs])
        self.group = F_VECTOR
        self.ncomp = len(codecs)
        self._key = ("Vector",) + tuple((<Codec>c)._key for c in codecs)

    def spec(self):
        return {"kind": "Vector", "codecs": [c.spec() for c in self.codecs]}

    def __repr__(self):
        return f"Vector({', '.join(repr(c) for c in self.codecs)})"

    def __len__(self):
        return len(self.codecs)

    def _float_components(self):
        return all(isinstance(c, _FloatScalar) for c in self.codecs)

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def quantize(self, x, out=None):
        owner = "Vector.quantize"
        if out is None and _is_seq1(x, self.ncomp):
            return tuple(c.quantize(v) for c, v in zip(self.codecs, _items(x)))
        return self._quantize_count(x, out)[0]

    def _quantize_count(self, x, out=None):
        cdef buf_pair b
        cdef Py_ssize_t n, nc, total = 0
        cdef int j, k = self.ncomp, xt, ct
        cdef Codec c
        owner = "Vector.quantize"
        if self._float_components():
            a = float_input(x, owner)
        else:
            a = x if isinstance(x, np.ndarray) else np.asarray(x)
        if a.ndim < 1 or a.shape[a.ndim - 1] != k:
            raise ValueError(f"{owner}: expected shape (..., {k}), got {a.shape}")
        if out is None:
            out = np.empty(a.shape, dtype=self._code_dtype)
        else:
            check_out(out, a.shape, (self._code_dtype,), owner)
        n = a.size // k
        if n == 0:
            return out, 0
        if not self._float_components():
            for j in range(k):
                out[..., j] = self.codecs[j].quantize(np.ascontiguousarray(a[..., j]))
            return out, 0
        xt = _xt(a)
        ct = _ctype(self._code_dtype)
        pair_acquire(&b, a, out)
        try:
            for j in range(k):
                c = self.codecs[j]
                with nogil:
                    total += q_array(&c.d, <const char*>b.src.buf + j * (4 if xt == 0 else 8), xt, k,
                                     <char*>b.dst.buf + j * (4 if ct % 2 == 0 else 8), ct, k, n)
        finally:
            pair_release(&b)
        return out, total

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def dequantize(self, code, out=None):
        cdef buf_pair b
        cdef Py_ssize_t n, bad
        cdef int j, k = self.ncomp, ct, ot
        cdef Codec c
        owner = "Vector.dequantize"
        if out is None and _is_seq1(code, self.ncomp) and all(_is_int(v) for v in _items(code)):
            return tuple(c.dequantize(v) for c, v in zip(self.codecs, _items(code)))
        a = code_input(code, self._code_dtype, owner)
        if a.ndim < 1 or a.shape[a.ndim - 1] != k:
            raise ValueError(f"{owner}: expected shape (..., {k}), got {a.shape}")
        if not self._float_components():
            # exact components decode exactly: all exact -> the code dtype; mixed with floats -> float64
            exact = all(isinstance(c, _ExactScalar) for c in self.codecs)
            # (the components' value dtypes, not their codes': an IntRange's values are lo + code)
            vdt = _common_dtype([(<_ExactScalar>c)._value_dtype() for c in self.codecs]) if exact else _F64
            cols = [self.codecs[j].dequantize(np.ascontiguousarray(a[..., j])) for j in range(k)]
            if out is None:
                out = np.empty(a.shape, dtype=vdt)
            else:
                check_out(out, a.shape, (vdt,) if exact else (_F64, _F32), owner)
            for j in range(k):
                out[..., j] = cols[j]
            return out
        if out is None:
            out = np.empty(a.shape, dtype=_F64)
        else:
            check_out(out, a.shape, (_F64, _F32), owner)
        n = a.size // k
        if n == 0:
            return out
        ct = _ctype(self._code_dtype)
        ot = 0 if out.dtype == _F32 else 1
        pair_acquire(&b, a, out)
        try:
            for j in range(k):
                c = self.codecs[j]
                with nogil:
                    bad = dq_array(&c.d, <const char*>b.src.buf + j * (4 if ct % 2 == 0 else 8), ct, k,
                                   <char*>b.dst.buf + j * (4 if ot == 0 else 8), ot, k, n)
                if bad >= 0:
                    raise DecodeError(f"{owner}: {_row(a.shape[:a.ndim - 1], bad)}[{j}]: code {a.reshape(-1, k)[bad, j]} "
                                      f"is not a valid code of {c!r}")
        finally:
            pair_release(&b)
        return out

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def roundtrip(self, x, out=None):
        if out is None and _is_seq1(x, self.ncomp):
            return tuple(c.roundtrip(v) for c, v in zip(self.codecs, _items(x)))
        return self.dequantize(self.quantize(x), out)

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def valid(self, code):
        if _is_seq1(code, self.ncomp) and all(_is_int(v) for v in _items(code)):
            return all(bool(c.valid(v)) for c, v in zip(self.codecs, _items(code)))
        if isinstance(code, (np.ndarray, list, tuple)):
            try:
                a = np.asarray(code)
            except (ValueError, TypeError):
                return False
            if a.ndim >= 1 and a.shape[a.ndim - 1] == self.ncomp and a.dtype.kind in 'iub':
                ok = np.ones(a.shape[:a.ndim - 1], dtype=bool)
                for j, c in enumerate(self.codecs):
                    ok &= c.valid(a[..., j])
                return ok
        return False

    @property
    def step(self):
        return tuple(c.step for c in self.codecs)

    @property
    def max_error(self):
        return tuple(c.max_error for c in self.codecs)


cdef bint _is_seq1(object x, int k):
    """One value of a k-vector: a tuple/list of k scalars or a (k,) array."""
    if isinstance(x, (tuple, list)):
        return len(x) == k and all(not isinstance(v, (tuple, list, np.ndarray)) for v in x)
    if isinstance(x, np.ndarray):
        return x.ndim == 1 and x.shape[0] == k
    return False


cdef object _items(object x):
    if isinstance(x, np.ndarray):
        return x.tolist()
    return x


cdef object _at_rest_rows(object flat, double thr):
    """Which rows of a 2-D float array (n, k) are at rest, every value (as a double) within the
    threshold of zero (nz_at_rest): a bool array of n."""
    cdef buf_pair b
    cdef Py_ssize_t i, j, n, k
    cdef const double* x
    cdef unsigned char* o
    cdef bint rest
    a = np.ascontiguousarray(flat, dtype=_F64)
    n = a.shape[0]
    k = a.shape[1]
    res = np.empty(n, dtype=_BOOL)
    if n == 0:
        return res
    if k == 0:
        res[:] = True
        return res
    pair_acquire(&b, a, res)
    try:
        x = <const double*>b.src.buf
        o = <unsigned char*>b.dst.buf
        with nogil:
            for i in range(n):
                rest = True
                for j in range(k):
                    rest = rest & nz_at_rest(x[i * k + j], thr)
                o[i] = rest
    finally:
        pair_release(&b)
    return res


cdef object _reach(Codec c):
    """The largest magnitude a value of `c` decodes to, over all its components (a Vector: the
    largest of its components'), or None where that is not simple to say (Angle, Half, Grid)."""
    if isinstance(c, Vector):
        reaches = [_reach(x) for x in c.codecs]
        return None if any(r is None for r in reaches) else max(reaches)
    s = c.spec()
    kind = s["kind"]
    if kind == "Bounded":
        return max(abs(s["min"]), abs(s["max"]))
    if kind == "PowerCurve":
        return s["max"]
    if kind == "Fixed":
        b = s["bits"]
        lo, hi = (-(1 << (b - 1)), (1 << (b - 1)) - 1) if s["signed"] else (0, (1 << b) - 1)
        return max(abs(s["offset"] + lo * s["step"]), abs(s["offset"] + hi * s["step"]))
    if kind == "UInt":
        return float((1 << s["bits"]) - 1)
    if kind == "Int":
        return float(1 << (s["bits"] - 1))
    if kind == "Bool":
        return 1.0
    if kind == "IntRange":
        return float(max(abs(s["lo"]), abs(s["hi"])))
    return None


cdef class NearlyZero(Codec):
    """A flag bit in front of `inner`: values within `threshold` of zero cost one bit and decode to 0."""

    def __init__(self, inner, threshold):
        if not isinstance(inner, (_FloatScalar, _ExactScalar, Vector)):
            raise SchemaError(f"NearlyZero: inner must be a scalar codec or a Vector, got {inner!r}")
        t = float_param("NearlyZero", "threshold", threshold)
        if t < 0:
            raise SchemaError(f"NearlyZero: threshold must be non-negative, got {t!r}")
        reach = _reach(inner)
        if reach is not None and t >= reach:
            raise SchemaError(f"NearlyZero: threshold {t!r} covers the whole range of {inner!r} (no decoded "
                              f"value is farther than {reach!r} from zero): every value would be sent as zero; "
                              f"the threshold must be below that")
        self.inner = inner
        self.threshold = t
        self.bits = 1 + (<Codec>inner).bits
        self.d.kind = 0
        self.d.bits = self.bits
        self._code_dtype = (<Codec>inner)._code_dtype
        self.group = F_NZVEC if (<Codec>inner).group == F_VECTOR else F_NZ
        self.ncomp = (<Codec>inner).ncomp
        self._key = ("NearlyZero", (<Codec>inner)._key, t)

    def spec(self):
        return {"kind": "NearlyZero", "inner": self.inner.spec(), "threshold": self.threshold}

    def __repr__(self):
        return f"NearlyZero({self.inner!r}, threshold={self.threshold!r})"

    cdef bint _vec(self):
        return self.group == F_NZVEC

    cdef bint _ragged1(self, object code):
        """A Vector's one code written with lists, ``[flag, [c0, c1, ...]]`` (as JSON gives a
        tuple back): ragged, so it cannot be an array of codes; it reads as the tuple does."""
        return (self._vec() and isinstance(code, list) and len(code) == 2
                and isinstance(code[1], (tuple, list)))

    def _zero_code(self):
        return tuple([0] * self.ncomp) if self._vec() else 0

    def _zero_value(self):
        return tuple([0.0] * self.ncomp) if self._vec() else 0.0

    def _label_indices(self, x):
        """`x` with the labels given for Enum components replaced by their indices (the value the
        threshold is compared with, and what the Enum encodes them to); `x` itself when it holds
        no label. An unknown label is the Enum's RangeError (naming the row in an array)."""
        cdef Py_ssize_t j
        if self._vec():
            comps = (<Vector>self.inner).codecs
            if not any(isinstance(c, Enum) for c in comps):
                return x
            if _is_seq1(x, self.ncomp):
                items = list(_items(x))
                if not any(isinstance(v, str) or (isinstance(v, np.ndarray) and v.ndim == 0 and v.dtype.kind == 'U')
                           for v in items):
                    return x
                return tuple((<Enum>c)._to_int(v[()] if isinstance(v, np.ndarray) else v)
                             if isinstance(c, Enum) and (isinstance(v, str) or isinstance(v, np.ndarray)) else v
                             for c, v in zip(comps, items))
            if isinstance(x, (np.ndarray, list, tuple)):
                a = x if isinstance(x, np.ndarray) else np.asarray(x)
                if a.dtype.kind not in 'UO' or a.ndim < 1 or a.shape[a.ndim - 1] != self.ncomp:
                    return x
                # the Enum columns through their labels, the others as numbers (as Vector takes them)
                cols = [c.quantize(a[..., j]) if isinstance(c, Enum)
                        else float_input(a[..., j], "NearlyZero.quantize") for j, c in enumerate(comps)]
                return np.stack([np.asarray(col, dtype=_F64) for col in cols], axis=-1)
            return x
        if not isinstance(self.inner, Enum):
            return x
        if isinstance(x, str):
            return (<Enum>self.inner)._to_int(x)
        if isinstance(x, (np.ndarray, list, tuple)):
            a = x if isinstance(x, np.ndarray) else np.asarray(x)
            if a.dtype.kind == 'U' or (a.dtype.kind == 'O' and a.size and all(isinstance(v, str) for v in a.flat)):
                if a.ndim == 0:
                    return (<Enum>self.inner)._to_int(str(a[()]))
                return self.inner.quantize(a)
        return x

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def quantize(self, x, out=None):
        x = self._label_indices(x)
        if out is None and (_is_seq1(x, self.ncomp) if self._vec() else _is_number(x)):
            vals = list(_items(x)) if self._vec() else [x]
            # _as_double: an int too large for a double is +-inf (moving), as in the array path
            if all(nz_at_rest(_as_double(v), self.threshold) for v in vals):
                return (0, self._zero_code())
            return (1, self.inner.quantize(x))
        return self._quantize_count(x, out)[0]

    def _quantize_count(self, x, out=None):
        owner = "NearlyZero.quantize"
        k = self.ncomp
        a = float_input(self._label_indices(x), owner)
        if self._vec():
            if a.ndim < 1 or a.shape[a.ndim - 1] != k:
                raise ValueError(f"{owner}: expected shape (..., {k}), got {a.shape}")
            lead = a.shape[:a.ndim - 1]
        else:
            lead = a.shape
        shape = lead + (1 + k,)
        if out is None:
            out = np.empty(shape, dtype=self._code_dtype)
        else:
            check_out(out, shape, (self._code_dtype,), owner)
        flat = a.reshape(-1, k)
        # the flag is decided in double precision whatever the input dtype (SPEC section 0)
        small = _at_rest_rows(flat, self.threshold)
        moving = ~small
        o2 = out.reshape(-1, 1 + k)
        o2[:, 0] = moving
        o2[:, 1:] = 0
        nc = 0
        if moving.any():
            inner_in = flat[moving] if self._vec() else flat[moving, 0]
            codes, nc = self.inner._quantize_count(inner_in)
            o2[moving, 1:] = codes.reshape(-1, k)
        return out, nc

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def dequantize(self, code, out=None):
        owner = "NearlyZero.dequantize"
        k = self.ncomp
        if out is None and isinstance(code, tuple) and len(code) == 2 and _is_int(code[0]) \
                and not isinstance(code[1], np.ndarray) or (out is None and isinstance(code, tuple) and len(code) == 2
                                                            and isinstance(code[1], tuple)) \
                or (out is None and self._ragged1(code)):
            flag, inner = code
            if not self._valid1(code):
                raise DecodeError(f"{self!r}: code {code!r} is not a valid code")
            if flag == 0:
                return self._zero_value()
            return self.inner.dequantize(inner)
        a = code_input(code, self._code_dtype, owner)
        if a.ndim < 1 or a.shape[a.ndim - 1] != 1 + k:
            raise ValueError(f"{owner}: expected shape (..., {1 + k}), got {a.shape}")
        a2 = a.reshape(-1, 1 + k)
        ok = self._valid_arr(a2)
        if not np.all(ok):
            i = int(np.flatnonzero(~ok)[0])
            raise DecodeError(f"{owner}: {_row(a.shape[:a.ndim - 1], i)}: code {a2[i].tolist()} is not a valid code of {self!r}")
        inner_codes = a2[:, 1:] if self._vec() else a2[:, 1]
        vals = self.inner.dequantize(inner_codes)
        flags = a2[:, 0] == 1
        vals = np.where(flags[:, None] if self._vec() else flags, vals, 0)
        res_shape = a.shape[:a.ndim - 1] + ((k,) if self._vec() else ())
        vals = vals.reshape(res_shape)
        if out is None:
            return vals.astype(_F64) if vals.dtype != _BOOL else vals
        check_out(out, res_shape, (_F64, _F32), owner)
        out[...] = vals
        return out

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def roundtrip(self, x, out=None):
        if out is None and (_is_seq1(x, self.ncomp) if self._vec() else _is_number(x)):
            return self.dequantize(self.quantize(x))
        return self.dequantize(self.quantize(x), out)

    cdef bint _valid1(self, object code):
        if not (isinstance(code, (tuple, list)) and len(code) == 2):
            return False
        flag, inner = code
        if not _is_int(flag) or int(flag) not in (0, 1):
            return False
        if int(flag) == 0:
            if self._vec():
                return _is_seq1(inner, self.ncomp) and all(_is_int(v) and int(v) == 0 for v in _items(inner))
            return _is_int(inner) and int(inner) == 0
        return bool(self.inner.valid(inner)) if not isinstance(inner, np.ndarray) or inner.ndim == 1 else False

    def _valid_arr(self, a2):
        flags = a2[:, 0]
        inner = a2[:, 1:] if self._vec() else a2[:, 1]
        iv = np.asarray(self.inner.valid(inner), dtype=bool)
        zeros = np.all(a2[:, 1:] == 0, axis=1)
        return ((flags == 0) & zeros) | ((flags == 1) & iv)

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def valid(self, code):
        if (isinstance(code, tuple) and len(code) == 2 and not isinstance(code[0], (tuple, list, np.ndarray))) \
                or self._ragged1(code):
            return self._valid1(code)
        if isinstance(code, (np.ndarray, list)):
            try:
                a = np.asarray(code)
            except (ValueError, TypeError):
                return False
            if a.ndim >= 1 and a.shape[a.ndim - 1] == 1 + self.ncomp and a.dtype.kind in 'iub':
                return self._valid_arr(a.reshape(-1, 1 + self.ncomp)).reshape(a.shape[:a.ndim - 1])
        return False

    @property
    def step(self):
        return self.inner.step

    @property
    def max_error(self):
        e = self.inner.max_error
        if isinstance(e, tuple):
            return tuple(max(v, self.threshold) for v in e)
        return max(e, self.threshold)


# ------------------------------------------------------------------------------------------------

# Every codec kind, once: its name (the "kind" of its spec), its class, its kernel kind (K_*,
# _kernels.pxd: the rule its descriptor selects; 0 for Vector and NearlyZero, which are made of other
# codecs and have none) and its number on the wire (the hello's field summary, docs/wire-format.md
# section 13, which every client reads). The two numberings differ, and nothing but this table
# joins them: _framing takes the wire numbers from here, and tests/test_codecs.py checks the table
# against every codec's descriptor and against the document.
KIND_TABLE = (
    ("Bounded", Bounded, K_BOUNDED, 1),
    ("Fixed", Fixed, K_FIXED, 2),
    ("Angle", Angle, K_ANGLE, 3),
    ("PowerCurve", PowerCurve, K_POWER, 4),
    ("Half", Half, K_HALF, 5),
    ("UInt", UInt, K_UINT, 6),
    ("Int", Int, K_INT, 7),
    ("Bool", Bool, K_BOOL, 8),
    ("Enum", Enum, K_ENUM, 9),
    ("Quat", Quat, K_QUAT, 10),
    ("UnitVector", UnitVector, K_UVEC, 11),
    ("Vector", Vector, 0, 12),
    ("Grid", Grid, K_GRID, 13),
    ("NearlyZero", NearlyZero, 0, 14),
    ("IntRange", IntRange, K_IRANGE, 15),
)

_KINDS = {name: cls for name, cls, _, _ in KIND_TABLE}


def _kernel_kind(Codec c):
    """The kernel kind (K_*) of `c`'s descriptor, for the test of KIND_TABLE."""
    return c.d.kind


# kind -> (the keys a spec must have, the keys it may have), as each codec's spec() writes them
_SPEC_KEYS = {
    "Bounded": (("min", "max", "bits"), ("mode",)),
    "Fixed": (("step", "bits"), ("signed", "offset")),
    "Angle": (("bits",), ("signed", "unit")),
    "PowerCurve": (("max", "pow", "bits"), ()),
    "Half": ((), ()),
    "UInt": (("bits",), ()),
    "Int": (("bits",), ()),
    "Bool": ((), ()),
    "Quat": ((), ("bits", "mode")),
    "UnitVector": (("bits",), ()),
    "Grid": (("cell_size", "cell_bits", "offset_bits"), ()),
    "Vector": (("codecs",), ()),
    "NearlyZero": (("inner", "threshold"), ()),
    "IntRange": (("lo", "hi"), ()),
    "Enum": ((), ("labels", "count")),
}


def _check_keys(kind, d):
    """SchemaError for the first unknown key of a `kind` spec (with the key it resembles) or
    missing key: the words a typo in a schema file needs, without Python's internals."""
    import difflib
    required, optional = _SPEC_KEYS[kind]
    known = required + optional
    takes = ", ".join(required) + (f" and optionally {', '.join(optional)}" if optional else "") \
        if required else (f"optionally {', '.join(optional)}" if optional else "no parameters")
    for key in sorted(d, key=str):
        if key not in known:
            near = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise SchemaError(f"{kind} spec: unknown key {key!r}{hint}; {kind} takes {takes}")
    for key in required:
        if key not in d:
            raise SchemaError(f"{kind} spec: missing key {key!r}; {kind} takes {takes}")
    if kind == "Enum" and ("labels" in d) == ("count" in d):
        raise SchemaError("Enum spec: needs exactly one of the keys 'labels' and 'count'")


def codec_from_spec(spec):
    """Rebuild a codec from its `spec()` dict."""
    if isinstance(spec, Codec):
        return spec
    if not isinstance(spec, dict):
        raise SchemaError(f"codec spec must be a dict, got {type(spec).__name__}")
    d = dict(spec)
    kind = d.pop("kind", None)
    if kind not in _KINDS:
        raise SchemaError(f"unknown codec kind {kind!r}; expected one of {', '.join(_KINDS)}")
    _check_keys(kind, d)
    try:
        # A nested spec's kind is checked before it is built, so the recursion is at most three
        # deep (NearlyZero -> Vector -> scalar) whatever the input: Cython functions have no
        # recursion limit, and a spec nested thousands deep would otherwise overflow the C stack.
        if kind == "Vector":
            codecs = d.pop("codecs")
            if not isinstance(codecs, (list, tuple)):
                raise SchemaError(f"Vector: codecs must be a list of codec specs, got {type(codecs).__name__}")
            for i, c in enumerate(codecs):
                k = _nested_kind(c)
                if k in _NOT_SCALAR:
                    raise SchemaError(f"Vector: component {i} must be a scalar codec, got a {k} spec")
            parts = []
            for i, c in enumerate(codecs):
                try:
                    parts.append(codec_from_spec(c))
                except SchemaError as e:
                    # "[1]: Bounded spec: missing key 'max'": the schema puts the field name in front
                    raise SchemaError(f"[{i}]: {e}") from None
            return Vector(*parts)
        if kind == "NearlyZero":
            k = _nested_kind(d.get("inner"))
            if k in _NOT_SCALAR and k != "Vector":
                raise SchemaError(f"NearlyZero: inner must be a scalar codec or a Vector, got a {k} spec")
            inner = codec_from_spec(d.pop("inner"))
            return NearlyZero(inner, d.pop("threshold"))
        if kind == "IntRange":
            return IntRange(d.pop("lo"), d.pop("hi"))
        if kind == "Enum":
            return Enum(d.pop("labels") if "labels" in d else d.pop("count"))
        return _KINDS[kind](**d)
    except TypeError as e:
        # (the keys were checked: a value of the wrong type that a constructor refused)
        raise SchemaError(f"{kind} spec: {e}") from None


_NOT_SCALAR = ("Vector", "NearlyZero", "Quat", "UnitVector")


cdef object _nested_kind(object spec):
    """The kind of a nested codec spec (a dict), or None (a codec object is checked by its
    owner's constructor, and anything else fails in codec_from_spec)."""
    if isinstance(spec, dict):
        return spec.get("kind")
    return None

