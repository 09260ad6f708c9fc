/* The delta layer's small rules, each written once (docs/wire-format.md sections 6-7): the
   Exp-Golomb read with its fast case, zig-zag, the rounding division and the reference
   prediction, the smallest-three remap, and the per-packet table of each component's coding.
   Called by the slot-by-slot decoder (_decoder.pxi, through _entropy.pxd and _delta.pxd), by
   the decoder's fast path (_delta_fast.h) and by the encoder (_encoder.pxi). Py_ssize_t comes
   from Python.h, included first by Cython. */
#ifndef QC_DELTA_RULES_H
#define QC_DELTA_RULES_H
#include <stdint.h>
#include "_bits.h"
#include "_delta_bits.h"

/* The reads on a reader held in locals (buf, nbytes, *pos), forced inline so that the position
   stays in a register: with -fno-strict-aliasing, a position kept in memory is reloaded after
   every store, and that round trip lands on the chain from one read to the next. */
#if defined(__GNUC__) || defined(__clang__)
#define QC_FORCE_INLINE static inline __attribute__((always_inline))
#define QC_UNLIKELY(x) __builtin_expect(!!(x), 0)
#elif defined(_MSC_VER)
#define QC_FORCE_INLINE static __forceinline
#define QC_UNLIKELY(x) (x)
#else
#define QC_FORCE_INLINE static inline
#define QC_UNLIKELY(x) (x)
#endif

/* ---- arithmetic ---------------------------------------------------------------------------- */

/* zig-zag decoding: 0, 1, 2, 3, ... -> 0, -1, 1, -2, ... (two's complement in 64 bits) */
static inline uint64_t qc_unzz(uint64_t u) {
    return (u >> 1) ^ (0 - (u & 1));
}

/* x / den rounded half away from zero (den > 0) */
static inline int64_t qc_round_div(int64_t x, int64_t den) {
    if (x >= 0)
        return (2 * x + den) / (2 * den);
    return -((2 * (-x) + den) / (2 * den));
}

/* The reference prediction base + (base - pred) * num / den (the product rounded half away from
   zero), from the baseline's and the older snapshot's values at the top of the word (a b-bit
   value shifted up by sh = 64 - b, so sums wrap at the width by themselves). With den == 1 (the
   ratio in lowest terms an integer) that is base + (base - pred) * num exactly, a multiply with
   the wrap free at the top of the word. */
static inline uint64_t qc_top_ref(uint64_t xb, uint64_t xp, int sh, int64_t num,
                                    int64_t den) {
    if (den == 1)
        return xb + (xb - xp) * (uint64_t)num;
    return xb + ((uint64_t)qc_round_div(((int64_t)(xb - xp) >> sh) * num, den) << sh);
}

/* The reference of kept position t (0..2) of a smallest-three code whose dropped index is j
   while the baseline's code bcode dropped i != j: the baseline's components re-expressed
   without index j, in integers. The baseline's component j (code aj) takes the place of the
   dropped one: when the two largest components are nearly tied, as for a box lying on a face,
   |q_i| ~ |q_j|, and the quantizer makes q_j positive, negating the quaternion when aj is
   negative (aj < 2**(cb-1)). So position t, quaternion index k = t + (t >= j), is predicted by
   aj when k == i, else by the baseline's code ak, mirrored (top - ak) when aj is negative, where
   top is the mode's top component code (2**cb - 1 for endpoints and bins, 2**cb - 2 for
   midpoint): the code of the negated value. (docs/wire-format.md 7.3) */
QC_FORCE_INLINE uint64_t qc_quat_remap_ref(uint64_t bcode, int j, int t, int cb,
                                           uint64_t top) {
    uint64_t M = (((uint64_t)1) << cb) - 1, aj, ak;
    int i = (int)((bcode >> (3 * cb)) & 3);
    int k = t + (t >= j ? 1 : 0);
    int pj = j - (j > i ? 1 : 0), pk;
    aj = (bcode >> ((2 - pj) * cb)) & M;
    if (k == i)
        return aj;
    pk = k - (k > i ? 1 : 0);
    ak = (bcode >> ((2 - pk) * cb)) & M;
    return (aj >> (cb - 1)) ? ak : (top - ak) & M;
}

/* ---- one component's coding in one packet -------------------------------------------------- */

typedef struct {            /* the decoder's table: one a component, filled once a packet */
    uint64_t emask;         /* 2**E - 1 (E = egx_E(k, b)) */
    uint64_t kmask;         /* 2**k - 1 */
    uint64_t umax;          /* 2**b - 1 */
    uint64_t numc;          /* the extrapolation's numerator, 0 when not extrapolated */
    uint64_t smt;           /* sign-magnitude: the magnitude bits at the top, else 0 */
    uint64_t vmask;         /* ordered: ~0 for sign-extended carriers, else umax */
    uint64_t vlo, vspan;    /* ordered: the valid codes are vlo .. vlo + vspan (mod 2**64) */
    uint64_t vbad;          /* ordered: one more invalid code inside (PowerCurve's negative
                               zero), else 2**62 (no code of at most 32 bits, sign-extended
                               or not) */
    int k, sh, shift, slot;
    int E, b;               /* the escape's length, egx_E(k, b); the width */
    int p;                  /* 1: the difference from the extrapolation */
} qc_dcomp;

/* ---- the Exp-Golomb read -------------------------------------------------------------------- */

/* The Exp-Golomb code (put_egx, _entropy.pxd) read off its bits pk, from its first bit on, when it
   is not an escape (pk & (2**E - 1) != 0): e = qc_ctz64(pk) zeros, a one, the e low bits of
   x = (u >> k) + 1, the k low bits of u. Its length, and its value; every Exp-Golomb read of the
   decoder (get_egx's common case, qc_egx_fast_m; the fast path's qc_fast_egx) is these two and
   its own tests of the length (the bits it loaded) and of the value (the width). (Two pure
   functions rather than one with a status: inlined, each caller's branches stay its own.) */
QC_FORCE_INLINE uint64_t qc_egx_len(uint64_t e, int k) {
    return 2 * e + 1 + (uint64_t)k;
}
QC_FORCE_INLINE uint64_t qc_egx_value(uint64_t pk, uint64_t e, int k, uint64_t kmask) {
    uint64_t x = pk >> (e + 1);         /* the e bits after the one, then the k low bits */
    uint64_t o = (((uint64_t)1) << e) - 1;
    return (((x & o) + o) << k) | ((x >> e) & kmask);
}

/* get_egx's common case on a reader in locals: the whole code within one 8-byte load and not an
   escape, with the component's masks made once a packet (emask = 2**E - 1, E = egx_E(k, b) <=
   33; kmask = 2**k - 1; umax = 2**b - 1). 1: read (*out set, *pos advanced); 0: not the common
   case, nothing read (the caller takes get_egx_slow); -1: a value wider than b bits. */
QC_FORCE_INLINE int qc_egx_fast_m(const uint8_t* buf, Py_ssize_t nbytes, Py_ssize_t* pos,
                                  int k, uint64_t emask, uint64_t kmask, uint64_t umax,
                                  uint64_t* out) {
    Py_ssize_t p = *pos, idx = p >> 3;
    uint64_t peek, e, tot, m;
    if (idx + 8 > nbytes)
        return 0;
    peek = qc_load_le64(buf + idx) >> (p & 7);
    if (!(peek & emask))
        return 0;
    e = (uint64_t)qc_ctz64(peek);
    tot = qc_egx_len(e, k);
    if (tot > 57)
        return 0;
    m = qc_egx_value(peek, e, k, kmask);
    if (m > umax)
        return -1;
    *out = m;
    *pos = p + (Py_ssize_t)tot;
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

#endif
