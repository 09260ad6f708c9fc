# The entropy primitives of the delta layer (docs/wire-format.md sections 5-8): Exp-Golomb with
# an escape, Rice, the four-mode entity sets, the choice of their parameters, and the grow-only
# scratch buffers they write into. Inline nogil functions over the bit writer and reader of
# _bits.pxd: compiled into the module that cimports them (quantcodec._delta), where the
# compiler inlines them into the hot loops. Status codes are the D_* below; none raises.
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int64_t
from libc.stdlib cimport realloc, free

from quantcodec._bits cimport (
    bw_t, br_t, bw_put, br_get, br_remaining, br_peek_unchecked, qc_mask, qc_load_le64,
)


cdef extern from "_delta_bits.h":
    # bit scans of 64-bit words (the compilers' builtins where they exist)
    int qc_ctz64(uint64_t x) noexcept nogil
    int qc_bitlen64(uint64_t x) noexcept nogil
    int qc_bitlen_top(uint64_t x, int sh) noexcept nogil
    int qc_msb64(uint64_t x) noexcept nogil


# decode errors
cdef enum:
    D_OK = 0
    D_SHORT = 1     # the packet ends inside a read
    D_STRUCT = 2    # structurally invalid (detail in err_msg)
    D_CODE = 3      # a code that is not valid
    D_TRAIL = 4     # bytes or non-zero bits after the end
    D_NOMEM = 5
    D_LIMITS = 6    # the snapshot would make the client hold more than its max_bytes

cdef extern from "_delta_rules.h":
    # the delta layer's small rules, each once (the fast path of _delta_fast.h calls them too)
    uint64_t qc_unzz(uint64_t u) noexcept nogil
    int64_t qc_round_div(int64_t x, int64_t den) noexcept nogil
    uint64_t qc_top_ref(uint64_t xb, uint64_t xp, int sh, int64_t num, int64_t den) noexcept nogil
    uint64_t qc_quat_remap_ref(uint64_t bcode, int j, int t, int cb, uint64_t top) noexcept nogil
    ctypedef struct qc_dcomp:       # a component's coding in one packet (the decoder's table)
        uint64_t emask, kmask, umax, numc, smt, vmask, vlo, vspan, vbad
        int k, sh, shift, slot, E, b, p
    # the Exp-Golomb code's length and value (qc_egx_len, qc_egx_value), and the common-case reads
    # over them, inline, the position in a register
    int qc_egx_fast(const uint8_t* buf, Py_ssize_t nbytes, Py_ssize_t* pos, int k, int b, int E,
                    uint64_t* out) noexcept nogil
    int qc_bits_fast(const uint8_t* buf, Py_ssize_t nbytes, Py_ssize_t* pos, int n,
                     uint64_t* out) noexcept nogil
    int qc_egx_fast_m(const uint8_t* buf, Py_ssize_t nbytes, Py_ssize_t* pos, int k,
                      uint64_t emask, uint64_t kmask, uint64_t umax, uint64_t* out) noexcept nogil


cdef enum:
    HIST = 65               # bit lengths 0..64
    ID_KBITS = 6            # width of the id-gap Exp-Golomb parameter (0..63)
    SET_KBITS = 5           # width of the set-gap Rice parameter (0..31)
    HDR_K = 2               # Exp-Golomb parameter of the header's sequence distances
    HIST_SAMPLE_FROM = 256  # from this many changed entities, every 4th is counted
    KCOST_FRAC = 8          # best_k's costs in 2**-8 bits


cdef inline int egx_E(int k, int b) noexcept nogil:
    return ((b - k + 1) >> 1) + 1


cdef inline void put_egx(bw_t* w, uint64_t u, int k, int b) noexcept nogil:
    """Exp-Golomb of order k for u < 2**b, with an escape: E zero bits then u raw in b bits.
    At most two appends (small enough to be inlined into the hot loops): the escape; the whole
    code when it fits 64 bits (e zeros, a one, the e low bits of x = (u >> k) + 1, the k low
    bits of u); else its first e + 1 bits, then the e + k <= 64 others."""
    put_egx_E(w, u, k, b, egx_E(k, b))


cdef inline void put_egx_E(bw_t* w, uint64_t u, int k, int b, int E) noexcept nogil:
    """put_egx with E = egx_E(k, b) given (the encoder's write loop computes it once a packet)."""
    cdef uint64_t v, x, lo, hi, low
    cdef int e, nlo, nhi
    if k < 64:
        v = u >> k
        low = u ^ (v << k)                      # the k low bits of u
    else:
        v = 0
        low = u
    if v >= ((<uint64_t>1) << E) - 1:          # E <= 33
        lo = 0
        nlo = E
        hi = u
        nhi = b
    else:
        x = v + 1
        e = qc_msb64(x)                     # (x >= 1)
        hi = (x ^ ((<uint64_t>1) << e)) | (low << e)
        if 2 * e + 1 + k <= 64:
            lo = ((<uint64_t>1) << e) | (hi << (e + 1))
            nlo = 2 * e + 1 + k
            nhi = 0
            hi = 0
        else:
            lo = (<uint64_t>1) << e
            nlo = e + 1
            nhi = e + k
    bw_put(w, lo, nlo)
    if nhi:
        bw_put(w, hi, nhi)


ctypedef struct cpar_t:     # a component's coding in one packet (the encoder's write loop)
    uint8_t k         # Exp-Golomb parameter
    uint8_t E         # escape length, egx_E(k, b)
    uint8_t b         # width
    uint8_t p         # 1: the difference from the extrapolation, 0: from the baseline


cdef inline void put_egx32(bw_t* w, uint64_t u, cpar_t P) noexcept nogil:
    """put_egx_E for a component of at most 32 bits: its code, escape included, is at most
    E + b <= 49 bits, one append."""
    cdef int k = P.k, E = P.E, e
    cdef uint64_t v = u >> k, x, code
    cdef int n
    if v >= ((<uint64_t>1) << E) - 1:
        code = u << E
        n = E + P.b
    else:
        x = v + 1
        e = qc_msb64(x)
        code = ((<uint64_t>1) << e) | (((x ^ ((<uint64_t>1) << e)) | ((u ^ (v << k)) << e)) << (e + 1))
        n = 2 * e + 1 + k
    bw_put(w, code, n)


cdef inline int egx_len(uint64_t u, int k, int b) noexcept nogil:
    """The bits put_egx writes for u."""
    cdef int E = egx_E(k, b)
    cdef uint64_t v = u >> k if k < 64 else 0
    if v >= ((<uint64_t>1) << E) - 1:
        return E + b
    return 2 * qc_msb64(v + 1) + 1 + k


cdef inline bint egx_escapes(uint64_t u, int k, int b) noexcept nogil:
    cdef int E = egx_E(k, b)
    cdef uint64_t v = u >> k if k < 64 else 0
    return E < 64 and v >= ((<uint64_t>1) << E) - 1


cdef inline int get_egx(br_t* r, int k, int b, uint64_t* out, int* alt) noexcept nogil:
    """Read what put_egx wrote. 0 ok, D_SHORT, D_STRUCT (a value that does not fit b bits).
    With ``alt`` not NULL, the escape carries one more bit first: 1 means "no value, something
    else follows" (alt[0] = 1, nothing more read), 0 a raw value as usual. The common case (the
    whole code within one 8-byte load, no escape) is qc_egx_fast, inline; the rest is
    get_egx_slow."""
    cdef int st = qc_egx_fast(r.buf, r.nbytes, &r.pos, k, b, egx_E(k, b), out)
    if st == 1:
        return D_OK
    if st < 0:
        return D_STRUCT
    return get_egx_slow(r, k, b, out, alt)


cdef inline int get_egx_slow(br_t* r, int k, int b, uint64_t* out, int* alt) noexcept nogil:
    """get_egx near the end of the packet, for long codes and for the escape."""
    cdef int E = egx_E(k, b)
    cdef Py_ssize_t avail = br_remaining(r)
    cdef int n = E if E < avail else <int>avail
    cdef uint64_t peek, m, low
    cdef int e
    if n <= 0:
        return D_SHORT
    peek = br_peek_unchecked(r, r.pos, n)
    if peek == 0:
        if n < E:
            return D_SHORT
        r.pos += E
        if alt != NULL:
            if br_get(r, 1, &m) < 0:
                return D_SHORT
            if m:
                alt[0] = 1
                return D_OK
        if br_get(r, b, out) < 0:
            return D_SHORT
        if b < 64 and (out[0] >> b):
            return D_STRUCT
        return D_OK
    e = qc_ctz64(peek)
    r.pos += e + 1
    if br_get(r, e, &m) < 0:
        return D_SHORT
    m = (m | ((<uint64_t>1) << e)) - 1          # v = x - 1
    if br_get(r, k, &low) < 0:
        return D_SHORT
    if k >= 64:
        if m:
            return D_STRUCT
        out[0] = low
        return D_OK
    if k and (m >> (64 - k)):
        return D_STRUCT
    m = (m << k) | low
    if b < 64 and (m >> b):
        return D_STRUCT
    out[0] = m
    return D_OK


cdef inline void put_rice(bw_t* w, uint64_t g, int k) noexcept nogil:
    cdef uint64_t q = g >> k
    if q + 1 + k <= 64:
        bw_put(w, ((<uint64_t>1) << q) | ((g & qc_mask(k)) << (q + 1)), <int>(q + 1 + k))
        return
    while q >= 64:
        bw_put(w, 0, 64)
        q -= 64
    bw_put(w, (<uint64_t>1) << q, <int>(q + 1))
    bw_put(w, g & qc_mask(k), k)


cdef inline int get_rice(br_t* r, int k, uint64_t limit, uint64_t* out) noexcept nogil:
    """A Rice-coded value that must be < limit. 0 ok, D_SHORT, D_STRUCT."""
    cdef uint64_t q = 0, low, peek
    cdef uint64_t qmax = limit >> k
    cdef Py_ssize_t avail
    cdef int n
    while True:
        avail = br_remaining(r)
        if avail <= 0:
            return D_SHORT
        n = 64 if avail >= 64 else <int>avail
        peek = br_peek_unchecked(r, r.pos, n)
        if peek:
            n = qc_ctz64(peek)
            q += n
            r.pos += n + 1
            break
        q += n
        r.pos += n
        if q > qmax:
            return D_STRUCT
    if q > qmax:
        return D_STRUCT
    if br_get(r, k, &low) < 0:
        return D_SHORT
    q = (q << k) | low
    if q >= limit:
        return D_STRUCT
    out[0] = q
    return D_OK


cdef inline int kbits_for(int b) noexcept nogil:
    """Bits of an Exp-Golomb parameter k in 0..b."""
    return qc_bitlen64(<uint64_t>b)


cdef inline int best_k(const uint32_t* h, int b, Py_ssize_t* cost) noexcept nogil:
    """The Exp-Golomb parameter k (0..b) with the fewest expected bits for the values whose bit
    lengths are counted in h[0..b], and that cost (in 2**-KCOST_FRAC bits). A value u of bit
    length L costs 1 + k if L <= k; else 2L - k - 1, two more when the top L - k bits of u are
    all ones (e = L - k then, not L - k - 1), which the histogram cannot tell, so their expected
    share 2**(1 - (L - k)) of the values (uniform within a bit length) is counted: 4 * 2**(k - L)
    bits; at L = k + E the all-ones values escape instead (E + b bits), beyond it every value
    does (counting 2L - k + 1 for every L > k would choose too large a k). Integer arithmetic
    only, so that every platform chooses the same k. O(b) with suffix sums."""
    cdef int64_t SH[HIST + 1]          # suffix sums of the counts,
    cdef int64_t SL[HIST + 1]          # of count * L,
    cdef int64_t SQ[HIST + 1]          # of count * 2**(lmax - L) (terms below 2**-30 dropped)
    cdef int L, k, t, E, best = 0, lmax = -1, sh
    cdef int64_t c, bestc = -1, m, mid
    SH[b + 1] = 0
    SL[b + 1] = 0
    SQ[b + 1] = 0
    for L in range(b, -1, -1):
        SH[L] = SH[L + 1] + h[L]
        SL[L] = SL[L + 1] + <int64_t>h[L] * L
        if lmax < 0 and h[L]:
            lmax = L
    if lmax < 0:
        cost[0] = 0
        return 0
    for L in range(b, lmax, -1):
        SQ[L] = 0
    for L in range(lmax, -1, -1):
        SQ[L] = SQ[L + 1] + ((<int64_t>h[L]) << (lmax - L) if lmax - L <= 30 else 0)
    for k in range(lmax + 1):
        E = egx_E(k, b)
        t = k + E                       # the bit length whose all-ones values escape
        if t > b + 1:
            t = b + 1
        c = ((SH[0] - SH[k + 1]) * (1 + k)) << KCOST_FRAC
        c += (2 * (SL[k + 1] - SL[t]) - (k + 1) * (SH[k + 1] - SH[t])) << KCOST_FRAC
        m = SQ[k + 1] - SQ[t]           # sum of h[L] * 2**(lmax - L), k < L < t
        sh = KCOST_FRAC + 2 + k - lmax  # times 4 * 2**(k - lmax), in 2**-KCOST_FRAC bits
        if sh >= 0:
            c += m << sh
        elif sh > -63:
            c += m >> (-sh)
        if t <= b:
            mid = 2 * t - k - 1
            c += (<int64_t>h[t] * mid) << KCOST_FRAC
            c += ((<int64_t>h[t] * (E + b - mid)) << KCOST_FRAC) >> (E - 1)
            c += (SH[t + 1] * (E + b)) << KCOST_FRAC
        if bestc < 0 or c < bestc:
            bestc = c
            best = k
    cost[0] = <Py_ssize_t>bestc
    return best


ctypedef struct buf_t:
    void* p
    Py_ssize_t cap      # bytes


cdef inline int buf_need(buf_t* b, Py_ssize_t nbytes) noexcept nogil:
    cdef void* q
    if nbytes <= b.cap:
        return 0
    # an eighth more than asked: a client's packets grow by a few entities now and then, and
    # an exact fit moved every one of a coder's buffers (realloc, fresh pages) at each new high
    nbytes += nbytes >> 3
    if nbytes < 64:
        nbytes = 64
    q = realloc(b.p, <size_t>nbytes)
    if q == NULL:
        return -1
    b.p = q
    b.cap = nbytes
    return 0


cdef inline void buf_free(buf_t* b) noexcept nogil:
    free(b.p)
    b.p = NULL
    b.cap = 0


cdef inline void rice_costs(const Py_ssize_t* pos, Py_ssize_t n, int k, Py_ssize_t* c) noexcept nogil:
    """c[t] = the Rice bits of the gaps of pos[0..n) (ascending) with parameter k + t, for t in
    0, 1, 2: the three candidates in one pass."""
    cdef Py_ssize_t i, prev = -1
    cdef uint64_t g, c0 = 0, c1 = 0, c2 = 0
    for i in range(n):
        g = <uint64_t>(pos[i] - prev - 1)
        c0 += g >> k
        c1 += g >> (k + 1)
        c2 += g >> (k + 2)
        prev = pos[i]
    c[0] = <Py_ssize_t>c0 + n * (1 + k)
    c[1] = <Py_ssize_t>c1 + n * (2 + k)
    c[2] = <Py_ssize_t>c2 + n * (3 + k)


cdef inline void rice_costs_complement(const Py_ssize_t* pos, Py_ssize_t n, Py_ssize_t M, int k,
                                Py_ssize_t* c) noexcept nogil:
    """rice_costs of the positions of range(M) that are NOT in pos[0..n), from the members
    alone (O(n), not O(M) with a branch a position): between two consecutive absent positions
    the gap is the number of members between them, so it is 0 inside a run of absent
    positions, and after a run of r members it is r (the first absent position after a run
    of members that does not end the range)."""
    cdef Py_ssize_t i = 0, r, start, nn = M - n
    cdef uint64_t c0 = 0, c1 = 0, c2 = 0
    while i < n:
        start = pos[i]
        r = 1
        while i + r < n and pos[i + r] == start + r:
            r += 1
        if start + r < M:
            c0 += (<uint64_t>r) >> k
            c1 += (<uint64_t>r) >> (k + 1)
            c2 += (<uint64_t>r) >> (k + 2)
        i += r
    c[0] = <Py_ssize_t>c0 + nn * (1 + k)
    c[1] = <Py_ssize_t>c1 + nn * (2 + k)
    c[2] = <Py_ssize_t>c2 + nn * (3 + k)


cdef inline int rice_k0(Py_ssize_t M, Py_ssize_t n) noexcept nogil:
    """A Rice parameter near log2 of the mean gap of n positions in range(M) (n >= 1)."""
    return qc_bitlen64(<uint64_t>(M // n)) - 1


cdef inline Py_ssize_t set_bits_upper(Py_ssize_t M) noexcept nogil:
    return 2 + M + 64


cdef inline Py_ssize_t min_list_bits(Py_ssize_t n, Py_ssize_t last) noexcept nogil:
    """A lower bound of the Rice bits of n ascending positions ending at ``last``, whatever k:
    k = 0 costs n ones plus the gaps, which sum to last + 1 - n; k >= 1 at least 1 + k a member."""
    return 2 * n if 2 * n < last + 1 else last + 1


cdef inline Py_ssize_t last_absent(const Py_ssize_t* pos, Py_ssize_t n, Py_ssize_t M) noexcept nogil:
    """The largest position of range(M) not in pos[0..n) (ascending; some position is absent)."""
    cdef Py_ssize_t i = M - 1, j = n - 1
    while j >= 0 and pos[j] == i:
        i -= 1
        j -= 1
    return i


cdef inline void put_set(bw_t* w, const Py_ssize_t* pos, Py_ssize_t n, Py_ssize_t M) noexcept nogil:
    """Write SET(M): the subset pos[0..n) (ascending) of range(M), M >= 1, in the cheapest of
    the four modes: 0 empty, 1 list of members, 2 list of non-members, 3 one bit per position."""
    cdef int k, k0, kb, bestk = 0, bestk2 = 0, cbits = qc_bitlen64(<uint64_t>(M - 1))
    cdef Py_ssize_t costs[4]         # (written from 0 or 1, three each)
    cdef Py_ssize_t bestc = -1, bestc2 = -1, i, j, prev, word_start, nn = M - n
    cdef uint64_t word
    if n == 0:
        bw_put(w, 0, 2)
        return
    # a list is chosen only below the mask's M bits: when its lower bound is not (dense sets),
    # its costing is skipped, the complement's likewise; the choice is the same
    if min_list_bits(n, pos[n - 1]) + cbits + SET_KBITS >= M:
        bestc = M
    else:
        k0 = rice_k0(M, n) - 1             # candidates k0 .. k0 + 2 (rice_k0 -+ 1), in 0 .. 31
        kb = 1 if k0 < 0 else 0
        rice_costs(pos, n, k0 + kb, costs + kb)
        for k in range(kb, 3 if k0 + 3 <= (1 << SET_KBITS) else (1 << SET_KBITS) - k0):
            if bestc < 0 or costs[k] < bestc:
                bestc = costs[k]
                bestk = k0 + k
        bestc += cbits + SET_KBITS
    if nn == 0:
        bestc2 = cbits
    elif nn < n and min_list_bits(nn, last_absent(pos, n, M)) + cbits + SET_KBITS < M:
        k0 = rice_k0(M, nn) - 1
        kb = 1 if k0 < 0 else 0
        rice_costs_complement(pos, n, M, k0 + kb, costs + kb)
        for k in range(kb, 3 if k0 + 3 <= (1 << SET_KBITS) else (1 << SET_KBITS) - k0):
            if bestc2 < 0 or costs[k] < bestc2:
                bestc2 = costs[k]
                bestk2 = k0 + k
        bestc2 += cbits + SET_KBITS
    if bestc2 >= 0 and bestc2 < bestc and bestc2 < M:
        bw_put(w, 2, 2)
        bw_put(w, <uint64_t>nn, cbits)
        if nn:
            bw_put(w, <uint64_t>bestk2, SET_KBITS)
            j = 0
            prev = -1
            for i in range(M):
                if j < n and pos[j] == i:
                    j += 1
                    continue
                put_rice(w, <uint64_t>(i - prev - 1), bestk2)
                prev = i
        return
    if bestc < M:
        bw_put(w, 1, 2)
        bw_put(w, <uint64_t>(n - 1), cbits)
        bw_put(w, <uint64_t>bestk, SET_KBITS)
        prev = -1
        for i in range(n):
            put_rice(w, <uint64_t>(pos[i] - prev - 1), bestk)
            prev = pos[i]
        return
    bw_put(w, 3, 2)
    j = 0
    word_start = 0
    while word_start < M:
        word = 0
        while j < n and pos[j] < word_start + 64:
            word |= (<uint64_t>1) << (pos[j] - word_start)
            j += 1
        bw_put(w, word, <int>(M - word_start if M - word_start < 64 else 64))
        word_start += 64


cdef inline int get_list(br_t* r, Py_ssize_t* pos, Py_ssize_t cnt, Py_ssize_t M) noexcept nogil:
    """cnt Rice-coded gaps (after their parameter) -> ascending positions in range(M)."""
    cdef uint64_t v
    cdef Py_ssize_t i, prev = -1
    cdef int k, st
    if br_get(r, SET_KBITS, &v) < 0:
        return D_SHORT
    k = <int>v
    for i in range(cnt):
        st = get_rice(r, k, <uint64_t>(M - prev - 1), &v)
        if st:
            return st
        prev = prev + 1 + <Py_ssize_t>v
        pos[i] = prev
    return D_OK


cdef inline int get_set(br_t* r, Py_ssize_t* pos, Py_ssize_t* n, Py_ssize_t M) noexcept nogil:
    """Read a SET(M) into pos (room for M entries): n members, ascending. 0 ok or a D_* error."""
    cdef uint64_t v, word, mode
    cdef Py_ssize_t i, j, cnt, word_start
    cdef int bits, st, cbits = qc_bitlen64(<uint64_t>(M - 1))
    n[0] = 0
    if br_get(r, 2, &mode) < 0:
        return D_SHORT
    if mode == 0:
        return D_OK
    if mode == 1 or mode == 2:
        if br_get(r, cbits, &v) < 0:
            return D_SHORT
        cnt = <Py_ssize_t>v + (1 if mode == 1 else 0)
        if cnt > M or (mode == 2 and cnt == M):
            return D_STRUCT
        if mode == 1:
            st = get_list(r, pos, cnt, M)
            if st:
                return st
            n[0] = cnt
            return D_OK
        # non-members: read them at the end of pos (room for M), then fill in the members
        if cnt:
            st = get_list(r, pos + (M - cnt), cnt, M)
            if st:
                return st
        j = M - cnt
        cnt = 0
        for i in range(M):
            if j < M and pos[j] == i:
                j += 1
                continue
            pos[cnt] = i
            cnt += 1
        n[0] = cnt
        return D_OK
    cnt = 0
    word_start = 0
    while word_start < M:
        bits = <int>(M - word_start if M - word_start < 64 else 64)
        if br_get(r, bits, &word) < 0:
            return D_SHORT
        while word:
            pos[cnt] = word_start + qc_ctz64(word)
            cnt += 1
            word &= word - 1
        word_start += 64
    if cnt == 0:
        return D_STRUCT
    n[0] = cnt
    return D_OK
