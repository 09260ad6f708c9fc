"""PacketCache: the packets that several clients' SnapshotEncoders need, coded once.

Every test compares encoders that share a cache with encoders that do not, packet for packet:
sharing may only save work, never change a byte. The cache holds bare packets: each client's
datagram is its packet sealed with the check of its own stream (docs/wire-format.md 11), so an
encoder is compared with a solo encoder of the same stream id, or bare packets are compared."""

import random
import threading

import numpy as np
import pytest

import quantcodec as qc
from quantcodec.tools.scene import simulate
from quantcodec.tools.link import default_schema


@pytest.fixture(scope="module")
def schema():
    return default_schema(velocity=True)


@pytest.fixture(scope="module")
def scene():
    return simulate(40, 3.0, 60, 3)


def _snapshots(schema, scene, ticks, seq0=0):
    return [((seq0 + t) & 0xFFFF, schema.snapshot(scene.ids[t], scene.columns(t))) for t in range(ticks)]


def test_shared_packets_are_the_solo_packets_through_loss(schema, scene):
    # clients with their own lags, losses, duplicated and late acks, a small history and
    # sequence numbers wrapping past 65535: each client's packets are the ones its encoder
    # codes alone, and its decoder rebuilds every snapshot
    rng = random.Random(7)
    cache = qc.PacketCache(16)
    n = 6
    shared = [qc.SnapshotEncoder(schema, history=12, cache=cache, stream_id=100 + i) for i in range(n)]
    solo = [qc.SnapshotEncoder(schema, history=12, stream_id=100 + i) for i in range(n)]
    decs = [qc.SnapshotDecoder.from_hello(schema, e.hello()) for e in shared]
    lag = [2, 2, 3, 6, 6, 9]
    loss = [0.0, 0.0, 0.1, 0.3, 0.0, 0.2]
    pending = [[] for _ in range(n)]
    for seq, snap in _snapshots(schema, scene, 170, seq0=65500):
        for i in range(n):
            for when, s in list(pending[i]):
                if when <= seq or seq < 1000 <= when:       # (the wrap)
                    assert shared[i].ack(s) == solo[i].ack(s)
                    pending[i].remove((when, s))
            p = shared[i].encode(seq, snap)
            q = solo[i].encode(seq, snap)
            assert p == q, (i, seq)
            assert shared[i].last_bits == solo[i].last_bits
            assert shared[i].last_baseline == solo[i].last_baseline
            if rng.random() < loss[i]:
                continue
            for _ in range(2 if rng.random() < 0.1 else 1):
                view = decs[i].decode(p)
                assert view == snap
            pending[i].append(((seq + lag[i] + rng.randint(0, 2)) & 0xFFFF, seq))
    assert cache.hits > 0 and cache.misses > 0
    assert len(cache) <= 16


def test_clients_alike_share_one_coding_a_tick(schema, scene):
    cache = qc.PacketCache()
    encs = [qc.SnapshotEncoder(schema, cache=cache) for _ in range(10)]
    snaps = _snapshots(schema, scene, 30)
    for seq, snap in snaps:
        before = (cache.hits, cache.misses)
        datagrams = [e.encode(seq, snap) for e in encs]
        assert len({d[:-4] for d in datagrams}) == 1            # one packet...
        assert len(set(datagrams)) == 10                        # ...sealed for each client's stream
        assert (cache.hits - before[0], cache.misses - before[1]) == (9, 1)
        for e in encs:
            e.ack(seq)
    assert encs[0].cache is cache and qc.SnapshotEncoder(schema).cache is None


def test_the_cache_is_bounded_first_in_first_out(schema, scene):
    cache = qc.PacketCache(3)
    enc = qc.SnapshotEncoder(schema, cache=cache)
    snaps = _snapshots(schema, scene, 10)
    for seq, snap in snaps:
        enc.encode(seq, snap)
        assert len(cache) <= 3
    assert len(cache) == 3 and cache.misses == 10 and cache.hits == 0
    # the newest is still there: a second client at the same point hits it
    other = qc.SnapshotEncoder(schema, cache=cache)
    seq, snap = snaps[-1]
    alone = lambda: qc.SnapshotEncoder(schema, stream_id=other.stream_id)      # noqa: E731
    assert other.encode(seq, snap) == alone().encode(seq, snap)
    assert cache.hits == 1
    # the oldest left: coded again, the same bytes
    seq, snap = snaps[0]
    assert other.encode(seq, snap) == alone().encode(seq, snap)
    assert cache.hits == 1
    cache.clear()
    assert len(cache) == 0 and cache.misses == 11
    assert "0 of 3 packets" in repr(cache)


def test_a_one_packet_cache_is_still_exact(schema, scene):
    cache = qc.PacketCache(1)
    encs = [qc.SnapshotEncoder(schema, cache=cache, stream_id=i) for i in range(3)]
    solo = [qc.SnapshotEncoder(schema, stream_id=i) for i in range(3)]
    for seq, snap in _snapshots(schema, scene, 40):
        for i, (a, b) in enumerate(zip(encs, solo)):
            assert a.encode(seq, snap) == b.encode(seq, snap)
            if seq % (i + 2) == 0:
                a.ack(seq)
                b.ack(seq)


def test_no_sharing_across_schemas_or_numbers(scene):
    # two schema objects with the same fields: their plans differ, so they never share (their
    # packets could differ in general); the same snapshot under another sequence number, or
    # another snapshot under the same number, is another packet
    # (every encoder here on one stream id, so that equal packets are equal datagrams)
    s1, s2 = default_schema(velocity=True), default_schema(velocity=True)
    cache = qc.PacketCache()
    e1 = qc.SnapshotEncoder(s1, cache=cache, stream_id=1)
    e2 = qc.SnapshotEncoder(s2, cache=cache, stream_id=1)
    snap1 = s1.snapshot(scene.ids[5], scene.columns(5))
    snap2 = s2.snapshot(scene.ids[5], scene.columns(5))
    assert e1.encode(0, snap1) == e2.encode(0, snap2)
    assert cache.hits == 0 and cache.misses == 2
    e3 = qc.SnapshotEncoder(s1, cache=cache, stream_id=1)
    p = e3.encode(1, snap1)
    assert cache.hits == 0
    assert p == qc.SnapshotEncoder(s1, stream_id=1).encode(1, snap1)
    other = s1.snapshot(scene.ids[9], scene.columns(9))
    e4 = qc.SnapshotEncoder(s1, cache=cache, stream_id=1)
    assert e4.encode(0, other) == qc.SnapshotEncoder(s1, stream_id=1).encode(0, other)
    assert cache.hits == 0


def test_reset_clients_share_full_packets(schema, scene):
    cache = qc.PacketCache()
    a, b = qc.SnapshotEncoder(schema, cache=cache), qc.SnapshotEncoder(schema, cache=cache)
    snaps = _snapshots(schema, scene, 8)
    for seq, snap in snaps[:5]:
        a.encode(seq, snap)
        a.ack(seq)
    a.reset()
    seq, snap = snaps[5]
    full = b.encode(seq, snap)          # b never had an ack: in full
    hits = cache.hits
    again = a.encode(seq, snap)         # a after its reset needs the same packet: a hit
    assert cache.hits == hits + 1 and again[:-4] == full[:-4]
    assert again != full                # sealed with a's new stream
    assert a.last_baseline is None and a.last_bits == b.last_bits


@pytest.mark.parametrize("size,exc", [(0, ValueError), (-3, ValueError), (1.5, TypeError),
                                      (True, TypeError), ("8", TypeError), (None, TypeError)])
def test_size_errors(size, exc):
    with pytest.raises(exc, match="PacketCache: size"):
        qc.PacketCache(size)


def test_cache_argument_errors(schema):
    for bad in ({}, 3, "cache", qc.SnapshotDecoder(schema)):
        with pytest.raises(TypeError, match="SnapshotEncoder: cache must be a PacketCache or None"):
            qc.SnapshotEncoder(schema, cache=bad)


def test_threads_share_a_cache(schema, scene):
    # several threads, each driving its own clients' encoders over the same ticks, one cache
    snaps = _snapshots(schema, scene, 60)
    cache = qc.PacketCache(8)
    lags = [1, 2, 2, 4]
    want = {}
    for lag in set(lags):
        enc = qc.SnapshotEncoder(schema, stream_id=lag)
        out = []
        for seq, snap in snaps:
            if seq >= lag:
                enc.ack(seq - lag)
            out.append(enc.encode(seq, snap))
        want[lag] = out
    errors = []
    barrier = threading.Barrier(4)

    def client(lag):
        try:
            enc = qc.SnapshotEncoder(schema, cache=cache, stream_id=lag)
            barrier.wait()
            for (seq, snap), expect in zip(snaps, want[lag]):
                if seq >= lag:
                    enc.ack(seq - lag)
                if enc.encode(seq, snap) != expect:
                    errors.append((lag, seq))
        except Exception as e:      # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=client, args=(lag,)) for lag in lags]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    # (how many hit depends on the interleaving: two threads may code the same packet at once)
    assert cache.hits + cache.misses == 4 * len(snaps)


def test_exported():
    assert "PacketCache" in qc.__all__ and qc.PacketCache is qc.snapshot.PacketCache
    c = qc.PacketCache()
    assert c.size == 64 and c.hits == 0 and c.misses == 0 and len(c) == 0
