/* The snapshot decoder's fast reads (quantcodec/_delta.pyx). Py_ssize_t comes from Python.h,
   included first by Cython. */
#ifndef QC_DELTA_READS_H
#define QC_DELTA_READS_H
#include "_bits.h"
#include "_delta_bits.h"

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

#endif
