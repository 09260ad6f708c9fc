"""Typed record code for clients in other languages: ``quantcodec codegen --lang csharp SCHEMA.json``.

``generate_csharp(schema, namespace="QuantCodec.Generated")`` returns the text of one C# file
with one struct per schema, over the C# runtime library of ``clients/csharp`` (namespace
``QuantCodec``): a public field per schema field, typed after its codec (``double`` for the float
scalars, ``QuantCodec.Vec2/Vec3/Vec4`` for vectors of floats, ``QuantCodec.Quat4`` for a
quaternion, ``QuantCodec.Vec3`` for a unit vector, a C# enum with the schema's labels for an
``Enum``, ``uint``/``ulong``, ``int``/``long`` and ``bool`` for the exact codecs, the inner type
for a ``NearlyZero``), a ``...Step`` constant per field (per component for vectors: the codec's
``step``), ``AreCodesInRange`` (the inbound range check, pure integer work), ``Quantize`` /
``Dequantize`` (slot codes), ``Encode`` / ``Decode`` (one record, ``schema.encode`` /
``schema.decode``), ``Read`` (one entity of a decoded snapshot) and the schema fingerprint as a
constant, checked against the runtime's own computation when the struct is first used and by
``CheckFingerprint`` / the snapshot decoder's hello at connect.

The generated file compiles with C# 7 (Mono's ``mcs -warnaserror``), Unity (C# 9, .NET Standard
2.1), Godot 4 and .NET 8, and is deterministic: the same schema gives the same bytes.
"""

from __future__ import annotations

import argparse
import keyword
import math
import re
import sys
import unicodedata

__all__ = ["generate_csharp", "check_namespace", "check_struct_name", "main", "add_arguments", "run"]

_FLOAT_KINDS = ("Bounded", "Fixed", "Angle", "PowerCurve", "Half", "Grid")
_AXES = ("X", "Y", "Z", "W")
_RESERVED = {
    "SchemaName", "SchemaVersion", "Fingerprint", "SpecJson", "Schema", "SlotCount", "MaxBits",
    "MaxBytes", "AreCodesInRange", "Quantize", "Dequantize", "Read", "Encode", "Decode",
    "CheckFingerprint", "CreateDecoder", "C", "LoadSchema", "ToString", "Equals", "GetHashCode",
    "GetType", "Finalize", "MemberwiseClone", "ReferenceEquals",
    # the runtime's types and the System names the generated code uses: a struct or member of
    # that name would hide them inside the struct (CS0176, CS0523, CS1061)
    "Codec", "Vec2", "Vec3", "Vec4", "Quat4", "Snapshot", "SnapshotDecoder", "SchemaException",
    "RangeException", "DecodeException", "BitWriter", "BitReader", "Math", "ArgumentException",
    "System", "QuantCodec",
}
# every type the generated code names is written in full from global::, so that no namespace
# (--namespace Foo.Vec3, System.Math, or one of the user's own) and no member can hide it
_QC = "global::QuantCodec."
_SYS = "global::System."
# the generated private members: a lowercase ASCII initial, which no member derived from a field
# name can have (_pascal upper-cases the first letter of each word, or puts "_" first)
_CODECS, _LOAD, _SLOTS = "qcCodecs", "qcLoadSchema", "qcSlotCodecs"
_PRIVATE = {_CODECS, _LOAD, _SLOTS}
# the types it names: a namespace of the same full name (or inside one) would be a namespace and a
# type at once, which C# resolves to the namespace (CS0437, then CS0234)
_USED_TYPES = {"System.Math", "System.ArgumentException"} | {
    "QuantCodec." + t for t in ("Schema", "Codec", "SchemaException", "Snapshot", "SnapshotDecoder",
                                "BitWriter", "FloatBits", "Vec2", "Vec3", "Vec4", "Quat4")}
_CS_KEYWORDS = set("""abstract as base bool break byte case catch char checked class const continue decimal
default delegate do double else enum event explicit extern false finally fixed float for foreach goto if
implicit in int interface internal is lock long namespace new null object operator out override params
private protected public readonly ref return sbyte sealed short sizeof stackalloc static string struct
switch this throw true try typeof uint ulong unchecked unsafe ushort using virtual void volatile
while""".split()) | {
    # mcs's undocumented keywords (CS1041 as identifiers)
    "__arglist", "__makeref", "__reftype", "__refvalue"}


# ------------------------------------------------------------------------------------------------
# names and literals

def _ident_char(ch, first):
    cat = unicodedata.category(ch)
    if ch == "_" or cat in ("Lu", "Ll", "Lt", "Lm", "Lo", "Nl"):
        return True
    return not first and cat in ("Nd", "Mn", "Mc", "Pc", "Cf")


def _pascal(text, fallback="Value"):
    """A C# identifier in PascalCase from any text ('grounded' -> 'Grounded', 'b_end' -> 'BEnd',
    'run fast' -> 'RunFast', '3d' -> '_3d')."""
    words = [w for w in re.split(r"[^0-9A-Za-z\u0080-\U0010ffff]+|_", text) if w]
    out = "".join(w[:1].upper() + w[1:] for w in words)
    out = "".join(ch if _ident_char(ch, i == 0) or (i > 0 and ch.isdigit()) else "_"
                  for i, ch in enumerate(out))
    if not out:
        out = fallback
    if not _ident_char(out[0], True):
        out = "_" + out
    if out in _CS_KEYWORDS:
        out = "@" + out
    return out


def _cs_string(s):
    """A C# regular string literal (ASCII only: everything else as a \\u escape of 4 hex digits)."""
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif 0x20 <= o < 0x7F:
            out.append(ch)
        elif o > 0xFFFF:
            o -= 0x10000
            out.append("\\u%04X\\u%04X" % (0xD800 + (o >> 10), 0xDC00 + (o & 0x3FF)))
        else:
            out.append("\\u%04X" % o)
    out.append('"')
    return "".join(out)


def _cs_double(x):
    """A C# double literal that reads back to the very same double (Python's repr: the shortest
    round-trip digits; the C# test of the runtime checks each constant bit for bit)."""
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"no C# constant for {x!r}")
    r = repr(x)
    if "e" not in r and "." not in r:
        r += ".0"
    return r


def _xml(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class _Names:
    """Unique member names inside one struct."""

    def __init__(self, taken):
        self.taken = set(taken)

    def get(self, base):
        name = base
        n = 2
        while name in self.taken or name in _RESERVED:
            name = f"{base}_{n}" if not base.endswith("_") else f"{base}{n}"
            n += 1
        self.taken.add(name)
        return name


def _is_identifier(text):
    return (isinstance(text, str) and bool(text)
            and all(_ident_char(ch, i == 0) for i, ch in enumerate(text)))


def check_namespace(namespace):
    """ValueError unless ``namespace`` is a C# namespace the generated file can declare: dotted
    identifiers, none of them a keyword. (Any such namespace works, even one whose last part is
    a type the code uses, such as ``Foo.Vec3`` or ``System.Math``: the code names every type
    from ``global::``.)"""
    if not isinstance(namespace, str) or not namespace:
        raise ValueError(f"not a C# namespace: {namespace!r} (it is empty)")
    parts = namespace.split(".")
    if not all(_is_identifier(part) for part in parts):
        raise ValueError(f"not a C# namespace: {namespace!r} (dotted identifiers: letters, digits and _, "
                         f"not starting with a digit)")
    bad = [part for part in parts if part in _CS_KEYWORDS or part == "global"]
    if bad:
        raise ValueError(f"not a C# namespace: {namespace!r} ({bad[0]!r} is a C# keyword)")
    for i in range(1, len(parts) + 1):
        if ".".join(parts[:i]) in _USED_TYPES:
            raise ValueError(f"not a namespace for the generated code: {namespace!r} (the type "
                             f"{'.'.join(parts[:i])} it uses would be a namespace too)")
    return namespace


def check_struct_name(name):
    """ValueError unless ``name`` can name the generated struct."""
    if not _is_identifier(name):
        raise ValueError(f"not a C# identifier for the struct: {name!r}")
    if name in _CS_KEYWORDS or name in _RESERVED or name in _PRIVATE:
        raise ValueError(f"the struct cannot be named {name!r}: "
                         f"{'a C# keyword' if name in _CS_KEYWORDS else 'a name the generated code uses'}")
    return name


# ------------------------------------------------------------------------------------------------
# types

def _scalar_type(codec):
    """The C# type of one scalar codec's value (Enum with labels: handled by the caller)."""
    kind = codec.spec()["kind"]
    if kind in _FLOAT_KINDS:
        return "double"
    if kind == "UInt":
        return "uint" if codec.bits <= 32 else "ulong"
    if kind == "Int":
        return "int" if codec.bits <= 32 else "long"
    if kind == "IntRange":
        return "long"
    if kind == "Bool":
        return "bool"
    if kind == "Enum":
        return "uint"
    raise ValueError(f"not a scalar codec: {codec!r}")


class _Field:
    """What the generator knows of one schema field."""

    def __init__(self, name, codec, first_slot, names, struct_name):
        self.name = name
        self.codec = codec
        self.kind = codec.spec()["kind"]
        self.first = first_slot
        self.member = names.get(_pascal(name, "Field"))
        if self.member == struct_name:
            self.member = names.get(self.member + "_")
        self.nested = []          # nested type declarations (lines)
        inner = codec.inner if self.kind == "NearlyZero" else codec
        self.inner = inner
        self.inner_kind = inner.spec()["kind"]
        self.slots = 1 + self._count(inner) if self.kind == "NearlyZero" else self._count(codec)
        self.enum_type = None
        if self.inner_kind == "Vector":
            comps = list(inner.codecs)
            self.comps = comps
            k = len(comps)
            self.axes = list(_AXES[:k]) if k <= 4 else [f"C{i}" for i in range(k)]
            if 2 <= k <= 4 and all(c.spec()["kind"] in _FLOAT_KINDS for c in comps):
                self.type = f"{_QC}Vec{k}"
            else:
                self.type = names.get(self.member + "Vector")
                lines = [f"/// <summary>The value of field '{_xml(name)}': a vector of {k} component(s).</summary>",
                         f"public struct {self.type}", "{"]
                for ax, c in zip(self.axes, comps):
                    lines.append(f"    public {_scalar_type(c)} {ax};")
                lines.append("}")
                self.nested.append(lines)
        elif self.inner_kind == "Quat":
            self.type = f"{_QC}Quat4"
        elif self.inner_kind == "UnitVector":
            self.type = f"{_QC}Vec3"
        elif self.inner_kind == "Enum" and inner.labels is not None:
            self.enum_type = names.get(self.member + "Label")
            self.type = self.enum_type
            idents = set()
            members = []
            for i, label in enumerate(inner.labels):
                ident = _pascal(label, f"Label{i}")
                base, n = ident, 2
                while ident in idents:
                    ident = f"{base}_{n}"
                    n += 1
                idents.add(ident)
                members.append(f"    /// <summary>{_xml(repr(label))}</summary>")
                members.append(f"    {ident} = {i},")
            lines = [f"/// <summary>The labels of field '{_xml(name)}', in code order.</summary>",
                     f"public enum {self.enum_type} : uint", "{"] + members + ["}"]
            self.nested.append(lines)
            self.labels_member = names.get(self.member + "Labels")
        else:
            self.type = _scalar_type(inner)
        self.step_members = []

    @staticmethod
    def _count(codec):
        return len(codec.codecs) if codec.spec()["kind"] == "Vector" else 1


# ------------------------------------------------------------------------------------------------
# the generator

def generate_csharp(schema, namespace="QuantCodec.Generated", *, name=None):
    """The text of a C# file with one struct for ``schema`` (a ``qc.Schema``, a spec dict or a path
    to a schema file), in ``namespace``; ``name`` overrides the struct name (default: the schema
    name in PascalCase)."""
    from .schema import Schema

    if not isinstance(schema, Schema):
        if isinstance(schema, dict):
            schema = Schema.from_spec(schema)
        else:
            schema = Schema.load(schema)
    check_namespace(namespace)
    if name is not None:
        check_struct_name(name)
    struct = name or _pascal(schema.name, "Record")
    if struct in _RESERVED or struct.startswith("@"):
        struct = struct.lstrip("@") + "Record"
    names = _Names({struct})
    fields = []
    slot = 0
    for fname, codec in schema.fields:
        f = _Field(fname, codec, slot, names, struct)
        slot += f.slots
        fields.append(f)
    nslots = slot
    spec_json = schema.to_json(indent=None)

    L = []
    w = L.append
    w("// <auto-generated>")
    w(f"// Generated by `quantcodec codegen --lang csharp` from the schema {_xml(repr(schema.name))} version "
      f"{schema.version}, fingerprint {schema.fingerprint}.")
    w("// Do not edit: regenerate it when the schema changes. Needs the QuantCodec runtime (clients/csharp/Runtime).")
    w("// </auto-generated>")
    w(f"namespace {namespace}")
    w("{")
    body = []
    b = body.append
    b(f"/// <summary>A record of schema {_xml(repr(schema.name))} version {schema.version} "
      f"(fingerprint {schema.fingerprint}): one public field per schema field.</summary>")
    b(f"public partial struct {struct}")
    b("{")
    m = []
    a = m.append
    a(f"/// <summary>The schema's name.</summary>")
    a(f"public const string SchemaName = {_cs_string(schema.name)};")
    a(f"/// <summary>The schema's version.</summary>")
    if -2**63 <= schema.version < 2**63:
        a(f"public const long SchemaVersion = {schema.version};")
    else:
        a(f"public const string SchemaVersion = {_cs_string(str(schema.version))};")
    a(f"/// <summary>The schema fingerprint (docs/schema-format.md): both ends compare it at connect.</summary>")
    a(f"public const string Fingerprint = {_cs_string(schema.fingerprint)};")
    a(f"/// <summary>The schema as JSON (schema.to_json()), read by the runtime on first use.</summary>")
    a(f"public const string SpecJson = {_cs_string(spec_json)};")
    a(f"/// <summary>Slots of one record (wire-format section 2).</summary>")
    a(f"public const int SlotCount = {nslots};")
    a(f"/// <summary>The most bits one record takes (every NearlyZero moving).</summary>")
    a(f"public const int MaxBits = {schema.bits};")
    a("")
    for f in fields:
        for decl in f.nested:
            m.extend(decl)
            a("")
        if f.enum_type is not None:
            labels = ", ".join(_cs_string(l) for l in f.inner.labels)
            a(f"/// <summary>The labels of field '{_xml(f.name)}' as the schema writes them.</summary>")
            a(f"public static readonly string[] {f.labels_member} = {{ {labels} }};")
            a("")
    # the value fields
    for f in fields:
        what = repr(f.codec)
        a(f"/// <summary>Field '{_xml(f.name)}': {_xml(what)}.</summary>")
        a(f"public {f.type} {f.member};")
    a("")
    # steps
    for f in fields:
        step = f.codec.step
        if f.kind == "NearlyZero":
            a(f"/// <summary>Field '{_xml(f.name)}': a value whose every magnitude is at most this is sent as "
              f"one bit and decodes to zero.</summary>")
            a(f"public const double {names.get(f.member + 'Threshold')} = {_cs_double(f.codec.threshold)};")
        if isinstance(step, tuple):
            for ax, s in zip(f.axes, step):
                sm = names.get(f"{f.member}Step{ax}")
                a(f"/// <summary>Field '{_xml(f.name)}' component {ax}: the codec's step.</summary>")
                a(f"public const double {sm} = {_cs_double(s)};")
        else:
            sm = names.get(f"{f.member}Step")
            a(f"/// <summary>Field '{_xml(f.name)}': the codec's step"
              f"{' (of each kept component)' if f.inner_kind == 'Quat' else ' (of each octahedral coordinate)' if f.inner_kind == 'UnitVector' else ''}.</summary>")
            a(f"public const double {sm} = {_cs_double(step)};")
    a("")
    a("/// <summary>The runtime schema (built from SpecJson on first use; its fingerprint is checked "
      "against Fingerprint).</summary>")
    a(f"public static readonly {_QC}Schema Schema = {_LOAD}();")
    a(f"static readonly {_QC}Codec[] {_CODECS} = {_SLOTS}();")
    a("")
    a(f"static {_QC}Schema {_LOAD}()")
    a("{")
    a(f"    var s = {_QC}Schema.FromJson(SpecJson);")
    a("    if (s.Fingerprint != Fingerprint || s.Slots.Length != SlotCount)")
    a("    {")
    a(f"        throw new {_QC}SchemaException(\"{struct}: the runtime computes the fingerprint \" + s.Fingerprint + "
      f"\", the generated code has \" + Fingerprint + \": regenerate the code or update the runtime\");")
    a("    }")
    a("    return s;")
    a("}")
    a("")
    a(f"static {_QC}Codec[] {_SLOTS}()")
    a("{")
    a(f"    var c = new {_QC}Codec[SlotCount];")
    a("    for (int s = 0; s < SlotCount; s++) c[s] = Schema.Slots[s].Codec;")
    a("    return c;")
    a("}")
    a("")
    a("/// <summary>Raise SchemaException unless the peer's fingerprint is this schema's (at connect).</summary>")
    a("public static void CheckFingerprint(string peerFingerprint) { Schema.CheckFingerprint(peerFingerprint); }")
    a("")
    a("/// <summary>A snapshot decoder of this schema: it refuses a hello of any other schema.</summary>")
    a(f"public static {_QC}SnapshotDecoder CreateDecoder() {{ return new {_QC}SnapshotDecoder(Schema); }}")
    a("")
    # AreCodesInRange
    a("/// <summary>Whether codes[offset .. offset + SlotCount) are codes a quantizer can produce: the "
      "inbound range check (pure integer work, never throws).</summary>")
    a("public static bool AreCodesInRange(ulong[] codes, int offset = 0)")
    a("{")
    a("    if (codes == null || offset < 0 || codes.Length - offset < SlotCount) return false;")
    for f in fields:
        s0 = f.first
        if f.kind == "NearlyZero":
            gov = " | ".join(f"codes[offset + {s}]" for s in range(s0 + 1, s0 + f.slots))
            a(f"if (codes[offset + {s0}] > 1) return false;")
            a(f"if (codes[offset + {s0}] == 0)")
            a("{")
            a(f"if (({gov}) != 0) return false;")
            a("}")
            a("else")
            a("{")
            for s in range(s0 + 1, s0 + f.slots):
                a(f"if (!{_CODECS}[{s}].Valid(codes[offset + {s}])) return false;")
            a("}")
        else:
            for s in range(s0, s0 + f.slots):
                a(f"if (!{_CODECS}[{s}].Valid(codes[offset + {s}])) return false;")
    a("    return true;")
    a("}")
    a("")
    # Quantize
    a("/// <summary>This record's slot codes into codes[offset ..]: floats clamp, exact values must fit "
      "(RangeException), a zero or non-finite quaternion or unit vector is a RangeException.</summary>")
    a("public void Quantize(ulong[] codes, int offset = 0)")
    a("{")
    for f in fields:
        _quantize_field(a, f)
    a("}")
    a("")
    # Dequantize
    a("/// <summary>The record of codes[offset ..] (codes a decoder checked: call AreCodesInRange "
      "for codes from elsewhere).</summary>")
    a(f"public static {struct} Dequantize(ulong[] codes, int offset = 0)")
    a("{")
    a(f"    var v = new {struct}();")
    for f in fields:
        _dequantize_field(a, f)
    a("    return v;")
    a("}")
    a("")
    a("/// <summary>Entity `row` of a decoded snapshot (no allocation).</summary>")
    a(f"public static {struct} Read({_QC}Snapshot snapshot, int row)")
    a("{")
    a(f"    if (snapshot.SlotCount != SlotCount) throw new {_SYS}ArgumentException(\"a snapshot of another schema\");")
    a("    return Dequantize(snapshot.Codes, row * SlotCount);")
    a("}")
    a("")
    a("/// <summary>One record as bytes (schema.encode): the codes bit-packed, padded to a byte.</summary>")
    a("public byte[] Encode()")
    a("{")
    a("    var codes = new ulong[SlotCount];")
    a("    Quantize(codes, 0);")
    a("    return Schema.EncodeCodes(codes);")
    a("}")
    a("")
    a("/// <summary>Append this record's codes (no padding) to a bit stream; scratch holds SlotCount codes "
      "(no allocation).</summary>")
    a(f"public void Encode({_QC}BitWriter writer, ulong[] scratch)")
    a("{")
    a("    Quantize(scratch, 0);")
    a("    Schema.WriteCodes(writer, scratch, 0);")
    a("}")
    a("")
    a("/// <summary>One record from its bytes (schema.decode): DecodeException for a short, long or "
      "malformed message or a code that is not valid.</summary>")
    a(f"public static {struct} Decode(byte[] data)")
    a("{")
    a("    return Dequantize(Schema.DecodeCodes(data), 0);")
    a("}")
    a("")
    a("/// <summary>As Decode, over a slice, with a caller's scratch of SlotCount codes (no allocation).</summary>")
    a(f"public static {struct} Decode(byte[] data, int offset, int length, ulong[] scratch)")
    a("{")
    a("    return Dequantize(Schema.DecodeCodes(data, offset, length, scratch), 0);")
    a("}")
    body.extend(m)
    b("}")
    L.extend(body)
    w("}")
    return "\n".join(_indent(L)) + "\n"


def _indent(lines):
    """Indent by braces: a line that is only "{" opens a level, one that is only "}" closes it
    (every other line of the generator has balanced braces, the JSON string's included)."""
    out = []
    depth = 0
    for line in lines:
        t = line.strip()
        if t in ("}", "};"):
            depth -= 1
        out.append("    " * depth + t if t else "")
        if t == "{":
            depth += 1
    return out


def _scalar_q(kind, codec, slot, expr, ctype):
    if kind in _FLOAT_KINDS:
        return f"{_CODECS}[{slot}].Quantize({expr})"
    if kind == "Int" or kind == "IntRange":
        return f"{_CODECS}[{slot}].QuantizeInt({expr})"
    if kind == "Bool":
        return f"({expr} ? 1UL : 0UL)"
    return f"{_CODECS}[{slot}].QuantizeUInt((ulong){expr})"


def _scalar_dq(kind, codec, slot, code, ctype):
    if kind in _FLOAT_KINDS:
        return f"{_CODECS}[{slot}].Dequantize({code})"
    if kind == "Int":
        return f"(int)(long){code}" if ctype == "int" else f"(long){code}"
    if kind == "IntRange":
        return f"{_CODECS}[{slot}].DequantizeLong({code})"
    if kind == "Bool":
        return f"{code} != 0"
    if ctype == "ulong":
        return code
    return f"({ctype}){code}"


def _as_double(kind, ctype, expr):
    if ctype == "double":
        return expr
    if ctype == "bool":
        return f"({expr} ? 1.0 : 0.0)"
    if ctype == "ulong":
        return f"{_QC}FloatBits.U64ToDouble({expr})"
    return f"(double){expr}"


def _quantize_field(a, f):
    v = f"this.{f.member}"
    s = f.first
    if f.kind == "NearlyZero":
        # every magnitude at most the threshold: one 0 bit (as NearlyZero.quantize)
        if f.inner_kind == "Vector":
            parts = [f"{_SYS}Math.Abs({_as_double(c.spec()['kind'], _scalar_type(c), f'{v}.{ax}')}) <= t"
                     for ax, c in zip(f.axes, f.comps)]
        else:
            ct = f.type if f.enum_type is None else "uint"
            expr = v if f.enum_type is None else f"(uint){v}"
            parts = [f"{_SYS}Math.Abs({_as_double(f.inner_kind, ct, expr)}) <= t"]
        a("{")
        a(f"    double t = {_CODECS}[{s}].Threshold;")
        a(f"    if ({' && '.join(parts)})")
        a("    {")
        a(f"        codes[offset + {s}] = 0;")
        for t in range(s + 1, s + f.slots):
            a(f"        codes[offset + {t}] = 0;")
        a("    }")
        a("    else")
        a("    {")
        a(f"        codes[offset + {s}] = 1;")
        _quantize_inner(lambda line: a("        " + line), f, v, s + 1)
        a("    }")
        a("}")
    else:
        _quantize_inner(a, f, v, s)


def _quantize_inner(a, f, v, s):
    k = f.inner_kind
    if k == "Vector":
        for i, (ax, c) in enumerate(zip(f.axes, f.comps)):
            ck = c.spec()["kind"]
            a(f"codes[offset + {s + i}] = {_scalar_q(ck, c, s + i, f'{v}.{ax}', _scalar_type(c))};")
    elif k == "Quat":
        a(f"codes[offset + {s}] = {_CODECS}[{s}].QuantizeQuat({v}.X, {v}.Y, {v}.Z, {v}.W);")
    elif k == "UnitVector":
        a(f"codes[offset + {s}] = {_CODECS}[{s}].QuantizeUnitVector({v}.X, {v}.Y, {v}.Z);")
    elif f.enum_type is not None:
        a(f"codes[offset + {s}] = {_CODECS}[{s}].QuantizeUInt((ulong){v});")
    else:
        a(f"codes[offset + {s}] = {_scalar_q(k, f.inner, s, v, f.type)};")


def _dequantize_field(a, f):
    v = f"v.{f.member}"
    s = f.first
    if f.kind == "NearlyZero":
        a(f"if (codes[offset + {s}] != 0)")
        a("{")
        _dequantize_inner(lambda line: a("    " + line), f, v, s + 1)
        a("}")
    else:
        _dequantize_inner(a, f, v, s)


def _dequantize_inner(a, f, v, s):
    k = f.inner_kind
    if k == "Vector":
        for i, (ax, c) in enumerate(zip(f.axes, f.comps)):
            a(f"{v}.{ax} = {_scalar_dq(c.spec()['kind'], c, s + i, f'codes[offset + {s + i}]', _scalar_type(c))};")
    elif k == "Quat":
        a(f"{_CODECS}[{s}].DequantizeQuat(codes[offset + {s}], out {v}.X, out {v}.Y, out {v}.Z, out {v}.W);")
    elif k == "UnitVector":
        a(f"{_CODECS}[{s}].DequantizeUnitVector(codes[offset + {s}], out {v}.X, out {v}.Y, out {v}.Z);")
    elif f.enum_type is not None:
        a(f"{v} = ({f.enum_type})(uint)codes[offset + {s}];")
    else:
        a(f"{v} = {_scalar_dq(k, f.inner, s, f'codes[offset + {s}]', f.type)};")


# ------------------------------------------------------------------------------------------------
# the command

def _arg(check):
    """An argparse type of a checker: its ValueError becomes a usage error (exit status 2)."""
    def convert(text):
        try:
            return check(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    convert.__name__ = check.__name__
    return convert


def _output_path(text):
    if not text:
        raise ValueError("an empty file name (leave -o out to write to standard output)")
    return text


def add_arguments(parser):
    """The arguments of ``quantcodec codegen`` (for the lead's subparser)."""
    parser.add_argument("--lang", default="csharp", choices=["csharp"],
                        help="the language to write: csharp, the only one so far (default: %(default)s)")
    parser.add_argument("schema", metavar="SCHEMA_FILE", help="a .json or .toml schema file")
    parser.add_argument("-o", "--output", metavar="FILE", type=_arg(_output_path),
                        help="write here instead of standard output")
    parser.add_argument("--namespace", default="QuantCodec.Generated", type=_arg(check_namespace),
                        help="the C# namespace (default %(default)s)")
    parser.add_argument("--name", default=None, type=_arg(check_struct_name),
                        help="the struct's name (default: the schema name in PascalCase)")
    return parser


def run(args):
    """Run ``quantcodec codegen`` from parsed arguments; returns the exit status."""
    from .errors import SchemaError
    from .schema import Schema

    try:
        schema = Schema.load(args.schema)
        text = generate_csharp(schema, args.namespace, name=args.name)
    except (SchemaError, OSError, ValueError) as e:
        print(f"quantcodec codegen: error: {e}", file=sys.stderr)
        return 1
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
        except OSError as e:        # (/proc/x.cs, a full disk: one line, not a traceback)
            print(f"quantcodec codegen: error: cannot write {args.output}: {e.strerror or e}", file=sys.stderr)
            return 1
    else:
        sys.stdout.write(text)
    return 0


def main(argv=None):
    """``quantcodec codegen --lang csharp SCHEMA.json [-o FILE]``: argv without the command name."""
    parser = add_arguments(argparse.ArgumentParser(
        prog="quantcodec codegen",
        description="Write typed record code for a schema (C#: one struct over clients/csharp's runtime)."))
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
