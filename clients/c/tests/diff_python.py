"""Differential test of the C client against the Python package (not part of run-tests: it needs
the built quantcodec package). Random streams from the kit's simulated link (quantcodec.conformance:
seeded worlds, loss, duplicates, reordering, varied history / predict / datagram budget), with
damaged packets sealed with the stream's check mixed in (bit flips, truncations, extensions,
random bodies; and resealed fragments), decoded by `quantcodec.conformance.runner_lines` and by
clients/c/qc-decode; every line must be equal. Each stream runs as the plain decoder and, with
the runner's options (wire-format 17-19), as the session client with its replies
(`--replies NONCE`, and `--idle N`: keep-alives) and under a random `--max-bytes` (limits refusals); and `--sessions N` keyed
sessions (quantcodec.conformance's StreamServer / StreamClient loop, a random key of 1 to 64
bytes, keyless and wrongly keyed junk, a server restart) run with `--key` (and `--replies`,
`--max-bytes`) against `runner_lines` with the same options.

    . /work/venv/bin/activate; python clients/c/tests/diff_python.py [--streams 40] [--sessions 20] [--seed 1]
"""
import argparse
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
try:                        # the installed package, else an in-place build of this checkout
    import quantcodec  # noqa: F401
except ImportError:
    sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

from quantcodec import conformance as kit  # noqa: E402
from quantcodec._bitstream import crc32c  # noqa: E402
from quantcodec import _framing  # noqa: E402


def one(schemas, name, rng, ticks):
    schema = schemas[name]
    history = int(rng.choice([1, 2, 3, 8, 64, 300]))
    predict = bool(rng.integers(0, 2))
    md = int(rng.choice([64, 100, 200, 1200, 65507]))
    s = kit._Stream(schema, rng, history=history, predict=predict, max_datagram=md, stream_id=int(rng.integers(1, 2**63)),
                    loss=float(rng.choice([0, 0.05, 0.2])), dup=float(rng.choice([0, 0.1])),
                    delay=(0, int(rng.integers(0, 5))), ack_delay=int(rng.integers(1, 8)))
    w = kit._World(schema, rng, n=int(rng.choice([1, 5, 40, 120])))
    seq = int(rng.integers(0, 65536))
    step = int(rng.choice([1, 1, 3, 200]))
    damaged = 0
    for t in range(ticks):
        w.tick(churn=float(rng.choice([0, 0.02, 0.2])), move=float(rng.choice([0, 0.3, 1.0])))
        snap = w.snapshot()
        s.step(seq, snap)
        if rng.random() < 0.5:
            # a damaged copy of a datagram of this tick, sealed again so that it passes the check
            d = s.enc.encode(seq, snap)
            body = bytearray(d[:-4])
            how = int(rng.integers(0, 5))
            if how == 0 and body:
                for _ in range(int(rng.integers(1, 4))):
                    j = int(rng.integers(0, len(body) * 8))
                    body[j // 8] ^= 1 << (j % 8)
            elif how == 1 and len(body) > 1:
                body = body[: int(rng.integers(1, len(body)))]
            elif how == 2:
                body += bytes(rng.integers(0, 256, int(rng.integers(1, 4)), dtype=np.uint8))
            elif how == 3:
                body = body[:3] + bytes(rng.integers(0, 256, int(rng.integers(0, 30)), dtype=np.uint8))
            else:
                # a fragment of it, damaged and resealed with the fragment check
                try:
                    frags = _framing.fragment(bytes(d), 64, s.enc._seed_f)
                except Exception:
                    frags = []
                if len(frags) > 1:
                    f = bytearray(frags[int(rng.integers(0, len(frags)))][:-4])
                    j = int(rng.integers(8 * 8, len(f) * 8))
                    f[j // 8] ^= 1 << (j % 8)
                    s.inject(bytes(f) + struct.pack("<I", crc32c(bytes(f), s.enc._seed_f)))
                    damaged += 1
                seq = (seq + step) & 0xFFFF
                continue
            s.inject(bytes(body) + struct.pack("<I", crc32c(bytes(body), s.enc._seed_p)))
            damaged += 1
        seq = (seq + step) & 0xFFFF
    s.deliver(True)
    return schema, s.out, dict(history=history, predict=predict, max_datagram=md, damaged=damaged)


def compare(runner, tmp, schema, dgs, opts, label):
    """qc-decode with the options against runner_lines: (lines, the first difference or None)."""
    args = []
    if opts.get("key") is not None:
        args += ["--key", opts["key"].hex()]
    if opts.get("max_bytes") is not None:
        args += ["--max-bytes", str(opts["max_bytes"])]
    if opts.get("replies") is not None:
        args += ["--replies", str(opts["replies"])]
    if opts.get("idle") is not None:
        args += ["--idle", str(opts["idle"])]
    want = kit.runner_lines(schema, dgs, key=opts.get("key"), max_bytes=opts.get("max_bytes"),
                            replies=opts.get("replies"), idle=opts.get("idle") or 0)
    sp, dp = os.path.join(tmp, "s.json"), os.path.join(tmp, "d.bin")
    with open(sp, "w") as f:
        f.write(schema.to_json())
    kit.write_datagrams(dp, dgs)
    got = subprocess.run([runner] + args + [sp, dp], capture_output=True, text=True, check=True).stdout.splitlines()
    diff = [j for j, (a, b) in enumerate(zip(got, want)) if a != b]
    if diff or len(got) != len(want):
        j = diff[0] if diff else min(len(got), len(want))
        return want, (f"{label} {' '.join(args)}: {len(diff)} lines differ, first at {j}:\n  C:      "
                      f"{got[j][-200:] if j < len(got) else None}\n  Python: {want[j][-200:] if j < len(want) else None}")
    return want, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--streams", type=int, default=40)
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--ticks", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    schemas = kit.kit_schemas()
    runner = os.path.join(os.path.dirname(HERE), "qc-decode")
    bad = total = runs = 0
    outcomes = {}

    def count(lines):
        for line in lines:
            key = line[:12] if line.startswith('{"error"') else ("snapshot" if line.startswith('{"seq"') else "pending")
            if '"reply":"' in line:
                key += "+reply"
            outcomes[key] = outcomes.get(key, 0) + 1

    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.streams):
            name = ["pose", "all_kinds", "one_bit"][i % 3]
            while True:
                try:
                    schema, dgs, params = one(schemas, name, rng, args.ticks)
                    break
                except kit.CodecError if hasattr(kit, "CodecError") else Exception:
                    continue        # (a packet too large for 256 fragments of the budget drawn)
            hist, md = params["history"], params["max_datagram"]
            # a bound between the hello's need and a few snapshots more: some packets refused
            need = (2 * hist - 1) * 256 + 256 * md
            variants = [{}, {"replies": int(rng.integers(0, 2**32))},
                        {"replies": int(rng.integers(0, 2**32)), "max_bytes": need + int(rng.integers(0, 40000))},
                        {"max_bytes": max(1, need - int(rng.integers(0, 2)))},
                        # the keep-alives (--idle): more calls of the reply function after each reply
                        {"replies": int(rng.integers(0, 2**32)), "idle": int(rng.integers(1, 70))}]
            for opts in variants:
                want, err = compare(runner, tmp, schema, dgs, opts, f"stream {i} ({name}, {params})")
                runs += 1
                total += len(want)
                count(want)
                if err:
                    bad += 1
                    print(err)
        for i in range(args.sessions):
            name = ["pose", "all_kinds", "one_bit"][i % 3]
            schema = schemas[name]
            key = bytes(rng.integers(0, 256, int(rng.integers(1, 65)), dtype=np.uint8))
            dgs = kit._session_stream(schema, rng, key=key, ticks=int(rng.integers(30, 90)))
            for opts in ({"key": key}, {"key": key, "replies": int(rng.integers(0, 2**32))},
                         {"key": key, "replies": int(rng.integers(0, 2**32)), "max_bytes": 31 * 256 + 256 * 300 + int(rng.integers(0, 30000))}):
                want, err = compare(runner, tmp, schema, dgs, opts, f"session {i} ({name}, key of {len(key)} bytes)")
                runs += 1
                total += len(want)
                count(want)
                if err:
                    bad += 1
                    print(err)
    print(f"{runs} runs ({args.streams} streams x 5, {args.sessions} keyed sessions x 3), {total} datagrams, "
          f"{bad} runs differ; outcomes {dict(sorted(outcomes.items()))}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
