/* The delta encoder's AVX-512 differences (quantcodec/_delta.pyx). Chosen at run time through
   quantcodec/_cpu.h; without gcc/clang on x86-64 the entry points are stubs never called. */
#ifndef QC_DELTA_AVX512_H
#define QC_DELTA_AVX512_H
#include <stdint.h>

/* The encoder's differences with AVX-512, chosen at run time (qc_have_avx512:
   quantcodec/_cpu.h, capped by QUANTCODEC_SIMD): each changed entity's components, up to 16,
   as the lanes of two 512-bit registers (qc_vdiff_run). Each lane takes its carrier from the
   row (a permute: up to 16 slots in two registers), shifts it to the top
   of the word (vpsrlvq / vpsllvq: every lane its own shift), applies the sign-magnitude
   map, and computes the zigzagged difference from the baseline and from the extrapolation
   (base + (base - pred) * r, a whole ratio r: 2 * base - pred when r is 1), their bit
   lengths (vplzcntq), stores both values
   interleaved as the scalar _diff does (Ue[2c], Ue[2c + 1]) and counts the lanes of ``cm``
   into their histograms. Lanes outside ``usem`` take the baseline difference for both. The
   same values and counts as _diff_comps, lane for lane (tests/test_snapshot.py compares the
   packets with the slot-by-slot path). It stores 16 values a half, so an entity's Ue needs
   32 entries of room (the next entity's, or the scratch's last 32); lanes beyond the
   components are computed and ignored. */
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
typedef struct {            /* one field, for qc_vdiff_run */
    uint32_t slots;         /* its slots, a bit each */
    uint32_t lanes;         /* its components' lanes (finfo_t.lanes) */
    int shape;              /* finfo_t.shape: 0 general, 1 ordered, 2 NearlyZero and ordered,
                               3 smallest three */
    int nz;                 /* shape 2: the flag's slot */
    int quat;               /* shape 3: the slot, */
    int qs;                 /* and the position of its index (3 * bits a component) */
} qc_vfield;
#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__)) \
    && !defined(QC_NO_AVX512)
#include <immintrin.h>
#define QC_VDIFF 1
#include "_cpu.h"
static inline int qc_have_avx512(void) { return qc_simd_level() >= QC_SIMD_AVX512; }
/* One half of an entity's lanes (components 8h .. 8h + 7), the plan's vectors loaded by the
   caller: qc_vdiff_run keeps them in registers across its entities. L: each lane's two
   histogram counters (hist). */
typedef struct {
    __m512i idx, shf, sh, smt, ho;
} qc_vhalf;
__attribute__((target("avx512f,avx512cd,avx512vl,avx512dq,avx512bw"), always_inline))
static inline void qc_vdiff_half(const qc_vhalf* H, int h, __m512i c0, __m512i c1, __m512i b0,
                                 __m512i b1, __m512i p0, __m512i p1, uint64_t* Ue, uint64_t* L,
                                 int hist, uint32_t usem, int64_t r, __m512i R) {
    const __m512i one = _mm512_set1_epi64(1), c63 = _mm512_set1_epi64(63);
    const __m512i ilo = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11);
    const __m512i ihi = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
    __m512i xc = _mm512_permutex2var_epi64(c0, H->idx, c1);
    __m512i xb = _mm512_permutex2var_epi64(b0, H->idx, b1);
    __m512i xp = _mm512_permutex2var_epi64(p0, H->idx, p1);
    __m512i d0, d1, u0, u1;
    xc = _mm512_sllv_epi64(_mm512_srlv_epi64(xc, H->shf), H->sh);
    xb = _mm512_sllv_epi64(_mm512_srlv_epi64(xb, H->shf), H->sh);
    xp = _mm512_sllv_epi64(_mm512_srlv_epi64(xp, H->shf), H->sh);
    xc = _mm512_xor_si512(xc, _mm512_and_si512(_mm512_srai_epi64(xc, 63), H->smt));
    xb = _mm512_xor_si512(xb, _mm512_and_si512(_mm512_srai_epi64(xb, 63), H->smt));
    xp = _mm512_xor_si512(xp, _mm512_and_si512(_mm512_srai_epi64(xp, 63), H->smt));
    d0 = _mm512_sub_epi64(xc, xb);
    d1 = _mm512_sub_epi64(xc, r == 1 ? _mm512_sub_epi64(_mm512_add_epi64(xb, xb), xp)
                          : _mm512_add_epi64(xb, _mm512_mullo_epi64(_mm512_sub_epi64(xb, xp), R)));
    u0 = _mm512_srlv_epi64(_mm512_xor_si512(_mm512_slli_epi64(d0, 1), _mm512_srai_epi64(d0, 63)), H->sh);
    u1 = _mm512_srlv_epi64(_mm512_xor_si512(_mm512_slli_epi64(d1, 1), _mm512_srai_epi64(d1, 63)), H->sh);
    u1 = _mm512_mask_blend_epi64((__mmask8)(usem >> (8 * h)), u0, u1);
    _mm512_storeu_si512(Ue + 16 * h, _mm512_permutex2var_epi64(u0, ilo, u1));
    _mm512_storeu_si512(Ue + 16 * h + 8, _mm512_permutex2var_epi64(u0, ihi, u1));
    if (hist) {
        __m512i l0 = _mm512_xor_si512(_mm512_lzcnt_epi64(_mm512_or_si512(_mm512_slli_epi64(u0, 1), one)), c63);
        __m512i l1 = _mm512_xor_si512(_mm512_lzcnt_epi64(_mm512_or_si512(_mm512_slli_epi64(u1, 1), one)), c63);
        _mm512_store_si512(L + 16 * h, _mm512_add_epi64(l0, H->ho));
        _mm512_store_si512(L + 16 * h + 8, _mm512_add_epi64(_mm512_add_epi64(l1, H->ho), _mm512_set1_epi64(65)));
    }
}

/* The encoder's differences (_encoder.pxi, enc_diff) for the changed entities e = 0 .. n - 1
   in one call, the plan's vectors
   loaded once: entity e's rows are crow + ccur[e] * S, brow + cbase[e] * S and, if cpred[e]
   >= 0, prow + cpred[e] * S. For each: which of its F fields changed (fch + e * F, counted
   into fcount), the lanes of its changed fields of the common shapes (a NearlyZero field
   with the flag 0 has none; a smallest three whose largest component changed is left out,
   and extrapolated only where the extrapolation has the baseline's largest component) and
   their values into Ue = U + e * C2, counted into hist when ``sample`` is 0 or e % 4 == 0.
   The entities with fields left (of no common shape, or a new largest component) go to
   posts (their count returned), for _diff after this call. */
__attribute__((target("avx512f,avx512cd,avx512vl,avx512dq,avx512bw")))
static inline Py_ssize_t qc_vdiff_run(const qc_vplan* vp, Py_ssize_t n, const uint64_t* crow,
                                      const uint64_t* brow, const uint64_t* prow,
                                      const Py_ssize_t* ccur, const Py_ssize_t* cbase,
                                      const Py_ssize_t* cpred, Py_ssize_t S,
                                      const qc_vfield* FV, Py_ssize_t F, uint8_t* fch,
                                      Py_ssize_t* fcount, uint64_t* U, Py_ssize_t C2,
                                      uint32_t* hist, int sample, int64_t r, uint32_t* posts) {
    int h, nhalf = vp->nhalf;
    qc_vhalf H[2];
    const __m512i R = _mm512_set1_epi64(r);
    __mmask8 m0 = (__mmask8)(S >= 8 ? 0xFF : (1u << S) - 1);
    __mmask8 m1 = (__mmask8)(S >= 16 ? 0xFF : S > 8 ? (1u << (S - 8)) - 1 : 0);
    Py_ssize_t o8 = S > 8 ? 8 : 0, e, f, np = 0;
    Py_ssize_t cnt[16];         /* (F <= 16: enc_diff_vec) */
    uint64_t L[32] __attribute__((aligned(64)));
    for (h = 0; h < 2; h++) {
        int g = h < nhalf ? h : 0;
        H[h].idx = _mm512_loadu_si512(vp->idx + 8 * g);
        H[h].shf = _mm512_loadu_si512(vp->shift + 8 * g);
        H[h].sh = _mm512_loadu_si512(vp->sh + 8 * g);
        H[h].smt = _mm512_loadu_si512(vp->smt + 8 * g);
        H[h].ho = _mm512_loadu_si512(vp->hoff + 8 * g);
    }
    for (f = 0; f < F; f++)
        cnt[f] = 0;
    for (e = 0; e < n; e++) {
        const uint64_t* cr = crow + ccur[e] * S;
        const uint64_t* br = brow + cbase[e] * S;
        const uint64_t* pr = cpred[e] >= 0 ? prow + cpred[e] * S : 0;
        uint8_t* fe = fch + e * F;
        uint32_t cm = 0, usem = 0, dm;
        int post = 0, hs;
        __m512i c0 = _mm512_maskz_loadu_epi64(m0, cr), c1 = _mm512_maskz_loadu_epi64(m1, cr + o8);
        __m512i b0 = _mm512_maskz_loadu_epi64(m0, br), b1 = _mm512_maskz_loadu_epi64(m1, br + o8);
        __m512i p0 = b0, p1 = b1;
        dm = (uint32_t)_mm512_cmpneq_epu64_mask(c0, b0)
             | ((uint32_t)_mm512_cmpneq_epu64_mask(c1, b1) << 8);
        for (f = 0; f < F; f++) {
            const qc_vfield* fv = &FV[f];
            int t = (dm & fv->slots) != 0;
            fe[f] = (uint8_t)t;
            cnt[f] += t;
            if (!t)
                continue;
            if (fv->shape == 0) {
                post = 1;
                continue;
            }
            if (fv->shape == 2 && cr[fv->nz] == 0)
                continue;
            if (fv->shape == 3) {
                uint64_t bq = br[fv->quat] >> fv->qs;
                if ((cr[fv->quat] >> fv->qs) != bq) {
                    post = 1;       /* (a new largest component: _diff's remap) */
                    continue;
                }
                if (pr && (pr[fv->quat] >> fv->qs) == bq)
                    usem |= fv->lanes;
            } else if (pr) {
                usem |= fv->lanes;
            }
            cm |= fv->lanes;
        }
        if (post)
            posts[np++] = (uint32_t)e;
        if (!cm)
            continue;
        hs = !sample || (e & 3) == 0;
        if (usem) {
            p0 = _mm512_maskz_loadu_epi64(m0, pr);
            p1 = _mm512_maskz_loadu_epi64(m1, pr + o8);
        }
        qc_vdiff_half(&H[0], 0, c0, c1, b0, b1, p0, p1, U + e * C2, L, hs, usem, r, R);
        if (nhalf > 1)
            qc_vdiff_half(&H[1], 1, c0, c1, b0, b1, p0, p1, U + e * C2, L, hs, usem, r, R);
        if (hs) {
            while (cm) {
                int j = __builtin_ctz(cm), k = (j >> 3) * 16 + (j & 7);
                hist[L[k]] += 1;
                hist[L[k + 8]] += 1;
                cm &= cm - 1;
            }
        }
    }
    for (f = 0; f < F; f++)
        fcount[f] += cnt[f];
    return np;
}
/* The writer's side: one changed entity's Exp-Golomb codes of every lane (put_egx32's
   arithmetic, escape included, lane by lane) into code[] / len[]; esc gets the lanes that
   escape. The appends stay scalar, in the packet's order. */
__attribute__((target("avx512f,avx512cd,avx512vl,avx512dq,avx512bw")))
static inline void qc_vcodes(const qc_vplan* vp, const uint64_t* Ue, uint64_t* code, int64_t* len,
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
static inline int qc_have_avx512(void) { return 0; }
static inline void qc_vcodes(const qc_vplan* vp, const uint64_t* Ue, uint64_t* code, int64_t* len,
                      uint32_t* esc) {
    (void)vp; (void)Ue; (void)code; (void)len; *esc = 0;
}
static inline Py_ssize_t qc_vdiff_run(const qc_vplan* vp, Py_ssize_t n, const uint64_t* crow,
                                      const uint64_t* brow, const uint64_t* prow,
                                      const Py_ssize_t* ccur, const Py_ssize_t* cbase,
                                      const Py_ssize_t* cpred, Py_ssize_t S,
                                      const qc_vfield* FV, Py_ssize_t F, uint8_t* fch,
                                      Py_ssize_t* fcount, uint64_t* U, Py_ssize_t C2,
                                      uint32_t* hist, int sample, int64_t r, uint32_t* posts) {
    (void)vp; (void)n; (void)crow; (void)brow; (void)prow; (void)ccur; (void)cbase; (void)cpred;
    (void)S; (void)FV; (void)F; (void)fch; (void)fcount; (void)U; (void)C2; (void)hist;
    (void)sample; (void)r; (void)posts;
    return 0;
}
#endif

#endif
