"""The C entry points the tests and the bench studies call: rules of the compiled layers that
have no Python face of their own (the CPU dispatch, the entity-set and Exp-Golomb choices, the
smallest-three validity shortcut, the choice of references and the held window). Not API: a
module of its own so that the library's modules hold only the library."""

from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memset

from cpython.bytes cimport PyBytes_FromStringAndSize

from quantcodec._bits cimport bw_t, bw_init, bw_free, bw_reserve, bw_flush, bw_nbytes
from quantcodec._entropy cimport HIST, best_k, put_set, set_bits_upper
from quantcodec._kernels cimport quat_valid_shrunk, quat_valid_shrunk_branchy
from quantcodec._history cimport (
    SEQ_MASK, ackbits_t, _bit, _bit_set, pred_target, _refs, _store,
)


from quantcodec._delta import DeltaDecoder, DeltaEncoder, Layout
from quantcodec._plan import Plan


cdef extern from "_cpu.h":
    int qc_cpu_level() noexcept nogil
    int qc_simd_level() noexcept nogil
    int qc_crc_hw() noexcept nogil


def _cpu_level():
    """What the CPU and the OS support (0 baseline, 1 AVX2, 2 AVX-512), without the cap."""
    return qc_cpu_level()


def _simd_level():
    """The level the delta coder uses (quantcodec/_cpu.h: capped by QUANTCODEC_SIMD)."""
    return qc_simd_level()


def _crc_hw():
    """Whether the datagram check uses the SSE 4.2 instruction."""
    return bool(qc_crc_hw())


def quat_rules(double a, double b, double c):
    """(quat_valid_shrunk, quat_valid_shrunk_branchy) of three shrunk kept values: the decoder's
    shortcut and the rule it stands for, for the tests."""
    return bool(quat_valid_shrunk(a, b, c)), bool(quat_valid_shrunk_branchy(a, b, c))


def set_bits(positions, Py_ssize_t M):
    """The bits put_set writes for the subset ``positions`` (ascending) of range(M), M >= 1, as
    (bytes, bit count): for tests of the choice of mode."""
    cdef Py_ssize_t n = len(positions), i
    cdef Py_ssize_t* pos
    cdef bw_t w
    if M < 1 or n > M:
        raise ValueError("set_bits: need 1 <= M and at most M positions")
    w.buf = NULL        # (bw_free below is safe when malloc fails before bw_init)
    w.owned = 0
    pos = <Py_ssize_t*>malloc(sizeof(Py_ssize_t) * (n + 1))
    if pos == NULL or bw_init(&w, 64) < 0 or bw_reserve(&w, set_bits_upper(M) + 64) < 0:
        free(pos)
        bw_free(&w)
        raise MemoryError()
    try:
        for i in range(n):
            pos[i] = positions[i]
            if not (0 <= pos[i] < M and (i == 0 or pos[i] > pos[i - 1])):
                raise ValueError("set_bits: positions must be ascending, in range(M)")
        put_set(&w, pos, n, M)
        bw_flush(&w)
        return PyBytes_FromStringAndSize(<const char*>w.buf, bw_nbytes(&w)), w.nbits
    finally:
        free(pos)
        bw_free(&w)


def best_k_of(counts, int b):
    """best_k on a histogram of bit lengths (counts[L] values of bit length L, L = 0..b): the
    Exp-Golomb parameter the encoder chooses and its expected cost in 2**-8 bits. For the
    tests."""
    cdef uint32_t h[HIST]
    cdef Py_ssize_t cost = 0, L
    cdef int k
    if not 0 <= b < HIST or len(counts) != b + 1:
        raise ValueError(f"best_k_of: need 0 <= b < {HIST} and b + 1 counts")
    memset(h, 0, sizeof(h))
    for L in range(b + 1):
        if not 0 <= counts[L] <= 0xFFFFFFFF:
            raise ValueError("best_k_of: counts are 32-bit")
        h[L] = counts[L]
    k = best_k(h, b, &cost)
    return k, cost


def pred_target_of(int bdist):
    """pred_target(bdist): where the encoder looks for the extrapolation snapshot, back from a
    baseline ``bdist`` ticks old (for the tests and bench/pred_study.py)."""
    if bdist < 1:
        raise ValueError(f"pred_target_of: bdist {bdist} < 1")
    return pred_target(bdist)


def references(set acked, int seq, int hist, bint predict):
    """``(base, bdist, pred, pdist)`` of packet ``seq`` for the acknowledged sequence numbers
    ``acked`` (see _refs; None / 0 where there is none). For the tests."""
    cdef ackbits_t bits
    cdef int bdist, pdist
    memset(bits, 0, sizeof(bits))
    for k in acked:
        _bit_set(bits, <int>k & SEQ_MASK)
    _refs(bits, seq, hist, predict, &bdist, &pdist)
    base = (seq - bdist) & SEQ_MASK if bdist else None
    pred = (seq - bdist - pdist) & SEQ_MASK if pdist else None
    return base, bdist, pred, pdist


def store(dict held, acked, newest, int seq, snap, int hist):
    """Put ``snap`` under ``seq`` in ``held``, dropping from the set ``acked`` (or None) what
    leaves the window: see _store. For the tests."""
    cdef ackbits_t bits
    memset(bits, 0, sizeof(bits))
    if acked is not None:
        for k in acked:
            _bit_set(bits, <int>k & SEQ_MASK)
    _store(held, bits if acked is not None else NULL, newest, seq, snap, hist)
    if acked is not None:
        for k in list(acked):
            if not _bit(bits, <int>k & SEQ_MASK):
                acked.discard(k)


class DeltaCoder:
    """An encoder and a decoder workspace over one Layout, for the tests and studies that code
    and decode with one object (the library uses DeltaEncoder and DeltaDecoder apart)."""

    def __init__(self, layout, general=False):
        if isinstance(layout, Plan):
            layout = Layout(layout, general)
        elif general and isinstance(layout, Layout) and not layout.general:
            raise ValueError("DeltaCoder: general=True needs a Plan or a general Layout")
        self.layout = layout
        self._enc = DeltaEncoder(layout)        # (a TypeError unless a Layout)
        self._dec = DeltaDecoder(layout)

    nslots = property(lambda self: self.layout.nslots)
    nfields = property(lambda self: self.layout.nfields)
    ncomps = property(lambda self: self.layout.ncomps)
    shapes = property(lambda self: self.layout.shapes)
    vector = property(lambda self: self.layout.vector)
    last_bits = property(lambda self: self._enc.last_bits)

    def encode(self, seq, cur, bdist=0, base=None, pdist=0, pred=None):
        return self._enc.encode(seq, cur, bdist, base, pdist, pred)

    def decode(self, data, base=None, pred=None):
        return self._dec.decode(data, base, pred)

    def _slot_valid(self, s, code):
        return self._dec._slot_valid(s, code)

    def _quat_surely_valid(self, s, code):
        return self._dec._quat_surely_valid(s, code)
