"""Stream a moving rigid-body scene over UDP to several clients with a session.

A server and ``--clients`` clients, all asyncio datagram endpoints on the loopback address
127.0.0.1 (and never any other address), run in one process:

- the server is a ``qc.StreamServer``: every tick it quantizes the scene once
  (``schema.snapshot``) and ``server.send(tick, world)`` gives each connected client its
  datagrams (the hello until the client has acked a packet, then deltas against what that
  client acknowledged; fragments above ``--max-datagram``); what clients send back goes to
  ``server.receive(addr, datagram)``, and the first datagram from a new address connects it;
- each client is a ``qc.StreamClient``: ``client.receive(datagram)`` gives a view or None,
  and whatever ``client.reply()`` returns goes back to the server (the ack: nothing made by
  hand). Each view is checked against the server's quantized state for that tick;
- a switch in between drops, duplicates and reorders datagrams both ways (``--loss``, ``--dup``,
  ``--reorder``), so replies arrive late or never and packets arrive out of order.

Run it::

    python examples/udp_stream.py --ticks 300 --bodies 200 --clients 4 --loss 0.2 --dup 0.05 --reorder 0.2
    python examples/udp_stream.py --bodies 400 --max-datagram 300     # full snapshots in fragments

It prints what went through the link and whether every client's state always matched; the
exit status is 0 when they did and something was decoded, 1 otherwise, 2 for arguments out of range
(the shares are from 0 to 1). The number of ticks is bounded (``--ticks``); nothing listens after
it returns.
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import random
import sys
import time

import numpy as np

try:
    import quantcodec as qc
except ImportError:         # run from a source checkout that is built in place but not installed
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
    import quantcodec as qc
HOST = "127.0.0.1"          # loopback only, by design


def scene_schema():
    """Position (46 bits), smallest-three rotation (29 bits) and a NearlyZero velocity."""
    return qc.Schema("Scene", [
        ("position", qc.Vector(qc.Bounded(-256, 256, 18), qc.Bounded(-16, 112, 14), qc.Bounded(-256, 256, 18))),
        ("rotation", qc.Quat(9)),
        ("velocity", qc.NearlyZero(qc.Vector(*[qc.PowerCurve(40, 2, 11)] * 3), 0.01)),
    ])


class Scene:
    """Bodies that drift, spin, come to rest, and come and go (ids with gaps): enough motion to
    reach every part of the packet format, in a few lines of NumPy."""

    def __init__(self, bodies, ticks, hz, seed):
        self.rng = np.random.default_rng(seed)
        self.hz, self.n_ticks, self.n_bodies = hz, ticks, bodies
        self.ids = np.arange(bodies, dtype=np.uint64) * 2 + 1
        self.next_id = int(self.ids[-1]) + 2
        self.pos = self.rng.uniform([-200, 0, -200], [200, 60, 200], (bodies, 3))
        self.rot = self.rng.normal(size=(bodies, 4))
        self.vel = self.rng.normal(0, 3, (bodies, 3)) * (self.rng.random((bodies, 1)) < 0.4)
        self.spin = self.rng.normal(0, 0.05, (bodies, 4)) * (self.vel[:, :1] != 0)

    def step(self, k):
        rng, dt = self.rng, 1.0 / self.hz
        self.pos = np.clip(self.pos + self.vel * dt, [-250, -10, -250], [250, 110, 250])
        rot = self.rot + self.spin
        self.rot = rot / np.linalg.norm(rot, axis=1, keepdims=True)
        stop = rng.random(len(self.ids)) < 0.01                 # some come to rest, some wake up
        wake = rng.random(len(self.ids)) < 0.01
        self.vel[stop] = 0.0
        self.spin[stop] = 0.0
        self.vel[wake] = rng.normal(0, 3, (int(wake.sum()), 3))
        if k and k % max(1, self.hz // 2) == 0:                  # churn: a few leave, a few arrive
            keep = rng.random(len(self.ids)) >= 0.02
            n_new = len(self.ids) - int(keep.sum())
            self.ids, self.pos, self.rot, self.vel, self.spin = (a[keep] for a in (
                self.ids, self.pos, self.rot, self.vel, self.spin))
            new = self.next_id + np.cumsum(rng.integers(1, 9, n_new)).astype(np.uint64)
            self.next_id = int(new[-1]) + 1 if n_new else self.next_id
            self.ids = np.concatenate([self.ids, new])
            self.pos = np.concatenate([self.pos, rng.uniform([-200, 0, -200], [200, 60, 200], (n_new, 3))])
            self.rot = np.concatenate([self.rot, rng.normal(size=(n_new, 4))])
            self.vel = np.concatenate([self.vel, rng.normal(0, 3, (n_new, 3))])
            self.spin = np.concatenate([self.spin, rng.normal(0, 0.05, (n_new, 4))])
        return self.ids, {"position": self.pos, "rotation": self.rot, "velocity": self.vel}


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
    """A StreamServer behind a socket: the first datagram from an address connects it, every
    datagram goes to ``server.receive``, and ``broadcast`` sends each client its datagrams."""

    def __init__(self, schema, switch, max_datagram=1200):
        self.session = qc.StreamServer(schema, max_datagram=max_datagram)
        self.switch = switch
        self.max_datagram = max_datagram
        self.transport = None
        self.replies = 0
        self.refused = {}
        self.datagrams = self.fragments = self.hellos = 0

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        if addr not in self.session.clients:
            self.session.connect(addr)          # whom you accept is yours to decide
        try:
            self.session.receive(addr, data)
            self.replies += 1
        except qc.DecodeError as e:             # junk, late or duplicated replies: nothing changed
            self.refused[e.kind] = self.refused.get(e.kind, 0) + 1

    def broadcast(self, tick, snapshot):
        """Send tick ``tick`` to every client; returns the bytes sent."""
        total = 0
        for addr, datagrams in self.session.send(tick, snapshot).items():
            for d in datagrams:
                assert len(d) <= self.max_datagram
                if d[:4] == b"QCHL":
                    self.hellos += 1
                else:
                    self.datagrams += 1
                total += len(d)
                self.switch.send(self.transport, d, addr)
            packets = [d for d in datagrams if d[:4] != b"QCHL"]
            self.fragments += len(packets) if len(packets) > 1 else 0
        return total


class Client(asyncio.DatagramProtocol):
    """A StreamClient behind a socket: views checked against the server's, replies sent back."""

    def __init__(self, schema, switch, truth):
        self.session = qc.StreamClient(schema)
        self.switch = switch
        self.truth = truth                  # seq -> the server's snapshot (same process)
        self.transport = None
        self.server_addr = None
        self.received = self.decoded = self.stale = self.mismatches = self.pending = 0
        self.replies = 0
        self.refused = {}

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        self.received += 1
        try:
            view = self.session.receive(data)
        except qc.DecodeError as e:
            # refused, and nothing changed: a late packet whose baseline is gone ("baseline"),
            # a packet before the hello ("no-hello"), a fragment of a packet given up...
            self.refused[e.kind] = self.refused.get(e.kind, 0) + 1
            if e.kind == "baseline":
                self.stale += 1
            view = None
        if view is None:
            if not self.refused or data[:4] == b"QCHL":
                self.pending += 1
        else:
            self.decoded += 1
            want = self.truth.get(view.seq)
            if want is None or view != want:
                self.mismatches += 1
        reply = self.session.reply()            # the ack (or a hello request): nothing by hand
        if reply is not None:
            self.replies += 1
            self.switch.send(self.transport, reply, self.server_addr)

    def tick(self):
        """Once a tick, whatever arrived: reply() returns a keep-alive every 32nd call while no
        reply is due (wire-format.md section 18), so that a server that restarted, knowing
        nobody, hears of this client and connects it."""
        reply = self.session.reply()
        if reply is not None:
            self.replies += 1
            self.switch.send(self.transport, reply, self.server_addr)

    def hello(self):
        """Say hello: a new client's first reply is a hello request, which makes the server
        connect its address."""
        self.replies += 1
        self.transport.sendto(self.session.reply(), self.server_addr)


async def run(ticks=120, hz=60, bodies=100, loss=0.2, dup=0.05, reorder=0.2, seed=0,
              max_delay=None, quiet=True, max_datagram=1200, clients=1):
    """Run the server and ``clients`` clients for ``ticks`` ticks; returns a dict of counts
    (summed over the clients; ``per_client``: each one's).

    ``mismatches`` counts decoded states that differ from the server's quantized state (it
    must be 0); ``behind`` the client-ticks at which a client's newest state was not the
    server's latest tick (packets lost or still in flight)."""
    if ticks < 1:
        raise ValueError("ticks must be at least 1")
    loop = asyncio.get_running_loop()
    rng = random.Random(seed)
    schema = scene_schema()
    scene = Scene(bodies, ticks, hz, seed)
    max_delay = 3.0 / hz if max_delay is None else max_delay
    down = LossySwitch(loop, rng, loss, dup, reorder, max_delay)
    up = LossySwitch(loop, rng, loss, dup, reorder, max_delay)
    truth = {}
    server_t, server = await loop.create_datagram_endpoint(
        lambda: Server(schema, down, max_datagram), local_addr=(HOST, 0))
    ends = []
    bytes_sent = 0
    behind = 0
    try:
        for _ in range(clients):
            ends.append(await loop.create_datagram_endpoint(
                lambda: Client(schema, up, truth), local_addr=(HOST, 0)))
        addr = server_t.get_extra_info("sockname")
        for _, c in ends:
            c.server_addr = addr
            c.hello()
        while len(server.session.clients) < clients:
            await asyncio.sleep(0.001)
        start = time.perf_counter()
        for k in range(scene.n_ticks):
            seq = k & 0xFFFF
            ids, columns = scene.step(k)
            snap = schema.snapshot(ids, columns)
            truth[seq] = snap
            bytes_sent += server.broadcast(k, snap)
            # wait for the next tick; the clients work meanwhile
            delay = start + (k + 1) / hz - time.perf_counter()
            await asyncio.sleep(max(delay, 0.0))
            for _, c in ends:
                c.tick()
            behind += sum(c.session.latest != seq for _, c in ends)
            if not quiet and k % hz == 0:
                print(f"tick {k:5d}: clients at {[c.session.latest for _, c in ends]}, "
                      f"{sum(c.mismatches for _, c in ends)} mismatches", file=sys.stderr)
        await asyncio.sleep(max_delay + 0.02)     # stragglers
        # what each client's acks told the server of its link (round trip in ticks, delivery)
        links = [server.session.link(a) if a in server.session.clients else None
                 for a in (t.get_extra_info("sockname") for t, _ in ends)]
    finally:
        for t, _ in ends:
            t.close()
        server_t.close()
    cs = [c for _, c in ends]
    refused = {}
    for c in cs:
        for k2, n in c.refused.items():
            refused[k2] = refused.get(k2, 0) + n
    return {
        "ticks": scene.n_ticks, "bodies": scene.n_bodies, "clients": clients, "bytes": bytes_sent,
        "received": sum(c.received for c in cs), "decoded": sum(c.decoded for c in cs),
        "stale": sum(c.stale for c in cs), "mismatches": sum(c.mismatches for c in cs),
        "behind": behind, "acks": server.replies, "replies_sent": sum(c.replies for c in cs),
        "server_refused": dict(server.refused),
        "latest": cs[0].session.latest, "last_seq": (scene.n_ticks - 1) & 0xFFFF,
        "dropped": down.dropped, "duplicated": down.duplicated, "delayed": down.delayed,
        "datagrams": server.datagrams, "fragments": server.fragments, "hellos": server.hellos,
        "pending": sum(c.pending for c in cs), "refused": refused,
        "per_client": [{"decoded": c.decoded, "latest": c.session.latest, "mismatches": c.mismatches,
                        "link": link} for c, link in zip(cs, links)],
        "kbit_per_s": bytes_sent * 8 * hz / scene.n_ticks / 1000.0,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ticks", type=int, default=300, help="ticks to stream (bounded run)")
    ap.add_argument("--hz", type=int, default=60)
    ap.add_argument("--bodies", type=int, default=200)
    ap.add_argument("--clients", type=int, default=3, help="clients, each with its own socket")
    ap.add_argument("--loss", type=float, default=0.2, help="share of datagrams dropped, each way")
    ap.add_argument("--dup", type=float, default=0.05, help="share of datagrams sent twice")
    ap.add_argument("--reorder", type=float, default=0.2, help="share of datagrams delayed")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-datagram", type=int, default=1200,
                    help="the datagram budget in bytes: larger packets go as fragments (64..65507)")
    args = ap.parse_args(argv)
    if not 64 <= args.max_datagram <= 65507:
        ap.error(f"--max-datagram must be in 64..65507 bytes, got {args.max_datagram}")
    for name in ("ticks", "hz", "bodies", "clients"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    for name in ("loss", "dup", "reorder"):
        if not 0.0 <= getattr(args, name) <= 1.0:
            ap.error(f"--{name} is a share of datagrams, from 0 to 1; got {getattr(args, name)}")
    res = asyncio.run(run(args.ticks, args.hz, args.bodies, args.loss, args.dup, args.reorder,
                          args.seed, quiet=False, max_datagram=args.max_datagram, clients=args.clients))
    n = res["clients"]
    print(f"{res['ticks']} ticks, {res['bodies']} bodies, {n} clients on {HOST}: sent {res['bytes']} bytes "
          f"({res['kbit_per_s'] / n:.1f} kbit/s a client, "
          f"{res['bytes'] * 8 / res['ticks'] / res['bodies'] / n:.2f} bits per body per tick)")
    print(f"link: {res['dropped']} dropped, {res['duplicated']} duplicated, {res['delayed']} delayed; "
          f"{res['datagrams']} datagrams of at most {args.max_datagram} bytes ({res['fragments']} "
          f"fragments), {res['hellos']} hellos")
    refused = ", ".join(f"{n} {k}" for k, n in sorted(res["refused"].items())) or "none"
    print(f"clients: {res['received']} received, {res['decoded']} decoded, {res['stale']} too late, "
          f"refused: {refused}; {res['replies_sent']} replies sent, {res['acks']} taken by the server")
    links = [c["link"] for c in res["per_client"]]
    if any(s is not None and s.srtt is not None for s in links):
        print("the server's view of each link (its acks): round trip "
              + ", ".join("-" if s is None or s.srtt is None else f"{s.srtt:.1f}" for s in links)
              + " ticks; packets delivered "
              + ", ".join("-" if s is None or s.delivered is None else f"{s.delivered:.0%}" for s in links))
    if res["decoded"] == 0:
        verdict = "nothing decoded to compare"
    elif res["mismatches"] == 0:
        verdict = f"always ({res['decoded']} states compared)"
    else:
        verdict = f"NO, {res['mismatches']} mismatches"
    print(f"every client's state matched the server's quantized state: {verdict} "
          f"(latest {[c['latest'] for c in res['per_client']]} of {res['last_seq']})")
    return 0 if res["mismatches"] == 0 and res["decoded"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
