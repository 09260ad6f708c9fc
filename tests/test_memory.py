"""Memory: no growth over many encode/decode cycles of every public path (error paths
included), and huge requests that fail fast instead of allocating without bound.

The default suite runs 20k cycles per path and checks Python allocations
(``sys.getallocatedblocks``, which a leaked reference or an unreleased buffer shows) and the
process RSS (which a leaked C ``malloc`` shows). ``QUANTCODEC_SOAK=1 pytest -m slow
tests/test_memory.py -s`` runs the long version: a million cycles per path and a 10**8-element
array, and prints the figures.
"""

import gc
import os
import pickle
import sys
import tracemalloc

import numpy as np
import pytest

import quantcodec as qc
from quantcodec.tools.examples import player_state
from quantcodec.conformance import _seal

SOAK = os.environ.get("QUANTCODEC_SOAK", "") not in ("", "0")
# AddressSanitizer keeps freed memory in quarantine (256 MB by default): RSS grows under it
# whatever the code does, so only the Python block counts are checked there.
ASAN = "asan" in os.environ.get("LD_PRELOAD", "") or "ASAN_OPTIONS" in os.environ
soak = pytest.mark.skipif(not SOAK, reason="long run: set QUANTCODEC_SOAK=1")


def rss():
    """Resident set size in bytes (Linux), or None where /proc is not available or under ASan."""
    if ASAN:
        return None
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def growth(cycle, n, warmup=2000):
    """(allocated blocks, RSS bytes) gained over ``n`` calls of ``cycle(i)`` after a warm-up."""
    for i in range(warmup):
        cycle(i)
    gc.collect()
    b0, r0 = sys.getallocatedblocks(), rss()
    for i in range(n):
        cycle(i)
    gc.collect()
    b1, r1 = sys.getallocatedblocks(), rss()
    return b1 - b0, (None if r0 is None else r1 - r0)


def _schema():
    return player_state([("h", qc.Half()), ("g", qc.Grid(64.0, 20, 16)), ("n", qc.UnitVector(11))])


def _columns(n, seed=0):
    r = np.random.default_rng(seed)
    vel = r.uniform(-20, 20, (n, 3))
    vel[::2] = 0.0
    return {"position": r.uniform(-1000, 1000, (n, 3)), "rotation": r.normal(size=(n, 4)), "velocity": vel,
            "yaw": r.uniform(0, 6.28, n), "health": r.integers(0, 256, n), "state": r.integers(0, 4, n),
            "grounded": r.random(n) < 0.5, "h": r.normal(size=n), "g": r.uniform(-1e6, 1e6, n),
            "n": r.normal(size=(n, 3))}


# ----------------------------------------------------------------------- the cycles, by area

def codec_cycle():
    codecs = [qc.Bounded(-2, 2, 12), qc.Fixed(0.01, 40), qc.Angle(10, signed=True), qc.PowerCurve(50, 2, 10),
              qc.Half(), qc.Grid(1.0, 30, 20), qc.UInt(8), qc.Int(64), qc.Bool(), qc.Enum(["a", "b", "c"]),
              qc.Quat(9), qc.UnitVector(12), qc.Vector(qc.Bounded(-1, 1, 8), qc.UInt(4)),
              qc.NearlyZero(qc.Vector(qc.Bounded(-1, 1, 8), qc.Bounded(-1, 1, 8)), 0.1)]
    values = [0.5, -3.25, 1.0, -20.0, 1.5, 1e5, 7, -5, True, "b", (0.1, 0.2, 0.3, 0.9), (0.0, 0.6, 0.8),
              (0.5, 3), (0.5, -0.5)]
    arrays = [np.linspace(-3, 3, 64), np.linspace(-1e3, 1e3, 64), np.linspace(-7, 7, 64), np.linspace(-60, 60, 64),
              np.linspace(-1e5, 1e5, 64), np.linspace(-1e9, 1e9, 64), np.arange(64) % 256, np.arange(-32, 32),
              np.arange(64) % 2, np.arange(64) % 3, np.random.default_rng(1).normal(size=(16, 4)),
              np.random.default_rng(2).normal(size=(16, 3)), np.stack([np.linspace(-1, 1, 16), np.arange(16) % 16], 1),
              np.random.default_rng(3).uniform(-1, 1, (16, 2))]
    outs = [np.empty(c.quantize(a).shape, dtype=c.code_dtype) for c, a in zip(codecs, arrays)]
    spec_codecs = [qc.codec_from_spec(c.spec()) for c in codecs]
    assert spec_codecs == codecs

    def cycle(i):
        k = i % len(codecs)
        c, v, a = codecs[k], values[k], arrays[k]
        code = c.quantize(v)
        c.dequantize(code)
        c.roundtrip(v)
        c.valid(code)
        codes = c.quantize(a, out=outs[k])
        c.dequantize(codes)
        c.roundtrip(a)
        c.valid(codes)
        if i % 50 == 0:
            pickle.loads(pickle.dumps(c))
            qc.codec_from_spec(c.spec())
            repr(c)
            hash(c)
        # error paths: a DecodeError / RangeError must release what it holds
        try:
            c.dequantize(np.full(codes.shape, -1, dtype=np.int64))      # invalid but for Int
        except qc.DecodeError:
            pass
        try:
            c.dequantize(2**70)
        except (qc.DecodeError, TypeError, ValueError):
            pass
        if k == 10:
            try:
                c.quantize(np.zeros((3, 4)))
            except qc.RangeError:
                pass
    return cycle


def bitstream_cycle():
    codes = np.arange(200, dtype=np.uint32) * 37 % 8192
    out = np.empty(200, dtype=np.uint32)
    w = qc.BitWriter()

    def cycle(i):
        w.reset()
        w.write(i & 0xFFFF, 16)
        w.write_signed(-(i & 0xFF), 9)
        w.write_bool(i & 1)
        w.write_array(codes, 13)
        w.align()
        data = w.getvalue()
        m = memoryview(w)
        m.release()
        r = qc.BitReader(data)
        r.read(16)
        r.read_signed(9)
        r.read_bool()
        r.read_array(200, 13, out=out)
        r.align()
        r.finish()
        qc.unpack(qc.pack(codes, 13), 200, 13)
        try:
            r.read(8)
        except qc.DecodeError:
            pass
        try:
            qc.unpack(data[:10], 200, 13)
        except qc.DecodeError:
            pass
        try:
            w.write(1 << 20, 8)
        except ValueError:
            pass
        try:
            qc.pack(codes, 3)
        except ValueError:
            pass
    return cycle


def schema_cycle():
    s = _schema()
    strict = qc.Schema("S", [("v", qc.Bounded(-1, 1, 8))], strict=True)
    cols = _columns(32)
    recs = [{k: (tuple(v[i]) if v.ndim == 2 else v[i].item()) for k, v in cols.items()} for i in range(32)]
    many = s.encode_many(cols)
    code_cols = s.quantize_many(cols)

    def cycle(i):
        rec = recs[i % 32]
        data = s.encode(rec)
        s.decode(data)
        codes = s.quantize(rec)
        s.dequantize(codes)
        s.roundtrip(rec)
        s.encode_codes(codes)
        s.decode_codes(bytearray(data))
        s.valid(codes)
        if i % 4 == 0:
            s.quantize_many(cols)
            s.dequantize_many(code_cols)
            s.encode_many(cols)
            s.decode_many(memoryview(many), 32)
        if i % 100 == 0:
            s.fingerprint
            qc.Schema.from_json(s.to_json())
            pickle.loads(pickle.dumps(s))
            s.describe()
        try:
            s.decode(data[:-1])
        except qc.DecodeError:
            pass
        try:
            s.decode_many(many[:-3], 32)
        except qc.DecodeError:
            pass
        try:
            s.encode({"position": (0, 0, 0)})
        except qc.SchemaError:
            pass
        try:
            strict.encode({"v": 2.0})
        except qc.RangeError:
            pass
    return cycle


def snapshot_cycle():
    s = _schema()
    n = 24
    ids = np.arange(n, dtype=np.uint64) * 5
    frames = [s.snapshot(ids[(t % 3):], {k: v[(t % 3):] for k, v in _columns(n, seed=t).items()}) for t in range(8)]
    # a small datagram budget: the full packets go out in fragments, reassembled by the decoder
    enc = qc.SnapshotEncoder(s, history=16, max_datagram=96)
    dec = qc.SnapshotDecoder(s)
    assert dec.decode(enc.hello()) is None
    state = {"seq": 0}

    def refused(data):
        try:
            dec.decode(data)
        except qc.DecodeError:
            pass

    def cycle(i):
        seq = state["seq"] = (state["seq"] + 1) % 65536
        snap = frames[i % 8]
        dgrams = enc.encode_datagrams(seq, snap)
        for d in dgrams:
            view = dec.decode(d)
        enc.ack(dec.latest)
        if i % 10 == 0:
            view.records()
            view.columns
            s.snapshot(ids, _columns(n, seed=i % 8))
            dec.decode(enc.hello())                 # the hello again: ignored
        if len(dgrams) > 1:
            body = b"".join(d[8:-4] for d in dgrams)
            dec.decode(dgrams[0])                   # a partial packet, given up 16 ticks later
            refused(dgrams[1][:-1] + b"\x00")        # a damaged fragment
        else:
            body = dgrams[0][:-4]
        refused(dgrams[0][:-2])                     # a damaged datagram: its check fails
        refused(dgrams[0] + b"\x01")
        refused(_seal(enc, body[:-2]))              # damaged packets that pass the check
        refused(_seal(enc, body + b"\x01"))
    return cycle


CYCLES = {"codecs": codec_cycle, "bitstream": bitstream_cycle, "schema": schema_cycle, "snapshot": snapshot_cycle}

# Allowances: a few hundred blocks for interpreter caches (method caches, interned strings,
# warnings registries), 2 MiB of RSS for allocator noise. A leak of one small object per
# cycle is 20k blocks; a C leak of 100 bytes per cycle is 2 MB.
MAX_BLOCKS = 500
MAX_RSS = 2 << 20


@pytest.mark.parametrize("area", list(CYCLES))
def test_no_growth_over_20k_cycles(area):
    blocks, grown = growth(CYCLES[area](), 20_000)
    assert blocks < MAX_BLOCKS, f"{area}: {blocks} Python blocks gained over 20k cycles"
    if grown is not None:
        assert grown < MAX_RSS, f"{area}: RSS grew by {grown / 2**20:.1f} MiB over 20k cycles"


def test_growth_probe_sees_a_leak():
    """The probe is not vacuous: a cycle that keeps one float per call is caught."""
    kept = []
    blocks, _ = growth(lambda i: kept.append(float(i) + 0.5), 20_000, warmup=10)
    assert blocks >= 10_000


@soak
@pytest.mark.slow
@pytest.mark.parametrize("area", list(CYCLES))
def test_no_growth_over_a_million_cycles(area):
    blocks, grown = growth(CYCLES[area](), 1_000_000, warmup=20_000)
    print(f"\n{area}: 1e6 cycles: {blocks:+d} blocks, RSS {grown if grown is None else grown / 2**20:+.2f} MiB")
    assert blocks < MAX_BLOCKS
    if grown is not None:
        assert grown < MAX_RSS


# ------------------------------------------------------------------------------ huge requests

def peak_during(fn):
    """Peak of the Python-traced allocations (NumPy's arrays included) while ``fn`` runs, and
    the exception it raised."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        err = None
        try:
            fn()
        except Exception as e:          # noqa: BLE001 - returned for the caller to check
            err = e
        return tracemalloc.get_traced_memory()[1] - base, err
    finally:
        tracemalloc.stop()


def test_bitreader_asked_for_2_to_the_40_values():
    r = qc.BitReader(b"\xff" * 100)
    for bits in (1, 8, 64):
        peak, err = peak_during(lambda: r.read_array(2**40, bits))
        assert isinstance(err, qc.DecodeError) and "past the end" in str(err) and "at bit 0" in str(err)
        assert peak < 1 << 20
        assert r.bit_position == 0
    # 0-bit values need no data: 2**40 of them is a 4 TiB array, which the allocator refuses
    # (tracemalloc counts NumPy's failed attempt, so the resident size is checked instead).
    # AddressSanitizer aborts on such a request unless told to return NULL.
    if ASAN and "allocator_may_return_null=1" not in os.environ.get("ASAN_OPTIONS", ""):
        return
    r0 = rss()
    with pytest.raises(MemoryError):
        r.read_array(2**40, 0)
    with pytest.raises(MemoryError):
        qc.unpack(b"", 2**40, 0)
    assert r0 is None or rss() - r0 < 64 << 20
    with pytest.raises(ValueError, match="too large"):
        r.read_array(2**64, 8)


def test_unpack_2_to_the_40_values():
    peak, err = peak_during(lambda: qc.unpack(b"\x00" * 1000, 2**40, 8))
    assert isinstance(err, qc.DecodeError) and "1000 bytes" in str(err)
    assert peak < 1 << 20
    with pytest.raises(ValueError, match="too large"):
        qc.unpack(b"", 2**63, 8)
    with pytest.raises(ValueError, match=">= 0"):
        qc.unpack(b"", -1, 8)


def test_decode_many_claiming_2_to_the_40_records():
    s = _schema()
    many = s.encode_many(_columns(4))
    peak, err = peak_during(lambda: s.decode_many(many, 2**40))
    assert isinstance(err, qc.DecodeError) and "too short" in str(err)
    assert peak < 1 << 20


def test_snapshot_packet_claiming_2_to_the_31_entities():
    """A full packet (no baseline) whose count of new entities is 2**31 (the layout of
    docs/wire-format.md: 16-bit seq, a 0 bit for no baseline, the count in Exp-Golomb k=0)."""
    s = _schema()
    for e, tail in ((31, 16), (31, 4096), (40, 64)):
        w = qc.BitWriter()
        w.write(0, 16)
        w.write(0, 1)
        w.write(1 << e, e + 1)
        w.write(0, e)
        enc = qc.SnapshotEncoder(s)
        dec = qc.SnapshotDecoder.from_hello(s, enc.hello())
        pkt = _seal(enc, w.getvalue() + bytes(tail))        # so that it reaches the packet decoder
        peak, err = peak_during(lambda: dec.decode(pkt))
        assert isinstance(err, qc.DecodeError) and err.kind == "malformed", err
        assert peak < 1 << 20
        assert dec.latest is None
    # and through a decoder that holds state: still nothing allocated, nothing changed
    enc = qc.SnapshotEncoder(s)
    ok = enc.encode(9, s.snapshot(np.arange(4, dtype=np.uint64), _columns(4)))
    dec = qc.SnapshotDecoder.from_hello(s, enc.hello())
    dec.decode(ok)
    w = qc.BitWriter()
    w.write(10, 16)
    w.write(0, 1)
    w.write(1 << 31, 32)
    w.write(0, 31)
    pkt = _seal(enc, w.getvalue() + bytes(64))
    peak, err = peak_during(lambda: dec.decode(pkt))
    assert isinstance(err, qc.DecodeError) and err.kind == "malformed" and peak < 1 << 20
    assert dec.latest == 9 and dec.held == (9,)


@soak
@pytest.mark.slow
def test_array_of_10_to_the_8_elements():
    """10**8 floats (800 MB in, 400 MB of codes out): works, in one pass, with no copy of the
    input and the output preallocated (peak RSS about the two arrays)."""
    n = 10**8
    x = np.empty(n)
    x[: n // 2] = 1.5
    x[n // 2:] = -1.5
    c = qc.Bounded(-2, 2, 16)
    out = np.empty(n, dtype=np.uint32)
    r0 = rss()
    c.quantize(x, out=out)
    r1 = rss()
    assert out[0] == c.quantize(1.5) and out[-1] == c.quantize(-1.5)
    packed = qc.pack(out, 16)
    assert len(packed) == 2 * n
    back = qc.unpack(packed, n, 16, out=out)
    assert back[n // 2] == c.quantize(-1.5)
    print(f"\n1e8 elements: quantize into out= grew RSS by {0 if r0 is None else (r1 - r0) / 2**20:.1f} MiB")


# -- the garbage collector: snapshots stay out of its walks ---------------------------------------
#
# A server holds history x clients snapshots (64,000 for 1,000 clients); tracked, every full
# collection walked them all (29-43 ms a collection for bench_views' server, --part 7). None can
# be part of a reference cycle (quantcodec/_delta.pyx, _untrack), so they are made untracked and
# reference counting frees them.

def _gc_world(schema, n=30, seed=0, t=0):
    return qc.Snapshot(schema, np.arange(n, dtype=np.uint64) * 3 + 1, _columns(n, seed + t))


def test_snapshots_are_untracked_on_every_path():
    schema = _schema()
    a = _gc_world(schema)
    made = {
        "Snapshot(...)": a,
        "schema.snapshot": schema.snapshot(a.ids, _columns(30)),
        "from_codes": qc.Snapshot.from_codes(schema, a.ids, a.codes),
        "pickle": pickle.loads(pickle.dumps(a)),
    }
    enc = qc.SnapshotEncoder(schema, 8)
    dec = qc.SnapshotDecoder.from_hello(schema, enc.hello())
    made["decoded"] = dec.decode(enc.encode(0, a))
    enc.ack(0)
    b = _gc_world(schema, seed=1)
    made["decoded against a baseline"] = dec.decode(enc.encode(1, b))
    for name, s in made.items():
        assert isinstance(s, qc.Snapshot), name
        assert not gc.is_tracked(s), name
    # a view decoded against a baseline with the same entities keeps which rows changed: a weak
    # reference and bytes, untracked too
    d = made["decoded against a baseline"]._diff
    assert d is not None and d[0]() is made["decoded"]
    assert not gc.is_tracked(d) and not gc.is_tracked(d[0])


def test_a_server_and_its_clients_views_are_untracked():
    schema = _schema()
    for kw, interest in (({}, None), ({}, "half"), ({"budget": 300}, "half")):
        server = qc.StreamServer(schema, history=8, **kw)
        clients = {c: qc.StreamClient(schema) for c in range(3)}
        for c in clients:
            server.connect(c)
        views = []
        for t in range(12):
            w = _gc_world(schema, t=t)
            want = None if interest is None else {c: w.ids[c::2] for c in clients}
            for c, dgs in server.send(t, w, interest=want).items():
                for d in dgs:
                    v = clients[c].receive(d)
                    if v is not None:
                        views.append(v)
                r = clients[c].reply()
                if r is not None:
                    server.receive(c, r)
        held = [v for p in server._peers.values() for v in p.encoder._state.sent.values()]
        assert len(held) >= 3 * 8 and len(views) >= 3 * 10, (kw, interest)
        assert not any(gc.is_tracked(v) for v in held + views), (kw, interest)


def test_a_user_subclass_stays_tracked():
    """A subclass may hold anything in its __dict__ (a cycle through itself): the collector
    keeps seeing it."""
    class Tagged(qc.Snapshot):
        pass
    schema = _schema()
    s = Tagged(schema, np.arange(4, dtype=np.uint64), _columns(4))
    assert gc.is_tracked(s)
    s.me = s
    r = __import__("weakref").ref(s)
    del s
    gc.collect()
    assert r() is None


def test_untracked_snapshots_are_freed_by_reference_counting():
    """With the collector disabled, a stream's views and the encoder's and decoder's windows are
    freed as they fall out; a decoder (which is part of a cycle with its state) and what its
    window holds go at the next collection, as before: nothing is leaked."""
    import weakref
    schema = _schema()
    was = gc.isenabled()
    gc.disable()
    try:
        enc = qc.SnapshotEncoder(schema, 4)
        dec = qc.SnapshotDecoder.from_hello(schema, enc.hello())
        refs = []
        for t in range(40):
            w = _gc_world(schema, t=t)
            v = dec.decode(enc.encode(t, w))
            enc.ack(t)
            refs += [weakref.ref(w), weakref.ref(v)]
            del w, v
        alive = sum(r() is not None for r in refs)
        assert alive <= 4 * (4 * 2 - 1), alive   # (at most the windows: 2 x history - 1 each)
        del enc, dec
        gc.collect()
        assert all(r() is None for r in refs)
    finally:
        if was:
            gc.enable()


def test_untracked_class_refuses_what_is_not_a_snapshot_class():
    from quantcodec import _delta
    with pytest.raises(TypeError, match="SnapshotData subclass"):
        _delta._untracked_class(dict)


def test_windows_of_untracked_snapshots_are_untracked_until_a_tracked_one_comes():
    """The encoder's and decoder's windows (dicts seq -> snapshot) are not walked either while
    every snapshot in them is untracked; a user's subclass (tracked) makes the encoder's window
    tracked, so that a cycle through it is still collected."""
    import weakref

    class Tagged(qc.Snapshot):
        pass
    schema = _schema()
    enc = qc.SnapshotEncoder(schema, 8)
    dec = qc.SnapshotDecoder.from_hello(schema, enc.hello())
    for t in range(12):
        dec.decode(enc.encode(t, _gc_world(schema, t=t)))
        enc.ack(t)
    sent, held = enc._state.sent, dec._state.held
    assert len(sent) == 8 and len(held) >= 8
    assert not gc.is_tracked(sent) and not gc.is_tracked(held)
    w = _gc_world(schema, t=12)
    tagged = Tagged(schema, w.ids, _columns(30, 12))
    dec.decode(enc.encode(12, tagged))
    assert gc.is_tracked(sent) and not gc.is_tracked(held)
    tagged.encoder = enc                    # a cycle: enc -> its window -> tagged -> enc
    r = weakref.ref(tagged)
    del tagged, enc, sent
    gc.collect()
    assert r() is None


def test_a_disconnected_clients_state_goes_by_reference_counting():
    """What the server holds for a client is in no cycle: at disconnect its encoder goes at
    once, with the collector off, and the views of its window with the server's shared caches
    moving on (so gc.freeze(), which docs/views.md suggests once the clients are connected,
    keeps none of it alive)."""
    import weakref
    schema = _schema()
    was = gc.isenabled()
    gc.disable()
    try:
        server = qc.StreamServer(schema, history=8, budget=400)
        clients = {c: qc.StreamClient(schema) for c in "ab"}

        def tick(t):
            w = _gc_world(schema, t=t)
            interest = {c: w.ids[i::2] for i, c in enumerate(server.clients)}
            for c, dgs in server.send(t, w, interest=interest).items():
                for d in dgs:
                    clients[c].receive(d)
                r = clients[c].reply()
                if r is not None:
                    server.receive(c, r)
        for c in clients:
            server.connect(c)
        for t in range(10):
            tick(t)
        enc = server.encoder("a")
        refs = [weakref.ref(enc)] + [weakref.ref(v) for v in enc._state.sent.values()]
        assert len(refs) >= 6
        del enc
        assert all(r() is not None for r in refs)
        server.disconnect("a")
        assert refs[0]() is None
        # (the newest views are still in the packets of the server's PacketCache, shared by its
        # clients and bounded, and in the tick's ViewShare: they go as those move on)
        assert sum(r() is not None for r in refs) <= 4
        server._cache.clear()
        tick(10)
        assert all(r() is None for r in refs)
    finally:
        if was:
            gc.enable()
