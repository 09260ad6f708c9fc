"""Per-client views under a byte budget (issue 34): the server's time, the bytes, the staleness
and the error of every client's view, and a comparison with Gaffer On Games' "State
Synchronization" at equal budgets.

Part 1, the large world: 100,000 entities in a 4 km square (30% moving at walking pace, turning),
1,000 clients (players: moving entities), each seeing the entities within 150 m, a budget of
1,200 bytes a client a tick, 60 Hz, 3 ticks of delay each way and 5% loss on packets and acks.
Each tick: the interest of every client from one grid index (quantcodec.interest), then per
client its view (quantcodec._views.ViewBuilder: priority, selection, trial encodes) and its
packet (SnapshotEncoder.encode_datagrams). Timed apart, on 1 and on 2 threads (a
ThreadPoolExecutor over halves of the clients; the coders release the GIL). Printed: the
server's time a tick split into interest / views / encoding (and per client, in microseconds);
bytes a client a tick and the share of the budget used; staleness of the views (how many ticks
older than the view an entity's codes are: worst, p99, and for the nearest 25 m); the error of
what each client shows against the world at that moment (3 ticks of delay included) in mm and
degrees (p99, worst); for equal weights and for distance weights (1 / (1 + d / 25 m)).
Staleness and errors are measured on every 10th client (all clients are simulated and timed).

Part 2, the comparison: the bench scene (quantcodec.tools.scene: 300 bodies falling, colliding,
coming to rest, two kinematic bodies ploughing through), one client, budgets of 200, 400, 800
and 1,200 bytes a tick, 5% loss and 3 ticks of delay each way. quantcodec views (equal and speed
weights) against a re-implementation of Gaffer's State Synchronization (full quantized states of
the same schema, an index of ceil(log2 N) bits each, chosen by a priority accumulator weighted
by speed, no acks, the client keeps the newest state of each body): p99 and worst error of what
the client shows, over every body and tick from 1 s on.

Part 3 (on its own): a crowd of clients seeing the same spot, their views and packets made
each alone, then shared (ViewShare, PacketCache): CPU a client a tick.

Part 4 (on its own): the server's tick as a user runs it, StreamServer(threads=N).send with the
interest from one GridIndex, for each of ``--threads``, alternated: wall and CPU time a tick.

Part 5 (on its own): where the GIL is held, per step of the tick on one thread, and how long
StreamServer.send's threads wait for it (with bench/gil_probe.c preloaded; CPU time without).

Part 6 (on its own): a client's build twice a tick, as the tick finds it and at once again: what
its turn among 1,000 clients costs beyond the work (caches and branch history).

    python bench/bench_views.py                 # both parts, the issue's sizes (a few minutes)
    python bench/bench_views.py --quick         # small sizes, seconds (the test suite runs this)
    python bench/bench_views.py --part 2        # the comparison only
    python bench/bench_views.py --part 3        # sharing across clients: 200 clients seeing one spot
    python bench/bench_views.py --part 4 --ticks 60   # StreamServer(threads=1, 2).send: wall and CPU
    LD_PRELOAD=/tmp/gil_probe.so python bench/bench_views.py --part 5 --ticks 30   # where the GIL is
                                                # held (build the probe first: bench/gil_probe.c)
    python bench/bench_views.py --part 6 --ticks 150  # a build cold and warm
    python bench/bench_views.py --plot docs/figures/views-staleness.png   # staleness and error vs distance
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
try:
    import quantcodec  # noqa: F401
except ImportError:
    sys.path.append(ROOT)

import numpy as np  # noqa: E402

import quantcodec as qc  # noqa: E402
from quantcodec import interest  # noqa: E402
from quantcodec._views import ViewBuilder, ViewBuilderPy, ViewShare  # noqa: E402


def quat_angle_deg(a, b):
    dot = np.abs(np.sum(a * b, axis=-1))
    return np.degrees(2.0 * np.arccos(np.clip(dot, 0.0, 1.0)))


# -- part 1: the large world ---------------------------------------------------------------------

def big_schema():
    return qc.Schema("Big", [
        ("position", qc.Vector(qc.Bounded(-2048, 2048, 20), qc.Bounded(-16, 48, 14),
                               qc.Bounded(-2048, 2048, 20))),      # 3.9 mm steps
        ("rotation", qc.Quat(9)),
    ])


class BigWorld:
    """``n`` entities on a ``2 half`` m square: a share walk at 1-2 m/s and turn; the rest stand."""

    def __init__(self, n, half=2000.0, moving=0.3, seed=0):
        r = np.random.default_rng(seed)
        self.r = r
        self.half = half
        self.ids = np.arange(1, n + 1, dtype=np.uint64) * np.uint64(7)       # sparse ids
        self.pos = np.column_stack([r.uniform(-half, half, n), r.uniform(0, 2, n), r.uniform(-half, half, n)])
        self.moving = r.random(n) < moving
        self.heading = r.uniform(0, 2 * np.pi, n)
        self.speed = np.where(self.moving, r.uniform(1.0, 2.0, n), 0.0)
        self.turn = np.where(self.moving, r.normal(0, 0.3, n), 0.0)          # rad/s

    def step(self, dt):
        m = self.moving
        self.heading[m] += self.turn[m] * dt
        self.pos[m, 0] += np.cos(self.heading[m]) * self.speed[m] * dt
        self.pos[m, 2] += np.sin(self.heading[m]) * self.speed[m] * dt
        out = np.abs(self.pos[:, [0, 2]]) > self.half
        if out.any():
            rows = np.flatnonzero(out.any(axis=1))
            self.heading[rows] += np.pi
            self.pos[:, 0] = np.clip(self.pos[:, 0], -self.half, self.half)
            self.pos[:, 2] = np.clip(self.pos[:, 2], -self.half, self.half)

    def quats(self):
        h = self.heading / 2
        z = np.zeros_like(h)
        return np.column_stack([z, np.sin(h), z, np.cos(h)])

    def snapshot(self, schema):
        return schema.snapshot(self.ids, {"position": self.pos, "rotation": self.quats()})


class Tracked:
    """The record of one measured client: views sent with the tick each entity's codes are from."""

    def __init__(self):
        self.src = {}           # seq -> int array aligned with that view's ids
        self.views = {}         # seq -> view
        self.shown = None       # seq of the newest view delivered


def source_ticks(t, view, world, tr, prev_seq, base_seq):
    """The world tick each entity of ``view`` has its codes from."""
    ids = view.ids
    src = np.full(ids.shape[0], -1, dtype=np.int64)
    pos = np.minimum(np.searchsorted(world.ids, ids), world.ids.shape[0] - 1)
    same = (world.ids[pos] == ids) & np.all(world.matrix[pos] == view.matrix, axis=1)
    src[same] = t
    for s in (prev_seq, base_seq):
        if s is None or s not in tr.views or same.all():
            continue
        v, vs = tr.views[s], tr.src[s]
        if v.ids.shape[0] == 0:
            continue
        p = np.minimum(np.searchsorted(v.ids, ids), v.ids.shape[0] - 1)
        hit = ~same & (v.ids[p] == ids) & np.all(v.matrix[p] == view.matrix, axis=1)
        src[hit] = vs[p[hit]]
        same |= hit
    return src


def run_big(args, weights_kind, threads, out, plot_data=None, builder="c"):
    schema = big_schema()
    # a smaller world (--quick, --entities) keeps the density: 100,000 in a 4 km square
    world_sim = BigWorld(args.entities, half=2000.0 * math.sqrt(args.entities / 100_000), moving=0.3,
                         seed=args.seed)
    dt = 1.0 / args.hz
    M = args.clients
    players = np.flatnonzero(world_sim.moving)[:M]
    # as a StreamServer does: one PacketCache for every client's encoder, one ViewShare for their
    # builders (equal views are one Snapshot, coded once); builder "py": the reference builder
    # in Python and the interest query in NumPy (main's before the compiled ones), sharing nothing
    vshare = ViewShare() if builder == "c" and not args.no_share else None
    cache = qc.PacketCache(256) if vshare is not None else None
    encoders = [qc.SnapshotEncoder(schema, 64, max_datagram=1200, cache=cache) for _ in range(M)]
    if builder == "py":
        builders = [ViewBuilderPy(schema, e) for e in encoders]
    else:
        builders = [ViewBuilder(schema, e, vshare) for e in encoders]
    rng = np.random.default_rng(args.seed + 1)
    delay, loss = 3, 0.05
    arrive = {}             # tick -> [(client, seq)]
    acks = {}               # tick -> [(client, seq)]
    tracked = {c: Tracked() for c in range(0, M, 10)}
    latest = {}             # client -> newest seq delivered (the client's ack)
    t_int, t_view, t_enc, t_total, t_cpu = [], [], [], [], []
    sizes = []
    chosen = 0              # entities given the world's codes (after the warm-up)
    stale, stale_near, errs_p, errs_r = [], [], [], []
    missing = [0, 0]
    dist_bins = np.arange(0, args.radius + 1e-9, 10.0)
    bin_stale = [[] for _ in dist_bins]
    bin_err = [[] for _ in dist_bins]
    bin_abs = np.zeros((len(dist_bins), 2))     # per distance bin: interest entities absent, all
    worlds = {}
    truth = {}
    pool = ThreadPoolExecutor(threads) if threads > 1 else None
    chunks = [list(c) for c in np.array_split(np.arange(M), threads)]

    def serve(clients, t, world, lists, wts, res):
        # as StreamServer.send does: on one thread a client at a time; on several, batches of
        # 16 clients begun with the GIL, computed in one span without it, ended in order
        # (quantcodec.session._BATCH); the views' time (begin, compute, end) shared out evenly
        tv = te = cv = ce = 0.0
        batch = 1 if threads == 1 or builder == "py" else 16
        if batch > 1:
            # (imported here: parts 4 and 5 run against builds without it, for comparisons)
            from quantcodec._views import compute as compute_views
        for k in range(0, len(clients), batch):
            run = clients[k:k + batch]
            a = time.perf_counter()
            ca = time.thread_time()
            if batch == 1:
                c = run[0]
                vs = [builders[c].build(t, world, lists[c], None if wts is None else wts[c], args.budget)]
            else:
                for c in run:
                    builders[c].begin(t, world, lists[c], None if wts is None else wts[c], args.budget)
                compute_views([builders[c] for c in run])
                vs = [builders[c].end() for c in run]
            tv += time.perf_counter() - a
            cv += time.thread_time() - ca
            for c, v in zip(run, vs):
                b = time.perf_counter()
                cb = time.thread_time()
                dg = encoders[c].encode_datagrams(t, v) if v is not None else []
                te += time.perf_counter() - b
                ce += time.thread_time() - cb
                res[c] = (v, sum(len(d) for d in dg), encoders[c].last_baseline if v is not None else None,
                          builders[c].last_sent if v is not None else 0)
        return tv, te, cv, ce

    # the first 1.5 s: every client joining at once, and the encoders' windows of 64 packets
    # filling (until then each tick takes new memory from the system: page faults, not work)
    warm = min(args.ticks // 3, 90)
    cpu = [0.0, 0.0]                    # CPU seconds of the views and the encoding (all threads)
    for t in range(args.ticks):
        world_sim.step(dt)
        world = world_sim.snapshot(schema)
        worlds[t] = world
        truth[t] = (world_sim.pos.copy(), world_sim.quats())
        worlds.pop(t - 80, None)
        truth.pop(t - 80, None)
        for c, s in acks.pop(t, ()):
            encoders[c].ack(s)
        t0 = time.perf_counter()
        p0 = time.process_time()
        centres = world_sim.pos[players][:, [0, 2]]
        index = interest.GridIndex(world_sim.pos[:, [0, 2]], world.ids, cell=args.radius / 2)
        dist = weights_kind == "distance"

        def query(ch):
            # builder "py": the query as main ran it too (NumPy over all clients at once, ids
            # unsorted), the whole "before"
            if builder == "py":
                return index._query(centres[ch], args.radius, None, dist, False, numpy=True)
            # sorted: the query's radix sort (in its one call without the GIL) is cheaper than
            # the builder's merge sort of the cells' runs
            return index.within(centres[ch], args.radius, distances=dist)
        if pool is None:
            got = [query(slice(None))]
        else:
            got = list(pool.map(query, [slice(c[0], c[-1] + 1) for c in chunks]))
        if dist:
            lists = [x for g in got for x in g[0]]
            wts = [1.0 / (1.0 + d / 25.0) for g in got for d in g[1]]
        else:
            lists = [x for g in got for x in g]
            wts = None
        t1 = time.perf_counter()
        res = [None] * M
        if pool is None:
            parts = [serve(range(M), t, world, lists, wts, res)]
        else:
            parts = list(pool.map(lambda ch: serve(ch, t, world, lists, wts, res), chunks))
        tv = sum(p[0] for p in parts)
        te = sum(p[1] for p in parts)
        cpu[0] += sum(p[2] for p in parts)
        cpu[1] += sum(p[3] for p in parts)
        t2 = time.perf_counter()
        p2 = time.process_time()
        if t == warm - 1:
            cpu[0] = cpu[1] = 0.0
        if t >= warm:
            t_int.append(t1 - t0)
            t_total.append(t2 - t0)
            t_cpu.append(p2 - p0)
            # per-thread sums: split the wall time of the clients' part in their proportion
            share = (t2 - t1) / max(tv + te, 1e-12)
            t_view.append(tv * share)
            t_enc.append(te * share)
        # the link, and the measurements on the tracked clients
        for c in range(M):
            v, nbytes, base, nsent = res[c]
            if t >= warm:
                sizes.append(nbytes)
                chosen += nsent
            if v is None:
                continue
            tr = tracked.get(c)
            if tr is not None:
                prev_seq = max(tr.views) if tr.views else None
                tr.src[t] = source_ticks(t, v, world, tr, prev_seq, base)
                tr.views[t] = v
                for s in [s for s in tr.views if s < t - 70]:
                    del tr.views[s], tr.src[s]
            if rng.random() >= loss:
                arrive.setdefault(t + delay, []).append((c, t))
        for c, s in arrive.pop(t, ()):
            if latest.get(c, -1) < s:
                latest[c] = s
                tr = tracked.get(c)
                if tr is not None:
                    tr.shown = s
            if rng.random() >= loss:
                acks.setdefault(t + delay, []).append((c, latest[c]))
        if t < warm:
            continue
        pos_now, quat_now = truth[t]
        for c, tr in tracked.items():
            ids = np.sort(lists[c])
            if tr.shown is None or tr.shown not in tr.views:
                missing[0] += ids.shape[0]
                missing[1] += ids.shape[0]
                continue
            v, src = tr.views[tr.shown], tr.src[tr.shown]
            p = np.minimum(np.searchsorted(v.ids, ids), max(0, v.ids.shape[0] - 1))
            inview = (v.ids[p] == ids) if v.ids.shape[0] else np.zeros(ids.shape[0], bool)
            missing[0] += int((~inview).sum())
            missing[1] += ids.shape[0]
            if plot_data is not None:
                ca = world_sim.pos[players[c]][[0, 2]]
                da = np.linalg.norm(pos_now[np.searchsorted(world.ids, ids)][:, [0, 2]] - ca, axis=1)
                ba = np.minimum((da // 10).astype(int), len(dist_bins) - 1)
                np.add.at(bin_abs[:, 0], ba, ~inview)
                np.add.at(bin_abs[:, 1], ba, 1)
            rows = p[inview]
            age = tr.shown - src[rows]
            stale.append(age)
            wrow = np.searchsorted(world.ids, ids[inview])
            cols = v.columns
            perr = np.linalg.norm(cols["position"][rows] - pos_now[wrow], axis=1) * 1000.0
            rerr = quat_angle_deg(cols["rotation"][rows].astype(np.float64), quat_now[wrow])
            errs_p.append(perr)
            errs_r.append(rerr)
            d = np.linalg.norm(pos_now[wrow][:, [0, 2]] - world_sim.pos[players[c]][[0, 2]], axis=1)
            stale_near.append(age[d <= 25.0])
            if plot_data is not None:
                b = np.minimum((d // 10).astype(int), len(dist_bins) - 1)
                for k in np.unique(b):
                    bin_stale[k].append(age[b == k])
                    bin_err[k].append(perr[b == k])
    if pool is not None:
        pool.shutdown()
    stale = np.concatenate(stale) if stale else np.zeros(1)
    near = np.concatenate(stale_near) if stale_near else np.zeros(1)
    ep = np.concatenate(errs_p) if errs_p else np.zeros(1)
    er = np.concatenate(errs_r) if errs_r else np.zeros(1)
    sizes = np.asarray(sizes, dtype=np.float64)
    ms = lambda a: 1000.0 * float(np.mean(a))      # noqa: E731
    r = {
        "weights": weights_kind, "threads": threads, "builder": builder, "clients": M,
        "tick_ms": ms(t_total), "tick_ms_median": 1000.0 * float(np.median(t_total)),
        "cpu_ms": ms(t_cpu), "cpu_ms_median": 1000.0 * float(np.median(t_cpu)),
        "shared_views": vshare.hits if vshare is not None else 0,
        "shared_trials": vshare.trial_hits if vshare is not None else 0,
        "cache_hits": cache.hits if cache is not None else 0, "interest_ms": ms(t_int), "views_ms": ms(t_view), "encode_ms": ms(t_enc),
        "views_us_client": ms(t_view) * 1000 / M, "encode_us_client": ms(t_enc) * 1000 / M,
        "views_cpu_us": cpu[0] * 1e6 / (M * max(1, args.ticks - warm)),
        "encode_cpu_us": cpu[1] * 1e6 / (M * max(1, args.ticks - warm)),
        "bytes": float(sizes.mean()), "budget_used": float(sizes.mean() / args.budget),
        "bytes_max": float(sizes.max()),
        "stale_p99": float(np.percentile(stale, 99)), "stale_max": float(stale.max()),
        "stale_mean": float(stale.mean()),
        "near_p99": float(np.percentile(near, 99)) if near.size else 0.0,
        "near_max": float(near.max()) if near.size else 0.0,
        "err_mm_p99": float(np.percentile(ep, 99)), "err_mm_max": float(ep.max()),
        "err_deg_p99": float(np.percentile(er, 99)), "err_deg_max": float(er.max()),
        "missing": missing[0] / max(1, missing[1]),
        "interest_mean": float(np.mean([len(x) for x in lists])),
        "trials": sum(b.trials for b in builders) / (M * args.ticks),
        "bits_chg": float(np.mean([b._bits_chg for b in builders])),
        "bits_new": float(np.mean([b._bits_new for b in builders])),
        "bits_per_update": float(8 * sizes.sum() / max(1, chosen)),
    }
    if plot_data is not None:
        plot_data[weights_kind] = (dist_bins + 5.0,
                                   [float(np.mean(np.concatenate(x))) if x else np.nan for x in bin_stale],
                                   [float(np.percentile(np.concatenate(x), 99)) if x else np.nan for x in bin_err],
                                   np.where(bin_abs[:, 1] > 0, bin_abs[:, 0] / np.maximum(bin_abs[:, 1], 1), np.nan))
    return r


def part1(args, out, plot_data):
    out(f"part 1: {args.entities:,} entities in a 4 km square (30% moving), {args.clients:,} clients "
        f"seeing {args.radius:g} m, budget {args.budget} bytes, {args.hz} Hz, {args.ticks} ticks, "
        f"3 ticks of delay each way, 5% loss")
    rows = []
    for wk in args.weights:
        for th in args.threads:
            for bk in args.builders:            # alternated: before and after in one run
                r = run_big(args, wk, th, out,
                            plot_data if th == args.threads[0] and bk == args.builders[-1] else None, bk)
                rows.append(r)
    r0 = rows[0]
    out(f"  mean interest: {r0['interest_mean']:.0f} entities a client; trial encodes a client a tick: "
        f"{r0['trials']:.2f}; learned bits a changed entity {r0['bits_chg']:.0f}, an entering one "
        f"{r0['bits_new']:.0f}; bits on the wire per entity given the world's codes "
        f"{r0['bits_per_update']:.1f} (equal weights)")
    out(f"  {'builder':7s} {'weights':9s} {'thr':>3s} {'tick ms':>8s} {'cpu ms':>7s} {'interest':>9s} {'views':>7s} {'encode':>7s}"
          f" {'us/cl view':>10s} {'us/cl enc':>9s} {'cpu view':>8s} {'cpu enc':>7s} {'B/client':>9s} {'used':>5s}"
          f" {'stale p99':>9s} {'max':>4s} {'<=25m p99':>9s} {'max':>4s}"
          f" {'mm p99':>7s} {'max':>7s} {'deg p99':>7s} {'max':>6s} {'absent':>6s}")
    for r in rows:
        out(f"  {r['builder']:7s} {r['weights']:9s} {r['threads']:3d} {r['tick_ms']:8.1f} {r['cpu_ms']:7.1f} {r['interest_ms']:9.1f}"
            f" {r['views_ms']:7.1f} {r['encode_ms']:7.1f} {r['views_us_client']:10.1f}"
            f" {r['encode_us_client']:9.1f} {r['views_cpu_us']:8.1f} {r['encode_cpu_us']:7.1f}"
            f" {r['bytes']:9.0f} {r['budget_used']:5.0%}"
            f" {r['stale_p99']:9.0f} {r['stale_max']:4.0f} {r['near_p99']:9.0f} {r['near_max']:4.0f}"
            f" {r['err_mm_p99']:7.0f} {r['err_mm_max']:7.0f} {r['err_deg_p99']:7.2f} {r['err_deg_max']:6.2f}"
            f" {r['missing']:6.1%}")
    shared = [r for r in rows if r["builder"] == "c"]
    if shared:
        out(f"  shared across clients (ViewShare / PacketCache): views {shared[0]['shared_views']}, trial sizes "
            f"{shared[0]['shared_trials']}, packets {shared[0]['cache_hits']} (first compiled row)")
    out(f"  load average during the run: {' '.join(f'{x:.1f}' for x in os.getloadavg())} (1, 5, 15 min)")
    out("  (builder: c the compiled ViewBuilder, py the Python reference; cpu ms: the process's CPU "
        "time a tick, all threads (time.process_time), which other processes' load does not inflate; "
        "ms: a tick's wall time; views = priority, selection and trial encodes; encode = the "
        "client's packet; us/cl: wall time a client, cpu: CPU time a client (time.thread_time), "
        "which the machine's other load does not inflate; staleness in ticks behind the view's own tick; errors: what the client "
        "shows against the world at that moment, 3 ticks of delay included; absent: share of "
        "interest entities not yet in the client's view)")
    return rows


# -- part 2: against Gaffer's State Synchronization ----------------------------------------------

class StateSync:
    """Gaffer On Games, "State Synchronization" (2015), re-implemented on the same quantized codes:
    each tick a packet of at most ``budget`` bytes (the same 4-byte check and 2-byte sequence as a
    quantcodec datagram, a 1-byte count) holds the full quantized state of the bodies of highest
    accumulated priority (each tick adds the body's weight, being sent resets it to 0); each
    state is an index of ceil(log2 N) bits and the schema's whole record. No acks: the client
    keeps, per body, the state of the newest packet that carried it."""

    def __init__(self, n, record_bits, budget):
        self.acc = np.zeros(n)
        self.per = math.ceil(math.log2(max(2, n))) + record_bits
        self.k = max(0, ((budget - 7) * 8) // self.per)

    def packet(self, weights):
        self.acc += weights
        order = np.argsort(-self.acc, kind="stable")[:self.k]
        self.acc[order] = 0.0
        return order


def part2(args, out):
    from quantcodec.tools.link import default_schema
    from quantcodec.tools.scene import simulate

    sc = simulate(args.bodies, args.seconds, 60, args.seed)
    schema = default_schema(velocity=False, rest=True)
    T, N = sc.positions.shape[:2]
    delay, loss = 3, 0.05
    start = 60
    speeds = np.linalg.norm(sc.velocities, axis=2)
    out("")
    out(f"part 2: the bench scene ({N} bodies, {T} ticks at 60 Hz), one client, 5% loss and "
        f"3 ticks of delay each way; errors of what the client shows against the world at that "
        f"moment, every body and tick from 1 s on")
    worlds = [schema.snapshot(sc.ids[k].astype(np.uint64),
                              {"position": sc.positions[k], "rotation": sc.orientations[k],
                               "rest": sc.at_rest[k]}) for k in range(T)]
    row_of = [np.argsort(sc.ids[k]) for k in range(T)]        # snapshot row -> scene row
    results = []
    out(f"  {'budget':>6s} {'scheme':34s} {'B/tick':>6s} {'mm p99':>7s} {'mm max':>7s} "
        f"{'deg p99':>7s} {'deg max':>7s} {'late p99':>9s}")
    for budget in args.budgets:
        row = {"budget": budget}
        for name, kind in (("quantcodec views, equal weights", "equal"),
                           ("quantcodec views, speed weights", "speed"),
                           ("Gaffer state sync, speed weights", "gaffer")):
            rng = np.random.default_rng(args.seed + budget)
            shown_pos = np.full((N, 3), np.nan)
            shown_rot = np.full((N, 4), np.nan)
            errs_p, errs_r, nbytes, fill = [], [], [], []
            queue = {}
            if kind == "gaffer":
                ss = StateSync(N, schema.bits, budget)
                newest = np.full(N, -1)
                recq = [schema.dequantize_many(w.codes) for w in worlds]   # the states it sends
            else:
                enc = qc.SnapshotEncoder(schema, 64)
                b = ViewBuilder(schema, enc)
                acks = {}
                shown_seq = -1
            for t in range(T):
                w = worlds[t]
                if kind == "gaffer":
                    wt = 0.1 + speeds[t][row_of[t]]
                    sel = ss.packet(wt)
                    nbytes.append(7 + math.ceil(len(sel) * ss.per / 8))
                    if rng.random() >= loss:
                        queue.setdefault(t + delay, []).append((t, sel))
                    for s, rows in queue.pop(t, ()):
                        fresh = rows[newest[rows] < s]
                        newest[fresh] = s
                        cols = recq[s]
                        shown_pos[fresh] = cols["position"][fresh]
                        shown_rot[fresh] = cols["rotation"][fresh]
                else:
                    for s in acks.pop(t, ()):
                        enc.ack(s)
                    wt = None if kind == "equal" else 0.1 + speeds[t][row_of[t]]
                    v = b.build(t, w, None, wt, budget)
                    dg = enc.encode_datagrams(t, v) if v is not None else []
                    nbytes.append(sum(len(d) for d in dg))
                    if nbytes[-1] > 0.9 * budget:           # a full packet: what filled it
                        fill.append((b.last_inflight, b.last_sent))
                    if v is not None and rng.random() >= loss:
                        queue.setdefault(t + delay, []).append((t, v))
                    for s, v in queue.pop(t, ()):
                        if s > shown_seq:
                            shown_seq = s
                            cols = v.columns
                            rows = np.searchsorted(w.ids, v.ids)
                            shown_pos[:] = np.nan
                            shown_pos[rows] = cols["position"]
                            shown_rot[rows] = cols["rotation"]
                        if rng.random() >= loss:
                            acks.setdefault(t + delay, []).append(shown_seq)
                if t >= start:
                    pos = sc.positions[t][row_of[t]].astype(np.float64)
                    rot = sc.orientations[t][row_of[t]].astype(np.float64)
                    ok = ~np.isnan(shown_pos[:, 0])
                    pe = np.full(N, np.inf)     # a body not shown yet: an infinite error
                    re = np.full(N, 180.0)
                    pe[ok] = np.linalg.norm(shown_pos[ok] - pos[ok], axis=1) * 1000.0
                    re[ok] = quat_angle_deg(shown_rot[ok], rot[ok])
                    errs_p.append(pe)
                    errs_r.append(re)
            ep, er = np.concatenate(errs_p), np.concatenate(errs_r)
            half = np.concatenate(errs_p[(T - start) // 2:])
            # "higher": a p99 that falls on a body not shown yet is inf, not an interpolated nan
            r = {"B": float(np.mean(nbytes[start:])), "mm_p99": float(np.percentile(ep, 99, method="higher")),
                 "mm_max": float(ep.max()), "deg_p99": float(np.percentile(er, 99, method="higher")),
                 "deg_max": float(er.max()), "mm_p99_late": float(np.percentile(half, 99, method="higher"))}
            if fill:
                f = np.asarray(fill, dtype=np.float64)
                r["full_packets"] = len(fill)
                r["inflight"] = float(f[:, 0].mean())
                r["fresh"] = float(f[:, 1].mean())
            elif kind == "gaffer":
                r["full_packets"] = len(nbytes)
                r["inflight"] = 0.0
                r["fresh"] = float(ss.k)
            row[kind] = r
            extra = (f"   full packets: {r['full_packets']}, a packet: {r['inflight']:.0f} in flight "
                     f"(re-sent until acked), {r['fresh']:.0f} given the world's codes") if "fresh" in r else ""
            out(f"  {budget:6d} {name:34s} {r['B']:6.0f} {r['mm_p99']:7.1f} {r['mm_max']:7.0f} "
                f"{r['deg_p99']:7.2f} {r['deg_max']:7.1f} {r['mm_p99_late']:9.1f}" + extra)
        results.append(row)
    out("  (late p99: position error in mm over the second half of the run, when every body has "
        "arrived; inf: more than 1% of the body-ticks are of bodies not shown yet)")
    out("  p99 position error, quantcodec (the better weights) / Gaffer: " + ", ".join(
        f"{r['budget']} B: {min(r['equal']['mm_p99'], r['speed']['mm_p99']) / r['gaffer']['mm_p99']:.2f}"
        f" (late {min(r['equal']['mm_p99_late'], r['speed']['mm_p99_late']) / r['gaffer']['mm_p99_late']:.2f})"
        for r in results))
    return results


# -- part 3: sharing across clients ------------------------------------------------------------

def part3(args, out):
    """A crowd: ``args.clients`` clients seeing the same 150 m of the large world (one spot),
    acks 7 ticks late for all: each client's view and packet on its own, then with a ViewShare
    for the builders and a PacketCache for the encoders (StreamServer's setting): CPU time a
    client a tick (view + packet, process time), alternated, ``args.repeats`` times each."""
    schema = big_schema()
    M = args.clients
    out("")
    out(f"part 3: sharing across clients: {M:,} clients seeing the same {args.radius:g} m of "
        f"{args.entities:,} entities, budget {args.budget}, acks 7 ticks late")
    res = {False: [], True: []}
    for rep in range(args.repeats):
        for shared in (False, True):
            sim = BigWorld(args.entities, half=2000.0 * math.sqrt(args.entities / 100_000), seed=args.seed)
            vshare = ViewShare() if shared else None
            cache = qc.PacketCache(256) if shared else None
            encs = [qc.SnapshotEncoder(schema, 64, cache=cache) for _ in range(M)]
            bs = [ViewBuilder(schema, e, vshare) for e in encs]
            cpu, n = 0.0, 0
            for t in range(40):
                sim.step(1.0 / args.hz)
                world = sim.snapshot(schema)
                ids = world.ids[np.hypot(sim.pos[:, 0], sim.pos[:, 2]) < args.radius]
                if t >= 7:
                    for e in encs:
                        e.ack(t - 7)
                a = time.process_time()
                for c in range(M):
                    v = bs[c].build(t, world, ids, None, args.budget)
                    if v is not None:
                        encs[c].encode_datagrams(t, v)
                if t >= 10:
                    cpu += time.process_time() - a
                    n += 1
            res[shared].append(1e6 * cpu / (n * M))
            if shared and rep == 0:
                # (a shared packet reaches its other clients as their builders' offers: counted by
                # the encoders that sent an offered packet instead of coding it)
                offers = sum(e._state.offers_used for e in encs)
                extra = (f"views shared {vshare.hits}, trial sizes reused {vshare.trial_hits}, packets "
                         f"sent from offers {offers}")
    med = {k: float(np.median(v)) for k, v in res.items()}
    out(f"  CPU a client a tick (view + packet), median of {args.repeats}: alone {med[False]:.1f} us, "
        f"shared {med[True]:.1f} us ({extra}; {len(ids)} entities)")
    return med


# -- part 4: the server's tick on threads ------------------------------------------------------

def _serve(args, schema, threads, hysteresis, each=None):
    """Part 4's server for ``args.ticks`` ticks: the large world, a StreamServer (``threads``,
    ``hysteresis``, the budget and history of ``args``) and its clients in this process, acks 3
    ticks late, no loss. Returns ``(server, ticks, bytes)``: per tick after the first 1.5 s (every
    client joining at once, the windows filling) the interest query's and send's wall and process
    CPU time (all threads), and the bytes a client. ``each(t, measured)``, if given, is called
    after each tick's send."""
    M = args.clients
    warm = min(args.ticks // 3, 90)
    sim = BigWorld(args.entities, half=2000.0 * math.sqrt(args.entities / 100_000), moving=0.3,
                   seed=args.seed)
    players = np.flatnonzero(sim.moving)[:M]
    server = qc.StreamServer(schema, budget=args.budget, threads=threads, history=args.history,
                             hysteresis=hysteresis)
    for c in range(M):
        server.connect(c)
    replies = {}
    nbytes = []
    clients = [qc.StreamClient(schema, nonce=c + 1) for c in range(M)]
    pending = {}
    ticks = []
    for t in range(args.ticks):
        sim.step(1.0 / args.hz)
        world = sim.snapshot(schema)
        for c, r in replies.pop(t, ()):
            server.receive(c, r)
        w0 = time.perf_counter()
        p0 = time.process_time()
        index = interest.GridIndex(sim.pos[:, [0, 2]], world.ids, cell=args.radius / 2)
        near = index.within(sim.pos[players][:, [0, 2]], args.radius, threads=threads)
        w1 = time.perf_counter()
        p1 = time.process_time()
        sent = server.send(t, world, interest=dict(zip(range(M), near)))
        w2 = time.perf_counter()
        p2 = time.process_time()
        if t >= warm:
            ticks.append((w1 - w0, p1 - p0, w2 - w1, p2 - p1))
            nbytes.append(sum(len(d) for dgs in sent.values() for d in dgs) / M)
        if each is not None:
            each(t, t >= warm)
        _link(t, sent, pending, clients, replies)
    return server, ticks, nbytes


def _link(t, sent, pending, clients, replies):
    """Parts 4, 5 and 7's link: each client's datagrams of tick ``t`` arrive 3 ticks later
    (``pending``), its reply 3 after that (``replies``, which the server takes at that tick)."""
    pending[t + 3] = sent
    for c, dgs in pending.pop(t, {}).items():
        for d in dgs:
            clients[c].receive(d)
        r = clients[c].reply()
        if r is not None:
            replies.setdefault(t + 3, []).append((c, r))


def part4(args, out):
    """What a user's server runs: ``StreamServer(threads=N).send(tick, world, interest=...)`` for
    the large world's clients (``_serve``), for each thread count, alternated ``args.repeats``
    times; medians over the ticks."""
    schema = big_schema()
    M = args.clients
    out("")
    out(f"part 4: StreamServer.send on threads: {M:,} clients seeing {args.radius:g} m of "
        f"{args.entities:,} entities, budget {args.budget}, acks 3 ticks late, {args.ticks} ticks, "
        f"threads {args.threads}, {args.repeats} alternated runs each")
    runs = [(th, h) for h in args.hysteresis for th in args.threads]
    res = {r: [] for r in runs}
    for rep in range(args.repeats):
        for th, hyst in runs:
            server, ticks, nbytes = _serve(args, schema, th, hyst)
            a = 1000.0 * np.median(np.asarray(ticks), axis=0)
            res[th, hyst].append(a)
            # what the server holds: the views in its clients' encoders' windows (their ids and
            # code rows; internals read for the bench: StreamServer keeps them per client)
            held = [v for peer in server._peers.values() for v in peer.encoder._state.sent.values()]
            mb = sum(v.ids.nbytes + v.matrix.nbytes for v in held) / 2**20
            hy = f", hysteresis {hyst}" if hyst else ""
            out(f"  run {rep + 1}, {th} thread{'s' if th > 1 else ' '}{hy}: interest {a[0]:5.1f} ms wall "
                f"{a[1]:5.1f} CPU, send {a[2]:6.1f} ms wall {a[3]:6.1f} CPU, tick {a[0] + a[2]:6.1f} ms wall "
                f"{a[1] + a[3]:6.1f} CPU; {np.mean(nbytes):.0f} bytes a client a tick; the server holds "
                f"{len(held):,} views, {mb:,.0f} MiB (history {args.history})")
    out(f"  {'threads':>7s} {'hyst':>4s} {'tick wall':>9s} {'tick CPU':>8s} {'interest':>8s} {'send wall':>9s} "
        f"{'send CPU':>8s}   (ms a tick: medians over the ticks, then over the {args.repeats} runs)")
    med = {}
    for th, hyst in runs:
        a = np.median(np.asarray(res[th, hyst]), axis=0)
        med[th if len(args.hysteresis) == 1 else (th, hyst)] = a
        out(f"  {th:7d} {hyst:4d} {a[0] + a[2]:9.1f} {a[1] + a[3]:8.1f} {a[0]:8.1f} {a[2]:9.1f} {a[3]:8.1f}")
    out(f"  load average during the run: {' '.join(f'{x:.1f}' for x in os.getloadavg())} (1, 5, 15 min)")
    return med


# -- part 7: pauses (the garbage collector) -------------------------------------------------------

def part7(args, out):
    """The garbage collector's full collections while part 4's server runs (one thread), with the
    snapshots untracked (as the package makes them), tracked (as before 2026-12-07), and untracked
    with ``gc.freeze()`` after the first tick (docs/views.md's advice: every client connected),
    alternated ``args.repeats`` times: the full collections that ran during the measured ticks and
    their pauses (timed by gc.callbacks), send's median, 99th percentile and worst wall time a
    tick, and then, the clients and the run's own objects gone, what the server alone costs a
    full collection (``gc.collect()``, median of 3) and how many objects it walks."""
    import gc
    from quantcodec import _delta
    schema = big_schema()
    out("")
    out(f"part 7: pauses: {args.clients:,} clients seeing {args.radius:g} m of {args.entities:,} "
        f"entities, budget {args.budget}, history {args.history}, {args.ticks} ticks, 1 thread, "
        f"{args.repeats} alternated runs each")
    kinds = ("untracked", "tracked", "frozen")
    res = {k: [] for k in kinds}
    for rep in range(args.repeats):
        for kind in kinds:
            for cls in (qc.Snapshot, _delta.SnapshotData):
                _delta._untracked_class(cls, kind != "tracked")
            pauses, began, on = [], [0.0], [False]

            def timer(phase, info):
                if info["generation"] == 2 and on[0]:
                    if phase == "start":
                        began[0] = time.perf_counter()
                    else:
                        pauses.append(time.perf_counter() - began[0])

            def each(t, measured):
                on[0] = measured
                if t == 0 and kind == "frozen":
                    gc.freeze()
            gc.collect()
            gc.callbacks.append(timer)
            try:
                server, ticks, _ = _serve(args, schema, 1, 0, each)
            finally:
                gc.callbacks.remove(timer)
                for cls in (qc.Snapshot, _delta.SnapshotData):
                    _delta._untracked_class(cls, True)
            send = 1000.0 * np.asarray([x[2] for x in ticks])
            gc.collect()
            full = []
            for _ in range(3):
                t0 = time.perf_counter()
                gc.collect()
                full.append(time.perf_counter() - t0)
            row = (np.median(send), np.percentile(send, 99), send.max(), len(pauses),
                   1000.0 * (np.mean(pauses) if pauses else 0.0), 1000.0 * np.median(full),
                   len(gc.get_objects()))       # (not the frozen ones: never walked)
            gc.unfreeze()
            res[kind].append(row)
            out(f"  run {rep + 1}, {kind:9s}: send {row[0]:5.1f} ms median, {row[1]:5.1f} p99, "
                f"{row[2]:5.1f} worst; {row[3]} full collections in {len(ticks)} ticks, "
                f"{row[4]:5.1f} ms each; the server alone: {row[5]:5.1f} ms a full collection, "
                f"{row[6]:,} objects walked")
            del server
    out(f"  {'snapshots':>9s} {'send p50':>8s} {'p99':>6s} {'worst':>6s} {'full colls':>10s} "
        f"{'ms each':>7s} {'server alone ms':>15s} {'objects':>8s}   (medians over the {args.repeats} runs)")
    med = {}
    for kind in kinds:
        a = np.median(np.asarray(res[kind]), axis=0)
        med[kind] = a
        out(f"  {kind:>9s} {a[0]:8.1f} {a[1]:6.1f} {a[2]:6.1f} {a[3]:10.0f} {a[4]:7.1f} {a[5]:15.1f} "
            f"{a[6]:8,.0f}")
    out(f"  load average during the run: {' '.join(f'{x:.1f}' for x in os.getloadavg())} (1, 5, 15 min)")
    return med


def _builders(args):
    """Parts 5 and 6's server by hand: the large world, its players, one encoder a client (one
    PacketCache) and its ViewBuilder (one ViewShare): ``(schema, sim, players, encs, builders)``."""
    schema = big_schema()
    sim = BigWorld(args.entities, half=2000.0 * math.sqrt(args.entities / 100_000), seed=args.seed)
    players = np.flatnonzero(sim.moving)[:args.clients]
    vs = ViewShare()
    cache = qc.PacketCache(256)
    encs = [qc.SnapshotEncoder(schema, 64, cache=cache) for _ in range(args.clients)]
    return schema, sim, players, encs, [ViewBuilder(schema, e, vs) for e in encs]


def _turns(args, schema, sim, players, encs, acks):
    """Parts 6's ticks: the world stepped, the acks due taken, the world quantized and each
    player's interest found: yields ``(t, world, interest lists)``."""
    for t in range(args.ticks):
        sim.step(1.0 / args.hz)
        for c, sq in acks.pop(t, ()):
            encs[c].ack(sq)
        world = sim.snapshot(schema)
        yield t, world, interest.GridIndex(sim.pos[:, [0, 2]], world.ids, cell=args.radius / 2).within(
            sim.pos[players][:, [0, 2]], args.radius)


def _end(b, enc, t, c, acks):
    """A build computed, ended and coded; its ack due 6 ticks later."""
    v = b.end()
    if v is not None:
        enc.encode_datagrams(t, v)
    acks.setdefault(t + 6, []).append((c, t))


# -- part 5: where the GIL is held ----------------------------------------------------------------

def _gil_probe():
    """bench/gil_probe.c's counters when it is preloaded (LD_PRELOAD), else None."""
    import ctypes
    try:
        lib = ctypes.CDLL(None)
        read = lib.gil_probe_read
    except (OSError, AttributeError):
        return None
    buf = (ctypes.c_longlong * 4)()

    def snap():
        read(buf)
        return np.array(list(buf), dtype=np.float64)
    return snap


def part5(args, out):
    """Per step of the large world's tick on one thread (the world quantized, the grid, the
    interest query, each client's view, each client's packet): CPU time, GIL releases, and the
    CPU time with the GIL released and held (the CPU time split in the proportion of the wall
    times bench/gil_probe.c measures); then StreamServer.send on each of ``--threads``: wall, CPU,
    releases and the time threads waited to take the GIL back. What bounds a tick on two cores:
    max(held, CPU / 2), plus the waiting."""
    snap = _gil_probe()
    out("")
    out(f"part 5: where the GIL is held: {args.clients:,} clients, {args.entities:,} entities, "
        f"budget {args.budget}, {args.ticks} ticks (the last {args.ticks - min(args.ticks // 3, 90)})")
    if snap is None:
        out("  (no GIL probe: gcc -O2 -shared -fPIC -o /tmp/gil_probe.so bench/gil_probe.c -ldl, then "
            "LD_PRELOAD=/tmp/gil_probe.so python bench/bench_views.py --part 5; CPU time only below)")
        snap = lambda: np.zeros(4)      # noqa: E731
    M = args.clients
    warm = min(args.ticks // 3, 90)
    schema, sim, players, encs, bs = _builders(args)
    acks = {}
    # a build in its three steps where the builder has them (ViewBuilder.begin, compute, end:
    # what StreamServer.send runs on threads), else whole
    three = hasattr(ViewBuilder, "begin")
    if three:
        from quantcodec._views import compute as compute_views
    steps = ("world", "grid", "query") + (("view begin", "view compute", "view end") if three else ("views",)) \
        + ("packets",)
    acc = {k: np.zeros(4) for k in steps}          # CPU ns, releases, ns released, ns held

    def timed(name, t, f):
        s0 = snap()
        c0 = time.thread_time_ns()
        r = f()
        c1 = time.thread_time_ns()
        s1 = snap()
        if t >= warm:
            acc[name] += [c1 - c0, s1[0] - s0[0], s1[1] - s0[1], s1[3] - s0[3]]
        return r
    for t in range(args.ticks):
        sim.step(1.0 / args.hz)
        for c, sq in acks.pop(t, ()):
            encs[c].ack(sq)
        world = timed("world", t, lambda: sim.snapshot(schema))
        index = timed("grid", t, lambda: interest.GridIndex(sim.pos[:, [0, 2]], world.ids, cell=args.radius / 2))
        centres = sim.pos[players][:, [0, 2]]
        lists = timed("query", t, lambda: index.within(centres, args.radius))
        for c in range(M):
            if three:
                timed("view begin", t, lambda: bs[c].begin(t, world, lists[c], None, args.budget))
                timed("view compute", t, lambda: compute_views([bs[c]]))
                v = timed("view end", t, lambda: bs[c].end())
            else:
                v = timed("views", t, lambda: bs[c].build(t, world, lists[c], None, args.budget))
            if v is not None:
                timed("packets", t, lambda: encs[c].encode_datagrams(t, v))
            acks.setdefault(t + 6, []).append((c, t))
    n = args.ticks - warm
    out(f"  {'step':12s} {'CPU ms':>7s} {'releases':>8s} {'a client':>8s} {'released':>8s} {'held':>6s}"
        f"   (a tick; released / held: CPU ms with the GIL released / held)")
    tot = np.zeros(3)
    res = {}
    for k in steps:
        cpu_ns, rel, rel_ns, held_ns = acc[k]
        cpu = cpu_ns / n / 1e6
        free = cpu * rel_ns / max(1.0, rel_ns + held_ns) if rel else 0.0
        tot += [cpu, rel / n, free]
        res[k] = (cpu, rel / n, free)
        out(f"  {k:12s} {cpu:7.2f} {rel / n:8.0f} {rel / n / M:8.1f} {free:8.2f} {cpu - free:6.2f}")
    out(f"  {'tick':12s} {tot[0]:7.2f} {tot[1]:8.0f} {tot[1] / M:8.1f} {tot[2]:8.2f} {tot[0] - tot[2]:6.2f}"
        f"   -> on two cores at best max(held, CPU / 2) = {max(tot[0] - tot[2], tot[0] / 2):.1f} ms")
    # the server on threads: the time threads wait for the GIL
    for th in args.threads:
        sim = BigWorld(args.entities, half=2000.0 * math.sqrt(args.entities / 100_000), seed=args.seed)
        server = qc.StreamServer(schema, budget=args.budget, threads=th)
        for c in range(M):
            server.connect(c)
        clients = [qc.StreamClient(schema, nonce=c + 1) for c in range(M)]
        pend, rep, got = {}, {}, []
        for t in range(args.ticks):
            sim.step(1.0 / args.hz)
            world = sim.snapshot(schema)
            for c, r in rep.pop(t, ()):
                server.receive(c, r)
            near = interest.GridIndex(sim.pos[:, [0, 2]], world.ids, cell=args.radius / 2).within(
                sim.pos[players][:, [0, 2]], args.radius)
            s0 = snap()
            w0 = time.perf_counter()
            p0 = time.process_time()
            sent = server.send(t, world, interest=dict(zip(range(M), near)))
            w1 = time.perf_counter()
            p1 = time.process_time()
            s1 = snap()
            if t >= warm:
                got.append([w1 - w0, p1 - p0, s1[0] - s0[0], s1[2] - s0[2]])
            _link(t, sent, pend, clients, rep)
        a = np.median(np.asarray(got), axis=0)
        res[f"send{th}"] = a
        out(f"  StreamServer.send, {th} thread{'s' if th > 1 else ' '}: {1e3 * a[0]:6.1f} ms wall, {1e3 * a[1]:6.1f} "
            f"ms CPU, {a[2]:6.0f} GIL releases, {a[3] / 1e6:5.1f} ms waiting for the GIL (all threads; medians)")
    out(f"  load average during the run: {' '.join(f'{x:.1f}' for x in os.getloadavg())} (1, 5, 15 min)")
    return res


# -- part 6: a client's build with its state cold and warm ---------------------------------------

def _part6_setup(args, out, title):
    """Part 6's heading printed and its server by hand (``_builders``): ``(clients, warm-up
    ticks, schema, sim, players, encoders, builders)``."""
    warm = args.ticks // 3
    out("")
    out(f"{title}, {args.entities:,} entities, budget {args.budget}, {args.ticks} ticks "
        f"(the last {args.ticks - warm})")
    return (args.clients, warm) + _builders(args)


def part6(args, out):
    """Where a build's time goes when 1,000 clients take turns: each client's build is made
    twice a tick, once as the tick finds it (``ViewBuilder.begin``, ``compute``, ``abandon``:
    its state, its views and the encoder's scratch last touched a tick ago, 999 other clients
    ago) and at once again (the same build, its data in the caches and its branches just taken),
    which is then ended and coded. Medians over the ticks after the first third of the CPU time
    of ``compute`` a client; the difference is what the 1,000 clients' turns cost, not work."""
    from quantcodec._views import compute as compute_views
    M, warm, schema, sim, players, encs, bs = _part6_setup(
        args, out, f"part 6: a build cold and warm: {args.clients:,} clients")
    acks = {}
    cold, hot = [], []
    clock = time.thread_time_ns
    for t, world, lists in _turns(args, schema, sim, players, encs, acks):
        tc = th = 0
        for c in range(M):
            b = bs[c]
            if t >= warm:
                b.begin(t, world, lists[c], None, args.budget)
                c0 = clock()
                compute_views([b])
                tc += clock() - c0
                b.abandon()
            b.begin(t, world, lists[c], None, args.budget)
            c0 = clock()
            compute_views([b])
            th += clock() - c0
            _end(b, encs[c], t, c, acks)
        if t >= warm:
            cold.append(tc / M / 1e3)
            hot.append(th / M / 1e3)
    c, h = float(np.median(cold)), float(np.median(hot))
    out(f"  compute a client, CPU: {c:.1f} us as the tick finds it, {h:.1f} us at once again "
        f"({c / max(h, 1e-9):.1f}x)")
    return {"cold_us": c, "warm_us": h}


def part6_evict(args, out):
    """Where a client's state is when its turn comes (``--part 6 --evict``): every 4th client's
    build timed as the tick finds it and at once again (every third tick), and, on other ticks,
    at once again after writing 2 MiB (out of L1 and L2, not the L3) and then after writing 96
    MiB (out of the L3 too). The writes take the code out of the caches as well, so these bound
    the cost of where the state comes from rather than split it."""
    from quantcodec._views import compute as compute_views
    M, warm, schema, sim, players, encs, bs = _part6_setup(
        args, out, f"part 6, evictions: {args.clients:,} clients (every 4th timed)")
    small = np.ones((2 << 20) // 8)
    big = np.ones((96 << 20) // 8)
    clock = time.thread_time_ns
    res = {k: [] for k in ("cold", "warm", "l2", "l3")}
    acks = {}

    def timed(b, t, world, ids):
        b.begin(t, world, ids, None, args.budget)
        c0 = clock()
        compute_views([b])
        c1 = clock()
        b.abandon()
        return c1 - c0
    for t, world, lists in _turns(args, schema, sim, players, encs, acks):
        acc = dict.fromkeys(res, 0)
        for c in range(M):
            b = bs[c]
            if t >= warm and c % 4 == 0 and t % 3 == 2:     # (the tick after one with no writes)
                acc["cold"] += timed(b, t, world, lists[c])
                acc["warm"] += timed(b, t, world, lists[c])
            elif t >= warm and c % 4 == 0 and t % 3 == 0:
                timed(b, t, world, lists[c])
                small += 1.0
                acc["l2"] += timed(b, t, world, lists[c])
                big += 1.0
                acc["l3"] += timed(b, t, world, lists[c])
            b.begin(t, world, lists[c], None, args.budget)
            compute_views([b])
            _end(b, encs[c], t, c, acks)
        for k, v in acc.items():
            if v:
                res[k].append(v / ((M + 3) // 4) / 1e3)
    med = {k: float(np.median(v)) for k, v in res.items()}
    out(f"  compute a client, CPU: as the tick finds it {med['cold']:.1f} us, at once again "
        f"{med['warm']:.1f}, after 2 MiB written {med['l2']:.1f}, after 96 MiB written {med['l3']:.1f}")
    return med


def plot(path, data, out, args):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        out("(no plot: pip install matplotlib)")
        return
    fig, (a1, a2, a3) = plt.subplots(1, 3, figsize=(14, 3.8))
    for kind, (x, st, er, ab) in data.items():
        a1.plot(x, st, marker="o", label=f"{kind} weights")
        a2.plot(x, er, marker="o", label=f"{kind} weights")
        a3.plot(x, 100 * ab, marker="o", label=f"{kind} weights")
    a1.set_xlabel("distance from the client (m)")
    a1.set_ylabel("mean staleness of those shown (ticks)")
    a2.set_xlabel("distance from the client (m)")
    a2.set_ylabel("p99 position error at the client (mm)")
    a3.set_xlabel("distance from the client (m)")
    a3.set_ylabel("% of the interest not shown yet")
    for a in (a1, a2, a3):
        a.grid(alpha=0.3)
        a.legend()
    fig.suptitle(f"{args.budget:,} bytes a client a tick, {args.clients:,} clients, {args.entities:,} entities "
                 f"(bench/bench_views.py)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    out(f"plot: {path}")


def main(argv=None, out=print):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes: a few seconds")
    ap.add_argument("--part", type=int, choices=(0, 1, 2, 3, 4, 5, 6, 7), default=0,
                    help="1 to 7 only (0: 1 and 2); 3: sharing across clients (a crowd); "
                         "4: StreamServer.send on threads; 5: where the GIL is held; "
                         "6: a client's build cold and warm; 7: pauses (the garbage collector)")
    ap.add_argument("--repeats", type=int, default=3, help="part 3's, 4's and 7's alternated repeats")
    ap.add_argument("--entities", type=int, default=100_000)
    ap.add_argument("--clients", type=int, default=1000)
    ap.add_argument("--radius", type=float, default=150.0)
    ap.add_argument("--budget", type=int, default=1200)
    ap.add_argument("--hz", type=int, default=60)
    ap.add_argument("--history", type=int, default=64, help="part 4's StreamServer(history=)")
    ap.add_argument("--hysteresis", type=int, nargs="+", default=[0],
                    help="part 4's StreamServer(hysteresis=): each value alternated with the threads")
    ap.add_argument("--ticks", type=int, default=120)
    ap.add_argument("--bodies", type=int, default=300)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--budgets", type=int, nargs="+", default=[200, 400, 800, 1200])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="part 1's thread counts")
    ap.add_argument("--builders", nargs="+", choices=("c", "py"), default=["c"],
                    help="part 1's view builders: c (compiled), py (the Python reference); several alternate")
    ap.add_argument("--weights", nargs="+", choices=("equal", "distance"), default=["equal", "distance"],
                    help="part 1's weights")
    ap.add_argument("--no-share", action="store_true",
                    help="part 1: no ViewShare / PacketCache across clients")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--evict", action="store_true",
                    help="part 6: the build also after writing 2 MiB and 96 MiB (where the state is)")
    ap.add_argument("--plot", help="write the staleness / error against distance figure here")
    args = ap.parse_args(argv)
    if args.quick:
        args.entities, args.clients, args.ticks = 5000, 40, 40
        args.bodies, args.seconds = 120, 3.0
    t0 = time.perf_counter()
    plot_data = {} if args.plot else None
    res = {}
    if args.part in (0, 1):
        res["big"] = part1(args, out, plot_data)
    if args.part in (0, 2):
        res["compare"] = part2(args, out)
    if args.part == 3:
        if args.clients == 1000 and not args.quick:
            args.clients = 200
        res["crowd"] = part3(args, out)
    if args.part == 4:
        res["server"] = part4(args, out)
    if args.part == 5:
        res["gil"] = part5(args, out)
    if args.part == 7:
        res["pauses"] = part7(args, out)
    if args.part == 6:
        res["cold"] = part6_evict(args, out) if args.evict else part6(args, out)
    if args.plot and plot_data:
        plot(args.plot, plot_data, out, args)
    out(f"(total {time.perf_counter() - t0:.1f} s)")
    return res


if __name__ == "__main__":
    main()
