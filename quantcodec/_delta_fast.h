/* The snapshot decoder's fast path for one changed entity (quantcodec/_decoder.pxi,
   dec_read_changed): the common case only, driven by per-packet tables the coder fills
   (qc_dcomp a component, _delta_rules.h; qc_dfield a field). Its rules (the Exp-Golomb read,
   zig-zag, the reference, the smallest-three remap) are _delta_rules.h's, the slot-by-slot
   loop's too. Py_ssize_t comes from Python.h, included first by Cython. */
#ifndef QC_DELTA_FAST_H
#define QC_DELTA_FAST_H
#include <stdint.h>
#include "_delta_bits.h"
#include "_delta_rules.h"

enum { QC_F_NONE = 0, QC_F_ORD = 1, QC_F_NZORD = 2, QC_F_QUAT = 3 };
/* the most bits qc_fast_entity reads for one component (a code of at most 57 bits, or an
   escape of at most 33 + 1 + 32) plus one slot (a flag, or a smallest three's new index: 4) */
enum { QC_FAST_MAXBITS = 72 };

typedef struct {            /* one field's shape in the fast path */
    int shape;              /* QC_F_*: QC_F_NONE: the slot-by-slot loop */
    int c0, c1;             /* its components */
    int slot;               /* QC_F_NZORD: the flag; QC_F_QUAT: the smallest-three slot */
    int span;               /* QC_F_NZORD: the slots the flag governs */
    int cb;                 /* QC_F_QUAT: bits per kept component */
    int bits;               /* QC_F_QUAT: the slot's width (the absolute code) */
    int plain;              /* QC_F_ORD, QC_F_NZORD: every component unsigned, not
                               sign-magnitude, every code of its width valid */
    uint64_t qtop;          /* QC_F_QUAT: the mode's top component code */
    uint64_t maxcode;       /* QC_F_QUAT: the slot's largest code */
    const uint32_t* qsq;    /* QC_F_QUAT: sinfo_t.qsq */
} qc_dfield;

/* True only where quat_valid_tab (_delta.pyx) is True, from q, an upper bound of each component
   code's shrunk value squared in units of 2**-32 (sinfo_t.qsq): a sum of squares and the
   largest square together at most 1 - 2**-24 leaves sqrt(1 - s) above the largest kept value
   by far more than the doubles' rounding (its tests, with s and the square rounded, then
   agree); anything closer to the boundary, or invalid, takes the exact test. */
#define QC_QSQ_LIM ((((uint64_t)1) << 32) - (((uint64_t)1) << 8))
static inline int qc_quat_surely_valid(const uint32_t* q, uint64_t a, uint64_t b, uint64_t c) {
    uint64_t x = q[a], y = q[b], z = q[c], big = x > y ? x : y;
    big = big > z ? big : z;
    return x + y + z + big <= QC_QSQ_LIM;
}

/* One Exp-Golomb code (get_egx) at bit *pos, which the caller has checked leaves 8 bytes to
   load past every read of the entity: 0 read (*u set, *pos advanced); 1 (with alt) the escape's
   "something else follows" bit was 1 (*pos after it); -1 not the fast path's case (a code over
   57 bits, a value over umax: the slot-by-slot loop decides). */
QC_FORCE_INLINE int qc_fast_egx(const uint8_t* buf, Py_ssize_t* pos, const qc_dcomp* d,
                                uint64_t* u, int alt) {
    Py_ssize_t p = *pos;
    uint64_t pk = qc_load_le64(buf + (p >> 3)) >> (p & 7), e, t, m;
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
    t = qc_egx_len(e, d->k);
    if (QC_UNLIKELY(t > 57))
        return -1;
    m = qc_egx_value(pk, e, d->k, d->kmask);
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

/* The reference at the top of the word (qc_top_ref for an extrapolated component; numc == 0:
   the baseline's value); den1: the ratio is whole (den == 1), a constant in each of
   qc_fast_run's two copies */
QC_FORCE_INLINE uint64_t qc_fast_ref(uint64_t xb, uint64_t xp, const qc_dcomp* d, int64_t num,
                                     int64_t den, int den1) {
    if (den1)
        return xb + (xb - xp) * d->numc;
    if (!d->numc)
        return xb;
    return qc_top_ref(xb, xp, d->sh, num, den);
}

#define QC_UNZZ(u) qc_unzz(u)
#define QC_UNZZ_TOP(u, sh) (qc_unzz(u) << (sh))     /* (zig-zag decoded at the top of the word) */

/* qc_fast_entity's smallest-three field (fd, its components from d): the code rebuilt from the
   differences (or the new index and the remapped differences, or the absolute code) into
   orw; the new bit position, or -1 when not the fast path's case. */
QC_FORCE_INLINE Py_ssize_t qc_fast_quat(const uint8_t* buf, Py_ssize_t pos, const qc_dfield* fd,
                                        const qc_dcomp* d, const uint64_t* br, const uint64_t* pr,
                                        uint64_t* orw, int64_t num, int64_t den, int den1) {
    const qc_dcomp* dend = d + (fd->c1 - fd->c0);
    int s = fd->slot, qs = 3 * fd->cb, st;
    uint64_t bw = br[s], pw = pr[s], code, m, u, xb;
    pw = (pw >> qs) == (bw >> qs) ? pw : bw;    /* no extrapolation across a change of the
                                                   largest component */
    code = (bw >> qs) << qs;
    st = qc_fast_egx(buf, &pos, d, &u, 1);
    if (QC_UNLIKELY(st)) {
        if (st < 0)
            return -1;
        /* a new largest component: the absolute code, or the new index and the differences
           from the baseline remapped to it */
        if (qc_fast_bits(buf, &pos, 1) == 0) {
            code = qc_fast_bits(buf, &pos, fd->bits);
        } else {
            int j = (int)qc_fast_bits(buf, &pos, 2), t;
            if ((uint64_t)j == (bw >> qs))
                return -1;
            code = (uint64_t)j << qs;
            for (t = 0; t < 3; t++, d++) {
                QC_FAST_EGX(d, u);
                code |= ((qc_quat_remap_ref(bw, j, t, fd->cb, fd->qtop)
                          + qc_unzz(u)) & d->umax) << d->shift;
            }
        }
    } else {
        for (;;) {
            if (den1) {
                /* (the low b bits of sums and products depend on the operands' low b bits
                   only: the top-of-word arithmetic, unshifted, then masked) */
                xb = bw >> d->shift;
                xb += (xb - (pw >> d->shift)) * d->numc + QC_UNZZ(u);
                code |= (xb & d->umax) << d->shift;
            } else {
                xb = qc_fast_ref((bw >> d->shift) << d->sh, (pw >> d->shift) << d->sh, d,
                                 num, den, den1) + QC_UNZZ_TOP(u, d->sh);
                code |= (xb >> d->sh) << d->shift;
            }
            if (++d == dend)
                break;
            QC_FAST_EGX(d, u);
        }
    }
    m = (((uint64_t)1) << fd->cb) - 1;
    if (!((code <= fd->maxcode)
          & qc_quat_surely_valid(fd->qsq, (code >> (2 * fd->cb)) & m, (code >> fd->cb) & m,
                                 code & m)))
        return -1;
    if (code == bw)
        return -1;
    orw[s] = code;
    return pos;
}

/* One changed entity's fields (fr: its changed-field flags) decoded exactly as the slot-by-slot
   loop decodes them, when they are the common case: fields of the common shapes, every code
   of at most 57 bits (or an escape), every code valid, every field marked changed changed.
   The new bit position, or -1 when the entity is not that case (the caller then decodes it
   again from pos with the slot-by-slot loop, which makes the error, if any, and rewrites every
   slot written here). The caller checks that (pos >> 3) + 8 plus the entity's most bits
   (QC_FAST_MAXBITS a component and a slot) in bytes is within buf, and that the entity did
   not read past the packet's end (what it decoded then came from its bits only). pr: the
   extrapolation row, or the baseline row when there is none (a reference extrapolated from
   the baseline to itself is the baseline). */
QC_FORCE_INLINE Py_ssize_t qc_fast_entity(const uint8_t* buf, Py_ssize_t pos, const uint8_t* fr,
                                          Py_ssize_t F, const qc_dfield* FD, const qc_dcomp* D,
                                          const uint64_t* br, const uint64_t* pr, uint64_t* orw,
                                          int64_t num, int64_t den, int den1) {
    const qc_dfield* fd = FD;
    const qc_dfield* fend = FD + F;
    int any = 0;
    for (; fd < fend; fd++, fr++) {
        uint64_t dacc = 0, u, xb, xp, v;
        const qc_dcomp* d;
        const qc_dcomp* dend;
        if (!*fr)
            continue;
        any = 1;
        d = D + fd->c0;
        dend = D + fd->c1;
        if (fd->shape == QC_F_QUAT) {
            pos = qc_fast_quat(buf, pos, fd, d, br, pr, orw, num, den, den1);
            if (pos < 0)
                return -1;
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
                d = dend;
            }
        } else if (fd->shape != QC_F_ORD) {
            return -1;
        }
        if (fd->plain) {
            /* unsigned, linear, every code of the width valid (Bounded, UInt, Grid, ...) */
            for (; d < dend; d++) {
                int s = d->slot;
                QC_FAST_EGX(d, u);
                if (den1)       /* (as the smallest three's: unshifted, masked) */
                    v = (br[s] + (br[s] - pr[s]) * d->numc + QC_UNZZ(u)) & d->umax;
                else
                    v = (qc_fast_ref(br[s] << d->sh, pr[s] << d->sh, d, num, den, den1)
                         + QC_UNZZ_TOP(u, d->sh)) >> d->sh;
                orw[s] = v;
                dacc |= v ^ br[s];
            }
        } else {
            for (; d < dend; d++) {
                int s = d->slot;
                uint64_t bad;
                QC_FAST_EGX(d, u);
                xb = br[s] << d->sh;
                xp = pr[s] << d->sh;
                if (d->smt) {
                    xb ^= (uint64_t)((int64_t)xb >> 63) & d->smt;
                    xp ^= (uint64_t)((int64_t)xp >> 63) & d->smt;
                }
                xb = qc_fast_ref(xb, xp, d, num, den, den1) + QC_UNZZ_TOP(u, d->sh);
                if (d->smt)
                    xb ^= (uint64_t)((int64_t)xb >> 63) & d->smt;
                v = (uint64_t)((int64_t)xb >> d->sh) & d->vmask;
                bad = (uint64_t)((v - d->vlo) > d->vspan) | (uint64_t)(v == d->vbad);
                if (QC_UNLIKELY(bad))
                    return -1;
                orw[s] = v;
                dacc |= v ^ br[s];
            }
        }
        if (dacc == 0)
            return -1;
    }
    return any ? pos : -1;
}

typedef struct {            /* what qc_fast_run reads, for one packet */
    const uint8_t* buf;
    Py_ssize_t lastfast;    /* an entity starting before this byte can be read: buf has
                               QC_FAST_MAXBITS a component and a slot and 16 bytes after it */
    Py_ssize_t nbits;       /* the packet's bits: an entity read past them is not taken */
    const uint8_t* fch;     /* the changed fields, F a changed entity */
    Py_ssize_t F, S;
    const qc_dfield* FD;
    const qc_dcomp* D;
    const int* gf;          /* the fields of no fast shape changed in the packet */
    Py_ssize_t gen;
    const uint64_t* brow;
    const uint64_t* prow;   /* NULL: no extrapolation */
    uint64_t* orow;
    const Py_ssize_t* chg;  /* the changed kept indices */
    const Py_ssize_t* kept_base;    /* kept index -> baseline, output, extrapolation row: */
    const Py_ssize_t* kept_out;     /* NULL for the identity; kept_pred -1: none */
    const Py_ssize_t* kept_pred;
    int64_t num, den;
} qc_fastrun;

QC_FORCE_INLINE Py_ssize_t qc_fast_run_(const qc_fastrun* a, Py_ssize_t e, Py_ssize_t n,
                                        Py_ssize_t* ppos, int den1) {
    const uint8_t* buf = a->buf;
    const uint8_t* fch = a->fch;
    Py_ssize_t pos = *ppos, F = a->F, S = a->S, lastfast = a->lastfast, t, q;
    for (; e < n; e++) {
        Py_ssize_t c = a->chg[e], kb = a->kept_base ? a->kept_base[c] : c;
        const uint64_t* br = a->brow + kb * S;
        const uint64_t* pr = br;
        const uint8_t* fr = fch + e * F;
        if ((pos >> 3) >= lastfast)
            break;
        if (a->prow) {
            q = a->kept_pred ? a->kept_pred[c] : c;
            if (q >= 0)
                pr = a->prow + q * S;
        }
        for (t = 0; t < a->gen; t++)
            if (fr[a->gf[t]])
                break;
        if (t < a->gen)
            break;
        t = qc_fast_entity(buf, pos, fr, F, a->FD, a->D, br, pr,
                           a->orow + (a->kept_out ? a->kept_out[c] : c) * S, a->num, a->den,
                           den1);
        if (t < 0 || t > a->nbits)
            break;
        pos = t;
    }
    *ppos = pos;
    return e;
}

#if defined(__GNUC__) && defined(__x86_64__)
#include <cpuid.h>
#include "_cpu.h"
#define QC_FAST_BMI2 1
/* qc_fast_run with BMI1 / BMI2 (shifts by a register without the cl dance, tzcnt): its reads
   are mostly variable shifts. Chosen at run time when the CPU has them and QUANTCODEC_SIMD is
   not "baseline" (the portable copy is the other). */
__attribute__((target("bmi,bmi2")))
static Py_ssize_t qc_fast_run_bmi2(const qc_fastrun* a, Py_ssize_t e, Py_ssize_t n,
                                   Py_ssize_t* ppos) {
    if (a->den == 1)
        return qc_fast_run_(a, e, n, ppos, 1);
    return qc_fast_run_(a, e, n, ppos, 0);
}
static volatile int qc_bmi2_cache = -1;
static inline int qc_have_bmi2(void) {
    int h = qc_bmi2_cache;
    if (h < 0) {
        unsigned int a, b, c, d;
        h = 0;
        if (qc_simd_level() != QC_SIMD_BASELINE && __get_cpuid_max(0, 0) >= 7) {
            __cpuid_count(7, 0, a, b, c, d);
            h = (b & (1u << 3)) && (b & (1u << 8));     /* BMI1, BMI2 */
        }
        qc_bmi2_cache = h;
    }
    return h;
}
#endif

/* The changed entities e, e + 1, ... (< n) that qc_fast_entity decodes, one after the other
   from bit *ppos: returns the first one it does not (n if none), *ppos at its start. */
static Py_ssize_t qc_fast_run(const qc_fastrun* a, Py_ssize_t e, Py_ssize_t n, Py_ssize_t* ppos) {
#ifdef QC_FAST_BMI2
    if (qc_have_bmi2())
        return qc_fast_run_bmi2(a, e, n, ppos);
#endif
    if (a->den == 1)
        return qc_fast_run_(a, e, n, ppos, 1);
    return qc_fast_run_(a, e, n, ppos, 0);
}

#endif
