"""The compiled base of `quantcodec.Schema` (`SchemaBase`: the schema's `Plan` in a C field), how
other modules reach a schema's plan (`plan_of`), and the schema's one-record methods
(`record_methods`): C method descriptors of the schema class itself, each one C call into the
plan (`Plan.one`, _plan.pxd) per record.
"""


from quantcodec._plan cimport (
    Plan, OP_DECODE, OP_DECODE_CODES, OP_DEQUANTIZE, OP_ENCODE, OP_ENCODE_CODES, OP_QUANTIZE, OP_ROUNDTRIP,
    OP_VALID,
)

__all__ = ["SchemaBase", "plan_of", "record_methods"]



cdef class SchemaBase:
    """The compiled base of `quantcodec.Schema`: the schema's plan, in a C field. Other modules
    reach it through `plan_of`; `record_methods` gives the schema class its one-record methods."""

    cdef readonly Plan _plan

    def __init__(self, Plan plan not None):
        if self._plan is not None:
            raise TypeError("a schema's plan is set once")
        self._plan = plan


ctypedef object (*_c_method)(object, object)      # a METH_O function: PyCFunction

cdef extern from "Python.h":
    ctypedef struct _MethodDef "PyMethodDef":
        const char* ml_name
        _c_method ml_meth
        int ml_flags
        const char* ml_doc
    object PyDescr_NewMethod(type cls, _MethodDef* method)
    int METH_O


cdef inline Plan _schema_plan(object schema):
    cdef Plan p = (<SchemaBase>schema)._plan      # (the descriptor checked the type: a Schema)
    if p is None:
        raise TypeError(f"{type(schema).__name__}.__init__ did not set the schema's plan")
    return p

cdef object _schema_encode(object schema, object record):
    return _schema_plan(schema).one(record, OP_ENCODE)

cdef object _schema_decode(object schema, object data):
    return _schema_plan(schema).one(data, OP_DECODE)

cdef object _schema_quantize(object schema, object record):
    return _schema_plan(schema).one(record, OP_QUANTIZE)

cdef object _schema_dequantize(object schema, object codes):
    return _schema_plan(schema).one(codes, OP_DEQUANTIZE)

cdef object _schema_roundtrip(object schema, object record):
    return _schema_plan(schema).one(record, OP_ROUNDTRIP)

cdef object _schema_encode_codes(object schema, object codes):
    return _schema_plan(schema).one(codes, OP_ENCODE_CODES)

cdef object _schema_decode_codes(object schema, object data):
    return _schema_plan(schema).one(data, OP_DECODE_CODES)

cdef object _schema_valid(object schema, object codes):
    return _schema_plan(schema).one(codes, OP_VALID)


# (name, signature, docstring) of each one-record method (its C function: _schema_<name>); the
# method definitions and the strings they point into live as long as the module
_RECORD_METHODS = (
    ("encode", "(record, /)",
     "One record -> bytes: bit-packed fields in order, padded with zero bits to a whole byte."),
    ("decode", "(data, /)",
     "bytes (or any contiguous buffer) of one record -> dict of values. Raises DecodeError "
     "naming the field and bit position for a short, long or corrupt message."),
    ("quantize", "(record, /)",
     "One record -> tuple of codes: one per field, a tuple for vector fields, (flag, inner) "
     "for NearlyZero."),
    ("dequantize", "(codes, /)",
     "A tuple of codes -> dict of values (DecodeError for a code that is not valid)."),
    ("roundtrip", "(record, /)",
     "dequantize(quantize(record)): the values the receiver will see."),
    ("encode_codes", "(codes, /)",
     "A tuple of codes -> bytes (RangeError for a code that is not valid)."),
    ("decode_codes", "(data, /)",
     "bytes of one record -> tuple of codes (the same checks as decode)."),
    ("valid", "(codes, /)",
     "Whether every code is within its field's legal set: the inbound range check, pure "
     "integer work; False (never an exception) for anything malformed."),
)

cdef _MethodDef _RECORD_DEFS[8]
cdef list _RECORD_TEXT = []


def record_methods(type cls):
    """Give `cls` (quantcodec.Schema, a SchemaBase) its one-record methods: encode, decode,
    quantize, dequantize, roundtrip, encode_codes, decode_codes and valid, as C method descriptors
    of `cls` itself. A call ``schema.encode(record)`` is then one C call into the plan
    (`Plan.one`), as ``plan.encode(record)`` is: CPython calls a METH_O descriptor of the
    instance's own type directly, where a method found on a base class would cost a lookup and a
    bound method per call."""
    cdef int i
    cdef _c_method funcs[8]
    if not issubclass(cls, SchemaBase):
        raise TypeError(f"record_methods: {cls.__name__} is not a SchemaBase")
    funcs[0] = _schema_encode
    funcs[1] = _schema_decode
    funcs[2] = _schema_quantize
    funcs[3] = _schema_dequantize
    funcs[4] = _schema_roundtrip
    funcs[5] = _schema_encode_codes
    funcs[6] = _schema_decode_codes
    funcs[7] = _schema_valid
    for i, (name, sig, doc) in enumerate(_RECORD_METHODS):
        if not _RECORD_DEFS[i].ml_name:
            bname = name.encode("ascii")
            bdoc = f"{name}($self, {sig[1:]}\n--\n\n{doc}".encode("utf-8")
            _RECORD_TEXT.extend((bname, bdoc))
            _RECORD_DEFS[i].ml_name = bname
            _RECORD_DEFS[i].ml_meth = funcs[i]
            _RECORD_DEFS[i].ml_flags = METH_O
            _RECORD_DEFS[i].ml_doc = bdoc
        setattr(cls, name, PyDescr_NewMethod(cls, &_RECORD_DEFS[i]))


def plan_of(obj):
    """The compiled plan of a schema (a `SchemaBase`: `quantcodec.Schema`), or None for anything
    else: how the snapshot layer and the conformance kit reach it."""
    return (<SchemaBase>obj)._plan if isinstance(obj, SchemaBase) else None
