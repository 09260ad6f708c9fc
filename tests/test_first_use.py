"""What a new user trips on (issue 35): NaN under bad="raise", schema-file typos, type errors that
name nothing, the live view's edges, docs that drifted from the tool, the commands' details, and
the client-to-server input example. Each test fails on the code before the fix."""

import contextlib
import io
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

import quantcodec as qc
from quantcodec.tools.examples import player_state

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PACKAGE_PARENT = str(pathlib.Path(qc.__file__).resolve().parent.parent)

BODY = qc.Schema("Body", [("position", qc.Vector(*[qc.Bounded(-100, 100, 16)] * 3)),
                          ("rotation", qc.Quat(9)), ("health", qc.UInt(7))])


def _columns(n=4):
    return {"position": np.zeros((n, 3)), "rotation": np.tile([0.0, 0.0, 0.0, 1.0], (n, 1)),
            "health": np.full(n, 100)}


# --------------------------------------------------------------------------------------------
# item 2: a NaN in a float column under the default bad="raise"


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_snapshot_refuses_a_non_finite_value_naming_entity_field_and_component(value):
    schema = qc.Schema("Body", BODY.fields)
    cols = _columns()
    cols["position"][2, 1] = value
    with pytest.raises(qc.RangeError) as info:
        schema.snapshot([10, 20, 30, 40], cols)
    e = info.value
    assert e.id == 30 and e.row == 2
    assert str(e).startswith("snapshot: entity 30: field 'position'[1]: row 2: non-finite value"), str(e)
    assert schema.clamped["position"] == 0          # nothing counted: no snapshot was made


def test_snapshot_still_clamps_a_finite_value_out_of_range():
    schema = qc.Schema("Body", BODY.fields)
    cols = _columns()
    cols["position"][1, 0] = 250.0                  # past the edge of the map: a clamp, counted
    snap = schema.snapshot([10, 20, 30, 40], cols)
    assert snap.clamped["position"] == 1
    assert snap.columns["position"][1, 0] == 100.0


def test_snapshot_nan_in_a_nearly_zero_vector_and_float32_columns():
    schema = qc.Schema("S", [("velocity", qc.NearlyZero(qc.Vector(*[qc.PowerCurve(32, 2, 10)] * 3), 0.01))])
    v = np.zeros((3, 3), np.float32)
    v[1, 2] = np.nan
    with pytest.raises(qc.RangeError, match=r"entity 7: field 'velocity'\[2\]: row 1: non-finite value nan"):
        schema.snapshot([5, 7, 9], {"velocity": v})
    snap = schema.snapshot([5, 7, 9], {"velocity": v}, bad="drop")      # the other modes as before
    assert snap.dropped.tolist() == [7]


def test_roundtrip_keeps_the_codec_rule_and_strict_refuses():
    # schema.roundtrip has no bad=: it is the codecs' rule (NaN to code 0, counted as a clamp),
    # as docs/hostile-input.md says; a strict schema refuses it
    schema = qc.Schema("S", [("x", qc.Bounded(-1, 1, 8))])
    assert schema.roundtrip({"x": float("nan")})["x"] == -1.0
    assert schema.clamped["x"] == 1
    strict = qc.Schema("S", [("x", qc.Bounded(-1, 1, 8))], strict=True)
    with pytest.raises(qc.RangeError, match="'x'"):
        strict.roundtrip({"x": float("nan")})
    text = (DOCS / "hostile-input.md").read_text(encoding="utf-8")
    assert "**Which is which.**" in text and "`schema.roundtrip`" in text


def test_report_still_takes_a_trace_with_a_nan(tmp_path, capsys):
    # the report quantizes as the codecs do: a NaN in a recording is substituted and counted,
    # not a traceback from schema.snapshot's bad="raise"
    from quantcodec.cli import main
    schema = qc.Schema("S", [("position", qc.Vector(*[qc.Bounded(-10, 10, 12)] * 3))])
    (tmp_path / "s.json").write_text(schema.to_json())
    pos = np.random.default_rng(0).uniform(-5, 5, (20, 4, 3))
    pos[3, 1, 0] = np.nan
    np.savez(tmp_path / "t.npz", position=pos)
    assert main(["report", str(tmp_path / "s.json"), str(tmp_path / "t.npz"), "--json", "--no-progress"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["fields"][0]["clamped"] == 1


# --------------------------------------------------------------------------------------------
# item 3: schema-file typos


def _spec(position_1=None, rotation=None):
    p1 = {"kind": "Bounded", "min": -64, "max": 192, "bits": 14} if position_1 is None else position_1
    return {"name": "P", "fields": [
        {"name": "position", "codec": {"kind": "Vector", "codecs": [
            {"kind": "Bounded", "min": -2048, "max": 2048, "bits": 18}, p1,
            {"kind": "Bounded", "min": -2048, "max": 2048, "bits": 18}]}},
        {"name": "rotation", "codec": rotation or {"kind": "Quat", "bits": 9}}]}


def _schema_error(spec):
    with pytest.raises(qc.SchemaError) as info:
        qc.Schema.from_spec(spec)
    text = str(info.value)
    for internal in ("__init__", "positional", "bad parameters", "takes exactly", "keyword argument"):
        assert internal not in text, text
    return text


def test_a_missing_key_is_named_with_the_field_and_component():
    text = _schema_error(_spec(position_1={"kind": "Bounded", "min": -64, "bits": 14}))
    assert text.startswith("field 'position[1]': Bounded spec: missing key 'max'"), text


def test_an_unknown_key_says_what_it_resembles():
    text = _schema_error(_spec(rotation={"kind": "Quat", "bit": 9}))
    assert text.startswith("field 'rotation': Quat spec: unknown key 'bit' (did you mean 'bits'?)"), text
    text = _schema_error(_spec(position_1={"kind": "Bounded", "min": -64, "max": 192, "bits": 14, "mod": "bins"}))
    assert "field 'position[1]'" in text and "unknown key 'mod' (did you mean 'mode'?)" in text


def test_a_min_max_error_names_the_component():
    text = _schema_error(_spec(position_1={"kind": "Bounded", "min": 192, "max": -64, "bits": 14}))
    assert text.startswith("field 'position[1]': Bounded: min must be less than max"), text


def test_a_typo_in_a_toml_file(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text('name = "P"\n[[fields]]\nname = "rotation"\ncodec = { kind = "Quat", bit = 9 }\n')
    with pytest.raises(qc.SchemaError) as info:
        qc.Schema.load(path)
    assert str(info.value) == (f"{path}: field 'rotation': Quat spec: unknown key 'bit' (did you mean 'bits'?); "
                               f"Quat takes optionally bits, mode")


def test_every_kind_rebuilds_from_its_spec_with_the_checked_keys():
    for codec in (qc.Bounded(0, 1, 8, mode="midpoint"), qc.Fixed(0.5, 8, signed=False, offset=1.0),
                  qc.Angle(12, signed=True, unit="deg"), qc.PowerCurve(8, 2, 10), qc.Half(), qc.UInt(5),
                  qc.Int(5), qc.Bool(), qc.Enum(["a", "b"]), qc.Enum(5), qc.Quat(11, mode="bins"),
                  qc.UnitVector(10), qc.Grid(8.0, 6, 8), qc.IntRange(-3, 9),
                  qc.NearlyZero(qc.Vector(qc.Bounded(-1, 1, 8), qc.PowerCurve(8, 2, 10)), 0.01)):
        assert qc.codec_from_spec(codec.spec()) == codec
    with pytest.raises(qc.SchemaError, match="exactly one of the keys 'labels' and 'count'"):
        qc.codec_from_spec({"kind": "Enum", "labels": ["a"], "count": 1})


# --------------------------------------------------------------------------------------------
# item 4: type errors that name something


def test_decode_of_a_list_of_datagrams_says_one_at_a_time():
    enc = qc.SnapshotEncoder(BODY)
    dec = qc.SnapshotDecoder.from_hello(BODY, enc.hello())
    datagrams = enc.encode_datagrams(0, BODY.snapshot([1, 2], _columns(2)))
    with pytest.raises(TypeError) as info:
        dec.decode(datagrams)
    assert "SnapshotDecoder.decode" in str(info.value) and "one datagram at a time" in str(info.value)
    assert "memoryview" not in str(info.value)
    with pytest.raises(TypeError, match="one datagram at a time"):
        qc.SnapshotDecoder(BODY).decode(datagrams)
    with pytest.raises(TypeError, match="from_hello.*one datagram at a time"):
        qc.SnapshotDecoder.from_hello(BODY, [enc.hello()])
    assert dec.decode(datagrams[0]) is not None


@pytest.mark.parametrize("codec", [qc.UInt(8), qc.Int(8), qc.IntRange(-5, 200), qc.Enum(3)])
def test_true_is_not_an_integer(codec):
    for value in (True, np.bool_(False)):
        with pytest.raises(TypeError, match="bool"):
            codec.quantize(value)
        with pytest.raises(TypeError, match="bool"):
            codec.roundtrip(value)
    with pytest.raises(TypeError, match="bool"):
        codec.quantize(np.array([True, False]))
    schema = qc.Schema("S", [("health", codec)])
    with pytest.raises(TypeError, match="bool"):
        schema.encode({"health": True})
    with pytest.raises(TypeError, match="bool"):
        schema.quantize((True,))
    with pytest.raises(TypeError, match="bool"):
        schema.encode_many({"health": np.array([True, False])})
    with pytest.raises(TypeError, match="bool"):
        schema.snapshot([1, 2], {"health": np.array([True, False])})


def test_bool_still_takes_bools():
    schema = qc.Schema("S", [("grounded", qc.Bool())])
    assert schema.decode(schema.encode({"grounded": True})) == {"grounded": True}
    assert qc.Bool().quantize(np.bool_(True)) == 1
    assert schema.snapshot([1, 2], {"grounded": np.array([True, False])}).codes["grounded"].tolist() == [1, 0]


@pytest.mark.parametrize("bad", ["raise", "drop"])
def test_snapshot_row_count_mismatch_is_a_schema_error(bad):
    with pytest.raises(qc.SchemaError, match="3 ids but 2 rows"):
        BODY.snapshot([1, 2, 3], _columns(2), bad=bad)
    codes = BODY.snapshot([1, 2], _columns(2)).codes
    with pytest.raises(qc.SchemaError, match="3 ids but 2 rows"):
        qc.Snapshot.from_codes(BODY, [1, 2, 3], codes)


def test_nearly_zero_threshold_above_the_whole_range():
    for inner, t in ((qc.Bounded(0, 1, 8), 5), (qc.Bounded(-2, 1, 8), 2.0), (qc.PowerCurve(4, 2, 8), 4.0),
                     (qc.Vector(qc.Bounded(-1, 1, 8), qc.Bounded(0, 0.5, 8)), 1.0), (qc.UInt(3), 7),
                     (qc.Fixed(0.25, 4), 2.0)):
        with pytest.raises(qc.SchemaError, match="covers the whole range"):
            qc.NearlyZero(inner, t)
    for inner, t in ((qc.Bounded(0, 1, 8), 0.99), (qc.Vector(qc.Bounded(-1, 1, 8), qc.Bounded(0, 2, 8)), 1.0),
                     (qc.Angle(8), 100.0), (qc.Half(), 1e9)):
        qc.NearlyZero(inner, t)                     # (Angle and Half: no simple bound, left alone)
    with pytest.raises(qc.SchemaError, match="field 'v': NearlyZero: threshold 5.0 covers"):
        qc.Schema.from_spec({"name": "S", "fields": [{"name": "v", "codec": {
            "kind": "NearlyZero", "threshold": 5, "inner": {"kind": "Bounded", "min": 0, "max": 1, "bits": 8}}}]})


# --------------------------------------------------------------------------------------------
# item 5: the live view's edges


def _liveview():
    pytest.importorskip("websockets", reason="the live view needs websockets: pip install 'quantcodec[serve]'")
    from quantcodec.tools import liveview
    return liveview


def test_live_view_port_taken_fails_before_printing_the_url():
    liveview = _liveview()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        printed = []
        with pytest.raises(liveview.ServeError, match=f"cannot serve on 127.0.0.1:{port}"):
            liveview.serve("127.0.0.1", port, out=printed.append, n_entities=10)
        assert printed == []


def test_live_view_ctrl_c_prints_one_line():
    _liveview()
    # (faulthandler on: a run that does not stop is made to print its threads' stacks below)
    env = dict(os.environ, PYTHONPATH=PACKAGE_PARENT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONUNBUFFERED="1", PYTHONFAULTHANDLER="1")
    proc = subprocess.Popen([sys.executable, "-m", "quantcodec", "demo", "--serve", "--port", "0", "-n", "20"],
                            cwd=tempfile.gettempdir(), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        first = proc.stdout.readline()
        assert first.startswith("quantcodec live view on http://127.0.0.1:"), first
        time.sleep(0.5)                              # a few ticks
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            out, err = proc.communicate(timeout=30)
            pytest.fail(f"the live view did not stop within 30 s of Ctrl-C; its stacks:\n{err}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, (out, err)
    assert out.strip() == "quantcodec live view: stopped" and err == "", (out, err)


def test_live_view_page_says_warming_up_until_the_first_delta():
    # the page the installed package serves (a wheel has no quantcodec/ beside tests/)
    page = (pathlib.Path(qc.__file__).parent / "web" / "view.mjs").read_text(encoding="utf-8")
    assert "'warming up'" in page
    assert "history.length = 0" in page and "msg.baseline" in page     # the window starts at the first delta


def test_live_view_tests_skip_without_websockets(tmp_path):
    # a process where `import websockets` fails: the live view's tests skip, none fails
    (tmp_path / "sitecustomize.py").write_text("import sys\nsys.modules['websockets'] = None\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path) + os.pathsep + PACKAGE_PARENT + os.pathsep
               + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(ROOT / "tests" / "test_liveview.py"),
                           str(ROOT / "tests" / "test_cli.py") + "::test_demo_serve_refuses_a_remote_host",
                           str(ROOT / "tests" / "test_cli.py") + "::test_demo_serve_refuses_the_plain_demos_options"],
                          # (not from the checkout's root: `python -m` puts the working directory
                          # first on sys.path, where an unbuilt source tree would shadow the
                          # installed package, as a fresh clone's `pip install .` run showed)
                          cwd=tempfile.gettempdir(), env=env, capture_output=True, text=True, timeout=300)
    tail = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "failed" not in tail and "error" not in tail and "skipped" in tail, tail


# --------------------------------------------------------------------------------------------
# item 6: docs that drifted


def _block_after(text, marker, fence="```"):
    start = text.index(marker)
    open_ = text.index(fence, start)
    body = text.index("\n", open_) + 1
    return text[body:text.index("\n```", body)]


def test_schema_format_describe_table_is_what_describe_prints():
    text = (DOCS / "schema-format.md").read_text(encoding="utf-8")
    table = _block_after(text, "## Sizes and errors at a glance")
    assert table.strip() == player_state().describe().strip()


def test_schema_format_json_and_toml_are_the_example_schema():
    text = (DOCS / "schema-format.md").read_text(encoding="utf-8")
    assert qc.Schema.from_json(_block_after(text, "### JSON", "```json")) == player_state()
    try:
        import tomllib
    except ImportError:
        tomllib = pytest.importorskip("tomli")
    spec = tomllib.loads(_block_after(text, "### TOML", "```toml"))
    assert qc.Schema.from_spec(spec) == player_state()


def test_no_doc_cites_the_spec_or_seed_documents():
    for path in sorted(DOCS.glob("*.md")) + [ROOT / "README.md"]:
        text = path.read_text(encoding="utf-8")
        for pattern in (r"SPEC\b", r"seed document", r"\bseed 00\d"):
            found = re.search(pattern, text)
            assert found is None, f"{path.name} cites {found.group(0)!r}: {text[max(0, found.start() - 60):found.end() + 20]!r}"


def test_zarr_page_does_not_import_the_tools():
    text = (DOCS / "zarr-and-dask.md").read_text(encoding="utf-8")
    assert "quantcodec.tools" not in text


def test_asyncio_page_blocks_carry_their_imports_and_the_dask_install():
    text = (DOCS / "asyncio-and-multiprocessing.md").read_text(encoding="utf-8")
    block = _block_after(text, "## Compressing recorded telemetry with multiprocessing", "```python")
    namespace = {"__name__": "not_main"}             # the definitions run; the pool does not
    exec(compile(block, "multiprocessing block", "exec"), namespace)
    assert isinstance(namespace["replay"], qc.Schema)
    dask_part = text[text.index("## Dask"):]
    assert 'pip install "dask[array]"' in dask_part[:dask_part.index("```python")]
    assert "import numpy as np" in text[text.index("import dask.array as da"):][:200]


def test_the_asyncio_server_runs_as_written():
    """docs/asyncio-and-multiprocessing.md's game server: the session over real UDP sockets on
    localhost (it showed the encoders and a hand-made ack, the layer beneath, before)."""
    text = (DOCS / "asyncio-and-multiprocessing.md").read_text(encoding="utf-8")
    block = _block_after(text, "## An asyncio game server", "```python")
    assert "qc.StreamServer" in block and "qc.StreamClient" in block
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "asyncio block", "exec"), {"__name__": "__main__"})
    assert re.fullmatch(r"\d+ bytes received for 30 ticks of 200 bodies \(168000 as raw float32\)\n", out.getvalue())


def test_schema_format_lists_every_mode():
    text = (DOCS / "schema-format.md").read_text(encoding="utf-8")
    for kind in ("Bounded", "Quat"):
        row = next(line for line in text.splitlines() if line.startswith(f"| `{kind}` |"))
        assert '"midpoint"' in row and '"bins"' in row, row


def test_docstrings_say_datagram_and_document_the_core_attributes():
    assert "datagram" in qc.SnapshotEncoder.encode.__doc__.split(".")[0]
    doc = qc.Snapshot.__doc__
    for name in ("``n``", "``ncol``", "``kw``"):
        assert name in doc, name


def test_demo_progress_bar_counts_each_tick_once(monkeypatch):
    tqdm = pytest.importorskip("tqdm", reason="tqdm is the optional extra quantcodec[tools]")
    from quantcodec.tools import demo
    bars = []

    class Bar:
        def __init__(self, total=None, **kw):
            self.total, self.n, self.peak = total, 0, []
            bars.append(self)

        def update(self, k=1):
            self.n += k
            self.peak.append((self.n, self.total))

        def reset(self, total=None):
            self.n = 0
            self.total = total if total is not None else self.total

        def set_description(self, *a, **k):
            pass

        def close(self):
            pass

    monkeypatch.setattr(tqdm, "tqdm", Bar)
    demo.run(n_entities=6, seconds=0.5, hz=20, progress=True)
    (bar,) = bars
    assert bar.peak and all(n <= total == 10 for n, total in bar.peak), bar.peak[-3:]
    assert bar.peak[-1] == (10, 10)


def test_demo_without_tqdm_prints_plain_progress(monkeypatch):
    # tqdm is optional (quantcodec[tools]): without it the same bar is plain lines on a terminal
    import io
    from quantcodec.tools import demo

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setitem(sys.modules, "tqdm", None)          # `from tqdm import tqdm` fails
    for progress in (True, False):
        err = Terminal()
        monkeypatch.setattr(sys, "stderr", err)
        demo.run(n_entities=6, seconds=0.5, hz=20, progress=progress)
        lines = err.getvalue().splitlines()
        if not progress:
            assert lines == []
            continue
        sim = [ln for ln in lines if ln.startswith("simulating: ")]
        streaming = [ln for ln in lines if ln.startswith("streaming: ")]
        assert sim + streaming == lines, lines
        assert sim[-1] == "simulating: 100% (10/10 ticks)" and streaming[-1] == "streaming: 100% (10/10 ticks)"
        assert sim[0] == "simulating: 10% (1/10 ticks)"


# --------------------------------------------------------------------------------------------
# item 7: the commands' details


def _main(*args):
    from quantcodec.cli import main
    try:
        return main([str(a) for a in args])
    except SystemExit as e:
        return e.code


def test_codegen_defaults_to_csharp(tmp_path, capsys):
    path = tmp_path / "p.json"
    path.write_text(player_state().to_json())
    assert _main("codegen", path) == 0
    out = capsys.readouterr().out
    assert "namespace QuantCodec.Generated" in out and "struct" in out


@pytest.mark.parametrize("command", ["decode-stream", "conformance", "codegen"])
def test_help_has_examples(command, capsys):
    assert _main(command, "--help") == 0
    out = capsys.readouterr().out
    assert "examples:" in out and f"quantcodec {command} " in out.split("examples:")[1]
    assert "SPEC" not in out


def test_report_on_a_toml_file_says_it_is_not_a_trace(tmp_path, capsys):
    schema = tmp_path / "p.toml"
    schema.write_text(player_state().to_toml())
    assert _main("report", schema, schema, "--no-progress") == 1
    err = capsys.readouterr().err
    assert "not a NumPy .npz trace" in err and "the schema comes first" in err
    assert "unsafe" not in err and "pickle" not in err, err


def test_zarr_edge_chunk_error_names_the_padding_and_the_fix():
    pytest.importorskip("numcodecs", reason="numcodecs is not installed: pip install 'quantcodec[zarr]'")
    from quantcodec.numcodecs import QuantCodec
    chunk = np.tile(np.float32([0, 0, 0, 1]), (80, 1))
    chunk[70:] = 0.0                                  # Zarr's fill value in an edge chunk
    with pytest.raises(qc.RangeError) as info:
        QuantCodec(qc.Quat(9)).encode(chunk)
    text = str(info.value)
    assert "row 70" in text and "pads the last chunk" in text and "zero_rows='identity'" in text
    assert "'value'" not in text
    QuantCodec(qc.Quat(9), zero_rows="identity").encode(chunk)


# --------------------------------------------------------------------------------------------
# item 9: client-to-server input in the JavaScript client


def test_input_page_js_encodes_the_bytes_python_decodes(tmp_path):
    node = shutil.which("node")
    module = ROOT / "clients" / "js" / "quantcodec.mjs"
    if node is None or not module.is_file():
        pytest.skip("needs node and clients/js")
    text = (DOCS / "input.md").read_text(encoding="utf-8")
    namespace = {"__name__": "__main__", "qc": qc}
    block = _block_after(text, "## The input schema", "```python")
    exec(compile(block, "input.md", "exec"), namespace)
    schema = namespace["INPUT"]
    js = _block_after(text, "## In the JavaScript client", "```js")
    js = js.replace("from './quantcodec.mjs'", f"from {json.dumps(module.as_uri())}")
    js = js.replace("Schema.fromJSON(inputSchemaJson)", f"Schema.fromJSON({json.dumps(schema.to_json())})")
    js = js.replace("socket.send(", "process.stdout.write(Buffer.from(").replace("'rifle'));", "'rifle')).toString('hex'));")
    script = tmp_path / "input.mjs"
    script.write_text(js + "\nprocess.stdout.write(' ' + input.fingerprint);\n")
    proc = subprocess.run([node, str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    hexed, fingerprint = proc.stdout.split()
    assert fingerprint == schema.fingerprint
    record = schema.decode(bytes.fromhex(hexed))
    assert record["tick"] == 1200 and record["weapon"] == "rifle" and record["buttons"] == 3
    python = schema.encode({"tick": 1200, "move": (0.25, -0.5), "yaw": 271.5, "pitch": -12.0, "buttons": 3,
                            "weapon": "rifle"})
    assert bytes.fromhex(hexed) == python
