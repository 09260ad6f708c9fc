"""Decode time of the bench scene's 1000-entity delta packets: the C# client under Mono against
the Python library, in the same run (never a timed test; the numbers go in reports).

For three ticks of bench/bench_snapshot.py's scene (1000 bodies, 60 Hz, seed 0; the scene
schema), in a stream's steady state (every earlier tick sent and decoded, acks 6 ticks late, full
history, predict on): the packet of the tick as one whole datagram (max_datagram 65507: no
fragments, the 4-byte check included), decoded again and again by a client that holds the whole
history (as bench_snapshot times decode: a duplicate, decoded in full and compared with the held
snapshot). Python: ``SnapshotDecoder.decode(datagram)``, the whole call. C#:
``SnapshotDecoder.Receive(datagram)``, the whole call. Rounds alternate Python and C# (a fresh
Mono process each round); the figures are medians over the rounds.

    pip install .   # in the clone, once (or any environment where quantcodec is installed)
    python clients/csharp/Bench~/bench.py [--stream-only] [--compare-with main] [--rounds 5] [--repeats 5]
    python clients/csharp/Bench~/bench.py --instructions [--compare-with main]    # valgrind's counts

First the whole-stream figure: 1000 bodies, 600 ticks, fragments at 1200 bytes, decoded by a new
decoder each pass, Python and C# alternating rounds (ns per entity, datagrams/s, the ratio),
then the per-tick table above.
"""
import argparse
import json
import os
import pathlib
import resource
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import timeit

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent.parent

# The installed package (pip install . in a clean clone: the compiled core lives there, not in the
# source tree, whose quantcodec/ has no compiled module until it is built in place). Only when none
# is installed, the source tree's, built in place (python setup.py build_ext --inplace).
try:
    import quantcodec  # noqa: F401
    from quantcodec import SnapshotDecoder as _probe  # noqa: F401
except ImportError:
    sys.path.insert(0, str(ROOT))
    for m in [m for m in sys.modules if m == "quantcodec" or m.startswith("quantcodec.")]:
        del sys.modules[m]

import numpy as np  # noqa: E402
from quantcodec import SnapshotDecoder, SnapshotEncoder  # noqa: E402
from quantcodec.tools.scene import simulate  # noqa: E402
from quantcodec.tools.link import default_schema  # noqa: E402


def build():
    subprocess.run([str(HERE.parent / "build.sh")], check=True)
    out = HERE.parent / "build~"
    exe = out / "bench.exe"
    src = HERE / "Bench.cs"
    if not exe.exists() or exe.stat().st_mtime < max(src.stat().st_mtime, (out / "QuantCodec.dll").stat().st_mtime):
        subprocess.run(["mcs", "-langversion:7", "-optimize+", "-nologo", f"-r:{out / 'QuantCodec.dll'}",
                        f"-out:{exe}", str(src)], check=True)
    return exe


def build_rev(rev):
    """The library as it was at git revision ``rev`` (its src/ or Runtime/ sources), and Bench.cs
    built against it, under build~/rev-REV/: to time an earlier decoder in the same run."""
    root = HERE.parent.parent.parent
    name = "".join(ch if ch.isalnum() else "_" for ch in rev)
    out = HERE.parent / "build~" / f"rev-{name}"
    src = out / "src"
    if src.exists():
        for f in src.iterdir():
            f.unlink()
    src.mkdir(parents=True, exist_ok=True)
    files = subprocess.run(["git", "-C", str(root), "ls-tree", "-r", "--name-only", rev, "clients/csharp/src",
                            "clients/csharp/Runtime"], check=True, capture_output=True, text=True).stdout.split()
    files = [f for f in files if f.endswith(".cs") and not any(p.startswith(".") or p.endswith("~") for p in f.split("/"))]
    for i, f in enumerate(files):
        text = subprocess.run(["git", "-C", str(root), "show", f"{rev}:{f}"], check=True, capture_output=True).stdout
        (src / f"{i:03d}_{pathlib.Path(f).name}").write_bytes(text)
    subprocess.run(["mcs", "-langversion:7", "-optimize+", "-nologo", "-r:System.Numerics.dll", "-target:library",
                    f"-out:{out / 'QuantCodec.dll'}"] + sorted(str(f) for f in src.iterdir()), check=True)
    exe = out / "bench.exe"
    subprocess.run(["mcs", "-langversion:7", "-optimize+", "-nologo", f"-r:{out / 'QuantCodec.dll'}",
                    f"-out:{exe}", str(HERE / "Bench.cs")], check=True)
    return exe


def stream_to(scene, schema, k, lag=6, start=None):
    """The datagrams of a stream up to tick k (hello first), and the decoder that holds them."""
    enc = SnapshotEncoder(schema, max_datagram=65507, stream_id=0xBE7C)
    dec = SnapshotDecoder(schema)
    out = [enc.hello()]
    dec.decode(out[0])
    snaps = {}
    first = max(0, k - enc.history + 1) if start is None else start
    for j in range(first, k + 1):
        snaps[j] = schema.snapshot(scene.ids[j], scene.columns(j))
        if j - lag in snaps:
            enc.ack(j - lag)
        (d,) = enc.encode_datagrams(j, snaps[j])
        if j == first:
            assert enc.last_baseline is None
        out.append(d)
        dec.decode(d)
    assert enc.last_baseline == k - lag
    changed = float(np.mean(np.any(snaps[k].matrix != snaps[k - lag].matrix, axis=1)))
    return out, dec, changed


def whole_stream(exe, args, env, tmp):
    """The whole-stream figure (the issue's): 1000 bodies, 600 ticks, fragments at 1200 bytes."""
    scene = simulate(1000, args.seconds, 60, 0)
    schema = default_schema()
    ticks = scene.ids.shape[0]
    enc = SnapshotEncoder(schema, max_datagram=1200, stream_id=0xBE7C)
    datagrams = [enc.hello()]
    for k in range(ticks):
        if k >= 6:
            enc.ack(k - 6)
        datagrams.extend(enc.encode_datagrams(k, schema.snapshot(scene.ids[k], scene.columns(k))))
    schema_path = tmp / "stream.json"
    schema_path.write_text(schema.to_json())
    path = tmp / "stream.bin"
    with open(path, "wb") as f:
        for d in datagrams:
            f.write(struct.pack("<I", len(d)) + d)

    def python_pass():
        dec = SnapshotDecoder(schema)
        n = 0
        t0 = time.perf_counter()
        for d in datagrams:
            s = dec.decode(d)
            if s is not None:
                n += len(s.ids)
        return time.perf_counter() - t0, n

    for _ in range(args.repeats):
        python_pass()       # warm: caches, the allocator
    exes = [("C# (Mono)", exe)] + [(f"C# (Mono) at {rev}", rexe) for rev, rexe in args.rev_exes]
    py, pyc, pyf = [], [], []
    cs = {name: [] for name, _ in exes}
    csc = {name: [] for name, _ in exes}
    csf = {name: [] for name, _ in exes}
    entities = None
    for _ in range(args.rounds):
        c0 = time.process_time()
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(args.repeats):
            t, entities = python_pass()
            py.append(t)
        pyc.append((time.process_time() - c0) / args.repeats)
        pyf.append((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / args.repeats)
        for name, x in exes:
            r = subprocess.run(["mono", str(x), "--stream", str(schema_path), str(path), str(args.repeats)],
                               check=True, capture_output=True, text=True, env=env)
            j = json.loads(r.stdout)
            assert j["entities"] == entities, (j["entities"], entities)
            cs[name].extend(j["seconds"])
            csc[name].append(j["cpu_seconds"])
            csf[name].append(j.get("minor_faults", -1))
    p, pc = statistics.median(py), statistics.median(pyc)
    print(f"whole stream: 1000 bodies, {ticks} ticks at 60 Hz (seed 0, the scene schema), acks 6 ticks late, "
          f"max_datagram 1200: {len(datagrams)} datagrams, {entities} entities decoded; each decoder decodes it "
          f"{args.repeats} times a round, {args.rounds} alternated rounds, medians of the {args.repeats * args.rounds} "
          f"passes (a new decoder each pass)")
    print(f"{'':24s} | {'wall clock, medians of the passes':^50s} | {'CPU time, medians of the rounds':^28s} |")
    print(f"{'decoder':24s} | {'ms a pass':>10s} {'ns per entity':>14s} {'datagrams/s':>12s} {'vs Python':>10s} | "
          f"{'ms a pass':>10s} {'vs Python':>10s} | {'page faults a pass':>18s}")
    rows = [("Python (Cython)", p, pc, statistics.median(pyf))] + [
        (name, statistics.median(cs[name]), statistics.median(csc[name]), statistics.median(csf[name]))
        for name, _ in exes]
    for name, t, tc, fl in rows:
        print(f"{name:24s} | {t * 1e3:10.1f} {t / entities * 1e9:14.1f} {len(datagrams) / t:12,.0f} {t / p:9.2f}x | "
              f"{tc * 1e3:10.1f} {tc / pc:9.2f}x | {fl:18,.0f}")
    print("(CPU time: Python's time.process_time, C#'s Process.TotalProcessorTime, which counts Mono's GC "
          "threads too, over each round's passes: less moved by the other processes of a loaded machine; "
          "page faults: the process's minor faults over the round's timed passes, medians of the rounds; "
          "each C# decoder is disposed after its pass when the library has Dispose)")


def python_passes(schema_path, path, n):
    """--python-passes: decode the whole stream n times, each by a new decoder (what whole_stream
    times), then exit: run under valgrind by instructions()."""
    schema = default_schema()
    assert schema.to_json() == pathlib.Path(schema_path).read_text()
    data = pathlib.Path(path).read_bytes()
    datagrams, pos = [], 0
    while pos < len(data):
        (m,) = struct.unpack_from("<I", data, pos)
        datagrams.append(data[pos + 4:pos + 4 + m])
        pos += 4 + m
    for _ in range(n):
        dec = SnapshotDecoder(schema)
        for d in datagrams:
            dec.decode(d)


def instructions(exe, args, env):
    """--instructions: the instructions a pass of the whole stream executes (valgrind's count, the
    same from run to run whatever else the machine runs): Python's decode and each C# build's,
    each as the difference between a run of 3 and a run of 1 passes (start-up and JIT cancel). Not
    time: Mono's code and Python's C run at different instructions per cycle; it compares builds
    of one language exactly, where a loaded machine's timings move by tens of percent. (Under valgrind
    the CPU has no AVX-512: the Python core takes its AVX2 paths there.)"""
    if subprocess.run(["sh", "-c", "command -v valgrind"], capture_output=True).returncode != 0:
        print("--instructions needs valgrind (Debian: apt-get install valgrind)")
        return
    scene = simulate(1000, args.seconds, 60, 0)
    schema = default_schema()
    enc = SnapshotEncoder(schema, max_datagram=1200, stream_id=0xBE7C)
    datagrams = [enc.hello()]
    for k in range(scene.ids.shape[0]):
        if k >= 6:
            enc.ack(k - 6)
        datagrams.extend(enc.encode_datagrams(k, schema.snapshot(scene.ids[k], scene.columns(k))))
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="qc-cs-instr-"))
    schema_path, path = tmp / "stream.json", tmp / "stream.bin"
    schema_path.write_text(schema.to_json())
    with open(path, "wb") as f:
        for d in datagrams:
            f.write(struct.pack("<I", len(d)) + d)

    def count(cmd):
        r = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--smc-check=all-non-file",
                            "--cachegrind-out-file=/dev/null"] + cmd, capture_output=True, text=True, env=env)
        lines = [ln for ln in r.stderr.splitlines() if "I   refs:" in ln or "I refs:" in ln]
        assert r.returncode == 0 and lines, r.stderr[-2000:]
        return int(lines[-1].split()[-1].replace(",", ""))

    def per_pass(cmd_of, passes):
        # (the difference of a run of 3 and one of 1: start-up, imports and the JIT cancel)
        return (count(cmd_of(3)) - count(cmd_of(1))) / passes

    # (Python: N passes; mono --stream N: N untimed passes, then N timed)
    py = per_pass(lambda n: [sys.executable, str(HERE / "bench.py"), "--python-passes", str(n), str(schema_path),
                             str(path)], 2)
    rows = [("Python (Cython)", py)]
    for name, x in [("C# (Mono)", exe)] + [(f"C# (Mono) at {rev}", rexe) for rev, rexe in args.rev_exes]:
        rows.append((name, per_pass(lambda n: ["mono", str(x), "--stream", str(schema_path), str(path), str(n)], 4)))
    print(f"instructions a pass of the whole stream ({len(datagrams)} datagrams, a new decoder each pass; "
          f"valgrind, the difference of 3 and 1 passes)")
    for name, n in rows:
        print(f"{name:24s} {n / 1e6:10.1f} M  {n / rows[1][1]:6.3f} x this C#  {n / py:6.2f} x Python")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--number", type=int, default=300)
    ap.add_argument("--ticks", default="60,150,280")
    ap.add_argument("--repeats", type=int, default=5, help="whole-stream passes a round, per language")
    ap.add_argument("--seconds", type=float, default=10.0, help="the whole stream's length (60 ticks a second)")
    ap.add_argument("--stream-only", action="store_true", help="only the whole-stream figure")
    ap.add_argument("--compare-with", action="append", default=[], metavar="REV",
                    help="also time the C# library as it was at this git revision (e.g. main), in the same rounds")
    ap.add_argument("--instructions", action="store_true",
                    help="instead of times, the instructions a pass executes (valgrind; exact, whatever the load)")
    ap.add_argument("--python-passes", nargs=3, metavar=("N", "SCHEMA", "STREAM"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.python_passes:
        n, schema_path, path = args.python_passes
        python_passes(schema_path, path, int(n))
        return
    exe = build()
    args.rev_exes = [(rev, build_rev(rev)) for rev in args.compare_with]
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="qc-cs-bench-"))
    env = dict(os.environ, MONO_ENV_OPTIONS="")
    if args.instructions:
        instructions(exe, args, env)
        return
    whole_stream(exe, args, env, tmp)
    if args.stream_only:
        return
    print()
    scene = simulate(1000, 5.0, 60, 0)
    schema = default_schema()
    schema_path = tmp / "scene.json"
    schema_path.write_text(schema.to_json())
    print(f"1000 bodies, scene schema ({schema.bits} bits a record at most), acks 6 ticks late; "
          f"decode of one whole datagram, microseconds, medians of {args.rounds} alternated rounds "
          f"of {args.number} calls")
    print(f"{'':22s} | {'wall clock':^24s} | {'CPU time':^24s} |")
    print(f"{'tick':>5s} {'changed':>8s} {'bytes':>6s} | {'Python':>8s} {'C#/Mono':>8s} {'ratio':>6s} | "
          f"{'Python':>8s} {'C#/Mono':>8s} {'ratio':>6s} | {'C# bytes alloc/call':>19s}")
    for k in [int(t) for t in args.ticks.split(",")]:
        datagrams, dec, changed = stream_to(scene, schema, k)
        path = tmp / f"tick{k}.bin"
        with open(path, "wb") as f:
            for d in datagrams:
                f.write(struct.pack("<I", len(d)) + d)
        last = datagrams[-1]
        py, cs, alloc, salloc, pyc, csc = [], [], [], [], [], []
        for _ in range(args.rounds):
            py.append(min(timeit.repeat(lambda: dec.decode(last), number=args.number, repeat=3)) / args.number * 1e6)
            n = max(args.number, int(0.4 / (py[-1] * 1e-6)))
            pyc.append(min(timeit.repeat(lambda: dec.decode(last), number=n, repeat=3, timer=time.process_time)) / n * 1e6)
            r = subprocess.run(["mono", str(exe), str(schema_path), str(path), str(args.number)],
                               check=True, capture_output=True, text=True, env=env)
            j = json.loads(r.stdout)
            assert j["count"] == 1000, j
            cs.append(j["us"])
            csc.append(j["cpu_us"])
            alloc.append(j["alloc_per_call"])
            salloc.append(j["alloc_per_packet_stream"])
        p, c = statistics.median(py), statistics.median(cs)
        pc, cc = statistics.median(pyc), statistics.median(csc)
        print(f"{k:5d} {changed:8.1%} {len(last):6d} | {p:8.1f} {c:8.1f} {c / p:6.2f} | "
              f"{pc:8.1f} {cc:8.1f} {cc / pc:6.2f} | {statistics.median(alloc):19.1f}")
    # allocation in a stream's steady state: ticks 0..299 decoded once each, in order; the last 30
    # packets come after the decoder's window (2 * 64 - 1 snapshots) has filled
    datagrams, _, _ = stream_to(scene, schema, 299, start=0)
    path = tmp / "all.bin"
    with open(path, "wb") as f:
        for d in datagrams:
            f.write(struct.pack("<I", len(d)) + d)
    r = subprocess.run(["mono", str(exe), str(schema_path), str(path), "10"], check=True, capture_output=True,
                       text=True, env=env)
    j = json.loads(r.stdout)
    print(f"wall clock: best of 3 loops of {args.number} calls; CPU time: process CPU time over loops of at "
          f"least 0.4 s (Python's time.process_time, C#'s Process.TotalProcessorTime, which counts Mono's "
          f"runtime threads too), less moved by the other processes of a loaded machine.")
    print(f"ratio: C# time / Python time (above 1: C# slower). alloc/call: bytes allocated per call of the "
          f"timed (duplicate) decode; over ticks 270-299 of the whole 300-tick stream, each packet decoded "
          f"once, in the window's steady state: {j['alloc_per_packet_stream']:.1f} bytes a packet "
          f"(GC.GetAllocatedBytesForCurrentThread deltas; Mono has it).")


if __name__ == "__main__":
    main()
