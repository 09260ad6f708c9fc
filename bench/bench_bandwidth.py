"""Bandwidth of snapshot delta compression on the bench scene, side by side with Gaffer On Games.

The scene (``quantcodec.tools.scene``: a few hundred bodies falling, colliding, sliding and coming to
rest, two kinematic bodies ploughing through) is streamed at 60 Hz to one client whose acks
arrive 100 ms late (``quantcodec.tools.link.run_stream``). Printed, all from one run: bits per
entity per update and kbit/s for raw float32 values, full quantized snapshots and delta
snapshots, the share of entities that changed against the packet's baseline, the worst decoded
errors, and the same quantized scene through ``bench/gaffer.py`` (Gaffer On Games' "Snapshot
Compression" bit counts, article and challenge variants) as the yardstick.

Two schemas: the *Gaffer payload* (position at 512 values per metre, 9-bit smallest three and
the at-rest bit, what Gaffer's cube sends) for the head-to-head, and the *scene schema* (plus a
NearlyZero velocity, which Gaffer does not send). Packets before the first acknowledgement can
arrive (the first ``ack_delay`` ticks, full snapshots in both schemes) are left out of the
averages, as ``gaffer.run`` does; "settled" averages from 4 s on, when most bodies rest.

    python bench/bench_bandwidth.py                   # 300 bodies, 10 s
    python bench/bench_bandwidth.py --bodies 900 --loss 0.1
    python bench/bench_bandwidth.py --scene recording.npz   # positions (T,N,3), orientations (T,N,4)
                                                            # [velocities, ids, at_rest, hz]
    python bench/bench_bandwidth.py --scene rec.npz --up z --quat-order wxyz   # a z-up, (w,x,y,z) recording

Positions of a recording are quantized at the built-in scene's resolution (512 values per metre,
Gaffer's) over bounds fitted to the recording (``--bounds auto``, the default with ``--scene``):
x and z symmetric around 0, y from 0 (or from the lowest sample, if below) to the highest, each
rounded out to a whole metre, with 2**bits >= 512 x the span (+-256 m would take Gaffer's 18). Both
schemes get the same codes. ``--bounds scene`` keeps the built-in world (x, z in +-64 m, y in
0..32 m), which clamps anything outside it. Recordings are y-up with quaternions (x, y, z, w);
``--up z`` maps a z-up one as bench/record_scene.py does ((x, y, z) -> (x, z, -y)) and
``--quat-order wxyz`` reads (w, x, y, z): Gaffer's challenge variant predicts gravity on y.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# gaffer.py sits beside this file; quantcodec is the installed package, or, from a source checkout
# with a built tree, this checkout (appended, never first: it must not shadow an installed build,
# also for processes spawned later by whoever imported this module)
if HERE not in sys.path:
    sys.path.append(HERE)
try:
    import quantcodec  # noqa: F401
except ImportError:
    sys.path.append(ROOT)

import numpy as np  # noqa: E402

import gaffer  # noqa: E402
from record_scene import qc_from_mj_vec as y_up  # noqa: E402  (z-up -> y-up, a proper rotation)
from quantcodec.tools.link import default_schema, run_stream  # noqa: E402


class Recording:
    """A scene as arrays: positions, orientations, velocities (or None), ids, at_rest, hz."""

    def __init__(self, positions, orientations, velocities, ids, at_rest, hz):
        self.positions = np.asarray(positions)
        self.orientations = np.asarray(orientations)
        self.velocities = None if velocities is None else np.asarray(velocities)
        T, N = self.positions.shape[:2]
        self.ids = np.broadcast_to(np.arange(N, dtype=np.uint64) if ids is None else np.asarray(ids), (T, N))
        if at_rest is None:
            still = np.zeros((T, N), dtype=bool)
            still[1:] = np.all(self.positions[1:] == self.positions[:-1], axis=2)
            at_rest = still
        self.at_rest = np.asarray(at_rest, dtype=bool)
        self.hz = int(hz)

    @property
    def n_bodies(self):
        return self.positions.shape[1]

    @property
    def n_ticks(self):
        return self.positions.shape[0]


def load(args):
    if args.scene:
        d = np.load(args.scene)
        pos = np.asarray(d["positions"])
        quat = np.asarray(d["orientations"])
        vel = np.asarray(d["velocities"]) if "velocities" in d else None
        if getattr(args, "quat_order", "xyzw") == "wxyz":
            quat = np.concatenate([quat[..., 1:], quat[..., :1]], axis=-1)
        if getattr(args, "up", "y") == "z":
            pos = y_up(pos)
            quat = np.concatenate([y_up(quat[..., :3]), quat[..., 3:]], axis=-1)
            vel = None if vel is None else y_up(vel)
        return Recording(pos, quat, vel, d["ids"] if "ids" in d else None,
                         d["at_rest"] if "at_rest" in d else None, int(d["hz"]) if "hz" in d else args.hz)
    from quantcodec.tools.scene import simulate

    sc = simulate(args.bodies, args.seconds, args.hz, args.seed)
    return Recording(sc.positions, sc.orientations, sc.velocities, sc.ids, sc.at_rest, sc.hz)


def fitted_bounds(positions, per_metre=512):
    """Per axis (lo, hi) and bits for a recording: x and z symmetric around 0, y from 0 (or the
    lowest sample) up, rounded out to whole metres; 2**bits codes for at least per_metre values a
    metre, as Gaffer counts them (512 a metre: +-256 m in 18 bits, a 1.95 mm step)."""
    p = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    p = p[np.all(np.isfinite(p), axis=1)]
    bounds, bits = [], []
    for axis in range(3):
        if axis == 1:
            lo = min(0.0, math.floor(p[:, 1].min())) if len(p) else 0.0
            hi = max(lo + 1.0, math.ceil(p[:, 1].max())) if len(p) else 1.0
        else:
            half = max(1.0, math.ceil(np.abs(p[:, axis]).max())) if len(p) else 1.0
            lo, hi = -half, half
        bounds.append((lo, hi))
        bits.append(max(1, math.ceil(math.log2((hi - lo) * per_metre))))
    return tuple(bounds), tuple(bits)


def schemas_for(bounds, bits):
    """The two payloads (Gaffer's, and the scene schema with velocity) with these position bounds."""
    position = [(lo, hi, b) for (lo, hi), b in zip(bounds, bits)]
    return (default_schema(velocity=False, rest=True, position=position),
            default_schema(velocity=True, position=position))


def gaffer_codes(rec, bounds=None, bits=None):
    """The recording quantized for gaffer.py at the schema's resolution (the scene's by default)."""
    sb, sbits, qbits = gaffer._scene_bounds_bits()
    bounds = sb if bounds is None else bounds
    bits = sbits if bits is None else bits
    T, N = rec.positions.shape[:2]
    pos = gaffer.quantize_positions(rec.positions.reshape(-1, 3), bounds, bits).reshape(T, N, 3)
    quat = gaffer.quantize_orientations(rec.orientations.reshape(-1, 4), qbits).reshape(T, N, 4)
    return [gaffer.GafferCodes(pos[k], quat[k], rec.at_rest[k].copy()) for k in range(T)]


def gaffer_bits(rec, codes, lag, variant, start, bits=None):
    _, sbits, qbits = gaffer._scene_bounds_bits()
    scheme = gaffer.GafferScheme(rec.n_bodies, sbits if bits is None else bits, qbits, variant)
    bits = []
    for k in range(max(lag, start), rec.n_ticks):
        prev = codes[k - 2 * lag] if k - 2 * lag >= 0 else None
        bits.append(scheme.packet_bits(codes[k - lag], codes[k], prev))
    return float(np.mean(bits)) / rec.n_bodies


def run(args, out=print):
    t0 = time.perf_counter()
    rec = load(args)
    hz, lag = rec.hz, int(round(args.ack_delay * rec.hz))
    settle = min(int(4 * hz), rec.n_ticks - 1)
    out(f"scene: {rec.n_bodies} bodies x {rec.n_ticks} ticks at {hz} Hz "
        f"({'recorded: ' + args.scene if args.scene else 'quantcodec.tools.scene, seed %d' % args.seed}); "
        f"acks {args.ack_delay * 1000:.0f} ms late ({lag} ticks), loss {args.loss:.0%}")
    bounds = bits = None
    if args.scene and getattr(args, "bounds", "auto") == "auto":
        bounds, bits = fitted_bounds(rec.positions)
        gaffer_schema, scene_schema = schemas_for(bounds, bits)
        out("position bounds fitted to the recording: " + ", ".join(
            f"{axis} {lo:g}..{hi:g} m ({b} bits)" for axis, (lo, hi), b in zip("xyz", bounds, bits)))
    else:
        gaffer_schema, scene_schema = default_schema(velocity=False, rest=True), default_schema(velocity=True)
    payloads = [
        ("Gaffer payload: position + rotation + rest bit", gaffer_schema, None),
        ("scene schema: position + rotation + NearlyZero velocity", scene_schema, rec.velocities),
    ]
    results = {}
    for title, schema, vel in payloads:
        extra = {"rest": rec.at_rest} if "rest" in schema.names else None
        rows = []
        for label, start in (("whole run", max(lag, 0)), ("settled (from 4 s)", max(lag, settle))):
            r = run_stream(rec.positions, rec.orientations, vel, ids=rec.ids, extra=extra, schema=schema,
                           hz=hz, ack_delay=args.ack_delay, loss=args.loss, duplicate=args.dup,
                           jitter=args.jitter, seed=args.seed, start=start)
            if r["mismatches"]:
                raise SystemExit(f"{r['mismatches']} decoded states differ from the server's: bug")
            rows.append((label, r))
        results[title] = rows
        r0 = rows[0][1]
        out("")
        out(f"{title}: {r0['record_bits']} bits a record at most, {r0['raw_bits']:.0f} as float32")
        out(f"  {'':22s} {'bits/entity/update':>19s} {'kbit/s':>9s}   changed")
        for label, r in rows:
            out(f"  {label}")
            out(f"    {'raw float32':20s} {r['raw_bits']:19.2f} {r['raw_kbps']:9.1f}")
            out(f"    {'full snapshots':20s} {r['full_bits']:19.2f} {r['full_kbps']:9.1f}")
            out(f"    {'delta snapshots':20s} {r['delta_bits']:19.2f} {r['delta_kbps']:9.1f}   {r['changed']:6.1%}")
        out(f"  worst decoded errors: position {r0['max_position_error'] * 1000:.3f} mm, rotation "
            f"{r0['max_rotation_error']:.3f} deg"
            + (f", velocity {r0['max_velocity_error']:.4f} m/s" if r0["max_velocity_error"] is not None else ""))
        out(f"  packets: {r0['decoded']} decoded, {r0['undecodable']} undecodable, {r0['lost']} lost, "
            f"{r0['full_packets']} sent in full; every decoded state equal to the server's")
    if lag < 1:
        return results
    codes = gaffer_codes(rec, bounds, bits)
    out("")
    out(f"yardstick: Gaffer On Games on the same quantized codes, baseline {lag} ticks old, "
        f"prediction from {2 * lag} (bench/gaffer.py)")
    ours = results[payloads[0][0]]
    out(f"  {'':22s} {'article':>9s} {'challenge':>10s} {'quantcodec':>11s}  vs article  vs challenge")
    for (label, r), start in zip(ours, (lag, max(lag, settle))):
        ga = gaffer_bits(rec, codes, lag, "article", start, bits)
        gc = gaffer_bits(rec, codes, lag, "challenge", start, bits)
        q = r["delta_bits"]
        out(f"  {label:22s} {ga:9.2f} {gc:10.2f} {q:11.2f}  {q / ga - 1:+10.1%}  {q / gc - 1:+11.1%}"
            f"   bits/entity/update")
        out(f"  {'':22s} {ga * rec.n_bodies * hz / 1000:9.1f} {gc * rec.n_bodies * hz / 1000:10.1f} "
            f"{r['delta_kbps']:11.1f}   kbit/s")
    out(f"(total {time.perf_counter() - t0:.1f} s)")
    return results


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bodies", type=int, default=300)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--hz", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ack-delay", type=float, default=0.1, help="round trip of an ack, seconds")
    ap.add_argument("--loss", type=float, default=0.0)
    ap.add_argument("--dup", type=float, default=0.0)
    ap.add_argument("--jitter", type=float, default=0.0, help="extra packet delay, up to this many seconds")
    ap.add_argument("--scene", help="an .npz recording instead of the built-in scene")
    ap.add_argument("--bounds", choices=("auto", "scene"), default="auto",
                    help="a recording's position bounds: fitted to it (default) or the built-in world's")
    ap.add_argument("--up", choices=("y", "z"), default="y", help="a recording's up axis")
    ap.add_argument("--quat-order", choices=("xyzw", "wxyz"), default="xyzw",
                    help="a recording's quaternion component order")
    run(ap.parse_args(argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
