"""The compiled view builder (quantcodec._viewbuild.ViewBuilder) against the Python reference
(quantcodec._views.ViewBuilderPy): on random scenes, through loss, delay and reordering, with
interest lists in any order (repeats and unknown ids included), weights, churn and budgets from
one that sheds the in-flight part to one that never binds, both make the same view every tick,
code for code, with the same priorities, the same trial encodes and the same learned sizes. And
the sharing of work across clients (ViewShare): equal views are one Snapshot, coded once."""

from __future__ import annotations

import random

import numpy as np
import pytest

import quantcodec as qc
from quantcodec._views import ViewBuilder, ViewBuilderPy, ViewShare, compute

from helpers import World, deliver_exact, pose_schema


_WIDE = np.uint64(2**40 + 7)


def _same(a, b):
    if a is None or b is None:
        return a is None and b is None
    return np.array_equal(a.ids, b.ids) and np.array_equal(a.matrix, b.matrix)


def _interest(rng, w, centre, radius, mode):
    d = np.hypot(*(w.pos - centre).T)
    near = np.flatnonzero(d < radius)
    ids = w.ids[near]
    dist = d[near]
    if mode == "shuffled":
        p = rng.permutation(len(ids))
        ids, dist = ids[p], dist[p]
    elif mode == "repeats":
        extra = rng.integers(0, max(1, len(ids)), size=min(5, len(ids)))
        unknown = np.array([10**12 + 1, 10**12 + 5], dtype=np.uint64)
        ids = np.concatenate([ids, ids[extra], unknown])
        dist = np.concatenate([dist, dist[extra], [1.0, 2.0]])
        p = rng.permutation(len(ids))
        ids, dist = ids[p], dist[p]
    elif mode == "signed":
        ids = ids.astype(np.int64)
    return ids, dist


@pytest.mark.parametrize("seed,budget,loss,delay,mode", [
    (0, 1200, 0.05, 3, "sorted"), (1, 300, 0.2, 3, "shuffled"), (2, 150, 0.3, 2, "repeats"),
    (3, 600, 0.1, 4, "signed"), (4, 90, 0.0, 1, "world"), (5, 2500, 0.25, 5, "shuffled"),
    (6, 60, 0.1, 2, "sorted"), (7, 400, 0.1, 2, "wide"),
])
def test_compiled_builder_equals_reference(seed, budget, loss, delay, mode):
    schema = pose_schema()
    w = World(900, seed, moving=0.5, churn=3)
    rng = np.random.default_rng(seed)
    r = random.Random(seed)
    enc_c = qc.SnapshotEncoder(schema, 32, max_datagram=300, stream_id=7)
    enc_p = qc.SnapshotEncoder(schema, 32, max_datagram=300, stream_id=7)
    bc, bp = ViewBuilder(schema, enc_c), ViewBuilderPy(schema, enc_p)
    acks = {}
    centre = np.zeros(2)
    nonempty = budgeted = 0
    for t in range(160):
        world = w.step(schema)
        for s in acks.pop(t, ()):
            assert enc_c.ack(s) == enc_p.ack(s)
        centre += rng.normal(0, 5, 2)
        if mode == "world":
            ids, weights = None, (rng.random(len(world.ids)) if t % 3 else None)
        else:
            ids, dist = _interest(rng, w, centre, 140.0, "shuffled" if mode == "wide" else mode)
            weights = 1.0 / (1.0 + dist / 30.0) if t % 4 else None
        if mode == "wide":
            # ids spread over 6 bytes: the interest's sort merges its runs (no radix sort)
            world = qc.Snapshot._make(schema, world.ids * _WIDE, world.matrix)
            ids = ids * _WIDE
        room = budget if t % 17 else None         # now and then a tick without a budget
        vc = bc.build(t, world, ids, weights, room)
        vp = bp.build(t, world, ids, weights, room)
        assert _same(vc, vp), t
        pc, pp = bc.priorities(), bp.priorities()
        assert np.array_equal(pc[0], pp[0]) and np.array_equal(pc[1], pp[1]), t
        assert (bc.trials, bc.last_bytes, bc.last_sent, bc.last_chosen, bc.last_inflight) == \
            (bp.trials, bp.last_bytes, bp.last_sent, bp.last_chosen, bp.last_inflight), t
        assert (bc._bits_chg, bc._bits_new, bc._s0_est) == (bp._bits_chg, bp._bits_new, bp._s0_est), t
        if vc is None:
            continue
        nonempty += 1
        budgeted += room is not None
        dc = enc_c.encode_datagrams(t, vc)
        dp = enc_p.encode_datagrams(t, vp)
        assert dc == dp
        if room is not None:
            assert sum(len(d) for d in dc) <= room
        if r.random() >= loss:
            acks.setdefault(t + 1 + r.randrange(2 * delay), []).append(t)
    assert nonempty > 100
    # every budgeted packet of the compiled builder's client was its last trial's, handed over
    # (EncoderState.offer), not coded again; the bytes equal those the reference's coded itself
    assert enc_c._state.offers_used == budgeted and enc_p._state.offers_used == 0


@pytest.mark.parametrize("share", [False, True])
def test_three_steps_for_many_equal_build_and_abandon_changes_nothing(share):
    """begin for several builders, compute of them all in one call (one span without the GIL),
    end for each: the views, priorities, sizes and packets of build, one client at a time. A
    build begun and abandoned (or begun again) leaves no trace: the next build is as if it never
    began. And the steps refuse being run out of order."""
    schema = pose_schema()
    w = World(700, 11, moving=0.5, churn=2)
    rng = np.random.default_rng(11)
    k = 5
    encs = [[qc.SnapshotEncoder(schema, 32, max_datagram=300, stream_id=9 + c) for c in range(k)]
            for _ in range(2)]
    shares = [ViewShare() if share else None, ViewShare() if share else None]
    one = [ViewBuilder(schema, e, shares[0]) for e in encs[0]]     # build
    many = [ViewBuilder(schema, e, shares[1]) for e in encs[1]]    # begin, compute, end
    centres = rng.uniform(-150, 150, (k, 2))
    for t in range(60):
        world = w.step(schema)
        if t >= 6:
            for c in range(k):
                if (t + c) % 4:
                    assert encs[0][c].ack(t - 5) == encs[1][c].ack(t - 5)
        centres += rng.normal(0, 4, (k, 2))
        lists = []
        for c in range(k):
            ids, dist = _interest(rng, w, centres[c], 130.0, "shuffled" if c % 2 else "sorted")
            # some clients alike (the share finds their views equal)
            lists.append((ids, 1.0 / (1.0 + dist / 25.0)) if c != 3 else lists[1])
        room = [250, 400, 120, 400, 900]
        if t % 9 == 4:
            # begun and dropped: by abandon, by a second begin, by reset's absence of effect
            many[0].begin(t, world, lists[0][0], lists[0][1], room[0])
            many[0].abandon()
            many[2].begin(t, world, lists[2][0], None, 1)
        got_one = [one[c].build(t, world, lists[c][0], lists[c][1], room[c]) for c in range(k)]
        for c in range(k):
            many[c].begin(t, world, lists[c][0], lists[c][1], room[c])
        compute(many)
        got_many = [many[c].end() for c in range(k)]
        for c in range(k):
            assert _same(got_one[c], got_many[c]), (t, c)
            a, b = one[c].priorities(), many[c].priorities()
            assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]), (t, c)
            assert (one[c].trials, one[c].last_bytes, one[c].last_sent, one[c]._bits_chg, one[c]._s0_est) == \
                (many[c].trials, many[c].last_bytes, many[c].last_sent, many[c]._bits_chg, many[c]._s0_est)
            if got_one[c] is not None:
                assert encs[0][c].encode_datagrams(t, got_one[c]) == encs[1][c].encode_datagrams(t, got_many[c])
    if share:
        assert shares[1].hits > 0                    # clients 1 and 3 had one view
    b = many[0]
    with pytest.raises(RuntimeError, match="no build begun"):
        b.end()
    with pytest.raises(ValueError, match="no build begun"):
        compute([b])
    b.begin(99, world, lists[0][0], None, 300)
    compute([b])
    with pytest.raises(ValueError, match="computed twice"):
        compute([b])
    assert b.end() is not None
    b.begin(100, world, lists[0][0], None, 300)
    with pytest.raises(TypeError):
        compute([b, "not a builder"])
    b.abandon()


def test_a_build_refused_in_compute_raises_at_end_and_keeps_nothing():
    """Weights refused (negative) are found without the GIL: end raises, the builder keeps its
    priorities and sizes of before, and its next build is the one a fresh run would make."""
    schema = pose_schema()
    w = World(300, 4, moving=0.5)
    e1 = qc.SnapshotEncoder(schema, 32, max_datagram=300, stream_id=3)
    e2 = qc.SnapshotEncoder(schema, 32, max_datagram=300, stream_id=3)
    b1, b2 = ViewBuilder(schema, e1), ViewBuilder(schema, e2)
    world = w.step(schema)
    for b in (b1, b2):
        b.build(0, world, world.ids[:80], None, 200)
    before = b1.priorities(), b1._bits_chg, b1._s0_est, b1.last_bytes
    world = w.step(schema)
    b1.begin(1, world, world.ids[:80], -np.ones(80), 200)
    compute([b1])
    with pytest.raises(ValueError, match="finite, non-negative and at most 1e100"):
        b1.end()
    after = b1.priorities(), b1._bits_chg, b1._s0_est, b1.last_bytes
    assert np.array_equal(before[0][1], after[0][1]) and before[1:] == after[1:]
    v1 = b1.build(1, world, world.ids[:80], None, 200)
    v2 = b2.build(1, world, world.ids[:80], None, 200)
    assert _same(v1, v2) and b1.priorities()[1].tolist() == b2.priorities()[1].tolist()


def test_offered_packet_is_used_only_for_the_same_references():
    """EncoderState.offer: the next encode sends the offered bytes only when it names the same
    snapshot (identity), sequence number and references and its coder the same plan; anything
    else is coded as always, and an offer serves one encode at most."""
    schema = pose_schema()
    w = World(200, 4)
    enc = qc.SnapshotEncoder(schema, 16, stream_id=9)
    twin = qc.SnapshotEncoder(schema, 16, stream_id=9)
    st = enc._state
    plan = enc._coder.layout.plan
    for t in range(6):
        world = w.step(schema)
        bdist, base, pdist, pred = st.refs(t)
        want = twin.encode(t, world)
        if t == 3:
            # a marked packet for exactly these references: sent as offered (sealed like any)
            st.offer(t, world, bdist, base, pdist, pred, b"\x01marked", 13, plan)
            got = enc.encode(t, world)
            assert got[:7] == b"\x01marked" and got != want and enc.last_bits == 13
            assert st.offers_used == 1
            enc.ack(t)
            twin.ack(t)
            continue
        if t >= 1:
            # offers that do not fit: another number, an equal but other snapshot, other
            # references, another plan; each is dropped and the packet coded as always
            bad = [(t + 1, world, bdist, base, pdist, pred, plan),
                   (t, qc.Snapshot._make(schema, world.ids.copy(), world.matrix.copy()),
                    bdist, base, pdist, pred, plan),
                   (t, world, bdist + 1, base, pdist, pred, plan),
                   (t, world, bdist, base, pdist, pred, object())]
            st.offer(*bad[t % len(bad)][:6], b"\x01marked", 13, bad[t % len(bad)][6])
        assert enc.encode(t, world) == want
        enc.ack(t)
        twin.ack(t)
    assert st.offers_used == 1
    # an offer serves once: the same number encoded again is coded
    world = w.step(schema)
    st.offer(6, world, *st.refs(6)[:4], b"\x01marked", 13, plan)
    assert enc.encode(6, world)[:7] == b"\x01marked"
    assert enc.encode(6, world) == twin.encode(6, world)


def test_compiled_builder_checks_like_the_reference():
    schema = pose_schema()
    world = World(50, 1).step(schema)
    for B in (ViewBuilder, ViewBuilderPy):
        b = B(schema, qc.SnapshotEncoder(schema))
        with pytest.raises(TypeError):
            b.build(0, world, np.array([1.5, 2.0]), None, 500)
        with pytest.raises(ValueError):
            b.build(0, world, np.array([-1, 2]), None, 500)
        with pytest.raises(ValueError):
            b.build(0, world, np.array([[1, 2]]), None, 500)
        with pytest.raises(ValueError):
            b.build(0, world, world.ids[:5], np.array([1.0, -1.0, 1.0, 1.0, 1.0]), 500)
        with pytest.raises(ValueError):
            b.build(0, world, world.ids[:5], np.array([1.0, np.nan, 1.0, 1.0, 1.0]), 500)
        with pytest.raises(ValueError):
            b.build(0, world, None, np.ones(3), 500)
        assert len(b.build(0, world, [], None, 500).ids) == 0


def test_shared_views_are_one_snapshot_coded_once():
    """Clients whose views and acks coincide: with a ViewShare their builders return the same
    Snapshot, so their encoders (sharing a PacketCache) code the packet once; the views equal
    those of unshared builders, and each client decodes exactly what was recorded for it."""
    schema = pose_schema()
    w = World(1500, 2, moving=0.3)
    share = ViewShare()
    cache = qc.PacketCache(64)
    encs = [qc.SnapshotEncoder(schema, 32, cache=cache) for _ in range(4)]
    builders = [ViewBuilder(schema, e, share) for e in encs]
    lone_enc = qc.SnapshotEncoder(schema, 32)
    lone = ViewBuilder(schema, lone_enc)
    decs = [qc.SnapshotDecoder.from_hello(schema, e.hello()) for e in encs]
    for t in range(60):
        world = w.step(schema)
        ids = world.ids[(world.ids % 3 == 0)]
        views = [b.build(t, world, ids, None, 700) for b in builders]
        ref = lone.build(t, world, ids, None, 700)
        assert all(v is views[0] for v in views)          # one Snapshot for the four clients
        assert _same(views[0], ref)
        for k, (e, d) in enumerate(zip(encs, decs)):
            for dg in e.encode_datagrams(t, views[k]):
                got = d.decode(dg)
                if got is not None:
                    assert got == views[k]
            e.ack(t)
        lone_enc.encode(t, ref)
        lone_enc.ack(t)
    assert share.hits >= 3 * 59
    assert share.trial_hits > 0
    # the packets: the first builder's trial encode, handed to every client's encoder with the
    # shared trial size (EncoderState.offer), or else found in the PacketCache: never coded again
    assert sum(e._state.offers_used for e in encs) + cache.hits >= 4 * 60 - 1
    assert cache.misses <= 1
    # trial encodes: the first client's only
    assert sum(b.trials for b in builders[1:]) <= 3


def test_share_pauses_while_no_view_is_shared_and_resumes():
    """ViewShare: 20 clients with views all different stop interning after a few ticks (a hash
    and a dict entry a view for nothing), the views unchanged (equal to lone builders'); once
    their views coincide, a probe tick finds it and every tick shares again."""
    schema = pose_schema()
    w = World(3000, 5, moving=0.3)
    share = ViewShare()
    M = 20
    encs = [qc.SnapshotEncoder(schema, 32, stream_id=11) for _ in range(M)]
    lone_encs = [qc.SnapshotEncoder(schema, 32, stream_id=11) for _ in range(M)]
    builders = [ViewBuilder(schema, e, share) for e in encs]
    lone = [ViewBuilder(schema, e) for e in lone_encs]
    together = None
    for t in range(80):
        world = w.step(schema)
        if t < 40:
            lists = [world.ids[(world.ids % M) == c] for c in range(M)]      # all different
        else:
            lists = [world.ids[world.ids % 4 == 0]] * M                       # all the same
        views = [b.build(t, world, ids, None, 600) for b, ids in zip(builders, lists)]
        for c in range(M):
            ref = lone[c].build(t, world, lists[c], None, 600)
            assert _same(views[c], ref), (t, c)
            d1, d2 = encs[c].encode_datagrams(t, views[c]), lone_encs[c].encode_datagrams(t, ref)
            assert d1 == d2
            encs[c].ack(t)
            lone_encs[c].ack(t)
        if t == 39:
            assert share.paused >= 40 - 1 - 4 - 3, share.paused       # at most 1 tick in 16 on
        if t >= 40 and together is None and all(v is views[0] for v in views):
            together = t
    assert together is not None and together <= 40 + 16, together
    assert all(v is views[0] for v in views)           # and it stayed on


def test_session_shares_packets_between_clients_alike():
    """StreamServer: two clients with the same interest and the same acks get packets coded once
    (the first builder's trial encode, handed to both encoders with the shared trial size, or
    found in the PacketCache: no miss codes it again), and views equal to what each decodes."""
    schema = pose_schema()
    server = qc.StreamServer(schema, budget=900)
    clients = {c: qc.StreamClient(schema) for c in ("a", "b")}
    for c in clients:
        server.connect(c)
    w = World(800, 3)
    for t in range(40):
        world = w.step(schema)
        ids = world.ids[:300]
        out = server.send(t, world, interest={"a": ids, "b": ids})
        deliver_exact(server, clients, out)
    assert server.encoder("a")._state.sent[39] is server.encoder("b")._state.sent[39]
    cache = server.encoder("a").cache
    used = server.encoder("a")._state.offers_used + server.encoder("b")._state.offers_used
    assert used + cache.hits >= 2 * 40 - 2 and cache.misses <= 2


@pytest.mark.parametrize("dim,sort,dist", [(2, True, False), (2, False, True), (3, True, True), (3, False, False)])
def test_grid_within_compiled_equals_numpy(dim, sort, dist):
    """GridIndex.within's compiled per-client path gives the NumPy path's ids, in the same order,
    and bit-identical distances (the same sums of squares in the same order)."""
    from quantcodec import interest

    rng = np.random.default_rng(dim)
    p = rng.uniform(-300, 700, size=(20000, dim))
    ids = np.sort(rng.choice(10**12, size=20000, replace=False)).astype(np.uint64)
    index = interest.GridIndex(p, ids, cell=37.5)
    centres = np.concatenate([rng.uniform(-350, 750, size=(200, dim)), p[:5]])   # some on entities
    for r in (0.0, 20.0, 75.0, 150.0):
        got = index._query(centres, r, None, dist, sort)
        want = index._query(centres, r, None, dist, sort, numpy=True)
        if dist:
            (got, gd), (want, wd) = got, want
            for a, b in zip(gd, wd):
                assert np.array_equal(a, b)
        assert len(got) == len(want) == len(centres)
        for a, b in zip(got, want):
            assert a.dtype == np.uint64 and np.array_equal(a, b)
