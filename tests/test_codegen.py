"""quantcodec codegen --lang csharp: the generated C# is pinned by golden files that the C#
client's own tests compile (without warnings) and run (clients/csharp/run-tests)."""

import json
import re
import shutil
import subprocess
import pathlib

import pytest

import quantcodec as qc
from quantcodec import cli, codegen

ROOT = pathlib.Path(__file__).resolve().parent.parent
GENERATED = ROOT / "clients" / "csharp" / "Tests~" / "generated"
SCHEMAS = {
    "pose": ROOT / "conformance" / "schemas" / "pose.json",
    "all_kinds": ROOT / "conformance" / "schemas" / "all_kinds.json",
    "one_bit": ROOT / "conformance" / "schemas" / "one_bit.json",
    "player_state": ROOT / "tests" / "golden" / "schema" / "player_state.json",
}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_generated_csharp_is_the_golden_file(name):
    path = SCHEMAS[name]
    if name == "player_state":          # a golden record file: its schema under "spec"
        schema = qc.Schema.from_spec(json.loads(path.read_text())["spec"])
    else:
        schema = qc.Schema.load(path)
    text = codegen.generate_csharp(schema)
    assert text == (GENERATED / f"{name}.cs").read_text(), (
        f"regenerate with quantcodec codegen --lang csharp: clients/csharp/Tests~/generated/{name}.cs")
    assert schema.fingerprint in text


def test_codegen_command(tmp_path, capsys):
    out = tmp_path / "Pose.cs"
    assert cli.main(["codegen", "--lang", "csharp", str(SCHEMAS["pose"]), "-o", str(out)]) == 0
    assert out.read_text() == (GENERATED / "pose.cs").read_text()
    assert cli.main(["codegen", "--lang", "csharp", str(tmp_path / "missing.json")]) == 1
    assert "schema file not found" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        cli.main(["codegen", "--lang", "rust", str(SCHEMAS["pose"])])
    assert e.value.code == 2


HOSTILE = qc.Schema("Snapshot", [              # a struct and members named after runtime types
    ("math", qc.Bounded(0, 1, 8)),
    ("speed", qc.NearlyZero(qc.Bounded(-1, 1, 8), 0.01)),   # (its test calls Math.Abs)
    ("codec", qc.UInt(3)), ("vec3", qc.Vector(qc.Half(), qc.Half(), qc.Half())),
    ("system", qc.Bool()), ("bit_writer", qc.Quat(9)), ("quant_codec", qc.Enum(["a", "b"])),
])


def test_names_of_runtime_types_are_renamed_and_compile(tmp_path):
    """A struct or member named after a type the generated code uses would hide it (it did not
    compile: CS0176 for a struct Snapshot, CS1061 for a member Math beside a NearlyZero)."""
    text = codegen.generate_csharp(HOSTILE)
    assert "public partial struct SnapshotRecord" in text
    for member in ("Math_2", "Codec_2", "Vec3_2", "System_2", "BitWriter_2", "QuantCodec_2"):
        assert f" {member};" in text, member
    (tmp_path / "Hostile.cs").write_text(text)
    _compile(tmp_path, tmp_path / "Hostile.cs", what="the renames checked, not the compile")


def _compile(tmp_path, *sources, what):
    """Compile generated files with the C# runtime's sources (Mono's mcs, C# 7, warnings as
    errors); skip, saying what was checked without it, where mcs is not installed."""
    mcs = shutil.which("mcs")
    if mcs is None:
        pytest.skip(f"Mono's mcs is not installed: {what}")
    runtime = subprocess.run(["sh", str(ROOT / "clients" / "csharp" / "runtime-sources")],
                             capture_output=True, text=True, check=True).stdout.split()
    # the runtime as its own assembly, as a game references it (a namespace of the game's, such
    # as Math, is not in the runtime's sight)
    flags = [mcs, "-langversion:7", "-warnaserror", "-nologo", "-target:library", "-r:System.Numerics.dll"]
    r = subprocess.run([*flags, f"-out:{tmp_path / 'QuantCodec.dll'}", *runtime], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    r = subprocess.run([*flags, f"-r:{tmp_path / 'QuantCodec.dll'}", f"-out:{tmp_path / 'out.dll'}",
                        *map(str, sources)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


def _snake(pascal):
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", pascal).lower()


# the field names the CLI probe tried (keywords, the generated members in snake_case, the names
# derived from a member, case and Unicode look-alikes), plus below every member name the
# generated code declares, as it is and in snake_case
PROBE_NAMES = [
    "class", "int", "namespace", "object", "string", "event", "operator", "params", "base", "this", "void",
    "fixed", "checked", "unsafe", "default", "struct", "new", "return", "bool", "double", "ulong", "var",
    "async", "value", "get", "set", "in", "out", "ref", "is", "as", "lock", "true", "false", "null", "enum",
    "float", "decimal", "global", "__arglist", "__makeref", "__reftype", "__refvalue",
    "schema", "Schema", "c", "C", "encode", "Encode", "decode", "Decode", "read", "Read", "quantize",
    "Quantize", "dequantize", "fingerprint", "Fingerprint", "spec_json", "slot_count", "max_bits",
    "schema_name", "schema_version", "load_schema", "slot_codecs", "check_fingerprint", "create_decoder",
    "are_codes_in_range", "equals", "get_hash_code", "to_string", "get_type", "finalize",
    "memberwise_clone", "reference_equals", "v", "s", "t", "codes", "offset", "row", "data", "length",
    "scratch", "writer", "snapshot", "peer_fingerprint", "math", "Math", "system", "System", "vec3", "Vec3",
    "quat4", "codec", "x", "y", "z", "w", "X", "W", "float_bits", "argument_exception", "schema_exception",
    "bit_writer", "snapshot_decoder", "quant_codec", "global_", "qc_codecs", "qcCodecs", "qc_load_schema",
    "qcLoadSchema", "qc_slot_codecs", "qcSlotCodecs",
    "pos_step", "pos_labels", "pos_label", "pos_vector", "pos_threshold", "pos_step_x", "state_label",
    "state_labels", "e_label", "e_labels", "v_vector", "v_step", "v_step_x", "nz_threshold", "g_step",
    "pos", "Pos", "pOs", "POS", "a_b", "aB", "a__b", "_a_b", "ab_", "AB", "_pos", "__pos", "pos_",
    "ñandú", "名前", "Ωmega", "ǅx", "ª", "ŉ", "ⅷ", "ｗｉｄｅ", "ﬁeld", "é", "é", "_1", "x1", "x_1",
    "μ", "µ", "K", "K", "straße", "STRASSE",
]


def _declared_members(text):
    """Every name the generated file declares inside its struct (members, methods, nested types)."""
    decl = re.compile(r"^\s+(?:public |static |readonly |const |partial )*"
                      r"(?:struct|enum|[\w.:<>\[\]]+)\s+(@?\w+)\s*(?:[=;({:]|$)", re.M)
    return {m.group(1).lstrip("@") for m in decl.finditer(text)} - {"get", "set"}


def _a_field_name(name):
    try:
        qc.Schema("S", [(name, qc.Bool())])
    except (qc.SchemaError, ValueError):
        return False
    return True


def test_every_generated_member_name_as_a_field_name_compiles(tmp_path):
    """A field named like a generated member must not clash with it (a field 'slot_codecs' gave
    CS0102 against the private method SlotCodecs()): each name alone, as an Enum (its Label /
    Labels types) and as a NearlyZero vector of 5 (Vector, Threshold, StepC0 ...)."""
    probe = codegen.generate_csharp(qc.Schema("P", [
        ("e", qc.Enum(["a", "b"])), ("nz", qc.NearlyZero(qc.Vector(*[qc.Bounded(0, 1, 4)] * 5), 0.1)),
        ("v3", qc.Vector(qc.Bounded(0, 1, 4), qc.Bounded(0, 1, 4), qc.Bounded(0, 1, 4))),
        ("u", qc.UInt(64)), ("r", qc.Quat(9)), ("n", qc.UnitVector(8))]))
    members = _declared_members(probe)
    assert {"SchemaName", "CheckFingerprint", "AreCodesInRange", "ELabel", "NzVector", "NzThreshold",
            "qcCodecs", "qcSlotCodecs", "qcLoadSchema"} <= members, members
    names = list(dict.fromkeys(PROBE_NAMES + sorted(members) + sorted(_snake(m) for m in members)))
    names = [n for n in names if _a_field_name(n)]       # (the schema rules may refuse some: non-ASCII)
    assert len(names) > 180
    codecs = [qc.Enum(["a", "b"]), qc.NearlyZero(qc.Vector(*[qc.Bounded(0, 1, 4)] * 5), 0.1)]
    sources = []
    for i, name in enumerate(names):
        for j, codec in enumerate(codecs):
            schema = qc.Schema("S", [(name, codec)])
            text = codegen.generate_csharp(schema, f"Probe.N{i}", name=f"S{j}")
            path = tmp_path / f"n{i}_{j}.cs"
            path.write_text(text, encoding="utf-8")
            sources.append(path)
    # without mcs: at least no field member may be a name the generated code declares itself
    text = codegen.generate_csharp(qc.Schema("S", [("slot_codecs", qc.Bool())]))
    assert "public bool SlotCodecs;" in text and " SlotCodecs()" not in text
    _compile(tmp_path, *sources, what="the generated names checked, not the compile")


# namespaces whose last part is a type the generated code uses, or one of the runtime's own
SHADOWING_NAMESPACES = ["Foo.Vec3", "Foo.Schema", "Foo.Math", "Foo.System", "Foo.QuantCodec", "Math",
                        "QuantCodec", "Vec3", "Foo.ArgumentException", "Foo.FloatBits", "Foo.Quat4",
                        "Foo.Codec", "Foo.Snapshot", "System.Maths", "Foo.AllKinds"]


def test_namespaces_that_shadow_the_types_it_uses_compile(tmp_path):
    """Every type is named from global::, so --namespace Foo.Vec3 or Foo.Schema no longer hides
    the runtime's type (CS0118, CS0234)."""
    schema = qc.Schema.load(SCHEMAS["all_kinds"])
    nz = qc.Schema("Speed", [("speed", qc.NearlyZero(qc.Bounded(-1, 1, 8), 0.01)),     # Math.Abs
                             ("big", qc.NearlyZero(qc.UInt(64), 3.0))])                # FloatBits
    sources = []
    for i, ns in enumerate(SHADOWING_NAMESPACES):
        for j, s in enumerate((schema, nz)):
            text = codegen.generate_csharp(s, ns)
            assert "\nusing " not in text and "global::QuantCodec.Schema Schema" in text
            sources.append(tmp_path / f"ns{i}_{j}.cs")
            sources[-1].write_text(text)
    _compile(tmp_path, *sources, what="the namespaces accepted, not the compile")


@pytest.mark.parametrize("args, match", [
    (["--namespace", ""], "empty"), (["--namespace", "System.Math"], "System.Math it uses"),
    (["--namespace", "QuantCodec.Schema.Gen"], "QuantCodec.Schema it uses"),
    (["--namespace", "A..B"], "not a C# namespace"), (["--namespace", "My.global"], "keyword"),
    (["--namespace", "__arglist"], "keyword"), (["--name", "__arglist"], "keyword"),
    (["--name", "__makeref"], "keyword"), (["--name", "__reftype"], "keyword"), (["--name", "__refvalue"], "keyword"),
    (["--name", ""], "not a C# identifier"), (["--name", "qcCodecs"], "a name the generated code uses"),
    (["-o", ""], "empty file name"),
])
def test_codegen_refuses_bad_names_as_a_usage_error(args, match, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["codegen", str(SCHEMAS["pose"]), *args])
    assert e.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    assert re.search(rf"^quantcodec codegen: error: .*{match}", err, re.M), err


@pytest.mark.parametrize("target", ["/proc/qc-codegen-test.cs", "/dev/full"])
def test_codegen_write_errors_are_one_line(target, capsys):
    if not pathlib.Path(target).parent.exists() or (target == "/dev/full" and not pathlib.Path(target).exists()):
        pytest.skip(f"no {target} here")
    assert cli.main(["codegen", str(SCHEMAS["pose"]), "-o", target]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"quantcodec codegen: error: cannot write {target}") and err.count("\n") == 1


@pytest.mark.parametrize("kw, match", [
    ({"name": "my-struct"}, "not a C# identifier"), ({"name": "3D"}, "not a C# identifier"),
    ({"name": "class"}, "a C# keyword"), ({"name": "Vec3"}, "a name the generated code uses"),
    ({"namespace": "My.class"}, r"'class' is a C# keyword"), ({"namespace": ""}, "empty"),
    ({"namespace": "System.Math"}, "would be a namespace too"), ({"name": "__arglist"}, "a C# keyword"),
])
def test_a_struct_name_or_namespace_that_cannot_compile_is_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        codegen.generate_csharp(qc.Schema.load(SCHEMAS["pose"]), **kw)
