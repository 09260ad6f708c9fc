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

The GIL, a few times a build (so a pool of threads building views scales): what needs Python
is done with it, before and after the loops (the arguments checked, the arrays made, the stream
state's ``refs`` and previous view, ``offer``), and steps 1-3 (the target, the priorities, the
start view and the candidates) run in one span without it; then the candidates' sort in one,
and each trial encode in one: the trial view's arrays are made first, then filled and coded
without the GIL straight from them (``_trial``: the DeltaEncoder's ``_encode`` over references
checked once a build), and only the view chosen becomes a Snapshot (bound without row keys,
whose packing would cost a pass and a release: its encodes compare rows; the same packets).
Loops of a microsecond or less between them keep the GIL. While views are interned (a
ViewShare, on), a trial view is a Snapshot first (its hash is looked up) and coded through
``_encode_call``, as before.

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
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memcmp, memset
from libc.math cimport nearbyint, isfinite, INFINITY
from cpython.bytes cimport PyBytes_GET_SIZE, PyBytes_FromStringAndSize, PyBytes_AS_STRING

import numpy as np

from quantcodec._delta cimport DeltaEncoder, SnapshotData, enc_in_t
from quantcodec._bits cimport bw_nbytes
from quantcodec._history cimport W_FRAGMENT_HEADER, W_MAX_FRAGMENTS
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_C_CONTIGUOUS

from . import _framing
from .snapshot import Snapshot, _layout_of, _plan_of

__all__ = ["ViewBuilder", "ViewShare"]

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

_U64 = np.dtype(np.uint64)
_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)
_NO_IDS = np.zeros(0, dtype=np.uint64)
_NO_IDS.setflags(write=False)


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


@cython.final
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
    cdef object _acc_ids            # uint64 (ascending): the entities of the priorities below
    cdef object _acc                # float64
    cdef object _live               # int64: the tick until which each is live (-1: not)
    cdef object _rows               # intp: the world row of each of _acc_ids in _wids
    cdef object _wids               # the world's id array those rows are of (held: its identity
                                    # tells the next tick's world shares it)
    cdef object _plan
    cdef public int64_t _tick
    cdef public int64_t _rtt
    cdef object _prev
    cdef object _prev_seq
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
        self._rows = None
        self._wids = None
        self._acc_ids = _NO_IDS
        self._acc = np.zeros(0, dtype=np.float64)
        self._live = np.zeros(0, dtype=np.int64)
        self._tick = 0
        self._rtt = 4
        self._prev = None
        self._prev_seq = None
        self._state = None
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
        return self._acc_ids, self._acc.copy()

    def reset(self):
        """Forget the priorities and the previous view (the encoder was reset too)."""
        self._acc_ids = _NO_IDS
        self._acc = np.zeros(0, dtype=np.float64)
        self._live = np.zeros(0, dtype=np.int64)
        self._rows = self._wids = None
        self._prev = self._prev_seq = self._state = None

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

    cdef object _trial(self, int seq, object tid, const uint64_t* tid_p, Py_ssize_t n, Py_ssize_t S,
                       const uint8_t* has, const uint8_t* take, const uint64_t** v0,
                       const uint64_t* wrow, const Py_ssize_t* rows, int bdist, object base,
                       int pdist, object pred, double* s_out):
        """A trial view (V0 with the rows of ``take`` from the world) and its datagram bytes
        (``s_out``), its packet in ``_pk``. Interning (the share on): the view's Snapshot
        (``_snap``) and ``_size``. Else the view's arrays are made, then filled and coded in
        one span without the GIL, straight from the arrays (enc_in_t of ``_refs_in``); the
        Snapshot is made only for the view chosen (``_view``): returns (ids, matrix)."""
        cdef Py_ssize_t cnt
        cdef uint64_t* ip
        cdef uint64_t* mp
        cdef enc_in_t a
        cdef int rc
        cdef DeltaEncoder coder = self._coder
        if self._sharing:
            v = self._snap(seq, tid, tid_p, n, S, has, take, v0, wrow, rows)
            s_out[0] = self._size(seq, v, bdist, base, pdist, pred)
            return v
        ids, mat, cnt = _view_arrays(tid, n, S, has, take)
        mp = <uint64_t*>_ptr(mat)
        ip = <uint64_t*>_ptr(ids)
        a = self._ein
        a.cid = ip if cnt else NULL
        a.crow = mp if cnt and S else NULL
        a.n = cnt
        a.same = 0
        a.nchg = 0
        with nogil:
            _gather(n, S, cnt, has, take, v0, wrow, rows, tid_p, ip, mp)
            rc = coder._encode(&a)
        if rc < 0:
            raise MemoryError()
        self.trials += 1
        coder.last_bits = coder.w.nbits
        packet = PyBytes_FromStringAndSize(<char*>coder.w.buf, bw_nbytes(&coder.w))
        self._pk = packet
        self._pkb = coder.w.nbits
        s_out[0] = _dgram_bytes(PyBytes_GET_SIZE(packet), self._md, self._check)
        return (ids, mat)

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

    cdef void _learn(self, double extra_bytes, Py_ssize_t n_new, Py_ssize_t n_chg) noexcept:
        cdef double bits = extra_bytes * 8.0, per
        if n_chg > 0:
            per = (bits - n_new * self._bits_new) / n_chg
            if per > 1.0:
                self._bits_chg = 0.5 * self._bits_chg + 0.5 * per
        elif n_new > 0:
            per = bits / n_new
            if per > 1.0:
                self._bits_new = 0.5 * self._bits_new + 0.5 * per

    cdef object _keep(self, object seq, object view, object tid, object acc, object live, object used,
                      Py_ssize_t nsent, Py_ssize_t nflight, object rows, object wids):
        self._acc_ids = tid
        self._rows = rows
        self._wids = wids
        self._acc = acc
        self._live = live
        self._tick += 1
        self._prev = view
        self._prev_seq = seq
        self.last_bytes = used
        self.last_sent = nsent
        self.last_inflight = nflight
        return view

    def build(self, seq, world, ids, weights, room):
        """The view for packet ``seq`` (quantcodec._views)."""
        cdef SnapshotData W
        cdef scratch_t sc
        cdef void* block = NULL
        if not isinstance(world, SnapshotData):
            raise TypeError(f"ViewBuilder.build: world must be a Snapshot, got {type(world).__name__}")
        W = <SnapshotData>world
        encoder = self._encoder
        state = encoder._state
        seq = int(seq) & 0xFFFF
        a = None if ids is None else self._ids_of(ids)
        m = 0 if a is None else a.shape[0]
        n_alloc = W.n if a is None else m
        block = _alloc(&sc, n_alloc, m)
        if block == NULL:
            raise MemoryError()
        self._sharing = self._share_obj is not None and (<ViewShare>self._share_obj).tick(<int>seq)
        try:
            return self._build(<int>seq, W, a, weights, room, state, encoder, &sc)
        finally:
            free(block)

    cdef object _build(self, int seq, SnapshotData W, object a, object weights, object room, object state,
                       object encoder, scratch_t* sc):
        cdef Py_ssize_t nw = W.n, S = W.ncol, n, m = 0, i, j, k, lo, hi, mid
        cdef const uint64_t* wid = W.idp
        cdef const uint64_t* wrow = W.rowp
        cdef const uint64_t* ap = NULL
        cdef const uint64_t* tid_p
        cdef uint64_t* tp
        cdef bint sorted_ = True, allhit = True
        cdef double* accp
        cdef int64_t* livep
        cdef const double* wp = NULL
        cdef const uint64_t* oid
        cdef const double* oacc
        cdef const int64_t* olive
        cdef Py_ssize_t no
        cdef SnapshotData B = None, P = None
        cdef Py_ssize_t bn = 0, pn = 0
        cdef const uint64_t* bid = NULL
        cdef const uint64_t* pid = NULL
        cdef const uint64_t* brow_p = NULL
        cdef const uint64_t* prow_p = NULL
        cdef double roomd = 0.0, s, s0, est, avail, extra, nd
        cdef Py_ssize_t ncand, nnew, nchg, nflight, nforced, nord, ntake, kk2, lo_k, hi_k
        cdef bint have_best, any_t, have_hi
        cdef int64_t tick, span
        cdef int bdist = 0, pdist = 0, attempt
        cdef double best_s = 0.0
        cdef Py_ssize_t pkb = 0, best_pkb = 0
        best_pk = None
        cdef bint wt_ok = True
        cdef const Py_ssize_t* orow
        cdef Py_ssize_t* rp
        cdef const uint64_t* oid2
        cdef Py_ssize_t no2
        cdef bint budgeted
        tp = NULL
        rp = NULL

        # Python-level first (the GIL held): the arguments checked, the arrays made (as long as
        # the interest: sliced after when ids are not in the world), the stream state asked;
        # then steps 1-3 in one span without the GIL.
        wids = W._ids
        if a is None:
            n = nw
            tid = wids
            rows_a = None
            no = 0
            oid = NULL
            orow = NULL
        else:
            m = a.shape[0]
            ap = <const uint64_t*>_ptr(a)
            # last tick's rows, when this world has the same id array (Snapshot shares it from
            # tick to tick while the entities stay): most of the interest was in it
            if self._rows is not None and self._wids is wids:
                old = self._acc_ids
                no = old.shape[0]
                oid = <const uint64_t*>_ptr(old) if no else NULL
                orow = <const Py_ssize_t*>_ptr(self._rows) if no else NULL
            else:
                no = 0
                oid = NULL
                orow = NULL
            n = m
            tid = np.empty(m, dtype=_U64)
            rows_a = np.empty(m, dtype=np.intp)
            tp = <uint64_t*>_ptr(tid)
            rp = <Py_ssize_t*>_ptr(rows_a)
        tid_p = <const uint64_t*>_ptr(tid)

        # weights (their shape here; their values on the target's entities, as the reference)
        if weights is not None:
            wa = np.asarray(weights, dtype=np.float64)
            if wa.ndim != 1:
                raise ValueError(f"views: weights must be one-dimensional, got shape {wa.shape}")
            expect = nw if a is None else m
            if wa.shape[0] != expect:
                raise ValueError(f"views: {wa.shape[0]} weights for {expect} entities")
            if not wa.flags.c_contiguous:
                wa = np.ascontiguousarray(wa)
            wp = <const double*>_ptr(wa)

        acc = np.empty(n, dtype=_F64)
        live = np.empty(n, dtype=_I64)
        accp = <double*>_ptr(acc)
        livep = <int64_t*>_ptr(live)
        old = self._acc_ids
        no2 = old.shape[0]
        oid2 = <const uint64_t*>_ptr(old) if no2 else NULL
        oacc = <const double*>_ptr(self._acc) if no2 else NULL
        olive = <const int64_t*>_ptr(self._live) if no2 else NULL
        prev = self._previous(state)
        budgeted = room is not None
        if budgeted:
            roomd = <double>room
            bdist, base, pdist, pred = state.refs(seq)
            self._md = encoder.max_datagram
            self._check = _framing.check_len(getattr(encoder, "_check_p", 0))
            if base is not None:
                B = <SnapshotData>base
                bn = B.n
                bid = B.idp
                brow_p = B.rowp
            if prev is not None:
                P = <SnapshotData>prev
                pn = P.n
                pid = P.idp
                prow_p = P.rowp
        nflight = 0
        ncand = 0
        nnew = 0
        nchg = 0

        with nogil:
            # 1. the target: the world restricted to the interest
            if a is None:
                for i in range(n):
                    sc.rows[i] = i
                    sc.src[i] = i
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
                for j in range(m):
                    i = sc.order[j]
                    if j and ap[i] == ap[sc.order[j - 1]]:
                        continue
                    while k < no and oid[k] < ap[i]:
                        k += 1
                    if k < no and oid[k] == ap[i]:
                        lo = orow[k]
                        # (asked for now, the row is in cache by step 3, which compares it)
                        QC_PREFETCH(wrow + lo * S)
                        sc.rows[n] = lo
                        sc.src[n] = i
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
                        sc.rows[n] = lo
                        sc.src[n] = i
                        n += 1
                for i in range(n):
                    tp[i] = ap[sc.src[i]]           # (the id given: no read of the world's)
                    rp[i] = sc.rows[i]
            if wp != NULL:
                for i in range(n):
                    nd = wp[sc.src[i]]
                    if not (isfinite(nd) and nd >= 0):
                        wt_ok = False
                        break
            if wt_ok:
                # 2. the priorities carried over (merge join on ascending ids), plus this
                # tick's weights
                j = 0
                for i in range(n):
                    while j < no2 and oid2[j] < tid_p[i]:
                        j += 1
                    if j < no2 and oid2[j] == tid_p[i]:
                        accp[i] = oacc[j]
                        livep[i] = olive[j]
                    else:
                        accp[i] = 0.0
                        livep[i] = -1
                    accp[i] += wp[sc.src[i]] if wp != NULL else 1.0
            if wt_ok and budgeted:
                # 3. the start view V0 (row pointers), in flight, and the candidates
                j = 0
                k = 0
                for i in range(n):
                    if i + PF < n:
                        QC_PREFETCH(wrow + sc.rows[i + PF] * S)
                    while j < bn and bid[j] < tid_p[i]:
                        j += 1
                    while k < pn and pid[k] < tid_p[i]:
                        k += 1
                    sc.in_b[i] = j < bn and bid[j] == tid_p[i]
                    sc.brows[i] = brow_p + j * S if sc.in_b[i] else NULL
                    if k < pn and pid[k] == tid_p[i]:
                        sc.has[i] = 1
                        sc.v0[i] = prow_p + k * S
                        sc.inflight[i] = (not sc.in_b[i]) or _differ(sc.v0[i], sc.brows[i], S)
                    elif sc.in_b[i]:
                        sc.has[i] = 1
                        sc.v0[i] = sc.brows[i]
                        sc.inflight[i] = 0
                    else:
                        sc.has[i] = 0
                        sc.v0[i] = NULL
                        sc.inflight[i] = 0
                    sc.diff[i] = (not sc.has[i]) or _differ(wrow + sc.rows[i] * S, sc.v0[i], S)
                    nflight += sc.inflight[i]
                    ncand += sc.diff[i]
                    sc.take[i] = 0
                    # (the easy tick's estimate: what differs, new or changed and not in flight)
                    if sc.diff[i]:
                        if not sc.has[i]:
                            nnew += 1
                        elif not sc.inflight[i]:
                            nchg += 1
        if not wt_ok:
            raise ValueError("views: weights must be finite and non-negative")
        if a is not None and n != m:
            tid = tid[:n]
            rows_a = rows_a[:n]
            acc = acc[:n]
            live = live[:n]
        self._state = state

        if not budgeted:                # no budget: the target itself, every change sent
            if a is None:
                view = W
            else:
                mat = np.empty((n, S), dtype=_U64)
                tp = <uint64_t*>_ptr(mat)
                with nogil:
                    for i in range(n):
                        if S:
                            memcpy(tp + i * S, wrow + sc.rows[i] * S, sizeof(uint64_t) * S)
                view = self._make(tid, mat)
            acc[:] = 0.0
            return self._keep(seq, view, tid, acc, live, None, n, 0, rows_a, wids)

        self._refs_in(seq, W, bdist, base, pdist, pred)
        tick = self._tick
        if bdist:
            self._rtt = bdist
        span = <int64_t>nearbyint(self.live * self._rtt)
        if span < 1:
            span = 1
        if ncand:
            # the easy tick first: when everything that differs fits on the estimates, one trial
            # (nnew, nchg: counted in step 3)
            est = self._s0_est + (self._bits_new * <double>nnew + self._bits_chg * <double>nchg) / 8.0
            if est <= roomd * FILL:
                v = self._trial(seq, tid, tid_p, n, S, sc.has, sc.diff, sc.v0, wrow, sc.rows,
                                bdist, base, pdist, pred, &s)
                if s <= roomd:
                    v = self._view(v)
                    self._offer(state, seq, v, bdist, base, pdist, pred, self._pk, self._pkb)
                    # (short loops: with the GIL, a release would cost more than they do)
                    for i in range(n):
                        if sc.diff[i] and not sc.inflight[i]:
                            livep[i] = tick + span
                        accp[i] = 0.0
                    self.last_chosen = ncand
                    return self._keep(seq, v, tid, acc, live, int(s), ncand, nflight, rows_a, wids)
        view0 = self._trial(seq, tid, tid_p, n, S, sc.has, sc.take, sc.v0, wrow, sc.rows,
                            bdist, base, pdist, pred, &s0)
        if s0 > roomd:
            view0, s0 = self._shed(seq, sc, n, S, tid, tid_p, wrow, accp, roomd, s0, bdist, base, pdist, pred)
            if view0 is None:
                return None
            nflight = 0
            for i in range(n):
                nflight += sc.inflight[i]
        pk = self._pk                   # view0's packet (the shed's last trial is view0's too)
        pkb = self._pkb
        self._s0_est = s0
        view = view0
        used = s0
        have_best = False
        nforced = 0
        if ncand:
            # in flight and live: refreshed with the world's codes (their record is in the packet)
            nord = 0
            with nogil:
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
                for j in range(nord):
                    i = sc.order[j]
                    sc.isfree[j] = sc.inflight[i] and sc.has[i]
                    sc.isnew[j] = not sc.has[i]
                _cumcost(sc, nord, self._bits_new, self._bits_chg)
            avail = (roomd - s0) * 8.0
            k = _right(sc.cum, nord, avail * FILL)
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
                for j in range(k):
                    sc.take[sc.order[j]] = 1
                    if sc.isnew[j]:
                        nnew += 1
                    elif not sc.isfree[j]:
                        nchg += 1
                v = self._trial(seq, tid, tid_p, n, S, sc.has, sc.take, sc.v0, wrow, sc.rows,
                                bdist, base, pdist, pred, &s)
                self._learn(s - s0, nnew, nchg)
                if s <= roomd:
                    lo_k = k
                    have_best = True
                    memcpy(sc.best, sc.take, n)
                    view = v
                    best_s = s
                    best_pk = self._pk
                    best_pkb = self._pkb
                    if k >= nord or roomd - s < self._bits_chg / 8.0:
                        break
                    _cumcost(sc, nord, self._bits_new, self._bits_chg)
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
                used = best_s
                pk = best_pk
                pkb = best_pkb
            else:
                for i in range(n):
                    sc.take[i] = 0
        ntake = 0
        for i in range(n):
            if sc.take[i]:
                ntake += 1
                if not sc.inflight[i]:
                    livep[i] = tick + span
            if (not sc.diff[i]) or sc.take[i]:
                accp[i] = 0.0
        self.last_chosen = ntake - (nforced if have_best else 0)
        view = self._view(view)
        self._offer(state, seq, view, bdist, base, pdist, pred, pk, pkb)
        return self._keep(seq, view, tid, acc, live, int(used), ntake, nflight, rows_a, wids)

    cdef tuple _shed(self, int seq, scratch_t* sc, Py_ssize_t n, Py_ssize_t S, object tid,
                     const uint64_t* tid_p, const uint64_t* wrow, const double* accp, double roomd,
                     double s0, int bdist, object base, int pdist, object pred):
        """Drop the lowest-priority in-flight entities (back to the baseline's codes, or out when
        the baseline lacks them) until the start view fits: estimate, then check."""
        cdef Py_ssize_t nf = 0, i, j, k, attempt
        cdef double need, s = s0, d, x
        for i in range(n):
            if sc.inflight[i]:
                sc.order[nf] = i
                nf += 1
            sc.take[i] = 0
        _sort_key(accp, sc.order, sc.tmp, nf)             # lowest priority first
        for j in range(nf):
            sc.cost[j] = self._bits_chg if sc.in_b[sc.order[j]] else self._bits_new
        _cumsum(sc.cost, sc.cum, nf)
        need = (s0 - roomd) * 8.0
        k = _left(sc.cum, nf, need / FILL) + 1
        for attempt in range(MAX_TRIALS + 1):
            if attempt == MAX_TRIALS or k >= nf:
                k = nf
            for j in range(k):
                i = sc.order[j]
                if sc.in_b[i]:
                    sc.v0[i] = sc.brows[i]
                else:
                    sc.has[i] = 0
                sc.inflight[i] = 0
            view = self._trial(seq, tid, tid_p, n, S, sc.has, sc.take, sc.v0, wrow, sc.rows,
                               bdist, base, pdist, pred, &s)
            if s <= roomd:
                return view, s
            if k == nf:
                return None, s
            d = s0 - s
            if not (d > 1.0):
                d = 1.0
            x = <double>k * (s - roomd) / d + 1
            if not (x < <double>nf):
                x = <double>nf
            j = <Py_ssize_t>x
            if j < 1:
                j = 1
            k = k + j if k + j < nf else nf
        return None, s0


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

