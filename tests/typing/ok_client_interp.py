"""A client loop: StreamClient + Interpolator (docs/interpolation.md).

A typed user program: `mypy --strict` must pass on it (tests/typing/check.py), and it runs.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import numpy.typing as npt

import quantcodec as qc
from quantcodec.interpolation import Interpolator, Sample


def main() -> None:
    schema = qc.Schema("Body", [("position", qc.Vector(*[qc.Bounded(-64, 64, 16)] * 3)),
                                ("yaw", qc.Angle(12)), ("rotation", qc.Quat(9))])
    server = qc.StreamServer(schema)
    client = qc.StreamClient(schema, key=None, max_bytes=64 * 1024 * 1024)
    server.connect("me")
    buffer = Interpolator(schema, capacity=32, max_extrapolation=2.0)
    ids = np.arange(3)
    for tick in range(6):
        world = schema.snapshot(ids, {"position": np.full((3, 3), float(tick)), "yaw": np.full(3, 0.5 * tick),
                                      "rotation": np.tile([0, 0, 0, 1.0], (3, 1))})
        for d in server.send(tick, world)["me"]:
            view: Optional[qc.Snapshot] = client.receive(d)
            if view is not None:
                pushed: bool = buffer.push(view)
            r: Optional[bytes] = client.reply()
            if r is not None:
                server.receive("me", r)
    newest: Optional[int] = buffer.newest
    assert newest is not None
    frame: Sample = buffer.sample(newest - 2.0 + 0.25)
    a: int = frame.a
    b: Optional[int] = frame.b
    alpha: float = frame.alpha
    pos: npt.NDArray[np.float64] = frame.columns["position"]
    late: int = buffer.stats["late"]
    print(a, b, alpha, pos[0], late, client.latest)


if __name__ == "__main__":
    main()
