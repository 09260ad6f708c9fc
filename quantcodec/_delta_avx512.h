/* The delta encoder's AVX-512 differences (quantcodec/_delta.pyx). Chosen at run time through
   quantcodec/_cpu.h; without gcc/clang on x86-64 the entry points are stubs never called. */
#ifndef QC_DELTA_AVX512_H
#define QC_DELTA_AVX512_H
#include <stdint.h>

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
static inline int qc_have_avx512(void) { return qc_simd_level() >= QC_SIMD_AVX512; }
__attribute__((target("avx512f,avx512cd,avx512vl,avx512dq,avx512bw")))
static inline void qc_vdiff(const qc_vplan* vp, const uint64_t* cr, const uint64_t* br,
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
static inline void qc_vdiff(const qc_vplan* vp, const uint64_t* cr, const uint64_t* br,
                     const uint64_t* pr, uint64_t* Ue, uint32_t* hist, uint32_t cm,
                     uint32_t usem, int64_t r) {
    (void)vp; (void)cr; (void)br; (void)pr; (void)Ue; (void)hist; (void)cm; (void)usem; (void)r;
}
#endif

#endif
