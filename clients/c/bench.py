"""The C client's decode bench against Python's SnapshotDecoder.decode, in one process.

The bench scene of bench/bench_snapshot.py (1000 bodies, 5 s at 60 Hz, seed 0; the default
schema with velocities), streamed as a server does (one encoder, history 64, acks 6 ticks late):
for each case the datagram of one tick is decoded repeatedly by the C decoder (bench.c through
ctypes) and by quantcodec.SnapshotDecoder.decode, both holding the same stream up to that tick,
alternating C and Python repeat by repeat; medians of the repeats.

    pip install .   # (from the repository's root, in a virtualenv) then, from anywhere:
    python clients/c/bench.py [--repeats 15] [--number 200] [--cpu] [--src DIR]

--cpu times both sides by the thread's CPU time instead of the wall clock (on a shared, busy
machine the other processes' time then does not land in one side's repeat); --src DIR benches
another bench.c and quantcodec.h (e.g. an older commit's header beside this bench.c).

It imports the installed quantcodec (not the source tree, whose extension modules are not built
in a clean clone).
"""
import argparse
import ctypes
import os
import resource
import statistics
import subprocess
import time
import timeit
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))

import numpy as np

from quantcodec import SnapshotDecoder, SnapshotEncoder
from quantcodec.tools.scene import simulate
from quantcodec.tools.link import default_schema


def build(srcdir=HERE):
    tag = "" if srcdir == HERE else "-" + "%08x" % zlib.crc32(os.path.abspath(srcdir).encode())
    lib = os.path.join(HERE, "build", f"libqcbench{tag}.so")
    src = [os.path.join(srcdir, "bench.c"), os.path.join(srcdir, "quantcodec.h")]
    if not os.path.exists(lib) or any(os.path.getmtime(s) > os.path.getmtime(lib) for s in src):
        os.makedirs(os.path.dirname(lib), exist_ok=True)
        subprocess.check_call([os.environ.get("CC", "cc"), "-std=c99", "-O2", "-ffp-contract=off", "-shared",
                               "-fPIC", "-o", lib, src[0], "-lm"])
    so = ctypes.CDLL(lib)
    so.qcb_open.restype = ctypes.c_void_p
    so.qcb_open.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    so.qcb_feed.restype = ctypes.c_int
    so.qcb_feed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    so.qcb_time.restype = ctypes.c_double
    so.qcb_time.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int]
    so.qcb_close.argtypes = [ctypes.c_void_p]
    return so


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bodies", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--number", type=int, default=200)
    ap.add_argument("--lag", type=int, default=6)
    ap.add_argument("--dump", metavar="DIR", help="write the bench stream (DIR/schema.json, DIR/stream.bin: "
                    "each datagram as a 4-byte little-endian length, then its bytes) for bench_stream.c, and stop")
    ap.add_argument("--src", default=HERE, help="a directory with another bench.c and quantcodec.h "
                    "(e.g. an older commit's, for a before/after comparison)")
    ap.add_argument("--cpu", action="store_true", help="time both sides by the thread's CPU time "
                    "(time.thread_time, CLOCK_THREAD_CPUTIME_ID), not the wall clock: on a busy machine "
                    "the time other processes take is not counted")
    args = ap.parse_args()
    so = None if args.dump else build(args.src)
    timer = timeit.default_timer
    if args.cpu and so is not None:
        if not hasattr(so, "qcb_clock"):
            raise SystemExit(f"--cpu: {args.src}/bench.c has no qcb_clock (take this bench.c with the other header)")
        so.qcb_clock.argtypes = [ctypes.c_int]
        so.qcb_clock(1)
        timer = time.thread_time
    scene = simulate(args.bodies, 5.0, 60, 0)
    schema = default_schema(velocity=True)
    ticks = scene.ids.shape[0]
    enc = SnapshotEncoder(schema)
    hello = enc.hello()
    datagrams, snaps, changed = [], {}, {}
    for k in range(ticks):
        snaps[k] = schema.snapshot(scene.ids[k], scene.columns(k))
        if k >= args.lag:
            enc.ack(k - args.lag)
        datagrams.append(enc.encode(k, snaps[k]))
        if k >= args.lag:
            b = snaps[k - args.lag]
            changed[k] = float(np.mean(np.any(snaps[k].matrix != b.matrix, axis=1))) if len(b.ids) == len(snaps[k].ids) else 1.0
    if args.dump:
        os.makedirs(args.dump, exist_ok=True)
        with open(os.path.join(args.dump, "schema.json"), "w") as f:
            f.write(schema.to_json())
        with open(os.path.join(args.dump, "stream.bin"), "wb") as f:
            for d in [hello] + datagrams:
                f.write(len(d).to_bytes(4, "little") + d)
        print(f"{args.dump}: schema.json, stream.bin ({1 + len(datagrams)} datagrams)")
        return
    # the cases: tick 0 (full), tick 60 (everything moving), a tick near 30% changed, the tick most at rest
    late = [k for k in changed if k > 60]
    near30 = min(late, key=lambda k: abs(changed[k] - 0.30))
    rest = min(late, key=lambda k: (changed[k], -k))
    cases = [("full (tick 0)", 0), (f"100% moving (tick 60, {changed[60]:.0%} changed)", 60),
             (f"~30% (tick {near30}, {changed[near30]:.0%} changed)", near30),
             (f"at rest (tick {rest}, {changed[rest]:.1%} changed)", rest)]
    js = schema.to_json().encode()
    print(f"scene: {args.bodies} bodies, schema {schema.name!r} ({schema.bits} bits a record at most), "
          f"history 64, acks {args.lag} ticks late; medians of {args.repeats} alternated repeats of {args.number} decodes"
          + (" (CPU time)" if args.cpu else ""))
    print(f"{'case':44s} {'bytes':>6s} {'C us':>8s} {'C+values us':>12s} {'Python us':>10s} {'Python/C':>9s}")
    for name, k in cases:
        b = so.qcb_open(js, len(js))
        py = SnapshotDecoder(schema)
        for d in [hello] + datagrams[: k + 1]:
            so.qcb_feed(b, d, len(d))
            py.decode(d)
        dg = datagrams[k]
        assert py.decode(dg) == snaps[k]
        tc, tv, tp = [], [], []
        for _ in range(args.repeats):
            t = so.qcb_time(b, dg, len(dg), args.number, 0)
            if t < 0:
                raise SystemExit(f"tick {k}: the C decoder refused the datagram")
            tc.append(t)
            tp.append(min(timeit.repeat(lambda: py.decode(dg), number=args.number, repeat=1, timer=timer)) / args.number)
            tv.append(so.qcb_time(b, dg, len(dg), max(1, args.number // 4), 1))
        c, v, p = statistics.median(tc), statistics.median(tv), statistics.median(tp)
        print(f"{name:44s} {len(dg):6d} {c * 1e6:8.1f} {v * 1e6:12.1f} {p * 1e6:10.1f} {p / c:8.2f}x")
        so.qcb_close(b)
    # the whole stream (hello and every tick) through a new decoder, as issue 37 measured it: ns
    # per entity decoded, alternated repeats (each side's per-datagram call from the same Python loop)
    stream = [hello] + datagrams
    ents = sum(len(snaps[k].ids) for k in range(ticks))

    def run_c():
        b = so.qcb_open(js, len(js))
        for d in stream:
            so.qcb_feed(b, d, len(d))
        so.qcb_close(b)

    def run_py():
        py = SnapshotDecoder(schema)
        for d in stream:
            py.decode(d)

    tc, tp, fc, fp = [], [], [], []
    for _ in range(max(3, args.repeats // 3)):
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        tc.append(min(timeit.repeat(run_c, number=1, repeat=1, timer=timer)))
        f1 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        tp.append(min(timeit.repeat(run_py, number=1, repeat=1, timer=timer)))
        f2 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        fc.append(f1 - f0)
        fp.append(f2 - f1)
    c, p = statistics.median(tc), statistics.median(tp)
    print(f"{'whole stream (' + str(len(stream)) + ' datagrams), ns/entity':44s} {sum(map(len, stream)):6d} "
          f"{c * 1e9 / ents:8.1f} {'':>12s} {p * 1e9 / ents:10.1f} {p / c:8.2f}x")
    # the kernel's share: a page first touched is a minor fault (cleared, mapped), counted here
    # in both sides' time; how many each side's pass takes (medians)
    print(f"{'  minor page faults a pass (new decoder)':44s} {'':6s} {statistics.median(fc):8.0f} {'':>12s} "
          f"{statistics.median(fp):10.0f}")


if __name__ == "__main__":
    main()
