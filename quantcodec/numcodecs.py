"""quantcodec as a numcodecs codec: Zarr arrays of recorded state, stored quantized and bit-packed.

    import numcodecs, zarr
    from quantcodec.numcodecs import QuantCodec

    positions = zarr.create_array(store, shape=(600, 300, 3), chunks=(60, 300, 3), dtype="f4",
                                  filters=[QuantCodec(qc.Vector(*[qc.Bounded(-64, 64, 16)] * 3))],
                                  compressors=numcodecs.Zstd(level=3), zarr_format=2)

One codec object wraps either a single codec (a Zarr array of positions, quaternions, angles...,
whose last axis holds the codec's components) or a whole :class:`~quantcodec.Schema` (a Zarr
array of records: a structured dtype with one field per schema field, see :func:`record_dtype`).
Each chunk becomes one bit stream (``Schema.encode_many``) behind a 24-byte header::

    offset  size  field
    0       4     magic b"QCZ" and the chunk format version (1)
    4       8     the schema fingerprint (SPEC 4; a single codec is the schema "array" of one
                  field "value"), as 8 raw bytes
    12      8     the record count, uint64 little-endian
    20      4     CRC-32C of bytes 0..19 followed by the payload, uint32 little-endian
    24      ...   the records, bit-packed back to back (docs/wire-format.md, record layout)

Decoding checks the magic, the version, the fingerprint, the CRC and then every code (as
``Schema.decode_many`` does): a damaged or foreign chunk raises :class:`quantcodec.DecodeError`
(a ``ValueError``), never returns other values than were written.

``get_config()`` carries the codec's (or schema's) ``spec()`` and the decoded dtype, so a Zarr
store is self-describing: ``numcodecs.get_codec(config)`` rebuilds an equal codec. The codec is
registered with numcodecs under the id ``"quantcodec"`` when this module is imported, and through
the ``numcodecs.codecs`` entry point, so a process that only opens the store finds it too.

With Zarr 3 (``zarr_format=3`` arrays), :class:`ZarrQuantCodec` is the same codec as a Zarr
array-to-bytes codec (``serializer=``), registered as ``"numcodecs.quantcodec"``.

Needs the optional extra ``quantcodec[zarr]`` (numcodecs; Zarr and Dask to store and read).
"""

from __future__ import annotations

import struct
from typing import Any, Mapping, Optional, Union

import numpy as np
from numcodecs import register_codec
from numcodecs.abc import Codec as _NumcodecsCodec
from numcodecs.compat import ensure_contiguous_ndarray, ndarray_copy

from ._bitstream import crc32c
from ._codecs import Codec, codec_from_spec
from .errors import DecodeError, RangeError
from .schema import Schema

__all__ = ["QuantCodec", "record_dtype", "value_dtype", "HEADER_SIZE"]

MAGIC = b"QCZ"
VERSION = 1
_HEAD = struct.Struct("<3sB8sQ")        # magic, version, fingerprint, count
HEADER_SIZE = _HEAD.size + 4            # + the CRC-32C
_EXACT = {"UInt", "Int", "Bool", "Enum", "IntRange"}
_UNIT = {"Quat": (0.0, 0.0, 0.0, 1.0), "UnitVector": (0.0, 0.0, 1.0)}   # zero_rows="identity"
_VALUE = "value"                        # the one field of a single codec's schema


def value_dtype(codec: Codec, float_dtype: Any = "<f4") -> np.dtype:
    """The dtype a Zarr array holds for `codec`'s values: `float_dtype` (float32 by default, as
    recorded state usually is) for codecs of floats, the code dtype for UInt, Int and Enum (enum
    indices), bool for Bool, and for a Vector of exact codecs alone their common dtype."""
    parts = codec.codecs if codec.kind == "Vector" else (codec,)
    if all(c.kind in _EXACT for c in parts):
        if all(c.kind == "Bool" for c in parts):
            return np.dtype(bool)
        # (IntRange: its values are int64, lo + code, whatever its code dtype)
        return np.result_type(*[np.dtype(np.int64) if c.kind == "IntRange" else c.code_dtype
                                for c in parts]).newbyteorder("<")
    return np.dtype(float_dtype)


def record_dtype(schema: Schema, float_dtype: Any = "<f4", *, flat: bool = True) -> np.dtype:
    """The structured dtype of a Zarr array of `schema`'s records, in wire order, each value in
    the dtype of :func:`value_dtype`. A field of one component is one scalar field; a field of k
    components (3 for a 3-vector, 4 for ``Quat``) is k scalar fields ``name.0`` .. ``name.{k-1}``
    (``flat=True``, the default: Zarr 3 stores sub-array fields as raw bytes), or one sub-array
    field ``name`` of shape ``(k,)`` (``flat=False``). QuantCodec reads either layout."""
    fields = []
    for name, codec in schema.fields:
        k, dt = codec.ncomp, value_dtype(codec, float_dtype)
        if k == 1:
            fields.append((name, dt))
        elif flat:
            fields += [(f"{name}.{i}", dt) for i in range(k)]
        else:
            fields.append((name, dt, (k,)))
    return np.dtype(fields)


class QuantCodec(_NumcodecsCodec):
    """A numcodecs codec that quantizes and bit-packs with a quantcodec codec or schema.

    ``QuantCodec(codec)`` (a :class:`quantcodec.Codec`, or its ``spec()``) stores an array whose
    last axis holds the codec's ``ncomp`` components (3 for a 3-vector, 4 for ``Quat``; any
    length for a scalar codec). ``QuantCodec(schema=schema)`` (a :class:`quantcodec.Schema`, or
    its ``spec()``; a Schema given first works too) stores a structured array of records.

    ``dtype`` is what decoding returns and must be the Zarr array's dtype: by default float32 for
    float codecs (:func:`value_dtype`) and :func:`record_dtype` for a schema. Encoding takes any
    numeric array the codec takes (values are quantized in double precision); any other buffer
    (``bytes``, ``bytearray``, ``array.array``) is read as values of ``dtype``, as numcodecs'
    codecs read it.

    ``zero_rows="identity"`` encodes a row of exact zeros in a ``Quat`` (``UnitVector``) column as
    the identity rotation (the +z axis) instead of raising ``RangeError``: Zarr pads the last
    chunk of an axis with the fill value (0) when the chunk size does not divide the array, and
    those rows, never read back, would otherwise make the write fail. It is part of the config.

    Use it as a Zarr filter followed by any standard compressor (``filters=[QuantCodec(...)],
    compressors=numcodecs.Zstd()``), or alone as the compressor.
    """

    codec_id = "quantcodec"

    def __init__(self, codec: Union[Codec, Schema, Mapping, None] = None, schema: Union[Schema, Mapping, None] = None,
                 dtype: Any = None, zero_rows: str = "raise"):
        if isinstance(codec, Schema) or (isinstance(codec, Mapping) and "fields" in codec):
            if schema is not None:
                raise TypeError("QuantCodec takes a codec or a schema, not both")
            codec, schema = None, codec
        if codec is not None and schema is not None:
            raise TypeError("QuantCodec takes a codec or a schema, not both")
        if codec is None and schema is None:
            raise TypeError("QuantCodec needs a codec (QuantCodec(qc.Quat(9))) or a schema "
                            "(QuantCodec(schema=...))")
        if schema is not None:
            s = schema if isinstance(schema, Schema) else Schema.from_spec(schema)
            self._codec = None
            self._schema = s
            default = record_dtype(s)
        else:
            c = codec_from_spec(codec)          # a Codec as it is, or a spec dict
            self._codec = c
            self._schema = Schema("array", [(_VALUE, c)])
            default = value_dtype(c)
        self._dtype = default if dtype is None else _parse_dtype(dtype)
        self._layout = _record_layout(self._schema, self._dtype) if schema is not None else None
        if schema is None and (self._dtype.fields is not None or self._dtype.kind not in "fiub"):
            raise TypeError(f"QuantCodec: dtype {self._dtype} is not a numeric dtype")
        self._k = self._codec.ncomp if self._codec is not None else 1
        self._fingerprint = bytes.fromhex(self._schema.fingerprint)
        if zero_rows not in ("raise", "identity"):
            raise ValueError(f"QuantCodec: zero_rows must be 'raise' or 'identity', got {zero_rows!r}")
        self._zero_rows = zero_rows
        self._unit = [n for n, c in self._schema.fields if c.kind in _UNIT] if zero_rows == "identity" else []

    # ------------------------------------------------------------------ identity

    @property
    def codec(self) -> Optional[Codec]:
        """The wrapped codec (None for a schema)."""
        return self._codec

    @property
    def schema(self) -> Schema:
        """The schema the chunks are encoded with (a single codec's is ``array`` of one field
        ``value``)."""
        return self._schema

    @property
    def dtype(self) -> np.dtype:
        """The dtype decoding returns."""
        return self._dtype

    def get_config(self) -> dict:
        config = {"id": self.codec_id}
        if self._codec is not None:
            config["codec"] = self._codec.spec()
        else:
            config["schema"] = self._schema.spec()
        config["dtype"] = _dtype_config(self._dtype)
        if self._zero_rows != "raise":
            config["zero_rows"] = self._zero_rows
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config.pop("id", None)
        return cls(**config)

    def __eq__(self, other):
        if not isinstance(other, QuantCodec):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def _key(self):
        return (self._codec, self._schema, self._dtype, self._zero_rows)

    def __repr__(self):
        what = repr(self._codec) if self._codec is not None else f"schema={self._schema.name!r}"
        zero = f", zero_rows={self._zero_rows!r}" if self._zero_rows != "raise" else ""
        return f"QuantCodec({what}, dtype={_dtype_config(self._dtype)!r}{zero})"

    def __getstate__(self):
        return self.get_config()

    def __setstate__(self, config):
        config = dict(config)
        config.pop("id", None)
        self.__init__(**config)

    # ------------------------------------------------------------------ encode / decode

    def _columns(self, buf):
        if isinstance(buf, np.ndarray):
            arr = buf               # any numeric array the codec takes (float64 into float32, ...)
        else:
            # numcodecs' convention: any other buffer (bytes, bytearray, array.array, a
            # memoryview) holds the codec's dtype
            arr = ensure_contiguous_ndarray(buf)
            if arr.dtype != self._dtype:
                arr = arr.reshape(-1).view(np.uint8)
                if arr.shape[0] % self._dtype.itemsize:
                    raise ValueError(f"QuantCodec: a buffer of {arr.shape[0]} bytes does not hold whole "
                                     f"values of dtype {self._dtype} ({self._dtype.itemsize} bytes each)")
                arr = arr.view(self._dtype)
            if self._codec is not None and self._k > 1:
                if arr.size % self._k:
                    raise ValueError(f"QuantCodec({self._codec!r}): a buffer of {arr.size} values does not "
                                     f"hold whole values of {self._k} components")
                arr = arr.reshape(-1, self._k)      # (a buffer is flat: its values in C order)
        if self._codec is None:
            if arr.dtype.fields is None:
                raise TypeError(f"QuantCodec(schema={self._schema.name!r}) encodes structured arrays "
                                f"of records (dtype {self._dtype}), got dtype {arr.dtype}")
            flat = arr.reshape(-1)
            layout = self._layout if arr.dtype == self._dtype else _record_layout(self._schema, arr.dtype)
            columns = {n: (flat[n] if parts is None else np.stack([flat[p] for p in parts], axis=1))
                       for n, parts in layout}
            return flat.shape[0], columns
        if arr.dtype.fields is not None:
            raise TypeError(f"QuantCodec({self._codec!r}) encodes numeric arrays, got the structured "
                            f"dtype {arr.dtype}")
        k = self._k
        if k > 1:
            if arr.ndim == 0 or arr.shape[-1] != k:
                raise ValueError(f"QuantCodec({self._codec!r}): a chunk's last axis must hold the "
                                 f"{k} components of each value, got a chunk of shape {arr.shape} "
                                 f"(chunk the Zarr array whole along its last axis)")
            values = arr.reshape(-1, k)
        else:
            values = arr.reshape(-1)
        return values.shape[0], {_VALUE: values}

    def encode(self, buf):
        """An array chunk -> bytes: the header and the bit-packed records."""
        count, columns = self._columns(buf)
        for name in self._unit:
            col = np.asarray(columns[name])
            zero = ~col.any(axis=1)
            if zero.any():
                col = np.array(col, copy=True)       # never write into the caller's array
                col[zero] = _UNIT[self._schema[name].kind]
                columns[name] = col
        try:
            payload = self._schema.encode_many(columns)
        except RangeError as e:
            raise self._padding_error(e) from None
        head = _HEAD.pack(MAGIC, VERSION, self._fingerprint, count)
        crc = crc32c(payload, crc32c(head))
        return b"".join((head, struct.pack("<I", crc), payload))

    def _padding_error(self, e):
        """A zero quaternion / unit vector in a chunk: most likely the fill value Zarr pads an
        edge chunk with. Says so, and the fix, in the words of the user's codec (not of the one
        field, ``value``, that a single codec's schema has inside)."""
        text = str(e)
        if self._zero_rows != "raise" or not ("zero quaternion" in text or "zero vector" in text):
            return e
        row = getattr(e, "row", None)
        what = repr(self._codec) if self._codec is not None else f"schema={self._schema.name!r}"
        where = text if self._codec is None else text.replace(f"field {_VALUE!r}: ", "", 1)
        w = RangeError(f"QuantCodec({what}): {where}. Zarr pads the last chunk of an axis with the fill "
                       f"value (0) when the chunk size does not divide the array, and an all-zero row "
                       f"is not a rotation: choose chunks that divide the array, or pass "
                       f"zero_rows='identity' (QuantCodec(..., zero_rows='identity')), which encodes "
                       f"such rows as the identity (they are never read back)")
        if row is not None:
            w.row = row
        return w

    def decode(self, buf, out=None):
        """bytes -> the array (flat: Zarr gives it the chunk's shape). Raises
        :class:`quantcodec.DecodeError` for anything that is not a chunk this codec wrote, and
        ``TypeError`` for an ``out`` of dtype object (numcodecs' convention)."""
        if isinstance(out, np.ndarray) and out.dtype.hasobject:
            raise TypeError(f"QuantCodec.decode: out must be a numeric array of dtype {self._dtype}, "
                            f"not an array of Python objects")
        data = ensure_contiguous_ndarray(buf).view(np.uint8).reshape(-1)
        n = data.shape[0]
        if n < HEADER_SIZE:
            raise DecodeError(f"quantcodec chunk too short: {n} bytes, the header alone takes {HEADER_SIZE}")
        magic, version, fp, count = _HEAD.unpack_from(data, 0)
        if magic != MAGIC:
            raise DecodeError(f"not a quantcodec chunk: starts with {bytes(data[:4])!r}, not {MAGIC!r}")
        if version != VERSION:
            raise DecodeError(f"quantcodec chunk format version {version} is not known to this "
                              f"quantcodec (it reads version {VERSION}); upgrade quantcodec")
        if fp != self._fingerprint:
            raise DecodeError(f"quantcodec chunk was written with schema fingerprint {fp.hex()}, "
                              f"this codec's is {self._schema.fingerprint} (another codec or schema)")
        (want,) = struct.unpack_from("<I", data, _HEAD.size)
        payload = data[HEADER_SIZE:]
        got = crc32c(payload, crc32c(data[:_HEAD.size]))
        if got != want:
            raise DecodeError(f"quantcodec chunk is damaged: CRC-32C {got:#010x}, the header says "
                              f"{want:#010x} ({n} bytes, {count} records)")
        if count * self._schema.min_bits > 8 * payload.shape[0] or (not self._schema.min_bits and count > 1 << 40):
            raise DecodeError(f"quantcodec chunk is damaged: {count} records cannot fit in "
                              f"{payload.shape[0]} bytes")
        cols = self._schema.decode_many(payload, count)
        if self._codec is None:
            result = np.empty(count, dtype=self._dtype)
            for name, parts in self._layout:
                if parts is None:
                    result[name] = cols[name]
                else:
                    for i, p in enumerate(parts):
                        result[p] = cols[name][:, i]
        else:
            result = cols[_VALUE].astype(self._dtype, copy=False).reshape(-1)
        return ndarray_copy(result, out) if out is not None else result


def _parse_dtype(dtype):
    if isinstance(dtype, list):                 # a structured dtype from a JSON config
        dtype = [tuple(f) if not isinstance(f, tuple) else f for f in dtype]
        dtype = [(f[0], f[1], tuple(f[2])) if len(f) > 2 else tuple(f) for f in dtype]
    return np.dtype(dtype)


def _dtype_config(dtype):
    """A dtype as JSON: its string (``"<f4"``), or for records the list numpy's ``descr`` gives."""
    if dtype.fields is None:
        return dtype.str
    return [list(f[:2]) + ([list(f[2])] if len(f) > 2 else []) for f in dtype.descr]


def _record_layout(schema, dtype):
    """For each schema field, the dtype field(s) holding it: ``(name, None)`` for one field (a
    scalar, or a sub-array of the field's k components), ``(name, [name.0, ...])`` for k scalar
    fields. TypeError for a dtype that does not hold the schema's records."""
    if dtype.fields is None:
        raise TypeError(f"QuantCodec(schema={schema.name!r}) needs a structured dtype with the "
                        f"schema's fields, got {dtype} (see quantcodec.numcodecs.record_dtype)")
    layout = []
    for name, codec in schema.fields:
        k = codec.ncomp
        if name in dtype.fields:
            sub = dtype.fields[name][0]
            shape = sub.shape if sub.subdtype is not None else ()
            if (k > 1 and shape != (k,)) or (k == 1 and shape not in ((), (1,))):
                raise TypeError(f"QuantCodec(schema={schema.name!r}): field {name!r} holds {k} "
                                f"component(s), the dtype gives it shape {shape}")
            layout.append((name, None))
        elif k > 1 and all(f"{name}.{i}" in dtype.fields for i in range(k)):
            parts = [f"{name}.{i}" for i in range(k)]
            if any(dtype.fields[p][0].subdtype is not None for p in parts):
                raise TypeError(f"QuantCodec(schema={schema.name!r}): fields {name}.0..{k - 1} "
                                f"must be scalars")
            layout.append((name, parts))
        else:
            want = repr(name) if k == 1 else f"{name!r} (or {name}.0 .. {name}.{k - 1})"
            raise TypeError(f"QuantCodec(schema={schema.name!r}): dtype {dtype} has no field {want}")
    return layout


register_codec(QuantCodec)


# ---------------------------------------------------------------------------------------------
# Zarr 3 (zarr_format=3): the same codec as an array-to-bytes codec, through Zarr's own adapter
# for numcodecs codecs (zarr.codecs.numcodecs, Zarr >= 3.1.3)

try:  # pragma: no cover - depends on the installed Zarr
    from zarr.codecs.numcodecs._codecs import _NumcodecsArrayBytesCodec
    from zarr.registry import register_codec as _zarr_register_codec
except ImportError:  # no Zarr 3: zarr_format=2 arrays (filters/compressor) still work
    ZarrQuantCodec = None
else:
    class ZarrQuantCodec(_NumcodecsArrayBytesCodec, codec_name="quantcodec"):
        """:class:`QuantCodec` as a Zarr 3 serializer: ``zarr.create_array(...,
        serializer=ZarrQuantCodec(**QuantCodec(...).get_config()), compressors=...)``.
        Zarr warns that numcodecs codecs are not in the Zarr 3 specification (true: other Zarr
        implementations will not read these arrays)."""

    _zarr_register_codec("numcodecs.quantcodec", ZarrQuantCodec)
    __all__.append("ZarrQuantCodec")
