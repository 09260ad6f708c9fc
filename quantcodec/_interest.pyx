"""The radius query of quantcodec.interest.GridIndex for every client at once, compiled: one pass
without the GIL over all clients' candidate rows, writing one flat result (CSR: ``offsets``, one
id array, each client's ids the slice ``ids[offsets[i]:offsets[i + 1]]``). No Python object is
made per client: the GIL is taken once before (four arrays of the result's upper bound) and once
after, so a thread pool running the query for two halves of the clients, or a server thread
building views beside it, does not wait on it (a query a client at a time, with an array made per
client, handed the GIL over twice per client: bench/README.md, "The tick, step by step").
"""

from libc.stdint cimport int64_t, uint64_t

from libc.string cimport memcpy
from libc.stdlib cimport realloc, free
from libc.math cimport sqrt, floor, isfinite
from cpython.buffer cimport (PyObject_GetBuffer, PyBuffer_Release, PyBUF_C_CONTIGUOUS,
                             PyBUF_RECORDS_RO)
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_Resize, PyByteArray_GET_SIZE

import numpy as np

__all__ = ["grid_cells", "grid_sort", "grid_within_csr", "Linger"]

# The result's upper bound (every candidate row of every client) is written into scratch memory
# kept from call to call, and only the rows found are copied into the arrays handed out. The
# bound is 4-5 times the result (16 MB for 1,000 clients of 150 m in the issue's world): as a
# NumPy array of its own each call, over NumPy's 4 MB threshold, it was asked for as transparent
# huge pages (madvise), and whenever glibc had handed the memory back, faulting them in stalled
# on the kernel's compaction: 100-500 faults and 5-20 ms more on one call in three in the large
# world's bench (getrusage around the call). Up to _KEEP buffers are kept (bytearrays: a list's
# append and pop are safe from several threads, with or without the GIL), for calls on several
# threads at once.
_SCRATCH = []                # (bytearrays; tests read its length)
cdef Py_ssize_t _KEEP = 4


cdef bytearray _scratch(Py_ssize_t nbytes):
    """A bytearray of at least ``nbytes`` (its contents anything), from the kept ones."""
    cdef bytearray b
    try:
        b = _SCRATCH.pop()
    except IndexError:
        b = bytearray()
    if PyByteArray_GET_SIZE(b) < nbytes:
        # (resized: grown from empty, never copied over; the old contents do not matter)
        PyByteArray_Resize(b, 0)
        PyByteArray_Resize(b, nbytes)
    return b


cdef void _unscratch(bytearray b):
    if len(_SCRATCH) < _KEEP:
        _SCRATCH.append(b)


cdef struct kd_t:
    uint64_t id            # the entity's id
    double d2              # its squared distance to the client's centre
    Py_ssize_t row         # its row in the world (ids ascend with rows)


cdef enum:
    RADIX_MAX = 11             # bits a radix pass at most (2048 counters)


cdef void _radix_rows(kd_t* a, kd_t* tmp, Py_ssize_t n, Py_ssize_t rmin, Py_ssize_t rmax,
                      Py_ssize_t* counts) noexcept nogil:
    """Sort ``a`` (n) by row: LSD radix passes of at most ``RADIX_MAX`` bits on ``row - rmin``
    (a pass per 11 bits of the span, made equal: 2 passes of 9 bits for 100,000 entities).
    ``tmp`` holds n."""
    cdef uint64_t span = <uint64_t>(rmax - rmin)
    cdef int bits = 0, passes, width, p, shift
    cdef Py_ssize_t i, c, s, nb
    cdef uint64_t mask, key
    cdef kd_t* src = a
    cdef kd_t* dst = tmp
    cdef kd_t* t
    while span >> bits:
        bits += 1
    if bits == 0:
        return
    passes = (bits + RADIX_MAX - 1) // RADIX_MAX
    width = (bits + passes - 1) // passes
    nb = (<Py_ssize_t>1) << width
    mask = <uint64_t>(nb - 1)
    for p in range(passes):
        shift = p * width
        for c in range(nb):
            counts[c] = 0
        for i in range(n):
            counts[((<uint64_t>(src[i].row - rmin)) >> shift) & mask] += 1
        s = 0
        for c in range(nb):
            i = counts[c]
            counts[c] = s
            s += i
        for i in range(n):
            key = ((<uint64_t>(src[i].row - rmin)) >> shift) & mask
            dst[counts[key]] = src[i]
            counts[key] += 1
        t = src
        src = dst
        dst = t
    if src != a:
        memcpy(a, src, sizeof(kd_t) * n)


cdef inline void* _ptr(object array, Py_ssize_t n, Py_ssize_t itemsize, str what) except? NULL:
    """The data of a C-contiguous array of ``n`` items of ``itemsize`` bytes, through the buffer
    protocol (a typed memoryview would bring 100 KB of Cython's utility code into the module);
    the caller keeps the array, so the pointer lives as long."""
    cdef Py_buffer vb
    cdef void* p
    PyObject_GetBuffer(array, &vb, PyBUF_C_CONTIGUOUS)
    p = vb.buf
    ok = vb.itemsize == itemsize and vb.len == n * itemsize
    PyBuffer_Release(&vb)
    if not ok:
        raise ValueError(f"grid_within_csr: {what} must be {n} contiguous items of {itemsize} bytes")
    return p


cdef const char* _column(object array, Py_ssize_t n, Py_ssize_t* stride) except NULL:
    """The data and the stride (bytes) of a 1-D float64 array of ``n`` items, any stride (a
    column of an N x d array, C or Fortran order)."""
    cdef Py_buffer vb
    cdef const char* p
    PyObject_GetBuffer(array, &vb, PyBUF_RECORDS_RO)
    p = <const char*>vb.buf
    ok = vb.ndim == 1 and vb.itemsize == 8 and vb.shape[0] == n and vb.format[0] == b'd' \
        and vb.format[1] == 0
    stride[0] = vb.strides[0]
    PyBuffer_Release(&vb)
    if not ok:
        raise ValueError("GridIndex: the position columns must be float64, one item an entity")
    return p


# a cell number at most this (2**40): past it the cast of a quotient to an integer would be
# undefined (GridIndex refuses such a grid by name)
cdef double _CELL_MAX = 1099511627776.0


def grid_cells(list cols, lo, double cell, cx, cy):
    """The first pass of GridIndex's build, in C without the GIL: whether every position is
    finite, the grid's corner (``lo``: None, the two first ``cols``' minimum), and each entity's
    cell column and row (into ``cx``, ``cy``, int64 of N: floor((x - lo) / cell), at least 0,
    0 past 2**40). ``cols``: the d position columns, float64 1-D arrays of N, any stride.
    Returns ``(finite, lo0, lo1, largest cx quotient floored, largest cy)``."""
    cdef Py_ssize_t n = cx.shape[0], d = len(cols), i, j
    cdef Py_ssize_t st[3]
    cdef const char* cp[3]
    cdef int64_t* kp = <int64_t*>_ptr(cx, n, 8, "cx")
    cdef int64_t* yp = <int64_t*>_ptr(cy, n, 8, "cy")
    cdef double x, y, fx, fy, lo0 = 0.0, lo1 = 0.0, mx = 0.0, my = 0.0
    cdef bint given = lo is not None, bad = False
    if d < 2 or d > 3:
        raise ValueError("grid_cells: 2 or 3 position columns")
    for j in range(d):
        cp[j] = _column(cols[j], n, &st[j])
    if given:
        lo0 = lo[0]
        lo1 = lo[1]
    with nogil:
        if not given and n:
            lo0 = (<const double*>cp[0])[0]
            lo1 = (<const double*>cp[1])[0]
        for i in range(n):
            for j in range(d):
                bad |= not isfinite((<const double*>(cp[j] + i * st[j]))[0])
            x = (<const double*>(cp[0] + i * st[0]))[0]
            y = (<const double*>(cp[1] + i * st[1]))[0]
            lo0 = x if not given and x < lo0 else lo0
            lo1 = y if not given and y < lo1 else lo1
        # each cell column and row, and the largest of each (the floor of the largest quotient
        # is the largest floor; a quotient at least 0 is floored by the cast, one below 0 is
        # clamped to cell 0)
        for i in range(n):
            fx = ((<const double*>(cp[0] + i * st[0]))[0] - lo0) / cell
            fy = ((<const double*>(cp[1] + i * st[1]))[0] - lo1) / cell
            mx = fx if fx > mx else mx
            my = fy if fy > my else my
            kp[i] = <int64_t>fx if 0.0 < fx <= _CELL_MAX else 0
            yp[i] = <int64_t>fy if 0.0 < fy <= _CELL_MAX else 0
    return not bad, lo0, lo1, floor(mx), floor(my)


def grid_sort(cx, cy, Py_ssize_t ny, start, order, list cols, list gcols, ids, gids):
    """The second pass of GridIndex's build, in C without the GIL: each entity's key
    (cx * ny + cy, from ``grid_cells``), a stable counting sort of the rows by key (``order``,
    intp of N: rows ascending within a cell; ``start``, int64 of nx * ny + 1 zeros given: cell
    k's rows are ``order[start[k]:start[k + 1]]``), the positions (``cols`` into ``gcols``,
    float64 of N) and ``ids`` (into ``gids``, uint64) in that order. The arrays NumPy's steps
    made (tests/test_interest.py keeps them as the reference)."""
    cdef Py_ssize_t n = cx.shape[0], ncell = start.shape[0] - 1, d = len(cols), i, j, k
    cdef Py_ssize_t st
    cdef const char* cp
    cdef int64_t* kp = <int64_t*>_ptr(cx, n, 8, "cx")
    cdef const int64_t* yp = <const int64_t*>_ptr(cy, n, 8, "cy")
    cdef int64_t* sp = <int64_t*>_ptr(start, ncell + 1, 8, "start")
    cdef Py_ssize_t* op = <Py_ssize_t*>_ptr(order, n, sizeof(Py_ssize_t), "order")
    cdef const uint64_t* ip = <const uint64_t*>_ptr(ids, n, 8, "ids")
    cdef uint64_t* gip = <uint64_t*>_ptr(gids, n, 8, "gids")
    cdef double* gp
    if len(gcols) != d:
        raise ValueError("grid_sort: a grid-order column a column")
    with nogil:
        # the keys, counted in start[key + 1], then summed: start[k] is cell k's first place
        for i in range(n):
            k = kp[i] * ny + yp[i]
            kp[i] = k
            sp[k + 1] += 1
        for k in range(ncell):
            sp[k + 1] += sp[k]
        # the rows in ascending order, each to its cell's next place (start[k] moves on to the
        # cell's end, then all are shifted back one cell)
        for i in range(n):
            k = kp[i]
            op[sp[k]] = i
            sp[k] += 1
        for k in range(ncell, 0, -1):
            sp[k] = sp[k - 1]
        sp[0] = 0
        for i in range(n):
            gip[i] = ip[op[i]]
    for j in range(d):
        cp = _column(cols[j], n, &st)
        gp = <double*>_ptr(gcols[j], n, 8, "gcols")
        with nogil:
            for i in range(n):
                gp[i] = (<const double*>(cp + op[i] * st))[0]


def grid_within_csr(lo, cnt, list cols, q, double r2, gids, order, bint distances, bint sort):
    """For each centre (row of ``q``, m x d float64, d 2 or 3), the rows of its ranges (``lo``,
    ``cnt``: m x K int64, rows of the grid order; ``cols``: the d position columns in grid order,
    float64) whose squared distance is at most ``r2`` (the same sum of squares, in the same
    order, as GridIndex's NumPy path), as ids (``gids``: the entities' ids in grid order, uint64;
    ``order``: their rows in the world, where ids ascend, intp), in grid order or ascending
    (``sort``). Returns ``(offsets, ids, distances or None)``: ``offsets`` int64 of m + 1, the
    ids of client i ``ids[offsets[i]:offsets[i + 1]]`` (uint64), its distances aligned (float64).

    The sort, a client at a time, by row (ids ascend with rows): an LSD radix sort of the rows
    less the client's smallest (passes of at most 11 bits: 2 of 9 for 100,000 entities), on the
    candidates alone: no array of the world's size is touched (a bitmap of the world's rows, or
    a gather of ids by row, cost a cache miss a candidate), and no comparison to mispredict (a
    merge sort of the cells' runs took 7 us a client of 430, the radix sort about 1).
    """
    cdef Py_ssize_t m, d, K, nrow
    cdef Py_ssize_t i, k, t, e, got, pos = 0, total = 0, most = 0, per
    cdef double x, dd, q0, q1, q2 = 0.0
    cdef const double* c0
    cdef const double* c1
    cdef const double* c2 = NULL
    cdef const int64_t* lp
    cdef const int64_t* cp
    cdef const double* qp
    cdef const uint64_t* ip
    cdef const Py_ssize_t* op
    cdef Py_ssize_t rmin, rmax, row, keep
    cdef Py_ssize_t counts[1 << RADIX_MAX]
    cdef int64_t* offp
    cdef uint64_t* out_i = NULL
    cdef double* out_d = NULL
    cdef kd_t* cand
    cdef kd_t* tmp
    if q.ndim != 2 or lo.ndim != 2 or cnt.ndim != 2:
        raise ValueError("grid_within_csr: q, lo and cnt must be 2-D")
    m = q.shape[0]
    d = q.shape[1]
    K = lo.shape[1]
    nrow = gids.shape[0]
    if d < 2 or d > 3 or len(cols) != d:
        raise ValueError("grid_within_csr: 2 or 3 position columns")
    if cnt.shape[0] != m or lo.shape[0] != m or cnt.shape[1] != K:
        raise ValueError("grid_within_csr: lo and cnt must be m x K")
    lp = <const int64_t*>_ptr(lo, m * K, 8, "lo")
    cp = <const int64_t*>_ptr(cnt, m * K, 8, "cnt")
    qp = <const double*>_ptr(q, m * d, 8, "q")
    ip = <const uint64_t*>_ptr(gids, nrow, 8, "gids")
    op = <const Py_ssize_t*>_ptr(order, nrow, sizeof(Py_ssize_t), "order")
    c0 = <const double*>_ptr(cols[0], nrow, 8, "cols")
    c1 = <const double*>_ptr(cols[1], nrow, 8, "cols")
    if d == 3:
        c2 = <const double*>_ptr(cols[2], nrow, 8, "cols")
    for i in range(m):
        per = 0
        for k in range(K):
            per += cp[i * K + k]
        total += per
        if per > most:
            most = per
    offsets = np.empty(m + 1, dtype=np.int64)
    offp = <int64_t*>_ptr(offsets, m + 1, 8, "offsets")
    # the ids and distances of the upper bound in scratch memory (see _SCRATCH), and the
    # candidates of one client: one block
    scr = _scratch(<Py_ssize_t>(sizeof(uint64_t) * total + (sizeof(double) * total if distances else 0)
                                + sizeof(kd_t) * (2 * most + 2) + 16))
    out_i = <uint64_t*>PyByteArray_AS_STRING(scr)
    if distances:
        out_d = <double*>(out_i + total)
    cand = <kd_t*>(((<size_t>(out_i + total + (total if distances else 0))) + 7) & ~(<size_t>7))
    tmp = cand + most + 1
    with nogil:
        offp[0] = 0
        for i in range(m):
            q0 = qp[i * d]
            q1 = qp[i * d + 1]
            if d == 3:
                q2 = qp[i * d + 2]
            got = 0
            rmin = nrow
            rmax = -1
            for k in range(K):
                t = lp[i * K + k]
                e = t + cp[i * K + k]
                while t < e:
                    x = c0[t] - q0
                    dd = x * x
                    x = c1[t] - q1
                    dd = dd + x * x
                    if d == 3:
                        x = c2[t] - q2
                        dd = dd + x * x
                    # written whatever the test, kept by advancing: no branch to mispredict
                    keep = dd <= r2
                    row = op[t]
                    cand[got].id = ip[t]
                    cand[got].d2 = dd
                    cand[got].row = row
                    rmin = row if keep and row < rmin else rmin
                    rmax = row if keep and row > rmax else rmax
                    got += keep
                    t += 1
            if sort and got > 1:
                _radix_rows(cand, tmp, got, rmin, rmax, counts)
            for t in range(got):
                out_i[pos + t] = cand[t].id
            if distances:
                for t in range(got):
                    out_d[pos + t] = sqrt(cand[t].d2)
            pos += got
            offp[i + 1] = pos
    # the rows found, copied out (NumPy arrays of their own: the scratch is reused)
    out = np.empty(pos, dtype=np.uint64)
    dist = np.empty(pos, dtype=np.float64) if distances else None
    if pos:
        memcpy(_ptr(out, pos, 8, "out"), out_i, sizeof(uint64_t) * pos)
        if distances:
            memcpy(_ptr(dist, pos, 8, "dist"), out_d, sizeof(double) * pos)
    _unscratch(scr)
    return offsets, out, dist


cdef class Linger:
    """One client's interest with hysteresis (``StreamServer(hysteresis=N)``), its state in C
    memory reused from tick to tick (two sets: ``step`` reads the one kept and writes the other,
    ``commit`` keeps what it wrote; a step not committed leaves nothing behind).

    The state: ascending unique ids and, per id, the tick until which it stays. ``step(ids, now,
    span)`` (``ids``: uint64, 1-D, C-contiguous, any order, repeats allowed) returns the interest
    to build the view of: ``ids`` itself when nothing lingers, else a new array of ``ids``
    followed by the kept ids not in ``ids`` whose tick is ``now`` or later (ascending); the state
    it writes holds every id of ``ids`` until ``now + span`` and the lingering ones with their
    own tick. ``step(None, ...)`` (the whole world) writes an empty state. Linear in both (one
    merge), ``ids`` sorted first only when not ascending (GridIndex's are)."""

    cdef uint64_t* _ids[2]
    cdef int64_t* _until[2]
    cdef Py_ssize_t _n[2]
    cdef Py_ssize_t _cap[2]
    cdef int _cur

    def __cinit__(self):
        self._ids[0] = self._ids[1] = NULL
        self._until[0] = self._until[1] = NULL
        self._n[0] = self._n[1] = self._cap[0] = self._cap[1] = 0
        self._cur = 0

    def __dealloc__(self):
        for k in range(2):
            free(self._ids[k])
            free(self._until[k])

    cdef int _room(self, int w, Py_ssize_t need) except -1:
        cdef void* a
        cdef void* b
        if need <= self._cap[w]:
            return 0
        need = max(need, 2 * self._cap[w], 64)
        a = realloc(self._ids[w], sizeof(uint64_t) * need)
        if a == NULL:
            raise MemoryError()
        self._ids[w] = <uint64_t*>a
        b = realloc(self._until[w], sizeof(int64_t) * need)
        if b == NULL:
            raise MemoryError()
        self._until[w] = <int64_t*>b
        self._cap[w] = need
        return 0

    def step(self, ids, int64_t now, int64_t span):
        cdef int w = 1 - self._cur
        cdef Py_ssize_t n, m = self._n[self._cur], i = 0, j = 0, k = 0, e = 0
        cdef const uint64_t* a = NULL
        cdef const uint64_t* s = NULL
        cdef const uint64_t* p = self._ids[self._cur]
        cdef const int64_t* u = self._until[self._cur]
        cdef uint64_t* oi
        cdef int64_t* ou
        cdef uint64_t* ex
        cdef uint64_t x
        cdef int64_t stay = now + span
        if ids is None:
            self._n[w] = 0
            return None
        n = ids.shape[0]
        if n:
            a = <const uint64_t*>_ptr(ids, n, 8, "ids")
        srt = ids
        if n > 1:
            with nogil:
                while i + 1 < n and a[i] <= a[i + 1]:
                    i += 1
            if i + 1 < n:
                srt = np.sort(ids)
        if n:
            s = <const uint64_t*>_ptr(srt, n, 8, "ids")
        self._room(w, n + m)
        oi = self._ids[w]
        ou = self._until[w]
        i = 0
        with nogil:
            while i < n or j < m:
                if j >= m or (i < n and s[i] <= p[j]):
                    x = s[i]
                    if j < m and p[j] == x:
                        j += 1              # (in the interest again: its tick renewed)
                    oi[k] = x
                    ou[k] = stay
                    k += 1
                    while i < n and s[i] == x:  # (repeats count once)
                        i += 1
                else:
                    if u[j] >= now:         # still lingering
                        oi[k] = p[j]
                        ou[k] = u[j] | (<int64_t>1 << 62)     # (marked: read below)
                        k += 1
                        e += 1
                    j += 1
        self._n[w] = k
        if e == 0:
            return ids
        eff = np.empty(n + e, dtype=np.uint64)  # the interest as given, then the lingering ones
        ex = <uint64_t*>_ptr(eff, n + e, 8, "eff")
        with nogil:
            if n:
                memcpy(ex, a, sizeof(uint64_t) * n)
            e = n
            for i in range(k):
                if ou[i] & (<int64_t>1 << 62):
                    ou[i] = ou[i] & ~(<int64_t>1 << 62)
                    ex[e] = oi[i]
                    e += 1
        return eff

    def commit(self):
        """Keep the state the last ``step`` wrote."""
        self._cur = 1 - self._cur

    @property
    def state(self):
        """The state kept: ``(ids, ticks)``, copies (uint64, int64)."""
        cdef Py_ssize_t n = self._n[self._cur]
        ids = np.empty(n, dtype=np.uint64)
        ticks = np.empty(n, dtype=np.int64)
        if n:
            memcpy(<void*>_ptr(ids, n, 8, "ids"), self._ids[self._cur], sizeof(uint64_t) * n)
            memcpy(<void*>_ptr(ticks, n, 8, "ticks"), self._until[self._cur], sizeof(int64_t) * n)
        return ids, ticks

    @state.setter
    def state(self, value):
        """Set the state kept (tests; a server restoring one): ascending unique uint64 ids and
        an int64 tick each."""
        ids, ticks = value
        ids = np.ascontiguousarray(ids, dtype=np.uint64)
        ticks = np.ascontiguousarray(ticks, dtype=np.int64)
        if ids.ndim != 1 or ticks.shape != ids.shape:
            raise ValueError(f"Linger.state: {ids.shape[0] if ids.ndim == 1 else ids.shape} ids need "
                             f"as many ticks, got shape {ticks.shape}")
        cdef Py_ssize_t n = ids.shape[0]
        if n > 1 and not bool(np.all(ids[1:] > ids[:n - 1])):
            raise ValueError("Linger.state: the ids must ascend, each once")
        self._room(self._cur, n)
        if n:
            memcpy(self._ids[self._cur], <void*>_ptr(ids, n, 8, "ids"), sizeof(uint64_t) * n)
            memcpy(self._until[self._cur], <void*>_ptr(ticks, n, 8, "ticks"), sizeof(int64_t) * n)
        self._n[self._cur] = n
