from libc.stdint cimport uint64_t
from quantcodec._kernels cimport qdesc


cdef class Codec:
    cdef qdesc d
    cdef readonly int bits
    cdef object _key          # (kind name, parameters...) for ==, hash, fingerprint
    cdef object _code_dtype   # numpy dtype of array codes
    cdef int group            # F_* below: how values and codes are shaped
    cdef int ncomp            # floats per value (1 scalar, 3 UnitVector, 4 Quat, k Vector)


cdef class _FloatScalar(Codec):
    cdef object _code_obj(self, uint64_t c)
    cdef tuple _q_array(self, x, out)
    cdef uint64_t _check_code(self, object code) except? 0
    cdef object _dq_array(self, code, out)


cdef class _ExactScalar(Codec):
    cdef object _to_int(self, object x)
    cdef object _lo(self)
    cdef object _hi(self)
    cdef object _q_array(self, x, out)
    cdef object _value(self, object ic)
    cdef object _value_dtype(self)


cdef class Vector(Codec):
    cdef readonly tuple codecs


cdef class NearlyZero(Codec):
    cdef readonly Codec inner
    cdef readonly double threshold
    cdef bint _vec(self)
    cdef bint _valid1(self, object code)
    cdef bint _ragged1(self, object code)


# Field shapes: how a codec's values map onto its codes (Codec.group), and so how a schema field
# of that codec maps onto the slots of the plan (Plan.fkind, _plan.pxd), for _codecs and _plan
# alike. The scalar kind of each code is K_* (_kernels.pxd).
cdef enum:
    F_FLOAT = 0        # one float scalar: Bounded, Fixed, Angle, PowerCurve, Half, Grid (one slot)
    F_EXACT = 1        # one exact scalar: UInt, Int, Bool, Enum, IntRange (one slot)
    F_QUAT = 2         # 4 floats, one code (one slot)
    F_UVEC = 3         # 3 floats, one code (one slot)
    F_VECTOR = 4       # k components, a code each (k slots, float or exact)
    F_NZ = 5           # NearlyZero over a scalar: flag + the scalar's code (flag slot + 1 slot)
    F_NZVEC = 6        # NearlyZero over a Vector: flag + k codes (flag slot + k slots)
