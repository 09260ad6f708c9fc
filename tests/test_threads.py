"""Threads: the array and batch paths release the GIL, shared codecs and schemas are safe, and
the stateful objects (BitWriter, BitReader, snapshot encoders and decoders) either serialize
concurrent calls or refuse them with a clear RuntimeError, never corrupt. docs/threads.md has
the rules; bench/bench_threads.py measures the speedup of two threads over one.
"""

import contextlib
import sys
import threading
import time

import numpy as np
import pytest

import quantcodec as qc
from quantcodec.tools.examples import player_state, player_state_columns

GIL = getattr(sys, "_is_gil_enabled", lambda: True)()
needs_gil = pytest.mark.skipif(not GIL, reason="no GIL to release (free-threaded build)")


# ------------------------------------------------------------------ does a call release the GIL?

@contextlib.contextmanager
def _no_forced_switches():
    """With a 5 s switch interval a thread holding the GIL keeps it (every probe below holds it
    for far less than 5 s in all): another Python thread can run only while the holder has
    released it (a nogil section, a sleep, a blocking wait)."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(5.0)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def other_thread_progresses(fn, tries=30):
    """Whether a spinning Python thread makes progress while ``fn()`` runs.

    The spinner hands the GIL straight back after each step (``sleep(0)``), so the main thread
    never waits for it; with forced switches off, the spinner can step during ``fn()`` only if
    ``fn`` releases the GIL. Up to ``tries`` calls are made (the spinner must also be scheduled
    on a CPU during the release); a call that never releases the GIL fails all of them.
    """
    state = {"n": 0, "stop": False}

    def spin():
        while not state["stop"]:
            state["n"] += 1
            time.sleep(0)

    t = threading.Thread(target=spin, daemon=True)
    with _no_forced_switches():
        t.start()
        try:
            while state["n"] < 3:
                time.sleep(0.001)
            for _ in range(tries):
                before = state["n"]
                fn()
                if state["n"] != before:
                    return True
            return False
        finally:
            state["stop"] = True
            t.join()


def _busy_python(n=200_000):
    x = 0
    for i in range(n):
        x += i
    return x


@needs_gil
def test_the_probe_can_fail():
    """A call that holds the GIL (Python bytecode, a C loop that never releases it) shows no
    progress of the other thread: the probe below is not vacuous."""
    assert not other_thread_progresses(_busy_python, tries=3)
    assert not other_thread_progresses(lambda: sum(range(3_000_000)), tries=3)
    assert other_thread_progresses(lambda: time.sleep(0.002))


N = 4_000_000
rng = np.random.default_rng(11)
X = rng.uniform(-3, 3, N)


def _codec_calls():
    b = qc.Bounded(-2, 2, 16)
    codes = b.quantize(X)
    out_c = np.empty(N, dtype=np.uint32)
    out_f = np.empty(N)
    q = qc.Quat(9)
    quats = rng.normal(size=(N // 8, 4))
    qcodes = q.quantize(quats)
    u = qc.UnitVector(12)
    vecs = rng.normal(size=(N // 8, 3))
    v = qc.Vector(qc.Bounded(-2, 2, 12), qc.PowerCurve(3, 2, 10), qc.Angle(12))
    v3 = X[: 3 * (N // 8)].reshape(-1, 3).copy()
    nz = qc.NearlyZero(qc.Bounded(-2, 2, 12), 0.5)
    g = qc.Grid(1.0, 24, 16)
    h = qc.Half()
    return {
        "Bounded.quantize": lambda: b.quantize(X, out=out_c),
        "Bounded.dequantize": lambda: b.dequantize(codes, out=out_f),
        "Bounded.roundtrip": lambda: b.roundtrip(X, out=out_f),
        "Quat.quantize": lambda: q.quantize(quats),
        "Quat.dequantize": lambda: q.dequantize(qcodes),
        "UnitVector.roundtrip": lambda: u.roundtrip(vecs),
        "Vector.quantize": lambda: v.quantize(v3),
        "NearlyZero.quantize": lambda: nz.quantize(X),
        "Grid.roundtrip": lambda: g.roundtrip(X),
        "Half.quantize": lambda: h.quantize(X),
    }


@needs_gil
@pytest.mark.parametrize("name", list(_codec_calls()))
def test_codec_array_paths_release_the_gil(name):
    assert other_thread_progresses(_codec_calls()[name]), f"{name} holds the GIL"


@needs_gil
def test_bitstream_array_paths_release_the_gil():
    codes = (X * 1000).astype(np.int64) & 0x1FFF
    data = qc.pack(codes, 13)
    out = np.empty(N, dtype=np.uint32)
    assert other_thread_progresses(lambda: qc.pack(codes, 13))
    assert other_thread_progresses(lambda: qc.unpack(data, N, 13, out=out))

    def write():
        w = qc.BitWriter()
        w.write_array(codes, 13)

    assert other_thread_progresses(write)
    assert other_thread_progresses(lambda: qc.BitReader(data).read_array(N, 13, out=out))


def _columns(n, seed=3, shift=0.0):
    return player_state_columns(n, seed, shift)


@needs_gil
def test_schema_batches_release_the_gil():
    s = player_state()
    n = 200_000
    cols = _columns(n)
    codes = s.quantize_many(cols)
    data = s.encode_many(cols)
    assert other_thread_progresses(lambda: s.quantize_many(cols))
    assert other_thread_progresses(lambda: s.dequantize_many(codes))
    assert other_thread_progresses(lambda: s.encode_many(cols))
    assert other_thread_progresses(lambda: s.decode_many(data, n))


@needs_gil
def test_snapshot_encode_and_decode_of_a_big_scene_release_the_gil():
    s = player_state()
    n = 200_000
    ids = np.arange(n, dtype=np.uint64) * 3 + 1
    snap1 = s.snapshot(ids, _columns(n))
    snap2 = s.snapshot(ids, _columns(n, shift=0.5))
    enc = qc.SnapshotEncoder(s)
    dec = qc.SnapshotDecoder.from_hello(s, enc.hello())
    full = enc.encode(1, snap1)
    enc.ack(1)
    delta = enc.encode(2, snap2)
    dec.decode(full)
    assert other_thread_progresses(lambda: s.snapshot(ids, _columns(n)))
    assert other_thread_progresses(lambda: enc.encode(2, snap2), tries=10)
    assert other_thread_progresses(lambda: dec.decode(full), tries=10)
    assert other_thread_progresses(lambda: dec.decode(delta), tries=10)


# ------------------------------------------------------------- shared objects under 8 threads

def _hammer(work, nthreads=8, rounds=30):
    """Run ``work(thread_index, round)`` from ``nthreads`` threads started together; re-raise the
    first failure."""
    barrier = threading.Barrier(nthreads)
    errors = []

    def run(i):
        try:
            barrier.wait()
            for r in range(rounds):
                work(i, r)
        except BaseException as e:      # noqa: BLE001 - handed to the main thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_shared_codecs_and_schema_from_eight_threads():
    codecs = [qc.Bounded(-2, 2, 16), qc.Quat(9), qc.UnitVector(12), qc.PowerCurve(50, 2, 10), qc.Half(),
              qc.Vector(qc.Bounded(-2, 2, 12), qc.Fixed(0.01, 12)), qc.NearlyZero(qc.Bounded(-2, 2, 12), 0.5)]
    s = player_state()
    inputs, expected = [], []
    for t in range(8):
        r = np.random.default_rng(100 + t)
        xs = [r.uniform(-3, 3, 20_000), r.normal(size=(5_000, 4)), r.normal(size=(5_000, 3)),
              r.uniform(-60, 60, 20_000), r.normal(scale=1e3, size=20_000), r.uniform(-3, 3, (10_000, 2)),
              r.uniform(-3, 3, 20_000)]
        cols = _columns(3_000, seed=200 + t)
        recs = [{k: (tuple(v[i]) if v.ndim == 2 else v[i].item()) for k, v in cols.items()} for i in range(20)]
        inputs.append((xs, cols, recs))
        expected.append(([c.quantize(x) for c, x in zip(codecs, xs)],
                         [c.roundtrip(x) for c, x in zip(codecs, xs)],
                         s.encode_many(cols), [s.encode(rec) for rec in recs],
                         [c.quantize(tuple(x[1]) if x.ndim == 2 else float(x[1])) for c, x in zip(codecs, xs)]))
    dq = s.decode_many(expected[0][2], 3_000)

    def work(t, r):
        xs, cols, recs = inputs[t]
        want_q, want_rt, want_many, want_recs, want_one = expected[t]
        k = (t + r) % len(codecs)
        c = codecs[k]
        assert np.array_equal(c.quantize(xs[k]), want_q[k])
        assert np.array_equal(c.roundtrip(xs[k]), want_rt[k], equal_nan=True)
        assert np.array_equal(c.dequantize(want_q[k]), want_rt[k], equal_nan=True)
        one = xs[k][1]
        assert c.quantize(tuple(one) if one.ndim else float(one)) == want_one[k]
        if r % 3 == 0:
            assert s.encode_many(cols) == want_many
            back = s.decode_many(expected[0][2], 3_000)
            assert all(np.array_equal(back[f], dq[f]) for f in dq)
        rec = recs[r % len(recs)]
        assert s.encode(rec) == want_recs[r % len(recs)]
        assert s.decode(want_recs[r % len(recs)]) == s.roundtrip(rec)
        packed = qc.pack(want_q[0], 16)
        assert np.array_equal(qc.unpack(packed, len(want_q[0]), 16), want_q[0])

    _hammer(work)


def test_schema_clamp_counts_from_eight_threads():
    s = qc.Schema("C", [("v", qc.Bounded(-1, 1, 8)), ("u", qc.UInt(8))])
    s.reset_clamped()
    batch = {"v": np.array([0.0, 5.0, -5.0, 0.5]), "u": np.array([1, 2, 3, 4])}

    def work(t, r):
        s.encode({"v": 2.0, "u": 1})
        s.encode_many(batch)

    _hammer(work, rounds=200)
    if GIL:
        assert s.clamped == {"v": 8 * 200 * 3, "u": 0}
    else:   # free-threaded: the counters are plain C integers, concurrent increments may be lost
        assert 0 < s.clamped["v"] <= 8 * 200 * 3 and s.clamped["u"] == 0


def test_one_bitwriter_shared_serializes_or_refuses():
    """Concurrent calls on one BitWriter never corrupt it: every call either completes whole or
    raises RuntimeError("... in use by another thread"). All writes are 1 bits, so the stream
    is bit_length ones."""
    w = qc.BitWriter()
    ones = np.ones(100_000, dtype=np.uint8)
    done = [0] * 8
    refused = [0] * 8

    def work(t, r):
        try:
            if t % 2:
                w.write_array(ones, 1)
                done[t] += ones.size
            else:
                for _ in range(200):
                    w.write(1, 1)
                    done[t] += 1
        except RuntimeError as e:
            assert "in use by another thread" in str(e)
            refused[t] += 1

    _hammer(work, rounds=20)
    assert w.bit_length == sum(done)
    data = w.getvalue()
    assert qc.unpack(data, w.bit_length, 1).all()
    assert w.bit_length % 8 == 0 or data[-1] >> (w.bit_length % 8) == 0


def test_one_bitreader_shared_serializes_or_refuses():
    n = 8 * 20 * 100_000
    data = b"\xff" * (n // 8 + 1)
    rd = qc.BitReader(data)
    taken = [0] * 8

    def work(t, r):
        try:
            if t % 2:
                a = rd.read_array(100_000, 1)
                assert a.all()
                taken[t] += 100_000
            else:
                for _ in range(100):
                    assert rd.read(1) == 1
                    taken[t] += 1
        except RuntimeError as e:
            assert "in use by another thread" in str(e)

    _hammer(work, rounds=20)
    assert rd.bit_position == sum(taken)


def test_snapshot_encoder_and_decoder_shared_by_threads():
    s = player_state()
    n = 500
    ids = np.arange(n, dtype=np.uint64)
    snaps = [s.snapshot(ids, _columns(n, seed=300 + t)) for t in range(8)]
    want = [snap.records() for snap in snaps]
    enc = qc.SnapshotEncoder(s, history=64)
    packets = {}

    def encode(t, r):
        seq = t * 30 + r
        packets[seq] = (t, enc.encode(seq, snaps[t]))     # nothing acked: every packet is full

    _hammer(encode, rounds=30)
    assert len(packets) == 240
    # every thread hands the hello to the decoder first (one adopts it, the others find it
    # adopted), some through a ``decode`` taken before any hello was adopted
    dec = qc.SnapshotDecoder(s)
    early = dec.decode
    hello = enc.hello()
    seen = []

    def decode(t, r):
        if r == 0:
            assert (early if t % 2 else dec.decode)(hello) is None
        seq = t * 30 + r
        src, pkt = packets[seq]
        view = (early if t % 2 and r < 3 else dec.decode)(pkt)
        assert view.seq == seq
        assert view.records() == want[src]
        seen.append(seq)

    _hammer(decode, rounds=30)
    assert len(seen) == 240
    assert dec.latest == 239 and dec.stream_id == enc.stream_id and dec.history == 64
