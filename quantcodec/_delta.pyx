"""Snapshot delta coding on code matrices (SPEC section 5): the nogil core behind snapshot.py.

A snapshot is a code matrix (N entities x nslots uint64 carriers, see _plan.pxd) whose rows are
sorted by entity id. ``DeltaEncoder.encode`` writes one packet that turns a baseline matrix (or
nothing) into the current one; ``DeltaDecoder.decode`` does the reverse. Both read a ``Layout``,
compiled once a schema and shared. All the work is integer
work on codes, in C, without the GIL. The packet layout is documented bit by bit in
docs/wire-format.md; the comments here name the same sections.

Coding, per packet (every choice below is made by the encoder from the actual data and signalled
in the packet, so the decoder needs no state but the snapshots it holds):

- header: 16-bit sequence, the baseline as a distance back (or none), and optionally a second,
  older acknowledged snapshot ("pred") to extrapolate from: ref = base + (base - pred) * num / den.
- entity sets (removed from the baseline; changed among the kept ones, split by whether the
  entity changed between pred and the baseline): each in the cheapest of four modes (empty, a
  Rice-coded list of members or of non-members, a bit per entity).
- new entities: sorted ids as Exp-Golomb gaps, then their full records (schema record layout).
- per field, the set of changed entities whose field changed.
- per changed field: ordered codes (Bounded, Fixed, Int, UInt, Grid, Angle, PowerCurve and Half,
  the last two through an order-preserving map of their sign-magnitude codes) as the zigzagged
  difference from the reference, wrapped to the code width (so Angle differences go around the
  circle), in an Exp-Golomb code whose parameter k (and whether to extrapolate) is chosen per
  packet and per component from the histogram of the differences (of every 4th changed entity
  from HIST_SAMPLE_FROM on), with an escape to the raw width; Quat: the three kept components
  as differences, the first one's escape doubling as "the largest component changed: absolute
  code follows"; UnitVector: its two octahedral coordinates as differences; Bool (implied
  flip) and Enum absolute; NearlyZero: the new flag (implied when the baseline's was 0), then
  the inner slots as differences.
"""

cimport cython
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int64_t
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memcpy, memset, memcmp

from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_WRITABLE, PyBUF_C_CONTIGUOUS
from cpython.weakref cimport PyWeakref_NewRef

import numpy as np

cdef object _U64 = np.dtype(np.uint64)
cdef object _empty = np.empty

from .errors import DecodeError, SchemaError

from quantcodec._kernels cimport qdesc, quat_kept, quat_shrunk, quat_valid_shrunk, quat_valid_shrunk_branchy
from quantcodec._kernels cimport from_wire, qdesc_signed
from quantcodec._kernels cimport (
    K_BOUNDED, K_FIXED, K_ANGLE, K_POWER, K_HALF, K_UINT, K_INT, K_BOOL, K_ENUM, K_GRID, K_QUAT,
    K_UVEC, K_IRANGE, M_MIDPOINT, scalar_all_valid,
)
from quantcodec._plan cimport Plan, slot_t, K_NZFLAG, slot_valid, int_column
from quantcodec._entropy cimport *
from cpython.pyport cimport PY_SSIZE_T_MAX
from quantcodec._bits cimport (
    bw_t, br_t, bw_init, bw_free, bw_reset, bw_reserve, bw_put, bw_flush, bw_nbytes, br_init,
    br_get, br_remaining, br_peek_unchecked, qc_mask, qc_load_le64,
)


cdef extern from "_delta_scan.h":
    void qc_rows_differ(const uint64_t* b, const uint64_t* p, Py_ssize_t n, Py_ssize_t S,
                        uint8_t* out) noexcept nogil
    Py_ssize_t qc_changed_rows(const uint8_t* ctx, Py_ssize_t m, const Py_ssize_t* s1,
                               Py_ssize_t n1, const Py_ssize_t* s0, Py_ssize_t n0,
                               uint64_t* cm, uint64_t* chm, Py_ssize_t* out) noexcept nogil
    Py_ssize_t qc_scan_rows(const uint64_t* c, const uint64_t* b, const uint64_t* p,
                            const uint8_t* tm, Py_ssize_t n, Py_ssize_t S, int keys,
                            Py_ssize_t* idx, uint8_t* ctxo, Py_ssize_t* kpos,
                            Py_ssize_t* q) noexcept nogil


cdef extern from "_delta_fast.h":
    enum:
        QC_F_NONE
        QC_F_ORD
        QC_F_NZORD
        QC_F_QUAT
    enum:
        QC_FAST_MAXBITS
    ctypedef struct qc_dcomp:
        uint64_t emask, kmask, umax, numc, smt, vmask, vlo, vspan, vbad
        int k, sh, shift, slot, E, b
    ctypedef struct qc_dfield:
        int shape, c0, c1, slot, span, cb, bits, plain
        uint64_t maxcode, qtop
        const uint32_t* qsq
    ctypedef struct qc_fastrun:
        const uint8_t* buf
        Py_ssize_t lastfast
        Py_ssize_t nbits
        const uint8_t* fch
        Py_ssize_t F, S
        const qc_dfield* FD
        const qc_dcomp* D
        const int* gf
        Py_ssize_t gen
        const uint64_t* brow
        const uint64_t* prow
        uint64_t* orow
        const Py_ssize_t* chg
        const Py_ssize_t* kept_base
        const Py_ssize_t* kept_out
        const Py_ssize_t* kept_pred
        int64_t num, den
    bint qc_quat_surely_valid(const uint32_t* q, uint64_t a, uint64_t b, uint64_t c) noexcept nogil
    Py_ssize_t qc_fast_run(const qc_fastrun* a, Py_ssize_t e, Py_ssize_t n,
                           Py_ssize_t* ppos) noexcept nogil


cdef uint64_t MAX_ENTITIES = 0xFFFFFFFFULL
cdef enum:
    VEC_FIELDS = 16     # the encoder's AVX-512 step 3 (_diff_vec): at most this many fields
    GEN_FAST = 8        # _get_changed's fast path: at most this many fields of no common shape
cdef int QTAB_MAXBITS = 12      # Quat validity tables up to 4096 doubles a slot


# ------------------------------------------------------------------------------------------------
# small integer helpers


cdef inline bint rows_differ(const uint64_t* a, const uint64_t* b, Py_ssize_t n) noexcept nogil:
    """Whether two rows of n carriers differ (branch-free: the compiler vectorizes it)."""
    cdef uint64_t acc = 0
    cdef Py_ssize_t s
    for s in range(n):
        acc |= a[s] ^ b[s]
    return acc != 0


cdef inline bint _same_ids(const uint64_t* a, const uint64_t* b, Py_ssize_t n) noexcept nogil:
    return a == b or n == 0 or memcmp(a, b, sizeof(uint64_t) * n) == 0


cdef inline int64_t round_div(int64_t x, int64_t den) noexcept nogil:
    """x / den rounded half away from zero (den > 0)."""
    if x >= 0:
        return (2 * x + den) // (2 * den)
    return -((2 * (-x) + den) // (2 * den))


cdef inline uint64_t quat_remap_ref(uint64_t bcode, int j, int t, int cb, uint64_t top) noexcept nogil:
    """The reference of kept position t (0..2) of a smallest-three code whose dropped index is j
    while the baseline's code ``bcode`` dropped i != j: the baseline's components re-expressed
    without index j, in integers. The baseline's component j (code aj) takes the place of the
    dropped one: when the two largest components are nearly tied, as for a box lying on a face,
    |q_i| ~ |q_j|, and the quantizer makes q_j positive, negating the quaternion when aj is
    negative (aj < 2**(cb-1)). So position t, quaternion index k = t + (t >= j), is predicted by
    aj when k == i, else by the baseline's code ak, mirrored (top - ak) when aj is negative, where
    top is the mode's top component code (2**cb - 1 for endpoints and bins, 2**cb - 2 for
    midpoint): the code of the negated value. (docs/wire-format.md 7.3)"""
    cdef uint64_t M = qc_mask(cb), aj, ak
    cdef int i = <int>((bcode >> (3 * cb)) & 3)
    cdef int k = t + (1 if t >= j else 0)
    cdef int pj = j - (1 if j > i else 0)
    cdef int pk
    aj = (bcode >> ((2 - pj) * cb)) & M
    if k == i:
        return aj
    pk = k - (1 if k > i else 0)
    ak = (bcode >> ((2 - pk) * cb)) & M
    return ak if (aj >> (cb - 1)) else (top - ak) & M


ctypedef struct rd_t:     # a read off a reader held in locals: status, value, new position
    int st
    int alt
    Py_ssize_t pos
    uint64_t v


cdef enum:
    RD_BITS = 0         # br_get of k bits
    RD_EGX = 1          # get_egx(k, b)
    RD_EGX_ALT = 2      # get_egx(k, b) whose escape carries one more bit (rd_t.alt)


cdef rd_t rd_slow(const uint8_t* buf, Py_ssize_t nbytes, Py_ssize_t pos, int k, int b,
                  int how) noexcept nogil:
    """A read at bit ``pos`` for _get_changed's rare cases (escapes, the packet's last 8 bytes,
    flips), out of line: the new position comes back in the result, so the caller's own never
    has its address taken."""
    cdef br_t t
    cdef rd_t o
    br_init(&t, buf, nbytes)
    t.pos = pos
    o.alt = 0
    o.v = 0
    if how == RD_BITS:
        o.st = D_SHORT if br_get(&t, k, &o.v) < 0 else D_OK
    else:
        o.st = get_egx(&t, k, b, &o.v, &o.alt if how == RD_EGX_ALT else NULL)
    o.pos = t.pos
    return o


cdef inline rd_t rd_flag_into(const uint8_t* buf, Py_ssize_t nbytes, Py_ssize_t pos,
                              bint implied, uint64_t* orw, const uint64_t* br, Py_ssize_t s,
                              Py_ssize_t span, uint64_t* dacc) noexcept nogil:
    """A NearlyZero flag at slot s for _get_changed: 1 without reading if ``implied``, else
    one bit (position by value, as rd_slow), stored into the output row; a 0 flag zeroes the
    ``span`` slots it governs. What differs from the baseline row is or'ed into ``dacc``."""
    cdef rd_t o
    cdef uint64_t v = 1
    cdef Py_ssize_t t
    if not implied and not qc_bits_fast(buf, nbytes, &pos, 1, &v):
        o = rd_slow(buf, nbytes, pos, 1, 0, RD_BITS)
        if o.st:
            return o
        pos = o.pos
        v = o.v
    o.st = D_OK
    o.v = v
    o.pos = pos
    o.alt = 0
    orw[s] = v
    dacc[0] |= v ^ br[s]
    if v == 0:
        for t in range(s + 1, s + 1 + span):
            orw[t] = 0
            dacc[0] |= br[t]
    return o


cdef inline rd_t rd_ord(const uint8_t* buf, Py_ssize_t nbytes, Py_ssize_t pos, const comp_t* cp,
                        const dpar_t* P, uint64_t bw, uint64_t pw, bint usep, int sign, int64_t num,
                        int64_t den) noexcept nogil:
    """One ordered component read at bit ``pos`` for _get_changed: its difference, and its code
    rebuilt from the baseline's carrier ``bw`` (and, with ``usep``, extrapolated through ``pw``),
    sign-extended if ``sign``. Status D_OK or a read error, the code in .v, the new position in
    .pos (the caller's own position never has its address taken)."""
    cdef uint64_t u, ref
    cdef rd_t o
    cdef int st = qc_egx_fast_m(buf, nbytes, &pos, P.k, P.emask, P.kmask, P.umax, &u)
    o.alt = 0
    o.v = 0
    if st != 1:
        if st == 0:
            o = rd_slow(buf, nbytes, pos, P.k, P.b, RD_EGX)
            if o.st:
                return o
            pos = o.pos
            u = o.v
        else:
            o.st = D_STRUCT
            o.pos = pos
            return o
    ref = top_lin(bw, cp)
    if usep:
        ref = top_ref(ref, top_lin(pw, cp), cp.sh, num, den)
    ref = top_code(ref, u, cp)
    # signed codes are carried sign-extended
    o.v = <uint64_t>((<int64_t>ref) >> cp.sh) if sign else ref >> cp.sh
    o.st = D_OK
    o.pos = pos
    return o


# ------------------------------------------------------------------------------------------------
# grow-only scratch buffers


# ------------------------------------------------------------------------------------------------
# entity-set coding: SET(M) — see docs/wire-format.md


# The components' arithmetic, in one place for the encoder and the decoder. A component's b-bit
# value is held at the top of 64 bits (shifted up by sh = 64 - b, the low bits zero), so that
# sums and differences wrap at its width by themselves, and in its linear form: sign-magnitude
# codes (PowerCurve, Half) with their magnitude bits flipped when the sign bit is set, an
# order-preserving map that is its own inverse.

cdef inline uint64_t top_lin(uint64_t carrier, const comp_t* cp) noexcept nogil:
    """The component of a slot's carrier, linear, at the top of the word. (Signed carriers are
    sign-extended: the bits above the width fall off.)"""
    cdef uint64_t x = (carrier >> cp.shift) << cp.sh
    if cp.smt:          # (per component: predicted; most components are not sign-magnitude)
        x ^= <uint64_t>((<int64_t>x) >> 63) & cp.smt
    return x


cdef inline uint64_t top_ref(uint64_t xb, uint64_t xp, int sh, int64_t num, int64_t den) noexcept nogil:
    """The extrapolated reference base + (base - pred) * num / den (the product rounded half away
    from zero), from the baseline's and the older snapshot's values at the top of the word.
    With den == 1 (the ratio in lowest terms, ext_ratio, an integer) that is base + (base -
    pred) * num exactly, a multiply with the wrap to the width free at the top of the word."""
    if den == 1:
        return xb + (xb - xp) * <uint64_t>num
    return xb + (<uint64_t>round_div(((<int64_t>(xb - xp)) >> sh) * num, den) << sh)


cdef inline void ext_ratio(int bdist, int pdist, int64_t* num, int64_t* den) noexcept nogil:
    """The extrapolation's ratio bdist / pdist in lowest terms (the same rounded products: the
    same rational), so that a whole ratio is den == 1 and top_ref multiplies."""
    cdef int64_t a = bdist, b = pdist, t
    while b:
        t = a % b
        a = b
        b = t
    num[0] = bdist // a if a else bdist
    den[0] = pdist // a if a else pdist


cdef inline uint64_t top_code(uint64_t ref, uint64_t u, const comp_t* cp) noexcept nogil:
    """The decoder's inverse of zz_top(x - ref): the component's code (the linear map undone) at
    the top of the word, from the reference and the zigzagged difference u."""
    ref += <uint64_t>unzz(u) << cp.sh
    if cp.smt:
        ref ^= <uint64_t>((<int64_t>ref) >> 63) & cp.smt
    return ref


cdef inline uint64_t zz_top(uint64_t t, int sh) noexcept nogil:
    """zz of the b-bit difference held in the top bits of t (sh = 64 - b)."""
    return ((t << 1) ^ <uint64_t>((<int64_t>t) >> 63)) >> sh


cdef inline void _diff(const comp_t* cp, Py_ssize_t c, const uint64_t* cr, const uint64_t* br,
                       const uint64_t* pr, int64_t num, int64_t den, uint64_t* Ue,
                       uint32_t* hist) noexcept nogil:
    """Component c (descriptor cp) of one changed entity whose field changed: unless its
    NearlyZero flag is 0, or (smallest three) its largest component is not the baseline's, the
    zigzagged difference from the baseline into Ue[2c] and from the extrapolation (``pr``, if
    any and usable) into Ue[2c + 1] (the baseline's again where there is none), each counted by
    bit length into the component's histograms (unless ``hist`` is NULL: an entity the
    histograms' sample leaves out). Works on values shifted to the top of 64 bits, so that the
    wrap to the width costs nothing."""
    cdef int nz = cp.nzslot, slot = cp.slot, qs = cp.qshift, sh = cp.sh
    cdef int usep = cp.predictable and pr != NULL
    cdef uint64_t cw = cr[slot], bw = br[slot], xc, xb, u0, u1
    cdef uint32_t* h
    if nz >= 0 and cr[nz] == 0:
        return
    if qs:
        if (cw >> qs) != (bw >> qs):
            # the largest component changed: the difference from the baseline re-expressed
            # without the new index (quat_remap_ref); the writer sends it or the absolute code,
            # whichever is shorter. Not counted in the histograms: the Exp-Golomb parameters
            # stay those of the same-index differences (counting these too made no difference
            # on the bench scene and on MuJoCo recordings)
            xb = quat_remap_ref(bw, <int>((cw >> qs) & 3), cp.qpos, cp.b, cp.qtop)
            u0 = zz_top(((cw >> cp.shift) << sh) - (xb << sh), sh)
            Ue[2 * c] = u0
            Ue[2 * c + 1] = u0
            return
        if usep and (pr[slot] >> qs) != (bw >> qs):
            usep = 0
    xc = top_lin(cw, cp)
    xb = top_lin(bw, cp)
    u0 = zz_top(xc - xb, sh)
    u1 = u0
    if usep:
        u1 = zz_top(xc - top_ref(xb, top_lin(pr[slot], cp), sh, num, den), sh)
    Ue[2 * c] = u0
    Ue[2 * c + 1] = u1
    if hist != NULL:
        h = hist + 2 * c * HIST
        h[qc_bitlen_top(u0, sh)] += 1
        h[HIST + qc_bitlen_top(u1, sh)] += 1


cdef inline void _diff_comps(const comp_t* CI, int c0, int c1, const uint64_t* cr,
                             const uint64_t* br, const uint64_t* pr, int mode, int quat,
                             int64_t num, int64_t den, uint64_t* Ue, uint32_t* hist) noexcept nogil:
    """_diff for components c0..c1 of a field of a common shape (SHAPE_ORD, SHAPE_NZORD with its flag
    set, SHAPE_QUAT with the same largest component), whose per-slot tests the caller made once.
    ``mode``: 0 no extrapolation, 1 extrapolation by a whole ratio (den == 1), 2 by another;
    ``quat``:
    the components are the coordinates of one smallest-three slot, whose carriers are loaded
    once (else each its own ordered slot's, at shift 0: one shift instead of two). Both are the
    same for every component of the call, so their branches predict. The same values into Ue
    and the same counts into the histograms (none if ``hist`` is NULL) as _diff."""
    cdef const comp_t* cp
    cdef uint64_t xc, xb, xp = 0, u0, u1, cw = 0, bw = 0, pw = 0
    cdef int c, sh, shift
    cdef uint32_t* h = hist + 2 * c0 * HIST if hist != NULL else NULL
    if quat:
        cw = cr[CI[c0].slot]
        bw = br[CI[c0].slot]
        if mode:
            pw = pr[CI[c0].slot]
    for c in range(c0, c1):
        cp = &CI[c]
        sh = cp.sh
        if quat:
            shift = cp.shift
            xc = (cw >> shift) << sh
            xb = (bw >> shift) << sh
            if mode:
                xp = (pw >> shift) << sh
        else:
            xc = cr[cp.slot] << sh
            xb = br[cp.slot] << sh
            if mode:
                xp = pr[cp.slot] << sh
            if cp.smt:
                xc ^= <uint64_t>((<int64_t>xc) >> 63) & cp.smt
                xb ^= <uint64_t>((<int64_t>xb) >> 63) & cp.smt
                if mode:
                    xp ^= <uint64_t>((<int64_t>xp) >> 63) & cp.smt
        u0 = zz_top(xc - xb, sh)
        Ue[2 * c] = u0
        if mode == 1:
            u1 = zz_top(xc - (xb + (xb - xp) * <uint64_t>num), sh)
        elif mode == 2:
            u1 = zz_top(xc - top_ref(xb, xp, sh, num, den), sh)
        else:
            u1 = u0
        Ue[2 * c + 1] = u1
        if hist != NULL:
            h[qc_bitlen_top(u0, sh)] += 1
            h[HIST + qc_bitlen_top(u1, sh)] += 1
            h += 2 * HIST


cdef inline int _field_changed(const finfo_t* fi, const uint64_t* cr, const uint64_t* br) noexcept nogil:
    """Whether any slot of field fi differs between the two rows."""
    cdef uint64_t x = 0
    cdef Py_ssize_t s
    for s in range(fi.first, fi.end):
        x |= cr[s] ^ br[s]
    return x != 0


cdef inline void _diff_field(const finfo_t* fi, const comp_t* CI, const uint64_t* cr,
                             const uint64_t* br, const uint64_t* pr, int64_t num, int64_t den,
                             uint64_t* Ue, uint32_t* hist) noexcept nogil:
    """_diff for every component of changed field fi: by shape, the flag and smallest-three
    tests once for the field, then _diff_comps; the rest (and a new largest component) by _diff."""
    cdef int c, q, qs
    cdef int usep = pr != NULL and fi.pred
    if fi.shape == SHAPE_NZORD or fi.shape == SHAPE_ORD:
        if fi.shape == SHAPE_NZORD and cr[fi.nz] == 0:
            return
        if not usep:
            _diff_comps(CI, fi.c0, fi.c1, cr, br, pr, 0, 0, num, den, Ue, hist)
        elif den == 1:
            _diff_comps(CI, fi.c0, fi.c1, cr, br, pr, 1, 0, num, den, Ue, hist)
        else:
            _diff_comps(CI, fi.c0, fi.c1, cr, br, pr, 2, 0, num, den, Ue, hist)
    elif fi.shape == SHAPE_QUAT:
        q = fi.quat
        qs = CI[fi.c0].qshift
        if (cr[q] >> qs) != (br[q] >> qs):
            for c in range(fi.c0, fi.c1):
                _diff(&CI[c], c, cr, br, pr, num, den, Ue, hist)
        elif not usep or (pr[q] >> qs) != (br[q] >> qs):
            _diff_comps(CI, fi.c0, fi.c1, cr, br, pr, 0, 1, num, den, Ue, hist)
        elif den == 1:
            _diff_comps(CI, fi.c0, fi.c1, cr, br, pr, 1, 1, num, den, Ue, hist)
        else:
            _diff_comps(CI, fi.c0, fi.c1, cr, br, pr, 2, 1, num, den, Ue, hist)
    else:
        for c in range(fi.c0, fi.c1):
            _diff(&CI[c], c, cr, br, pr, num, den, Ue, hist)


cdef void _quat_half(sinfo_t* si) noexcept nogil:
    """si.qlo / si.qspan: the component codes whose shrunk value (si.qtab) is at most 0.5, when
    they are one interval (else qlo = 2**64 - 1, which no code is, and quat_valid_tab always
    computes)."""
    cdef Py_ssize_t j, n = (<Py_ssize_t>1) << si.cb, lo = -1, hi = -1
    for j in range(n):
        if si.qtab[j] <= 0.5:
            if lo < 0:
                lo = j
            hi = j
    si.qlo = ~(<uint64_t>0)
    si.qspan = 0
    if lo < 0:
        return
    for j in range(lo, hi + 1):
        if not (si.qtab[j] <= 0.5):
            return
    si.qlo = <uint64_t>lo
    si.qspan = <uint64_t>(hi - lo)


cdef double* _quat_table(const qdesc* d) noexcept nogil:
    """For each code of one kept component, its value shrunk toward zero by one step, exactly as
    quat_valid_kept computes it (malloc'ed, 2**cbits doubles; NULL when out of memory)."""
    cdef Py_ssize_t j, n = (<Py_ssize_t>1) << d.cbits
    cdef double st = d.R / d.L
    cdef double* t = <double*>malloc(sizeof(double) * n)
    if t == NULL:
        return NULL
    for j in range(n):
        # a code above the mode's top (midpoint: 2**cb - 1) is no level: 2.0 makes every sum
        # of squares exceed 1, so quat_valid_tab refuses it, as quat_valid_kept does
        t[j] = quat_shrunk(quat_kept(d, <uint64_t>j, 2), st) if <double>j <= d.L else 2.0
    return t


cdef uint32_t* _quat_squares(const double* t, int cbits) noexcept nogil:
    """Per component code, an upper bound of the square of its shrunk value (table ``t``) in
    units of 2**-32, at most 2**32 - 1 (malloc'ed; NULL when out of memory): t * t rounded is
    within a unit in the last place of the square, far less than the 2 units added."""
    cdef Py_ssize_t j, n = (<Py_ssize_t>1) << cbits
    cdef uint32_t* q = <uint32_t*>malloc(sizeof(uint32_t) * n)
    cdef double x
    if q == NULL:
        return NULL
    for j in range(n):
        x = t[j] * t[j] * 4294967296.0
        q[j] = <uint32_t>(<uint64_t>x + 2) if x < 4294967000.0 else 0xFFFFFFFFU
    return q


cdef inline bint quat_valid_tab(const sinfo_t* si, uint64_t code) noexcept nogil:
    """quat_valid(d, code) with the shrunk kept values from the slot's table (tests/test_snapshot.py
    checks every code of small Quats against Quat.valid). Kept values all at most 0.5 (codes in
    qlo .. qlo + qspan) are valid without the arithmetic: their sum of squares is at most 0.75
    (rounded too), so sqrt(1 - s) >= 0.5 >= the largest."""
    cdef int cb = si.cb
    cdef uint64_t m = (<uint64_t>1 << cb) - 1, a, b, c
    cdef const double* t = si.qtab
    if code > si.maxcode:
        return False
    a = (code >> (2 * cb)) & m
    b = (code >> cb) & m
    c = code & m
    if a - si.qlo <= si.qspan and b - si.qlo <= si.qspan and c - si.qlo <= si.qspan:
        return True
    return quat_valid_shrunk_branchy(t[a], t[b], t[c])


# ------------------------------------------------------------------------------------------------
# the coder

cdef enum:
    KEY_BLOCK = 128     # rows packed at a time (their carriers: 8 KB for 8 slots)


ctypedef struct kslot_t:        # one slot's place in a row key
    int bits
    int sh
    int sign
    int off
    Py_ssize_t word
    uint64_t mask


cdef class SnapshotData:
    """A snapshot's entity ids (uint64, ascending, unique) and code matrix (N x nslots uint64),
    bound once, with C pointers to both: the base class of ``quantcodec.Snapshot``."""

    def __dealloc__(self):
        free(self.keyp)

    def _bind(self, ids, matrix, Plan plan=None):
        """Take (not copy) a C-contiguous uint64 id array and matrix; once per object. With the
        schema's ``plan``, also pack the row keys (once, while the rows are in cache: a snapshot
        is made once a tick and encoded for every client)."""
        cdef const uint64_t* ip
        cdef const uint64_t* mp
        if self._ids is not None:
            raise AttributeError("snapshot data is immutable")
        if not (isinstance(ids, np.ndarray) and isinstance(matrix, np.ndarray)
                and (ids.dtype is _U64 or ids.dtype == _U64)
                and (matrix.dtype is _U64 or matrix.dtype == _U64)
                and ids.ndim == 1 and matrix.ndim == 2 and matrix.shape[0] == ids.shape[0]):
            raise ValueError("snapshot data: expected uint64 ids (N,) and matrix (N, nslots)")
        # (the arrays' memory through the buffer protocol: cheaper than typed memoryviews;
        # the arrays are kept, so the pointers stay valid)
        ip = <const uint64_t*>_data_of(ids, False)
        mp = <const uint64_t*>_data_of(matrix, False)
        self.n = ids.shape[0]
        self.ncol = matrix.shape[1]
        self.idp = ip if self.n else NULL
        self.rowp = mp if self.n and self.ncol else NULL
        self._ids = ids
        self._matrix = matrix
        if plan is not None and self.n and plan.nslots == self.ncol:
            self._pack_keys(plan)

    cdef int _pack_keys(self, Plan plan) except -1:
        cdef Py_ssize_t S = self.ncol, n = self.n, K, s, b0, nb
        cdef uint64_t bad = 0
        cdef uint64_t* keys
        cdef kslot_t* ks = <kslot_t*>malloc(sizeof(kslot_t) * S)
        cdef Py_ssize_t nbits = 0
        if ks == NULL:
            raise MemoryError()
        for s in range(S):
            ks[s].bits = plan.slots[s].d.bits
            ks[s].mask = qc_mask(ks[s].bits)
            ks[s].sh = 64 - ks[s].bits
            ks[s].sign = qdesc_signed(&plan.slots[s].d)
            ks[s].word = nbits >> 6
            ks[s].off = <int>(nbits & 63)
            nbits += ks[s].bits
        K = (nbits + 63) >> 6
        if K >= S or K == 0:
            # (no narrower keys; or no bits at all, every slot 0 bits wide: the rows compare as
            # they are, and there is no word to pack into)
            free(ks)
            return 0
        keys = <uint64_t*>calloc(n * K, sizeof(uint64_t))
        if keys == NULL:
            free(ks)
            raise MemoryError()
        with nogil:
            # slot by slot (no branch inside the loops over the rows), in blocks of rows that
            # stay in L1 while each of their slots is read
            b0 = 0
            while b0 < n:
                nb = n - b0 if n - b0 < KEY_BLOCK else KEY_BLOCK
                for s in range(S):
                    bad |= _pack_column(&ks[s], self.rowp + b0 * S + s, S, nb, keys + b0, n)
                b0 += nb
        free(ks)
        if bad:
            free(keys)
            return 0
        self.keyp = keys
        self.kw = K
        self._kplan = plan
        return 0


cdef uint64_t _pack_column(const kslot_t* k, const uint64_t* col, Py_ssize_t S, Py_ssize_t n,
                           uint64_t* keys, Py_ssize_t nkey) noexcept nogil:
    """Or one slot's masked carriers of n rows (``col``, stride S) into their row keys (word w
    of row i at keys[w * nkey + i]); returns the or of every carrier's difference from its
    canonical form (0: all canonical)."""
    cdef uint64_t bad = 0, c, v, mask = k.mask
    cdef int sh = k.sh, o = k.off, ro = 64 - k.off
    cdef Py_ssize_t i
    cdef uint64_t* kr = keys + k.word * nkey
    if k.bits == 0:
        # nothing to pack (its word may be one past the last: never touched); a carrier is
        # canonical only as 0
        for i in range(n):
            bad |= col[i * S]
        return bad
    if k.sign:
        for i in range(n):
            c = col[i * S]
            v = c & mask
            bad |= c ^ <uint64_t>((<int64_t>(c << sh)) >> sh)
            kr[i] |= v << o
    else:
        for i in range(n):
            c = col[i * S]
            v = c & mask
            bad |= c ^ v
            kr[i] |= v << o
    if o + k.bits > 64:                 # the slot straddles two words: its high bits
        kr += nkey
        for i in range(n):
            kr[i] |= (col[i * S] & mask) >> ro
    return bad


cdef inline bint _keys_match(SnapshotData a, SnapshotData b) noexcept:
    """Whether a's and b's rows can be compared by their keys (both packed by one plan)."""
    return a.keyp != NULL and b.keyp != NULL and a._kplan is b._kplan


@cython.final
cdef class Layout:
    """What the delta coder knows of one schema's plan, compiled once and never changed after:
    each slot's role, width, signedness and Quat validity table (sinfo_t), each component's
    place in its carrier and its arithmetic (comp_t), each field's components and the shape its
    hot loop takes (finfo_t), the worst-case sizes of a record, and the AVX-512 lanes. Read-only
    once built, so one Layout serves every encoder and decoder of the schema, in any thread
    (quantcodec.snapshot keeps one a schema); the per-packet state lives in each DeltaEncoder / DeltaDecoder."""

    def __cinit__(self):
        self.si = NULL
        self.ci = NULL
        self.fi = NULL

    def __init__(self, Plan plan not None, bint general=False):
        """``general``: no shortcuts for the common field shapes, every field slot by slot
        (the same packets, slower: the tests compare the two)."""
        self.general = general
        cdef Py_ssize_t s, f, c, nc = 0
        cdef const slot_t* sl
        cdef int kind
        self.plan = plan
        self.nslots = plan.nslots
        self.nfields = plan.nfields
        self.si = <sinfo_t*>malloc(sizeof(sinfo_t) * (self.nslots + 1))
        self.fi = <finfo_t*>malloc(sizeof(finfo_t) * (self.nfields + 1))
        if self.si == NULL or self.fi == NULL:
            raise MemoryError()
        for s in range(self.nslots):
            sl = &plan.slots[s]
            kind = sl.d.kind
            self.si[s].bits = sl.d.bits
            self.si[s].mask = qc_mask(sl.d.bits)
            self.si[s].field = sl.field
            self.si[s].span = sl.span
            self.si[s].cb = sl.d.cbits
            self.si[s].sign = qdesc_signed(&sl.d)
            self.si[s].comp = -1
            self.si[s].qtab = NULL
            self.si[s].qsq = NULL
            self.si[s].qlo = ~(<uint64_t>0)
            self.si[s].qspan = 0
            self.si[s].qtop = 0
            self.si[s].maxcode = sl.d.maxcode
            self.si[s].allvalid = 0
            if kind == K_NZFLAG:
                self.si[s].role = R_FLAG
            elif kind == K_QUAT:
                self.si[s].role = R_QUAT
                # the top component code: 2**cb - 1 (endpoints, bins), 2**cb - 2 (midpoint)
                self.si[s].qtop = qc_mask(sl.d.cbits) - (1 if sl.d.mode == M_MIDPOINT else 0)
                self.si[s].comp = nc
                nc += 3
                if sl.d.cbits <= QTAB_MAXBITS:
                    self.si[s].qtab = _quat_table(&sl.d)
                    if self.si[s].qtab == NULL:
                        raise MemoryError()
                    self.si[s].qsq = _quat_squares(self.si[s].qtab, sl.d.cbits)
                    if self.si[s].qsq == NULL:
                        raise MemoryError()
                    _quat_half(&self.si[s])
            elif kind == K_UVEC:
                self.si[s].role = R_UVEC
                self.si[s].comp = nc
                nc += 2
            elif kind in (K_BOOL, K_ENUM):
                self.si[s].role = R_ABS
            elif kind in (K_BOUNDED, K_FIXED, K_ANGLE, K_POWER, K_HALF, K_UINT, K_INT, K_GRID, K_IRANGE):
                # (IntRange: ordered like UInt, its differences taken mod 2**bits; codes above
                # hi - lo are refused by the validity check, as PowerCurve's negative zero is)
                self.si[s].role = R_ORD
                self.si[s].allvalid = scalar_all_valid(&sl.d)
                self.si[s].comp = nc
                nc += 1
            else:
                raise ValueError(f"slot {s}: unknown codec kind {kind}")
        self.ncomps = nc
        self.ci = <comp_t*>malloc(sizeof(comp_t) * (nc + 1))
        if self.ci == NULL:
            raise MemoryError()
        for s in range(self.nslots):
            sl = &plan.slots[s]
            c = self.si[s].comp
            if self.si[s].role == R_ORD:
                self._set_comp(c, s, 0, sl.d.bits, sl.d.kind == K_POWER or sl.d.kind == K_HALF)
            elif self.si[s].role == R_QUAT:
                for f in range(3):
                    self._set_comp(c + f, s, (2 - f) * sl.d.cbits, sl.d.cbits, 0)
            elif self.si[s].role == R_UVEC:
                for f in range(2):
                    self._set_comp(c + f, s, (1 - f) * sl.d.cbits, sl.d.cbits, 0)
        for f in range(self.nfields):
            self.fi[f].first = <int>plan.field_first[f]
            self.fi[f].end = <int>plan.field_first[f + 1]
            self.fi[f].c0 = -1
            self.fi[f].c1 = -1
        nc = 0
        for f in range(self.nfields):
            self.fi[f].c0 = <int>nc
            for s in range(self.fi[f].first, self.fi[f].end):
                if self.si[s].comp >= 0:
                    nc = self.si[s].comp + (3 if self.si[s].role == R_QUAT else
                                            2 if self.si[s].role == R_UVEC else 1)
            self.fi[f].c1 = <int>nc
            s = self.fi[f].first
            self.fi[f].implied_flag = (self.si[s].role == R_FLAG
                                       and s + 1 + self.si[s].span == self.fi[f].end)
            self.fi[f].implied_flip = (self.fi[f].end == s + 1 and self.si[s].role == R_ABS
                                       and self.si[s].bits == 1)
            self._set_shape(f, general)
        self._set_vec(general)
        self.rec_bits = 0
        self.chg_bits = self.nfields
        for s in range(self.nslots):
            self.rec_bits += self.si[s].bits
            if self.si[s].role == R_ORD:
                self.chg_bits += 2 * self.si[s].bits + 2
            elif self.si[s].role == R_QUAT or self.si[s].role == R_UVEC:
                self.chg_bits += 1 + self.si[s].bits + 3 * (self.si[s].cb + 2) * 2
            else:
                self.chg_bits += self.si[s].bits

    cdef void _set_comp(self, Py_ssize_t c, Py_ssize_t s, int shift, int b, int smag):
        self.ci[c].slot = <int>s
        self.ci[c].shift = shift
        self.ci[c].b = b
        self.ci[c].smag = smag
        self.ci[c].predictable = b <= 32
        self.ci[c].field = self.si[s].field
        self.ci[c].qshift = 3 * self.si[s].cb if self.si[s].role == R_QUAT else 0
        self.ci[c].qpos = (2 - shift // b) if self.si[s].role == R_QUAT else 0
        self.ci[c].qtop = self.si[s].qtop if self.si[s].role == R_QUAT else 0
        self.ci[c].sh = 64 - b
        self.ci[c].smt = (qc_mask(b - 1) << (64 - b)) if smag else 0
        self.ci[c].nzslot = -1
        cdef Py_ssize_t t
        for t in range(s - 1, -1, -1):
            if self.si[t].role == R_FLAG and t + self.si[t].span >= s:
                self.ci[c].nzslot = <int>t
                break

    @property
    def shapes(self):
        """Each field's shape, as the hot loops take it: 'ord', 'nz-ord', 'quat' or 'general'."""
        return [("general", "ord", "nz-ord", "quat")[self.fi[f].shape] for f in range(self.nfields)]

    @property
    def vector(self):
        """Whether the encoder takes its differences with AVX-512 (the CPU has it, and the
        schema has at most 16 components and 16 slots, some in fields of the common shapes)."""
        return bool(self.vec)

    cdef void _set_vec(self, bint general):
        cdef Py_ssize_t f, c
        cdef int any_ = 0
        self.vec = 0
        memset(&self.vp, 0, sizeof(qc_vplan))
        for f in range(self.nfields):
            self.fi[f].lanes = 0
            if self.fi[f].shape != SHAPE_GENERAL and self.ncomps <= 16:
                for c in range(self.fi[f].c0, self.fi[f].c1):
                    self.fi[f].lanes |= (<uint32_t>1) << c
                any_ = 1
        if general or not any_ or self.ncomps > 16 or self.nslots > 16 or not qc_have_avx512():
            return
        for c in range(16):
            self.vp.sh[c] = 32          # (lanes past the components: computed, ignored)
        for c in range(self.ncomps):
            self.vp.idx[c] = self.ci[c].slot
            self.vp.shift[c] = self.ci[c].shift
            self.vp.sh[c] = self.ci[c].sh
            self.vp.smt[c] = <int64_t>self.ci[c].smt
            self.vp.hoff[c] = 2 * c * HIST
        self.vp.nhalf = 1 if self.ncomps <= 8 else 2
        self.vp.S = <int>self.nslots
        self.vec = 1

    cdef void _set_shape(self, Py_ssize_t f, bint general):
        """Field f's shape: the shortcut the hot loops take for the common fields, which does
        exactly what the slot-by-slot path does."""
        cdef finfo_t* fi = &self.fi[f]
        cdef Py_ssize_t s, first = fi.first, c
        cdef bint ords = True
        fi.shape = SHAPE_GENERAL
        fi.nz = -1
        fi.quat = -1
        fi.pred = 1
        for c in range(fi.c0, fi.c1):
            if not self.ci[c].predictable:
                fi.pred = 0
        for s in range(first + 1, fi.end):
            if self.si[s].role != R_ORD:
                ords = False
        if general or fi.end <= first or not fi.pred:
            return      # (a component wider than 32 bits is never extrapolated: _diff decides)
        for c in range(fi.c0, fi.c1):
            if self.ci[c].nzslot != (first if self.si[first].role == R_FLAG else -1):
                return
        if self.si[first].role == R_ORD and ords:
            fi.shape = SHAPE_ORD
        elif (self.si[first].role == R_FLAG and ords and fi.end > first + 1
                and first + 1 + self.si[first].span == fi.end):
            fi.shape = SHAPE_NZORD
            fi.nz = <int>first
        elif self.si[first].role == R_QUAT and fi.end == first + 1:
            fi.shape = SHAPE_QUAT
            fi.quat = <int>first

    def __dealloc__(self):
        cdef Py_ssize_t s
        if self.si != NULL:
            for s in range(self.nslots):
                free(self.si[s].qtab)
                free(self.si[s].qsq)
        free(self.si)
        free(self.ci)
        free(self.fi)

    def __repr__(self):
        return (f"<Layout: {self.nslots} slots, {self.nfields} fields, {self.ncomps} components, "
                f"shapes {self.shapes}{', AVX-512' if self.vec else ''}>")


cdef Layout _layout_arg(layout, bint general, str owner):
    """The Layout given, or one compiled from a Plan (``general`` as Layout's)."""
    if isinstance(layout, Plan):
        return Layout(layout, general)
    if isinstance(layout, Layout):
        if general and not (<Layout>layout).general:
            raise ValueError(f"{owner}: general=True needs a Plan or a general Layout")
        return <Layout>layout
    raise TypeError(f"{owner}: expected a Layout or a Plan, got {type(layout).__name__}")


cdef class CoderBase:
    """What the encoder's and the decoder's workspaces share: the Layout they read (shared with
    every other coder of the schema) and borrowed pointers to its tables."""

    def __init__(self, layout not None, bint general=False):
        """``layout``: the schema's Layout (shared), or a Plan to compile one from (then
        ``general`` as Layout's)."""
        cdef Layout L = _layout_arg(layout, general, type(self).__name__)
        self.layout = L
        self.plan = L.plan
        self.nslots = L.nslots
        self.nfields = L.nfields
        self.ncomps = L.ncomps
        self.si = L.si
        self.ci = L.ci
        self.fi = L.fi
        self.rec_bits = L.rec_bits
        self.chg_bits = L.chg_bits

    cdef int _check(self, SnapshotData d, str what) except -1:
        """A snapshot of this layout's slots (``what`` names it in the error)."""
        if d is None:
            raise ValueError(f"{what} snapshot missing")
        if d.ncol != self.nslots:
            raise ValueError(f"{what}: {d.ncol} code columns, the plan has {self.nslots} slots")
        return 0


@cython.final
cdef class DeltaEncoder(CoderBase):
    """One client's encoding workspace over a Layout: the bit writer, the encoder's scratch, the
    last packet's size. Not shared between threads (EncoderState serializes its calls).
    ``encode`` is a thin ``def`` over the nogil ``_encode``, which returns a status."""

    def __cinit__(self):
        self.w.buf = NULL
        self.w.cap = 0
        self.w.nbits = 0
        self.w.acc = 0
        self.w.owned = 1

    def __init__(self, layout not None, bint general=False):
        CoderBase.__init__(self, layout, general)
        self.vec = self.layout.vec
        self.vp = self.layout.vp        # (a copy: its per-packet entries are this coder's)
        if bw_init(&self.w, 256) < 0:
            raise MemoryError()

    def __dealloc__(self):
        bw_free(&self.w)
        buf_free(&self.b_removed)
        buf_free(&self.b_new)
        buf_free(&self.b_ccur)
        buf_free(&self.b_cbase)
        buf_free(&self.b_ckpos)
        buf_free(&self.b_cpred)
        buf_free(&self.b_fch)
        buf_free(&self.b_hist)
        buf_free(&self.b_k)
        buf_free(&self.b_pred)
        buf_free(&self.b_fmode)
        buf_free(&self.b_fcount)
        buf_free(&self.b_lists)
        buf_free(&self.b_cctx)
        buf_free(&self.b_u)
        buf_free(&self.b_E)
        buf_free(&self.b_par)
        buf_free(&self.b_vm)

    cdef void _diff_vec(self, Py_ssize_t nchg, const uint64_t* crow, const uint64_t* brow,
                        const uint64_t* prow, const Py_ssize_t* ccur, const Py_ssize_t* cbase,
                        const Py_ssize_t* cpred, uint8_t* fch, uint64_t* U, uint32_t* hist,
                        Py_ssize_t* fcount, int64_t num, int64_t den, uint32_t* vm) noexcept nogil:
        """_encode's step 3 with AVX-512 (self.vec, at most VEC_FIELDS fields; without
        extrapolation or by a whole ratio, den == 1): every changed entity's changed fields and
        the components of those of the common shapes in one qc_vdiff_run call, and the rest
        (other fields, a smallest three whose largest component changed) by _diff after it
        (``vm``: scratch of a word an entity). The same values and counts as step 3."""
        cdef Py_ssize_t S = self.nslots, F = self.nfields, C = self.ncomps, e, f, s, c
        cdef const finfo_t* FI = self.fi
        cdef const comp_t* CI = self.ci
        cdef const uint64_t* cr
        cdef const uint64_t* br
        cdef const uint64_t* pr
        cdef uint8_t* fe
        cdef uint64_t* Ue
        cdef uint32_t* hs
        cdef qc_vfield fv[VEC_FIELDS]
        cdef Py_ssize_t nposts, i
        for f in range(F):
            fv[f].slots = 0
            for s in range(FI[f].first, FI[f].end):
                fv[f].slots |= (<uint32_t>1) << s
            fv[f].lanes = FI[f].lanes
            fv[f].shape = FI[f].shape
            fv[f].nz = FI[f].nz
            fv[f].quat = FI[f].quat
            fv[f].qs = CI[FI[f].c0].qshift if FI[f].shape == SHAPE_QUAT else 0
        nposts = qc_vdiff_run(&self.vp, nchg, crow, brow, prow, ccur, cbase, cpred, S, fv, F, fch,
                              fcount, U, 2 * C, hist, nchg >= HIST_SAMPLE_FROM, num, vm)
        for i in range(nposts):     # after qc_vdiff_run, whose stores cover every lane
            e = vm[i]
            cr = crow + ccur[e] * S
            br = brow + cbase[e] * S
            pr = prow + cpred[e] * S if cpred[e] >= 0 else NULL
            fe = fch + e * F
            Ue = U + e * 2 * C
            hs = hist if (nchg < HIST_SAMPLE_FROM or (e & 3) == 0) else NULL
            for f in range(F):
                if not fe[f] or FI[f].shape == SHAPE_ORD or FI[f].shape == SHAPE_NZORD:
                    continue
                if FI[f].shape == SHAPE_QUAT and ((cr[FI[f].quat] >> CI[FI[f].c0].qshift)
                                              == (br[FI[f].quat] >> CI[FI[f].c0].qshift)):
                    continue
                for c in range(FI[f].c0, FI[f].c1):
                    _diff(&CI[c], c, cr, br, pr, num, den, Ue, hs)

    cdef int _encode(self, enc_in_t* a) noexcept nogil:
        cdef Py_ssize_t S = self.nslots, F = self.nfields, C = self.ncomps
        cdef Py_ssize_t i, j, e, f, s, c, nrem = 0, nnew = 0, nchg = 0, kp = 0, t, pj, prow_i
        cdef Py_ssize_t kctx[2]
        cdef Py_ssize_t q0, q1
        cdef Py_ssize_t nlist[2]
        cdef Py_ssize_t* lists
        cdef uint8_t* cctx
        cdef uint64_t* U
        cdef bw_t w
        cdef int ctx
        cdef Py_ssize_t* removed
        cdef Py_ssize_t* newr
        cdef Py_ssize_t* ccur
        cdef Py_ssize_t* cbase
        cdef Py_ssize_t* ckpos
        cdef Py_ssize_t* cpred
        cdef uint8_t* fch
        cdef uint32_t* hist
        cdef uint8_t* kk
        cdef uint8_t* pp
        cdef uint8_t* fmode
        cdef uint8_t* EE = NULL
        cdef cpar_t* par = NULL
        cdef int shape
        cdef uint64_t vcode[16]
        cdef int64_t vlen[16]
        cdef uint32_t vesc = 0
        cdef Py_ssize_t nchg_done
        cdef Py_ssize_t* fcount
        cdef Py_ssize_t lim = a.n if a.n < a.m else a.m
        cdef const uint64_t* cr
        cdef const uint64_t* br
        cdef const uint64_t* pr
        cdef Py_ssize_t cost0, cost1, bound
        cdef int k0, k1, kid
        cdef uint64_t g, prev_id
        cdef int has_base = a.bdist > 0
        cdef int has_pred = a.pdist > 0
        cdef uint32_t idh[HIST]
        cdef const sinfo_t* SI = self.si
        cdef const comp_t* CI = self.ci
        cdef const finfo_t* FI = self.fi
        cdef const sinfo_t* si
        cdef uint8_t* fe
        cdef uint64_t* Ue
        cdef uint64_t x
        cdef Py_ssize_t end
        cdef int role, E
        cdef int64_t num = 0, den = 0

        if (buf_need(&self.b_removed, sizeof(Py_ssize_t) * (a.m + 1)) or
                buf_need(&self.b_new, sizeof(Py_ssize_t) * (a.n + 1)) or
                buf_need(&self.b_ccur, sizeof(Py_ssize_t) * (lim + 1)) or
                buf_need(&self.b_cbase, sizeof(Py_ssize_t) * (lim + 1)) or
                buf_need(&self.b_ckpos, sizeof(Py_ssize_t) * (lim + 1)) or
                buf_need(&self.b_cpred, sizeof(Py_ssize_t) * (lim + 1)) or
                buf_need(&self.b_fch, (lim + 1) * (F + 1)) or
                buf_need(&self.b_hist, sizeof(uint32_t) * HIST * 2 * (C + 1)) or
                buf_need(&self.b_k, C + 1) or buf_need(&self.b_pred, C + 1) or
                buf_need(&self.b_E, C + 1) or buf_need(&self.b_fmode, F + 1) or
                buf_need(&self.b_par, sizeof(cpar_t) * (C + 1)) or
                buf_need(&self.b_fcount, sizeof(Py_ssize_t) * (F + 1)) or
                buf_need(&self.b_lists, sizeof(Py_ssize_t) * 2 * (lim + 1)) or
                buf_need(&self.b_u, sizeof(uint64_t) * (2 * (C + 1) * (lim + 1) + 32)) or
                buf_need(&self.b_cctx, lim + 1) or
                buf_need(&self.b_vm, sizeof(uint32_t) * (lim + 1))):
            return -1
        kctx[0] = 0
        kctx[1] = 0
        nlist[0] = 0
        nlist[1] = 0
        lists = <Py_ssize_t*>self.b_lists.p
        U = <uint64_t*>self.b_u.p
        cctx = <uint8_t*>self.b_cctx.p
        removed = <Py_ssize_t*>self.b_removed.p
        newr = <Py_ssize_t*>self.b_new.p
        ccur = <Py_ssize_t*>self.b_ccur.p
        cbase = <Py_ssize_t*>self.b_cbase.p
        ckpos = <Py_ssize_t*>self.b_ckpos.p
        cpred = <Py_ssize_t*>self.b_cpred.p
        fch = <uint8_t*>self.b_fch.p
        hist = <uint32_t*>self.b_hist.p
        kk = <uint8_t*>self.b_k.p
        pp = <uint8_t*>self.b_pred.p
        fmode = <uint8_t*>self.b_fmode.p
        fcount = <Py_ssize_t*>self.b_fcount.p

        # 1. match the current entities with the baseline's by id (both sorted ascending); with
        #    an extrapolation snapshot, also each kept entity's row there and its context: 1 if
        #    it changed between that snapshot and the baseline (or is not in it), else 0
        i = 0
        j = 0
        pj = 0
        if (has_base and a.n == a.m and _same_ids(a.cid, a.bid, a.n)
                and (not has_pred or a.ctxmap != NULL       # (remembered: the same ids)
                     or (a.p == a.m and _same_ids(a.pid, a.bid, a.m)))):
            # the common case: the same entities in all the snapshots, row for row
            if a.ckey != NULL:      # the same comparison on the narrower row keys
                nchg = qc_scan_rows(a.ckey, a.bkey, a.pkey if has_pred else NULL,
                                    a.ctxmap if has_pred else NULL, a.n, a.kw, 1, ccur, cctx,
                                    ckpos, kctx)
            else:
                nchg = qc_scan_rows(a.crow, a.brow, a.prow if has_pred else NULL,
                                    a.ctxmap if has_pred else NULL, a.n, S, 0, ccur, cctx,
                                    ckpos, kctx)
            a.same = 1
            for e in range(nchg):
                cbase[e] = ccur[e]
                cpred[e] = ccur[e] if has_pred else -1
            i = a.n
            j = a.m
        elif has_base:
            while i < a.n and j < a.m:
                if a.cid[i] == a.bid[j]:
                    cr = a.crow + i * S
                    br = a.brow + j * S
                    ctx = 1
                    prow_i = -1
                    if has_pred:
                        while pj < a.p and a.pid[pj] < a.bid[j]:
                            pj += 1
                        if pj < a.p and a.pid[pj] == a.bid[j]:
                            prow_i = pj
                            ctx = rows_differ(br, a.prow + pj * S, S)
                    if rows_differ(cr, br, S):
                        ccur[nchg] = i
                        cbase[nchg] = j
                        cpred[nchg] = prow_i
                        ckpos[nchg] = kctx[ctx]
                        cctx[nchg] = <uint8_t>ctx
                        nchg += 1
                    kctx[ctx] += 1
                    i += 1
                    j += 1
                elif a.cid[i] < a.bid[j]:
                    newr[nnew] = i
                    nnew += 1
                    i += 1
                else:
                    removed[nrem] = j
                    nrem += 1
                    j += 1
            while j < a.m:
                removed[nrem] = j
                nrem += 1
                j += 1
        while i < a.n:
            newr[nnew] = i
            nnew += 1
            i += 1
        kp = kctx[0] + kctx[1]
        a.nchg = nchg
        # the changed entities of each context class, as positions within their class
        for e in range(nchg):
            t = cctx[e]
            lists[t * (lim + 1) + nlist[t]] = ckpos[e]
            nlist[t] += 1

        # 3. per changed entity, in one pass over its rows: which fields changed, and for each
        #    component of a changed field its zigzagged differences (from the baseline, from the
        #    extrapolation), counted by bit length into the component's two histograms
        #    (entity by entity, so consecutive increments hit different counters). With many
        #    changed entities only every 4th is counted (docs/wire-format.md section 8): the
        #    parameters of a sample of 64 or more are nearly as good, for much less work (the
        #    figures are in docs/wire-format.md and bench/README.md)
        for f in range(F):
            fcount[f] = 0
        if nchg:
            memset(hist, 0, sizeof(uint32_t) * HIST * 2 * C)
        # (the inputs in locals: with -fno-strict-aliasing every store below would reload them)
        crow = a.crow
        brow = a.brow
        prow = a.prow
        ext_ratio(a.bdist, a.pdist, &num, &den)
        if self.vec and F <= VEC_FIELDS and (not has_pred or den == 1):
            self._diff_vec(nchg, crow, brow, prow, ccur, cbase, cpred, fch, U, hist, fcount,
                           num, den, <uint32_t*>self.b_vm.p)
            nchg_done = nchg
        else:
            nchg_done = 0
        for e in range(nchg_done, nchg):
            cr = crow + ccur[e] * S
            br = brow + cbase[e] * S
            pr = prow + cpred[e] * S if cpred[e] >= 0 else NULL
            fe = fch + e * F
            Ue = U + e * 2 * C
            for f in range(F):
                t = _field_changed(&FI[f], cr, br)
                fe[f] = <uint8_t>t
                fcount[f] += t
                if t:
                    _diff_field(&FI[f], CI, cr, br, pr, num, den, Ue,
                                hist if (nchg < HIST_SAMPLE_FROM or (e & 3) == 0) else NULL)
        for f in range(F):
            fmode[f] = fcount[f] > 0          # some changed entity changed field f

        # 4. per component: the Exp-Golomb parameter, and whether to extrapolate
        if nchg:
            EE = <uint8_t*>self.b_E.p
            par = <cpar_t*>self.b_par.p
            for c in range(C):
                pp[c] = 0
                kk[c] = 0
                if not fmode[CI[c].field]:
                    continue                # (no changed entity changed it: not written)
                k0 = best_k(hist + (2 * c) * HIST, CI[c].b, &cost0)
                kk[c] = <uint8_t>k0
                if has_pred and CI[c].predictable:
                    k1 = best_k(hist + (2 * c + 1) * HIST, CI[c].b, &cost1)
                    if cost1 < cost0:
                        pp[c] = 1
                        kk[c] = <uint8_t>k1
                EE[c] = <uint8_t>egx_E(kk[c], CI[c].b)
                par[c].k = kk[c]
                par[c].E = EE[c]
                par[c].b = <uint8_t>CI[c].b
                par[c].p = pp[c]
                if self.vec:
                    self.vp.k[c] = kk[c]
                    self.vp.E[c] = EE[c]
                    self.vp.b[c] = CI[c].b
                    self.vp.sel[c] = 2 * (c & 7) + pp[c]

        # 5. write
        bound = 256 + set_bits_upper(a.m) + 2 * set_bits_upper(lim) + 40 + ID_KBITS \
            + nnew * (self.rec_bits + 100) + nchg * self.chg_bits + F * set_bits_upper(nchg) + C * 8
        bw_reset(&self.w)
        if bw_reserve(&self.w, bound) < 0:
            return -1
        bw_put(&self.w, <uint64_t>a.seq, 16)
        bw_put(&self.w, <uint64_t>has_base, 1)
        if has_base:
            put_egx(&self.w, <uint64_t>(a.bdist - 1), HDR_K, 16)
            bw_put(&self.w, <uint64_t>has_pred, 1)
            if has_pred:
                put_egx(&self.w, <uint64_t>(a.pdist - 1), HDR_K, 16)
            if a.m:
                put_set(&self.w, removed, nrem, a.m)
        # new entities: count, ids, records
        put_egx(&self.w, <uint64_t>nnew, 0, 32)
        if nnew:
            memset(idh, 0, sizeof(idh))
            prev_id = 0
            for i in range(nnew):
                g = a.cid[newr[i]] - prev_id - (1 if i else 0)
                idh[qc_bitlen64(g)] += 1
                prev_id = a.cid[newr[i]]
            kid = best_k(idh, 64, &cost0)
            if kid > 63:
                kid = 63
            bw_put(&self.w, <uint64_t>kid, ID_KBITS)
            prev_id = 0
            for i in range(nnew):
                put_egx(&self.w, a.cid[newr[i]] - prev_id - (1 if i else 0), kid, 64)
                prev_id = a.cid[newr[i]]
            for i in range(nnew):
                self.plan.put_row(&self.w, a.crow + newr[i] * S)
        if has_base:
            if has_pred:
                # SET over the entities that changed between the two references, then over the rest
                if kctx[1]:
                    put_set(&self.w, lists + (lim + 1), nlist[1], kctx[1])
                if kctx[0]:
                    put_set(&self.w, lists, nlist[0], kctx[0])
            elif kp:
                put_set(&self.w, lists + (lim + 1), nlist[1], kp)
            if nchg:
                # per field: SET(nchg) of the changed entities (by rank) whose field f changed
                for f in range(F):
                    t = 0
                    for e in range(nchg):       # (branch-free: fields change irregularly)
                        lists[t] = e
                        t += fch[e * F + f]
                    put_set(&self.w, lists, t, nchg)
                for f in range(F):
                    if fmode[f]:
                        for c in range(self.fi[f].c0, self.fi[f].c1):
                            if has_pred and self.ci[c].predictable:
                                bw_put(&self.w, pp[c], 1)
                            bw_put(&self.w, kk[c], kbits_for(self.ci[c].b))
                w = self.w              # a local copy the compiler can keep in registers
                for e in range(nchg):
                    cr = a.crow + ccur[e] * S
                    br = a.brow + cbase[e] * S
                    fe = fch + e * F
                    Ue = U + e * 2 * C
                    if self.vec:
                        # every lane's code at once (qc_vcodes), then the appends in order; a
                        # smallest three whose largest component changed or whose first
                        # component escapes takes the slot loop below
                        qc_vcodes(&self.vp, Ue, vcode, vlen, &vesc)
                    for f in range(F):
                        if not fe[f]:
                            continue
                        shape = FI[f].shape
                        if self.vec and shape != SHAPE_GENERAL:
                            if shape == SHAPE_ORD:
                                for c in range(FI[f].c0, FI[f].c1):
                                    bw_put(&w, vcode[c], <int>vlen[c])
                                continue
                            if shape == SHAPE_NZORD:
                                s = FI[f].nz
                                if br[s] != 0:      # (else the flag is implied: 1, it changed)
                                    bw_put(&w, cr[s], 1)
                                if cr[s] != 0:
                                    for c in range(FI[f].c0, FI[f].c1):
                                        bw_put(&w, vcode[c], <int>vlen[c])
                                continue
                            s = FI[f].quat
                            c = FI[f].c0
                            if ((cr[s] >> CI[c].qshift) == (br[s] >> CI[c].qshift)
                                    and not (vesc >> c) & 1):
                                bw_put(&w, vcode[c], <int>vlen[c])
                                bw_put(&w, vcode[c + 1], <int>vlen[c + 1])
                                bw_put(&w, vcode[c + 2], <int>vlen[c + 2])
                                continue
                        if shape == SHAPE_ORD:
                            for c in range(FI[f].c0, FI[f].c1):
                                put_egx32(&w, Ue[2 * c + par[c].p], par[c])
                            continue
                        if shape == SHAPE_NZORD:
                            s = FI[f].nz
                            if br[s] != 0:      # (else the flag is implied: 1, it changed)
                                bw_put(&w, cr[s], 1)
                            if cr[s] != 0:
                                for c in range(FI[f].c0, FI[f].c1):
                                    put_egx32(&w, Ue[2 * c + par[c].p], par[c])
                            continue
                        s = FI[f].first
                        end = FI[f].end
                        while s < end:
                            si = &SI[s]
                            role = si.role
                            if role == R_ORD:
                                c = si.comp
                                if si.bits <= 32:
                                    put_egx32(&w, Ue[2 * c + par[c].p], par[c])
                                else:
                                    put_egx_E(&w, Ue[2 * c + pp[c]], kk[c], si.bits, EE[c])
                                s += 1
                            elif role == R_FLAG:
                                if not (FI[f].implied_flag and br[s] == 0):
                                    bw_put(&w, cr[s], 1)
                                s += 1 + (si.span if cr[s] == 0 else 0)
                            elif role == R_QUAT:
                                # the first component's code doubles as the "same largest
                                # component" signal: its escape carries one more bit, 1 = the
                                # absolute code follows instead
                                c = si.comp
                                E = EE[c]
                                if (cr[s] >> (3 * si.cb)) != (br[s] >> (3 * si.cb)):
                                    # a new largest component: its index and the differences
                                    # from the remapped baseline, or the absolute code
                                    bw_put(&w, 0, E)
                                    bw_put(&w, 1, 1)
                                    if (2 + egx_len(Ue[2 * c], kk[c], si.cb)
                                            + egx_len(Ue[2 * c + 2], kk[c + 1], si.cb)
                                            + egx_len(Ue[2 * c + 4], kk[c + 2], si.cb)) < si.bits:
                                        bw_put(&w, 1, 1)
                                        bw_put(&w, cr[s] >> (3 * si.cb), 2)
                                        put_egx32(&w, Ue[2 * c], par[c])
                                        put_egx32(&w, Ue[2 * c + 2], par[c + 1])
                                        put_egx32(&w, Ue[2 * c + 4], par[c + 2])
                                    else:
                                        bw_put(&w, 0, 1)
                                        bw_put(&w, cr[s], si.bits)
                                elif egx_escapes(Ue[2 * c + pp[c]], kk[c], si.cb):
                                    bw_put(&w, 0, E)
                                    bw_put(&w, 0, 1)
                                    bw_put(&w, Ue[2 * c + pp[c]], si.cb)
                                    put_egx32(&w, Ue[2 * c + 2 + par[c + 1].p], par[c + 1])
                                    put_egx32(&w, Ue[2 * c + 4 + par[c + 2].p], par[c + 2])
                                else:
                                    put_egx32(&w, Ue[2 * c + par[c].p], par[c])
                                    put_egx32(&w, Ue[2 * c + 2 + par[c + 1].p], par[c + 1])
                                    put_egx32(&w, Ue[2 * c + 4 + par[c + 2].p], par[c + 2])
                                s += 1
                            elif role == R_UVEC:
                                c = si.comp
                                put_egx32(&w, Ue[2 * c + par[c].p], par[c])
                                put_egx32(&w, Ue[2 * c + 2 + par[c + 1].p], par[c + 1])
                                s += 1
                            else:       # R_ABS
                                if not FI[f].implied_flip:
                                    bw_put(&w, cr[s] & si.mask, si.bits)
                                s += 1
                self.w = w
        bw_flush(&self.w)
        return 0

    def encode(self, int seq, SnapshotData cur not None, int bdist=0, SnapshotData base=None,
               int pdist=0, SnapshotData pred=None):
        """One packet: ``cur`` against an optional baseline (``bdist`` sequence numbers back)
        and an optional older snapshot for extrapolation (``pdist`` back from the baseline)."""
        return self._encode_call(seq, cur, bdist, base, pdist, pred)

    cdef bytes _encode_call(self, int seq, SnapshotData cur, int bdist, SnapshotData base,
                            int pdist, SnapshotData pred):
        cdef enc_in_t a
        cdef int rc
        cdef bytes dmap = None
        if not 0 <= seq <= 0xFFFF:
            raise ValueError(f"seq {seq} outside 0..65535")
        self._check(cur, "current")
        a.seq = seq
        a.cid = cur.idp
        a.crow = cur.rowp
        a.n = cur.n
        a.bdist = 0
        a.pdist = 0
        a.m = 0
        a.p = 0
        a.bid = NULL
        a.brow = NULL
        a.pid = NULL
        a.prow = NULL
        a.ctxmap = NULL
        a.ckey = NULL
        a.bkey = NULL
        a.pkey = NULL
        a.kw = 0
        a.same = 0
        a.nchg = 0
        if bdist:
            if not 1 <= bdist <= 0x7FFF:
                raise ValueError(f"baseline distance {bdist} outside 1..32767")
            self._check(base, "baseline")
            a.bdist = bdist
            a.m = base.n
            a.bid = base.idp
            a.brow = base.rowp
            if pdist:
                if not 1 <= pdist <= 0x7FFF or bdist + pdist > 0x7FFF:
                    raise ValueError(f"extrapolation distance {pdist} outside 1..{0x7FFF - bdist}")
                self._check(pred, "extrapolation")
                a.pdist = pdist
                a.p = pred.n
                a.pid = pred.idp
                a.prow = pred.rowp
                dmap = _diff_of(base, pred)
                if dmap is not None:
                    a.ctxmap = <const uint8_t*>PyBytes_AS_STRING(dmap)
            if _keys_match(cur, base) and (a.pdist == 0 or dmap is not None or _keys_match(cur, pred)):
                a.ckey = cur.keyp
                a.bkey = base.keyp
                a.pkey = pred.keyp if a.pdist and dmap is None else NULL
                a.kw = cur.kw
        with nogil:
            rc = self._encode(&a)
        if rc < 0:
            raise MemoryError()
        if a.same:
            _set_diff(cur, base, a.nchg, <Py_ssize_t*>self.b_ccur.p)
        self.last_bits = self.w.nbits
        return PyBytes_FromStringAndSize(<char*>self.w.buf, bw_nbytes(&self.w))


@cython.final
cdef class DeltaDecoder(CoderBase):
    """One client's decoding workspace over a Layout: the decoder's scratch and the last decode
    error. Not shared between threads (DecoderState serializes its calls). ``decode`` is a thin
    ``def`` over nogil methods that return a status, which ``_raise`` turns into DecodeError.
    ``max_entities`` bounds the entities of a decoded snapshot (no bound by default; the
    stream's DecoderState sets it before each packet from its ``max_bytes``)."""

    def __cinit__(self):
        self.max_entities = PY_SSIZE_T_MAX

    def __dealloc__(self):
        buf_free(&self.b_removed)
        buf_free(&self.b_fch)
        buf_free(&self.b_kept)
        buf_free(&self.b_newrow)
        buf_free(&self.b_k)
        buf_free(&self.b_pred)
        buf_free(&self.b_fmode)
        buf_free(&self.b_newid)
        buf_free(&self.b_cctx)
        buf_free(&self.b_E)
        buf_free(&self.b_par)
        buf_free(&self.b_dpar)
        buf_free(&self.b_pad)

    def _slot_valid(self, Py_ssize_t s, uint64_t code):
        """Whether the decoder accepts ``code`` in slot ``s`` (tests compare it with the codec)."""
        if not 0 <= s < self.nslots:
            raise IndexError(s)
        if self.si[s].allvalid:
            return True
        if self.si[s].qtab != NULL:
            return bool(quat_valid_tab(&self.si[s], code))
        return bool(slot_valid(&self.plan.slots[s], code))

    def _quat_surely_valid(self, Py_ssize_t s, uint64_t code):
        """Whether the decoder's fast path accepts the smallest-three ``code`` in slot ``s``
        without the exact test (None: the slot has no table); tests check that it accepts only
        valid codes, and most of them."""
        if not 0 <= s < self.nslots:
            raise IndexError(s)
        cdef const sinfo_t* si = &self.si[s]
        cdef uint64_t m
        if si.qsq == NULL:
            return None
        m = qc_mask(si.cb)
        return bool(code <= si.maxcode and qc_quat_surely_valid(
            si.qsq, (code >> (2 * si.cb)) & m, (code >> si.cb) & m, code & m))

    def decode(self, data, SnapshotData base=None, SnapshotData pred=None):
        """Decode a packet against the snapshots its header names (pass them). Returns
        ``(seq, ids, matrix)``, new NumPy arrays; raises DecodeError on anything malformed
        (nothing else is touched)."""
        cdef const uint8_t* p
        cdef Py_ssize_t n
        owner = _packet(data, &p, &n)
        cdef SnapshotData snap = self._decode(p, n, base, pred, SnapshotData)
        return snap._seq, snap._ids, snap._matrix

    cdef SnapshotData _decode(self, const uint8_t* data, Py_ssize_t nbytes, SnapshotData base,
                              SnapshotData pred, type kind):
        """The decoded snapshot (an instance of ``kind``, a SnapshotData class its caller gives, read-only arrays,
        ``_seq`` set, schema and the rest left for the caller) or DecodeError. ``data`` stays
        valid for the call (its owner is held by the caller)."""
        cdef br_t r
        cdef int seq, bdist, pdist, st = 0
        cdef Py_ssize_t m = 0, p = 0, S = self.nslots, nrem = 0, nnew = 0, kept, nout
        cdef int kid
        cdef uint64_t* oid = NULL
        cdef uint64_t* orow = NULL
        cdef const uint64_t* bidp = NULL
        cdef const uint64_t* browp = NULL
        cdef const uint64_t* pidp = NULL
        cdef const uint64_t* prowp = NULL
        br_init(&r, data, nbytes)
        self.err_kind = 0
        self.err_msg = b""
        self.err_slot = -1
        st = _read_header(&r, &seq, &bdist, &pdist)
        if st:
            self.err_msg = (b"in the header" if st == D_SHORT
                            else b"sequence distance outside 1..32767")
            self.err_kind = st
            self.err_pos = r.pos
            self._raise()
        if bdist:
            self._check(base, "baseline")
            m = base.n
            bidp = base.idp
            browp = base.rowp
        if pdist:
            self._check(pred, "extrapolation")
            p = pred.n
            pidp = pred.idp
            prowp = pred.rowp
        # rows of the baseline that differ from the extrapolation snapshot: known when the
        # baseline was decoded here against that very snapshot
        cdef const uint8_t* ctxmap = NULL
        cdef bytes dmap = None
        if pdist:
            dmap = _diff_of(base, pred)
            if dmap is not None:
                ctxmap = <const uint8_t*>PyBytes_AS_STRING(dmap)
        # phase 1: removed set, new ids and records into scratch
        with nogil:
            st = self._decode_head(&r, bdist, m, &nrem, &nnew, &kid)
        if st:
            self._raise_at(r.pos)
        kept = m - nrem
        nout = kept + nnew
        if bdist and nrem == 0 and nnew == 0:
            # the baseline's entities: its (immutable) id array is this snapshot's too, neither
            # read nor copied (_copy_rows skips ids onto themselves)
            ids = base._ids
            oid = <uint64_t*>bidp
        else:
            ids = _empty(nout, _U64)
            oid = <uint64_t*>_data_of(ids)
        matrix = _empty((nout, S), _U64)
        orow = <uint64_t*>_data_of(matrix)
        with nogil:
            st = self._decode_body(&r, bidp, browp, m, pidp, prowp, p, bdist, pdist, nrem, nnew,
                                   oid if nout else NULL, orow if nout else NULL, ctxmap)
        if st:
            self._raise_at(r.pos)
        cdef SnapshotData snap = SnapshotData.__new__(kind)     # tp_new, called directly
        ids.setflags(False)         # write=False (positional: no keyword dict to build)
        matrix.setflags(False)
        snap._ids = ids
        snap._matrix = matrix
        snap.n = nout
        snap.ncol = S
        snap.idp = oid if nout else NULL
        snap.rowp = orow if nout and S else NULL
        snap._seq = seq
        if bdist and nrem == 0 and nnew == 0 and m:
            # the same entities as the baseline, row for row: keep which rows changed
            _set_diff(snap, base, self.d_nchg, (<Py_ssize_t*>self.b_kept.p) + 7 * (m + 1))
        return snap

    cdef int _decode_head(self, br_t* r, int bdist, Py_ssize_t m, Py_ssize_t* nrem,
                          Py_ssize_t* nnew, int* kid) noexcept nogil:
        cdef Py_ssize_t S = self.nslots, i, n, s
        cdef uint64_t v, prev
        cdef int st
        cdef Py_ssize_t* removed
        cdef uint64_t* ids
        cdef uint64_t* rows
        nrem[0] = 0
        nnew[0] = 0
        if buf_need(&self.b_removed, sizeof(Py_ssize_t) * (m + 1)):
            return self._fail(D_NOMEM, b"out of memory")
        removed = <Py_ssize_t*>self.b_removed.p
        if bdist and m:
            st = get_set(r, removed, nrem, m)
            if st:
                return self._fail(st, b"bad set of removed entities")
        st = get_egx(r, 0, 32, &v, NULL)
        if st:
            return self._fail(st, b"bad count of new entities")
        # every new entity takes at least one bit (its id gap): a count beyond the bits left
        # is a lie, caught before anything is allocated for it
        if <Py_ssize_t>v > br_remaining(r) or v > MAX_ENTITIES - <uint64_t>(m - nrem[0]):
            return self._fail(D_STRUCT, b"count of new entities larger than the packet can hold")
        n = <Py_ssize_t>v
        nnew[0] = n
        # docs/wire-format.md section 19: the client's limit, known now that the snapshot's
        # entities are, before anything is allocated for them
        if m - nrem[0] + n > self.max_entities:
            self.err_code = <uint64_t>(m - nrem[0] + n)
            return self._fail(D_LIMITS, b"")
        if n == 0:
            return D_OK
        if buf_need(&self.b_newid, sizeof(uint64_t) * n) or \
                buf_need(&self.b_newrow, sizeof(uint64_t) * n * (S if S else 1)):
            return self._fail(D_NOMEM, b"out of memory")
        ids = <uint64_t*>self.b_newid.p
        rows = <uint64_t*>self.b_newrow.p
        if br_get(r, ID_KBITS, &v) < 0:
            return self._fail(D_SHORT, b"")
        kid[0] = <int>v
        prev = 0
        for i in range(n):
            st = get_egx(r, kid[0], 64, &v, NULL)
            if st:
                return self._fail(st, b"bad id of a new entity")
            if i:
                if v >= 0xFFFFFFFFFFFFFFFFULL - prev:
                    return self._fail(D_STRUCT, b"new entity id beyond 2**64 - 1")
                v = prev + 1 + v
            ids[i] = v
            prev = v
        return self._get_rows(r, rows, ids, n)

    cdef int _get_rows(self, br_t* r, uint64_t* rows, const uint64_t* ids,
                       Py_ssize_t n) noexcept nogil:
        """n whole records (the new entities' codes, every slot's fixed width) into ``rows``,
        each code checked as _get_changed checks it. Plan.get_row's rule, with the reader held
        in locals (as _get_changed) and the decoder's own validity tests (a full-range slot
        skips it, a Quat takes its table). An error leaves r.pos at the start of the code."""
        cdef const uint8_t* buf = r.buf
        cdef Py_ssize_t nbytes = r.nbytes, pos = r.pos, S = self.nslots, i, s, t
        cdef const sinfo_t* SI = self.si
        cdef const sinfo_t* si
        cdef uint64_t* row
        cdef uint64_t v
        cdef int bits, st = D_OK
        cdef rd_t o
        for i in range(n):
            row = rows + i * S
            s = 0
            while s < S:
                si = &SI[s]
                bits = si.bits
                if bits > 57 or not qc_bits_fast(buf, nbytes, &pos, bits, &v):
                    o = rd_slow(buf, nbytes, pos, bits, 0, RD_BITS)
                    if o.st:
                        st = D_SHORT
                        break
                    pos = o.pos
                    v = o.v
                if si.role == R_FLAG:
                    row[s] = v
                    if v == 0:
                        for t in range(s + 1, s + 1 + si.span):
                            row[t] = 0
                        s += si.span
                    s += 1
                    continue
                if si.sign:             # (the carriers of signed kinds: sign-extended)
                    v = from_wire(&self.plan.slots[s].d, v)
                row[s] = v
                if not si.allvalid and not (quat_valid_tab(si, v) if si.qtab != NULL
                                            else slot_valid(&self.plan.slots[s], v)):
                    pos -= bits
                    st = D_CODE
                    break
                s += 1
            if st:
                r.pos = pos
                self.err_id = ids[i]
                self.err_slot = <int>s
                self.err_code = row[s] if st == D_CODE else 0
                return self._fail(st, b"")
        r.pos = pos
        return D_OK

    cdef int _decode_body(self, br_t* r, const uint64_t* bid, const uint64_t* brow, Py_ssize_t m,
                          const uint64_t* pid, const uint64_t* prow, Py_ssize_t p, int bdist,
                          int pdist, Py_ssize_t nrem, Py_ssize_t nnew, uint64_t* oid,
                          uint64_t* orow, const uint8_t* ctxmap) noexcept nogil:
        cdef Py_ssize_t S = self.nslots, F = self.nfields, C = self.ncomps
        cdef Py_ssize_t i, j, o, x, kept = m - nrem, nchg = 0, e, f, c, s, kb, pj
        cdef Py_ssize_t* removed = <Py_ssize_t*>self.b_removed.p
        cdef uint64_t* nid = <uint64_t*>self.b_newid.p
        cdef uint64_t* nrow = <uint64_t*>self.b_newrow.p
        cdef Py_ssize_t* kept_base
        cdef Py_ssize_t* kept_out
        cdef Py_ssize_t* kept_pred
        cdef Py_ssize_t* cls1
        cdef Py_ssize_t* cls0
        cdef Py_ssize_t* set1
        cdef Py_ssize_t* set0
        cdef Py_ssize_t* chg
        cdef Py_ssize_t n1 = 0, n0 = 0, m1 = 0, m0 = 0, a1, a0, run_i, run_o, run_n
        cdef uint8_t* kk
        cdef uint8_t* pp
        cdef uint8_t* fmode
        cdef uint8_t* fch
        cdef uint64_t v
        cdef int64_t num, den
        cdef int st, any_, ctx, same
        cdef uint64_t* orw
        cdef const uint64_t* br
        cdef const uint64_t* pr
        cdef const uint8_t* ctxv = NULL
        cdef uint8_t* ctxw
        # the kept rows are the baseline's, row for row (no entity removed or added): the maps
        # kept index -> baseline row / output row are the identity, not written (NULL below)
        cdef bint ident = nrem == 0 and nnew == 0
        cdef bint pred_ident = 0      # kept index -> extrapolation row is the identity
        if (buf_need(&self.b_kept, sizeof(Py_ssize_t) * 8 * (kept + 1)) or
                buf_need(&self.b_k, C + 1) or buf_need(&self.b_pred, C + 1) or
                buf_need(&self.b_E, C + 1) or buf_need(&self.b_fmode, F + 1) or
                buf_need(&self.b_par, sizeof(cpar_t) * (C + 1)) or
                buf_need(&self.b_dpar, (sizeof(dpar_t) + sizeof(qc_dcomp)) * (C + 1)
                         + sizeof(qc_dfield) * (F + 1))):
            return self._fail(D_NOMEM, b"out of memory")
        kept_base = <Py_ssize_t*>self.b_kept.p
        kept_out = kept_base + (kept + 1)
        kept_pred = kept_base + 2 * (kept + 1)
        cls1 = kept_base + 3 * (kept + 1)
        cls0 = kept_base + 4 * (kept + 1)
        set1 = kept_base + 5 * (kept + 1)
        set0 = kept_base + 6 * (kept + 1)
        chg = kept_base + 7 * (kept + 1)
        kk = <uint8_t*>self.b_k.p
        pp = <uint8_t*>self.b_pred.p
        fmode = <uint8_t*>self.b_fmode.p
        # merge the kept baseline rows and the new rows in id order; runs of consecutive kept
        # rows are copied in one go
        i = 0      # baseline row
        x = 0      # index into removed
        j = 0      # new entity
        o = 0      # output row
        e = 0      # kept index
        run_i = 0
        run_o = 0
        run_n = 0
        if ident:
            # the common case: the baseline's entities, row for row
            _copy_rows(oid, orow, bid, brow, 0, 0, m, S)
            i = m
        while i < m or j < nnew:
            if i < m and x < nrem and removed[x] == i:
                if run_n:
                    _copy_rows(oid, orow, bid, brow, run_o, run_i, run_n, S)
                    run_n = 0
                x += 1
                i += 1
                continue
            if i < m and (j >= nnew or bid[i] < nid[j]):
                if run_n == 0:
                    run_i = i
                    run_o = o
                run_n += 1
                kept_base[e] = i
                kept_out[e] = o
                e += 1
                i += 1
                o += 1
            else:
                if i < m and bid[i] == nid[j]:
                    self.err_id = nid[j]
                    return self._fail(D_STRUCT, b"a new entity has the id of a kept one")
                if run_n:
                    _copy_rows(oid, orow, bid, brow, run_o, run_i, run_n, S)
                    run_n = 0
                oid[o] = nid[j]
                memcpy(orow + o * S, nrow + j * S, sizeof(uint64_t) * S)
                j += 1
                o += 1
        if run_n:
            _copy_rows(oid, orow, bid, brow, run_o, run_i, run_n, S)
        if not bdist:
            return self._finish(r)
        # changed entities: one set over all kept entities, or (with an extrapolation snapshot)
        # one over those that changed between the two references, then one over the others
        if pdist and nrem == 0 and p == m and _same_ids(pid, bid, m):
            # the common case: the same entities in both references, row for row
            # (nrem == 0: kept index e is baseline row e, and extrapolation row e)
            pred_ident = 1
            if ctxmap != NULL:
                ctxv = ctxmap       # known from decoding the baseline (SnapshotData._diff)
            else:
                if buf_need(&self.b_cctx, m + 1):
                    return self._fail(D_NOMEM, b"out of memory")
                ctxw = <uint8_t*>self.b_cctx.p
                qc_rows_differ(brow, prow, m, S, ctxw)
                ctxv = ctxw
            for e in range(kept):
                n1 += ctxv[e]
            n0 = kept - n1
        elif pdist:
            pj = 0
            same = p == m and _same_ids(pid, bid, m)
            for e in range(kept):
                kb = e if ident else kept_base[e]
                if same:
                    kept_pred[e] = kb
                    ctx = rows_differ(brow + kb * S, prow + kb * S, S)
                else:
                    kept_pred[e] = -1
                    ctx = 1
                    while pj < p and pid[pj] < bid[kb]:
                        pj += 1
                    if pj < p and pid[pj] == bid[kb]:
                        kept_pred[e] = pj
                        ctx = rows_differ(brow + kb * S, prow + pj * S, S)
                if ctx:
                    cls1[n1] = e
                    n1 += 1
                else:
                    cls0[n0] = e
                    n0 += 1
        if pdist:
            if n1:
                st = get_set(r, set1, &m1, n1)
                if st:
                    return self._fail(st, b"bad set of changed entities")
            if n0:
                st = get_set(r, set0, &m0, n0)
                if st:
                    return self._fail(st, b"bad set of changed entities")
            a1 = 0
            a0 = 0
            if pred_ident:
                # the changed kept indices from the two classes' positions (cls1 / cls0 lend
                # their room to the classes' bit masks, (m + 63) / 64 words each)
                nchg = qc_changed_rows(ctxv, kept, set1, m1, set0, m0, <uint64_t*>cls1,
                                       <uint64_t*>cls0, chg)
                if nchg < 0:
                    return self._fail(D_STRUCT, b"bad set of changed entities")
                a1 = m1
                a0 = m0
            while a1 < m1 or a0 < m0:
                if a0 >= m0 or (a1 < m1 and cls1[set1[a1]] < cls0[set0[a0]]):
                    chg[nchg] = cls1[set1[a1]]
                    a1 += 1
                else:
                    chg[nchg] = cls0[set0[a0]]
                    a0 += 1
                nchg += 1
        elif kept:
            st = get_set(r, chg, &nchg, kept)
            if st:
                return self._fail(st, b"bad set of changed entities")
        self.d_nchg = nchg
        if nchg == 0:
            return self._finish(r)
        if buf_need(&self.b_fch, nchg * F + 1):
            return self._fail(D_NOMEM, b"out of memory")
        fch = <uint8_t*>self.b_fch.p
        memset(fch, 0, nchg * F)
        for f in range(F):
            st = get_set(r, set1, &m1, nchg)
            if st:
                return self._fail(st, b"bad set of changed fields")
            fmode[f] = m1 > 0
            if m1 == nchg:      # (every changed entity: the common case moving)
                for a1 in range(nchg):
                    fch[a1 * F + f] = 1
            else:
                for a1 in range(m1):
                    fch[set1[a1] * F + f] = 1
        for f in range(F):
            if not fmode[f]:
                # (not read in this packet: defined values for _get_changed's per-packet
                # records, whose masks shift by egx_E(k, b))
                for c in range(self.fi[f].c0, self.fi[f].c1):
                    pp[c] = 0
                    kk[c] = 0
                continue
            for c in range(self.fi[f].c0, self.fi[f].c1):
                pp[c] = 0
                if pdist and self.ci[c].predictable:
                    if br_get(r, 1, &v) < 0:
                        return self._fail(D_SHORT, b"")
                    pp[c] = <uint8_t>v
                if br_get(r, kbits_for(self.ci[c].b), &v) < 0:
                    return self._fail(D_SHORT, b"")
                if <int>v > self.ci[c].b:
                    return self._fail(D_STRUCT, b"Exp-Golomb parameter above the code width")
                kk[c] = <uint8_t>v
        ext_ratio(bdist, pdist, &num, &den)
        st = self._get_changed(r, bid, brow, prow if pdist else NULL, orow, chg, nchg,
                               NULL if ident else kept_base, NULL if ident else kept_out,
                               NULL if pred_ident else kept_pred, fch, kk, pp, num, den)
        if st:
            return st
        return self._finish(r)

    cdef int _get_changed(self, br_t* r, const uint64_t* bid, const uint64_t* brow,
                          const uint64_t* prow, uint64_t* orow, const Py_ssize_t* chg,
                          Py_ssize_t nchg, const Py_ssize_t* kept_base, const Py_ssize_t* kept_out,
                          const Py_ssize_t* kept_pred, const uint8_t* fch, const uint8_t* kk,
                          const uint8_t* pp, int64_t num, int64_t den) noexcept nogil:
        """The changed entities' fields, in packet order, into their output rows (already
        copies of their baseline rows). ``prow`` NULL: no extrapolation snapshot. The maps from
        a kept index to its baseline, output and extrapolation row: NULL for the identity. The reader is
        held in locals (buf, nbytes, pos) whose addresses go only to the forced-inline fast
        reads, the rare reads returning the position (rd_slow), so that the position
        stays in a register along the chain of reads."""
        cdef const uint8_t* buf = r.buf
        cdef Py_ssize_t nbytes = r.nbytes, pos = r.pos
        cdef Py_ssize_t S = self.nslots, F = self.nfields, e, f, s, end, t, kb
        cdef const sinfo_t* SI = self.si
        cdef const comp_t* CI = self.ci
        cdef const finfo_t* FI = self.fi
        cdef const sinfo_t* si
        cdef const comp_t* cp
        cdef const uint64_t* br
        cdef const uint64_t* pr
        cdef uint64_t* orw
        cdef int st = D_OK, role, c, j, qs, qpred, any_
        cdef uint64_t v, u, ref, code, dacc
        cdef rd_t o
        cdef const char* msg = b""
        cdef dpar_t* dp = <dpar_t*>self.b_dpar.p     # each component's coding in one record
        cdef qc_dcomp* dc = <qc_dcomp*>(dp + self.ncomps + 1)   # the same for qc_fast_entity
        cdef qc_dfield* dfd = <qc_dfield*>(dc + self.ncomps + 1)
        cdef const uint8_t* fmode = <const uint8_t*>self.b_fmode.p
        cdef const qdesc* qd
        cdef int shape, b
        cdef bint fast = not self.layout.general
        cdef Py_ssize_t gen = 0     # the fields of no fast shape changed in this packet: an
        cdef int gf[GEN_FAST]       # entity with one of them changed skips qc_fast_entity
        cdef qc_fastrun run
        for c in range(self.ncomps):
            b = CI[c].b
            dp[c].k = kk[c]
            dp[c].b = b
            dp[c].p = pp[c]
            dp[c].emask = ((<uint64_t>1) << egx_E(kk[c], b)) - 1
            dp[c].kmask = qc_mask(kk[c])
            dp[c].umax = qc_mask(b)
            s = CI[c].slot
            qd = &self.plan.slots[s].d
            dc[c].emask = dp[c].emask
            dc[c].kmask = dp[c].kmask
            dc[c].umax = dp[c].umax
            dc[c].k = kk[c]
            dc[c].E = egx_E(kk[c], b)
            dc[c].b = b
            dc[c].numc = <uint64_t>num if pp[c] and CI[c].predictable else 0
            dc[c].smt = CI[c].smt
            dc[c].sh = CI[c].sh
            dc[c].shift = CI[c].shift
            dc[c].slot = CI[c].slot
            dc[c].vmask = ~(<uint64_t>0) if SI[s].sign else qc_mask(b)
            dc[c].vbad = (<uint64_t>1) << 62
            if SI[s].sign:
                dc[c].vlo = <uint64_t>qd.smin
                dc[c].vspan = <uint64_t>qd.smax - <uint64_t>qd.smin
            else:
                dc[c].vlo = 0
                dc[c].vspan = qd.maxcode
                if qd.kind == K_POWER:
                    dc[c].vbad = (<uint64_t>1) << (qd.bits - 1)
        for f in range(F):
            dfd[f].c0 = FI[f].c0
            dfd[f].c1 = FI[f].c1
            dfd[f].shape = QC_F_NONE
            shape = FI[f].shape
            s = FI[f].first
            if shape == SHAPE_ORD or shape == SHAPE_NZORD:
                dfd[f].shape = QC_F_ORD if shape == SHAPE_ORD else QC_F_NZORD
                dfd[f].slot = FI[f].nz
                dfd[f].span = SI[s].span if shape == SHAPE_NZORD else 0
                dfd[f].plain = 1
                for c in range(FI[f].c0, FI[f].c1):
                    qd = &self.plan.slots[CI[c].slot].d
                    if CI[c].smt or SI[CI[c].slot].sign or not SI[CI[c].slot].allvalid:
                        dfd[f].plain = 0
                    if (SI[CI[c].slot].role != R_ORD or CI[c].b > 32 or CI[c].shift
                            or (qd.kind == K_POWER and qd.maxcode != qc_mask(qd.bits))):
                        dfd[f].shape = QC_F_NONE    # (not the shapes' components: none today)
            elif shape == SHAPE_QUAT and SI[FI[f].quat].qtab != NULL:
                dfd[f].shape = QC_F_QUAT
                dfd[f].slot = FI[f].quat
                dfd[f].cb = SI[FI[f].quat].cb
                dfd[f].maxcode = SI[FI[f].quat].maxcode
                dfd[f].bits = SI[FI[f].quat].bits
                dfd[f].qtop = SI[FI[f].quat].qtop
                dfd[f].qsq = SI[FI[f].quat].qsq
            if fmode[f] and dfd[f].shape == QC_F_NONE:
                if gen == GEN_FAST:
                    fast = 0
                else:
                    gf[gen] = <int>f
                    gen += 1
        # the fast path reads a copy of the packet with room after it for an entity's loads,
        # zeros, so that it takes the entities up to the end: one whose bits would run past
        # the packet is left to the slot-by-slot loop (which says where it is short)
        t = nbytes + 16 + (QC_FAST_MAXBITS * (self.ncomps + S) + 7) // 8
        if fast:
            if buf_need(&self.b_pad, t):
                fast = 0
            else:
                memcpy(self.b_pad.p, buf, nbytes)
                memset(<uint8_t*>self.b_pad.p + nbytes, 0, t - nbytes)
        run.buf = <const uint8_t*>self.b_pad.p
        run.lastfast = nbytes
        run.nbits = 8 * nbytes
        run.fch = fch
        run.F = F
        run.S = S
        run.FD = dfd
        run.D = dc
        run.gf = gf
        run.gen = gen
        run.brow = brow
        run.prow = prow
        run.orow = orow
        run.chg = chg
        run.kept_base = kept_base
        run.kept_out = kept_out
        run.kept_pred = kept_pred
        run.num = num
        run.den = den
        e = 0
        while e < nchg:
            if fast:
                # the entities the fast path takes; the slot-by-slot loop below takes the next
                e = qc_fast_run(&run, e, nchg, &pos)
                if e == nchg:
                    break
            kb = chg[e] if kept_base == NULL else kept_base[chg[e]]
            br = brow + kb * S
            orw = orow + (chg[e] if kept_out == NULL else kept_out[chg[e]]) * S
            pr = NULL
            if prow != NULL:
                t = chg[e] if kept_pred == NULL else kept_pred[chg[e]]
                if t >= 0:
                    pr = prow + t * S
            any_ = 0
            for f in range(F):
                if not fch[e * F + f]:
                    continue
                any_ = 1
                s = FI[f].first
                end = FI[f].end
                dacc = 0
                shape = FI[f].shape
                if shape == SHAPE_ORD or shape == SHAPE_NZORD:
                    # the common shapes without the slot loop's dispatch (as its R_FLAG and
                    # R_ORD branches)
                    if shape == SHAPE_NZORD:      # (its flag governs the rest of the field)
                        o = rd_flag_into(buf, nbytes, pos, br[s] == 0, orw, br, s, SI[s].span,
                                         &dacc)
                        pos = o.pos
                        st = o.st
                        if st:
                            break
                        s = end if o.v == 0 else s + 1
                    if s < end:
                        for c in range(FI[f].c0, FI[f].c1):
                            si = &SI[s]
                            o = rd_ord(buf, nbytes, pos, &CI[c], &dp[c], br[s],
                                       pr[s] if pr != NULL else 0, pr != NULL and dp[c].p,
                                       si.sign, num, den)
                            pos = o.pos
                            st = o.st
                            if st:
                                msg = b"bad difference"
                                break
                            v = o.v
                            if not si.allvalid and not slot_valid(&self.plan.slots[s], v):
                                self.err_slot = <int>s
                                self.err_code = v
                                st = D_CODE
                                break
                            orw[s] = v
                            dacc |= v ^ br[s]
                            s += 1
                        if st:
                            break
                    # (here s == end: the slot loop below has nothing left, the checks after it
                    # are the field's)
                while s < end:
                    si = &SI[s]
                    role = si.role
                    if role == R_ORD:
                        # one ordered component, at the top of 64 bits: the wrap to the width
                        # is free
                        c = si.comp
                        o = rd_ord(buf, nbytes, pos, &CI[c], &dp[c], br[s],
                                   pr[s] if pr != NULL else 0, pr != NULL and dp[c].p, si.sign,
                                   num, den)
                        pos = o.pos
                        st = o.st
                        if st:
                            msg = b"bad difference"
                            break
                        v = o.v
                    elif role == R_QUAT or role == R_UVEC:
                        # smallest three: the first component's code doubles as the "same
                        # largest component" signal (an escape with one more bit, 1: something
                        # else follows); a unit vector: two components
                        c = si.comp
                        if role == R_QUAT:
                            qs = 3 * si.cb
                            qpred = pr != NULL and (pr[s] >> qs) == (br[s] >> qs)
                            code = (br[s] >> qs) << qs
                        else:
                            qpred = pr != NULL
                            code = 0
                        o.alt = 0
                        for j in range(3 if role == R_QUAT else 2):
                            cp = &CI[c + j]
                            st = qc_egx_fast_m(buf, nbytes, &pos, dp[c + j].k, dp[c + j].emask,
                                               dp[c + j].kmask, dp[c + j].umax, &u)
                            if st != 1:
                                if st == 0:
                                    o = rd_slow(buf, nbytes, pos, kk[c + j], cp.b,
                                                RD_EGX_ALT if j == 0 and role == R_QUAT else RD_EGX)
                                    pos = o.pos
                                    u = o.v
                                    st = o.st
                                else:
                                    st = D_STRUCT
                                if st or o.alt:
                                    break
                            st = D_OK
                            ref = top_lin(br[s], cp)
                            if qpred and pp[c + j]:
                                ref = top_ref(ref, top_lin(pr[s], cp), cp.sh, num, den)
                            code |= (top_code(ref, u, cp) >> cp.sh) << cp.shift
                        if st:
                            msg = b"bad difference"
                            break
                        if o.alt:
                            # a new largest component: the absolute code, or the new index and
                            # the differences from the remapped baseline
                            o = rd_slow(buf, nbytes, pos, 1, 0, RD_BITS)
                            t = <Py_ssize_t>o.v         # 0: the absolute code follows, 1: the new index
                            if not o.st:
                                o = rd_slow(buf, nbytes, o.pos, 2 if t else si.bits, 0, RD_BITS)
                            pos = o.pos
                            st = o.st
                            if st:
                                break
                            if t == 0:
                                code = o.v
                            else:
                                if o.v == (br[s] >> (3 * si.cb)):
                                    st = D_STRUCT
                                    msg = b"a smallest-three remap to the baseline's own index"
                                    break
                                j = <int>o.v
                                code = o.v << (3 * si.cb)
                                for t in range(3):
                                    cp = &CI[c + t]
                                    o = rd_slow(buf, nbytes, pos, kk[c + t], cp.b, RD_EGX)
                                    pos = o.pos
                                    st = o.st
                                    if st:
                                        break
                                    code |= ((quat_remap_ref(br[s], j, <int>t, cp.b, cp.qtop) + <uint64_t>unzz(o.v))
                                             & qc_mask(cp.b)) << cp.shift
                                if st:
                                    msg = b"bad difference"
                                    break
                        v = code
                    elif role == R_FLAG:
                        o = rd_flag_into(buf, nbytes, pos, FI[f].implied_flag and br[s] == 0,
                                         orw, br, s, si.span, &dacc)
                        pos = o.pos
                        st = o.st
                        if st:
                            break
                        s += 1 + (si.span if o.v == 0 else 0)
                        continue
                    else:       # R_ABS
                        if FI[f].implied_flip:
                            v = br[s] ^ 1
                        else:
                            o = rd_slow(buf, nbytes, pos, si.bits, 0, RD_BITS)
                            pos = o.pos
                            st = o.st
                            if st:
                                break
                            v = o.v
                    if not si.allvalid and not (quat_valid_tab(si, v) if si.qtab != NULL
                                                else slot_valid(&self.plan.slots[s], v)):
                        self.err_slot = <int>s
                        self.err_code = v
                        st = D_CODE
                        break
                    orw[s] = v
                    dacc |= v ^ br[s]
                    s += 1
                if st:
                    break
                if dacc == 0:
                    st = D_STRUCT
                    msg = b"a field marked changed is unchanged"
                    break
            if not st and not any_:
                st = D_STRUCT
                msg = b"an entity marked changed has no changed field"
            if st:
                r.pos = pos
                self.err_id = bid[kb]
                return self._fail(st, msg)
            e += 1
        r.pos = pos
        return D_OK

    cdef int _finish(self, br_t* r) noexcept nogil:
        cdef Py_ssize_t left = br_remaining(r)
        cdef uint64_t v
        if left >= 8:
            return self._fail(D_TRAIL, b"")
        if br_get(r, <int>left, &v) < 0 or v != 0:
            return self._fail(D_TRAIL, b"")
        return D_OK

    cdef int _fail(self, int kind, const char* msg) noexcept nogil:
        self.err_kind = kind
        self.err_msg = msg
        return kind

    cdef int _raise_at(self, Py_ssize_t pos) except -1:
        self.err_pos = pos
        self._raise()
        return -1

    cdef int _raise(self) except -1:
        cdef str where = f"at bit {self.err_pos}"
        cdef str msg = (<bytes>self.err_msg).decode("ascii") if self.err_msg != NULL else ""
        cdef str who = ""
        if self.err_kind == D_SHORT:
            raise DecodeError(f"snapshot packet: truncated, a read runs past the end {where}"
                              + (f" ({msg})" if msg else ""))
        if self.err_kind == D_TRAIL:
            raise DecodeError(f"snapshot packet: unexpected data after the end of the packet {where}")
        if self.err_kind == D_NOMEM:
            raise MemoryError()
        if self.err_kind == D_LIMITS:
            raise DecodeError(f"snapshot packet: its snapshot of {self.err_code} entities would make the "
                              f"client hold more than its max_bytes ({max(self.max_entities, 0)} entities "
                              f"fit now; docs/wire-format.md section 19)", kind="limits")
        if self.err_kind == D_CODE:
            s = self.err_slot
            name = self.plan.slot_names[s] if 0 <= s < self.nslots else f"slot {s}"
            code = self.err_code
            if 0 <= s < self.nslots and self.si[s].sign:
                code = <int64_t>self.err_code
            raise DecodeError(f"snapshot packet: entity {self.err_id}: {name}: code {code} "
                              f"is not valid ({where})")
        raise DecodeError(f"snapshot packet: {msg} {where}")


cdef inline void _copy_rows(uint64_t* oid, uint64_t* orow, const uint64_t* bid,
                            const uint64_t* brow, Py_ssize_t o, Py_ssize_t i, Py_ssize_t n,
                            Py_ssize_t S) noexcept nogil:
    # (no memcpy of 0 bytes: its pointers must be valid even then, and a 0-slot schema's rows
    # have none)
    if n and oid + o != bid + i:      # (a decoded snapshot that shares its baseline's ids)
        memcpy(oid + o, bid + i, sizeof(uint64_t) * n)
    if n and S:
        memcpy(orow + o * S, brow + i * S, sizeof(uint64_t) * S * n)


cdef int _read_header(br_t* r, int* seq, int* bdist, int* pdist) noexcept nogil:
    cdef uint64_t v
    cdef int st
    bdist[0] = 0
    pdist[0] = 0
    if br_get(r, 16, &v) < 0:
        return D_SHORT
    seq[0] = <int>v
    if br_get(r, 1, &v) < 0:
        return D_SHORT
    if v == 0:
        return D_OK
    st = get_egx(r, HDR_K, 16, &v, NULL)
    if st:
        return st
    if v >= 0x7FFF:
        return D_STRUCT
    bdist[0] = <int>v + 1
    if br_get(r, 1, &v) < 0:
        return D_SHORT
    if v == 0:
        return D_OK
    st = get_egx(r, HDR_K, 16, &v, NULL)
    if st:
        return st
    if v + 1 + <uint64_t>bdist[0] > 0x7FFF:
        return D_STRUCT
    pdist[0] = <int>v + 1
    return D_OK


cdef object _as_bytes(object data):
    """A 1-D uint8 view of any buffer (bytes, bytearray, memoryview, NumPy array)."""
    if isinstance(data, (bytes, bytearray)):
        return data
    mv = memoryview(data)
    if not mv.c_contiguous:
        raise ValueError("packet: expected a contiguous buffer")  # as Schema.decode and BitReader
    return mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv


cdef object _packet(object data, const uint8_t** p, Py_ssize_t* n):
    """Point p / n at a packet's bytes; returns the object that keeps them alive. bytes directly,
    any other contiguous buffer through a memoryview (as _as_bytes)."""
    cdef const uint8_t[::1] view
    if type(data) is bytes:
        p[0] = <const uint8_t*>PyBytes_AS_STRING(data)
        n[0] = PyBytes_GET_SIZE(data)
        return data
    view = _as_bytes(data)
    n[0] = view.shape[0]
    p[0] = &view[0] if view.shape[0] else NULL
    return view


def ascending_ids(ids):
    """Whether ``ids``, a C-contiguous uint64 array, is strictly ascending (sorted, no duplicate):
    the check every snapshot makes of its ids, in one C pass (NumPy's ``all(a[1:] > a[:-1])``
    would build temporaries of the whole array)."""
    cdef const uint64_t* p
    cdef Py_ssize_t i, n
    if not (isinstance(ids, np.ndarray) and (ids.dtype is _U64 or ids.dtype == _U64)):
        raise ValueError("ascending_ids: expected a uint64 array")
    p = <const uint64_t*>_data_of(ids, False)
    n = ids.shape[0]
    for i in range(1, n):
        if p[i] <= p[i - 1]:
            return False
    return True


def same_ids(a, b):
    """Whether ``a`` and ``b``, uint64 id arrays as snapshots hold them, have the same ids (one
    memcmp). Snapshots of a world whose entities did not change share one id array (see
    quantcodec.snapshot.Snapshot), so the encoders and decoders that compare them stop at the
    pointers instead of reading two cold arrays."""
    cdef Py_ssize_t n
    if a is b:
        return True
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
            and (a.dtype is _U64 or a.dtype == _U64) and (b.dtype is _U64 or b.dtype == _U64)
            and a.ndim == 1 and b.ndim == 1):
        raise ValueError("same_ids: expected two one-dimensional uint64 arrays")
    n = a.shape[0]
    if b.shape[0] != n:
        return False
    return _same_ids(<const uint64_t*>_data_of(a, False), <const uint64_t*>_data_of(b, False), n)


def ids_u64(a):
    """A new C-contiguous uint64 copy of ``a``, a 1-D native integer array, in one C pass; None
    when ``a`` is anything else (the caller converts it the general way). ValueError naming the
    row of a negative id."""
    cdef Py_ssize_t n, bad
    if not isinstance(a, np.ndarray) or a.ndim != 1 or a.dtype.kind not in "iu":
        return None
    n = a.shape[0]
    ids = _empty(n, _U64)
    bad = int_column(a, n, 0, 0, <uint64_t>0xFFFFFFFFFFFFFFFFULL, <uint64_t*>_data_of(ids), 1)
    if bad == -2:
        return None
    if bad >= 0:
        raise ValueError(f"snapshot: ids must be non-negative, got {int(a[bad])} at row {bad}")
    return ids


cdef void* _data_of(object array, bint writable=True) except NULL:
    """The data pointer of a C-contiguous NumPy array (through the buffer protocol: cheaper than a
    typed memoryview), writable unless asked otherwise; ValueError if it is not C-contiguous.
    The caller keeps the array, so the pointer lives as long."""
    cdef Py_buffer vb
    cdef void* ptr
    try:
        PyObject_GetBuffer(array, &vb, (PyBUF_WRITABLE if writable else 0) | PyBUF_C_CONTIGUOUS)
    except BufferError:
        raise ValueError("snapshot data: the arrays must be C-contiguous"
                         + (" and writable" if writable else "")) from None
    ptr = vb.buf
    PyBuffer_Release(&vb)
    return ptr if ptr != NULL else <void*>1      # (an empty array: never dereferenced)


cdef bytes _diff_of(SnapshotData a, SnapshotData b):
    """Which rows of ``a`` differ from ``b`` (bytes, one a row), if ``a`` remembers it; else None."""
    cdef object d
    with cython.critical_section(a):
        d = a._diff
    if d is not None and (<tuple>d)[0]() is b and PyBytes_GET_SIZE((<tuple>d)[1]) == a.n:
        return (<tuple>d)[1]
    return None


cdef int _set_diff(SnapshotData a, SnapshotData b, Py_ssize_t nchg, const Py_ssize_t* chg) except -1:
    """Unless ``a`` already remembers a comparison, remember that its rows chg[0..nchg) are the
    ones that differ from ``b`` (same ids, row for row)."""
    cdef Py_ssize_t m = a.n, e
    cdef bytes out
    cdef uint8_t* p
    if a._diff is not None:
        return 0
    out = PyBytes_FromStringAndSize(NULL, m)
    p = <uint8_t*>PyBytes_AS_STRING(out)
    memset(p, 0, m)
    for e in range(nchg):
        p[chg[e]] = 1
    d = (PyWeakref_NewRef(b, None), out)
    with cython.critical_section(a):
        if a._diff is None:
            a._diff = d
    return 0
