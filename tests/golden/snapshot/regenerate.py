"""Write the golden snapshot stream. Run only when the wire format changes ON PURPOSE
(then docs/wire-format.md changes in the same commit):

    python tests/golden/snapshot/regenerate.py

schema.json is the schema of the scenario (test_snapshot.pose_schema); hello.bin is the stream's
hello (docs/wire-format.md 13: a fixed stream id, 0x5EED, and a fixed ``started``, so that it
and every check are the same on every run); packet_NN.bin are its datagrams (each a packet and
its 4-byte check, sections 6-7 and 11). packets.json records the stream id and started, and per
datagram its file, size, the size of its bare packet, sequence number, baseline, whether it is
acknowledged, and the decoded ids and code matrix, plus the slot table the plain-Python
reference decoder (tests/refdecoder.py) works from.
"""
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))          # tests/


def slot_kind(entry, codec):
    if entry["kind"] == "flag":
        return "flag"
    return {"Quat": "quat", "UnitVector": "uvec", "Bool": "abs", "Enum": "abs",
            "PowerCurve": "smag", "Half": "smag"}.get(entry["kind"], "ord")


def main():
    import test_snapshot as ts

    schema = ts.pose_schema()
    (HERE / "schema.json").write_text(schema.to_json() + "\n")
    schema, out = ts.golden_stream()
    plan = schema._plan
    slots = []
    codecs = [None] * plan.nslot
    for entry in plan.slot_table():
        spec = schema.codecs[entry["field"]].spec()
        if spec["kind"] == "Vector":
            spec = spec["codecs"][entry["comp"]]
        elif spec["kind"] == "NearlyZero":
            inner = spec["inner"]
            spec = inner["codecs"][entry["comp"]] if inner["kind"] == "Vector" else inner
        kind = slot_kind(entry, spec)
        signed = spec.get("kind") == "Int" or (spec.get("kind") == "Fixed" and spec.get("signed", True))
        cbits = spec.get("bits", 0) if kind in ("quat", "uvec") else 0
        slots.append([kind, entry["bits"], entry["field"], entry["span"], cbits, bool(signed) and kind != "flag"])
    packets = []
    import quantcodec as qc

    enc = ts.golden_encoder(schema)           # replay, to record each packet's baseline
    (HERE / "hello.bin").write_bytes(enc.hello())
    for i, (seq, snap, pkt) in enumerate(out):
        name = f"packet_{i:02d}.bin"
        (HERE / name).write_bytes(pkt)
        assert enc.encode(seq, snap) == pkt
        packets.append({"file": name, "seq": seq, "bytes": len(pkt), "packet_bytes": len(pkt) - 4,
                        "baseline": enc.last_baseline, "acked": i in ts.ACKED,
                        "ids": snap.ids.tolist(), "matrix": snap.matrix.tolist()})
        if i in ts.ACKED:
            enc.ack(seq)
    manifest = {"fingerprint": schema.fingerprint, "stream_id": enc.stream_id, "started": enc.started,
                "hello": "hello.bin", "slots": slots, "packets": packets}
    (HERE / "packets.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote the hello and {len(packets)} datagrams to {HERE}")


if __name__ == "__main__":
    main()
