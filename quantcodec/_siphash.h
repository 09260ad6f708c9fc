/* SipHash-2-4 (Aumasson and Bernstein, 2012): the keyed tag that replaces the CRC-32C check of
 * every datagram when both ends share a key (docs/wire-format.md section 17). A 128-bit key as
 * two little-endian words, 2 compression rounds a word, 4 finalization rounds, a 64-bit tag.
 * Portable C99: about 1-1.5 cycles a byte on x86-64, which for a 1,200-byte datagram is under
 * a microsecond. */
#ifndef QC_SIPHASH_H
#define QC_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

#define QC_ROTL64(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

#define QC_SIPROUND                                                              \
    do {                                                                         \
        v0 += v1; v1 = QC_ROTL64(v1, 13); v1 ^= v0; v0 = QC_ROTL64(v0, 32);     \
        v2 += v3; v3 = QC_ROTL64(v3, 16); v3 ^= v2;                              \
        v0 += v3; v3 = QC_ROTL64(v3, 21); v3 ^= v0;                              \
        v2 += v1; v1 = QC_ROTL64(v1, 17); v1 ^= v2; v2 = QC_ROTL64(v2, 32);     \
    } while (0)

static inline uint64_t qc_load64le(const uint8_t* p) {
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24
         | (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

static inline void qc_put_u64le(uint8_t* p, uint64_t v) {
    int i;
    for (i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* The tag of the n bytes at p under the key (k0, k1). */
static inline uint64_t qc_siphash24(uint64_t k0, uint64_t k1, const uint8_t* p, size_t n) {
    uint64_t v0 = 0x736f6d6570736575ULL ^ k0, v1 = 0x646f72616e646f6dULL ^ k1;
    uint64_t v2 = 0x6c7967656e657261ULL ^ k0, v3 = 0x7465646279746573ULL ^ k1;
    uint64_t m, b = (uint64_t)n << 56;
    const uint8_t* end = p + (n & ~(size_t)7);
    size_t left = n & 7;
    for (; p != end; p += 8) {
        m = qc_load64le(p);
        v3 ^= m;
        QC_SIPROUND; QC_SIPROUND;
        v0 ^= m;
    }
    switch (left) {
        case 7: b |= (uint64_t)p[6] << 48; /* fall through */
        case 6: b |= (uint64_t)p[5] << 40; /* fall through */
        case 5: b |= (uint64_t)p[4] << 32; /* fall through */
        case 4: b |= (uint64_t)p[3] << 24; /* fall through */
        case 3: b |= (uint64_t)p[2] << 16; /* fall through */
        case 2: b |= (uint64_t)p[1] << 8;  /* fall through */
        case 1: b |= (uint64_t)p[0];       /* fall through */
        default: break;
    }
    v3 ^= b;
    QC_SIPROUND; QC_SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    QC_SIPROUND; QC_SIPROUND; QC_SIPROUND; QC_SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

#endif
