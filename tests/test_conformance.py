"""The conformance kit (conformance/, docs/wire-format.md section 16): it is what the package
generates, byte for byte; the reference runner and a decoder written from the doc alone give its
expected output; and every client under clients/ gives it too, line for line. A client that fell
behind the format fails here."""

import filecmp
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import pytest

import quantcodec as qc
from quantcodec import cli, conformance
from helpers import ref_slots
from refdecoder import ReferenceStream, Refused

ROOT = pathlib.Path(__file__).resolve().parent.parent
KIT = ROOT / "conformance"
MANIFEST = json.loads((KIT / "manifest.json").read_text())
STREAMS = [s["name"] for s in MANIFEST["streams"]]

# language -> (the toolchain commands its runner needs, the Debian packages .ci/run installs)
CLIENTS = {
    "js": (["node"], "nodejs"),
    "csharp": (["mcs", "mono"], "mono-mcs mono-runtime"),
    "c": (["cc"], "gcc"),
}


def _stream(name):
    return next(s for s in MANIFEST["streams"] if s["name"] == name)


def test_the_committed_kit_is_what_the_package_generates(tmp_path):
    """Regenerated from this package, every file is byte-identical: a change to the wire, the
    codecs or the scenarios must come with a regenerated kit (and so with the clients)."""
    conformance.make(tmp_path)
    made = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    kept = sorted(p.relative_to(KIT).as_posix() for p in KIT.rglob("*") if p.is_file() and p.name != "README.md")
    assert made == kept
    differ = [f for f in made if not filecmp.cmp(tmp_path / f, KIT / f, shallow=False)]
    assert not differ, f"regenerate with `quantcodec conformance make conformance`: {differ}"


def test_the_kit_reaches_every_outcome():
    outcomes = set()
    for s in MANIFEST["streams"]:
        outcomes |= set(s["outcomes"])
    # every refusal a client makes ("stale" is the server's, for replies), replies made, and
    # replies made by the runner's idle calls (keep-alives while nothing arrives)
    assert outcomes == {"snapshot", "pending", "reply", "idle-reply", *qc.DecodeError.KINDS} - {"stale"}


@pytest.mark.parametrize("name", STREAMS)
def test_reference_runner_gives_the_expected_lines(name, capsys):
    s = _stream(name)
    assert cli.main(["decode-stream", *s.get("args", []), str(KIT / s["schema"]),
                     str(KIT / s["datagrams"])]) == 0
    assert capsys.readouterr().out == (KIT / s["expected"]).read_text()


def _options(args):
    """A manifest stream's runner options as keywords (key, max_bytes, nonce)."""
    out = {}
    for flag, value in zip(args[::2], args[1::2]):
        if flag == "--key":
            out["key"] = bytes.fromhex(value)
        elif flag == "--max-bytes":
            out["max_bytes"] = int(value)
        elif flag == "--replies":
            out["nonce"] = int(value)
        elif flag == "--idle":
            out["idle"] = int(value)
        else:
            raise AssertionError(f"unknown runner option {flag}")
    return out


def test_the_kit_readme_says_what_each_stream_reaches():
    """conformance/README.md's table has a row for every stream of the manifest (two were
    missing from it for a session after they joined the kit)."""
    text = (KIT / "README.md").read_text()
    rows = {line.split("|")[1].strip() for line in text.splitlines() if line.startswith("| `")}
    named = {n.strip("` ") for row in rows for n in row.split(",")}
    missing = sorted({s["name"].removesuffix(".replies") for s in MANIFEST["streams"]} - named)
    assert not missing, f"conformance/README.md has no row for {missing}"


def test_the_kit_pins_replies_keys_and_limits():
    """Every stream has a replies run; a keyed stream and a limits stream are there."""
    names = {s["name"] for s in MANIFEST["streams"]}
    plain = [s["name"] for s in MANIFEST["streams"] if "args" not in s]
    assert all(f"{n}.replies" in names for n in plain)
    flags = {a for s in MANIFEST["streams"] for a in s.get("args", [])[::2]}
    assert flags == {"--key", "--max-bytes", "--replies", "--idle"}
    assert any(s["outcomes"].get("limits") for s in MANIFEST["streams"])



def _reference_lines(schema, datagrams, hits, *, idle=0, **options):
    ref = ReferenceStream(ref_slots(schema), schema.fingerprint, **options)
    ref.hits = hits
    signed = conformance.signed_slots(schema)
    lines = []
    for d in datagrams:
        try:
            got = ref.decode(d)
        except Refused as e:
            line = {"error": e.kind}
        else:
            if got is None:
                line = {"pending": True}
            else:
                seq, ids, rows = got
                rows = [[v - (1 << 64) if s and v >= 1 << 63 else v for v, s in zip(r, signed)]
                        for r in rows]
                line = {"seq": seq, "ids": ids, "codes": rows}
        if "nonce" in options:
            r = ref.reply()
            line["reply"] = None if r is None else r.hex()
            if idle:
                line["idle"] = [None if r is None else r.hex() for r in (ref.reply() for _ in range(idle))]
        lines.append(line)
    return lines


BRANCHES = [
    # sections 11-14
    "datagram:whole", "datagram:fragment", "datagram:hello", "hello:first", "hello:again",
    "hello:older", "hello:newer-stream", "hello:schema", "hello:refused", "fragment:pending",
    "fragment:duplicate",
    "fragment:complete", "fragment:inconsistent", "refused:no-hello", "refused:check",
    "refused:baseline", "refused:malformed",
    # sections 4-7
    "packet:full", "packet:delta", "packet:pred:whole-ratio", "packet:pred:equal", "packet:wrap",
    "set:mode0", "set:mode1", "set:mode2", "set:mode3", "entities:removed", "entities:new",
    "entities:new:id-gaps", "eg:escape", "ref:extrapolated", "flag:0", "flag:1", "flag:implied",
    "abs:code", "abs:1bit-flip", "quat:same-index", "quat:remapped", "quat:absolute",
    "ord:difference", "smag:difference", "uvec:difference",
]


# what each stream is made to reach (conformance/README.md), counted by the instrumented run
PER_STREAM = {
    "pose_clean": ["hello:first", "packet:full", "packet:wrap", "packet:pred:equal", "quat:remapped",
                   "quat:absolute", "entities:removed", "entities:new:id-gaps", "flag:implied"],
    "pose_lossy": ["hello:again", "refused:no-hello", "packet:pred:whole-ratio", "packet:pred:rounded"],
    "all_kinds_pred": ["ref:extrapolated", "uvec:difference", "smag:difference", "eg:escape"],
    "all_kinds_nopred": ["uvec:difference", "smag:difference", "set:mode3"],
    "fragments": ["fragment:pending", "fragment:complete", "fragment:duplicate"],
    "hostile": ["refused:no-hello", "refused:check", "refused:baseline", "refused:malformed",
                "hello:older", "hello:schema", "hello:refused", "fragment:inconsistent"],
    "restart": ["hello:newer-stream", "refused:check"],
    "one_bit": ["abs:1bit-flip", "set:mode1", "set:mode2"],
    # section 18's keep-alives (counted only where replies are made; the kit calls reply() after
    # each datagram, and before a hello every datagram makes a hello request due: acks only,
    # unless the runner's idle calls follow each datagram's reply)
    "keepalive.replies": ["reply:keepalive-ack"],
    "keepalive_idle.replies": ["reply:keepalive-request", "reply:keepalive-ack"],
}


def test_a_decoder_written_from_the_doc_reads_the_kit_and_every_branch_is_reached():
    """tests/refdecoder.py, written from docs/wire-format.md alone, gives the expected output
    of every stream (it has no validity tables: where the library refuses a sealed packet as
    malformed for an invalid code, it may decode it) and reaches every branch of the page."""
    from collections import Counter
    total = Counter()
    per_stream = {}
    for s in MANIFEST["streams"]:
        schema = qc.Schema.load(KIT / s["schema"])
        datagrams = conformance.read_datagrams(KIT / s["datagrams"])
        hits = Counter()
        got = _reference_lines(schema, datagrams, hits, **_options(s.get("args", [])))
        want = [json.loads(line) for line in (KIT / s["expected"]).read_text().splitlines()]
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            if w.get("error") == "malformed" and "error" not in g:
                if "reply" in w:
                    break       # (its view would change the replies that follow)
                continue
            assert g == w, (s["name"], i)
        per_stream[s["name"]] = hits
        total += hits
    missing = [b for b in BRANCHES if not total[b]]
    assert not missing, missing
    for name, branches in PER_STREAM.items():
        lacking = [b for b in branches if not per_stream[name][b]]
        assert not lacking, (name, lacking)


def _runner(lang):
    return ROOT / "clients" / lang / "qc-decode"


def _toolchain(lang):
    tools, packages = CLIENTS[lang]
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"clients/{lang}: {', '.join(missing)} not on PATH (Debian: {packages}; "
                    f".ci/run installs them)")


@pytest.mark.parametrize("lang", sorted(CLIENTS))
def test_every_client_folder_has_its_runner_tests_and_readme(lang):
    folder = ROOT / "clients" / lang
    for name in ("qc-decode", "run-tests"):
        assert (folder / name).is_file(), f"clients/{lang}/{name} is missing"
        assert os.access(folder / name, os.X_OK), f"clients/{lang}/{name} is not executable"
    assert (folder / "README.md").is_file()


@pytest.mark.parametrize("lang", sorted(CLIENTS))
@pytest.mark.parametrize("name", STREAMS)
def test_client_runner_matches_the_reference(lang, name):
    """clients/<lang>/qc-decode prints, line for line, what the reference runner prints."""
    _toolchain(lang)
    s = _stream(name)
    proc = subprocess.run([str(_runner(lang)), *s.get("args", []), str(KIT / s["schema"]),
                           str(KIT / s["datagrams"])],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = proc.stdout.splitlines()
    want = (KIT / s["expected"]).read_text().splitlines()
    assert len(got) == len(want), f"clients/{lang}: {len(got)} lines for {len(want)} datagrams"
    bad = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
    assert not bad, (f"clients/{lang} differs from the reference on {len(bad)} of {len(want)} "
                     f"datagrams of {name}; first at datagram {bad[0]}:\n got  {got[bad[0]][:300]}\n "
                     f"want {want[bad[0]][:300]}")


# The runner's options (conformance/README.md): the same values taken and refused everywhere. A
# value each runner must refuse as a usage error (exit 2, nothing on stdout), before it reads a file.
BAD_OPTIONS = [
    ["--max-bytes", "0"], ["--max-bytes", "-1"], ["--max-bytes", "x"], ["--max-bytes", "+5"],
    ["--max-bytes", " 5"], ["--max-bytes", "1_0"], ["--max-bytes", ""], ["--max-bytes=0"],
    ["--replies", "-1"], ["--replies", "4294967296"], ["--replies", "+1"], ["--replies", "0x10"],
    ["--replies", "1", "--idle", "1001"], ["--replies", "1", "--idle", "+5"],
    ["--replies", "1", "--idle", "-0"], ["--idle", "3"], ["--idle=0"],
    ["--key", "zz"], ["--key", ""], ["--key", "abc"], ["--key", "ab" * 256],
    ["--nope", "1"], ["--max-bytes"],
]


def _run_runner(lang, args):
    env = None
    if lang == "python":
        # the package under test, from outside the source tree (whose quantcodec/ is not built
        # in a clean clone)
        cmd = [sys.executable, "-m", "quantcodec", "decode-stream"]
        env = dict(os.environ)
        env["PYTHONPATH"] = str(pathlib.Path(qc.__file__).resolve().parent.parent) + os.pathsep \
            + env.get("PYTHONPATH", "")
    else:
        _toolchain(lang)
        cmd = [str(_runner(lang))]
    return subprocess.run(cmd + [str(a) for a in args], capture_output=True, text=True, timeout=300,
                          cwd=tempfile.gettempdir(), env=env)


@pytest.mark.parametrize("lang", ["python", *sorted(CLIENTS)])
def test_every_runner_refuses_the_same_option_values(lang):
    """Each bad option value (BAD_OPTIONS) is a usage error in every runner: exit 2, nothing on
    stdout, a message on stderr and no traceback."""
    s = _stream("limits.replies")
    wrong = []
    for option in BAD_OPTIONS:
        proc = _run_runner(lang, [*option, KIT / s["schema"], KIT / s["datagrams"]])
        if proc.returncode != 2 or proc.stdout or not proc.stderr.strip() or "Traceback" in proc.stderr \
                or "Unhandled Exception" in proc.stderr:
            wrong.append(f"{option}: exit {proc.returncode}, stdout {proc.stdout[:60]!r}, "
                         f"stderr {proc.stderr.strip()[-200:]!r}")
    assert not wrong, f"{lang}: {len(wrong)} of {len(BAD_OPTIONS)} bad options not refused as usage errors:\n" \
        + "\n".join(wrong)


@pytest.mark.parametrize("lang", ["python", *sorted(CLIENTS)])
@pytest.mark.parametrize("name", ["limits.replies", "keyed.replies", "keepalive_idle.replies"])
def test_every_runner_takes_an_option_and_its_value_joined_by_equals(lang, name):
    """``--opt=VALUE`` is ``--opt VALUE`` (as argparse, getopt_long and node's parseArgs read it)."""
    s = _stream(name)
    args = [str(a) for a in s["args"]]
    joined = [f"{a}={b}" for a, b in zip(args[::2], args[1::2])]
    proc = _run_runner(lang, [*joined, KIT / s["schema"], KIT / s["datagrams"]])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == (KIT / s["expected"]).read_text()


# -- schema documents: one reading everywhere (docs/schema-format.md) ---------------------------

SCHEMA_CASES = json.loads((KIT / MANIFEST["schema_cases"]).read_text())["cases"]
# what the rules say of each case, written from docs/schema-format.md (not from the package)
SCHEMA_CASES_REFUSED = {
    "two_boms", "utf16le_bom", "utf16be", "invalid_byte_ff", "overlong_nul", "truncated_sequence",
    "encoded_surrogate", "nul_in_schema_name", "nul_in_label", "escaped_nul_in_name",
    "version_past_max", "version_401_digits", "version_negative", "version_float",
    "nz_bounded_at_reach", "nz_bounded_past_reach", "nz_bounded_negative_reach", "nz_powercurve",
    "nz_fixed_signed_at", "nz_fixed_unsigned_at", "nz_fixed_product_at", "nz_uint", "nz_int",
    "nz_bool", "nz_intrange", "nz_vector", "nz_negative", "duplicate_key", "trailing_comma",
    "comment", "nan_literal", *(f"field_name_refused_{i}" for i in range(15)),
    *(f"lone_surrogate_{i}" for i in range(8)),
    *(f"kind_{k}" for k in ("constructor", "toString", "proto", "hasOwnProperty", "valueOf", "bounded")),
}


def test_the_schema_cases_are_what_the_rules_say():
    names = [c["name"] for c in SCHEMA_CASES]
    assert len(names) == len(set(names)) and SCHEMA_CASES_REFUSED <= set(names)
    for c in SCHEMA_CASES:
        assert c["ok"] == (c["name"] not in SCHEMA_CASES_REFUSED), c["name"]
        data = bytes.fromhex(c["hex"])
        if c["ok"]:
            assert qc.Schema.from_json(data).fingerprint == c["fingerprint"]
        else:
            with pytest.raises(qc.SchemaError):
                qc.Schema.from_json(data)
    fp = {c["name"]: c["fingerprint"] for c in SCHEMA_CASES}
    # -0.0 is 0.0, however written; a version -0 is 0; a BOM changes nothing
    assert len({fp[f"negative_zero_{i}"] for i in range(6)}) == 1
    assert fp["version_minus_zero"] == fp["version_zero"] and fp["utf8_bom"] == fp["plain"]
    # an escaped surrogate pair is the character it encodes, as the same text in UTF-8 is
    pair = json.loads(bytes.fromhex(next(c["hex"] for c in SCHEMA_CASES if c["name"] == "escaped_pair_in_name_and_label")))
    assert pair["name"] == "p\U0001f600q" and pair["fields"][0]["codec"]["labels"] == ["\U0001f600", "\U0001f601"]
    assert fp["escaped_pair_in_name_and_label"] == qc.Schema(
        "p\U0001f600q", [("e", qc.Enum(["\U0001f600", "\U0001f601"]))]).fingerprint


@pytest.mark.parametrize("lang", sorted(CLIENTS))
def test_client_reads_every_schema_case_as_python(lang, tmp_path):
    """clients/<lang>/qc-decode given each kit schema document: refused where Python refuses it
    (a non-zero exit), and where Python reads it, the same fingerprint (it takes the hello of
    Python's stream, which it refuses, kind schema, on a fingerprint of its own)."""
    _toolchain(lang)
    doc, datagrams = tmp_path / "case.json", tmp_path / "hello.bin"
    wrong = []
    for case in SCHEMA_CASES:
        data = bytes.fromhex(case["hex"])
        doc.write_bytes(data)
        hellos = [qc.SnapshotEncoder(qc.Schema.from_json(data), stream_id=1).hello()] if case["ok"] else []
        conformance.write_datagrams(datagrams, hellos)
        proc = subprocess.run([str(_runner(lang)), str(doc), str(datagrams)],
                              capture_output=True, text=True, timeout=300)
        if case["ok"] and (proc.returncode != 0 or proc.stdout != '{"pending":true}\n'):
            wrong.append(f"{case['name']}: Python reads it (fingerprint {case['fingerprint']}), "
                         f"clients/{lang} gave exit {proc.returncode}, {proc.stdout.strip()[:80]!r} "
                         f"{proc.stderr.strip()[-160:]!r}")
        elif not case["ok"] and proc.returncode == 0:
            wrong.append(f"{case['name']}: Python refuses it, clients/{lang} read it")
    assert not wrong, f"{len(wrong)} of {len(SCHEMA_CASES)} schema cases read otherwise:\n" + "\n".join(wrong)
