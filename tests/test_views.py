"""Per-client views under a byte budget (SPEC section 8, issue 34): quantcodec._views and
quantcodec.interest.

Each client is a SnapshotEncoder on the server with its ViewBuilder, and a SnapshotDecoder behind
a seeded link that drops, delays and reorders packets and acks. Every tick: the datagrams of a
client's packet total at most the budget and each fits max_datagram; every decoded view equals,
code for code, the view the server recorded under that sequence number; priorities accumulate
and reset as documented; entities enter whole and leave.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import quantcodec as qc
from quantcodec import interest
from quantcodec._views import ViewBuilder, datagram_bytes, restrict
from quantcodec.snapshot import seq_newer

from helpers import World, pose_schema


class Link:
    """A seeded link: each item is lost with probability ``loss`` or arrives 1..``delay`` ticks
    later (so items overtake each other)."""

    def __init__(self, seed, loss=0.0, delay=1):
        self.r = random.Random(seed)
        self.loss, self.delay = loss, delay
        self.queue = []

    def send(self, now, item):
        if self.r.random() >= self.loss:
            self.queue.append((now + self.r.randint(1, self.delay), self.r.random(), item))

    def receive(self, now):
        due = sorted(q for q in self.queue if q[0] <= now)
        self.queue = [q for q in self.queue if q[0] > now]
        return [q[2] for q in due]


class Client:
    """One client: the server's encoder and builder, the link both ways, the decoder."""

    def __init__(self, schema, seed, loss=0.0, delay=1, history=64, max_datagram=1200):
        self.schema = schema
        self.encoder = qc.SnapshotEncoder(schema, history, max_datagram=max_datagram)
        self.builder = ViewBuilder(schema, self.encoder)
        self.decoder = qc.SnapshotDecoder.from_hello(schema, self.encoder.hello())
        self.down = Link(seed, loss, delay)
        self.up = Link(seed + 1, loss, delay)
        self.recorded = {}          # seq -> the view the server sent
        self.decoded = 0
        self.shown = None           # the newest view decoded

    def tick(self, t, world, ids=None, weights=None, room=None):
        for seq in self.up.receive(t):
            self.encoder.ack(seq)
        view = self.builder.build(t, world, ids, weights, room)
        sent = 0
        if view is not None:
            dgs = self.encoder.encode_datagrams(t, view)
            sent = sum(len(d) for d in dgs)
            assert all(len(d) <= self.encoder.max_datagram for d in dgs)
            if room is not None:
                assert sent <= room, (t, sent, room)
            assert sent == self.builder.last_bytes or room is None
            self.recorded[t & 0xFFFF] = view
            for d in dgs:
                self.down.send(t, d)
        for d in self.down.receive(t):
            got = self.decoder.decode(d)
            if got is not None:
                rec = self.recorded[got.seq]
                assert np.array_equal(got.ids, rec.ids) and np.array_equal(got.matrix, rec.matrix)
                self.decoded += 1
                if self.shown is None or seq_newer(got.seq, self.shown.seq):
                    self.shown = got
                self.up.send(t, self.decoder.latest)
        return view, sent


def test_datagram_bytes_matches_fragmenting():
    schema = pose_schema()
    world = World(3000, 1).step(schema)
    enc = qc.SnapshotEncoder(schema, max_datagram=300)
    for n in (0, 5, 40, 200, 3000):
        snap = restrict(world, world.ids[:n])
        packet = enc.encode(n, snap)
        dgs = enc.encode_datagrams(n, snap)
        assert sum(len(d) for d in dgs) == datagram_bytes(len(packet) - 4, 300)


def test_restrict_any_order_and_missing_ids():
    schema = pose_schema()
    world = World(500, 2).step(schema)
    ids = np.array([400, 3, 3, 999999, 17, 250], dtype=np.uint64)
    r = restrict(world, ids)
    assert r.ids.tolist() == [3, 17, 250, 400]
    rows = np.searchsorted(world.ids, r.ids)
    assert np.array_equal(r.matrix, world.matrix[rows])
    assert restrict(world, None) is world
    assert len(restrict(world, np.zeros(0, np.uint64)).ids) == 0


@pytest.mark.parametrize("budget,loss,delay", [(300, 0.0, 1), (600, 0.2, 3), (1200, 0.1, 3), (150, 0.3, 2)])
def test_budget_never_exceeded_and_views_exact(budget, loss, delay):
    """Sum of a client's datagrams each tick <= budget; every decoded view is the recorded one,
    code for code, through loss and reordering (the Client checks both every tick)."""
    schema = pose_schema()
    w = World(1500, 3, churn=3)
    c = Client(schema, 10, loss=loss, delay=delay, max_datagram=400)
    sizes = []
    for t in range(150):
        world = w.step(schema)
        _, sent = c.tick(t, world, room=budget)
        sizes.append(sent)
    assert c.decoded > 50
    assert max(sizes) <= budget
    # the budget is used: the steady packets fill most of it (the world changes more than fits)
    assert np.mean(sizes[20:]) > 0.8 * budget


def test_views_exact_with_interest_and_budget_many_seeds():
    schema = pose_schema()
    for seed in range(4):
        w = World(800, seed, churn=2)
        c = Client(schema, 100 + seed, loss=0.25, delay=4, history=16, max_datagram=256)
        rng = np.random.default_rng(seed)
        centre = np.zeros(2)
        for t in range(120):
            world = w.step(schema)
            centre += rng.normal(0, 4, size=2)
            d = np.hypot(*(w.pos - centre).T)
            ids = w.ids[d < 120]
            c.tick(t, world, ids=ids, weights=1.0 / (1.0 + d[d < 120]), room=700)
        assert c.decoded > 30


def test_room_too_small_gives_none_and_nothing_breaks():
    schema = pose_schema()
    w = World(200, 4)
    c = Client(schema, 5)
    world = w.step(schema)
    assert c.builder.build(0, world, None, None, 4) is None
    # a room for the header only: an empty view (nothing entered yet), then growth
    view, sent = c.tick(1, world, room=40)
    assert view is not None and sent <= 40


@pytest.mark.parametrize("delay", [1, 3])
def test_starvation_free_refresh_equal_weights(delay):
    """Every entity of positive weight takes the world's codes within the stated bound:
    2 (n + W / w) / m ticks, m the mean number of entities chosen by priority a tick
    (docs/views.md)."""
    schema = pose_schema()
    w = World(600, 5, moving=1.0)           # every entity changes every tick
    c = Client(schema, 6, delay=delay)
    last = {}
    sent = []
    worst = 0
    for t in range(200):
        world = w.step(schema)
        view, _ = c.tick(t, world, room=400)
        ids, acc = c.builder.priorities()
        fresh = ids[acc == 0]
        if t >= 20:
            sent.append(c.builder.last_chosen)
            for i in ids.tolist():
                worst = max(worst, t - last.get(i, 20))
        for i in fresh.tolist():
            last[i] = t
    n = 600
    m = np.mean(sent)
    assert m > 10
    bound = 2 * (n + n) / m
    assert worst <= bound, (worst, bound, m)
    assert worst <= 2 * n / m, (worst, n / m)      # measured: 1.1 to 1.2 n / m


def test_weights_honoured_heavier_entities_fresher():
    schema = pose_schema()
    w = World(600, 7, moving=1.0)
    c = Client(schema, 8, delay=2)
    weights = np.where(np.arange(600) < 100, 10.0, 1.0)       # the first 100 ids weigh 10
    age = np.zeros(600)
    ages = []
    for t in range(200):
        world = w.step(schema)
        c.tick(t, world, weights=weights, room=400)
        ids, acc = c.builder.priorities()
        age = np.where(acc == 0, 0, age + 1)
        if t >= 40:
            ages.append(age.copy())
    ages = np.array(ages)
    heavy, light = ages[:, :100].mean(), ages[:, 100:].mean()
    assert heavy * 3 < light, (heavy, light)
    assert ages[:, :100].max() < ages[:, 100:].max()


def test_zero_weight_never_sent_while_others_wait():
    schema = pose_schema()
    w = World(300, 9, moving=1.0)
    c = Client(schema, 9)
    weights = np.ones(300)
    weights[:50] = 0.0
    for t in range(60):
        world = w.step(schema)
        view, _ = c.tick(t, world, weights=weights, room=250)
    ids, acc = c.builder.priorities()
    assert np.all(acc[:50] == 0)
    # their entries: never sent (not in the view) unless they did not change since entering
    assert not np.isin(ids[:50], view.ids).any()


def test_interest_enter_and_leave():
    schema = pose_schema()
    w = World(400, 11, moving=0.0)
    c = Client(schema, 12, delay=1)
    world = w.step(schema)
    a = world.ids[:100]
    b = world.ids[50:150]
    for t in range(40):
        c.tick(t, world, ids=a, room=1200)
    assert np.array_equal(c.shown.ids, a)
    for t in range(40, 80):
        c.tick(t, world, ids=b, room=1200)
    shown = c.shown
    assert np.array_equal(shown.ids, b)                 # the 50 left, the 50 entered
    rows = np.searchsorted(world.ids, b)
    assert np.array_equal(shown.matrix, world.matrix[rows])      # entered whole, exact


def test_entered_entities_arrive_whole_never_partial():
    """A view holds only entities with all of the world's codes of some tick (every row of a view
    equals the row of that entity in one of the worlds sent)."""
    schema = pose_schema()
    w = World(500, 13, churn=4)
    c = Client(schema, 14, loss=0.1, delay=2)
    worlds = []
    for t in range(80):
        world = w.step(schema)
        worlds.append(world)
        view, _ = c.tick(t, world, room=500)
        if view is None:
            continue
        rows = {int(i): set() for i in view.ids}
        for wd in worlds[-65:]:
            pos = np.searchsorted(wd.ids, view.ids)
            pos = np.minimum(pos, len(wd.ids) - 1)
            hit = wd.ids[pos] == view.ids
            for j in np.flatnonzero(hit):
                rows[int(view.ids[j])].add(wd.matrix[pos[j]].tobytes())
        for j, i in enumerate(view.ids.tolist()):
            assert view.matrix[j].tobytes() in rows[i]


def test_no_view_goes_backwards_while_in_flight_fits():
    """With room for the in-flight part, an entity's codes in consecutive views only move to a
    newer world tick: a view never takes back an unacked change."""
    schema = pose_schema()
    w = World(300, 15, moving=1.0)
    c = Client(schema, 16, delay=3)
    worlds = {}
    prev = None
    for t in range(80):
        world = w.step(schema)
        worlds[t] = world
        view, _ = c.tick(t, world, room=1200)
        src = {}
        for k in sorted(worlds):
            wd = worlds[k]
            for i, row in zip(wd.ids.tolist(), wd.matrix):
                src.setdefault((i, row.tobytes()), k)
        ticks = {i: src[(i, row.tobytes())] for i, row in zip(view.ids.tolist(), view.matrix)}
        if prev is not None:
            for i, k in ticks.items():
                if i in prev:
                    assert k >= prev[i], (t, i, k, prev[i])
        prev = ticks


def test_unbudgeted_is_the_target():
    schema = pose_schema()
    w = World(300, 17)
    c = Client(schema, 18)
    world = w.step(schema)
    assert c.builder.build(0, world, None, None, None) is world
    ids = world.ids[::3]
    v = c.builder.build(1, world, ids, None, None)
    assert v == restrict(world, ids)


def test_few_trial_encodes_a_tick():
    schema = pose_schema()
    w = World(2000, 19, churn=5)
    c = Client(schema, 20, loss=0.05, delay=3)
    for t in range(100):
        c.tick(t, w.step(schema), room=1200)
    assert c.builder.trials <= 100 * 4


# -- interest -------------------------------------------------------------------------------------

def brute(positions, ids, centres, r):
    out = []
    for q in centres:
        d = np.sqrt(((positions - q) ** 2).sum(axis=1))
        out.append(np.sort(ids[d <= r]))
    return out


@pytest.mark.parametrize("dim", [2, 3])
def test_grid_within_matches_brute_force(dim):
    rng = np.random.default_rng(dim)
    p = rng.uniform(0, 1000, size=(5000, dim))
    ids = np.sort(rng.choice(10**9, size=5000, replace=False)).astype(np.uint64)
    centres = rng.uniform(-50, 1050, size=(60, dim))
    for r in (10.0, 75.0, 300.0):
        index = interest.GridIndex(p, ids, cell=75.0)
        got = index.within(centres, r)
        want = brute(p, ids, centres, r)
        assert len(got) == 60
        for g, x in zip(got, want):
            assert np.array_equal(g, x)
        got, dist = index.within(centres, r, distances=True)
        for g, dd, q in zip(got, dist, centres):
            rows = np.searchsorted(ids, g)
            assert np.allclose(dd, np.sqrt(((p[rows] - q) ** 2).sum(axis=1)))


def test_grid_unsorted_and_kdtree_agree():
    rng = np.random.default_rng(7)
    p = rng.uniform(0, 500, size=(3000, 2))
    ids = np.arange(3000, dtype=np.uint64) * np.uint64(3)
    centres = rng.uniform(0, 500, size=(25, 2))
    index = interest.GridIndex(p, ids, cell=20.0)
    want = index.within(centres, 40.0)
    got = index.within(centres, 40.0, sort=False)
    for g, x in zip(got, want):
        assert np.array_equal(np.sort(g), x)
    assert all(np.array_equal(g, x) for g, x in zip(interest.within(p, ids, centres, 40.0), want))
    pytest.importorskip("scipy")
    got, dist = interest.within(p, ids, centres, 40.0, distances=True, method="kdtree")
    for g, x in zip(got, want):
        assert np.array_equal(g, x)


def test_grid_cells_neighbourhood():
    rng = np.random.default_rng(1)
    p = rng.uniform(0, 100, size=(2000, 2))
    ids = np.arange(2000, dtype=np.uint64)
    index = interest.GridIndex(p, ids, cell=10.0, lo=(0.0, 0.0))
    centres = np.array([[55.0, 55.0], [0.5, 99.0]])
    got = index.cells(centres, ring=1)
    for g, q in zip(got, centres):
        c = np.floor(q / 10)
        pc = np.floor(p / 10)
        want = ids[np.all(np.abs(pc - c) <= 1, axis=1)]
        assert np.array_equal(g, want)


def test_interest_helper_feeds_views():
    schema = pose_schema()
    w = World(3000, 21)
    clients = [Client(schema, 30 + k, delay=2) for k in range(3)]
    centres = np.array([[0.0, 0.0], [100.0, -50.0], [-200.0, 200.0]])
    for t in range(30):
        world = w.step(schema)
        index = interest.GridIndex(w.pos, world.ids, cell=60.0)
        lists, dists = index.within(centres, 60.0, distances=True)
        for c, ids, d in zip(clients, lists, dists):
            c.tick(t, world, ids=ids, weights=1.0 / (1.0 + d), room=800)
    for c, ids in zip(clients, lists):
        assert set(c.shown.ids.tolist()) <= set(ids.tolist()) | set()


# -- through the session: StreamServer / StreamClient ---------------------------------------------

class Wire:
    """A seeded link of datagrams: loss, and 1..delay ticks of delay (so they reorder)."""

    def __init__(self, rng, loss, delay):
        self.rng, self.loss, self.delay = rng, loss, delay
        self.flight = []
        self.n = 0

    def send(self, t, datagrams):
        for d in datagrams:
            if self.rng.random() >= self.loss:
                self.flight.append((t + int(self.rng.integers(1, self.delay + 1)), self.n, d))
                self.n += 1

    def due(self, t):
        out = sorted(f for f in self.flight if f[0] <= t)
        self.flight = [f for f in self.flight if f[0] > t]
        return [d for _, _, d in out]


@pytest.mark.parametrize("key", [None, b"a shared secret"])
def test_session_budgets_interest_priority_exact_through_loss(key):
    """StreamServer.send with interest, priority and per-client budgets: every client's datagrams
    of a tick (hello included) total at most its budget, each fits max_datagram, every view a
    client returns is the one the server recorded for it (code for code), and holds only
    entities of that client's interest at that tick."""
    schema = pose_schema()
    budgets = {"a": 200, "b": 500, "c": 1200}
    server = qc.StreamServer(schema, max_datagram=400, key=key)
    rng = np.random.default_rng(3)
    clients, down, up, centre = {}, {}, {}, {}
    for i, (c, b) in enumerate(budgets.items()):
        server.connect(c, budget=b)
        clients[c] = qc.StreamClient(schema, key=key)
        down[c], up[c] = Wire(rng, 0.2, 3), Wire(rng, 0.2, 3)
        centre[c] = np.array([-100.0 + 100 * i, 0.0])
    w = World(2000, 4, churn=3)
    got = {c: 0 for c in clients}
    for t in range(200):
        world = w.step(schema)
        for c in centre:
            centre[c] += rng.normal(0, 3, 2)
        index = interest.GridIndex(w.pos, world.ids, cell=40.0)
        lists, dists = index.within(np.array([centre[c] for c in clients]), 80.0, distances=True)
        ids = dict(zip(clients, lists))
        weights = {c: 1.0 / (1.0 + d / 20.0) for c, d in zip(clients, dists)}
        out = server.send(t, world, interest=ids, priority=lambda c, wd: weights[c])
        for c, dgs in out.items():
            assert sum(len(d) for d in dgs) <= budgets[c], (t, c)
            assert all(len(d) <= 400 for d in dgs)
            down[c].send(t, dgs)
            sent = server.encoder(c)._state.sent.get(t & 0xFFFF)
            if dgs and sent is not None:
                assert np.isin(sent.ids, ids[c]).all()
        for c, cl in clients.items():
            for d in down[c].due(t):
                try:
                    v = cl.receive(d)
                except qc.DecodeError as e:      # before the hello arrived, a baseline not held
                    assert e.kind in ("no-hello", "baseline"), e.kind
                    v = None
                if v is not None:
                    rec = server.encoder(c)._state.sent[v.seq]
                    assert v == rec
                    got[c] += 1
                r = cl.reply()
                if r is not None:
                    up[c].send(t, [r])
            for r in up[c].due(t):
                try:
                    server.receive(c, r)
                except qc.DecodeError:          # a reply overtaken by a newer one: refused
                    pass
    assert all(n > 40 for n in got.values()), got


def test_session_interest_enter_leave_and_the_view_settles_on_the_world():
    schema = pose_schema()
    server = qc.StreamServer(schema)
    server.connect("p", budget=600)
    client = qc.StreamClient(schema)
    w = World(600, 5, moving=0.0)
    world = w.step(schema)
    last = None
    for t in range(160):
        ids = world.ids[:200] if t < 80 else world.ids[100:300]
        for d in server.send(t, world, interest={"p": ids})["p"]:
            v = client.receive(d)
            if v is not None:
                last = v
            r = client.reply()
            if r is not None:
                server.receive("p", r)
        if t == 79:
            assert last == restrict(world, world.ids[:200])
    assert last == restrict(world, world.ids[100:300])      # 100 left, 100 entered whole


@pytest.mark.parametrize("form", ["dict", "callable"])
def test_session_a_clients_none_interest_is_the_whole_world(form):
    """A client's None among the others' ids (an entry, or the callable's return) sees every
    entity, as interest=None does for all (docs/views.md, Interest)."""
    schema = pose_schema()
    server = qc.StreamServer(schema)
    for c in "ab":
        server.connect(c)
    clients = {c: qc.StreamClient(schema) for c in "ab"}
    w = World(300, 9, moving=0.3)
    last = {}
    for t in range(12):
        world = w.step(schema)
        sel = {"a": None, "b": world.ids[::3]}
        out = server.send(t, world, interest=sel if form == "dict" else (lambda c, wd: sel[c]))
        for c, cl in clients.items():
            for d in out[c]:
                v = cl.receive(d)
                if v is not None:
                    last[c] = v
            server.receive(c, cl.reply())
    assert last["a"] == world and last["a"].seq == 11
    assert last["b"] == restrict(world, world.ids[::3])


def test_bench_views_quick_runs_and_keeps_its_budget():
    """bench/bench_views.py --quick: a smoke test (no time asserted): the table is printed, every
    client's bytes stay within the budget, the comparison runs at every budget."""
    from benchscripts import load

    bv = load("bench_views")
    lines = []
    res = bv.main(["--quick", "--ticks", "30", "--budgets", "200", "1200"], out=lines.append)
    big = res["big"]
    assert len(big) == 4 and all(r["bytes_max"] <= 1200 for r in big)
    assert any("p99 position error" in x for x in lines)
    for r in res["compare"]:
        for kind in ("equal", "speed", "gaffer"):
            assert r[kind]["B"] <= r["budget"]
    cold = bv.main(["--quick", "--part", "6", "--ticks", "12"], out=lines.append)["cold"]
    assert cold["cold_us"] > 0 and cold["warm_us"] > 0
    assert any(x.startswith("  compute a client, CPU:") for x in lines)


class FixedLink:
    """Every item arrives exactly ``delay`` ticks later."""

    def __init__(self, delay):
        self.delay, self.queue = delay, []

    def send(self, now, item):
        self.queue.append((now + self.delay, item))

    def receive(self, now):
        due = [item for when, item in self.queue if when <= now]
        self.queue = [q for q in self.queue if q[0] > now]
        return due


@pytest.mark.parametrize("reference", [False, True])
@pytest.mark.parametrize("history,delay,room", [(2, 2, 110), (4, 3, 200), (16, 10, 300)])
def test_a_round_trip_longer_than_the_history_starves_nobody(reference, history, delay, room):
    """Every acknowledgement names a view the encoder no longer holds (a round trip of 2 delay
    + 1 ticks, more than ``history``): no packet ever has a baseline. Before, the start view
    was the previous one, re-sent whole every tick, so the budget went to the first views'
    entities for ever (a probe: 10 of 60 entities ever shown). Now, after ``history`` ticks
    with no baseline the view starts from nothing and the room goes by priority: every entity
    gets its turn, each view still exact."""
    from quantcodec._views import ViewBuilderPy
    schema = pose_schema()
    w = World(60, 17, moving=0.0)
    c = Client(schema, 17, history=history)
    c.down, c.up = FixedLink(delay), FixedLink(delay)
    if reference:
        c.builder = ViewBuilderPy(schema, c.encoder)
    seen = set()
    for t in range(40 + 10 * history):
        view, sent = c.tick(t, w.step(schema), room=room)
        assert c.encoder.last_baseline is None
        if c.shown is not None:
            seen.update(c.shown.ids.tolist())
    assert seen == set(w.step(schema).ids.tolist())
    assert c.decoded > 30
