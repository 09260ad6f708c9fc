/* CRC-32C (Castagnoli; reflected polynomial 0x82F63B78, init and final XOR 0xFFFFFFFF), with
 * zlib's continuation convention: qc_crc32c(seed, p, n) continues the CRC `seed` of the bytes
 * before p, so qc_crc32c(qc_crc32c(0, a, na), b, nb) is the CRC of a followed by b.
 *
 * The check that binds every datagram to its stream (docs/wire-format.md section 11). Portable
 * slicing-by-8 (about 1-2 bytes a cycle): a 400-byte packet costs well under a microsecond, so
 * the hardware instruction (SSE 4.2 / ARMv8 CRC) is not worth a CPU dispatch here. The table is
 * built once, on first use, by a pure function of constants: two threads that race on it write
 * the same values. */
#ifndef QC_CRC32C_H
#define QC_CRC32C_H

#include <stddef.h>
#include <stdint.h>

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

static inline uint32_t qc_crc32c(uint32_t seed, const uint8_t* p, size_t n) {
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

static inline uint32_t qc_get_u32le(const uint8_t* p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void qc_put_u32le(uint8_t* p, uint32_t v) {
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

#endif
