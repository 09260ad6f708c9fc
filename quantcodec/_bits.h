/* Little-endian 64-bit loads and stores of the bit writer and reader (quantcodec/_bits.pxd),
   memcpy on little-endian hosts (one instruction), bytes one at a time elsewhere. */
#ifndef QC_BITS_H
#define QC_BITS_H
#include <stdint.h>
#include <string.h>
#ifndef QC_LITTLE_ENDIAN
#  if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#    define QC_LITTLE_ENDIAN 1
#  elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_IX86) || defined(_M_ARM64) || defined(_M_ARM))
#    define QC_LITTLE_ENDIAN 1
#  else
#    define QC_LITTLE_ENDIAN 0
#  endif
#endif
static inline uint64_t qc_load_le64(const uint8_t *p) {
#if QC_LITTLE_ENDIAN
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
#else
    return (uint64_t)p[0] | ((uint64_t)p[1] << 8) | ((uint64_t)p[2] << 16) | ((uint64_t)p[3] << 24)
         | ((uint64_t)p[4] << 32) | ((uint64_t)p[5] << 40) | ((uint64_t)p[6] << 48) | ((uint64_t)p[7] << 56);
#endif
}
static inline void qc_store_le64(uint8_t *p, uint64_t v) {
#if QC_LITTLE_ENDIAN
    memcpy(p, &v, 8);
#else
    p[0] = (uint8_t)v;         p[1] = (uint8_t)(v >> 8);  p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
    p[4] = (uint8_t)(v >> 32); p[5] = (uint8_t)(v >> 40); p[6] = (uint8_t)(v >> 48); p[7] = (uint8_t)(v >> 56);
#endif
}
#endif /* QC_BITS_H */
