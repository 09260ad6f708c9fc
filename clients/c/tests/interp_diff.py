"""Snapshot interpolation, C against Python's quantcodec.interpolation.Interpolator on random
operations over the all_kinds schema (every codec kind: linear, angles signed and not, degrees
and radians, Quat, UnitVector, NearlyZero, exact kinds held). Rows are the kit's valid all_kinds
records, so every code is valid; views of random entity subsets are pushed in random order with
duplicates and gaps, and sampled at random render times (before, between, on and past the views);
now and then a reset (Interpolator.reset(), qc_interp_reset: a new stream, its seqs from another
start).
Writes files in the kit's interpolation format and runs the C test program on each (`test ROOT
--interp FILE`): every value bit for bit (PowerCurve within 1e-12).

    python clients/c/tests/interp_diff.py [--runs 20] [--seed 1]     (the installed quantcodec)
"""
import argparse
import json
import os
import struct
import subprocess
import sys

import numpy as np

import quantcodec as qc
from quantcodec.conformance import signed_slots
from quantcodec.interpolation import Interpolator
from quantcodec.snapshot import Snapshot

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


def hexf(x):
    return struct.pack(">d", float(x)).hex()


def one_run(rng, schema, rows, path):
    signed = signed_slots(schema)
    cap = int(rng.integers(2, 9))
    maxx = float(rng.choice([0.0, 0.5, 2.0, 3.25]))
    it = Interpolator(schema, capacity=cap, max_extrapolation=maxx)
    ops = []
    start = int(rng.integers(0, 65536))
    ticks = sorted(set(int(t) for t in np.cumsum(rng.integers(1, 4, 24))))
    order = list(ticks)
    rng.shuffle(order[:])
    # mostly in order, some swapped, some duplicated
    for i in range(len(order) - 1):
        if rng.random() < 0.25:
            order[i], order[i + 1] = order[i + 1], order[i]
    order += [order[int(rng.integers(0, len(order)))] for _ in range(3)]
    for tk in order:
        if ops and rng.random() < 0.06:
            # a new stream (a restarted server): reset, and the seqs from another start
            it.reset()
            ops.append({"reset": True})
            start = int(rng.integers(0, 65536))
        n = int(rng.integers(0, 7))
        ids = np.sort(rng.choice(12, size=n, replace=False)).astype(np.uint64)
        m = np.array([rows[int(rng.integers(0, len(rows)))] for _ in range(n)], dtype=np.uint64).reshape(n, len(signed))
        seq = (start + tk) & 0xFFFF
        view = Snapshot._make(schema, ids, m, seq=seq)
        kept = it.push(view)
        codes = [[int(v) - (1 << 64) if sg and int(v) >= 1 << 63 else int(v) for v, sg in zip(row, signed)] for row in m.tolist()]
        ops.append({"push": {"seq": seq, "ids": ids.tolist(), "codes": codes}, "kept": kept})
        for _ in range(int(rng.integers(0, 4))):
            lo = it.views[0][0] - 1.5
            hi = it.newest + maxx + 1.0
            t = float(rng.uniform(lo, hi)) if rng.random() < 0.7 else float(rng.choice([v[0] for v in it.views]))
            got = it.sample(t)
            vals = {}
            for name, _ in schema.fields:
                col = got.columns[name]
                vals[name] = [[hexf(x) for x in np.ravel(r)] for r in col.reshape(len(col), -1)] if len(col) else []
            ops.append({"sample": hexf(t), "a": got.a, "b": got.b, "alpha": hexf(got.alpha),
                        "ids": got.ids.tolist(), "values": vals, "stats": dict(it.stats)})
    with open(path, "w") as f:
        json.dump({"schema": "schemas/all_kinds.json", "capacity": cap, "max_extrapolation": hexf(maxx), "ops": ops}, f)
    return sum(1 for o in ops if "sample" in o)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    build = os.path.join(HERE, "..", "build", "tests")
    os.makedirs(build, exist_ok=True)
    exe = os.path.join(build, "test_interp_diff")
    subprocess.check_call(["gcc", "-std=c99", "-O2", "-ffp-contract=off", "-o", exe, os.path.join(HERE, "test.c"), "-lm"])
    schema = qc.Schema.from_json(open(os.path.join(ROOT, "conformance", "schemas", "all_kinds.json")).read())
    recs = json.load(open(os.path.join(ROOT, "conformance", "records", "all_kinds.json")))["valid"]
    rows = [[int(c) & 0xFFFFFFFFFFFFFFFF for c in r["codes"]] for r in recs]
    rng = np.random.default_rng(args.seed)
    bad, samples = 0, 0
    for k in range(args.runs):
        path = os.path.join(build, f"interp_diff_{k}.json")
        samples += one_run(rng, schema, rows, path)
        r = subprocess.run([exe, ROOT, "--interp", path], capture_output=True, text=True)
        if r.returncode != 0:
            bad += 1
            print(f"run {k}: differs ({path})\n" + "\n".join(r.stdout.splitlines()[:8]))
    print(f"{args.runs} runs, {samples} samples, {bad} runs differ")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
