# The stream bookkeeping's small rules, for the modules that test them (quantcodec._testing):
# sequence arithmetic, the acknowledgement bits, the choice of references, the held window.
from libc.stdint cimport uint32_t, uint64_t

cdef enum:
    SEQ_MASK = 0xFFFF       # sequence numbers live in 0..65535 and wrap
    SEQ_HALF = 0x8000       # "newer" is defined within half the sequence space

# The datagram layer's sizes (docs/wire-format.md sections 11-19), declared once: _history's
# classifier uses them in C and exports them to quantcodec._framing, which uses them in Python.
cdef enum:
    W_CHECK = 4             # the CRC-32C check that ends every datagram of a keyless stream
    W_TAG = 8               # the SipHash-2-4 tag that replaces it with a shared key
    W_FRAGMENT_HEADER = 8   # a fragment's seq u16, index u8, count-1 u8, pcheck u32
    W_HELLO_BODY = 51       # a hello's bytes before its check: empty name, no field summary
    W_MAX_FRAGMENTS = 256
    W_MIN_DATAGRAM = 64
    W_MAX_DATAGRAM = 65507
    W_SNAPSHOT_COST = 256   # section 19: what a held snapshot costs besides its entities
    W_REPLY_ACK = 16        # an ack's bytes before its check (section 18)
    W_REPLY_HELLO = 26      # a hello request's bytes before its check

# A stream's check: the CRC seed of its kind of datagram, or a SipHash key when keyed.
ctypedef struct wcheck_t:
    bint keyed
    uint32_t seed
    uint64_t k0
    uint64_t k1

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
