"""Schema.from_proto: schemas from protobuf messages annotated with (quantized), (quantized_power)
and (bit_packed), as the design this library started from writes them (tests/proto/*.proto; the
options declared in a local options.proto), and check_lockstep on the full state and the delta.

Needs protobuf (the optional extra quantcodec[protobuf]); the .proto compilation tests also need
grpcio-tools. player.pb is player.proto compiled once:
    python -m grpc_tools.protoc -I tests/proto -I <grpc_tools>/_proto --include_imports \\
        --descriptor_set_out=tests/proto/player.pb tests/proto/player.proto
"""

import math
import pathlib

import numpy as np
import pytest

import quantcodec as qc

pytest.importorskip("google.protobuf", reason="protobuf is not installed: pip install 'quantcodec[protobuf]'")

PROTO = pathlib.Path(__file__).resolve().parent / "proto"
PB = PROTO / "player.pb"


def _protoc():
    pytest.importorskip("grpc_tools.protoc", reason="grpcio-tools (protoc) is not installed: "
                        "pip install 'quantcodec[protobuf]'")


# The rules of the three options, written out from the design's text, not through quantcodec.

def quantized(x, lo, hi, bits):
    """A float as a uint32 code: clamped to [min, max], uniform in 2^bits - 1 steps."""
    L = 2 ** bits - 1
    if math.isnan(x):
        return 0
    t = min(max((x - lo) / (hi - lo), 0.0), 1.0)
    return int(math.floor(t * L + 0.5))


def quantized_power(x, mx, pw, bits):
    """Sign and a power-law magnitude: m = round((|x| / max)^(1/pow) * L), sign in the top bit;
    a value that rounds to m = 0 (a stopped one) is exactly code 0."""
    L = 2 ** (bits - 1) - 1
    m = int(math.floor((min(abs(x), mx) / mx) ** (1 / pw) * L + 0.5))
    if m == 0:
        return 0
    return (1 << (bits - 1)) | m if x < 0 else m


RULES = {
    "entity_id": lambda v: v,                               # bit_packed, uint32
    "position_x": lambda v: quantized(v, 0, 16, 8),
    "position_y": lambda v: quantized(v, -2, 30, 10),
    "position_z": lambda v: quantized(v, 0, 16, 8),
    "velocity_x": lambda v: quantized_power(v, 50, 2, 8),
    "velocity_y": lambda v: quantized_power(v, 50, 2, 8),
    "rotation_y": lambda v: quantized(v, 0, 360, 7),
    "head_yaw": lambda v: quantized(v, -90, 90, 6),
    "fall_ticks": lambda v: v,                              # bit_packed, sint32: two's complement
}


def test_the_schema_read_from_the_annotations():
    s = qc.Schema.from_proto(PB, "PlayerState")
    assert s.name == "PlayerState"
    assert s.names == ("entity_id", "position_x", "position_y", "position_z", "velocity_x", "velocity_y",
                       "rotation_y", "head_yaw", "fall_ticks", "grounded", "emote")  # display_name left out
    assert s["entity_id"] == qc.UInt(20)
    assert s["position_y"] == qc.Bounded(-2, 30, 10)
    assert s["velocity_x"] == qc.PowerCurve(50, 2, 8)
    assert s["fall_ticks"] == qc.Int(6)
    assert s["grounded"] == qc.Bool()
    assert s["emote"] == qc.Enum(["EMOTE_NONE", "EMOTE_WAVE", "EMOTE_DANCE"])
    assert s.bits == 20 + 8 + 10 + 8 + 8 + 8 + 7 + 6 + 6 + 1 + 2
    # the same from bytes, from a parsed FileDescriptorSet, and by full name
    from google.protobuf import descriptor_pb2
    fds = descriptor_pb2.FileDescriptorSet.FromString(PB.read_bytes())
    assert qc.Schema.from_proto(PB.read_bytes(), "game.pulse.PlayerState") == s
    assert qc.Schema.from_proto(fds, ".game.pulse.PlayerState", version=3).version == 3
    with pytest.raises(qc.SchemaError, match="display_name: not annotated"):
        qc.Schema.from_proto(PB, "PlayerState", unannotated="raise")


def test_codes_follow_the_rules_for_every_annotated_field():
    s = qc.Schema.from_proto(PB, "PlayerState")
    rng = np.random.default_rng(28)
    ranges = {"position_x": (-2, 18), "position_y": (-5, 33), "position_z": (-1, 17),
              "velocity_x": (-60, 60), "velocity_y": (-60, 60), "rotation_y": (-10, 370),
              "head_yaw": (-100, 100)}
    for i in range(2000):
        rec = {n: float(rng.uniform(*r)) for n, r in ranges.items()}
        if i % 7 == 0:
            rec["velocity_x"] = 0.0                                # a stopped value
        if i % 11 == 0:
            rec["velocity_y"] = float(rng.uniform(-0.02, 0.02))     # rounds to zero
        rec["entity_id"] = int(rng.integers(0, 2 ** 20))
        rec["fall_ticks"] = int(rng.integers(-32, 32))
        rec["grounded"] = bool(i % 2)
        rec["emote"] = int(rng.integers(0, 3))
        codes = dict(zip(s.names, s.quantize(rec)))
        for name, rule in RULES.items():
            assert codes[name] == rule(rec[name]), (name, rec[name], codes[name])
        assert codes["grounded"] == rec["grounded"] and codes["emote"] == rec["emote"]
        assert s.decode(s.encode(rec))["velocity_x"] == (0.0 if rec["velocity_x"] == 0 else
                                                         s.roundtrip(rec)["velocity_x"])


def test_lockstep_of_the_full_state_and_the_delta():
    full = qc.Schema.from_proto(PB, "PlayerState")
    delta = qc.Schema.from_proto(PB, "PlayerStateDelta")
    assert set(delta.names) < set(full.names)
    qc.check_lockstep(full, delta)                               # identical parameters: fine
    for n in delta.names:                                         # and the same grid, value for value
        assert full[n].roundtrip(3.3) == delta[n].roundtrip(3.3)
    drifted = qc.Schema.from_proto(PB, "DriftedDelta")
    with pytest.raises(qc.SchemaError) as e:
        qc.check_lockstep(full, drifted)
    msg = str(e.value)
    assert "not in lockstep" in msg and "position_y: bits 10 vs 11" in msg and "velocity_x: max 50.0 vs 40.0" in msg
    assert "position_x" not in msg


def test_a_proto_file_is_compiled_with_the_bundled_protoc(tmp_path):
    _protoc()
    assert qc.Schema.from_proto(PROTO / "player.proto", "PlayerState") == qc.Schema.from_proto(PB, "PlayerState")
    # options in another directory: include=
    (tmp_path / "m.proto").write_text(
        'syntax = "proto3";\nimport "options.proto";\n'
        'message M { double a = 1 [(game.options.quantized) = { min: -1, max: 1, bits: 12 }];\n'
        '            int64 b = 2 [(game.options.bit_packed) = { bits: 40 }]; }\n')
    m = qc.Schema.from_proto(tmp_path / "m.proto", "M", include=[PROTO])
    assert m == qc.Schema("M", [("a", qc.Bounded(-1, 1, 12)), ("b", qc.Int(40))])


@pytest.mark.parametrize("body, match", [
    ('uint32 a = 1 [(game.options.quantized) = { min: 0, max: 1, bits: 8 },'
     ' (game.options.quantized_power) = { max: 1, pow: 2, bits: 8 }];', "carries quantized and quantized_power"),
    ('repeated uint32 a = 1 [(game.options.quantized) = { min: 0, max: 1, bits: 8 }];', "repeated"),
    ('uint32 a = 1 [(game.options.quantized) = { min: 1, max: 1, bits: 8 }];', "M.a: .quantized. .*min"),
    ('uint32 a = 1 [(game.options.quantized) = { min: 0, max: 1 }];', "M.a: .quantized. .*bits"),
    ('uint32 a = 1 [(game.options.quantized_power) = { max: 10, pow: 0.5, bits: 8 }];', "pow"),
    ('string a = 1;', "no annotated field"),
])
def test_bad_annotations_are_refused(tmp_path, body, match):
    _protoc()
    (tmp_path / "m.proto").write_text(f'syntax = "proto3";\nimport "options.proto";\nmessage M {{ {body} }}\n')
    with pytest.raises(qc.SchemaError, match=match):
        qc.Schema.from_proto(tmp_path / "m.proto", "M", include=[PROTO])


def test_errors_name_what_is_wrong(tmp_path):
    with pytest.raises(qc.SchemaError, match="no message 'Nope'.*PlayerState"):
        qc.Schema.from_proto(PB, "Nope")
    with pytest.raises(qc.SchemaError, match="not a compiled protobuf descriptor set"):
        qc.Schema.from_proto(b"\xff\xff\xff", "PlayerState")
    with pytest.raises(ValueError, match="unannotated"):
        qc.Schema.from_proto(PB, "PlayerState", unannotated="keep")
    # a descriptor set compiled without --include_imports lacks options.proto
    from google.protobuf import descriptor_pb2
    fds = descriptor_pb2.FileDescriptorSet.FromString(PB.read_bytes())
    only = descriptor_pb2.FileDescriptorSet(file=[f for f in fds.file if f.name == "player.proto"])
    with pytest.raises(qc.SchemaError, match="include_imports"):
        qc.Schema.from_proto(only, "PlayerState")


def test_proto2_defaults_are_read_as_their_type(tmp_path):
    """docs/protobuf.md, Defaults: an integer parameter's [default = 5] is the integer 5 (it was
    5.0, which UInt refused), a float one's is single precision as an explicit value is."""
    _protoc()
    (tmp_path / "o2.proto").write_text(
        'syntax = "proto2";\npackage g2;\nimport "google/protobuf/descriptor.proto";\n'
        'message Quantized { optional float min = 1; optional float max = 2 [default = 0.1];'
        ' optional uint32 bits = 3 [default = 12]; }\n'
        'message BitPacked { optional uint32 bits = 1 [default = 5]; }\n'
        'extend google.protobuf.FieldOptions { optional Quantized quantized = 50101;'
        ' optional BitPacked bit_packed = 50103; }\n')
    (tmp_path / "m2.proto").write_text(
        'syntax = "proto2";\nimport "o2.proto";\n'
        'message A { required uint32 z = 1 [(g2.bit_packed) = { }]; }\n'
        'message B { optional uint32 x = 1 [(g2.quantized) = { }]; }\n'
        'message C { optional uint32 x = 1 [(g2.quantized) = { max: 0.1, bits: 12 }]; }\n')
    a = qc.Schema.from_proto(tmp_path / "m2.proto", "A", include=[tmp_path])
    assert a == qc.Schema("A", [("z", qc.UInt(5))])
    b = qc.Schema.from_proto(tmp_path / "m2.proto", "B", include=[tmp_path])
    c = qc.Schema.from_proto(tmp_path / "m2.proto", "C", include=[tmp_path])
    assert b.fields[0][1] == qc.Bounded(0, 0.10000000149011612, 12) == c.fields[0][1]


def test_oneof_members_are_left_out_or_refused(tmp_path):
    """docs/protobuf.md: a oneof's members are left out (refused with unannotated="raise"), an
    annotated one refused; proto3's optional (a synthetic oneof) is read as any field."""
    _protoc()

    def schema(body, **kw):
        (tmp_path / "m.proto").write_text(
            f'syntax = "proto3";\nimport "options.proto";\nmessage M {{ {body} }}\n')
        return qc.Schema.from_proto(tmp_path / "m.proto", "M", include=[PROTO], **kw)

    keep = 'uint32 id = 1 [(game.options.bit_packed) = { bits: 8 }];'
    assert schema(keep + ' oneof p { bool jumped = 2; string s = 3; }') == qc.Schema("M", [("id", qc.UInt(8))])
    with pytest.raises(qc.SchemaError, match=r"M\.jumped: a member of oneof 'p'"):
        schema(keep + ' oneof p { bool jumped = 2; }', unannotated="raise")
    with pytest.raises(qc.SchemaError, match=r"M\.damage: a member of oneof 'p' cannot be quantized"):
        schema(keep + ' oneof p { uint32 damage = 3 [(game.options.bit_packed) = { bits: 7 }]; }')
    opt = schema(keep + ' optional uint32 hp = 2 [(game.options.bit_packed) = { bits: 7 }];'
                 ' optional bool alive = 3;')
    assert opt == qc.Schema("M", [("id", qc.UInt(8)), ("hp", qc.UInt(7)), ("alive", qc.Bool())])
