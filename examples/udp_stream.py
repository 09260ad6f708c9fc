"""Stream a moving rigid-body scene over UDP with snapshot delta compression and acks.

A server and a client, both asyncio datagram endpoints on the loopback address 127.0.0.1 (and
never any other address), run in one process:

- every tick the server quantizes the scene once (``schema.snapshot``), encodes a packet for the
  client against the newest snapshot the client acknowledged (``SnapshotEncoder``), and sends it;
- the client decodes each packet (``SnapshotDecoder``), checks its state against the server's
  quantized state for that sequence number, and acknowledges it;
- a switch in between drops, duplicates and reorders datagrams both ways (``--loss``, ``--dup``,
  ``--reorder``), so acks arrive late or never and packets arrive out of order.

Run it::

    python examples/udp_stream.py --ticks 300 --bodies 200 --loss 0.2 --dup 0.05 --reorder 0.2

It prints what went through the link and whether the client's state always matched; the exit
status is 0 when it did and something was decoded, 1 otherwise, 2 for arguments out of range
(the shares are from 0 to 1). The number of ticks is bounded (``--ticks``); nothing listens after
it returns.
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import random
import struct
import sys
import time

import numpy as np

try:
    import quantcodec as qc
except ImportError:         # run from a source checkout that is built in place but not installed
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
    import quantcodec as qc
from quantcodec._scene import scene_schema_fields, simulate

HOST = "127.0.0.1"          # loopback only, by design

HELLO = b"H"                # client -> server: here I am
ACK = b"A"                  # client -> server: b"A" + uint16 little-endian sequence number


def build_codec(spec):
    kind, kw = spec
    kw = dict(kw)
    if "codecs" in kw:
        return getattr(qc, kind)(*[build_codec(c) for c in kw["codecs"]])
    if "inner" in kw:
        kw["inner"] = build_codec(kw["inner"])
    return getattr(qc, kind)(**kw)


def scene_schema():
    """The scene's default schema: position (46 bits), smallest-three rotation (29 bits) and a
    NearlyZero velocity."""
    return qc.Schema("Scene", [(name, build_codec(spec)) for name, spec in scene_schema_fields()])


class LossySwitch:
    """Forwards datagrams, dropping, duplicating and delaying (so reordering) some of them."""

    def __init__(self, loop, rng, loss=0.0, dup=0.0, reorder=0.0, max_delay=0.05):
        self.loop, self.rng = loop, rng
        self.loss, self.dup, self.reorder, self.max_delay = loss, dup, reorder, max_delay
        self.sent = self.dropped = self.duplicated = self.delayed = 0

    def send(self, transport, data, addr):
        self.sent += 1
        if self.rng.random() < self.loss:
            self.dropped += 1
            return
        copies = 1
        if self.rng.random() < self.dup:
            copies = 2
            self.duplicated += 1
        for _ in range(copies):
            if self.rng.random() < self.reorder:
                self.delayed += 1
                self.loop.call_later(self.rng.uniform(0.0, self.max_delay), self._deliver,
                                     transport, data, addr)
            else:
                self._deliver(transport, data, addr)

    @staticmethod
    def _deliver(transport, data, addr):
        if not transport.is_closing():
            transport.sendto(data, addr)


class Server(asyncio.DatagramProtocol):
    """One SnapshotEncoder per client address; acks feed the encoders."""

    def __init__(self, schema, switch):
        self.schema = schema
        self.switch = switch
        self.encoders = {}
        self.transport = None
        self.acks = 0

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        if data == HELLO:
            self.encoders.setdefault(addr, qc.SnapshotEncoder(self.schema))
        elif len(data) == 3 and data[:1] == ACK and addr in self.encoders:
            self.acks += 1
            self.encoders[addr].ack(struct.unpack_from("<H", data, 1)[0])

    def broadcast(self, seq, snapshot):
        """Send snapshot `seq` to every client; returns the bytes sent."""
        total = 0
        for addr, enc in self.encoders.items():
            packet = enc.encode(seq, snapshot)
            total += len(packet)
            self.switch.send(self.transport, packet, addr)
        return total


class Client(asyncio.DatagramProtocol):
    """Decodes packets, checks each decoded state against the server's, acknowledges."""

    def __init__(self, schema, switch, truth):
        self.schema = schema
        self.switch = switch
        self.truth = truth                  # seq -> the server's snapshot (same process)
        self.decoder = qc.SnapshotDecoder(schema)
        self.transport = None
        self.server_addr = None
        self.received = self.decoded = self.stale = self.mismatches = 0
        self.worst = 0.0
        self.first = asyncio.get_running_loop().create_future()

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        self.received += 1
        try:
            view = self.decoder.decode(data)
        except qc.DecodeError:
            self.stale += 1                 # its baseline is gone: a late packet
            return
        self.decoded += 1
        want = self.truth.get(view.seq)
        if want is None or view != want:
            self.mismatches += 1
        else:
            # the decoded values are exactly what the server's quantized state decodes to
            got, exp = view.columns, want.columns
            for name in exp:
                if not np.array_equal(got[name], exp[name]):
                    self.mismatches += 1
                    break
        if not self.first.done():
            self.first.set_result(view.seq)
        self.switch.send(self.transport, ACK + struct.pack("<H", view.seq), self.server_addr)


async def run(ticks=120, hz=60, bodies=100, loss=0.2, dup=0.05, reorder=0.2, seed=0,
              max_delay=None, quiet=True):
    """Run the server and the client for `ticks` ticks; returns a dict of counts.

    ``mismatches`` counts decoded states that differ from the server's quantized state (it
    must be 0); ``behind`` the ticks at which the client's newest state was not the server's
    latest tick (packets lost or still in flight)."""
    if ticks < 1:
        raise ValueError("ticks must be at least 1")
    loop = asyncio.get_running_loop()
    rng = random.Random(seed)
    schema = scene_schema()
    scene = simulate(bodies, ticks / hz, hz, seed, churn=True, churn_every=max(1, hz // 2))
    max_delay = 3.0 / hz if max_delay is None else max_delay
    down = LossySwitch(loop, rng, loss, dup, reorder, max_delay)
    up = LossySwitch(loop, rng, loss, dup, reorder, max_delay)
    truth = {}
    server_t, server = await loop.create_datagram_endpoint(
        lambda: Server(schema, down), local_addr=(HOST, 0))
    client_t, client = await loop.create_datagram_endpoint(
        lambda: Client(schema, up, truth), local_addr=(HOST, 0))
    bytes_sent = 0
    behind = 0
    try:
        client.server_addr = server_t.get_extra_info("sockname")
        client_t.sendto(HELLO, client.server_addr)
        while not server.encoders:
            await asyncio.sleep(0.001)
        start = time.perf_counter()
        for k in range(scene.n_ticks):
            seq = k & 0xFFFF
            snap = schema.snapshot(scene.ids[k], scene.columns(k))
            truth[seq] = snap
            bytes_sent += server.broadcast(seq, snap)
            # wait for the next tick; the client works meanwhile
            delay = start + (k + 1) / hz - time.perf_counter()
            await asyncio.sleep(max(delay, 0.0))
            if client.decoder.latest != seq:
                behind += 1
            if not quiet and k % hz == 0:
                print(f"tick {k:5d}: client at {client.decoder.latest}, {client.decoded} decoded, "
                      f"{client.mismatches} mismatches", file=sys.stderr)
        await asyncio.sleep(max_delay + 0.02)     # stragglers
    finally:
        client_t.close()
        server_t.close()
    return {
        "ticks": scene.n_ticks, "bodies": scene.n_bodies, "bytes": bytes_sent,
        "received": client.received, "decoded": client.decoded, "stale": client.stale,
        "mismatches": client.mismatches, "behind": behind, "acks": server.acks,
        "latest": client.decoder.latest, "last_seq": (scene.n_ticks - 1) & 0xFFFF,
        "dropped": down.dropped, "duplicated": down.duplicated, "delayed": down.delayed,
        "kbit_per_s": bytes_sent * 8 * hz / scene.n_ticks / 1000.0,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ticks", type=int, default=300, help="ticks to stream (bounded run)")
    ap.add_argument("--hz", type=int, default=60)
    ap.add_argument("--bodies", type=int, default=200)
    ap.add_argument("--loss", type=float, default=0.2, help="share of datagrams dropped, each way")
    ap.add_argument("--dup", type=float, default=0.05, help="share of datagrams sent twice")
    ap.add_argument("--reorder", type=float, default=0.2, help="share of datagrams delayed")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    for name in ("ticks", "hz", "bodies"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    for name in ("loss", "dup", "reorder"):
        if not 0.0 <= getattr(args, name) <= 1.0:
            ap.error(f"--{name} is a share of datagrams, from 0 to 1; got {getattr(args, name)}")
    res = asyncio.run(run(args.ticks, args.hz, args.bodies, args.loss, args.dup, args.reorder,
                          args.seed, quiet=False))
    print(f"{res['ticks']} ticks, {res['bodies']} bodies on {HOST}: sent {res['bytes']} bytes "
          f"({res['kbit_per_s']:.1f} kbit/s, {res['bytes'] * 8 / res['ticks'] / res['bodies']:.2f} "
          f"bits per body per tick)")
    print(f"link: {res['dropped']} dropped, {res['duplicated']} duplicated, {res['delayed']} delayed; "
          f"client: {res['received']} received, {res['decoded']} decoded, {res['stale']} too late, "
          f"{res['acks']} acks arrived")
    if res["decoded"] == 0:
        verdict = "nothing decoded to compare"
    elif res["mismatches"] == 0:
        verdict = f"always ({res['decoded']} states compared)"
    else:
        verdict = f"NO, {res['mismatches']} mismatches"
    print(f"client state matched the server's quantized state: {verdict} "
          f"(latest {res['latest']} of {res['last_seq']})")
    return 0 if res["mismatches"] == 0 and res["decoded"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
