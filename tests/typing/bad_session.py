"""Misuse of the session and snapshot layers: mypy --strict must flag each line marked `# E: <code>`
(tests/typing/check.py). Never run."""
from __future__ import annotations

import numpy as np

import quantcodec as qc

schema = qc.Schema("S", [("x", qc.Bounded(0, 1, 8))])
world = schema.snapshot([1], {"x": [0.5]})
server = qc.StreamServer(schema, budget="lots")  # E: arg-type
server.connect(["unhashable"])  # E: arg-type
out = server.send("tick-one", world)  # E: arg-type
server.send(0, {"x": np.zeros(3)})  # E: arg-type
n: str = server.send(0, world)  # E: assignment
client = qc.StreamClient(schema, key=12345)  # E: arg-type
view = client.receive("text")  # E: arg-type
s: str = client.reply()  # E: assignment
enc = qc.SnapshotEncoder("not a schema")  # E: arg-type
enc.ack("seq")  # E: arg-type
seq: int = qc.SnapshotDecoder(schema).latest  # E: assignment
age: int = server.link("me").ack_age  # E: assignment
