"""StreamServer(hysteresis=N): an entity that leaves a client's interest stays in its view for N
ticks more, so that one on the edge of an interest radius does not leave and enter again
(whole) tick after tick. The compiled merge (quantcodec._interest.linger) against a NumPy
reference; the session's views through loss, budgets and weights; what a send that raised,
a resend and an interest of None do to it."""

import numpy as np
import pytest

import quantcodec as qc
from quantcodec._interest import Linger

SCHEMA = qc.Schema("Dot", [("x", qc.Bounded(-100, 100, 12)), ("hp", qc.UInt(7))])


def linger(ids, prev, until, now, span):
    """Linger from a given state, one step committed: (interest to build, state ids, ticks)."""
    state = Linger()
    state.state = (prev, until)
    eff = state.step(ids, now, span)
    state.commit()
    return (eff,) + state.state


def reference(ids, prev, until, now, span):
    cur = np.unique(ids)
    keep = (until >= now) & ~np.isin(prev, cur)
    extra = prev[keep]
    both = np.concatenate((cur, extra))
    ticks = np.concatenate((np.full(cur.shape[0], now + span, dtype=np.int64), until[keep]))
    order = np.argsort(both, kind="stable")
    return np.concatenate((ids, extra)), both[order], ticks[order]


@pytest.mark.parametrize("seed", range(40))
def test_linger_is_the_reference(seed):
    rng = np.random.default_rng(seed)
    universe = np.unique(rng.integers(0, 2**64 - 1, size=60, dtype=np.uint64, endpoint=True)) \
        if seed % 3 else np.arange(60, dtype=np.uint64)
    ids = rng.choice(universe, size=int(rng.integers(0, 40)))          # repeats, any order
    if seed % 2:
        ids = np.sort(ids)                                             # (the sorted fast path)
    prev = np.unique(rng.choice(universe, size=int(rng.integers(0, 40))))
    now = int(rng.integers(0, 100))
    until = rng.integers(now - 5, now + 5, prev.shape[0]).astype(np.int64)
    ids = ids.astype(np.uint64)
    got = linger(ids, prev, until, now, 7)
    want = reference(ids, prev, until, now, 7)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and np.array_equal(g, w)
    if got[0].shape[0] == ids.shape[0]:
        assert got[0] is ids                    # (nothing lingers: the interest itself)


def test_linger_twice_at_one_tick_is_the_same_tick():
    # (a resend: the state kept by the first call, the interest given again or another one)
    first = linger(np.array([1, 4], np.uint64), np.array([2], np.uint64), np.array([9], np.int64), 5, 3)
    again = linger(np.array([1], np.uint64), first[1], first[2], 5, 3)
    assert again[0].tolist() == [1, 2, 4] and again[1].tolist() == [1, 2, 4]
    assert again[2].tolist() == [8, 9, 8]


def test_linger_steps_not_committed_leave_nothing():
    state = Linger()
    assert state.step(np.array([3, 1], np.uint64), 0, 2).tolist() == [3, 1]
    state.commit()
    for _ in range(3):                                   # (sends that raised)
        assert state.step(np.array([], np.uint64), 1, 2).tolist() == [1, 3]
    assert state.state[0].tolist() == [1, 3] and state.state[1].tolist() == [2, 2]
    assert state.step(None, 1, 2) is None
    state.commit()
    assert state.state[0].tolist() == []


def test_linger_refuses_a_state_of_two_lengths_or_unsorted():
    with pytest.raises(ValueError, match=r"3 ids need as many ticks, got shape \(2,\)"):
        Linger().state = (np.arange(3), np.zeros(2))
    with pytest.raises(ValueError, match="ascend, each once"):
        Linger().state = ([3, 1], [0, 0])


def world(tick, n=12):
    ids = np.arange(1, n + 1, dtype=np.uint64)
    return SCHEMA.snapshot(ids, {"x": np.sin(ids * 0.7 + tick * 0.3) * 90, "hp": ids % 100})


def exact_session(server, interest_of, ticks, *, weights_of=None, loss=0.0, seed=0):
    """Ticks over a link that loses ``loss`` of the datagrams each way (no delay): every view a
    client decodes is the one the server recorded for that tick, code for code. Returns each
    client's views by tick."""
    rng = np.random.default_rng(seed)
    clients = {c: qc.StreamClient(SCHEMA) for c in server.clients}
    views = {c: {} for c in clients}
    for t in range(ticks):
        w = world(t)
        interest = {c: interest_of(c, t) for c in clients}
        priority = None if weights_of is None else {c: weights_of(c, t, interest[c]) for c in clients}
        out = server.send(t, w, interest=interest, priority=priority)
        for c, dgs in out.items():
            for d in dgs:
                if rng.random() < loss:
                    continue
                try:
                    v = clients[c].receive(d)
                except qc.DecodeError:          # (a packet before its lost hello)
                    continue
                if v is not None:
                    recorded = server.encoder(c)._state.sent[v.seq]
                    assert v == recorded
                    views[c][t] = v
            r = clients[c].reply()
            if r is not None and rng.random() >= loss:
                server.receive(c, r)
    return views


def test_an_entity_on_the_edge_stays_in_the_view():
    # entity 5 in the interest on even ticks only: without hysteresis it leaves and comes back
    # every tick; with 2 ticks of it, it stays
    def interest_of(c, t):
        return [1, 2, 3] + ([5] if t % 2 == 0 else [])
    for h, flickers in ((0, True), (1, False), (2, False)):
        server = qc.StreamServer(SCHEMA, hysteresis=h)
        server.connect("a")
        views = exact_session(server, interest_of, 12)["a"]
        held = [5 in set(views[t].ids.tolist()) for t in sorted(views)]
        assert held == ([t % 2 == 0 for t in sorted(views)] if flickers else [True] * len(held))


@pytest.mark.parametrize("h", [1, 3, 6])
def test_an_entity_that_left_is_gone_after_exactly_hysteresis_ticks(h):
    def interest_of(c, t):
        return [1, 2] + ([9] if t < 4 else [])          # 9 in the interest at ticks 0-3
    server = qc.StreamServer(SCHEMA, hysteresis=h)
    server.connect("a")
    views = exact_session(server, interest_of, 14)["a"]
    held = {t: 9 in set(views[t].ids.tolist()) for t in views}
    assert held == {t: t <= 3 + h for t in range(14)}


@pytest.mark.parametrize("step", [1, 3, 7])
def test_hysteresis_counts_ticks_when_ticks_skip(step):
    """docs/views.md: N ticks, and ticks may skip. It counted sends: a server sending every 3rd
    tick kept an entity 90 ticks for hysteresis=30 (a soak probe)."""
    ids = np.arange(1, 11, dtype=np.uint64)
    server = qc.StreamServer(SCHEMA, hysteresis=30)
    server.connect("a")
    client = qc.StreamClient(SCHEMA)
    gone = last_in = None
    for t in range(65536 - 210, 65536 + 300, step):        # (the clock across the wrap too)
        world = SCHEMA.snapshot(ids, {"x": np.full(10, (t % 100) / 2.0), "hp": np.ones(10)})
        if t < 65536 - 60:
            last_in = t                                     # the last tick id 1 was in the interest
        for d in server.send(t, world, interest={"a": ids if t < 65536 - 60 else ids[1:]})["a"]:
            client.receive(d)
        server.receive("a", client.reply())
        if t >= 65536 - 60 and 1 not in set(client.view.ids.tolist()):
            gone = t
            break
    assert gone is not None and last_in + 30 < gone <= last_in + 30 + step, (last_in, gone)


def test_an_entity_that_leaves_the_world_leaves_at_once():
    server = qc.StreamServer(SCHEMA, hysteresis=10)
    server.connect("a")
    client = qc.StreamClient(SCHEMA)
    for t in range(6):
        w = world(t, n=12 if t < 3 else 8)           # 9..12 leave the world at tick 3
        for d in server.send(t, w, interest={"a": [1, 10]} if t < 3 else {"a": [1]})["a"]:
            v = client.receive(d)
        server.receive("a", client.reply())
        assert v.ids.tolist() == ([1, 10] if t < 3 else [1])


@pytest.mark.parametrize("budget", [None, 150])
def test_views_exact_through_loss_with_budgets_and_weights(budget):
    rng = np.random.default_rng(3)
    member = {c: rng.random((40, 12)) < 0.5 for c in range(4)}   # a random interest a tick

    def interest_of(c, t):
        return (np.flatnonzero(member[c][t]) + 1).astype(np.uint64)

    def weights_of(c, t, ids):
        return np.linspace(0.5, 2.0, len(ids))
    server = qc.StreamServer(SCHEMA, hysteresis=3, budget=budget)
    for c in range(4):
        server.connect(c)
    views = exact_session(server, interest_of, 40, weights_of=weights_of, loss=0.2, seed=4)
    for c in range(4):
        assert len(views[c]) > 10
        for t, v in views[c].items():
            # what a view holds: entities of the interest of this tick or of the 3 before
            recent = set()
            for k in range(max(0, t - 3), t + 1):
                recent |= set(interest_of(c, k).tolist())
            assert set(v.ids.tolist()) <= recent


def test_lingering_entities_are_refreshed_by_priority_under_a_budget():
    # 9 leaves the interest at tick 2 but keeps moving; with a budget that fits everything, its
    # codes in the view follow the world's while it lingers (weighted as the least weight given)
    server = qc.StreamServer(SCHEMA, hysteresis=5, budget=400)
    server.connect("a")
    client = qc.StreamClient(SCHEMA)
    for t in range(7):
        ids = [1, 2, 9] if t < 2 else [1, 2]
        w = world(t)
        out = server.send(t, w, interest={"a": ids}, priority={"a": np.full(len(ids), 3.0)})
        for d in out["a"]:
            v = client.receive(d)
        server.receive("a", client.reply())
        row = int(np.flatnonzero(v.ids == 9)[0])
        assert v.matrix[row].tolist() == w.matrix[8].tolist()


def test_a_send_that_raised_does_not_move_it_and_a_resend_is_the_same_tick():
    server = qc.StreamServer(SCHEMA, hysteresis=1)
    server.connect("a")
    server.connect("b")
    client = qc.StreamClient(SCHEMA)

    def send(t, ids_a, weights_b=None):
        out = server.send(t, world(t), interest={"a": ids_a, "b": [1]},
                          priority=None if weights_b is None else {"a": None, "b": weights_b})
        got = None
        for d in out["a"]:
            got = client.receive(d) or got
        server.receive("a", client.reply())
        return set(got.ids.tolist())
    assert send(0, [1, 7]) == {1, 7}
    for _ in range(3):                                   # refused three times: no tick passes
        with pytest.raises(ValueError, match="client 'b': 2 priority weights for 1 interest ids"):
            send(1, [1], weights_b=[1.0, 2.0])
    assert send(1, [1]) == {1, 7}                        # 7 lingers: its one tick
    assert send(1, [1]) == {1, 7}                        # a resend: the same tick
    assert send(2, [1]) == {1}                           # and then it is gone


def test_an_interest_of_none_forgets_the_entities_that_left():
    server = qc.StreamServer(SCHEMA, hysteresis=5)
    server.connect("a")
    client = qc.StreamClient(SCHEMA)
    seen = []
    for t, ids in enumerate([[1, 7], None, [1]]):
        for d in server.send(t, world(t), interest={"a": ids})["a"]:
            v = client.receive(d)
        server.receive("a", client.reply())
        seen.append(len(v.ids))
    assert seen == [2, 12, 1]           # (after the whole world, nothing lingers)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_hysteresis_argument(bad):
    with pytest.raises(ValueError, match=r"StreamServer: hysteresis must be a number of ticks >= 0"):
        qc.StreamServer(SCHEMA, hysteresis=bad)
