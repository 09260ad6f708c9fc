"""quantcodec codegen --lang csharp: the generated C# is pinned by golden files that the C#
client's own tests compile (without warnings) and run (clients/csharp/run-tests)."""

import json
import pathlib

import pytest

import quantcodec as qc
from quantcodec import cli, codegen

ROOT = pathlib.Path(__file__).resolve().parent.parent
GENERATED = ROOT / "clients" / "csharp" / "tests" / "generated"
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
        f"regenerate with quantcodec codegen --lang csharp: clients/csharp/tests/generated/{name}.cs")
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
