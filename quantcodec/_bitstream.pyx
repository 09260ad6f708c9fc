"""The bit stream: BitWriter, BitReader, pack and unpack (SPEC section 3).

Bit order is LSB-first: the first bit written is bit 0 (the least significant) of byte 0, and a
value is written least significant bit first. ``pack``/``unpack`` and ``write_array``/
``read_array`` use the same layout as a sequence of single writes. The C primitives live in
``_bits.pxd``; this module is the Python face of them.
"""

cimport cython
from cpython.buffer cimport (
    PyBUF_FULL_RO, PyBUF_RECORDS, PyBUF_RECORDS_RO, PyBuffer_FillInfo, PyBuffer_IsContiguous,
    PyBuffer_Release, PyObject_GetBuffer,
)
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.number cimport PyNumber_Index
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

from quantcodec._crc32c cimport qc_crc32c, qc_crc32c_table_crc, qc_siphash24, qc_load64le
from quantcodec._bits cimport (
    PY_SSIZE_T_MAX, br_align, br_get, br_get_array, br_get_signed, br_init, br_peek_unchecked,
    br_remaining, br_t, bw_align, bw_flush, bw_free, bw_init, bw_nbytes, bw_put, bw_put_array,
    bw_reserve, bw_reset, bw_t, bw_wrap, qc_first_misfit, qc_mask, qc_misfit_bits,
)

import numpy as np

from .errors import DecodeError, RangeError

__all__ = ["BitWriter", "BitReader", "pack", "unpack", "crc32c", "siphash24"]


# ------------------------------------------------------------------------- argument checks

cdef inline int _bits_arg(object bits) except -1:
    """``bits`` as a C int in 0..64: TypeError for a non-integer, ValueError outside the range."""
    if type(bits) is not int:
        try:
            bits = PyNumber_Index(bits)
        except TypeError:
            raise TypeError(f"bits must be an integer, not {type(bits).__name__}") from None
    if not (0 <= bits <= 64):
        raise ValueError(f"bits must be between 0 and 64, got {bits}")
    return bits


cdef inline object _int_arg(object value, str name):
    if type(value) is int:
        return value
    try:
        return PyNumber_Index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}") from None


cdef str _unsigned_misfit(object value, object bits):
    msg = f"value {value} does not fit in {bits} bits (0 <= value <= {(1 << bits) - 1})"
    if value < 0:
        msg += "; write_signed() writes negative values"
    return msg


cdef int _unsigned_arg(object value, int bits, uint64_t* out) except -1:
    """``value`` (an int of any size or a NumPy integer) as an unsigned code of ``bits`` bits."""
    cdef uint64_t u
    value = _int_arg(value, "value")
    try:
        u = value
    except OverflowError:          # negative, or 2**64 and above
        raise RangeError(_unsigned_misfit(value, bits)) from None
    if u & ~qc_mask(bits):
        raise RangeError(_unsigned_misfit(value, bits))
    out[0] = u
    return 0


cdef int _signed_arg(object value, int bits, uint64_t* out) except -1:
    """``value`` as the two's complement code of ``bits`` bits (its low ``bits`` bits)."""
    cdef int64_t s = 0
    cdef bint fits = True
    value = _int_arg(value, "value")
    try:
        s = value
    except OverflowError:          # outside the int64 range: fits in no width up to 64
        fits = False
    if fits and bits < 64:
        if bits == 0:
            fits = s == 0
        else:
            fits = -((<int64_t>1) << (bits - 1)) <= s < ((<int64_t>1) << (bits - 1))
    if not fits:
        nbits = bits                # Python int arithmetic below
        lo = -(1 << (nbits - 1)) if nbits else 0
        hi = (1 << (nbits - 1)) - 1 if nbits else 0
        raise RangeError(f"value {value} does not fit in {bits} signed bits ({lo} <= value <= {hi})")
    out[0] = (<uint64_t>s) & qc_mask(bits)
    return 0


cdef Py_ssize_t _count_arg(object count) except -1:
    count = _int_arg(count, "count")
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    if count > PY_SSIZE_T_MAX:
        raise ValueError(f"count {count} is too large")
    return count


# ------------------------------------------------------------------ arrays of integer codes

# Type codes of the eight integer element types (native byte order).
cdef enum:
    TC_U8 = 0
    TC_U16 = 1
    TC_U32 = 2
    TC_U64 = 3
    TC_I8 = 4
    TC_I16 = 5
    TC_I32 = 6
    TC_I64 = 7

cdef dict _TYPECODES = {
    ("u", 1): TC_U8, ("u", 2): TC_U16, ("u", 4): TC_U32, ("u", 8): TC_U64,
    ("i", 1): TC_I8, ("i", 2): TC_I16, ("i", 4): TC_I32, ("i", 8): TC_I64,
}

_UINT8 = np.dtype(np.uint8)
_UINT32 = np.dtype(np.uint32)
_UINT64 = np.dtype(np.uint64)


cdef object _code_array(object codes):
    """Codes as a 1-D integer ndarray of native byte order (a view when possible, never
    modified). Booleans count as 0/1; other arrays are flattened in C order."""
    cdef object a
    if isinstance(codes, np.ndarray):
        a = codes
    else:
        a = np.asarray(codes)
        if a.size == 0 and a.dtype.kind not in "biu":    # [] gives float64
            a = a.astype(_UINT8)
    dt = a.dtype
    if dt.kind == "b":
        a = a.view(_UINT8)
    elif dt.kind not in "iu":
        raise TypeError(f"codes must be an array of integers, not {dt}")
    elif not dt.isnative:
        a = a.astype(dt.newbyteorder("="))
    if a.ndim != 1:
        a = a.reshape(-1)
    return a


cdef int _typecode(object a) except -1:
    dt = a.dtype
    return _TYPECODES[(dt.kind, dt.itemsize)]


cdef object _misfit_error(object codes, object flat, Py_ssize_t i, object bits):
    """The RangeError for element ``i`` (flat index) of the codes."""
    shape = np.shape(codes)
    if len(shape) > 1:
        where = "codes[" + ", ".join(str(int(k)) for k in np.unravel_index(i, shape)) + "]"
    else:
        where = f"codes[{i}]"
    v = int(flat[i])
    if v < 0:
        return RangeError(f"{where} = {v} is negative; codes must fit in {bits} bits "
                          f"(0 <= code <= {(1 << bits) - 1})")
    return RangeError(f"{where} = {v} does not fit in {bits} bits (0 <= code <= {(1 << bits) - 1})")


cdef Py_ssize_t _misfit(const char* p, Py_ssize_t stride, Py_ssize_t n, int tc, int bits) noexcept nogil:
    if tc == TC_U8:
        return qc_first_misfit(<const uint8_t*>p, stride, n, bits)
    elif tc == TC_U16:
        return qc_first_misfit(<const uint16_t*>p, stride, n, bits)
    elif tc == TC_U32:
        return qc_first_misfit(<const uint32_t*>p, stride, n, bits)
    elif tc == TC_U64:
        return qc_first_misfit(<const uint64_t*>p, stride, n, bits)
    elif tc == TC_I8:
        return qc_first_misfit(<const int8_t*>p, stride, n, bits)
    elif tc == TC_I16:
        return qc_first_misfit(<const int16_t*>p, stride, n, bits)
    elif tc == TC_I32:
        return qc_first_misfit(<const int32_t*>p, stride, n, bits)
    else:
        return qc_first_misfit(<const int64_t*>p, stride, n, bits)


cdef void _put(bw_t* w, const char* p, Py_ssize_t stride, Py_ssize_t n, int tc, int bits) noexcept nogil:
    if tc == TC_U8:
        bw_put_array(w, <const uint8_t*>p, stride, n, bits)
    elif tc == TC_U16:
        bw_put_array(w, <const uint16_t*>p, stride, n, bits)
    elif tc == TC_U32:
        bw_put_array(w, <const uint32_t*>p, stride, n, bits)
    elif tc == TC_U64:
        bw_put_array(w, <const uint64_t*>p, stride, n, bits)
    elif tc == TC_I8:
        bw_put_array(w, <const int8_t*>p, stride, n, bits)
    elif tc == TC_I16:
        bw_put_array(w, <const int16_t*>p, stride, n, bits)
    elif tc == TC_I32:
        bw_put_array(w, <const int32_t*>p, stride, n, bits)
    else:
        bw_put_array(w, <const int64_t*>p, stride, n, bits)


cdef void _get(br_t* r, char* p, Py_ssize_t stride, Py_ssize_t n, int tc, int bits) noexcept nogil:
    if tc == TC_U8:
        br_get_array(r, <uint8_t*>p, stride, n, bits)
    elif tc == TC_U16:
        br_get_array(r, <uint16_t*>p, stride, n, bits)
    elif tc == TC_U32:
        br_get_array(r, <uint32_t*>p, stride, n, bits)
    elif tc == TC_U64:
        br_get_array(r, <uint64_t*>p, stride, n, bits)
    elif tc == TC_I8:
        br_get_array(r, <int8_t*>p, stride, n, bits)
    elif tc == TC_I16:
        br_get_array(r, <int16_t*>p, stride, n, bits)
    elif tc == TC_I32:
        br_get_array(r, <int32_t*>p, stride, n, bits)
    else:
        br_get_array(r, <int64_t*>p, stride, n, bits)


cdef object _out_array(object out, Py_ssize_t count, int bits):
    """The array ``read_array``/``unpack`` fill: a new uint32 (bits <= 32) or uint64 one, or
    the caller's ``out``, checked."""
    if out is None:
        return np.empty(count, dtype=_UINT32 if bits <= 32 else _UINT64)
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a NumPy array, not {type(out).__name__}")
    if out.shape != (count,):
        raise ValueError(f"out has shape {out.shape}, expected ({count},)")
    dt = out.dtype
    if dt.kind not in "iu" or not dt.isnative:
        raise TypeError(f"out must be an integer array of native byte order, not {dt}")
    if dt.itemsize * 8 - (dt.kind == "i") < bits:
        raise TypeError(f"out of dtype {dt} cannot hold {bits}-bit codes")
    if not out.flags.writeable:
        raise ValueError("out is read-only")
    return out


cdef int _get_bytes(object data, Py_buffer* view) except -1:
    """A read-only, C-contiguous view of ``data``'s raw bytes (any dtype)."""
    PyObject_GetBuffer(data, view, PyBUF_FULL_RO)
    if not PyBuffer_IsContiguous(view, b"C"):
        PyBuffer_Release(view)
        raise ValueError(f"data must be a C-contiguous buffer; this {type(data).__name__} is not "
                         "(copy it first, e.g. with bytes() or numpy.ascontiguousarray())")
    return 0


cdef int _unpack_into(br_t* r, object out, Py_ssize_t count, int bits) except -1:
    """Fill ``out`` (checked by ``_out_array``) with ``count`` values read from ``r`` without
    the GIL; the caller checked that they are there."""
    cdef Py_buffer oview
    cdef int tc = _typecode(out)
    PyObject_GetBuffer(out, &oview, PyBUF_RECORDS)
    try:
        with nogil:
            _get(r, <char*>oview.buf, oview.strides[0], count, tc, bits)
    finally:
        PyBuffer_Release(&oview)
    return 0


# ------------------------------------------------------------------------------- BitWriter

@cython.final
cdef class BitWriter:
    """An LSB-first bit writer that grows as needed.

    ``getvalue()`` returns the bytes, the last one padded with zero bits. The writer also
    exports its bytes through the buffer protocol (``memoryview(writer)``, read-only, no copy);
    while such a view exists the writer cannot be changed (``BufferError``).
    """

    def __cinit__(self):
        if bw_init(&self.w, 64) < 0:
            raise MemoryError("cannot allocate the BitWriter buffer")
        self.exports = 0
        self.busy = 0

    def __dealloc__(self):
        bw_free(&self.w)

    cdef int _check_usable(self) except -1:
        if self.busy:
            raise RuntimeError("the BitWriter is in use by another thread")
        return 0

    cdef int _prepare(self, Py_ssize_t extra_bits) except -1:
        """Check that the writer may change and make room for ``extra_bits`` more bits."""
        if self.busy:
            raise RuntimeError("the BitWriter is in use by another thread")
        if self.exports:
            raise BufferError("the BitWriter cannot be changed while a buffer view of it exists "
                              "(release the memoryview first)")
        if bw_reserve(&self.w, extra_bits) < 0:
            raise MemoryError(f"cannot grow the BitWriter by {extra_bits} bits")
        return 0

    @cython.critical_section
    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def write(self, value, bits):
        """Append ``value`` in ``bits`` bits (0..64), least significant bit first.

        ``0 <= value < 2**bits``, else ``RangeError`` (a ``ValueError``); never masked.
        """
        cdef int b = _bits_arg(bits)
        cdef uint64_t u = 0
        _unsigned_arg(value, b, &u)
        self._prepare(b)
        bw_put(&self.w, u, b)

    @cython.critical_section
    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def write_signed(self, value, bits):
        """Append ``value`` in two's complement in ``bits`` bits (0..64);
        ``-2**(bits-1) <= value < 2**(bits-1)``."""
        cdef int b = _bits_arg(bits)
        cdef uint64_t u = 0
        _signed_arg(value, b, &u)
        self._prepare(b)
        bw_put(&self.w, u, b)

    @cython.critical_section
    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def write_bool(self, flag):
        """Append one bit: 1 if ``flag`` is true, else 0."""
        cdef uint64_t u = 1 if flag else 0
        self._prepare(1)
        bw_put(&self.w, u, 1)

    @cython.critical_section
    def write_array(self, codes, bits):
        """Append every element of the integer array ``codes`` (flattened in C order) in
        ``bits`` bits each: the layout of ``pack`` and of a ``write`` per element."""
        cdef int b = _bits_arg(bits)
        cdef Py_buffer view
        cdef Py_ssize_t n, bad
        cdef int tc
        a = _code_array(codes)
        tc = _typecode(a)
        self._check_usable()
        PyObject_GetBuffer(a, &view, PyBUF_RECORDS_RO)
        try:
            n = view.shape[0]
            with nogil:
                bad = _misfit(<const char*>view.buf, view.strides[0], n, tc, b)
            if bad >= 0:
                raise _misfit_error(codes, a, bad, b)
            if b and n > (PY_SSIZE_T_MAX - 64 - self.w.nbits) // b:
                raise MemoryError(f"cannot write {n} values of {b} bits")
            self._prepare(n * b)
            self.busy = 1
            try:
                with nogil:
                    _put(&self.w, <const char*>view.buf, view.strides[0], n, tc, b)
            finally:
                self.busy = 0
        finally:
            PyBuffer_Release(&view)

    @cython.critical_section
    def align(self):
        """Pad with zero bits to the next byte boundary (nothing if already there)."""
        self._prepare(7)
        bw_align(&self.w)

    @property
    def bit_length(self):
        """Bits written so far (padding from ``align`` included)."""
        return self.w.nbits

    @cython.critical_section
    def getvalue(self):
        """The stream as ``bytes``: ``(bit_length + 7) // 8`` bytes, the last padded with zeros."""
        self._check_usable()
        bw_flush(&self.w)
        return PyBytes_FromStringAndSize(<char*>self.w.buf, bw_nbytes(&self.w))

    @cython.critical_section
    def reset(self):
        """Empty the writer; its buffer is kept for reuse."""
        self._prepare(0)
        bw_reset(&self.w)

    @cython.critical_section
    def __getbuffer__(self, Py_buffer* buffer, int flags):
        self._check_usable()
        bw_flush(&self.w)
        PyBuffer_FillInfo(buffer, self, self.w.buf, bw_nbytes(&self.w), 1, flags)
        self.exports += 1

    @cython.critical_section
    def __releasebuffer__(self, Py_buffer* buffer):
        self.exports -= 1

    def __repr__(self):
        return f"<BitWriter bit_length={self.w.nbits}>"


# ------------------------------------------------------------------------------- BitReader

@cython.final
cdef class BitReader:
    """An LSB-first bit reader over any C-contiguous buffer (bytes, bytearray, memoryview,
    NumPy array of any dtype: its raw bytes). No copy: the reader holds a buffer view of
    ``data`` until it is garbage collected, so the memory stays alive and a bytearray cannot be
    resized meanwhile; changes to its bytes are seen."""

    def __cinit__(self, data):
        self.has_view = False
        self.busy = 0
        _get_bytes(data, &self.view)
        self.has_view = True
        br_init(&self.r, <const uint8_t*>self.view.buf, self.view.len)

    def __init__(self, data):
        """Read from the start of ``data`` (any C-contiguous buffer; held, not copied)."""

    def __dealloc__(self):
        if self.has_view:
            PyBuffer_Release(&self.view)
            self.has_view = False

    cdef int _check_usable(self) except -1:
        if self.busy:
            raise RuntimeError("the BitReader is in use by another thread")
        return 0

    cdef int _raise_past_end(self, str what) except -1:
        raise DecodeError(f"{what} at bit {self.r.pos} runs past the end of the data "
                          f"({self.r.nbits} bits)")

    @cython.critical_section
    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def read(self, bits):
        """Read an unsigned value of ``bits`` bits (0..64)."""
        cdef int b = _bits_arg(bits)
        cdef uint64_t u = 0
        self._check_usable()
        if br_get(&self.r, b, &u) < 0:
            self._raise_past_end(f"read of {b} bits")
        return u

    @cython.critical_section
    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def read_signed(self, bits):
        """Read a two's complement value of ``bits`` bits (0..64)."""
        cdef int b = _bits_arg(bits)
        cdef int64_t s = 0
        self._check_usable()
        if br_get_signed(&self.r, b, &s) < 0:
            self._raise_past_end(f"read of {b} bits")
        return s

    @cython.critical_section
    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    def read_bool(self):
        """Read one bit as ``True``/``False``."""
        cdef uint64_t u = 0
        self._check_usable()
        if br_get(&self.r, 1, &u) < 0:
            self._raise_past_end("read of 1 bit")
        return u != 0

    @cython.critical_section
    def read_array(self, count, bits, *, out=None):
        """Read ``count`` values of ``bits`` bits into a new uint32 (bits <= 32) or uint64
        array, or into ``out`` (a writable 1-D integer array of ``count`` elements whose dtype
        holds ``bits`` bits), which is returned."""
        cdef int b = _bits_arg(bits)
        cdef Py_ssize_t n = _count_arg(count)
        self._check_usable()
        if b and n > br_remaining(&self.r) // b:
            need = <object>n * b
            self._raise_past_end(f"read_array of {n} values of {b} bits ({need} bits)")
        out = _out_array(out, n, b)
        self.busy = 1
        try:
            _unpack_into(&self.r, out, n, b)
        finally:
            self.busy = 0
        return out

    @cython.critical_section
    def align(self):
        """Skip to the next byte boundary (the skipped bits are not checked)."""
        self._check_usable()
        br_align(&self.r)

    @property
    def bit_position(self):
        """The bit position of the next read."""
        return self.r.pos

    @property
    def bits_remaining(self):
        """Bits left to read."""
        return br_remaining(&self.r)

    @cython.critical_section
    def finish(self):
        """Check that only zero padding of under 8 bits is left, and move to the end.

        Raises ``DecodeError`` (position unchanged) if 8 or more bits are left or a padding bit
        is set.
        """
        cdef Py_ssize_t left = br_remaining(&self.r)
        self._check_usable()
        if left >= 8:
            raise DecodeError(f"{left} bits left unread at bit {self.r.pos} of {self.r.nbits} "
                              "(only zero padding of under 8 bits may follow the data)")
        if br_peek_unchecked(&self.r, self.r.pos, <int>left) != 0:
            raise DecodeError(f"the {left} padding bits at bit {self.r.pos} are not all zero")
        self.r.pos = self.r.nbits

    def __repr__(self):
        return f"<BitReader bit_position={self.r.pos} of {self.r.nbits}>"


# ---------------------------------------------------------------------------- pack/unpack

def pack(codes, bits):
    """Pack an integer array in ``bits`` bits (0..64) per element, LSB-first, into bytes.

    The layout of ``BitWriter.write_array`` from an empty writer: ``ceil(len * bits / 8)``
    bytes, the last padded with zeros. Every element must fit (``RangeError`` naming the first
    that does not). Multi-dimensional arrays are packed in C order.
    """
    cdef int b = _bits_arg(bits)
    cdef Py_buffer view
    cdef Py_ssize_t n, bad, nbytes
    cdef int tc
    cdef bw_t w
    cdef bytes result
    a = _code_array(codes)
    tc = _typecode(a)
    PyObject_GetBuffer(a, &view, PyBUF_RECORDS_RO)
    try:
        n = view.shape[0]
        with nogil:
            bad = _misfit(<const char*>view.buf, view.strides[0], n, tc, b)
        if bad >= 0:
            raise _misfit_error(codes, a, bad, b)
        if b and n > (PY_SSIZE_T_MAX - 7) // b:
            raise MemoryError(f"cannot pack {n} values of {b} bits")
        nbytes = (n * b + 7) >> 3
        result = PyBytes_FromStringAndSize(NULL, nbytes)
        bw_wrap(&w, <uint8_t*>PyBytes_AS_STRING(result), nbytes)
        with nogil:
            _put(&w, <const char*>view.buf, view.strides[0], n, tc, b)
            bw_flush(&w)
    finally:
        PyBuffer_Release(&view)
    return result


def unpack(data, count, bits, *, out=None):
    """Unpack ``count`` values of ``bits`` bits (0..64) from the start of ``data`` (any
    buffer), the layout of ``pack``. Returns a uint32 (bits <= 32) or uint64 array, or fills
    and returns ``out``. Data shorter than ``count * bits`` bits raises ``DecodeError``; bytes
    after them are ignored (the caller gives ``count``)."""
    cdef int b = _bits_arg(bits)
    cdef Py_ssize_t n = _count_arg(count)
    cdef Py_buffer view
    cdef br_t r
    _get_bytes(data, &view)
    try:
        br_init(&r, <const uint8_t*>view.buf, view.len)
        if b and n > r.nbits // b:
            need = <object>n * b
            raise DecodeError(f"unpack of {n} values of {b} bits needs {need} bits "
                              f"({(need + 7) // 8} bytes) but the data has {view.len} bytes")
        out = _out_array(out, n, b)
        _unpack_into(&r, out, n, b)
    finally:
        PyBuffer_Release(&view)
    return out


def crc32c(data, seed=0, *, portable=False):
    """CRC-32C (Castagnoli) of ``data`` (any C-contiguous buffer), continuing ``seed`` as zlib's
    ``crc32`` does: ``crc32c(b, crc32c(a)) == crc32c(a + b)``. The check of every datagram
    (docs/wire-format.md section 11); ``crc32c(b"123456789") == 0xE3069283``. ``portable=True``
    computes it with the table even where the CPU's instruction is used (for the tests)."""
    cdef Py_buffer view
    cdef uint32_t s, c
    cdef bint table = bool(portable)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= 0xFFFFFFFF:
        raise ValueError(f"crc32c: seed must be an integer in 0..2**32-1, got {seed!r}")
    s = seed
    _get_bytes(data, &view)
    try:
        with nogil:
            if table:
                c = qc_crc32c_table_crc(s, <const uint8_t*>view.buf, <size_t>view.len)
            else:
                c = qc_crc32c(s, <const uint8_t*>view.buf, <size_t>view.len)
    finally:
        PyBuffer_Release(&view)
    return c


def siphash24(key, data):
    """SipHash-2-4 of ``data`` (any C-contiguous buffer) under the 16-byte ``key``: the 64-bit tag
    (an int) that checks every datagram of a stream with a shared key (docs/wire-format.md
    section 17). ``siphash24(bytes(range(16)), bytes(range(15))) == 0xa129ca6149be45e5``."""
    cdef Py_buffer view
    cdef uint64_t k0, k1, t
    if not isinstance(key, (bytes, bytearray)) or len(key) != 16:
        raise ValueError(f"siphash24: the key must be 16 bytes, got {key!r:.40}")
    kb = bytes(key)
    k0 = qc_load64le(<const uint8_t*><char*>kb)
    k1 = qc_load64le((<const uint8_t*><char*>kb) + 8)
    _get_bytes(data, &view)
    try:
        with nogil:
            t = qc_siphash24(k0, k1, <const uint8_t*>view.buf, <size_t>view.len)
    finally:
        PyBuffer_Release(&view)
    return t
