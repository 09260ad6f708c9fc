# The delta layer's shared declarations (quantcodec/_delta.pyx, with its parts _encoder.pxi and
# _decoder.pxi): the per-schema Layout, the encoder's and decoder's workspaces and per-packet
# contexts (enc_t, dec_t: what each step of the two pipelines reads and writes), the snapshot
# data, and the C structs they hold. Cimported by _history (the stream's bookkeeping), which
# drives the coder.
cimport cython
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int64_t

from quantcodec._plan cimport Plan, slot_t
from quantcodec._bits cimport bw_t, br_t
from quantcodec._entropy cimport buf_t, cpar_t, qc_dcomp


cdef extern from "_delta_avx512.h":
    ctypedef struct qc_vplan:
        int64_t idx[16]
        int64_t shift[16]
        int64_t sh[16]
        int64_t smt[16]
        int64_t hoff[16]
        int64_t k[16]
        int64_t E[16]
        int64_t b[16]
        int64_t sel[16]
        int nhalf
        int S
    int qc_have_avx512() noexcept nogil
    void qc_vcodes(const qc_vplan* vp, const uint64_t* Ue, uint64_t* code, int64_t* len,
                   uint32_t* esc) noexcept nogil
    ctypedef struct qc_vfield:
        uint32_t slots
        uint32_t lanes
        int shape, nz, quat, qs
    Py_ssize_t qc_vdiff_run(const qc_vplan* vp, Py_ssize_t n, const uint64_t* crow,
                            const uint64_t* brow, const uint64_t* prow, const Py_ssize_t* ccur,
                            const Py_ssize_t* cbase, const Py_ssize_t* cpred, Py_ssize_t S,
                            const qc_vfield* FV, Py_ssize_t F, uint8_t* fch, Py_ssize_t* fcount,
                            uint64_t* U, Py_ssize_t C2, uint32_t* hist, int sample, int64_t r,
                            uint32_t* posts) noexcept nogil

cdef extern from "_delta_fast.h":
    enum:
        QC_F_NONE
        QC_F_ORD
        QC_F_NZORD
        QC_F_QUAT
    enum:
        QC_FAST_MAXBITS
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


# slot roles
cdef enum:
    R_FLAG = 1      # NearlyZero flag
    R_ORD = 2       # ordered scalar: one component
    R_QUAT = 3      # smallest three: same-index bit, then 3 components or the absolute code
    R_UVEC = 4      # octahedral: 2 components
    R_ABS = 5       # unordered (Bool, Enum): absolute code


# field shapes (finfo_t.shape)
cdef enum:
    SHAPE_GENERAL = 0   # anything else: slot by slot
    SHAPE_ORD = 1       # ordered scalars only (a Bounded, a Vector of them, ...)
    SHAPE_NZORD = 2     # a NearlyZero flag, then the ordered scalars it governs
    SHAPE_QUAT = 3      # one smallest-three slot

ctypedef struct sinfo_t:
    int role
    int bits
    int comp          # first component (R_ORD, R_QUAT, R_UVEC), else -1
    int span          # R_FLAG: governed slots
    int cb            # R_QUAT / R_UVEC: bits per coordinate
    int sign          # carriers are sign-extended (Int, signed Fixed)
    int field
    uint64_t mask     # qc_mask(bits)
    double* qtab      # R_QUAT with cb <= QTAB_MAXBITS: per component code, the kept value shrunk
                      # by one step (quat_valid_kept's first step), else NULL
    uint64_t maxcode  # the slot's largest code
    uint32_t* qsq     # R_QUAT with qtab: per component code, an upper bound of its shrunk value's
                      # square in units of 2**-32 (at most 2**32 - 1), for the decoder's fast
                      # path (qc_quat_surely_valid); else NULL
    uint64_t qlo      # R_QUAT with qtab: the component codes whose shrunk value is at most 0.5
    uint64_t qspan    # are qlo .. qlo + qspan (qlo = 2**64 - 1: no such interval)
    uint64_t qtop     # R_QUAT: the top component code (2**cb - 1 for endpoints and bins; midpoint 2**cb - 2)
    int allvalid      # R_ORD: every value of its width is a valid code (the decoder skips the
                      # check), see scalar_all_valid

ctypedef struct comp_t:
    int slot
    int shift         # position of the coordinate inside the slot's wire code
    int b             # width of the component
    int smag          # sign-magnitude code (PowerCurve, Half), mapped to an ordered one
    int predictable   # b <= 32: extrapolation stays inside int64
    int field
    int nzslot        # the NearlyZero flag slot governing it, or -1
    int qshift        # R_QUAT: 3 * cbits (the index's position), else 0
    int qpos          # R_QUAT: the kept position (0: a, the high bits .. 2: c), else 0
    uint64_t qtop     # R_QUAT: the mode's top component code (2**b - 1; midpoint 2**b - 2), else 0
    int sh            # 64 - b: a b-bit value shifted up by sh has its sign bit at bit 63
    uint64_t smt      # smag: the magnitude bits (b - 1 of them) shifted up by sh, else 0

ctypedef struct finfo_t:
    int first         # first slot
    int end           # one past the last slot
    int c0            # first component
    int c1            # one past the last component
    int implied_flag  # the field is one NearlyZero: a change from flag 0 implies flag 1
    int implied_flip  # the field is one 1-bit unordered slot: a change implies the flip
    int shape         # SHAPE_GENERAL, or one of the common shapes the hot loops take apart without
                      # going slot by slot: SHAPE_ORD, SHAPE_NZORD, SHAPE_QUAT (Layout._set_shape)
    int nz            # SHAPE_NZORD: the flag slot (the first), else -1
    int quat          # SHAPE_QUAT: the slot, else -1
    int pred          # every component is predictable (b <= 32)
    uint32_t lanes    # its components as a lane mask of the AVX-512 path (c0 .. c1 - 1)

ctypedef struct enc_in_t:
    const uint64_t* cid
    const uint64_t* crow
    Py_ssize_t n
    const uint64_t* bid
    const uint64_t* brow
    Py_ssize_t m
    const uint64_t* pid
    const uint64_t* prow
    Py_ssize_t p
    int seq
    int bdist         # 0: no baseline
    int pdist         # 0: no extrapolation
    const uint8_t* ctxmap   # with an extrapolation snapshot: which baseline rows differ from its
                            # rows, when known (SnapshotData._diff), else NULL
    const uint64_t* ckey    # row keys of the three (SnapshotData.keyp), kw words a row, when all
    const uint64_t* bkey    # that the scan reads have them from one plan; else NULL
    const uint64_t* pkey
    Py_ssize_t kw
    int same          # out: the common case (the same entities in all, row for row)
    Py_ssize_t nchg   # out: changed entities (their rows in b_ccur)


cdef class SnapshotData:

    cdef readonly object _ids
    cdef readonly object _matrix
    cdef const uint64_t* idp
    cdef const uint64_t* rowp
    cdef readonly Py_ssize_t n
    cdef readonly Py_ssize_t ncol
    # the state of quantcodec.Snapshot, here so that a decoder builds one without attribute
    # lookups: its schema, seq (None on the server), clamp counts, lazily built views
    cdef public object _schema
    cdef public object _seq
    cdef public object _clamped
    cdef public object _columns
    cdef public object _codes
    cdef object __weakref__
    # (weak reference to another snapshot with the same ids, bytes: one byte a row, 1 where the
    # rows differ), or None: set once, by the first packet coded from this snapshot to that one
    # (an encoder's current snapshot and its baseline; a decoded view and the baseline it was
    # decoded against). A later packet whose baseline is this snapshot and whose extrapolation
    # snapshot is that one needs exactly this comparison: it reads it instead of comparing the
    # two code matrices again. Read and set under a critical section (free-threaded builds).
    cdef readonly object _diff
    # Row keys (server-side snapshots): each row's carriers masked to their slot widths and
    # packed end to end into kw words (word w of row i at keyp[w * n + i], malloc'ed); an
    # injective image of the row, so two rows are equal exactly when their keys are (every
    # carrier is checked to be the canonical form of its masked bits, else there are no keys).
    # The encoders' row scan compares these (2 words a row instead of 8 carriers for the bench
    # scene): packed once a tick, read by every client's encode (figures: bench/README.md).
    # NULL when the snapshot has none (decoded views; keys that would not be narrower than the
    # rows).
    cdef uint64_t* keyp
    cdef readonly Py_ssize_t kw
    cdef readonly object _kplan     # the Plan whose slot layout packed them
    cdef int _pack_keys(self, Plan plan) except -1


@cython.final
cdef class Layout:

    cdef readonly Plan plan
    cdef readonly Py_ssize_t nslots
    cdef readonly Py_ssize_t nfields
    cdef readonly Py_ssize_t ncomps
    cdef readonly bint general      # no shortcuts for the common field shapes (tests)
    cdef sinfo_t* si
    cdef comp_t* ci
    cdef finfo_t* fi
    cdef Py_ssize_t rec_bits        # most bits of one full record
    cdef Py_ssize_t chg_bits        # most bits of one changed entity
    cdef int vec                    # the encoder's differences with AVX-512 (qc_vdiff_run)
    cdef qc_vplan vp                # its lanes (the per-packet entries are the coder's copy's)
    cdef void _set_comp(self, Py_ssize_t c, Py_ssize_t s, int shift, int b, int smag)
    cdef void _set_vec(self, bint general)
    cdef void _set_shape(self, Py_ssize_t f, bint general)


ctypedef struct enc_buf_t:     # the encoder's grow-only scratch (freed as an array of buf_t)
    buf_t removed, new, ccur, cbase, ckpos, cpred, fch, hist
    buf_t k, pred, fmode, fcount, lists, cctx, u, E
    buf_t par, vm


ctypedef struct enc_t:         # one packet's encoding: what each step of _encoder.pxi reads, writes
    enc_in_t* a                 # the packet's inputs (and its outputs same, nchg)
    const sinfo_t* SI           # the layout
    const comp_t* CI
    const finfo_t* FI
    Py_ssize_t S, F, C
    Py_ssize_t rec_bits, chg_bits
    int vec                     # step 2 with AVX-512
    qc_vplan* vp                # its lanes, the coder's copy
    int has_base, has_pred
    Py_ssize_t lim              # min(n, m): the most kept entities
    int64_t num, den            # the extrapolation's ratio in lowest terms (ext_ratio)
    # step 1: the entities
    Py_ssize_t nrem, nnew, nchg
    Py_ssize_t kctx[2]          # kept entities in each context class
    Py_ssize_t nlist[2]         # changed entities in each (their positions in lists)
    Py_ssize_t* removed         # baseline rows removed
    Py_ssize_t* newr            # current rows new
    Py_ssize_t* ccur            # changed entity e: its current, baseline, extrapolation row
    Py_ssize_t* cbase
    Py_ssize_t* cpred           # (-1: none)
    Py_ssize_t* ckpos           # its position within its context class
    uint8_t* cctx               # its context class
    Py_ssize_t* lists           # per class, the changed entities' positions (2 x (lim + 1))
    # step 2: the differences
    uint8_t* fch                # changed entity e, field f: fch[e * F + f] = whether it changed
    Py_ssize_t* fcount          # per field, the changed entities whose field changed
    uint64_t* U                 # entity e, component c: U[e * 2C + 2c + p] (p = 1: extrapolated)
    uint32_t* hist              # per component, the two bit-length histograms (HIST counts each)
    uint32_t* vm                # scratch of qc_vdiff_run
    # step 3: the parameters
    uint8_t* fmode              # per field, some changed entity changed it
    uint8_t* kk                 # per component: Exp-Golomb parameter, extrapolated, escape length
    uint8_t* pp
    uint8_t* EE
    cpar_t* par                 # the same three as one record


ctypedef struct derr_t:        # the decoder's last error (DeltaDecoder._raise: the DecodeError)
    int kind
    Py_ssize_t pos
    const char* msg
    int slot
    int field                 # an entity's error: its field (-1: the entity's own)
    bint ent                  # an error in a changed entity's fields: id names it
    uint64_t id
    uint64_t code


ctypedef struct dec_buf_t:     # the decoder's grow-only scratch (freed as an array of buf_t)
    buf_t removed, fch, kept, newrow, k, pred, fmode, newid
    buf_t cctx, dcomp, pad


ctypedef struct dec_t:         # one packet's decoding: what each step of _decoder.pxi reads, writes
    br_t r                      # the reader
    const sinfo_t* SI           # the layout
    const comp_t* CI
    const finfo_t* FI
    const slot_t* slots         # the plan's slots (validity, sign extension)
    Py_ssize_t S, F, C
    int general                 # no fast path (Layout.general)
    Py_ssize_t max_entities
    dec_buf_t* b
    derr_t* err
    # the packet's inputs: the references (m, p rows), the output rows
    const uint64_t* bid
    const uint64_t* brow
    Py_ssize_t m
    const uint64_t* pid
    const uint64_t* prow        # NULL: no extrapolation snapshot
    Py_ssize_t p
    int bdist, pdist
    const uint8_t* ctxmap       # the baseline's rows that differ from the extrapolation's, if known
    uint64_t* oid
    uint64_t* orow
    # head, new entities
    Py_ssize_t nrem, nnew, kept
    int kid
    Py_ssize_t* removed
    uint64_t* nid
    uint64_t* nrow
    # the kept and changed entities
    int ident                   # kept index -> baseline / output row is the identity (maps unused)
    int pred_ident              # kept index -> extrapolation row is the identity
    Py_ssize_t* kept_base       # kept index -> baseline, output, extrapolation row (-1: none)
    Py_ssize_t* kept_out
    Py_ssize_t* kept_pred
    Py_ssize_t* cls1            # the kept indices of the two context classes
    Py_ssize_t* cls0
    Py_ssize_t n1, n0
    Py_ssize_t* set1            # the sets read (positions within the classes)
    Py_ssize_t* set0
    const uint8_t* ctxv         # per kept index, its context class (pred_ident)
    Py_ssize_t* chg             # the changed kept indices
    Py_ssize_t nchg
    # the changed fields
    uint8_t* fch
    uint8_t* fmode
    uint8_t* kk
    uint8_t* pp
    qc_dcomp* dc                # per component, its coding in this packet
    qc_dfield* dfd              # per field, its shape in the fast path
    int64_t num, den


cdef class CoderBase:
    cdef readonly Layout layout
    cdef Plan plan
    cdef Py_ssize_t nslots
    cdef Py_ssize_t nfields
    cdef Py_ssize_t ncomps
    cdef const sinfo_t* si          # the layout's (borrowed: self.layout holds them)
    cdef const comp_t* ci
    cdef const finfo_t* fi
    cdef Py_ssize_t rec_bits        # most bits of one full record
    cdef Py_ssize_t chg_bits        # most bits of one changed entity
    cdef int _check(self, SnapshotData d, str what) except -1


@cython.final
cdef class DeltaEncoder(CoderBase):
    cdef readonly Py_ssize_t last_bits   # bits of the last packet encoded (before the padding)
    cdef int vec                    # the differences with AVX-512 (qc_vdiff_run)
    cdef qc_vplan vp
    cdef bw_t w
    cdef enc_buf_t b                # scratch
    cdef int _encode(self, enc_in_t* a) noexcept nogil
    cdef bytes _encode_call(self, int seq, SnapshotData cur, int bdist, SnapshotData base,
                            int pdist, SnapshotData pred)


@cython.final
cdef class DeltaDecoder(CoderBase):
    cdef Py_ssize_t d_nchg          # changed entities of the last packet decoded
    cdef public Py_ssize_t max_entities   # a packet's snapshot may have at most this many (limits)
    cdef derr_t err
    cdef dec_buf_t b                # scratch
    cdef SnapshotData _decode(self, const uint8_t* data, Py_ssize_t nbytes, SnapshotData base,
                              SnapshotData pred, type kind)
    cdef int _raise_at(self, Py_ssize_t pos) except -1
    cdef int _raise(self) except -1


cdef int _read_header(br_t* r, int* seq, int* bdist, int* pdist) noexcept nogil
cdef object _packet(object data, const uint8_t** p, Py_ssize_t* n)
