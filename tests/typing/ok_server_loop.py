"""A server loop: StreamServer with interest, priority and a per-client budget (docs/views.md).

A typed user program: `mypy --strict` must pass on it (tests/typing/check.py), and it runs.
"""
from __future__ import annotations

from typing import Dict, Hashable, List, Optional, Set, Tuple

import numpy as np
import numpy.typing as npt

import quantcodec as qc
from quantcodec import interest

Address = Tuple[str, int]


def make_schema() -> qc.Schema:
    return qc.Schema("Unit", [
        ("position", qc.Vector(qc.Bounded(-2048, 2048, 20), qc.Bounded(-16, 48, 14), qc.Bounded(-2048, 2048, 20))),
        ("rotation", qc.Quat(9)),
    ])


def run(ticks: int = 3) -> Dict[Address, int]:
    schema = make_schema()
    server: qc.StreamServer = qc.StreamServer(schema, budget=1200, history=64, max_datagram=1200)
    clients: Dict[Address, qc.StreamClient] = {}
    players: Dict[Address, int] = {("10.0.0.1", 5000): 0, ("10.0.0.2", 5000): 1}
    for addr in players:
        server.connect(addr, budget=900)
        clients[addr] = qc.StreamClient(schema)
    rng = np.random.default_rng(0)
    n = 2000
    ids: npt.NDArray[np.uint64] = np.arange(1, n + 1, dtype=np.uint64)
    positions: npt.NDArray[np.float64] = np.column_stack(
        [rng.uniform(-900, 900, n), np.zeros(n), rng.uniform(-900, 900, n)])
    rotations = np.tile([0.0, 0.0, 0.0, 1.0], (n, 1))
    seen: Dict[Address, int] = {}
    for tick in range(ticks):
        world: qc.Snapshot = schema.snapshot(ids, {"position": positions, "rotation": rotations})
        index = interest.GridIndex(positions[:, [0, 2]], world.ids, cell=75.0)
        centres = positions[list(players.values())][:, [0, 2]]
        near, dist = index.within(centres, 150.0, distances=True)
        interests: Dict[Address, npt.NDArray[np.uint64]] = dict(zip(players, near))
        weights: Dict[Address, npt.NDArray[np.float64]] = {
            c: 1.0 / (1.0 + d / 25.0) for c, d in zip(players, dist)}
        out: Dict[Hashable, List[bytes]] = server.send(tick, world, interest=interests, priority=weights)
        for addr in players:
            datagrams = out[addr]
            total: int = sum(len(d) for d in datagrams)
            assert total <= 900
            for d in datagrams:
                try:
                    view = clients[addr].receive(d)
                except qc.DecodeError as e:
                    print("refused:", e.kind)
                    continue
                if view is not None:
                    seen[addr] = len(view.ids)
            reply = clients[addr].reply()
            if reply is not None:
                server.receive(addr, reply)
        link: qc.LinkStats = server.link(("10.0.0.1", 5000))
        if link.quiet > 300:
            server.disconnect(("10.0.0.1", 5000))

    # a callable interest works too
    def everyone(client: Address, w: qc.Snapshot) -> npt.NDArray[np.uint64]:
        return w.ids
    server.send(ticks, world, interest=everyone)
    # and a set of ids a client (a game's own visibility sets), or None for the whole world
    visible: Dict[Address, Optional[Set[int]]] = {p: {int(i) for i in world.ids[:10]} for p in players}
    visible[next(iter(players))] = None
    server.send(ticks + 1, world, interest=visible)
    return seen


if __name__ == "__main__":
    print(run())
