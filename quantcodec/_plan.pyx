"""A schema compiled into a flat C array of slots (`_plan.pxd`), and everything a schema does
with it: one record or a batch of records, values <-> codes <-> bits.

One record is one Python -> C call: the plan walks its slot array with a switch on the kind,
reads the record through the C API (dict / tuple / attribute lookups, `PyFloat_AsDouble`),
quantizes with the inline rules of `_kernels.pxd` and writes straight into a bit writer. No
Python-level method of a codec is called per field, and no attribute of a codec is looked up.

A batch works on the code matrix: one row of uint64 carriers per record, one column per slot
(signed codes as two's complement). Batches are quantized column by column and bit-packed row
by row in `nogil` loops; exact (integer) columns go through their codec's own array path, once
per column.

Untrusted bytes are read with explicit length and code checks; an error leaves the nogil loop
as a (slot, status) pair and becomes a `DecodeError` naming the field and the bit position.
"""

cimport cython
from cpython.buffer cimport (
    PyBUF_FULL_RO, PyBUF_SIMPLE, PyBUF_STRIDES, PyBUF_WRITABLE, PyBuffer_IsContiguous, PyBuffer_Release,
    PyObject_GetBuffer,
)
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItemWithError, PyDict_Next, PyDict_Size

cdef extern from "Python.h":
    Py_ssize_t PyDict_GET_SIZE(object d)
from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_AsDouble
from cpython.list cimport PyList_GET_ITEM, PyList_AsTuple
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_AsUnsignedLongLong, PyLong_FromUnsignedLongLong
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from cpython.sequence cimport PySequence_Fast, PySequence_Fast_GET_SIZE, PySequence_Fast_ITEMS
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE, PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memset

cdef extern from "Python.h":
    dict _PyDict_NewPresized(Py_ssize_t minused)

from quantcodec._kernels cimport *
from quantcodec._bits cimport (
    br_get, br_init, br_peek_unchecked, br_t, bw_flush, bw_nbytes, bw_put, bw_t, bw_wrap, qc_load_le64, qc_mask,
)
from quantcodec._codecs cimport (
    Codec, F_EXACT, F_FLOAT, F_NZ, F_NZVEC, F_QUAT, F_UVEC, F_VECTOR, NearlyZero, Vector, _ExactScalar,
)
from quantcodec._arrays cimport (
    contig, dq_array, dq_valid_array, first_invalid, multi_dq_array, multi_q_array, q_array,
)

import math
import sys
from collections.abc import Mapping

import numpy as np

from .errors import DecodeError, RangeError, SchemaError

__all__ = ["Plan"]

cdef object _U64 = np.dtype(np.uint64)
cdef object _I64 = np.dtype(np.int64)
cdef object _F32 = np.dtype(np.float32)
cdef object _F64 = np.dtype(np.float64)

cdef enum:
    ROW_LOCAL = 64           # slots of a row kept on the C stack
    BUF_LOCAL = 512          # bytes of one record kept on the C stack

# How a record's values are reached.
cdef enum:
    R_TUPLE = 0
    R_LIST = 1
    R_DICT = 2
    R_SEQ = 3                # other sequences in field order (tuple subclasses without _fields)
    R_MAP = 4                # other mappings
    R_ATTR = 5               # attributes (objects, namedtuples, dataclasses)

# Status of the code-tuple reader (_codes_row).
cdef enum:
    C_OK = 0
    C_INVALID = 1            # a code that is not valid (bad = slot)
    C_SHAPE = 2              # wrong number of codes (bad = field, or -1 for the whole tuple)
    C_TYPE = 3               # not an integer (bad = slot)


cdef inline bint _is_float_kind(int k) noexcept nogil:
    return k == K_BOUNDED or k == K_FIXED or k == K_ANGLE or k == K_POWER or k == K_HALF or k == K_GRID


# ------------------------------------------------------------------------------------------------
# Batch loops (nogil, raw pointers). `xs`: float stride in elements; `os`: carrier stride.

ctypedef fused fin_t:
    float
    double


@cython.boundscheck(False)
@cython.wraparound(False)
cdef Py_ssize_t _q_flagged(const qdesc* d, const fin_t* x, Py_ssize_t xs, uint64_t* out, Py_ssize_t os,
                           Py_ssize_t n, const uint8_t* flags, Py_ssize_t fs) noexcept nogil:
    """Quantize the n floats whose flag is 1 into carriers, the others get 0 (a NearlyZero's inner
    slot: only moving values are quantized, and counted). Returns the clamp count."""
    cdef Py_ssize_t i, nc = 0
    for i in range(n):
        if flags[i * fs]:
            out[i * os] = scalar_q(d, x[i * xs], &nc)
        else:
            out[i * os] = 0
    return nc


@cython.boundscheck(False)
@cython.wraparound(False)
cdef Py_ssize_t _first_clamp(const qdesc* d, const fin_t* x, Py_ssize_t xs, Py_ssize_t n,
                             const uint8_t* flags, Py_ssize_t fs) noexcept nogil:
    """The first row whose value clamps (strict mode's error path), or -1."""
    cdef Py_ssize_t i, nc = 0
    for i in range(n):
        if flags == NULL or flags[i * fs]:
            scalar_q(d, x[i * xs], &nc)
            if nc:
                return i
    return -1


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _nz_flags(const fin_t* x, Py_ssize_t n, Py_ssize_t k, double thr, uint64_t* out,
                    Py_ssize_t os, uint8_t* fl) noexcept nogil:
    """NearlyZero flags: 1 unless every component is at rest (nz_at_rest); into the matrix's flag
    column and into `fl` (one byte per row)."""
    cdef Py_ssize_t i, j
    cdef uint8_t moving
    for i in range(n):
        moving = 0
        for j in range(k):
            if not nz_at_rest(<double>x[i * k + j], thr):
                moving = 1
                break
        out[i * os] = moving
        fl[i] = moving


cdef void _dq_column(const qdesc* d, const uint64_t* c, Py_ssize_t cs, double* out, Py_ssize_t os,
                     Py_ssize_t n, const uint64_t* flags) noexcept nogil:
    """Valid carriers of a float scalar slot (stride cs) into float64 (stride os) with the codecs'
    array loops; with flags (a NearlyZero's flag column, stride cs), rows whose flag is 0 get 0.0."""
    cdef Py_ssize_t i
    dq_valid_array(d, c, 1, cs, out, 1, os, n)
    if flags != NULL:
        for i in range(n):
            if flags[i * cs] == 0:
                out[i * os] = 0.0


# ------------------------------------------------------------------------------------------------
# Small helpers (GIL held).

cdef object _float_array(object a, object owner):
    """`a` as a C-contiguous native float32/float64 array (copied only when it must be).
    `owner` names the column in error messages (a str, or a (plan, field) pair formatted lazily)."""
    dt = a.dtype
    k = dt.kind
    if k == 'f':
        if dt.itemsize == 4:
            return contig(a, _F32)
        if dt.itemsize <= 8:
            return contig(a, _F64)
        raise TypeError(f"{_owner(owner)}: dtype {dt} does not convert safely to float64")
    if k in 'iub':
        return contig(a, _F64)
    raise TypeError(f"{_owner(owner)}: expected a float or integer array, got dtype {dt}")


cdef str _owner(object owner):
    if isinstance(owner, tuple):
        plan, f = owner
        return f"field {plan.names[f]!r}"
    return owner


cdef char _EMPTY[8]


cdef const uint8_t* _buf_ptr(object a) except NULL:
    """Data pointer of a C-contiguous NumPy array. The memory belongs to the array, which the
    caller holds for as long as it uses the pointer (NumPy's buffer release frees nothing)."""
    cdef Py_buffer v
    cdef const uint8_t* p
    PyObject_GetBuffer(a, &v, PyBUF_SIMPLE)
    p = <const uint8_t*>v.buf
    PyBuffer_Release(&v)
    return p if p != NULL else <const uint8_t*>_EMPTY


cdef uint8_t* _wbuf_ptr(object a) except NULL:
    """Writable data pointer of a C-contiguous NumPy array (see _buf_ptr)."""
    cdef Py_buffer v
    cdef uint8_t* p
    PyObject_GetBuffer(a, &v, PyBUF_SIMPLE | PyBUF_WRITABLE)
    p = <uint8_t*>v.buf
    PyBuffer_Release(&v)
    return p if p != NULL else <uint8_t*>_EMPTY


cdef str _range_text(object codec):
    """The value range a float codec clamps to, for strict-mode messages."""
    kind = codec.kind
    if kind == "Bounded":
        return f"[{codec.min!r}, {codec.max!r}]"
    if kind == "Fixed":
        b = codec.bits
        lo, hi = ((-(1 << (b - 1)), (1 << (b - 1)) - 1) if codec.signed else (0, (1 << b) - 1))
        return f"[{codec.dequantize(lo)!r}, {codec.dequantize(hi)!r}]"
    if kind == "PowerCurve":
        return f"[{-codec.max!r}, {codec.max!r}]"
    if kind == "Grid":
        half = codec.cell_size * 2.0 ** (codec.cell_bits - 1)
        return f"[{-half!r}, {half!r})"
    return "the finite numbers"


# ------------------------------------------------------------------------------------------------

cdef inline double _nz_num(Plan p, Py_ssize_t s, object v) except? -1.0:
    """The number a NearlyZero flag compares with the threshold, of slot s's value: an Enum's
    label (a str, or a 0-d array of one) counts as its index; anything else as Plan._num.
    (A function, not a method: Plan's vtable, which other modules cimport, stays as it is.)"""
    cdef uint64_t c = 0
    if p.slots[s].d.kind == K_ENUM and (isinstance(v, str) or isinstance(v, np.ndarray)):
        p._exact(s, v, &c)
        return <double>c
    return p._num(s, v)


cdef class Plan:
    """A schema's fields compiled into a C array of slots (see `_plan.pxd`).

    `Plan(codecs, names, *, strict=False)`. Built by `Schema`; not pickled (a schema pickles by
    spec and rebuilds its plan). Holds one mutable thing: the cumulative clamp counters.
    """

    def __init__(self, codecs, names, *, strict=False):
        cdef Py_ssize_t f, s, n, j, k
        cdef Codec c, inner
        if self.slots != NULL:
            raise TypeError("Plan is already initialized")
        codecs = tuple(codecs)
        names = tuple(names)
        if len(codecs) != len(names):
            raise SchemaError(f"Plan: {len(codecs)} codecs but {len(names)} names")
        for f in range(len(codecs)):
            if not isinstance(codecs[f], Codec):
                raise SchemaError(f"field {names[f]!r}: expected a codec, got {codecs[f]!r}")
            if not isinstance(names[f], str):
                raise SchemaError(f"field names must be strings, got {names[f]!r}")
        self.codecs = codecs
        self.names = tuple([_intern(nm) for nm in names])
        self.strict = bool(strict)
        self.nfields = len(codecs)
        n = 0
        for f in range(self.nfields):
            n += _slot_count(<Codec>codecs[f])
        self.nslots = n
        self.slots = <slot_t*>PyMem_Malloc(max(n, 1) * sizeof(slot_t))
        self.field_first = <Py_ssize_t*>PyMem_Malloc((self.nfields + 1) * sizeof(Py_ssize_t))
        self.fkind = <int*>PyMem_Malloc(max(self.nfields, 1) * sizeof(int))
        self.clamps = <Py_ssize_t*>PyMem_Malloc(max(self.nfields, 1) * sizeof(Py_ssize_t))
        if self.slots == NULL or self.field_first == NULL or self.fkind == NULL or self.clamps == NULL:
            raise MemoryError()
        memset(self.slots, 0, max(n, 1) * sizeof(slot_t))
        memset(self.clamps, 0, max(self.nfields, 1) * sizeof(Py_ssize_t))
        slot_codecs = []
        slot_names = []
        s = 0
        for f in range(self.nfields):
            c = <Codec>codecs[f]
            nm = names[f]
            self.field_first[f] = s
            self.fkind[f] = c.group
            if c.group == F_FLOAT or c.group == F_EXACT or c.group == F_QUAT or c.group == F_UVEC:
                self._set_slot(s, c, f, 0)
                slot_codecs.append(c)
                slot_names.append(f"field {nm!r}")
                s += 1
            elif c.group == F_VECTOR:
                for j, comp in enumerate((<Vector>c).codecs):
                    self._set_slot(s, <Codec>comp, f, j)
                    slot_codecs.append(comp)
                    slot_names.append(f"field {nm!r}[{j}]")
                    s += 1
            elif c.group == F_NZ or c.group == F_NZVEC:
                inner = (<NearlyZero>c).inner
                k = _slot_count(inner)
                self.slots[s].d.kind = K_NZFLAG
                self.slots[s].d.bits = 1
                self.slots[s].d.maxcode = 1
                self.slots[s].field = <int>f
                self.slots[s].comp = 0
                self.slots[s].span = <int>k
                self.slots[s].nfloat = 0
                self.slots[s].threshold = (<NearlyZero>c).threshold
                slot_codecs.append(None)
                slot_names.append(f"field {nm!r} (NearlyZero flag)")
                s += 1
                if c.group == F_NZVEC:
                    for j, comp in enumerate((<Vector>inner).codecs):
                        self._set_slot(s, <Codec>comp, f, j)
                        slot_codecs.append(comp)
                        slot_names.append(f"field {nm!r}[{j}]")
                        s += 1
                else:
                    self._set_slot(s, inner, f, 0)
                    slot_codecs.append(inner)
                    slot_names.append(f"field {nm!r}")
                    s += 1
            else:
                raise SchemaError(f"field {nm!r}: unsupported codec {c!r}")
        self.field_first[self.nfields] = s
        self.slot_codecs = tuple(slot_codecs)
        self.slot_names = tuple(slot_names)
        labels = []
        index = []
        for comp in slot_codecs:
            if comp is not None and comp.kind == "Enum" and comp.labels is not None:
                labels.append(tuple(comp.labels))
                index.append({l: i for i, l in enumerate(comp.labels)})
            else:
                labels.append(None)
                index.append(None)
        self.slot_labels = tuple(labels)
        self.slot_index = tuple(index)
        mx = 0
        mn = 0
        s = 0
        while s < self.nslots:
            mx += self.slots[s].d.bits
            mn += self.slots[s].d.bits
            if self.slots[s].d.kind == K_NZFLAG:
                for j in range(1, self.slots[s].span + 1):
                    mx += self.slots[s + j].d.bits
                s += self.slots[s].span + 1
            else:
                s += 1
        self.max_bits = mx
        self.min_bits = mn

    def __dealloc__(self):
        PyMem_Free(self.slots)
        PyMem_Free(self.field_first)
        PyMem_Free(self.fkind)
        PyMem_Free(self.clamps)

    def __reduce__(self):
        raise TypeError("Plan is not picklable; pickle the Schema (it rebuilds its plan)")

    def __repr__(self):
        return f"<Plan: {self.nfields} fields, {self.nslots} slots, {self.min_bits}..{self.max_bits} bits>"

    # -------------------------------------------------------------------------------- layout

    @property
    def nslot(self):
        """Slots per record: the width of the code matrix."""
        return self.nslots

    def slot_ranges(self):
        """For each field, its (first, end) slot columns in the code matrix."""
        return tuple((self.field_first[f], self.field_first[f + 1]) for f in range(self.nfields))

    def slot_table(self):
        """One dict per slot: field, comp, kind ('flag' or the codec kind), bits, span, name."""
        out = []
        for s in range(self.nslots):
            sc = self.slot_codecs[s]
            out.append({
                "field": self.slots[s].field, "comp": self.slots[s].comp,
                "kind": "flag" if sc is None else sc.kind, "bits": self.slots[s].d.bits,
                "span": self.slots[s].span, "name": self.slot_names[s],
            })
        return out

    # -------------------------------------------------------------------------------- clamps

    def clamp_counts(self):
        """Cumulative clamped (or substituted) values per field, a tuple in field order."""
        return tuple(self.clamps[f] for f in range(self.nfields))

    def reset_clamps(self):
        """Zero the clamp counters; returns the counts they had."""
        counts = self.clamp_counts()
        memset(self.clamps, 0, max(self.nfields, 1) * sizeof(Py_ssize_t))
        return counts

    def uncount_clamps(self, counts):
        """Take back the counts (a tuple by field) of a call whose result was not used: a
        snapshot that quantizes again without its bad rows counts each clean value once."""
        cdef Py_ssize_t f
        if len(counts) != self.nfields:
            raise ValueError(f"uncount_clamps: expected {self.nfields} counts, got {len(counts)}")
        for f in range(self.nfields):
            self.clamps[f] -= <Py_ssize_t>counts[f]

    # -------------------------------------------------------------------------------- C interface (pxd)

    cdef void put_row(self, bw_t* w, const uint64_t* row) noexcept nogil:
        """Append one record's codes (a valid row) to `w`; the caller reserved max_bits."""
        cdef Py_ssize_t s = 0
        cdef const slot_t* sl
        while s < self.nslots:
            sl = &self.slots[s]
            bw_put(w, to_wire(&sl.d, row[s]), sl.d.bits)
            if sl.d.kind == K_NZFLAG and row[s] == 0:
                s += sl.span + 1
            else:
                s += 1

    cdef Py_ssize_t get_row(self, br_t* r, uint64_t* row, int* err) noexcept nogil:
        """Read and check one record from `r` into `row`. Returns -1, or the slot that failed with
        `err` E_SHORT (r.pos at the start of that code) or E_INVALID (r.pos at the start of it)."""
        cdef Py_ssize_t s = 0, j
        cdef const slot_t* sl
        cdef uint64_t w = 0
        while s < self.nslots:
            sl = &self.slots[s]
            if br_get(r, sl.d.bits, &w) < 0:
                err[0] = E_SHORT
                return s
            if sl.d.kind == K_NZFLAG:
                row[s] = w
                if w == 0:
                    for j in range(1, sl.span + 1):
                        row[s + j] = 0
                    s += sl.span + 1
                else:
                    s += 1
                continue
            w = from_wire(&sl.d, w)
            row[s] = w
            if not slot_valid(sl, w):
                r.pos -= sl.d.bits
                err[0] = E_INVALID
                return s
            s += 1
        err[0] = E_OK
        return -1

    cdef Py_ssize_t row_invalid(self, const uint64_t* row) noexcept nogil:
        """The first slot whose carrier is not valid (a governed slot under a 0 flag must be 0), or -1."""
        cdef Py_ssize_t s = 0, j
        cdef const slot_t* sl
        while s < self.nslots:
            sl = &self.slots[s]
            if not slot_valid(sl, row[s]):
                return s
            if sl.d.kind == K_NZFLAG and row[s] == 0:
                for j in range(1, sl.span + 1):
                    if row[s + j] != 0:
                        return s + j
                s += sl.span + 1
            else:
                s += 1
        return -1

    # -------------------------------------------------------------------------------- one record: public

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    @cython.always_allow_keywords(False)
    def encode(self, record):
        """One record (mapping, object with the field attributes, or tuple in field order) -> bytes,
        bit-packed and padded to a whole byte."""
        return self.one(record, OP_ENCODE)

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    @cython.always_allow_keywords(False)
    def decode(self, data):
        """bytes (any contiguous buffer) of one record -> dict of values. DecodeError if the message
        is short, long, has nonzero padding or carries a code that is not valid."""
        return self.one(data, OP_DECODE)

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    @cython.always_allow_keywords(False)
    def quantize(self, record):
        """One record -> tuple of codes (one per field; tuples for vectors; (flag, inner) for NearlyZero)."""
        return self.one(record, OP_QUANTIZE)

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    @cython.always_allow_keywords(False)
    def roundtrip(self, record):
        """One record -> dict of the values the receiver will see."""
        return self.one(record, OP_ROUNDTRIP)

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    @cython.always_allow_keywords(False)
    def dequantize(self, codes):
        """A codes tuple -> dict of values; DecodeError for a code that is not valid."""
        return self.one(codes, OP_DEQUANTIZE)

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    @cython.always_allow_keywords(False)
    def encode_codes(self, codes):
        """A codes tuple -> bytes; RangeError for a code that is not valid."""
        return self.one(codes, OP_ENCODE_CODES)

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    @cython.always_allow_keywords(False)
    def decode_codes(self, data):
        """bytes of one record -> tuple of codes (same checks as decode)."""
        return self.one(data, OP_DECODE_CODES)

    @cython.binding(False)       # a plain method: bound, it is called without a CyFunction layer
    @cython.always_allow_keywords(False)
    def valid(self, codes):
        """Whether `codes` is a tuple of valid codes, one per field: pure integer work, never raises."""
        return self.one(codes, OP_VALID)

    cdef object one(self, object arg, int op):
        """The one-record call `op` (OP_*, _plan.pxd): the row on the stack, or on the heap for
        plans of more than ROW_LOCAL slots."""
        cdef uint64_t local[ROW_LOCAL]
        if self.nslots <= ROW_LOCAL:
            return self._one_row(arg, op, local)
        cdef uint64_t* row = <uint64_t*>PyMem_Malloc(self.nslots * sizeof(uint64_t))
        if row == NULL:
            raise MemoryError()
        try:
            return self._one_row(arg, op, row)
        finally:
            PyMem_Free(row)

    cdef inline object _one_row(self, object arg, int op, uint64_t* row):
        cdef Py_ssize_t bad = -1
        if op == OP_ENCODE:
            self._fill_row(arg, row)
            return self._row_bytes(row)
        if op == OP_DECODE:
            self._read_one(arg, row)
            return self._row_values(row)
        if op == OP_QUANTIZE:
            self._fill_row(arg, row)
            return self._row_codes(row)
        if op == OP_ROUNDTRIP:
            self._fill_row(arg, row)
            return self._row_values(row)
        if op == OP_DEQUANTIZE:
            self._codes_in(arg, row, DecodeError)
            return self._row_values(row)
        if op == OP_ENCODE_CODES:
            self._codes_in(arg, row, RangeError)
            return self._row_bytes(row)
        if op == OP_DECODE_CODES:
            self._read_one(arg, row)
            return self._row_codes(row)
        try:                            # OP_VALID: pure integer work, never raises
            return self._codes_row(arg, row, &bad) == C_OK
        except Exception:
            return False

    # -------------------------------------------------------------------------------- batches: columns -> matrix

    def quantize_matrix(self, columns, out=None, str owner="quantize_matrix"):
        """Value columns -> (code matrix (N, nslots) uint64, clamp counts per field (tuple)).

        Every quantization counts its clamps into the plan's cumulative counters too; in strict
        mode the first clamped value raises RangeError naming the field, row and value. An error
        that concerns one row (a zero or non-finite quaternion or vector, a value an exact codec
        refuses, a strict-mode clamp) carries it as the exception's ``row`` attribute. `owner`
        names the public call in errors about the columns themselves.
        """
        cdef Py_ssize_t f, s, k, j, n, S = self.nslots, nc, bad
        cdef int fk, st = 0
        cdef uint64_t* m
        cdef const uint8_t* xp
        cdef const uint8_t* flags
        cdef int xt
        cdef Py_ssize_t xsz
        cdef uint64_t* tp
        cdef void* scratch = NULL       # grow-only, freed on the way out
        cdef size_t scap = 0
        cols = self._columns(columns, owner)
        n = self._nrows(cols, owner, False)
        if out is None:
            mat = np.empty((n, S), dtype=_U64)
        else:
            mat = self._check_matrix_out(out, n, owner)
        counts = [0] * self.nfields
        if n == 0 or S == 0:
            return mat, tuple(counts)
        m = <uint64_t*>_wbuf_ptr(mat)
        try:
            for f in range(self.nfields):
                s = self.field_first[f]
                k = self.field_first[f + 1] - s
                fk = self.fkind[f]
                a = cols[f]
                if (fk != F_EXACT and (fk != F_VECTOR or self._all_float(s, s + k))
                        and _float_view(a, n, self._value_k(f), &xp, &xt)):
                    x = a       # the common case: float32 / float64, C-contiguous, the right shape
                else:
                    if not isinstance(a, np.ndarray):
                        a = np.asarray(a)
                    self._check_shape(f, a, self._value_shape(f, n), owner, False)
                    if (fk == F_NZ or fk == F_NZVEC) and a.dtype.kind in 'UO':
                        # labels of an Enum inside NearlyZero: their indices, as the codec takes them
                        try:
                            a = np.asarray((<NearlyZero>self.codecs[f])._label_indices(a))
                        except (ValueError, TypeError) as e:
                            raise self._wrap(f, e) from None
                    if fk == F_EXACT:
                        if not self._exact_fast(s, a, m, n):
                            self._exact_column(f, s, a, mat)
                        continue
                    if fk == F_VECTOR and not self._all_float(s, s + k):
                        for j in range(k):
                            if _is_float_kind(self.slots[s + j].d.kind):
                                counts[f] += self._float_column(f, s + j, a[:, j], m, n, NULL, 0)
                            elif not self._exact_fast(s + j, a[:, j], m, n):
                                self._exact_column(f, s + j, a[:, j], mat)
                        continue
                    x = _float_array(a, (self, f))
                    xp = _buf_ptr(x)
                    xt = 0 if x.dtype.itemsize == 4 else 1
                if fk == F_FLOAT:
                    counts[f] += self._float_ptr(f, s, xp, xt, 1, m, n, NULL, 0)
                elif fk == F_VECTOR:
                    xsz = 4 if xt == 0 else 8
                    for j in range(k):
                        counts[f] += self._float_ptr(f, s + j, xp + j * xsz, xt, k, m, n, NULL, 0)
                elif fk == F_QUAT or fk == F_UVEC:
                    tp = <uint64_t*>_scratch(&scratch, &scap, sizeof(uint64_t) * n)
                    with nogil:
                        # the codecs' vectorized loop into a contiguous column, then into the matrix
                        bad = multi_q_array(&self.slots[s].d, xp, xt, tp, 1, n, &st)
                        if bad < 0:
                            for j in range(n):
                                m[j * S + s] = tp[j]
                    if bad >= 0:
                        what = "quaternion" if fk == F_QUAT else "vector"
                        e = RangeError(f"field {self.names[f]!r}: row {bad}: "
                                       f"{'zero' if st == ST_ZERO else 'non-finite'} {what} {tuple(x[bad].tolist())!r}")
                        e.row = bad
                        raise e
                else:   # F_NZ, F_NZVEC
                    k -= 1
                    flags = <const uint8_t*>_scratch(&scratch, &scap, n)
                    with nogil:
                        if xt == 0:
                            _nz_flags(<const float*>xp, n, k, self.slots[s].threshold, m + s, S, <uint8_t*>flags)
                        else:
                            _nz_flags(<const double*>xp, n, k, self.slots[s].threshold, m + s, S, <uint8_t*>flags)
                    xsz = 4 if xt == 0 else 8
                    for j in range(k):
                        if _is_float_kind(self.slots[s + 1 + j].d.kind):
                            # only the rows whose flag is 1 are quantized (and counted); the rest hold 0
                            counts[f] += self._float_ptr(f, s + 1 + j, xp + j * xsz, xt, k, m, n, flags, 1)
                        else:
                            moving = np.frombuffer(PyBytes_FromStringAndSize(<const char*>flags, n), dtype=np.bool_)
                            col = np.zeros(n, dtype=_U64)
                            try:
                                col[moving] = self._exact_codes(f, s + 1 + j, np.asarray(a).reshape(n, k)[moving, j])
                            except ValueError as e:
                                # (the row among the moving ones -> the row of the column)
                                sub = getattr(e, "row", None)
                                if not isinstance(sub, int):
                                    raise
                                row = int(np.flatnonzero(moving)[sub])
                                e2 = type(e)(str(e).replace(f"row {sub}:", f"row {row}:", 1))
                                e2.row = row
                                raise e2 from None
                            mat[:, s + 1 + j] = col
        finally:
            PyMem_Free(scratch)

        for f in range(self.nfields):
            self.clamps[f] += counts[f]
        return mat, tuple(counts)

    # -------------------------------------------------------------------------------- batches: matrix <-> codes / values

    def valid_matrix(self, matrix):
        """The first (row, slot) of a code matrix whose code is not valid, or None."""
        a = self._matrix(matrix, "valid_matrix")
        if a.shape[0] == 0 or self.nslots == 0:
            return None
        return self._invalid_at(<const uint64_t*>_buf_ptr(a), a.shape[0])

    def matrix_to_codes(self, matrix):
        """Code matrix -> dict of per-field code arrays in the codecs' array shapes and dtypes:
        (N,) scalars, Quat and UnitVector; (N, k) Vector; (N, 1 + k) NearlyZero (flag in column 0)."""
        a = self._matrix(matrix, "matrix_to_codes")
        n = a.shape[0]
        out = {}
        for f in range(self.nfields):
            s = self.field_first[f]
            e = self.field_first[f + 1]
            fk = self.fkind[f]
            dt = self.codecs[f].code_dtype
            src = a.view(_I64) if dt.kind == 'i' else a
            if fk == F_VECTOR or fk == F_NZ or fk == F_NZVEC:
                out[self.names[f]] = src[:, s:e].astype(dt)
            else:
                out[self.names[f]] = src[:, s].astype(dt)
        return out

    def codes_to_matrix(self, code_columns, out=None):
        """Dict of per-field code arrays (as matrix_to_codes gives) -> code matrix; DecodeError for
        a code that is not valid (naming the record and field)."""
        owner = "codes_to_matrix"
        cols = self._columns(code_columns, owner)
        n = self._nrows(cols, owner, True)
        if out is None:
            mat = np.empty((n, self.nslots), dtype=_U64)
        else:
            mat = self._check_matrix_out(out, n, owner)
        for f in range(self.nfields):
            s = self.field_first[f]
            e = self.field_first[f + 1]
            fk = self.fkind[f]
            a = cols[f]
            if not isinstance(a, np.ndarray):
                a = np.asarray(a)
            if a.dtype.kind not in 'iub':
                raise TypeError(f"{owner}: field {self.names[f]!r}: codes must be integers, got dtype {a.dtype}")
            shape = (n, e - s) if (fk == F_VECTOR or fk == F_NZ or fk == F_NZVEC) else (n,)
            self._check_shape(f, a, shape, owner, True)
            if a.dtype.kind == 'i':
                a = a.astype(_I64).view(_U64)
            mat[:, s:e] = a.reshape(n, e - s)
        if n and self.nslots:
            at = self._invalid_at(<const uint64_t*>_buf_ptr(mat), n)
            if at is not None:
                raise self._matrix_error(mat, at, DecodeError)
        return mat

    def dequantize_matrix(self, matrix):
        """Code matrix -> dict of value arrays: float64 (N,) / (N, k) / (N, 4) / (N, 3); exact
        fields in their codec's value dtype (enum columns carry indices). DecodeError for a code
        that is not valid."""
        a = self._matrix(matrix, "dequantize_matrix")
        if a.shape[0] and self.nslots:
            at = self._invalid_at(<const uint64_t*>_buf_ptr(a), a.shape[0])
            if at is not None:
                raise self._matrix_error(a, at, DecodeError)
        return self._dequantize(a)

    def matrix_records(self, matrix, *, bint codes=False):
        """The records of a code matrix, one per row: dicts of values as `dequantize` gives them,
        or with ``codes=True`` tuples of codes as `quantize` gives them (what `encode_codes`
        takes). DecodeError for a code that is not valid."""
        cdef Py_ssize_t i, n, S = self.nslots
        cdef const uint64_t* m
        cdef list out
        a = self._matrix(matrix, "matrix_records")
        n = a.shape[0]
        if n == 0:
            return []
        m = <const uint64_t*>_buf_ptr(a)
        if S:
            at = self._invalid_at(m, n)
            if at is not None:
                raise self._matrix_error(a, at, DecodeError)
        out = [None] * n
        for i in range(n):
            out[i] = self._row_codes(m + i * S) if codes else self._row_values(m + i * S)
        return out

    def dequantize_valid(self, matrix):
        """dequantize_matrix without its validity pass, for a matrix
        known to hold valid codes: a Snapshot's, made by quantize_matrix or checked when it was
        decoded, unpickled or built from codes. (Given invalid codes it returns meaningless
        values; it reads nothing out of bounds: dequantizing is arithmetic on the codes.)"""
        return self._dequantize(self._matrix(matrix, "dequantize_valid"))

    # -------------------------------------------------------------------------------- batches: bits

    def encode_matrix(self, matrix):
        """Code matrix -> bytes: the N records back to back in one bit stream, padded at the end.
        RangeError for a code that is not valid."""
        a = self._matrix(matrix, "encode_matrix")
        if a.shape[0] and self.nslots:
            at = self._invalid_at(<const uint64_t*>_buf_ptr(a), a.shape[0])
            if at is not None:
                raise self._matrix_error(a, at, RangeError)
        return self._encode_rows(a)

    def decode_matrix(self, data, count, out=None):
        """bytes of `count` records back to back -> code matrix (count, nslots) uint64, every code
        checked; DecodeError (naming the record, field and bit) for a short, long or corrupt message."""
        cdef Py_buffer view
        cdef br_t r
        cdef int err = 0
        cdef Py_ssize_t i, n, bad = -1, S = self.nslots
        cdef uint64_t* m
        if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, np.integer)):
            raise TypeError(f"decode_matrix: count must be an integer, got {type(count).__name__}")
        if count < 0:
            raise ValueError(f"decode_matrix: count must be non-negative, got {count}")
        _get_bytes(data, &view)
        try:
            br_init(&r, <const uint8_t*>view.buf, view.len)
            if self.min_bits and count > r.nbits // self.min_bits:
                raise DecodeError(f"message too short: {count} records take at least "
                                  f"{count * self.min_bits} bits, the message has {r.nbits} bits ({r.nbytes} byte{'' if r.nbytes == 1 else 's'})")
            n = count
            if out is None:
                mat = np.empty((n, S), dtype=_U64)
            else:
                mat = self._check_matrix_out(out, n, "decode_matrix")
            if n and S:
                m = <uint64_t*>_wbuf_ptr(mat)
                with nogil:
                    for i in range(n):
                        bad = self.get_row(&r, m + i * S, &err)
                        if bad >= 0:
                            break
                if bad >= 0:
                    raise self._read_error(&r, bad, err, i)
            self._check_end(&r, f"record {n - 1}" if n else "the message")
        finally:
            PyBuffer_Release(&view)
        return mat

    # -------------------------------------------------------------------------------- batches: public (schema)

    def encode_many(self, columns):
        """Value columns -> bytes (quantize_matrix then bit-pack; no second validity pass)."""
        mat, _ = self.quantize_matrix(columns, None, "encode_many")
        return self._encode_rows(mat)

    def decode_many(self, data, count):
        """bytes of `count` records -> dict of value arrays (decode_matrix then dequantize).

        Records of one width (no NearlyZero field) whose message has exactly the right length
        are first read the direct way (`_decode_fixed`); any error sends the call the general
        way, which raises it as decode_matrix does."""
        if type(count) is int and self.min_bits == self.max_bits and 0 < count <= ((<Py_ssize_t>1) << 40):
            out = self._decode_fixed(data, count)
            if out is not None:
                return out
        return self._dequantize(self.decode_matrix(data, count))

    cdef void _set_slot(self, Py_ssize_t s, Codec c, Py_ssize_t f, Py_ssize_t comp):
        self.slots[s].d = c.d
        self.slots[s].field = <int>f
        self.slots[s].comp = <int>comp
        self.slots[s].span = 0
        self.slots[s].nfloat = 4 if c.group == F_QUAT else (3 if c.group == F_UVEC else 1)
        self.slots[s].threshold = 0.0

    cdef int _on_clamp(self, Py_ssize_t s, double x, Py_ssize_t nc) except -1:
        if self.strict:
            raise self._clamp_error(s, x, -1)
        self.clamps[self.slots[s].field] += nc
        return 0

    cdef object _clamp_error(self, Py_ssize_t s, double x, Py_ssize_t row):
        codec = self.slot_codecs[s]
        where = f"row {row}: " if row >= 0 else ""
        if codec.kind == "Angle":
            return RangeError(f"{self.slot_names[s]}: {where}value {x!r} is not finite "
                              f"(strict mode; {codec!r} would encode it as 0)")
        return RangeError(f"{self.slot_names[s]}: {where}value {x!r} outside {_range_text(codec)} "
                          f"of {codec!r} (strict mode)")

    cdef double _num_slow(self, Py_ssize_t s, object v) except? -1.0:
        if v is None or isinstance(v, (str, bytes, tuple, list, dict)):
            raise TypeError(f"{self.slot_names[s]}: expected a number, got {type(v).__name__}")
        try:
            return PyFloat_AsDouble(v)
        except OverflowError:
            return math.inf if v > 0 else -math.inf
        except TypeError:
            raise TypeError(f"{self.slot_names[s]}: expected a number, got {type(v).__name__}") from None

    cdef inline double _num(self, Py_ssize_t s, object v) except? -1.0:
        if type(v) is float:
            return PyFloat_AS_DOUBLE(v)
        return self._num_slow(s, v)

    cdef int _exact_slow(self, Py_ssize_t s, object v, uint64_t* out) except -1:
        """The exact conversion with its checks and messages (labels, NumPy and float values, errors)."""
        cdef const qdesc* d = &self.slots[s].d
        cdef str nm = self.slot_names[s]
        codec = self.slot_codecs[s]
        if isinstance(v, np.ndarray) and (<object>v).ndim == 0:
            # a 0-d array is its one value (docs/schema-format.md "Records"), as for float fields
            v = (<object>v)[()]
        if d.kind == K_ENUM:
            if isinstance(v, str):
                idx = self.slot_index[s]
                if idx is not None and v in idx:
                    out[0] = <uint64_t>idx[v]
                    return 0
                raise RangeError(f"{nm}: unknown label {str(v)!r} for {codec!r}")   # (a NumPy str as the str)
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"{nm}: expected a label or an index, got {type(v).__name__}")
            iv = int(v)
            if 0 <= iv < <object>d.maxcode + 1:
                out[0] = <uint64_t>iv
                return 0
            raise RangeError(f"{nm}: index {iv} outside 0..{d.maxcode} of {codec!r}")
        if isinstance(v, (bool, np.bool_)) and d.kind != K_BOOL:
            # (True is a Python int, but a health of True is a bug: refused as Enum refuses it)
            raise TypeError(f"{nm}: expected an integer, got bool ({v!r}) for {codec!r}")
        if isinstance(v, (bool, np.bool_, int, np.integer)):
            iv = int(v)
        elif isinstance(v, (float, np.floating)):
            fv = float(v)
            if not (math.isfinite(fv) and fv.is_integer()):
                raise RangeError(f"{nm}: {fv!r} is not an integer ({codec!r})")
            iv = int(fv)
        else:
            raise TypeError(f"{nm}: expected an integer, got {type(v).__name__}")
        if qdesc_signed(d):
            if d.smin <= iv <= d.smax:
                out[0] = <uint64_t>(<int64_t>iv)
                return 0
            raise RangeError(f"{nm}: value {iv} outside {d.smin}..{d.smax} of {codec!r}")
        if d.kind == K_IRANGE:
            if d.smin <= iv <= d.smax:
                out[0] = <uint64_t>(iv - d.smin)
                return 0
            raise RangeError(f"{nm}: value {iv} outside {d.smin}..{d.smax} of {codec!r}")
        if 0 <= iv <= d.maxcode:
            out[0] = <uint64_t>iv
            return 0
        raise RangeError(f"{nm}: value {iv} outside 0..{d.maxcode} of {codec!r}")

    cdef inline int _exact(self, Py_ssize_t s, object v, uint64_t* out) except -1:
        cdef const qdesc* d = &self.slots[s].d
        cdef int ovf = 0
        cdef long long sv
        cdef PyObject* item
        if type(v) is int or (type(v) is bool and d.kind == K_BOOL):
            sv = PyLong_AsLongLongAndOverflow(v, &ovf)
            if ovf == 0:
                if d.kind == K_INT:
                    if sv >= d.smin and sv <= d.smax:
                        out[0] = <uint64_t>sv
                        return 0
                elif d.kind == K_IRANGE:
                    if sv >= d.smin and sv <= d.smax:
                        out[0] = <uint64_t>sv - <uint64_t>d.smin     # (mod 2**64: the true difference)
                        return 0
                elif sv >= 0 and <uint64_t>sv <= d.maxcode:
                    out[0] = <uint64_t>sv
                    return 0
        elif type(v) is str and d.kind == K_ENUM:
            idx = self.slot_index[s]
            if idx is not None:
                item = PyDict_GetItemWithError(idx, v)
                if item != NULL:
                    out[0] = <uint64_t>(<object>item)
                    return 0
        return self._exact_slow(s, v, out)

    cdef object _items(self, Py_ssize_t f, object v, Py_ssize_t k, PyObject*** items):
        """The k components of a vector value: returns the object that owns `items`."""
        cdef object seq
        if type(v) is tuple:
            seq = v
        elif isinstance(v, list):
            # a copy: the list's item array would dangle if a component's __float__ / __index__
            # resized the list while we read it
            seq = PyList_AsTuple(v)
        elif isinstance(v, (str, bytes, dict)) or v is None:
            raise TypeError(f"field {self.names[f]!r}: expected a sequence of {k} numbers, got {type(v).__name__}")
        else:
            try:
                seq = PySequence_Fast(v, b"not a sequence")
            except TypeError:
                raise TypeError(f"field {self.names[f]!r}: expected a sequence of {k} numbers, "
                                f"got {type(v).__name__}") from None
        if PySequence_Fast_GET_SIZE(seq) != k:
            raise SchemaError(f"field {self.names[f]!r}: expected {k} values, got {PySequence_Fast_GET_SIZE(seq)}")
        items[0] = PySequence_Fast_ITEMS(seq)
        return seq

    cdef inline int _float_in(self, Py_ssize_t s, double x, uint64_t* row) except -1:
        """A float slot's code from its value, clamps counted (or raised, strict)."""
        cdef Py_ssize_t nc = 0
        row[s] = scalar_q(&self.slots[s].d, x, &nc)
        if nc:
            self._on_clamp(s, x, nc)
        return 0

    cdef int _slot_in(self, Py_ssize_t s, object v, uint64_t* row) except -1:
        """One scalar slot (float or exact) from a Python value."""
        if _is_float_kind(self.slots[s].d.kind):
            return self._float_in(s, self._num(s, v), row)
        return self._exact(s, v, &row[s])

    cdef int _field_in(self, Py_ssize_t f, object v, uint64_t* row) except -1:
        cdef Py_ssize_t s = self.field_first[f]
        cdef Py_ssize_t k = self.field_first[f + 1] - s
        cdef Py_ssize_t j
        cdef int fk = self.fkind[f]
        cdef int st
        cdef double x[4]
        cdef double a
        cdef uint64_t c = 0
        cdef PyObject** items = NULL
        cdef bint moving
        cdef object keep
        if fk == F_FLOAT:
            self._float_in(s, self._num(s, v), row)
        elif fk == F_EXACT:
            self._exact(s, v, &row[s])
        elif fk == F_QUAT or fk == F_UVEC:
            k = self.slots[s].nfloat
            if type(v) is tuple and PyTuple_GET_SIZE(v) == k:     # (the common case, inline)
                items = PySequence_Fast_ITEMS(v)
            else:
                keep = self._items(f, v, k, &items)
            for j in range(k):
                x[j] = self._num(s, <object>items[j])
            if fk == F_QUAT:
                st = quat_q(&self.slots[s].d, x[0], x[1], x[2], x[3], &c)
            else:
                st = uvec_q(&self.slots[s].d, x[0], x[1], x[2], &c)
            if st != ST_OK:
                what = "quaternion" if fk == F_QUAT else "vector"
                reason = "zero" if st == ST_ZERO else "non-finite"
                raise RangeError(f"field {self.names[f]!r}: {reason} {what} {tuple([x[j] for j in range(k)])!r}")
            row[s] = c
        elif fk == F_VECTOR:
            if type(v) is tuple and PyTuple_GET_SIZE(v) == k:     # (the common case, inline)
                items = PySequence_Fast_ITEMS(v)
            else:
                keep = self._items(f, v, k, &items)
            for j in range(k):
                self._slot_in(s + j, <object>items[j], row)
        elif fk == F_NZ:
            a = _nz_num(self, s + 1, v)
            if nz_at_rest(a, self.slots[s].threshold):
                row[s] = 0
                row[s + 1] = 0
            else:
                row[s] = 1
                self._slot_in(s + 1, v, row)
        else:   # F_NZVEC
            k -= 1
            if type(v) is tuple and PyTuple_GET_SIZE(v) == k:     # (the common case, inline)
                items = PySequence_Fast_ITEMS(v)
            else:
                keep = self._items(f, v, k, &items)
            moving = False
            for j in range(k):
                a = _nz_num(self, s + 1 + j, <object>items[j])
                if j < 4:
                    x[j] = a                # (each value converted once)
                if not nz_at_rest(a, self.slots[s].threshold):
                    moving = True
            if moving:
                row[s] = 1
                for j in range(k):
                    if j < 4 and _is_float_kind(self.slots[s + 1 + j].d.kind):
                        self._float_in(s + 1 + j, x[j], row)
                    else:
                        self._slot_in(s + 1 + j, <object>items[j], row)
            else:
                for j in range(k + 1):
                    row[s + j] = 0
        return 0

    cdef int _record_mode(self, object rec) except -1:
        if isinstance(rec, tuple):
            if hasattr(rec, "_fields"):
                return R_ATTR
            return R_SEQ
        if isinstance(rec, Mapping):
            return R_MAP
        if isinstance(rec, np.void) and rec.dtype.names is not None:
            return R_MAP          # a row of a structured array: values by field name
        if isinstance(rec, list):
            return R_SEQ
        if isinstance(rec, (str, bytes, int, float)) or rec is None:
            raise TypeError(f"a record must be a mapping, an object with the field attributes or a "
                            f"tuple in field order, got {type(rec).__name__}")
        return R_ATTR

    cdef object _missing(self, Py_ssize_t f):
        return SchemaError(f"record is missing field {self.names[f]!r}")

    cdef int _fill_row(self, object rec, uint64_t* row) except -1:
        cdef Py_ssize_t f, f0, pos
        cdef int mode
        cdef PyObject* item
        cdef PyObject* key
        cdef object v
        cdef type t = type(rec)
        if t is tuple:
            mode = R_TUPLE
        elif t is dict:
            mode = R_DICT
        elif t is list:
            mode = R_LIST
        else:
            mode = self._record_mode(rec)
        if mode == R_LIST:
            # read from a copy of its items: a value's __float__ / __index__ may resize the list
            rec = PyList_AsTuple(rec)
            mode = R_TUPLE
        if mode == R_TUPLE or mode == R_LIST or mode == R_SEQ:
            if len(rec) != self.nfields:
                raise SchemaError(f"record has {len(rec)} values, the schema has {self.nfields} fields "
                                  f"({', '.join(self.names)})")
        f0 = 0
        if mode == R_DICT and PyDict_GET_SIZE(rec) == self.nfields:
            # a dict with exactly the fields, built in field order (keys are the interned names):
            # walk it instead of looking each field up; the first key out of place ends the walk
            # and the lookups take over from there
            pos = 0
            while f0 < self.nfields:
                if not PyDict_Next(rec, &pos, &key, &item) or key != PyTuple_GET_ITEM(self.names, f0):
                    break
                v = <object>item
                self._field_in(f0, v, row)
                f0 += 1
        for f in range(f0, self.nfields):
            if mode == R_TUPLE:
                v = <object>PyTuple_GET_ITEM(rec, f)
            elif mode == R_DICT:
                item = PyDict_GetItemWithError(rec, <object>PyTuple_GET_ITEM(self.names, f))
                if item == NULL:
                    raise self._missing(f)
                v = <object>item
            elif mode == R_LIST:
                v = <object>PyList_GET_ITEM(rec, f)
            elif mode == R_SEQ:
                v = rec[f]
            elif mode == R_MAP:
                try:
                    v = rec[self.names[f]]
                except KeyError:
                    raise self._missing(f) from None
            else:
                try:
                    v = getattr(rec, self.names[f])
                except AttributeError:
                    raise self._missing(f) from None
            self._field_in(f, v, row)
        return 0

    cdef inline object _slot_value(self, Py_ssize_t s, uint64_t c):
        cdef const qdesc* d = &self.slots[s].d
        cdef int k = d.kind
        if _is_float_kind(k):
            return scalar_dq(d, c)
        if k == K_UINT:
            return PyLong_FromUnsignedLongLong(c)
        if k == K_INT:
            return <int64_t>c
        if k == K_BOOL:
            return c != 0
        if k == K_IRANGE:
            return <int64_t>(<uint64_t>d.smin + c)
        labels = self.slot_labels[s]
        if labels is not None:
            return <object>PyTuple_GET_ITEM(labels, <Py_ssize_t>c)
        return PyLong_FromUnsignedLongLong(c)

    cdef inline object _slot_code(self, Py_ssize_t s, uint64_t c):
        if qdesc_signed(&self.slots[s].d):
            return <int64_t>c
        return PyLong_FromUnsignedLongLong(c)

    cdef object _field_value(self, Py_ssize_t f, const uint64_t* row):
        cdef Py_ssize_t s = self.field_first[f]
        cdef Py_ssize_t k = self.field_first[f + 1] - s
        cdef Py_ssize_t j
        cdef int fk = self.fkind[f]
        cdef double q[4]
        cdef tuple t
        if fk == F_FLOAT:
            return scalar_dq(&self.slots[s].d, row[s])
        if fk == F_EXACT:
            return self._slot_value(s, row[s])
        if fk == F_QUAT:
            quat_dq(&self.slots[s].d, row[s], q)
            return (q[0], q[1], q[2], q[3])
        if fk == F_UVEC:
            uvec_dq(&self.slots[s].d, row[s], q)
            return (q[0], q[1], q[2])
        if fk == F_NZ:
            if row[s] == 0:
                return 0.0
            return self._slot_value(s + 1, row[s + 1])
        if fk == F_NZVEC:
            k -= 1
            s += 1
            if row[s - 1] == 0:
                t = PyTuple_New(k)
                for j in range(k):
                    v = 0.0
                    Py_INCREF(v)
                    PyTuple_SET_ITEM(t, j, v)
                return t
        t = PyTuple_New(k)
        for j in range(k):
            v = self._slot_value(s + j, row[s + j])
            Py_INCREF(v)
            PyTuple_SET_ITEM(t, j, v)
        return t

    cdef dict _row_values(self, const uint64_t* row):
        cdef dict out = _PyDict_NewPresized(self.nfields)
        cdef Py_ssize_t f
        for f in range(self.nfields):
            out[<object>PyTuple_GET_ITEM(self.names, f)] = self._field_value(f, row)
        return out

    cdef object _field_codes(self, Py_ssize_t f, const uint64_t* row):
        cdef Py_ssize_t s = self.field_first[f]
        cdef Py_ssize_t k = self.field_first[f + 1] - s
        cdef Py_ssize_t j
        cdef int fk = self.fkind[f]
        cdef tuple t
        if fk == F_FLOAT or fk == F_EXACT or fk == F_QUAT or fk == F_UVEC:
            return self._slot_code(s, row[s])
        if fk == F_NZ:
            return (PyLong_FromUnsignedLongLong(row[s]), self._slot_code(s + 1, row[s + 1]))
        start = s + 1 if fk == F_NZVEC else s
        k = self.field_first[f + 1] - start
        t = PyTuple_New(k)
        for j in range(k):
            v = self._slot_code(start + j, row[start + j])
            Py_INCREF(v)
            PyTuple_SET_ITEM(t, j, v)
        if fk == F_NZVEC:
            return (PyLong_FromUnsignedLongLong(row[s]), t)
        return t

    cdef tuple _row_codes(self, const uint64_t* row):
        cdef tuple t = PyTuple_New(self.nfields)
        cdef Py_ssize_t f
        for f in range(self.nfields):
            v = self._field_codes(f, row)
            Py_INCREF(v)
            PyTuple_SET_ITEM(t, f, v)
        return t

    cdef int _code_in(self, Py_ssize_t s, object v, uint64_t* out) except -1:
        """A Python integer code into its carrier: C_OK, C_INVALID or C_TYPE (never raises for ints)."""
        cdef int ovf = 0
        cdef long long sv
        if type(v) is not int and type(v) is not bool:
            if isinstance(v, (int, np.integer, np.bool_)):
                v = int(v)
            else:
                return C_TYPE
        sv = PyLong_AsLongLongAndOverflow(v, &ovf)
        if ovf == 0:
            if qdesc_signed(&self.slots[s].d) or sv >= 0:
                out[0] = <uint64_t>sv
            else:
                return C_INVALID
        elif ovf > 0 and not qdesc_signed(&self.slots[s].d) and v <= 0xFFFFFFFFFFFFFFFF:
            out[0] = PyLong_AsUnsignedLongLong(v)
        else:
            return C_INVALID
        return C_OK if slot_valid(&self.slots[s], out[0]) else C_INVALID

    cdef int _codes_row(self, object codes, uint64_t* row, Py_ssize_t* bad) except -1:
        """A codes tuple (as quantize returns it) into a row. Returns a C_* status; `bad` is the slot
        (C_INVALID, C_TYPE) or the field (C_SHAPE, -1: the tuple itself)."""
        cdef Py_ssize_t f, s, k, j
        cdef int fk, st
        cdef PyObject** items = NULL
        cdef PyObject** pair = NULL
        cdef object keep, keep2, flag, inner
        bad[0] = -1
        if type(codes) is not tuple and type(codes) is not list:
            if not isinstance(codes, (tuple, list)):
                return C_SHAPE
        if len(codes) != self.nfields:
            return C_SHAPE
        for f in range(self.nfields):
            v = codes[f]
            s = self.field_first[f]
            k = self.field_first[f + 1] - s
            fk = self.fkind[f]
            if fk == F_FLOAT or fk == F_EXACT or fk == F_QUAT or fk == F_UVEC:
                st = self._code_in(s, v, &row[s])
                if st != C_OK:
                    bad[0] = s
                    return st
                continue
            if fk == F_NZ or fk == F_NZVEC:
                if not isinstance(v, (tuple, list)) or len(v) != 2:
                    bad[0] = f
                    return C_SHAPE
                st = self._code_in(s, v[0], &row[s])
                if st != C_OK:
                    bad[0] = s
                    return st
                v = v[1]
                s += 1
                k -= 1
                if fk == F_NZ:
                    st = self._code_in(s, v, &row[s])
                    if st != C_OK:
                        bad[0] = s
                        return st
                    if row[s - 1] == 0 and row[s] != 0:
                        bad[0] = s
                        return C_INVALID
                    continue
            if not isinstance(v, (tuple, list, np.ndarray)) or len(v) != k:
                bad[0] = f
                return C_SHAPE
            for j in range(k):
                st = self._code_in(s + j, v[j], &row[s + j])
                if st != C_OK:
                    bad[0] = s + j
                    return st
                if fk == F_NZVEC and row[s - 1] == 0 and row[s + j] != 0:
                    bad[0] = s + j
                    return C_INVALID
        return C_OK

    cdef object _codes_error(self, object codes, int st, Py_ssize_t bad, object exc):
        if st == C_SHAPE:
            if bad < 0:
                n = len(codes) if isinstance(codes, (tuple, list)) else None
                got = f"{n} codes" if n is not None else type(codes).__name__
                return SchemaError(f"expected a tuple of {self.nfields} codes (one per field), got {got}")
            return SchemaError(f"field {self.names[bad]!r}: code {codes[bad]!r} does not have the shape "
                               f"of a {self.codecs[bad]!r} code")
        f = self.slots[bad].field
        v = codes[f]
        fk = self.fkind[f]
        comp = bad - self.field_first[f]
        if fk == F_VECTOR:
            v = v[comp]
        elif fk == F_NZ or fk == F_NZVEC:
            v = v[0] if comp == 0 else (v[1] if fk == F_NZ else v[1][comp - 1])
        if st == C_TYPE:
            return TypeError(f"{self.slot_names[bad]}: codes must be integers, got {type(v).__name__}")
        sc = self.slot_codecs[bad]
        what = f"{sc!r}" if sc is not None else "the flag (0 or 1; the inner codes must be 0 when it is 0)"
        return exc(f"{self.slot_names[bad]}: code {v!r} is not valid for {what}")

    cdef bytes _row_bytes(self, const uint64_t* row):
        cdef uint8_t local[BUF_LOCAL]
        cdef bw_t w
        cdef Py_ssize_t cap = (self.max_bits + 7) >> 3
        cdef bytes res
        if cap <= BUF_LOCAL:
            bw_wrap(&w, local, BUF_LOCAL)
            self.put_row(&w, row)
            bw_flush(&w)
            return PyBytes_FromStringAndSize(<char*>local, bw_nbytes(&w))
        res = PyBytes_FromStringAndSize(NULL, cap)
        bw_wrap(&w, <uint8_t*>PyBytes_AS_STRING(res), cap)
        self.put_row(&w, row)
        bw_flush(&w)
        if bw_nbytes(&w) == cap:
            return res
        return PyBytes_FromStringAndSize(PyBytes_AS_STRING(res), bw_nbytes(&w))

    cdef object _read_error(self, const br_t* r, Py_ssize_t s, int err, Py_ssize_t rec):
        where = f"record {rec}: " if rec >= 0 else ""
        cdef const slot_t* sl = &self.slots[s]
        if err == E_SHORT:
            return DecodeError(
                f"{where}{self.slot_names[s]}: message too short: the code needs {sl.d.bits} bits at bit "
                f"{r.pos}, the message has {r.nbits} bits ({r.nbytes} byte{'' if r.nbytes == 1 else 's'})")
        c = br_peek_unchecked(r, r.pos, sl.d.bits)
        c = from_wire(&sl.d, c)
        code = <int64_t>c if qdesc_signed(&sl.d) else c
        return DecodeError(f"{where}{self.slot_names[s]}: code {code} is not valid for "
                           f"{self.slot_codecs[s]!r} at bit {r.pos}")

    cdef int _check_end(self, const br_t* r, str what) except -1:
        """After the last record: only zero padding of under 8 bits may remain."""
        cdef Py_ssize_t end = r.pos
        cdef Py_ssize_t need = (end + 7) >> 3
        if r.nbytes > need:
            raise DecodeError(f"message too long: {r.nbytes} bytes, but {what} ends at bit {end} "
                              f"({need} bytes): {r.nbytes - need} extra bytes{self._after_last()}")
        if end & 7:
            if br_peek_unchecked(r, end, <int>(8 * need - end)) != 0:
                raise DecodeError(f"nonzero padding bits at bit {end}{self._after_last()} ({what} ends at bit {end})")
        return 0

    cdef str _after_last(self):
        return f" after the last field {self.names[self.nfields - 1]!r}" if self.nfields else ""

    cdef int _read_one(self, object data, uint64_t* row) except -1:
        """Read one padded record from `data` into `row` (all checks)."""
        cdef Py_buffer view
        cdef br_t r
        cdef int err = 0
        cdef Py_ssize_t bad
        if type(data) is bytes:
            br_init(&r, <const uint8_t*>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))
            bad = self.get_row(&r, row, &err)
            if bad >= 0:
                raise self._read_error(&r, bad, err, -1)
            self._check_end(&r, "the record")
            return 0
        _get_bytes(data, &view)
        try:
            br_init(&r, <const uint8_t*>view.buf, view.len)
            bad = self.get_row(&r, row, &err)
            if bad >= 0:
                raise self._read_error(&r, bad, err, -1)
            self._check_end(&r, "the record")
        finally:
            PyBuffer_Release(&view)
        return 0

    cdef int _codes_in(self, object codes, uint64_t* row, object exc) except -1:
        cdef Py_ssize_t bad = -1
        cdef int st = self._codes_row(codes, row, &bad)
        if st != C_OK:
            raise self._codes_error(codes, st, bad, exc)
        return 0

    cdef object _columns(self, object columns, str owner):
        """Check a columns mapping: every field present, nothing else. Returns a list in field order."""
        cdef Py_ssize_t f
        cdef PyObject* v
        if type(columns) is dict and PyDict_GET_SIZE(columns) == self.nfields:
            # the common case: a dict with exactly the fields (as many keys, each one found)
            out = [None] * self.nfields
            for f in range(self.nfields):
                v = PyDict_GetItemWithError(columns, self.names[f])
                if v == NULL:
                    break
                out[f] = <object>v
            else:
                return out
        if type(columns) is not dict and not isinstance(columns, Mapping):
            raise TypeError(f"{owner}: columns must be a mapping of field name -> array, got {type(columns).__name__}")
        missing = [nm for nm in self.names if nm not in columns]
        if missing:
            raise SchemaError(f"{owner}: missing column{'s' if len(missing) > 1 else ''} for field"
                              f"{'s' if len(missing) > 1 else ''} {', '.join(repr(m) for m in missing)}")
        extra = [k for k in columns if k not in self.names]
        if extra:
            raise SchemaError(f"{owner}: unknown column{'s' if len(extra) > 1 else ''} "
                              f"{', '.join(repr(k) for k in extra)} (the schema's fields are {', '.join(self.names)})")
        return [columns[nm] for nm in self.names]

    cdef Py_ssize_t _value_k(self, Py_ssize_t f):
        """The second dimension of field f's value column, 0 for a 1-D one (see _value_shape)."""
        cdef int fk = self.fkind[f]
        cdef Py_ssize_t k = self.field_first[f + 1] - self.field_first[f]
        if fk == F_FLOAT or fk == F_EXACT or fk == F_NZ:
            return 0
        if fk == F_QUAT:
            return 4
        if fk == F_UVEC:
            return 3
        if fk == F_NZVEC:
            return k - 1
        return k

    cdef tuple _value_shape(self, Py_ssize_t f, Py_ssize_t n):
        """The shape a value column of field f must have for n records."""
        cdef Py_ssize_t k = self._value_k(f)
        if k == 0:
            return (n,)
        return (n, k)

    cdef Py_ssize_t _nrows(self, list cols, str owner, bint codes) except -2:
        """The common row count of the columns; SchemaError naming the field that disagrees."""
        cdef Py_ssize_t f, n = -1
        first = None
        for f in range(self.nfields):
            a = cols[f]
            if (a.ndim if isinstance(a, np.ndarray) else np.ndim(a)) == 0:
                raise SchemaError(f"{owner}: column {self.names[f]!r} must be an array of shape "
                                  f"{self._shape_text(f, codes)}, got a scalar")
            m = len(a)
            if n < 0:
                n = m
                first = self.names[f]
            elif m != n:
                raise SchemaError(f"{owner}: column {self.names[f]!r} has {m} rows, column {first!r} has {n}")
        return max(n, 0)

    cdef str _shape_text(self, Py_ssize_t f, bint codes):
        cdef int fk = self.fkind[f]
        cdef Py_ssize_t k = self.field_first[f + 1] - self.field_first[f]
        if codes:
            if fk == F_VECTOR or fk == F_NZ or fk == F_NZVEC:
                return f"(N, {k})"
            return "(N,)"
        shp = self._value_shape(f, 0)
        return "(N,)" if len(shp) == 1 else f"(N, {shp[1]})"

    cdef object _check_shape(self, Py_ssize_t f, object a, tuple shape, str owner, bint codes):
        if a.shape != shape:
            raise SchemaError(f"{owner}: column {self.names[f]!r} ({self.codecs[f]!r}) must have shape "
                              f"{self._shape_text(f, codes)} = {shape}, got {a.shape}")
        return a

    cdef object _wrap(self, Py_ssize_t f, object e):
        """Re-raise a codec's array error as the same type, prefixed with the field (and keeping the
        row it concerns, if it says)."""
        w = type(e)(f"field {self.names[f]!r}: {e}")
        row = getattr(e, "row", None)
        if row is not None:
            w.row = row
        return w

    cdef bint _all_float(self, Py_ssize_t a, Py_ssize_t b):
        """Whether slots a..b-1 are all float scalar kinds."""
        cdef Py_ssize_t j
        for j in range(a, b):
            if not _is_float_kind(self.slots[j].d.kind):
                return False
        return True

    cdef object _check_matrix_out(self, object out, Py_ssize_t n, str owner):
        if not isinstance(out, np.ndarray):
            raise TypeError(f"{owner}: out must be a NumPy array, got {type(out).__name__}")
        if out.dtype != _U64 or out.shape != (n, self.nslots):
            raise ValueError(f"{owner}: out must be a uint64 array of shape {(n, self.nslots)}, "
                             f"got {out.dtype} {out.shape}")
        if not out.flags.c_contiguous or not out.flags.writeable or not out.flags.aligned:
            raise ValueError(f"{owner}: out must be C-contiguous, writeable and aligned")
        return out

    cdef Py_ssize_t _float_column(self, Py_ssize_t f, Py_ssize_t s, object x, uint64_t* m, Py_ssize_t n,
                                  const uint8_t* flags, Py_ssize_t fs) except -1:
        x = _float_array(x, (self, f))
        return self._float_ptr(f, s, _buf_ptr(x), 0 if x.dtype.itemsize == 4 else 1, 1, m, n, flags, fs)

    cdef Py_ssize_t _float_ptr(self, Py_ssize_t f, Py_ssize_t s, const uint8_t* xp, int xt, Py_ssize_t xs,
                               uint64_t* m, Py_ssize_t n, const uint8_t* flags, Py_ssize_t fs) except -1:
        """Quantize one float slot's column (stride xs floats) into matrix column s; strict check."""
        cdef Py_ssize_t nc, bad, S = self.nslots
        cdef const qdesc* d = &self.slots[s].d
        with nogil:
            if flags == NULL:
                # the codecs' array loops (Bounded: the loop table selected for this CPU), writing
                # the matrix column
                nc = q_array(d, xp, xt, xs, m + s, 1, S, n)
            elif xt == 0:
                nc = _q_flagged(d, <const float*>xp, xs, m + s, S, n, flags, fs)
            else:
                nc = _q_flagged(d, <const double*>xp, xs, m + s, S, n, flags, fs)
        if nc and self.strict:
            with nogil:
                if xt == 0:
                    bad = _first_clamp(d, <const float*>xp, xs, n, flags, fs)
                else:
                    bad = _first_clamp(d, <const double*>xp, xs, n, flags, fs)
            v = (<const float*>xp)[bad * xs] if xt == 0 else (<const double*>xp)[bad * xs]
            e = self._clamp_error(s, v, bad)
            e.row = bad
            raise e
        return nc

    cdef bint _exact_fast(self, Py_ssize_t s, object a, uint64_t* m, Py_ssize_t n) except -1:
        """Exact slot s's column straight into the matrix when it is a 1-D native integer or bool
        array of n rows whose values are all codes: True. False leaves it to the codec's array path
        (float or object columns; and a value out of range, which that path reports by row)."""
        cdef const qdesc* d = &self.slots[s].d
        cdef bint sc = d.kind == K_INT
        if d.kind == K_IRANGE:
            return False        # code = value - lo: the codec's array path converts and checks
        if d.kind != K_BOOL and isinstance(a, np.ndarray) and a.dtype.kind == 'b':
            return False        # bools are not integers: the codec's array path refuses them
        return int_column(a, n, sc, d.smin if sc else 0, <uint64_t>d.smax if sc else d.maxcode,
                          m + s, self.nslots) == -1

    cdef object _exact_codes(self, Py_ssize_t f, Py_ssize_t s, object a):
        """An exact slot's value column -> uint64 carriers, through its codec's array path."""
        try:
            codes = self.slot_codecs[s].quantize(np.ascontiguousarray(a))
        except (ValueError, TypeError) as e:
            raise self._wrap(f, e) from None
        if codes.dtype.kind == 'i':
            return codes.astype(_I64).view(_U64)
        return codes.astype(_U64)

    cdef int _exact_column(self, Py_ssize_t f, Py_ssize_t s, object a, object mat) except -1:
        mat[:, s] = self._exact_codes(f, s, a)
        return 0

    cdef object _matrix(self, object matrix, str owner):
        a = matrix if isinstance(matrix, np.ndarray) else np.asarray(matrix)
        if a.dtype.kind not in 'iu':
            raise TypeError(f"{owner}: the code matrix must hold integers, got dtype {a.dtype}")
        if a.ndim != 2 or a.shape[1] != self.nslots:
            raise ValueError(f"{owner}: the code matrix must have shape (N, {self.nslots}), got {a.shape}")
        if a.dtype != _U64:
            a = a.astype(_I64).view(_U64) if a.dtype.kind == 'i' else a.astype(_U64)
        return np.ascontiguousarray(a)

    cdef object _invalid_at(self, const uint64_t* m, Py_ssize_t n):
        cdef Py_ssize_t i, bad = -1
        with nogil:
            for i in range(n):
                bad = self.row_invalid(m + i * self.nslots)
                if bad >= 0:
                    break
        if bad >= 0:
            return (i, bad)
        return None

    cdef object _matrix_error(self, object a, object at, object exc):
        i, s = at
        c = int(a[i, s])
        if self.slots[s].d.kind != K_NZFLAG and qdesc_signed(&self.slots[s].d):
            c = int(a.view(_I64)[i, s])
        sc = self.slot_codecs[s]
        what = f"{sc!r}" if sc is not None else "the flag (0 or 1)"
        if self.slots[s].d.kind != K_NZFLAG and slot_valid(&self.slots[s], <uint64_t>a[i, s]):
            what += " (its NearlyZero flag is 0, so it must be 0)"
        return exc(f"record {i}: {self.slot_names[s]}: code {c} is not valid for {what}")

    cdef dict _dequantize(self, object a):
        """Value arrays of a checked, C-contiguous uint64 matrix."""
        cdef Py_ssize_t f, s, k, j, n = a.shape[0], S = self.nslots
        cdef int fk
        cdef const uint64_t* m
        cdef double* op
        cdef uint64_t* col
        cdef dict out = {}
        m = <const uint64_t*>_buf_ptr(a) if n and S else NULL
        codes = None
        for f in range(self.nfields):
            s = self.field_first[f]
            k = self.field_first[f + 1] - s
            fk = self.fkind[f]
            nm = self.names[f]
            if fk == F_FLOAT or fk == F_QUAT or fk == F_UVEC or \
                    ((fk == F_VECTOR or fk == F_NZ or fk == F_NZVEC) and self._all_float(s + (fk != F_VECTOR), s + k)):
                res = np.empty(self._value_shape(f, n), dtype=_F64)
                if n == 0:
                    out[nm] = res
                    continue
                op = <double*>_wbuf_ptr(res)
                if fk == F_QUAT or fk == F_UVEC:
                    # the column gathered, then the codecs' loop selected for this CPU (SIMD: the
                    # divisions and square roots of the rebuild are most of the time)
                    col = <uint64_t*>PyMem_Malloc(sizeof(uint64_t) * n)
                    if col == NULL:
                        raise MemoryError()
                    with nogil:
                        for j in range(n):
                            col[j] = m[j * S + s]
                        multi_dq_array(&self.slots[s].d, col, 1, op, 1, n)   # (valid codes: -1)
                    PyMem_Free(col)
                    out[nm] = res
                    continue
                with nogil:
                    if fk == F_FLOAT:
                        _dq_column(&self.slots[s].d, m + s, S, op, 1, n, NULL)
                    elif fk == F_VECTOR:
                        for j in range(k):
                            _dq_column(&self.slots[s + j].d, m + s + j, S, op + j, k, n, NULL)
                    else:
                        for j in range(k - 1):
                            _dq_column(&self.slots[s + 1 + j].d, m + s + 1 + j, S, op + j, k - 1, n, m + s)
                out[nm] = res
            elif fk == F_EXACT:
                # valid codes: the value is the code, in the codec's value dtype (signed codes are
                # carried sign-extended: read as int64)
                c = <_ExactScalar>self.codecs[f]
                src = a.view(_I64) if c._code_dtype.kind == 'i' else a
                if self.slots[s].d.kind == K_IRANGE:
                    # IntRange: lo + code, exact in int64 (wraparound arithmetic; the sum fits)
                    out[nm] = np.add(a[:, s].view(_I64), np.int64(self.slots[s].d.smin), dtype=_I64)
                else:
                    out[nm] = src[:, s].astype(c._value_dtype())
            else:
                if codes is None:
                    codes = self.matrix_to_codes(a)
                out[nm] = self.codecs[f].dequantize(codes[nm])
        return out

    cdef bytes _encode_rows(self, object a):
        """Bit-pack the rows of a valid, C-contiguous uint64 matrix back to back (one stream, padded
        at the end)."""
        cdef Py_ssize_t i, s, n = a.shape[0], S = self.nslots, cap
        cdef const uint64_t* m
        cdef bw_t w
        cdef bytes res
        cdef int wbits[ROW_LOCAL]
        cdef uint64_t wmask[ROW_LOCAL]
        if n > (<Py_ssize_t>1 << 60) // max(self.max_bits, 1):
            raise OverflowError("too many records for one message")
        cap = (n * self.max_bits + 7) >> 3
        res = PyBytes_FromStringAndSize(NULL, cap)
        if n == 0 or cap == 0:
            return res
        m = <const uint64_t*>_buf_ptr(a)
        bw_wrap(&w, <uint8_t*>PyBytes_AS_STRING(res), cap)
        if self.min_bits == self.max_bits and S <= ROW_LOCAL:
            # no NearlyZero flag: every slot is on the wire; the per-slot widths and masks (two's
            # complement truncation of signed carriers) in local arrays, the writer in registers
            for s in range(S):
                wbits[s] = self.slots[s].d.bits
                wmask[s] = to_wire(&self.slots[s].d, ~(<uint64_t>0))
            with nogil:
                for i in range(n):
                    for s in range(S):
                        bw_put(&w, m[s] & wmask[s], wbits[s])
                    m += S
                bw_flush(&w)
        else:
            with nogil:
                for i in range(n):
                    self.put_row(&w, m + i * S)
                bw_flush(&w)
        if bw_nbytes(&w) == cap:
            return res
        return PyBytes_FromStringAndSize(PyBytes_AS_STRING(res), bw_nbytes(&w))


    # ------------------------------------------------------------------------------------------------
    # decode_many of fixed-width records: record i starts at bit i * W and every slot sits at the same
    # bit offset within each record, so each slot's codes are cut out with one unaligned 64-bit load
    # and a shift per record (no bit reader), into a column of the scratch array (one row per slot).
    # The columns are then checked and dequantized by the codecs' array loops (the loop table
    # selected for this CPU, `_codecs`) straight into the output arrays.

    @cython.boundscheck(False)
    @cython.wraparound(False)

    cdef object _decode_fixed(self, object data, Py_ssize_t n):
        """decode_many of n > 0 records of one width (min_bits == max_bits), or None when the message
        is not exactly n records long (with zero padding), holds an invalid code, or has a field this
        path does not take (a Vector mixing exact and float components, more than ROW_LOCAL slots):
        the caller then takes the general path, which raises the right error or decodes."""
        cdef Py_buffer view
        cdef Py_ssize_t f, s, k, j, W = self.max_bits, S = self.nslots, bad = -1
        cdef Py_ssize_t off[ROW_LOCAL]
        cdef int fk
        cdef const uint8_t* buf
        cdef uint64_t* cols
        cdef double* op
        cdef br_t r
        if S == 0 or S > ROW_LOCAL or W == 0:
            return None
        for f in range(self.nfields):
            fk = self.fkind[f]
            s = self.field_first[f]
            if fk == F_VECTOR and not self._all_float(s, self.field_first[f + 1]):
                return None
        try:
            PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
        except Exception:
            return None
        try:
            # exactly n records and the padding after them: anything else is the general path's error
            if view.len != (n * W + 7) >> 3:
                return None
            buf = <const uint8_t*>view.buf
            br_init(&r, buf, view.len)
            if (n * W) & 7 and br_peek_unchecked(&r, n * W, <int>(8 * view.len - n * W)) != 0:
                return None
            off[0] = 0
            for s in range(1, S):
                off[s] = off[s - 1] + self.slots[s - 1].d.bits
            scratch = np.empty((S, n), dtype=_U64)
            cols = <uint64_t*>_wbuf_ptr(scratch)
            with nogil:
                for s in range(S):
                    _cut_column(buf, view.len, off[s], W, self.slots[s].d.bits, n, cols + s * n)
                    if qdesc_signed(&self.slots[s].d):
                        for j in range(n):
                            cols[s * n + j] = from_wire(&self.slots[s].d, cols[s * n + j])
        finally:
            PyBuffer_Release(&view)

        out = {}
        for f in range(self.nfields):
            s = self.field_first[f]
            k = self.field_first[f + 1] - s
            fk = self.fkind[f]
            if fk == F_EXACT:
                with nogil:
                    bad = first_invalid(&self.slots[s].d, cols + s * n, 1, 1, n)
                if bad >= 0:
                    return None
                # as _dequantize: the value is the code, in the codec's value dtype
                c = <_ExactScalar>self.codecs[f]
                col = scratch[s]
                if self.slots[s].d.kind == K_IRANGE:
                    out[self.names[f]] = np.add(col.view(_I64), np.int64(self.slots[s].d.smin), dtype=_I64)
                else:
                    out[self.names[f]] = (col.view(_I64) if c._code_dtype.kind == 'i' else col).astype(c._value_dtype())
                continue
            res = np.empty(self._value_shape(f, n), dtype=_F64)
            op = <double*>_wbuf_ptr(res)
            with nogil:
                if fk == F_QUAT or fk == F_UVEC:
                    bad = multi_dq_array(&self.slots[s].d, cols + s * n, 1, op, 1, n)
                else:       # F_FLOAT, F_VECTOR of float components: one column each, stride k
                    for j in range(k):
                        bad = dq_array(&self.slots[s + j].d, cols + (s + j) * n, 1, 1, op + j, 1, k, n)
                        if bad >= 0:
                            break
            if bad >= 0:
                return None
            out[self.names[f]] = res
        return out


# ------------------------------------------------------------------------------------------------

cdef Py_ssize_t _slot_count(Codec c):
    if c.group == F_VECTOR:
        return len((<Vector>c).codecs)
    if c.group == F_NZ or c.group == F_NZVEC:
        return 1 + _slot_count((<NearlyZero>c).inner)
    return 1


cdef object _intern(object s):
    return sys.intern(s) if type(s) is str else s


cdef int _get_bytes(object data, Py_buffer* view) except -1:
    """A read-only, C-contiguous view of `data`'s raw bytes."""
    try:
        PyObject_GetBuffer(data, view, PyBUF_FULL_RO)
    except TypeError:
        raise TypeError(f"expected bytes or a buffer, got {type(data).__name__}") from None
    if not PyBuffer_IsContiguous(view, b"C"):
        PyBuffer_Release(view)
        raise ValueError(f"data must be a C-contiguous buffer; this {type(data).__name__} is not "
                         "(copy it first, e.g. with bytes())")
    return 0


# ------------------------------------------------------------------------------------------------
# Module-level helpers of the plan's methods (no Plan of their own).

cdef void* _scratch(void** p, size_t* cap, size_t nbytes) except NULL:
    """A grow-only scratch buffer of at least nbytes (PyMem; the caller frees *p)."""
    cdef void* q
    if nbytes > cap[0] or p[0] == NULL:
        q = PyMem_Realloc(p[0], nbytes if nbytes else 1)
        if q == NULL:
            raise MemoryError()
        p[0] = q
        cap[0] = nbytes
    return p[0]


cdef bint _float_view(object a, Py_ssize_t n, Py_ssize_t kd, const uint8_t** xp, int* xt) except -1:
    """A value column's memory when it needs no conversion: a float32 / float64 NumPy array,
    C-contiguous and aligned, of shape (n,) (kd 0) or (n, kd). False sends it the general way
    (which also reports what is wrong with it, and copies an unaligned one)."""
    cdef Py_buffer v
    cdef bint ok
    if type(a) is not np.ndarray:
        return False
    dt = (<object>a).dtype
    if dt is not _F64 and dt is not _F32:
        return False
    PyObject_GetBuffer(a, &v, PyBUF_STRIDES)
    ok = (v.ndim == (1 if kd == 0 else 2) and v.shape[0] == n and (kd == 0 or v.shape[1] == kd)
          and PyBuffer_IsContiguous(&v, b'C') and (<size_t>v.buf) % v.itemsize == 0)
    xp[0] = <const uint8_t*>v.buf if v.buf != NULL else <const uint8_t*>_EMPTY
    xt[0] = 0 if v.itemsize == 4 else 1
    PyBuffer_Release(&v)
    return ok


ctypedef fused _uint_in:
    uint8_t
    uint16_t
    uint32_t
    uint64_t


cdef Py_ssize_t _exact_loop(const _uint_in* x, Py_ssize_t xs, Py_ssize_t n, int kind, bint signed_codes,
                            int64_t lo, uint64_t hi, uint64_t* m, Py_ssize_t S) noexcept nogil:
    """An integer column (stride xs elements; ``kind`` 'i' signed, read sign-extended, 'u'
    unsigned, 'b' bool, 0 / 1) into matrix column m (stride S): the carriers of an exact slot
    whose codes are lo..hi (signed: lo <= 0 <= hi, carried sign-extended; else 0..hi). Returns
    the first row out of range, or -1."""
    cdef Py_ssize_t i
    cdef int sh = 64 - 8 * <int>sizeof(_uint_in)
    cdef uint64_t u
    cdef int64_t v
    for i in range(n):
        u = <uint64_t>x[i * xs]
        if kind == c'i':
            v = (<int64_t>(u << sh)) >> sh
            if (v < lo or v > <int64_t>hi) if signed_codes else (v < 0 or <uint64_t>v > hi):
                return i
            u = <uint64_t>v
        else:
            if kind == c'b':
                u = u != 0
            if u > hi:
                return i
        m[i * S] = u
    return -1


cdef Py_ssize_t int_column(object a, Py_ssize_t n, bint signed_codes, int64_t lo, uint64_t hi,
                           uint64_t* m, Py_ssize_t S) except -3:
    """A 1-D native integer or bool NumPy array of n rows (any stride) into m[0], m[S], ... as
    _exact_loop checks and writes it: -1 done, the first row out of range, or -2 when ``a`` is
    anything else (the caller takes a general path). Shared by the snapshot's ids (_delta)."""
    cdef Py_buffer v
    cdef Py_ssize_t xs, bad = -2, isz
    cdef char kind
    if not isinstance(a, np.ndarray):
        return -2
    dt = a.dtype
    kind = ord(dt.kind)
    if (kind != c'i' and kind != c'u' and kind != c'b') or not dt.isnative:
        return -2
    isz = dt.itemsize
    PyObject_GetBuffer(a, &v, PyBUF_STRIDES)
    try:
        if v.ndim != 1 or v.shape[0] != n or v.itemsize != isz or v.strides[0] % isz \
                or (<size_t>v.buf) % isz:
            # (an unaligned view, e.g. a field of a packed record array: read through its
            # typed pointer that would be undefined; the general path copies it)
            return -2
        xs = v.strides[0] // isz
        with nogil:
            if isz == 1:
                bad = _exact_loop(<const uint8_t*>v.buf, xs, n, kind, signed_codes, lo, hi, m, S)
            elif isz == 2:
                bad = _exact_loop(<const uint16_t*>v.buf, xs, n, kind, signed_codes, lo, hi, m, S)
            elif isz == 4:
                bad = _exact_loop(<const uint32_t*>v.buf, xs, n, kind, signed_codes, lo, hi, m, S)
            elif isz == 8:
                bad = _exact_loop(<const uint64_t*>v.buf, xs, n, kind, signed_codes, lo, hi, m, S)
        return bad
    finally:
        PyBuffer_Release(&v)


cdef void _cut_column(const uint8_t* buf, Py_ssize_t nbytes, Py_ssize_t off, Py_ssize_t W, int bits,
                      Py_ssize_t n, uint64_t* col) noexcept nogil:
    """The `bits`-bit codes at bits off, off + W, off + 2W, ... of buf (n of them, all inside it)."""
    cdef Py_ssize_t i, p, safe
    cdef uint64_t mask = qc_mask(bits)
    cdef br_t r
    i = 0
    if bits <= 57:
        # the 8 bytes at byte p >> 3 hold the code (a shift of at most 7, then at most 57 bits);
        # records whose 8 bytes would pass the end are left to the reader below
        safe = 0
        if nbytes >= 8:
            safe = ((nbytes - 8) * 8 - off) // W + 1 if (nbytes - 8) * 8 >= off else 0
            if safe > n:
                safe = n
        while i < safe:
            p = off + i * W
            col[i] = (qc_load_le64(buf + (p >> 3)) >> (p & 7)) & mask
            i += 1
    br_init(&r, buf, nbytes)
    while i < n:
        col[i] = br_peek_unchecked(&r, off + i * W, bits)
        i += 1

