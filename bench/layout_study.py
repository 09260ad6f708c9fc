"""What a fixed-width layout of the differences would cost in bytes (a model, not a codec).

The snapshot packet codes each changed component's difference (from the baseline, or from the
extrapolation) with an Exp-Golomb code whose parameter k the encoder picks per component and
packet (docs/wire-format.md 6-8). Those codes are read one after the other: where a code starts
is known only once the one before it is decoded, and that chain is what the decoder spends its
time on (bench/README.md, bench_snapshot.py).

A layout the decoder could read in parallel would give each component a width w per packet and
every changed entity's difference that many bits, so that where each one starts follows from
the field masks alone; differences that do not fit (at most a share ``--exceptions`` of them)
would be sent as the all-ones escape of w bits and their excess Exp-Golomb coded in a separate
list (the classic "patched frame of reference"). This script prices that layout on the bench
scene, against the same model of today's codes, for each component and packet with the better
of the two references, as the encoder chooses:

- ``eg``: sum over components of the best Exp-Golomb cost (k in 0..19) + the bits of k as the
  packet sends it (the bit length of the width); a NearlyZero's components only where its flag
  is 1;
- ``fixed(x)``: the cheapest w with at most a share x of exceptions: n*w + the exceptions'
  best Exp-Golomb cost + 5 bits for w (+1 for an exception list);
- ``fixed(max)``: w wide enough for every difference (no exceptions).

Headers, id sets, field masks, NearlyZero flags and smallest-three index changes are the same in
both and left out; the ``packet`` column is the real packet, for scale.

    python bench/layout_study.py [--bodies 1000] [--lag 6] [--exceptions 0.05 0.15 0.3]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

try:
    import quantcodec  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from quantcodec import SnapshotEncoder  # noqa: E402
from quantcodec.tools.scene import simulate  # noqa: E402
from quantcodec.tools.link import default_schema  # noqa: E402
from quantcodec._testing import pred_target_of  # noqa: E402


def components(table):
    """(slot, shift, bits, sign-magnitude, field) of each ordered component, as the encoder
    splits the slots (a Quat's three kept components; flags have none)."""
    out = []
    for s, t in enumerate(table):
        if t["kind"] == "Quat":
            cb = (t["bits"] - 2) // 3
            out += [(s, (2 - j) * cb, cb, False, t["field"]) for j in range(3)]
        elif t["kind"] != "flag":
            out.append((s, 0, t["bits"], t["kind"] in ("PowerCurve", "Half"), t["field"]))
    return out


def linear(v, b, smag):
    """The ordered image of a sign-magnitude code (docs/wire-format.md 6.1)."""
    if not smag:
        return v
    return np.where((v >> (b - 1)) & 1 == 1, v ^ ((1 << (b - 1)) - 1), v)


def eg_bits(u, k):
    """Exp-Golomb(k) code lengths of u >= 0."""
    e = np.floor(np.log2((u >> k) + 1.0)).astype(np.int64)
    return 2 * e + 1 + k


def best_eg(u, b=32):
    """The fewest bits of u under one Exp-Golomb parameter, and the parameter's own bits."""
    return 0 if len(u) == 0 else min(int(eg_bits(u, k).sum()) for k in range(20)) + b.bit_length()


def best_fixed(u, b, share):
    """(bits, width) of the cheapest fixed width with at most ``share`` exceptions."""
    n, best = len(u), None
    if n == 0:
        return 0, 0
    for w in range(1, b + 2):
        lim = (1 << w) - 1
        exc = u[u >= lim] - lim
        if len(exc) > share * n:
            continue
        c = n * w + best_eg(exc, b) + 5 + (len(exc) > 0)
        if best is None or c < best[0]:
            best = (c, w)
    return best


def round_div(x, den):
    """x / den rounded half away from zero, in integers (docs/wire-format.md 7)."""
    return np.where(x >= 0, (2 * x + den) // (2 * den), -((-2 * x + den) // (2 * den)))


def extrapolated(base, pred, bdist, pdist):
    """The extrapolation reference base + (base - pred) * bdist / pdist (docs/wire-format.md 7)."""
    return base + round_div((base - pred) * bdist, pdist)


def zigzag_differences(cur, ref, b):
    d = (cur - ref) % (1 << b)
    d = np.where(d >= (1 << (b - 1)), d - (1 << b), d)
    return np.where(d >= 0, 2 * d, -2 * d - 1).astype(np.int64)


def packet_model(table, comps, cur, base, pred, shares, bdist=1, pdist=1):
    """Bits of the differences of one packet under each layout (``pred`` is ``pdist`` before
    ``base``, which is ``bdist`` before ``cur``)."""
    fields = sorted({t["field"] for t in table})
    fslots = {f: [s for s, t in enumerate(table) if t["field"] == f] for f in fields}
    changed = {f: np.any(cur[:, fslots[f]] != base[:, fslots[f]], axis=1) for f in fields}
    flag_of = {}        # a NearlyZero's components are sent only where its flag is 1
    for s, t in enumerate(table):
        if t["kind"] == "flag":
            for j in range(s + 1, s + 1 + t["span"]):
                flag_of[j] = s
    out = {"eg": 0, "max": 0, **{x: 0 for x in shares}}
    for s, sh, b, smag, f in comps:
        m = changed[f]
        if s in flag_of:
            m = m & (cur[:, flag_of[s]] != 0)
        mask = np.uint64((1 << b) - 1)
        c, r0, p0 = (linear(((a[m, s] >> np.uint64(sh)) & mask).astype(np.int64), b, smag)
                     for a in (cur, base, pred))
        if table[s]["kind"] == "Quat":      # a new largest component is coded apart, in both
            same = (cur[m, s] >> np.uint64(3 * b)) == (base[m, s] >> np.uint64(3 * b))
            c, r0, p0 = c[same], r0[same], p0[same]
        refs = [zigzag_differences(c, r0, b), zigzag_differences(c, extrapolated(r0, p0, bdist, pdist), b)]
        out["eg"] += min(best_eg(u, b) for u in refs) + 1
        out["max"] += min(len(u) * (int(np.log2(u.max() + 1.0)) + 1 if len(u) else 0)
                          for u in refs) + 5 + 1
        for x in shares:
            out[x] += min(best_fixed(u, b, x)[0] for u in refs) + 1
    return out


def main(argv=None, out=print):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bodies", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--lag", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--exceptions", type=float, nargs="+", default=[0.05, 0.15, 0.3])
    args = ap.parse_args(argv)
    scene = simulate(args.bodies, args.seconds, 60, args.seed)
    schema = default_schema(velocity=True)
    table = schema._plan.slot_table()
    comps = components(table)
    ticks = scene.ids.shape[0]
    snaps = [schema.snapshot(scene.ids[k], scene.columns(k)) for k in range(ticks)]
    enc = SnapshotEncoder(schema)
    shares = list(args.exceptions)
    total = {"packet": 0, "eg": 0, "max": 0, **{x: 0 for x in shares}}
    heads = ["packet", "eg"] + [f"fixed({x:g})" for x in shares] + ["fixed(max)"]
    out(f"{args.bodies} bodies, acks {args.lag} ticks late: bits of the changed components' "
        f"differences per packet (model), and the real packet")
    out(f"{'tick':>5s} {'changed':>8s} " + " ".join(f"{h:>11s}" for h in heads))
    per_tick = []
    for k in range(ticks):
        if k >= args.lag:
            enc.ack(k - args.lag)
        nbits = 8 * (len(enc.encode(k, snaps[k])) - 4)          # the packet, without the datagram's check
        pdist = pred_target_of(args.lag)
        if k < args.lag + pdist or not np.array_equal(snaps[k].ids, snaps[k - args.lag].ids):
            continue
        cur, base, pred = (snaps[j].matrix.astype(np.uint64) for j in (k, k - args.lag, k - args.lag - pdist))
        bits = packet_model(table, comps, cur, base, pred, shares, args.lag, pdist)
        bits["packet"] = nbits
        for key in total:
            total[key] += bits[key]
        per_tick.append((k, bits))
        if k in (60, 150, 280):
            changed = float(np.mean(np.any(cur != base, axis=1)))
            out(f"{k:5d} {changed:8.1%} " + " ".join(
                f"{bits[key]:11d}" for key in ["packet", "eg"] + shares + ["max"]))
    out(f"{'all':>5s} {'':>8s} " + " ".join(f"{total[key]:11d}" for key in ["packet", "eg"] + shares + ["max"]))
    out("over the stream, fixed widths cost (bits more than eg, as a share of the real stream): "
        + ", ".join(f"fixed({x:g}) {(total[x] - total['eg']) / total['packet']:+.1%}" for x in shares)
        + f", fixed(max) {(total['max'] - total['eg']) / total['packet']:+.1%}")
    return total, per_tick


if __name__ == "__main__":
    main()
