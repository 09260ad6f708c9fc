"""Schema (SPEC section 4): records, codes, batches, wire layout, errors, clamping, spec/JSON/TOML,
fingerprint, lockstep, pickling."""

import collections
import dataclasses
import json
import math
import os
import pickle
import re
import subprocess
import sys
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import quantcodec as qc
from quantcodec.tools.examples import PLAYER_STATE_LABELS, player_state
from helpers import all_kinds

GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "schema")
LABELS = list(PLAYER_STATE_LABELS)


PS = player_state()
REC = {
    "position": (100.5, 20.25, -300.0),
    "rotation": (0.0, 0.0, 0.3826834, 0.9238795),
    "velocity": (1.5, 0.0, -2.0),
    "yaw": 1.25,
    "health": 100,
    "state": "run",
    "grounded": True,
}
REC_T = tuple(REC[n] for n in PS.names)


AK = all_kinds()
AK_REC = {
    "b_end": 3.3, "b_bins": 0.41, "b_one": 0.7, "fx": 3.3, "fx_u": 12.345, "fx64": -33.1234567,
    "ang": -1.0, "ang_sd": 200.0, "pc": -7.5, "half": 1234.5, "u64": 2**64 - 1, "i64": -2**63,
    "i7": -64, "flag": False, "enum": "c", "enum_n": 4, "enum_1": "only",
    "quat": (0.1, -0.7, 0.2, 0.6), "quat_bins": (-0.5, 0.5, 0.5, -0.5), "uvec": (0.3, -0.4, -0.8),
    "vec": (-0.25, 15, -16, 6.0), "grid": -12345.678, "nz": 0.3, "nzv": (3.0, -0.04),
    "hp": 100, "wide": -2 ** 40 + 3, "nzir": -5,
}


def write_field(w, codec, code):
    """The record wire layout, written independently with BitWriter from a field's code."""
    kind = codec.kind
    if kind == "Vector":
        for c, x in zip(codec.codecs, code):
            write_field(w, c, x)
    elif kind == "NearlyZero":
        flag, inner = code
        w.write(flag, 1)
        if flag:
            write_field(w, codec.inner, inner)
    elif code < 0:
        w.write_signed(code, codec.bits)
    else:
        w.write(code, codec.bits)


def write_record(w, schema, codes):
    for (_, codec), code in zip(schema.fields, codes):
        write_field(w, codec, code)


def same(a, b):
    """Exact equality of decoded values, NaN equal to NaN of the same sign."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return math.copysign(1, a) == math.copysign(1, b)
    return type(a) is type(b) and a == b


# ------------------------------------------------------------------------------------------ construction

def test_fields_as_list_or_dict_are_equal():
    d = player_state()
    e = qc.Schema("PlayerState", dict(PS.fields), version=3)
    assert d == e == PS and hash(d) == hash(e)
    assert d.fingerprint == e.fingerprint
    assert PS.fields[0][0] == "position" and isinstance(PS.fields, tuple)
    assert PS.names == ("position", "rotation", "velocity", "yaw", "health", "state", "grounded")
    assert len(PS) == 7 and "yaw" in PS and "nope" not in PS and list(PS) == list(PS.names)
    assert PS["rotation"] == qc.Quat(9)


def test_codec_spec_dicts_are_accepted():
    s = qc.Schema("PlayerState", [(n, c.spec()) for n, c in PS.fields], version=3)
    assert s == PS and s.fingerprint == PS.fingerprint


@pytest.mark.parametrize("fields, message", [
    ([("a", qc.UInt(3)), ("a", qc.Bool())], "duplicate field name 'a'"),
    ([("", qc.UInt(3))], "field names must be ASCII identifiers"),
    # ASCII only (docs/schema-format.md, "One reading everywhere"): these are Python identifiers
    ([("\u00e9", qc.UInt(3))], "field names must be ASCII identifiers (letters A-Z and a-z, digits and _, "
                                "not starting with a digit), got '\u00e9'"),
    ([("\u2118", qc.UInt(3))], "got '\u2118'"),
    ([("\u0394elta", qc.UInt(3))], "got '\u0394elta'"),
    ([("1x", qc.UInt(3))], "'1x'"),
    ([("a-b", qc.UInt(3))], "'a-b'"),
    ([(3, qc.UInt(3))], "got 3"),
    ([("a", 3.0)], "field 'a': expected a codec"),
    ([("a", {"kind": "Nope"})], "field 'a': unknown codec kind 'Nope'"),
    ([], "at least one field"),
    ([("a",)], "expected a (name, codec) pair"),
    ("abc", "fields must be a dict or a list"),
])
def test_bad_fields(fields, message):
    with pytest.raises(qc.SchemaError) as e:
        qc.Schema("S", fields)
    assert message in str(e.value)


@pytest.mark.parametrize("kw, message", [
    (dict(name=""), "schema name must be a non-empty string"),
    (dict(name=5), "schema name must be a non-empty string, got 5"),
    (dict(version=-1), "version must be an integer from 0 to 2**63 - 1, got -1"),
    (dict(version=True), "got True"),
    (dict(version="3"), "got '3'"),
    (dict(strict=1), "strict must be True or False"),
])
def test_bad_schema_parameters(kw, message):
    args = dict(name="S", version=1)
    args.update(kw)
    strict = args.pop("strict", False)
    with pytest.raises(qc.SchemaError) as e:
        qc.Schema(args["name"], [("a", qc.UInt(3))], version=args["version"], strict=strict)
    assert message in str(e.value)


def test_immutable():
    with pytest.raises(AttributeError):
        PS.name = "x"
    with pytest.raises(AttributeError):
        del PS.version


# ------------------------------------------------------------------------------------------ one record

def test_wire_layout_spec_example():
    # SPEC 3: 5 in 3 bits then 17 in 5 bits is the single byte 0x8D
    s = qc.Schema("T", [("a", qc.UInt(3)), ("b", qc.UInt(5))])
    assert s.encode((5, 17)) == b"\x8d"
    assert s.decode(b"\x8d") == {"a": 5, "b": 17}
    assert s.bits == 8 and s.nbytes == 1


def test_wire_layout_signed_padding_and_nearly_zero():
    s = qc.Schema("T", [("i", qc.Int(4)), ("z", qc.NearlyZero(qc.UInt(6), 0.0)), ("e", qc.Enum(["x"]))])
    assert s.bits == 11 and s.min_bits == 5
    # -3 in 4 bits is 1101; flag 0 -> one 0 bit; Enum of one label takes 0 bits; pad to a byte
    assert s.encode((-3, 0, "x")) == bytes([0b00001101])
    # flag 1 then 6-bit 33: bits 1101 | 1 | 100001 -> 0b0001_1101 low byte then the rest
    b = s.encode((-3, 33, "x"))
    assert b == bytes([0b00011101 | (1 << 4) | ((33 & 0b111) << 5), 33 >> 3])
    assert s.decode(b) == {"i": -3, "z": 33, "e": "x"}
    assert s.decode(bytes([0b00001101])) == {"i": -3, "z": 0.0, "e": "x"}


def test_golden_player_state():
    with open(os.path.join(GOLDEN, "player_state.json")) as fh:
        g = json.load(fh)
    s = qc.Schema.from_spec(g["spec"])
    assert s == PS
    assert PS.fingerprint == g["fingerprint"]
    assert PS.to_json(indent=None) == json.dumps(g["spec"])
    for case in g["records"]:
        rec = {k: tuple(v) if isinstance(v, list) else v for k, v in case["record"].items()}
        data = PS.encode(rec)
        assert data.hex() == case["hex"]
        assert list(PS.quantize(rec)) == [tuple(c) if isinstance(c, list) else c for c in
                                          (_tuplify(c) for c in case["codes"])]


def _tuplify(c):
    if isinstance(c, list):
        return tuple(_tuplify(x) for x in c)
    return c


def test_golden_all_kinds():
    with open(os.path.join(GOLDEN, "all_kinds.json")) as fh:
        g = json.load(fh)
    assert qc.Schema.from_spec(g["spec"]) == AK
    assert AK.fingerprint == g["fingerprint"]
    assert AK.encode(AK_REC).hex() == g["hex"]


def test_roundtrip_matches_each_codec():
    data = AK.encode(AK_REC)
    assert len(data) == AK.nbytes       # every NearlyZero flag is 1 here
    got = AK.decode(data)
    rt = AK.roundtrip(AK_REC)
    codes = AK.quantize(AK_REC)
    assert list(got) == list(AK.names)
    for (name, codec), code in zip(AK.fields, codes):
        expect = codec.roundtrip(AK_REC[name])
        assert same(got[name], expect), name
        assert same(rt[name], expect), name
        assert code == codec.quantize(AK_REC[name]), name
    assert AK.dequantize(codes) == got
    assert AK.decode_codes(data) == codes
    assert AK.encode_codes(codes) == data


def test_decoded_types():
    got = PS.decode(PS.encode(REC))
    assert got["state"] == "run" and got["grounded"] is True and type(got["health"]) is int
    assert isinstance(got["position"], tuple) and len(got["rotation"]) == 4
    g2 = AK.decode(AK.encode(AK_REC))
    assert g2["enum_n"] == 4 and g2["enum_1"] == "only" and g2["flag"] is False
    assert g2["u64"] == 2**64 - 1 and g2["i64"] == -2**63 and g2["vec"][1:3] == (15, -16)


def test_nearly_zero_at_rest_costs_one_bit():
    rest = dict(REC, velocity=(0.0, 0.005, -0.01))
    assert len(PS.encode(rest)) == (PS.bits - 30 + 7) // 8
    assert PS.decode(PS.encode(rest))["velocity"] == (0.0, 0.0, 0.0)
    assert PS.quantize(rest)[2] == (0, (0, 0, 0))


@dataclasses.dataclass
class PlayerDC:
    position: tuple
    rotation: tuple
    velocity: tuple
    yaw: float
    health: int
    state: str
    grounded: bool


def test_record_forms_give_the_same_bytes():
    want = PS.encode(REC)
    nt = collections.namedtuple("P", PS.names)(**REC)
    reordered = collections.namedtuple("Q", list(reversed(PS.names)))(**REC)   # read by name
    obj = types.SimpleNamespace(**REC, extra=123)
    forms = [REC_T, list(REC_T), dict(REC, extra="ignored"), collections.OrderedDict(REC),
             types.MappingProxyType(REC), nt, reordered, obj, PlayerDC(**REC)]
    for f in forms:
        assert PS.encode(f) == want, type(f)
        assert PS.quantize(f) == PS.quantize(REC)
        assert PS.roundtrip(f) == PS.decode(want)


def test_structured_array_row():
    dt = np.dtype([("position", "f8", 3), ("rotation", "f4", 4), ("velocity", "f8", 3), ("yaw", "f8"),
                   ("health", "u1"), ("state", "i4"), ("grounded", "?")])
    arr = np.zeros(2, dtype=dt)
    arr[0] = (REC["position"], REC["rotation"], REC["velocity"], REC["yaw"], 100, 2, True)
    assert PS.encode(arr[0]) == PS.encode(dict(REC, rotation=tuple(np.float32(REC["rotation"]).tolist())))
    cols = {n: arr[:1][n] for n in PS.names}          # strided views into the records
    assert PS.encode_many(cols) == PS.encode(arr[0])


def test_numpy_values():
    rec = {
        "position": np.array([100.5, 20.25, -300.0], dtype=np.float32).astype(np.float64),
        "rotation": np.array([0.0, 0.0, 0.3826834, 0.9238795]),
        "velocity": [np.float64(1.5), np.float32(0.0), np.float64(-2.0)],
        "yaw": np.float64(1.25),
        "health": np.uint8(100),
        "state": np.str_("run"),
        "grounded": np.bool_(True),
    }
    assert PS.encode(rec) == PS.encode(REC)
    rec32 = dict(REC, yaw=np.float32(1.25), health=np.int64(100), state=np.int32(2), grounded=1)
    assert PS.encode(rec32) == PS.encode(REC)
    # a 0-d array is a number; small integer-valued floats are accepted for exact fields
    assert PS.encode(dict(REC, yaw=np.array(1.25), health=100.0)) == PS.encode(REC)


def test_zero_d_arrays_are_their_value_for_every_field_kind():
    # docs/schema-format.md "Records": values may be 0-d arrays; the exact codecs once refused them
    # (TypeError "expected an integer, got ndarray"), alone, in a Vector and inside NearlyZero
    def zero_d(v):
        if isinstance(v, tuple):
            return tuple(np.array(x) for x in v)
        return np.array(v)
    want = AK.encode(AK_REC)
    for name in AK.names:
        assert AK.encode(dict(AK_REC, **{name: zero_d(AK_REC[name])})) == want, name
    assert AK.encode({n: zero_d(v) for n, v in AK_REC.items()}) == want
    assert AK.encode(dict(AK_REC, nzir=np.array(0), enum=np.array(np.str_("c")), enum_n=np.array(4, np.uint8),
                          u64=np.array(2**64 - 1, np.uint64))) == AK.encode(dict(AK_REC, nzir=0))
    assert AK.quantize(dict(AK_REC, hp=np.array(100))) == AK.quantize(AK_REC)
    # and checked as the plain value is: the same errors and messages
    for name, v, exc, msg in [("hp", 101, qc.RangeError, r"field 'hp': value 101 outside 0..100"),
                              ("i7", 2.5, qc.RangeError, r"field 'i7': 2.5 is not an integer"),
                              ("i7", True, TypeError, r"field 'i7': expected an integer, got bool"),
                              ("enum", "z", qc.RangeError, r"field 'enum': unknown label 'z'"),
                              ("nzir", 6, qc.RangeError, r"field 'nzir': value 6 outside -5..5"),
                              ("vec", (0.5, 16, 0, 1.0), qc.RangeError, r"field 'vec'\[1\]: value 16 outside 0..15")]:
        for form in (v, zero_d(v)):
            with pytest.raises(exc, match="^" + msg):
                AK.encode(dict(AK_REC, **{name: form}))


def test_enum_by_index_or_label():
    assert PS.encode(dict(REC, state=2)) == PS.encode(REC)
    with pytest.raises(qc.RangeError, match=r"field 'state': unknown label 'fly'"):
        PS.encode(dict(REC, state="fly"))
    with pytest.raises(qc.RangeError, match=r"field 'state': index 4 outside 0..3"):
        PS.encode(dict(REC, state=4))
    with pytest.raises(TypeError, match=r"field 'state': expected a label or an index, got bool"):
        PS.encode(dict(REC, state=True))


@pytest.mark.parametrize("record, exc, message", [
    ({k: v for k, v in REC.items() if k != "velocity"}, qc.SchemaError, "record is missing field 'velocity'"),
    (types.SimpleNamespace(position=(0, 0, 0)), qc.SchemaError, "record is missing field 'rotation'"),
    (REC_T[:6], qc.SchemaError, "record has 6 values, the schema has 7 fields"),
    (dict(REC, yaw="north"), TypeError, "field 'yaw': expected a number, got str"),
    (dict(REC, yaw=None), TypeError, "field 'yaw': expected a number, got NoneType"),
    (dict(REC, position=(1.0, 2.0)), qc.SchemaError, "field 'position': expected 3 values, got 2"),
    (dict(REC, position=5.0), TypeError, "field 'position': expected a sequence of 3 numbers, got float"),
    (dict(REC, position=(1.0, "x", 2.0)), TypeError, r"field 'position'\[1\]: expected a number, got str"),
    (dict(REC, rotation=(0, 0, 0, 0)), qc.RangeError, "field 'rotation': zero quaternion"),
    (dict(REC, rotation=(0, math.nan, 0, 1)), qc.RangeError, "field 'rotation': non-finite quaternion"),
    (dict(REC, health=256), qc.RangeError, r"field 'health': value 256 outside 0..255"),
    (dict(REC, health=-1), qc.RangeError, r"field 'health': value -1 outside 0..255"),
    (dict(REC, health=2**70), qc.RangeError, r"field 'health': value 1180591620717411303424 outside"),
    (dict(REC, health=1.5), qc.RangeError, r"field 'health': 1.5 is not an integer"),
    (dict(REC, health="full"), TypeError, r"field 'health': expected an integer, got str"),
    (dict(REC, grounded=2), qc.RangeError, r"field 'grounded': value 2 outside 0..1"),
    (dict(REC, velocity=(1.0, 2.0)), qc.SchemaError, "field 'velocity': expected 3 values, got 2"),
    (42, TypeError, "a record must be a mapping, an object with the field attributes or a tuple"),
])
def test_record_errors(record, exc, message):
    with pytest.raises(exc, match=message):
        PS.encode(record)


def test_exact_ranges_of_signed_and_64_bit_fields():
    s = qc.Schema("T", [("i", qc.Int(7)), ("u", qc.UInt(64)), ("j", qc.Int(64))])
    assert s.decode(s.encode((-64, 2**64 - 1, 2**63 - 1))) == {"i": -64, "u": 2**64 - 1, "j": 2**63 - 1}
    with pytest.raises(qc.RangeError, match=r"field 'i': value 64 outside -64..63"):
        s.encode((64, 0, 0))
    with pytest.raises(qc.RangeError, match=r"field 'u': value 18446744073709551616 outside"):
        s.encode((0, 2**64, 0))
    with pytest.raises(qc.RangeError, match=r"field 'j': value -9223372036854775809 outside"):
        s.encode((0, 0, -2**63 - 1))


def test_decode_takes_any_buffer():
    data = PS.encode(REC)
    want = PS.decode(data)
    for buf in (bytearray(data), memoryview(data), np.frombuffer(data, dtype=np.uint8)):
        assert PS.decode(buf) == want
        assert PS.decode_codes(buf) == PS.quantize(REC)
    with pytest.raises(TypeError, match="expected bytes or a buffer, got str"):
        PS.decode("abc")


# ------------------------------------------------------------------------------------------ decode errors

def _enum_schema():
    return qc.Schema("S", [("a", qc.UInt(3)), ("state", qc.Enum(["a", "b", "c"])), ("p", qc.PowerCurve(1, 1, 4))])


def test_decode_invalid_enum_code_names_field_and_bit():
    s = _enum_schema()
    with pytest.raises(qc.DecodeError) as e:
        s.decode(bytes([0b000_11_000]))            # state code 3 at bit 3
    assert str(e.value) == "field 'state': code 3 is not valid for Enum(['a', 'b', 'c']) at bit 3"


def test_decode_power_curve_negative_zero():
    s = _enum_schema()
    with pytest.raises(qc.DecodeError, match=r"field 'p': code 8 is not valid for PowerCurve\(.*\) at bit 5"):
        s.decode(bytes([0b000_00_000, 0b1]))       # p = 0b1000 at bits 5..8
    assert s.decode(bytes([0b001_01_000, 0]))["p"] == 1 / 7


def test_decode_short_long_and_padding():
    data = PS.encode(REC)
    with pytest.raises(qc.DecodeError) as e:
        PS.decode(data[:-3])
    assert str(e.value) == ("field 'yaw': message too short: the code needs 16 bits at bit 110, "
                            "the message has 120 bits (15 bytes)")
    with pytest.raises(qc.DecodeError, match=r"message too long: 19 bytes, but the record ends at bit 137 "
                                             r"\(18 bytes\): 1 extra bytes after the last field 'grounded'"):
        PS.decode(data + b"\x00")
    bad = data[:-1] + bytes([data[-1] | 0x80])
    with pytest.raises(qc.DecodeError, match="nonzero padding bits at bit 137 after the last field 'grounded'"):
        PS.decode(bad)
    with pytest.raises(qc.DecodeError, match="field 'position'.*at bit 0"):
        PS.decode(b"")


def test_decode_invalid_quat():
    s = qc.Schema("Q", [("q", qc.Quat(4))])
    codes = np.arange(1 << 14)
    bad = int(codes[~qc.Quat(4).valid(codes)][5])
    with pytest.raises(qc.DecodeError, match=rf"field 'q': code {bad} is not valid for Quat\(bits=4, mode='endpoints'\) at bit 0"):
        s.decode(int(bad).to_bytes(2, "little"))


def test_decode_nearly_zero_flag_zero_skips_inner():
    s = qc.Schema("Z", [("v", qc.NearlyZero(qc.Vector(qc.UInt(4), qc.UInt(4)), 0.5)), ("b", qc.UInt(3))])
    assert s.decode(bytes([0b1010])) == {"v": (0.0, 0.0), "b": 5}
    assert s.decode_codes(bytes([0b1010])) == ((0, (0, 0)), 5)


# ------------------------------------------------------------------------------------------ codes

def test_quantize_codes_shape():
    codes = PS.quantize(REC)
    assert codes == ((137503, 5392, 111872), 469893514, (1, (89, 0, 614)), 13038, 100, 2, 1)
    assert PS.dequantize(codes) == PS.roundtrip(REC) == PS.decode(PS.encode(REC))
    assert PS.encode_codes(codes) == PS.encode(REC)
    assert PS.decode_codes(PS.encode(REC)) == codes
    assert PS.valid(codes) is True


@pytest.mark.parametrize("i, bad", [
    (5, 4), (5, -1), (4, 256), (4, 2**64), (4, -2**70), (6, 2), (0, (1, 2)), (0, (1, 2, -3)),
    (2, (0, (1, 0, 0))), (2, (2, (0, 0, 0))), (2, (1, (0, 0))), (2, 1), (1, 1 << 29), (4, 1.0),
    (4, None), (4, "1"), (0, "abc"),
])
def test_valid_rejects(i, bad):
    codes = list(PS.quantize(REC))
    codes[i] = bad
    assert PS.valid(tuple(codes)) is False


def test_valid_rejects_structure():
    codes = PS.quantize(REC)
    assert PS.valid(codes[:-1]) is False
    assert PS.valid(None) is False
    assert PS.valid("abc") is False
    assert PS.valid(list(codes)) is True
    assert PS.valid(tuple(np.int64(c) if isinstance(c, int) else c for c in codes)) is True
    some = np.arange(1 << 12)
    badq = int(some[~qc.Quat(9).valid(some)][0])
    assert PS.valid(codes[:1] + (badq,) + codes[2:]) is False
    # a signed field takes its code as the signed integer
    s = qc.Schema("T", [("i", qc.Int(4))])
    assert s.valid((-8,)) and s.valid((7,)) and not s.valid((8,)) and not s.valid((-9,))


def test_code_errors():
    codes = list(PS.quantize(REC))
    codes[5] = 4
    with pytest.raises(qc.DecodeError, match=r"field 'state': code 4 is not valid for Enum\(\['idle'"):
        PS.dequantize(tuple(codes))
    with pytest.raises(qc.RangeError, match=r"field 'state': code 4 is not valid for Enum"):
        PS.encode_codes(tuple(codes))
    codes = list(PS.quantize(REC))
    codes[2] = (0, (3, 0, 0))
    with pytest.raises(qc.DecodeError, match=r"field 'velocity'\[0\]: code 3 is not valid"):
        PS.dequantize(tuple(codes))
    codes[2] = (1, (3, 0))
    with pytest.raises(qc.SchemaError, match=r"field 'velocity': code \(1, \(3, 0\)\) does not have the shape"):
        PS.dequantize(tuple(codes))
    with pytest.raises(qc.SchemaError, match="expected a tuple of 7 codes \\(one per field\\), got 6 codes"):
        PS.encode_codes(PS.quantize(REC)[:6])
    codes = list(PS.quantize(REC))
    codes[3] = 1.5
    with pytest.raises(TypeError, match=r"field 'yaw': codes must be integers, got float"):
        PS.encode_codes(tuple(codes))


# ------------------------------------------------------------------------------------------ batches

def columns(n, seed=0):
    rng = np.random.default_rng(seed)
    vel = rng.normal(0, 20, (n, 3))
    vel[rng.random(n) < 0.3] = 0.0
    vel[rng.random(n) < 0.05] = 80.0          # clamps
    return {
        "position": rng.uniform(-2100, 2100, (n, 3)),
        "rotation": rng.normal(size=(n, 4)),
        "velocity": vel,
        "yaw": rng.uniform(-10, 10, n),
        "health": rng.integers(0, 256, n),
        "state": rng.integers(0, 4, n),
        "grounded": rng.random(n) < 0.5,
    }


def records_of(schema, cols):
    n = len(next(iter(cols.values())))
    return [{k: (tuple(v[i].tolist()) if v.ndim > 1 else v[i].item()) for k, v in cols.items()} for i in range(n)]


def test_quantize_many_matches_codecs():
    cols = columns(200)
    q = PS.quantize_many(cols)
    assert list(q) == list(PS.names)
    for name, codec in PS.fields:
        want = codec.quantize(cols[name])
        assert q[name].dtype == codec.code_dtype and q[name].shape == want.shape
        assert np.array_equal(q[name], want), name
    assert q["velocity"].shape == (200, 4) and q["rotation"].shape == (200,)


EXACT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.bool_]


@pytest.mark.parametrize("codec", [qc.UInt(8), qc.UInt(64), qc.Int(5), qc.Int(64), qc.Bool(), qc.Enum(5),
                                   qc.Enum(["only"])], ids=repr)
@pytest.mark.parametrize("dtype", EXACT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_exact_columns_any_integer_dtype(codec, dtype):
    # integer and bool columns go straight into the code matrix in C; the codec's array path is
    # the reference, for the codes and for the error (same type, same message, same row)
    s = qc.Schema("E", [("x", codec), ("v", qc.Vector(codec, codec))])
    rng = np.random.default_rng(0)
    info = np.iinfo(dtype) if dtype is not np.bool_ else None
    lo, hi = (0, 1) if info is None else (info.min, info.max)
    edges = np.array([lo, hi, 0, 1, -1, 4, 5, 15, 16, -16, -17, 255, 256, 2**63 - 1, -2**63, 2**64 - 1],
                     dtype=object)
    edges = [int(e) for e in edges if lo <= e <= hi]
    for trial in range(40):
        if trial < len(edges):
            vals = np.array([edges[trial]] * 3 + [0], dtype=object)
        else:
            vals = rng.integers(0, 2, 4) if info is None else rng.integers(max(lo, -20), min(hi, 300), 4,
                                                                           endpoint=True)
        x = np.array([int(v) for v in vals], dtype=dtype) if info is not None else np.asarray(vals, dtype=bool)
        pair = np.stack([x[::-1], x], axis=1)           # a strided column per component
        cols = {"x": x, "v": pair}
        try:
            want = {"x": codec.quantize(x), "v": np.stack([codec.quantize(pair[:, 0].copy()),
                                                           codec.quantize(pair[:, 1].copy())], axis=1)}
        except (qc.RangeError, TypeError) as e:
            with pytest.raises(type(e)) as got:
                s.quantize_many(cols)
            assert str(got.value) == f"field 'x': {e}"
            with pytest.raises(type(e)):
                s.snapshot(np.arange(4), cols)
            continue
        q = s.quantize_many(cols)
        for name in ("x", "v"):
            assert q[name].dtype == codec.code_dtype and np.array_equal(q[name], want[name]), (name, x)
        snap = s.snapshot(np.arange(4), cols)
        assert np.array_equal(snap.codes["x"], want["x"]) and np.array_equal(snap.codes["v"], want["v"])
        assert all(s.valid((int(a), (int(b), int(c)))) for a, (b, c) in zip(q["x"], q["v"]))


def test_columns_any_layout_same_codes():
    # C-contiguous float32 / float64 columns are read in place; any other layout (Fortran order,
    # strided, lists, integer floats) is converted first: the codes are the same
    s = qc.Schema("L", [
        ("p", qc.Vector(qc.Bounded(-10, 10, 12), qc.Bounded(0, 5, 9))),
        ("q", qc.Quat(9)),
        ("u", qc.UnitVector(10)),
        ("a", qc.Angle(10)),
        ("nz", qc.NearlyZero(qc.Vector(qc.PowerCurve(10, 2, 8), qc.Int(6)), 0.5)),
        ("n1", qc.NearlyZero(qc.Bounded(-1, 1, 6), 0.1)),
        ("mix", qc.Vector(qc.Bounded(-1, 1, 8), qc.UInt(4))),
    ])
    rng = np.random.default_rng(9)
    n = 37
    base = {
        "p": np.stack([rng.uniform(-12, 12, n), rng.uniform(-1, 6, n)], axis=1),
        "q": rng.normal(size=(n, 4)),
        "u": rng.normal(size=(n, 3)),
        "a": rng.uniform(-7, 7, n),
        "nz": np.stack([rng.choice([0.0, 0.2, 3.0, -9.0], n), rng.integers(-32, 32, n).astype(float)], axis=1),
        "n1": rng.choice([0.0, 0.05, 0.7, -0.3], n),
        "mix": np.stack([rng.uniform(-1, 1, n), rng.integers(0, 16, n).astype(float)], axis=1),
    }
    base["nz"][::4, 1] = 0.0
    want = s.quantize_many(base)
    layouts = {
        "float32": lambda a: a.astype(np.float32),
        "fortran": np.asfortranarray,
        "strided": lambda a: np.repeat(a, 2, axis=0)[::2],
        "list": lambda a: a.tolist(),
        "readonly": lambda a: (lambda b: (b.setflags(write=False), b)[1])(a.copy()),
    }
    for name, f in layouts.items():
        cols = {k: f(v) for k, v in base.items()}
        if name == "float32":
            want32 = s.quantize_many({k: np.ascontiguousarray(v).astype(np.float64) for k, v in cols.items()})
            got = s.quantize_many(cols)
        else:
            want32, got = want, s.quantize_many(cols)
        for k in want:
            assert np.array_equal(got[k], want32[k]), (name, k)
        snap = s.snapshot(np.arange(n), cols)
        for k in want:
            assert np.array_equal(snap.codes[k], want32[k]), (name, k)
    # wrong shapes, whatever the layout, are the same errors
    for bad in (base["q"][:, :3], base["q"][:, :3].astype(np.float32), base["q"].T.copy(), base["q"][:-1]):
        with pytest.raises(qc.SchemaError, match="column 'q'"):
            s.quantize_many(dict(base, q=bad))


def test_exact_columns_other_inputs_take_the_codec_path():
    s = qc.Schema("E", [("n", qc.UInt(8)), ("k", qc.Int(4))])
    # floats holding integers, lists and big-endian arrays: the codec's rules
    for n, k in ((np.array([1.0, 2.0]), np.array([-8.0, 7.0])), ([1, 2], [-8, 7]),
                 (np.array([1, 2], dtype=">u4"), np.array([-8, 7], dtype=">i2"))):
        q = s.quantize_many({"n": n, "k": k})
        assert q["n"].tolist() == [1, 2] and q["k"].tolist() == [-8, 7]
    with pytest.raises(qc.RangeError, match=r"field 'n': .*2\.5 is not an integer"):
        s.quantize_many({"n": np.array([1.0, 2.5]), "k": np.array([0, 0])})
    with pytest.raises(qc.RangeError, match=r"field 'k': .*row 1.*value 8 outside -8..7"):
        s.quantize_many({"n": np.array([1, 2]), "k": np.array([0, 8], dtype=">i4")})
    with pytest.raises(TypeError, match=r"field 'n': .*expected an integer array, got dtype <U1"):
        s.quantize_many({"n": np.array(["a", "b"]), "k": np.array([0, 0])})
    with pytest.raises(TypeError, match=r"field 'k': .*expected an integer array, got dtype object"):
        s.quantize_many({"n": np.array([1, 2]), "k": np.array([-8, 7], dtype=object)})


def test_batch_equals_per_record():
    cols = columns(300, seed=1)
    recs = records_of(PS, cols)
    dq = PS.dequantize_many(PS.quantize_many(cols))
    assert dq["position"].dtype == np.float64 and dq["rotation"].shape == (300, 4)
    assert dq["state"].dtype == np.uint32 and dq["grounded"].dtype == np.bool_
    w = qc.BitWriter()
    for i, r in enumerate(recs):
        codes = PS.quantize(r)
        write_record(w, PS, codes)
        rt = PS.roundtrip(r)
        for name in PS.names:
            got = dq[name][i]
            want = rt[name]
            if name == "state":
                want = LABELS.index(want)
            assert np.array_equal(np.asarray(got, dtype=float), np.asarray(want, dtype=float)), (i, name)
    data = PS.encode_many(cols)
    assert data == w.getvalue()                 # one stream, not padded per record
    dm = PS.decode_many(data, 300)
    for name in PS.names:
        assert np.array_equal(dm[name], dq[name]) and dm[name].dtype == dq[name].dtype, name


def test_batch_all_kinds_equals_per_record():
    rng = np.random.default_rng(5)
    n = 64
    recs = []
    for i in range(n):
        r = dict(AK_REC)
        r["b_end"] = float(rng.uniform(-12, 12))
        r["fx"] = float(rng.uniform(-60, 80))
        r["pc"] = float(rng.normal(0, 30))
        r["u64"] = int(rng.integers(0, 2**63)) * 2 + 1
        r["i64"] = -int(rng.integers(0, 2**62))
        r["enum"] = int(rng.integers(0, 3))
        r["enum_1"] = 0
        r["quat"] = tuple(rng.normal(size=4).tolist())
        r["uvec"] = tuple(rng.normal(size=3).tolist())
        r["vec"] = (float(rng.uniform(-2, 2)), int(rng.integers(0, 16)), int(rng.integers(-16, 16)), float(rng.normal()))
        r["grid"] = float(rng.normal(0, 1e6))
        r["nz"] = float(rng.choice([0.0, 0.1, 3.0, -7.0]))
        r["nzv"] = tuple(rng.choice([0.0, 0.01, 2.0, -20.0], size=2).tolist())
        recs.append(r)
    cols = {}
    for name, codec in AK.fields:
        vals = [r[name] for r in recs]
        if codec.kind in ("UInt",):
            cols[name] = np.array(vals, dtype=np.uint64)
        elif codec.kind == "Vector" and name == "vec":
            cols[name] = np.array(vals, dtype=object).astype(np.float64)
        else:
            cols[name] = np.array(vals)
    q = AK.quantize_many(cols)
    data = AK.encode_many(cols)
    w = qc.BitWriter()
    for i, r in enumerate(recs):
        codes = AK.quantize(r)
        write_record(w, AK, codes)
        for j, (name, codec) in enumerate(AK.fields):
            row = q[name][i]
            want = codes[j]
            if codec.kind == "NearlyZero":
                flat = (want[0],) + (tuple(want[1]) if isinstance(want[1], tuple) else (want[1],))
                assert tuple(int(x) for x in row) == flat, (i, name)
            elif isinstance(want, tuple):
                assert tuple(int(x) for x in row) == want, (i, name)
            else:
                assert int(row) == want, (i, name)
    assert data == w.getvalue()
    dm = AK.decode_many(data, n)
    dq = AK.dequantize_many(q)
    for name in AK.names:
        assert np.array_equal(dm[name], dq[name], equal_nan=dm[name].dtype.kind == "f"), name


def test_batch_input_forms_and_out_untouched():
    cols = columns(50, seed=2)
    want = PS.encode_many(cols)
    f32 = dict(cols, position=cols["position"].astype(np.float32))
    assert PS.encode_many(f32) == PS.encode_many(dict(cols, position=cols["position"].astype(np.float32).astype(np.float64)))
    big = np.asfortranarray(cols["rotation"])              # non-contiguous rows
    swapped = cols["yaw"].astype(">f8")                    # byte-swapped
    ro = cols["position"].copy()
    ro.flags.writeable = False
    before = ro.copy()
    lists = dict(cols, rotation=big, yaw=swapped, position=ro, health=cols["health"].tolist())
    assert PS.encode_many(lists) == want
    assert np.array_equal(ro, before)
    strided = np.zeros((50, 6))
    strided[:, ::2] = cols["position"]
    assert PS.encode_many(dict(cols, position=strided[:, ::2])) == want


def test_batch_empty():
    cols = {k: v[:0] for k, v in columns(3).items()}
    assert PS.encode_many(cols) == b""
    d = PS.decode_many(b"", 0)
    assert d["position"].shape == (0, 3) and d["yaw"].shape == (0,)
    with pytest.raises(qc.DecodeError, match="message too long"):
        PS.decode_many(b"\x00", 0)


@pytest.mark.parametrize("change, exc, message", [
    (lambda c: c.pop("yaw"), qc.SchemaError, "missing column for field 'yaw'"),
    (lambda c: c.update(extra=np.zeros(10)), qc.SchemaError, "unknown column 'extra'"),
    (lambda c: c.update(yaw=np.zeros(9)), qc.SchemaError, "column 'yaw' has 9 rows, column 'position' has 10"),
    (lambda c: c.update(position=np.zeros((10, 2))), qc.SchemaError,
     r"column 'position' \(Vector\(.*\)\) must have shape \(N, 3\) = \(10, 3\), got \(10, 2\)"),
    (lambda c: c.update(rotation=np.zeros((10, 3))), qc.SchemaError, r"column 'rotation' .* must have shape \(N, 4\)"),
    (lambda c: c.update(yaw=np.zeros((10, 1))), qc.SchemaError, r"column 'yaw' .* must have shape \(N,\) = \(10,\)"),
    (lambda c: c.update(yaw=1.0), qc.SchemaError, "column 'yaw' must be an array of shape \\(N,\\), got a scalar"),
    (lambda c: c.update(yaw=np.array(["a"] * 10)), TypeError, "field 'yaw'"),
    (lambda c: c.update(health=np.full(10, 300)), qc.RangeError, r"field 'health': .*row 0: value 300 outside 0..255"),
    (lambda c: c.update(state=np.full(10, 4)), qc.RangeError, r"field 'state': .*row 0: value 4 outside 0..3"),
    (lambda c: c["rotation"].__setitem__(3, 0.0), qc.RangeError, r"field 'rotation': row 3: zero quaternion"),
])
def test_batch_errors(change, exc, message):
    cols = columns(10)
    change(cols)
    with pytest.raises(exc, match=message):
        PS.encode_many(cols)


def test_batch_not_a_mapping():
    with pytest.raises(TypeError, match="columns must be a mapping"):
        PS.encode_many([1, 2, 3])


def test_decode_many_errors():
    cols = columns(20, seed=3)
    data = PS.encode_many(cols)
    with pytest.raises(qc.DecodeError, match="message too short"):
        PS.decode_many(data, 21)
    with pytest.raises(qc.DecodeError, match="message too long"):
        PS.decode_many(data + b"\x00", 20)
    with pytest.raises(qc.DecodeError, match=r"record 19: field '.*': message too short"):
        PS.decode_many(data[:-2], 20)
    with pytest.raises(qc.DecodeError, match=r"message too short: 2000 records take at least"):
        PS.decode_many(data, 2000)
    with pytest.raises(TypeError):
        PS.decode_many(data, 2.0)
    with pytest.raises(ValueError):
        PS.decode_many(data, -1)
    # an invalid enum code in record 1 of a 2-record stream of the enum schema
    s = _enum_schema()
    w = qc.BitWriter()
    w.write(0, 3), w.write(1, 2), w.write(0, 4)
    w.write(0, 3), w.write(3, 2), w.write(0, 4)
    with pytest.raises(qc.DecodeError) as e:
        s.decode_many(w.getvalue(), 2)
    assert str(e.value) == "record 1: field 'state': code 3 is not valid for Enum(['a', 'b', 'c']) at bit 12"


def test_dequantize_many_invalid_codes():
    q = PS.quantize_many(columns(5))
    q["state"][2] = 7
    with pytest.raises(qc.DecodeError, match=r"record 2: field 'state': code 7 is not valid for Enum"):
        PS.dequantize_many(q)
    q = PS.quantize_many(columns(5))
    q["velocity"][1] = (0, 5, 0, 0)
    with pytest.raises(qc.DecodeError, match=r"record 1: field 'velocity'\[0\]: code 5 .*flag is 0"):
        PS.dequantize_many(q)
    q = PS.quantize_many(columns(5))
    q["health"] = q["health"].astype(np.int64) - 1000
    with pytest.raises(qc.DecodeError, match=r"record 0: field 'health'"):
        PS.dequantize_many(q)
    q = PS.quantize_many(columns(5))
    q["yaw"] = q["yaw"].astype(np.float64)
    with pytest.raises(TypeError, match="field 'yaw': codes must be integers"):
        PS.dequantize_many(q)


# ------------------------------------------------------------------------------------------ plan

def test_plan_matrix_interface():
    plan = PS._plan
    cols = columns(40, seed=4)
    m, counts = plan.quantize_matrix(cols)
    assert m.dtype == np.uint64 and m.shape == (40, 12) and plan.nslot == 12
    assert plan.slot_ranges() == ((0, 3), (3, 4), (4, 8), (8, 9), (9, 10), (10, 11), (11, 12))
    assert plan.valid_matrix(m) is None
    assert plan.encode_matrix(m) == PS.encode_many(cols)
    assert np.array_equal(plan.decode_matrix(PS.encode_many(cols), 40), m)
    codes = plan.matrix_to_codes(m)
    assert np.array_equal(plan.codes_to_matrix(codes), m)
    m2 = m.copy()
    m2[7, 10] = 9
    assert plan.valid_matrix(m2) == (7, 10)
    with pytest.raises(qc.RangeError, match=r"record 7: field 'state': code 9 is not valid"):
        plan.encode_matrix(m2)
    out = np.empty_like(m)
    assert plan.quantize_matrix(cols, out=out)[0] is out and np.array_equal(out, m)
    with pytest.raises(TypeError, match="not picklable"):
        pickle.dumps(plan)


def test_big_plan_uses_heap_rows():
    fields = [(f"f{i}", qc.Bounded(-1, 1, 7)) for i in range(100)]
    s = qc.Schema("Big", fields)
    rec = {f"f{i}": (i - 50) / 50 for i in range(100)}
    data = s.encode(rec)
    assert len(data) == 88
    assert s.decode(data) == {k: qc.Bounded(-1, 1, 7).roundtrip(v) for k, v in rec.items()}
    assert s.decode_codes(data) == s.quantize(rec) and s.valid(s.quantize(rec))
    assert s.encode_codes(s.quantize(rec)) == data


# ------------------------------------------------------------------------------------------ clamping

def test_clamp_counting_is_cumulative():
    s = player_state()
    assert s.clamped == {n: 0 for n in s.names}
    s.encode(dict(REC, position=(5000.0, 300.0, 0.0), yaw=math.nan, velocity=(80.0, 0.0, 0.0)))
    assert s.clamped == {"position": 2, "rotation": 0, "velocity": 1, "yaw": 1, "health": 0, "state": 0,
                         "grounded": 0}
    s.quantize(dict(REC, yaw=math.inf))
    s.roundtrip(dict(REC, position=(-math.inf, 0.0, 0.0)))
    cols = columns(10)
    cols["position"][:] = 0.0
    cols["velocity"][:] = 0.0
    cols["position"][3] = (0.0, -100.0, 0.0)
    s.encode_many(cols)
    assert s.clamped["yaw"] == 2 and s.clamped["position"] == 4
    assert s.reset_clamped()["position"] == 4
    assert s.clamped == {n: 0 for n in s.names}
    # resting velocity (flag 0) is never quantized, so it never clamps; in-range never counts
    s.encode(dict(REC, velocity=(0.0, 0.0, 0.0)))
    assert sum(s.clamped.values()) == 0


def test_clamping_values():
    s = player_state()
    got = s.roundtrip(dict(REC, position=(5000.0, -300.0, math.nan)))
    assert got["position"] == (2048.0, -64.0, -2048.0)
    h = qc.Schema("H", [("h", qc.Half())])
    h.encode((math.inf,))
    assert h.clamped == {"h": 0}


def test_strict_mode():
    s = player_state(strict=True)
    assert s.strict and s == PS                    # strictness is local: not in spec or fingerprint
    assert s.encode(REC) == PS.encode(REC)
    with pytest.raises(qc.RangeError) as e:
        s.encode(dict(REC, position=(100.0, 300.0, 0.0)))
    assert str(e.value) == ("field 'position'[1]: value 300.0 outside [-64.0, 192.0] of "
                            "Bounded(min=-64.0, max=192.0, bits=14, mode='endpoints') (strict mode)")
    with pytest.raises(qc.RangeError, match=r"field 'yaw': value nan is not finite \(strict mode"):
        s.encode(dict(REC, yaw=math.nan))
    with pytest.raises(qc.RangeError, match=r"field 'velocity'\[0\]: value -51.0 outside \[-50.0, 50.0\]"):
        s.quantize(dict(REC, velocity=(-51.0, 0.0, 0.0)))
    cols = columns(10)
    cols["position"][:] = 0.0
    cols["velocity"][:] = 1.0
    cols["velocity"][6, 2] = 70.0
    with pytest.raises(qc.RangeError, match=r"field 'velocity'\[2\]: row 6: value 70.0 outside \[-50.0, 50.0\]"):
        s.encode_many(cols)
    assert sum(s.clamped.values()) == 0
    f = qc.Schema("F", [("f", qc.Fixed(0.5, 4)), ("g", qc.Grid(2.0, 3, 4))], strict=True)
    with pytest.raises(qc.RangeError, match=r"field 'f': value 9.0 outside \[-4.0, 3.5\]"):
        f.encode((9.0, 0.0))
    with pytest.raises(qc.RangeError, match=r"field 'g': value -9.0 outside \[-8.0, 8.0\)"):
        f.encode((0.0, -9.0))
    assert pickle.loads(pickle.dumps(s)).strict is True


# ------------------------------------------------------------------------------------------ sizes

def test_sizes_steps_errors():
    assert PS.bits == 137 and PS.nbytes == 18 and PS.min_bits == 107
    assert PS.steps["position"] == (4096 / (2**18 - 1), 256 / (2**14 - 1), 4096 / (2**18 - 1))
    assert PS.steps["yaw"] == 2 * math.pi / 65536
    assert PS.max_errors["rotation"] == qc.Quat(9).max_error
    assert PS.max_errors["velocity"] == qc.NearlyZero(qc.Vector(*[qc.PowerCurve(50, 2, 10)] * 3), 0.01).max_error
    assert set(PS.steps) == set(PS.max_errors) == set(PS.names)


def test_describe():
    text = PS.describe()
    for name, codec in PS.fields:
        assert name in text
    assert "Bounded(min=-64.0, max=192.0, bits=14, mode='endpoints')" in text
    assert "Quat(bits=9, mode='endpoints')" in text and "0.5486 deg" in text
    assert "total: 107..137 bits = at most 18 bytes per record; raw float32: 14 values = 56 bytes (3.27x smaller at most)" in text
    assert text.splitlines()[0] == f"Schema 'PlayerState' version 3, fingerprint {PS.fingerprint}"


# ------------------------------------------------------------------------------------------ spec / JSON / TOML

TOML = """
name = "PlayerState"
version = 3

[[fields]]
name = "position"
[fields.codec]
kind = "Vector"
codecs = [
    { kind = "Bounded", min = -2048, max = 2048, bits = 18 },
    { kind = "Bounded", min = -64.0, max = 192.0, bits = 14, mode = "endpoints" },
    { kind = "Bounded", min = -2048.0, max = 2048.0, bits = 18, mode = "endpoints" },
]

[[fields]]
name = "rotation"
codec = { kind = "Quat", bits = 9 }

[[fields]]
name = "velocity"
[fields.codec]
kind = "NearlyZero"
threshold = 0.01
[fields.codec.inner]
kind = "Vector"
codecs = [
    { kind = "PowerCurve", max = 50.0, pow = 2.0, bits = 10 },
    { kind = "PowerCurve", max = 50.0, pow = 2.0, bits = 10 },
    { kind = "PowerCurve", max = 50.0, pow = 2.0, bits = 10 },
]

[[fields]]
name = "yaw"
codec = { kind = "Angle", bits = 16 }

[[fields]]
name = "health"
codec = { kind = "UInt", bits = 8 }

[[fields]]
name = "state"
codec = { kind = "Enum", labels = ["idle", "walk", "run", "jump"] }

[[fields]]
name = "grounded"
codec = { kind = "Bool" }
"""


def test_spec_json_toml_roundtrips(tmp_path):
    spec = PS.spec()
    assert spec["name"] == "PlayerState" and spec["version"] == 3
    assert spec["fields"][1] == {"name": "rotation", "codec": {"kind": "Quat", "bits": 9, "mode": "endpoints"}}
    assert json.loads(json.dumps(spec)) == spec
    for s in (qc.Schema.from_spec(spec), qc.Schema.from_json(PS.to_json()), qc.Schema.from_json(PS.to_json().encode())):
        assert s == PS and s.fingerprint == PS.fingerprint and s.encode(REC) == PS.encode(REC)
    (tmp_path / "ps.json").write_text(PS.to_json())
    (tmp_path / "ps.toml").write_text(TOML)
    (tmp_path / "ps.schema").write_text(TOML)
    (tmp_path / "psj.schema").write_text(PS.to_json())
    for f in ("ps.json", "ps.toml", "ps.schema", "psj.schema"):
        s = qc.Schema.load(tmp_path / f)
        assert s == PS and s.fingerprint == PS.fingerprint, f
    assert qc.Schema.load(str(tmp_path / "ps.toml"), strict=True).strict
    ak = qc.Schema.from_json(AK.to_json())
    assert ak == AK and ak.fingerprint == AK.fingerprint


def test_spec_errors(tmp_path):
    with pytest.raises(qc.SchemaError, match=r"unknown keys \['colour'\]"):
        qc.Schema.from_spec(dict(PS.spec(), colour="red"))
    with pytest.raises(qc.SchemaError, match="missing 'fields'"):
        qc.Schema.from_spec({"name": "x"})
    with pytest.raises(qc.SchemaError, match="must be a dict"):
        qc.Schema.from_spec([1])
    with pytest.raises(qc.SchemaError, match="not a valid schema JSON document"):
        qc.Schema.from_json("{nope")
    spec = PS.spec()
    spec["fields"][0]["codec"]["codecs"][1]["bits"] = 99
    with pytest.raises(qc.SchemaError, match=r"field 'position\[1\]': .*bits must be in 1..32, got 99"):
        qc.Schema.from_spec(spec)
    (tmp_path / "bad.toml").write_text("name = ")
    with pytest.raises(qc.SchemaError, match=r"bad.toml: not valid TOML"):
        qc.Schema.load(tmp_path / "bad.toml")
    (tmp_path / "bad.json").write_text('{"name": "x", "fields": [["a", {"kind": "UInt"}]]}')
    with pytest.raises(qc.SchemaError, match=r"bad.json: field 'a': UInt spec"):
        qc.Schema.load(tmp_path / "bad.json")
    assert qc.Schema.from_spec({"name": "x", "fields": [["a", {"kind": "UInt", "bits": 3}]]}).version == 1


def test_load_file_errors_are_schema_errors_naming_the_file(tmp_path):
    # docs/schema-format.md: "Any file error is a qc.SchemaError that names the file and what was
    # wrong"; a missing file or a directory once raised FileNotFoundError / IsADirectoryError
    missing = tmp_path / "nowhere" / "player.json"
    with pytest.raises(qc.SchemaError, match=rf"^{re.escape(str(missing))}: cannot read the schema file: "
                                             r"No such file or directory$") as e:
        qc.Schema.load(missing)
    assert isinstance(e.value.__cause__, FileNotFoundError)
    with pytest.raises(qc.SchemaError, match=rf"^{re.escape(str(tmp_path))}: cannot read the schema file: "
                                             r"Is a directory$") as e:
        qc.Schema.load(str(tmp_path))
    assert isinstance(e.value.__cause__, IsADirectoryError)
    if os.name == "posix" and os.geteuid() != 0:
        locked = tmp_path / "locked.json"
        locked.write_text(PS.to_json())
        locked.chmod(0)
        with pytest.raises(qc.SchemaError, match=r"locked.json: cannot read the schema file: Permission denied$"):
            qc.Schema.load(locked)


def test_deeply_nested_specs_are_schema_errors(tmp_path):
    # A codec spec nested thousands deep once overflowed the C stack in codec_from_spec; JSON
    # nested deeper than the json module's recursion limit raised RecursionError.
    for depth in (100, 20000):
        codec = {"kind": "Bool"}
        for _ in range(depth):
            codec = {"kind": "NearlyZero", "inner": {"kind": "Vector", "codecs": [codec]}, "threshold": 0.1}
        spec = {"name": "s", "version": 1, "fields": [{"name": "a", "codec": codec}]}
        with pytest.raises(qc.SchemaError, match="field 'a': Vector: component 0 must be a scalar codec"):
            qc.Schema.from_spec(spec)
    text = '{"name": "s", "fields": [{"name": "a", "codec": ' + '{"kind": "Vector", "codecs": [' * 50000 \
        + '{"kind": "Bool"}' + ']}' * 50000 + '}]}'
    with pytest.raises(qc.SchemaError, match="nested too deeply"):
        qc.Schema.from_json(text)
    (tmp_path / "deep.json").write_text(text)
    with pytest.raises(qc.SchemaError, match=r"deep.json: not valid JSON: nested too deeply"):
        qc.Schema.load(tmp_path / "deep.json")


@pytest.mark.parametrize("n", [2**31, 2**31 + 1, 2**32])
def test_enum_counts_above_2_to_the_31(n):
    # Enum(2**31) .. Enum(2**32) once raised OverflowError (a C int held the count)
    top = n - 1
    s = qc.Schema("S", [("e", qc.Enum(n)), ("b", qc.Bool())])
    assert qc.Schema.from_json(s.to_json()) == s
    assert qc.Schema.from_spec({"name": "S", "fields": [["e", {"kind": "Enum", "count": n}], ["b", {"kind": "Bool"}]]}) == s
    bits = s.codecs[0].bits
    assert s.bits == bits + 1
    for v in (0, 1, top):
        data = s.encode({"e": v, "b": True})
        assert int.from_bytes(data, "little") == v | (1 << bits)
        assert s.decode(data) == {"e": v, "b": True} and s.roundtrip({"e": v, "b": True}) == {"e": v, "b": True}
        assert s.quantize({"e": v, "b": True}) == (v, 1) and s.dequantize((v, 1)) == {"e": v, "b": True}
    assert s.valid((top, 1)) and not s.valid((n, 1))
    with pytest.raises(qc.RangeError):
        s.encode({"e": n, "b": False})
    if n < 2**bits:        # a wire code >= n exists: the decoder rejects it
        with pytest.raises(qc.DecodeError, match=f"code {n} is not valid"):
            s.decode(n.to_bytes(5, "little"))
    cols = {"e": np.array([0, top, 5], dtype=np.uint64), "b": np.array([True, False, True])}
    data = s.encode_many(cols)
    back = s.decode_many(data, 3)
    assert back["e"].tolist() == [0, top, 5] and back["b"].tolist() == [True, False, True]
    assert s.dequantize_many(s.quantize_many(cols))["e"].tolist() == [0, top, 5]


# ------------------------------------------------------------------------------------------ fingerprint

def test_fingerprint_is_short_hex_and_pinned():
    fp = PS.fingerprint
    assert len(fp) == 16 and int(fp, 16) >= 0 and fp == fp.lower()
    with open(os.path.join(GOLDEN, "player_state.json")) as fh:
        assert json.load(fh)["fingerprint"] == fp


def test_fingerprint_stable_across_processes():
    # the child imports the same quantcodec as this process (installed or in-tree) and runs from
    # the tests folder, so `-c`'s current-directory entry cannot shadow it with a source checkout
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(qc.__file__)))
    here = os.path.dirname(os.path.abspath(__file__))
    code = ("import sys; sys.path[:0] = [%r, %r]; import helpers; from quantcodec.tools.examples import player_state; "
            "print(player_state().fingerprint, helpers.all_kinds().fingerprint)" % (pkg_parent, here))
    for seed in ("0", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                             cwd=here)
        assert out.stdout.split() == [PS.fingerprint, AK.fingerprint]


def _variant(**changes):
    fields = list(PS.fields)
    if "fields" in changes:
        fields = changes.pop("fields")
    name = changes.pop("name", "PlayerState")
    version = changes.pop("version", 3)
    return qc.Schema(name, fields, version=version)


@pytest.mark.parametrize("variant", [
    lambda: _variant(name="PlayerState2"),
    lambda: _variant(version=4),
    lambda: _variant(fields=[PS.fields[1], PS.fields[0]] + list(PS.fields[2:])),
    lambda: _variant(fields=[("pos", PS.fields[0][1])] + list(PS.fields[1:])),
    lambda: _variant(fields=list(PS.fields[:6])),
    lambda: _variant(fields=[PS.fields[0], ("rotation", qc.Quat(10))] + list(PS.fields[2:])),
    lambda: _variant(fields=[PS.fields[0], ("rotation", qc.Quat(9, mode="bins"))] + list(PS.fields[2:])),
    lambda: _variant(fields=[("position", qc.Vector(qc.Bounded(-2048, 2048, 18), qc.Bounded(-64, 192.5, 14),
                                                    qc.Bounded(-2048, 2048, 18)))] + list(PS.fields[1:])),
    lambda: _variant(fields=list(PS.fields[:2]) + [("velocity", qc.NearlyZero(
        qc.Vector(*[qc.PowerCurve(50, 2, 10)] * 3), 0.02))] + list(PS.fields[3:])),
    lambda: _variant(fields=list(PS.fields[:3]) + [("yaw", qc.Angle(16, signed=True))] + list(PS.fields[4:])),
    lambda: _variant(fields=list(PS.fields[:5]) + [("state", qc.Enum(["idle", "walk", "run", "fly"]))] + list(PS.fields[6:])),
    lambda: _variant(fields=list(PS.fields[:5]) + [("state", qc.Enum(4))] + list(PS.fields[6:])),
])
def test_fingerprint_changes(variant):
    v = variant()
    assert v.fingerprint != PS.fingerprint and v != PS


def test_check_fingerprint():
    PS.check_fingerprint(PS.fingerprint)
    PS.check_fingerprint(PS.fingerprint.upper())
    PS.check_fingerprint(PS.fingerprint.encode())
    assert qc.Schema("S", [("a", qc.UInt(3))], version=np.int64(4)).version == 4
    with pytest.raises(qc.SchemaError) as e:
        PS.check_fingerprint("0123456789abcdef")
    assert PS.fingerprint in str(e.value) and "'0123456789abcdef'" in str(e.value)
    with pytest.raises(qc.SchemaError):
        PS.check_fingerprint(None)


# ------------------------------------------------------------------------------------------ lockstep

def test_lockstep():
    delta = qc.Schema("PlayerStateDelta", [
        ("position", qc.Vector(qc.Bounded(-2048, 2048, 18), qc.Bounded(-64, 192, 16), qc.Bounded(-2048, 2048, 18))),
        ("velocity", qc.NearlyZero(qc.Vector(qc.PowerCurve(60, 2, 10), *[qc.PowerCurve(50, 2, 10)] * 2), 0.02)),
        ("yaw", qc.Angle(16)),
        ("state", qc.UInt(2)),
        ("extra", qc.Bool()),
    ])
    with pytest.raises(qc.SchemaError) as e:
        qc.check_lockstep(PS, delta)
    msg = str(e.value)
    assert msg.startswith("schemas 'PlayerState' (version 3) and 'PlayerStateDelta' (version 1) are not in lockstep: ")
    assert msg.endswith("position[1]: bits 14 vs 16; velocity: threshold 0.01 vs 0.02; velocity[0]: max 50.0 vs 60.0; "
                        "state: Enum(['idle', 'walk', 'run', 'jump']) vs UInt(bits=2)")
    qc.check_lockstep(PS, delta, fields=["yaw"])
    with pytest.raises(qc.SchemaError, match=r"lockstep: position\[1\]: bits 14 vs 16$"):
        qc.check_lockstep(PS, delta, fields=["yaw", "position"])
    with pytest.raises(qc.SchemaError, match="field 'rotation' is not in schema 'PlayerStateDelta'"):
        qc.check_lockstep(PS, delta, fields=["rotation"])
    qc.check_lockstep(PS, player_state())
    qc.check_lockstep(PS, qc.Schema("Other", [("yaw", qc.Angle(16)), ("rotation", qc.Quat(9))]))
    with pytest.raises(qc.SchemaError, match=r"are not in lockstep: rotation: bits 9 vs 10$"):
        qc.check_lockstep(PS, qc.Schema("Other", [("rotation", qc.Quat(10))]))
    with pytest.raises(TypeError):
        qc.check_lockstep(PS, {"yaw": qc.Angle(16)})


# ------------------------------------------------------------------------------------------ identity

def test_pickle_eq_hash_repr():
    s = pickle.loads(pickle.dumps(PS))
    assert s == PS and hash(s) == hash(PS) and s.fingerprint == PS.fingerprint and s is not PS
    assert s.encode(REC) == PS.encode(REC)
    assert PS != qc.Schema("PlayerState", list(PS.fields), version=2)
    assert PS != "PlayerState" and {PS: 1}[player_state()] == 1
    ns = {k: getattr(qc, k) for k in qc.__all__}
    assert eval(repr(PS), ns) == PS
    assert repr(player_state(strict=True)).endswith("version=3, strict=True)")
    ak = pickle.loads(pickle.dumps(AK))
    assert ak.encode(AK_REC) == AK.encode(AK_REC)


def test_subclass_keeps_its_overrides():
    class Mine(qc.Schema):
        def encode(self, record):
            return b"!" + super().encode(record)
    m = Mine("PlayerState", list(PS.fields), version=3)
    assert m.encode(REC) == b"!" + PS.encode(REC)


# ------------------------------------------------------------------------------------------ properties

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
anyf = st.floats(width=64)


@settings(max_examples=150, deadline=None)
@given(pos=st.tuples(anyf, anyf, anyf), q=st.tuples(finite, finite, finite, finite),
       vel=st.tuples(anyf, st.sampled_from([0.0, 0.001, -0.01, 1.0]), finite), yaw=anyf,
       health=st.integers(0, 255), state=st.sampled_from(LABELS + [0, 1, 2, 3]), grounded=st.booleans())
def test_property_roundtrip_equals_codecs(pos, q, vel, yaw, health, state, grounded):
    rec = (pos, q, vel, yaw, health, state, grounded)
    try:
        want_q = PS["rotation"].quantize(q)
    except qc.RangeError:
        with pytest.raises(qc.RangeError):
            PS.encode(rec)
        return
    data = PS.encode(rec)
    got = PS.decode(data)
    codes = PS.quantize(rec)
    assert codes[1] == want_q
    for (name, codec), v, code in zip(PS.fields, rec, codes):
        assert same(got[name], codec.roundtrip(v)), name
        assert code == codec.quantize(v), name
    assert PS.decode_codes(data) == codes and PS.encode_codes(codes) == data and PS.valid(codes)
    w = qc.BitWriter()
    write_record(w, PS, codes)
    assert w.getvalue() == data


class _Shrinker:
    """A number whose conversion empties the list it sits in (a hostile or buggy __float__)."""

    def __init__(self, value, victim):
        self.value = value
        self.victim = victim

    def __float__(self):
        self.victim.clear()
        return self.value


def test_list_record_resized_while_read_is_safe():
    # the record is read from a copy of the list's items: clearing the list from a value's
    # __float__ must neither crash nor change what is encoded
    sch = qc.Schema("L", [("a", qc.Bounded(0, 1, 8)), ("b", qc.Bounded(0, 1, 8)),
                          ("c", qc.Bounded(0, 1, 8))])
    rec = [0.25, 0.5, 0.75]
    rec[0] = _Shrinker(0.25, rec)
    assert sch.encode(rec) == sch.encode((0.25, 0.5, 0.75))
    assert rec == []


def test_list_vector_resized_while_read_is_safe():
    sch = qc.Schema("V", [("p", qc.Vector(*[qc.Bounded(-1, 1, 12)] * 3))])
    vec = [0.1, 0.2, 0.3]
    vec[0] = _Shrinker(0.1, vec)
    assert sch.encode({"p": vec}) == sch.encode({"p": (0.1, 0.2, 0.3)})
    assert vec == []


class _Mutator:
    """A number whose conversion rewrites the dict it sits in."""

    def __init__(self, value, victim, edit):
        self.value = value
        self.victim = victim
        self.edit = edit

    def __float__(self):
        self.edit(self.victim)
        return self.value


def test_dict_records_in_any_order_or_key_identity():
    # a dict with exactly the fields in field order is walked, not looked up field by field:
    # any other order, keys equal but not identical, extra or missing keys give the same results
    sch = qc.Schema("D", [("a", qc.Bounded(0, 1, 8)), ("b", qc.Vector(qc.Bounded(0, 1, 8), qc.UInt(4))),
                          ("c", qc.Bool())])
    want = sch.encode((0.25, (0.5, 3), True))
    assert sch.encode({"a": 0.25, "b": (0.5, 3), "c": True}) == want
    assert sch.encode({"c": True, "a": 0.25, "b": (0.5, 3)}) == want
    assert sch.encode({"a": 0.25, "c": True, "b": (0.5, 3)}) == want
    fresh = {"".join(["a"]): 0.25, "".join(["b"]): (0.5, 3), "".join(["c"]): True}
    assert sch.encode(fresh) == want
    assert sch.encode({"a": 0.25, "b": (0.5, 3), "c": True, "d": 1}) == want
    with pytest.raises(qc.SchemaError, match="missing field 'c'"):
        sch.encode({"a": 0.25, "b": (0.5, 3), "d": True})
    with pytest.raises(qc.SchemaError, match="missing field 'a'"):
        sch.encode({"b": (0.5, 3), "c": True, "d": 0.25})


@pytest.mark.parametrize("edit", [
    lambda d: d.clear(),
    lambda d: d.pop("b"),
    lambda d: d.update({"b": (0.75, 1), "z": 0}),
    lambda d: [d.__setitem__(f"k{i}", i) for i in range(50)],      # a resize
])
def test_dict_record_changed_while_read_is_safe(edit):
    # a value's __float__ rewriting the dict while the record is read: no crash, and each field
    # is what the dict held when it was read (or a missing field is reported)
    sch = qc.Schema("D", [("a", qc.Bounded(0, 1, 8)), ("b", qc.Vector(qc.Bounded(0, 1, 8), qc.UInt(4))),
                          ("c", qc.Bool())])
    rec = {"a": 0.25, "b": (0.5, 3), "c": True}
    rec["a"] = _Mutator(0.25, rec, edit)
    try:
        got = sch.decode(sch.encode(rec))
    except qc.SchemaError as e:
        assert "missing field" in str(e)
        return
    assert got["a"] == sch.roundtrip((0.25, (0.5, 3), True))["a"]
    assert got["b"] in (sch.roundtrip((0, (0.5, 3), True))["b"], sch.roundtrip((0, (0.75, 1), True))["b"])


def test_one_record_methods_are_positional_only():
    # the plan's C methods are bound on the instance without a keyword layer (METH_O)
    s = qc.Schema("P", [("x", qc.UInt(3)), ("y", qc.Bool())])
    data = s.encode({"x": 5, "y": True})
    assert s.decode(data) == {"x": 5, "y": True}
    for meth, arg in (("encode", {"x": 5, "y": True}), ("decode", data), ("quantize", (5, True)),
                      ("dequantize", (5, 1)), ("roundtrip", (5, True)), ("encode_codes", (5, 1)),
                      ("decode_codes", data), ("valid", (5, 1))):
        getattr(s, meth)(arg)
        with pytest.raises(TypeError):
            getattr(s, meth)(**{"x": arg})
        with pytest.raises(TypeError):
            getattr(qc.Schema, meth)(s, **{"record": arg})


def _unaligned(dtype, shape):
    """A view whose data pointer is not a multiple of its item size (a field of a packed record
    array, a buffer read at an odd offset)."""
    dt = np.dtype(dtype)
    raw = np.zeros(int(np.prod(shape)) * dt.itemsize + 1, np.uint8)
    a = raw[1:].view(dt).reshape(shape)
    assert not a.flags.aligned
    return a


def test_unaligned_columns_give_the_aligned_results():
    # columns and codec inputs are read through typed pointers only when aligned (else they are
    # copied: a misaligned load is undefined in C, which UBSan reported); every unaligned input
    # gives what an aligned copy gives, and an unaligned out= array is refused
    n = 40
    rng = np.random.default_rng(3)
    pos = _unaligned(np.float64, (n, 3))
    pos[:] = rng.uniform(-10, 10, (n, 3))
    rot = _unaligned(np.float64, (n, 4))
    rot[:] = rng.normal(size=(n, 4))
    hp = _unaligned(np.int32, (n,))
    hp[:] = rng.integers(0, 100, n)
    yaw = _unaligned(np.float32, (n,))
    yaw[:] = rng.uniform(0, 6, n)
    ids = _unaligned(np.uint32, (n,))
    ids[:] = rng.permutation(n)
    s = qc.Schema("U", [("p", qc.Vector(*[qc.Bounded(-16, 16, 12)] * 3)), ("r", qc.Quat(9)),
                        ("h", qc.UInt(8)), ("a", qc.Angle(10))])
    cols = {"p": pos, "r": rot, "h": hp, "a": yaw}
    snap = s.snapshot(ids, cols)
    assert snap == s.snapshot(np.array(ids), {k: np.array(v) for k, v in cols.items()})
    q = s.quantize_many(cols)
    want = s.quantize_many({k: np.array(v) for k, v in cols.items()})
    assert all(np.array_equal(q[k], want[k]) for k in want)
    for codec, x in ((qc.Bounded(-16, 16, 12), pos[:, 0]), (qc.Quat(9), rot), (qc.Angle(10), yaw),
                     (qc.UInt(8), hp), (qc.UnitVector(8), pos), (qc.Half(), yaw),
                     (qc.Vector(*[qc.Bounded(-16, 16, 12)] * 3), pos)):
        codes = codec.quantize(x)
        assert np.array_equal(codes, codec.quantize(np.array(x))), codec
        c2 = _unaligned(codes.dtype, codes.shape)
        c2[...] = codes
        assert np.array_equal(codec.dequantize(c2), codec.dequantize(codes), equal_nan=True), codec
    out = _unaligned(np.float64, (n,))
    with pytest.raises(ValueError, match="aligned"):
        qc.Bounded(-16, 16, 12).dequantize(qc.Bounded(-16, 16, 12).quantize(pos[:, 0]), out=out)
    hp[5] = 300                                   # out of range: the same error, the same row
    with pytest.raises(qc.RangeError, match="row 5"):
        s.snapshot(ids, cols)


def test_json_with_a_duplicate_key_is_refused(tmp_path):
    text = '{"name": "A", "version": 1, "version": 2, "fields": [{"name": "x", "codec": {"kind": "Bool"}}]}'
    with pytest.raises(qc.SchemaError, match="duplicate key 'version'"):
        qc.Schema.from_json(text)
    path = tmp_path / "a.json"
    path.write_text(text.replace('"kind": "Bool"', '"kind": "Bool", "kind": "UInt"'))
    with pytest.raises(qc.SchemaError, match="duplicate key"):
        qc.Schema.load(path)


# ------------------------------------------------------------------------------------------------
# Enum columns take labels (issue 25, item 5)


def _labelled():
    return qc.Schema("Weapons", [("weapon", qc.Enum(["knife", "pistol", "rifle"])), ("ammo", qc.UInt(8)),
                                 ("count", qc.Enum(4))])


@pytest.mark.parametrize("form", [
    lambda v: v,                                    # a list of str
    lambda v: np.array(v),                          # a <U array
    lambda v: np.array(v, dtype=object),            # an object array of str
    lambda v: np.array(v)[::-1][::-1],              # a strided view
])
def test_enum_columns_take_labels(form):
    s = _labelled()
    labels = ["knife", "rifle", "knife", "pistol", "knife"]
    idx = [0, 2, 0, 1, 0]
    by_label = {"weapon": form(labels), "ammo": np.arange(5), "count": np.arange(5) % 4}
    by_index = {"weapon": np.array(idx), "ammo": np.arange(5), "count": np.arange(5) % 4}
    assert s.quantize_many(by_label)["weapon"].tolist() == idx
    assert s.encode_many(by_label) == s.encode_many(by_index)
    assert s.snapshot(np.arange(5), by_label) == s.snapshot(np.arange(5), by_index)
    assert s.decode_many(s.encode_many(by_label), 5)["weapon"].tolist() == idx     # arrays carry indices
    assert s["weapon"].quantize(form(labels)).tolist() == idx
    assert s.quantize_many({"weapon": ["knife"] * 5, "ammo": np.zeros(5, int), "count": np.zeros(5, int)})[
        "weapon"].tolist() == [0] * 5


def test_unknown_enum_labels_raise_range_error_naming_them():
    s = _labelled()
    cols = {"weapon": ["knife", "gun", "rifle", "spoon", "gun"], "ammo": np.arange(5), "count": np.zeros(5, int)}
    for call, owner in ((s.quantize_many, "field 'weapon'"), (s.encode_many, "field 'weapon'")):
        with pytest.raises(qc.RangeError) as info:
            call(cols)
        msg = str(info.value)
        assert msg.startswith(owner) and "row 1: unknown label 'gun'" in msg and "'spoon'" in msg, msg
        assert "'knife', 'pistol', 'rifle'" in msg
    with pytest.raises(qc.RangeError, match=r"^snapshot: entity 11: field 'weapon': .*row 1: unknown label 'gun'"):
        s.snapshot(np.arange(10, 15), cols)
    snap = s.snapshot(np.arange(10, 15), cols, bad="drop")
    assert snap.dropped.tolist() == [11, 13, 14] and "'spoon'" in snap.bad[13]
    with pytest.raises(qc.RangeError, match="unknown label 'a'.*Enum\\(4\\) has no labels"):
        s.quantize_many({"weapon": [0], "ammo": [0], "count": ["a"]})
    with pytest.raises(TypeError):        # an exact codec that is not an Enum takes no strings
        s.quantize_many({"weapon": [0], "ammo": ["a"], "count": [0]})


# ------------------------------------------------------------------------------------------------
# Schema.to_toml (issue 25, item 6)


def _toml_loads(text):
    try:
        import tomllib
    except ImportError:         # Python < 3.11
        tomllib = pytest.importorskip("tomli")
    return tomllib.loads(text)


ODD = qc.Schema("Odd \"names\" \\ é\t", [
    ("x", qc.Enum(["a\"b", "c\\d", "é", "\n\x01", "", "ü x"])),
    ("y", qc.Fixed(1e-7, 32, offset=-1e-300)),
    ("z", qc.Bounded(-2048, 1e300, 3)),
    ("w", qc.Grid(5e-324, 1, 1)),
], version=0)


@pytest.mark.parametrize("schema", [PS, AK, _labelled(), ODD], ids=["player_state", "all_kinds", "labels", "odd"])
def test_to_toml_roundtrips_to_an_equal_schema(schema, tmp_path):
    text = schema.to_toml()
    assert _toml_loads(text) == json.loads(schema.to_json())        # the spec, exactly
    path = tmp_path / "s.toml"
    path.write_text(text, encoding="utf-8")
    back = qc.Schema.load(path)
    assert back == schema and back.fingerprint == schema.fingerprint
    assert qc.Schema.load(path, strict=True).strict


def test_to_toml_covers_every_codec_kind():
    kinds = {f["codec"]["kind"] for f in AK.spec()["fields"]}
    kinds |= {c["kind"] for f in AK.spec()["fields"] for c in f["codec"].get("codecs", [])}
    kinds |= {f["codec"]["inner"]["kind"] for f in AK.spec()["fields"] if "inner" in f["codec"]}
    assert kinds == set(qc._codecs._KINDS)


def test_to_toml_layout():
    text = PS.to_toml()
    assert text.startswith('name = "PlayerState"\nversion = 3\n\n[[fields]]\nname = "position"\n[fields.codec]\n')
    assert 'codec = { kind = "Quat", bits = 9, mode = "endpoints" }' in text
    assert "[fields.codec.inner]" in text and "null" not in text
    with pytest.raises(qc.SchemaError, match="lone surrogate"):
        qc.Schema("S", [("e", qc.Enum(["\ud800"]))]).to_toml()


# ------------------------------------------------------------------------------------------------
# describe() of a NearlyZero field shows its true worst error (issue 25, item 7)


def test_describe_nearly_zero_shows_the_worst_error_of_max_errors():
    s = qc.Schema("V", [("v", qc.NearlyZero(qc.Bounded(-1, 1, 7), 0.005)),
                        ("w", qc.NearlyZero(qc.Vector(qc.Bounded(-1, 1, 7), qc.Bounded(-1, 1, 12)), 0.005))])
    assert s.max_errors["v"] == pytest.approx(0.007874, rel=1e-3)        # above the threshold
    table = s.describe().splitlines()
    row = next(line for line in table if line.startswith("v "))
    assert row.split()[-1] == f"{s.max_errors['v']:.4g}" and "0.005" not in row.split()[-1]
    w = next(line for line in table if line.startswith("w "))
    assert w.split()[-1] == f"{max(s.max_errors['w']):.4g}"
    comps = [line for line in table if line.startswith("  w[")]
    assert [c.split()[-1] for c in comps] == [f"{e:.4g}" for e in s.max_errors["w"]]     # 0.007874, 0.005


def test_names_labels_versions_and_sizes_read_one_way_everywhere():
    # docs/schema-format.md, "One reading everywhere"
    with pytest.raises(qc.SchemaError, match=r"schema name must not contain U\+0000"):
        qc.Schema("a\x00b", [("a", qc.UInt(3))])
    with pytest.raises(qc.SchemaError, match=r"field 'e': Enum labels must not contain U\+0000"):
        qc.Schema("S", [("e", qc.NearlyZero(qc.Enum(["x", "y\x00"]), 0))])
    with pytest.raises(qc.SchemaError, match=r"schema name must be Unicode text: a lone surrogate U\+D800 at character 1"):
        qc.Schema("a\ud800", [("a", qc.UInt(3))])            # it would not go into a hello (UTF-8)
    with pytest.raises(qc.SchemaError, match=r"field 'e': Enum labels must be Unicode text: a lone surrogate U\+DE00"):
        qc.Schema("S", [("e", qc.Enum(["x", "\ude00\ud83d"]))])
    with pytest.raises(qc.SchemaError, match="lone surrogate U\\+D83D at character 0"):
        qc.Schema.from_json('{"name": "\\ud83dx", "fields": [{"name": "a", "codec": {"kind": "Bool"}}]}')
    assert qc.Schema.from_json('{"name": "\\ud83d\\ude00", "fields": [{"name": "a", "codec": {"kind": "Bool"}}]}').name == "\U0001f600"
    assert qc.Schema("S\u20ac", [("e", qc.Enum(["\u00e9t\u00e9", "\u2603"]))], version=2**63 - 1)
    for v in (2**63, -1):
        with pytest.raises(qc.SchemaError, match=r"schema version must be an integer from 0 to 2\*\*63 - 1"):
            qc.Schema("S", [("a", qc.UInt(3))], version=v)
    with pytest.raises(qc.SchemaError, match="a Vector has at most 65535 components, got 65536"):
        qc.Schema("S", [("v", qc.Vector(*[qc.Bool()] * 65536))])
    doc = qc.Schema("S", [("a", qc.UInt(3))]).to_json().encode()
    fp = qc.Schema.from_json(doc).fingerprint
    assert qc.Schema.from_json(b"\xef\xbb\xbf" + doc).fingerprint == fp
    assert qc.Schema.from_json("\ufeff" + doc.decode()).fingerprint == fp
    for bad in (doc.decode().encode("utf-16"), doc.replace(b'"S"', b'"S\xed\xa0\x80"'),
                doc.replace(b'"S"', b'"S\xff"')):
        with pytest.raises(qc.SchemaError, match="not UTF-8"):
            qc.Schema.from_json(bad)


def test_schema_load_reads_utf8_only(tmp_path):
    doc = qc.Schema("S", [("a", qc.UInt(3))]).to_json()
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + doc.encode())
    assert qc.Schema.load(tmp_path / "bom.json").fingerprint == qc.Schema.from_json(doc).fingerprint
    (tmp_path / "u16.json").write_bytes(doc.encode("utf-16"))
    with pytest.raises(qc.SchemaError, match=r"u16.json: not valid JSON: not UTF-8"):
        qc.Schema.load(tmp_path / "u16.json")
    (tmp_path / "bad.toml").write_bytes(b'name = "S\xff"\n')
    with pytest.raises(qc.SchemaError, match=r"bad.toml: not valid TOML: not UTF-8"):
        qc.Schema.load(tmp_path / "bad.toml")
