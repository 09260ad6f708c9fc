"""Per-entity baselines under a byte budget: would they meet issue 34's error goal? A measured
simulation (no wire change: nothing here is encoded by quantcodec, the bits are counted).

The question (issue 34, item 1 and item 5's goal): bench/bench_views.py's part 2 compares today's
views (one baseline per client: every packet is a whole view coded against the client's newest
acknowledged view, so every unacknowledged change is in every packet) with Gaffer On Games'
"State Synchronization" at budgets of 200, 400, 800 and 1,200 bytes a tick, 5% loss and 3 ticks
of delay each way, on the bench scene (300 bodies falling into a pile). The goal is a p99
position error at most half of Gaffer's at every budget. This script simulates the known
alternative, **per-entity baselines** (Unity NfE, Unreal Iris, Gaffer's VR sample), on the same
scene, link and error measure, and prints it next to part 2's two schemes run in this process.

The simulated design (the choices and assumptions are the study's, stated so they can be varied):

- **Server state, per entity:** the newest state of it the client acknowledged (``acked``: its
  codes and the tick of the packet that carried it) and the newest state of it sent and not
  known lost (``live``). A packet records which entity states it carried; an ack names packets.
- **Acks:** the client acks once a tick, after it has received anything: its newest packet and
  which of the 32 before it arrived (a bitfield, as in Gaffer's "Reliability and Congestion
  Avoidance"), so one lost ack loses nothing. Acks take 3 ticks and are lost at 5% like packets;
  their bytes (client to server) are not counted, as in part 2.
- **Lost:** a packet not acknowledged ``rtt + margin`` ticks after it was sent (6 + 2 by default)
  is presumed lost: every entity whose ``live`` state it carried falls back to its ``acked``
  state. A late ack still counts (it moves ``acked``).
- **Candidates and the in-flight rule:** an entity is a candidate when its world codes differ
  from its ``live`` codes (or it was never sent). So a change in flight is not sent again while
  it is the newest; it is sent again only when presumed lost, or overtaken: the world has moved
  on from it (a moving body is a candidate every tick, with its newest state, never a repeat).
- **Priority:** each tick every candidate's accumulator grows by its weight (equal: 1; speed:
  0.1 + speed in m/s, part 2's); being sent resets it to 0; a non-candidate's is 0.
- **Bits of one entity:** its index (ceil(log2 N) bits, as Gaffer's), ``R`` bits of baseline
  reference (0: no baseline, the whole record follows; a: the baseline is this entity's state in
  the packet ``a`` ticks before this one, 1 <= a <= 2**R - 1), then either the whole record
  (the schema's 76 bits) or a delta against the acked state: 1 bit per field (changed or not),
  then for a changed field its components as the real format codes them (docs/wire-format.md
  sections 4 and 7.3): each position component EG(k, b) of the zigzag of its difference; the
  quaternion's a, b_, c the same, the first with the escape's extra bit, a changed largest
  component as the absolute 29-bit code after the escape (the remapped form is left out: the
  counts err high); the rest Bool's flip is implied (0 bits). The encoder takes the cheaper of
  whole and delta. An acked state older than 2**R - 1 ticks cannot be named: whole record.
  The client keeps, per entity, the states it received in the last 2**R - 1 ticks.
- **Bits of a packet:** 4-byte check + 2-byte sequence (a quantcodec datagram's framing,
  wire-format section 11) + a 2-byte entity count, then each component's Exp-Golomb ``k``
  (bitlen(b) bits each: 5 + 4 + 5 + 3 x 4 = 26 bits), chosen per packet per component to
  minimise that component's bits over the packet's deltas; padded to a byte. A tick with nothing
  to send sends nothing.
- **Selection within the budget:** candidates in priority order, each costed with the previous
  packet's ``k`` (first fit: one that does not fit is skipped, the next is tried); then the
  ``k`` are re-chosen for the selected deltas (never more bits than the estimate, so never over
  the budget) and the remaining candidates are offered again with the new ``k``.

The error measure is part 2's: the position (mm) and rotation (deg) of what the client shows
against the world at that moment, every body and tick from 1 s on (a body not shown yet:
infinite), p99 and max, and the p99 over the second half. Also printed: the floor of any scheme
on this link, every state shown exactly 3 ticks late (no loss, no budget).

    python bench/per_entity_study.py            # the four budgets, part 2 alongside (a few minutes)
    python bench/per_entity_study.py --quick    # small scene, seconds (the test suite runs it)
    python bench/per_entity_study.py --ref-bits 2 5 8 --no-part2   # the reference's cost only
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
try:
    import quantcodec  # noqa: F401
except ImportError:
    sys.path.append(ROOT)
import numpy as np  # noqa: E402

# (slot column, shift, width): position x, y, z; the quaternion's a, b_, c (index above 27)
COMPS = ((0, 0, 16), (1, 0, 14), (2, 0, 16), (3, 18, 9), (3, 9, 9), (3, 0, 9))
K_BITS = sum(b.bit_length() for _, _, b in COMPS)          # 26: each component's k
HEADER_BITS = 8 * (4 + 2 + 2)                               # check, sequence, entity count
FIELD_MASK_BITS = 3                                         # position, rotation, rest


def quat_angle_deg(a, b):
    dot = np.abs(np.sum(a * b, axis=-1))
    return np.degrees(2.0 * np.arccos(np.clip(dot, 0.0, 1.0)))


def eg_len(u, k, b):
    """Bits of EG(k, b) (docs/wire-format.md section 4, with its escape) of each u >= 0, and
    which of them escape."""
    u = np.asarray(u, dtype=np.int64)
    E = (b - k + 1) // 2 + 1
    v = u >> k
    e = np.frexp((v + 1).astype(np.float64))[1] - 1        # bit length of v + 1, less one: exact
    esc = v >= (1 << E) - 1
    return np.where(esc, E + b, 2 * e + 1 + k), esc


def zigzag(cur, ref, b):
    d = (cur - ref) % (1 << b)
    d = np.where(d >= (1 << (b - 1)), d - (1 << b), d)
    return np.where(d >= 0, 2 * d, -2 * d - 1)


class Scene:
    """The bench scene as part 2 builds it: world codes per tick (T, N, 5: x, y, z, quat, rest),
    their dequantized positions and rotations, the true ones, and each body's speed."""

    def __init__(self, bodies, seconds, seed):
        import quantcodec as qc  # noqa: F401
        from quantcodec.tools.link import default_schema
        from quantcodec.tools.scene import simulate

        sc = simulate(bodies, seconds, 60, seed)
        self.schema = schema = default_schema(velocity=False, rest=True)
        assert schema.bits == 76
        T, N = sc.positions.shape[:2]
        self.T, self.N = T, N
        codes = np.zeros((T, N, 5), dtype=np.int64)
        self.shown_pos = np.zeros((T, N, 3))
        self.shown_rot = np.zeros((T, N, 4))
        self.true_pos = np.zeros((T, N, 3))
        self.true_rot = np.zeros((T, N, 4))
        self.speed = np.zeros((T, N))
        for k in range(T):
            w = schema.snapshot(sc.ids[k].astype(np.uint64),
                                {"position": sc.positions[k], "rotation": sc.orientations[k],
                                 "rest": sc.at_rest[k]})
            c = w.codes
            codes[k, :, :3] = c["position"]
            codes[k, :, 3] = c["rotation"]
            codes[k, :, 4] = c["rest"]
            d = schema.dequantize_many(c)
            self.shown_pos[k] = d["position"]
            self.shown_rot[k] = d["rotation"]
            row = np.argsort(sc.ids[k])                 # snapshot row -> scene row
            self.true_pos[k] = sc.positions[k][row]
            self.true_rot[k] = sc.orientations[k][row]
            self.speed[k] = np.linalg.norm(sc.velocities[k], axis=1)[row]
        self.codes = codes
        self.index_bits = math.ceil(math.log2(max(2, N)))


def comps(codes):
    """(n, 6) component values and (n,) quaternion index of (n, 5) codes."""
    out = np.empty((len(codes), 6), dtype=np.int64)
    for j, (col, sh, b) in enumerate(COMPS):
        out[:, j] = (codes[:, col] >> sh) & ((1 << b) - 1)
    return out, codes[:, 3] >> 27


class Deltas:
    """The zigzagged differences of ``cur`` against ``base`` ((n, 5) codes each), per component,
    and which fields changed."""

    def __init__(self, cur, base):
        cc, ci = comps(cur)
        bc, bi = comps(base)
        self.zz = np.empty(cc.shape, dtype=np.int64)
        for j, (_, _, b) in enumerate(COMPS):
            self.zz[:, j] = zigzag(cc[:, j], bc[:, j], b)
        self.pos_ch = np.any(cur[:, :3] != base[:, :3], axis=1)
        self.rot_ch = cur[:, 3] != base[:, 3]
        self.same_i = ci == bi

    def comp_bits(self, j, k):
        """(n,) bits of component ``j`` under parameter ``k`` (0 where its field is unchanged)."""
        b = COMPS[j][2]
        bits, esc = eg_len(self.zz[:, j], k, b)
        if j == 3:      # the escape of a carries one more bit; a new largest component: the
            E = (b - k + 1) // 2 + 1                # escape, its bit, one more, the 29-bit code
            bits = np.where(self.same_i, bits + esc, E + 1 + 1 + 29)
        elif j > 3:
            bits = np.where(self.same_i, bits, 0)
        return np.where(self.pos_ch if j < 3 else self.rot_ch, bits, 0)

    def bits(self, ks):
        """(n,) bits of each entity's delta under ``ks``: the field mask and its components."""
        out = np.full(len(self.zz), FIELD_MASK_BITS, dtype=np.int64)
        for j in range(6):
            out += self.comp_bits(j, int(ks[j]))
        return out

    def best_k(self, rows):
        """Per component, the k that minimises its bits over the deltas ``rows``."""
        ks = np.zeros(6, dtype=np.int64)
        sub = Deltas.__new__(Deltas)
        sub.zz, sub.pos_ch, sub.rot_ch, sub.same_i = (self.zz[rows], self.pos_ch[rows],
                                                      self.rot_ch[rows], self.same_i[rows])
        for j, (_, _, b) in enumerate(COMPS):
            ks[j] = min(range(b + 1), key=lambda k: (int(sub.comp_bits(j, k).sum()), k))
        return ks


def run_per_entity(scene, budget, weights="speed", ref_bits=5, delay=3, loss=0.05, seed=0,
                   margin=2, start=60, check=False, ack_window=32, trace=None):
    """Simulate per-entity baselines on ``scene``; returns the error and byte figures (and,
    with ``check``, asserts the invariants every tick). ``trace(t, shown_seq, shown_codes)``, if
    given, sees the client's state after every tick: per entity, the tick of the packet whose
    state it shows (-1: none yet) and the codes it shows (what it holds, not the world's)."""
    T, N = scene.T, scene.N
    codes = scene.codes
    rng = np.random.default_rng(seed + budget)
    max_age = (1 << ref_bits) - 1
    per_entity_fixed = scene.index_bits + ref_bits
    whole_bits = scene.schema.bits
    lost_after = 2 * delay + margin
    # server
    acked_seq = np.full(N, -1)
    acked_codes = np.zeros((N, 5), dtype=np.int64)
    live_seq = np.full(N, -1)
    live_codes = np.zeros((N, 5), dtype=np.int64)
    acc = np.zeros(N)
    sent = {}                       # seq -> (rows, codes)
    acked_pkts = set()
    k_prev = np.array([4, 4, 4, 2, 2, 2], dtype=np.int64)
    # client
    shown_seq = np.full(N, -1)
    shown_codes = np.zeros((N, 5), dtype=np.int64)
    received = {}                   # seq -> (rows, codes), the last max_age ticks
    # link
    down, up = {}, {}
    nbytes, errs_p, errs_r = [], [], []
    n_sent = n_whole = n_delta = 0
    fill = []
    for t in range(T):
        # acks arriving: the packets they name move each entity's acked state
        for names in up.pop(t, ()):
            for s in sorted(names):
                if s in acked_pkts or s not in sent:
                    continue
                acked_pkts.add(s)
                rows, c = sent[s][:2]
                newer = acked_seq[rows] < s
                acked_seq[rows[newer]] = s
                acked_codes[rows[newer]] = c[newer]
        ahead = acked_seq > live_seq
        live_seq[ahead] = acked_seq[ahead]
        live_codes[ahead] = acked_codes[ahead]
        # packets presumed lost: their live states fall back to the acked ones
        s = t - lost_after
        if s in sent and s not in acked_pkts:
            rows = sent[s][0]
            back = rows[live_seq[rows] == s]
            live_seq[back] = acked_seq[back]
            live_codes[back] = acked_codes[back]
        for s in [s for s in sent if s < t - max(max_age, lost_after + ack_window + delay)]:
            del sent[s]             # older than any baseline or any late ack
        # candidates and priority
        w = codes[t]
        cand = (live_seq < 0) | np.any(w != live_codes, axis=1)
        wt = np.ones(N) if weights == "equal" else 0.1 + scene.speed[t]
        acc = np.where(cand, acc + wt, 0.0)
        order = np.flatnonzero(cand)
        order = order[np.argsort(-acc[order], kind="stable")]
        can_delta = (acked_seq[order] >= 0) & (t - acked_seq[order] <= max_age)
        avail = budget * 8 - HEADER_BITS - K_BITS

        dl = Deltas(w[order], acked_codes[order])
        dl_rows = np.zeros(len(order), dtype=bool)

        def costs(ks):
            d = np.where(can_delta, dl.bits(ks), whole_bits + 1)
            return per_entity_fixed + np.minimum(d, whole_bits), d < whole_bits

        def first_fit(cost, taken, room):
            for i in range(len(order)):
                if not taken[i] and cost[i] <= room:
                    taken[i] = True
                    room -= cost[i]
            return room

        taken = np.zeros(len(order), dtype=bool)
        bits_total = 0
        dmask = dl_rows
        if len(order):
            cost, is_delta = costs(k_prev)
            first_fit(cost, taken, avail)
            sel_d = taken & is_delta
            ks = dl.best_k(sel_d) if sel_d.any() else k_prev
            # the chosen entities keep their form; the re-chosen k never costs them more
            fixed = per_entity_fixed + np.where(is_delta, dl.bits(ks), whole_bits)
            used = int(fixed[taken].sum())
            assert used <= int(cost[taken].sum())
            cost2, is_delta2 = costs(ks)
            more = ~taken
            first_fit(np.where(more, cost2, 1 << 30), taken, avail - used)
            is_delta = np.where(more, is_delta2, is_delta)
            final = np.where(more, cost2, fixed)
            bits_total = int(final[taken].sum())
            rows = order[taken]
            dmask = is_delta[taken]
            if sel_d.any():
                k_prev = ks
        else:
            rows = order
        if len(rows):
            b = math.ceil((HEADER_BITS + K_BITS + bits_total) / 8)
            assert b <= budget, (b, budget)
            c = w[rows].copy()
            bases = np.where(dmask, acked_seq[rows], -1)
            if check:
                assert np.all((bases < 0) | ((t - bases >= 1) & (t - bases <= max_age)))
            sent[t] = (rows, c, bases, acked_codes[rows].copy())
            live_seq[rows] = t
            live_codes[rows] = c
            acc[rows] = 0.0
            n_sent += len(rows)
            n_delta += int(dmask.sum())
            n_whole += int((~dmask).sum())
            if b > 0.9 * budget:
                fill.append(len(rows))
            if rng.random() >= loss:
                down.setdefault(t + delay, []).append(t)
        else:
            b = 0
        nbytes.append(b)
        # the client: packets arriving now
        for s in down.pop(t, ()):
            rows, c, bases, base_codes = sent[s]
            if check:       # every baseline named is a state this client holds, code for code
                for r, bs, bc in zip(rows[bases >= 0], bases[bases >= 0], base_codes[bases >= 0]):
                    rr, cc = received[bs]
                    hit = np.flatnonzero(rr == r)
                    assert len(hit) == 1 and np.array_equal(cc[hit[0]], bc)
            received[s] = (rows, c)
            newer = shown_seq[rows] < s
            shown_seq[rows[newer]] = s
            shown_codes[rows[newer]] = c[newer]
        if received:        # the states a packet can name: up to max_age ticks before it
            newest = max(received)
            for s in [s for s in received if s < newest - max_age]:
                del received[s]
        if received:
            latest = max(received)
            names = {s for s in received if s > latest - ack_window - 1}
            if rng.random() >= loss:
                up.setdefault(t + delay, []).append(names)
        if trace is not None:
            trace(t, shown_seq.copy(), shown_codes.copy())
        if t >= start:
            ok = shown_seq >= 0
            pe = np.full(N, np.inf)
            re = np.full(N, 180.0)
            rs = np.flatnonzero(ok)
            sp = scene.shown_pos[shown_seq[rs], rs]
            sr = scene.shown_rot[shown_seq[rs], rs]
            pe[rs] = np.linalg.norm(sp - scene.true_pos[t, rs], axis=1) * 1000.0
            re[rs] = quat_angle_deg(sr, scene.true_rot[t, rs])
            errs_p.append(pe)
            errs_r.append(re)
    return summarize(nbytes, errs_p, errs_r, T, start,
                     sent=n_sent, delta=n_delta, whole=n_whole,
                     full=len(fill), per_full=float(np.mean(fill)) if fill else 0.0,
                     bytes=nbytes)


def summarize(nbytes, errs_p, errs_r, T, start, **extra):
    ep, er = np.concatenate(errs_p), np.concatenate(errs_r)
    half = np.concatenate(errs_p[(T - start) // 2:])
    r = {"B": float(np.mean(nbytes[start:])),
         "mm_p99": float(np.percentile(ep, 99, method="higher")), "mm_max": float(ep.max()),
         "deg_p99": float(np.percentile(er, 99, method="higher")),
         "mm_p99_late": float(np.percentile(half, 99, method="higher"))}
    r.update(extra)
    return r


def floor_errors(scene, delay=3, start=60):
    """Every state shown exactly ``delay`` ticks late: no loss, no budget."""
    T = scene.T
    ep, er = [], []
    for t in range(start, T):
        ep.append(np.linalg.norm(scene.shown_pos[t - delay] - scene.true_pos[t], axis=1) * 1000.0)
        er.append(quat_angle_deg(scene.shown_rot[t - delay], scene.true_rot[t]))
    return summarize([0] * T, ep, er, T, start)


def main(argv=None, out=print):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a small scene: seconds")
    ap.add_argument("--bodies", type=int, default=300)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budgets", type=int, nargs="+", default=[200, 400, 800, 1200])
    ap.add_argument("--ref-bits", type=int, nargs="+", default=[5, 2, 8],
                    help="bits naming an entity's baseline (ticks back); the first is the main table's")
    ap.add_argument("--margin", type=int, default=2, help="ticks past the round trip before a packet is presumed lost")
    ap.add_argument("--no-part2", action="store_true", help="skip bench_views.py's part 2 (today's views, Gaffer)")
    args = ap.parse_args(argv)
    if args.quick:
        args.bodies, args.seconds = 120, 3.0
    t0 = time.perf_counter()
    gaffer = {}
    if not args.no_part2:
        sys.path.insert(0, HERE)
        try:
            import bench_views
        finally:
            sys.path.remove(HERE)
        p2 = argparse.Namespace(bodies=args.bodies, seconds=args.seconds, seed=args.seed,
                                budgets=args.budgets)
        for row in bench_views.part2(p2, out):
            gaffer[row["budget"]] = row
    scene = Scene(args.bodies, args.seconds, args.seed)
    fl = floor_errors(scene)
    out("")
    out(f"per-entity baselines (bench/per_entity_study.py): the same scene ({scene.N} bodies, "
        f"{scene.T} ticks), link and errors; index {scene.index_bits} bits + R bits of baseline "
        f"reference an entity, lost = no ack {2 * 3 + args.margin} ticks after sending")
    out(f"  {'budget':>6s} {'scheme':34s} {'B/tick':>6s} {'mm p99':>7s} {'mm max':>7s} "
        f"{'deg p99':>7s} {'late p99':>9s} {'/Gaffer':>7s}  sent a tick (delta/whole)")
    res = {"floor": fl, "runs": {}}
    for rb in args.ref_bits:
        for budget in args.budgets:
            for kind in ("equal", "speed"):
                r = run_per_entity(scene, budget, kind, rb, seed=args.seed, margin=args.margin)
                res["runs"][(rb, budget, kind)] = r
                g = gaffer.get(budget, {}).get("gaffer")
                ratio = f"{r['mm_p99'] / g['mm_p99']:7.2f}" if g else f"{'-':>7s}"
                ticks = scene.T
                out(f"  {budget:6d} {f'per-entity, R={rb}, {kind} weights':34s} {r['B']:6.0f} "
                    f"{r['mm_p99']:7.1f} {r['mm_max']:7.0f} {r['deg_p99']:7.2f} "
                    f"{r['mm_p99_late']:9.1f} {ratio}  {r['sent'] / ticks:.0f} "
                    f"({r['delta'] / ticks:.0f}/{r['whole'] / ticks:.0f})")
        if rb == args.ref_bits[0]:
            out(f"  {'any':>6s} {'floor: every state 3 ticks late':34s} {'-':>6s} {fl['mm_p99']:7.1f} "
                f"{fl['mm_max']:7.0f} {fl['deg_p99']:7.2f} {fl['mm_p99_late']:9.1f}")
    if gaffer:
        out("  p99 position error, per-entity (the better weights) / Gaffer, goal <= 0.5:")
        for rb in args.ref_bits:
            parts = []
            for budget in args.budgets:
                best = min(res["runs"][(rb, budget, k)]["mm_p99"] for k in ("equal", "speed"))
                parts.append(f"{budget} B: {best / gaffer[budget]['gaffer']['mm_p99']:.2f}")
            out(f"    R={rb}: " + ", ".join(parts))
        out(f"  the floor / Gaffer: " + ", ".join(
            f"{b} B: {fl['mm_p99'] / gaffer[b]['gaffer']['mm_p99']:.2f}" for b in args.budgets))
        res["gaffer"] = gaffer
    out(f"(total {time.perf_counter() - t0:.1f} s)")
    return res


if __name__ == "__main__":
    main()
