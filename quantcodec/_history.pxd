# The stream bookkeeping's small rules, for the modules that test them (quantcodec._testing):
# sequence arithmetic, the acknowledgement bits, the choice of references, the held window.
from libc.stdint cimport uint64_t

cdef enum:
    SEQ_MASK = 0xFFFF       # sequence numbers live in 0..65535 and wrap
    SEQ_HALF = 0x8000       # "newer" is defined within half the sequence space

# Acknowledgements: a bit per sequence number (8 KB an encoder), set while the snapshot is held.
ctypedef uint64_t ackbits_t[1024]


cdef inline void _bit_set(uint64_t* bits, int s) noexcept nogil:
    bits[s >> 6] |= (<uint64_t>1) << (s & 63)


cdef inline void _bit_clear(uint64_t* bits, int s) noexcept nogil:
    bits[s >> 6] &= ~((<uint64_t>1) << (s & 63))


cdef inline bint _bit(const uint64_t* bits, int s) noexcept nogil:
    return (bits[s >> 6] >> (s & 63)) & 1


cdef int pred_target(int bdist) noexcept nogil
cdef void _refs(const uint64_t* acked, int seq, int hist, bint predict, int* bdist,
                int* pdist) noexcept nogil
cdef int _store(dict held, uint64_t* acked, newest, int seq, snap, int hist) except -1
