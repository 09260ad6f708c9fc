"""Snapshot delta coding on code matrices (SPEC section 5): the nogil core behind snapshot.py.

A snapshot is a code matrix (N entities x nslots uint64 carriers, see _plan.pxd) whose rows are
sorted by entity id. ``DeltaCoder.encode`` writes one packet that turns a baseline matrix (or
nothing) into the current one; ``DeltaCoder.decode`` does the reverse. All the work is integer
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
from quantcodec._kernels cimport from_wire
from quantcodec._kernels cimport (
    K_BOUNDED, K_FIXED, K_ANGLE, K_POWER, K_HALF, K_UINT, K_INT, K_BOOL, K_ENUM, K_GRID, K_QUAT,
    K_UVEC, K_IRANGE, M_MIDPOINT, scalar_all_valid,
)
from quantcodec._plan cimport Plan, slot_t, K_NZFLAG, slot_valid, int_column
from quantcodec._crc32c cimport qc_crc32c, qc_get_u32le, qc_put_u32le
from quantcodec._bits cimport (
    bw_t, br_t, bw_init, bw_free, bw_reset, bw_reserve, bw_put, bw_flush, bw_nbytes, br_init,
    br_get, br_remaining, br_peek_unchecked, qc_mask, qc_load_le64,
)


cdef extern from *:
    """
    #include <stdint.h>
    #if defined(_MSC_VER)
    #include <intrin.h>
    #endif
    static inline int qc_ctz64(uint64_t x) {            /* x != 0 */
    #if defined(__GNUC__) || defined(__clang__)
        return __builtin_ctzll(x);
    #elif defined(_MSC_VER) && defined(_M_X64) || defined(_M_ARM64)
        unsigned long i; _BitScanForward64(&i, x); return (int)i;
    #else
        int n = 0; while (!(x & 1)) { x >>= 1; n++; } return n;
    #endif
    }
    static inline int qc_bitlen64(uint64_t x) {         /* 0 for 0 */
    #if defined(__GNUC__) || defined(__clang__)
        return 64 - __builtin_clzll(x | 1) - (x == 0);  /* branch-free */
    #elif defined(_MSC_VER) && defined(_M_X64) || defined(_M_ARM64)
        unsigned long i; if (!x) return 0; _BitScanReverse64(&i, x); return (int)i + 1;
    #else
        int n = 0; while (x) { x >>= 1; n++; } return n;
    #endif
    }
    /* qc_bitlen64 of x < 2**(64 - sh): with sh > 0, (x << 1) | 1 keeps every bit, and the
       index of its highest set bit is the bit length of x (one instruction after the shift,
       against four); sh == 0 (a 64-bit component) takes qc_bitlen64. */
    static inline int qc_bitlen_top(uint64_t x, int sh) {
    #if defined(__GNUC__) || defined(__clang__)
        if (sh > 0)
            return 63 ^ __builtin_clzll((x << 1) | 1);
    #endif
        return qc_bitlen64(x);
    }
    static inline int qc_msb64(uint64_t x) {            /* x != 0: qc_bitlen64(x) - 1 */
    #if defined(__GNUC__) || defined(__clang__)
        return 63 ^ __builtin_clzll(x);
    #else
        return qc_bitlen64(x) - 1;
    #endif
    }
    static inline int qc_popcount64(uint64_t x) {       /* portable: no POPCNT in baseline x86-64 */
        x = x - ((x >> 1) & 0x5555555555555555ULL);
        x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
        x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
        return (int)((x * 0x0101010101010101ULL) >> 56);
    }
    """
    int qc_ctz64(uint64_t x) noexcept nogil
    int qc_bitlen64(uint64_t x) noexcept nogil
    int qc_bitlen_top(uint64_t x, int sh) noexcept nogil
    int qc_msb64(uint64_t x) noexcept nogil


cdef extern from *:
    """
    /* The snapshot decoder's reads on a reader held in locals (buf, nbytes, *pos), forced
       inline so that the position stays in a register: with -fno-strict-aliasing, a position
       kept in memory is reloaded after every store, and that round trip lands on the chain
       from one read to the next. */
    #if defined(__GNUC__) || defined(__clang__)
    #define QC_FORCE_INLINE static inline __attribute__((always_inline))
    #elif defined(_MSC_VER)
    #define QC_FORCE_INLINE static __forceinline
    #else
    #define QC_FORCE_INLINE static inline
    #endif
    /* get_egx's common case: the whole code within one 8-byte load and not an escape, with
       the component's masks made once a packet: emask = 2**E - 1 (E = egx_E(k, b) <= 33),
       kmask = 2**k - 1, umax = 2**b - 1 (its largest value). 1: read (*out set, *pos
       advanced); 0: not the common case, nothing read (the caller takes the slow path); -1: a
       value wider than b bits. */
    QC_FORCE_INLINE int qc_egx_fast_m(const uint8_t* buf, Py_ssize_t nbytes, Py_ssize_t* pos,
                                      int k, uint64_t emask, uint64_t kmask, uint64_t umax,
                                      uint64_t* out) {
        Py_ssize_t p = *pos, idx = p >> 3;
        int e, tot;
        uint64_t peek, x, m;
        if (idx + 8 > nbytes)
            return 0;
        peek = qc_load_le64(buf + idx) >> (p & 7);
        if (!(peek & emask))
            return 0;
        e = qc_ctz64(peek);
        tot = 2 * e + 1 + k;
        if (tot > 57)
            return 0;
        x = peek >> (e + 1);                /* the e bits after the one, then the k low bits */
        m = (x & ((((uint64_t)1) << e) - 1)) + ((((uint64_t)1) << e) - 1);
        m = (m << k) | ((x >> e) & kmask);
        if (m > umax)
            return -1;
        *out = m;
        *pos = p + tot;
        return 1;
    }
    /* qc_egx_fast_m, the masks made here (the reads outside the changed entities' loop). */
    QC_FORCE_INLINE int qc_egx_fast(const uint8_t* buf, Py_ssize_t nbytes, Py_ssize_t* pos,
                                    int k, int b, int E, uint64_t* out) {
        return qc_egx_fast_m(buf, nbytes, pos, k, (((uint64_t)1) << E) - 1,
                             k < 64 ? (((uint64_t)1) << k) - 1 : ~(uint64_t)0,
                             b < 64 ? (((uint64_t)1) << b) - 1 : ~(uint64_t)0, out);
    }
    /* n <= 57 bits, when 8 bytes can be loaded at the position: 1 read, 0 not (nothing read) */
    QC_FORCE_INLINE int qc_bits_fast(const uint8_t* buf, Py_ssize_t nbytes, Py_ssize_t* pos,
                                     int n, uint64_t* out) {
        Py_ssize_t p = *pos, idx = p >> 3;
        if (idx + 8 > nbytes)
            return 0;
        *out = (qc_load_le64(buf + idx) >> (p & 7)) & ((((uint64_t)1) << n) - 1);
        *pos = p + n;
        return 1;
    }
    """
    int qc_egx_fast(const uint8_t* buf, Py_ssize_t nbytes, Py_ssize_t* pos, int k, int b, int E,
                    uint64_t* out) noexcept nogil
    int qc_bits_fast(const uint8_t* buf, Py_ssize_t nbytes, Py_ssize_t* pos, int n,
                     uint64_t* out) noexcept nogil
    int qc_egx_fast_m(const uint8_t* buf, Py_ssize_t nbytes, Py_ssize_t* pos, int k,
                      uint64_t emask, uint64_t kmask, uint64_t umax, uint64_t* out) noexcept nogil


cdef extern from *:
    """
    /* The encoder's differences with AVX-512, chosen at run time (qc_have_avx512: quantcodec/_cpu.h, capped by QUANTCODEC_SIMD): one changed
       entity's components, up to 16, as the lanes of two 512-bit registers. Each lane takes its
       carrier from the row (a permute: up to 16 slots in two registers), shifts it to the top
       of the word (vpsrlvq / vpsllvq: every lane its own shift), applies the sign-magnitude
       map, and computes the zigzagged difference from the baseline and from the extrapolation
       (base + (base - pred) * r, a whole ratio r: 2 * base - pred when r is 1), their bit
       lengths (vplzcntq), stores both values
       interleaved as the scalar _diff does (Ue[2c], Ue[2c + 1]) and counts the lanes of ``cm``
       into their histograms. Lanes outside ``usem`` take the baseline difference for both. The
       same values and counts as _diff_comps, lane for lane (tests/test_snapshot.py compares the
       packets with the slot-by-slot path). It stores 16 values a half, so Ue needs 32 entries
       of room; lanes beyond the components are computed and ignored. */
    typedef struct {
        int64_t idx[16];        /* lane -> slot */
        int64_t shift[16];      /* lane -> the component's position in its carrier */
        int64_t sh[16];         /* 64 - width */
        int64_t smt[16];        /* the sign-magnitude map's mask at the top, or 0 */
        int64_t hoff[16];       /* lane c -> 2 * c * 65: its two histograms */
        int64_t k[16];          /* per packet (qc_vcodes): each lane's Exp-Golomb parameter, */
        int64_t E[16];          /* its escape length, */
        int64_t b[16];          /* its width, */
        int64_t sel[16];        /* and which of its two values it writes: 2 * (c % 8) + use_pred */
        int nhalf;              /* 1: up to 8 components, 2: up to 16 */
        int S;                  /* slots a row, <= 16 */
    } qc_vplan;
    #if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__)) \
        && !defined(QC_NO_AVX512)
    #include <immintrin.h>
    #define QC_VDIFF 1
    #include "_cpu.h"
    static int qc_have_avx512(void) { return qc_simd_level() >= QC_SIMD_AVX512; }
    __attribute__((target("avx512f,avx512cd,avx512vl,avx512dq,avx512bw")))
    static void qc_vdiff(const qc_vplan* vp, const uint64_t* cr, const uint64_t* br,
                         const uint64_t* pr, uint64_t* Ue, uint32_t* hist, uint32_t cm,
                         uint32_t usem, int64_t r) {
        int S = vp->S, h;
        const __m512i R = _mm512_set1_epi64(r);
        __mmask8 m0 = (__mmask8)(S >= 8 ? 0xFF : (1u << S) - 1);
        __mmask8 m1 = (__mmask8)(S >= 16 ? 0xFF : S > 8 ? (1u << (S - 8)) - 1 : 0);
        int o8 = S > 8 ? 8 : 0;     /* (the second half's address only where there is one) */
        __m512i c0 = _mm512_maskz_loadu_epi64(m0, cr), c1 = _mm512_maskz_loadu_epi64(m1, cr + o8);
        __m512i b0 = _mm512_maskz_loadu_epi64(m0, br), b1 = _mm512_maskz_loadu_epi64(m1, br + o8);
        __m512i p0 = b0, p1 = b1;
        const __m512i one = _mm512_set1_epi64(1), c63 = _mm512_set1_epi64(63);
        const __m512i ilo = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11);
        const __m512i ihi = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
        uint64_t L[32] __attribute__((aligned(64)));
        if (pr) {
            p0 = _mm512_maskz_loadu_epi64(m0, pr);
            p1 = _mm512_maskz_loadu_epi64(m1, pr + o8);
        }
        for (h = 0; h < vp->nhalf; h++) {
            __m512i idx = _mm512_loadu_si512(vp->idx + 8 * h);
            __m512i shf = _mm512_loadu_si512(vp->shift + 8 * h);
            __m512i sh = _mm512_loadu_si512(vp->sh + 8 * h);
            __m512i smt = _mm512_loadu_si512(vp->smt + 8 * h);
            __m512i xc = _mm512_permutex2var_epi64(c0, idx, c1);
            __m512i xb = _mm512_permutex2var_epi64(b0, idx, b1);
            __m512i xp = _mm512_permutex2var_epi64(p0, idx, p1);
            __m512i d0, d1, u0, u1;
            xc = _mm512_sllv_epi64(_mm512_srlv_epi64(xc, shf), sh);
            xb = _mm512_sllv_epi64(_mm512_srlv_epi64(xb, shf), sh);
            xp = _mm512_sllv_epi64(_mm512_srlv_epi64(xp, shf), sh);
            xc = _mm512_xor_si512(xc, _mm512_and_si512(_mm512_srai_epi64(xc, 63), smt));
            xb = _mm512_xor_si512(xb, _mm512_and_si512(_mm512_srai_epi64(xb, 63), smt));
            xp = _mm512_xor_si512(xp, _mm512_and_si512(_mm512_srai_epi64(xp, 63), smt));
            d0 = _mm512_sub_epi64(xc, xb);
            d1 = _mm512_sub_epi64(xc, r == 1 ? _mm512_sub_epi64(_mm512_add_epi64(xb, xb), xp)
                                  : _mm512_add_epi64(xb, _mm512_mullo_epi64(_mm512_sub_epi64(xb, xp), R)));
            u0 = _mm512_srlv_epi64(_mm512_xor_si512(_mm512_slli_epi64(d0, 1), _mm512_srai_epi64(d0, 63)), sh);
            u1 = _mm512_srlv_epi64(_mm512_xor_si512(_mm512_slli_epi64(d1, 1), _mm512_srai_epi64(d1, 63)), sh);
            u1 = _mm512_mask_blend_epi64((__mmask8)(usem >> (8 * h)), u0, u1);
            _mm512_storeu_si512(Ue + 16 * h, _mm512_permutex2var_epi64(u0, ilo, u1));
            _mm512_storeu_si512(Ue + 16 * h + 8, _mm512_permutex2var_epi64(u0, ihi, u1));
            if (hist) {
                __m512i ho = _mm512_loadu_si512(vp->hoff + 8 * h);
                __m512i l0 = _mm512_xor_si512(_mm512_lzcnt_epi64(_mm512_or_si512(_mm512_slli_epi64(u0, 1), one)), c63);
                __m512i l1 = _mm512_xor_si512(_mm512_lzcnt_epi64(_mm512_or_si512(_mm512_slli_epi64(u1, 1), one)), c63);
                _mm512_store_si512(L + 16 * h, _mm512_add_epi64(l0, ho));
                _mm512_store_si512(L + 16 * h + 8, _mm512_add_epi64(_mm512_add_epi64(l1, ho), _mm512_set1_epi64(65)));
            }
        }
        if (hist) {
            while (cm) {
                int j = __builtin_ctz(cm), k = (j >> 3) * 16 + (j & 7);
                hist[L[k]] += 1;
                hist[L[k + 8]] += 1;
                cm &= cm - 1;
            }
        }
    }
    /* The writer's side: one changed entity's Exp-Golomb codes of every lane (put_egx32's
       arithmetic, escape included, lane by lane) into code[] / len[]; esc gets the lanes that
       escape. The appends stay scalar, in the packet's order. */
    __attribute__((target("avx512f,avx512cd,avx512vl,avx512dq,avx512bw")))
    static void qc_vcodes(const qc_vplan* vp, const uint64_t* Ue, uint64_t* code, int64_t* len,
                          uint32_t* esc) {
        const __m512i one = _mm512_set1_epi64(1), c63 = _mm512_set1_epi64(63);
        uint32_t m = 0;
        int h;
        for (h = 0; h < vp->nhalf; h++) {
            __m512i u = _mm512_permutex2var_epi64(_mm512_loadu_si512(Ue + 16 * h),
                                                  _mm512_loadu_si512(vp->sel + 8 * h),
                                                  _mm512_loadu_si512(Ue + 16 * h + 8));
            __m512i k = _mm512_loadu_si512(vp->k + 8 * h);
            __m512i E = _mm512_loadu_si512(vp->E + 8 * h);
            __m512i v = _mm512_srlv_epi64(u, k);
            __mmask8 es = _mm512_cmpge_epu64_mask(v, _mm512_sub_epi64(_mm512_sllv_epi64(one, E), one));
            __m512i x = _mm512_add_epi64(v, one);
            __m512i e = _mm512_xor_si512(_mm512_lzcnt_epi64(x), c63);
            __m512i pe = _mm512_sllv_epi64(one, e);
            __m512i hi = _mm512_or_si512(_mm512_xor_si512(x, pe),
                                         _mm512_sllv_epi64(_mm512_xor_si512(u, _mm512_sllv_epi64(v, k)), e));
            __m512i c = _mm512_or_si512(pe, _mm512_sllv_epi64(hi, _mm512_add_epi64(e, one)));
            __m512i n = _mm512_add_epi64(_mm512_add_epi64(_mm512_add_epi64(e, e), one), k);
            c = _mm512_mask_mov_epi64(c, es, _mm512_sllv_epi64(u, E));
            n = _mm512_mask_mov_epi64(n, es, _mm512_add_epi64(E, _mm512_loadu_si512(vp->b + 8 * h)));
            _mm512_storeu_si512(code + 8 * h, c);
            _mm512_storeu_si512(len + 8 * h, n);
            m |= (uint32_t)es << (8 * h);
        }
        *esc = m;
    }
    #else
    #define QC_VDIFF 0
    static int qc_have_avx512(void) { return 0; }
    static void qc_vcodes(const qc_vplan* vp, const uint64_t* Ue, uint64_t* code, int64_t* len,
                          uint32_t* esc) {
        (void)vp; (void)Ue; (void)code; (void)len; *esc = 0;
    }
    static void qc_vdiff(const qc_vplan* vp, const uint64_t* cr, const uint64_t* br,
                         const uint64_t* pr, uint64_t* Ue, uint32_t* hist, uint32_t cm,
                         uint32_t usem, int64_t r) {
        (void)vp; (void)cr; (void)br; (void)pr; (void)Ue; (void)hist; (void)cm; (void)usem; (void)r;
    }
    #endif
    """
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
    void qc_vdiff(const qc_vplan* vp, const uint64_t* cr, const uint64_t* br, const uint64_t* pr,
                  uint64_t* Ue, uint32_t* hist, uint32_t cm, uint32_t usem, int64_t r) noexcept nogil


cdef extern from *:
    """
    /* (tm, when not NULL: the contexts, known already; p is then not read.)
       The row scan of the common case (the same entities in the current snapshot, the baseline
       and, if any, the extrapolation snapshot, row for row): for each row i, whether the current
       row differs from the baseline's (then i goes to idx[], its context to ctxo[] and its
       position within its context class to kpos[]) and its context: 1 if the baseline row
       differs from the extrapolation row (always 1 without one). Returns the number of changed
       rows; q[0] / q[1] get the sizes of the two context classes. Branch-free; the row width is
       a compile-time constant for the usual widths so that the compares unroll and vectorize. */
    /* qc_row_ne(a, b, S): whether two rows of S carriers differ; S is a constant where it is
       inlined below, so this unrolls (two carriers per SSE2 register on x86-64). */
    #if defined(__SSE2__) || defined(_M_X64)
    #include <emmintrin.h>
    static inline int qc_row_ne(const uint64_t* a, const uint64_t* b, Py_ssize_t S) {
        __m128i acc = _mm_setzero_si128();
        if (S <= 3) {           /* (narrow rows, as row keys are: plain 64-bit words) */
            uint64_t x = 0;
            Py_ssize_t s;
            for (s = 0; s < S; s++)
                x |= a[s] ^ b[s];
            return (int)((x | (0 - x)) >> 63);
        }
        uint64_t t = 0;
        Py_ssize_t s;
        for (s = 0; s + 2 <= S; s += 2)
            acc = _mm_or_si128(acc, _mm_xor_si128(_mm_loadu_si128((const __m128i*)(a + s)),
                                                  _mm_loadu_si128((const __m128i*)(b + s))));
        if (S & 1)
            t = a[S - 1] ^ b[S - 1];
        return (_mm_movemask_epi8(_mm_cmpeq_epi8(acc, _mm_setzero_si128())) != 0xFFFF) | (t != 0);
    }
    /* bit j set where t[j] != 0, j < lim <= 64 */
    static inline uint64_t qc_nonzero_mask(const uint8_t* t, Py_ssize_t lim) {
        uint64_t m = 0;
        Py_ssize_t j = 0;
        for (; j + 16 <= lim; j += 16)
            m |= (uint64_t)(~_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i*)(t + j)),
                                                              _mm_setzero_si128())) & 0xFFFF) << j;
        for (; j < lim; j++)
            m |= (uint64_t)(t[j] != 0) << j;
        return m;
    }
    #else
    static inline int qc_row_ne(const uint64_t* a, const uint64_t* b, Py_ssize_t S) {
        uint64_t x = 0;
        Py_ssize_t s;
        for (s = 0; s < S; s++)
            x |= a[s] ^ b[s];
        return x != 0;
    }
    static inline uint64_t qc_nonzero_mask(const uint8_t* t, Py_ssize_t lim) {
        uint64_t m = 0;
        Py_ssize_t j;
        for (j = 0; j < lim; j++)
            m |= (uint64_t)(t[j] != 0) << j;
        return m;
    }
    #endif
    /* One pass of the scan, by blocks of 64 rows: the rows that changed (NE, an expression in
       i: 0 or 1) and their contexts as two bit masks (branch-free), then only the changed rows
       are written out, their positions within their context class counted from the masks. The
       context mask of a block is CM0 (an expression in i0 and lim_) or'ed with CTX, row i's
       context (0 or 1). */
    #define QC_SCAN_LOOP(NE, CTX, CM0)                                                     \
        for (i0 = 0; i0 < n; i0 += 64) {                                                   \
            Py_ssize_t j_, lim_ = n - i0 < 64 ? n - i0 : 64;                               \
            uint64_t dm_ = 0, cm_ = (CM0);                                                 \
            for (j_ = 0; j_ < lim_; j_++) {                                                \
                i = i0 + j_;                                                               \
                dm_ |= (uint64_t)(NE) << j_;                                               \
                cm_ |= (uint64_t)(CTX) << j_;                                              \
            }                                                                              \
            while (dm_) {                                                                  \
                int j1_ = qc_ctz64(dm_);                                                   \
                int t_ = (int)((cm_ >> j1_) & 1);                                          \
                int c1_ = qc_popcount64(cm_ & ((((uint64_t)1) << j1_) - 1));               \
                idx[nc] = i0 + j1_;                                                        \
                ctxo[nc] = (uint8_t)t_;                                                    \
                kpos[nc] = t_ ? q1 + c1_ : q0 + (j1_ - c1_);                               \
                nc++;                                                                      \
                dm_ &= dm_ - 1;                                                            \
            }                                                                              \
            j_ = qc_popcount64(cm_);                                                       \
            q1 += j_;                                                                      \
            q0 += lim_ - j_;                                                               \
        }
    /* The three context sources, rows compared by NE(x, y, W): W carriers a row, row-major
       (snapshot rows), or W words a row, word-major (row keys: word w of row i at x[w*n + i]). */
    #define QC_SCAN_ALL(NE, W)                                                             \
        if (tm) {                                                                          \
            QC_SCAN_LOOP(NE(c, b, W), 0, qc_nonzero_mask(tm + i0, lim_))                   \
        } else if (p) {                                                                    \
            QC_SCAN_LOOP(NE(c, b, W), NE(b, p, W), 0)                                      \
        } else {                                                                           \
            QC_SCAN_LOOP(NE(c, b, W), 0, lim_ == 64 ? ~(uint64_t)0 : (((uint64_t)1) << lim_) - 1) \
        }
    #define QC_ROW_NE(x, y, W) qc_row_ne((x) + i * (W), (y) + i * (W), (W))
    #define QC_KEY_NE(x, y, W) qc_key_ne((x) + i, (y) + i, n, (W))
    #define QC_SCAN_ROWS(SS) QC_SCAN_ALL(QC_ROW_NE, SS)
    #define QC_SCAN_KEYS(KK) QC_SCAN_ALL(QC_KEY_NE, KK)
    static inline int qc_key_ne(const uint64_t* a, const uint64_t* b, Py_ssize_t n, Py_ssize_t K) {
        uint64_t x = 0;
        Py_ssize_t w;
        for (w = 0; w < K; w++)
            x |= a[w * n] ^ b[w * n];
        return (int)((x | (0 - x)) >> 63);
    }
    /* The cases of a switch on the row width S that run M with S a compile-time constant. */
    #define QC_EACH_WIDTH(M)                                                               \
        case 1: M(1) break;   case 2: M(2) break;   case 3: M(3) break;   case 4: M(4) break;   \
        case 5: M(5) break;   case 6: M(6) break;   case 7: M(7) break;   case 8: M(8) break;   \
        case 9: M(9) break;   case 10: M(10) break; case 11: M(11) break; case 12: M(12) break; \
        case 13: M(13) break; case 14: M(14) break; case 15: M(15) break; case 16: M(16) break;
    /* out[i] = whether row i of b differs from row i of p (n rows of S carriers each). */
    #define QC_DIFF_ROWS(SS)                                                               \
        for (i = 0; i < n; i++)                                                            \
            out[i] = (uint8_t)qc_row_ne(b + i * (SS), p + i * (SS), (SS));
    static void qc_rows_differ(const uint64_t* b, const uint64_t* p, Py_ssize_t n, Py_ssize_t S,
                               uint8_t* out)
    {
        Py_ssize_t i;
        switch (S) {
        QC_EACH_WIDTH(QC_DIFF_ROWS)
        default: QC_DIFF_ROWS(S) break;
        }
    }
    /* Word w of the row mask of a context class, m rows in all: inv 0, the rows whose context
       is 1 (cm itself); inv 1, the others. */
    static inline uint64_t qc_class_word(const uint64_t* cm, Py_ssize_t w, Py_ssize_t m, int inv) {
        uint64_t x = cm[w];
        if (inv) {
            x = ~x;
            if (m - (w << 6) < 64)
                x &= (((uint64_t)1) << (m - (w << 6))) - 1;
        }
        return x;
    }
    /* Mark in chm the rows of a context class (inv, as qc_class_word) at the ascending
       positions s[0..n) within that class: ranks turned into rows in one forward pass over the
       class's W mask words. -1 if a position is out of order or beyond the class. */
    static int qc_select_into(const uint64_t* cm, Py_ssize_t W, Py_ssize_t m, int inv,
                              const Py_ssize_t* s, Py_ssize_t n, uint64_t* chm) {
        Py_ssize_t a, w = 0, rank = 0, t, left;     /* left: the bits still set in cur */
        uint64_t cur;
        if (n == 0)
            return 0;
        if (W == 0)
            return -1;
        cur = qc_class_word(cm, 0, m, inv);
        left = qc_popcount64(cur);
        for (a = 0; a < n; a++) {
            t = s[a];
            if (t < rank)
                return -1;
            while (rank + left <= t) {
                rank += left;
                if (++w >= W)
                    return -1;
                cur = qc_class_word(cm, w, m, inv);
                left = qc_popcount64(cur);
            }
            while (rank < t) {          /* (at most 63 a word over the whole pass) */
                cur &= cur - 1;
                rank++;
                left--;
            }
            chm[w] |= cur & (0 - cur);
            cur &= cur - 1;
            rank++;
            left--;
        }
        return 0;
    }
    /* The changed rows, ascending, when the baseline and the extrapolation snapshot hold the
       same entities row for row: ctx[i] (0 or 1) is row i's context class, s1[0..n1) and
       s0[0..n0) the positions of the changed rows within class 1 and within class 0 (as the
       packet's two sets give them). cm, chm: scratch of (m + 63) / 64 words each. Writes
       out[] and returns how many (n1 + n0), or -1 if a position is out of order or beyond its
       class. The classes are bit masks: nothing m entries long is written. */
    static Py_ssize_t qc_changed_rows(const uint8_t* ctx, Py_ssize_t m, const Py_ssize_t* s1,
                                      Py_ssize_t n1, const Py_ssize_t* s0, Py_ssize_t n0,
                                      uint64_t* cm, uint64_t* chm, Py_ssize_t* out) {
        Py_ssize_t W = (m + 63) >> 6, w, nc = 0, lim;
        uint64_t x;
        for (w = 0; w < W; w++) {
            lim = m - (w << 6) < 64 ? m - (w << 6) : 64;
            cm[w] = qc_nonzero_mask(ctx + (w << 6), lim);
            chm[w] = 0;
        }
        if (qc_select_into(cm, W, m, 0, s1, n1, chm) < 0 || qc_select_into(cm, W, m, 1, s0, n0, chm) < 0)
            return -1;
        for (w = 0; w < W; w++) {
            for (x = chm[w]; x; x &= x - 1)
                out[nc++] = (w << 6) + qc_ctz64(x);
        }
        return nc;
    }
    /* keys: c, b, p are word-major row keys of S words a row (else rows of S carriers) */
    static Py_ssize_t qc_scan_rows(const uint64_t* c, const uint64_t* b, const uint64_t* p,
                                   const uint8_t* tm, Py_ssize_t n, Py_ssize_t S, int keys,
                                   Py_ssize_t* idx, uint8_t* ctxo, Py_ssize_t* kpos, Py_ssize_t* q)
    {
        Py_ssize_t i, i0, nc = 0, q0 = 0, q1 = 0;
        if (keys) {
            switch (S) {
            case 1: QC_SCAN_KEYS(1) break;   case 2: QC_SCAN_KEYS(2) break;
            case 3: QC_SCAN_KEYS(3) break;   case 4: QC_SCAN_KEYS(4) break;
            default: QC_SCAN_KEYS(S) break;
            }
        } else {
            switch (S) {
            QC_EACH_WIDTH(QC_SCAN_ROWS)
            default: QC_SCAN_ROWS(S) break;
            }
        }
        q[0] = q0;
        q[1] = q1;
        return nc;
    }
    """
    void qc_rows_differ(const uint64_t* b, const uint64_t* p, Py_ssize_t n, Py_ssize_t S,
                        uint8_t* out) noexcept nogil
    Py_ssize_t qc_changed_rows(const uint8_t* ctx, Py_ssize_t m, const Py_ssize_t* s1,
                               Py_ssize_t n1, const Py_ssize_t* s0, Py_ssize_t n0,
                               uint64_t* cm, uint64_t* chm, Py_ssize_t* out) noexcept nogil
    Py_ssize_t qc_scan_rows(const uint64_t* c, const uint64_t* b, const uint64_t* p,
                            const uint8_t* tm, Py_ssize_t n, Py_ssize_t S, int keys,
                            Py_ssize_t* idx, uint8_t* ctxo, Py_ssize_t* kpos,
                            Py_ssize_t* q) noexcept nogil


# slot roles
cdef enum:
    R_FLAG = 1      # NearlyZero flag
    R_ORD = 2       # ordered scalar: one component
    R_QUAT = 3      # smallest three: same-index bit, then 3 components or the absolute code
    R_UVEC = 4      # octahedral: 2 components
    R_ABS = 5       # unordered (Bool, Enum): absolute code

# decode errors
cdef enum:
    D_OK = 0
    D_SHORT = 1     # the packet ends inside a read
    D_STRUCT = 2    # structurally invalid (detail in err_msg)
    D_CODE = 3      # a code that is not valid
    D_TRAIL = 4     # bytes or non-zero bits after the end
    D_NOMEM = 5

cdef enum:
    HIST = 65               # bit lengths 0..64
    ID_KBITS = 6            # width of the id-gap Exp-Golomb parameter (0..63)
    SET_KBITS = 5           # width of the set-gap Rice parameter (0..31)
    HDR_K = 2               # Exp-Golomb parameter of the header's sequence distances
    HIST_SAMPLE_FROM = 256  # from this many changed entities, every 4th is counted
    KCOST_FRAC = 8          # best_k's costs in 2**-8 bits

# field shapes (finfo_t.shape)
cdef enum:
    F_GENERAL = 0   # anything else: slot by slot
    F_ORD = 1       # ordered scalars only (a Bounded, a Vector of them, ...)
    F_NZORD = 2     # a NearlyZero flag, then the ordered scalars it governs
    F_QUAT = 3      # one smallest-three slot

cdef uint64_t MAX_ENTITIES = 0xFFFFFFFFULL
cdef int QTAB_MAXBITS = 12      # Quat validity tables up to 4096 doubles a slot


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
    int shape         # F_GENERAL, or one of the common shapes the hot loops take apart without
                      # going slot by slot: F_ORD, F_NZORD, F_QUAT (DeltaCoder._set_shape)
    int nz            # F_NZORD: the flag slot (the first), else -1
    int quat          # F_QUAT: the slot, else -1
    int pred          # every component is predictable (b <= 32)
    uint32_t lanes    # its components as a lane mask of the AVX-512 path (c0 .. c1 - 1)


# ------------------------------------------------------------------------------------------------
# small integer helpers

cdef inline int64_t unzz(uint64_t u) noexcept nogil:
    return <int64_t>((u >> 1) ^ (0 - (u & 1)))


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


cdef inline int egx_E(int k, int b) noexcept nogil:
    return ((b - k + 1) >> 1) + 1


cdef inline void put_egx(bw_t* w, uint64_t u, int k, int b) noexcept nogil:
    """Exp-Golomb of order k for u < 2**b, with an escape: E zero bits then u raw in b bits.
    At most two appends (small enough to be inlined into the hot loops): the escape; the whole
    code when it fits 64 bits (e zeros, a one, the e low bits of x = (u >> k) + 1, the k low
    bits of u); else its first e + 1 bits, then the e + k <= 64 others."""
    put_egx_E(w, u, k, b, egx_E(k, b))


cdef inline void put_egx_E(bw_t* w, uint64_t u, int k, int b, int E) noexcept nogil:
    """put_egx with E = egx_E(k, b) given (the encoder's write loop computes it once a packet)."""
    cdef uint64_t v, x, lo, hi, low
    cdef int e, nlo, nhi
    if k < 64:
        v = u >> k
        low = u ^ (v << k)                      # the k low bits of u
    else:
        v = 0
        low = u
    if v >= ((<uint64_t>1) << E) - 1:          # E <= 33
        lo = 0
        nlo = E
        hi = u
        nhi = b
    else:
        x = v + 1
        e = qc_msb64(x)                     # (x >= 1)
        hi = (x ^ ((<uint64_t>1) << e)) | (low << e)
        if 2 * e + 1 + k <= 64:
            lo = ((<uint64_t>1) << e) | (hi << (e + 1))
            nlo = 2 * e + 1 + k
            nhi = 0
            hi = 0
        else:
            lo = (<uint64_t>1) << e
            nlo = e + 1
            nhi = e + k
    bw_put(w, lo, nlo)
    if nhi:
        bw_put(w, hi, nhi)


ctypedef struct dpar_t:     # a component's coding in one packet (the decoder's reads)
    uint64_t emask    # 2**E - 1
    uint64_t kmask    # 2**k - 1
    uint64_t umax     # 2**b - 1
    int k
    int b
    int p             # 1: the difference from the extrapolation


ctypedef struct cpar_t:     # a component's coding in one packet (the encoder's write loop)
    uint8_t k         # Exp-Golomb parameter
    uint8_t E         # escape length, egx_E(k, b)
    uint8_t b         # width
    uint8_t p         # 1: the difference from the extrapolation, 0: from the baseline


cdef inline void put_egx32(bw_t* w, uint64_t u, cpar_t P) noexcept nogil:
    """put_egx_E for a component of at most 32 bits: its code, escape included, is at most
    E + b <= 49 bits, one append."""
    cdef int k = P.k, E = P.E, e
    cdef uint64_t v = u >> k, x, code
    cdef int n
    if v >= ((<uint64_t>1) << E) - 1:
        code = u << E
        n = E + P.b
    else:
        x = v + 1
        e = qc_msb64(x)
        code = ((<uint64_t>1) << e) | (((x ^ ((<uint64_t>1) << e)) | ((u ^ (v << k)) << e)) << (e + 1))
        n = 2 * e + 1 + k
    bw_put(w, code, n)


cdef inline int egx_len(uint64_t u, int k, int b) noexcept nogil:
    """The bits put_egx writes for u."""
    cdef int E = egx_E(k, b)
    cdef uint64_t v = u >> k if k < 64 else 0
    if v >= ((<uint64_t>1) << E) - 1:
        return E + b
    return 2 * qc_msb64(v + 1) + 1 + k


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


cdef inline bint egx_escapes(uint64_t u, int k, int b) noexcept nogil:
    cdef int E = egx_E(k, b)
    cdef uint64_t v = u >> k if k < 64 else 0
    return E < 64 and v >= ((<uint64_t>1) << E) - 1


cdef inline int get_egx(br_t* r, int k, int b, uint64_t* out, int* alt) noexcept nogil:
    """Read what put_egx wrote. 0 ok, D_SHORT, D_STRUCT (a value that does not fit b bits).
    With ``alt`` not NULL, the escape carries one more bit first: 1 means "no value, something
    else follows" (alt[0] = 1, nothing more read), 0 a raw value as usual. The common case (the
    whole code within one 8-byte load, no escape) is qc_egx_fast, inline; the rest is
    get_egx_slow."""
    cdef int st = qc_egx_fast(r.buf, r.nbytes, &r.pos, k, b, egx_E(k, b), out)
    if st == 1:
        return D_OK
    if st < 0:
        return D_STRUCT
    return get_egx_slow(r, k, b, out, alt)


cdef int get_egx_slow(br_t* r, int k, int b, uint64_t* out, int* alt) noexcept nogil:
    """get_egx near the end of the packet, for long codes and for the escape."""
    cdef int E = egx_E(k, b)
    cdef Py_ssize_t avail = br_remaining(r)
    cdef int n = E if E < avail else <int>avail
    cdef uint64_t peek, m, low
    cdef int e
    if n <= 0:
        return D_SHORT
    peek = br_peek_unchecked(r, r.pos, n)
    if peek == 0:
        if n < E:
            return D_SHORT
        r.pos += E
        if alt != NULL:
            if br_get(r, 1, &m) < 0:
                return D_SHORT
            if m:
                alt[0] = 1
                return D_OK
        if br_get(r, b, out) < 0:
            return D_SHORT
        if b < 64 and (out[0] >> b):
            return D_STRUCT
        return D_OK
    e = qc_ctz64(peek)
    r.pos += e + 1
    if br_get(r, e, &m) < 0:
        return D_SHORT
    m = (m | ((<uint64_t>1) << e)) - 1          # v = x - 1
    if br_get(r, k, &low) < 0:
        return D_SHORT
    if k >= 64:
        if m:
            return D_STRUCT
        out[0] = low
        return D_OK
    if k and (m >> (64 - k)):
        return D_STRUCT
    m = (m << k) | low
    if b < 64 and (m >> b):
        return D_STRUCT
    out[0] = m
    return D_OK


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


cdef inline void put_rice(bw_t* w, uint64_t g, int k) noexcept nogil:
    cdef uint64_t q = g >> k
    if q + 1 + k <= 64:
        bw_put(w, ((<uint64_t>1) << q) | ((g & qc_mask(k)) << (q + 1)), <int>(q + 1 + k))
        return
    while q >= 64:
        bw_put(w, 0, 64)
        q -= 64
    bw_put(w, (<uint64_t>1) << q, <int>(q + 1))
    bw_put(w, g & qc_mask(k), k)


cdef inline int get_rice(br_t* r, int k, uint64_t limit, uint64_t* out) noexcept nogil:
    """A Rice-coded value that must be < limit. 0 ok, D_SHORT, D_STRUCT."""
    cdef uint64_t q = 0, low, peek
    cdef uint64_t qmax = limit >> k
    cdef Py_ssize_t avail
    cdef int n
    while True:
        avail = br_remaining(r)
        if avail <= 0:
            return D_SHORT
        n = 64 if avail >= 64 else <int>avail
        peek = br_peek_unchecked(r, r.pos, n)
        if peek:
            n = qc_ctz64(peek)
            q += n
            r.pos += n + 1
            break
        q += n
        r.pos += n
        if q > qmax:
            return D_STRUCT
    if q > qmax:
        return D_STRUCT
    if br_get(r, k, &low) < 0:
        return D_SHORT
    q = (q << k) | low
    if q >= limit:
        return D_STRUCT
    out[0] = q
    return D_OK


cdef inline int kbits_for(int b) noexcept nogil:
    """Bits of an Exp-Golomb parameter k in 0..b."""
    return qc_bitlen64(<uint64_t>b)


cdef int best_k(const uint32_t* h, int b, Py_ssize_t* cost) noexcept nogil:
    """The Exp-Golomb parameter k (0..b) with the fewest expected bits for the values whose bit
    lengths are counted in h[0..b], and that cost (in 2**-KCOST_FRAC bits). A value u of bit
    length L costs 1 + k if L <= k; else 2L - k - 1, two more when the top L - k bits of u are
    all ones (e = L - k then, not L - k - 1), which the histogram cannot tell, so their expected
    share 2**(1 - (L - k)) of the values (uniform within a bit length) is counted: 4 * 2**(k - L)
    bits; at L = k + E the all-ones values escape instead (E + b bits), beyond it every value
    does (counting 2L - k + 1 for every L > k would choose too large a k). Integer arithmetic
    only, so that every platform chooses the same k. O(b) with suffix sums."""
    cdef int64_t SH[HIST + 1]          # suffix sums of the counts,
    cdef int64_t SL[HIST + 1]          # of count * L,
    cdef int64_t SQ[HIST + 1]          # of count * 2**(lmax - L) (terms below 2**-30 dropped)
    cdef int L, k, t, E, best = 0, lmax = -1, sh
    cdef int64_t c, bestc = -1, m, mid
    SH[b + 1] = 0
    SL[b + 1] = 0
    SQ[b + 1] = 0
    for L in range(b, -1, -1):
        SH[L] = SH[L + 1] + h[L]
        SL[L] = SL[L + 1] + <int64_t>h[L] * L
        if lmax < 0 and h[L]:
            lmax = L
    if lmax < 0:
        cost[0] = 0
        return 0
    for L in range(b, lmax, -1):
        SQ[L] = 0
    for L in range(lmax, -1, -1):
        SQ[L] = SQ[L + 1] + ((<int64_t>h[L]) << (lmax - L) if lmax - L <= 30 else 0)
    for k in range(lmax + 1):
        E = egx_E(k, b)
        t = k + E                       # the bit length whose all-ones values escape
        if t > b + 1:
            t = b + 1
        c = ((SH[0] - SH[k + 1]) * (1 + k)) << KCOST_FRAC
        c += (2 * (SL[k + 1] - SL[t]) - (k + 1) * (SH[k + 1] - SH[t])) << KCOST_FRAC
        m = SQ[k + 1] - SQ[t]           # sum of h[L] * 2**(lmax - L), k < L < t
        sh = KCOST_FRAC + 2 + k - lmax  # times 4 * 2**(k - lmax), in 2**-KCOST_FRAC bits
        if sh >= 0:
            c += m << sh
        elif sh > -63:
            c += m >> (-sh)
        if t <= b:
            mid = 2 * t - k - 1
            c += (<int64_t>h[t] * mid) << KCOST_FRAC
            c += ((<int64_t>h[t] * (E + b - mid)) << KCOST_FRAC) >> (E - 1)
            c += (SH[t + 1] * (E + b)) << KCOST_FRAC
        if bestc < 0 or c < bestc:
            bestc = c
            best = k
    cost[0] = <Py_ssize_t>bestc
    return best


# ------------------------------------------------------------------------------------------------
# grow-only scratch buffers

ctypedef struct buf_t:
    void* p
    Py_ssize_t cap      # bytes


cdef inline int buf_need(buf_t* b, Py_ssize_t nbytes) noexcept nogil:
    cdef void* q
    if nbytes <= b.cap:
        return 0
    if nbytes < 64:
        nbytes = 64
    q = realloc(b.p, <size_t>nbytes)
    if q == NULL:
        return -1
    b.p = q
    b.cap = nbytes
    return 0


cdef inline void buf_free(buf_t* b) noexcept nogil:
    free(b.p)
    b.p = NULL
    b.cap = 0


# ------------------------------------------------------------------------------------------------
# entity-set coding: SET(M) — see docs/wire-format.md

cdef void rice_costs(const Py_ssize_t* pos, Py_ssize_t n, int k, Py_ssize_t* c) noexcept nogil:
    """c[t] = the Rice bits of the gaps of pos[0..n) (ascending) with parameter k + t, for t in
    0, 1, 2: the three candidates in one pass."""
    cdef Py_ssize_t i, prev = -1
    cdef uint64_t g, c0 = 0, c1 = 0, c2 = 0
    for i in range(n):
        g = <uint64_t>(pos[i] - prev - 1)
        c0 += g >> k
        c1 += g >> (k + 1)
        c2 += g >> (k + 2)
        prev = pos[i]
    c[0] = <Py_ssize_t>c0 + n * (1 + k)
    c[1] = <Py_ssize_t>c1 + n * (2 + k)
    c[2] = <Py_ssize_t>c2 + n * (3 + k)


cdef void rice_costs_complement(const Py_ssize_t* pos, Py_ssize_t n, Py_ssize_t M, int k,
                                Py_ssize_t* c) noexcept nogil:
    """rice_costs of the positions of range(M) that are NOT in pos[0..n), from the members
    alone (O(n), not O(M) with a branch a position): between two consecutive absent positions
    the gap is the number of members between them, so it is 0 inside a run of absent
    positions, and after a run of r members it is r (the first absent position after a run
    of members that does not end the range)."""
    cdef Py_ssize_t i = 0, r, start, nn = M - n
    cdef uint64_t c0 = 0, c1 = 0, c2 = 0
    while i < n:
        start = pos[i]
        r = 1
        while i + r < n and pos[i + r] == start + r:
            r += 1
        if start + r < M:
            c0 += (<uint64_t>r) >> k
            c1 += (<uint64_t>r) >> (k + 1)
            c2 += (<uint64_t>r) >> (k + 2)
        i += r
    c[0] = <Py_ssize_t>c0 + nn * (1 + k)
    c[1] = <Py_ssize_t>c1 + nn * (2 + k)
    c[2] = <Py_ssize_t>c2 + nn * (3 + k)


cdef inline int rice_k0(Py_ssize_t M, Py_ssize_t n) noexcept nogil:
    """A Rice parameter near log2 of the mean gap of n positions in range(M) (n >= 1)."""
    return qc_bitlen64(<uint64_t>(M // n)) - 1


cdef Py_ssize_t set_bits_upper(Py_ssize_t M) noexcept nogil:
    return 2 + M + 64


cdef inline Py_ssize_t min_list_bits(Py_ssize_t n, Py_ssize_t last) noexcept nogil:
    """A lower bound of the Rice bits of n ascending positions ending at ``last``, whatever k:
    k = 0 costs n ones plus the gaps, which sum to last + 1 - n; k >= 1 at least 1 + k a member."""
    return 2 * n if 2 * n < last + 1 else last + 1


cdef inline Py_ssize_t last_absent(const Py_ssize_t* pos, Py_ssize_t n, Py_ssize_t M) noexcept nogil:
    """The largest position of range(M) not in pos[0..n) (ascending; some position is absent)."""
    cdef Py_ssize_t i = M - 1, j = n - 1
    while j >= 0 and pos[j] == i:
        i -= 1
        j -= 1
    return i


cdef void put_set(bw_t* w, const Py_ssize_t* pos, Py_ssize_t n, Py_ssize_t M) noexcept nogil:
    """Write SET(M): the subset pos[0..n) (ascending) of range(M), M >= 1, in the cheapest of
    the four modes: 0 empty, 1 list of members, 2 list of non-members, 3 one bit per position."""
    cdef int k, k0, kb, bestk = 0, bestk2 = 0, cbits = qc_bitlen64(<uint64_t>(M - 1))
    cdef Py_ssize_t costs[4]         # (written from 0 or 1, three each)
    cdef Py_ssize_t bestc = -1, bestc2 = -1, i, j, prev, word_start, nn = M - n
    cdef uint64_t word
    if n == 0:
        bw_put(w, 0, 2)
        return
    # a list is chosen only below the mask's M bits: when its lower bound is not (dense sets),
    # its costing is skipped, the complement's likewise; the choice is the same
    if min_list_bits(n, pos[n - 1]) + cbits + SET_KBITS >= M:
        bestc = M
    else:
        k0 = rice_k0(M, n) - 1             # candidates k0 .. k0 + 2 (rice_k0 -+ 1), in 0 .. 31
        kb = 1 if k0 < 0 else 0
        rice_costs(pos, n, k0 + kb, costs + kb)
        for k in range(kb, 3 if k0 + 3 <= (1 << SET_KBITS) else (1 << SET_KBITS) - k0):
            if bestc < 0 or costs[k] < bestc:
                bestc = costs[k]
                bestk = k0 + k
        bestc += cbits + SET_KBITS
    if nn == 0:
        bestc2 = cbits
    elif nn < n and min_list_bits(nn, last_absent(pos, n, M)) + cbits + SET_KBITS < M:
        k0 = rice_k0(M, nn) - 1
        kb = 1 if k0 < 0 else 0
        rice_costs_complement(pos, n, M, k0 + kb, costs + kb)
        for k in range(kb, 3 if k0 + 3 <= (1 << SET_KBITS) else (1 << SET_KBITS) - k0):
            if bestc2 < 0 or costs[k] < bestc2:
                bestc2 = costs[k]
                bestk2 = k0 + k
        bestc2 += cbits + SET_KBITS
    if bestc2 >= 0 and bestc2 < bestc and bestc2 < M:
        bw_put(w, 2, 2)
        bw_put(w, <uint64_t>nn, cbits)
        if nn:
            bw_put(w, <uint64_t>bestk2, SET_KBITS)
            j = 0
            prev = -1
            for i in range(M):
                if j < n and pos[j] == i:
                    j += 1
                    continue
                put_rice(w, <uint64_t>(i - prev - 1), bestk2)
                prev = i
        return
    if bestc < M:
        bw_put(w, 1, 2)
        bw_put(w, <uint64_t>(n - 1), cbits)
        bw_put(w, <uint64_t>bestk, SET_KBITS)
        prev = -1
        for i in range(n):
            put_rice(w, <uint64_t>(pos[i] - prev - 1), bestk)
            prev = pos[i]
        return
    bw_put(w, 3, 2)
    j = 0
    word_start = 0
    while word_start < M:
        word = 0
        while j < n and pos[j] < word_start + 64:
            word |= (<uint64_t>1) << (pos[j] - word_start)
            j += 1
        bw_put(w, word, <int>(M - word_start if M - word_start < 64 else 64))
        word_start += 64


cdef int get_list(br_t* r, Py_ssize_t* pos, Py_ssize_t cnt, Py_ssize_t M) noexcept nogil:
    """cnt Rice-coded gaps (after their parameter) -> ascending positions in range(M)."""
    cdef uint64_t v
    cdef Py_ssize_t i, prev = -1
    cdef int k, st
    if br_get(r, SET_KBITS, &v) < 0:
        return D_SHORT
    k = <int>v
    for i in range(cnt):
        st = get_rice(r, k, <uint64_t>(M - prev - 1), &v)
        if st:
            return st
        prev = prev + 1 + <Py_ssize_t>v
        pos[i] = prev
    return D_OK


cdef int get_set(br_t* r, Py_ssize_t* pos, Py_ssize_t* n, Py_ssize_t M) noexcept nogil:
    """Read a SET(M) into pos (room for M entries): n members, ascending. 0 ok or a D_* error."""
    cdef uint64_t v, word, mode
    cdef Py_ssize_t i, j, cnt, word_start
    cdef int bits, st, cbits = qc_bitlen64(<uint64_t>(M - 1))
    n[0] = 0
    if br_get(r, 2, &mode) < 0:
        return D_SHORT
    if mode == 0:
        return D_OK
    if mode == 1 or mode == 2:
        if br_get(r, cbits, &v) < 0:
            return D_SHORT
        cnt = <Py_ssize_t>v + (1 if mode == 1 else 0)
        if cnt > M or (mode == 2 and cnt == M):
            return D_STRUCT
        if mode == 1:
            st = get_list(r, pos, cnt, M)
            if st:
                return st
            n[0] = cnt
            return D_OK
        # non-members: read them at the end of pos (room for M), then fill in the members
        if cnt:
            st = get_list(r, pos + (M - cnt), cnt, M)
            if st:
                return st
        j = M - cnt
        cnt = 0
        for i in range(M):
            if j < M and pos[j] == i:
                j += 1
                continue
            pos[cnt] = i
            cnt += 1
        n[0] = cnt
        return D_OK
    cnt = 0
    word_start = 0
    while word_start < M:
        bits = <int>(M - word_start if M - word_start < 64 else 64)
        if br_get(r, bits, &word) < 0:
            return D_SHORT
        while word:
            pos[cnt] = word_start + qc_ctz64(word)
            cnt += 1
            word &= word - 1
        word_start += 64
    if cnt == 0:
        return D_STRUCT
    n[0] = cnt
    return D_OK


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
    """_diff for components c0..c1 of a field of a common shape (F_ORD, F_NZORD with its flag
    set, F_QUAT with the same largest component), whose per-slot tests the caller made once.
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
    if fi.shape == F_NZORD or fi.shape == F_ORD:
        if fi.shape == F_NZORD and cr[fi.nz] == 0:
            return
        if not usep:
            _diff_comps(CI, fi.c0, fi.c1, cr, br, pr, 0, 0, num, den, Ue, hist)
        elif den == 1:
            _diff_comps(CI, fi.c0, fi.c1, cr, br, pr, 1, 0, num, den, Ue, hist)
        else:
            _diff_comps(CI, fi.c0, fi.c1, cr, br, pr, 2, 0, num, den, Ue, hist)
    elif fi.shape == F_QUAT:
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

cdef inline bint slot_signed(const slot_t* sl) noexcept nogil:
    """Whether the slot's carriers are sign-extended (Int, signed Fixed)."""
    return sl.d.kind == K_INT or (sl.d.kind == K_FIXED and sl.d.mode != 0)


cdef enum:
    KEY_BLOCK = 128     # rows packed at a time (their carriers: 8 KB for 8 slots)


ctypedef struct kslot_t:        # one slot's place in a row key
    int bits
    int sh
    int sign
    int off
    Py_ssize_t word
    uint64_t mask

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
    """A snapshot's entity ids (uint64, ascending, unique) and code matrix (N x nslots uint64),
    bound once, with C pointers to both: the base class of ``quantcodec.Snapshot``."""

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
            ks[s].sign = slot_signed(&plan.slots[s])
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


cdef object _snapshot_type = SnapshotData


def _set_snapshot_type(cls):
    """The class decoders build their snapshots of (quantcodec.Snapshot, set on import)."""
    global _snapshot_type
    if not (isinstance(cls, type) and issubclass(cls, SnapshotData)):
        raise TypeError("expected a subclass of SnapshotData")
    _snapshot_type = cls


@cython.final
cdef class DeltaCoder:
    """The delta coder of one schema's plan. Holds scratch buffers: one per encoder/decoder,
    not shared between threads (SnapshotEncoder / SnapshotDecoder serialize their calls)."""

    cdef Plan plan
    cdef readonly Py_ssize_t nslots
    cdef readonly Py_ssize_t nfields
    cdef readonly Py_ssize_t ncomps
    cdef sinfo_t* si
    cdef comp_t* ci
    cdef finfo_t* fi
    cdef Py_ssize_t rec_bits        # most bits of one full record
    cdef Py_ssize_t chg_bits        # most bits of one changed entity
    cdef readonly Py_ssize_t last_bits   # bits of the last packet encoded (before the padding)
    cdef Py_ssize_t d_nchg          # changed entities of the last packet decoded
    cdef int vec                    # step 3 of the encoder with AVX-512 (qc_vdiff)
    cdef qc_vplan vp
    cdef bw_t w
    # scratch
    cdef buf_t b_removed, b_new, b_ccur, b_cbase, b_ckpos, b_cpred, b_fch, b_kept, b_newrow
    cdef buf_t b_hist, b_k, b_pred, b_fmode, b_newid, b_fcount, b_lists, b_cctx, b_u, b_E
    cdef buf_t b_par, b_dpar
    # last decode error
    cdef int err_kind
    cdef Py_ssize_t err_pos
    cdef const char* err_msg
    cdef int err_slot
    cdef uint64_t err_id
    cdef uint64_t err_code

    def __cinit__(self):
        self.si = NULL
        self.ci = NULL
        self.fi = NULL
        self.w.buf = NULL
        self.w.cap = 0
        self.w.nbits = 0
        self.w.acc = 0
        self.w.owned = 1

    def __init__(self, Plan plan not None, bint general=False):
        """``general``: no shortcuts for the common field shapes, every field slot by slot
        (the same packets, slower: the tests compare the two)."""
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
            self.si[s].sign = slot_signed(sl)
            self.si[s].comp = -1
            self.si[s].qtab = NULL
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
        if bw_init(&self.w, 256) < 0:
            raise MemoryError()

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
            if self.fi[f].shape != F_GENERAL and self.ncomps <= 16:
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
        fi.shape = F_GENERAL
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
            fi.shape = F_ORD
        elif (self.si[first].role == R_FLAG and ords and fi.end > first + 1
                and first + 1 + self.si[first].span == fi.end):
            fi.shape = F_NZORD
            fi.nz = <int>first
        elif self.si[first].role == R_QUAT and fi.end == first + 1:
            fi.shape = F_QUAT
            fi.quat = <int>first

    def __dealloc__(self):
        cdef Py_ssize_t s
        if self.si != NULL:
            for s in range(self.nslots):
                free(self.si[s].qtab)
        free(self.si)
        free(self.ci)
        free(self.fi)
        bw_free(&self.w)
        buf_free(&self.b_removed)
        buf_free(&self.b_new)
        buf_free(&self.b_ccur)
        buf_free(&self.b_cbase)
        buf_free(&self.b_ckpos)
        buf_free(&self.b_cpred)
        buf_free(&self.b_fch)
        buf_free(&self.b_kept)
        buf_free(&self.b_newrow)
        buf_free(&self.b_hist)
        buf_free(&self.b_k)
        buf_free(&self.b_pred)
        buf_free(&self.b_fmode)
        buf_free(&self.b_newid)
        buf_free(&self.b_fcount)
        buf_free(&self.b_lists)
        buf_free(&self.b_cctx)
        buf_free(&self.b_u)
        buf_free(&self.b_E)
        buf_free(&self.b_par)
        buf_free(&self.b_dpar)

    # -------------------------------------------------------------------------------------------
    # encode

    cdef void _diff_vec(self, Py_ssize_t nchg, const uint64_t* crow, const uint64_t* brow,
                        const uint64_t* prow, const Py_ssize_t* ccur, const Py_ssize_t* cbase,
                        const Py_ssize_t* cpred, uint8_t* fch, uint64_t* U, uint32_t* hist,
                        Py_ssize_t* fcount, int64_t num, int64_t den) noexcept nogil:
        """_encode's step 3 with AVX-512 (self.vec; without extrapolation or by a whole ratio,
        den == 1):
        per changed entity, which fields changed, then the components of its changed fields of
        the common shapes in one qc_vdiff call, and the rest (other fields, a smallest three whose
        largest component changed) by _diff after it. The same values and counts as step 3."""
        cdef Py_ssize_t S = self.nslots, F = self.nfields, C = self.ncomps, e, f, s, c
        cdef const finfo_t* FI = self.fi
        cdef const comp_t* CI = self.ci
        cdef const uint64_t* cr
        cdef const uint64_t* br
        cdef const uint64_t* pr
        cdef uint8_t* fe
        cdef uint64_t* Ue
        cdef uint32_t* hs
        cdef uint64_t x
        cdef uint32_t cm, usem
        cdef int t, q, qs, post
        for e in range(nchg):
            cr = crow + ccur[e] * S
            br = brow + cbase[e] * S
            pr = prow + cpred[e] * S if cpred[e] >= 0 else NULL
            fe = fch + e * F
            Ue = U + e * 2 * C
            hs = hist if (nchg < HIST_SAMPLE_FROM or (e & 3) == 0) else NULL
            cm = 0
            usem = 0
            post = 0
            for f in range(F):
                t = _field_changed(&FI[f], cr, br)
                fe[f] = <uint8_t>t
                fcount[f] += t
                if not t:
                    continue
                if FI[f].shape == F_GENERAL:
                    post = 1
                    continue
                if FI[f].shape == F_NZORD and cr[FI[f].nz] == 0:
                    continue
                if FI[f].shape == F_QUAT:
                    q = FI[f].quat
                    qs = CI[FI[f].c0].qshift
                    if (cr[q] >> qs) != (br[q] >> qs):
                        post = 1        # (a new largest component: _diff's remap)
                        continue
                    if pr != NULL and (pr[q] >> qs) == (br[q] >> qs):
                        usem |= FI[f].lanes
                elif pr != NULL:
                    usem |= FI[f].lanes
                cm |= FI[f].lanes
            if cm:
                qc_vdiff(&self.vp, cr, br, pr if usem else NULL, Ue, hs, cm, usem, num)
            if post:        # after qc_vdiff, whose stores cover every lane
                for f in range(F):
                    if not fe[f] or FI[f].shape == F_ORD or FI[f].shape == F_NZORD:
                        continue
                    if FI[f].shape == F_QUAT and ((cr[FI[f].quat] >> CI[FI[f].c0].qshift)
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
                buf_need(&self.b_cctx, lim + 1)):
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
        if self.vec and (not has_pred or den == 1):
            self._diff_vec(nchg, crow, brow, prow, ccur, cbase, cpred, fch, U, hist, fcount,
                           num, den)
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
                        if self.vec and shape != F_GENERAL:
                            if shape == F_ORD:
                                for c in range(FI[f].c0, FI[f].c1):
                                    bw_put(&w, vcode[c], <int>vlen[c])
                                continue
                            if shape == F_NZORD:
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
                        if shape == F_ORD:
                            for c in range(FI[f].c0, FI[f].c1):
                                put_egx32(&w, Ue[2 * c + par[c].p], par[c])
                            continue
                        if shape == F_NZORD:
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

    def _slot_valid(self, Py_ssize_t s, uint64_t code):
        """Whether the decoder accepts ``code`` in slot ``s`` (tests compare it with the codec)."""
        if not 0 <= s < self.nslots:
            raise IndexError(s)
        if self.si[s].allvalid:
            return True
        if self.si[s].qtab != NULL:
            return bool(quat_valid_tab(&self.si[s], code))
        return bool(slot_valid(&self.plan.slots[s], code))

    cdef int _check(self, SnapshotData d, str what) except -1:
        if d is None:
            raise ValueError(f"{what} snapshot missing")
        if d.ncol != self.nslots:
            raise ValueError(f"{what}: {d.ncol} code columns, the plan has {self.nslots} slots")
        return 0

    # -------------------------------------------------------------------------------------------
    # decode

    def decode(self, data, SnapshotData base=None, SnapshotData pred=None):
        """Decode a packet against the snapshots its header names (pass them). Returns
        ``(seq, ids, matrix)``, new NumPy arrays; raises DecodeError on anything malformed
        (nothing else is touched)."""
        cdef const uint8_t* p
        cdef Py_ssize_t n
        owner = _packet(data, &p, &n)
        cdef SnapshotData snap = self._decode(p, n, base, pred)
        return snap._seq, snap._ids, snap._matrix

    cdef SnapshotData _decode(self, const uint8_t* data, Py_ssize_t nbytes, SnapshotData base,
                              SnapshotData pred):
        """The decoded snapshot (an instance of the registered snapshot type, read-only arrays,
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
        cdef SnapshotData snap = SnapshotData.__new__(_snapshot_type)     # tp_new, called directly
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
                buf_need(&self.b_dpar, sizeof(dpar_t) * (C + 1))):
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
        cdef int shape, b
        for c in range(self.ncomps):
            b = CI[c].b
            dp[c].k = kk[c]
            dp[c].b = b
            dp[c].p = pp[c]
            dp[c].emask = ((<uint64_t>1) << egx_E(kk[c], b)) - 1
            dp[c].kmask = qc_mask(kk[c])
            dp[c].umax = qc_mask(b)
        for e in range(nchg):
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
                if shape == F_ORD or shape == F_NZORD:
                    # the common shapes without the slot loop's dispatch (as its R_FLAG and
                    # R_ORD branches)
                    if shape == F_NZORD:      # (its flag governs the rest of the field)
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

    cdef inline int _fail(self, int kind, const char* msg) noexcept nogil:
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
        if self.err_kind == D_CODE:
            s = self.err_slot
            name = self.plan.slot_names[s] if 0 <= s < self.nslots else f"slot {s}"
            code = self.err_code
            if 0 <= s < self.nslots and self.si[s].sign:
                code = <int64_t>self.err_code
            raise DecodeError(f"snapshot packet: entity {self.err_id}: {name}: code {code} "
                              f"is not valid ({where})")
        raise DecodeError(f"snapshot packet: {msg} {where}")


# ------------------------------------------------------------------------------------------------
# stream bookkeeping (SnapshotEncoder / SnapshotDecoder): which snapshots are held and which a
# packet is coded against. Plain Python containers, walked in C: this runs once per packet.

cdef int SEQ_MASK = 0xFFFF
cdef int SEQ_HALF = 0x8000      # "newer" is defined within half the sequence space
cdef Py_ssize_t EARLY_MAX = 64  # an encoder's numbers acked before they were sent, remembered
cdef Py_ssize_t WINDOWS_MAX = 4 # an encoder's old numberings remembered at once


cdef inline int _keep(int history) noexcept:
    """How far back a decoder with ``history`` keeps snapshots: 2 * history - 1 numbers, within
    half the sequence space (where "newer" is defined)."""
    return 2 * history - 1 if 2 * history - 1 <= SEQ_HALF else SEQ_HALF


cdef inline bint _newer(int a, int b) noexcept:
    cdef int d = (a - b) & SEQ_MASK
    return 0 < d < 0x8000


# Acknowledgements: a bit per sequence number (8 KB an encoder), set while the snapshot is held.
ctypedef uint64_t ackbits_t[1024]


cdef inline void _bit_set(uint64_t* bits, int s) noexcept nogil:
    bits[s >> 6] |= (<uint64_t>1) << (s & 63)


cdef inline void _bit_clear(uint64_t* bits, int s) noexcept nogil:
    bits[s >> 6] &= ~((<uint64_t>1) << (s & 63))


cdef inline bint _bit(const uint64_t* bits, int s) noexcept nogil:
    return (bits[s >> 6] >> (s & 63)) & 1


cdef int _set_down(const uint64_t* bits, int start, int count) noexcept nogil:
    """The smallest k in 0..count-1 with bit (start - k) mod 65536 set, or -1."""
    cdef int k = 0, pos, lo
    cdef uint64_t w
    while k < count:
        pos = (start - k) & SEQ_MASK
        lo = pos & 63
        w = bits[pos >> 6] & (((<uint64_t>2) << lo) - 1)        # bits lo, lo-1, ..., 0
        if w:
            k += lo - (qc_bitlen64(w) - 1)
            return k if k < count else -1
        k += lo + 1
    return -1


cdef int _set_up(const uint64_t* bits, int start, int count) noexcept nogil:
    """The smallest k in 0..count-1 with bit (start + k) mod 65536 set, or -1."""
    cdef int k = 0, pos, lo
    cdef uint64_t w
    while k < count:
        pos = (start + k) & SEQ_MASK
        lo = pos & 63
        w = bits[pos >> 6] >> lo                                  # bits lo, lo+1, ..., 63
        if w:
            k += qc_ctz64(w)
            return k if k < count else -1
        k += 64 - lo
    return -1


cdef int pred_target(int bdist) noexcept nogil:
    """The distance back from the baseline that the extrapolation snapshot is looked for at:
    bdist itself for bdist < 4, else the largest divisor of bdist that is at most
    max(2, bdist // 3) (6 -> 2, 9 -> 3, 12 -> 4, 7 -> 1). A shorter step follows the motion
    nearer the baseline (measured by bench/pred_study.py: bench/README.md); a divisor keeps the
    ratio whole, a multiply in both coders."""
    cdef int d
    if bdist < 4:
        return bdist
    d = bdist // 3
    if d < 2:
        d = 2
    while bdist % d:
        d -= 1
    return d


cdef extern from "_cpu.h":
    int qc_cpu_level() noexcept nogil
    int qc_simd_level() noexcept nogil
    int qc_crc_hw() noexcept nogil


def _cpu_level():
    """What the CPU and the OS support (0 baseline, 1 AVX2, 2 AVX-512), without the cap."""
    return qc_cpu_level()


def _simd_level():
    """The level the delta coder uses (quantcodec/_cpu.h: capped by QUANTCODEC_SIMD)."""
    return qc_simd_level()


def _crc_hw():
    """Whether the datagram check uses the SSE 4.2 instruction."""
    return bool(qc_crc_hw())


def pred_target_of(int bdist):
    """pred_target(bdist): where the encoder looks for the extrapolation snapshot, back from a
    baseline ``bdist`` ticks old (for the tests and bench/pred_study.py)."""
    if bdist < 1:
        raise ValueError(f"pred_target_of: bdist {bdist} < 1")
    return pred_target(bdist)


cdef void _refs(const uint64_t* acked, int seq, int hist, bint predict, int* bdist,
                int* pdist) noexcept nogil:
    """The references of packet ``seq``: bdist, the distance back to the newest acknowledged
    snapshot older than ``seq`` within the history (0: none); and (``predict``) pdist, the
    distance back from that baseline to the acknowledged snapshot whose distance is closest to
    pred_target(bdist) (the farther of two equally close), also within the history (0: none)."""
    cdef int k, base, room, d0, t, o1 = -1, o2 = -1
    bdist[0] = 0
    pdist[0] = 0
    k = _set_down(acked, (seq - 1) & SEQ_MASK, hist - 1)      # d = 1 + k in 1..hist-1
    if k < 0:
        return
    bdist[0] = 1 + k
    if not predict:
        return
    base = (seq - bdist[0]) & SEQ_MASK
    t = pred_target(bdist[0])
    room = hist - bdist[0]                  # pdist < room keeps it within the history
    if room > t:                            # the farther side: d in t..room-1, offset d - t
        o1 = _set_down(acked, (base - t) & SEQ_MASK, room - t)
    d0 = (t if t < room else room) - 1
    if d0 >= 1:                             # the nearer side: d in d0..1, offset t - d
        k = _set_up(acked, (base - d0) & SEQ_MASK, d0)
        if k >= 0:
            o2 = t - (d0 - k)
    if o1 >= 0 and (o2 < 0 or o1 <= o2):
        pdist[0] = t + o1
    elif o2 >= 0:
        pdist[0] = t - o2


def quat_rules(double a, double b, double c):
    """(quat_valid_shrunk, quat_valid_shrunk_branchy) of three shrunk kept values: the decoder's
    shortcut and the rule it stands for, for the tests."""
    return bool(quat_valid_shrunk(a, b, c)), bool(quat_valid_shrunk_branchy(a, b, c))


def set_bits(positions, Py_ssize_t M):
    """The bits put_set writes for the subset ``positions`` (ascending) of range(M), M >= 1, as
    (bytes, bit count): for tests of the choice of mode."""
    cdef Py_ssize_t n = len(positions), i
    cdef Py_ssize_t* pos
    cdef bw_t w
    if M < 1 or n > M:
        raise ValueError("set_bits: need 1 <= M and at most M positions")
    w.buf = NULL        # (bw_free below is safe when malloc fails before bw_init)
    w.owned = 0
    pos = <Py_ssize_t*>malloc(sizeof(Py_ssize_t) * (n + 1))
    if pos == NULL or bw_init(&w, 64) < 0 or bw_reserve(&w, set_bits_upper(M) + 64) < 0:
        free(pos)
        bw_free(&w)
        raise MemoryError()
    try:
        for i in range(n):
            pos[i] = positions[i]
            if not (0 <= pos[i] < M and (i == 0 or pos[i] > pos[i - 1])):
                raise ValueError("set_bits: positions must be ascending, in range(M)")
        put_set(&w, pos, n, M)
        bw_flush(&w)
        return PyBytes_FromStringAndSize(<const char*>w.buf, bw_nbytes(&w)), w.nbits
    finally:
        free(pos)
        bw_free(&w)


def best_k_of(counts, int b):
    """best_k on a histogram of bit lengths (counts[L] values of bit length L, L = 0..b): the
    Exp-Golomb parameter the encoder chooses and its expected cost in 2**-8 bits. For the
    tests."""
    cdef uint32_t h[HIST]
    cdef Py_ssize_t cost = 0, L
    cdef int k
    if not 0 <= b < HIST or len(counts) != b + 1:
        raise ValueError(f"best_k_of: need 0 <= b < {HIST} and b + 1 counts")
    memset(h, 0, sizeof(h))
    for L in range(b + 1):
        if not 0 <= counts[L] <= 0xFFFFFFFF:
            raise ValueError("best_k_of: counts are 32-bit")
        h[L] = counts[L]
    k = best_k(h, b, &cost)
    return k, cost


def references(set acked, int seq, int hist, bint predict):
    """``(base, bdist, pred, pdist)`` of packet ``seq`` for the acknowledged sequence numbers
    ``acked`` (see _refs; None / 0 where there is none). For the tests."""
    cdef ackbits_t bits
    cdef int bdist, pdist
    memset(bits, 0, sizeof(bits))
    for k in acked:
        _bit_set(bits, <int>k & SEQ_MASK)
    _refs(bits, seq, hist, predict, &bdist, &pdist)
    base = (seq - bdist) & SEQ_MASK if bdist else None
    pred = (seq - bdist - pdist) & SEQ_MASK if pdist else None
    return base, bdist, pred, pdist


def store(dict held, acked, newest, int seq, snap, int hist):
    """Put ``snap`` under ``seq`` in ``held``, dropping from the set ``acked`` (or None) what
    leaves the window: see _store. For the tests."""
    cdef ackbits_t bits
    memset(bits, 0, sizeof(bits))
    if acked is not None:
        for k in acked:
            _bit_set(bits, <int>k & SEQ_MASK)
    _store(held, bits if acked is not None else NULL, newest, seq, snap, hist)
    if acked is not None:
        for k in list(acked):
            if not _bit(bits, <int>k & SEQ_MASK):
                acked.discard(k)


cdef int _store(dict held, uint64_t* acked, newest, int seq, snap, int hist) except -1:
    """Put ``snap`` under ``seq`` in ``held`` (a dict over a window of the last ``hist`` sequence
    numbers up to ``newest``), moving the window if ``seq`` is newer and dropping (from the
    ``acked`` bits too, unless NULL) what falls out of it. Snapshots older than the window are
    not stored."""
    cdef int nw, step, i
    cdef list out
    if newest is not None:
        nw = newest
        if not _newer(seq, nw):
            if ((nw - seq) & SEQ_MASK) < hist:
                held[seq] = snap
            return 0
        step = (seq - nw) & SEQ_MASK
        if step >= hist or step >= len(held):
            out = [k for k in held if ((seq - <int>k) & SEQ_MASK) >= hist]
        else:
            out = [(nw - hist + 1 + i) & SEQ_MASK for i in range(step)]
        for k in out:
            held.pop(k, None)
            if acked != NULL:
                _bit_clear(acked, <int>k)
    held[seq] = snap
    return 0


# ------------------------------------------------------------------------------------------------
# one client's encoder

def seq_arg(seq, str owner):
    """A sequence number argument, taken mod 65536; TypeError unless an integer (not a bool)."""
    if type(seq) is int:
        return seq & SEQ_MASK
    if isinstance(seq, (bool, np.bool_)) or not isinstance(seq, (int, np.integer)):
        raise TypeError(f"{owner}: sequence number must be an integer, got {type(seq).__name__}")
    return int(seq) & SEQ_MASK


@cython.final
cdef class PacketCache:
    """Packets shared by the SnapshotEncoders of many clients: ``PacketCache(size=64)``, passed
    as ``SnapshotEncoder(schema, cache=...)`` to the encoders of every client of one schema.

    A packet is a function of its sequence number, the snapshot, and the baseline and
    extrapolation snapshots it names. A server that hands the same Snapshot to every client's
    encoder under the same sequence number sends the same bytes to the clients whose acks lag
    alike: with a shared cache the first of them codes the packet and the others get those
    bytes (``encoder.last_bits`` too). Nothing else changes: each encoder keeps its own history
    and acks, and a client's packets are byte for byte the ones its encoder would code alone.

    ``size`` bounds the packets kept (first in, first out); each one holds references to the
    snapshots it was coded from until it leaves. ``hits`` and ``misses`` count lookups,
    ``clear()`` drops the packets, ``len()`` counts them. Safe to share between threads.

    Internally: key (seq, distances, ids of the snapshots and of the schema's plan) ->
    (packet, bits, the snapshots and plan, held so that their ids stay theirs)."""
    cdef readonly Py_ssize_t size
    cdef readonly Py_ssize_t hits
    cdef readonly Py_ssize_t misses
    cdef dict entries
    cdef cython.pymutex lock

    def __init__(self, size=64):
        if isinstance(size, bool) or not isinstance(size, int):
            raise TypeError(f"PacketCache: size must be an int, got {type(size).__name__}")
        if size < 1:
            raise ValueError(f"PacketCache: size must be at least 1, got {size}")
        self.size = size
        self.hits = 0
        self.misses = 0
        self.entries = {}

    cdef object _get(self, tuple key):
        with self.lock:
            e = self.entries.get(key)
            if e is None:
                self.misses += 1
            else:
                self.hits += 1
            return e

    cdef _put(self, tuple key, tuple entry):
        with self.lock:
            self.entries[key] = entry
            while len(self.entries) > self.size:
                del self.entries[next(iter(self.entries))]

    def clear(self):
        """Drop every packet (the counters stay)."""
        with self.lock:
            self.entries.clear()

    def __len__(self):
        return len(self.entries)

    def __repr__(self):
        return (f"<PacketCache: {len(self.entries)} of {self.size} packets, {self.hits} hits, "
                f"{self.misses} misses>")


@cython.final
cdef class EncoderState:
    """The state and the per-packet work of one SnapshotEncoder (quantcodec.snapshot, which
    documents the behaviour): the snapshots sent (``sent``: seq -> snapshot, a window of the
    last ``history`` sequence numbers), which of them the client acknowledged (a bit a sequence
    number), the newest sequence number sent, the last packet's references, and the coder.
    Calls are serialized by a mutex (the coding itself runs without the GIL)."""
    cdef DeltaCoder coder
    cdef object schema
    cdef readonly int history
    cdef readonly bint predict
    cdef readonly dict sent
    cdef set ambiguous          # numbers sent with two different snapshots: never a baseline
    cdef dict early             # numbers acked before they were sent (FIFO, at most EARLY_MAX)
    cdef list windows           # [(lo, n, hi)]: numbers held when the numbering started over
    cdef ackbits_t acked
    cdef int newest_seq         # -1: nothing sent
    cdef int last_base          # -1: the last packet was sent in full (or none yet)
    cdef int last_pred
    cdef readonly PacketCache cache     # shared with other clients' encoders, or None
    cdef uint32_t seed                  # the stream's seed_P: every packet leaves sealed with it
    cdef cython.pymutex lock

    def __init__(self, DeltaCoder coder not None, schema, int history, bint predict,
                 PacketCache cache=None, uint32_t seed=0):
        self.coder = coder
        self.seed = seed
        self.schema = schema
        self.history = history
        self.predict = predict
        self.cache = cache
        self.sent = {}
        self.ambiguous = set()
        self.early = {}
        self.windows = []
        memset(self.acked, 0, sizeof(self.acked))
        self.newest_seq = -1
        self.last_base = -1
        self.last_pred = -1

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def encode(self, seq, snapshot):
        """SnapshotEncoder.encode."""
        cdef int s, bdist, pdist
        cdef SnapshotData cur
        cdef bytes packet
        s = seq_arg(seq, "SnapshotEncoder.encode")
        if not isinstance(snapshot, _snapshot_type):
            raise TypeError(f"SnapshotEncoder.encode: expected a Snapshot, got {type(snapshot).__name__}")
        cur = <SnapshotData>snapshot
        if cur._schema is not self.schema and cur._schema != self.schema:
            raise SchemaError("SnapshotEncoder.encode: the snapshot's schema is not the encoder's")
        with self.lock:
            if self.newest_seq >= 0 and not _newer(s, self.newest_seq) \
                    and ((self.newest_seq - s) & SEQ_MASK) >= self.history:
                # older than the whole history: not a snapshot sent again but numbers that
                # started over (a pause of more than 32767 sequence numbers, a restarted
                # counter). What is held belongs to the old numbering, and the client's acks
                # of those numbers would name snapshots it does not have: forget it all, as
                # reset(); this packet goes in full and the stream goes on from it. The client
                # may still hold snapshots of the old numbering (a decoder keeps 2 * history - 1
                # back from its latest) and ack them: those numbers sent again serve as no
                # baseline until the new numbering has passed them.
                n = _keep(self.history)
                self.windows.append(((self.newest_seq - n + 1) & SEQ_MASK, n, self.newest_seq))
                if len(self.windows) > WINDOWS_MAX:
                    del self.windows[0]
                self._forget()
            prev = self.sent.get(s)
            _refs(self.acked, s, self.history, self.predict, &bdist, &pdist)
            base = self.sent[(s - bdist) & SEQ_MASK] if bdist else None
            pred = self.sent[(s - bdist - pdist) & SEQ_MASK] if pdist else None
            if self.cache is None:
                packet = self.coder._encode_call(s, cur, bdist, base, pdist, pred)
            else:
                # a packet is a function of these alone: another client's encoder that named
                # the same snapshots under the same numbers coded exactly these bytes
                key = (s, bdist, pdist, id(cur), id(base), id(pred), id(self.coder.plan))
                hit = self.cache._get(key)
                if hit is not None:
                    packet = hit[0]
                    self.coder.last_bits = hit[1]
                else:
                    packet = self.coder._encode_call(s, cur, bdist, base, pdist, pred)
                    self.cache._put(key, (packet, self.coder.last_bits, cur, base, pred,
                                          self.coder.plan))
            if prev is None:
                _bit_clear(self.acked, s)         # a new snapshot under that number: not acked
            elif prev is not cur and prev != cur:
                # another snapshot under a number already sent: an ack carries only the number,
                # and one the client sends for the first would make this one a baseline it does
                # not have. The number serves as no baseline while it is held.
                self._no_baseline(s)
            _store(self.sent, self.acked, self.newest_seq if self.newest_seq >= 0 else None, s, cur,
                   self.history)
            if self.early or self.windows:
                self._suspect(s)
            if self.ambiguous:
                self.ambiguous.intersection_update(self.sent)
            if self.newest_seq < 0 or _newer(s, self.newest_seq):
                self.newest_seq = s
            self.last_base = (s - bdist) & SEQ_MASK if bdist else -1
            self.last_pred = (s - bdist - pdist) & SEQ_MASK if pdist else -1
            # the cache holds bare packets: each client's datagram is sealed with its own stream
            return _sealed(packet, self.seed)

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def ack(self, seq):
        """SnapshotEncoder.ack."""
        cdef int s
        if seq is None:
            return False
        s = seq_arg(seq, "SnapshotEncoder.ack")
        with self.lock:
            if s in self.sent and not (self.ambiguous and s in self.ambiguous):
                _bit_set(self.acked, s)
                return True
            if self.newest_seq < 0 or _newer(s, self.newest_seq):
                # an ack of a number not sent yet names a snapshot of an older numbering (a
                # client's stale latest after a long pause or a restarted counter): when the
                # number is sent, the client's acks of it may still mean the old snapshot
                self.early.pop(s, None)
                self.early[s] = None
                if len(self.early) > EARLY_MAX:
                    del self.early[next(iter(self.early))]
            return False

    cdef _suspect(self, int s):
        """After ``s`` is stored: a number the client may hold from an older numbering (acked
        before it was sent, or inside a window held when the numbering started over) serves as
        no baseline while it is held, as a number sent with two snapshots."""
        cdef bint hit = False
        cdef int lo, n, hi
        if self.early and s in self.early:
            del self.early[s]
            hit = True
        if self.windows:
            keep = []
            for lo, n, hi in self.windows:
                if ((s - lo) & SEQ_MASK) < n:
                    hit = True
                if not _newer(s, hi):           # not passed yet
                    keep.append((lo, n, hi))
            self.windows = keep
        if hit:
            self._no_baseline(s)

    cdef inline void _no_baseline(self, int s):
        """The held ``s`` serves as no baseline while it is held: its acks are refused."""
        _bit_clear(self.acked, s)
        self.ambiguous.add(s)

    def reset(self):
        with self.lock:
            self._forget()
            self.early.clear()
            self.windows.clear()

    cdef void _forget(self) noexcept:
        self.sent.clear()
        self.ambiguous.clear()
        memset(self.acked, 0, sizeof(self.acked))
        self.newest_seq = -1
        self.last_base = -1
        self.last_pred = -1

    def state(self):
        """(newest, held, acked): the newest sequence number sent (None before the first) and
        the held and acknowledged ones, newest first."""
        cdef int nw
        with self.lock:
            if self.newest_seq < 0:
                return None, (), ()
            nw = self.newest_seq
            held = sorted(self.sent, key=lambda k: (nw - <int>k) & SEQ_MASK)
            return nw, tuple(held), tuple([k for k in held if _bit(self.acked, <int>k)])

    @property
    def last(self):
        """(baseline, extrapolation) sequence numbers of the last packet (None where none)."""
        return (self.last_base if self.last_base >= 0 else None,
                self.last_pred if self.last_pred >= 0 else None)

    @property
    def last_bits(self):
        return self.coder.last_bits


cdef bytes _sealed(bytes packet, uint32_t seed):
    """The whole datagram of ``packet``: the packet and its check, crc32c(packet, seed) as a
    little-endian u32 (docs/wire-format.md section 11)."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(packet)
    cdef bytes out = PyBytes_FromStringAndSize(NULL, n + 4)
    cdef uint8_t* o = <uint8_t*>PyBytes_AS_STRING(out)
    cdef const uint8_t* p = <const uint8_t*>PyBytes_AS_STRING(packet)
    memcpy(o, p, n)
    qc_put_u32le(o + n, qc_crc32c(seed, p, n))
    return out


@cython.final
cdef class DecoderState:
    """The state and the per-packet work of one SnapshotDecoder (quantcodec.snapshot, which
    documents the behaviour): the decoded snapshots (``held``: seq -> snapshot, a window of the
    last ``keep`` sequence numbers up to the newest decoded), that newest sequence number, and
    the coder. Those of the last ``history`` sequence numbers are the possible baselines; the
    older ones, to ``keep = 2 * history - 1`` back, are kept only as snapshots a packet may
    extrapolate from: an encoder's pred is less than its history before its baseline, so a late
    packet whose baseline is still held finds its pred too. Calls are serialized by a mutex."""
    cdef DeltaCoder coder
    cdef object schema
    cdef readonly int history
    cdef readonly int keep
    cdef readonly dict held
    cdef set ambiguous          # numbers decoded with two different snapshots: none held
    cdef int latest_seq         # -1: nothing decoded
    cdef bint bound             # a stream adopted: seed is its seed_P, seed_f its seed_F
    cdef uint32_t seed
    cdef uint32_t seed_f
    cdef uint64_t stream_id
    cdef object other           # datagram -> view or None: fragments, hellos, no stream yet
    cdef cython.pymutex lock

    def __init__(self, DeltaCoder coder not None, schema, int history, other=None, seed=None,
                 uint32_t seed_f=0, uint64_t stream_id=0):
        self.coder = coder
        self.schema = schema
        self.history = history
        self.keep = _keep(history)
        self.held = {}
        self.ambiguous = set()
        self.latest_seq = -1
        self.other = other
        self.bound = seed is not None
        self.seed = seed if seed is not None else 0
        self.seed_f = seed_f
        self.stream_id = stream_id

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def decode(self, datagram):
        """SnapshotDecoder.decode: a whole datagram of the stream (its check holds) is decoded
        here; anything else (a fragment, a hello, a datagram to refuse) goes to ``other``."""
        cdef const uint8_t* buf
        cdef Py_ssize_t nbytes
        cdef uint32_t c
        owner = _packet(datagram, &buf, &nbytes)
        if self.bound:
            # docs/wire-format.md section 14: a whole packet, a fragment, a hello, or refused.
            # Only the whole packet is common; what is neither it nor a fragment nor a hello is
            # refused here, without a Python call (junk costs a CRC, not a frame)
            if nbytes >= 5:
                c = qc_get_u32le(buf + nbytes - 4)
                if qc_crc32c(self.seed, buf, <size_t>(nbytes - 4)) == c:
                    return self._decode(buf, nbytes - 4)
                if nbytes >= 13 and qc_crc32c(self.seed_f, buf, <size_t>(nbytes - 4)) == c:
                    return self.other(datagram)
            if not (nbytes >= 55 and memcmp(buf, b"QCHL", 4) == 0):
                raise DecodeError(f"snapshot stream: a datagram of {nbytes} bytes fails the check of stream "
                                  f"{self.stream_id:016x} (damaged, stray, of an earlier stream, or of "
                                  f"another schema or parameters)", kind="check")
        if self.other is None:
            raise DecodeError("snapshot stream: no hello adopted yet, so no datagram can be checked",
                              kind="no-hello")
        return self.other(datagram)

    def decode_packet(self, packet):
        """Decode a packet whose check already held (one reassembled from fragments)."""
        cdef const uint8_t* buf
        cdef Py_ssize_t nbytes
        owner = _packet(packet, &buf, &nbytes)
        return self._decode(buf, nbytes)

    cdef object _decode(self, const uint8_t* buf, Py_ssize_t nbytes):
        """The packet decoded against the held snapshots it names, kept as a possible baseline.
        DecodeError (nothing changed) when a snapshot it names is not held or it is malformed."""
        cdef br_t r
        cdef int seq, bdist, pdist, bseq
        cdef SnapshotData snap
        with self.lock:
            br_init(&r, buf, nbytes)
            base = pred = None
            if _read_header(&r, &seq, &bdist, &pdist) == 0 and bdist:   # (header errors: _decode)
                bseq = (seq - bdist) & SEQ_MASK
                base = self._held(bseq, seq, True)
                if pdist:
                    pred = self._held((bseq - pdist) & SEQ_MASK, seq, False)
            snap = self.coder._decode(buf, nbytes, base, pred)
            snap._schema = self.schema
            seq = snap._seq
            if self.latest_seq < 0 or _newer(seq, self.latest_seq):
                _store(self.held, NULL, self.latest_seq if self.latest_seq >= 0 else None, seq, snap,
                       self.keep)
                self.latest_seq = seq
                if self.ambiguous:
                    self.ambiguous = {k for k in self.ambiguous
                                      if ((seq - <int>k) & SEQ_MASK) < self.keep}
            elif seq in self.held:
                prev = self.held[seq]
                if prev is not snap and prev != snap:
                    # another snapshot under a held number (a server that reused it, or whose
                    # numbers started over): a packet coded against the number may mean either,
                    # and only the server knows which. Neither serves as a baseline or pred
                    # while the number is in the window (the encoder does the same).
                    del self.held[seq]
                    self.ambiguous.add(seq)
                # (a duplicate decodes to the same codes: the held one stays)
            elif not (self.ambiguous and seq in self.ambiguous):
                _store(self.held, NULL, self.latest_seq, seq, snap, self.keep)
            return snap

    cdef inline bint _recent(self, int s) noexcept:
        """Whether the held ``s`` is among the last ``history`` sequence numbers (a baseline)."""
        return ((self.latest_seq - s) & SEQ_MASK) < self.history

    cdef object _held(self, int s, int seq, bint baseline):
        """The held snapshot ``s`` that packet ``seq`` is coded against (its baseline, or the
        snapshot it extrapolates from), or DecodeError."""
        snap = self.held.get(s)
        if snap is not None and (not baseline or self._recent(s)):
            return snap
        if self.ambiguous and s in self.ambiguous:
            raise DecodeError(f"snapshot packet {seq}: the snapshot {s} it is coded against is "
                              f"ambiguous (two different snapshots were decoded under that number; "
                              f"the server's numbers started over or were reused)", kind="baseline")
        if baseline:
            raise DecodeError(f"snapshot packet {seq}: its baseline {s} is not held "
                              f"(held: {list(self._sorted()[:8])})", kind="baseline")
        raise DecodeError(f"snapshot packet {seq}: the snapshot {s} it extrapolates from is not held",
                          kind="baseline")

    cdef list _sorted(self):
        """The possible baselines, newest first."""
        cdef int ref = self.latest_seq
        if ref < 0:
            return []
        return sorted([k for k in self.held if self._recent(<int>k)],
                      key=lambda k: (ref - <int>k) & SEQ_MASK)

    def state(self):
        """(latest, held): the newest sequence number decoded (None before the first) and the
        held ones, newest first."""
        with self.lock:
            return (self.latest_seq if self.latest_seq >= 0 else None), tuple(self._sorted())

    @property
    def latest(self):
        return self.latest_seq if self.latest_seq >= 0 else None

    def get(self, seq):
        """The held snapshot ``seq`` (a possible baseline), or None."""
        cdef int s = seq_arg(seq, "SnapshotDecoder.get")
        with self.lock:
            return self.held.get(s) if self.latest_seq >= 0 and self._recent(s) else None

    def reset(self):
        with self.lock:
            self.held.clear()
            self.ambiguous.clear()
            self.latest_seq = -1


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
    costs ~2 us of temporaries whatever the size)."""
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
