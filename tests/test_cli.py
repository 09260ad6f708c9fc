"""The `quantcodec` command, run as a user runs it (`python -m quantcodec ...` in a subprocess),
and the Python examples of the docs, run as they are written."""

import json
import math
import os
import pathlib
import re
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import quantcodec as qc

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
# the subprocess imports the same quantcodec as this test process (installed or built in place)
PACKAGE_PARENT = str(pathlib.Path(qc.__file__).resolve().parent.parent)


def run_cli(*args, timeout=120):
    env = dict(os.environ)
    env["PYTHONPATH"] = PACKAGE_PARENT + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("COLUMNS", None)
    # not from the checkout's root: `python -m` puts the working directory first on sys.path, and
    # there an unbuilt source tree would shadow the installed package
    return subprocess.run([sys.executable, "-m", "quantcodec", *map(str, args)], cwd=tempfile.gettempdir(),
                          env=env, capture_output=True, text=True, timeout=timeout)


class Result:
    """What a run of the command left: exit status, stdout, stderr (like CompletedProcess)."""

    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture()
def cli(capsys):
    """The command in this process (`quantcodec.cli.main(argv)`): the same code as the
    subprocess runs, without an interpreter start per call. For the many error paths."""
    from quantcodec.cli import main

    def call(*args):
        capsys.readouterr()
        try:
            status = main([str(a) for a in args])
        except SystemExit as e:         # argparse: --help, --version, usage errors
            status = e.code
        out, err = capsys.readouterr()
        return Result(status, out, err)
    return call


def assert_user_error(proc, *needles, status=1):
    """A user mistake: the given status, nothing on stdout, one clean message on stderr."""
    assert proc.returncode == status, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in proc.stderr, (needle, proc.stderr)
    if status == 1:
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("quantcodec "), proc.stderr


PLAYER_SPEC = {
    "name": "PlayerState",
    "version": 3,
    "fields": [
        {"name": "position", "codec": {"kind": "Vector", "codecs": [
            {"kind": "Bounded", "min": -64.0, "max": 64.0, "bits": 16},
            {"kind": "Bounded", "min": 0.0, "max": 32.0, "bits": 14},
            {"kind": "Bounded", "min": -64.0, "max": 64.0, "bits": 16}]}},
        {"name": "rotation", "codec": {"kind": "Quat", "bits": 9}},
        {"name": "velocity", "codec": {"kind": "NearlyZero", "threshold": 0.01, "inner": {"kind": "Vector", "codecs": [
            {"kind": "PowerCurve", "max": 32.0, "pow": 2.0, "bits": 10}] * 3}}},
        {"name": "yaw", "codec": {"kind": "Angle", "bits": 12, "unit": "deg"}},
        {"name": "health", "codec": {"kind": "UInt", "bits": 8}},
        {"name": "state", "codec": {"kind": "Enum", "labels": ["idle", "walk", "run"]}},
    ],
}

PLAYER_TOML = """\
name = "PlayerState"
version = 3

[[fields]]
name = "position"
codec = { kind = "Vector", codecs = [
    { kind = "Bounded", min = -64.0, max = 64.0, bits = 16 },
    { kind = "Bounded", min = 0.0, max = 32.0, bits = 14 },
    { kind = "Bounded", min = -64.0, max = 64.0, bits = 16 },
] }

[[fields]]
name = "rotation"
codec = { kind = "Quat", bits = 9 }

[[fields]]
name = "velocity"
[fields.codec]
kind = "NearlyZero"
threshold = 0.01
inner = { kind = "Vector", codecs = [
    { kind = "PowerCurve", max = 32.0, pow = 2.0, bits = 10 },
    { kind = "PowerCurve", max = 32.0, pow = 2.0, bits = 10 },
    { kind = "PowerCurve", max = 32.0, pow = 2.0, bits = 10 },
] }

[[fields]]
name = "yaw"
codec = { kind = "Angle", bits = 12, unit = "deg" }

[[fields]]
name = "health"
codec = { kind = "UInt", bits = 8 }

[[fields]]
name = "state"
codec = { kind = "Enum", labels = ["idle", "walk", "run"] }
"""


@pytest.fixture()
def schema_files(tmp_path):
    js = tmp_path / "player.json"
    js.write_text(json.dumps(PLAYER_SPEC))
    toml = tmp_path / "player.toml"
    toml.write_text(PLAYER_TOML)
    return js, toml


def make_trace(ticks=40, n=12, seed=3):
    """Columns for PLAYER_SPEC: some entities move, some rest; a few values out of range."""
    rng = np.random.default_rng(seed)
    moving = np.arange(n) % 3 == 0
    step = rng.normal(0, 0.05, (ticks, n, 3)) * moving[None, :, None]
    position = np.cumsum(step, axis=0) + rng.uniform([-30, 1, -30], [30, 20, 30], (1, n, 3))
    q = rng.normal(size=(ticks, n, 4))
    q[:, ~moving] = q[0, ~moving]
    rotation = q / np.linalg.norm(q, axis=-1, keepdims=True)
    velocity = np.where(moving[None, :, None], rng.normal(0, 3, (ticks, n, 3)), 0.0)
    yaw = rng.uniform(0, 360, (ticks, n))
    health = np.full((ticks, n), 100, dtype=np.uint8)
    state = np.where(moving, 2, 0)[None, :].repeat(ticks, axis=0).astype(np.uint8)
    return {"position": position, "rotation": rotation, "velocity": velocity, "yaw": yaw,
            "health": health, "state": state}


# --------------------------------------------------------------------------------------------
# the command itself


def test_version():
    proc = run_cli("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"quantcodec {qc.__version__}"


@pytest.mark.parametrize("command", ["demo", "describe", "report", "bench"])
def test_every_subcommand_has_help_with_examples(cli, command):
    proc = cli(command, "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"usage: quantcodec {command}")
    assert "examples:" in proc.stdout
    assert f"quantcodec {command}" in proc.stdout.split("examples:")[1]


def test_top_level_help_lists_the_commands():
    proc = run_cli("--help")        # in a subprocess: the help a user sees
    assert proc.returncode == 0
    for command in ("demo", "describe", "report", "bench"):
        assert command in proc.stdout


def test_no_command_is_a_usage_error():
    proc = run_cli()
    assert proc.returncode == 2
    assert proc.stdout == "" and "usage: quantcodec" in proc.stderr


def test_unknown_command_is_a_usage_error(cli):
    assert_user_error(cli("compress"), "invalid choice", status=2)


# --------------------------------------------------------------------------------------------
# describe


def test_describe_json_and_toml_print_schema_describe(schema_files):
    js, toml = schema_files
    expected = qc.Schema.from_spec(PLAYER_SPEC).describe() + "\n"
    for path in (js, toml):
        proc = run_cli("describe", path)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == expected
        assert proc.stderr == ""


def test_describe_missing_file(tmp_path):
    assert_user_error(run_cli("describe", tmp_path / "nope.json"), "not found", "nope.json")


def test_describe_directory(cli, tmp_path):
    assert_user_error(cli("describe", tmp_path), "directory")


def test_conformance_make_where_it_cannot_write(cli, tmp_path):
    (tmp_path / "a-file").write_text("x")
    assert_user_error(cli("conformance", "make", tmp_path / "a-file"), "not a directory")
    # a parent that is a file: mkdir fails inside; one line, no traceback
    assert_user_error(cli("conformance", "make", tmp_path / "a-file" / "kit"),
                      "cannot write the kit to", "a-file")


def test_conformance_make_refuses_an_empty_directory(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)         # (it wrote the whole kit into the working directory)
    assert_user_error(cli("conformance", "make", ""), "DIR", "empty", status=2)
    assert list(tmp_path.iterdir()) == []


POSE = ROOT / "conformance" / "schemas" / "pose.json"


@pytest.mark.parametrize("option, needle", [
    (["--key", ""], "1 to 255 bytes, got 0"), (["--key", "ab" * 256], "1 to 255 bytes, got 256"),
    (["--key", "zz"], "not hex"), (["--max-bytes", "0"], "--max-bytes"), (["--max-bytes", "-1"], "--max-bytes"),
    (["--max-bytes", "99999999999999999999999999"], "--max-bytes"), (["--replies", "-1"], "--replies"),
    (["--replies", str(2**32)], "--replies"), (["--replies", "x"], "--replies"),
    (["--replies", "1", "--idle", "-1"], "--idle"), (["--replies", "1", "--idle", "1001"], "--idle"),
    (["--idle", "3"], "give --replies NONCE too"), (["--idle", "0"], "give --replies NONCE too"),
])
def test_decode_stream_bad_option_values_are_usage_errors(cli, tmp_path, option, needle):
    """Exit status 2, as for report and demo (they were 1, or a traceback: ValueError from the
    key check, OverflowError for a --max-bytes beyond a C ssize_t)."""
    data = tmp_path / "d.bin"
    data.write_bytes(b"")
    assert_user_error(cli("decode-stream", *option, POSE, data), needle, status=2)


def _run_cli_to(stdout, *args):
    env = dict(os.environ)
    env["PYTHONPATH"] = PACKAGE_PARENT + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.Popen([sys.executable, "-m", "quantcodec", *map(str, args)], cwd=tempfile.gettempdir(),
                            env=env, stdout=stdout, stderr=subprocess.PIPE, text=True)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("args", [["describe", POSE], ["decode-stream", POSE, None], ["conformance", "make", None]])
def test_a_full_output_is_one_line_not_a_traceback(tmp_path, args):
    """`describe > /dev/full` was an OSError traceback (from print, or the final flush)."""
    data = tmp_path / "many.bin"
    data.write_bytes((b"\x03\x00\x00\x00abc") * 5000)
    args = [a if a is not None else (data if args[0] == "decode-stream" else tmp_path / "kit") for a in args]
    with open("/dev/full", "w") as full:
        proc = _run_cli_to(full, *args)
        err = proc.communicate(timeout=120)[1]
    assert proc.returncode == 1, err
    assert err.count("\n") == 1 and err.startswith(f"quantcodec {args[0]}: error: cannot write the output: "), err


def test_a_reader_that_leaves_ends_the_output_quietly(tmp_path):
    data = tmp_path / "many.bin"
    data.write_bytes((b"\x03\x00\x00\x00abc") * 200_000)
    proc = _run_cli_to(subprocess.PIPE, "decode-stream", POSE, data)
    proc.stdout.readline()
    proc.stdout.close()                 # like `| head -1`
    err = proc.stderr.read()
    proc.stderr.close()
    proc.wait(timeout=120)
    assert err == "" and proc.returncode == 1


@pytest.mark.parametrize("error, needle", [
    (ValueError("a value no check caught"), "a value no check caught"),
    (OverflowError("too large"), "too large"), (MemoryError(), "not enough memory"),
    (FileNotFoundError(2, "No such file or directory", "/proc/x"), "No such file or directory (/proc/x)"),
])
def test_an_unforeseen_error_of_a_command_is_still_one_line(cli, monkeypatch, error, needle):
    from quantcodec import cli as cli_module

    def boom(args):
        raise error
    monkeypatch.setattr(cli_module, "_cmd_describe", boom)
    assert_user_error(cli("describe", POSE), needle)


def test_describe_malformed_json(cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "X", "fields": [')
    assert_user_error(cli("describe", bad), "bad.json", "JSON")


def test_describe_malformed_toml(cli, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "X"\nfields = [\n')
    assert_user_error(cli("describe", bad), "bad.toml", "TOML")


def test_describe_bad_codec_parameter_names_it(cli, tmp_path):
    bad = tmp_path / "bad.json"
    spec = json.loads(json.dumps(PLAYER_SPEC))
    spec["fields"][1]["codec"]["bits"] = 99
    bad.write_text(json.dumps(spec))
    assert_user_error(cli("describe", bad), "bad.json", "rotation", "bits", "99")


def test_describe_wrong_structure(cli, tmp_path):
    bad = tmp_path / "list.json"
    bad.write_text("[1, 2, 3]")
    assert_user_error(cli("describe", bad), "list.json")


# --------------------------------------------------------------------------------------------
# report


def save_trace(path, columns, **extra):
    np.savez(path, **columns, **extra)
    return path


def report_json(*args, runner=run_cli):
    proc = runner("report", *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_report_text(schema_files, tmp_path):
    js, _ = schema_files
    trace = save_trace(tmp_path / "t.npz", make_trace(), ids=np.arange(12, dtype=np.uint32) + 500)
    proc = run_cli("report", js, trace)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for name in ("position", "rotation", "velocity", "yaw", "health", "state", "shared", "total"):
        assert re.search(rf"^{name}\s", out, flags=re.M), name
    assert "40 ticks x 12 entities at 60 Hz" in out
    assert "costliest in delta snapshots:" in out
    assert "Traceback" not in proc.stderr


def test_report_json_accounting(schema_files, tmp_path):
    js, _ = schema_files
    cols = make_trace()
    cols["position"][5, 2, 0] = 100.0           # out of range: clamped
    cols["position"][7, 4, 1] = -3.0            # below 0: clamped
    cols["velocity"][9, 0, 2] = 50.0            # beyond the curve's max: clamped
    trace = save_trace(tmp_path / "t.npz", cols, hz=np.float64(30.0))
    r = report_json(js, trace, "--ack-delay", "100")
    schema = qc.Schema.from_spec(PLAYER_SPEC)
    fields = {f["name"]: f for f in r["fields"]}
    assert list(fields) == list(schema.names)
    assert r["hz"] == 30.0 and r["lag_ticks"] == 3 and r["delta_ticks"] == 37
    assert r["trace"]["ticks"] == 40 and r["trace"]["entities"] == 12 and r["trace"]["ids"] is False

    # full bits: fixed widths, and NearlyZero's one bit for the values sent as zero
    assert fields["position"]["full_bits"] == 46
    assert fields["rotation"]["full_bits"] == 29
    assert fields["yaw"]["full_bits"] == 12 and fields["health"]["full_bits"] == 8 and fields["state"]["full_bits"] == 2
    moving_share = np.mean(np.any(np.abs(cols["velocity"]) > 0.01, axis=-1))
    assert math.isclose(fields["velocity"]["full_bits"], 1 + 30 * moving_share)

    # clamps as the schema counts them
    assert fields["position"]["clamped"] == 2 and fields["velocity"]["clamped"] == 1
    assert all(fields[n]["clamped"] == 0 for n in ("rotation", "yaw", "health", "state"))

    # worst errors: the clamped position shows (36 m off), the others stay within their bounds
    pos = schema["position"].roundtrip(cols["position"].reshape(-1, 3))
    assert fields["position"]["worst_error"] == pytest.approx(np.abs(pos - cols["position"].reshape(-1, 3)).max())
    assert fields["position"]["worst_error"] == pytest.approx(36.0)
    assert fields["rotation"]["unit"] == "deg"
    assert 0 < fields["rotation"]["worst_error"] <= schema["rotation"].max_error
    assert 0 < fields["yaw"]["worst_error"] <= schema["yaw"].max_error * (1 + 1e-9)
    assert fields["health"]["exact"] and fields["health"]["worst_error"] == 0.0

    # fields that never change cost nothing in delta snapshots and never count as changed
    for name in ("health", "state"):
        assert fields[name]["delta_bits"] == 0.0 and fields[name]["changed"] == 0.0
    # yaw is random every tick: every entity changes it
    assert fields["yaw"]["changed"] == 1.0 and fields["yaw"]["delta_bits"] > 0
    # the parts add up to the whole: the fields and the shared line to the packets' bits, and
    # with the framing (padding, checks, fragment headers) to the datagrams'
    delta, full = r["delta"], r["full"]
    for part, bits in ((delta, "delta_bits"), (full, "full_bits")):
        assert math.isclose(sum(f[bits] for f in r["fields"]) + part["shared_bits_per_entity"],
                            part["packet_bits_per_entity"])
        assert math.isclose(part["packet_bits_per_entity"] + part["framing_bits_per_entity"], part["bits_per_entity"])
        assert part["framing_bits_per_entity"] * 12 >= 32        # at least the check, every packet
    assert full["shared_bits_per_entity"] >= 0 and delta["bits_per_entity"] < full["bits_per_entity"]
    assert math.isclose(full["kbit_per_s"], full["bytes_per_packet"] * 8 * 30.0 / 1000)
    assert r["raw"]["bytes_per_entity"] == 4 * (3 + 4 + 3 + 1 + 1 + 1)


@pytest.mark.parametrize("n", [12, 700])
def test_report_counts_the_datagrams_the_encoder_sends(cli, schema_files, tmp_path, n):
    """Bytes a packet are the datagrams' (padding, the 4-byte check and, at 700 entities, the
    fragments' headers included), as the encoder returns them: the report said 10.6 bytes for
    a packet of 15, where the demo counts the check."""
    js, _ = schema_files
    cols = make_trace(ticks=8, n=n)
    trace = save_trace(tmp_path / "t.npz", cols)
    r = report_json(js, trace, "--ack-delay", "0", "--no-progress", runner=cli)
    schema = qc.Schema.from_spec(PLAYER_SPEC)
    ids = np.arange(n, dtype=np.uint64)

    def sent(acked):
        enc = qc.SnapshotEncoder(schema)
        sizes = []
        for t in range(8):
            if acked and t > 0:
                enc.ack(t - 1)
            snap = qc.Snapshot.from_codes(schema, ids, schema.quantize_many({k: v[t] for k, v in cols.items()}))
            sizes.append(sum(len(d) for d in enc.encode_datagrams(t, snap)))
        return sizes
    full, delta = sent(False), sent(True)
    if n == 700:
        assert min(full) > 1200                     # fragmented
    assert r["full"]["bytes_per_packet"] == pytest.approx(np.mean(full))
    assert r["delta"]["bytes_per_packet"] == pytest.approx(np.mean(delta[1:]))
    assert r["full"]["bytes_per_entity"] == pytest.approx(np.mean(full) / n)
    assert r["full"]["kbit_per_s"] == pytest.approx(np.mean(full) * 8 * 60 / 1000)


def test_report_matches_entities_by_id_not_row(cli, schema_files, tmp_path):
    """Shuffling the rows of every tick (ids shuffled with them) changes nothing."""
    js, _ = schema_files
    cols = make_trace(ticks=20, n=9)
    ids = np.arange(9, dtype=np.uint64) + 70
    plain = save_trace(tmp_path / "plain.npz", cols, ids=ids)
    rng = np.random.default_rng(0)
    perm = np.stack([rng.permutation(9) for _ in range(20)])
    shuffled = {k: np.take_along_axis(v, perm.reshape(perm.shape + (1,) * (v.ndim - 2)), axis=1)
                for k, v in cols.items()}
    mixed = save_trace(tmp_path / "mixed.npz", shuffled, ids=ids[perm])
    a = report_json(js, plain, runner=cli)
    b = report_json(js, mixed, runner=cli)
    for fa, fb in zip(a["fields"], b["fields"]):
        assert fa["changed"] == fb["changed"] and fa["full_bits"] == fb["full_bits"], fa["name"]
        assert fa["worst_error"] == fb["worst_error"]
    assert a["full"] == b["full"]


def test_report_enum_labels_and_toml(cli, schema_files, tmp_path):
    _, toml = schema_files
    cols = make_trace(ticks=10, n=4)
    cols["state"] = np.array(["idle", "walk", "run"])[cols["state"]]
    r = report_json(toml, save_trace(tmp_path / "t.npz", cols), runner=cli)
    assert {f["name"]: f for f in r["fields"]}["state"]["full_bits"] == 2


def test_report_ignores_extra_arrays(cli, schema_files, tmp_path):
    js, _ = schema_files
    trace = save_trace(tmp_path / "t.npz", make_trace(ticks=8, n=3), score=np.zeros((8, 3)))
    r = report_json(js, trace, runner=cli)
    assert r["trace"]["ignored_arrays"] == ["score"]


def test_report_ack_delay_sets_the_baseline_age(cli, schema_files, tmp_path):
    js, _ = schema_files
    trace = save_trace(tmp_path / "t.npz", make_trace(ticks=30, n=6))
    assert report_json(js, trace, "--ack-delay", "0", runner=cli)["lag_ticks"] == 1
    assert report_json(js, trace, "--ack-delay", "250", "--hz", "20", runner=cli)["lag_ticks"] == 5


def test_report_missing_trace(schema_files, tmp_path):
    js, _ = schema_files
    assert_user_error(run_cli("report", js, tmp_path / "none.npz"), "not found", "none.npz")


def test_report_missing_schema(cli, tmp_path):
    trace = save_trace(tmp_path / "t.npz", make_trace(ticks=3, n=2))
    assert_user_error(cli("report", tmp_path / "none.json", trace), "not found", "none.json")


def test_report_trace_not_an_npz(cli, schema_files, tmp_path):
    js, _ = schema_files
    bad = tmp_path / "t.npz"
    bad.write_text("position,rotation\n1,2\n")
    assert_user_error(cli("report", js, bad), "t.npz", ".npz")


def test_report_trace_is_an_npy(cli, schema_files, tmp_path):
    js, _ = schema_files
    np.save(tmp_path / "t.npy", np.zeros((3, 2, 3)))
    assert_user_error(cli("report", js, tmp_path / "t.npy"), ".npy")


def test_report_trace_missing_field(cli, schema_files, tmp_path):
    js, _ = schema_files
    cols = make_trace(ticks=3, n=2)
    del cols["rotation"]
    assert_user_error(cli("report", js, save_trace(tmp_path / "t.npz", cols)), "rotation", "PlayerState")


def test_report_trace_wrong_shape(cli, schema_files, tmp_path):
    js, _ = schema_files
    cols = make_trace(ticks=3, n=2)
    cols["rotation"] = cols["rotation"][..., :3]
    assert_user_error(cli("report", js, save_trace(tmp_path / "t.npz", cols)), "rotation", "(3, 2, 3)", "(ticks, entities, 4)")


def test_report_trace_inconsistent_ticks(cli, schema_files, tmp_path):
    js, _ = schema_files
    cols = make_trace(ticks=3, n=2)
    cols["yaw"] = cols["yaw"][:2]
    assert_user_error(cli("report", js, save_trace(tmp_path / "t.npz", cols)), "yaw", "2 ticks")


def test_report_trace_duplicate_ids(cli, schema_files, tmp_path):
    js, _ = schema_files
    trace = save_trace(tmp_path / "t.npz", make_trace(ticks=3, n=3), ids=np.array([4, 5, 4]))
    assert_user_error(cli("report", js, trace), "ids", "unique", "id 4")


def test_report_trace_bad_ids_shape(cli, schema_files, tmp_path):
    js, _ = schema_files
    trace = save_trace(tmp_path / "t.npz", make_trace(ticks=3, n=3), ids=np.arange(4))
    assert_user_error(cli("report", js, trace), "ids", "(4,)")


def test_report_trace_zero_quaternion_names_the_tick(cli, schema_files, tmp_path):
    js, _ = schema_files
    cols = make_trace(ticks=5, n=3)
    cols["rotation"][2, 1] = 0.0
    assert_user_error(cli("report", js, save_trace(tmp_path / "t.npz", cols)), "tick 2", "row 1")


def test_report_trace_value_an_exact_codec_cannot_hold(cli, schema_files, tmp_path):
    js, _ = schema_files
    cols = make_trace(ticks=5, n=3)
    cols["health"] = cols["health"].astype(np.int64)
    cols["health"][4, 0] = 300
    assert_user_error(cli("report", js, save_trace(tmp_path / "t.npz", cols)), "tick 4", "300")


def test_report_trace_bad_enum_label(cli, schema_files, tmp_path):
    js, _ = schema_files
    cols = make_trace(ticks=2, n=2)
    cols["state"] = np.array([["idle", "fly"], ["idle", "run"]])
    assert_user_error(cli("report", js, save_trace(tmp_path / "t.npz", cols)), "state", "holds label 'fly', not one of")


def test_report_trace_object_arrays_refused(cli, schema_files, tmp_path):
    js, _ = schema_files
    cols = make_trace(ticks=2, n=2)
    cols["yaw"] = np.array([["a", "b"], ["c", "d"]])
    assert_user_error(cli("report", js, save_trace(tmp_path / "t.npz", cols)), "yaw", "dtype")


@pytest.mark.parametrize("option", [["--hz", "0"], ["--hz", "nan"], ["--ack-delay", "-5"], ["--ack-delay", "x"],
                                    ["--hz", "1e308"], ["--hz", "1e-300"]])
def test_report_bad_options(cli, schema_files, tmp_path, option):
    js, _ = schema_files
    trace = save_trace(tmp_path / "t.npz", make_trace(ticks=3, n=2))
    assert_user_error(cli("report", js, trace, *option), option[0], status=2)


# --------------------------------------------------------------------------------------------
# demo


DEMO_SMALL = ("--entities", "24", "--seconds", "1.5", "--hz", "30", "--loss", "0.1", "--ack-delay", "100", "--seed", "4")


@pytest.fixture(scope="module")
def demo_json():
    proc = run_cli("demo", *DEMO_SMALL, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc


def test_demo_json_is_all_of_stdout(demo_json):
    r, proc = demo_json
    assert proc.stdout.lstrip().startswith("{") and proc.stdout.rstrip().endswith("}")
    assert "Traceback" not in proc.stderr


def test_demo_json_content(demo_json):
    r, _ = demo_json
    assert r["scene"]["entities"] == 24 and r["scene"]["hz"] == 30 and r["scene"]["ticks"] == 45
    assert r["scene"]["seconds"] == 1.5 and r["scene"]["seed"] == 4
    assert r["link"]["loss"] == 0.1 and r["link"]["ack_delay_ms"] == 100.0 and r["link"]["ack_delay_ticks"] == 3
    streams = r["streams"]
    assert list(streams) == ["raw", "quantized", "delta"]
    for name, s in streams.items():
        for key in ("bytes_per_entity", "kbit_per_s", "changed_share", "worst_position_error_m",
                    "worst_rotation_error_deg"):
            assert isinstance(s[key], (int, float)) and s[key] >= 0, (name, key)
        assert math.isclose(s["kbit_per_s"], s["bytes_per_entity"] * 8 * 24 * 30 / 1000, rel_tol=1e-9)
    raw, full, delta = streams["raw"], streams["quantized"], streams["delta"]
    assert raw["worst_position_error_m"] == 0.0 and raw["worst_rotation_error_deg"] == 0.0
    for s in streams.values():
        assert 0 < s["changed_share"] <= 1.0
    # sub-step motion does not change codes: never more changed codes than changed floats
    assert full["changed_share"] <= raw["changed_share"]
    assert raw["bytes_per_entity"] == 40.0          # position 3, rotation 4, velocity 3 float32s
    assert delta["bytes_per_entity"] < full["bytes_per_entity"] < raw["bytes_per_entity"]
    # quantization errors stay within the scene schema's bounds
    fields = dict(qc_fields())
    pos_bound = max(fields["position"].max_error)
    assert 0 < full["worst_position_error_m"] <= pos_bound * (1 + 1e-9)
    assert 0 < full["worst_rotation_error_deg"] <= fields["rotation"].max_error
    assert delta["worst_position_error_m"] <= pos_bound * (1 + 1e-9)
    assert delta["worst_rotation_error_deg"] <= fields["rotation"].max_error


def qc_fields():
    from quantcodec.tools import demo
    return demo.scene_schema().fields


def test_demo_is_deterministic(cli, demo_json):
    r, _ = demo_json
    proc = cli("demo", *DEMO_SMALL, "--json", "--no-progress")      # another process, same numbers
    again = json.loads(proc.stdout)
    assert again["streams"] == r["streams"]


def test_demo_text(demo_json):
    r, _ = demo_json
    proc = run_cli("demo", *DEMO_SMALL, "--no-progress")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for word in ("raw", "quantized", "delta", "bytes/entity", "kbit/s", "changed", "position", "rotation"):
        assert word in out, word
    delta_line = next(line for line in out.splitlines() if line.startswith("delta"))
    assert f"{r['streams']['delta']['kbit_per_s']:.1f}" in delta_line
    # no progress bar when stderr is not a terminal
    assert proc.stderr == ""


@pytest.mark.parametrize("option", [
    ["--entities", "0"], ["--entities", "many"], ["--seconds", "-1"], ["--seconds", "inf"], ["--hz", "0"],
    ["--loss", "1"], ["--loss", "-0.1"], ["--loss", "150%"], ["--ack-delay", "-1"], ["--seed", "-3"],
    ["--entities", "99999999999"], ["--entities", "10001"],
])
def test_demo_bad_options(cli, option):
    assert_user_error(cli("demo", *option), option[0], status=2)


def test_demo_bad_option_in_a_subprocess():
    assert_user_error(run_cli("demo", "--loss", "1.5"), "--loss", "[0, 1)", status=2)


def test_demo_loss_as_percentage(cli):
    proc = cli("demo", "--entities", "6", "--seconds", "0.5", "--loss", "20%", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["link"]["loss"] == 0.2


def test_demo_plot(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "demo.png"
    proc = run_cli("demo", "--entities", "10", "--seconds", "1", "--plot", out, "--no-progress")
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert str(out) in proc.stdout


def test_demo_plot_unwritable(cli, tmp_path):
    pytest.importorskip("matplotlib")
    proc = cli("demo", "--entities", "4", "--seconds", "0.5", "--plot", tmp_path / "no" / "such" / "dir.png")
    assert_user_error(proc, "dir.png")


# --------------------------------------------------------------------------------------------
# bench


@pytest.mark.slow
def test_bench_quick():
    proc = run_cli("bench", "--quick", timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"quantcodec {qc.__version__} core microbenchmarks")
    for operation in ("Bounded.quantize, 1M float32 -> uint32", "pack, 1M 20-bit codes", "Quat(9).quantize"):
        row = next(line for line in lines if line.startswith(operation))
        assert re.search(r"\d+\.\d\dx", row), row            # a speedup against its baseline
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_bench_json(cli):
    proc = cli("bench", "--quick", "--json")
    assert proc.returncode == 0
    r = json.loads(proc.stdout)
    assert r["environment"]["quantcodec"] == qc.__version__ and r["unit"] == "ns per value"
    for row in r["rows"]:
        assert row["ours_ns"] > 0
        if row["baseline_ns"] is not None and not row["paired"]:
            assert row["speedup"] == pytest.approx(row["baseline_ns"] / row["ours_ns"], rel=1e-6)
        elif row["baseline_ns"] is not None:
            assert row["speedup"] > 0       # the median of the pairs' ratios (test_bench_speedup_...)


# --------------------------------------------------------------------------------------------
# every Python example of the docs runs


DOC_FILES = sorted(DOCS.glob("*.md")) + [ROOT / "README.md"]
_BLOCK = re.compile(r"^```python\n(.*?)^```", flags=re.S | re.M)


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: p.name)
def test_doc_examples_run(path, tmp_path, monkeypatch, capsys):
    blocks = _BLOCK.findall(path.read_text(encoding="utf-8"))
    if not blocks:
        pytest.skip(f"{path.name} has no Python example")
    monkeypatch.chdir(tmp_path)
    # a page runs as one script, its blocks in order; each imports what it uses before the
    # page's later blocks may take it as given (a reader copies the first block whole)
    namespace = {"__name__": "__main__"}
    for i, block in enumerate(blocks):
        optional = re.findall(r"^\s*(?:import|from) (dask|zarr|numcodecs|quantcodec\.numcodecs|grpc_tools|google\.protobuf)\b", block, flags=re.M)
        if any(not _have(OPTIONAL.get(m, m)) for m in optional):
            continue                    # an example of an optional extra not installed; the others still run
        exec(compile(block, f"{path.name} (example {i + 1})", "exec"), namespace)


# the module an optional example needs, by what it imports (quantcodec[zarr]: numcodecs, Zarr,
# Dask; quantcodec[protobuf]: protobuf, grpcio-tools)
OPTIONAL = {"dask": "dask.array", "quantcodec.numcodecs": "numcodecs", "grpc_tools": "grpc_tools.protoc"}


def _have(module):
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def test_readme_first_screen_is_what_works_today():
    # issue 35, item 1: the first screen installs from source (no release is published), says
    # what that takes, runs the demo and the tests as .ci/run does, and shows the session API
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    first = "\n".join(text.splitlines()[:60])
    assert not re.search(r"^\s*pip install quantcodec\s*$", text, flags=re.M), "no release is published"
    assert "C compiler" in first and "minutes" in first and "No release is published yet" in first
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    test_command = next(line for line in run.splitlines() if 'pip install ".[test]"' in line).strip()
    assert test_command in first.splitlines(), "README's test command and .ci/run's differ"
    demo_command = "python -m venv .venv && . .venv/bin/activate && pip install . && quantcodec demo"
    assert demo_command in first.splitlines()
    for name in ("qc.StreamServer(schema)", "server.connect(", "server.send(tick, world)",
                 "server.receive(", "qc.StreamClient(schema)", "client.receive(datagram)", "client.reply()",
                 "quantcodec demo --serve", "(examples/)"):
        assert name in first, name


def test_docs_link_only_to_pages_that_exist():
    for path in sorted(DOCS.glob("*.md")) + [ROOT / "README.md"]:
        for target in re.findall(r"\]\(([^)#\s]+)\)", path.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            assert (path.parent / target).exists(), f"{path.name} links to missing {target}"


def test_the_figure_is_committed():
    png = DOCS / "figures" / "error-vs-bits.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "figures/error-vs-bits.png" in (DOCS / "choosing-bits.md").read_text()


def test_demo_serve_refuses_a_remote_host(cli, monkeypatch):
    # the host first, with or without websockets (the dependency is checked after it): here
    # without, whether or not this machine has it; a wrong command line, so status 2, in the
    # options' words (not the Python keyword allow_remote=True)
    monkeypatch.setitem(sys.modules, "websockets", None)
    proc = cli("demo", "--serve", "--host", "10.1.2.3")
    assert_user_error(proc, "quantcodec demo: error: --host 10.1.2.3: not a loopback address",
                      "--allow-remote", status=2)
    assert "allow_remote=True" not in proc.stderr and "usage: quantcodec demo" in proc.stderr
    assert_user_error(cli("demo", "--serve", "--host", "0.0.0.0"), "not a loopback address", status=2)
    assert_user_error(cli("demo", "--serve", "--host", ""), "--host", status=2)


def test_demo_serve_refuses_the_plain_demos_options(cli):
    # docs/index.md: 2 for a wrong command line (these were 1)
    assert_user_error(cli("demo", "--serve", "--json"), "--json and --plot go with the plain demo",
                      "usage: quantcodec demo", status=2)
    assert_user_error(cli("demo", "--serve", "--plot", "x.png"), "--json and --plot", status=2)
    assert_user_error(cli("demo", "--serve", "--port", "70000"), "--port", status=2)


def test_demo_serve_names_the_hz_limit(cli):
    proc = cli("demo", "--serve", "--hz", "1000")
    assert_user_error(proc, "--hz: the live view ticks at most 240 times a second, got 1000", status=2)
    assert "hz must be" not in proc.stderr
    assert "at most 240 with --serve" in " ".join(cli("demo", "--help").stdout.split())


def test_an_unknown_option_of_a_command_shows_that_command_s_usage(cli):
    proc = cli("demo", "--bogus")
    assert_user_error(proc, "usage: quantcodec demo", "quantcodec demo: error: unrecognized arguments: --bogus",
                      status=2)
    assert "COMMAND ..." not in proc.stderr
    assert_user_error(cli("describe", "a.json", "extra"), "usage: quantcodec describe",
                      "quantcodec describe: error: unrecognized arguments: extra", status=2)
    assert_user_error(cli("--bogus"), "usage: quantcodec [-h]", "unrecognized arguments: --bogus", status=2)


# --------------------------------------------------------------------------------------------
# issue 25, item 7: what the command says is what it does


def test_report_says_how_far_back_the_baseline_really_is(cli, schema_files, tmp_path):
    js, _ = schema_files
    trace = save_trace(tmp_path / "t.npz", make_trace(ticks=10, n=3))
    proc = cli("report", js, trace, "--ack-delay", "1", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("delta snapshots against"))
    assert "1 tick back (16.7 ms at 60 Hz)" in line, line
    assert "(1 ms) back" not in line and "tick(s)" not in line
    assert "--ack-delay 1 ms, rounded to a whole number of ticks" in line
    proc = cli("report", js, trace, "--ack-delay", "50", "--hz", "20", "--no-progress")
    line = next(x for x in proc.stdout.splitlines() if x.startswith("delta snapshots against"))
    assert "1 tick back (50 ms at 20 Hz), acked, no loss" in line and "rounded" not in line, line
    proc = cli("report", js, trace, "--ack-delay", "100", "--no-progress")
    line = next(x for x in proc.stdout.splitlines() if x.startswith("delta snapshots against"))
    assert "6 ticks back (100 ms at 60 Hz)" in line and "rounded" not in line, line


def test_bench_help_promises_only_what_it_runs(cli):
    proc = cli("bench", "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "about a minute" not in text and "about 10 s" not in text    # the run's length depends on the machine
    assert "schema and snapshot paths against" not in text              # it times codecs and bit packing
    assert "bench/bench_schema.py" in text and "median" in text


def test_bench_speedup_is_the_median_of_paired_ratios(monkeypatch):
    from quantcodec.tools import bench
    # a fake clock: each call of ours / the baseline advances it; the machine slows down 10x
    # between ours and the baseline in one pair, which a ratio of medians would take for speed
    now = [0.0]
    costs = {"ours": iter([1, 1, 1, 1, 3, 3]), "base": iter([3, 3, 3, 30, 30, 30])}
    monkeypatch.setattr(bench, "TIMER", lambda: now[0])

    def ours():
        now[0] += next(costs["ours"])

    def base():
        now[0] += next(costs["base"])

    t_ours, t_base, speedup = bench._pair(ours, base, 1, 5)     # (a warm-up call each, then 5 pairs)
    assert (t_ours, t_base) == (1, 30)
    assert speedup == 10            # pairs (1, 3), (1, 3), (1, 30), (3, 30), (3, 30): ratios 3, 3, 30, 10, 10
    assert t_base / t_ours == 30    # (what the ratio of the medians said)
    row = bench._row("op", t_ours, "base", t_base, 1, target=5.0, speedup=speedup)
    assert row["speedup"] == 10 and row["meets_target"] and row["paired"]


def test_angle_signature_and_positional_unit():
    assert qc.Angle.__doc__.startswith("Angle(bits, *, signed=False, unit='rad')")
    for cls, sig in ((qc.Bounded, "Bounded(min, max, bits, *, mode='endpoints')"),
                     (qc.Fixed, "Fixed(step, bits, *, signed=True, offset=0.0)"),
                     (qc.Quat, "Quat(bits=9, *, mode='endpoints')")):
        assert cls.__doc__.startswith(sig), cls.__doc__
    with pytest.raises(TypeError, match=r"unit and signed are keyword-only: Angle\(15, unit='deg'\)"):
        qc.Angle(15, "deg")
    with pytest.raises(TypeError, match="keyword-only"):
        qc.Angle(15, True, "deg")
    assert qc.Angle(15, unit="deg").unit == "deg"


def test_hostile_input_page_names_the_strided_buffer_error():
    import re as _re
    row = next(line for line in (DOCS / "hostile-input.md").read_text().splitlines()
               if line.startswith("| a non-contiguous buffer"))
    assert "TypeError" not in row and "ValueError" in row
    schema = qc.Schema("S", [("x", qc.UInt(8))])
    data = bytes(64)
    for call in (lambda b: schema.decode(b), lambda b: qc.BitReader(b), lambda b: qc.SnapshotDecoder(schema).decode(b)):
        for strided in (memoryview(data)[::2], np.zeros(64, np.uint8)[::2]):
            with pytest.raises(ValueError) as info:
                call(strided)
            assert not isinstance(info.value, TypeError)
            assert _re.search(r"contiguous", str(info.value))
