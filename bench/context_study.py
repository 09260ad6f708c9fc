"""Issue 38's study: what contexts both ends derive from acknowledged snapshots would save.

The snapshot stream codes each changed component as Exp-Golomb(k) of the zigzag of its
difference from a reference (the baseline, or the extrapolation from the baseline and the pred
snapshot before it), with one k per component and packet (docs/wire-format.md 7.3). This script
takes the **real** residuals of that stream, packet by packet, and prices other ways of coding
them whose model starts each packet from state both ends hold without a round trip: the acked
baseline ``B`` and the pred snapshot ``P`` before it (never anything from packets that may be
lost).

How the residuals are obtained: the scene is streamed through the real ``SnapshotEncoder``,
over the seeded link of ``quantcodec.tools.link`` (acks ``--lag`` ticks late, ``--loss``), the
same loop as ``bench/bench_bandwidth.py`` (same random draws, so the same packets). Every packet
sent is then read by the plain-Python decoder written from the wire-format page
(``tests/refdecoder.py``), instrumented: for each component value it records the Exp-Golomb
value ``u``, its ``k``, the bits it took, whether the reference was extrapolated, and the
component's values in ``B`` and ``P``; it also counts the bits of the entity and field sets
and of the parameters. The script checks that every packet decodes to the server's snapshot,
that the parts add up to the encoder's ``last_bits`` exactly, and that the residuals
recomputed with NumPy from ``B``, ``P`` and the packet's choices are the ones read, before any
figure is printed.

Contexts (all from ``B`` and ``P``; the entity's id names the rows):

- ``none``: the component only (today's cells);
- ``motion``: the entity's motion class: at rest (B == P), slow (position step <= 3 codes),
  moving (<= 24), fast, or no P;
- ``fhist``: did this field change between P and B;
- ``step``: the bit length of this component's own extrapolation step ``t`` (0..8+);
- ``step+fhist``, ``motion+fhist``: combinations.

Predictions (change the residuals themselves): ``gravity`` (the y position's extrapolation
plus ``-g/2 bdist (bdist + pdist)`` for a body whose y moved between P and B; ``+floor``
clamps it at the lowest y code of the scene, a declared ground plane); ``velocity`` (on the
scene schema, which sends a velocity: the position predicted as ``B + v_B * bdist / hz``).

Coders, for each context (the rest of the packet unchanged, bits counted as today):

- ``eg, k per cell sent``: Exp-Golomb with k chosen per packet, component and context cell, each
  k sent (bitlen(b) bits a non-empty cell, as today a component's);
- ``eg, k from acked packet``: k per (component, context) not sent but taken from the baseline's
  own packet (the best k for that cell's values there; the decoder decoded that packet, since the
  baseline is acked), else the component's k sent as today: today's side information;
- ``rice, k adapted in packet``: Rice with k adapted per cell inside the packet (LOCO-I),
  started from the packet's k of the component;
- ``ac, reset each packet``: an adaptive binary arithmetic coder whose model starts each packet
  empty: u + 1's bit length in unary, each unary bin and the two top suffix bits with their own
  adaptive probability per (component, context, position), the other suffix bits raw; ideal
  code length of Krichevsky-Trofimov counts (closed form), plus the real coder's measured cost
  a packet (``flush``), plus a quat's "not a new largest index" event;
- ``ac, warm from acked pkt``: the same, each context's counts started from the counts of the
  events coded in the baseline's own packet (not chained further back), times 0.5 (x0.25 and x1
  are shown too): the decoder holds the baseline only if it decoded that packet, so this is
  never a packet that may be lost;
- ``oracle/H per component``: the empirical entropy of each (packet, component)'s values, given
  free: no real coder reaches it (it bounds today's cells, optimistically).

One configuration (ac, reset, ctx step+fhist) is coded for real with bench/context_coder.py's
range coder, which round-trips every packet; its size against the ideal is printed, and its
mean excess a packet is the ``flush`` added to every ac row. ``--cost`` compiles
bench/context_cost.c and times Exp-Golomb against that range coder in C on the first run's
residuals.

    python bench/context_study.py --cost     # bench scene (lag 6, and 20% loss) + player trace
    python bench/context_study.py --quick    # smaller scenes, about three minutes
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
try:
    import quantcodec  # noqa: F401
except ImportError:
    sys.path.insert(0, ROOT)
sys.path.append(os.path.join(ROOT, "tests"))

import numpy as np  # noqa: E402

import bench_bandwidth  # noqa: E402
import context_coder  # noqa: E402
import refdecoder  # noqa: E402  (tests/refdecoder.py: the decoder written from the docs)
from helpers import ref_slots  # noqa: E402  (tests/helpers.py: the slot table in refdecoder's form)
from player_scene import simulate as players  # noqa: E402
from quantcodec.errors import DecodeError  # noqa: E402
from quantcodec.snapshot import SnapshotDecoder, SnapshotEncoder  # noqa: E402
from quantcodec.tools.link import _Link, default_schema  # noqa: E402

CHECK_BITS = 32


# -- the real stream ---------------------------------------------------------------------------


def stream(rec, schema, columns, lag, loss, seed, history=64):
    """Encode every tick as bench_bandwidth's run_stream does (the same link, the same random
    draws): [(tick, datagram, baseline seq or None, wire bits, last_bits)] and the snapshots."""
    rng = random.Random(seed)
    down = _Link(rng, 0, loss, 0.0, 0)
    up = _Link(rng, lag, loss, 0.0, 0)
    enc = SnapshotEncoder(schema, history=history, predict=True)
    dec = SnapshotDecoder(schema, history=history)
    snaps, packets = [], []
    for k in range(rec.n_ticks):
        seq = k & 0xFFFF
        snap = schema.snapshot(rec.ids[k], columns(k))
        snaps.append(snap)
        for a in up.receive(k):
            enc.ack(a)
        pkt = enc.encode(seq, snap)
        base = enc.last_baseline
        hello = enc.hello() if base is None else None
        packets.append((k, pkt, base, enc.last_bits + CHECK_BITS + (8 * len(hello) if hello else 0),
                        enc.last_bits))
        if hello is not None:
            down.send(k, hello)
        down.send(k, pkt)
        for p in down.receive(k):
            try:
                view = dec.decode(p)
            except DecodeError:
                continue
            if view is not None:
                up.send(k, dec.latest)
    return packets, snaps


class _TaggedBits(refdecoder.Bits):
    """refdecoder's bit reader, counting the bits read under the decoder's current tag."""
    owner = None

    def read(self, k):
        o = _TaggedBits.owner
        if o is not None:
            o.tags[o.tag] = o.tags.get(o.tag, 0) + k
        return super().read(k)


class Probe(refdecoder.ReferenceDecoder):
    """The reference decoder, recording each component value it reads and the bits of each part."""

    def __init__(self, slots):
        super().__init__(slots)
        self.rows_of = {}               # id(row list) -> entity id
        self.recs = []
        self.tag = "other"
        self.tags = {}
        self.nonempty = []
        self.pk = 0

    def read_set(self, r, M):
        old, self.tag = self.tag, "set"
        self.set_calls.append(r.pos)
        try:
            return super().read_set(r, M)
        finally:
            self.tag = old
            self.set_calls[-1] = r.pos - self.set_calls[-1]

    def field_comps(self, f):
        self.nonempty.append(f)
        return super().field_comps(f)

    def comp(self, r, c, brow, prow, use, kk, pp, num, den, alt=False):
        old, self.tag = self.tag, "res"
        p0 = r.pos
        try:
            v = super().comp(r, c, brow, prow, use, kk, pp, num, den, alt)
        finally:
            self.tag = old
        if v is None:                       # a quat's new largest index: the flip, left as it is
            self.flips += 1
            self.tags["res"] -= r.pos - p0
            self.tags["other"] = self.tags.get("other", 0) + r.pos - p0
            return v
        eff = bool(use and pp[c] and prow is not None)
        b, smag = self.comps[c][2], self.comps[c][3]
        v = self.lin(v, b, smag)            # the component's value (the order map, 2)
        zz = (v - self.ref(c, brow, prow, eff, num, den)) % (1 << b)
        zz = zz - (1 << b) if zz >> (b - 1) else zz
        u = 2 * zz if zz >= 0 else -2 * zz - 1
        self.recs.append((self.pk, c, self.rows_of[id(brow)], u, kk[c], r.pos - p0, int(eff),
                          self.sub(brow, c), self.sub(prow, c) if prow is not None else -1, v))
        return self.lin(v, b, smag)

    def read_packet(self, pk, data):
        self.pk = pk
        self.tags, self.nonempty, self.set_calls, self.flips = {}, [], [], 0
        _TaggedBits.owner = self
        saved = refdecoder.Bits
        refdecoder.Bits = _TaggedBits
        try:
            return self.decode(data)
        finally:
            refdecoder.Bits = saved
            _TaggedBits.owner = None


def header(data):
    r = refdecoder.Bits(data)
    r.read(16)
    if not r.read(1):
        return None, None
    bdist = r.egx_value(2, 16) + 1
    pdist = r.egx_value(2, 16) + 1 if r.read(1) else None
    return bdist, pdist


def eg_len(u, k, b, alt=0):
    """Exp-Golomb(k, b) lengths with the escape (docs/wire-format.md 4), vectorized; ``alt``:
    the escape carries one more bit (a quat's first component, 7.3)."""
    u = np.asarray(u, dtype=np.int64)
    k = np.asarray(k, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    E = (b - k + 1) // 2 + 1
    v = u >> k
    esc = v >= (1 << E) - 1
    e = np.floor(np.log2(v + 1.0)).astype(np.int64)
    return np.where(esc, E + b + alt, 2 * e + 1 + k)


class Run:
    """One scene streamed: per packet its parts, and every component value's record."""

    def __init__(self, name, rec, schema, columns, lag, loss, seed, start_settled, gaffer, slots=None,
                 out=print):
        t0 = time.perf_counter()
        self.name, self.rec, self.schema, self.lag, self.loss = name, rec, schema, lag, loss
        packets, snaps = stream(rec, schema, columns, lag, loss, seed)
        self.snaps = snaps
        slots = slots or ref_slots(schema)
        probe = Probe(slots)
        self.comps = probe.comps
        self.comp_field = np.array([slots[c[0]][2] for c in probe.comps])
        self.comp_bits = np.array([c[2] for c in probe.comps])
        self.comp_alt = np.array([int(slots[c[0]][0] == "quat" and c[1] == 2 * c[2]) for c in probe.comps])
        self.n_fields = len(probe.fields)

        class Held(dict):
            def __missing__(held, seq):
                s = snaps[seq]
                rows = s.matrix.astype(np.uint64).tolist()
                for ident, row in zip(s.ids.tolist(), rows):
                    probe.rows_of[id(row)] = ident
                v = (s.ids.tolist(), rows)
                held[seq] = v
                return v

        probe.held = Held()
        P = []
        for pk, (k, data, base, wire, last_bits) in enumerate(packets):
            bdist, pdist = header(data[:-4])
            before = len(probe.recs)
            if base is not None:
                seq, ids, rows = probe.read_packet(pk, data[:-4])
                del probe.held[seq]         # held rows come from the server's snapshots (named rows)
                want = snaps[k]
                if ids != want.ids.tolist() or rows != want.matrix.astype(np.uint64).tolist():
                    raise SystemExit(f"packet {k}: the reference decoder's snapshot is not the server's")
                tags = probe.tags
                padding = 8 * (len(data) - 4) - last_bits
                total = sum(tags.values()) - padding
                if total != last_bits:
                    raise SystemExit(f"packet {k}: parts add to {total} bits, the encoder wrote {last_bits}")
                params = sum(((1 if pdist is not None and self.comp_bits[c] <= 32 else 0)
                              + int(self.comp_bits[c]).bit_length())
                             for f in probe.nonempty for c in np.flatnonzero(self.comp_field == f))
                usebits = sum(1 for f in probe.nonempty for c in np.flatnonzero(self.comp_field == f)
                              if pdist is not None and self.comp_bits[c] <= 32)
                P.append(dict(k=k, wire=wire, bits=last_bits, res=tags.get("res", 0), params=params,
                              usebits=usebits, flips=probe.flips, sets=tags.get("set", 0), bdist=bdist,
                              pdist=pdist or 0, base=base, lo=before, hi=len(probe.recs)))
            else:
                P.append(dict(k=k, wire=wire, bits=last_bits, res=0, params=0, usebits=0, flips=0, sets=0,
                              bdist=0, pdist=0, base=None, lo=before, hi=before))
            for s in [s for s in probe.held if s < k - 140]:
                del probe.held[s]
        self.P = P
        R = np.array(probe.recs, dtype=np.int64).reshape(-1, 10)
        self.pk, self.c, self.ent, self.u, self.k, self.bits, self.use, self.B, self.Pv, self.v = R.T
        self.b = self.comp_bits[self.c]
        self.f = self.comp_field[self.c]
        self.alt = self.comp_alt[self.c]
        self.bdist = np.array([p["bdist"] for p in P])[self.pk]
        self.pdist = np.array([p["pdist"] for p in P])[self.pk]
        self.settled_from = start_settled
        self.gaffer = gaffer
        self._verify()
        out(f"  {name}: {len(P)} packets, {len(self.u)} component values read "
            f"({time.perf_counter() - t0:.0f} s); parts, snapshots and residuals check out")

    # the check the brief asks for: residuals recomputed from B, P and the packet's choices
    def reference(self, extra=None):
        b = self.b
        m = (np.int64(1) << b) - 1
        s = (self.B - self.Pv) & m
        s = np.where(s >> (b - 1) & 1, s - (m + 1), s)
        t = s * self.bdist
        den = np.maximum(self.pdist, 1)
        q = np.where(t >= 0, (2 * t + den) // (2 * den), -((-2 * t + den) // (2 * den)))
        if extra is not None:
            q = q + extra
        return np.where(self.use == 1, (self.B + q) & m, self.B)

    def zigzag(self, ref):
        b = self.b
        m = (np.int64(1) << b) - 1
        d = (self.v - ref) & m
        d = np.where(d >> (b - 1) & 1, d - (m + 1), d)
        return np.where(d >= 0, 2 * d, -2 * d - 1)

    def _verify(self):
        if not np.array_equal(self.zigzag(self.reference()), self.u):
            raise SystemExit("residuals recomputed with NumPy differ from those read")
        if not np.array_equal(eg_len(self.u, self.k, self.b, self.alt), self.bits):
            raise SystemExit("Exp-Golomb lengths recomputed differ from the bits read")
        per = np.bincount(self.pk, weights=self.bits, minlength=len(self.P))
        if any(int(per[i]) != p["res"] for i, p in enumerate(self.P)):
            raise SystemExit("residual bits per packet differ")

    # -- contexts, all from B and P ------------------------------------------------------------
    def step(self):
        """Each value's own extrapolation step t (0 where P is absent)."""
        b = self.b
        m = (np.int64(1) << b) - 1
        s = (self.B - self.Pv) & m
        s = np.where(s >> (b - 1) & 1, s - (m + 1), s)
        s = np.where(self.Pv < 0, 0, s)
        t = s * self.bdist
        den = np.maximum(self.pdist, 1)
        return np.where(t >= 0, (2 * t + den) // (2 * den), -((-2 * t + den) // (2 * den)))

    def _pair(self, p):
        """The packet's baseline and pred matrices, the pred's rows aligned to the baseline's
        (a row of -1 where the entity is not in P), and each value's row in the baseline."""
        bs = self.snaps[p["base"]]
        ps = self.snaps[(p["base"] - p["pdist"]) & 0xFFFF]
        B = bs.matrix.astype(np.int64)
        Pm = np.full_like(B, -1)
        common, ib, ip = np.intersect1d(bs.ids, ps.ids, assume_unique=True, return_indices=True)
        Pm[ib] = ps.matrix.astype(np.int64)[ip]
        rows = np.searchsorted(bs.ids, self.ent[p["lo"]:p["hi"]].astype(np.uint64))
        return B, Pm, rows

    def entity_motion(self):
        """Per value: the entity's motion class from B and P (both held by both ends): 0 at rest
        (B == P), 1 slow (position step <= 3 codes), 2 moving (<= 24), 3 fast, 4 not in P."""
        out = np.full(len(self.u), 4, dtype=np.int64)
        slots = sorted({self.comps[c][0] for c in np.flatnonzero(self.comp_field == 0)})
        for p in self.P:
            if p["hi"] == p["lo"] or not p["pdist"]:
                continue
            B, Pm, rows = self._pair(p)
            same = np.all(B == Pm, axis=1)
            d = np.abs(B[:, slots] - Pm[:, slots]).max(axis=1)
            cls = np.where(same, 0, np.where(d <= 3, 1, np.where(d <= 24, 2, 3)))
            cls = np.where(Pm[:, 0] < 0, 4, cls)
            out[p["lo"]:p["hi"]] = cls[rows]
        return out

    def field_history(self):
        """Per value: 1 if its field changed between P and B, 0 if not, 2 without P."""
        out = np.full(len(self.u), 2, dtype=np.int64)
        fslots = {f: sorted({self.comps[c][0] for c in np.flatnonzero(self.comp_field == f)})
                  for f in set(self.comp_field.tolist())}
        for p in self.P:
            lo, hi = p["lo"], p["hi"]
            if hi == lo or not p["pdist"]:
                continue
            B, Pm, rows = self._pair(p)
            absent = Pm[:, 0] < 0
            fv = self.f[lo:hi]
            seg = out[lo:hi]
            for f, sl in fslots.items():
                ch = np.where(absent, 2, np.any(B[:, sl] != Pm[:, sl], axis=1).astype(np.int64))
                sel = fv == f
                seg[sel] = ch[rows[sel]]
        return out


# -- coders -----------------------------------------------------------------------------------

def cells(run, ctx):
    """A cell id per value: (packet, component, context)."""
    nctx = int(ctx.max()) + 1 if len(ctx) else 1
    return (run.pk * len(run.comps) + run.c) * nctx + ctx


def eg_cell_bits(run, u, ctx):
    """Exp-Golomb with the best k per (packet, component, context), each k sent; per packet."""
    cid = cells(run, ctx)
    uniq, inv = np.unique(cid, return_inverse=True)
    kmax = int(run.b.max())
    best = np.full(len(uniq), np.inf)
    for k in range(kmax + 1):
        ok = k <= run.b
        lens = np.where(ok, eg_len(u, np.minimum(k, run.b), run.b, run.alt), 10 ** 6)
        best = np.minimum(best, np.bincount(inv, weights=lens, minlength=len(uniq)))
    pk_of = uniq // ((int(ctx.max()) + 1 if len(ctx) else 1) * len(run.comps))
    side = np.array([int(run.comp_bits[(c // (int(ctx.max()) + 1)) % len(run.comps)]).bit_length()
                     for c in uniq])
    return np.bincount(pk_of, weights=best + side, minlength=len(run.P))


def rice_adaptive_bits(run, u, ctx):
    """Rice with k adapted per cell inside the packet (LOCO-I), started from today's k."""
    out = np.zeros(len(run.P))
    cid = cells(run, ctx)
    u_l, k_l, b_l, c_l, pk_l = u.tolist(), run.k.tolist(), run.b.tolist(), cid.tolist(), run.pk.tolist()
    state = {}
    last_pk = -1
    for i in range(len(u_l)):
        if pk_l[i] != last_pk:
            state.clear()
            last_pk = pk_l[i]
        st = state.get(c_l[i])
        if st is None:
            k0 = k_l[i]
            st = [max(1, 1 << k0), 1]
            state[c_l[i]] = st
        A, N = st
        k = 0
        while (N << k) < A:
            k += 1
        b = b_l[i]
        k = min(k, b)
        q = u_l[i] >> k
        # a limited Rice code: after 2b zeros an escape to the raw value
        out[pk_l[i]] += q + 1 + k if q < 2 * b else 2 * b + b
        st[0] += u_l[i]
        st[1] += 1
        if st[1] >= 64:
            st[0] >>= 1
            st[1] >>= 1
    return out


def binarize(u, cell):
    """The AC's binary events of each value: (context id, bit), and the count of raw bits.
    Unary of e = bitlen(u + 1) - 1 (a 1 ends it), then e suffix bits of u + 1 below its top bit,
    the first two modelled per (cell, e), the rest raw. Context ids are unique per (cell, slot)."""
    x = u + 1
    e = np.floor(np.log2(x.astype(np.float64))).astype(np.int64)
    e = np.where((np.int64(1) << (e + 1)) <= x, e + 1, e)
    e = np.where((np.int64(1) << e) > x, e - 1, e)
    reps = e + 1
    idx = np.repeat(np.arange(len(u)), reps)
    pos = np.arange(len(idx)) - np.repeat(np.cumsum(reps) - reps, reps)
    ubits = (pos == e[idx]).astype(np.int64)
    uctx = cell[idx] * 64 + np.minimum(pos, 40)
    m1 = e >= 1
    s1bits = ((x[m1] >> (e[m1] - 1)) & 1)
    s1ctx = cell[m1] * 64 + 41 + np.minimum(e[m1], 11)
    m2 = e >= 2
    s2bits = ((x[m2] >> (e[m2] - 2)) & 1)
    s2ctx = cell[m2] * 64 + 52 + np.minimum(e[m2], 11)
    raw = np.maximum(e - 2, 0)
    return (np.concatenate([uctx, s1ctx, s2ctx]), np.concatenate([ubits, s1bits, s2bits]), raw,
            np.concatenate([idx, np.flatnonzero(m1), np.flatnonzero(m2)]))


_LG = np.vectorize(math.lgamma, otypes=[np.float64])


def kt_bits(n0, n1, a=0.5):
    """Ideal code length of a binary sequence with n0 zeros and n1 ones under the adaptive
    Krichevsky-Trofimov estimator (order-free: it depends on the counts only)."""
    n0 = np.asarray(n0, dtype=np.float64)
    n1 = np.asarray(n1, dtype=np.float64)
    lg = (_LG(n0 + n1 + 2 * a) - math.lgamma(2 * a) - _LG(n0 + a) + math.lgamma(a)
          - _LG(n1 + a) + math.lgamma(a))
    return lg / math.log(2)


def beta_bits(n0, n1, a0, a1, a=0.5):
    """Ideal code length of n0 zeros and n1 ones under adaptive counts started at (a0, a1)
    (Krichevsky-Trofimov when a0 = a1 = 0): it depends on the counts only, not their order."""
    n0, n1, a0, a1 = (np.asarray(x, dtype=np.float64) for x in (n0, n1, a0, a1))
    lg = (_LG(n0 + n1 + a0 + a1 + 2 * a) - _LG(a0 + a1 + 2 * a) - _LG(n0 + a0 + a) + _LG(a0 + a)
          - _LG(n1 + a1 + a) + _LG(a1 + a))
    return lg / math.log(2)


def ac_bits(run, u, ctx, flush=0.0, warm=0.0):
    """Ideal adaptive binary AC bits per packet (+ ``flush`` a packet that codes anything). The
    model of each packet starts from zero counts, or with ``warm`` > 0 from the counts its
    baseline's own packet ended with (that packet was decoded: the baseline is acked), times
    ``warm``; never from a packet that may be lost."""
    nctx = int(ctx.max()) + 1 if len(ctx) else 1
    cell = run.c * nctx + ctx                          # (component, context): no packet
    bctx, bits, raw, who = binarize(u, cell)
    K = int(bctx.max()) + 1 if len(bctx) else 1
    pk = run.pk[who]
    key = pk * K + bctx
    ukey, kinv = np.unique(key, return_inverse=True)
    n1 = np.bincount(kinv, weights=bits, minlength=len(ukey))
    n0 = np.bincount(kinv, minlength=len(ukey)) - n1
    a0 = np.zeros(len(ukey))
    a1 = np.zeros(len(ukey))
    if warm > 0:
        base = np.array([p["base"] if p["base"] is not None else -1 for p in run.P])
        bp = base[ukey // K]
        want = bp * K + ukey % K
        j = np.searchsorted(ukey, want)
        j = np.minimum(j, len(ukey) - 1)
        hit = (bp >= 0) & (ukey[j] == want)
        a0 = np.where(hit, n0[j] * warm, 0.0)
        a1 = np.where(hit, n1[j] * warm, 0.0)
    cost = beta_bits(n0, n1, a0, a1)
    out = np.bincount(ukey // K, weights=cost, minlength=len(run.P))
    out += np.bincount(run.pk, weights=raw, minlength=len(run.P))
    coded = np.bincount(run.pk, minlength=len(run.P)) > 0
    # a quat's first component also says "not a new largest index" (today: its escape's extra
    # bit): one adaptive event a quat value, the flips (left as today's bits) its ones
    nq = np.bincount(run.pk, weights=run.alt, minlength=len(run.P))
    flips = np.array([p["flips"] for p in run.P], dtype=np.float64)
    out += np.where(nq + flips > 0, kt_bits(nq, flips), 0.0)
    return out + flush * coded


def eg_acked_k_bits(run, u, ctx):
    """Exp-Golomb with k per (component, context) taken from the baseline's own packet (the
    best k for that cell's values there: both ends know them), else the packet's k of the
    component (sent as today, so the side information is today's)."""
    nctx = int(ctx.max()) + 1 if len(ctx) else 1
    cell = run.c * nctx + ctx
    NC = len(run.comps) * nctx
    key = run.pk * NC + cell
    ukey, inv = np.unique(key, return_inverse=True)
    kmax = int(run.b.max())
    costs = np.full((len(ukey), kmax + 1), np.inf)
    for k in range(kmax + 1):
        lens = np.where(k <= run.b, eg_len(u, np.minimum(k, run.b), run.b, run.alt), 10 ** 6)
        costs[:, k] = np.bincount(inv, weights=lens, minlength=len(ukey))
    bestk = costs.argmin(axis=1)
    base = np.array([p["base"] if p["base"] is not None else -1 for p in run.P])
    want = base[run.pk] * NC + cell
    j = np.minimum(np.searchsorted(ukey, want), len(ukey) - 1)
    hit = (base[run.pk] >= 0) & (ukey[j] == want)
    k = np.where(hit, bestk[j], run.k)
    k = np.minimum(k, run.b)
    return np.bincount(run.pk, weights=eg_len(u, k, run.b, run.alt), minlength=len(run.P))


def huffman_lengths(q):
    """Code lengths of a Huffman code for the weights q (all > 0)."""
    import heapq
    if len(q) == 1:
        return [1]
    heap = [(w, i, [i]) for i, w in enumerate(q)]
    heapq.heapify(heap)
    lens = [0] * len(q)
    n = len(q)
    while len(heap) > 1:
        w1, _, a = heapq.heappop(heap)
        w2, _, b = heapq.heappop(heap)
        for i in a + b:
            lens[i] += 1
        heapq.heappush(heap, (w1 + w2, n, a + b))
        n += 1
    return lens


def bucket_bits(run, u, ctx, huffman=False, smooth=0.5):
    """A static code of each value's bucket e = bitlen(u + 1) - 1 (then its e bits raw), with
    probabilities from the counts of the same (component, context) in the baseline's own packet
    (+ ``smooth``): ideal (rANS would come within a fraction of a percent) or a Huffman code
    (a table lookup to decode, as fast as Exp-Golomb). Where that packet had no value in the
    cell, Exp-Golomb with the packet's k (sent as today, so the side information is today's)."""
    nctx = int(ctx.max()) + 1 if len(ctx) else 1
    NC = len(run.comps) * nctx
    NE = int(run.b.max()) + 2
    cell = run.c * nctx + ctx
    x = u + 1
    e = np.floor(np.log2(x.astype(np.float64))).astype(np.int64)
    e = np.where((np.int64(1) << (e + 1)) <= x, e + 1, e)
    e = np.where((np.int64(1) << e) > x, e - 1, e)
    counts = np.zeros((len(run.P), NC, NE))
    np.add.at(counts, (run.pk, cell, e), 1)
    base = np.array([p["base"] if p["base"] is not None else -1 for p in run.P])
    bp = base[run.pk]
    q = np.where(bp[:, None] >= 0, counts[np.maximum(bp, 0), cell], 0.0)
    have = q.sum(axis=1) > 0
    nsym = (run.b + 1)[:, None]
    valid = np.arange(NE)[None, :] < nsym
    q = np.where(valid, q + smooth, 0.0)
    if huffman:
        cache = {}
        lens = np.zeros(len(u))
        for i in np.flatnonzero(have):
            key = (int(bp[i]), int(cell[i]))
            L = cache.get(key)
            if L is None:
                L = cache[key] = huffman_lengths(q[i][: int(run.b[i]) + 1].tolist())
            lens[i] = L[int(e[i])]
        sym = lens
    else:
        sym = -np.log2(q[np.arange(len(u)), e] / q.sum(axis=1))
    cost = np.where(have, sym + e, eg_len(u, run.k, run.b, run.alt))
    return np.bincount(run.pk, weights=cost, minlength=len(run.P))


def entropy_bits(run, u, ctx):
    """The empirical entropy of each (packet, cell)'s values, given free: a bound, not a coder."""
    cid = cells(run, ctx)
    key = np.stack([cid, u], axis=1)
    _, inv, cnt = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    inv = inv.ravel()
    tot = np.bincount(np.unique(cid, return_inverse=True)[1].ravel(), minlength=0)
    cell_inv = np.unique(cid, return_inverse=True)[1].ravel()
    p = cnt[inv] / tot[cell_inv]
    return np.bincount(run.pk, weights=-np.log2(p), minlength=len(run.P))


# -- predictions other than today's -------------------------------------------------------------

def axis_codes_per_metre(schema, field="position"):
    spec = schema.codecs[list(schema.names).index(field)].spec()
    out = []
    for c in spec["codecs"]:
        L = (1 << c["bits"]) - (2 if c.get("mode") == "midpoint" else 1)
        out.append(L / (c["max"] - c["min"]))
    return out


def gravity_residuals(run, hz, floor=False):
    """u with the y position's extrapolation accelerated by gravity where y moved from P to B."""
    cpm = axis_codes_per_metre(run.schema)
    g = 9.81 * cpm[1] / hz ** 2                      # codes per tick**2
    y = (run.f == 0) & (run.c == 1)
    moved = y & (run.Pv >= 0) & (run.B != run.Pv) & (run.use == 1)
    extra = np.where(moved, np.round(-0.5 * g * run.bdist * (run.bdist + run.pdist)), 0).astype(np.int64)
    ref = run.reference(extra)
    if floor:
        lowest = int(min(s.matrix[:, 1].min() for s in run.snaps))
        ref = np.where(moved, np.maximum(ref, np.minimum(run.B, lowest)), ref)
    return run.zigzag(ref)


def velocity_residuals(run, hz, vfield="velocity"):
    """u of the position predicted from the baseline's velocity field: B + v_B * bdist / hz."""
    cpm = axis_codes_per_metre(run.schema)
    u = run.u.copy()
    pos = run.f == 0
    bases = np.array([p["base"] if p["base"] is not None else -1 for p in run.P])[run.pk]
    ref = run.B.copy()
    for base in np.unique(bases[pos]):
        sel = pos & (bases == base)
        v = np.asarray(run.snaps[base].columns[vfield], dtype=np.float64)
        row = np.searchsorted(run.snaps[base].ids, run.ent[sel].astype(np.uint64))
        axis = run.c[sel]
        step = v[row, axis] * run.bdist[sel] / hz * np.array(cpm)[axis]
        ref[sel] = (run.B[sel] + np.round(step).astype(np.int64)) & ((np.int64(1) << run.b[sel]) - 1)
    u[pos] = run.zigzag(ref)[pos]
    return u


# -- the table ---------------------------------------------------------------------------------

def contexts(run):
    t = np.abs(run.step())
    stepb = np.minimum(np.floor(np.log2(t + 1.0)).astype(np.int64), 8)
    stepb = np.where(run.Pv < 0, 9, stepb)
    motion = run.entity_motion()
    fh = run.field_history()
    return {
        "none": np.zeros(len(run.u), dtype=np.int64),
        "motion": motion,
        "fhist": fh,
        "step": stepb,
        "step+fhist": stepb * 3 + fh,
        "motion+fhist": motion * 3 + fh,
        "step+motion": stepb * 5 + motion,
    }


def summarize(run, alt_res, side):
    """(whole, settled) bits per entity per update with the residuals and the k's replaced."""
    P = run.P
    wire = np.array([p["wire"] for p in P], dtype=np.float64)
    res = np.array([p["res"] for p in P], dtype=np.float64)
    kbits = np.array([p["params"] - p["usebits"] for p in P], dtype=np.float64)
    tot = wire - res - kbits + alt_res + side
    ks = np.array([p["k"] for p in P])
    n = run.rec.n_bodies
    whole = ks >= run.lag
    settled = ks >= max(run.lag, run.settled_from)
    return float(tot[whole].mean()) / n, float(tot[settled].mean()) / n, float((alt_res + side)[whole].sum())


def evaluate(run, hz, flush, velocity=False, warm=0.5):
    """Rows (label, whole, settled, coded bits) for this run."""
    P = run.P
    zero = np.zeros(len(P))
    kbits = np.array([p["params"] - p["usebits"] for p in P], dtype=np.float64)
    res = np.array([p["res"] for p in P], dtype=np.float64)
    rows = []

    def add(label, alt, side):
        rows.append((label,) + summarize(run, alt, side))

    add("today's stream (real packets)", res, kbits)
    ctx = contexts(run)
    u = run.u
    add("eg, best k per component (side as today)", eg_cell_bits(run, u, ctx["none"]), zero)
    add("oracle/H per component, histogram free", entropy_bits(run, u, ctx["none"]), zero)
    for name in ("none", "motion", "fhist", "step", "step+fhist", "motion+fhist", "step+motion"):
        c = ctx[name]
        if name != "none":
            add(f"eg, k per cell sent     ctx {name}", eg_cell_bits(run, u, c), zero)
        add(f"eg, k from acked packet ctx {name}", eg_acked_k_bits(run, u, c), kbits)
        add(f"ac, reset each packet   ctx {name}", ac_bits(run, u, c, flush), zero)
        add(f"ac, warm from acked pkt ctx {name}", ac_bits(run, u, c, flush, warm), zero)
    for name in ("none", "step"):
        add(f"buckets from acked pkt, ideal ctx {name}", bucket_bits(run, u, ctx[name]), kbits)
        add(f"buckets from acked pkt, Huffman ctx {name}", bucket_bits(run, u, ctx[name], True), kbits)
    add("rice, k adapted in packet ctx step", rice_adaptive_bits(run, u, ctx["step"]), kbits)
    for w in (0.25, 1.0):
        add(f"ac, warm x{w:g} ctx step+fhist", ac_bits(run, u, ctx["step+fhist"], flush, w), zero)
    for floor in (False, True):
        ug = gravity_residuals(run, hz, floor)
        tag = "gravity" + ("+floor" if floor else "")
        add(f"{tag}: eg, best k per component", eg_cell_bits(run, ug, ctx["none"]), zero)
        add(f"{tag}: ac warm ctx step+fhist", ac_bits(run, ug, ctx["step+fhist"], flush, warm), zero)
        add(f"{tag}: buckets Huffman ctx none", bucket_bits(run, ug, ctx["none"], True), kbits)
    if velocity:
        uv = velocity_residuals(run, hz)
        add("velocity field: eg, best k per component", eg_cell_bits(run, uv, ctx["none"]), zero)
        both = np.minimum(uv, u)
        add("velocity or extrapolation, oracle per value", eg_cell_bits(run, both, ctx["none"]), zero)
        add("velocity field: ac warm ctx step+fhist", ac_bits(run, uv, ctx["step+fhist"], flush, warm), zero)
    return rows


def real_coder_check(run, ctxname="step+fhist", limit=None, out=print):
    """Code every packet's residuals with the real range coder: (real bits, ideal bits, packets)."""
    ctx = contexts(run)[ctxname]
    cid = cells(run, ctx)
    real = ideal = 0.0
    n = 0
    t0 = time.perf_counter()
    for i, p in enumerate(run.P):
        lo, hi = p["lo"], p["hi"]
        if hi == lo or (limit is not None and n >= limit):
            continue
        vals, cs = run.u[lo:hi].tolist(), cid[lo:hi].tolist()
        data, model = context_coder.encode(vals, cs)
        if context_coder.decode(data, cs) != vals:
            raise SystemExit(f"packet {p['k']}: the range coder does not round-trip")
        real += 8 * len(data)
        ideal += model.ideal
        n += 1
    return real, ideal, n, time.perf_counter() - t0


def speed_estimate(run, ctxname="step+fhist", out=print):
    """Compile bench/context_cost.c and time today's Exp-Golomb against the range coder in C on
    this run's residuals (cells renumbered from 0 in each packet). None without a C compiler."""
    import shutil
    import subprocess
    import tempfile
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    cid = cells(run, contexts(run)[ctxname])
    lines = []
    for p in run.P:
        lo, hi = p["lo"], p["hi"]
        if hi == lo:
            continue
        _, local = np.unique(cid[lo:hi], return_inverse=True)
        for j, i in enumerate(range(lo, hi)):
            lines.append(f"{run.pk[i]} {local.ravel()[j]} {run.u[i]} {run.k[i]} {run.b[i]}")
    with tempfile.TemporaryDirectory() as d:
        exe = os.path.join(d, "context_cost")
        subprocess.run([cc, "-O2", "-o", exe, os.path.join(HERE, "context_cost.c")], check=True)
        r = subprocess.run([exe], input=f"{len(lines)}\n" + "\n".join(lines) + "\n", capture_output=True,
                           text=True, check=True)
    return r.stdout.strip()


def make_scenes(args):
    class A:
        pass

    a = A()
    a.scene, a.bodies, a.seconds, a.hz, a.seed = None, args.bodies, args.seconds, 60, args.seed
    bench = bench_bandwidth.load(a)
    d = players(args.players, args.player_seconds, 60, args.seed)
    trace = bench_bandwidth.Recording(d["positions"], d["orientations"], d["velocities"], d["ids"],
                                      d["at_rest"], int(d["hz"]))
    return bench, trace


def columns_of(rec, schema):
    names = set(schema.names)

    def columns(k):
        cols = {"position": rec.positions[k], "rotation": rec.orientations[k], "rest": rec.at_rest[k]}
        if rec.velocities is not None:
            cols["velocity"] = rec.velocities[k]
        return {n: v for n, v in cols.items() if n in names}
    return columns


def main(argv=None, out=print):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller scenes (150 bodies 6 s, 32 players 10 s)")
    ap.add_argument("--bodies", type=int, default=300)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--players", type=int, default=64)
    ap.add_argument("--player-seconds", type=float, default=20.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lag", type=int, default=6, help="acks this many ticks late (6: 100 ms at 60 Hz)")
    ap.add_argument("--loss", type=float, default=0.2, help="the lossy run's loss, both ways")
    ap.add_argument("--cost", action="store_true",
                    help="also time Exp-Golomb against the range coder in C (bench/context_cost.c)")
    ap.add_argument("--real-packets", type=int, default=None,
                    help="packets coded with the real range coder (default: all of the first run)")
    args = ap.parse_args(argv)
    if args.quick:
        args.bodies, args.seconds, args.players, args.player_seconds = 150, 6.0, 32, 10.0
        args.real_packets = args.real_packets or 60
    t0 = time.perf_counter()
    bench, trace = make_scenes(args)
    hz, lag = 60, args.lag
    settle = 4 * hz
    out(f"issue 38 context study: acks {lag} ticks late at {hz} Hz; whole run from tick {lag}, "
        f"settled from tick {settle} (bench_bandwidth's windows)")
    runs = []
    # the bench scene, Gaffer's payload (position, smallest three, rest bit), lossless and lossy
    gschema = default_schema(velocity=False, rest=True)
    gcodes = bench_bandwidth.gaffer_codes(bench)
    gb = {v: (bench_bandwidth.gaffer_bits(bench, gcodes, lag, v, lag),
              bench_bandwidth.gaffer_bits(bench, gcodes, lag, v, max(lag, settle)))
          for v in ("article", "challenge")}
    name = f"bench scene {bench.n_bodies} bodies x {bench.n_ticks} ticks"
    runs.append(Run(f"{name}, no loss", bench, gschema, columns_of(bench, gschema), lag, 0.0, args.seed,
                    settle, gb, out=out))
    runs.append(Run(f"{name}, {args.loss:.0%} loss", bench, gschema, columns_of(bench, gschema), lag,
                    args.loss, args.seed, settle, gb, out=out))
    # the player trace, Gaffer's payload over bounds fitted to it
    bounds, bits = bench_bandwidth.fitted_bounds(trace.positions)
    pschema, pscene = bench_bandwidth.schemas_for(bounds, bits)
    pcodes = bench_bandwidth.gaffer_codes(trace, bounds, bits)
    pg = {v: (bench_bandwidth.gaffer_bits(trace, pcodes, lag, v, lag, bits),
              bench_bandwidth.gaffer_bits(trace, pcodes, lag, v, max(lag, settle), bits))
          for v in ("article", "challenge")}
    runs.append(Run(f"player trace {trace.n_bodies} players x {trace.n_ticks} ticks, no loss", trace, pschema,
                    columns_of(trace, pschema), lag, 0.0, args.seed, settle, pg, out=out))
    # the velocity field as a predictor: the scene schema (which sends one), no yardstick
    vschema = default_schema(velocity=True)
    vruns = [Run("bench scene, scene schema (with velocity), no loss", bench, vschema,
                 columns_of(bench, vschema), lag, 0.0, args.seed, settle, None, out=out),
             Run("player trace, scene schema (with velocity), no loss", trace, pscene,
                 columns_of(trace, pscene), lag, 0.0, args.seed, settle, None, out=out)]
    # the real range coder on one configuration, for the flush cost and the check
    real, ideal, n, secs = real_coder_check(runs[0], limit=args.real_packets)
    flush = (real - ideal) / max(n, 1)
    out(f"real range coder (bench/context_coder.py), ctx step+fhist, {n} packets of the first run: "
        f"{real:.0f} bits against an ideal {ideal:.0f} ({real / ideal - 1:+.2%}, {flush:+.1f} bits a packet); "
        f"every packet round-trips ({secs:.0f} s in Python)")
    if args.cost:
        est = speed_estimate(runs[0])
        out("C speed (bench/context_cost.c, -O2, median of 7, first run's residuals): "
            + (est.replace("\n", "; ") if est else "no C compiler"))
    results = []
    for run in runs + vruns:
        rows = evaluate(run, hz, flush, velocity=run in vruns)
        results.append((run, rows))
        today = rows[0]
        out("")
        out(run.name)
        if run.gaffer:
            ga, gc = run.gaffer["article"], run.gaffer["challenge"]
            out(f"  Gaffer (lossless, same codes): article {ga[0]:.2f} / settled {ga[1]:.2f}, challenge "
                f"{gc[0]:.2f} / {gc[1]:.2f} bits/entity/update")
            out(f"  {'candidate':46s} {'whole':>6s} {'xArt':>5s} {'xCh':>5s} {'settl':>6s} {'xArt':>5s} "
                f"{'xCh':>5s} {'coded':>7s}")
        else:
            out(f"  {'candidate':46s} {'whole':>6s} {'settl':>6s} {'coded':>7s}")
        free = summarize(run, np.zeros(len(run.P)), np.zeros(len(run.P)))
        ks = np.array([p["k"] for p in run.P])
        for label, m in (("whole", ks >= run.lag), ("settled", ks >= max(run.lag, run.settled_from))):
            wire = sum(p["wire"] for p, x in zip(run.P, m) if x)
            coded = sum(p["res"] + p["params"] - p["usebits"] for p, x in zip(run.P, m) if x)
            sets = sum(p["sets"] for p, x in zip(run.P, m) if x)
            j = 0 if label == "whole" else 1
            vs = f" ({free[j] / ga[j]:.3f}x article, {free[j] / gc[j]:.3f}x challenge)" if run.gaffer else ""
            out(f"  {label}: residuals and their k {coded / wire:.1%} of the wire, entity and field sets "
                f"{sets / wire:.1%}; with residuals free: {free[j]:.2f} bits{vs}")
        for label, w, s, coded in rows:
            dc = coded / today[3] - 1
            if run.gaffer:
                out(f"  {label:46s} {w:6.2f} {w / ga[0]:5.3f} {w / gc[0]:5.3f} {s:6.2f} {s / ga[1]:5.3f} "
                    f"{s / gc[1]:5.3f} {dc:+7.1%}")
            else:
                out(f"  {label:46s} {w:6.2f} {s:6.2f} {dc:+7.1%}")
    out("")
    out("whole/settl: bits per entity per update (the wire: packet + 32-bit check, + hello), as "
        "bench_bandwidth.py; xArt/xCh: against Gaffer's article / challenge variants; coded: the "
        "residuals and their parameters against today's (whole run)")
    out(f"(total {time.perf_counter() - t0:.0f} s)")
    return results


if __name__ == "__main__":
    main()
