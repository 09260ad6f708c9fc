"""What a session costs on the bench scene, against the encoder stream it is built on.

The bench scene (``quantcodec.tools.scene``) streamed at 60 Hz to one client over a link with
``--loss`` both ways and ``--delay`` ticks each way, twice from the same ticks and the same
seeded links:

- **encoder**: a ``SnapshotEncoder`` / ``SnapshotDecoder`` pair with the documented ack rule of
  docs/wire-format.md section 15 (the client acks ``latest`` after each view, a 3-byte ack the
  user made up; the server sends the hello when it connects and beside every packet without a
  baseline);
- **session**: a ``StreamServer`` / ``StreamClient`` pair (section 18's replies, the hello until
  a packet is acked), keyless and with a key.

Printed: bytes down (packets and hellos apart) and up (replies), the session's packets against
the encoder's, views decoded; then the cost of a check per datagram: CRC-32C against the
SipHash-2-4 tag on a 1,200-byte datagram and a 20-byte reply (medians of alternated repeats, in
one run).

    python bench/bench_session.py
    python bench/bench_session.py --bodies 1000 --seconds 10 --loss 0.05 --delay 3
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
try:
    import quantcodec as qc
except ImportError:
    sys.path.append(os.path.dirname(HERE))
    import quantcodec as qc

import numpy as np  # noqa: E402

from quantcodec.tools.link import default_schema  # noqa: E402
from quantcodec.tools.scene import iter_ticks  # noqa: E402


class Link:
    def __init__(self, seed, loss, delay):
        self.rng = random.Random(seed)
        self.loss, self.delay = loss, delay
        self.flight = []

    def send(self, t, items):
        for d in items:
            if self.rng.random() >= self.loss:
                self.flight.append((t + self.delay, d))

    def due(self, t):
        out = [d for at, d in self.flight if at <= t]
        self.flight = [(at, d) for at, d in self.flight if at > t]
        return out


def snapshots(args):
    schema = default_schema(velocity=True)
    out = []
    for tick in iter_ticks(n_bodies=args.bodies, seconds=args.seconds, hz=60, seed=args.seed):
        cols = {"position": tick.positions, "rotation": tick.orientations, "velocity": tick.velocities}
        out.append(schema.snapshot(np.arange(len(tick.positions), dtype=np.uint64), cols))
    return schema, out


def run_encoder(schema, snaps, args):
    enc = qc.SnapshotEncoder(schema)
    dec = qc.SnapshotDecoder(schema)
    down, up = Link(1, args.loss, args.delay), Link(2, args.loss, args.delay)
    res = dict(packets=0, hellos=0, up=0, views=0)
    hello = enc.hello()
    first = [hello]
    for t, snap in enumerate(snaps):
        for a in up.due(t):
            enc.ack(int.from_bytes(a[1:], "little"))
        dgs = enc.encode_datagrams(t, snap)
        if enc.last_baseline is None:
            dgs.insert(0, hello)
        dgs = first + dgs
        first = []
        for d in dgs:
            res["hellos" if d is hello else "packets"] += len(d)
        down.send(t, dgs)
        for d in down.due(t):
            try:
                v = dec.decode(d)
            except qc.DecodeError:
                continue
            if v is not None:
                res["views"] += 1
                ack = b"A" + dec.latest.to_bytes(2, "little")
                res["up"] += len(ack)
                up.send(t, [ack])
    return res


def run_session(schema, snaps, args, key=None):
    server = qc.StreamServer(schema, key=key)
    server.connect("c")
    client = qc.StreamClient(schema, key=key)
    hello = server.encoder("c").hello()
    down, up = Link(1, args.loss, args.delay), Link(2, args.loss, args.delay)
    res = dict(packets=0, hellos=0, up=0, views=0)
    for t, snap in enumerate(snaps):
        for r in up.due(t):
            try:
                server.receive("c", r)
            except qc.DecodeError:
                pass
        dgs = server.send(t, snap)["c"]
        for d in dgs:
            res["hellos" if d == hello else "packets"] += len(d)
        down.send(t, dgs)
        for d in down.due(t):
            try:
                v = client.receive(d)
            except qc.DecodeError:
                v = None
            res["views"] += v is not None
            r = client.reply()
            if r is not None:
                res["up"] += len(r)
                up.send(t, [r])
    return res


def check_costs(repeats):
    from quantcodec._bitstream import crc32c, siphash24
    rng = np.random.default_rng(0)
    key = rng.bytes(16)
    rows = []
    for size in (1200, 20):
        data = rng.bytes(size)
        n = 20000 if size < 100 else 5000
        crc, mac = [], []
        for _ in range(repeats):
            for which, fn, out in (("crc", lambda: crc32c(data, 12345), crc),
                                   ("mac", lambda: siphash24(key, data), mac)):
                t0 = time.perf_counter()
                for _ in range(n):
                    fn()
                out.append((time.perf_counter() - t0) / n * 1e9)
        rows.append((size, statistics.median(crc), statistics.median(mac)))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bodies", type=int, default=300)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--loss", type=float, default=0.05)
    p.add_argument("--delay", type=int, default=3, help="ticks each way (3 at 60 Hz: 100 ms round trip)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeats", type=int, default=7)
    args = p.parse_args(argv)
    schema, snaps = snapshots(args)
    print(f"bench scene: {args.bodies} bodies, {len(snaps)} ticks at 60 Hz, {args.loss:.0%} loss both "
          f"ways, {args.delay} ticks each way")
    base = run_encoder(schema, snaps, args)
    rows = [("encoder + the section 15 rule", base), ("session", run_session(schema, snaps, args)),
            ("session, keyed", run_session(schema, snaps, args, key=b"k" * 16))]
    print(f"{'stream':32} {'packets B':>10} {'hellos B':>9} {'replies B':>10} {'views':>6} {'packets vs encoder':>19}")
    for name, r in rows:
        print(f"{name:32} {r['packets']:10d} {r['hellos']:9d} {r['up']:10d} {r['views']:6d} "
              f"{r['packets'] / base['packets'] - 1:+18.2%}")
    print("\ncheck per datagram (ns, medians of alternated repeats):")
    print(f"{'bytes':>6} {'CRC-32C':>9} {'SipHash-2-4':>12} {'ratio':>6}")
    for size, crc, mac in check_costs(args.repeats):
        print(f"{size:6d} {crc:9.0f} {mac:12.0f} {mac / crc:6.1f}")


if __name__ == "__main__":
    main()
