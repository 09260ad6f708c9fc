# The array loops of the codecs that vectorize (Bounded, Quat, UnitVector), compiled once per
# instruction set.
#
# Every loop is a `cdef inline` function in this file, so each module that cimports it compiles
# its own copy with its own compiler flags: `_codecs` for the baseline of the platform (any x86-64,
# aarch64, ...) and, on x86-64 with gcc or clang, `_loops_avx2` (-mavx2) and `_loops_avx512`
# (AVX-512 F/CD/BW/DQ/VL, the x86-64-v4 set). Each module fills a `loop_table` with its
# dispatchers; `_codecs` uses the best table the CPU runs, chosen at import. The other scalar
# codecs (a switch on the kind per value) keep their loops in `_codecs.pyx`.
#
# The loops call only the rules of `_kernels.pxd`, written there with selects instead of
# branches, so every table gives the same codes and values bit for bit (setup.py: no -ffast-math,
# no FMA contraction). What the loops add is exact, and is there so that gcc vectorizes them:
# - a code that fits in 31 bits is truncated from its double through int32, a vector instruction
#   on every x86-64 (double -> uint64 is one only with AVX-512), and decoded back through int32;
# - when R is a power of two, (x - lo) / R is computed as (x - lo) * (1 / R): both round the same
#   real number once, so they are equal;
# - each loop works on a local copy of the descriptor (a store to `out` cannot alias it) with the
#   Bounded mode a compile-time constant (`mode_t`);
# - nothing leaves a loop early and flags are counted (`nbad += ...`), never and-ed or or-ed: a
#   zero or non-finite quaternion or vector shows as a NaN norm, a code above maxcode or not
#   `quat_valid` is counted, and a second, scalar pass over the input finds the first bad row;
# - Quat codes are checked and decoded in one pass from the same three kept values.

from libc.math cimport frexp, isfinite
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t

from quantcodec._kernels cimport *


# In the loop modules (`_loops_*.pyx` define QC_LOOPS_MODULE), every `cdef inline` function is
# always inlined: the rules into the loops, the loops into the dispatchers. A rule left as a call
# keeps its loop scalar, and gcc's growth limits (inline-unit-growth, large-function-growth) leave
# some as calls in a module of this many fused specializations (the Quat loops, since the third
# Bounded mode). Other modules that cimport this file keep gcc's own choices.
cdef extern from *:
    """
    #if defined(QC_LOOPS_MODULE) && (defined(__GNUC__) || defined(__clang__))
    #undef CYTHON_INLINE
    #define CYTHON_INLINE inline __attribute__((always_inline))
    #endif
    """


cdef extern from *:
    """
    #ifndef QC_LOOPS_BUILD
    #define QC_LOOPS_BUILD "dev"
    #endif
    """
    # setup.py defines it as a hash of _kernels.pxd and _loops.pxd: a loop module left over from
    # a build of other sources is refused.
    const char* QC_LOOPS_BUILD


# `fin_t`: input floats; `code_t`: the code dtype (`ucode_t` for Quat and UnitVector); `fout_t`:
# output floats.
ctypedef fused fin_t:
    float
    double

ctypedef fused code_t:
    uint32_t
    uint64_t
    int32_t
    int64_t

ctypedef fused ucode_t:
    uint32_t
    uint64_t

ctypedef fused fout_t:
    float
    double

# The Bounded mode as a type, passed as a NULL pointer: each loop is compiled once per mode with the
# mode a constant, so the rules' branch on it leaves the loop (gcc does not reliably specialize a
# runtime mode through inlining, and a select on a loop-invariant flag stops its vectorizer).
ctypedef struct endpoints_t:
    char unused

ctypedef struct bins_t:
    char unused

ctypedef struct midpoint_t:
    char unused

ctypedef fused mode_t:
    endpoints_t
    bins_t
    midpoint_t


# Bump when the table's fields or the dispatchers' signatures change.
cdef enum:
    LOOPS_ABI = 1

# `xt`/`ot`: 0 float32, 1 float64; `ct`: 0 uint32, 1 uint64, 2 int32, 3 int64. Strides in elements.
# Bounded takes any stride (a Vector's columns); Quat and UnitVector contiguous rows. Quantize
# returns the clamp count (Bounded) or the first zero / non-finite row with its status in *st
# (-1: none); dequantize the first invalid code (-1: none; `out` is then partly written).
ctypedef struct loop_table:
    int abi
    int size
    const char* build
    Py_ssize_t (*bounded_q)(const qdesc* d, const void* x, int xt, Py_ssize_t xs, void* out, int ct,
                            Py_ssize_t os, Py_ssize_t n) noexcept nogil
    Py_ssize_t (*bounded_dq)(const qdesc* d, const void* c, int ct, Py_ssize_t cs, void* out, int ot,
                             Py_ssize_t os, Py_ssize_t n) noexcept nogil
    Py_ssize_t (*bounded_rt)(const qdesc* d, const void* x, int xt, Py_ssize_t xs, void* out, int ot,
                             Py_ssize_t os, Py_ssize_t n) noexcept nogil
    Py_ssize_t (*quat_q)(const qdesc* d, const void* x, int xt, void* out, int ct, Py_ssize_t n,
                         int* st) noexcept nogil
    Py_ssize_t (*quat_dq)(const qdesc* d, const void* c, int ct, void* out, int ot, Py_ssize_t n) noexcept nogil
    Py_ssize_t (*quat_rt)(const qdesc* d, const void* x, int xt, void* out, int ot, Py_ssize_t n,
                          int* st) noexcept nogil
    Py_ssize_t (*uvec_q)(const qdesc* d, const void* x, int xt, void* out, int ct, Py_ssize_t n,
                         int* st) noexcept nogil
    Py_ssize_t (*uvec_dq)(const qdesc* d, const void* c, int ct, void* out, int ot, Py_ssize_t n) noexcept nogil
    Py_ssize_t (*uvec_rt)(const qdesc* d, const void* x, int xt, void* out, int ot, Py_ssize_t n,
                          int* st) noexcept nogil


cdef inline int _mode(const mode_t* tag) noexcept nogil:
    if mode_t is endpoints_t:
        return M_ENDPOINTS
    elif mode_t is midpoint_t:
        return M_MIDPOINT
    else:
        return M_BINS


cdef inline bint _pow2(double R) noexcept nogil:
    """Whether R is a power of two with a finite reciprocal, so that v / R == v * (1 / R) exactly."""
    cdef int e
    return frexp(R, &e) == 0.5 and isfinite(1.0 / R)


# ------------------------------------------------------------------------------------------------
# Bounded: quantize and roundtrip return the clamp count, dequantize the first code above maxcode
# (or -1).

cdef inline Py_ssize_t _bounded_q_mode(const qdesc* d, const fin_t* x, Py_ssize_t xs, code_t* out,
                                       Py_ssize_t os, Py_ssize_t n, const mode_t* tag) noexcept nogil:
    cdef int mode = _mode(tag)
    cdef Py_ssize_t i, nc = 0
    cdef double lo = d.lo, hi = d.hi, R = d.R, L = d.L, iR = 1.0 / d.R, v
    if d.bits <= 31 and _pow2(R):
        for i in range(n):
            v = x[i * xs]
            nc += bounded_clamps(v, lo, hi)
            out[i * os] = <code_t><int32_t>bounded_qt((v - lo) * iR, L, mode)
    elif d.bits <= 31:
        for i in range(n):
            v = x[i * xs]
            nc += bounded_clamps(v, lo, hi)
            out[i * os] = <code_t><int32_t>bounded_qd(v, lo, R, L, mode)
    else:
        for i in range(n):
            v = x[i * xs]
            nc += bounded_clamps(v, lo, hi)
            out[i * os] = <code_t>bounded_q(v, lo, R, L, mode)
    return nc


cdef inline Py_ssize_t _bounded_q_loop(const qdesc* d, const fin_t* x, Py_ssize_t xs, code_t* out, Py_ssize_t os,
                                       Py_ssize_t n) noexcept nogil:
    if d.mode == M_ENDPOINTS:
        return _bounded_q_mode(d, x, xs, out, os, n, <endpoints_t*>NULL)
    if d.mode == M_MIDPOINT:
        return _bounded_q_mode(d, x, xs, out, os, n, <midpoint_t*>NULL)
    return _bounded_q_mode(d, x, xs, out, os, n, <bins_t*>NULL)


cdef inline Py_ssize_t _bounded_dq_mode(const qdesc* d, const code_t* c, Py_ssize_t cs, fout_t* out, Py_ssize_t os,
                                        Py_ssize_t n, const mode_t* tag) noexcept nogil:
    cdef int mode = _mode(tag)
    cdef Py_ssize_t i
    cdef double lo = d.lo, hi = d.hi, R = d.R, L = d.L
    cdef uint64_t m = d.maxcode
    cdef Py_ssize_t nbad = 0
    if d.bits <= 31:       # a valid code is below 2**31: exact through int32
        for i in range(n):
            nbad += <uint64_t>c[i * cs] > m
            out[i * os] = <fout_t>bounded_dqd(<double>(<int32_t>c[i * cs]), lo, hi, R, L, mode)
    else:
        for i in range(n):
            nbad += <uint64_t>c[i * cs] > m
            out[i * os] = <fout_t>bounded_dqd(<double>c[i * cs], lo, hi, R, L, mode)
    if nbad:
        for i in range(n):
            if <uint64_t>c[i * cs] > m:
                return i
    return -1


cdef inline Py_ssize_t _bounded_dq_loop(const qdesc* d, const code_t* c, Py_ssize_t cs, fout_t* out, Py_ssize_t os,
                                        Py_ssize_t n) noexcept nogil:
    if d.mode == M_ENDPOINTS:
        return _bounded_dq_mode(d, c, cs, out, os, n, <endpoints_t*>NULL)
    if d.mode == M_MIDPOINT:
        return _bounded_dq_mode(d, c, cs, out, os, n, <midpoint_t*>NULL)
    return _bounded_dq_mode(d, c, cs, out, os, n, <bins_t*>NULL)


cdef inline Py_ssize_t _bounded_rt_mode(const qdesc* d, const fin_t* x, Py_ssize_t xs, fout_t* out, Py_ssize_t os,
                                        Py_ssize_t n, const mode_t* tag) noexcept nogil:
    cdef int mode = _mode(tag)
    cdef Py_ssize_t i, nc = 0
    cdef double lo = d.lo, hi = d.hi, R = d.R, L = d.L, v
    if d.bits <= 31:
        for i in range(n):
            v = x[i * xs]
            nc += bounded_clamps(v, lo, hi)
            out[i * os] = <fout_t>bounded_dqd(<double>(<int32_t>bounded_qd(v, lo, R, L, mode)), lo, hi, R, L, mode)
    else:
        for i in range(n):
            v = x[i * xs]
            nc += bounded_clamps(v, lo, hi)
            out[i * os] = <fout_t>bounded_dq(bounded_q(v, lo, R, L, mode), lo, hi, R, L, mode)
    return nc


cdef inline Py_ssize_t _bounded_rt_loop(const qdesc* d, const fin_t* x, Py_ssize_t xs, fout_t* out, Py_ssize_t os,
                                        Py_ssize_t n) noexcept nogil:
    if d.mode == M_ENDPOINTS:
        return _bounded_rt_mode(d, x, xs, out, os, n, <endpoints_t*>NULL)
    if d.mode == M_MIDPOINT:
        return _bounded_rt_mode(d, x, xs, out, os, n, <midpoint_t*>NULL)
    return _bounded_rt_mode(d, x, xs, out, os, n, <bins_t*>NULL)


# ------------------------------------------------------------------------------------------------
# Quat and UnitVector: contiguous rows of 4 / 3 floats <-> one code each. Quantize and roundtrip
# return the first zero or non-finite row (its status in *status) or -1; dequantize the first
# invalid code or -1.

cdef inline Py_ssize_t _quat_first_bad(const qdesc* d, const fin_t* x, Py_ssize_t n,
                                       int* status) noexcept nogil:
    cdef Py_ssize_t i
    cdef uint64_t c
    cdef int st
    for i in range(n):
        st = quat_q(d, x[4 * i], x[4 * i + 1], x[4 * i + 2], x[4 * i + 3], &c)
        if st != ST_OK:
            status[0] = st
            return i
    return -1


cdef inline Py_ssize_t _quat_q_mode(const qdesc* dp, const fin_t* x, ucode_t* out, Py_ssize_t n, int* status,
                                   const mode_t* tag) noexcept nogil:
    cdef qdesc D = dp[0]      # a local copy: stores to out cannot alias it
    D.mode = _mode(tag)       # a constant: the rules' branch on the mode folds away
    cdef Py_ssize_t i
    cdef int32_t ka, kb, kc
    cdef int idx, cbits = D.cbits
    cdef Py_ssize_t nbad = 0
    for i in range(n):
        idx = quat_smallest3(&D, x[4 * i], x[4 * i + 1], x[4 * i + 2], x[4 * i + 3], &ka, &kb, &kc)
        nbad += idx >> 2
        out[i] = <ucode_t>quat_pack(cbits, idx & 3, ka, kb, kc)
    if nbad:
        return _quat_first_bad(dp, x, n, status)
    return -1


cdef inline Py_ssize_t _quat_q_loop(const qdesc* dp, const fin_t* x, ucode_t* out, Py_ssize_t n,
                                   int* status) noexcept nogil:
    if dp.mode == M_ENDPOINTS:
        return _quat_q_mode(dp, x, out, n, status, <endpoints_t*>NULL)
    if dp.mode == M_MIDPOINT:
        return _quat_q_mode(dp, x, out, n, status, <midpoint_t*>NULL)
    return _quat_q_mode(dp, x, out, n, status, <bins_t*>NULL)


cdef inline Py_ssize_t _quat_dq_mode(const qdesc* dp, const ucode_t* c, fout_t* out, Py_ssize_t n,
                                    const mode_t* tag) noexcept nogil:
    cdef qdesc D = dp[0]      # a local copy: stores to out cannot alias it
    D.mode = _mode(tag)       # a constant: the rules' branch on the mode folds away
    cdef Py_ssize_t i
    cdef double q[4]
    cdef double a, b, cc
    cdef uint64_t v, maxcode = D.maxcode
    cdef int shift = 3 * D.cbits
    cdef Py_ssize_t nbad = 0
    for i in range(n):
        v = <uint64_t>c[i]
        a = quat_kept(&D, v, 0)
        b = quat_kept(&D, v, 1)
        cc = quat_kept(&D, v, 2)
        nbad += not ((v <= maxcode) & quat_valid_kept(&D, a, b, cc))
        quat_rebuild(<int>((v >> shift) & 3), a, b, cc, q)
        out[4 * i] = <fout_t>q[0]
        out[4 * i + 1] = <fout_t>q[1]
        out[4 * i + 2] = <fout_t>q[2]
        out[4 * i + 3] = <fout_t>q[3]
    if nbad:
        for i in range(n):
            if not quat_valid(dp, <uint64_t>c[i]):
                return i
    return -1


cdef inline Py_ssize_t _quat_dq_loop(const qdesc* dp, const ucode_t* c, fout_t* out,
                                    Py_ssize_t n) noexcept nogil:
    if dp.mode == M_ENDPOINTS:
        return _quat_dq_mode(dp, c, out, n, <endpoints_t*>NULL)
    if dp.mode == M_MIDPOINT:
        return _quat_dq_mode(dp, c, out, n, <midpoint_t*>NULL)
    return _quat_dq_mode(dp, c, out, n, <bins_t*>NULL)


cdef inline Py_ssize_t _quat_rt_mode(const qdesc* dp, const fin_t* x, fout_t* out, Py_ssize_t n, int* status,
                                    const mode_t* tag) noexcept nogil:
    cdef qdesc D = dp[0]      # a local copy: stores to out cannot alias it
    D.mode = _mode(tag)       # a constant: the rules' branch on the mode folds away
    cdef Py_ssize_t i
    cdef double q[4]
    cdef double lo = D.lo, hi = D.hi, R = D.R, L = D.L
    cdef int32_t ka, kb, kc
    cdef int idx
    cdef Py_ssize_t nbad = 0
    for i in range(n):
        idx = quat_smallest3(&D, x[4 * i], x[4 * i + 1], x[4 * i + 2], x[4 * i + 3], &ka, &kb, &kc)
        nbad += idx >> 2
        quat_rebuild(idx & 3, bounded_dqd(<double>ka, lo, hi, R, L, D.mode),
                     bounded_dqd(<double>kb, lo, hi, R, L, D.mode), bounded_dqd(<double>kc, lo, hi, R, L, D.mode), q)
        out[4 * i] = <fout_t>q[0]
        out[4 * i + 1] = <fout_t>q[1]
        out[4 * i + 2] = <fout_t>q[2]
        out[4 * i + 3] = <fout_t>q[3]
    if nbad:
        return _quat_first_bad(dp, x, n, status)
    return -1


cdef inline Py_ssize_t _quat_rt_loop(const qdesc* dp, const fin_t* x, fout_t* out, Py_ssize_t n,
                                    int* status) noexcept nogil:
    if dp.mode == M_ENDPOINTS:
        return _quat_rt_mode(dp, x, out, n, status, <endpoints_t*>NULL)
    if dp.mode == M_MIDPOINT:
        return _quat_rt_mode(dp, x, out, n, status, <midpoint_t*>NULL)
    return _quat_rt_mode(dp, x, out, n, status, <bins_t*>NULL)


cdef inline Py_ssize_t _uvec_first_bad(const qdesc* d, const fin_t* x, Py_ssize_t n,
                                       int* status) noexcept nogil:
    cdef Py_ssize_t i
    cdef uint64_t c
    cdef int st
    for i in range(n):
        st = uvec_q(d, x[3 * i], x[3 * i + 1], x[3 * i + 2], &c)
        if st != ST_OK:
            status[0] = st
            return i
    return -1


cdef inline Py_ssize_t _uvec_q_loop(const qdesc* dp, const fin_t* x, ucode_t* out, Py_ssize_t n,
                                   int* status) noexcept nogil:
    cdef qdesc D = dp[0]      # a local copy: stores to out cannot alias it
    cdef Py_ssize_t i
    cdef double vp, vq
    cdef int cbits = D.cbits
    cdef Py_ssize_t nbad = 0
    if cbits <= 31:
        for i in range(n):
            nbad += uvec_oct(&D, x[3 * i], x[3 * i + 1], x[3 * i + 2], &vp, &vq)
            out[i] = <ucode_t>uvec_pack(cbits, <uint64_t>(<int32_t>vp), <uint64_t>(<int32_t>vq))
    else:
        for i in range(n):
            nbad += uvec_oct(&D, x[3 * i], x[3 * i + 1], x[3 * i + 2], &vp, &vq)
            out[i] = <ucode_t>uvec_pack(cbits, <uint64_t>vp, <uint64_t>vq)
    if nbad:
        return _uvec_first_bad(dp, x, n, status)
    return -1


cdef inline Py_ssize_t _uvec_dq_loop(const qdesc* dp, const ucode_t* c, fout_t* out,
                                    Py_ssize_t n) noexcept nogil:
    cdef qdesc D = dp[0]      # a local copy: stores to out cannot alias it
    cdef Py_ssize_t i
    cdef double v[3]
    cdef double lo = D.lo, hi = D.hi, R = D.R, L = D.L
    cdef uint64_t w, maxcode = D.maxcode, mask = (<uint64_t>1 << D.cbits) - 1
    cdef int cbits = D.cbits
    cdef Py_ssize_t nbad = 0
    if cbits <= 31:
        for i in range(n):
            w = <uint64_t>c[i]
            nbad += w > maxcode
            uvec_rebuild(bounded_dqd(<double>(<int32_t>((w >> cbits) & mask)), lo, hi, R, L, M_ENDPOINTS),
                         bounded_dqd(<double>(<int32_t>(w & mask)), lo, hi, R, L, M_ENDPOINTS), v)
            out[3 * i] = <fout_t>v[0]
            out[3 * i + 1] = <fout_t>v[1]
            out[3 * i + 2] = <fout_t>v[2]
    else:
        for i in range(n):
            w = <uint64_t>c[i]
            nbad += w > maxcode
            uvec_dq(&D, w, v)
            out[3 * i] = <fout_t>v[0]
            out[3 * i + 1] = <fout_t>v[1]
            out[3 * i + 2] = <fout_t>v[2]
    if nbad:
        for i in range(n):
            if <uint64_t>c[i] > maxcode:
                return i
    return -1


cdef inline Py_ssize_t _uvec_rt_loop(const qdesc* dp, const fin_t* x, fout_t* out, Py_ssize_t n,
                                    int* status) noexcept nogil:
    cdef qdesc D = dp[0]      # a local copy: stores to out cannot alias it
    cdef Py_ssize_t i
    cdef double v[3]
    cdef double vp, vq, lo = D.lo, hi = D.hi, R = D.R, L = D.L
    cdef Py_ssize_t nbad = 0
    if D.cbits <= 31:
        for i in range(n):
            nbad += uvec_oct(&D, x[3 * i], x[3 * i + 1], x[3 * i + 2], &vp, &vq)
            uvec_rebuild(bounded_dqd(<double>(<int32_t>vp), lo, hi, R, L, M_ENDPOINTS),
                         bounded_dqd(<double>(<int32_t>vq), lo, hi, R, L, M_ENDPOINTS), v)
            out[3 * i] = <fout_t>v[0]
            out[3 * i + 1] = <fout_t>v[1]
            out[3 * i + 2] = <fout_t>v[2]
    else:
        for i in range(n):
            nbad += uvec_oct(&D, x[3 * i], x[3 * i + 1], x[3 * i + 2], &vp, &vq)
            uvec_rebuild(bounded_dqd(<double>(<uint64_t>vp), lo, hi, R, L, M_ENDPOINTS),
                         bounded_dqd(<double>(<uint64_t>vq), lo, hi, R, L, M_ENDPOINTS), v)
            out[3 * i] = <fout_t>v[0]
            out[3 * i + 1] = <fout_t>v[1]
            out[3 * i + 2] = <fout_t>v[2]
    if nbad:
        return _uvec_first_bad(dp, x, n, status)
    return -1


# ------------------------------------------------------------------------------------------------
# Dispatch on the runtime dtypes to the fused specializations: the entries of a loop_table.

cdef inline Py_ssize_t bounded_q_array(const qdesc* d, const void* x, int xt, Py_ssize_t xs, void* out, int ct,
                                       Py_ssize_t os, Py_ssize_t n) noexcept nogil:
    """Quantize n floats (stride xs elements) into codes (stride os); returns the clamp count."""
    if xt == 0:
        if ct == 0:
            return _bounded_q_loop(d, <const float*>x, xs, <uint32_t*>out, os, n)
        if ct == 1:
            return _bounded_q_loop(d, <const float*>x, xs, <uint64_t*>out, os, n)
        if ct == 2:
            return _bounded_q_loop(d, <const float*>x, xs, <int32_t*>out, os, n)
        return _bounded_q_loop(d, <const float*>x, xs, <int64_t*>out, os, n)
    if ct == 0:
        return _bounded_q_loop(d, <const double*>x, xs, <uint32_t*>out, os, n)
    if ct == 1:
        return _bounded_q_loop(d, <const double*>x, xs, <uint64_t*>out, os, n)
    if ct == 2:
        return _bounded_q_loop(d, <const double*>x, xs, <int32_t*>out, os, n)
    return _bounded_q_loop(d, <const double*>x, xs, <int64_t*>out, os, n)


cdef inline Py_ssize_t bounded_dq_array(const qdesc* d, const void* c, int ct, Py_ssize_t cs, void* out, int ot,
                                        Py_ssize_t os, Py_ssize_t n) noexcept nogil:
    """Dequantize n codes (stride cs) into floats (stride os); the first code above maxcode or -1."""
    if ot == 1:
        if ct == 0:
            return _bounded_dq_loop(d, <const uint32_t*>c, cs, <double*>out, os, n)
        if ct == 1:
            return _bounded_dq_loop(d, <const uint64_t*>c, cs, <double*>out, os, n)
        if ct == 2:
            return _bounded_dq_loop(d, <const int32_t*>c, cs, <double*>out, os, n)
        return _bounded_dq_loop(d, <const int64_t*>c, cs, <double*>out, os, n)
    if ct == 0:
        return _bounded_dq_loop(d, <const uint32_t*>c, cs, <float*>out, os, n)
    if ct == 1:
        return _bounded_dq_loop(d, <const uint64_t*>c, cs, <float*>out, os, n)
    if ct == 2:
        return _bounded_dq_loop(d, <const int32_t*>c, cs, <float*>out, os, n)
    return _bounded_dq_loop(d, <const int64_t*>c, cs, <float*>out, os, n)


cdef inline Py_ssize_t bounded_rt_array(const qdesc* d, const void* x, int xt, Py_ssize_t xs, void* out, int ot,
                                        Py_ssize_t os, Py_ssize_t n) noexcept nogil:
    if xt == 0:
        if ot == 0:
            return _bounded_rt_loop(d, <const float*>x, xs, <float*>out, os, n)
        return _bounded_rt_loop(d, <const float*>x, xs, <double*>out, os, n)
    if ot == 0:
        return _bounded_rt_loop(d, <const double*>x, xs, <float*>out, os, n)
    return _bounded_rt_loop(d, <const double*>x, xs, <double*>out, os, n)


cdef inline Py_ssize_t quat_q_array(const qdesc* d, const void* x, int xt, void* out, int ct, Py_ssize_t n,
                                    int* st) noexcept nogil:
    if xt == 0:
        if ct == 0:
            return _quat_q_loop(d, <const float*>x, <uint32_t*>out, n, st)
        return _quat_q_loop(d, <const float*>x, <uint64_t*>out, n, st)
    if ct == 0:
        return _quat_q_loop(d, <const double*>x, <uint32_t*>out, n, st)
    return _quat_q_loop(d, <const double*>x, <uint64_t*>out, n, st)


cdef inline Py_ssize_t quat_dq_array(const qdesc* d, const void* c, int ct, void* out, int ot,
                                     Py_ssize_t n) noexcept nogil:
    if ct == 0:
        if ot == 0:
            return _quat_dq_loop(d, <const uint32_t*>c, <float*>out, n)
        return _quat_dq_loop(d, <const uint32_t*>c, <double*>out, n)
    if ot == 0:
        return _quat_dq_loop(d, <const uint64_t*>c, <float*>out, n)
    return _quat_dq_loop(d, <const uint64_t*>c, <double*>out, n)


cdef inline Py_ssize_t quat_rt_array(const qdesc* d, const void* x, int xt, void* out, int ot, Py_ssize_t n,
                                     int* st) noexcept nogil:
    if xt == 0:
        if ot == 0:
            return _quat_rt_loop(d, <const float*>x, <float*>out, n, st)
        return _quat_rt_loop(d, <const float*>x, <double*>out, n, st)
    if ot == 0:
        return _quat_rt_loop(d, <const double*>x, <float*>out, n, st)
    return _quat_rt_loop(d, <const double*>x, <double*>out, n, st)


cdef inline Py_ssize_t uvec_q_array(const qdesc* d, const void* x, int xt, void* out, int ct, Py_ssize_t n,
                                    int* st) noexcept nogil:
    if xt == 0:
        if ct == 0:
            return _uvec_q_loop(d, <const float*>x, <uint32_t*>out, n, st)
        return _uvec_q_loop(d, <const float*>x, <uint64_t*>out, n, st)
    if ct == 0:
        return _uvec_q_loop(d, <const double*>x, <uint32_t*>out, n, st)
    return _uvec_q_loop(d, <const double*>x, <uint64_t*>out, n, st)


cdef inline Py_ssize_t uvec_dq_array(const qdesc* d, const void* c, int ct, void* out, int ot,
                                     Py_ssize_t n) noexcept nogil:
    if ct == 0:
        if ot == 0:
            return _uvec_dq_loop(d, <const uint32_t*>c, <float*>out, n)
        return _uvec_dq_loop(d, <const uint32_t*>c, <double*>out, n)
    if ot == 0:
        return _uvec_dq_loop(d, <const uint64_t*>c, <float*>out, n)
    return _uvec_dq_loop(d, <const uint64_t*>c, <double*>out, n)


cdef inline Py_ssize_t uvec_rt_array(const qdesc* d, const void* x, int xt, void* out, int ot, Py_ssize_t n,
                                     int* st) noexcept nogil:
    if xt == 0:
        if ot == 0:
            return _uvec_rt_loop(d, <const float*>x, <float*>out, n, st)
        return _uvec_rt_loop(d, <const float*>x, <double*>out, n, st)
    if ot == 0:
        return _uvec_rt_loop(d, <const double*>x, <float*>out, n, st)
    return _uvec_rt_loop(d, <const double*>x, <double*>out, n, st)


cdef inline void fill_loop_table(loop_table* t) noexcept nogil:
    t.abi = LOOPS_ABI
    t.size = sizeof(loop_table)
    t.build = QC_LOOPS_BUILD
    t.bounded_q = bounded_q_array
    t.bounded_dq = bounded_dq_array
    t.bounded_rt = bounded_rt_array
    t.quat_q = quat_q_array
    t.quat_dq = quat_dq_array
    t.quat_rt = quat_rt_array
    t.uvec_q = uvec_q_array
    t.uvec_dq = uvec_dq_array
    t.uvec_rt = uvec_rt_array
