"""Layouts of BitWriter and BitReader, so other compiled modules can write straight into them.

A module that cimports ``BitWriter`` appends bits without Python calls::

    from quantcodec._bits cimport bw_put
    from quantcodec._bitstream cimport BitWriter

    writer._prepare(nbits)            # raises BufferError / RuntimeError / MemoryError
    bw_put(&writer.w, code, bits)     # then any number of puts within the reserved bits
"""

from quantcodec._bits cimport bw_t, br_t


cdef class BitWriter:
    cdef bw_t w
    cdef Py_ssize_t exports     # buffer views handed out and not yet released
    cdef int busy               # 1 while a method runs without the GIL

    cdef int _check_usable(self) except -1
    cdef int _prepare(self, Py_ssize_t extra_bits) except -1


cdef class BitReader:
    cdef Py_buffer view
    cdef bint has_view
    cdef br_t r
    cdef int busy

    cdef int _check_usable(self) except -1
    cdef int _raise_past_end(self, str what) except -1
