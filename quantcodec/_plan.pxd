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
