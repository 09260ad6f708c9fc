# The quantization rules of quantcodec, each written once as a C inline function.
#
# Every path (per value, per array, per schema field, per delta) calls these functions, so a rule
# can never drift between paths. They are `noexcept nogil`: errors leave them as return codes.
# `quantcodec/_reference.py` states the same rules in plain NumPy; the tests compare the two code
# for code.
#
# A code is always carried as uint64_t. Signed codecs (Fixed signed, Int) carry the two's
# complement of their int64 value; the wire takes the low `bits` bits.

from libc.stdint cimport uint64_t, int64_t, uint32_t, uint16_t, int32_t, INT64_MIN, INT64_MAX
from libc.math cimport floor, fabs, sqrt, fmod, pow, round, isnan, isfinite


cdef extern from *:
    """
    #include <string.h>
    static inline uint64_t qc_double_bits(double x) { uint64_t u; memcpy(&u, &x, 8); return u; }
    static inline double qc_bits_double(uint64_t u) { double x; memcpy(&x, &u, 8); return x; }
    #define QC_SQRT1_2 0.70710678118654752440
    """
    const double SQRT1_2 "QC_SQRT1_2"
    uint64_t qc_double_bits(double x) noexcept nogil
    double qc_bits_double(uint64_t u) noexcept nogil


# Codec kinds. Scalar kinds first; Quat and UnitVector take several floats per code.
cdef enum:
    K_BOUNDED = 1
    K_FIXED = 2
    K_ANGLE = 3
    K_POWER = 4
    K_HALF = 5
    K_UINT = 6
    K_INT = 7
    K_BOOL = 8
    K_ENUM = 9
    K_GRID = 10
    K_QUAT = 11
    K_UVEC = 12
    K_IRANGE = 13     # IntRange: smin = lo, smax = hi, maxcode = hi - lo; code = value - lo

# Bounded modes
cdef enum:
    M_ENDPOINTS = 0
    M_BINS = 1
    M_MIDPOINT = 2     # endpoints with L = 2**b - 2 intervals: the middle code decodes to the centre

# Status of the multi-float kernels.
cdef enum:
    ST_OK = 0
    ST_ZERO = 1        # zero vector / quaternion
    ST_NONFINITE = 2   # NaN or infinite component



ctypedef struct qdesc:
    int kind
    int bits          # bits on the wire for one code
    int mode          # Bounded/Quat: M_ENDPOINTS, M_BINS or M_MIDPOINT; Fixed/Angle: signed flag
    int cbits         # Quat/UnitVector: bits per component; Grid: offset bits
    double lo         # Bounded/Quat/UnitVector: range start; Fixed: offset; Power: max; Grid: cell size; Angle: full turn
    double hi         # Bounded/Quat/UnitVector: range end; Fixed: step; Power: pow
    double R          # hi - lo (Bounded/Quat/UnitVector); Power: 1 / pow
    double L          # endpoints: 2**b - 1; midpoint: 2**b - 2; bins, Angle, Grid: 2**b; Power: 2**(b-1) - 1
    uint64_t maxcode  # 2**bits - 1 (Enum: n - 1; Bounded midpoint: 2**bits - 2)
    int64_t smin      # signed range (Fixed, Int), Grid cell range, IntRange lo..hi
    int64_t smax
    double fmin       # Fixed/Int: smin as a double; Fixed: 2**(bits-1) or 2**bits as clamp limit in fmax
    double fmax


cdef inline bint qdesc_signed(const qdesc* d) noexcept nogil:
    """The carriers of this kind are sign-extended: Int, signed Fixed (two's complement int64,
    the wire holding the low `bits` bits)."""
    return d.kind == K_INT or (d.kind == K_FIXED and d.mode != 0)


# ----------------------------------------------------------------------------------------------
# Bounded: the uniform rule, also used for the components of Quat and UnitVector.

# Each rule is written once, with selects rather than branches (`a if cond else b` on doubles, `|`
# rather than `or` on flags), so that gcc turns the array loops of `_loops.pxd` into SIMD code; the
# per-value paths call the same functions. A code is computed as a double first (`bounded_qt`), so
# a loop can truncate it to int32 (a vector instruction on every x86-64) where it fits in 31 bits.

cdef inline double bounded_qt(double t, double L, int mode) noexcept nogil:
    """The Bounded code of `t = (x - lo) / R` as a double: truncating it gives the code.

    endpoints and midpoint share the rule; only L differs (2**b - 1, resp. 2**b - 2)."""
    if mode != M_BINS:
        t = t if t > 0.0 else 0.0      # NaN lands here too
        t = t if t < 1.0 else 1.0
        return t * L + 0.5              # non-negative: truncation is floor
    t = t * L
    t = t if t > 0.0 else 0.0          # NaN and below the range: bin 0
    return t if t < L else L - 1.0     # at or above the top (+inf too): the last bin


cdef inline double bounded_qd(double x, double lo, double R, double L, int mode) noexcept nogil:
    return bounded_qt((x - lo) / R, L, mode)


cdef inline uint64_t bounded_q(double x, double lo, double R, double L, int mode) noexcept nogil:
    return <uint64_t>bounded_qd(x, lo, R, L, mode)


cdef inline double bounded_dqd(double cd, double lo, double hi, double R, double L, int mode) noexcept nogil:
    """The value of the Bounded code `cd`, given as a double (exact: codes have at most 32 bits)."""
    cdef double v
    if mode == M_ENDPOINTS:
        v = lo + (cd * R) / L
        v = hi if cd == L else v
        return lo if cd == 0.0 else v
    if mode == M_MIDPOINT:
        # L is even: the middle code L / 2 decodes to exactly the centre (0.0 in a symmetric range)
        v = lo + (cd * R) / L
        v = (lo + hi) * 0.5 if cd + cd == L else v
        v = hi if cd == L else v
        return lo if cd == 0.0 else v
    return lo + ((cd + 0.5) * R) / L


cdef inline double bounded_dq(uint64_t c, double lo, double hi, double R, double L, int mode) noexcept nogil:
    return bounded_dqd(<double>c, lo, hi, R, L, mode)


cdef inline bint bounded_clamps(double x, double lo, double hi) noexcept nogil:
    return (x < lo) | (x > hi) | (x != x)     # not (lo <= x <= hi), NaN included


# ----------------------------------------------------------------------------------------------
# Fixed point: round half away from zero, clamp to the code range.

cdef inline uint64_t fixed_q(const qdesc* d, double x, Py_ssize_t* nclamp) noexcept nogil:
    cdef double v = (x - d.lo) / d.hi
    cdef double r
    if v != v:
        nclamp[0] += 1
        return 0
    r = round(v)
    if r < d.fmin:
        nclamp[0] += 1
        return <uint64_t>d.smin
    if r >= d.fmax:
        nclamp[0] += 1
        return <uint64_t>d.smax if d.mode else d.maxcode
    if d.mode:
        return <uint64_t>(<int64_t>r)
    return <uint64_t>r


cdef inline double fixed_dq(const qdesc* d, uint64_t c) noexcept nogil:
    if d.mode:
        return d.lo + (<double>(<int64_t>c)) * d.hi
    return d.lo + (<double>c) * d.hi


# ----------------------------------------------------------------------------------------------
# Angle: wrap onto the circle, round to the nearest of 2**bits steps, modulo 2**bits.

cdef inline uint64_t angle_q(const qdesc* d, double x, Py_ssize_t* nclamp) noexcept nogil:
    cdef double w
    if not isfinite(x):
        nclamp[0] += 1
        return 0
    # fmod(x, full) is x itself when |x| < full: skip the slow call in the common case
    w = x if fabs(x) < d.lo else fmod(x, d.lo)
    if w < 0.0:
        w = w + d.lo
    return (<uint64_t>(w / d.lo * d.L + 0.5)) & d.maxcode


cdef inline double angle_dq(const qdesc* d, uint64_t c) noexcept nogil:
    cdef int64_t sc = <int64_t>c
    if d.mode and c > (d.maxcode >> 1):
        sc = sc - <int64_t>(d.maxcode) - 1
    return (<double>sc * d.lo) / d.L


# ----------------------------------------------------------------------------------------------
# PowerCurve: sign bit on top, magnitude on a power curve below it.

# t ** (1 / pow) and r ** pow. For pow 1 and 2 the exact IEEE operations are used (identity,
# sqrt, one multiply): correctly rounded, so every platform's libm gives the same codes, and
# fast. Other exponents call the C library's pow.
cdef inline double power_root(double t, double p, double inv_p) noexcept nogil:
    if p == 1.0:
        return t
    if p == 2.0:
        return sqrt(t)
    return pow(t, inv_p)


cdef inline double power_raise(double r, double p) noexcept nogil:
    if p == 1.0:
        return r
    if p == 2.0:
        return r * r
    return pow(r, p)


cdef inline uint64_t power_q(const qdesc* d, double x, Py_ssize_t* nclamp) noexcept nogil:
    cdef double a = fabs(x)
    cdef uint64_t m
    if a != a:
        nclamp[0] += 1
        return 0
    if a > d.lo:
        nclamp[0] += 1
        a = d.lo
    m = <uint64_t>(power_root(a / d.lo, d.hi, d.R) * d.L + 0.5)
    if m == 0:
        return 0
    if x < 0.0:
        return (<uint64_t>1 << (d.bits - 1)) | m
    return m


cdef inline double power_dq(const qdesc* d, uint64_t c) noexcept nogil:
    cdef uint64_t m = c & (d.maxcode >> 1)
    cdef double v
    if m == 0:
        return 0.0
    v = d.lo * power_raise(<double>m / d.L, d.hi)
    if c >> (d.bits - 1):
        return -v
    return v


# ----------------------------------------------------------------------------------------------
# Half: IEEE binary16, bit-identical to NumPy's float64 -> float16 conversion (npy_halffloat.c).

cdef inline uint64_t half_q(double x) noexcept nogil:
    cdef uint64_t d = qc_double_bits(x)
    cdef uint64_t h_sgn = (d & 0x8000000000000000ULL) >> 48
    cdef uint64_t d_exp = d & 0x7ff0000000000000ULL
    cdef uint64_t d_sig, ret, h_exp
    if d_exp >= 0x40f0000000000000ULL:
        if d_exp == 0x7ff0000000000000ULL:
            d_sig = d & 0x000fffffffffffffULL
            if d_sig != 0:
                ret = 0x7c00 + (d_sig >> 42)
                if ret == 0x7c00:
                    ret += 1
                return h_sgn + ret
        return h_sgn + 0x7c00
    if d_exp <= 0x3f00000000000000ULL:
        if d_exp < 0x3e60000000000000ULL:
            return h_sgn
        d_exp >>= 52
        d_sig = 0x0010000000000000ULL + (d & 0x000fffffffffffffULL)
        d_sig <<= (d_exp - 998)
        if (d_sig & 0x003fffffffffffffULL) != 0x0010000000000000ULL:
            d_sig += 0x0010000000000000ULL
        return h_sgn + (d_sig >> 53)
    h_exp = (d_exp - 0x3f00000000000000ULL) >> 42
    d_sig = d & 0x000fffffffffffffULL
    if (d_sig & 0x000007ffffffffffULL) != 0x0000020000000000ULL:
        d_sig += 0x0000020000000000ULL
    return h_sgn + h_exp + (d_sig >> 42)


cdef inline double half_dq(uint64_t h) noexcept nogil:
    cdef uint64_t h_exp = h & 0x7c00
    cdef uint64_t d_sgn = (h & 0x8000) << 48
    cdef uint64_t h_sig
    cdef int e
    if h_exp == 0:
        h_sig = h & 0x03ff
        if h_sig == 0:
            return qc_bits_double(d_sgn)
        h_sig <<= 1
        e = 0
        while (h_sig & 0x0400) == 0:
            h_sig <<= 1
            e += 1
        return qc_bits_double(d_sgn + ((<uint64_t>(1023 - 15 - e)) << 52) + ((h_sig & 0x03ff) << 42))
    if h_exp == 0x7c00:
        return qc_bits_double(d_sgn + 0x7ff0000000000000ULL + ((h & 0x03ff) << 42))
    return qc_bits_double(d_sgn + (((h & 0x7fff) + 0xfc000) << 42))


# ----------------------------------------------------------------------------------------------
# Grid: signed cell index in the high bits, bins-rule offset inside the cell in the low bits.

cdef inline uint64_t grid_q(const qdesc* d, double x, Py_ssize_t* nclamp) noexcept nogil:
    cdef double u = x / d.lo
    cdef double cell, t, v
    cdef uint64_t off, cmask
    if u != u:
        nclamp[0] += 1
        return 0
    cmask = (d.maxcode >> d.cbits)
    if u < d.fmin:                      # fmin = -2**(cell_bits-1), exact in a double
        nclamp[0] += 1
        return ((<uint64_t>d.smin) & cmask) << d.cbits
    cell = floor(u)
    if cell >= d.fmax:                  # fmax = 2**(cell_bits-1): smax itself may not be a double
        nclamp[0] += 1
        return (((<uint64_t>d.smax) & cmask) << d.cbits) | ((<uint64_t>1 << d.cbits) - 1)
    t = u - cell
    v = t * d.L
    if v >= d.L:
        off = (<uint64_t>1 << d.cbits) - 1
    else:
        off = <uint64_t>v
    return (((<uint64_t>(<int64_t>cell)) & cmask) << d.cbits) | off


cdef inline double grid_dq(const qdesc* d, uint64_t c) noexcept nogil:
    # Shift the code's top bit to bit 63, then back down arithmetically: the cell, sign-extended
    # without a branch (a data-dependent branch here is mispredicted on random cells in the array
    # loop; bench/README.md).
    cdef int up = 64 - d.bits
    cdef int64_t cell = (<int64_t>(c << up)) >> (up + d.cbits)
    cdef uint64_t off = c & ((<uint64_t>1 << d.cbits) - 1)
    return (<double>cell + (<double>off + 0.5) / d.L) * d.lo


# ----------------------------------------------------------------------------------------------
# The float scalar kinds behind one switch (used where the kind is not known at compile time).

cdef inline uint64_t scalar_q(const qdesc* d, double x, Py_ssize_t* nclamp) noexcept nogil:
    if d.kind == K_BOUNDED:
        if bounded_clamps(x, d.lo, d.hi):
            nclamp[0] += 1
        return bounded_q(x, d.lo, d.R, d.L, d.mode)
    elif d.kind == K_FIXED:
        return fixed_q(d, x, nclamp)
    elif d.kind == K_ANGLE:
        return angle_q(d, x, nclamp)
    elif d.kind == K_POWER:
        return power_q(d, x, nclamp)
    elif d.kind == K_HALF:
        return half_q(x)
    elif d.kind == K_GRID:
        return grid_q(d, x, nclamp)
    return 0


cdef inline double scalar_dq(const qdesc* d, uint64_t c) noexcept nogil:
    if d.kind == K_BOUNDED:
        return bounded_dq(c, d.lo, d.hi, d.R, d.L, d.mode)
    elif d.kind == K_FIXED:
        return fixed_dq(d, c)
    elif d.kind == K_ANGLE:
        return angle_dq(d, c)
    elif d.kind == K_POWER:
        return power_dq(d, c)
    elif d.kind == K_HALF:
        return half_dq(c)
    elif d.kind == K_GRID:
        return grid_dq(d, c)
    elif d.kind == K_INT:
        return <double>(<int64_t>c)
    return <double>c


cdef inline bint scalar_valid(const qdesc* d, uint64_t c) noexcept nogil:
    """Whether the uint64 carrier `c` is a canonical code (signed kinds: two's complement int64)."""
    cdef int64_t s
    if qdesc_signed(d):
        s = <int64_t>c
        return s >= d.smin and s <= d.smax
    if c > d.maxcode:
        return False
    if d.kind == K_POWER:
        return not (c >> (d.bits - 1) and (c & (d.maxcode >> 1)) == 0)
    if d.kind == K_ENUM or d.kind == K_IRANGE:
        return c <= d.maxcode
    return True


cdef inline bint scalar_all_valid(const qdesc* d) noexcept nogil:
    """Whether scalar_valid accepts every code from_wire can give (every bits-bit wire value,
    sign-extended for the signed kinds): true for full-range Bounded, Angle, UInt, Int, Grid,
    Half and Fixed; never for PowerCurve (its negative zero) or Enum."""
    cdef int b = d.bits
    if b <= 0 or b > 64:
        return False
    if qdesc_signed(d):
        if b == 64:
            return d.smin == INT64_MIN and d.smax == INT64_MAX
        return d.smin <= -((<int64_t>1) << (b - 1)) and d.smax >= ((<int64_t>1) << (b - 1)) - 1
    if d.kind == K_POWER or d.kind == K_ENUM:
        return False
    return d.maxcode >= (~(<uint64_t>0) >> (64 - b))


cdef inline uint64_t to_wire(const qdesc* d, uint64_t c) noexcept nogil:
    """The low `bits` bits of a code, as the bit stream carries it."""
    if d.bits >= 64:
        return c
    return c & ((<uint64_t>1 << d.bits) - 1)


cdef inline uint64_t from_wire(const qdesc* d, uint64_t w) noexcept nogil:
    """A code from its `bits` wire bits: sign-extends the signed kinds."""
    if qdesc_signed(d) and d.bits < 64 and d.bits > 0:
        if w >> (d.bits - 1):
            return w | (~(<uint64_t>0) << d.bits)
    return w


# ----------------------------------------------------------------------------------------------
# NearlyZero: a value within the threshold of zero is at rest (its flag 0, its inner code not
# sent); NaN is not (it is quantized by the inner codec, as any moving value).

cdef inline bint nz_at_rest(double v, double threshold) noexcept nogil:
    return fabs(v) <= threshold


# ----------------------------------------------------------------------------------------------
# Quat: smallest three.
#
# The per-value functions `quat_q`, `quat_dq` and `quat_valid` are built from three branch-free
# parts that the array loops of `_loops.pxd` call directly: `quat_smallest3` (normalize, pick the
# largest, flip the sign, quantize the other three), `quat_rebuild` (the dropped component and the
# final normalization) and `quat_valid_kept`. The operations and their order are the rule's, so
# every path gives the same codes and values bit for bit.

cdef inline int quat_smallest3(const qdesc* d, double x0, double x1, double x2, double x3,
                               int32_t* ka, int32_t* kb, int32_t* kc) noexcept nogil:
    """Index of the dropped (largest) component, and the codes of the kept three in index order.

    4 is added to the index when the quaternion is zero or not finite (its norm is then NaN);
    the codes are then meaningless but harmless (NaN quantizes to 0).
    """
    cdef double m, n, best, big, a, b, c
    cdef int idx
    cdef bint u
    m = fabs(x0) if fabs(x0) > 0.0 else 0.0
    m = fabs(x1) if fabs(x1) > m else m
    m = fabs(x2) if fabs(x2) > m else m
    m = fabs(x3) if fabs(x3) > m else m
    x0 = x0 / m
    x1 = x1 / m
    x2 = x2 / m
    x3 = x3 / m
    n = sqrt(((x0 * x0 + x1 * x1) + x2 * x2) + x3 * x3)
    x0 = x0 / n
    x1 = x1 / n
    x2 = x2 / n
    x3 = x3 / n
    # The first largest |q_i| (strict >), and the other three in index order, one select each.
    best = fabs(x0)
    big = x0
    a = x1
    b = x2
    c = x3
    idx = 0
    u = fabs(x1) > best
    best = fabs(x1) if u else best
    big = x1 if u else big
    a = x0 if u else a
    idx = 1 if u else idx
    u = fabs(x2) > best
    best = fabs(x2) if u else best
    big = x2 if u else big
    a = x0 if u else a
    b = x1 if u else b
    idx = 2 if u else idx
    u = fabs(x3) > best
    big = x3 if u else big
    a = x0 if u else a
    b = x1 if u else b
    c = x2 if u else c
    idx = 3 if u else idx
    u = big < 0.0                      # q and -q are one rotation: make the largest positive
    a = -a if u else a
    b = -b if u else b
    c = -c if u else c
    ka[0] = <int32_t>bounded_qd(a, d.lo, d.R, d.L, d.mode)
    kb[0] = <int32_t>bounded_qd(b, d.lo, d.R, d.L, d.mode)
    kc[0] = <int32_t>bounded_qd(c, d.lo, d.R, d.L, d.mode)
    return idx + (4 if n != n else 0)


cdef inline uint64_t quat_pack(int cbits, int idx, int32_t ka, int32_t kb, int32_t kc) noexcept nogil:
    """index << 3b | a << 2b | b << b | c."""
    return (((((((<uint64_t>idx) << cbits) | <uint64_t>ka) << cbits) | <uint64_t>kb) << cbits) | <uint64_t>kc)


cdef inline int quat_q(const qdesc* d, double x0, double x1, double x2, double x3, uint64_t* code) noexcept nogil:
    cdef int32_t ka, kb, kc
    cdef int idx
    if not (isfinite(x0) and isfinite(x1) and isfinite(x2) and isfinite(x3)):
        return ST_NONFINITE
    if x0 == 0.0 and x1 == 0.0 and x2 == 0.0 and x3 == 0.0:
        return ST_ZERO
    idx = quat_smallest3(d, x0, x1, x2, x3, &ka, &kb, &kc)
    code[0] = quat_pack(d.cbits, idx, ka, kb, kc)
    return ST_OK


cdef inline double quat_kept(const qdesc* d, uint64_t c, int k) noexcept nogil:
    """Value of kept component k (0: a, the high bits .. 2: c, the low bits) of code c."""
    cdef uint64_t mask = (<uint64_t>1 << d.cbits) - 1
    return bounded_dqd(<double>(<int32_t>((c >> ((2 - k) * d.cbits)) & mask)), d.lo, d.hi, d.R, d.L, d.mode)


cdef inline void quat_rebuild(int idx, double a, double b, double c, double* out) noexcept nogil:
    """The unit quaternion from the dropped index and the three kept values (index order)."""
    cdef double s = (a * a + b * b) + c * c
    cdef double w = sqrt(1.0 - s if 1.0 - s > 0.0 else 0.0)
    cdef double q0 = a, q1 = b, q2 = c, q3 = w, n      # idx 3: (a, b, c, w)
    cdef bint u = idx <= 2                             # idx 2: (a, b, w, c)
    q3 = c if u else q3
    q2 = w if u else q2
    u = idx <= 1                                       # idx 1: (a, w, b, c)
    q2 = b if u else q2
    q1 = w if u else q1
    u = idx == 0                                       # idx 0: (w, a, b, c)
    q1 = a if u else q1
    q0 = w if u else q0
    n = sqrt(((q0 * q0 + q1 * q1) + q2 * q2) + q3 * q3)
    out[0] = q0 / n
    out[1] = q1 / n
    out[2] = q2 / n
    out[3] = q3 / n


cdef inline void quat_dq(const qdesc* d, uint64_t c, double* out) noexcept nogil:
    quat_rebuild(<int>((c >> (3 * d.cbits)) & 3), quat_kept(d, c, 0), quat_kept(d, c, 1), quat_kept(d, c, 2), out)


cdef inline double quat_shrunk(double x, double st) noexcept nogil:
    """A kept value's magnitude moved toward zero by the component step st (stopping at zero)."""
    x = fabs(x) - st
    return 0.0 if x < 0.0 else x


cdef inline double quat_kept_sum(double a, double b, double c) noexcept nogil:
    """The sum of squares of the three kept values, in the order of _reference.quat_valid."""
    return (a * a + b * b) + c * c


cdef inline double quat_kept_big(double a, double b, double c) noexcept nogil:
    """The largest of the three kept values (shrunk: non-negative), 0.0 if none is positive."""
    cdef double big = c if c > 0.0 else 0.0
    big = b if b > big else big
    return a if a > big else big


cdef inline bint quat_valid_shrunk(double a, double b, double c) noexcept nogil:
    """The validity test on the three shrunk kept values (index order)."""
    cdef double s = quat_kept_sum(a, b, c)
    return (not (s > 1.0)) & (sqrt(1.0 - s) >= quat_kept_big(a, b, c))


cdef inline bint quat_valid_shrunk_branchy(double a, double b, double c) noexcept nogil:
    """quat_valid_shrunk, exactly, mostly without the square root (for scalar code, where it
    is on the way: the snapshot decoder). With x = 1 - s >= 0 and p = big * big rounded:
    x >= p * (1 + 2**-50) implies x >= big**2 exactly, so sqrt(x) >= big and its rounding too;
    x < p * (1 - 2**-50) implies sqrt(x) < big * (1 - 2**-52), below the double under big, so
    sqrt(x) rounds below big. Between the two, and where big * big could be inexact for being
    tiny, the square root decides. (tests/test_snapshot.py checks it against quat_valid_shrunk
    within a few ulps of the boundary, and every code of small Quats against Quat.valid.)"""
    cdef double s = quat_kept_sum(a, b, c)
    cdef double big = quat_kept_big(a, b, c)
    cdef double x, p
    if s > 1.0:
        return False
    x = 1.0 - s
    p = big * big
    if p >= 1e-200:
        if x >= p * (1.0 + 8.881784197001252e-16):       # 2**-50
            return True
        if x < p * (1.0 - 8.881784197001252e-16):
            return False
    return sqrt(x) >= big


cdef inline bint quat_valid_kept(const qdesc* d, double a, double b, double c) noexcept nogil:
    # Shrink each kept value toward zero by one component step: the most permissive point within
    # rounding of the code. The code is valid when that point can still belong to a unit
    # quaternion whose dropped component is the largest. Every code that quantize produces passes:
    # its true components are within half a step of the decoded ones. a, b, c are the kept values
    # in index order; the sum is (a*a + b*b) + c*c, as in quantcodec._reference.quat_valid.
    # (The snapshot decoder tabulates quat_shrunk per component code and calls quat_valid_shrunk.)
    # midpoint: the component code 2**b - 1 is not a level; it is the only one that decodes
    # above hi (every other mode's codes decode to at most hi), so `<= hi` refuses exactly it.
    cdef double st = d.R / d.L      # the component step in every mode (L is 2**b - 1, 2**b - 2 or 2**b)
    return ((a <= d.hi) & (b <= d.hi) & (c <= d.hi)
            & quat_valid_shrunk(quat_shrunk(a, st), quat_shrunk(b, st), quat_shrunk(c, st)))


cdef inline bint quat_valid(const qdesc* d, uint64_t c) noexcept nogil:
    if c > d.maxcode:
        return False
    return quat_valid_kept(d, quat_kept(d, c, 0), quat_kept(d, c, 1), quat_kept(d, c, 2))


# ----------------------------------------------------------------------------------------------
# UnitVector: octahedral mapping (Cigolle et al. 2014).

cdef inline double sgn_nn(double t) noexcept nogil:
    return 1.0 if t >= 0.0 else -1.0


cdef inline bint uvec_oct(const qdesc* d, double x, double y, double z, double* vp, double* vq) noexcept nogil:
    """The Bounded codes (as doubles: truncate them) of the two octahedral coordinates.

    True when the vector is zero or not finite (its sum of magnitudes is then NaN).
    """
    cdef double m, s, p, q, p2, q2
    cdef bint u
    m = fabs(x)
    m = fabs(y) if fabs(y) > m else m
    m = fabs(z) if fabs(z) > m else m
    x = x / m
    y = y / m
    z = z / m
    s = (fabs(x) + fabs(y)) + fabs(z)
    p = x / s
    q = y / s
    u = z < 0.0                         # lower hemisphere: fold onto the outer triangles
    p2 = (1.0 - fabs(q)) * sgn_nn(p)
    q2 = (1.0 - fabs(p)) * sgn_nn(q)
    p = p2 if u else p
    q = q2 if u else q
    vp[0] = bounded_qd(p, d.lo, d.R, d.L, M_ENDPOINTS)
    vq[0] = bounded_qd(q, d.lo, d.R, d.L, M_ENDPOINTS)
    return s != s


cdef inline uint64_t uvec_pack(int cbits, uint64_t kp, uint64_t kq) noexcept nogil:
    """p << b | q."""
    return (kp << cbits) | kq


cdef inline int uvec_q(const qdesc* d, double x, double y, double z, uint64_t* code) noexcept nogil:
    cdef double vp, vq
    if not (isfinite(x) and isfinite(y) and isfinite(z)):
        return ST_NONFINITE
    if x == 0.0 and y == 0.0 and z == 0.0:
        return ST_ZERO
    uvec_oct(d, x, y, z, &vp, &vq)
    code[0] = uvec_pack(d.cbits, <uint64_t>vp, <uint64_t>vq)
    return ST_OK


cdef inline void uvec_rebuild(double p, double q, double* out) noexcept nogil:
    """The unit vector of the octahedral coordinates p, q."""
    cdef double z = (1.0 - fabs(p)) - fabs(q)
    cdef double p2, q2, n
    cdef bint u = z < 0.0
    p2 = (1.0 - fabs(q)) * sgn_nn(p)
    q2 = (1.0 - fabs(p)) * sgn_nn(q)
    p = p2 if u else p
    q = q2 if u else q
    n = sqrt((p * p + q * q) + z * z)
    out[0] = p / n
    out[1] = q / n
    out[2] = z / n


cdef inline void uvec_dq(const qdesc* d, uint64_t c, double* out) noexcept nogil:
    cdef uint64_t mask = (<uint64_t>1 << d.cbits) - 1 if d.cbits < 64 else ~(<uint64_t>0)
    uvec_rebuild(bounded_dq((c >> d.cbits) & mask, d.lo, d.hi, d.R, d.L, M_ENDPOINTS),
                 bounded_dq(c & mask, d.lo, d.hi, d.R, d.L, M_ENDPOINTS), out)
