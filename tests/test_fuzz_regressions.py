"""The fuzz targets (fuzz/fuzzlib.py) as regression tests: the seed corpus, every input the
fuzzer found that once broke an invariant (fuzz/regressions/<target>/), exhaustive bit flips
and truncations of real messages, and random bytes from hypothesis.

Invariants checked on every input (see fuzz/fuzzlib.py): the only exception a decoder raises on
bytes is DecodeError; what decodes is in range (valid codes, their exact dequantization, the
canonical encoding of those codes); BitReader and unpack agree bit for bit with a big-integer
oracle; a SnapshotDecoder is unchanged by a DecodeError (its stream, latest, held snapshots and
partial packets). The snapshot target takes datagrams, after the stream's hello: as they are
(damage is refused by the check), or sealed with the stream's check as a whole packet, a fragment
or a hello, so that the packet decoder, reassembly and the hello's parsing are reached too.
"""

import importlib.util
import pathlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import quantcodec as qc

FUZZ = pathlib.Path(__file__).resolve().parents[1] / "fuzz"
if not (FUZZ / "fuzzlib.py").exists():      # pragma: no cover - tests run without the source tree
    pytest.skip("fuzz/ is not beside tests/", allow_module_level=True)

_spec = importlib.util.spec_from_file_location("fuzzlib", FUZZ / "fuzzlib.py")
fuzzlib = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzzlib)

TARGETS = {"bitreader": fuzzlib.bitreader, "schema": fuzzlib.schema_decode, "snapshot": fuzzlib.snapshot_decode,
           "session": fuzzlib.session_receive}


def _files(sub):
    out = []
    for target in TARGETS:
        d = FUZZ / sub / target
        if d.is_dir():
            out += [(target, p) for p in sorted(d.iterdir()) if p.is_file()]
    return out


@pytest.mark.parametrize("target", list(TARGETS))
def test_seed_corpus(target):
    files = [p for t, p in _files("corpus") if t == target]
    assert len(files) >= 10, f"fuzz/corpus/{target} is missing (python fuzz/make_corpus.py)"
    for p in files:
        TARGETS[target](p.read_bytes())


REGRESSIONS = _files("regressions")


@pytest.mark.skipif(not REGRESSIONS, reason="no crash file recorded yet")
@pytest.mark.parametrize("target, path", REGRESSIONS, ids=[f"{t}/{p.name}" for t, p in REGRESSIONS])
def test_recorded_regressions(target, path):
    TARGETS[target](path.read_bytes())


# ------------------------------------------------------------------- inputs spelled out by hand

def test_bitreader_edges():
    br = fuzzlib.bitreader
    # (nops | buffer kind << 4), then (op, bits) pairs, then the message
    br(bytes([1, 0, 64]) + b"\xff" * 8)                 # a 64-bit read of exactly the data
    br(bytes([1, 0, 64]) + b"\xff" * 7)                 # one byte short: DecodeError, position kept
    br(bytes([3, 0, 3, 0, 64, 5, 0]) + b"\xff" * 9)     # a 64-bit read at bit 3, then finish
    br(bytes([2, 0, 5, 5, 0]) + b"\x1f")               # finish with 3 zero padding bits
    br(bytes([2, 0, 5, 5, 0]) + b"\x3f")               # finish with a set padding bit
    br(bytes([2, 3 | 7 << 3, 33, 5, 0]) + b"\xa5" * 29)   # read_array(7, 33) then finish
    br(bytes([1, 6 | 31 << 3, 64]) + b"\x01" * 248)    # unpack(31, 64) of exactly the data
    br(bytes([1, 6 | 31 << 3, 64]) + b"\x01" * 247)    # one byte short
    br(bytes([4 | 2 << 4, 1, 1, 4, 0, 1, 63, 2, 0]) + b"\x80" * 9)   # signed reads, memoryview
    for kind in range(5):
        br(bytes([2 | kind << 4, 0, 0, 3, 0]))           # zero-width reads of no data


def test_schema_edges():
    sd = fuzzlib.schema_decode
    player, everything, tiny = fuzzlib.schemas()
    # Tiny: one Bool bit; every byte value once, through each path
    for b in range(256):
        for op in range(4):
            sd(bytes([2 | op << 2, 1, b]))
    sd(bytes([2, 0]))                       # empty message
    sd(bytes([2 | 1 << 2, 7]) + b"\x7f")    # 7 records, 7 bits, padding clear
    sd(bytes([2 | 1 << 2, 7]) + b"\xff")    # 7 records, padding bit set
    # PlayerState with an invalid quaternion code and an Enum index of 4 cannot decode
    rec = {"position": (1.0, 2.0, 3.0), "rotation": (0.0, 0.0, 0.0, 1.0), "velocity": (0.0, 0.0, 0.0),
           "yaw": 1.0, "health": 5, "state": "run", "grounded": True}
    msg = bytearray(player.encode(rec))
    sd(bytes([0, 0]) + bytes(msg))
    for i in range(len(msg) * 8):
        m = bytearray(msg)
        m[i >> 3] ^= 1 << (i & 7)
        sd(bytes([0, 0]) + bytes(m))
        sd(bytes([0 | 2 << 2, 0]) + bytes(m))
    # the 0-bit Enum and the 64-bit fields of Everything
    recs = fuzzlib.sample_records(everything, np.random.default_rng(9), 3)
    for r in recs:
        m = everything.encode(r)
        for cut in range(len(m) + 2):
            sd(bytes([1, 0]) + (m[:cut] if cut <= len(m) else m + b"\x00" * (cut - len(m))))


RAW, SEALED, FRAGMENT, HELLO = (m << 2 for m in range(4))      # how snapshot_decode feeds the rest


def _every_cut_and_flip(target, head, msg):
    """``target(head + m)`` for ``msg`` itself, every prefix of it, it one byte longer (0 or 1)
    and every single bit of it flipped."""
    target(head + msg)
    for cut in range(len(msg)):
        target(head + msg[:cut])
    target(head + msg + b"\x00")
    target(head + msg + b"\x01")
    for bit in range(len(msg) * 8):
        m = bytearray(msg)
        m[bit >> 3] ^= 1 << (bit & 7)
        target(head + bytes(m))


def test_snapshot_every_bit_flip_and_truncation_of_real_packets():
    # each datagram as it is (damage refused by the check) and its bare packet sealed with the
    # stream's check (damage reaches the packet decoder)
    w = fuzzlib.world()
    sn = fuzzlib.snapshot_decode
    for i, dgram in enumerate(w.packets[:4]):
        state = min(i, 3)               # a decoder that holds the packet's baseline
        for mode, msg in ((RAW, dgram), (SEALED, dgram[:-4])):
            _every_cut_and_flip(sn, bytes([state | mode]), msg)


def test_snapshot_packets_out_of_order_and_without_baseline():
    w = fuzzlib.world()
    sn = fuzzlib.snapshot_decode
    for state in range(4):
        for dgram in w.packets:
            sn(bytes([state | RAW]) + dgram)
            sn(bytes([state | SEALED]) + dgram[:-4])


def test_snapshot_hellos_and_fragments():
    # the hello again, hellos of newer, older and other streams, damaged hellos; fragments of
    # the stream's packets, whole, damaged and inconsistent
    from quantcodec import _framing
    w = fuzzlib.world()
    sn = fuzzlib.snapshot_decode
    hellos = [w.hello[:-4]]
    for sid, started, history in ((1, w.STARTED + 5, 64), (w.STREAM_ID, w.STARTED + 5, 64),
                                  (2, w.STARTED - 5, 8), (3, w.STARTED + 9, 3)):
        e = qc.SnapshotEncoder(w.schema, history=history, stream_id=sid)
        e._started_us, e._hello = started, None
        hellos.append(e.hello()[:-4])
    other = qc.SnapshotEncoder(qc.Schema("Other", [("x", qc.UInt(3))]))
    hellos.append(other.hello()[:-4])
    for state in range(4):
        sn(bytes([state | RAW]) + w.hello)
        for body in hellos:
            sn(bytes([state | HELLO]) + body)
            for cut in (4, 46, 53, len(body) - 1):
                sn(bytes([state | HELLO]) + body[:cut])
            for at in (4, 5, 6, 8, 46, len(body) - 5):
                m = bytearray(body)
                m[at] ^= 0xFF
                sn(bytes([state | HELLO]) + bytes(m))
        for frags in (w.fragments[0], _framing.fragment(w.packets[1], 64, w.enc._seed_f)):
            assert len(frags) >= 2          # (the second: fragments of another budget)
            for f in frags:
                sn(bytes([state | RAW]) + f)
                sn(bytes([state | FRAGMENT]) + f[:-4])
                for at in (0, 2, 3, 4, 8):
                    m = bytearray(f[:-4])
                    m[at] ^= 0x5A
                    sn(bytes([state | FRAGMENT]) + bytes(m))
                sn(bytes([state | FRAGMENT]) + f[:-5])
        # the first fragment of packet 0 taken: the second completes it, or (damaged, sealed)
        # completes a packet that fails its check
        first, second = w.fragments[0]
        sn(bytes([state | 16 | RAW]) + second)
        sn(bytes([state | 16 | RAW]) + first)                   # a duplicate: pending
        sn(bytes([state | 16 | FRAGMENT]) + second[:-4])
        for at in (1, 8, 20, len(second) - 5):
            m = bytearray(second[:-4])
            m[at] ^= 0x10
            sn(bytes([state | 16 | FRAGMENT]) + bytes(m))


# ------------------------------------------------------------------------------- random bytes

_fast = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_fast
@given(st.binary(max_size=80))
def test_bitreader_random(data):
    fuzzlib.bitreader(data)


@_fast
@given(st.binary(min_size=2, max_size=64))
def test_schema_random(data):
    fuzzlib.schema_decode(data)


@_fast
@given(st.integers(0, 31), st.binary(max_size=96))
def test_snapshot_random(head, data):
    fuzzlib.snapshot_decode(bytes([head]) + data)


@_fast
@given(st.integers(0, 3), st.sampled_from([RAW, SEALED]), st.data())
def test_snapshot_mutated_packets(state, mode, data):
    w = fuzzlib.world()
    dgram = data.draw(st.sampled_from(w.packets))
    pkt = bytearray(dgram if mode == RAW else dgram[:-4])
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(pkt) - 1))
        pkt[i] = data.draw(st.integers(0, 255))
    fuzzlib.snapshot_decode(bytes([state | mode]) + bytes(pkt))


def _real_reply(state, keyed):
    """The reply the session's client of ``fuzzlib.session(upto)`` makes now, without its check."""
    server, client = fuzzlib.session((0, 1, 3, 5)[state], bool(keyed))
    client._due = True
    r = client.reply()
    return r[:-(8 if keyed else 4)]


ACK, REQUEST, OWN = (m << 2 for m in (1, 2, 3))     # how session_receive seals a reply's body


def test_session_every_bit_flip_and_truncation_of_real_replies():
    # each state's real reply (a hello request before any packet arrived, then acks), keyed and
    # not, sealed with the right check: every bit flipped, cut short, made longer
    se = fuzzlib.session_receive
    for keyed in (0, 16):
        for state in range(4):
            body = _real_reply(state, keyed)
            mode = REQUEST if body[0] == 0x48 else ACK
            _every_cut_and_flip(se, bytes([state | keyed | mode]), body)


def test_session_acks_of_the_clients_own_nonce():
    # rseq, latest and acks of every kind, flags 0 to 3: numbers never sent, a latest with no
    # flag, acks of packets the client never had (the client then refuses packets coded
    # against them, as baseline, and the session goes on)
    import struct
    se = fuzzlib.session_receive
    for keyed in (0, 16):
        for state in range(4):
            for flags in range(4):
                for rseq in (0, 1, 9, 2**31, 2**32 - 1):
                    for latest, acks in ((0, 0), (65530, 0), (65534, 0xFFFFFFFF), (5, 1), (65535, 3)):
                        se(bytes([state | keyed | OWN, flags]) + struct.pack("<IHI", rseq, latest, acks))


@_fast
@given(st.integers(0, 127), st.binary(max_size=64))
def test_session_random(head, data):
    fuzzlib.session_receive(bytes([head]) + data)


def test_the_session_checks_can_fail(monkeypatch):
    """A server or client that changed its state on a refusal, or a client view that is not the
    server's record, would be caught."""
    real_server, real_client = qc.StreamServer.receive, qc.StreamClient.receive

    def server_receive(self, client, datagram):
        if datagram != b"junk":
            return real_server(self, client, datagram)
        self._peers[client].hello_due = True        # changed, then refused
        raise qc.DecodeError("refused after a change", kind="check")
    monkeypatch.setattr(qc.StreamServer, "receive", server_receive)
    with pytest.raises(AssertionError, match="changed the server"):
        fuzzlib.session_receive(bytes([1]) + b"junk")
    monkeypatch.setattr(qc.StreamServer, "receive", real_server)

    def client_receive(self, datagram):
        if datagram != b"junk":
            return real_client(self, datagram)
        self._rseq += 1
        raise qc.DecodeError("refused after a change", kind="check")
    monkeypatch.setattr(qc.StreamClient, "receive", client_receive)
    with pytest.raises(AssertionError, match="changed the client's replies"):
        fuzzlib.session_receive(bytes([1 | 64]) + b"junk")
    monkeypatch.setattr(qc.StreamClient, "receive", real_client)

    real_view = qc.StreamServer.view
    def view(self, client, seq=None):
        v = real_view(self, client, seq)
        return None if v is None else qc.Snapshot._make(v.schema, v.ids[::-1].copy(), v.matrix[::-1].copy(), seq=v.seq)
    monkeypatch.setattr(qc.StreamServer, "view", view)
    with pytest.raises(AssertionError, match="differs from the server's record"):
        fuzzlib.session_receive(bytes([2]) + b"junk")


def test_the_checks_can_fail():
    """The invariants are not vacuous: a decoder that returned an out-of-range value, a wrong
    bit, or changed state on an error would be caught."""
    b = qc.Bounded(-1, 1, 8)
    with pytest.raises(AssertionError):
        fuzzlib.check_value(b, 1.5)
    with pytest.raises(AssertionError):
        fuzzlib.check_column(qc.Quat(9), np.array([[1.0, 1.0, 0.0, 0.0]]), 1)
    with pytest.raises(AssertionError):
        fuzzlib.check_column(qc.UInt(4), np.array([16], dtype=np.uint32), 1)
    with pytest.raises(AssertionError):
        fuzzlib.check_value(qc.Half(), 0.1)          # not a float16 value
    with pytest.raises(AssertionError):
        fuzzlib.check_value(qc.PowerCurve(50, 2, 10), -50.5)
    with pytest.raises(AssertionError):
        fuzzlib.check_value(qc.Enum(["a"]), "b")


def test_corpus_generator_seeds_pass():
    """fuzz/make_corpus.py still runs against the current API, and every seed it makes from
    real encodes passes its target (the stored corpus may lag behind a wire-format change; it
    only seeds the fuzzer: regenerate it with python fuzz/make_corpus.py)."""
    spec = importlib.util.spec_from_file_location("make_corpus", FUZZ / "make_corpus.py")
    mc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mc)
    for target, make in mc.TARGETS.items():
        seeds = [bytes(x) for x in make()]
        assert len(seeds) >= 10
        for seed in seeds:
            TARGETS[target](seed)
