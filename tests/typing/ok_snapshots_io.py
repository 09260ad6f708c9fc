"""Encoding/decoding records and snapshots with the layer beneath the session (docs/snapshots.md).

A typed user program: `mypy --strict` must pass on it (tests/typing/check.py), and it runs.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np
import numpy.typing as npt

import quantcodec as qc


def main() -> None:
    schema = qc.Schema("World", [
        ("position", qc.Vector(qc.Bounded(-64, 64, 16), qc.Bounded(0, 32, 14), qc.Bounded(-64, 64, 16))),
        ("rotation", qc.Quat(9)),
    ])
    data: bytes = schema.encode({"position": (1.0, 2.0, 3.0), "rotation": (0.0, 0.0, 0.0, 1.0)})
    record: Dict[str, Any] = schema.decode(data)
    blob: bytes = schema.encode_many({"position": np.zeros((4, 3)), "rotation": np.tile([0, 0, 0, 1.0], (4, 1))})
    cols: Dict[str, npt.NDArray[Any]] = schema.decode_many(blob, 4)

    n = 100
    ids = np.arange(1000, 1000 + n, dtype=np.uint32)
    columns = {"position": np.zeros((n, 3)), "rotation": np.tile([0.0, 0.0, 0.0, 1.0], (n, 1))}
    encoder = qc.SnapshotEncoder(schema, history=64)
    hello: bytes = encoder.hello()
    decoder = qc.SnapshotDecoder.from_hello(schema, hello)
    snap: qc.Snapshot = schema.snapshot(ids, columns)
    packet: bytes = encoder.encode(0, snap)
    datagrams: List[bytes] = encoder.encode_datagrams(1, snap)
    view: Optional[qc.Snapshot] = decoder.decode(packet)
    latest: Optional[int] = decoder.latest
    if latest is not None:
        encoder.ack(latest)
    assert view is not None
    seq: Optional[int] = view.seq
    assert seq == 0
    recs: Dict[int, Dict[str, Any]] = view.records()
    try:
        decoder.decode(b"junk")
    except qc.DecodeError as e:
        kind: str = e.kind
        print(kind)
    cache = qc.PacketCache()
    enc2 = qc.SnapshotEncoder(schema, cache=cache)
    hits: int = cache.hits
    bw = qc.BitWriter()
    bw.write(5, 3)
    bw.write(17, 5)
    raw: bytes = bw.getvalue()
    br = qc.BitReader(raw)
    v: int = br.read(3)
    packed: bytes = qc.pack(np.arange(4, dtype=np.uint32), 3)
    un: npt.NDArray[np.integer[Any]] = qc.unpack(packed, 4, 3)
    print(record, cols, datagrams, seq, recs, hits, raw, v, un, enc2)


if __name__ == "__main__":
    main()
