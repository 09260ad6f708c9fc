"""How far back the extrapolation snapshot should be (a model, for the encoder's rule).

A delta packet may extrapolate each component from its baseline ``B`` (``bdist`` ticks old)
and an older acknowledged snapshot ``P`` (``pdist`` ticks before the baseline):
``B + (B - P) * bdist / pdist`` (docs/wire-format.md 7). This script prices every ``pdist``
from 1 to ``bdist`` on a scene with the model of bench/layout_study.py (each changed component's
best Exp-Golomb cost, with or without extrapolation, as the encoder chooses; the parts that do
not depend on ``pdist`` left out), for several ack lags, and prints each one's bits against
``pdist = bdist``; a ``*`` marks the divisors of ``bdist`` (whole ratios), ``<`` the encoder's
choice (``quantcodec._testing.pred_target_of``).

    python bench/pred_study.py [--scene FILE.npz] [--lags 4 6 8 12]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
try:
    import quantcodec  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.dirname(here))

import bench_bandwidth  # noqa: E402
import layout_study  # noqa: E402
from quantcodec._testing import pred_target_of  # noqa: E402


round_div = layout_study.round_div


def scene_codes(args):
    """The Gaffer payload's schema (position, rotation, rest bit) and each tick's code matrix."""
    rec = bench_bandwidth.load(args)
    if args.scene:
        bounds, bits = bench_bandwidth.fitted_bounds(rec.positions)
        schema, _ = bench_bandwidth.schemas_for(bounds, bits)
    else:
        from quantcodec.tools.link import default_schema
        schema = default_schema(velocity=False, rest=True)
    ids = np.arange(rec.n_bodies)
    mats = [schema.snapshot(ids, {"position": rec.positions[k], "rotation": rec.orientations[k],
                                  "rest": rec.at_rest[k]}).matrix.astype(np.uint64)
            for k in range(rec.n_ticks)]
    return schema, mats


def bits_by_pdist(table, comps, mats, lag, start, step=2):
    """{pdist: model bits summed over packets start, start + step, ...} for acks ``lag`` late."""
    fields = sorted({t["field"] for t in table})
    fslots = {f: [s for s, t in enumerate(table) if t["field"] == f] for f in fields}
    out = {pd: 0 for pd in range(1, lag + 1)}
    for k in range(start, len(mats), step):
        cur, base = mats[k], mats[k - lag]
        changed = {f: np.any(cur[:, fslots[f]] != base[:, fslots[f]], axis=1) for f in fields}
        for pd in out:
            pred = mats[k - lag - pd]
            for s, sh, b, smag, f in comps:
                m = changed[f]
                mask = np.uint64((1 << b) - 1)
                c, r0, p0 = (layout_study.linear(((a[m, s] >> np.uint64(sh)) & mask).astype(np.int64), b, smag)
                             for a in (cur, base, pred))
                if table[s]["kind"] == "Quat":       # a new largest component is coded apart
                    same = (cur[m, s] >> np.uint64(3 * b)) == (base[m, s] >> np.uint64(3 * b))
                    c, r0, p0 = c[same], r0[same], p0[same]
                ext = layout_study.extrapolated(r0, p0, lag, pd)
                refs = [layout_study.zigzag_differences(c, r0, b), layout_study.zigzag_differences(c, ext, b)]
                out[pd] += min(layout_study.best_eg(u, b) for u in refs) + 1
    return out


def main(argv=None, out=print):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scene", help="a recording (bench/record_scene.py); default: the built-in scene")
    ap.add_argument("--bodies", type=int, default=300)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--hz", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lags", type=int, nargs="+", default=[4, 5, 6, 8, 9, 12])
    args = ap.parse_args(argv)
    schema, mats = scene_codes(args)
    table = schema._plan.slot_table()
    comps = [c for c in layout_study.components(table) if table[c[0]]["kind"] != "Bool"]
    start = 2 * max(args.lags) + 1
    out(f"{'recording ' + args.scene if args.scene else 'built-in scene'}: bits of the changed "
        f"components' differences by pdist, against pdist = bdist (packets from tick {start}, every 2nd)")
    rows = {}
    for lag in args.lags:
        bits = bits_by_pdist(table, comps, mats, lag, start)
        rows[lag] = bits
        chosen = pred_target_of(lag)
        out(f"bdist {lag:2d}: " + " ".join(
            f"{pd}{'*' if lag % pd == 0 else ''}{'<' if pd == chosen else ''}:"
            f"{(v - bits[lag]) / bits[lag]:+.1%}" for pd, v in bits.items()))
    return rows


if __name__ == "__main__":
    main()
