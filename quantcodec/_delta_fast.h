/* The snapshot decoder's fast path for one changed entity (quantcodec/_delta.pyx,
   DeltaCoder._get_changed): the common case only, driven by per-packet tables the coder fills
   (qc_dcomp a component, qc_dfield a field). Included after _bits.pxd's C (qc_load_le64);
   Py_ssize_t comes from Python.h, included first by Cython. */
#ifndef QC_DELTA_FAST_H
#define QC_DELTA_FAST_H
#include <stdint.h>
#include "_delta_bits.h"
#include "_delta_reads.h"

enum { QC_F_NONE = 0, QC_F_ORD = 1, QC_F_NZORD = 2, QC_F_QUAT = 3 };
/* the most bits qc_fast_entity reads for one component (a code of at most 57 bits, or an
   escape of at most 33 + 1 + 32) plus one slot (a flag, or a smallest three's new index: 4) */
enum { QC_FAST_MAXBITS = 72 };

typedef struct {            /* one component's decoding in one packet */
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
} qc_dcomp;

typedef struct {            /* one field's shape in the fast path */
    int shape;              /* QC_F_*: QC_F_NONE: the slot-by-slot loop */
    int c0, c1;             /* its components */
    int slot;               /* QC_F_NZORD: the flag; QC_F_QUAT: the smallest-three slot */
    int span;               /* QC_F_NZORD: the slots the flag governs */
    int cb;                 /* QC_F_QUAT: bits per kept component */
    int bits;               /* QC_F_QUAT: the slot's width (the absolute code) */
    uint64_t qtop;          /* QC_F_QUAT: the mode's top component code */
    uint64_t maxcode;       /* QC_F_QUAT: the slot's largest code */
    const double* qtab;     /* QC_F_QUAT: the kept values shrunk, per component code */
} qc_dfield;

#if defined(__GNUC__) || defined(__clang__)
#define QC_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define QC_UNLIKELY(x) (x)
#endif

/* True only where quat_valid_shrunk_branchy (_kernels.pxd) is True by its first decisive test
   (x >= p * (1 + 2**-50)), the same double operations in the same order, without a branch
   on the data: the exact test decides whatever this does not accept. */
static inline int qc_quat_surely_valid(const double* t, uint64_t a, uint64_t b, uint64_t c) {
    double x = t[a], y = t[b], z = t[c];
    double s = (x * x + y * y) + z * z;
    double big = z > 0.0 ? z : 0.0, p;
    big = y > big ? y : big;
    big = x > big ? x : big;
    p = big * big;
    return (p >= 1e-200) & (1.0 - s >= p * (1.0 + 8.881784197001252e-16));
}

/* One Exp-Golomb code (get_egx) at bit *pos, which the caller has checked leaves 8 bytes to
   load past every read of the entity: 0 read (*u set, *pos advanced); 1 (with alt) the escape's
   "something else follows" bit was 1 (*pos after it); -1 not the fast path's case (a code over
   57 bits, a value over umax: the slot-by-slot loop decides). */
QC_FORCE_INLINE int qc_fast_egx(const uint8_t* buf, Py_ssize_t* pos, const qc_dcomp* d,
                                uint64_t* u, int alt) {
    Py_ssize_t p = *pos;
    uint64_t pk = qc_load_le64(buf + (p >> 3)) >> (p & 7), x, m, o;
    uint64_t e, t;
    if (QC_UNLIKELY(!(pk & d->emask))) {
        /* the escape: E zero bits, (alt) one bit, then the value raw in b bits */
        p += d->E;
        if (alt) {
            t = (qc_load_le64(buf + (p >> 3)) >> (p & 7)) & 1;
            p += 1;
            if (t) {
                *pos = p;
                return 1;
            }
        }
        *u = (qc_load_le64(buf + (p >> 3)) >> (p & 7)) & d->umax;
        *pos = p + d->b;
        return 0;
    }
    e = (uint64_t)qc_ctz64(pk);
    t = 2 * e + 1 + (uint64_t)d->k;
    if (QC_UNLIKELY(t > 57))
        return -1;
    x = pk >> (e + 1);
    o = (((uint64_t)1) << e) - 1;
    m = (((x & o) + o) << d->k) | ((x >> e) & d->kmask);
    if (QC_UNLIKELY(m > d->umax))
        return -1;
    *u = m;
    *pos = p + (Py_ssize_t)t;
    return 0;
}
#define QC_FAST_EGX(d, u) do {                                                              \
        if (QC_UNLIKELY(qc_fast_egx(buf, &pos, (d), &(u), 0)))                              \
            return -1;                                                                      \
    } while (0)

/* n <= 57 bits at bit *pos (within the entity's checked bytes) */
QC_FORCE_INLINE uint64_t qc_fast_bits(const uint8_t* buf, Py_ssize_t* pos, int n) {
    uint64_t v = (qc_load_le64(buf + (*pos >> 3)) >> (*pos & 7)) & ((((uint64_t)1) << n) - 1);
    *pos += n;
    return v;
}

/* _delta.pyx's quat_remap_ref: the reference of kept position t of a smallest-three code whose
   dropped index is j, from the baseline's code bcode, which dropped another */
static inline uint64_t qc_quat_remap_ref(uint64_t bcode, int j, int t, int cb, uint64_t top) {
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

static inline int64_t qc_round_div(int64_t x, int64_t den) {   /* _delta.pyx's round_div */
    if (x >= 0)
        return (2 * x + den) / (2 * den);
    return -((2 * (-x) + den) / (2 * den));
}

/* The reference at the top of the word (_delta.pyx's top_ref, for an extrapolated component;
   numc == 0: the baseline's value) */
static inline uint64_t qc_fast_ref(uint64_t xb, uint64_t xp, const qc_dcomp* d, int64_t num,
                                   int64_t den) {
    if (den == 1)
        return xb + (xb - xp) * d->numc;
    if (!d->numc)
        return xb;
    return xb + ((uint64_t)qc_round_div(((int64_t)(xb - xp) >> d->sh) * num, den) << d->sh);
}

/* One changed entity's fields (fr: its changed-field flags) decoded exactly as the slot-by-slot
   loop decodes them, when they are the common case: fields of the common shapes, every code
   of at most 57 bits (or an escape), every code valid, every field marked changed changed. The new bit position, or -1 when the entity is not that case (the
   caller then decodes it again from pos with the slot-by-slot loop, which makes the error, if
   any, and rewrites every slot written here). The caller checks that (pos >> 3) + 8 plus the
   entity's most bits (QC_FAST_MAXBITS a component and a slot) in bytes is within the packet. pr: the
   extrapolation row, or the baseline row when there is none (a reference extrapolated from
   the baseline to itself is the baseline). */
static Py_ssize_t qc_fast_entity(const uint8_t* buf, Py_ssize_t pos, const uint8_t* fr,
                                 Py_ssize_t F, const qc_dfield* FD, const qc_dcomp* D,
                                 const uint64_t* br, const uint64_t* pr, uint64_t* orw,
                                 int64_t num, int64_t den) {
    Py_ssize_t f;
    int c, any = 0;
    for (f = 0; f < F; f++) {
        const qc_dfield* fd = &FD[f];
        uint64_t dacc = 0, u, xb, xp, v;
        const qc_dcomp* d;
        if (!fr[f])
            continue;
        any = 1;
        c = fd->c0;
        if (fd->shape == QC_F_QUAT) {
            int s = fd->slot, qs = 3 * fd->cb;
            uint64_t bw = br[s], pw = pr[s], code, m;
            if ((pw >> qs) != (bw >> qs))
                pw = bw;        /* no extrapolation across a change of the largest component */
            code = (bw >> qs) << qs;
            for (; c < fd->c1; c++) {
                int st;
                d = &D[c];
                st = qc_fast_egx(buf, &pos, d, &u, c == fd->c0);
                if (QC_UNLIKELY(st)) {
                    if (st < 0)
                        return -1;
                    /* a new largest component: the absolute code, or the new index and the
                       differences from the baseline remapped to it */
                    if (qc_fast_bits(buf, &pos, 1) == 0) {
                        code = qc_fast_bits(buf, &pos, fd->bits);
                    } else {
                        int j = (int)qc_fast_bits(buf, &pos, 2), t;
                        if ((uint64_t)j == (bw >> qs))
                            return -1;
                        code = (uint64_t)j << qs;
                        for (t = 0; t < 3; t++) {
                            d = &D[fd->c0 + t];
                            QC_FAST_EGX(d, u);
                            code |= ((qc_quat_remap_ref(bw, j, t, fd->cb, fd->qtop)
                                      + (uint64_t)((u >> 1) ^ (0 - (u & 1)))) & d->umax) << d->shift;
                        }
                    }
                    break;
                }
                xb = (bw >> d->shift) << d->sh;
                xp = (pw >> d->shift) << d->sh;
                xb = qc_fast_ref(xb, xp, d, num, den) + ((uint64_t)((u >> 1) ^ (0 - (u & 1))) << d->sh);
                code |= (xb >> d->sh) << d->shift;
            }
            m = (((uint64_t)1) << fd->cb) - 1;
            if (!((code <= fd->maxcode)
                  & qc_quat_surely_valid(fd->qtab, (code >> (2 * fd->cb)) & m,
                                         (code >> fd->cb) & m, code & m)))
                return -1;
            if (code == bw)
                return -1;
            orw[s] = code;
            continue;
        }
        if (fd->shape == QC_F_NZORD) {
            int s = fd->slot, t;
            v = 1;
            if (br[s] != 0)
                v = qc_fast_bits(buf, &pos, 1);
            orw[s] = v;
            dacc = v ^ br[s];
            if (v == 0) {
                for (t = s + 1; t <= s + fd->span; t++) {
                    orw[t] = 0;
                    dacc |= br[t];
                }
                c = fd->c1;
            }
        } else if (fd->shape != QC_F_ORD) {
            return -1;
        }
        for (; c < fd->c1; c++) {
            int s;
            uint64_t bad;
            d = &D[c];
            QC_FAST_EGX(d, u);
            s = d->slot;
            xb = br[s] << d->sh;
            xp = pr[s] << d->sh;
            if (d->smt) {
                xb ^= (uint64_t)((int64_t)xb >> 63) & d->smt;
                xp ^= (uint64_t)((int64_t)xp >> 63) & d->smt;
            }
            xb = qc_fast_ref(xb, xp, d, num, den) + ((uint64_t)((u >> 1) ^ (0 - (u & 1))) << d->sh);
            if (d->smt)
                xb ^= (uint64_t)((int64_t)xb >> 63) & d->smt;
            v = (uint64_t)((int64_t)xb >> d->sh) & d->vmask;
            bad = (uint64_t)((v - d->vlo) > d->vspan) | (uint64_t)(v == d->vbad);
            if (QC_UNLIKELY(bad))
                return -1;
            orw[s] = v;
            dacc |= v ^ br[s];
        }
        if (dacc == 0)
            return -1;
    }
    return any ? pos : -1;
}

#endif
