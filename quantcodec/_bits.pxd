"""C-level LSB-first bit writer and reader, shared by every compiled module.

Bit order: the first bit written is bit 0 (the least significant) of byte 0, and a value is
written least significant bit first. Writing 5 in 3 bits and then 17 in 5 bits gives the single
byte 0x8D.

Everything here is ``cdef inline ... noexcept nogil`` and needs no runtime module: other
modules ``from quantcodec._bits cimport bw_t, bw_reserve, bw_put, br_t, br_get, ...`` and call
these from ``nogil`` loops.

Writer (``bw_t``): a 64-bit accumulator ``acc`` holds the bits of the current, not yet stored
64-bit word, that is bits ``[64 * (nbits // 64), nbits)`` of the stream; the bits of ``acc``
above them are always zero. A word is stored (little-endian, 8 bytes, unaligned) only when all 64
of its bits have been written, so a store never reaches past ``(nbits + 7) // 8`` bytes: the
writer works on an exact-size buffer too (``bw_wrap``). Contract of ``bw_put``: the caller has
called ``bw_reserve`` for the bits, and the value fits (``value < 2**bits``).

Reader (``br_t``): borrows memory and never reads outside ``buf[0:nbytes]``. 8-byte loads are
used only where 8 bytes remain; the last few bytes are assembled one at a time.

Endianness: bytes are assembled with shifts (or ``memcpy`` on hosts known to be little-endian),
so the stream is the same on big-endian hosts. Compile with ``-DQC_LITTLE_ENDIAN=0`` to force the
portable path on any host.
"""

from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t, int8_t, int16_t, int32_t, int64_t
from libc.stdlib cimport malloc, realloc, free

cdef extern from "Python.h":
    const Py_ssize_t PY_SSIZE_T_MAX

cdef extern from "_bits.h":
    uint64_t qc_load_le64(const uint8_t* p) noexcept nogil
    void qc_store_le64(uint8_t* p, uint64_t v) noexcept nogil


# The integer element types of the bulk helpers (NumPy's integer dtypes, native byte order).
ctypedef fused qc_int_t:
    uint8_t
    uint16_t
    uint32_t
    uint64_t
    int8_t
    int16_t
    int32_t
    int64_t


cdef inline uint64_t qc_mask(int bits) noexcept nogil:
    """The low ``bits`` bits set, 0 <= bits <= 64."""
    if bits >= 64:
        return 0xFFFFFFFFFFFFFFFFULL
    return ((<uint64_t>1) << bits) - 1


cdef inline uint64_t qc_load_le(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    """The first ``n`` bytes at ``p`` (n <= 8) as a little-endian integer; reads only those bytes."""
    cdef uint64_t v = 0
    cdef Py_ssize_t i
    if n >= 8:
        return qc_load_le64(p)
    for i in range(n):
        v |= (<uint64_t>p[i]) << (8 * i)
    return v


cdef inline void qc_store_le(uint8_t* p, uint64_t v, Py_ssize_t n) noexcept nogil:
    """Store the low ``n`` bytes (n <= 8) of ``v`` little-endian at ``p``; writes only those bytes."""
    cdef Py_ssize_t i
    if n >= 8:
        qc_store_le64(p, v)
        return
    for i in range(n):
        p[i] = <uint8_t>(v >> (8 * i))


# ----------------------------------------------------------------------------------- writer

ctypedef struct bw_t:
    uint8_t* buf          # the stream; bytes [0, 8 * (nbits // 64)) are final, the rest is in acc
    Py_ssize_t cap        # capacity in bytes
    Py_ssize_t nbits      # bits written so far
    uint64_t acc          # the bits of the current 64-bit word not yet stored (higher bits zero)
    int owned             # 1: buf was malloc'ed here (bw_init) and may grow; 0: borrowed (bw_wrap)


cdef inline int bw_init(bw_t* w, Py_ssize_t cap_bytes) noexcept nogil:
    """Start an empty writer over a new malloc'ed buffer of ``cap_bytes`` (at least 8). 0 ok, -1 no memory."""
    if cap_bytes < 8:
        cap_bytes = 8
    w.nbits = 0
    w.acc = 0
    w.owned = 1
    w.buf = <uint8_t*>malloc(<size_t>cap_bytes)
    if w.buf == NULL:
        w.cap = 0
        return -1
    w.cap = cap_bytes
    return 0


cdef inline void bw_wrap(bw_t* w, uint8_t* buf, Py_ssize_t cap_bytes) noexcept nogil:
    """Start an empty writer over borrowed memory of ``cap_bytes``; it never grows nor frees it."""
    w.buf = buf
    w.cap = cap_bytes
    w.nbits = 0
    w.acc = 0
    w.owned = 0


cdef inline void bw_free(bw_t* w) noexcept nogil:
    """Free the buffer (if owned) and leave an empty writer with no buffer; safe to call twice."""
    if w.owned and w.buf != NULL:
        free(w.buf)
    w.buf = NULL
    w.cap = 0
    w.nbits = 0
    w.acc = 0


cdef inline void bw_reset(bw_t* w) noexcept nogil:
    """Empty the writer and keep its buffer."""
    w.nbits = 0
    w.acc = 0


cdef inline Py_ssize_t bw_nbytes(const bw_t* w) noexcept nogil:
    """Bytes the stream takes, the last one padded: ``(nbits + 7) // 8``."""
    return (w.nbits + 7) >> 3


cdef inline int bw_reserve(bw_t* w, Py_ssize_t extra_bits) noexcept nogil:
    """Make room for ``extra_bits`` more bits (geometric growth). 0 ok; -1 no memory, overflow,
    or a borrowed buffer that is too small."""
    cdef Py_ssize_t need, newcap
    cdef uint8_t* p
    if extra_bits < 0 or extra_bits > PY_SSIZE_T_MAX - 7 - w.nbits:
        return -1
    need = (w.nbits + extra_bits + 7) >> 3
    if need <= w.cap:
        return 0
    if not w.owned:
        return -1
    newcap = w.cap if w.cap >= 8 else 8
    while newcap < need:
        if newcap > PY_SSIZE_T_MAX // 2:
            newcap = need
            break
        newcap *= 2
    p = <uint8_t*>realloc(w.buf, <size_t>newcap)
    if p == NULL:
        return -1
    w.buf = p
    w.cap = newcap
    return 0


cdef inline void bw_put(bw_t* w, uint64_t value, int bits) noexcept nogil:
    """Append the low ``bits`` bits of ``value``, 0 <= bits <= 64. The caller reserved room and
    ``value < 2**bits``."""
    cdef int used = <int>(w.nbits & 63)
    w.acc |= value << used
    if used + bits >= 64:
        qc_store_le64(w.buf + ((w.nbits >> 6) << 3), w.acc)
        # the 64 - used bits of value that fitted are stored; keep the rest ((v >> 1) >> (63 - used)
        # is v >> (64 - used) without a shift by 64 when used == 0)
        w.acc = (value >> 1) >> (63 - used)
    w.nbits += bits


cdef inline void bw_align(bw_t* w) noexcept nogil:
    """Pad with zero bits to a byte boundary (reserve 7 bits first)."""
    bw_put(w, 0, <int>((-w.nbits) & 7))


cdef inline void bw_flush(bw_t* w) noexcept nogil:
    """Store the pending bits: afterwards ``buf[0:bw_nbytes(w)]`` holds the whole stream, the last
    byte padded with zeros. Writes only inside that range; the writer can go on writing."""
    cdef int used = <int>(w.nbits & 63)
    if used:
        qc_store_le(w.buf + ((w.nbits >> 6) << 3), w.acc, (used + 7) >> 3)


cdef inline uint64_t qc_misfit_bits(int bits, bint is_signed) noexcept nogil:
    """The bits that must be clear in ``<uint64_t>value`` (sign-extended) for ``value`` to be
    non-negative and fit in ``bits`` bits."""
    if is_signed and bits >= 64:
        return 0x8000000000000000ULL    # only negatives fail
    return ~qc_mask(bits)


cdef inline uint64_t qc_elem_u64(const qc_int_t* src, Py_ssize_t stride, Py_ssize_t i) noexcept nogil:
    """Element ``i`` (``stride`` bytes apart) as uint64 (negative values sign-extended)."""
    return <uint64_t>(<const qc_int_t*>((<const char*>src) + i * stride))[0]


cdef inline Py_ssize_t qc_first_misfit(const qc_int_t* src, Py_ssize_t stride, Py_ssize_t n,
                                       int bits) noexcept nogil:
    """Index of the first element that is negative or does not fit in ``bits`` bits, or -1.
    ``stride`` is in bytes."""
    cdef uint64_t bad = qc_misfit_bits(bits, (<qc_int_t>-1) < 0)
    cdef uint64_t seen = 0
    cdef Py_ssize_t i
    if stride == <Py_ssize_t>sizeof(qc_int_t):
        for i in range(n):               # a branch-free reduction the compiler vectorizes
            seen |= <uint64_t>src[i]
    else:
        for i in range(n):
            seen |= qc_elem_u64(src, stride, i)
    if (seen & bad) == 0:
        return -1
    for i in range(n):
        if qc_elem_u64(src, stride, i) & bad:
            return i
    return -1


cdef inline Py_ssize_t _bw_put_chunks(bw_t* w, const qc_int_t* src, Py_ssize_t n, int bits,
                                      int k) noexcept nogil:
    """Contiguous ``src``: append values ``k`` at a time (``k * bits <= 64``), each group first
    combined into one chunk (independent operations) that then goes through the accumulator
    once. Returns how many values were written (``n - n % k``). Called with a literal ``k``, so
    the compiler unrolls the inner loop."""
    cdef Py_ssize_t i = 0
    cdef int j
    cdef uint64_t v
    cdef bw_t s = w[0]
    while i + k <= n:
        v = <uint64_t>src[i]
        for j in range(1, k):
            v |= (<uint64_t>src[i + j]) << (j * bits)
        bw_put(&s, v, k * bits)
        i += k
    w[0] = s
    return i


cdef inline Py_ssize_t _bw_put_units(bw_t* w, const qc_int_t* src, Py_ssize_t n, int bits,
                                     int m) noexcept nogil:
    """Contiguous ``src``, ``nbits % 8 == 0``, ``m * bits`` a multiple of 8 and at most 64: each
    unit of ``m`` values is a whole number of bytes, so it is combined in a register and stored
    as one 8-byte word at the next byte; the word's zero top bytes are overwritten by the next
    unit's store. No read-modify-write, no dependency between units. Stops while 8 bytes fit in
    the buffer. Returns how many values were written (a multiple of m). Called with a literal
    ``m``."""
    cdef Py_ssize_t i = 0
    cdef int j
    cdef uint64_t v
    cdef Py_ssize_t at, used
    cdef Py_ssize_t step = (m * bits) >> 3
    cdef Py_ssize_t limit = w.cap - 8
    bw_flush(w)                      # the pending whole bytes go to buf
    at = w.nbits >> 3
    while i + m <= n and at <= limit:
        v = <uint64_t>src[i]
        for j in range(1, m):
            v |= (<uint64_t>src[i + j]) << (j * bits)
        qc_store_le64(w.buf + at, v)
        at += step
        i += m
    w.nbits += i * bits
    used = w.nbits & 63              # a multiple of 8: reload the current word's bytes
    w.acc = qc_load_le(w.buf + ((w.nbits >> 6) << 3), used >> 3)
    return i


cdef inline void bw_put_array(bw_t* w, const qc_int_t* src, Py_ssize_t stride, Py_ssize_t n,
                              int bits) noexcept nogil:
    """Append ``n`` elements (``stride`` bytes apart) in ``bits`` bits each. The caller reserved
    ``n * bits`` bits and checked that every element fits (``qc_first_misfit``).

    Contiguous 32- and 64-bit elements (the code dtypes) take unrolled paths; each call below
    passes a literal group size so the compiler specializes it."""
    cdef Py_ssize_t i = 0
    cdef int k, m0, m
    if bits == 0:
        return
    if stride == <Py_ssize_t>sizeof(qc_int_t) and sizeof(qc_int_t) >= 4:
        if (w.nbits & 7) == 0:
            # byte-aligned units of m values: m0 = 8 / gcd(bits, 8) values make whole bytes;
            # m is the largest multiple of m0 with m * bits <= 64 (none for 9, 11, 13, 18, ...)
            m0 = 8 if bits & 1 else (4 if bits & 2 else (2 if bits & 4 else 1))
            m = m0 * (64 // (m0 * bits))
            if m == 1:
                i = _bw_put_units(w, src, n, bits, 1)
            elif m == 2:
                i = _bw_put_units(w, src, n, bits, 2)
            elif m == 4:
                i = _bw_put_units(w, src, n, bits, 4)
            elif m == 8:
                i = _bw_put_units(w, src, n, bits, 8)
            elif m > 8:
                i = _bw_put_units(w, src, n, bits, m)
        # then chunks of k = 64 // bits values through the accumulator
        k = 64 // bits
        if k == 2:
            i += _bw_put_chunks(w, src + i, n - i, bits, 2)
        elif k == 3:
            i += _bw_put_chunks(w, src + i, n - i, bits, 3)
        elif k == 4:
            i += _bw_put_chunks(w, src + i, n - i, bits, 4)
        elif k == 5:
            i += _bw_put_chunks(w, src + i, n - i, bits, 5)
        elif k == 6:
            i += _bw_put_chunks(w, src + i, n - i, bits, 6)
        elif k == 7:
            i += _bw_put_chunks(w, src + i, n - i, bits, 7)
        elif k > 7:
            i += _bw_put_chunks(w, src + i, n - i, bits, k)
    if i < n:
        bw_put_strided(w, src, stride, i, n, bits)


cdef inline void bw_put_strided(bw_t* w, const qc_int_t* src, Py_ssize_t stride,
                                Py_ssize_t start, Py_ssize_t stop, int bits) noexcept nogil:
    """Append elements ``start:stop`` (``stride`` bytes apart) one at a time."""
    cdef bw_t s = w[0]        # a local copy the compiler keeps in registers
    cdef Py_ssize_t i
    for i in range(start, stop):
        bw_put(&s, qc_elem_u64(src, stride, i), bits)
    w[0] = s


# ----------------------------------------------------------------------------------- reader

ctypedef struct br_t:
    const uint8_t* buf    # borrowed memory
    Py_ssize_t nbytes     # bytes readable at buf
    Py_ssize_t nbits      # total bits available (8 * nbytes)
    Py_ssize_t pos        # bit position of the next read


cdef inline void br_init(br_t* r, const uint8_t* buf, Py_ssize_t nbytes) noexcept nogil:
    r.buf = buf
    r.nbytes = nbytes
    r.nbits = nbytes * 8
    r.pos = 0


cdef inline Py_ssize_t br_remaining(const br_t* r) noexcept nogil:
    return r.nbits - r.pos


cdef inline uint64_t br_peek_unchecked(const br_t* r, Py_ssize_t pos, int bits) noexcept nogil:
    """The ``bits`` bits at bit ``pos``; the caller checked ``pos + bits <= nbits``."""
    cdef Py_ssize_t idx = pos >> 3
    cdef int sh = <int>(pos & 7)
    cdef uint64_t v
    if bits == 0:
        return 0
    if idx + 8 <= r.nbytes:
        v = qc_load_le64(r.buf + idx) >> sh
        if bits + sh > 64:             # then sh > 0 and byte idx + 8 holds the top bits
            v |= (<uint64_t>r.buf[idx + 8]) << (64 - sh)
    else:                              # under 8 bytes left: all the bits are in them
        v = qc_load_le(r.buf + idx, r.nbytes - idx) >> sh
    return v & qc_mask(bits)


cdef inline int br_get(br_t* r, int bits, uint64_t* out) noexcept nogil:
    """Read ``bits`` bits (0 <= bits <= 64) into ``out``. 0 ok; -1 if fewer than ``bits`` bits
    remain (``pos`` unchanged)."""
    if bits > r.nbits - r.pos:
        return -1
    out[0] = br_peek_unchecked(r, r.pos, bits)
    r.pos += bits
    return 0


cdef inline int br_get_signed(br_t* r, int bits, int64_t* out) noexcept nogil:
    """Read a two's complement value of ``bits`` bits, sign-extended. 0 ok; -1 past the end."""
    cdef uint64_t u
    cdef uint64_t sign
    if br_get(r, bits, &u) < 0:
        return -1
    if bits == 0:
        out[0] = 0
    elif bits >= 64:
        out[0] = <int64_t>u
    else:
        sign = (<uint64_t>1) << (bits - 1)
        out[0] = <int64_t>((u ^ sign) - sign)
    return 0


cdef inline void br_align(br_t* r) noexcept nogil:
    """Skip to the next byte boundary (the skipped bits are not checked)."""
    cdef Py_ssize_t p = (r.pos + 7) & ~(<Py_ssize_t>7)
    r.pos = p if p < r.nbits else r.nbits


cdef inline Py_ssize_t _br_get_groups(const uint8_t* buf, Py_ssize_t nbytes, Py_ssize_t pos,
                                      qc_int_t* dst, Py_ssize_t n, int bits) noexcept nogil:
    """Contiguous ``dst``, ``1 <= bits <= 57``: read values in groups of 8 from bit ``pos``.
    8 values take exactly ``bits`` bytes, so value j of every group sits at the same byte
    offset and shift: one 8-byte load, shift and mask per value, no dependency between values.
    Only groups whose loads stay inside ``buf[0:nbytes]`` are read; returns how many values
    were (a multiple of 8)."""
    cdef uint64_t mask = qc_mask(bits)
    cdef Py_ssize_t p = pos & 7
    cdef const uint8_t* base = buf + (pos >> 3)
    cdef const uint8_t* end = buf + nbytes
    cdef Py_ssize_t o1 = (p + bits) >> 3, o2 = (p + 2 * bits) >> 3, o3 = (p + 3 * bits) >> 3
    cdef Py_ssize_t o4 = (p + 4 * bits) >> 3, o5 = (p + 5 * bits) >> 3, o6 = (p + 6 * bits) >> 3
    cdef Py_ssize_t o7 = (p + 7 * bits) >> 3
    cdef int s0 = <int>p, s1 = (p + bits) & 7, s2 = (p + 2 * bits) & 7, s3 = (p + 3 * bits) & 7
    cdef int s4 = (p + 4 * bits) & 7, s5 = (p + 5 * bits) & 7, s6 = (p + 6 * bits) & 7
    cdef int s7 = (p + 7 * bits) & 7
    cdef Py_ssize_t i = 0
    # the last load of a group reads base[o7 : o7 + 8], o7 < bits + 1
    while i + 8 <= n and end - base >= o7 + 8:
        dst[i] = <qc_int_t>((qc_load_le64(base) >> s0) & mask)
        dst[i + 1] = <qc_int_t>((qc_load_le64(base + o1) >> s1) & mask)
        dst[i + 2] = <qc_int_t>((qc_load_le64(base + o2) >> s2) & mask)
        dst[i + 3] = <qc_int_t>((qc_load_le64(base + o3) >> s3) & mask)
        dst[i + 4] = <qc_int_t>((qc_load_le64(base + o4) >> s4) & mask)
        dst[i + 5] = <qc_int_t>((qc_load_le64(base + o5) >> s5) & mask)
        dst[i + 6] = <qc_int_t>((qc_load_le64(base + o6) >> s6) & mask)
        dst[i + 7] = <qc_int_t>((qc_load_le64(base + o7) >> s7) & mask)
        base += bits
        i += 8
    return i


cdef inline void br_get_array(br_t* r, qc_int_t* dst, Py_ssize_t stride, Py_ssize_t n,
                              int bits) noexcept nogil:
    """Read ``n`` values of ``bits`` bits into ``dst`` (``stride`` bytes apart). The caller
    checked ``n * bits <= br_remaining(r)`` and that ``qc_int_t`` holds ``bits`` bits."""
    cdef Py_ssize_t pos = r.pos
    cdef Py_ssize_t i = 0
    cdef Py_ssize_t last
    cdef uint64_t mask = qc_mask(bits)
    cdef const uint8_t* buf = r.buf
    cdef char* p = <char*>dst
    if 0 < bits <= 57:
        if stride == <Py_ssize_t>sizeof(qc_int_t):
            i = _br_get_groups(buf, r.nbytes, pos, dst, n, bits)
            pos += i * bits
        # then single values while an 8-byte load at byte pos >> 3 stays inside the buffer
        last = 8 * (r.nbytes - 8) + 7
        while i < n and pos <= last:
            (<qc_int_t*>(p + i * stride))[0] = <qc_int_t>(
                (qc_load_le64(buf + (pos >> 3)) >> (pos & 7)) & mask)
            pos += bits
            i += 1
    elif bits > 57:
        # a value may reach into a 9th byte: one 8-byte load plus that byte, while they exist
        last = 8 * (r.nbytes - 9) + 7
        while i < n and pos <= last:
            (<qc_int_t*>(p + i * stride))[0] = <qc_int_t>(
                ((qc_load_le64(buf + (pos >> 3)) >> (pos & 7))
                 | (((<uint64_t>buf[(pos >> 3) + 8]) << 1) << (63 - (pos & 7)))) & mask)
            pos += bits
            i += 1
    while i < n:
        (<qc_int_t*>(p + i * stride))[0] = <qc_int_t>br_peek_unchecked(r, pos, bits)
        pos += bits
        i += 1
    r.pos = pos
