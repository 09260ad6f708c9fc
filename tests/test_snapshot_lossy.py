"""Snapshot streams through a seeded lossy link, and corrupt packets (SPEC section 5).

Every decoded view is compared, code for code, with what the server quantized for that sequence
number (and its columns with ``schema.dequantize_many`` of ``schema.quantize_many`` of the
server's columns: ``schema.roundtrip`` of the batch). The link drops, duplicates and reorders
packets and acks; sequence numbers wrap past 65535; entities appear and disappear; NearlyZero
velocities go to rest and wake up.
"""

import random

import numpy as np
import pytest

import quantcodec as qc
from quantcodec.conformance import _seal
from quantcodec.snapshot import seq_distance, seq_newer

CHECK = 4                   # a datagram is its packet and a 4-byte check (docs/wire-format.md 11)

SEQ0 = 65536 - 700          # streams start before the wrap


def everything_schema():
    return qc.Schema("Everything", [
        ("position", qc.Vector(qc.Bounded(-100, 100, 18), qc.Fixed(0.01, 20))),
        ("cell", qc.Grid(16.0, 40, 24)),
        ("rotation", qc.Quat(10)),
        ("normal", qc.UnitVector(12)),
        ("yaw", qc.Angle(12)),
        ("velocity", qc.NearlyZero(qc.Vector(*[qc.PowerCurve(50, 2, 11)] * 3), 0.05)),
        ("speed", qc.NearlyZero(qc.Half(), 0.01)),
        ("health", qc.UInt(7)),
        ("score", qc.Int(40)),
        ("big", qc.UInt(64)),
        ("state", qc.Enum(["idle", "walk", "run", "jump", "swim"])),
        ("grounded", qc.Bool()),
        ("ammo", qc.Fixed(1.0, 12, signed=False)),
    ], version=1)


class World:
    """A seeded toy world: entities that rest, drift, jump, spin, appear and disappear."""

    def __init__(self, n, seed, churn=0.02, moving=0.3):
        self.rng = np.random.default_rng(seed)
        self.next_id = 1
        self.churn = churn
        self.moving = moving
        self.ids = np.zeros(0, dtype=np.uint64)
        self.state = {k: None for k in ("p", "q", "n", "yaw", "v", "speed", "health", "score",
                                        "big", "st", "g", "ammo")}
        self._add(n)

    def _fresh(self, k):
        r = self.rng
        q = r.normal(size=(k, 4))
        nrm = r.normal(size=(k, 3))
        big = r.integers(0, 2**63, size=k, dtype=np.uint64) * np.uint64(2) + r.integers(0, 2, size=k, dtype=np.uint64)
        return {
            "p": np.stack([r.uniform(-90, 90, k), r.uniform(-4000, 4000, k),
                           r.uniform(-1e5, 1e5, k)], axis=1),
            "q": q / np.linalg.norm(q, axis=1, keepdims=True),
            "n": nrm / np.linalg.norm(nrm, axis=1, keepdims=True),
            "yaw": r.uniform(0, 2 * np.pi, k),
            "v": np.where(r.random((k, 1)) < 0.5, 0.0, r.uniform(-20, 20, (k, 3))),
            "speed": np.where(r.random(k) < 0.5, 0.0, r.uniform(-300, 300, k)),
            "health": r.integers(0, 128, k),
            "score": r.integers(-2**39, 2**39, k),
            "big": big,
            "st": r.integers(0, 5, k),
            "g": r.random(k) < 0.5,
            "ammo": r.integers(0, 4096, k).astype(np.float64),
        }

    def _add(self, k):
        new_ids = np.arange(self.next_id, self.next_id + k, dtype=np.uint64) * np.uint64(7) + np.uint64(3)
        self.next_id += k
        fresh = self._fresh(k)
        self.ids = np.concatenate([self.ids, new_ids])
        for key, val in fresh.items():
            self.state[key] = val if self.state[key] is None else np.concatenate([self.state[key], val])

    def _keep(self, mask):
        self.ids = self.ids[mask]
        for key in self.state:
            self.state[key] = self.state[key][mask]

    def step(self):
        r = self.rng
        n = len(self.ids)
        if n and r.random() < 0.5:
            self._keep(r.random(n) >= self.churn)
        if r.random() < 0.5:
            self._add(int(r.integers(0, 4)))
        n = len(self.ids)
        st = self.state
        mv = r.random(n) < self.moving
        jump = r.random(n) < 0.01
        st["p"][mv] += r.normal(0, 0.05, (int(mv.sum()), 3)) * np.array([1.0, 100.0, 1000.0])
        st["p"][jump] = self._fresh(int(jump.sum()))["p"]
        np.clip(st["p"][:, 0], -100, 100, out=st["p"][:, 0])
        st["q"][mv] += r.normal(0, 0.02, (int(mv.sum()), 4))
        st["q"] /= np.linalg.norm(st["q"], axis=1, keepdims=True)
        st["n"][mv] += r.normal(0, 0.02, (int(mv.sum()), 3))
        st["n"] /= np.linalg.norm(st["n"], axis=1, keepdims=True)
        st["yaw"][mv] += r.normal(0, 0.1, int(mv.sum()))
        rest = r.random(n) < 0.05
        st["v"][mv] += r.normal(0, 0.5, (int(mv.sum()), 3))
        st["v"][rest] = 0.0
        st["speed"][mv] = r.uniform(-300, 300, int(mv.sum()))
        st["speed"][rest] = 0.0
        flip = r.random(n) < 0.02
        st["health"][flip] = r.integers(0, 128, int(flip.sum()))
        st["score"][flip] += r.integers(-1000, 1000, int(flip.sum()))
        st["big"][flip] ^= np.uint64(1) << np.uint64(int(r.integers(0, 64)))
        st["st"][flip] = r.integers(0, 5, int(flip.sum()))
        st["g"][flip] = ~st["g"][flip]
        st["ammo"][flip] = r.integers(0, 4096, int(flip.sum()))

    def columns(self):
        s = self.state
        return {"position": s["p"][:, :2], "cell": s["p"][:, 2], "rotation": s["q"], "normal": s["n"], "yaw": s["yaw"],
                "velocity": s["v"], "speed": s["speed"], "health": s["health"],
                "score": s["score"], "big": s["big"], "state": s["st"], "grounded": s["g"],
                "ammo": s["ammo"]}

    def order(self):
        """The rows in a shuffled order (servers need not keep any)."""
        return self.rng.permutation(len(self.ids))


def expected_columns(schema, world, order):
    """schema.roundtrip of the server's columns, rows sorted by id."""
    cols = {k: v[order] for k, v in world.columns().items()}
    ids = world.ids[order]
    srt = np.argsort(ids)
    rt = schema.dequantize_many(schema.quantize_many(cols))
    return ids[srt], {k: np.asarray(v)[srt] for k, v in rt.items()}


def header_baseline(packet):
    """(seq, baseline seq or None) from a packet's header, read as docs/wire-format.md 6 has it
    (bdist - 1 as EG(2, 16): unary prefix of e zeros, at most E = 8, E zeros an escape)."""
    v, pos = int.from_bytes(packet, "little"), 0

    def read(k):
        nonlocal pos
        x = (v >> pos) & ((1 << k) - 1)
        pos += k
        return x

    seq = read(16)
    if not read(1):
        return seq, None
    e = 0
    while e < 8 and read(1) == 0:
        e += 1
    if e == 8:
        bdist = read(16) + 1
    else:
        bdist = ((((1 << e) | read(e)) - 1) << 2 | read(2)) + 1
    return seq, (seq - bdist) & 0xFFFF


def decoder_state(dec):
    return dec.latest, dec.held, {s: dec.get(s) for s in dec.held}


def assert_state(dec, state):
    latest, held, snaps = state
    assert dec.latest == latest
    assert dec.held == held
    for s, snap in snaps.items():
        assert dec.get(s) is snap


class Link:
    """A seeded lossy, duplicating, reordering one-way link, in ticks."""

    def __init__(self, rng, loss, dup, max_delay):
        self.rng, self.loss, self.dup, self.max_delay = rng, loss, dup, max_delay
        self.queue = []          # (arrival tick, order, item)
        self.n = 0

    def send(self, now, item):
        copies = 0 if self.rng.random() < self.loss else 1
        if copies and self.rng.random() < self.dup:
            copies = 2
        for _ in range(copies):
            self.n += 1
            self.queue.append((now + self.rng.randint(0, self.max_delay), self.n, item))

    def receive(self, now):
        ready = sorted(x for x in self.queue if x[0] <= now)
        self.queue = [x for x in self.queue if x[0] > now]
        return [x[2] for x in ready]


def stream(schema, ticks, seed, loss, dup, max_delay, n=40, history=64, ack_delay=6,
           check_columns_every=1, predict=True, world=None):
    rng = random.Random(seed)
    world = world or World(n, seed)
    enc = qc.SnapshotEncoder(schema, history=history, predict=predict)
    dec = qc.SnapshotDecoder.from_hello(schema, enc.hello())
    assert dec.history == history
    down = Link(rng, loss, dup, max_delay)
    up = Link(rng, loss, dup, max_delay + ack_delay)
    sent = {}                # seq -> (snapshot, expected ids, expected columns)
    stats = {"decoded": 0, "stale": 0, "full": 0, "bytes": 0, "packets": 0}
    newest = None
    decoded = set()          # every seq decoded so far
    for t in range(ticks):
        seq = (SEQ0 + t) & 0xFFFF
        if t:
            world.step()
        order = world.order()
        cols = {k: v[order] for k, v in world.columns().items()}
        snap = schema.snapshot(world.ids[order], cols)
        exp = expected_columns(schema, world, order) if t % check_columns_every == 0 else None
        sent[seq] = (snap, exp)
        packet = enc.encode(seq, snap)
        stats["packets"] += 1
        stats["bytes"] += len(packet)
        if enc.last_baseline is None:
            stats["full"] += 1
        down.send(t, packet)
        for ack in up.receive(t):
            enc.ack(ack)
        for pkt in down.receive(t):
            before = decoder_state(dec)
            pseq, base = header_baseline(pkt)
            # SPEC 5: a packet whose baseline is still held (decoded, and among the last
            # `history` sequence numbers) decodes, late, duplicated or not
            held = base is not None and base in decoded and seq_distance(newest, base) < history
            try:
                view = dec.decode(pkt)
            except qc.DecodeError as e:
                assert "is not held" in str(e) and e.kind == "baseline", str(e)
                assert not held, f"packet {pseq}: its baseline {base} is held, yet {e}"
                assert_state(dec, before)
                stats["stale"] += 1
                continue
            assert base is None or held, (pseq, base)
            stats["decoded"] += 1
            stats["late"] = stats.get("late", 0) + (newest is not None and seq_newer(newest, view.seq))
            decoded.add(view.seq)
            want, exp_cols = sent[view.seq]
            assert view == want, f"seq {view.seq}: decoded state differs"
            assert np.array_equal(view.matrix, want.matrix)
            if exp_cols is not None:
                ids, cols_rt = exp_cols
                assert np.array_equal(view.ids, ids)
                got = view.columns
                for name, arr in cols_rt.items():
                    assert np.array_equal(got[name], arr, equal_nan=True), (view.seq, name)
            # latest never moves backwards and is the newest decoded
            if newest is None or seq_newer(view.seq, newest):
                newest = view.seq
            assert dec.latest == newest
            up.send(t, dec.latest)
            up.send(t, view.seq)
    return stats


@pytest.fixture(scope="module")
def schema():
    return everything_schema()


@pytest.mark.parametrize("seed,loss,dup,delay,predict", [
    (1, 0.0, 0.0, 0, True),
    (2, 0.10, 0.05, 3, True),
    (3, 0.30, 0.10, 6, True),
    (4, 0.30, 0.20, 10, False),
])
def test_lossy_stream_exact(schema, seed, loss, dup, delay, predict):
    stats = stream(schema, 900, seed, loss, dup, delay, predict=predict, check_columns_every=7)
    assert stats["decoded"] > 900 * (1 - loss) * 0.8
    # once acks flow, almost every packet is a delta
    assert stats["full"] < 60
    if loss == 0.0 and delay == 0:
        assert stats["stale"] == 0


@pytest.mark.parametrize("seed,history,delay", [(21, 16, 24), (22, 8, 12)])
def test_packets_later_than_the_history_decode_while_their_baseline_is_held(schema, seed, history,
                                                                           delay):
    """Delays past the history: packets arrive long after newer ones, some with their baseline
    at the edge of the window and their extrapolation snapshot beyond it; stream() checks that
    each decodes exactly when its baseline is held."""
    stats = stream(schema, 500, seed, 0.2, 0.1, delay, n=12, history=history, ack_delay=2)
    assert stats["late"] > 50 and stats["stale"] > 10 and stats["decoded"] > 200


def test_stream_small_history_and_wrap(schema):
    # a short history makes baselines expire: packets then go out in full, never undecodable
    stats = stream(schema, 400, 9, 0.3, 0.1, 4, history=4, ack_delay=2)
    assert stats["decoded"] > 150


def test_scene_stream_through_loss():
    """The rigid-body scene (bodies at rest, moving, churning) through a lossy link."""
    from quantcodec.tools.scene import scene_schema_fields, simulate

    def build(spec):
        kind, kw = spec
        kw = dict(kw)
        if "codecs" in kw:
            return getattr(qc, kind)(*[build(c) for c in kw["codecs"]])
        if "inner" in kw:
            kw["inner"] = build(kw["inner"])
        return getattr(qc, kind)(**kw)

    schema = qc.Schema("Scene", [(name, build(spec)) for name, spec in scene_schema_fields()])
    scene = simulate(120, 6.0, 60, 3, churn=True, churn_every=20)
    rng = random.Random(5)
    enc = qc.SnapshotEncoder(schema)
    dec = qc.SnapshotDecoder.from_hello(schema, enc.hello())
    down, up = Link(rng, 0.2, 0.05, 3), Link(rng, 0.2, 0.05, 8)
    sent = {}
    decoded = 0
    for k in range(scene.n_ticks):
        seq = (65500 + k) & 0xFFFF
        snap = schema.snapshot(scene.ids[k], scene.columns(k))
        sent[seq] = snap
        down.send(k, enc.encode(seq, snap))
        for a in up.receive(k):
            enc.ack(a)
        for pkt in down.receive(k):
            try:
                view = dec.decode(pkt)
            except qc.DecodeError as e:
                assert "is not held" in str(e) and e.kind == "baseline"
                continue
            decoded += 1
            assert view == sent[view.seq]
            up.send(k, view.seq)
    assert decoded > 0.7 * scene.n_ticks


# ------------------------------------------------------------------------------------------------
# corrupt datagrams and corrupt packets
#
# Every datagram ends in a check keyed with its stream (docs/wire-format.md 11): damaged bytes
# are refused as kind "check" before the packet decoder sees them. The packet decoder's own
# checks are exercised with damaged packets sealed with the stream's check (as a forger who saw
# the hello could send them): refused (any other kind) with the state unchanged, or decoded to
# valid codes.


def _packets(schema, seed=11):
    """A decoder history and datagrams of every kind: full, delta, delta with extrapolation,
    with appearing and disappearing entities. Returns (encoder, decoder, [(datagram, baseline,
    snapshot, packet bits)], the next datagram, its snapshot)."""
    world = World(30, seed, churn=0.1, moving=0.5)
    enc = qc.SnapshotEncoder(schema)
    dec = qc.SnapshotDecoder.from_hello(schema, enc.hello())
    out = []
    for t in range(12):
        if t:
            world.step()
        snap = schema.snapshot(world.ids, world.columns())
        pkt = enc.encode(t, snap)
        out.append((pkt, enc.last_baseline, snap, enc.last_bits))
        dec.decode(pkt)
        enc.ack(t)
    # the last packet (not yet decoded: decoding it changes the state) on top of them
    world.step()
    snap = schema.snapshot(world.ids, world.columns())
    last = enc.encode(12, snap)
    return enc, dec, out, last, snap


def _replayed(schema, enc, out):
    """A new decoder with the history of _packets (each trial starts from the same state)."""
    dec = qc.SnapshotDecoder.from_hello(schema, enc.hello())
    for pkt, *_ in out:
        dec.decode(pkt)
    return dec


def _refused(dec, data):
    """Decoding ``data`` raises DecodeError with the state unchanged: returns its kind."""
    before = decoder_state(dec)
    with pytest.raises(qc.DecodeError) as e:
        dec.decode(data)
    assert_state(dec, before)
    return e.value.kind


def _check_corrupt(dec, data, plan):
    """Decoding corrupt bytes raises DecodeError with the state unchanged, or (a bit flip that
    still decodes) yields valid codes and sorted unique ids."""
    before = decoder_state(dec)
    try:
        view = dec.decode(data)
    except qc.DecodeError:
        assert_state(dec, before)
        return False
    m = view.matrix
    assert m.dtype == np.uint64 and m.shape == (len(view.ids), plan.nslot)
    if len(view.ids):
        assert plan.valid_matrix(m) is None
        assert np.all(view.ids[1:] > view.ids[:-1])
        cols = view.columns
        for name, codec in zip(plan.names, plan.codecs):
            a = cols[name]
            if a.dtype.kind == "f":
                assert np.all(np.isfinite(a) | np.isnan(a))
    return True


def test_every_truncation_fails_and_keeps_state(schema):
    enc, dec, out, last, _ = _packets(schema)
    plan = schema._plan
    for pkt in [out[0][0], out[5][0], last]:
        body = pkt[:-CHECK]
        for cut in range(len(pkt)):
            assert _refused(dec, pkt[:cut]) == "check"               # the datagram cut short
        for cut in range(1, len(body)):                              # the packet cut short, sealed
            assert _refused(dec, _seal(enc, body[:cut])) == "malformed"
    assert _check_corrupt(dec, last, plan)


def test_extended_packets_fail(schema):
    enc, dec, out, last, _ = _packets(schema)
    for extra in (b"\x00", b"\x01", b"\xff\xff", bytes(9)):
        assert _refused(dec, last + extra) == "check"
        before = decoder_state(dec)
        with pytest.raises(qc.DecodeError, match="after the end") as e:
            dec.decode(_seal(enc, last[:-CHECK] + extra))
        assert e.value.kind == "malformed"
        assert_state(dec, before)


def test_nonzero_padding_fails(schema):
    enc, _, out, _, _ = _packets(schema)
    dec = qc.SnapshotDecoder.from_hello(schema, enc.hello())
    flipped = 0
    for pkt, _, _, bits in out:
        body = pkt[:-CHECK]
        assert len(body) == (bits + 7) // 8
        for bit in range(bits, 8 * len(body)):
            data = bytearray(body)
            data[bit >> 3] ^= 1 << (bit & 7)
            before = decoder_state(dec)
            with pytest.raises(qc.DecodeError, match="after the end") as e:
                dec.decode(_seal(enc, data))
            assert e.value.kind == "malformed"
            assert_state(dec, before)
            assert _refused(dec, bytes(data) + pkt[-CHECK:]) == "check"      # unsealed
            flipped += 1
        dec.decode(pkt)
    assert flipped > 10


def test_random_bit_flips(schema):
    enc, dec, out, last, snap = _packets(schema)
    plan = schema._plan
    rng = random.Random(3)
    ok = 0
    for trial in range(1500):
        data = bytearray(last if trial % 2 else out[rng.randrange(len(out))][0])
        flips = rng.choice((1, 1, 2, 5))
        for _ in range(flips):
            i = rng.randrange(len(data) * 8)
            data[i >> 3] ^= 1 << (i & 7)
        # the check refuses every damaged datagram (up to 3 flipped bits in any datagram, 5 in
        # one of up to 655 bytes: docs/wire-format.md 11; pairs of flips may cancel out)
        if any(bytes(data) == p for p, *_ in out) or bytes(data) == last:
            continue
        assert _refused(dec, bytes(data)) == "check", (trial, flips, len(data))
        # the packet decoder on the same damage, sealed: refused or valid. A successful decode
        # stores a snapshot (a flipped seq may even move latest): the next trial starts from the
        # same history again
        if _check_corrupt(dec, _seal(enc, bytes(data[:-CHECK])), plan):
            ok += 1
            dec = _replayed(schema, enc, out)
    assert ok < 1500


def test_random_garbage(schema):
    enc, dec, out, last, snap = _packets(schema)
    plan = schema._plan
    rng = np.random.default_rng(0)
    for n in list(range(0, 40)) + [100, 1000]:
        for _ in range(20):
            data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
            assert _refused(dec, data) == "check"
            if _check_corrupt(dec, _seal(enc, data), plan):      # garbage sealed
                dec = _replayed(schema, enc, out)


def test_huge_entity_count_fails_fast(schema):
    # header: seq 0, no baseline; then the count of new entities: Exp-Golomb(0) of 2**31
    w = qc.BitWriter()
    w.write(0, 16)
    w.write(0, 1)
    e = 31
    w.write(1 << e, e + 1)           # e zeros, then a one
    w.write(0, e)                    # the low bits of 2**31 + 1 - 2**31
    enc = qc.SnapshotEncoder(schema)
    dec = qc.SnapshotDecoder.from_hello(schema, enc.hello())
    with pytest.raises(qc.DecodeError, match="count of new entities") as exc:
        dec.decode(_seal(enc, w.getvalue() + bytes(16)))
    assert exc.value.kind == "malformed"
    assert dec.latest is None
