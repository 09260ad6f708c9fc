# A schema compiled into a flat C array of slots: the interface between the schema layer
# (_plan.pyx, schema.py) and the snapshot delta coder (_delta.pyx).
#
# Every field expands to one or more slots, in wire order:
#   scalar codec           -> 1 slot  (nfloat 1)
#   Vector(c1..ck)         -> k slots (nfloat 1 each, comp 0..k-1)
#   Quat                   -> 1 slot  (nfloat 4, the whole 2+3b-bit code)
#   UnitVector             -> 1 slot  (nfloat 3, the whole 2b-bit code)
#   NearlyZero(inner)      -> 1 flag slot (kind K_NZFLAG, 1 bit, span = inner's slot count,
#                             nfloat 0) followed by inner's slots
# A record's codes are then one row of uint64 "carriers" (signed codes as two's complement
# int64), one per slot: the code matrix (N entities x nslots) that snapshots store and diff.
# Slots governed by a NearlyZero flag of 0 hold 0 and are not on the wire.

cimport cython
from cpython.object cimport PyObject
from libc.stdint cimport uint8_t, uint64_t, int64_t
from quantcodec._kernels cimport qdesc
from quantcodec._kernels cimport K_QUAT, K_UVEC, scalar_valid, quat_valid   # for slot_valid
from quantcodec._bits cimport bw_t, br_t                                      # for Plan.put_row/get_row
from quantcodec._codecs cimport Codec

cdef enum:
    K_NZFLAG = 20

ctypedef struct slot_t:
    qdesc d            # the rule of this slot (d.bits: its wire width; K_NZFLAG: 1)
    int field          # index of the field it belongs to
    int comp           # component index within the field's value (Vector component, else 0)
    int span           # K_NZFLAG: how many following slots it governs; else 0
    int nfloat         # floats consumed per value: 0 (flag), 1 (scalar), 3 (UnitVector), 4 (Quat)
    double threshold   # K_NZFLAG: the NearlyZero threshold


@cython.final
cdef class Plan:
    cdef slot_t* slots
    cdef Py_ssize_t nslots
    cdef Py_ssize_t nfields
    cdef Py_ssize_t* field_first    # first slot of each field (nfields + 1 entries, last = nslots)
    cdef readonly int max_bits      # the most bits one record takes
    cdef readonly tuple codecs      # the field codecs, in order
    cdef readonly tuple names       # the field names, in order
    cdef int* fkind                 # the field shape (F_*, _codecs.pxd: its codec's group) of each field
    cdef Py_ssize_t* clamps         # clamped (or substituted) values per field, cumulative
    cdef readonly bint strict       # raise RangeError instead of clamping
    cdef readonly int min_bits      # the fewest bits one record takes (NearlyZero flags 0)
    cdef tuple slot_codecs          # the scalar codec of each slot (None for a flag slot)
    cdef tuple slot_labels          # Enum labels (tuple) of each slot, or None
    cdef tuple slot_index           # Enum label -> index (dict) of each slot, or None
    cdef tuple slot_names           # "field" / "field[i]" of each slot, for messages

    cdef void put_row(self, bw_t* w, const uint64_t* row) noexcept nogil
    cdef Py_ssize_t get_row(self, br_t* r, uint64_t* row, int* err) noexcept nogil
    cdef Py_ssize_t row_invalid(self, const uint64_t* row) noexcept nogil
    # the one-record calls (encode, decode, ...: OP_* below), for Plan's own and Schema's (_schemabase)
    cdef object one(self, object arg, int op)
    cdef inline object _one_row(self, object arg, int op, uint64_t* row)

    # The plan's own helpers (_plan.pyx), methods of this final class: called directly, as the
    # module-level functions they were, with no virtual table.
    # building the slots and counting clamps
    cdef void _set_slot(self, Py_ssize_t s, Codec c, Py_ssize_t f, Py_ssize_t comp)
    cdef int _on_clamp(self, Py_ssize_t s, double x, Py_ssize_t nc) except -1
    cdef object _clamp_error(self, Py_ssize_t s, double x, Py_ssize_t row)
    # one record in: values -> a row of codes
    cdef double _num_slow(self, Py_ssize_t s, object v) except? -1.0
    cdef inline double _num(self, Py_ssize_t s, object v) except? -1.0
    cdef int _exact_slow(self, Py_ssize_t s, object v, uint64_t* out) except -1
    cdef inline int _exact(self, Py_ssize_t s, object v, uint64_t* out) except -1
    cdef object _items(self, Py_ssize_t f, object v, Py_ssize_t k, PyObject*** items)
    cdef inline int _float_in(self, Py_ssize_t s, double x, uint64_t* row) except -1
    cdef int _slot_in(self, Py_ssize_t s, object v, uint64_t* row) except -1
    cdef int _field_in(self, Py_ssize_t f, object v, uint64_t* row) except -1
    cdef int _record_mode(self, object rec) except -1
    cdef object _missing(self, Py_ssize_t f)
    cdef int _fill_row(self, object rec, uint64_t* row) except -1
    # one row out: codes -> values or code tuples
    cdef inline object _slot_value(self, Py_ssize_t s, uint64_t c)
    cdef inline object _slot_code(self, Py_ssize_t s, uint64_t c)
    cdef object _field_value(self, Py_ssize_t f, const uint64_t* row)
    cdef dict _row_values(self, const uint64_t* row)
    cdef object _field_codes(self, Py_ssize_t f, const uint64_t* row)
    cdef tuple _row_codes(self, const uint64_t* row)
    # one record of codes in, one record's bits
    cdef int _code_in(self, Py_ssize_t s, object v, uint64_t* out) except -1
    cdef int _codes_row(self, object codes, uint64_t* row, Py_ssize_t* bad) except -1
    cdef object _codes_error(self, object codes, int st, Py_ssize_t bad, object exc)
    cdef bytes _row_bytes(self, const uint64_t* row)
    cdef object _read_error(self, const br_t* r, Py_ssize_t s, int err, Py_ssize_t rec)
    cdef int _check_end(self, const br_t* r, str what) except -1
    cdef str _after_last(self)
    cdef int _read_one(self, object data, uint64_t* row) except -1
    cdef int _codes_in(self, object codes, uint64_t* row, object exc) except -1
    # batches: columns <-> the code matrix <-> bits
    cdef object _columns(self, object columns, str owner)
    cdef Py_ssize_t _value_k(self, Py_ssize_t f)
    cdef tuple _value_shape(self, Py_ssize_t f, Py_ssize_t n)
    cdef Py_ssize_t _nrows(self, list cols, str owner, bint codes) except -2
    cdef str _shape_text(self, Py_ssize_t f, bint codes)
    cdef object _check_shape(self, Py_ssize_t f, object a, tuple shape, str owner, bint codes)
    cdef object _wrap(self, Py_ssize_t f, object e)
    cdef bint _all_float(self, Py_ssize_t a, Py_ssize_t b)
    cdef object _check_matrix_out(self, object out, Py_ssize_t n, str owner)
    cdef Py_ssize_t _float_column(self, Py_ssize_t f, Py_ssize_t s, object x, uint64_t* m,
            Py_ssize_t n, const uint8_t* flags, Py_ssize_t fs) except -1
    cdef Py_ssize_t _float_ptr(self, Py_ssize_t f, Py_ssize_t s, const uint8_t* xp, int xt,
            Py_ssize_t xs, uint64_t* m, Py_ssize_t n, const uint8_t* flags, Py_ssize_t fs) except -1
    cdef bint _exact_fast(self, Py_ssize_t s, object a, uint64_t* m, Py_ssize_t n) except -1
    cdef object _exact_codes(self, Py_ssize_t f, Py_ssize_t s, object a)
    cdef int _exact_column(self, Py_ssize_t f, Py_ssize_t s, object a, object mat) except -1
    cdef object _matrix(self, object matrix, str owner)
    cdef object _invalid_at(self, const uint64_t* m, Py_ssize_t n)
    cdef object _matrix_error(self, object a, object at, object exc)
    cdef dict _dequantize(self, object a)
    cdef bytes _encode_rows(self, object a)
    cdef object _decode_fixed(self, object data, Py_ssize_t n)


# The one-record calls of Plan.one: the methods of the same names.
cdef enum:
    OP_ENCODE = 0
    OP_DECODE = 1
    OP_QUANTIZE = 2
    OP_ROUNDTRIP = 3
    OP_DEQUANTIZE = 4
    OP_ENCODE_CODES = 5
    OP_DECODE_CODES = 6
    OP_VALID = 7


# Errors of the nogil readers (Plan.get_row): which check failed.
cdef enum:
    E_OK = 0
    E_SHORT = 1        # the message ends inside this slot's code
    E_INVALID = 2      # this slot's code is not valid


cdef inline bint slot_valid(const slot_t* sl, uint64_t c) noexcept nogil:
    """Whether carrier `c` is a valid code of slot `sl` (K_NZFLAG: 0 or 1). Pure integer work."""
    cdef int k = sl.d.kind
    if k == K_NZFLAG:
        return c <= 1
    if k == K_QUAT:
        return quat_valid(&sl.d, c)
    if k == K_UVEC:
        return c <= sl.d.maxcode
    return scalar_valid(&sl.d, c)


# A 1-D native integer / bool array into a uint64 column (range-checked): -1 done, the first
# row out of range, -2 not such an array (_plan.pyx; also the snapshot's ids in _delta.pyx).
cdef Py_ssize_t int_column(object a, Py_ssize_t n, bint signed_codes, int64_t lo, uint64_t hi,
                           uint64_t* m, Py_ssize_t S) except -3
