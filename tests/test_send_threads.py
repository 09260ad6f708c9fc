"""StreamServer(threads=N): the clients' views and packets built on N threads give the datagrams
of one thread, byte for byte, through loss, acks, budgets, interest, priority and restarts; the
errors of the interest and priority (callables or arrays refused) are raised as on one thread."""

import itertools

import numpy as np
import pytest

import quantcodec as qc
from helpers import deliver_exact, wait_child
from quantcodec import interest as qi
from quantcodec import snapshot as snapshot_module

SCHEMA = qc.Schema("Walker", [
    ("position", qc.Vector(qc.Bounded(-512, 512, 16), qc.Bounded(-8, 8, 10), qc.Bounded(-512, 512, 16))),
    ("rotation", qc.Quat(9)),
])


@pytest.fixture
def fixed_streams(monkeypatch):
    """Stream ids and start times drawn from a counter, the same for two servers made alike."""
    def install():
        ids = itertools.count(0x1234)
        clock = itertools.count(1_700_000_000_000_000)
        monkeypatch.setattr(snapshot_module, "_stream_id",
                            lambda sid, owner: next(ids) if sid is None else sid)
        monkeypatch.setattr(snapshot_module, "_started", lambda: next(clock))
    return install


class Scene:
    def __init__(self, n=1500, seed=0):
        r = np.random.default_rng(seed)
        self.r = r
        self.ids = np.arange(1, n + 1, dtype=np.uint64) * np.uint64(5)
        self.pos = np.column_stack([r.uniform(-400, 400, n), np.zeros(n), r.uniform(-400, 400, n)])
        self.vel = r.normal(0, 1.5, (n, 3)) * (r.random((n, 1)) < 0.4)
        self.vel[:, 1] = 0
        self.rot = np.tile([0.0, 0.0, 0.0, 1.0], (n, 1))

    def step(self):
        self.pos = np.clip(self.pos + self.vel, -500, 500)
        return SCHEMA.snapshot(self.ids, {"position": self.pos, "rotation": self.rot})


def twelve(threads, seed):
    """A server of budget 700 on ``threads`` threads with 12 clients (0-11) of a 300-entity
    scene: (scene, server, clients, the first world, equal weights for every client)."""
    scene = Scene(n=300, seed=seed)
    server = qc.StreamServer(SCHEMA, budget=700, threads=threads)
    for c in range(12):
        server.connect(c)
    clients = {c: qc.StreamClient(SCHEMA) for c in range(12)}
    world = scene.step()
    return scene, server, clients, world, {c: np.ones(world.ids.shape[0]) for c in range(12)}


def exact_run(server, clients, scene, ticks, priority, budget):
    """Ticks over a perfect link: every client's datagrams within the budget, every view it
    decodes the one the server recorded, its replies taken; every client has a view at the end."""
    for t in ticks:
        world = scene.step()
        out = server.send(t, world, priority=priority)
        assert all(sum(len(d) for d in dgs) <= budget for dgs in out.values())
        deliver_exact(server, clients, out)
    assert all(cl.view is not None for cl in clients.values())


def run(threads, fixed_streams, ticks=45, nclients=23, seed=3):
    """A server of ``nclients`` (some with budgets of their own, some none) over a lossy link
    with late acks; interest from the grid index, distance weights from a callable; a client
    restarts at tick 20, one connects late. Returns every tick's datagrams and the views."""
    fixed_streams()
    scene = Scene(seed=seed)
    rng = np.random.default_rng(seed)
    server = qc.StreamServer(SCHEMA, budget=900, threads=threads)
    names = [f"c{i}" for i in range(nclients)]
    for i, c in enumerate(names):
        server.connect(c, budget=400 if i % 5 == 1 else None)
        if i % 7 == 3:
            server.set_budget(c, None)           # interest and priority, no budget
    clients = {c: qc.StreamClient(SCHEMA, nonce=i + 1) for i, c in enumerate(names)}
    homes = {c: scene.pos[i * 37][[0, 2]] for i, c in enumerate(names)}
    flight = []
    record = []
    for t in range(ticks):
        world = scene.step()
        if t == 20:                          # a client restarts: a new incarnation
            clients["c4"] = qc.StreamClient(SCHEMA, nonce=99)
        if t == 12:
            server.connect("late")
            clients["late"] = qc.StreamClient(SCHEMA, nonce=77)
            homes["late"] = np.zeros(2)
        index = qi.GridIndex(scene.pos[:, [0, 2]], world.ids, cell=40.0)
        order = list(server.clients)
        near, dist = index.within(np.array([homes[c] for c in order]), 120.0, distances=True)
        ids = dict(zip(order, near))
        weights = dict(zip(order, dist))

        def priority(client, w):
            return 1.0 / (1.0 + weights[client] / 25.0)
        out = server.send(t, world, interest=ids, priority=priority)
        record.append(out)
        for c, dgs in out.items():
            for d in dgs:
                if rng.random() > 0.1:
                    flight.append((t + int(rng.integers(1, 4)), c, d))
        for item in [f for f in flight if f[0] <= t]:
            flight.remove(item)
            _, c, d = item
            try:
                clients[c].receive(d)
            except qc.DecodeError:
                pass
            reply = clients[c].reply()
            if reply is not None and rng.random() > 0.1:
                try:
                    server.receive(c, reply)
                except qc.DecodeError:
                    pass
    return record, {c: (cl.view.seq, cl.view) if cl.view is not None else None for c, cl in clients.items()}


def test_threaded_send_equals_serial_datagram_for_datagram(fixed_streams):
    one, views1 = run(1, fixed_streams)
    for threads in (2, 3, 8):
        many, views = run(threads, fixed_streams)
        assert len(many) == len(one)
        for t, (a, b) in enumerate(zip(one, many)):
            assert list(a) == list(b), t                  # the clients, in connect order
            for c in a:
                assert a[c] == b[c], (threads, t, c)      # every datagram, byte for byte
        assert views == views1
    # the scene exercised what it is meant to: hellos beside packets, budgets binding
    assert any(len(d) > 1 for out in one for d in out.values())
    assert max(sum(len(d) for d in out["c1"]) for out in one) > 300
    assert all(sum(len(d) for d in out["c1"]) <= 400 for out in one)


def test_threaded_send_without_views_equals_serial(fixed_streams):
    """No interest, priority or budget: the world itself to every client, on threads too."""
    outs = []
    for threads in (1, 4):
        fixed_streams()
        scene = Scene(n=300, seed=5)
        server = qc.StreamServer(SCHEMA, threads=threads)
        for i in range(9):
            server.connect(i)
        outs.append([server.send(t, scene.step()) for t in range(5)])
    assert outs[0] == outs[1]


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize("which", ["interest", "priority"])
def test_callable_errors_surface_as_serially(threads, which):
    """A callable interest or priority that raises for one client: the same exception from
    send, raised before any client's packet is coded (callables run on the calling thread, in
    connect order: the ones after the failing client are not called); the next send works."""
    scene = Scene(n=200, seed=1)
    server = qc.StreamServer(SCHEMA, budget=600, threads=threads)
    for i in range(10):
        server.connect(i)
    calls = []

    def bad(client, world):
        calls.append(client)
        if client == 6:
            raise RuntimeError(f"no {which} for client {client}")
        return world.ids[:50] if which == "interest" else np.ones(world.ids.shape[0])
    world = scene.step()
    kw = {which: bad}
    with pytest.raises(RuntimeError, match=f"no {which} for client 6"):
        server.send(0, world, **kw)
    assert calls == list(range(7))
    assert all(server.encoder(c).held == () for c in range(10))     # nothing coded
    out = server.send(1, scene.step())
    assert sorted(out) == list(range(10)) and all(len(d) == 2 for d in out.values())   # hello + packet


@pytest.mark.parametrize("threads", [1, 2, 3, 5])
def test_errors_in_the_views_surface_as_serially(threads):
    """Ids or weights refused while building (on a worker thread, with threads > 1): send
    raises the exception one thread raises, the first failing client's in connect order, even
    when a later run fails first; the clients before it are coded; the streams stay exact."""
    scene, server, clients, world, good = twelve(threads, seed=2)
    names = list(clients)
    bad = dict(good)
    bad[4] = np.ones(world.ids.shape[0])
    bad[4][7] = np.inf                        # a weight not finite: the builder refuses it
    bad[11] = -np.ones(world.ids.shape[0])    # negative weights, in the last run
    with pytest.raises(ValueError) as serial:
        server.send(0, world, priority=bad)
    assert str(serial.value) == ("StreamServer.send: client 4: weights must be finite, non-negative "
                                 "and at most 1e100 (only their ratios count), got inf at row 7")
    for c in range(4):                          # before the failing client: coded (as if lost)
        assert server.encoder(c).held == (0,)
    assert server.encoder(4).held == ()
    # what send checks before building: nothing more is coded
    held = [server.encoder(c).held for c in names]
    ids = dict.fromkeys(names, world.ids[:10])
    ids[2] = np.array([-1, 5])
    with pytest.raises(ValueError, match=r"client 2: interest: ids must be non-negative, got -1 at row 0"):
        server.send(1, world, interest=ids)
    short = dict(good)
    short[9] = np.ones(3)
    with pytest.raises(ValueError, match="client 9: 3 priority weights for 300 entities in the world"):
        server.send(1, world, priority=short)
    assert [server.encoder(c).held for c in names] == held
    exact_run(server, clients, scene, range(2, 12), good, 700)   # then a clean run


def test_an_error_found_without_the_gil_stops_its_batch_where_one_thread_stops():
    """Negative weights are found in the views' compute, without the GIL, for a batch of
    clients at once: send raises it; the clients before the failing one are coded, those after
    it in its batch are not (their builds dropped), as on one thread; the next tick is exact."""
    scene, server, clients, world, good = twelve(2, seed=5)
    bad = dict(good)
    bad[2] = -np.ones(world.ids.shape[0])       # in the first run (clients 0-5), its batch
    with pytest.raises(ValueError, match="finite, non-negative and at most 1e100"):
        server.send(0, world, priority=bad)
    assert [server.encoder(c).held for c in range(6)] == [(0,), (0,), (), (), (), ()]
    exact_run(server, clients, scene, range(1, 8), good, 700)


def test_threads_argument():
    for bad, kind in ((0, ValueError), (-1, ValueError), (1.5, TypeError), (True, TypeError), ("2", TypeError)):
        with pytest.raises(kind, match="threads must be a positive integer"):
            qc.StreamServer(SCHEMA, threads=bad)
    server = qc.StreamServer(SCHEMA, threads=3)
    assert server.threads == 3
    assert qc.StreamServer(SCHEMA).threads == 1
    assert server.send(0, Scene(n=10).step()) == {}           # no clients: nothing, no pool


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="no fork on this platform")
# (Python 3.12 and later warn on any fork of a process with threads: that is this test's case)
@pytest.mark.filterwarnings("ignore:This process .*is multi-threaded:DeprecationWarning")
def test_a_forked_child_sends_on_threads():
    """A child forked after send ran on two threads has a copy of the server whose pool has no
    threads: its send makes a pool of its own and codes the datagrams the parent codes (a
    digest through a pipe), instead of waiting on runs no thread would take."""
    import hashlib
    import os

    scene, server, clients, world, eq = twelve(2, 5)
    server.send(0, world, priority=eq)
    nxt = scene.step()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                              # the child
        try:
            out = server.send(1, nxt, priority=eq)
            os.write(w, hashlib.sha256(repr(sorted(out.items())).encode()).digest())
        finally:
            os._exit(0)
    os.close(w)
    want = hashlib.sha256(repr(sorted(server.send(1, nxt, priority=eq).items())).encode()).digest()
    try:
        wait_child(pid, "StreamServer.send on threads")
        got = os.read(r, 64)
    finally:
        os.close(r)
    assert got == want


def test_bench_views_part4_quick_runs():
    """bench/bench_views.py --part 4 (StreamServer.send on 1 and 2 threads) runs: a smoke test,
    no time asserted."""
    from benchscripts import load

    bv = load("bench_views")
    lines = []
    res = bv.main(["--quick", "--part", "4", "--ticks", "12", "--repeats", "1"], out=lines.append)
    assert sorted(res["server"]) == [1, 2]
    assert any(x.strip().startswith("2 ") or "2 threads" in x for x in lines)
    res = bv.main(["--quick", "--part", "6", "--ticks", "9"], out=lines.append)
    assert res["cold"]["cold_us"] > 0 and res["cold"]["warm_us"] > 0
    res = bv.main(["--quick", "--part", "6", "--ticks", "9", "--evict"], out=lines.append)
    assert set(res["cold"]) == {"cold", "warm", "l2", "l3"} and min(res["cold"].values()) > 0
    res = bv.main(["--quick", "--part", "5", "--ticks", "9"], out=lines.append)   # (probe or not)
    # (a build in its three steps, as StreamServer.send runs them)
    assert {"world", "grid", "query", "view begin", "view compute", "view end", "packets", "send1",
            "send2"} <= set(res["gil"])


def test_bench_views_part7_quick_runs():
    """bench/bench_views.py --part 7 (the collector's pauses) runs: no time asserted; with the
    snapshots untracked the collector walks fewer objects than with them tracked (the server's
    views: 40 clients x their windows), and the package's setting is back after it."""
    import gc

    from benchscripts import load

    bv = load("bench_views")
    lines = []
    res = bv.main(["--quick", "--part", "7", "--ticks", "40", "--repeats", "1"], out=lines.append)
    objects = {k: v[6] for k, v in res["pauses"].items()}
    assert objects["tracked"] - objects["untracked"] >= 40 * 16, objects
    assert any(x.strip().startswith("untracked") for x in lines)
    schema = bv.big_schema()
    assert not gc.is_tracked(schema.snapshot([1], {"position": [[0.0, 0.0, 0.0]], "rotation": [[1.0, 0, 0, 0]]}))
