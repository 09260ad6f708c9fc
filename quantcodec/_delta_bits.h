/* Bit scans of 64-bit words for the delta coder (quantcodec/_delta.pyx): portable C with the
   compilers' builtins where they exist. */
#ifndef QC_DELTA_BITS_H
#define QC_DELTA_BITS_H

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

#endif
