/* Row scans of the delta coder (quantcodec/_delta.pyx): which rows changed, their context
   classes, and the changed rows rebuilt from the packet's sets. Py_ssize_t from Python.h,
   included first by Cython. */
#ifndef QC_DELTA_SCAN_H
#define QC_DELTA_SCAN_H
#include <stdint.h>
#include "_delta_bits.h"

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
   class's W mask words. -1 if a position is out of order or beyond the class (the positions
   ascend strictly: a run of consecutive ones is taken a word at a time). */
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
        if (t == rank && a + left <= n && s[a + left - 1] == t + left - 1) {
            /* the word's remaining rows all selected (the positions ascend strictly, as
               get_set gives them, so these are t .. t + left - 1): in one go, the common
               case of a set of most rows */
            chm[w] |= cur;
            a += left - 1;
            rank += left;
            left = 0;
            cur = 0;
            continue;
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

#endif
