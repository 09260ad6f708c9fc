"""The stream's bookkeeping (SPEC section 5): which snapshots each side holds, which of them a
packet is coded against, and the per-packet work of one SnapshotEncoder and one SnapshotDecoder
around the delta coder (quantcodec._delta). Sequence numbers live in 0..65535 and wrap: the one
place of their arithmetic (``seq_distance``, ``seq_newer``; quantcodec.snapshot re-exports them).

The states take the snapshot class from their caller (quantcodec.snapshot passes its Snapshot):
this layer builds the objects it is given the type of and imports nothing above it.
"""

cimport cython
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from cpython.pyport cimport PY_SSIZE_T_MAX
from libc.string cimport memset, memcmp, memcpy

from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE

cdef extern from "Python.h":
    int PyObject_GC_IsTracked(object op)
    void PyObject_GC_UnTrack(void* op)

import numpy as np

from .errors import DecodeError, SchemaError

from quantcodec._bits cimport br_t, br_init
from quantcodec._entropy cimport qc_bitlen64, qc_ctz64
from quantcodec._crc32c cimport qc_crc32c, qc_get_u32le, qc_put_u32le, qc_siphash24, qc_load64le, qc_put_u64le
from quantcodec._delta cimport DeltaDecoder, DeltaEncoder, SnapshotData, _read_header, _packet


cdef type _snapshot_type(cls, str owner):
    """The class of the snapshots a state takes or makes: SnapshotData or a subclass."""
    if not isinstance(cls, type) or not issubclass(cls, SnapshotData):
        raise TypeError(f"{owner}: snapshot_type must be SnapshotData or a subclass, got {cls!r}")
    return <type>cls


# the datagram layer's sizes for Python (quantcodec._framing): declared once, in _history.pxd
CHECK = W_CHECK
TAG = W_TAG
FRAGMENT_HEADER = W_FRAGMENT_HEADER
HELLO_BODY = W_HELLO_BODY
MAX_FRAGMENTS = W_MAX_FRAGMENTS
MIN_DATAGRAM = W_MIN_DATAGRAM
MAX_DATAGRAM = W_MAX_DATAGRAM
SNAPSHOT_COST = W_SNAPSHOT_COST
REPLY_ACK = W_REPLY_ACK
REPLY_HELLO = W_REPLY_HELLO


cdef int _wcheck(wcheck_t* c, check) except -1:
    """A check from Python's description: an int (a CRC seed) or 16 bytes (a SipHash key)."""
    cdef const uint8_t* k
    if isinstance(check, int):
        c.keyed = False
        c.seed = <uint32_t>check
        c.k0 = c.k1 = 0
        return 0
    if not isinstance(check, bytes) or len(check) != 16:
        raise TypeError(f"a stream check is a CRC seed (int) or a 16-byte key, got {check!r:.40}")
    k = <const uint8_t*>PyBytes_AS_STRING(check)
    c.keyed = True
    c.seed = 0
    c.k0 = qc_load64le(k)
    c.k1 = qc_load64le(k + 8)
    return 0


cdef inline Py_ssize_t _wlen(const wcheck_t* c) noexcept nogil:
    return W_TAG if c.keyed else W_CHECK


cdef inline bint _wholds(const wcheck_t* c, const uint8_t* p, Py_ssize_t n) noexcept nogil:
    """Whether the datagram of n bytes at p (its check at its end) passes the check c."""
    cdef Py_ssize_t t = _wlen(c)
    if n < t:
        return False
    if c.keyed:
        return qc_siphash24(c.k0, c.k1, p, <size_t>(n - t)) == qc_load64le(p + n - t)
    return qc_crc32c(c.seed, p, <size_t>(n - t)) == qc_get_u32le(p + n - t)


def seal(data, check):
    """``data`` followed by its check: crc32c(data, seed) as 4 bytes for an int ``check``, the
    SipHash-2-4 tag as 8 bytes for a 16-byte key (docs/wire-format.md sections 11 and 17)."""
    cdef wcheck_t c
    _wcheck(&c, check)
    return _sealed(bytes(data), &c)


def holds(data, check):
    """Whether ``data`` (a datagram, its check at its end) passes ``check`` (as ``seal``)."""
    cdef wcheck_t c
    cdef const uint8_t* buf
    cdef Py_ssize_t n
    _wcheck(&c, check)
    owner = _packet(data, &buf, &n)
    return _wholds(&c, buf, n)


def seq_distance(a, b):
    """``(a - b) mod 65536``: how many sequence numbers ``a`` is after ``b``."""
    return (a - b) & SEQ_MASK


def seq_newer(a, b):
    """Whether sequence number ``a`` is newer than ``b``, wraparound-aware (RFC 1982 style)."""
    return 0 < ((a - b) & SEQ_MASK) < SEQ_HALF


# ------------------------------------------------------------------------------------------------
# stream bookkeeping (SnapshotEncoder / SnapshotDecoder): which snapshots are held and which a
# packet is coded against. Plain Python containers, walked in C: this runs once per packet.

cdef Py_ssize_t EARLY_MAX = 64  # an encoder's numbers acked before they were sent, remembered
cdef Py_ssize_t WINDOWS_MAX = 4 # an encoder's old numberings remembered at once


cdef inline int _keep(int history) noexcept:
    """How far back a decoder with ``history`` keeps snapshots: 2 * history - 1 numbers, within
    half the sequence space (where "newer" is defined)."""
    return 2 * history - 1 if 2 * history - 1 <= SEQ_HALF else SEQ_HALF


cdef inline bint _newer(int a, int b) noexcept:
    cdef int d = (a - b) & SEQ_MASK
    return 0 < d < SEQ_HALF


cdef int _set_down(const uint64_t* bits, int start, int count) noexcept nogil:
    """The smallest k in 0..count-1 with bit (start - k) mod 65536 set, or -1."""
    cdef int k = 0, pos, lo
    cdef uint64_t w
    while k < count:
        pos = (start - k) & SEQ_MASK
        lo = pos & 63
        w = bits[pos >> 6] & (((<uint64_t>2) << lo) - 1)        # bits lo, lo-1, ..., 0
        if w:
            k += lo - (qc_bitlen64(w) - 1)
            return k if k < count else -1
        k += lo + 1
    return -1


cdef int _set_up(const uint64_t* bits, int start, int count) noexcept nogil:
    """The smallest k in 0..count-1 with bit (start + k) mod 65536 set, or -1."""
    cdef int k = 0, pos, lo
    cdef uint64_t w
    while k < count:
        pos = (start + k) & SEQ_MASK
        lo = pos & 63
        w = bits[pos >> 6] >> lo                                  # bits lo, lo+1, ..., 63
        if w:
            k += qc_ctz64(w)
            return k if k < count else -1
        k += 64 - lo
    return -1


cdef int pred_target(int bdist) noexcept nogil:
    """The distance back from the baseline that the extrapolation snapshot is looked for at:
    bdist itself for bdist < 4, else the largest divisor of bdist that is at most
    max(2, bdist // 3) (6 -> 2, 9 -> 3, 12 -> 4, 7 -> 1). A shorter step follows the motion
    nearer the baseline (measured by bench/pred_study.py: bench/README.md); a divisor keeps the
    ratio whole, a multiply in both coders."""
    cdef int d
    if bdist < 4:
        return bdist
    d = bdist // 3
    if d < 2:
        d = 2
    while bdist % d:
        d -= 1
    return d


cdef void _refs(const uint64_t* acked, int seq, int hist, bint predict, int* bdist,
                int* pdist) noexcept nogil:
    """The references of packet ``seq``: bdist, the distance back to the newest acknowledged
    snapshot older than ``seq`` within the history (0: none); and (``predict``) pdist, the
    distance back from that baseline to the acknowledged snapshot whose distance is closest to
    pred_target(bdist) (the farther of two equally close), also within the history (0: none)."""
    cdef int k, base, room, d0, t, o1 = -1, o2 = -1
    bdist[0] = 0
    pdist[0] = 0
    k = _set_down(acked, (seq - 1) & SEQ_MASK, hist - 1)      # d = 1 + k in 1..hist-1
    if k < 0:
        return
    bdist[0] = 1 + k
    if not predict:
        return
    base = (seq - bdist[0]) & SEQ_MASK
    t = pred_target(bdist[0])
    room = hist - bdist[0]                  # pdist < room keeps it within the history
    if room > t:                            # the farther side: d in t..room-1, offset d - t
        o1 = _set_down(acked, (base - t) & SEQ_MASK, room - t)
    d0 = (t if t < room else room) - 1
    if d0 >= 1:                             # the nearer side: d in d0..1, offset t - d
        k = _set_up(acked, (base - d0) & SEQ_MASK, d0)
        if k >= 0:
            o2 = t - (d0 - k)
    if o1 >= 0 and (o2 < 0 or o1 <= o2):
        pdist[0] = t + o1
    elif o2 >= 0:
        pdist[0] = t - o2


cdef int _store(dict held, uint64_t* acked, newest, int seq, snap, int hist) except -1:
    """Put ``snap`` under ``seq`` in ``held`` (a dict over a window of the last ``hist`` sequence
    numbers up to ``newest``), moving the window if ``seq`` is newer and dropping (from the
    ``acked`` bits too, unless NULL) what falls out of it. Snapshots older than the window are
    not stored."""
    cdef int nw, step, i
    cdef list out
    if newest is not None:
        nw = newest
        if not _newer(seq, nw):
            if ((nw - seq) & SEQ_MASK) < hist:
                _put(held, seq, snap)
            return 0
        step = (seq - nw) & SEQ_MASK
        if step >= hist or step >= len(held):
            out = [k for k in held if ((seq - <int>k) & SEQ_MASK) >= hist]
        else:
            out = [(nw - hist + 1 + i) & SEQ_MASK for i in range(step)]
        for k in out:
            held.pop(k, None)
            if acked != NULL:
                _bit_clear(acked, <int>k)
    _put(held, seq, snap)
    return 0


cdef inline int _put(dict held, int seq, snap) except -1:
    """held[seq] = snap, the window left untracked by the cycle collector while every snapshot in
    it is (quantcodec._delta, _untrack: none is ever in a cycle, and neither is a dict of them
    under int keys), so that a full collection does not visit a server's history x clients
    views (two thirds of what a collection of bench_views' server still took, --part 7). A
    dict is untracked when new and tracked again by the first tracked value put in it (a
    user's Snapshot subclass): it then stays tracked."""
    cdef bint clean = not PyObject_GC_IsTracked(held)
    held[seq] = snap
    if clean and not PyObject_GC_IsTracked(snap):
        PyObject_GC_UnTrack(<void*>held)
    return 0


# ------------------------------------------------------------------------------------------------
# one client's encoder

def seq_arg(seq, str owner):
    """A sequence number argument, taken mod 65536; TypeError unless an integer (not a bool)."""
    if type(seq) is int:
        return seq & SEQ_MASK
    if isinstance(seq, (bool, np.bool_)) or not isinstance(seq, (int, np.integer)):
        raise TypeError(f"{owner}: sequence number must be an integer, got {type(seq).__name__}")
    return int(seq) & SEQ_MASK


@cython.final
cdef class PacketCache:
    """Packets shared by the SnapshotEncoders of many clients: ``PacketCache(size=64)``, passed
    as ``SnapshotEncoder(schema, cache=...)`` to the encoders of every client of one schema.

    A packet is a function of its sequence number, the snapshot, and the baseline and
    extrapolation snapshots it names. A server that hands the same Snapshot to every client's
    encoder under the same sequence number sends the same bytes to the clients whose acks lag
    alike: with a shared cache the first of them codes the packet and the others get those
    bytes (``encoder.last_bits`` too). Nothing else changes: each encoder keeps its own history
    and acks, and a client's packets are byte for byte the ones its encoder would code alone.

    ``size`` bounds the packets kept (first in, first out); each one holds references to the
    snapshots it was coded from until it leaves. ``hits`` and ``misses`` count lookups,
    ``clear()`` drops the packets, ``len()`` counts them. Safe to share between threads.

    Internally: key (seq, distances, ids of the snapshots and of the schema's plan) ->
    (packet, bits, the snapshots and plan, held so that their ids stay theirs)."""
    cdef readonly Py_ssize_t size
    cdef readonly Py_ssize_t hits
    cdef readonly Py_ssize_t misses
    cdef dict entries
    cdef cython.pymutex lock

    def __init__(self, size=64):
        if isinstance(size, bool) or not isinstance(size, int):
            raise TypeError(f"PacketCache: size must be an int, got {type(size).__name__}")
        if size < 1:
            raise ValueError(f"PacketCache: size must be at least 1, got {size}")
        self.size = size
        self.hits = 0
        self.misses = 0
        self.entries = {}

    cdef object _get(self, tuple key):
        with self.lock:
            e = self.entries.get(key)
            if e is None:
                self.misses += 1
            else:
                self.hits += 1
            return e

    cdef _put(self, tuple key, tuple entry):
        with self.lock:
            self.entries[key] = entry
            while len(self.entries) > self.size:
                del self.entries[next(iter(self.entries))]

    def clear(self):
        """Drop every packet (the counters stay)."""
        with self.lock:
            self.entries.clear()

    def __len__(self):
        return len(self.entries)

    def __repr__(self):
        return (f"<PacketCache: {len(self.entries)} of {self.size} packets, {self.hits} hits, "
                f"{self.misses} misses>")


@cython.final
cdef class EncoderState:
    """The state and the per-packet work of one SnapshotEncoder (quantcodec.snapshot, which
    documents the behaviour): the snapshots sent (``sent``: seq -> snapshot, a window of the
    last ``history`` sequence numbers), which of them the client acknowledged (a bit a sequence
    number), the newest sequence number sent, the last packet's references, and the coder.
    Calls are serialized by a mutex (the coding itself runs without the GIL)."""
    cdef DeltaEncoder coder
    cdef type kind              # the snapshots it takes (quantcodec.Snapshot)
    cdef object schema
    cdef readonly int history
    cdef readonly bint predict
    cdef readonly dict sent
    cdef set ambiguous          # numbers sent with two different snapshots: never a baseline
    cdef dict early             # numbers acked before they were sent (FIFO, at most EARLY_MAX)
    cdef list windows           # [(lo, n, hi)]: numbers held when the numbering started over
    cdef ackbits_t acked
    cdef int newest_seq         # -1: nothing sent
    cdef int last_base          # -1: the last packet was sent in full (or none yet)
    cdef int last_pred
    cdef readonly PacketCache cache     # shared with other clients' encoders, or None
    cdef wcheck_t check                 # the stream's seed_P or key kP: every packet leaves sealed with it
    cdef tuple offered          # a packet coded elsewhere for the next encode (offer), or None
    cdef readonly Py_ssize_t offers_used    # packets offered that encode sent (not coded again)
    cdef cython.pymutex lock

    def __init__(self, DeltaEncoder coder not None, schema, int history, bint predict,
                 PacketCache cache=None, seed=0, snapshot_type=SnapshotData):
        self.kind = _snapshot_type(snapshot_type, "EncoderState")
        self.offered = None
        self.coder = coder
        _wcheck(&self.check, seed)
        self.schema = schema
        self.history = history
        self.predict = predict
        self.cache = cache
        self.sent = {}
        self.ambiguous = set()
        self.early = {}
        self.windows = []
        memset(self.acked, 0, sizeof(self.acked))
        self.newest_seq = -1
        self.last_base = -1
        self.last_pred = -1

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def encode(self, seq, snapshot):
        """SnapshotEncoder.encode."""
        cdef int s, bdist, pdist
        cdef SnapshotData cur
        cdef bytes packet
        s = seq_arg(seq, "SnapshotEncoder.encode")
        if not isinstance(snapshot, self.kind):
            raise TypeError(f"SnapshotEncoder.encode: expected a Snapshot, got {type(snapshot).__name__}")
        cur = <SnapshotData>snapshot
        if cur._schema is not self.schema and cur._schema != self.schema:
            raise SchemaError("SnapshotEncoder.encode: the snapshot's schema is not the encoder's")
        with self.lock:
            if self.newest_seq >= 0 and not _newer(s, self.newest_seq) \
                    and ((self.newest_seq - s) & SEQ_MASK) >= self.history:
                # older than the whole history: not a snapshot sent again but numbers that
                # started over (a pause of more than 32767 sequence numbers, a restarted
                # counter). What is held belongs to the old numbering, and the client's acks
                # of those numbers would name snapshots it does not have: forget it all, as
                # reset(); this packet goes in full and the stream goes on from it. The client
                # may still hold snapshots of the old numbering (a decoder keeps 2 * history - 1
                # back from its latest) and ack them: those numbers sent again serve as no
                # baseline until the new numbering has passed them.
                n = _keep(self.history)
                self.windows.append(((self.newest_seq - n + 1) & SEQ_MASK, n, self.newest_seq))
                if len(self.windows) > WINDOWS_MAX:
                    del self.windows[0]
                self._forget()
            prev = self.sent.get(s)
            _refs(self.acked, s, self.history, self.predict, &bdist, &pdist)
            base = self.sent[(s - bdist) & SEQ_MASK] if bdist else None
            pred = self.sent[(s - bdist - pdist) & SEQ_MASK] if pdist else None
            off = self.offered
            self.offered = None
            if off is not None and _offer_fits(<tuple>off, s, cur, bdist, base, pdist, pred,
                                               self.coder.plan):
                # coded already (a view builder's last trial): the same bytes this coder makes
                packet = off[6]
                self.coder.last_bits = off[7]
                self.offers_used += 1
                # (not put in the PacketCache: the clients whose encoders could find it there
                # got it offered too, with their builders' shared trial size)
            elif self.cache is None:
                packet = self.coder._encode_call(s, cur, bdist, base, pdist, pred)
            else:
                # a packet is a function of these alone: another client's encoder that named
                # the same snapshots under the same numbers coded exactly these bytes
                key = (s, bdist, pdist, id(cur), id(base), id(pred), id(self.coder.plan))
                hit = self.cache._get(key)
                if hit is not None:
                    packet = hit[0]
                    self.coder.last_bits = hit[1]
                else:
                    packet = self.coder._encode_call(s, cur, bdist, base, pdist, pred)
                    self.cache._put(key, (packet, self.coder.last_bits, cur, base, pred,
                                          self.coder.plan))
            if prev is None:
                _bit_clear(self.acked, s)         # a new snapshot under that number: not acked
            elif prev is not cur and prev != cur:
                # another snapshot under a number already sent: an ack carries only the number,
                # and one the client sends for the first would make this one a baseline it does
                # not have. The number serves as no baseline while it is held.
                self._no_baseline(s)
            _store(self.sent, self.acked, self.newest_seq if self.newest_seq >= 0 else None, s, cur,
                   self.history)
            if self.early or self.windows:
                self._suspect(s)
            if self.ambiguous:
                self.ambiguous.intersection_update(self.sent)
            if self.newest_seq < 0 or _newer(s, self.newest_seq):
                self.newest_seq = s
            self.last_base = (s - bdist) & SEQ_MASK if bdist else -1
            self.last_pred = (s - bdist - pdist) & SEQ_MASK if pdist else -1
            # the cache holds bare packets: each client's datagram is sealed with its own stream
            return _sealed(packet, &self.check)

    def offer(self, seq, snapshot, int bdist, base, int pdist, pred, bytes packet, Py_ssize_t bits,
              plan):
        """Hand the next ``encode(seq, snapshot)`` a packet already coded (a view builder's trial
        encode of the view it chose, quantcodec._viewbuild): ``packet`` (bare, unsealed) and its
        ``bits``, coded by a DeltaEncoder of ``plan`` against ``bdist``, ``base``, ``pdist``,
        ``pred`` (``refs(seq)``). A packet is a function of those alone (as for PacketCache), so
        ``encode`` uses it only when it names the very same snapshots (identity) under the same
        numbers and its coder has the same plan; otherwise it codes as always. One packet is
        held at a time, until the next ``encode`` (which drops it, used or not) or offer."""
        cdef int s = seq_arg(seq, "EncoderState.offer")
        with self.lock:
            self.offered = (s, snapshot, bdist, base, pdist, pred, packet, bits, plan)

    def refs(self, seq):
        """(bdist, base, pdist, pred): the snapshots a packet numbered ``seq`` would be coded
        against now (``bdist`` 0 and ``base`` None: in full), without encoding or recording
        anything: what a caller needs to try a snapshot's size with a DeltaEncoder of its own
        (the session's budgets)."""
        cdef int s = seq_arg(seq, "SnapshotEncoder.refs")
        cdef int bdist, pdist
        with self.lock:
            if self.newest_seq >= 0 and not _newer(s, self.newest_seq) \
                    and ((self.newest_seq - s) & SEQ_MASK) >= self.history:
                return 0, None, 0, None
            _refs(self.acked, s, self.history, self.predict, &bdist, &pdist)
            base = self.sent[(s - bdist) & SEQ_MASK] if bdist else None
            pred = self.sent[(s - bdist - pdist) & SEQ_MASK] if pdist else None
            return bdist, base, pdist, pred

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def ack(self, seq):
        """SnapshotEncoder.ack."""
        cdef int s
        if seq is None:
            return False
        s = seq_arg(seq, "SnapshotEncoder.ack")
        with self.lock:
            if s in self.sent and not (self.ambiguous and s in self.ambiguous):
                _bit_set(self.acked, s)
                return True
            if self.newest_seq < 0 or _newer(s, self.newest_seq):
                # an ack of a number not sent yet names a snapshot of an older numbering (a
                # client's stale latest after a long pause or a restarted counter): when the
                # number is sent, the client's acks of it may still mean the old snapshot
                self.early.pop(s, None)
                self.early[s] = None
                if len(self.early) > EARLY_MAX:
                    del self.early[next(iter(self.early))]
            return False

    cdef _suspect(self, int s):
        """After ``s`` is stored: a number the client may hold from an older numbering (acked
        before it was sent, or inside a window held when the numbering started over) serves as
        no baseline while it is held, as a number sent with two snapshots."""
        cdef bint hit = False
        cdef int lo, n, hi
        if self.early and s in self.early:
            del self.early[s]
            hit = True
        if self.windows:
            keep = []
            for lo, n, hi in self.windows:
                if ((s - lo) & SEQ_MASK) < n:
                    hit = True
                if not _newer(s, hi):           # not passed yet
                    keep.append((lo, n, hi))
            self.windows = keep
        if hit:
            self._no_baseline(s)

    cdef inline void _no_baseline(self, int s):
        """The held ``s`` serves as no baseline while it is held: its acks are refused."""
        _bit_clear(self.acked, s)
        self.ambiguous.add(s)

    def reset(self):
        with self.lock:
            self.offered = None
            self._forget()
            self.early.clear()
            self.windows.clear()

    cdef void _forget(self) noexcept:
        self.sent.clear()
        self.ambiguous.clear()
        memset(self.acked, 0, sizeof(self.acked))
        self.newest_seq = -1
        self.last_base = -1
        self.last_pred = -1

    def state(self):
        """(newest, held, acked): the newest sequence number sent (None before the first) and
        the held and acknowledged ones, newest first."""
        cdef int nw
        with self.lock:
            if self.newest_seq < 0:
                return None, (), ()
            nw = self.newest_seq
            held = sorted(self.sent, key=lambda k: (nw - <int>k) & SEQ_MASK)
            return nw, tuple(held), tuple([k for k in held if _bit(self.acked, <int>k)])

    @property
    def last(self):
        """(baseline, extrapolation) sequence numbers of the last packet (None where none)."""
        return (self.last_base if self.last_base >= 0 else None,
                self.last_pred if self.last_pred >= 0 else None)

    @property
    def last_bits(self):
        return self.coder.last_bits


cdef inline bint _offer_fits(tuple off, int s, cur, int bdist, base, int pdist, pred, plan):
    """Whether an offered packet (EncoderState.offer) is the one ``encode`` would code now."""
    return (<int>off[0] == s and off[1] is cur and <int>off[2] == bdist and off[3] is base
            and <int>off[4] == pdist and off[5] is pred and off[8] is plan)


cdef bytes _sealed(bytes packet, const wcheck_t* c):
    """The whole datagram of ``packet``: the packet and its check (crc32c(packet, seed) as a
    little-endian u32, or with a key the SipHash-2-4 tag as a little-endian u64)."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(packet)
    cdef Py_ssize_t t = _wlen(c)
    cdef bytes out = PyBytes_FromStringAndSize(NULL, n + t)
    cdef uint8_t* o = <uint8_t*>PyBytes_AS_STRING(out)
    cdef const uint8_t* p = <const uint8_t*>PyBytes_AS_STRING(packet)
    memcpy(o, p, n)
    if c.keyed:
        qc_put_u64le(o + n, qc_siphash24(c.k0, c.k1, p, <size_t>n))
    else:
        qc_put_u32le(o + n, qc_crc32c(c.seed, p, <size_t>n))
    return out


cdef bint _same_snapshot(prev, SnapshotData snap) except -1:
    """prev == snap (Snapshot.__eq__: the same schema, ids and codes) for a snapshot held under
    the number of one just decoded: compared in C when both are of one class and schema (a
    duplicate packet, or one resent against another baseline, takes this on every call), else
    by __eq__."""
    cdef SnapshotData a
    if type(prev) is not type(snap) or (<SnapshotData>prev)._schema is not snap._schema:
        return prev == snap
    a = <SnapshotData>prev
    if a.n != snap.n or a.ncol != snap.ncol:
        return False
    if a.n == 0:
        return True
    # (a decoded snapshot of the baseline's entities shares its id array)
    if a.idp != snap.idp and memcmp(a.idp, snap.idp, sizeof(uint64_t) * a.n) != 0:
        return False
    return (a.ncol == 0 or a.rowp == snap.rowp
            or memcmp(a.rowp, snap.rowp, sizeof(uint64_t) * a.n * a.ncol) == 0)


@cython.final
cdef class DecoderState:
    """The state and the per-packet work of one SnapshotDecoder (quantcodec.snapshot, which
    documents the behaviour): the decoded snapshots (``held``: seq -> snapshot, a window of the
    last ``keep`` sequence numbers up to the newest decoded), that newest sequence number, and
    the coder. Those of the last ``history`` sequence numbers are the possible baselines; the
    older ones, to ``keep = 2 * history - 1`` back, are kept only as snapshots a packet may
    extrapolate from: an encoder's pred is less than its history before its baseline, so a late
    packet whose baseline is still held finds its pred too. Calls are serialized by a mutex."""
    cdef DeltaDecoder coder
    cdef type kind              # the snapshots it makes (quantcodec.Snapshot)
    cdef object schema
    cdef readonly int history
    cdef readonly int keep
    cdef readonly dict held
    cdef set ambiguous          # numbers decoded with two different snapshots: none held
    cdef int latest_seq         # -1: nothing decoded
    cdef bint bound             # a stream adopted: check is its seed_P / kP, check_f its seed_F / kF
    cdef wcheck_t check
    cdef wcheck_t check_f
    cdef wcheck_t check_h       # hellos' check (no stream needed): seed_H, or kH with a key
    cdef uint64_t stream_id
    cdef readonly Py_ssize_t max_bytes    # section 19: the bound on what is held
    cdef readonly Py_ssize_t reserve      # reassembly's share of it (256 * max_datagram)
    cdef object on_fragment     # body (bytes, its check held) -> view or None
    cdef object on_hello        # hello datagram (its check held) -> None
    cdef cython.pymutex lock

    def __init__(self, DeltaDecoder coder not None, schema, int history, on_fragment=None,
                 on_hello=None, hello_check=0, snapshot_type=SnapshotData,
                 Py_ssize_t max_bytes=PY_SSIZE_T_MAX):
        self.kind = _snapshot_type(snapshot_type, "DecoderState")
        self.coder = coder
        self.schema = schema
        self.held = {}
        self.ambiguous = set()
        self.latest_seq = -1
        self.on_fragment = on_fragment
        self.on_hello = on_hello
        _wcheck(&self.check_h, hello_check)
        self.max_bytes = max_bytes
        self.adopt(history, None, 0, 0, 0)

    def adopt(self, int history, check, check_f, uint64_t stream_id, Py_ssize_t reserve):
        """Start over on a stream (``check`` None: none adopted yet): nothing held."""
        with self.lock:
            self.history = history
            self.keep = _keep(history)
            self.bound = check is not None
            _wcheck(&self.check, check if check is not None else 0)
            _wcheck(&self.check_f, check_f)
            self.stream_id = stream_id
            self.reserve = reserve
            self.held.clear()
            self.ambiguous.clear()
            self.latest_seq = -1

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def decode(self, datagram):
        """SnapshotDecoder.decode: the one classifier of docs/wire-format.md section 14. A whole
        packet is decoded here; a fragment goes to ``on_fragment`` and a hello to ``on_hello``
        (their checks held); anything else is refused here, without a Python call (junk costs
        a check, not a frame)."""
        cdef const uint8_t* buf
        cdef Py_ssize_t nbytes
        cdef Py_ssize_t t = _wlen(&self.check_h)
        owner = _packet(datagram, &buf, &nbytes)
        if self.bound:
            if nbytes >= 1 + t and _wholds(&self.check, buf, nbytes):
                return self._decode(buf, nbytes - t)
            if nbytes >= W_FRAGMENT_HEADER + 1 + t and _wholds(&self.check_f, buf, nbytes):
                return self.on_fragment(PyBytes_FromStringAndSize(<const char*>buf, nbytes - t))
        if nbytes >= W_HELLO_BODY + t and memcmp(buf, b"QCHL", 4) == 0 and _wholds(&self.check_h, buf, nbytes):
            return self.on_hello(PyBytes_FromStringAndSize(<const char*>buf, nbytes))
        if not self.bound:
            if nbytes >= 4 and memcmp(buf, b"QCHL", 4) == 0:
                # (the most common misconfiguration: a key on one side only, or another key)
                raise DecodeError(f"snapshot stream: a hello of {nbytes} bytes fails its check: "
                                  f"damaged, or sealed by a server with "
                                  f"{'another key or none (this decoder has a key' if self.check_h.keyed else 'a key (this decoder has none'}"
                                  f": both ends need the same one); no hello adopted yet",
                                  kind="no-hello")
            raise DecodeError(f"snapshot stream: no hello adopted yet, so no datagram can be checked "
                              f"(a datagram of {nbytes} bytes refused)", kind="no-hello")
        raise DecodeError(f"snapshot stream: a datagram of {nbytes} bytes fails the check of stream "
                          f"{self.stream_id:016x} (damaged, stray, of an earlier stream, of another "
                          f"schema or parameters{', or made without the key' if self.check.keyed else ''})",
                          kind="check")

    cdef Py_ssize_t held_bytes(self):
        """What the held snapshots cost in section 19's model."""
        cdef Py_ssize_t total = 0, row = 8 + 8 * self.coder.nslots
        for v in self.held.values():
            total += W_SNAPSHOT_COST + (<SnapshotData>v).n * row
        return total

    cdef Py_ssize_t kept_bytes(self, int seq):
        """What the held snapshots that packet ``seq`` leaves in the window cost (section 19's
        H): a packet newer than ``latest`` moves the window, and the snapshots it pushes out
        are not counted (counting them, a client sized for the window refused every packet once
        the window was full, for good: nothing else ever moves it)."""
        cdef Py_ssize_t total = 0, row = 8 + 8 * self.coder.nslots
        cdef bint moves = self.latest_seq < 0 or _newer(seq, self.latest_seq)
        for k, v in self.held.items():
            if not moves or ((seq - <int>k) & SEQ_MASK) < self.keep:
                total += W_SNAPSHOT_COST + (<SnapshotData>v).n * row
        return total

    @property
    def holding(self):
        """What the client holds in section 19's model: the held snapshots and reassembly's share."""
        with self.lock:
            return self.held_bytes() + self.reserve

    def decode_packet(self, packet):
        """Decode a packet whose check already held (one reassembled from fragments)."""
        cdef const uint8_t* buf
        cdef Py_ssize_t nbytes
        owner = _packet(packet, &buf, &nbytes)
        return self._decode(buf, nbytes)

    cdef object _decode(self, const uint8_t* buf, Py_ssize_t nbytes):
        """The packet decoded against the held snapshots it names, kept as a possible baseline.
        DecodeError (nothing changed) when a snapshot it names is not held or it is malformed."""
        cdef br_t r
        cdef int seq, bdist, pdist, bseq
        cdef Py_ssize_t room
        cdef SnapshotData snap
        with self.lock:
            br_init(&r, buf, nbytes)
            base = pred = None
            header = _read_header(&r, &seq, &bdist, &pdist) == 0
            if header and bdist:                # (header errors: _decode)
                bseq = (seq - bdist) & SEQ_MASK
                base = self._held(bseq, seq, True)
                if pdist:
                    pred = self._held((bseq - pdist) & SEQ_MASK, seq, False)
            # section 19: the entities a new snapshot may have before the client holds too much
            room = self.max_bytes - self.reserve - W_SNAPSHOT_COST - (
                self.kept_bytes(seq) if header else self.held_bytes())
            self.coder.max_entities = room // (8 + 8 * self.coder.nslots) if room >= 0 else -1
            snap = self.coder._decode(buf, nbytes, base, pred, self.kind)
            snap._schema = self.schema
            seq = snap._seq
            if self.latest_seq < 0 or _newer(seq, self.latest_seq):
                _store(self.held, NULL, self.latest_seq if self.latest_seq >= 0 else None, seq, snap,
                       self.keep)
                self.latest_seq = seq
                if self.ambiguous:
                    self.ambiguous = {k for k in self.ambiguous
                                      if ((seq - <int>k) & SEQ_MASK) < self.keep}
            elif seq in self.held:
                prev = self.held[seq]
                if prev is not snap and not _same_snapshot(prev, snap):
                    # another snapshot under a held number (a server that reused it, or whose
                    # numbers started over): a packet coded against the number may mean either,
                    # and only the server knows which. Neither serves as a baseline or pred
                    # while the number is in the window (the encoder does the same).
                    del self.held[seq]
                    self.ambiguous.add(seq)
                # (a duplicate decodes to the same codes: the held one stays)
            elif not (self.ambiguous and seq in self.ambiguous):
                _store(self.held, NULL, self.latest_seq, seq, snap, self.keep)
            return snap

    cdef inline bint _recent(self, int s) noexcept:
        """Whether the held ``s`` is among the last ``history`` sequence numbers (a baseline)."""
        return ((self.latest_seq - s) & SEQ_MASK) < self.history

    cdef object _held(self, int s, int seq, bint baseline):
        """The held snapshot ``s`` that packet ``seq`` is coded against (its baseline, or the
        snapshot it extrapolates from), or DecodeError."""
        snap = self.held.get(s)
        if snap is not None and (not baseline or self._recent(s)):
            return snap
        if self.ambiguous and s in self.ambiguous:
            raise DecodeError(f"snapshot packet {seq}: the snapshot {s} it is coded against is "
                              f"ambiguous (two different snapshots were decoded under that number; "
                              f"the server's numbers started over or were reused)", kind="baseline")
        if baseline:
            raise DecodeError(f"snapshot packet {seq}: its baseline {s} is not held "
                              f"(held: {list(self._sorted()[:8])})", kind="baseline")
        raise DecodeError(f"snapshot packet {seq}: the snapshot {s} it extrapolates from is not held",
                          kind="baseline")

    cdef list _sorted(self):
        """The possible baselines, newest first."""
        cdef int ref = self.latest_seq
        if ref < 0:
            return []
        return sorted([k for k in self.held if self._recent(<int>k)],
                      key=lambda k: (ref - <int>k) & SEQ_MASK)

    def state(self):
        """(latest, held): the newest sequence number decoded (None before the first) and the
        held ones, newest first."""
        with self.lock:
            return (self.latest_seq if self.latest_seq >= 0 else None), tuple(self._sorted())

    @property
    def latest(self):
        return self.latest_seq if self.latest_seq >= 0 else None

    def get(self, seq):
        """The held snapshot ``seq`` (a possible baseline), or None."""
        cdef int s = seq_arg(seq, "SnapshotDecoder.get")
        with self.lock:
            return self.held.get(s) if self.latest_seq >= 0 and self._recent(s) else None

    def reset(self):
        with self.lock:
            self.held.clear()
            self.ambiguous.clear()
            self.latest_seq = -1

    @property
    def bound_stream(self):
        """The adopted stream's id, or None."""
        return self.stream_id if self.bound else None
