"""The datagram layer of a snapshot stream (SPEC section 5, docs/wire-format.md sections 11-15):
every datagram bound to its stream, the hello, fragments, and no stall. Each scenario here failed
on the stream that trusted every datagram (the issue "A stream that survives a real network")."""

import pickle
import re
import struct

import numpy as np
import pytest

import quantcodec as qc
from quantcodec import _framing
from quantcodec._bitstream import crc32c
from quantcodec.conformance import _seal


def pose_schema(lo=-64.0, labels=("idle", "walk", "run")):
    return qc.Schema("Pose", [
        ("position", qc.Vector(qc.Bounded(lo, 64, 16), qc.Bounded(0, 32, 14), qc.Bounded(-64, 64, 16))),
        ("rotation", qc.Quat(9)),
        ("velocity", qc.NearlyZero(qc.Vector(*[qc.PowerCurve(32, 2, 10)] * 3), 0.01)),
        ("state", qc.Enum(list(labels))),
    ])


class World:
    def __init__(self, schema, n=80, seed=0, moving=0.3):
        self.schema = schema
        self.rng = np.random.default_rng(seed)
        self.ids = np.arange(n, dtype=np.uint64) * 5 + 7
        self.pos = self.rng.uniform([-60, 1, -60], [60, 30, 60], (n, 3))
        self.rot = self.rng.normal(size=(n, 4))
        self.moving = self.rng.random(n) < moving
        self.state = self.rng.integers(0, 3, n)

    def tick(self):
        step = self.rng.normal(0, 0.05, self.pos.shape) * self.moving[:, None]
        self.pos = np.clip(self.pos + step, [-63, 0.5, -63], [63, 31, 63])
        self.rot = self.rot + self.rng.normal(0, 0.01, self.rot.shape) * self.moving[:, None]
        vel = np.where(self.moving[:, None], step * 60, 0.0)
        return self.schema.snapshot(self.ids, {"position": self.pos, "rotation": self.rot,
                                               "velocity": vel, "state": self.state})


def state_of(dec):
    return (dec.latest, dec.held, tuple((k, dec.get(k)) for k in dec.held), dec.stream_id,
            dec.history)


# -- the check ------------------------------------------------------------------------------------

def test_crc32c_is_castagnoli_with_zlib_continuation():
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0
    data = bytes(range(256)) * 5
    for cut in (0, 1, 7, 8, 9, 100, len(data)):
        assert crc32c(data[cut:], crc32c(data[:cut])) == crc32c(data)
    # against a bitwise computation of the same polynomial
    def slow(b):
        c = 0xFFFFFFFF
        for x in b:
            c ^= x
            for _ in range(8):
                c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        return c ^ 0xFFFFFFFF
    rng = np.random.default_rng(1)
    for n in (1, 3, 8, 13, 64, 333):
        b = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert crc32c(b) == slow(b)
        assert crc32c(memoryview(b)) == crc32c(bytearray(b)) == crc32c(np.frombuffer(b, np.uint8))
    with pytest.raises(ValueError):
        crc32c(b"x", -1)
    # the CPU's instruction (where used) and the table agree at every length and alignment
    for n in (0, 1, 5, 8, 9, 63, 64, 1000, 8701):
        for off in range(8):
            b = memoryview(rng.integers(0, 256, n + off, dtype=np.uint8).tobytes())[off:]
            assert crc32c(b, 12345) == crc32c(b, 12345, portable=True)


def test_a_whole_datagram_is_the_packet_and_32_bits():
    schema = pose_schema()
    enc = qc.SnapshotEncoder(schema, stream_id=42)
    w = World(schema)
    dg = enc.encode(0, w.tick())
    assert len(dg) == (enc.last_bits + 7) // 8 + 4
    key = _framing.stream_key(schema.fingerprint, 64, True, 1200, 42)
    assert len(key) == 40
    assert struct.unpack("<I", dg[-4:])[0] == crc32c(dg[:-4], crc32c(key + b"P"))
    # a packet that fits: encode_datagrams gives that one datagram
    enc2 = qc.SnapshotEncoder(schema, stream_id=42)
    snap = w.tick()
    assert enc2.encode_datagrams(0, snap) == [enc2.encode(0, snap)]


def test_one_stray_datagram_no_longer_stalls_a_client():
    """The issue's case: bytes.fromhex("f15d02") fed mid-stream moved latest from 99 to 24049
    and stalled the client for ~18 minutes. Now it is refused (kind check) and changes nothing."""
    schema = pose_schema()
    enc = qc.SnapshotEncoder(schema)
    dec = qc.SnapshotDecoder.from_hello(schema, enc.hello())
    w = World(schema)
    full_after = []
    for t in range(200):
        dg = enc.encode(t, w.tick())
        if t > 10:
            full_after.append(enc.last_baseline is None)
        dec.decode(dg)
        enc.ack(dec.latest)
        if t == 99:
            before = state_of(dec)
            with pytest.raises(qc.DecodeError) as e:
                dec.decode(bytes.fromhex("f15d02"))
            assert e.value.kind == "check" and "fails the check" in str(e.value)
            assert state_of(dec) == before and dec.latest == 99
    assert not any(full_after)               # never a full packet after the start


def test_random_and_bit_flipped_datagrams_in_a_live_lossy_stream():
    """100,000 random and bit-flipped datagrams interleaved into a lossy stream: no wrong view,
    no change of state on any of them, and the stream never falls back to a full packet."""
    schema = pose_schema()
    rng = np.random.default_rng(5)
    enc = qc.SnapshotEncoder(schema, history=32)
    dec = qc.SnapshotDecoder.from_hello(schema, enc.hello())
    w = World(schema, n=40)
    truth, junk, fulls, views = {}, 0, 0, 0
    t = 0
    while junk < 100_000:
        snap = w.tick()
        seq = t & 0xFFFF
        truth[seq] = snap
        dg = enc.encode(seq, snap)
        fulls += t > 0 and enc.last_baseline is None
        for _ in range(250):
            if rng.random() < 0.5:
                bad = rng.integers(0, 256, int(rng.integers(0, 64)), dtype=np.uint8).tobytes()
            else:
                b = bytearray(dg)
                for _ in range(int(rng.integers(1, 4))):
                    j = int(rng.integers(0, len(b) * 8))
                    b[j // 8] ^= 1 << (j % 8)
                bad = bytes(b)
            before = (dec.latest, dec.held)
            try:
                view = dec.decode(bad)
            except qc.DecodeError as e:
                assert e.kind in ("check", "hello")
                assert (dec.latest, dec.held) == before
                junk += 1
                continue
            assert view is None or view == truth[view.seq]
            junk += 1
        if rng.random() >= 0.2:                   # 20% loss
            view = dec.decode(dg)
            assert view == snap
            views += 1
            enc.ack(dec.latest)
        t += 1
    assert fulls == 0 and views > 0.7 * t


@pytest.mark.parametrize("other", ["range", "label"])
def test_a_client_with_another_schema_of_equal_widths_refuses_the_stream(other):
    """Same bit widths, another range (992 m off before) or a renamed enum label: the hello says
    what differs, and no datagram of the stream ever decodes."""
    server = pose_schema()
    client = pose_schema(lo=-1000.0) if other == "range" else pose_schema(labels=("idle", "walk", "sprint"))
    assert client.bits == server.bits and client.fingerprint != server.fingerprint
    enc = qc.SnapshotEncoder(server)
    with pytest.raises(qc.SchemaError) as e:
        qc.SnapshotDecoder.from_hello(client, enc.hello())
    field = "position" if other == "range" else "state"
    assert f"field '{field}': same kind" in str(e.value) and server.fingerprint in str(e.value)
    dec = qc.SnapshotDecoder(client)
    with pytest.raises(qc.DecodeError) as e:
        dec.decode(enc.hello())
    assert e.value.kind == "schema" and field in str(e.value)
    w = World(server)
    for t in range(30):
        with pytest.raises(qc.DecodeError) as e:
            dec.decode(enc.encode(t, w.tick()))
        assert e.value.kind == "no-hello"
    assert dec.latest is None


def test_the_hello_says_what_differs():
    a = qc.Schema("A", [("x", qc.UInt(8)), ("y", qc.Bool())], version=2)
    b = qc.Schema("B", [("x", qc.Int(8)), ("z", qc.Bool())], version=3)
    with pytest.raises(qc.SchemaError) as e:
        qc.SnapshotDecoder.from_hello(a, qc.SnapshotEncoder(b).hello())
    msg = str(e.value)
    for part in ("schema name 'A' here, 'B'", "schema version 2 here, 3", "field 'x': UInt here, Int",
                 "field 'y' is not in the server's schema", "field 'z' of the server's schema is missing"):
        assert part in msg, part


def test_a_smaller_client_history_is_the_servers_after_the_hello():
    """Encoder history 64, decoder made with 4: a late ack of seq 1 stalled it forever (29 of 29
    refused). The hello gives it 64."""
    schema = pose_schema()
    enc = qc.SnapshotEncoder(schema, history=64)
    dec = qc.SnapshotDecoder(schema, history=4)
    assert dec.decode(enc.hello()) is None and dec.history == 64
    w = World(schema)
    for t in range(10):
        dec.decode(enc.encode(t, w.tick()))
    enc.ack(1)
    for t in range(10, 40):
        view = dec.decode(enc.encode(t, w.tick()))
        assert view.seq == t
        enc.ack(dec.latest)


def test_a_decoder_without_a_hello_refuses_and_never_misreads():
    schema = pose_schema()
    enc = qc.SnapshotEncoder(schema)
    dec = qc.SnapshotDecoder(schema)
    w = World(schema)
    dg = enc.encode(0, w.tick())
    with pytest.raises(qc.DecodeError) as e:
        dec.decode(dg)
    assert e.value.kind == "no-hello" and dec.latest is None
    assert dec.decode(enc.hello()) is None
    assert dec.decode(dg).seq == 0
    assert dec.decode(enc.hello()) is None                  # again: ignored
    assert dec.latest == 0


def test_replays_of_an_earlier_stream_are_refused():
    schema = pose_schema()
    w = World(schema)
    old = qc.SnapshotEncoder(schema)
    old_dgs = [old.encode(t, w.tick()) for t in range(20)]
    new = qc.SnapshotEncoder(schema)
    dec = qc.SnapshotDecoder.from_hello(schema, new.hello())
    for t in range(20):
        dec.decode(new.encode(t, w.tick()))
        new.ack(dec.latest)
        before = state_of(dec)
        for d in old_dgs:
            with pytest.raises(qc.DecodeError) as e:
                dec.decode(d)
            assert e.value.kind == "check"
        with pytest.raises(qc.DecodeError) as e:
            dec.decode(old.hello())                       # an older stream's hello
        assert e.value.kind == "hello" and "older stream" in str(e.value)
        assert state_of(dec) == before


def _run(schema, ticks, events, history=16, seed=0, loss=0.1):
    """A lossy link under the rules of section 15 (hello beside every full packet, the client
    acks latest after every view); ``events`` maps a tick to "client-restart",
    "server-restart", "reset" or "replay". Returns the ticks at which the client decoded."""
    rng = np.random.default_rng(seed)
    enc = qc.SnapshotEncoder(schema, history=history)
    dec = qc.SnapshotDecoder(schema)
    w = World(schema, n=30, seed=seed)
    truth, decoded, old = {}, [], []
    inflight = [(0, enc.hello())]
    seq = 0
    for t in range(ticks):
        ev = events.get(t)
        if ev == "client-restart":
            dec = qc.SnapshotDecoder(schema)
        elif ev == "server-restart":
            old = [d for _, d in inflight] + old[:50]
            enc = qc.SnapshotEncoder(schema, history=history)
            seq = int(rng.integers(0, 65536))             # its numbers start anywhere
        elif ev == "reset":
            enc.reset()
        snap = w.tick()
        truth[(seq, enc.stream_id)] = snap
        dgs = enc.encode_datagrams(seq, snap)
        if enc.last_baseline is None:
            dgs = [enc.hello()] + dgs
        if ev == "replay" and old:
            dgs = old[:20] + dgs
        for d in dgs:
            if rng.random() >= loss:
                inflight.append((t + int(rng.integers(0, 3)), d))
        due = sorted([f for f in inflight if f[0] <= t], key=lambda f: f[0])
        inflight = [f for f in inflight if f[0] > t]
        for _, d in due:
            try:
                view = dec.decode(d)
            except qc.DecodeError:
                continue
            if view is not None:
                assert view == truth[(view.seq, dec.stream_id)]
                decoded.append(t)
                if rng.random() >= loss:
                    enc.ack(dec.latest)
        seq = (seq + 1) & 0xFFFF
    return decoded


@pytest.mark.parametrize("event", ["client-restart", "server-restart", "reset", "replay"])
def test_no_stall_longer_than_history_after_a_restart_or_replay(event):
    schema = pose_schema()
    history = 16
    for seed in range(4):
        decoded = _run(schema, 150, {40: event, 41: "replay" if event == "server-restart" else None,
                                     90: event}, history=history, seed=seed)
        for at in (40, 90):
            after = [t for t in decoded if t >= at]
            assert after and after[0] - at <= history + 3, (event, seed, at, after[:3])


# -- fragments ------------------------------------------------------------------------------------

def _big(schema, n=400, seed=3):
    return World(schema, n=n, seed=seed, moving=1.0)


@pytest.mark.parametrize("budget", [64, 100, 300, 1200])
def test_fragments_stay_under_the_budget_and_reassemble_in_any_order(budget):
    schema = pose_schema()
    enc = qc.SnapshotEncoder(schema, max_datagram=budget)
    dec = qc.SnapshotDecoder.from_hello(schema, enc.hello())
    w = _big(schema, n=200 if budget > 64 else 40)
    rng = np.random.default_rng(budget)
    for t in range(6):
        snap = w.tick()
        whole = enc.encode(t, snap)
        dgs = enc.encode_datagrams(t, snap)
        assert all(len(d) <= budget for d in dgs)
        if len(whole) <= budget:
            assert dgs == [whole]
        else:
            assert b"".join(d[8:-4] for d in dgs) == whole[:-4]
            assert all(struct.unpack_from("<I", d, 4)[0] == struct.unpack("<I", whole[-4:])[0] for d in dgs)
        order = rng.permutation(len(dgs))
        got = [dec.decode(dgs[i]) for i in order] + [dec.decode(dgs[order[0]])]   # and a duplicate
        assert all(g is None for g in got[:-2]) and got[-2] == snap and got[-1] is None
        enc.ack(dec.latest)


def test_a_packet_too_large_for_256_fragments_is_refused_by_the_encoder():
    schema = pose_schema()
    enc = qc.SnapshotEncoder(schema, max_datagram=64)
    w = World(schema, n=5000)
    with pytest.raises(qc.CodecError, match="fragments of at most 64 bytes; at most 256"):
        enc.encode_datagrams(0, w.tick())


def test_a_packet_that_lost_a_fragment_is_dropped_after_history_ticks():
    schema = pose_schema()
    enc = qc.SnapshotEncoder(schema, history=8, max_datagram=200)
    dec = qc.SnapshotDecoder.from_hello(schema, enc.hello())
    w = World(schema, n=120, moving=0.0)          # a full packet in fragments, then small deltas
    first = enc.encode_datagrams(0, w.tick())
    assert len(first) > 2
    for d in first[1:]:
        assert dec.decode(d) is None              # fragment 0 lost
    assert len(dec._frag.parts) == 1
    late = enc.encode_datagrams(1, w.tick())     # (no ack: a full packet again, which arrives)
    for d in late:
        view = dec.decode(d)
    assert view.seq == 1
    enc.ack(1)
    for t in range(2, 12):
        dgs = enc.encode_datagrams(t, w.tick())
        assert len(dgs) == 1
        assert dec.decode(dgs[0]).seq == t
        enc.ack(dec.latest)
    # latest is 11: packet 0's partial is 11 behind, past history 8; the missing piece arriving
    # now is given up, and nothing is held
    assert dec.decode(first[0]) is None
    assert len(dec._frag.parts) == 0 and dec._frag.held == 0


def test_reassembly_never_holds_more_than_256_datagrams_of_bytes():
    """Fragment headers sealed with the stream's key (the worst case: a forger who saw the hello)
    claiming many packets of 256 fragments: memory stays within 256 * max_datagram."""
    schema = pose_schema()
    budget = 100
    enc = qc.SnapshotEncoder(schema, max_datagram=budget)
    dec = qc.SnapshotDecoder.from_hello(schema, enc.hello())
    rng = np.random.default_rng(0)
    size = budget - 12
    for i in range(3000):
        head = struct.pack("<HBBI", int(rng.integers(0, 65536)), int(rng.integers(0, 255)), 255,
                           int(rng.integers(0, 2 ** 32)))
        body = head + bytes(size)
        assert dec.decode(body + struct.pack("<I", crc32c(body, enc._seed_f))) is None
        assert dec._frag.held <= 256 * budget
    assert dec._frag.held > 200 * budget


@pytest.mark.parametrize("case", ["count1", "index", "short", "long", "badpacket"])
def test_inconsistent_fragments_are_refused_and_change_nothing(case):
    schema = pose_schema()
    enc = qc.SnapshotEncoder(schema, max_datagram=120)
    dec = qc.SnapshotDecoder.from_hello(schema, enc.hello())
    w = _big(schema, n=60)
    dgs = enc.encode_datagrams(0, w.tick())
    body = bytearray(dgs[0][:-4])
    if case == "count1":
        body[3] = 0
    elif case == "index":
        body[2] = body[3] + 1
    elif case == "short":
        body = body[:-1]
    elif case == "long":
        body = body + b"\x00"
    if case == "badpacket":
        # every fragment consistent, but the reassembled packet fails its pcheck
        bad = []
        for d in dgs:
            b = bytearray(d[:-4])
            b[4] ^= 1
            bad.append(bytes(b) + struct.pack("<I", crc32c(bytes(b), enc._seed_f)))
        for d in bad[:-1]:
            assert dec.decode(d) is None
        with pytest.raises(qc.DecodeError) as e:
            dec.decode(bad[-1])
        assert e.value.kind == "fragment" and dec.latest is None
        return
    before = (dict(dec._frag.parts), dec._frag.held)
    with pytest.raises(qc.DecodeError) as e:
        dec.decode(bytes(body) + struct.pack("<I", crc32c(bytes(body), enc._seed_f)))
    assert e.value.kind == "fragment"
    assert (dict(dec._frag.parts), dec._frag.held) == before


# -- the hello ------------------------------------------------------------------------------------

def test_hello_layout_and_parse():
    schema = pose_schema()
    enc = qc.SnapshotEncoder(schema, history=40, predict=False, max_datagram=900, stream_id=0xABCDEF)
    h = enc.hello()
    assert h[:4] == b"QCHL" and len(h) <= 900
    info = _framing.parse_hello(h)
    assert (info.version, info.predict, info.history, info.max_datagram, info.stream_id) == (1, False, 40, 900, 0xABCDEF)
    assert info.fingerprint == schema.fingerprint and info.schema_name == "Pose"
    assert [f.name for f in info.fields] == ["position", "rotation", "velocity", "state"]
    assert [f.kind for f in info.fields] == ["Vector", "Quat", "NearlyZero", "Enum"]
    dec = qc.SnapshotDecoder.from_hello(schema, bytearray(h))
    assert dec.stream_id == 0xABCDEF and dec.history == 40 and dec.hello_info.started == enc.started


def test_hello_summaries_are_cut_to_the_budget():
    schema = qc.Schema("Wide", [(f"field_number_{i:03d}", qc.UInt(3)) for i in range(200)])
    enc = qc.SnapshotEncoder(schema, max_datagram=256)
    h = enc.hello()
    assert len(h) <= 256
    info = _framing.parse_hello(h)
    assert info.nfields == 200 and 0 < len(info.fields) < 200
    other = qc.Schema("Wide", [(f"field_number_{i:03d}", qc.UInt(3)) for i in range(199)] + [("last", qc.UInt(4))])
    with pytest.raises(qc.SchemaError, match="summarizes"):
        qc.SnapshotDecoder.from_hello(other, h)


@pytest.mark.parametrize("mutate, kind", [
    (lambda h: h[:-1], "check"),
    (lambda h: b"QCHX" + h[4:], "check"),
    (lambda h: b"", "check"),
])
def test_broken_hellos_are_refused(mutate, kind):
    schema = pose_schema()
    h = qc.SnapshotEncoder(schema).hello()
    with pytest.raises(qc.DecodeError) as e:
        qc.SnapshotDecoder.from_hello(schema, mutate(h))
    assert e.value.kind == kind


@pytest.mark.parametrize("offset, value, words", [(4, 2, "format version 2"), (5, 0x82, "flags"),
                                                  (6, 0, "history 0"), (8, 0, "max_datagram")])
def test_hellos_this_library_cannot_adopt(offset, value, words):
    schema = pose_schema()
    h = bytearray(qc.SnapshotEncoder(schema).hello()[:-4])
    h[offset] = value
    if offset in (6, 8):
        h[offset + 1] = 0
    h = bytes(h) + struct.pack("<I", crc32c(bytes(h), _framing.SEED_H))
    dec = qc.SnapshotDecoder(schema)
    with pytest.raises(qc.DecodeError) as e:
        dec.decode(h)
    assert e.value.kind == "hello" and words in str(e.value)
    assert dec.stream_id is None


def test_a_newer_streams_hello_starts_the_client_over():
    schema = pose_schema()
    w = World(schema)
    a = qc.SnapshotEncoder(schema)
    dec = qc.SnapshotDecoder.from_hello(schema, a.hello())
    for t in range(5):
        dec.decode(a.encode(t, w.tick()))
    b = qc.SnapshotEncoder(schema)
    assert b.started > a.started and b.stream_id != a.stream_id
    assert dec.decode(b.hello()) is None
    assert dec.stream_id == b.stream_id and dec.latest is None and dec.held == ()
    view = dec.decode(b.encode(1000, w.tick()))
    assert view.seq == 1000
    with pytest.raises(qc.DecodeError):
        dec.decode(a.encode(5, w.tick()))


def test_reset_starts_a_new_stream():
    schema = pose_schema()
    enc = qc.SnapshotEncoder(schema)
    first = (enc.stream_id, enc.started, enc.hello())
    enc.reset()
    assert enc.stream_id != first[0] and enc.started > first[1] and enc.hello() != first[2]
    fixed = qc.SnapshotEncoder(schema, stream_id=7)
    dec = qc.SnapshotDecoder.from_hello(schema, fixed.hello())
    fixed.reset()                           # a fixed id is the first stream's only
    assert fixed.stream_id != 7
    assert dec.decode(fixed.hello()) is None and dec.stream_id == fixed.stream_id


def test_the_hello_fits_the_smallest_budget_whatever_the_name():
    schema = qc.Schema("A schema with a rather long name " * 9, [("x", qc.UInt(3)), ("y", qc.Bool())])
    for budget in (64, 65, 80, 200, 1200):
        enc = qc.SnapshotEncoder(schema, max_datagram=budget)
        h = enc.hello()
        assert len(h) <= budget
        dec = qc.SnapshotDecoder.from_hello(schema, h)
        assert dec.stream_id == enc.stream_id
    other = qc.Schema("Another name", [("x", qc.UInt(3)), ("y", qc.Bool())])
    with pytest.raises(qc.SchemaError, match="schema name"):
        qc.SnapshotDecoder.from_hello(other, qc.SnapshotEncoder(schema, max_datagram=64).hello())


def test_encoder_stream_arguments():
    schema = pose_schema()
    for bad in (63, 65508, 0):
        with pytest.raises(ValueError, match="max_datagram must be in 64..65507"):
            qc.SnapshotEncoder(schema, max_datagram=bad)
    with pytest.raises(TypeError, match="max_datagram must be an integer"):
        qc.SnapshotEncoder(schema, max_datagram=1200.0)
    with pytest.raises(ValueError, match="stream_id must be in 0..2\\*\\*64-1"):
        qc.SnapshotEncoder(schema, stream_id=-1)
    with pytest.raises(TypeError, match="stream_id must be an integer"):
        qc.SnapshotEncoder(schema, stream_id="7")
    with pytest.raises(TypeError, match="bytes-like"):
        qc.SnapshotDecoder.from_hello(schema, 12)


def test_decode_error_carries_its_kind_and_pickles():
    e = qc.DecodeError("x", kind="check")
    f = pickle.loads(pickle.dumps(e))
    assert isinstance(f, qc.DecodeError) and f.kind == "check" and str(f) == "x"
    assert qc.DecodeError("y").kind == "malformed"
    with pytest.raises(ValueError):
        qc.DecodeError("z", kind="nonsense")


def test_a_sealed_malformed_packet_is_malformed_and_changes_nothing():
    schema = pose_schema()
    enc = qc.SnapshotEncoder(schema)
    dec = qc.SnapshotDecoder.from_hello(schema, enc.hello())
    w = World(schema)
    dg = enc.encode(0, w.tick())
    for body in (dg[:-4] + b"\x00", dg[:2], dg[:-5]):
        with pytest.raises(qc.DecodeError) as e:
            dec.decode(_seal(enc, body))
        assert e.value.kind == "malformed" and dec.latest is None
    assert dec.decode(dg).seq == 0


ENTITY_ERROR = re.compile(r"^snapshot packet: entity (\d+): (field '\w+'(\[\d\]| \(NearlyZero flag\))?: .+"
                          r"|marked changed, but none of its fields is) \(at bit \d+\)$")


def test_an_error_in_a_changed_entity_names_the_entity_its_field_and_the_bit():
    """Copies of a delta packet with bits flipped (sealed again): every error found in an
    entity's fields or record names the entity (a changed one: one of the baseline's), the field
    or slot, and the bit, and the decoder's state is as before each refusal."""
    schema = pose_schema()
    enc = qc.SnapshotEncoder(schema)
    dec = qc.SnapshotDecoder.from_hello(schema, enc.hello())
    w = World(schema, n=200)
    for t in range(8):
        if t >= 2:
            enc.ack(t - 2)
        dg = enc.encode(t, w.tick())
        view = dec.decode(dg)
    ids = {int(i) for i in view.ids}
    rng = np.random.default_rng(5)
    seen = {}
    for _ in range(3000):
        body = bytearray(dg[:-4])
        for bit in rng.integers(16, len(body) * 8, size=int(rng.integers(1, 4))):
            body[bit >> 3] ^= 1 << (bit & 7)
        latest = dec.latest
        try:
            dec.decode(_seal(enc, body))
        except qc.DecodeError as e:
            m = str(e)
            assert dec.latest == latest
            if not m.startswith("snapshot packet: entity"):
                continue
            got = ENTITY_ERROR.match(m)
            assert got, m
            if "marked changed" in m:               # (a changed entity is one of the baseline's)
                assert int(got.group(1)) in ids, m
            kind = re.sub(r"\d+", "N", m.split(": ", 2)[2])
            seen.setdefault(kind, m)
    assert any("marked changed but unchanged" in k for k in seen), sorted(seen)
    assert any("is not valid" in k for k in seen), sorted(seen)


def test_a_decode_method_taken_before_the_hello_keeps_working():
    schema = pose_schema()
    enc = qc.SnapshotEncoder(schema)
    dec = qc.SnapshotDecoder(schema)
    decode = dec.decode
    assert decode(enc.hello()) is None
    w = World(schema)
    assert decode(enc.encode(0, w.tick())).seq == 0
    assert dec.latest == 0


def test_hello_fingerprint_must_be_16_lowercase_hex_digits():
    schema = pose_schema()
    h = bytearray(qc.SnapshotEncoder(schema).hello()[:-4])
    h[26:28] = b"0x"                  # int(..., 16) would take it: the format does not
    h = bytes(h) + struct.pack("<I", crc32c(bytes(h), _framing.SEED_H))
    with pytest.raises(qc.DecodeError) as e:
        qc.SnapshotDecoder(schema).decode(h)
    assert e.value.kind == "hello" and "16 lowercase hex digits" in str(e.value)


def test_a_hello_of_the_adopted_stream_with_other_parameters_is_refused():
    schema = pose_schema()
    enc = qc.SnapshotEncoder(schema, stream_id=99)
    dec = qc.SnapshotDecoder.from_hello(schema, enc.hello())
    other = qc.SnapshotEncoder(schema, stream_id=99, history=10)
    other._started_us = enc.started
    other._hello = None
    with pytest.raises(qc.DecodeError) as e:
        dec.decode(other.hello())
    assert e.value.kind == "hello" and dec.history == 64
    same_time = qc.SnapshotEncoder(schema, stream_id=100)
    same_time._started_us = enc.started
    same_time._hello = None
    assert dec.decode(enc.encode(0, World(schema).tick())).seq == 0
    with pytest.raises(qc.DecodeError) as e:
        dec.decode(same_time.hello())       # another stream, not newer: refused
    assert e.value.kind == "hello" and dec.stream_id == 99 and dec.latest == 0


def test_an_older_streams_hello_is_taken_while_the_adopted_one_has_decoded_nothing():
    """Section 13: a stray hello of a newer stream, adopted, does not keep the client from its
    own server: until a packet of it decodes, another stream's hello is adopted too; once one
    has, an older stream's hello is refused (a replay)."""
    schema = pose_schema()
    w = World(schema)
    own = qc.SnapshotEncoder(schema, stream_id=1)
    stray = qc.SnapshotEncoder(schema, stream_id=2)          # started later: newer
    dec = qc.SnapshotDecoder.from_hello(schema, own.hello())
    assert dec.decode(own.encode(0, w.tick())).seq == 0
    assert dec.decode(stray.hello()) is None and dec.stream_id == 2 and dec.latest is None
    with pytest.raises(qc.DecodeError) as e:
        dec.decode(own.encode(1, w.tick()))                 # its own server's packet: check
    assert e.value.kind == "check"
    assert dec.decode(own.hello()) is None and dec.stream_id == 1    # older, but taken
    assert dec.decode(own.encode(2, w.tick())).seq == 2     # (in full: no ack came back)
    older = qc.SnapshotEncoder(schema, stream_id=3)
    older._started_us = own.started - 1
    older._hello = None
    with pytest.raises(qc.DecodeError) as e:
        dec.decode(older.hello())                             # now a packet has decoded: refused
    assert e.value.kind == "hello" and dec.stream_id == 1 and dec.latest == 2


def test_reassembly_bounds_the_number_of_chunks_too():
    """1-byte last chunks of many claimed packets (a sender that knows the stream's key): each
    chunk counts as a full one, so at most 256 * max_datagram / chunk size are held."""
    schema = pose_schema()
    budget = 100
    enc = qc.SnapshotEncoder(schema, max_datagram=budget)
    dec = qc.SnapshotDecoder.from_hello(schema, enc.hello())
    for i in range(5000):
        body = struct.pack("<HBBI", i & 0xFFFF, 255, 255, i) + b"\x01"
        assert dec.decode(body + struct.pack("<I", crc32c(body, enc._seed_f))) is None
    chunks = sum(len(p) for p in dec._frag.parts.values())
    assert chunks <= 256 * budget // (budget - 12) and len(dec._frag.parts) == chunks


def test_held_number_decoded_again():
    """A packet decoded under a number already held: the same codes (a duplicate, or the same
    snapshot resent against another baseline) keep the held snapshot; other codes (a server
    whose numbers started over) make the number serve as nothing (DecoderState's compare of
    the two, done in C for snapshots of one class and schema)."""
    schema = pose_schema()
    world = World(schema, n=40, moving=1.0)
    snaps = [world.tick() for _ in range(4)]
    enc = qc.SnapshotEncoder(schema, stream_id=77)
    dec = qc.SnapshotDecoder.from_hello(schema, enc.hello())
    packets = [enc.encode(k, s) for k, s in enumerate(snaps[:3])]
    for p in packets:
        dec.decode(p)
    enc.ack(0)
    again = enc.encode(2, snaps[2])     # the same snapshot, now against baseline 0
    assert again != packets[2]
    held = dec.get(2)
    for p in (packets[2], again):
        assert dec.decode(p) == snaps[2]
        assert dec.get(2) is held
    other = qc.SnapshotEncoder(schema, stream_id=77)
    assert dec.decode(other.encode(2, snaps[3])) == snaps[3]
    assert dec.get(2) is None and 2 not in dec.held


def _two_hundred_fragments(schema):
    """An encoder at max_datagram 64 and a world whose full packets take about 200 fragments:
    two of them pass the reassembly's bound of 256 * max_datagram."""
    enc = qc.SnapshotEncoder(schema, max_datagram=64, history=8)
    w = World(schema, n=800, moving=1.0)
    return enc, w


def test_an_older_packets_duplicated_fragments_never_push_out_the_newer_packet():
    """Section 12, rule 4: a link that delivers every tick's fragments interleaved with the tick
    before's again. Two partial packets pass the bound; the older one's chunks give way (before:
    the partial begun earliest went, the newer packet's, and no tick after the first decoded)."""
    schema = pose_schema()
    enc, w = _two_hundred_fragments(schema)
    dec = qc.SnapshotDecoder.from_hello(schema, enc.hello())
    last, got = [], []
    for t in range(6):
        dgs = enc.encode_datagrams(t, w.tick())        # (no acks: each in full)
        assert len(dgs) > 158
        for i in range(max(len(dgs), len(last))):
            for d in dgs[i:i + 1] + last[i:i + 1]:
                v = dec.decode(d)
                if v is not None:
                    got.append(v.seq)
                assert dec._frag.held <= 256 * 64
        last = dgs
    assert got == [0, 1, 2, 3, 4, 5]


def test_a_fragment_of_the_oldest_packet_is_not_kept_when_it_needs_the_room():
    """The fragment's own partial packet ranks with the others: when it is the oldest, it is
    dropped and the chunk not kept, the newer packet kept whole; with no packet decoded yet,
    the partial packets begun earliest go first (a new one last)."""
    schema = pose_schema()
    enc, w = _two_hundred_fragments(schema)
    dec = qc.SnapshotDecoder.from_hello(schema, enc.hello())
    p0, p1, p2 = (enc.encode_datagrams(t, w.tick()) for t in range(3))
    # no packet decoded: all rank equal; 0's chunks, then 1's: 0 (begun first) makes room for 1
    for d in p0[:200] + p1[:200]:
        assert dec.decode(d) is None
    assert {k[0] for k in dec._frag.parts} == {1}
    for d in p1[200:]:
        v = dec.decode(d)
    assert v.seq == 1 and dec.latest == 1               # the newer one completed, decoded
    # now latest is 1: packet 0 ranks oldest (behind by 1), 2 newest (by -1)
    for d in p2[:200]:
        assert dec.decode(d) is None
    held = dec._frag.held
    for d in p0:                                        # 0's chunks: never room made for them
        assert dec.decode(d) is None
    assert {k[0] for k in dec._frag.parts} <= {0, 2} and dec._frag.held <= 256 * 64
    assert len(dec._frag.parts[next(k for k in dec._frag.parts if k[0] == 2)]) == 200
    for d in p2[200:]:
        v = dec.decode(d)
    assert v is not None and v.seq == 2 and held > 0
