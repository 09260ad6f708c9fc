"""Schema: a named, versioned list of fields, each with its codec (SPEC section 4).

A schema validates its fields once and compiles them into a `_plan.Plan`, the flat C array of
slots that encodes and decodes one record in one Python -> C call and batches in nogil loops.
This module holds everything around that: construction and its checks, `spec()` / JSON / TOML,
the fingerprint, `describe()`, clamp counters and `check_lockstep`.

The file format, the fingerprint and the record wire layout are documented in
docs/schema-format.md.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
import re
from collections.abc import Mapping
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, NoReturn, Optional, Sequence, Tuple,
                    Type, TypeVar, Union)

import numpy.typing as npt

from ._codecs import Codec, codec_from_spec
from ._canonical import canonical_json as _canonical_json
from ._plan import Plan
from ._schemabase import SchemaBase, record_methods
from .errors import SchemaError
from .snapshot import Snapshot

if TYPE_CHECKING:
    from typing_extensions import Buffer, Literal

__all__ = ["Schema", "check_lockstep"]

# What the public signatures take (strings to the interpreter: `from __future__ import annotations`)
_CodecArg = Union[Codec, Mapping[str, Any]]         # a codec, or its spec() dict
_Fields = Union[Mapping[str, _CodecArg], Sequence[Union[Tuple[str, _CodecArg], Mapping[str, Any]]]]
_Columns = Mapping[str, npt.ArrayLike]              # field -> array (or list) of values, a row an entity
_Path = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
_S = TypeVar("_S", bound="Schema")

_SPEC_KEYS = ("name", "version", "fields")
_FINGERPRINT_HEX = 16     # hex digits of the fingerprint: 64 bits of sha256


def _no_duplicates(pairs):
    """A JSON object's pairs as a dict; ValueError on a key given twice (json keeps the last
    silently, and so two readers of one file could build two schemas: the clients refuse it too)."""
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


_ASCII_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_MAX_VERSION = 2**63 - 1
_MAX_FIELDS = 65535         # fields of a schema, and components of a Vector (docs/schema-format.md)


def _check_name(name):
    # ASCII only: every client reads the same names (a "Python identifier" was read differently
    # by each language and each Unicode version; docs/schema-format.md, "One reading")
    if not isinstance(name, str) or not _ASCII_NAME.match(name):
        raise SchemaError(f"field names must be ASCII identifiers (letters A-Z and a-z, digits and _, "
                          f"not starting with a digit), got {name!r}")
    return name


_SURROGATE = re.compile("[\ud800-\udfff]")


def _check_text(what, text):
    # a str may hold a lone surrogate (a JSON "\\ud800" escape reads as one); no UTF-8 text can,
    # so it could not go into a hello, and each client read it its own way
    if "\x00" in text:
        raise SchemaError(f"{what} must not contain U+0000, got {text!r}")
    m = _SURROGATE.search(text)
    if m:
        raise SchemaError(f"{what} must be Unicode text: a lone surrogate U+{ord(m.group()):04X} at "
                          f"character {m.start()}, got {text!r}")


def _check_strings(name, pairs):
    """The rules of a schema document beyond each codec's own (docs/schema-format.md, "One
    reading"): the schema's name and Enum labels are Unicode text without U+0000 (and without a
    lone surrogate, which no UTF-8 text holds), at most 65,535 fields and 65,535 components a
    Vector."""
    _check_text("schema name", name)
    if len(pairs) > _MAX_FIELDS:
        raise SchemaError(f"a schema has at most {_MAX_FIELDS} fields, got {len(pairs)}")

    def walk(field, codec):
        spec = codec.spec()
        kind = spec.get("kind")
        if kind == "Enum" and "labels" in spec:
            for label in spec["labels"]:
                _check_text(f"field {field!r}: Enum labels", label)
        elif kind == "Vector":
            if len(codec.codecs) > _MAX_FIELDS:
                raise SchemaError(f"field {field!r}: a Vector has at most {_MAX_FIELDS} components, got "
                                  f"{len(codec.codecs)}")
            for c in codec.codecs:
                walk(field, c)
        elif kind == "NearlyZero":
            walk(field, codec.inner)

    for n, c in pairs:
        walk(n, c)


def _json_text(data, owner):
    """A schema document's text: bytes are UTF-8, strictly (one leading byte-order mark skipped;
    invalid bytes, encoded surrogates, UTF-16 refused); a str loses one leading U+FEFF."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = bytes(data)
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise SchemaError(f"{owner}not UTF-8: {e}") from None
    if isinstance(data, str) and data.startswith("\ufeff"):
        return data[1:]
    return data


def _field_pairs(fields):
    """(name, codec) pairs from a dict or a sequence of pairs (codecs or codec spec dicts)."""
    if isinstance(fields, Mapping):
        items = list(fields.items())
    elif isinstance(fields, (list, tuple)):
        items = []
        for i, item in enumerate(fields):
            if isinstance(item, Mapping):          # {"name": ..., "codec": ...}, as spec() writes them
                extra = sorted(set(item) - {"name", "codec"})
                if extra or "name" not in item or "codec" not in item:
                    raise SchemaError(f"field {i}: expected keys 'name' and 'codec', got {sorted(item)}")
                items.append((item["name"], item["codec"]))
            elif isinstance(item, (list, tuple)) and len(item) == 2:
                items.append((item[0], item[1]))
            else:
                raise SchemaError(f"field {i}: expected a (name, codec) pair, got {item!r}")
    else:
        raise SchemaError(f"fields must be a dict or a list of (name, codec) pairs, got {type(fields).__name__}")
    if not items:
        raise SchemaError("a schema needs at least one field")
    pairs = []
    seen = set()
    for name, codec in items:
        _check_name(name)
        if name in seen:
            raise SchemaError(f"duplicate field name {name!r}")
        seen.add(name)
        if isinstance(codec, Mapping):
            try:
                codec = codec_from_spec(dict(codec))
            except SchemaError as e:
                # a Vector's component says "[1]: ...": the field reads `position[1]`
                msg = str(e)
                comp, sep, rest = msg.partition("]: ")
                if msg.startswith("[") and sep and comp[1:].isdigit():
                    raise SchemaError(f"field '{name}{comp}]': {rest}") from None
                raise SchemaError(f"field {name!r}: {e}") from None
        elif not isinstance(codec, Codec):
            raise SchemaError(f"field {name!r}: expected a codec (or a codec spec dict), got {codec!r}")
        pairs.append((name, codec))
    return tuple(pairs)


class Schema(SchemaBase):
    """A named, versioned list of fields, each with its codec; the unit both ends agree on.

    ``Schema(name, fields, *, version=1, strict=False)``. ``fields`` is a list of
    ``(name, codec)`` pairs or a dict (its order is the wire order); a codec may also be given
    as its ``spec()`` dict. Field names are unique ASCII identifiers (letters, digits and _, not starting with a digit).

    Records are mappings, objects with the field attributes (namedtuples included), or plain
    tuples (or lists) in field order. Immutable, hashable and comparable by ``spec()``;
    picklable (by spec: the receiver rebuilds the compiled plan). The clamp counters are the
    one piece of mutable state (see ``clamped``); ``strict`` is a local policy, not part of
    the spec or the fingerprint.

    The one-record methods (``encode``, ``decode``, ``quantize``, ``dequantize``, ``roundtrip``,
    ``encode_codes``, ``decode_codes``, ``valid``) take their argument positionally, like
    ``struct.pack``: they are C methods of the compiled base class (``quantcodec._schemabase.SchemaBase``),
    one C call per record into the schema's plan, without a keyword layer.
    """

    if TYPE_CHECKING:
        # set once by __init__ (past the immutable __setattr__): read-only
        @property
        def name(self) -> str: ...
        @property
        def version(self) -> int: ...
        @property
        def strict(self) -> bool: ...
        @property
        def fields(self) -> Tuple[Tuple[str, Codec], ...]: ...
        @property
        def fingerprint(self) -> str:
            """The short hex string (16 digits) both ends compare at connect."""
        _codecs: Dict[str, Codec]
        _canon: str

    def __init__(self, name: str, fields: _Fields, *, version: int = 1, strict: bool = False) -> None:
        if not isinstance(name, str) or not name:
            raise SchemaError(f"schema name must be a non-empty string, got {name!r}")
        if isinstance(version, bool) or not isinstance(version, numbers.Integral) or not 0 <= version <= _MAX_VERSION:
            raise SchemaError(f"schema version must be an integer from 0 to 2**63 - 1, got {version!r}")
        if not isinstance(strict, bool):
            raise SchemaError(f"strict must be True or False, got {strict!r}")
        pairs = _field_pairs(fields)
        _check_strings(name, pairs)
        plan = Plan([c for _, c in pairs], [n for n, _ in pairs], strict=strict)
        spec = {
            "name": name,
            "version": int(version),
            "fields": [{"name": n, "codec": c.spec()} for n, c in pairs],
        }
        canon = _canonical_json(spec)
        SchemaBase.__init__(self, plan)     # the plan, in the compiled base's C field
        # Set once, past the immutable __setattr__; never through self.__dict__, which would turn
        # the instance's inline attribute values into a dict and slow every method lookup (and so
        # every one-record call) on it
        for attr, value in (("name", name), ("version", int(version)), ("strict", strict), ("fields", pairs),
                            ("_codecs", dict(pairs)), ("_canon", canon),
                            ("fingerprint", hashlib.sha256(canon.encode("ascii")).hexdigest()[:_FINGERPRINT_HEX])):
            object.__setattr__(self, attr, value)

    # ------------------------------------------------------------------ immutability, identity

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"Schema is immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"Schema is immutable (cannot delete {name!r})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Schema):
            return NotImplemented
        return self._canon == other._canon

    def __ne__(self, other: object) -> bool:
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self) -> int:
        return hash(self._canon)

    def __reduce__(self) -> Tuple[Callable[..., Schema], Tuple[Any, ...]]:
        return (_rebuild, (self.spec(), self.strict))

    def __copy__(self: _S) -> _S:
        return self

    def __deepcopy__(self: _S, memo: object) -> _S:
        return self

    def __repr__(self) -> str:
        fields = ", ".join(f"({n!r}, {c!r})" for n, c in self.fields)
        strict = ", strict=True" if self.strict else ""
        return f"Schema({self.name!r}, [{fields}], version={self.version}{strict})"

    def __len__(self) -> int:
        return len(self.fields)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __contains__(self, name: object) -> bool:
        return name in self._codecs

    def __getitem__(self, name: str) -> Codec:
        """The codec of field `name`."""
        try:
            return self._codecs[name]
        except KeyError:
            raise KeyError(f"schema {self.name!r} has no field {name!r}") from None

    @property
    def names(self) -> Tuple[str, ...]:
        """The field names, in wire order."""
        return self._plan.names

    @property
    def codecs(self) -> Tuple[Codec, ...]:
        """The field codecs, in wire order."""
        return self._plan.codecs

    # ------------------------------------------------------------------ one record
    # encode, decode, quantize, dequantize, roundtrip, encode_codes, decode_codes, valid: C method
    # descriptors of Schema itself, given by _schemabase.record_methods below (their documentation
    # is there); each is one C call into the compiled plan per record. A record is a mapping, an
    # object with the field attributes or a sequence in field order; codes a sequence in field order

    if TYPE_CHECKING:
        def encode(self, record: object, /) -> bytes: ...
        def decode(self, data: Buffer, /) -> Dict[str, Any]: ...
        def quantize(self, record: object, /) -> Tuple[Any, ...]: ...
        def dequantize(self, codes: Sequence[Any], /) -> Dict[str, Any]: ...
        def roundtrip(self, record: object, /) -> Dict[str, Any]: ...
        def encode_codes(self, codes: Sequence[Any], /) -> bytes: ...
        def decode_codes(self, data: Buffer, /) -> Tuple[Any, ...]: ...
        def valid(self, codes: object, /) -> bool: ...

    # ------------------------------------------------------------------ batches

    def quantize_many(self, columns: _Columns) -> Dict[str, npt.NDArray[Any]]:
        """Columns (dict field -> array) -> dict of code arrays in each codec's array shape and dtype.
        Enum columns hold indices or labels."""
        return self._plan.matrix_to_codes(self._plan.quantize_matrix(columns, None, "quantize_many")[0])

    def dequantize_many(self, code_columns: _Columns) -> Dict[str, npt.NDArray[Any]]:
        """Dict of code arrays -> dict of value arrays (float64; exact fields in their codec's
        dtype; enum columns carry indices). DecodeError for a code that is not valid."""
        return self._plan.dequantize_matrix(self._plan.codes_to_matrix(code_columns))

    def encode_many(self, columns: _Columns) -> bytes:
        """Columns -> bytes: the N records back to back in one bit stream, padded at the end.
        ``columns`` maps every field to an array of N rows (``(N,)``, ``(N, k)`` for vectors,
        ``(N, 4)`` for Quat; enum columns hold indices). SchemaError naming the field for a
        missing field or a column of the wrong shape or length; out-of-range floats (and NaN,
        docs/codecs.md) clamp and are counted in ``clamped`` (RangeError naming the field with
        ``strict=True``); RangeError naming the field and the row for a value an exact codec
        refuses or a zero quaternion."""
        return self._plan.encode_many(columns)

    def decode_many(self, data: Buffer, count: int) -> Dict[str, npt.NDArray[Any]]:
        """bytes of `count` records (as encode_many writes them) -> dict of value arrays.
        DecodeError saying which record and field when the bytes are short or long for
        ``count`` records, the padding is not zero, or a code is not valid (nothing is
        returned)."""
        return self._plan.decode_many(data, count)

    def snapshot(self, ids: npt.ArrayLike, columns: _Columns, *,
                 bad: Literal["raise", "drop", "keep"] = "raise", previous: Optional[Snapshot] = None) -> Snapshot:
        """Quantize the world once: an immutable Snapshot of `columns` for entities `ids`
        (docs/snapshots.md). Ids and columns of different lengths are a SchemaError.

        ``bad`` says what a bad body does (docs/hostile-input.md): ``"raise"`` (the default) a
        RangeError naming the entity id, the field and the component (a zero quaternion, a value
        an exact codec refuses, a NaN or an infinity in a float field; a finite value out of
        range is clamped and counted); ``"drop"`` leaves such entities out; ``"keep"`` gives
        them their codes in ``previous`` (dropping those it does not hold). The snapshot's
        ``bad``, ``dropped`` and ``kept`` report them."""
        if bad == "raise" and previous is None:
            return Snapshot(self, ids, columns)
        return Snapshot(self, ids, columns, bad=bad, previous=previous)

    # ------------------------------------------------------------------ clamping

    @property
    def clamped(self) -> Dict[str, int]:
        """Values clamped (or substituted: NaN, infinities) per field since the schema was built or
        last reset, counted by every call that quantizes floats (encode, quantize, roundtrip and
        their batch forms, snapshots). A dict in field order; ``reset_clamped()`` zeroes it."""
        return dict(zip(self.names, self._plan.clamp_counts()))

    def reset_clamped(self) -> Dict[str, int]:
        """Zero the clamp counters; returns the counts they had (as `clamped`)."""
        return dict(zip(self.names, self._plan.reset_clamps()))

    # ------------------------------------------------------------------ sizes and errors

    @property
    def bits(self) -> int:
        """The most bits one record takes (every NearlyZero flag 1)."""
        return self._plan.max_bits

    @property
    def min_bits(self) -> int:
        """The fewest bits one record takes (every NearlyZero flag 0)."""
        return self._plan.min_bits

    @property
    def nbytes(self) -> int:
        """The most bytes one record takes (bits rounded up to a byte)."""
        return (self._plan.max_bits + 7) // 8

    @property
    def steps(self) -> Dict[str, Any]:
        """Each field's step (a tuple for vectors), by field."""
        return {n: c.step for n, c in self.fields}

    @property
    def max_errors(self) -> Dict[str, Any]:
        """Each field's worst error for in-range input (degrees for Quat and UnitVector), by field."""
        return {n: c.max_error for n, c in self.fields}

    def describe(self) -> str:
        """A table of the fields: codec, bits, step and worst error, and the total against raw
        32-bit floats (one float32 per value component)."""
        rows = []
        raw = 0
        for name, codec in self.fields:
            raw += _float_count(codec)
            _describe_rows(rows, name, codec, 0)
        head = ("field", "codec", "bits", "step", "max error")
        widths = [max(len(head[i]), *(len(r[i]) for r in rows)) for i in range(5)]
        widths[1] = min(widths[1], 60)

        def line(r):
            c1 = r[1] if len(r[1]) <= widths[1] else r[1][:widths[1] - 3] + "..."
            return (f"{r[0]:<{widths[0]}}  {c1:<{widths[1]}}  {r[2]:>{widths[2]}}  "
                    f"{r[3]:>{widths[3]}}  {r[4]:>{widths[4]}}").rstrip()

        out = [f"Schema {self.name!r} version {self.version}, fingerprint {self.fingerprint}",
               line(head), line(tuple("-" * w for w in widths))]
        out += [line(r) for r in rows]
        bits = self.bits
        raw_bits = 32 * raw
        size = f"{bits} bits" if self.min_bits == bits else f"{self.min_bits}..{bits} bits"
        out.append(line(tuple("-" * w for w in widths)))
        out.append(f"total: {size} = at most {self.nbytes} bytes per record; raw float32: {raw} values = "
                   f"{raw_bits // 8} bytes ({raw_bits / bits:.2f}x smaller at most)" if bits else
                   f"total: 0 bits; raw float32: {raw} values = {raw_bits // 8} bytes")
        return "\n".join(out)

    # ------------------------------------------------------------------ spec, JSON, TOML, fingerprint

    def spec(self) -> Dict[str, Any]:
        """A JSON-able dict: {"name", "version", "fields": [{"name", "codec": codec.spec()}, ...]}."""
        return {
            "name": self.name,
            "version": self.version,
            "fields": [{"name": n, "codec": c.spec()} for n, c in self.fields],
        }

    @classmethod
    def from_spec(cls: Type[_S], spec: Mapping[str, Any], *, strict: bool = False) -> _S:
        """Rebuild a schema from `spec()` (or the same structure read from JSON or TOML)."""
        if not isinstance(spec, Mapping):
            raise SchemaError(f"schema spec must be a dict, got {type(spec).__name__}")
        extra = sorted(set(spec) - set(_SPEC_KEYS))
        if extra:
            raise SchemaError(f"schema spec has unknown keys {extra} (expected {', '.join(_SPEC_KEYS)})")
        for key in ("name", "fields"):
            if key not in spec:
                raise SchemaError(f"schema spec is missing {key!r}")
        return cls(spec["name"], spec["fields"], version=spec.get("version", 1), strict=strict)

    def to_json(self, indent: Union[int, str, None] = 2) -> str:
        """The spec as JSON text (floats written exactly, by Python's repr)."""
        return json.dumps(self.spec(), indent=indent, allow_nan=False)

    def to_toml(self) -> str:
        """The spec as TOML text, which ``Schema.load`` (a ``.toml`` file) and ``tomllib.loads``
        read back to an equal schema with the same fingerprint: floats written exactly (Python's
        repr), keys whose value would be null left out (TOML has no null). Simple codecs are
        inline tables; a Vector or a NearlyZero is a table of its own (docs/schema-format.md)."""
        out = [f"name = {_toml_value(self.name)}", f"version = {self.version}"]
        for name, codec in self.fields:
            out += ["", "[[fields]]", f"name = {_toml_value(name)}"]
            spec = codec.spec()
            inline = _toml_value(spec)
            if spec["kind"] in ("Vector", "NearlyZero") or len(inline) > 88:
                _toml_table(out, "fields.codec", spec)
            else:
                out.append(f"codec = {inline}")
        return "\n".join(out) + "\n"

    @classmethod
    def from_json(cls: Type[_S], text: Union[str, bytes, bytearray], *, strict: bool = False) -> _S:
        """Rebuild a schema from `to_json()` text (str or bytes)."""
        try:
            spec = json.loads(_json_text(text, "not a valid schema JSON document: "),
                              object_pairs_hook=_no_duplicates)
        except SchemaError:
            raise
        except (ValueError, TypeError) as e:
            raise SchemaError(f"not a valid schema JSON document: {e}") from None
        except RecursionError:
            raise SchemaError("not a valid schema JSON document: nested too deeply") from None
        return cls.from_spec(spec, strict=strict)

    @classmethod
    def load(cls: Type[_S], path: _Path, *, strict: bool = False) -> _S:
        """Read a schema file: JSON (.json) or TOML (.toml), with the structure of `spec()`.
        Any other suffix: JSON if the text starts with '{', else TOML. Any file error (one that
        cannot be read, bad JSON or TOML, a bad spec) is a SchemaError naming the file."""
        path = os.fspath(path)
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as e:
            # a missing file, a directory, no permission: the schema cannot be read, a SchemaError
            # naming the file (docs/schema-format.md), the OS error chained as its cause
            raise SchemaError(f"{path}: cannot read the schema file: {e.strerror or e}") from e
        suffix = os.path.splitext(path)[1].lower()
        is_json = suffix == ".json" or (suffix != ".toml" and data.lstrip()[:1] == b"{")
        if is_json:
            try:
                spec = json.loads(_json_text(data, f"{path}: not valid JSON: "), object_pairs_hook=_no_duplicates)
            except SchemaError:
                raise
            except ValueError as e:
                raise SchemaError(f"{path}: not valid JSON: {e}") from None
            except RecursionError:
                raise SchemaError(f"{path}: not valid JSON: nested too deeply") from None
        else:
            tomllib = _tomllib()
            text = _json_text(data, f"{path}: not valid TOML: ")
            try:
                spec = tomllib.loads(text)
            except (ValueError, UnicodeDecodeError) as e:
                raise SchemaError(f"{path}: not valid TOML: {e}") from None
            except RecursionError:
                raise SchemaError(f"{path}: not valid TOML: nested too deeply") from None
        try:
            return cls.from_spec(spec, strict=strict)
        except SchemaError as e:
            raise SchemaError(f"{path}: {e}") from None

    @classmethod
    def from_proto(cls: Type[_S], source: object, message: str, *, include: Sequence[_Path] = (),
                   version: int = 1, name: Optional[str] = None,
                   unannotated: Literal["skip", "raise"] = "skip", strict: bool = False) -> _S:
        """A schema from a protobuf message whose fields carry the options ``(quantized) = {min,
        max, bits}`` (Bounded), ``(quantized_power) = {max, pow, bits}`` (PowerCurve) or
        ``(bit_packed) = {bits}`` (UInt; Int for signed types), in declaration order; bool fields
        become Bool and enums numbered 0..n-1 Enum. Other fields are left out
        (``unannotated="raise"`` refuses them). `source`: a compiled descriptor set (path, bytes or
        ``FileDescriptorSet``, from ``protoc --include_imports --descriptor_set_out``) or a
        ``.proto`` file, compiled with grpcio-tools' protoc (`include`: import directories).
        `message`: its name, or full name when ambiguous. The schema is named after the message
        unless `name` is given. Needs ``pip install 'quantcodec[protobuf]'``; see docs/protobuf.md."""
        from ._proto import schema_from_proto
        return schema_from_proto(cls, source, message, include=include, version=version, name=name,
                                 unannotated=unannotated, strict=strict)

    def check_fingerprint(self, fingerprint: Union[str, bytes, bytearray]) -> None:
        """Raise SchemaError unless `fingerprint` (the peer's hex string, str or ASCII bytes; case
        and surrounding whitespace do not matter) equals this schema's."""
        fp = fingerprint
        if isinstance(fp, (bytes, bytearray)):
            fp = bytes(fp).decode("ascii", "replace")
        if not isinstance(fp, str) or fp.strip().lower() != self.fingerprint:
            raise SchemaError(f"schema fingerprint mismatch: this end has {self.name!r} version {self.version} "
                              f"with fingerprint {self.fingerprint}, the peer sent {fingerprint!r}")


record_methods(Schema)      # encode, decode, ...: C methods of Schema (quantcodec/_schemabase.pyx)


# ---------------------------------------------------------------------------------------- TOML writer

_TOML_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _toml_str(text):
    """A TOML basic string: escapes for quotes, backslashes and control characters; other
    characters as they are (TOML files are UTF-8)."""
    out = ['"']
    for ch in text:
        o = ord(ch)
        if ch in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[ch])
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\u{o:04X}")
        elif 0xD800 <= o <= 0xDFFF:
            raise SchemaError(f"to_toml: the string {text!r} holds a lone surrogate, which TOML cannot write "
                              f"(JSON can: use to_json)")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _toml_value(v):
    """One TOML value, on one line (an inline table for a dict, without its null keys)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise SchemaError(f"to_toml: {v!r} is not a finite number")
        return repr(v)          # "1e-07", "2048.0": TOML floats, read back to the same double
    if isinstance(v, str):
        return _toml_str(v)
    if isinstance(v, (list, tuple)):
        if any(x is None for x in v):
            raise SchemaError("to_toml: TOML arrays cannot hold null")
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        items = [f"{k} = {_toml_value(x)}" for k, x in v.items() if x is not None]
        return "{ " + ", ".join(items) + " }" if items else "{}"
    raise SchemaError(f"to_toml: {v!r} is not a TOML value")


def _toml_table(out, path, spec):
    """A codec spec as the table [path]: its keys first (a list of codecs one per line), then a
    nested codec (NearlyZero's inner) as the table [path.inner]."""
    out.append(f"[{path}]")
    nested = []
    for key, v in spec.items():
        if v is None:
            continue
        if isinstance(v, Mapping):
            nested.append((key, v))
        elif isinstance(v, (list, tuple)) and v and all(isinstance(x, Mapping) for x in v):
            out.append(f"{key} = [")
            out += [f"    {_toml_value(x)}," for x in v]
            out.append("]")
        else:
            out.append(f"{key} = {_toml_value(v)}")
    for key, v in nested:
        _toml_table(out, f"{path}.{key}", v)


def _rebuild(spec, strict):
    return Schema.from_spec(spec, strict=strict)


def _tomllib():
    try:
        import tomllib
    except ImportError:     # Python < 3.11
        try:
            import tomli as tomllib  # type: ignore[import-not-found, no-redef]
        except ImportError:
            raise SchemaError("reading TOML needs Python 3.11+ or the tomli package") from None
    return tomllib


# ---------------------------------------------------------------------------------------- describe

def _float_count(codec):
    """How many raw 32-bit values one value of `codec` would take."""
    kind = codec.kind
    if kind == "Vector":
        return len(codec.codecs)
    if kind == "NearlyZero":
        return _float_count(codec.inner)
    if kind == "Quat":
        return 4
    if kind == "UnitVector":
        return 3
    return 1


def _num(v, unit=""):
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    if v == 0:
        return "0" + unit
    return f"{v:.4g}{unit}"


def _describe_rows(rows, name, codec, depth, floor=0.0):
    """Rows of the describe() table; `floor` is the least worst error a component has (a
    NearlyZero's threshold: a value up to it decodes to 0), so each row's max error is the one
    ``schema.max_errors`` gives."""
    kind = codec.kind
    if kind == "Vector":
        rows.append((name, f"Vector of {len(codec.codecs)}", str(codec.bits), "", ""))
        for i, c in enumerate(codec.codecs):
            _describe_rows(rows, f"  {name}[{i}]", c, depth + 1, floor)
        return
    if kind == "NearlyZero":
        e = codec.max_error
        rows.append((name, f"NearlyZero(threshold={codec.threshold!r})", f"1..{codec.bits}", "",
                     _num(max(e) if isinstance(e, tuple) else e)))
        inner = codec.inner
        if inner.kind == "Vector":
            for i, c in enumerate(inner.codecs):
                _describe_rows(rows, f"  {name}[{i}]", c, depth + 1, codec.threshold)
        else:
            _describe_rows(rows, f"  {name}", inner, depth + 1, codec.threshold)
        return
    unit = " deg" if kind in ("Quat", "UnitVector") else ""
    step = _num(codec.step)
    rows.append((name, repr(codec), str(codec.bits), step, _num(max(codec.max_error, floor), unit)))


# ---------------------------------------------------------------------------------------- lockstep

def _codec_diffs(path, a, b):
    """Human-readable differences between two codecs, one string per differing parameter."""
    if a == b:
        return []
    sa, sb = a.spec(), b.spec()
    if sa["kind"] != sb["kind"]:
        return [f"{path}: {a!r} vs {b!r}"]
    kind = sa["kind"]
    if kind == "Vector":
        if len(a.codecs) != len(b.codecs):
            return [f"{path}: {len(a.codecs)} components vs {len(b.codecs)}"]
        out = []
        for i, (ca, cb) in enumerate(zip(a.codecs, b.codecs)):
            out += _codec_diffs(f"{path}[{i}]", ca, cb)
        return out
    if kind == "NearlyZero":
        out = []
        if a.threshold != b.threshold:
            out.append(f"{path}: threshold {a.threshold!r} vs {b.threshold!r}")
        return out + _codec_diffs(path, a.inner, b.inner)
    out = []
    for key in list(sa) + [k for k in sb if k not in sa]:
        if key == "kind":
            continue
        va, vb = sa.get(key), sb.get(key)
        if va != vb or type(va) is not type(vb):
            out.append(f"{path}: {key} {_show(va)} vs {_show(vb)}")
    return out or [f"{path}: {a!r} vs {b!r}"]


def _show(v):
    return repr(v) if not isinstance(v, (int, float)) or isinstance(v, bool) else str(v)


def check_lockstep(a: Schema, b: Schema, fields: Union[str, Iterable[str], None] = None) -> None:
    """Raise SchemaError listing every shared field whose codecs differ between schemas `a` and `b`
    (e.g. "position[1]: bits 14 vs 16"), so that a full-state message and a delta message decode
    onto the same grid. `fields` limits the check to those names (each must be in both schemas);
    by default every field name the two schemas share is checked."""
    for s, which in ((a, "a"), (b, "b")):
        if not isinstance(s, Schema):
            raise TypeError(f"check_lockstep: {which} must be a Schema, got {type(s).__name__}")
    if fields is None:
        shared = [n for n in a.names if n in b]
    else:
        if isinstance(fields, str):
            fields = [fields]
        shared = []
        for n in fields:
            for s in (a, b):
                if n not in s:
                    raise SchemaError(f"check_lockstep: field {n!r} is not in schema {s.name!r}")
            shared.append(n)
    diffs = []
    for n in shared:
        diffs += _codec_diffs(n, a[n], b[n])
    if diffs:
        raise SchemaError(f"schemas {a.name!r} (version {a.version}) and {b.name!r} (version {b.version}) "
                          f"are not in lockstep: " + "; ".join(diffs))
