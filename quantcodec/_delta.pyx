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


cdef uint64_t MAX_ENTITIES = 0xFFFFFFFFULL
cdef enum:
    VEC_FIELDS = 16     # the encoder's AVX-512 differences (enc_diff_vec): at most this many fields
    GEN_FAST = 8        # the decoder's fast path (dec_tables): at most this many fields of no fast shape
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


# The components' arithmetic, in one place for the encoder and the decoder (the rules under it,
# zig-zag and the reference prediction, are _delta_rules.h's, the fast path's too). A component's b-bit
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


cdef inline void ext_ratio(int bdist, int pdist, int64_t* num, int64_t* den) noexcept nogil:
    """The extrapolation's ratio bdist / pdist in lowest terms (the same rounded products: the
    same rational), so that a whole ratio is den == 1 and qc_top_ref multiplies."""
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
    ref += qc_unzz(u) << cp.sh
    if cp.smt:
        ref ^= <uint64_t>((<int64_t>ref) >> 63) & cp.smt
    return ref


cdef inline uint64_t zz_top(uint64_t t, int sh) noexcept nogil:
    """zz of the b-bit difference held in the top bits of t (sh = 64 - b)."""
    return ((t << 1) ^ <uint64_t>((<int64_t>t) >> 63)) >> sh


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
        _untrack(self)
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


include "_encoder.pxi"


include "_decoder.pxi"


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
    try:
        mv = memoryview(data)
    except TypeError:
        raise TypeError(f"SnapshotDecoder.decode: expected one datagram (a bytes-like object: bytes or "
                        f"a contiguous buffer), got {type(data).__name__}: it takes one datagram at a "
                        f"time (each of the list encode_datagrams returns, in turn)") from None
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


# The cyclic garbage collector need not see a snapshot: what one holds (its id and code arrays,
# its schema and plan, dicts of arrays made from its codes, a seq, clamp counts, the bad-entity
# report, and _diff: a weak reference without callback and bytes) never refers back to a
# snapshot, so no snapshot is ever part of a reference cycle, and reference counting frees it.
# A server holds history x clients of them (64,000 for 1,000 clients): tracked, each full
# collection walked them all (29-43 ms a collection for bench_views' server; 5-13 ms untracked,
# their windows too: _history.pyx, _put; docs/views.md, "Pauses"). Untracked as they are made:
# instances of SnapshotData and of the classes registered here (quantcodec.Snapshot, whose only
# slot of its own is that report); a subclass a user makes (its __dict__ could hold anything)
# stays tracked.
cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void* op)

cdef set _UNTRACKED = {SnapshotData}


def _untracked_class(cls, on=True):
    """Let the instances of ``cls`` (a SnapshotData subclass that adds no reference of its own
    that could lead back to a snapshot) go untracked by the garbage collector as they are made;
    ``on=False``: tracked again (bench_views --part 7 measures both)."""
    if not (isinstance(cls, type) and issubclass(cls, SnapshotData)):
        raise TypeError(f"_untracked_class: expected a SnapshotData subclass, got {cls!r}")
    if on:
        _UNTRACKED.add(cls)
    else:
        _UNTRACKED.discard(cls)


cdef inline void _untrack(SnapshotData s) noexcept:
    if type(s) in _UNTRACKED:
        PyObject_GC_UnTrack(<void*>s)


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
    w = PyWeakref_NewRef(b, None)
    d = (w, out)
    # (neither can be in a cycle: a weak reference without callback holds nothing strongly)
    PyObject_GC_UnTrack(<void*>w)
    PyObject_GC_UnTrack(<void*>d)
    with cython.critical_section(a):
        if a._diff is None:
            a._diff = d
    return 0
