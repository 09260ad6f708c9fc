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

from libc.stdint cimport uint64_t, int64_t
from quantcodec._kernels cimport qdesc
from quantcodec._kernels cimport K_QUAT, K_UVEC, scalar_valid, quat_valid   # for slot_valid
from quantcodec._bits cimport bw_t, br_t                                      # for Plan.put_row/get_row

cdef enum:
    K_NZFLAG = 20

ctypedef struct slot_t:
    qdesc d            # the rule of this slot (d.bits: its wire width; K_NZFLAG: 1)
    int field          # index of the field it belongs to
    int comp           # component index within the field's value (Vector component, else 0)
    int span           # K_NZFLAG: how many following slots it governs; else 0
    int nfloat         # floats consumed per value: 0 (flag), 1 (scalar), 3 (UnitVector), 4 (Quat)
    double threshold   # K_NZFLAG: the NearlyZero threshold


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
