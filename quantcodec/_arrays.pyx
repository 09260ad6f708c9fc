"""The array dispatch of the codecs and the schema plan: which compiled loops run an array call.

Array inputs made safe for typed loops (`float_input`, `code_input`, `contig`, `check_out`); the
loop table of Bounded, Quat and UnitVector chosen for this CPU at import (`_loops.pxd`, one module
per instruction set); the loops of the other scalar kinds; and the dispatch on the runtime dtypes.
Everything here is a C function over raw pointers (`_arrays.pxd`), called with the buffers held by
a `buf_pair`; nothing here knows a codec class.
"""

from cpython.pycapsule cimport PyCapsule_GetPointer
from libc.string cimport strcmp
from libc.stdint cimport uint64_t, int64_t, uint32_t, int32_t

from quantcodec._kernels cimport *
from quantcodec._loops cimport LOOPS_ABI, QC_LOOPS_BUILD, code_t, fin_t, fout_t, loop_table

import importlib

import numpy as np

from .errors import DecodeError

__all__ = []     # C functions (_arrays.pxd) and the SIMD choice (re-exported by _codecs)

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


# ------------------------------------------------------------------------------------------------
# Array inputs: contiguous, aligned, native arrays that the typed loops may read in place.

cdef object float_input(object x, str owner):
    """A C-contiguous native float32/float64 array view of `x` (copied only when it must be)."""
    cdef object a
    if isinstance(x, np.ndarray):
        a = x
    else:
        try:
            a = np.asarray(x)
        except (ValueError, TypeError) as e:
            raise TypeError(f"{owner}: expected numbers or an array of numbers, got {type(x).__name__}") from None
    k = a.dtype.kind
    if k == 'f':
        if a.dtype.itemsize == 4:
            return contig(a, _F32)
        if a.dtype.itemsize <= 8:
            return contig(a, _F64)
        raise TypeError(f"{owner}: dtype {a.dtype} does not convert safely to float64")
    if k in 'iub':
        return contig(a, _F64)
    raise TypeError(f"{owner}: expected a float or integer array, got dtype {a.dtype}")


cdef object contig(object a, object dt):
    """`a` itself when it is already C-contiguous, aligned native `dt`, else a converted copy
    (0-d stays 0-d). (An unaligned view, e.g. a field of a packed record array, is copied: the
    loops read through typed pointers, and a misaligned load is undefined in C.)"""
    if a.dtype == dt and a.flags.c_contiguous and a.flags.aligned:
        return a
    return np.array(a, dtype=dt, order="C")


cdef object check_out(object out, tuple shape, object dtypes, str owner):
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{owner}: out must be a NumPy array, got {type(out).__name__}")
    if out.dtype not in dtypes:
        raise TypeError(f"{owner}: out must have dtype {' or '.join(str(d) for d in dtypes)}, got {out.dtype}")
    if out.shape != shape:
        raise ValueError(f"{owner}: out must have shape {shape}, got {out.shape}")
    if not out.flags.c_contiguous or not out.flags.writeable or not out.flags.aligned:
        raise ValueError(f"{owner}: out must be a C-contiguous, writeable, aligned array")
    return out


cdef object code_input(object code, object dtype, str owner):
    """Integer codes as a C-contiguous array of the codec's code dtype; out-of-dtype values raise."""
    cdef object a = code if isinstance(code, np.ndarray) else np.asarray(code)
    k = a.dtype.kind
    if k not in 'iub':
        if a.size == 0 and k in 'fO':
            return np.zeros(a.shape, dtype=dtype)   # no codes: [] or an empty float array
        raise TypeError(f"{owner}: codes must be integers, got dtype {a.dtype}")
    if a.dtype == dtype:
        return contig(a, dtype)
    if a.size:
        info = np.iinfo(dtype)
        lo = a.min()
        hi = a.max()
        if lo < info.min or hi > info.max:
            bad = np.flatnonzero((a.ravel() < info.min) | (a.ravel() > info.max))[0]
            raise DecodeError(f"{owner}: row {bad}: code {a.ravel()[bad]} is not a valid code")
    return contig(a, dtype)


# ------------------------------------------------------------------------------------------------
# Array loops. Those of Bounded, Quat and UnitVector (`_loops.pxd`) live in their own modules,
# compiled once per instruction set: `_loops_baseline` (always), `_loops_avx2` and `_loops_avx512`
# (x86-64 with gcc or clang). `_LOOPS` is the table in use, chosen at import: the best the CPU
# runs, capped by the environment variable QUANTCODEC_SIMD=baseline|avx2|avx512. Every table
# gives the same codes and values bit for bit.

cdef extern from "_cpu.h":
    # The one CPU dispatch (quantcodec/_cpu.h): what the CPU and the OS support (0 baseline,
    # 1 AVX2, 2 AVX-512 F/CD/BW/DQ/VL) and the cap QUANTCODEC_SIMD sets.
    int qc_cpu_level() noexcept nogil
    int qc_simd_cap() noexcept nogil

_SIMD_LEVELS = ("baseline", "avx2", "avx512")

cdef const loop_table* _LOOPS = NULL
cdef str _simd_name = ""


cdef const loop_table* _load_loops(str level):
    """The loop table of `quantcodec._loops_<level>`, or NULL if it is not built or not this build's."""
    cdef const loop_table* t
    try:
        cap = importlib.import_module("quantcodec._loops_" + level)._table()
    except (ImportError, AttributeError):
        return NULL
    t = <const loop_table*>PyCapsule_GetPointer(cap, "quantcodec._loops.loop_table")
    if t.abi != LOOPS_ABI or t.size != sizeof(loop_table) or strcmp(t.build, QC_LOOPS_BUILD) != 0:
        return NULL
    return t


def _simd_available():
    """The instruction sets whose array loops this CPU runs and this install holds, worst first."""
    return tuple(_SIMD_LEVELS[i] for i in range(qc_cpu_level() + 1) if _load_loops(_SIMD_LEVELS[i]) != NULL)


def _simd_select(level=None):
    """Use the array loops of `level` ("baseline", "avx2" or "avx512"; None: the best available,
    capped by QUANTCODEC_SIMD). Returns the level in use. For tests and benchmarks: not safe while
    array calls run in other threads."""
    global _LOOPS, _simd_name
    cdef const loop_table* t
    avail = _simd_available()
    if level is None:
        top = qc_simd_cap()
        level = "baseline"
        for l in avail:             # worst first: the last that fits the cap
            if _SIMD_LEVELS.index(l) <= top:
                level = l
    if level not in avail:
        if level == "baseline":
            raise ImportError("quantcodec._loops_baseline is missing or from another build of quantcodec: "
                              "rebuild it with _arrays (QUANTCODEC_MODULES=_arrays python setup.py build_ext --inplace)")
        raise ValueError(f"array loops {level!r} are not available here; available: {', '.join(avail)}")
    t = _load_loops(level)
    _LOOPS = t
    _simd_name = level
    return _simd_name


def _simd():
    """The instruction set of the array loops in use: "baseline", "avx2" or "avx512"."""
    return _simd_name


_simd_select()


# The other scalar codecs, one loop per kind (the kind is known outside the loop, and each rule is
# small enough for gcc to inline into its loop), and the dispatch on the runtime dtypes:
# `xt`/`ot`: 0 float32, 1 float64; `ct`: 0 uint32, 1 uint64, 2 int32, 3 int64; strides in elements.
# Bounded goes to the loop table. Each loop works on a local copy of the descriptor, which a store
# to `out` cannot alias.

cdef Py_ssize_t _q_loop(const qdesc* dp, const fin_t* x, Py_ssize_t xs, code_t* out, Py_ssize_t os,
                        Py_ssize_t n) noexcept nogil:
    cdef qdesc D = dp[0]
    cdef Py_ssize_t i, nc = 0
    if D.kind == K_FIXED:
        for i in range(n):
            out[i * os] = <code_t>fixed_q(&D, x[i * xs], &nc)
    elif D.kind == K_ANGLE:
        for i in range(n):
            out[i * os] = <code_t>angle_q(&D, x[i * xs], &nc)
    elif D.kind == K_POWER:
        for i in range(n):
            out[i * os] = <code_t>power_q(&D, x[i * xs], &nc)
    elif D.kind == K_HALF:
        for i in range(n):
            out[i * os] = <code_t>half_q(x[i * xs])
    elif D.kind == K_GRID:
        for i in range(n):
            out[i * os] = <code_t>grid_q(&D, x[i * xs], &nc)
    else:
        for i in range(n):
            out[i * os] = <code_t>scalar_q(&D, x[i * xs], &nc)
    return nc


cdef void _dq_loop(const qdesc* dp, const code_t* c, Py_ssize_t cs, fout_t* out, Py_ssize_t os,
                   Py_ssize_t n) noexcept nogil:
    cdef qdesc D = dp[0]
    cdef Py_ssize_t i
    if D.kind == K_FIXED:
        for i in range(n):
            out[i * os] = <fout_t>fixed_dq(&D, <uint64_t>(<int64_t>c[i * cs]))
    elif D.kind == K_ANGLE:
        for i in range(n):
            out[i * os] = <fout_t>angle_dq(&D, <uint64_t>(<int64_t>c[i * cs]))
    elif D.kind == K_POWER:
        for i in range(n):
            out[i * os] = <fout_t>power_dq(&D, <uint64_t>(<int64_t>c[i * cs]))
    elif D.kind == K_HALF:
        for i in range(n):
            out[i * os] = <fout_t>half_dq(<uint64_t>(<int64_t>c[i * cs]))
    elif D.kind == K_GRID:
        for i in range(n):
            out[i * os] = <fout_t>grid_dq(&D, <uint64_t>(<int64_t>c[i * cs]))
    else:
        for i in range(n):
            out[i * os] = <fout_t>scalar_dq(&D, <uint64_t>(<int64_t>c[i * cs]))


cdef Py_ssize_t _rt_loop(const qdesc* dp, const fin_t* x, Py_ssize_t xs, fout_t* out, Py_ssize_t os,
                         Py_ssize_t n) noexcept nogil:
    cdef qdesc D = dp[0]
    cdef Py_ssize_t i, nc = 0
    if D.kind == K_FIXED:
        for i in range(n):
            out[i * os] = <fout_t>fixed_dq(&D, fixed_q(&D, x[i * xs], &nc))
    elif D.kind == K_ANGLE:
        for i in range(n):
            out[i * os] = <fout_t>angle_dq(&D, angle_q(&D, x[i * xs], &nc))
    elif D.kind == K_POWER:
        for i in range(n):
            out[i * os] = <fout_t>power_dq(&D, power_q(&D, x[i * xs], &nc))
    elif D.kind == K_HALF:
        for i in range(n):
            out[i * os] = <fout_t>half_dq(half_q(x[i * xs]))
    elif D.kind == K_GRID:
        for i in range(n):
            out[i * os] = <fout_t>grid_dq(&D, grid_q(&D, x[i * xs], &nc))
    else:
        for i in range(n):
            out[i * os] = <fout_t>scalar_dq(&D, scalar_q(&D, x[i * xs], &nc))
    return nc


cdef Py_ssize_t _first_invalid(const qdesc* dp, const code_t* c, Py_ssize_t cs, Py_ssize_t n) noexcept nogil:
    """Index of the first code that is not valid, or -1."""
    cdef qdesc D = dp[0]
    cdef Py_ssize_t i
    cdef uint64_t bad = 0, m = D.maxcode
    if code_t is uint32_t or code_t is uint64_t:
        if D.kind == K_BOUNDED or D.kind == K_ANGLE or D.kind == K_HALF or D.kind == K_GRID \
                or D.kind == K_UINT or D.kind == K_BOOL or D.kind == K_ENUM or D.kind == K_IRANGE:
            if m >= <uint64_t>(<code_t>-1):
                return -1           # the dtype holds no code above maxcode
            for i in range(n):
                bad |= <uint64_t>(c[i * cs] > m)
            if not bad:
                return -1
    for i in range(n):
        if not scalar_valid(&D, <uint64_t>(<int64_t>c[i * cs])):
            return i
    return -1


cdef Py_ssize_t q_array(const qdesc* d, const void* x, int xt, Py_ssize_t xs, void* out, int ct,
                        Py_ssize_t os, Py_ssize_t n) noexcept nogil:
    """Quantize n floats (stride xs elements) into codes (stride os); returns the clamp count."""
    if d.kind == K_BOUNDED:
        return _LOOPS.bounded_q(d, x, xt, xs, out, ct, os, n)
    if xt == 0:
        if ct == 0:
            return _q_loop(d, <const float*>x, xs, <uint32_t*>out, os, n)
        if ct == 1:
            return _q_loop(d, <const float*>x, xs, <uint64_t*>out, os, n)
        if ct == 2:
            return _q_loop(d, <const float*>x, xs, <int32_t*>out, os, n)
        return _q_loop(d, <const float*>x, xs, <int64_t*>out, os, n)
    if ct == 0:
        return _q_loop(d, <const double*>x, xs, <uint32_t*>out, os, n)
    if ct == 1:
        return _q_loop(d, <const double*>x, xs, <uint64_t*>out, os, n)
    if ct == 2:
        return _q_loop(d, <const double*>x, xs, <int32_t*>out, os, n)
    return _q_loop(d, <const double*>x, xs, <int64_t*>out, os, n)


cdef Py_ssize_t multi_q_array(const qdesc* d, const void* x, int xt, void* out, int ct, Py_ssize_t n,
                              int* st) noexcept nogil:
    """Quat or UnitVector rows (contiguous) into contiguous codes through the selected loop
    table: the first zero / non-finite row (status in *st), or -1."""
    if d.kind == K_QUAT:
        return _LOOPS.quat_q(d, x, xt, out, ct, n, st)
    return _LOOPS.uvec_q(d, x, xt, out, ct, n, st)


cdef Py_ssize_t multi_dq_array(const qdesc* d, const void* c, int ct, void* out, int ot, Py_ssize_t n) noexcept nogil:
    """Contiguous Quat or UnitVector codes into contiguous rows (4 or 3 floats a code) through the
    selected loop table: the first invalid code, or -1."""
    if d.kind == K_QUAT:
        return _LOOPS.quat_dq(d, c, ct, out, ot, n)
    return _LOOPS.uvec_dq(d, c, ct, out, ot, n)


cdef Py_ssize_t multi_rt_array(const qdesc* d, const void* x, int xt, void* out, int ot, Py_ssize_t n,
                               int* st) noexcept nogil:
    """Quat or UnitVector rows through quantize and dequantize: the first zero / non-finite row
    (status in *st), or -1."""
    if d.kind == K_QUAT:
        return _LOOPS.quat_rt(d, x, xt, out, ot, n, st)
    return _LOOPS.uvec_rt(d, x, xt, out, ot, n, st)


cdef Py_ssize_t dq_array(const qdesc* d, const void* c, int ct, Py_ssize_t cs, void* out, int ot,
                         Py_ssize_t os, Py_ssize_t n) noexcept nogil:
    """Dequantize n codes (stride cs) into floats (stride os): the first invalid code (then
    `out` is partly written) or -1."""
    cdef Py_ssize_t bad
    if d.kind == K_BOUNDED:
        return _LOOPS.bounded_dq(d, c, ct, cs, out, ot, os, n)
    bad = first_invalid(d, c, ct, cs, n)
    if bad >= 0:
        return bad
    dq_valid_array(d, c, ct, cs, out, ot, os, n)
    return -1


cdef void dq_valid_array(const qdesc* d, const void* c, int ct, Py_ssize_t cs, void* out, int ot,
                         Py_ssize_t os, Py_ssize_t n) noexcept nogil:
    """dq_array of codes known to be valid: no validity pass (Bounded's loop counts codes above
    maxcode as it goes, and the count is dropped)."""
    if d.kind == K_BOUNDED:
        _LOOPS.bounded_dq(d, c, ct, cs, out, ot, os, n)
        return
    if ot == 1:
        if ct == 0:
            _dq_loop(d, <const uint32_t*>c, cs, <double*>out, os, n)
        elif ct == 1:
            _dq_loop(d, <const uint64_t*>c, cs, <double*>out, os, n)
        elif ct == 2:
            _dq_loop(d, <const int32_t*>c, cs, <double*>out, os, n)
        else:
            _dq_loop(d, <const int64_t*>c, cs, <double*>out, os, n)
    else:
        if ct == 0:
            _dq_loop(d, <const uint32_t*>c, cs, <float*>out, os, n)
        elif ct == 1:
            _dq_loop(d, <const uint64_t*>c, cs, <float*>out, os, n)
        elif ct == 2:
            _dq_loop(d, <const int32_t*>c, cs, <float*>out, os, n)
        else:
            _dq_loop(d, <const int64_t*>c, cs, <float*>out, os, n)


cdef Py_ssize_t rt_array(const qdesc* d, const void* x, int xt, Py_ssize_t xs, void* out, int ot,
                         Py_ssize_t os, Py_ssize_t n) noexcept nogil:
    if d.kind == K_BOUNDED:
        return _LOOPS.bounded_rt(d, x, xt, xs, out, ot, os, n)
    if xt == 0:
        if ot == 0:
            return _rt_loop(d, <const float*>x, xs, <float*>out, os, n)
        return _rt_loop(d, <const float*>x, xs, <double*>out, os, n)
    if ot == 0:
        return _rt_loop(d, <const double*>x, xs, <float*>out, os, n)
    return _rt_loop(d, <const double*>x, xs, <double*>out, os, n)


cdef Py_ssize_t first_invalid(const qdesc* d, const void* c, int ct, Py_ssize_t cs, Py_ssize_t n) noexcept nogil:
    if ct == 0:
        return _first_invalid(d, <const uint32_t*>c, cs, n)
    if ct == 1:
        return _first_invalid(d, <const uint64_t*>c, cs, n)
    if ct == 2:
        return _first_invalid(d, <const int32_t*>c, cs, n)
    return _first_invalid(d, <const int64_t*>c, cs, n)
