/* The snapshot decoder's fast path for one changed entity (quantcodec/_delta.pyx,
   DeltaCoder._get_changed): the common case only, driven by per-packet tables the coder fills
   (qc_dcomp a component, qc_dfield a field). Included after _bits.pxd's C (qc_load_le64);
   Py_ssize_t comes from Python.h, included first by Cython. */
#ifndef QC_DELTA_FAST_H
#define QC_DELTA_FAST_H
#include <stdint.h>
#include "_delta_bits.h"

enum { QC_F_NONE = 0, QC_F_ORD = 1, QC_F_NZORD = 2, QC_F_QUAT = 3 };

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
} qc_dcomp;

typedef struct {            /* one field's shape in the fast path */
    int shape;              /* QC_F_*: QC_F_NONE: the slot-by-slot loop */
    int c0, c1;             /* its components */
    int slot;               /* QC_F_NZORD: the flag; QC_F_QUAT: the smallest-three slot */
    int span;               /* QC_F_NZORD: the slots the flag governs */
    int cb;                 /* QC_F_QUAT: bits per kept component */
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

/* One Exp-Golomb code (get_egx's common case) at bit pos, which the caller has checked leaves 8
   bytes to load; anything else (an escape, a code over 57 bits, a value over umax) returns -1
   from the enclosing function. */
#define QC_FAST_EGX(d, u) do {                                                              \
        uint64_t pk_ = qc_load_le64(buf + (pos >> 3)) >> (pos & 7), x_, m_, o_;             \
        uint64_t e_, t_;                                                                    \
        if (QC_UNLIKELY(!(pk_ & (d)->emask)))                                               \
            return -1;                                                                      \
        e_ = (uint64_t)qc_ctz64(pk_);                                                       \
        t_ = 2 * e_ + 1 + (uint64_t)(d)->k;                                                 \
        if (QC_UNLIKELY(t_ > 57))                                                           \
            return -1;                                                                      \
        x_ = pk_ >> (e_ + 1);                                                               \
        o_ = (((uint64_t)1) << e_) - 1;                                                     \
        m_ = (((x_ & o_) + o_) << (d)->k) | ((x_ >> e_) & (d)->kmask);                      \
        if (QC_UNLIKELY(m_ > (d)->umax))                                                    \
            return -1;                                                                      \
        (u) = m_;                                                                           \
        pos += (Py_ssize_t)t_;                                                              \
    } while (0)

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
   in one load and no escape (so no new smallest-three index), every code valid, every field
   marked changed changed. The new bit position, or -1 when the entity is not that case (the
   caller then decodes it again from pos with the slot-by-slot loop, which makes the error, if
   any, and rewrites every slot written here). The caller checks that (pos >> 3) + 8 plus the
   entity's most bits (57 a code, one a flag) in bytes is within the packet. pr: the
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
                d = &D[c];
                QC_FAST_EGX(d, u);
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
            if (br[s] != 0) {
                v = (qc_load_le64(buf + (pos >> 3)) >> (pos & 7)) & 1;
                pos += 1;
            }
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
