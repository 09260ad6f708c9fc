"""quantcodec codegen --lang csharp: the generated C# is pinned by golden files that the C#
client's own tests compile (without warnings) and run (clients/csharp/run-tests)."""

import json
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
    mcs = shutil.which("mcs")
    if mcs is None:
        pytest.skip("Mono's mcs is not installed: the renames checked, not the compile")
    runtime = subprocess.run(["sh", str(ROOT / "clients" / "csharp" / "runtime-sources")],
                             capture_output=True, text=True, check=True).stdout.split()
    (tmp_path / "Hostile.cs").write_text(text)
    r = subprocess.run([mcs, "-langversion:7", "-warnaserror", "-nologo", "-target:library",
                        "-r:System.Numerics.dll", f"-out:{tmp_path / 'h.dll'}", str(tmp_path / "Hostile.cs"),
                        *runtime], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("kw, match", [
    ({"name": "my-struct"}, "not a C# identifier"), ({"name": "3D"}, "not a C# identifier"),
    ({"name": "class"}, "a C# keyword"), ({"name": "Vec3"}, "a name the generated code uses"),
    ({"namespace": "My.class"}, r"'class' is a C# keyword"),
])
def test_a_struct_name_or_namespace_that_cannot_compile_is_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        codegen.generate_csharp(qc.Schema.load(SCHEMAS["pose"]), **kw)
