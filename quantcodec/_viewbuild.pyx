"""The per-client view builder of quantcodec._views, compiled (issue 34): the same steps and the
same decisions as the Python ``_views.ViewBuilderPy`` (the reference, which the tests compare it
with on random scenes, view for view and priority for priority), with the array work in C loops
that run without the GIL, so a thread pool building many clients' views scales on cores.

Per build, for ``n`` entities of interest and ``S`` slots: the interest ids sorted (a radix
sort a byte a pass, or a natural merge sort of the grid's sorted runs, whichever needs fewer
passes over them) and found among the world's
ids (binary searches narrowing left to right); the priorities carried over and the baseline and
previous view aligned by merge joins (everything is ascending by id); the start view kept as row
pointers (into the previous view or the baseline: nothing copied); the candidates ordered by a
stable merge sort.

A build is three steps, so that a thread hands the GIL over once for many clients:
``ViewBuilder.begin`` with the GIL (the arguments checked, the stream state's ``refs`` and
previous view, the references of the trial encodes checked once: ``_refs_in``), ``_compute``
without it (steps 1-3: the target, the priorities, the start view and the candidates; then the
choice: the trials, the shed, the candidates' sort; each trial view gathered into the build's
own arrays and coded from them by the DeltaEncoder's ``_encode``, the chosen one's packet kept
in C memory), and ``ViewBuilder.end`` with the GIL (the view's Snapshot, bound without row keys,
whose packing would cost a pass: its encodes compare rows; ``offer``; the sizes learned
committed). ``build`` runs the three; :func:`compute` runs the middle step of many builds in one
span (StreamServer.send, on threads, 16 clients at a time). A build begun and not ended changes
nothing. While views are interned (a ViewShare, on), a trial view is a Snapshot first (its hash
is looked up) and coded through ``_encode_call``: such a trial takes the GIL.

A builder keeps its entities (ids, world rows), their priorities and live ticks in C memory
reused from tick to tick (two ``kept_t`` sets: a build reads the last and writes the other), not
in NumPy arrays made and freed each build: in a heap that 1,000 clients' arrays fragment, those
allocations were most of the time a build held the GIL.

The trial encode of the view chosen is the client's packet: the builder hands it to the
client's encoder (``EncoderState.offer``), whose ``encode`` of that view against the same
references sends those bytes instead of coding them again (one encode a client a tick fewer).

Views are interned per tick when a :class:`ViewShare` is given (the session gives one to all its
clients' builders): a view equal to one another client's builder made for the same sequence
number is that very Snapshot, so the clients' encoders, which share a PacketCache, code the
packet once for every client whose view and acknowledgements coincide, and the trial encodes
against the same references are done once too (the shared trial size carries its packet, which
each of those clients' builders hands to its encoder).
"""

cimport cython
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int64_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memcmp, memset
from libc.math cimport nearbyint, isfinite, INFINITY
from cpython.bytes cimport PyBytes_GET_SIZE, PyBytes_FromStringAndSize, PyBytes_AS_STRING

import numpy as np

from quantcodec._delta cimport DeltaEncoder, SnapshotData, enc_in_t
from quantcodec._bits cimport bw_nbytes
from quantcodec._history cimport W_FRAGMENT_HEADER, W_MAX_FRAGMENTS
from cpython.ref cimport PyObject
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_C_CONTIGUOUS

from . import _framing
from .snapshot import Snapshot, _layout_of, _plan_of

__all__ = ["ViewBuilder", "ViewShare", "compute"]

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define QC_PREFETCH(p) __builtin_prefetch((const void*)(p))
    #else
    #define QC_PREFETCH(p) ((void)0)
    #endif
    """
    void QC_PREFETCH(const void* p) noexcept nogil

cdef enum:
    PF = 16                      # rows ahead a loop over world rows asks the cache for

cdef int MAX_TRIALS = 3          # trial encodes after the start view's, per tick
# ViewShare's pause: after IDLE_TICKS ticks in a row of at least IDLE_VIEWS views and not one
# found, views are interned only one tick in PROBE_EVERY, until such a tick finds one
cdef int IDLE_TICKS = 4
cdef Py_ssize_t IDLE_VIEWS = 16
cdef int PROBE_EVERY = 16
cdef double FILL = 0.97          # the share of the room an estimate may plan for
# the largest weight taken: an entity's priority grows by its weight each tick it waits, and
# one of 1e308 reached inf in two ticks, where ties are broken by row and the last rows waited
# for ever; only the weights' ratios count (docs/views.md, "Priority")
cdef double MAX_WEIGHT = 1e100

_U64 = np.dtype(np.uint64)
_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)


cdef inline double _dgram_bytes(Py_ssize_t plen, Py_ssize_t md, Py_ssize_t check) noexcept nogil:
    """_views.datagram_bytes, in C (INFINITY beyond 256 fragments)."""
    cdef Py_ssize_t framing, count
    if plen + check <= md:
        return <double>(plen + check)
    framing = W_FRAGMENT_HEADER + check
    count = (plen + (md - framing) - 1) // (md - framing)
    if count > W_MAX_FRAGMENTS:
        return INFINITY
    return <double>(plen + framing * count)


cdef tuple _view_arrays(object tid, Py_ssize_t n, Py_ssize_t S, const uint8_t* has,
                        const uint8_t* take):
    """A view's ids and rows to fill (``_gather``): ``(ids, matrix, count)``, the ids being the
    interest's own array when every one of them is in the view."""
    cdef Py_ssize_t i, cnt = 0
    for i in range(n):
        cnt += has[i] | take[i]
    mat = np.empty((cnt, S), dtype=_U64)
    ids = tid if cnt == n else np.empty(cnt, dtype=_U64)
    return ids, mat, cnt


cdef inline void _gather(Py_ssize_t n, Py_ssize_t S, Py_ssize_t cnt, const uint8_t* has,
                         const uint8_t* take, const uint64_t** v0, const uint64_t* wrow,
                         const Py_ssize_t* rows, const uint64_t* tid_p, uint64_t* ip,
                         uint64_t* mp) noexcept nogil:
    """A view's ids and rows (``cnt`` of them): V0's rows where ``has``, the world's where
    ``take`` (the world's win); the ids written only when some are left out (``cnt != n``)."""
    cdef Py_ssize_t i, j, k = 0
    cdef const uint64_t* r
    for i in range(n):
        if take[i]:
            r = wrow + rows[i] * S
        elif has[i]:
            r = v0[i]
        else:
            continue
        if cnt != n:
            ip[k] = tid_p[i]
        # (a row is a few words: copied inline, not through a call to memcpy a row)
        for j in range(S):
            mp[k * S + j] = r[j]
        k += 1


cdef inline bint _differ(const uint64_t* a, const uint64_t* b, Py_ssize_t S) noexcept nogil:
    cdef Py_ssize_t j
    for j in range(S):
        if a[j] != b[j]:
            return True
    return False


cdef struct kv_t:
    uint64_t k
    Py_ssize_t i


cdef void _merge_runs(kv_t* src, kv_t* dst, Py_ssize_t* runs, Py_ssize_t nr, Py_ssize_t n) noexcept nogil:
    """Merge the ``nr`` ascending runs of ``src`` (their starts in ``runs``, ``runs[nr] == n``)
    pairwise until one is left, ping-ponging with ``dst``; stable. ceil(log2(nr)) passes: the
    result is in ``src`` after an even number, in ``dst`` after an odd one."""
    cdef Py_ssize_t r, w, a, ae, b, e, i, x, tb
    cdef kv_t* sw
    while nr > 1:
        w = 0
        r = 0
        while r < nr:
            a = runs[r]
            if r + 1 >= nr:
                memcpy(dst + a, src + a, sizeof(kv_t) * (n - a))
                runs[w] = a
                w += 1
                r += 1
                continue
            ae = runs[r + 1]
            b = ae
            e = runs[r + 2]
            i = a
            # branch-free (which side comes next is a coin toss the predictor loses half the
            # time): the index taken is picked by arithmetic, not by a jump
            while a < ae and b < e:
                tb = src[b].k < src[a].k
                x = a + (b - a) * tb
                dst[i] = src[x]
                b += tb
                a += 1 - tb
                i += 1
            if a < ae:
                memcpy(dst + i, src + a, sizeof(kv_t) * (ae - a))
            elif b < e:
                memcpy(dst + i, src + b, sizeof(kv_t) * (e - b))
            runs[w] = runs[r]
            w += 1
            r += 2
        runs[w] = n
        nr = w
        sw = src
        src = dst
        dst = sw


cdef kv_t* _radix_kv(kv_t* a, kv_t* b, Py_ssize_t n, int passes) noexcept nogil:
    """Stable LSD radix sort of the pairs ``a`` (n) by ``k``, a byte a pass (``passes`` of
    them, at most 4: the keys fit in ``8 * passes`` bits), ping-ponging with ``b``; returns the
    buffer holding the result. The counts of the four low bytes are taken in one read."""
    cdef uint32_t cnt[4 * 256]
    cdef uint32_t* c
    cdef uint32_t t, u
    cdef Py_ssize_t i
    cdef int p, sh
    cdef uint64_t k
    cdef kv_t* sw
    memset(cnt, 0, sizeof(cnt))
    for i in range(n):
        k = a[i].k
        cnt[k & 255] += 1
        cnt[256 + ((k >> 8) & 255)] += 1
        cnt[512 + ((k >> 16) & 255)] += 1
        cnt[768 + ((k >> 24) & 255)] += 1
    for p in range(passes):
        c = cnt + p * 256
        t = 0
        for i in range(256):
            u = c[i]
            c[i] = t
            t += u
        sh = 8 * p
        for i in range(n):
            k = (a[i].k >> sh) & 255
            b[c[k]] = a[i]
            c[k] += 1
        sw = a
        a = b
        b = sw
    return a


cdef void _sort_u64(const uint64_t* key, Py_ssize_t* idx, Py_ssize_t* tmp, Py_ssize_t* runs,
                    Py_ssize_t n) noexcept nogil:
    """Stable argsort of ``key`` into ``idx`` (``runs`` scratch, n + 1; ``tmp`` unused), of
    (key, index) pairs, the keys moved with their indices so the passes read memory in order:
    an LSD radix sort a byte a pass when the keys' span (max - min) needs fewer passes than
    merging the ascending runs pairwise does (the grid's lists: 20-30 runs, a cell each, so 5
    merge passes; ids or rows within a world of a million: at most 3 bytes of span), else a
    bottom-up natural merge sort. Both stable: the same order. Without memory for the pairs,
    an insertion sort of ``idx``."""
    cdef Py_ssize_t i, j, x, nr, npass
    cdef kv_t* buf
    cdef kv_t* a
    cdef kv_t* b
    cdef uint64_t kmin, kmax, span
    cdef int nbytes
    for i in range(n):
        idx[i] = i
    if n < 2:
        return
    nr = 0
    runs[nr] = 0
    nr += 1
    for i in range(1, n):
        if key[i] < key[i - 1]:
            runs[nr] = i
            nr += 1
    runs[nr] = n
    if nr == 1:
        return
    buf = <kv_t*>malloc(sizeof(kv_t) * 2 * n)
    if buf == NULL:
        for i in range(1, n):
            x = idx[i]
            j = i
            while j > 0 and key[x] < key[idx[j - 1]]:
                idx[j] = idx[j - 1]
                j -= 1
            idx[j] = x
        return
    npass = 0
    i = 1
    while i < nr:
        i *= 2
        npass += 1
    kmin = kmax = key[0]
    for i in range(1, n):
        if key[i] < kmin:
            kmin = key[i]
        if key[i] > kmax:
            kmax = key[i]
    span = kmax - kmin
    nbytes = 0
    while span:
        span >>= 8
        nbytes += 1
    if nbytes <= 4 and nbytes < npass:
        a = buf
        for i in range(n):
            a[i].k = key[i] - kmin
            a[i].i = i
        a = _radix_kv(a, buf + n, n, nbytes)
        for i in range(n):
            idx[i] = a[i].i
        free(buf)
        return
    # the result lands in the first half after an even number of passes: start where it ends
    if npass & 1:
        a = buf + n
        b = buf
    else:
        a = buf
        b = buf + n
    for i in range(n):
        a[i].k = key[i]
        a[i].i = i
    _merge_runs(a, b, runs, nr, n)
    for i in range(n):
        idx[i] = buf[i].i
    free(buf)


cdef void _sort_key(const double* key, Py_ssize_t* v, Py_ssize_t* tmp, Py_ssize_t n) noexcept nogil:
    """Stable sort of the indices ``v`` (n) by ``key[v[i]]`` ascending (NumPy's stable argsort
    of the gathered keys: ties keep their order). Bottom-up merge sort, ``tmp`` scratch."""
    cdef Py_ssize_t width = 1, lo, mid, hi, a, b, i
    cdef Py_ssize_t* src = v
    cdef Py_ssize_t* dst = tmp
    cdef Py_ssize_t* sw
    # short runs by insertion first
    cdef Py_ssize_t RUN = 16, j, x
    lo = 0
    while lo < n:
        hi = lo + RUN if lo + RUN < n else n
        for i in range(lo + 1, hi):
            x = v[i]
            j = i
            while j > lo and key[x] < key[v[j - 1]]:
                v[j] = v[j - 1]
                j -= 1
            v[j] = x
        lo = hi
    width = RUN
    while width < n:
        lo = 0
        while lo < n:
            mid = lo + width if lo + width < n else n
            hi = lo + 2 * width if lo + 2 * width < n else n
            a = lo
            b = mid
            i = lo
            while a < mid and b < hi:
                if key[src[b]] < key[src[a]]:
                    dst[i] = src[b]
                    b += 1
                else:
                    dst[i] = src[a]
                    a += 1
                i += 1
            while a < mid:
                dst[i] = src[a]
                a += 1
                i += 1
            while b < hi:
                dst[i] = src[b]
                b += 1
                i += 1
            lo = hi
        sw = src
        src = dst
        dst = sw
        width *= 2
    if src != v:
        memcpy(v, src, sizeof(Py_ssize_t) * n)


cdef inline Py_ssize_t _right(const double* cum, Py_ssize_t n, double x) noexcept nogil:
    """searchsorted(cum, x, side="right")."""
    cdef Py_ssize_t lo = 0, hi = n, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if x < cum[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


cdef inline Py_ssize_t _left(const double* cum, Py_ssize_t n, double x) noexcept nogil:
    """searchsorted(cum, x, side="left")."""
    cdef Py_ssize_t lo = 0, hi = n, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if cum[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline uint64_t _mix(uint64_t h, uint64_t x) noexcept nogil:
    h ^= x + <uint64_t>0x9E3779B97F4A7C15 + (h << 6) + (h >> 2)
    h *= <uint64_t>0xBF58476D1CE4E5B9
    return h ^ (h >> 31)


cdef uint64_t _hash_words(uint64_t h, const uint64_t* p, Py_ssize_t n) noexcept nogil:
    """A hash of ``n`` words, seeded with ``h``: four independent lanes of multiply-xor (one
    chain of _mix a word was a multiply's latency a word: ~5 µs a view of 430 rows), mixed
    together at the end. Only ever a dict key: equal views are still compared word for word."""
    cdef uint64_t l0 = h, l1 = h ^ <uint64_t>0x9E3779B97F4A7C15
    cdef uint64_t l2 = h + <uint64_t>0x632BE59BD9B4E019, l3 = ~h
    cdef uint64_t M = <uint64_t>0xBF58476D1CE4E5B9
    cdef Py_ssize_t i = 0
    while i + 4 <= n:
        l0 = (l0 ^ p[i]) * M
        l1 = (l1 ^ p[i + 1]) * M
        l2 = (l2 ^ p[i + 2]) * M
        l3 = (l3 ^ p[i + 3]) * M
        l0 ^= l0 >> 29
        l1 ^= l1 >> 29
        l2 ^= l2 >> 29
        l3 ^= l3 >> 29
        i += 4
    while i < n:
        l0 = (l0 ^ p[i]) * M
        l0 ^= l0 >> 29
        i += 1
    h = _mix(<uint64_t>n, l0)
    h = _mix(h, l1)
    h = _mix(h, l2)
    return _mix(h, l3)


cdef class ViewShare:
    """What the builders of one server's clients share within a tick: the views already made
    (interned: an equal view is the same Snapshot, so the encoders' PacketCache codes its packet
    once) and the sizes of trial encodes already done against the same references. Safe to
    share between threads (a dict's single operations are atomic under the GIL, and every
    entry is a pure function of its key). ``hits`` counts views found, ``trial_hits`` trial
    sizes reused.

    Interning costs each view a hash and a dict entry (about 6 µs of a client's 60-65 in the
    large-world bench, where no two views are equal). When ``IDLE_TICKS`` (4) ticks in a row
    made at least ``IDLE_VIEWS`` (16) views and found none, the share pauses: views are interned
    one tick in ``PROBE_EVERY`` (16) only, until such a tick finds one (then on every tick
    again). Views and packets are the same either way; a pause only leaves work undone that
    would have been shared (``paused`` counts the ticks)."""
    cdef dict views
    cdef dict sizes
    cdef int seq
    cdef bint on
    cdef int idle                   # ticks in a row, interning, with views and none found
    cdef int off                    # ticks since the last one interned, while paused
    cdef Py_ssize_t made            # views looked up this tick
    cdef Py_ssize_t found           # and found
    cdef public Py_ssize_t hits
    cdef public Py_ssize_t trial_hits
    cdef public Py_ssize_t paused

    def __init__(self):
        self.views = {}
        self.sizes = {}
        self.seq = -1
        self.on = True
        self.idle = 0
        self.off = 0
        self.made = 0
        self.found = 0
        self.hits = 0
        self.trial_hits = 0
        self.paused = 0

    cdef bint tick(self, int seq):
        """Whether the views of packet ``seq`` are interned (every build asks; the first of a
        tick decides, from the ticks before, so all of a tick's builders agree)."""
        if seq != self.seq:
            if self.on and self.made:
                if self.made >= IDLE_VIEWS and self.found == 0:
                    self.idle += 1
                else:
                    self.idle = 0
            self.views = {}
            self.sizes = {}
            self.seq = seq
            self.made = 0
            self.found = 0
            if self.idle < IDLE_TICKS:
                self.on = True
            else:
                self.off += 1
                self.on = self.off >= PROBE_EVERY
                if self.on:
                    self.off = 0
                else:
                    self.paused += 1
        return self.on

    cdef object find(self, int seq, uint64_t h, Py_ssize_t n, Py_ssize_t S, const uint64_t* ip,
                     const uint64_t* mp):
        """The view made this tick with these ids and rows, or None."""
        cdef SnapshotData b
        if seq != self.seq:
            return None
        self.made += 1
        got = self.views.get((h, n))
        if got is None:
            return None
        b = <SnapshotData>got
        if b.n == n and b.ncol == S and (n == 0 or (
                memcmp(ip, b.idp, sizeof(uint64_t) * n) == 0
                and (S == 0 or memcmp(mp, b.rowp, sizeof(uint64_t) * n * S) == 0))):
            self.hits += 1
            self.found += 1
            return got
        return None

    cdef void add(self, int seq, uint64_t h, Py_ssize_t n, object view):
        if seq == self.seq:
            self.views.setdefault((h, n), view)

    def __repr__(self):
        return (f"<ViewShare: {self.hits} views shared, {self.trial_hits} trial sizes reused, "
                f"{self.paused} ticks paused>")


cdef struct scratch_t:
    Py_ssize_t* rows        # the target's rows in the world (n)
    Py_ssize_t* src         # the index in the given ids / weights of each (n)
    uint8_t* in_b           # in the baseline (n)
    uint8_t* has            # in the start view V0 (n)
    uint8_t* inflight       # in V0 with codes other than the baseline's (n)
    uint8_t* diff           # the world differs from V0 (n)
    uint8_t* take           # (n)
    uint8_t* forced         # (n)
    uint8_t* best           # (n)
    const uint64_t** v0     # V0's row of each (n)
    const uint64_t** brows  # the baseline's row of each, when in_b (n)
    Py_ssize_t* order       # (n)
    Py_ssize_t* tmp         # (n + ids given)
    Py_ssize_t* runs        # (n + ids given)
    double* cost            # (n)
    double* cum             # (n)
    uint8_t* isnew          # (n)
    uint8_t* isfree         # (n)


cdef struct kept_t:
    # A build's entities and their priorities, kept by the builder for the next build (two of
    # them, swapped by each build that ends: the next reads the last one while it writes the
    # other). C memory, grown as needed and reused from tick to tick: no array is made or freed
    # a build (a fresh NumPy array each was most of a build's time with the GIL).
    uint64_t* ids           # own ids (cap)
    Py_ssize_t* rows        # their rows in the builder's _wids (when has_rows)
    double* acc             # accumulated priorities
    int64_t* live           # the tick until which each is live (-1: not)
    const uint64_t* idp     # the ids to read: ``ids``, or the world's (a build of the whole world)
    Py_ssize_t n
    Py_ssize_t cap
    bint has_rows


cdef enum:
    ST_VIEW = 0             # a view (``kind``)
    ST_NONE = 1             # even the baseline restricted to the interest does not fit: None
    ST_WEIGHTS = 2          # weights refused
    ST_MEMORY = 3           # no memory
    ST_ERROR = 4            # an exception in a trial made with the GIL (the builder's _err)


cdef struct job_t:
    # One build between its three steps (ViewBuilder.begin, _compute, ViewBuilder.end): what
    # _compute reads and writes without the GIL. The arrays behind the pointers are held by
    # the builder's _jref until the build ends; the learned sizes are committed only by end.
    scratch_t sc
    void* block                 # sc's memory (_alloc)
    PyObject* b                 # the builder (borrowed: the caller holds it)
    PyObject* coder             # its trial DeltaEncoder
    int seq
    bint computed
    bint budgeted
    bint sharing
    Py_ssize_t nw, S, m, n
    const uint64_t* wid
    const uint64_t* wrow
    const uint64_t* ap          # the interest ids given (NULL: the whole world)
    uint64_t* tp                # the target's ids and rows (own arrays of m)
    Py_ssize_t* rp
    const uint64_t* tid_p       # the target's ids (tp, or the world's)
    const uint64_t* oid         # last tick's ids and their rows (the same world ids), or NULL
    const Py_ssize_t* orow
    Py_ssize_t no
    const double* wp            # the weights, or NULL
    double* accp
    int64_t* livep
    const uint64_t* oid2        # last tick's priorities
    const double* oacc
    const int64_t* olive
    Py_ssize_t no2
    Py_ssize_t bn, pn           # the baseline and the previous view
    const uint64_t* bid
    const uint64_t* brow_p
    const uint64_t* pid
    const uint64_t* prow_p
    double roomd
    Py_ssize_t md, check
    int bdist
    int64_t tick, span
    uint64_t* vids              # a trial view's ids and rows, the chosen one's in the end
    uint64_t* vmat              # (the arrays of _jref: end cuts them to its size)
    double bits_new, bits_chg, s0_est
    Py_ssize_t trials, ntry, best
    char* pk                    # the chosen view's packet (malloc), its bytes and bits
    Py_ssize_t pklen, pkcap, pkb
    int status
    Py_ssize_t bad              # ST_WEIGHTS: the first refused weight's row (as given) and value
    double badw
    Py_ssize_t cnt              # the chosen view's entities
    Py_ssize_t nflight, nsent, chosen
    double used


@cython.final
def start_view(prev, int seq, base, int history, int nb_seq):
    """``(prev or None, nb_seq)``: the view a build starts from, the previous one, unless the
    packets have had no baseline for ``history`` ticks (``nb_seq``: the first packet of that
    run, or -1; returned updated). Both builders' rule (ViewBuilderPy too): the start view is
    the previous one while an acknowledgement may still make a view in flight a baseline; past
    that (a round trip longer than the history: every acknowledgement names a view the encoder
    no longer holds) a packet is whole whatever it carries, and the view starts from nothing,
    its room given by priority, so that every entity of the interest gets its turn instead of
    the first views' entities for ever."""
    if base is not None:
        return prev, -1
    if nb_seq < 0:
        return prev, seq
    if ((seq - nb_seq) & 0xFFFF) >= history:
        return None, nb_seq
    return prev, nb_seq


cdef class ViewBuilder:
    """The views of one client: ``ViewBuilder(schema, encoder, share=None)``; see
    quantcodec._views (the module's docstring and the reference ``ViewBuilderPy``, whose
    behaviour this reproduces exactly). ``share``: a :class:`ViewShare` common to the builders
    of clients of one server (interned views, shared trial sizes)."""
    cdef object _schema
    cdef object _encoder
    cdef DeltaEncoder _coder
    cdef object _share_obj
    cdef bint _sharing              # this build interns its views (the share is on this tick)
    cdef kept_t _k[2]               # the last build's entities and priorities (_k[_ki]), and
    cdef int _ki                    # the next build's (ascending ids; kept_t)
    cdef object _wids               # the world's id array the kept rows are of (held: its
                                    # identity tells the next tick's world shares it)
    cdef object _plan
    cdef public int64_t _tick
    cdef public int64_t _rtt
    cdef object _prev
    cdef object _prev_seq
    cdef int _nb_seq                # the first packet of a run coded with no baseline, or -1
    cdef object _state
    cdef public double _bits_new
    cdef public double _bits_chg
    cdef public double _s0_est
    cdef public double live
    cdef public Py_ssize_t trials
    cdef public object last_bytes
    cdef public Py_ssize_t last_sent
    cdef public Py_ssize_t last_chosen
    cdef public Py_ssize_t last_inflight
    cdef Py_ssize_t _md, _check
    cdef job_t _j                   # the build begun (begin), if _pending
    cdef bint _pending
    cdef object _jref               # the arrays and objects its pointers are into
    cdef list _tv                   # interned: its trials' (view, packet, bits)
    cdef object _tida               # interned: the target's ids as an array (_tid)
    cdef object _err                # an exception raised in a trial with the GIL
    cdef object _pk                 # the packet of the last trial (bytes: bare, unsealed)
    cdef enc_in_t _ein              # this build's trial encodes' references (_refs_in)
    cdef object _ctx                # and the bytes its ctxmap points into (held)
    cdef Py_ssize_t _pkb            # and its bits

    def __init__(self, schema, encoder, share=None):
        plan = _plan_of(schema, "ViewBuilder")
        if share is not None and not isinstance(share, ViewShare):
            raise TypeError(f"ViewBuilder: share must be a ViewShare or None, got {type(share).__name__}")
        self._schema = schema
        self._encoder = encoder
        self._share_obj = share
        self._coder = DeltaEncoder(_layout_of(schema, plan))
        self._plan = plan
        self._wids = None
        self._ki = 0
        self._tick = 0
        self._rtt = 4
        self._prev = None
        self._prev_seq = None
        self._state = None
        self._nb_seq = -1
        bits = schema.bits
        self._bits_new = float(bits + 16)
        self._bits_chg = float(max(8, bits // 2))
        self._s0_est = 16.0
        self.live = 1.0
        self.trials = 0
        self.last_bytes = 0
        self.last_sent = 0
        self.last_chosen = 0
        self.last_inflight = 0

    def __dealloc__(self):
        cdef int i
        free(self._j.block)
        free(self._j.pk)
        for i in range(2):
            free(self._k[i].ids)
            free(self._k[i].rows)
            free(self._k[i].acc)
            free(self._k[i].live)

    @property
    def schema(self):
        return self._schema

    @property
    def encoder(self):
        return self._encoder

    @property
    def share(self):
        return self._share_obj

    def priorities(self):
        """(ids, accumulated priorities) after the last build (for tests and tools)."""
        cdef kept_t* K = &self._k[self._ki]
        ids = np.empty(K.n, dtype=_U64)
        acc = np.empty(K.n, dtype=_F64)
        if K.n:
            memcpy(_ptr(ids), K.idp, sizeof(uint64_t) * K.n)
            memcpy(_ptr(acc), K.acc, sizeof(double) * K.n)
        return ids, acc

    def reset(self):
        """Forget the priorities and the previous view (the encoder was reset too), and a build
        begun and not ended."""
        self.abandon()
        self._k[self._ki].n = 0
        self._k[self._ki].has_rows = False
        self._wids = None
        self._prev = self._prev_seq = self._state = None
        self._nb_seq = -1

    cdef object _previous(self, state):
        prev = self._prev
        if prev is not None and state is self._state and state.sent.get(self._prev_seq) is prev:
            return prev
        newest = state.state()[0]
        return None if newest is None else state.sent.get(newest)

    cdef object _ids_of(self, ids):
        """The interest ids as a C-contiguous uint64 array (the checks of _views._select)."""
        a = ids
        if type(a) is not np.ndarray:
            a = np.asarray(a)
        if a.dtype is not _U64 and a.dtype != _U64:
            if a.dtype.kind not in "ui":
                if a.size:
                    raise TypeError(f"views: interest ids must be integers, got dtype {a.dtype}")
            elif a.dtype.kind == "i" and a.size and a.min() < 0:
                raise ValueError("views: interest ids must be non-negative")
            a = a.astype(_U64)
        if a.ndim != 1:
            raise ValueError(f"views: interest ids must be one-dimensional, got shape {a.shape}")
        if not a.flags.c_contiguous:
            a = np.ascontiguousarray(a)
        return a

    cdef object _snap(self, int seq, object tid, const uint64_t* tid_p, Py_ssize_t n, Py_ssize_t S,
                      const uint8_t* has, const uint8_t* take, const uint64_t** v0,
                      const uint64_t* wrow, const Py_ssize_t* rows):
        """The view: V0 with the rows of ``take`` from the world (``make`` of the reference)."""
        cdef Py_ssize_t cnt
        cdef uint64_t* ip
        cdef uint64_t* mp
        cdef uint64_t h = 0
        cdef bint hashing = self._sharing
        ids, mat, cnt = _view_arrays(tid, n, S, has, take)
        mp = <uint64_t*>_ptr(mat)
        ip = <uint64_t*>_ptr(ids)
        with nogil:
            _gather(n, S, cnt, has, take, v0, wrow, rows, tid_p, ip, mp)
            if hashing:
                h = _hash_words(<uint64_t>cnt, ip, cnt)
                h = _hash_words(h, mp, cnt * S)
        if hashing:
            got = (<ViewShare>self._share_obj).find(seq, h, cnt, S, ip, mp)
            if got is not None:
                return got
        view = self._make(ids, mat)
        if hashing:
            (<ViewShare>self._share_obj).add(seq, h, cnt, view)
        return view

    cdef object _make(self, ids, mat):
        """Snapshot._make(schema, ids, mat), without its Python frame."""
        cdef SnapshotData snap = <SnapshotData>_new_snapshot(Snapshot)
        ids.setflags(False)
        mat.setflags(False)
        snap._schema = self._schema
        snap._bind(ids, mat, self._plan)
        return snap

    cdef int _refs_in(self, int seq, SnapshotData W, int bdist, object base, int pdist,
                      object pred) except -1:
        """The references of this build's trial encodes, checked once (DeltaEncoder's
        _encode_call checks them every call; a trial view has the world's columns): the
        enc_in_t its trials fill in and code without the GIL (_trial)."""
        cdef enc_in_t* a = &self._ein
        cdef SnapshotData b, p
        self._ctx = None
        memset(a, 0, sizeof(enc_in_t))
        self._coder._check(W, "current")
        a.seq = seq
        if bdist:
            if not 1 <= bdist <= 0x7FFF:
                raise ValueError(f"baseline distance {bdist} outside 1..32767")
            self._coder._check(base, "baseline")
            b = <SnapshotData>base
            a.bdist = bdist
            a.m = b.n
            a.bid = b.idp
            a.brow = b.rowp
            if pdist:
                if not 1 <= pdist <= 0x7FFF or bdist + pdist > 0x7FFF:
                    raise ValueError(f"extrapolation distance {pdist} outside 1..{0x7FFF - bdist}")
                self._coder._check(pred, "extrapolation")
                p = <SnapshotData>pred
                a.pdist = pdist
                a.p = p.n
                a.pid = p.idp
                a.prow = p.rowp
                # (_delta._diff_of: the baseline's remembered comparison with pred, if any)
                d = b._diff
                if d is not None and (<tuple>d)[0]() is pred and PyBytes_GET_SIZE((<tuple>d)[1]) == b.n:
                    self._ctx = (<tuple>d)[1]
                    a.ctxmap = <const uint8_t*>PyBytes_AS_STRING(self._ctx)
        # (no row keys: the trial view has none, the rows are compared; the same packet)
        return 0

    cdef object _tid(self, job_t* j):
        """The target's ids as an array of ``n`` (an interned view's ids when all of them are in
        it): the world's, or a copy of the build's (made once a build)."""
        if j.ap == NULL:
            return self._jref[2]
        if self._tida is None:
            t = np.empty(j.n, dtype=_U64)
            if j.n:
                memcpy(_ptr(t), j.tid_p, sizeof(uint64_t) * j.n)
            self._tida = t
        return self._tida

    cdef double _trial_shared(self, job_t* j, const uint8_t* take) except -2:
        """A trial while views are interned (the share on): the view's Snapshot (``_snap``)
        and its datagram bytes (``_size``), kept in ``_tv`` with its packet (the view chosen is
        one of them)."""
        jr = self._jref
        v = self._snap(j.seq, self._tid(j), j.tid_p, j.n, j.S, j.sc.has, take, j.sc.v0, j.wrow,
                       j.sc.rows)
        s = self._size(j.seq, v, jr[7], jr[8], jr[9], jr[10])
        self._tv.append((v, self._pk, self._pkb))
        return s
    cdef object _view(self, object v):
        """The chosen view's Snapshot (a trial's arrays, see _trial; bound without row keys,
        which would cost a pass and a release: its encodes compare rows)."""
        cdef SnapshotData snap
        if type(v) is not tuple:
            return v
        ids, mat = <tuple>v
        snap = <SnapshotData>_new_snapshot(Snapshot)
        ids.setflags(False)
        mat.setflags(False)
        snap._schema = self._schema
        snap._bind(ids, mat)
        return snap

    cdef double _size(self, int seq, object view, int bdist, object base, int pdist, object pred) except -2:
        cdef ViewShare sh
        cdef bytes packet
        if self._sharing:
            sh = <ViewShare>self._share_obj
            key = (seq, id(view), bdist, id(base), pdist, id(pred))
            got = sh.sizes.get(key)
            if got is not None and got[1] is view and got[2] is base and got[3] is pred:
                sh.trial_hits += 1
                self._pk = got[4]
                self._pkb = got[5]
                return <double>got[0]
        self.trials += 1
        packet = self._coder._encode_call(seq, <SnapshotData>view, bdist, <SnapshotData>base, pdist,
                                          <SnapshotData>pred)
        self._pk = packet
        self._pkb = self._coder.last_bits
        s = _dgram_bytes(PyBytes_GET_SIZE(packet), self._md, self._check)
        if self._sharing:
            sh.sizes[key] = (s, view, base, pred, packet, self._pkb)
        return s

    cdef void _offer(self, object state, int seq, object view, int bdist, object base, int pdist,
                     object pred, object packet, Py_ssize_t bits) except *:
        """Hand the chosen view's trial packet to the client's encoder (EncoderState.offer): its
        encode of this view against these references is these bytes, not coded again."""
        if packet is not None:
            state.offer(seq, view, bdist, base, pdist, pred, packet, bits, self._coder.plan)

    cdef object _keep(self, job_t* j, object seq, object view, object used, Py_ssize_t nsent,
                      Py_ssize_t nflight, object wids):
        """The build's entities and priorities become the kept ones (kept_t), and its view the
        previous one."""
        cdef kept_t* C = &self._k[1 - self._ki]
        C.n = j.n
        C.has_rows = j.ap != NULL
        C.idp = j.tid_p
        self._ki = 1 - self._ki
        self._wids = wids
        self._tick += 1
        self._prev = view
        self._prev_seq = seq
        self.last_bytes = used
        self.last_sent = nsent
        self.last_inflight = nflight
        return view

    def build(self, seq, world, ids, weights, room):
        """The view for packet ``seq`` (quantcodec._views): ``begin``, the view computed
        without the GIL, ``end``."""
        self.begin(seq, world, ids, weights, room)
        return self.end()

    def begin(self, seq, world, ids, weights, room):
        """The first of a build's three steps, with the GIL: the arguments checked, the arrays
        made, the stream state asked. Then :func:`compute` (of this builder and others, in one
        span without the GIL) and ``end`` (the view, or None). ``build`` is the three for one
        client; StreamServer.send runs them for runs of clients, so a thread hands the GIL
        over once a run, not a few times a client. A build begun and not ended is dropped by
        the next ``begin``, by ``abandon`` or by ``reset``, and changes nothing."""
        cdef job_t* j = &self._j
        cdef SnapshotData W
        cdef Py_ssize_t m, n_alloc
        if self._pending:
            self.abandon()
        if not isinstance(world, SnapshotData):
            raise TypeError(f"ViewBuilder.build: world must be a Snapshot, got {type(world).__name__}")
        W = <SnapshotData>world
        encoder = self._encoder
        state = encoder._state
        seq = int(seq) & 0xFFFF
        a = None if ids is None else self._ids_of(ids)
        m = 0 if a is None else a.shape[0]
        n_alloc = W.n if a is None else m
        memset(j, 0, sizeof(job_t))
        j.block = _alloc(&j.sc, n_alloc, m)
        if j.block == NULL:
            raise MemoryError()
        self._sharing = self._share_obj is not None and (<ViewShare>self._share_obj).tick(<int>seq)
        try:
            self._begin(j, <int>seq, W, a, weights, room, state, encoder, n_alloc)
        except BaseException:
            free(j.block)
            j.block = NULL
            self._jref = None
            raise
        self._pending = True

    cdef int _begin(self, job_t* j, int seq, SnapshotData W, object a, object weights, object room,
                    object state, object encoder, Py_ssize_t n_alloc) except -1:
        cdef SnapshotData P
        cdef int bdist = 0, pdist = 0
        cdef int64_t rtt, span
        cdef kept_t* K = &self._k[self._ki]         # the last build's
        cdef kept_t* C = &self._k[1 - self._ki]     # this one's
        base = pred = vids = vmat = None
        wids = W._ids
        j.b = <PyObject*>self
        j.coder = <PyObject*>self._coder
        j.seq = seq
        j.nw = W.n
        j.S = W.ncol
        j.wid = W.idp
        j.wrow = W.rowp
        j.best = -1
        if _grow(C, n_alloc) < 0:
            raise MemoryError()
        if a is None:
            j.n = j.nw
            j.tid_p = W.idp
        else:
            j.m = a.shape[0]
            j.n = j.m
            j.ap = <const uint64_t*>_ptr(a)
            # last tick's rows, when this world has the same id array (Snapshot shares it from
            # tick to tick while the entities stay): most of the interest was in it
            if K.has_rows and K.n and self._wids is wids:
                j.no = K.n
                j.oid = K.idp
                j.orow = K.rows
            j.tp = C.ids
            j.rp = C.rows
            j.tid_p = C.ids

        # weights (their shape here; their values on the target's entities, as the reference)
        wa = None
        if weights is not None:
            wa = np.asarray(weights, dtype=np.float64)
            if wa.ndim != 1:
                raise ValueError(f"views: weights must be one-dimensional, got shape {wa.shape}")
            expect = j.nw if a is None else j.m
            if wa.shape[0] != expect:
                raise ValueError(f"views: {wa.shape[0]} weights for {expect} entities")
            if not wa.flags.c_contiguous:
                wa = np.ascontiguousarray(wa)
            j.wp = <const double*>_ptr(wa)

        j.accp = C.acc
        j.livep = C.live
        j.no2 = K.n
        j.oid2 = K.idp
        j.oacc = K.acc
        j.olive = K.live
        prev = self._previous(state)
        j.budgeted = room is not None
        if j.budgeted:
            j.roomd = <double>room
            bdist, base, pdist, pred = state.refs(seq)
            prev, self._nb_seq = start_view(prev, seq, base, encoder.history, self._nb_seq)
            j.md = encoder.max_datagram
            j.check = _framing.check_len(getattr(encoder, "_check_p", 0))
            self._md = j.md
            self._check = j.check
            if prev is not None:
                P = <SnapshotData>prev
                j.pn = P.n
                j.pid = P.idp
                j.prow_p = P.rowp
            self._refs_in(seq, W, bdist, base, pdist, pred)
            # (the baseline as the trial encodes read it: _refs_in checked and set it)
            j.bn = self._ein.m
            j.bid = self._ein.bid
            j.brow_p = self._ein.brow
            j.bdist = bdist
            rtt = bdist if bdist else self._rtt
            span = <int64_t>nearbyint(self.live * rtt)
            j.span = span if span >= 1 else 1
            j.tick = self._tick
            j.bits_new = self._bits_new
            j.bits_chg = self._bits_chg
            j.s0_est = self._s0_est
            j.sharing = self._sharing
            self._tv = [] if j.sharing else None
            if not j.sharing:
                # the trial views' arrays, the chosen one's in the end (cut to its size)
                vids = np.empty(n_alloc, dtype=_U64)
                vmat = np.empty((n_alloc, j.S), dtype=_U64)
                j.vids = <uint64_t*>_ptr(vids)
                j.vmat = <uint64_t*>_ptr(vmat)
        # (the last world's ids are held until end: the kept ids of a build of the whole world)
        self._jref = (W, a, wids, self._wids, wa, prev, state, bdist, base, pdist, pred, vids, vmat)
        return 0

    def end(self):
        """The last of a build's three steps (``begin``), with the GIL: the view (computed
        first, without the GIL, if :func:`compute` was not run), or None when even the
        baseline restricted to the interest does not fit; the build's priorities and sizes
        kept."""
        cdef job_t* j = &self._j
        if not self._pending:
            raise RuntimeError("ViewBuilder.end: no build begun (ViewBuilder.begin)")
        try:
            if not j.computed:
                with nogil:
                    _compute(j)
            return self._end(j)
        finally:
            self.abandon()

    def abandon(self):
        """Drop a build begun and not ended (nothing of it is kept)."""
        cdef job_t* j = &self._j
        self._pending = False
        free(j.block)
        free(j.pk)
        j.block = NULL
        j.pk = NULL
        self._jref = None
        self._tv = None
        self._tida = None
        self._err = None

    cdef object _end(self, job_t* j):
        cdef Py_ssize_t n = j.n, S = j.S, i
        cdef uint64_t* tp
        jr = self._jref
        W, a, wids, state, bdist, base, pdist, pred = jr[0], jr[1], jr[2], jr[6], jr[7], jr[8], jr[9], jr[10]
        self.trials += j.trials
        if j.status == ST_WEIGHTS:
            raise ValueError(f"views: weights must be finite, non-negative and at most 1e100 (only "
                             f"their ratios count), got {j.badw!r} at row {j.bad}")
        if j.status == ST_MEMORY:
            raise MemoryError()
        if j.status == ST_ERROR:
            raise self._err
        self._state = state
        if not j.budgeted:              # no budget: the target itself, every change sent
            if a is None:
                view = W
            else:
                ids = np.empty(n, dtype=_U64)
                mat = np.empty((n, S), dtype=_U64)
                tp = <uint64_t*>_ptr(mat)
                if n:
                    memcpy(_ptr(ids), j.tid_p, sizeof(uint64_t) * n)
                if S:
                    for i in range(n):
                        memcpy(tp + i * S, j.wrow + j.sc.rows[i] * S, sizeof(uint64_t) * S)
                view = self._make(ids, mat)
            memset(j.accp, 0, sizeof(double) * n)
            return self._keep(j, j.seq, view, None, n, 0, wids)
        if bdist:
            self._rtt = bdist
        self._bits_new = j.bits_new
        self._bits_chg = j.bits_chg
        self._s0_est = j.s0_est
        if j.status == ST_NONE:
            return None
        if j.sharing:
            view, pk, pkb = self._tv[j.best]
        else:
            vids, vmat = jr[11], jr[12]
            if j.cnt != vmat.shape[0]:
                vids = vids[:j.cnt]
                vmat = vmat[:j.cnt]
            view = self._view((vids, vmat))
            pk = PyBytes_FromStringAndSize(j.pk, j.pklen)
            pkb = j.pkb
        self.last_chosen = j.chosen
        self._offer(state, j.seq, view, bdist, base, pdist, pred, pk, pkb)
        return self._keep(j, j.seq, view, int(j.used), j.nsent, j.nflight, wids)

def compute(list builders):
    """The second step of the builds begun on ``builders`` (``ViewBuilder.begin``), all in one
    span without the GIL (a trial while views are interned takes it for its lookups); each
    build's ``end`` makes its view."""
    cdef Py_ssize_t k, nb = len(builders)
    cdef job_t** js
    cdef ViewBuilder b
    if nb == 0:
        return
    js = <job_t**>malloc(sizeof(job_t*) * nb)
    if js == NULL:
        raise MemoryError()
    try:
        for k in range(nb):
            b = <ViewBuilder?>builders[k]
            if not b._pending:
                raise ValueError("compute: a ViewBuilder with no build begun (ViewBuilder.begin)")
            js[k] = &b._j
        for k in range(nb):
            if js[k].computed:
                raise ValueError("compute: a build computed twice")
        with nogil:
            for k in range(nb):
                _compute(js[k])
    finally:
        free(js)


cdef void _compute(job_t* j) noexcept nogil:
    """The second step of a build, without the GIL: steps 1-3 of quantcodec._views (the target,
    the priorities, the start view and the candidates), then, with a budget, the choice
    (``_choose``). The outcome in ``j.status``; ``ViewBuilder.end`` makes the view."""
    cdef scratch_t* sc = &j.sc
    cdef Py_ssize_t nw = j.nw, S = j.S, m = j.m, n, i, k, lo, hi, mid, jj
    cdef const uint64_t* wid = j.wid
    cdef const uint64_t* wrow = j.wrow
    cdef const uint64_t* ap = j.ap
    cdef const uint64_t* tid_p = j.tid_p
    cdef double nd
    cdef bint sorted_ = True
    cdef Py_ssize_t nnew = 0, nchg = 0, nflight = 0
    # (the job's fields in locals: the stores through the uint8_t arrays below may alias
    # anything, so a field read in a loop would be read again from memory every time)
    cdef Py_ssize_t no = j.no, no2 = j.no2, bn = j.bn, pn = j.pn
    cdef const uint64_t* oid = j.oid
    cdef const Py_ssize_t* orow = j.orow
    cdef const uint64_t* oid2 = j.oid2
    cdef const double* oacc = j.oacc
    cdef const int64_t* olive = j.olive
    cdef const double* wp = j.wp
    cdef double* accp = j.accp
    cdef int64_t* livep = j.livep
    cdef const uint64_t* bid = j.bid
    cdef const uint64_t* pid = j.pid
    cdef const uint64_t* brow_p = j.brow_p
    cdef const uint64_t* prow_p = j.prow_p
    cdef Py_ssize_t* rows = sc.rows
    cdef Py_ssize_t* src = sc.src
    cdef uint8_t* in_b = sc.in_b
    cdef uint8_t* has = sc.has
    cdef uint8_t* inflight = sc.inflight
    cdef uint8_t* diff = sc.diff
    cdef uint8_t* take = sc.take
    cdef const uint64_t** v0 = sc.v0
    cdef const uint64_t** brows = sc.brows
    cdef uint64_t* tp
    cdef Py_ssize_t* rp
    j.computed = True
    # 1. the target: the world restricted to the interest
    if ap == NULL:
        n = nw
        for i in range(n):
            rows[i] = i
            src[i] = i
    else:
        for i in range(1, m):
            if ap[i] <= ap[i - 1]:
                sorted_ = False
                break
        if sorted_:
            for i in range(m):
                sc.order[i] = i
        else:
            _sort_u64(ap, sc.order, sc.tmp, sc.runs, m)
        # found among the world's ids, left to right (a repeated id counts once)
        n = 0
        lo = 0
        k = 0
        for jj in range(m):
            i = sc.order[jj]
            if jj and ap[i] == ap[sc.order[jj - 1]]:
                continue
            while k < no and oid[k] < ap[i]:
                k += 1
            if k < no and oid[k] == ap[i]:
                lo = orow[k]
                # (asked for now, the row is in cache by step 3, which compares it)
                QC_PREFETCH(wrow + lo * S)
                rows[n] = lo
                src[n] = i
                n += 1
                continue
            hi = nw
            while lo < hi:
                mid = (lo + hi) >> 1
                if wid[mid] < ap[i]:
                    lo = mid + 1
                else:
                    hi = mid
            if lo < nw and wid[lo] == ap[i]:
                QC_PREFETCH(wrow + lo * S)
                rows[n] = lo
                src[n] = i
                n += 1
        tp = j.tp
        rp = j.rp
        for i in range(n):
            tp[i] = ap[src[i]]             # (the id given: no read of the world's)
            rp[i] = rows[i]
    j.n = n
    if wp != NULL:
        # every weight given, those of a repeated id or one not in the world too (so that a
        # weight is refused whatever the world holds this tick)
        for i in range(m if ap != NULL else nw):
            nd = wp[i]
            if not (nd >= 0 and nd <= MAX_WEIGHT):      # (NaN fails both)
                j.status = ST_WEIGHTS
                j.bad = i
                j.badw = nd
                return
    # 2. the priorities carried over (merge join on ascending ids), plus this tick's weights
    k = 0
    for i in range(n):
        while k < no2 and oid2[k] < tid_p[i]:
            k += 1
        if k < no2 and oid2[k] == tid_p[i]:
            accp[i] = oacc[k]
            livep[i] = olive[k]
        else:
            accp[i] = 0.0
            livep[i] = -1
        accp[i] += wp[src[i]] if wp != NULL else 1.0
    if not j.budgeted:
        return
    # 3. the start view V0 (row pointers), in flight, and the candidates
    jj = 0
    k = 0
    for i in range(n):
        if i + PF < n:
            QC_PREFETCH(wrow + rows[i + PF] * S)
        while jj < bn and bid[jj] < tid_p[i]:
            jj += 1
        while k < pn and pid[k] < tid_p[i]:
            k += 1
        in_b[i] = jj < bn and bid[jj] == tid_p[i]
        brows[i] = brow_p + jj * S if in_b[i] else NULL
        if k < pn and pid[k] == tid_p[i]:
            has[i] = 1
            v0[i] = prow_p + k * S
            inflight[i] = (not in_b[i]) or _differ(v0[i], brows[i], S)
        elif in_b[i]:
            has[i] = 1
            v0[i] = brows[i]
            inflight[i] = 0
        else:
            has[i] = 0
            v0[i] = NULL
            inflight[i] = 0
        diff[i] = (not has[i]) or _differ(wrow + rows[i] * S, v0[i], S)
        nflight += inflight[i]
        take[i] = 0
        # (the easy tick's estimate: what differs, new or changed and not in flight)
        if diff[i]:
            if not has[i]:
                nnew += 1
            elif not inflight[i]:
                nchg += 1
    j.nflight = nflight
    _choose(j, nnew, nchg)


cdef void _choose(job_t* j, Py_ssize_t nnew, Py_ssize_t nchg) noexcept nogil:
    """Steps 3-5 of quantcodec._views for a build with a budget: the easy tick (everything that
    differs, when it fits on the estimates: one trial), else the start view (shed when it does
    not fit), the candidates by priority and at most MAX_TRIALS trials; the view in
    ``sc.has`` / ``sc.v0`` / ``sc.take``, gathered into the build's arrays."""
    cdef scratch_t* sc = &j.sc
    cdef Py_ssize_t n = j.n, i, jj, k, ncand = 0, nforced = 0, nord, ntake, kk2, lo_k, hi_k
    cdef double roomd = j.roomd, s, s0, est, avail, extra, nd, best_s = 0.0
    cdef int64_t tick = j.tick, span = j.span
    cdef double* accp = j.accp
    cdef int64_t* livep = j.livep
    cdef bint have_best = False, any_t, have_hi
    cdef int attempt
    for i in range(n):
        ncand += sc.diff[i]
    if ncand:
        est = j.s0_est + (j.bits_new * <double>nnew + j.bits_chg * <double>nchg) / 8.0
        if est <= roomd * FILL:
            s = _try(j, sc.diff)
            if s < 0:
                return
            if s <= roomd:
                if _hold(j) < 0:
                    return
                memcpy(sc.take, sc.diff, n)
                for i in range(n):
                    if sc.diff[i] and not sc.inflight[i]:
                        livep[i] = tick + span
                    accp[i] = 0.0
                j.chosen = ncand
                j.nsent = ncand
                j.used = s
                _final(j)
                return
    s0 = _try(j, sc.take)
    if s0 < 0:
        return
    if s0 > roomd:
        s0 = _shed(j, s0)
        if s0 < 0:
            return
        j.nflight = 0
        for i in range(n):
            j.nflight += sc.inflight[i]
    if _hold(j) < 0:                    # view0's packet (the shed's last trial is view0's too)
        return
    j.s0_est = s0
    j.used = s0
    if ncand:
        # in flight and live: refreshed with the world's codes (their record is in the packet)
        nord = 0
        for i in range(n):
            sc.forced[i] = sc.diff[i] and sc.inflight[i] and sc.has[i] and livep[i] >= tick
            nforced += sc.forced[i]
            if sc.diff[i] and not sc.forced[i]:
                sc.order[nord] = i
                nord += 1
        # highest accumulated priority first (a stable sort of -acc)
        for i in range(n):
            sc.cost[i] = -accp[i]
        _sort_key(sc.cost, sc.order, sc.tmp, nord)
        for jj in range(nord):
            i = sc.order[jj]
            sc.isfree[jj] = sc.inflight[i] and sc.has[i]
            sc.isnew[jj] = not sc.has[i]
        _cumcost(sc, nord, j.bits_new, j.bits_chg)
        avail = (roomd - s0) * 8.0
        k = _right(sc.cum, nord, avail * FILL)
        if k == 0 and nforced == 0 and nord > 0:
            k = 1       # (nothing else this tick: the most urgent tried, the trial decides)
        lo_k = -1
        have_hi = False
        hi_k = 0
        for attempt in range(MAX_TRIALS):
            if k <= lo_k:
                break
            any_t = nforced > 0 or k > 0
            if not any_t:
                break
            nnew = 0
            nchg = 0
            memcpy(sc.take, sc.forced, n)
            for jj in range(k):
                sc.take[sc.order[jj]] = 1
                if sc.isnew[jj]:
                    nnew += 1
                elif not sc.isfree[jj]:
                    nchg += 1
            s = _try(j, sc.take)
            if s < 0:
                return
            _learn(j, s - s0, nnew, nchg)
            if s <= roomd:
                lo_k = k
                have_best = True
                memcpy(sc.best, sc.take, n)
                best_s = s
                if _hold(j) < 0:
                    return
                if k >= nord or roomd - s < j.bits_chg / 8.0:
                    break
                _cumcost(sc, nord, j.bits_new, j.bits_chg)
                kk2 = _right(sc.cum, nord, (sc.cum[k - 1] if k else 0.0) + (roomd - s) * 8.0 * FILL)
                if kk2 <= k or (have_hi and kk2 >= hi_k):
                    break
                k = kk2
            else:
                have_hi = True
                hi_k = k
                if k == 0:
                    break
                extra = s - s0
                if not (extra > 1.0):       # max(1.0, s - s0)
                    extra = 1.0
                nd = (<double>k * (roomd - s0)) / extra * FILL
                kk2 = <Py_ssize_t>nd if nd < <double>k else k
                if kk2 > k - 1:
                    kk2 = k - 1
                if kk2 < 0:
                    kk2 = 0
                k = kk2
        if have_best:
            memcpy(sc.take, sc.best, n)
            j.used = best_s
        else:
            memset(sc.take, 0, n)
    ntake = 0
    for i in range(n):
        if sc.take[i]:
            ntake += 1
            if not sc.inflight[i]:
                livep[i] = tick + span
        if (not sc.diff[i]) or sc.take[i]:
            accp[i] = 0.0
    j.chosen = ntake - (nforced if have_best else 0)
    j.nsent = ntake
    _final(j)


cdef double _shed(job_t* j, double s0) noexcept nogil:
    """Drop the lowest-priority in-flight entities (back to the baseline's codes, or out when
    the baseline lacks them) until the start view fits: estimate, then check. The start view's
    bytes, or -1.0 (``j.status``: ST_NONE when even the baseline does not fit, or the error)."""
    cdef scratch_t* sc = &j.sc
    cdef Py_ssize_t n = j.n, nf = 0, i, jj, k, attempt
    cdef double roomd = j.roomd, need, s = s0, d, x
    for i in range(n):
        if sc.inflight[i]:
            sc.order[nf] = i
            nf += 1
        sc.take[i] = 0
    _sort_key(j.accp, sc.order, sc.tmp, nf)           # lowest priority first
    for jj in range(nf):
        sc.cost[jj] = j.bits_chg if sc.in_b[sc.order[jj]] else j.bits_new
    _cumsum(sc.cost, sc.cum, nf)
    need = (s0 - roomd) * 8.0
    k = _left(sc.cum, nf, need / FILL) + 1
    for attempt in range(MAX_TRIALS + 1):
        if attempt == MAX_TRIALS or k >= nf:
            k = nf
        for jj in range(k):
            i = sc.order[jj]
            if sc.in_b[i]:
                sc.v0[i] = sc.brows[i]
            else:
                sc.has[i] = 0
            sc.inflight[i] = 0
        s = _try(j, sc.take)
        if s < 0:
            return -1.0
        if s <= roomd:
            return s
        if k == nf:
            break
        d = s0 - s
        if not (d > 1.0):
            d = 1.0
        x = <double>k * (s - roomd) / d + 1
        if not (x < <double>nf):
            x = <double>nf
        jj = <Py_ssize_t>x
        if jj < 1:
            jj = 1
        k = k + jj if k + jj < nf else nf
    j.status = ST_NONE
    return -1.0


cdef double _try(job_t* j, const uint8_t* take) noexcept nogil:
    """A trial: the start view (``sc.has``, ``sc.v0``) with the rows of ``take`` from the
    world, coded by the builder's DeltaEncoder against the build's references (``_ein``,
    checked once by ``_refs_in``) straight from the trial arrays; its datagram bytes, or -1.0
    (``j.status`` says why). Its packet stays in the coder until the next (``_hold``)."""
    cdef scratch_t* sc = &j.sc
    cdef Py_ssize_t n = j.n, S = j.S, cnt = 0, i
    cdef enc_in_t a
    cdef int rc
    j.ntry += 1
    if j.sharing:
        return _try_shared(j, take)
    for i in range(n):
        cnt += sc.has[i] | take[i]
    _gather(n, S, cnt, sc.has, take, sc.v0, j.wrow, sc.rows, j.tid_p, j.vids, j.vmat)
    if cnt == n and n:
        memcpy(j.vids, j.tid_p, sizeof(uint64_t) * n)   # (_gather leaves the ids when all are in)
    a = (<ViewBuilder>j.b)._ein
    a.cid = j.vids if cnt else NULL
    a.crow = j.vmat if cnt and S else NULL
    a.n = cnt
    a.same = 0
    a.nchg = 0
    rc = (<DeltaEncoder>j.coder)._encode(&a)
    if rc < 0:
        j.status = ST_MEMORY
        return -1.0
    j.trials += 1
    (<DeltaEncoder>j.coder).last_bits = (<DeltaEncoder>j.coder).w.nbits
    return _dgram_bytes(bw_nbytes(&(<DeltaEncoder>j.coder).w), j.md, j.check)


cdef double _try_shared(job_t* j, const uint8_t* take) noexcept with gil:
    """``_try`` while views are interned: ViewBuilder._trial_shared, with the GIL."""
    cdef ViewBuilder b = <ViewBuilder>j.b
    try:
        return b._trial_shared(j, take)
    except BaseException as e:
        b._err = e
        j.status = ST_ERROR
        return -1.0


cdef int _hold(job_t* j) noexcept nogil:
    """The last trial's view is the one chosen so far: its packet kept (interned: its index in
    the builder's ``_tv``)."""
    cdef Py_ssize_t nb
    cdef char* p
    j.best = j.ntry - 1
    if j.sharing:
        return 0
    nb = bw_nbytes(&(<DeltaEncoder>j.coder).w)
    if nb > j.pkcap:
        p = <char*>realloc(j.pk, nb + 64)
        if p == NULL:
            j.status = ST_MEMORY
            return -1
        j.pk = p
        j.pkcap = nb + 64
    memcpy(j.pk, (<DeltaEncoder>j.coder).w.buf, nb)
    j.pklen = nb
    j.pkb = (<DeltaEncoder>j.coder).w.nbits
    return 0


cdef void _final(job_t* j) noexcept nogil:
    """The chosen view (``sc.has``, ``sc.v0``, ``sc.take``) in the build's arrays: there
    already when it was the last trial, else gathered again (the interned one is a Snapshot
    already); ``j.status`` ST_VIEW."""
    cdef scratch_t* sc = &j.sc
    cdef Py_ssize_t i, cnt = 0
    j.status = ST_VIEW
    for i in range(j.n):
        cnt += sc.has[i] | sc.take[i]
    j.cnt = cnt
    if not j.sharing and j.best != j.ntry - 1:
        _gather(j.n, j.S, cnt, sc.has, sc.take, sc.v0, j.wrow, sc.rows, j.tid_p, j.vids, j.vmat)
        if cnt == j.n and cnt:
            memcpy(j.vids, j.tid_p, sizeof(uint64_t) * cnt)


cdef void _learn(job_t* j, double extra_bytes, Py_ssize_t n_new, Py_ssize_t n_chg) noexcept nogil:
    cdef double bits = extra_bytes * 8.0, per
    if n_chg > 0:
        per = (bits - n_new * j.bits_new) / n_chg
        if per > 1.0:
            j.bits_chg = 0.5 * j.bits_chg + 0.5 * per
    elif n_new > 0:
        per = bits / n_new
        if per > 1.0:
            j.bits_new = 0.5 * j.bits_new + 0.5 * per


cdef void _cumsum(const double* cost, double* cum, Py_ssize_t n) noexcept nogil:
    cdef double t = 0.0
    cdef Py_ssize_t i
    for i in range(n):
        t += cost[i]
        cum[i] = t


cdef void _cumcost(scratch_t* sc, Py_ssize_t nord, double bits_new, double bits_chg) noexcept nogil:
    cdef Py_ssize_t j
    cdef double t = 0.0
    for j in range(nord):
        t += 0.0 if sc.isfree[j] else (bits_new if sc.isnew[j] else bits_chg)
        sc.cum[j] = t


cdef inline bint _regrow(void** p, size_t nbytes) noexcept:
    """``p[0]`` reallocated to ``nbytes``; False without memory (``p[0]`` as it was)."""
    cdef void* q = realloc(p[0], nbytes)
    if q == NULL:
        return False
    p[0] = q
    return True


cdef int _grow(kept_t* k, Py_ssize_t n) noexcept:
    """Room for ``n`` entities in ``k``; -1 without memory (an array already grown stays)."""
    cdef Py_ssize_t cap
    if n <= k.cap:
        return 0
    cap = n + (n >> 3) + 16
    if not (_regrow(<void**>&k.ids, sizeof(uint64_t) * cap) and _regrow(<void**>&k.rows, sizeof(Py_ssize_t) * cap)
            and _regrow(<void**>&k.acc, sizeof(double) * cap) and _regrow(<void**>&k.live, sizeof(int64_t) * cap)):
        return -1
    k.cap = cap
    return 0


cdef void* _alloc(scratch_t* sc, Py_ssize_t n, Py_ssize_t m) noexcept:
    """One block for the scratch arrays of a build of ``n`` entities (``m`` ids given)."""
    cdef Py_ssize_t N = (n if n > m else m) + 1
    cdef size_t words = 9 * N               # 7 pointer-sized arrays, 2 of doubles
    cdef char* p = <char*>malloc(sizeof(Py_ssize_t) * words + 9 * N + 64)
    if p == NULL:
        return NULL
    cdef char* q = p
    sc.rows = <Py_ssize_t*>q; q += sizeof(Py_ssize_t) * N
    sc.src = <Py_ssize_t*>q; q += sizeof(Py_ssize_t) * N
    sc.order = <Py_ssize_t*>q; q += sizeof(Py_ssize_t) * N
    sc.tmp = <Py_ssize_t*>q; q += sizeof(Py_ssize_t) * N
    sc.runs = <Py_ssize_t*>q; q += sizeof(Py_ssize_t) * N
    sc.v0 = <const uint64_t**>q; q += sizeof(Py_ssize_t) * N
    sc.brows = <const uint64_t**>q; q += sizeof(Py_ssize_t) * N
    sc.cost = <double*>q; q += sizeof(double) * N
    sc.cum = <double*>q; q += sizeof(double) * N
    sc.in_b = <uint8_t*>q; q += N
    sc.has = <uint8_t*>q; q += N
    sc.inflight = <uint8_t*>q; q += N
    sc.diff = <uint8_t*>q; q += N
    sc.take = <uint8_t*>q; q += N
    sc.forced = <uint8_t*>q; q += N
    sc.best = <uint8_t*>q; q += N
    sc.isnew = <uint8_t*>q; q += N
    sc.isfree = <uint8_t*>q; q += N
    return p


cdef object _new_snapshot(type cls):
    return cls.__new__(cls)


cdef inline void* _ptr(object array) except? NULL:
    """The data pointer of a C-contiguous NumPy array, through the buffer protocol (cheaper than
    a typed memoryview); the caller keeps the array, so the pointer lives as long."""
    cdef Py_buffer vb
    cdef void* p
    PyObject_GetBuffer(array, &vb, PyBUF_C_CONTIGUOUS)
    p = vb.buf
    PyBuffer_Release(&vb)
    return p

