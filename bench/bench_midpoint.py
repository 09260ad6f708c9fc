"""What Quat(mode="midpoint") costs on the bench scene's delta stream, against endpoints.

The scene and the stream are bench/bench_bandwidth.py's (``quantcodec.tools.scene``, 60 Hz, acks
100 ms late): the Gaffer payload (position, 9-bit smallest three, rest bit) streamed once with
``Quat(bits)`` and once with ``Quat(bits, mode="midpoint")``, the rest of the schema the same.
Printed: bits per entity per update of the delta packets (whole run and settled, from 4 s), the
worst decoded rotation error on the scene, the searched ``max_error`` of each codec, and how far
the identity rotation decodes from itself.

    python bench/bench_midpoint.py                    # 300 bodies, 10 s, 9 bits
    python bench/bench_midpoint.py --bits 10 --bodies 900
"""

from __future__ import annotations

import argparse
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if HERE not in sys.path:
    sys.path.append(HERE)
try:
    import quantcodec  # noqa: F401
except ImportError:
    sys.path.append(ROOT)

import numpy as np  # noqa: E402

import quantcodec as qc  # noqa: E402
from quantcodec.tools.link import default_schema, run_stream  # noqa: E402


def identity_tilt(codec):
    """Degrees between the identity rotation and what it decodes to."""
    w = abs(codec.roundtrip((0.0, 0.0, 0.0, 1.0))[3])
    return math.degrees(2.0 * math.acos(min(1.0, w)))


def run(args, out=print):
    from quantcodec.tools.scene import simulate

    sc = simulate(args.bodies, args.seconds, args.hz, args.seed)
    lag = int(round(args.ack_delay * sc.hz))
    settle = min(int(4 * sc.hz), sc.positions.shape[0] - 1)
    base = default_schema(velocity=False, rest=True, rotation_bits=args.bits)
    results = {}
    for mode in ("endpoints", "midpoint"):
        fields = [(n, qc.Quat(args.bits, mode=mode) if n == "rotation" else c) for n, c in base.fields]
        schema = qc.Schema("Scene", fields)
        row = {}
        for label, start in (("whole", max(lag, 0)), ("settled", max(lag, settle))):
            r = run_stream(sc.positions, sc.orientations, None, ids=sc.ids, extra={"rest": sc.at_rest},
                           schema=schema, hz=sc.hz, ack_delay=args.ack_delay, seed=args.seed, start=start)
            if r["mismatches"]:
                raise SystemExit(f"{r['mismatches']} decoded states differ from the server's: bug")
            row[label] = r
        codec = dict(schema.fields)["rotation"]
        row["max_error"] = codec.max_error
        row["identity"] = identity_tilt(codec)
        results[mode] = row
    out(f"scene: {args.bodies} bodies x {sc.positions.shape[0]} ticks at {sc.hz} Hz, seed {args.seed}; "
        f"acks {args.ack_delay * 1000:.0f} ms late; Gaffer payload, Quat({args.bits})")
    out(f"  {'mode':10s} {'whole run':>10s} {'settled':>9s}  {'scene worst':>11s}  {'max_error':>10s}  "
        f"{'identity':>9s}   (bits/entity/update; degrees)")
    for mode, row in results.items():
        out(f"  {mode:10s} {row['whole']['delta_bits']:10.3f} {row['settled']['delta_bits']:9.3f}  "
            f"{row['whole']['max_rotation_error']:11.4f}  {row['max_error']:10.4f}  {row['identity']:9.4f}")
    e, m = results["endpoints"], results["midpoint"]
    for label in ("whole", "settled"):
        d = m[label]["delta_bits"] - e[label]["delta_bits"]
        out(f"  midpoint - endpoints, {label}: {d:+.3f} bits/entity/update ({d / e[label]['delta_bits']:+.2%})")
    return results


def main(argv=None, out=print):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bits", type=int, default=9)
    ap.add_argument("--bodies", type=int, default=300)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--hz", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ack-delay", type=float, default=0.1)
    return run(ap.parse_args(argv), out)


if __name__ == "__main__":
    main()
