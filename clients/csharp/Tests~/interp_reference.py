"""The Python reference's answers for the C# tests' random interpolation scenarios.

Usage: interp_reference.py REPO SCENARIOS.json OUT.json. Loads quantcodec/interpolation.py by
its path (it needs only numpy, not the package's compiled core), replays every scenario (a schema
spec, capacity, max_extrapolation, pushes of views given as their dequantized values, samples,
resets) and writes, for each op, what Interpolator answered: a push's kept flag; a reset's
{"reset": true}; a sample's a, b, alpha, ids, every field's values flattened, and stats. Floats
are binary64 hex, as in the kit.
"""
import importlib.util
import json
import os
import struct
import sys

import numpy as np

repo, src, dst = sys.argv[1:4]
spec = importlib.util.spec_from_file_location("qc_interpolation", os.path.join(repo, "quantcodec", "interpolation.py"))
interp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(interp)


def f(h):
    return struct.unpack(">d", bytes.fromhex(h))[0]


def h(x):
    return struct.pack(">d", float(x)).hex()


class Codec:                        # what Interpolator reads of a codec: its spec
    def __init__(self, s):
        self.s = s

    def spec(self):
        return self.s


class Obj:
    pass


def width(c):
    if c["kind"] == "NearlyZero":
        c = c["inner"]
    return {"Vector": len(c.get("codecs", [])), "Quat": 4, "UnitVector": 3}.get(c["kind"], 1)


out = []
for sc in json.load(open(src)):
    schema = Obj()
    schema.fields = [(x["name"], Codec(x["codec"])) for x in sc["schema"]["fields"]]
    widths = [width(x["codec"]) for x in sc["schema"]["fields"]]
    ip = interp.Interpolator(schema, capacity=sc["capacity"], max_extrapolation=f(sc["max_extrapolation"]))
    res = []
    for op in sc["ops"]:
        if "reset" in op:
            ip.reset()
            res.append({"reset": True})
            continue
        if "push" in op:
            v = Obj()
            v.seq = op["push"]
            v.ids = np.array(op["ids"], dtype=np.uint64)
            rows = [[f(x) for x in r] for r in op["rows"]]
            v.columns = {}
            off = 0
            for (name, _), w in zip(schema.fields, widths):
                a = np.array([r[off:off + w] for r in rows], dtype=np.float64).reshape(len(rows), w)
                v.columns[name] = a if w > 1 else a.reshape(len(rows))
                off += w
            res.append({"kept": ip.push(v)})
            continue
        m = ip.sample(f(op["sample"]))
        st = ip.stats
        res.append({"a": m.a, "b": m.b, "alpha": h(m.alpha), "ids": [int(i) for i in m.ids],
                    "values": [[h(x) for x in np.asarray(m.columns[name], dtype=np.float64).reshape(-1)]
                               for name, _ in schema.fields],
                    "stats": [st["pushed"], st["dropped"], st["late"], st["extrapolated"], st["early"]]})
    out.append(res)
json.dump(out, open(dst, "w"))
