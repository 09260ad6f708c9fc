"""A differential check of clients/js against the Python reference on streams the kit does not
hold: random worlds of the kit's schemas (quantcodec.conformance's private generators) over
links of random loss, duplication, reordering and delay, histories, budgets and predict, each
decoded by ``quantcodec.conformance.runner_lines`` and by ``clients/js/qc-decode``, compared line
by line.

    python clients/js/support/differential.py [--seeds 20] [--first 0] [--session] [--keyed]

With ``--session`` (a package with the session layer, docs/wire-format.md sections 18-19) every
stream is also decoded by a StreamClient (``--replies NONCE``: the reply after each datagram;
for every third seed ``--idle N``, the keep-alives of calls with nothing arriving) and, for every other seed, under a ``--max-bytes`` bound that refuses some of it. With
``--keyed``, the kit's plain streams framed again with random shared keys (support/rekey.mjs:
SipHash tags, fragments of ``max_datagram - 16`` bytes) are decoded by both with ``--key`` and
``--replies``.

Not part of run-tests (it needs the Python package); run it after changing the decoder. It
imports the installed package, or else the source tree's (built in place).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
try:
    from quantcodec import conformance as cf
except ImportError:
    sys.path.insert(0, ROOT)
    from quantcodec import conformance as cf  # noqa: E402


def one(seed, tmp, session=False):
    rng = np.random.default_rng(seed)
    schemas = cf.kit_schemas()
    sname = ["pose", "all_kinds", "one_bit"][seed % 3]
    schema = schemas[sname]
    history = int(rng.choice([1, 2, 3, 8, 64]))
    kw = dict(history=history, predict=bool(rng.random() < 0.7),
              max_datagram=int(rng.choice([64, 100, 200, 1200])), stream_id=1000 + seed,
              loss=float(rng.choice([0.0, 0.05, 0.2, 0.4])), dup=float(rng.choice([0.0, 0.1, 0.3])),
              delay=(0, int(rng.integers(0, 6))), ack_delay=int(rng.integers(0, 8)),
              ack_loss=float(rng.choice([0.0, 0.3])))
    s = cf._Stream(schema, rng, **kw)
    w = cf._World(schema, rng, n=int(rng.integers(1, 50)), id_step=int(rng.integers(1, 5)))
    seq = int(rng.integers(0, 65536))
    step = int(rng.choice([1, 1, 2, 3]))
    for t in range(int(rng.integers(20, 80))):
        w.tick(churn=float(rng.choice([0.0, 0.05, 0.2])), move=float(rng.choice([0.0, 0.3, 1.0])))
        s.step(seq, w.snapshot())
        seq = (seq + step) & 0xFFFF
    s.deliver(True)
    sp = os.path.join(tmp, f"{sname}.json")
    with open(sp, "w") as f:
        f.write(schema.to_json())
    dp = os.path.join(tmp, f"s{seed}.bin")
    cf.write_datagrams(dp, s.out)
    options, args = {}, []
    if session:
        nonce = int(rng.integers(0, 2**32))
        options["replies"], args = nonce, ["--replies", str(nonce)]
        if seed % 2:
            # a bound between what the hello needs and what the whole stream would hold
            hello = (2 * history - 1) * 256 + 256 * kw["max_datagram"]
            rows = 8 + 8 * len(cf.signed_slots(schema))
            options["max_bytes"] = hello + int(rng.integers(0, 2 * history)) * (256 + 10 * rows)
            args += ["--max-bytes", str(options["max_bytes"])]
        if seed % 3 == 0:
            # the keep-alives: more calls of reply() after each datagram's reply
            options["idle"] = int(rng.integers(1, 70))
            args += ["--idle", str(options["idle"])]
    want = cf.runner_lines(schema, s.out, **options)
    got = subprocess.run([os.path.join(ROOT, "clients", "js", "qc-decode"), *args, sp, dp], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    kw.update(options)
    bad = [i for i in range(max(len(got), len(want))) if i >= len(got) or i >= len(want) or got[i] != want[i]]
    return sname, kw, len(want), bad, got, want


def keyed(tmp, seeds):
    """The kit's streams framed with a key by the JavaScript side, decoded by both."""
    from quantcodec import Schema
    failures = 0
    kit = os.path.join(ROOT, "conformance")
    for seed in range(seeds):
        key = np.random.default_rng(1000 + seed).integers(0, 256, (1, 16, 255)[seed % 3], dtype=np.uint8).tobytes().hex()
        out = os.path.join(tmp, f"keyed{seed}")
        names = subprocess.run(["node", os.path.join(ROOT, "clients", "js", "support", "rekey.mjs"), kit, out, key],
                               capture_output=True, text=True, check=True).stdout.split("\n")
        for name, schema_file in (line.split() for line in names if line):
            schema = Schema.load(os.path.join(kit, schema_file))
            dp = os.path.join(out, f"{name}.bin")
            nonce = seed * 7919
            want = cf.runner_lines(schema, cf.read_datagrams(dp), key=bytes.fromhex(key), replies=nonce)
            got = subprocess.run([os.path.join(ROOT, "clients", "js", "qc-decode"), "--key", key, "--replies", str(nonce),
                                  os.path.join(kit, schema_file), dp], capture_output=True, text=True,
                                 check=True).stdout.splitlines()
            views = sum(line.startswith('{"seq"') for line in want)
            if got != want:
                failures += 1
                i = next(i for i in range(max(len(got), len(want))) if i >= len(got) or i >= len(want) or got[i] != want[i])
                print(f"keyed {name} (key {key}): line {i} differs:\n  js     {got[i][:300] if i < len(got) else None}\n"
                      f"  python {want[i][:300] if i < len(want) else None}")
            else:
                print(f"keyed {name} (a key of {len(key) // 2} bytes): {len(want)} datagrams, {views} views, same")
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--session", action="store_true", help="replies, keep-alives and limits too (--replies, --idle, --max-bytes)")
    ap.add_argument("--keyed", action="store_true", help="the kit's streams framed with random keys (--key)")
    args = ap.parse_args()
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.first, args.first + args.seeds):
            sname, kw, n, bad, got, want = one(seed, tmp, args.session)
            if bad:
                failures += 1
                i = bad[0]
                print(f"seed {seed} ({sname}, {kw}): {len(bad)} of {n} lines differ; first {i}:\n"
                      f"  js     {got[i][:300] if i < len(got) else None}\n  python {want[i][:300] if i < len(want) else None}")
            else:
                limits = sum('"error":"limits"' in line for line in want)
                replies = sum('"reply":"' in line for line in want)
                print(f"seed {seed} ({sname}): {n} datagrams, same"
                      + (f" ({replies} replies, {limits} refused for limits)" if args.session else ""))
        print(f"{args.seeds - failures} of {args.seeds} streams the same")
        if args.keyed:
            kf = keyed(tmp, 3)
            print(f"keyed: {kf} streams differ")
            failures += kf
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
