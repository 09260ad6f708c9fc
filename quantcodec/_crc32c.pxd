# CRC-32C of the datagram layer (docs/wire-format.md section 11), from _crc32c.h.
from libc.stdint cimport uint8_t, uint32_t, uint64_t

cdef extern from "_crc32c.h" nogil:
    uint32_t qc_crc32c(uint32_t seed, const uint8_t* p, size_t n)
    uint32_t qc_crc32c_table_crc(uint32_t seed, const uint8_t* p, size_t n)
    uint32_t qc_get_u32le(const uint8_t* p)
    void qc_put_u32le(uint8_t* p, uint32_t v)

# SipHash-2-4, the keyed tag of a stream with a shared key (section 17), from _siphash.h.
cdef extern from "_siphash.h" nogil:
    uint64_t qc_siphash24(uint64_t k0, uint64_t k1, const uint8_t* p, size_t n)
    uint64_t qc_load64le(const uint8_t* p)
    void qc_put_u64le(uint8_t* p, uint64_t v)
