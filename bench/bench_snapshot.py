"""Speed of snapshot delta encoding and decoding, against struct.pack of the same raw floats.

For one client and a snapshot of N bodies (default 1000) of the bench scene at three moments
(everything moving, a pile settling, mostly at rest), all measured in the same run:

- ``struct.pack`` of the snapshot's raw float32 values (position, rotation, velocity: 10 floats a
  body), three ways: one call over a ready list of all the floats ("pack(list)", the fastest
  thing struct can do), one ``Struct('<10f').pack`` per body from ready tuples ("pack/body", how
  a server serializes entity by entity), one call from the NumPy arrays, ``tolist``
  included ("pack(np)", where a NumPy simulation's state actually lives), and one call
  unpacking the NumPy array itself ("pack(*np)", ``st.pack(*array.ravel())``, the most direct
  way to write it: each element goes through a NumPy scalar, so it is the slowest);
- ``encoder.encode(seq, snapshot)``: one client's delta packet against its acknowledged baseline
  (and extrapolation snapshot), the whole Python call, up to the datagram (the packet and the
  4-byte check of its stream: the "bytes" columns count them);
- ``decoder.decode(packet)``: the whole Python call, up to the decoded snapshot (its columns are
  dequantized lazily, on first access: that is reported on its own, as is quantizing the
  snapshot, done once per tick for every client).

Ratios are struct.pack time / quantcodec time (higher is better; the target of SPEC 5's issue
is 9x). Timings are the best of several repeats; the machine's load moves them, the ratios much
less.

Those calls are repeated on one input (as microbenchmarks do: the rows they read are then in
the nearest caches, and the branch predictors have learned the packet). The second table
(``--stream``, default 5 runs) times them as a server and a client make them instead: the
scene streamed tick by tick, each tick's calls once, ``pack/body`` timed in the same loop.

    python bench/bench_snapshot.py [--bodies 1000] [--clients 100] [--stream 5] [--full 1] [--pose]

``--pose`` leaves the velocity out of the schema and of the raw floats: a 28-byte pose a body
(position and rotation, 7 floats), the record of the issue's "181 us" struct.pack figure.

A last table (``--full``) times full snapshots, sent with no baseline: a client's first
packets, and every packet while its acks do not arrive.

Last, for a server with many clients (``--clients``, default 100, acks lagging 4 to 8 ticks):
one tick's packets for all of them, from independent encoders and from encoders sharing a
``PacketCache``, which codes each distinct packet once.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
import time
import timeit

import numpy as np

try:
    import quantcodec  # noqa: F401  (the installed package, or a built source tree on the path)
except ImportError:     # run from a source checkout: python bench/bench_snapshot.py
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from quantcodec import SnapshotDecoder, SnapshotEncoder  # noqa: E402
from quantcodec.tools.scene import simulate  # noqa: E402
from quantcodec.tools.link import default_schema  # noqa: E402


class PoseOnly:
    """The scene without its velocities (``--pose``): position and rotation, 7 floats a body,
    a 28-byte pose, the record SPEC 5's issue sizes its struct.pack baseline on."""

    def __init__(self, scene):
        self.scene = scene
        self.ids, self.positions, self.orientations = scene.ids, scene.positions, scene.orientations

    def columns(self, k):
        return {"position": self.positions[k], "rotation": self.orientations[k]}


def raw_floats(scene, k):
    """The raw float32 values of tick k a body at a time: position, rotation (and velocity)."""
    parts = [scene.positions[k], scene.orientations[k]]
    if not isinstance(scene, PoseOnly):
        parts.append(scene.velocities[k])
    return np.concatenate(parts, axis=1)


def best(fn, number, repeat=7):
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def measure(scene, schema, k, lag=6, number=200):
    """Times at tick k of a stream in its steady state: every earlier tick sent, decoded and
    acknowledged `lag` ticks later, so both ends hold a full history."""
    enc = SnapshotEncoder(schema)
    dec = SnapshotDecoder.from_hello(schema, enc.hello())
    snaps = {}
    for j in range(max(0, k - enc.history + 1), k + 1):
        snaps[j] = schema.snapshot(scene.ids[j], scene.columns(j))
        if j - lag in snaps:
            enc.ack(j - lag)
        packet = enc.encode(j, snaps[j])
        if j < k:
            dec.decode(packet)
    cur, base = snaps[k], snaps[k - lag]
    assert enc.last_baseline == k - lag
    view = dec.decode(packet)
    assert view == cur
    raw = raw_floats(scene, k)
    flat = raw.ravel().tolist()
    st = struct.Struct(f"<{raw.size}f")
    body = struct.Struct(f"<{raw.shape[1]}f").pack
    rows = [tuple(r) for r in raw.tolist()]
    changed = float(np.mean(np.any(cur.matrix != base.matrix, axis=1)))
    t = {
        "pack_list": best(lambda: st.pack(*flat), number),
        "pack_body": best(lambda: [body(*r) for r in rows], max(1, number // 4)),
        "pack_numpy": best(lambda: st.pack(*raw.ravel().tolist()), number),
        "pack_star": best(lambda: st.pack(*raw.ravel()), max(1, number // 4)),
        "encode": best(lambda: enc.encode(k, cur), number),
        "decode": best(lambda: dec.decode(packet), number),
        "snapshot": best(lambda: schema.snapshot(scene.ids[k], scene.columns(k)), max(1, number // 4)),
        "columns": best(lambda: schema._plan.dequantize_valid(view.matrix), max(1, number // 4)),
    }
    return changed, len(packet), t


def stream(scene, schema, centers=(60, 150, 280), half=10, lag=6, repeats=5):
    """The same calls as a server and a client make them: the scene streamed tick by tick (a new
    snapshot each tick, acked ``lag`` ticks late), each call timed once, on its tick's data,
    between the other calls of the tick. Unlike a call repeated on one input (``measure``),
    the references' rows come from farther caches (they are ``lag`` ticks old) and the branch
    predictors have not learned the packet. ``pack/body`` is timed in the same loop on the
    tick's ready tuples. Returns, per window of ticks ``center +- half``, the share of
    entities changed and the medians (over the window's ticks and the repeats) in seconds."""
    body = struct.Struct(f"<{raw_floats(scene, 0).shape[1]}f").pack
    pc = time.perf_counter
    ticks = scene.ids.shape[0]
    last = min(ticks, max(centers) + half)
    times = {op: np.zeros((repeats, last)) for op in ("snapshot", "encode", "decode", "pack_body")}
    changed = np.zeros(last)
    for rep in range(repeats):
        enc = SnapshotEncoder(schema)
        dec = SnapshotDecoder.from_hello(schema, enc.hello())
        snaps = {}
        for k in range(last):
            cols = scene.columns(k)
            rows = [tuple(r) for r in raw_floats(scene, k).tolist()]
            t0 = pc()
            [body(*r) for r in rows]
            t1 = pc()
            snap = schema.snapshot(scene.ids[k], cols)
            t2 = pc()
            if k >= lag:
                enc.ack(k - lag)
            packet = enc.encode(k, snap)
            t3 = pc()
            view = dec.decode(packet)
            t4 = pc()
            for op, t in (("pack_body", t1 - t0), ("snapshot", t2 - t1), ("encode", t3 - t2),
                          ("decode", t4 - t3)):
                times[op][rep, k] = t
            if rep == 0:
                if view != snap:
                    raise AssertionError(f"tick {k}: the decoded snapshot differs")
                snaps[k] = snap
                base = snaps.pop(k - lag, None)
                if base is not None:
                    changed[k] = np.mean(np.any(snap.matrix != base.matrix, axis=1))
    out = []
    for c in centers:
        lo, hi = max(lag + 1, c - half), min(last, c + half)
        out.append((c, float(changed[lo:hi].mean()),
                    {op: float(np.median(t[:, lo:hi])) for op, t in times.items()}))
    return out


def full(scene, schema, k, number=200):
    """A full snapshot of tick k (no baseline: a new client's first packets, or those after its
    acks stopped): the time to encode it (an encoder that never had an ack sends one every
    call), to decode it, and struct.pack/body of the same floats. Returns (bytes, seconds)."""
    snap = schema.snapshot(scene.ids[k], scene.columns(k))
    enc = SnapshotEncoder(schema)
    dec = SnapshotDecoder.from_hello(schema, enc.hello())
    packet = enc.encode(k, snap)
    assert enc.last_baseline is None and dec.decode(packet) == snap
    raw = raw_floats(scene, k)
    body = struct.Struct(f"<{raw.shape[1]}f").pack
    rows = [tuple(r) for r in raw.tolist()]
    return len(packet), {
        "pack_body": best(lambda: [body(*r) for r in rows], max(1, number // 4)),
        "encode": best(lambda: enc.encode(k, snap), number),
        "decode": best(lambda: dec.decode(packet), number),
    }


def many_clients(scene, schema, k, clients, lags=(4, 5, 6, 7, 8), number=20):
    """One tick for ``clients`` clients in steady state whose acks lag 4 to 8 ticks (spread
    evenly): the time to encode all their packets with independent encoders, and with encoders
    sharing a PacketCache (emptied before each repeat, so each distinct packet is coded once
    per repeat, as in a server's tick). Returns (distinct packets, seconds alone, seconds
    shared)."""
    from quantcodec import PacketCache
    cache = PacketCache(256)
    alone = [SnapshotEncoder(schema) for _ in range(clients)]
    shared = [SnapshotEncoder(schema, cache=cache) for _ in range(clients)]
    lag = [lags[i % len(lags)] for i in range(clients)]
    snaps = {}
    for j in range(max(0, k - 64 + 1), k + 1):
        snaps[j] = schema.snapshot(scene.ids[j], scene.columns(j))
        for encs in (alone, shared):
            for i, e in enumerate(encs):
                if j - lag[i] in snaps:
                    e.ack(j - lag[i])
                if j < k:
                    e.encode(j, snaps[j])
    cur = snaps[k]
    # bare packets: each client's datagram is its packet sealed with its own stream's check
    distinct = len({e.encode(k, cur)[:-4] for e in alone})

    def tick_alone():
        for e in alone:
            e.encode(k, cur)

    def tick_shared():
        cache.clear()
        for e in shared:
            e.encode(k, cur)

    return distinct, best(tick_alone, number, 5), best(tick_shared, number, 5)


def main(argv=None, out=print):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bodies", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--number", type=int, default=200)
    ap.add_argument("--stream", type=int, default=5,
                    help="runs of the streamed scene for the in-a-stream rows (0: leave them out)")
    ap.add_argument("--pose", action="store_true",
                    help="position and rotation only (7 floats a body), without the velocity")
    ap.add_argument("--full", type=int, default=1,
                    help="the full-snapshot rows (0: leave them out)")
    ap.add_argument("--clients", type=int, default=100,
                    help="clients for the shared-packet rows (0: leave them out)")
    args = ap.parse_args(argv)
    scene = simulate(args.bodies, 5.0, 60, args.seed)
    schema = default_schema(velocity=not args.pose)
    if args.pose:
        scene = PoseOnly(scene)
    out(f"{args.bodies} bodies, {'pose' if args.pose else 'scene'} schema ({schema.bits} bits a "
        f"record at most, {raw_floats(scene, 0).shape[1]} floats raw), one client in "
        f"steady state (acks 6 ticks late, full history); times in microseconds (best of 7)")
    out(f"{'tick':>5s} {'changed':>8s} {'bytes':>6s} | {'pack(list)':>10s} {'pack/body':>9s} "
        f"{'pack(np)':>9s} {'pack(*np)':>9s} | {'encode':>7s} {'x list':>6s} {'x body':>6s} "
        f"{'x np':>6s} {'x *np':>6s} | {'decode':>7s} {'x list':>6s} {'x body':>6s} {'x np':>6s} "
        f"{'x *np':>6s} | {'snapshot':>8s} {'columns':>8s}")
    rows = []
    for k in (60, 150, 280):
        changed, nbytes, t = measure(scene, schema, k, number=args.number)
        us = {key: v * 1e6 for key, v in t.items()}
        rows.append((k, changed, nbytes, us))
        ratios = {op: [t[b] / t[op] for b in ("pack_list", "pack_body", "pack_numpy", "pack_star")]
                  for op in ("encode", "decode")}
        out(f"{k:5d} {changed:8.1%} {nbytes:6d} | {us['pack_list']:10.1f} {us['pack_body']:9.1f} "
            f"{us['pack_numpy']:9.1f} {us['pack_star']:9.1f} | {us['encode']:7.1f} "
            + " ".join(f"{r:6.1f}" for r in ratios["encode"])
            + f" | {us['decode']:7.1f} " + " ".join(f"{r:6.1f}" for r in ratios["decode"])
            + f" | {us['snapshot']:8.1f} {us['columns']:8.1f}")
    out("x list / x body / x np / x *np: the struct.pack baseline's time over the quantcodec "
        "call's time; snapshot: quantizing the tick (once for all clients); columns: dequantizing a decoded "
        "view (lazy, on first access)")
    if args.stream > 0:
        out(f"\nIn a stream: each tick snapshotted, encoded and decoded once, in order (acks 6 "
            f"ticks late); medians over ticks k-10..k+9 and {args.stream} runs, in microseconds")
        out(f"{'ticks':>9s} {'changed':>8s} | {'pack/body':>9s} | {'snapshot':>8s} | "
            f"{'encode':>7s} {'x body':>6s} | {'decode':>7s} {'x body':>6s}")
        for c, changed, t in stream(scene, schema, repeats=args.stream):
            us = {key: v * 1e6 for key, v in t.items()}
            out(f"{c - 10:4d}-{c + 9:<4d} {changed:8.1%} | {us['pack_body']:9.1f} | "
                f"{us['snapshot']:8.1f} | {us['encode']:7.1f} {t['pack_body'] / t['encode']:6.1f} | "
                f"{us['decode']:7.1f} {t['pack_body'] / t['decode']:6.1f}")
    if args.clients > 0:
        out(f"\n{args.clients} clients whose acks lag 4-8 ticks (even shares): one tick's packets, "
            f"encoders alone or sharing a PacketCache (emptied each tick); times in microseconds")
        out(f"{'tick':>5s} {'distinct':>8s} | {'alone':>9s} {'per client':>10s} | {'shared':>9s} "
            f"{'per client':>10s} | {'speedup':>7s}")
        for k in (60, 150, 280):
            distinct, t_alone, t_shared = many_clients(scene, schema, k, args.clients)
            out(f"{k:5d} {distinct:8d} | {t_alone * 1e6:9.1f} {t_alone * 1e6 / args.clients:10.2f} | "
                f"{t_shared * 1e6:9.1f} {t_shared * 1e6 / args.clients:10.2f} | "
                f"{t_alone / t_shared:6.1f}x")
    if args.full:
        out("\nFull snapshots (no baseline: a client's first packets, or after its acks stopped); "
            "times in microseconds")
        out(f"{'tick':>5s} {'bytes':>6s} | {'pack/body':>9s} | {'encode':>7s} {'x body':>6s} | "
            f"{'decode':>7s} {'x body':>6s}")
        for k in (60, 150, 280):
            nbytes, t = full(scene, schema, k, number=args.number)
            out(f"{k:5d} {nbytes:6d} | {t['pack_body'] * 1e6:9.1f} | {t['encode'] * 1e6:7.1f} "
                f"{t['pack_body'] / t['encode']:6.1f} | {t['decode'] * 1e6:7.1f} "
                f"{t['pack_body'] / t['decode']:6.1f}")
    return rows


if __name__ == "__main__":
    main()
