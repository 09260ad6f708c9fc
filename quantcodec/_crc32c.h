/* CRC-32C (Castagnoli; reflected polynomial 0x82F63B78, init and final XOR 0xFFFFFFFF), with
 * zlib's continuation convention: qc_crc32c(seed, p, n) continues the CRC `seed` of the bytes
 * before p, so qc_crc32c(qc_crc32c(0, a, na), b, nb) is the CRC of a followed by b.
 *
 * The check that binds every datagram to its stream (docs/wire-format.md section 11). On x86-64
 * with gcc or clang, the SSE 4.2 crc32 instruction (the same polynomial, reflected: 8 bytes per
 * instruction) where the CPU has it and QUANTCODEC_SIMD does not cap the build at "baseline";
 * elsewhere portable slicing-by-8 (about 1 byte a cycle: a full 8.7 KB snapshot of 1000 bodies
 * costs ~3 us that way, ~0.5 us with the instruction). Both give the same value. The table and
 * the choice are made once, on first use, by pure functions of constants and the CPU: two
 * threads that race on them write the same values. */
#ifndef QC_CRC32C_H
#define QC_CRC32C_H

#include <stddef.h>
#include <stdint.h>

#if defined(_MSC_VER) && !defined(__cplusplus)
#define QC_INLINE __inline
#else
#define QC_INLINE inline
#endif

static uint32_t qc_crc32c_table[8][256];
static volatile int qc_crc32c_ready = 0;

static void qc_crc32c_init(void) {
    uint32_t n, c, k;
    for (n = 0; n < 256; n++) {
        c = n;
        for (k = 0; k < 8; k++)
            c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        qc_crc32c_table[0][n] = c;
    }
    for (n = 0; n < 256; n++) {
        c = qc_crc32c_table[0][n];
        for (k = 1; k < 8; k++) {
            c = qc_crc32c_table[0][c & 0xFFu] ^ (c >> 8);
            qc_crc32c_table[k][n] = c;
        }
    }
    qc_crc32c_ready = 1;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#include "_cpu.h"
#define QC_CRC32C_HW 1
static volatile int qc_crc32c_hw_ok = -1;

__attribute__((target("sse4.2")))
static uint32_t qc_crc32c_hw(uint32_t seed, const uint8_t* p, size_t n) {
    uint64_t crc = (uint32_t)~seed;
    while (n && ((uintptr_t)p & 7u)) {
        crc = _mm_crc32_u8((uint32_t)crc, *p++);
        n--;
    }
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);           /* x86-64: little-endian, the order the bytes are fed in */
        crc = _mm_crc32_u64(crc, v);
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = _mm_crc32_u8((uint32_t)crc, *p++);
    return ~(uint32_t)crc;
}

static int qc_crc32c_hw_check(void) {
    qc_crc32c_hw_ok = qc_crc_hw();
    return qc_crc32c_hw_ok;
}
#endif

static QC_INLINE uint32_t qc_crc32c_table_crc(uint32_t seed, const uint8_t* p, size_t n);

static QC_INLINE uint32_t qc_crc32c(uint32_t seed, const uint8_t* p, size_t n) {
#ifdef QC_CRC32C_HW
    int hw = qc_crc32c_hw_ok;
    if (hw < 0)
        hw = qc_crc32c_hw_check();
    if (hw)
        return qc_crc32c_hw(seed, p, n);
#endif
    return qc_crc32c_table_crc(seed, p, n);
}

/* the portable form; also what the tests compare the instruction against */
static QC_INLINE uint32_t qc_crc32c_table_crc(uint32_t seed, const uint8_t* p, size_t n) {
    uint32_t crc = ~seed;
    if (!qc_crc32c_ready)
        qc_crc32c_init();
    while (n && ((uintptr_t)p & 7u)) {
        crc = qc_crc32c_table[0][(crc ^ *p++) & 0xFFu] ^ (crc >> 8);
        n--;
    }
    while (n >= 8) {
        /* bytes taken one at a time, so the result does not depend on the host's byte order */
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        crc = qc_crc32c_table[7][lo & 0xFFu] ^ qc_crc32c_table[6][(lo >> 8) & 0xFFu]
            ^ qc_crc32c_table[5][(lo >> 16) & 0xFFu] ^ qc_crc32c_table[4][lo >> 24]
            ^ qc_crc32c_table[3][p[4]] ^ qc_crc32c_table[2][p[5]]
            ^ qc_crc32c_table[1][p[6]] ^ qc_crc32c_table[0][p[7]];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = qc_crc32c_table[0][(crc ^ *p++) & 0xFFu] ^ (crc >> 8);
    return ~crc;
}

static QC_INLINE uint32_t qc_get_u32le(const uint8_t* p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static QC_INLINE void qc_put_u32le(uint8_t* p, uint32_t v) {
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

#endif
