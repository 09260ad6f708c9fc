"""Schemas from protobuf messages whose fields are annotated with quantization options.

The design this library started from annotates protobuf fields with custom options:

    import "options.proto";
    message PlayerState {
      uint32 position_x = 2 [(quantized) = { min: 0, max: 16, bits: 8 }];       // Bounded(0, 16, 8)
      uint32 velocity_x = 5 [(quantized_power) = { max: 50, pow: 2, bits: 8 }]; // PowerCurve(50, 2, 8)
      uint32 entity_id  = 4 [(bit_packed) = { bits: 20 }];                      // UInt(20) (Int for signed types)
    }

:func:`schema_from_proto` (``Schema.from_proto``) reads such a message from a compiled descriptor
set (``protoc --include_imports --descriptor_set_out=...``) or from a ``.proto`` file, which it
compiles with the ``protoc`` bundled in ``grpcio-tools``. The options are recognised by their names
(``quantized``, ``quantized_power``, ``bit_packed``) as extensions of ``google.protobuf.FieldOptions``
in any package, with the parameters ``min``, ``max``, ``bits`` and ``pow`` of any numeric type;
their values are read from the descriptors' bytes, so no generated Python code is needed.

Needs the optional extra ``quantcodec[protobuf]`` (protobuf; grpcio-tools for ``.proto`` files).
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import tempfile

from ._codecs import Bool, Bounded, Enum, Int, PowerCurve, UInt
from .errors import SchemaError

__all__ = ["schema_from_proto", "load_descriptor_set", "OPTION_NAMES"]

OPTION_NAMES = ("quantized", "quantized_power", "bit_packed")
_PARAMS = {"quantized": ("min", "max", "bits"), "quantized_power": ("max", "pow", "bits"),
           "bit_packed": ("bits",)}


def _descriptor_pb2():
    try:
        from google.protobuf import descriptor_pb2
    except ImportError:
        raise ImportError("Schema.from_proto needs protobuf: pip install 'quantcodec[protobuf]'") from None
    return descriptor_pb2


def _protoc(proto_path, include):
    """Compile `proto_path` into a FileDescriptorSet (bytes) with grpcio-tools' bundled protoc."""
    try:
        import grpc_tools
        from grpc_tools import protoc  # noqa: F401
    except ImportError:
        raise ImportError("Schema.from_proto of a .proto file needs grpcio-tools (its bundled protoc): "
                          "pip install 'quantcodec[protobuf]', or pass a descriptor set compiled with "
                          "protoc --include_imports --descriptor_set_out=FILE") from None
    well_known = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    dirs = [os.path.dirname(os.path.abspath(proto_path))] + [os.fspath(d) for d in include] + [well_known]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "set.pb")
        # in a subprocess: protoc's own messages go to stderr, and a failure is an exit status
        cmd = [sys.executable, "-m", "grpc_tools.protoc", *[f"-I{d}" for d in dirs],
               "--include_imports", f"--descriptor_set_out={out}", os.path.abspath(proto_path)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SchemaError(f"protoc could not compile {proto_path}: {proc.stderr.strip() or proc.stdout.strip()}")
        with open(out, "rb") as fh:
            return fh.read()


def load_descriptor_set(source, include=()):
    """A ``FileDescriptorSet`` from: a path to a ``.proto`` file (compiled with grpcio-tools'
    protoc; `include` adds import directories), a path to a compiled descriptor set, its bytes,
    or the message itself."""
    pb2 = _descriptor_pb2()
    if isinstance(source, pb2.FileDescriptorSet):
        return source
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    else:
        path = os.fspath(source)
        if path.endswith(".proto"):
            data = _protoc(path, include)
        else:
            with open(path, "rb") as fh:
                data = fh.read()
    fds = pb2.FileDescriptorSet()
    try:
        fds.ParseFromString(data)
    except Exception as e:  # google.protobuf.message.DecodeError
        raise SchemaError(f"not a compiled protobuf descriptor set: {e}") from None
    return fds


# ---------------------------------------------------------------------------------------------
# protobuf wire format, for the option values kept as unknown fields of FieldOptions


def _varint(data, i):
    shift = value = 0
    while True:
        if i >= len(data) or shift > 63:
            raise SchemaError("malformed field options in the descriptor set")
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def _fields(data):
    """(number, wire type, raw value) of each field of a serialized message."""
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wt = key >> 3, key & 7
        if wt == 0:
            value, i = _varint(data, i)
        elif wt == 1:
            value, i = data[i:i + 8], i + 8
        elif wt == 2:
            n, i = _varint(data, i)
            value, i = data[i:i + n], i + n
        elif wt == 5:
            value, i = data[i:i + 4], i + 4
        else:
            raise SchemaError(f"unsupported wire type {wt} in field options")
        yield number, wt, value


def _scalar(field, wt, raw):
    """The value of an option parameter of descriptor `field` (a FieldDescriptorProto)."""
    pb2 = _descriptor_pb2()
    T = pb2.FieldDescriptorProto
    t = field.type
    if t == T.TYPE_FLOAT and wt == 5:
        return struct.unpack("<f", raw)[0]
    if t == T.TYPE_DOUBLE and wt == 1:
        return struct.unpack("<d", raw)[0]
    if t in (T.TYPE_FIXED32,) and wt == 5:
        return struct.unpack("<I", raw)[0]
    if t in (T.TYPE_SFIXED32,) and wt == 5:
        return struct.unpack("<i", raw)[0]
    if t in (T.TYPE_FIXED64,) and wt == 1:
        return struct.unpack("<Q", raw)[0]
    if t in (T.TYPE_SFIXED64,) and wt == 1:
        return struct.unpack("<q", raw)[0]
    if wt == 0:
        if t in (T.TYPE_SINT32, T.TYPE_SINT64):
            return (raw >> 1) ^ -(raw & 1)
        if t in (T.TYPE_INT32, T.TYPE_INT64) and raw >= 1 << 63:
            return raw - (1 << 64)
        return raw
    raise SchemaError(f"option parameter {field.name!r}: wire type {wt} does not match its type")


# ---------------------------------------------------------------------------------------------


def _index(fds):
    """Messages and enums by full name, and the quantization options by extension number."""
    messages, enums, options = {}, {}, {}

    def walk(prefix, msg_list, enum_list):
        for e in enum_list:
            enums[f"{prefix}.{e.name}"] = e
        for m in msg_list:
            name = f"{prefix}.{m.name}"
            messages[name] = m
            walk(name, m.nested_type, m.enum_type)

    for f in fds.file:
        prefix = f".{f.package}" if f.package else ""
        walk(prefix, f.message_type, f.enum_type)
    exts = [(f".{f.package}" if f.package else "", e) for f in fds.file for e in f.extension]
    exts += [(name, e) for name, m in list(messages.items()) for e in m.extension]
    for _, e in exts:
        if e.extendee == ".google.protobuf.FieldOptions" and e.name in OPTION_NAMES:
            options[e.number] = (e.name, e.type_name)
    return messages, enums, options


def _find_message(messages, message):
    if message.startswith("."):
        full = [message] if message in messages else []
    else:
        full = [n for n in messages if n == "." + message or n.endswith("." + message)]
    if not full:
        known = ", ".join(sorted(n.lstrip(".") for n in messages)) or "none"
        raise SchemaError(f"Schema.from_proto: no message {message!r} in the descriptor set (messages: {known})")
    if len(full) > 1:
        raise SchemaError(f"Schema.from_proto: {message!r} is ambiguous: "
                          f"{', '.join(n.lstrip('.') for n in full)}; give the full name")
    return full[0], messages[full[0]]


def _default(field):
    """An option parameter's default: proto2's ``[default = ...]`` read as its type reads it (an
    integer type an int, a float IEEE single precision, as a value given explicitly), else 0."""
    if not field.HasField("default_value"):
        return 0
    T = _descriptor_pb2().FieldDescriptorProto
    text = field.default_value
    try:
        if field.type == T.TYPE_FLOAT:
            return struct.unpack("<f", struct.pack("<f", float(text)))[0]
        if field.type == T.TYPE_DOUBLE:
            return float(text)
        if field.type == T.TYPE_BOOL:
            return text == "true"
        return int(text)
    except (ValueError, OverflowError):
        raise SchemaError(f"option parameter {field.name!r}: its default {text!r} is not a "
                          f"number of its type") from None


def _annotations(field, messages, options):
    """{option name: {param: value}} of one FieldDescriptorProto."""
    found = {}
    if not field.HasField("options"):
        return found
    for number, wt, raw in _fields(field.options.SerializeToString()):
        if number not in options or wt != 2:
            continue
        name, type_name = options[number]
        kind = messages.get(type_name)
        if kind is None:
            raise SchemaError(f"field {field.name!r}: the type of option {name!r} ({type_name}) is not in "
                              f"the descriptor set (compile with --include_imports)")
        by_number = {f.number: f for f in kind.field}
        params = found.setdefault(name, {})
        for f in kind.field:            # an absent parameter has its default: 0 (proto3), or proto2's
            if f.name not in params:
                params[f.name] = _default(f)
        for pn, pwt, praw in _fields(raw):
            if pn in by_number:
                params[by_number[pn].name] = _scalar(by_number[pn], pwt, praw)
    return found


def schema_from_proto(schema_cls, source, message, *, include=(), version=1, name=None,
                      unannotated="skip", strict=False):
    pb2 = _descriptor_pb2()
    T = pb2.FieldDescriptorProto
    if unannotated not in ("skip", "raise"):
        raise ValueError(f"Schema.from_proto: unannotated must be 'skip' or 'raise', got {unannotated!r}")
    fds = load_descriptor_set(source, include)
    messages, enums, options = _index(fds)
    full, msg = _find_message(messages, message)
    if not options:
        raise SchemaError("Schema.from_proto: the descriptor set declares none of the options "
                          f"{', '.join(OPTION_NAMES)} (extensions of google.protobuf.FieldOptions); "
                          "compile with --include_imports so that options.proto is in it")
    fields = []
    for f in msg.field:
        ann = _annotations(f, messages, options)
        where = f"{full.lstrip('.')}.{f.name}"
        if f.HasField("oneof_index") and not f.proto3_optional:
            # a member of a oneof (proto3's `optional` is a oneof of its own: not one of these):
            # one member or another is set, where a snapshot's row has every field
            if ann or unannotated == "raise":
                raise SchemaError(f"{where}: a member of oneof "
                                  f"{msg.oneof_decl[f.oneof_index].name!r} cannot be quantized (a "
                                  f"record has every field; a oneof sets one of its members)")
            continue
        if len(ann) > 1:
            raise SchemaError(f"{where}: carries {' and '.join(sorted(ann))}; a field takes one of them")
        if ann and f.label == T.LABEL_REPEATED:
            raise SchemaError(f"{where}: a repeated field cannot be quantized (one value per field)")
        if ann:
            (kind, params), = ann.items()
            missing = [p for p in _PARAMS[kind] if p not in params]
            if missing:
                raise SchemaError(f"{where}: the option message {kind} has no parameter "
                                  f"{', '.join(missing)} (it needs {', '.join(_PARAMS[kind])})")
            try:
                if kind == "quantized":
                    codec = Bounded(params["min"], params["max"], params["bits"])
                elif kind == "quantized_power":
                    codec = PowerCurve(params["max"], params["pow"], params["bits"])
                elif f.type in (T.TYPE_INT32, T.TYPE_INT64, T.TYPE_SINT32, T.TYPE_SINT64,
                                T.TYPE_SFIXED32, T.TYPE_SFIXED64):
                    codec = Int(params["bits"])
                else:
                    codec = UInt(params["bits"])
            except SchemaError as e:
                raise SchemaError(f"{where}: ({kind}) {e}") from None
        elif f.type == T.TYPE_BOOL and f.label != T.LABEL_REPEATED:
            codec = Bool()
        elif f.type == T.TYPE_ENUM and f.label != T.LABEL_REPEATED and f.type_name in enums:
            values = enums[f.type_name].value
            numbers = [v.number for v in values]
            if sorted(numbers) != list(range(len(numbers))):
                if unannotated == "raise":
                    raise SchemaError(f"{where}: enum {f.type_name.lstrip('.')} numbers {numbers} are not "
                                      f"0..n-1, which Enum needs")
                continue
            codec = Enum([v.name for v in sorted(values, key=lambda v: v.number)])
        else:
            if unannotated == "raise":
                raise SchemaError(f"{where}: not annotated with {', '.join(OPTION_NAMES)}, and not a bool "
                                  f"or an enum")
            continue
        fields.append((f.name, codec))
    if not fields:
        raise SchemaError(f"Schema.from_proto: message {full.lstrip('.')} has no annotated field, bool or enum")
    return schema_cls(name or msg.name, fields, version=version, strict=strict)
