# The array dispatch (_arrays.pyx): array inputs made safe for typed loops, the loop table chosen
# for this CPU, and the dispatch on the runtime dtypes, for the codecs (_codecs.pyx) and the
# schema plan (_plan.pyx) alike. And `buf_pair`: the two buffers of one array call.

from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_ANY_CONTIGUOUS, PyBUF_WRITABLE
from libc.stdint cimport uint64_t
from quantcodec._kernels cimport qdesc


# The buffers of one array call: `src` read, `dst` written, both contiguous. Every array path of
# the codecs holds its input and its output this way, for one nogil loop:
#
#     cdef buf_pair b
#     pair_acquire(&b, a, out)
#     try:
#         with nogil:
#             n = some_array(..., b.src.buf, ..., b.dst.buf, ...)
#     finally:
#         pair_release(&b)
#
# Inline C (no Python object, nothing on the per-call path but the two PyObject_GetBuffer calls).
ctypedef struct buf_pair:
    Py_buffer src
    Py_buffer dst


cdef inline int pair_acquire(buf_pair* p, object src, object dst) except -1:
    """Hold `src` for reading and `dst` for writing; if either fails, nothing stays held."""
    PyObject_GetBuffer(src, &p.src, PyBUF_ANY_CONTIGUOUS)
    try:
        PyObject_GetBuffer(dst, &p.dst, PyBUF_ANY_CONTIGUOUS | PyBUF_WRITABLE)
    except BaseException:
        PyBuffer_Release(&p.src)
        raise
    return 0


cdef inline void pair_release(buf_pair* p) noexcept:
    """Release what pair_acquire took (the output first)."""
    PyBuffer_Release(&p.dst)
    PyBuffer_Release(&p.src)


# Array inputs: `x` as a C-contiguous native float32/float64 array (copied only when it must be);
# integer codes as a C-contiguous array of `dtype` (values outside it raise DecodeError); `a`
# itself when it is C-contiguous, aligned native `dt`, else a converted copy (for the plan's
# columns too: one rule for what the typed loops may read in place); `out` checked for an array
# call (dtype among `dtypes`, `shape`, C-contiguous, writeable, aligned).
cdef object float_input(object x, str owner)
cdef object code_input(object code, object dtype, str owner)
cdef object contig(object a, object dt)
cdef object check_out(object out, tuple shape, object dtypes, str owner)


# The array dispatchers (the loop table selected for this CPU at import): `xt`/`ot` 0 float32,
# 1 float64; `ct` 0 uint32, 1 uint64, 2 int32, 3 int64; strides in elements.
# Quantize n floats (stride xs) into codes (stride os): the clamp count.
cdef Py_ssize_t q_array(const qdesc* d, const void* x, int xt, Py_ssize_t xs, void* out, int ct,
                        Py_ssize_t os, Py_ssize_t n) noexcept nogil
# A float scalar kind's codes (stride cs) into floats (stride os), every code checked: the first
# invalid code (then `out` is partly written) or -1. Bounded through the loop table.
cdef Py_ssize_t dq_array(const qdesc* d, const void* c, int ct, Py_ssize_t cs, void* out, int ot,
                         Py_ssize_t os, Py_ssize_t n) noexcept nogil
# dq_array of codes known to be valid (a code matrix checked before): no validity pass.
cdef void dq_valid_array(const qdesc* d, const void* c, int ct, Py_ssize_t cs, void* out, int ot,
                         Py_ssize_t os, Py_ssize_t n) noexcept nogil
# dequantize(quantize(x)) of n floats: the clamp count.
cdef Py_ssize_t rt_array(const qdesc* d, const void* x, int xt, Py_ssize_t xs, void* out, int ot,
                         Py_ssize_t os, Py_ssize_t n) noexcept nogil
# The first code of a scalar kind (stride cs) that is not valid, or -1.
cdef Py_ssize_t first_invalid(const qdesc* d, const void* c, int ct, Py_ssize_t cs, Py_ssize_t n) noexcept nogil
# Quat or UnitVector, contiguous rows of 4 or 3 floats <-> contiguous codes: the first zero /
# non-finite row (status in *st) or invalid code, or -1.
cdef Py_ssize_t multi_q_array(const qdesc* d, const void* x, int xt, void* out, int ct, Py_ssize_t n,
                              int* st) noexcept nogil
cdef Py_ssize_t multi_dq_array(const qdesc* d, const void* c, int ct, void* out, int ot,
                               Py_ssize_t n) noexcept nogil
cdef Py_ssize_t multi_rt_array(const qdesc* d, const void* x, int xt, void* out, int ot, Py_ssize_t n,
                               int* st) noexcept nogil
