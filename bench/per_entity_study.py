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

- **With extrapolation** (the ``+pred`` rows, ``pred=True``): a delta also names the entity's
  acked state before its baseline (R more bits; none when it is older than 2**R - 1 ticks) and
  each component may be coded against the extrapolation from the two (docs/wire-format.md 7.3,
  References: the step scaled by bdist / pdist, rounded half away from zero; a quaternion only
  when both have the same largest component), chosen per packet per component with its ``k``
  (a use_pred bit each: 6 more bits a packet), as today's packets do.

The error measure is part 2's: the position (mm) and rotation (deg) of what the client shows
against the world at that moment, every body and tick from 1 s on (a body not shown yet:
infinite), p99 and max, and the p99 over the second half. Added: the p99 against the world 3
ticks before ("-3t": the link's delay taken out, what is left is the scheme's own lateness and
the quantization), and the floor of any scheme that shows states as they arrive on this link:
every state exactly 3 ticks late (no loss, no budget). Gaffer's scheme is part 2's, reproduced
draw for draw (``run_gaffer``; main() asserts its figures equal part 2's when both run).

    python bench/per_entity_study.py            # the four budgets, part 2 alongside (a few minutes)
    python bench/per_entity_study.py --quick    # small scene, seconds (the test suite runs it)
    python bench/per_entity_study.py --ref-bits 2 5 8 --no-part2   # without part 2's printout
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

    def __init__(self, cur, base, pred=None, bdist=None, pdist=None, has_pred=None):
        cc, ci = comps(cur)
        bc, bi = comps(base)
        self.zz = np.empty(cc.shape, dtype=np.int64)
        for j, (_, _, b) in enumerate(COMPS):
            self.zz[:, j] = zigzag(cc[:, j], bc[:, j], b)
        self.zx = self.zz            # against the extrapolation (wire-format 7.3, References)
        if pred is not None:
            pc, pi = comps(pred)
            self.zx = self.zz.copy()
            bd, pd = np.maximum(bdist, 1), np.maximum(pdist, 1)
            for j, (_, _, b) in enumerate(COMPS):
                m = has_pred & ((pi == bi) if j >= 3 else True)
                st = (bc[:, j] - pc[:, j]) % (1 << b)
                st = np.where(st >= (1 << (b - 1)), st - (1 << b), st)
                tt = np.where(st >= 0, (2 * st * bd + pd) // (2 * pd), -((2 * -st * bd + pd) // (2 * pd)))
                ref = (bc[:, j] + tt) % (1 << b)
                self.zx[:, j] = np.where(m, zigzag(cc[:, j], ref, b), self.zz[:, j])
        self.pos_ch = np.any(cur[:, :3] != base[:, :3], axis=1)
        self.rot_ch = cur[:, 3] != base[:, 3]
        self.same_i = ci == bi

    def comp_bits(self, j, k, up=0):
        """(n,) bits of component ``j`` under parameter ``k`` (0 where its field is unchanged),
        against the extrapolation if ``up``."""
        b = COMPS[j][2]
        bits, esc = eg_len((self.zx if up else self.zz)[:, j], k, b)
        if j == 3:      # the escape of a carries one more bit; a new largest component: the
            E = (b - k + 1) // 2 + 1                # escape, its bit, one more, the 29-bit code
            bits = np.where(self.same_i, bits + esc, E + 1 + 1 + 29)
        elif j > 3:
            bits = np.where(self.same_i, bits, 0)
        return np.where(self.pos_ch if j < 3 else self.rot_ch, bits, 0)

    def bits(self, ks):
        """(n,) bits of each entity's delta under ``ks`` (6 k, then 6 use_pred): the field mask
        and its components."""
        out = np.full(len(self.zz), FIELD_MASK_BITS, dtype=np.int64)
        for j in range(6):
            out += self.comp_bits(j, int(ks[j]), int(ks[6 + j]))
        return out

    def best_k(self, rows, pred=False):
        """Per component, the k (and with ``pred`` the use_pred) that minimise its bits over the
        deltas ``rows``."""
        ks = np.zeros(12, dtype=np.int64)
        sub = Deltas.__new__(Deltas)
        sub.zz, sub.zx, sub.pos_ch, sub.rot_ch, sub.same_i = (
            self.zz[rows], self.zx[rows], self.pos_ch[rows], self.rot_ch[rows], self.same_i[rows])
        for j, (_, _, b) in enumerate(COMPS):
            ks[j], ks[6 + j] = min(((k, up) for up in ((0, 1) if pred else (0,)) for k in range(b + 1)),
                                   key=lambda ku: (int(sub.comp_bits(j, ku[0], ku[1]).sum()), ku[1], ku[0]))
        return ks


def run_per_entity(scene, budget, weights="speed", ref_bits=5, delay=3, loss=0.05, seed=0,
                   margin=2, start=60, check=False, ack_window=32, trace=None, pred=False):
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
    sent = {}                       # seq -> rows, codes, bases, their codes, preds, their codes
    acked_pkts = set()
    k_prev = np.array([4, 4, 4, 2, 2, 2] + [1 if pred else 0] * 6, dtype=np.int64)
    acked2_seq = np.full(N, -1)     # with ``pred``: the acked state before the newest
    acked2_codes = np.zeros((N, 5), dtype=np.int64)
    pred_ref = ref_bits if pred else 0              # with pred, a delta names a second state
    k_bits = K_BITS + (6 if pred else 0)            # with pred, a use_pred bit a component
    # client
    shown_seq = np.full(N, -1)
    shown_codes = np.zeros((N, 5), dtype=np.int64)
    received = {}                   # seq -> (rows, codes), the last max_age ticks
    arrived = set()                 # the packets received, the last ack_window + 1
    # link
    down, up = {}, {}
    nbytes = []
    errs = Errors(scene, delay, start)
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
                r2 = rows[newer & (acked_seq[rows] >= 0)]        # the newest becomes the one before
                acked2_seq[r2] = acked_seq[r2]
                acked2_codes[r2] = acked_codes[r2]
                mid = ~newer & (acked_seq[rows] > s) & (acked2_seq[rows] < s)   # a late ack between
                acked2_seq[rows[mid]] = s
                acked2_codes[rows[mid]] = c[mid]
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
        avail = budget * 8 - HEADER_BITS - k_bits

        if pred:
            hp = can_delta & (acked2_seq[order] >= 0) & (t - acked2_seq[order] <= max_age)
            dl = Deltas(w[order], acked_codes[order], acked2_codes[order], t - acked_seq[order],
                        acked_seq[order] - acked2_seq[order], hp)
        else:
            hp = np.zeros(len(order), dtype=bool)
            dl = Deltas(w[order], acked_codes[order])
        dl_rows = np.zeros(len(order), dtype=bool)

        def costs(ks):
            d = np.where(can_delta, dl.bits(ks) + pred_ref, whole_bits + 1)
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
            ks = dl.best_k(sel_d, pred) if sel_d.any() else k_prev
            # the chosen entities keep their form; the re-chosen k never costs them more
            fixed = per_entity_fixed + np.where(is_delta, dl.bits(ks) + pred_ref, whole_bits)
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
            b = math.ceil((HEADER_BITS + k_bits + bits_total) / 8)
            assert b <= budget, (b, budget)
            c = w[rows].copy()
            bases = np.where(dmask, acked_seq[rows], -1)
            if check:
                assert np.all((bases < 0) | ((t - bases >= 1) & (t - bases <= max_age)))
            preds = np.where(dmask & hp[taken], acked2_seq[rows], -1)
            if check:
                assert np.all((preds < 0) | ((t - preds <= max_age) & (preds < bases)))
            sent[t] = (rows, c, bases, acked_codes[rows].copy(), preds, acked2_codes[rows].copy())
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
            rows, c, bases, base_codes, preds, pred_codes = sent[s]
            if check:       # every state a packet names is one this client holds, code for code
                for ref, codes_ in ((bases, base_codes), (preds, pred_codes)):
                    for r, bs, bc in zip(rows[ref >= 0], ref[ref >= 0], codes_[ref >= 0]):
                        rr, cc = received[bs]
                        hit = np.flatnonzero(rr == r)
                        assert len(hit) == 1 and np.array_equal(cc[hit[0]], bc)
            received[s] = (rows, c)
            arrived.add(s)
            newer = shown_seq[rows] < s
            shown_seq[rows[newer]] = s
            shown_codes[rows[newer]] = c[newer]
        if received:        # the states a packet can name: up to max_age ticks before it
            newest = max(received)
            for s in [s for s in received if s < newest - max_age]:
                del received[s]
        if arrived:         # the ack: the newest packet and which of the 32 before it arrived
            latest = max(arrived)
            arrived = {s for s in arrived if s > latest - ack_window - 1}
            if rng.random() >= loss:
                up.setdefault(t + delay, []).append(set(arrived))
        if trace is not None:
            trace(t, shown_seq.copy(), shown_codes.copy())
        if t >= start:
            errs.add(t, shown_seq)
    return errs.summary(nbytes, sent=n_sent, delta=n_delta, whole=n_whole,
                     full=len(fill), per_full=float(np.mean(fill)) if fill else 0.0,
                     bytes=nbytes)


class Errors:
    """Part 2's error measure: what the client shows (per body, the state of tick ``shown_seq``;
    -1: nothing yet, an infinite error) against the world at that moment, every body and tick
    from ``start`` on; and the same against the world ``delay`` ticks before (the link's delay
    taken out: what is left is the scheme's own lateness, and quantization)."""

    def __init__(self, scene, delay, start):
        self.scene, self.delay, self.start = scene, delay, start
        self.p, self.r, self.behind = [], [], []

    def add(self, t, shown_seq):
        sc = self.scene
        N = sc.N
        rs = np.flatnonzero(shown_seq >= 0)
        sp = sc.shown_pos[shown_seq[rs], rs]
        pe = np.full(N, np.inf)
        re = np.full(N, 180.0)
        pb = np.full(N, np.inf)
        pe[rs] = np.linalg.norm(sp - sc.true_pos[t, rs], axis=1) * 1000.0
        re[rs] = quat_angle_deg(sc.shown_rot[shown_seq[rs], rs], sc.true_rot[t, rs])
        pb[rs] = np.linalg.norm(sp - sc.true_pos[t - self.delay, rs], axis=1) * 1000.0
        self.p.append(pe)
        self.r.append(re)
        self.behind.append(pb)

    def summary(self, nbytes, **extra):
        # "higher": a p99 that falls on a body not shown yet is inf, not an interpolated nan
        def p99(x):
            return float(np.percentile(x, 99, method="higher"))

        T, start = self.scene.T, self.start
        ep, er = np.concatenate(self.p), np.concatenate(self.r)
        r = {"B": float(np.mean(nbytes[start:])), "mm_p99": p99(ep), "mm_max": float(ep.max()),
             "deg_p99": p99(er), "mm_p99_late": p99(np.concatenate(self.p[(T - start) // 2:])),
             "mm_p99_behind": p99(np.concatenate(self.behind))}
        r.update(extra)
        return r


def floor_errors(scene, delay=3, start=60):
    """Every state shown exactly ``delay`` ticks late: no loss, no budget."""
    errs = Errors(scene, delay, start)
    for t in range(start, scene.T):
        errs.add(t, np.full(scene.N, t - delay))
    return errs.summary([0] * scene.T)


def run_gaffer(scene, budget, delay=3, loss=0.05, seed=0, start=60):
    """bench_views.py part 2's re-implementation of Gaffer's State Synchronization, reproduced
    draw for draw (its figures come out identical; main() checks it when both run): each tick a
    packet of at most ``budget`` bytes (7 of framing and count) of whole records (index + the
    schema's bits) of the bodies of highest accumulated priority (0.1 + speed, reset when sent);
    no acks; the client keeps each body's newest state."""
    T, N = scene.T, scene.N
    rng = np.random.default_rng(seed + budget)
    per = scene.index_bits + scene.schema.bits
    k = max(0, ((budget - 7) * 8) // per)
    acc = np.zeros(N)
    shown_seq = np.full(N, -1)
    queue, nbytes = {}, []
    errs = Errors(scene, delay, start)
    for t in range(T):
        acc += 0.1 + scene.speed[t]
        sel = np.argsort(-acc, kind="stable")[:k]
        acc[sel] = 0.0
        nbytes.append(7 + math.ceil(len(sel) * per / 8))
        if rng.random() >= loss:
            queue.setdefault(t + delay, []).append((t, sel))
        for s, rows in queue.pop(t, ()):
            fresh = rows[shown_seq[rows] < s]
            shown_seq[fresh] = s
        if t >= start:
            errs.add(t, shown_seq)
    return errs.summary(nbytes, bytes=nbytes)


def main(argv=None, out=print):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a small scene: seconds")
    ap.add_argument("--bodies", type=int, default=300)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budgets", type=int, nargs="+", default=[200, 400, 800, 1200])
    ap.add_argument("--ref-bits", type=int, nargs="+", default=[5, 2, 8],
                    help="bits naming an entity's baseline (ticks back); the first is the main table's")
    ap.add_argument("--margin", type=int, default=2,
                    help="ticks past the round trip before a packet is presumed lost")
    ap.add_argument("--delay", type=int, default=3,
                    help="ticks of delay each way (part 2's is 3; part 2 itself always runs with 3)")
    ap.add_argument("--no-pred", action="store_true",
                    help="skip the variant whose deltas extrapolate from two acked states")
    ap.add_argument("--no-part2", action="store_true",
                    help="skip bench_views.py's part 2 (today's views, Gaffer)")
    args = ap.parse_args(argv)
    if args.quick:
        args.bodies, args.seconds = 120, 3.0
    t0 = time.perf_counter()
    part2 = {}
    if not args.no_part2:
        sys.path.insert(0, HERE)
        try:
            import bench_views
        finally:
            sys.path.remove(HERE)
        p2 = argparse.Namespace(bodies=args.bodies, seconds=args.seconds, seed=args.seed,
                                budgets=args.budgets)
        for row in bench_views.part2(p2, out):
            part2[row["budget"]] = row
    scene = Scene(args.bodies, args.seconds, args.seed)
    d = args.delay
    fl = floor_errors(scene, d)
    ticks = scene.T
    res = {"floor": fl, "runs": {}, "gaffer": {}, "pred": {}}
    for budget in args.budgets:
        g = res["gaffer"][budget] = run_gaffer(scene, budget, delay=d, seed=args.seed)
        if budget in part2 and d == 3:      # the reproduction is part 2's scheme, figure for figure
            p = part2[budget]["gaffer"]
            keys = ("B", "mm_p99", "mm_max", "deg_p99", "mm_p99_late")
            assert all(p[key] == g[key] for key in keys), (p, g)
    for rb in args.ref_bits:
        for budget in args.budgets:
            for kind in ("equal", "speed"):
                res["runs"][(rb, budget, kind)] = run_per_entity(scene, budget, kind, rb, delay=d,
                                                                 seed=args.seed, margin=args.margin)
    if not args.no_pred:
        for budget in args.budgets:
            for kind in ("equal", "speed"):
                res["pred"][(budget, kind)] = run_per_entity(scene, budget, kind, args.ref_bits[0],
                                                             delay=d, seed=args.seed, margin=args.margin,
                                                             pred=True)

    def line(budget, name, r, ratios=True):
        g = res["gaffer"].get(budget)
        extra = ""
        if "sent" in r:
            extra = f"  {r['sent'] / ticks:4.0f} ({r['delta'] / ticks:.0f}/{r['whole'] / ticks:.0f})"
        rat = (f"{r['mm_p99'] / g['mm_p99']:7.2f} {r['mm_p99_behind'] / g['mm_p99_behind']:7.2f}"
               if ratios else f"{'':7s} {'':7s}")
        out(f"  {budget if budget else 'any':>6} {name:36s} {r['B']:6.0f} {r['mm_p99']:7.1f} "
            f"{r['mm_max']:7.0f} {r['deg_p99']:7.2f} {r['mm_p99_late']:8.1f} "
            f"{r['mm_p99_behind']:8.1f} {rat}{extra}")

    out("")
    out(f"per-entity baselines (bench/per_entity_study.py): the same scene ({scene.N} bodies, "
        f"{ticks} ticks), 5% loss, {d} ticks each way; an entity costs its index ({scene.index_bits} "
        f"bits) + R bits naming its baseline + its delta or whole record; a packet 8 bytes + 26 "
        f"bits of k; presumed lost after {2 * d + args.margin} ticks without an ack")
    head = (f"  {'budget':>6s} {'scheme':36s} {'B/tick':>6s} {'mm p99':>7s} {'mm max':>7s} "
            f"{'deg p99':>7s} {'late p99':>8s} {f'-{d}t p99':>8s} {'/Gaffer':>7s} {'-3t /G':>7s}")
    out(head + "  sent a tick (delta/whole)")
    rb0 = args.ref_bits[0]
    for budget in args.budgets:
        line(budget, "Gaffer state sync, speed weights", res["gaffer"][budget])
        for kind in ("equal", "speed"):
            line(budget, f"per-entity, R={rb0}, {kind} weights", res["runs"][(rb0, budget, kind)])
    if res["pred"]:
        out(f"  with extrapolation (a delta names a second acked state, R={rb0} more bits; use_pred "
            f"per packet per component, as today's packets):")
        for budget in args.budgets:
            for kind in ("equal", "speed"):
                line(budget, f"per-entity+pred, R={rb0}, {kind}", res["pred"][(budget, kind)])
    line(0, f"floor: every state {d} ticks late", fl, ratios=False)
    out(f"  (late p99: the second half of the run; -{d}t p99: against the world {d} ticks before, the "
        "link's delay taken out; /Gaffer: p99 over Gaffer's, the goal is <= 0.5; floor: no loss, "
        "no budget)")
    if len(args.ref_bits) > 1:
        out("  the baseline reference's bits R (per entity; R bits name 1 .. 2**R - 1 ticks back, "
            "older: whole record), the better weights:")
        for rb in args.ref_bits:
            for budget in args.budgets:
                kind = min(("equal", "speed"), key=lambda k: res["runs"][(rb, budget, k)]["mm_p99"])
                line(budget, f"per-entity, R={rb}, {kind} weights", res["runs"][(rb, budget, kind)])
    def best(runs, b):
        return min(runs[b, k]["mm_p99"] for k in ("equal", "speed")) / res["gaffer"][b]["mm_p99"]

    rows = [(f"R={rb}", {key[1:]: r for key, r in res["runs"].items() if key[0] == rb})
            for rb in args.ref_bits]
    if res["pred"]:
        rows.append((f"R={rb0}+pred", res["pred"]))
    out("  p99 position error over Gaffer's (the better weights; goal <= 0.5): " + "; ".join(
        f"{name}: " + ", ".join(f"{b} B {best(runs, b):.2f}" for b in args.budgets)
        for name, runs in rows))
    out("  the floor over Gaffer's: " + ", ".join(
        f"{b} B {fl['mm_p99'] / res['gaffer'][b]['mm_p99']:.2f}" for b in args.budgets))
    out(f"(total {time.perf_counter() - t0:.1f} s)")
    return res


if __name__ == "__main__":
    main()
