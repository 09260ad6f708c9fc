"""Throughput of two threads against one on the batch paths (they release the GIL).

    python bench/bench_threads.py [--repeat 3] [--scale 1.0] [--threads 2]

For each workload, one thread runs it ``k`` times; then ``T`` threads run it ``k`` times each,
at once. The speedup is ``T * t(1 thread) / t(T threads)``: T on an idle machine with T free
cores when the GIL is released for the whole call, 1.0 when nothing runs in parallel. Figures
are the best of ``--repeat`` runs. Nothing is asserted: the numbers depend on the machine and
on what else it runs (the load average is printed beside them).
"""

import argparse
import os
import sys
import threading
import time

import numpy as np

try:
    import quantcodec as qc
except ImportError:     # run from a source checkout: python bench/bench_threads.py
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import quantcodec as qc

from quantcodec.tools.examples import player_state, player_state_columns  # noqa: E402


def _columns(n, seed=0, shift=0.0):
    return player_state_columns(n, seed, shift)


def workloads(scale):
    """name -> (setup() -> per-thread callable, units per call, unit name)."""
    n = int(2_000_000 * scale)
    m = int(100_000 * scale)
    rng = np.random.default_rng(1)
    x = rng.uniform(-3, 3, n)
    b = qc.Bounded(-2, 2, 16)
    codes = b.quantize(x)
    quats = rng.normal(size=(n // 4, 4))
    q = qc.Quat(9)
    s = player_state()
    cols = _columns(m)
    data = s.encode_many(cols)
    ids = np.arange(m, dtype=np.uint64)
    snap1, snap2 = s.snapshot(ids, cols), s.snapshot(ids, _columns(m, shift=0.3))

    def per_thread_bounded():
        out = np.empty(n, dtype=np.uint32)
        return lambda: b.quantize(x, out=out)

    def per_thread_roundtrip():
        out = np.empty(n)
        return lambda: b.roundtrip(x, out=out)

    def per_thread_quat():
        out = np.empty(n // 4, dtype=np.uint32)
        return lambda: q.quantize(quats, out=out)

    def per_thread_pack():
        return lambda: qc.pack(codes, 16)

    packed = qc.pack(codes, 16)

    def per_thread_unpack():
        out = np.empty(n, dtype=np.uint32)
        return lambda: qc.unpack(packed, n, 16, out=out)

    def per_thread_encode_many():
        return lambda: s.encode_many(cols)

    def per_thread_decode_many():
        return lambda: s.decode_many(data, m)

    def per_thread_snapshot_encode():
        enc = qc.SnapshotEncoder(s)          # one encoder per client, so one per thread
        enc.encode(1, snap1)
        enc.ack(1)
        return lambda: enc.encode(2, snap2)

    enc0 = qc.SnapshotEncoder(s)
    full = enc0.encode(1, snap1)
    enc0.ack(1)
    delta = enc0.encode(2, snap2)

    def per_thread_snapshot_decode():
        dec = qc.SnapshotDecoder.from_hello(s, enc0.hello())
        dec.decode(full)
        return lambda: dec.decode(delta)

    return {
        "Bounded.quantize (out=)": (per_thread_bounded, n, "values"),
        "Bounded.roundtrip (out=)": (per_thread_roundtrip, n, "values"),
        "Quat.quantize (out=)": (per_thread_quat, n // 4, "quats"),
        "pack 16 bits": (per_thread_pack, n, "codes"),
        "unpack 16 bits (out=)": (per_thread_unpack, n, "codes"),
        "Schema.encode_many": (per_thread_encode_many, m, "records"),
        "Schema.decode_many": (per_thread_decode_many, m, "records"),
        "SnapshotEncoder.encode (delta)": (per_thread_snapshot_encode, m, "entities"),
        "SnapshotDecoder.decode (delta)": (per_thread_snapshot_decode, m, "entities"),
    }


def timed(fns, k):
    """Wall time for len(fns) threads each calling its fn k times, started together."""
    barrier = threading.Barrier(len(fns) + 1)

    def run(fn):
        barrier.wait()
        for _ in range(k):
            fn()

    threads = [threading.Thread(target=run, args=(fn,)) for fn in fns]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    return time.perf_counter() - t0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--calls", type=int, default=5, help="calls per thread per run")
    a = p.parse_args(argv)
    T = a.threads
    print(f"CPUs: {os.cpu_count()}, load average: {', '.join(f'{v:.2f}' for v in os.getloadavg())}" if hasattr(os, "getloadavg")
          else f"CPUs: {os.cpu_count()}")
    print(f"{'workload':34} {'1 thread':>16} {f'{T} threads':>16} {'speedup':>8}")
    for name, (setup, units, unit) in workloads(a.scale).items():
        one = [setup()]
        many = [setup() for _ in range(T)]
        one[0]()
        for f in many:
            f()
        t1 = min(timed(one, a.calls) for _ in range(a.repeat))
        tT = min(timed(many, a.calls) for _ in range(a.repeat))
        r1 = units * a.calls / t1
        rT = units * a.calls * T / tT
        print(f"{name:34} {r1 / 1e6:10.2f} M{unit[0]}/s {rT / 1e6:10.2f} M{unit[0]}/s {rT / r1:7.2f}x")


if __name__ == "__main__":
    main()
