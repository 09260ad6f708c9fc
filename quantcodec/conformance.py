"""The conformance kit and the reference runner of every client (SPEC section 7,
docs/wire-format.md section 16, conformance/README.md).

    quantcodec decode-stream SCHEMA.json DATAGRAMS.bin     the reference runner
    quantcodec conformance make DIR                         write the kit (deterministic)

A datagram file holds each datagram as a 4-byte little-endian length and its bytes. The runner
prints one compact JSON line per datagram: ``{"seq":S,"ids":[...],"codes":[[...],...]}`` for a
completed snapshot, ``{"error":"KIND"}`` for a refused datagram, ``{"pending":true}`` for one
that completes nothing. The kit is a pure function of this package's version: the test suite
regenerates it and fails when a byte differs from the committed ``conformance/``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import pathlib
import struct

import numpy as np

from ._schemabase import plan_of

__all__ = ["read_datagrams", "write_datagrams", "runner_lines", "decode_stream", "make"]

_LEN = struct.Struct("<I")


# -- datagram files and the runner ----------------------------------------------------------------

def write_datagrams(path, datagrams):
    with open(path, "wb") as f:
        for d in datagrams:
            f.write(_LEN.pack(len(d)))
            f.write(bytes(d))


def read_datagrams(path):
    """The datagrams of a file; ValueError when it ends inside one."""
    data = pathlib.Path(path).read_bytes()
    out, pos = [], 0
    while pos < len(data):
        if pos + 4 > len(data):
            raise ValueError(f"{path}: {len(data) - pos} bytes at offset {pos}, too few for a length")
        (n,) = _LEN.unpack_from(data, pos)
        pos += 4
        if pos + n > len(data):
            raise ValueError(f"{path}: a datagram of {n} bytes at offset {pos - 4} runs past the end")
        out.append(data[pos:pos + n])
        pos += n
    return out


def signed_slots(schema):
    """Per slot: whether its code is signed (Int, Fixed with signed=True)."""
    out = []
    for entry in plan_of(schema).slot_table():
        spec = schema.codecs[entry["field"]].spec() if hasattr(schema, "codecs") else \
            dict(schema.fields)[entry["field"]].spec()
        if entry["kind"] == "flag":
            out.append(False)
            continue
        if spec["kind"] == "Vector":
            spec = spec["codecs"][entry["comp"]]
        elif spec["kind"] == "NearlyZero":
            inner = spec["inner"]
            spec = inner["codecs"][entry["comp"]] if inner["kind"] == "Vector" else inner
        out.append(spec["kind"] == "Int" or (spec["kind"] == "Fixed" and spec.get("signed", True)))
    return out


def _line(obj):
    return json.dumps(obj, separators=(",", ":"))


def view_line(view, signed):
    m = view.matrix
    cols = []
    for j, s in enumerate(signed):
        col = m[:, j]
        cols.append((col.view(np.int64) if s else col).tolist())
    rows = [list(r) for r in zip(*cols)] if cols else [[] for _ in range(len(view))]
    return _line({"seq": view.seq, "ids": view.ids.tolist(), "codes": rows})


def runner_lines(schema, datagrams, decoder=None, *, key=None, max_bytes=None, replies=None, idle=0):
    """The reference output: one line per datagram, from a decoder that starts with no hello.
    ``key``: the shared key (keyed checks); ``max_bytes``: the client's limit; ``replies``: a
    nonce: a StreamClient with it decodes, and each line ends with the reply it makes after
    that datagram (``"reply"``: hex, or null); ``idle`` (with ``replies``): then ``idle`` more
    calls of ``reply()`` with no datagram between them, their results listed in order
    (``"idle"``: hex or null each): the keep-alives of section 18 that a client makes while
    nothing arrives."""
    from .errors import DecodeError
    from .session import StreamClient
    from .snapshot import SnapshotDecoder
    client = None
    if replies is not None:
        client = StreamClient(schema, key=key, max_bytes=max_bytes, nonce=replies)
        decode = client.receive
    else:
        dec = decoder if decoder is not None else SnapshotDecoder(schema, key=key, max_bytes=max_bytes)
        decode = dec.decode
    signed = signed_slots(schema)
    out = []
    for d in datagrams:
        try:
            view = decode(d)
        except DecodeError as e:
            line = _line({"error": e.kind})
        else:
            line = _line({"pending": True}) if view is None else view_line(view, signed)
        if client is not None:
            r = client.reply()
            line = line[:-1] + ',"reply":' + _hex_or_null(r) + "}"
            if idle:
                calls = [_hex_or_null(client.reply()) for _ in range(idle)]
                line = line[:-1] + ',"idle":[' + ",".join(calls) + "]}"
        out.append(line)
    return out


def _hex_or_null(reply):
    return "null" if reply is None else f'"{reply.hex()}"'


def decode_stream(schema_path, datagrams_path, out, **options):
    from .schema import Schema
    schema = Schema.load(schema_path)
    for line in runner_lines(schema, read_datagrams(datagrams_path), **options):
        out.write(line + "\n")


# -- the kit -------------------------------------------------------------------------------------

def _bits(x):
    return "%016x" % struct.unpack("<Q", struct.pack("<d", float(x)))[0]


def _code(c):
    return str(int(c))


def kit_schemas():
    """name -> Schema: every codec kind and option."""
    import quantcodec as qc
    pose = qc.Schema("Pose", [
        ("position", qc.Vector(qc.Bounded(-64, 64, 16), qc.Bounded(0, 32, 14), qc.Bounded(-64, 64, 16))),
        ("rotation", qc.Quat(9)),
        ("velocity", qc.NearlyZero(qc.Vector(*[qc.PowerCurve(32, 2, 10)] * 3), 0.01)),
        ("yaw", qc.Angle(12)),
        ("health", qc.UInt(8)),
        ("state", qc.Enum(["idle", "walk", "run"])),
        ("grounded", qc.Bool()),
    ], version=1)
    all_kinds = qc.Schema("AllKinds", [
        ("b_end", qc.Bounded(-2048, 2048, 20)),
        ("b_bins", qc.Bounded(-1.5, 3.25, 7, mode="bins")),
        ("b_one", qc.Bounded(0, 1, 1)),
        ("b_32", qc.Bounded(-1e6, 1e6, 32)),
        ("fx_s", qc.Fixed(1e-7, 32)),
        ("fx_u", qc.Fixed(0.001, 18, signed=False, offset=-100.0)),
        ("fx_64", qc.Fixed(0.5, 64)),
        ("ang", qc.Angle(16)),
        ("ang_sd", qc.Angle(10, signed=True, unit="deg")),
        ("pc", qc.PowerCurve(50, 2, 10)),
        ("pc3", qc.PowerCurve(8, 3.5, 16)),
        ("half", qc.Half()),
        ("u64", qc.UInt(64)),
        ("u5", qc.UInt(5)),
        ("i8", qc.Int(8)),
        ("i64", qc.Int(64)),
        ("flag", qc.Bool()),
        ("mode", qc.Enum(["a", "b", "c", "d", "e"])),
        ("count", qc.Enum(1000)),
        ("single", qc.Enum(["only"])),
        ("q_small", qc.Quat(4)),
        ("q_big", qc.Quat(20, mode="bins")),
        ("normal", qc.UnitVector(8)),
        ("dir32", qc.UnitVector(24)),
        ("grid", qc.Grid(64.0, 20, 12)),
        ("nz", qc.NearlyZero(qc.Bounded(-10, 10, 12), 0.05)),
        ("nzv", qc.NearlyZero(qc.Vector(qc.PowerCurve(20, 2, 9), qc.Half(), qc.Bounded(-1, 1, 6)), 0.001)),
        ("vec", qc.Vector(qc.Angle(8), qc.Fixed(0.25, 12), qc.UInt(3))),
        ("hp", qc.IntRange(0, 100)),
        ("temp", qc.IntRange(-40, 85)),
        ("wide", qc.IntRange(-2 ** 40, 2 ** 40)),
        ("b_mid", qc.Bounded(-1, 1, 8, mode="midpoint")),
        ("q_mid", qc.Quat(9, mode="midpoint")),
    ], version=8)
    one_bit = qc.Schema("OneBit", [("on", qc.Bool())], version=0)
    return {"pose": pose, "all_kinds": all_kinds, "one_bit": one_bit}


def _sample_inputs(codec, rng, n):
    """Inputs for a codec: values in and around its range, edges, and specials."""
    spec = codec.spec()
    kind = spec["kind"]
    if kind == "Quat":
        q = rng.normal(size=(n, 4))
        extra = np.array([[0, 0, 0, 1], [1, 0, 0, 0], [0.5, 0.5, 0.5, 0.5], [0.5, -0.5, 0.5, -0.5],
                          [2 ** -0.5, -(2 ** -0.5), 0, 0], [0, 0, -1, 0]], dtype=float)
        return np.concatenate([extra, q])
    if kind == "UnitVector":
        v = rng.normal(size=(n, 3))
        extra = np.array([[0, 0, 1], [0, 0, -1], [1, 0, 0], [-1, 0, 0], [0, -1, 0], [1, 1, -1]], dtype=float)
        return np.concatenate([extra, v])
    if kind in ("UInt", "Int", "Bool", "Enum", "IntRange"):
        return None
    lo, hi = {"Bounded": (spec.get("min"), spec.get("max")),
              "PowerCurve": (-spec.get("max", 1), spec.get("max", 1)),
              "Angle": (-7.0, 7.0) if spec.get("unit", "rad") == "rad" else (-400.0, 400.0),
              "Half": (-70000.0, 70000.0)}.get(kind, (None, None))
    if kind == "Fixed":
        span = spec["step"] * 2.0 ** min(spec["bits"], 40)
        lo, hi = spec["offset"] - span, spec["offset"] + span
    if kind == "Grid":
        half = spec["cell_size"] * 2.0 ** (spec["cell_bits"] - 1)
        lo, hi = -half * 1.1, half * 1.1
    x = rng.uniform(lo, hi, n)
    specials = [lo, hi, 0.0, -0.0, (lo + hi) / 2, lo - 1, hi + 1]
    if kind == "Half":
        specials += [1e-8, -6.1e-5, 65504.0, 65520.0, float("inf"), float("-inf")]
    return np.concatenate([np.array(specials, dtype=float), x])


def _values_file(name, codec, rng):
    """Value vectors of one scalar, quaternion or unit-vector codec: code -> value (IEEE bits),
    input -> code, and codes that are not valid."""
    spec = codec.spec()
    kind = spec["kind"]
    bits = codec.bits
    signed = kind == "Int" or (kind == "Fixed" and spec.get("signed", True))
    cases = []
    # codes: edges and random ones, kept where valid
    top = (1 << bits) - 1
    cand = {0, 1, top, top - 1, top >> 1, (top >> 1) + 1}
    cand.update(int(v) for v in rng.integers(0, max(top, 1), 24, dtype=np.uint64, endpoint=True))
    codes = []
    for c in sorted(cand):
        code = c - (1 << bits) if signed and c >= 1 << (bits - 1) else c
        if kind == "Enum":
            code = c
        if codec.valid(code):
            codes.append(code)
    for code in codes:
        v = codec.dequantize(code)
        if kind == "Bool":
            v = [1.0 if v else 0.0]
        elif kind == "Enum":
            v = [float(code)]
        elif isinstance(v, tuple):
            v = list(v)
        else:
            v = [v]
        cases.append({"code": _code(code), "value": [_bits(x) for x in v]})
    quant = []
    inputs = _sample_inputs(codec, rng, 24)
    if inputs is not None:
        for x in inputs:
            xin = tuple(float(t) for t in x) if np.ndim(x) else float(x)
            try:
                code = codec.quantize(xin)
            except Exception:       # (a codec that refuses an input: not a vector)
                continue
            quant.append({"input": [_bits(t) for t in (xin if isinstance(xin, tuple) else (xin,))],
                          "code": _code(code)})
    invalid = []
    extra = []
    if spec.get("mode") == "midpoint":
        # the code 2**b - 1 is not a level: alone (Bounded), or as one kept component (Quat)
        if kind == "Bounded":
            extra = [top]
        else:
            cb = spec["bits"]
            mid = (1 << (cb - 1)) - 1
            extra = [(3 << (3 * cb)) | sum((((1 << cb) - 1) if j == k else mid) << ((2 - j) * cb) for j in range(3))
                     for k in range(3)]
    for c in [top + 1, 1 << 64 if bits < 64 else None] + extra + [int(v) for v in rng.integers(0, top + 1, 200, dtype=np.uint64)]:
        if c is None:
            continue
        code = c - (1 << bits) if signed and c < (1 << bits) and c >= 1 << (bits - 1) else c
        if not codec.valid(code) and _code(code) not in invalid:
            invalid.append(_code(code))
        if len(invalid) >= 8:
            break
    return {"name": name, "codec": spec, "bits": bits, "signed": signed, "dequantize": cases,
            "quantize": quant, "invalid": invalid}


def _scalar_codecs(schema):
    """(name, codec) of every leaf codec of a schema (vector components, NearlyZero inners)."""
    out = []
    for fname, codec in schema.fields:
        kind = codec.spec()["kind"]
        if kind == "Vector":
            out += [(f"{fname}.{i}", c) for i, c in enumerate(codec.codecs)]
        elif kind == "NearlyZero":
            inner = codec.inner
            if inner.spec()["kind"] == "Vector":
                out += [(f"{fname}.inner.{i}", c) for i, c in enumerate(inner.codecs)]
            else:
                out.append((f"{fname}.inner", inner))
        else:
            out.append((fname, codec))
    return out


def _random_columns(schema, rng, n, rest=None):
    """Columns of ``n`` random in-range values for every field (``rest``: share of NearlyZero
    values at rest)."""
    cols = {}
    for fname, codec in schema.fields:
        cols[fname] = _random_values(codec, rng, n, rest)
    return cols


def _random_values(codec, rng, n, rest):
    spec = codec.spec()
    kind = spec["kind"]
    if kind == "Vector":
        return np.stack([_random_values(c, rng, n, rest) for c in codec.codecs], axis=1)
    if kind == "NearlyZero":
        v = _random_values(codec.inner, rng, n, rest)
        still = rng.random(n) < (0.5 if rest is None else rest)
        v[still] = 0.0
        return v
    if kind in ("Quat", "UnitVector"):
        return rng.normal(size=(n, 4 if kind == "Quat" else 3))
    if kind == "Bool":
        return rng.random(n) < 0.5
    if kind == "Enum":
        return rng.integers(0, spec["count"] if "count" in spec else len(spec["labels"]), n)
    if kind == "UInt":
        return rng.integers(0, 2 ** min(spec["bits"], 63), n, dtype=np.uint64)
    if kind == "IntRange":
        return rng.integers(spec["lo"], spec["hi"], n, endpoint=True, dtype=np.int64)
    if kind == "Int":
        b = min(spec["bits"], 63)
        return rng.integers(-(2 ** (b - 1)), 2 ** (b - 1), n, dtype=np.int64)
    x = _sample_inputs(codec, rng, n)
    return rng.choice(x[np.isfinite(x)], n)


def _records_file(sname, schema, rng):
    from .errors import DecodeError
    signed = signed_slots(schema)
    cols = _random_columns(schema, rng, 24)
    snap = schema.snapshot(np.arange(24), cols)
    valid = []
    for i in range(24):
        codes = [int(c) - (1 << 64) if s and int(c) >= 1 << 63 else int(c)
                 for c, s in zip(snap.matrix[i].tolist(), signed)]
        (one,) = plan_of(schema).matrix_records(snap.matrix[i:i + 1], codes=True)
        data = schema.encode_codes(one)
        valid.append({"hex": data.hex(), "codes": [_code(c) for c in codes]})
    invalid = []
    base = bytes.fromhex(valid[0]["hex"])
    trials = [("short", base[:-1]), ("long", base + b"\x00"), ("empty", b"")]
    for i in range(400):
        b = bytearray(bytes.fromhex(valid[i % len(valid)]["hex"]))
        j = int(rng.integers(0, len(b) * 8))
        b[j // 8] ^= 1 << (j % 8)
        trials.append((f"bit {j} flipped", bytes(b)))
        b2 = bytes(rng.integers(0, 256, len(b), dtype=np.uint8))
        trials.append(("random", b2))
    seen = set()
    for why, data in trials:
        try:
            schema.decode(data)
        except DecodeError as e:
            key = (why.split()[0], str(e).split(":")[0])
            if data.hex() in seen:
                continue
            seen.add(data.hex())
            invalid.append({"hex": data.hex(), "why": why, "error": str(e)})
            if len(invalid) >= 40:
                break
    return {"schema": f"schemas/{sname}.json", "valid": valid, "invalid": invalid}


# -- streams -------------------------------------------------------------------------------------

class _Stream:
    """A simulated link from one encoder to one decoder, recording every datagram in the order
    it reaches the client, with the ack rule of section 15 and seeded loss, duplicates,
    reordering and delays."""

    def __init__(self, schema, rng, *, history=64, predict=True, max_datagram=1200, stream_id=1,
                 started=1_000_000, loss=0.0, dup=0.0, delay=(0, 0), ack_delay=1, ack_loss=0.0):
        from .snapshot import SnapshotDecoder
        self.schema = schema
        self.rng = rng
        self.kw = dict(history=history, predict=predict, max_datagram=max_datagram)
        self.enc = self._encoder(stream_id, started)
        self.dec = SnapshotDecoder(schema)
        self.loss, self.dup, self.delay = loss, dup, delay
        self.ack_delay, self.ack_loss = ack_delay, ack_loss
        self.tick = 0
        self.inflight = []           # (arrival tick, order, datagram)
        self.acks = []               # (arrival tick, seq)
        self.out = []                # datagrams as they arrive
        self.order = 0
        self.branches = set()

    def _encoder(self, stream_id, started):
        from .snapshot import SnapshotEncoder
        enc = SnapshotEncoder(self.schema, stream_id=stream_id, **self.kw)
        enc._started_us = started
        enc._hello = None
        return enc

    def send(self, datagrams, lossy=True):
        for d in datagrams:
            if lossy and self.rng.random() < self.loss:
                continue
            copies = 2 if lossy and self.rng.random() < self.dup else 1
            for _ in range(copies):
                lo, hi = self.delay
                at = self.tick + (int(self.rng.integers(lo, hi + 1)) if hi > lo else lo)
                self.inflight.append((at, self.order, bytes(d)))
                self.order += 1

    def inject(self, datagram):
        """A datagram that arrives now, ahead of everything in flight."""
        self._arrive(bytes(datagram))

    def _arrive(self, d):
        self.out.append(d)
        from .errors import DecodeError
        try:
            view = self.dec.decode(d)
        except DecodeError:
            return
        if view is not None and self.rng.random() >= self.ack_loss:
            self.acks.append((self.tick + self.ack_delay, self.dec.latest))

    def step(self, seq, snap, *, hello_rule=True):
        """One tick: the server encodes ``snap`` as ``seq`` and sends it (with the hello when the
        packet goes without a baseline); what is due arrives; acks that are due reach the server."""
        for at, s in [a for a in self.acks if a[0] <= self.tick]:
            self.enc.ack(s)
        self.acks = [a for a in self.acks if a[0] > self.tick]
        dgs = self.enc.encode_datagrams(seq, snap)
        if hello_rule and self.enc.last_baseline is None:
            self.send([self.enc.hello()])
        self.send(dgs)
        self.deliver()
        self.tick += 1

    def ticks(self, world, n):
        """``n`` ticks of ``world`` (numbered from 0), then everything in flight delivered."""
        for t in range(n):
            world.tick()
            self.step(t, world.snapshot())
        self.deliver(True)

    def junk(self, n):
        """``n`` random datagrams of 1 to 47 bytes that arrive now."""
        for _ in range(n):
            self.inject(self.rng.bytes(int(self.rng.integers(1, 48))))

    def deliver(self, everything=False):
        due = sorted([f for f in self.inflight if everything or f[0] <= self.tick], key=lambda f: (f[0], f[1]))
        self.inflight = [f for f in self.inflight if not (everything or f[0] <= self.tick)]
        for _, _, d in due:
            self._arrive(d)


class _World:
    """A world for the stream scenarios: entities that move, rest, turn, appear and leave."""

    def __init__(self, schema, rng, n=40, first_id=100, id_step=3):
        self.schema = schema
        self.rng = rng
        self.ids = list(range(first_id, first_id + n * id_step, id_step))
        self.next_id = self.ids[-1] + 1
        self.cols = _random_columns(schema, rng, n, rest=0.5)
        self.moving = rng.random(n) < 0.5

    def tick(self, churn=0.0, move=0.3):
        rng = self.rng
        n = len(self.ids)
        mv = rng.random(n) < move
        for fname, codec in self.schema.fields:
            spec = codec.spec()
            kind = spec["kind"]
            col = self.cols[fname]
            if kind == "Vector":
                col = col.copy()
                for j, c in enumerate(codec.codecs):
                    if c.spec()["kind"] in ("UInt", "Int", "Bool", "Enum", "IntRange"):
                        fresh = _random_values(c, rng, n, 0.5)
                        flip = rng.random(n) < 0.05
                        col[flip, j] = fresh[flip]
                    else:
                        step = np.abs(col[:, j]).max() * 0.002 + 0.01 if n else 0.01
                        col[:, j] += rng.normal(0, step, n) * mv
            elif kind in ("Bounded", "Angle", "Fixed", "Grid", "PowerCurve", "Half"):
                step = np.abs(col).max() * 0.002 + 0.01 if col.size else 0.01
                col = col + rng.normal(0, step, col.shape) * mv
            elif kind == "Quat":
                turn = rng.normal(0, 0.03, col.shape) * mv[:, None]
                col = col + turn
                # near ties between the two largest components: index changes in both forms
                tie = rng.random(n) < 0.05
                if tie.any():
                    q = np.zeros((int(tie.sum()), 4))
                    q[:, 0] = 0.7071 + rng.normal(0, 0.002, len(q))
                    q[:, 2] = rng.choice([-1.0, 1.0], len(q)) * (0.7071 + rng.normal(0, 0.002, len(q)))
                    q[:, 1] = rng.normal(0, 0.01, len(q))
                    col = col.copy()
                    col[tie] = q
            elif kind == "IntRange":
                # small steps up and down (the ordered slot's short differences), kept in range
                col = np.clip(col + rng.integers(-2, 3, n) * mv, spec["lo"], spec["hi"]).astype(np.int64)
            elif kind in ("UnitVector",):
                col = col + rng.normal(0, 0.02, col.shape) * mv[:, None]
            elif kind == "NearlyZero":
                fresh = _random_values(codec, rng, n, 0.5)
                flip = rng.random(n) < 0.1
                col = col.copy()
                col[flip] = fresh[flip]
            else:
                fresh = _random_values(codec, rng, n, 0.5)
                flip = rng.random(n) < 0.05
                col = col.copy()
                col[flip] = fresh[flip]
            self.cols[fname] = col
        if churn:
            keep = rng.random(n) >= churn
            self.ids = [i for i, k in zip(self.ids, keep) if k]
            self.cols = {k: v[keep] for k, v in self.cols.items()}
            add = int(rng.integers(0, max(1, int(churn * n * 2)) + 1))
            if add:
                gaps = rng.integers(1, 50, add)
                new_ids = []
                for g in gaps:
                    self.next_id += int(g)
                    new_ids.append(self.next_id)
                self.ids += new_ids
                fresh = _random_columns(self.schema, rng, add, rest=0.5)
                self.cols = {k: np.concatenate([self.cols[k], fresh[k]]) for k in self.cols}

    def snapshot(self):
        perm = self.rng.permutation(len(self.ids))        # rows in any order: matched by id
        ids = np.array(self.ids, dtype=np.uint64)[perm]
        return self.schema.snapshot(ids, {k: v[perm] for k, v in self.cols.items()})


def _seal(enc, body):
    """A packet body sealed with ``enc``'s stream (for the malformed-packet vectors)."""
    from ._bitstream import crc32c
    return bytes(body) + struct.pack("<I", crc32c(bytes(body), enc._check_p))


def _streams(schemas):
    """name -> (schema name, datagrams, description, branches it is built to reach)."""
    rng = np.random.default_rng(20261202)
    out = {}

    # 1. a clean stream: hello, full packet, deltas with and without extrapolation, entities
    # leaving and arriving (id gaps), quaternion index changes, NearlyZero flags, the sequence
    # number wrapping from 65535 to 0
    s = _Stream(schemas["pose"], rng, stream_id=0x1111, ack_delay=3)
    w = _World(schemas["pose"], rng, n=60)
    for t in range(40):
        w.tick(churn=0.05 if t % 7 == 3 else 0.0, move=0.3 if t < 30 else 0.0)
        s.step((65520 + t) & 0xFFFF, w.snapshot())
    s.deliver(True)
    out["pose_clean"] = ("pose", s.out, "a clean stream: hello, full, deltas with and without "
                         "extrapolation, entities leaving and arriving, quaternion index changes, "
                         "sequence wrap", ["hello", "full", "delta", "pred", "removed", "new", "wrap"])

    # 2. the same world over a lossy link: loss, duplicates, reordering, late packets
    s = _Stream(schemas["pose"], rng, stream_id=0x2222, loss=0.15, dup=0.1, delay=(0, 4), ack_delay=4)
    w = _World(schemas["pose"], rng, n=50)
    for t in range(120):
        w.tick(churn=0.03, move=0.5)
        s.step(t, w.snapshot())
    s.deliver(True)
    out["pose_lossy"] = ("pose", s.out, "15% loss, 10% duplicates, reordering over 0-4 ticks, acks "
                         "4 ticks late", ["loss", "duplicate", "reorder", "late"])

    # 3. every codec kind, predict on (history 32: two acknowledged snapshots within reach of
    # the numbers stepping by 3) and off (history 8)
    for predict in (True, False):
        s = _Stream(schemas["all_kinds"], rng, stream_id=0x3333 + predict, history=32 if predict else 8,
                    predict=predict, loss=0.05, ack_delay=2)
        w = _World(schemas["all_kinds"], rng, n=30)
        for t in range(50):
            w.tick(churn=0.02, move=0.4)
            s.step(t * 3, w.snapshot())
        s.deliver(True)
        out[f"all_kinds_{'pred' if predict else 'nopred'}"] = (
            "all_kinds", s.out, f"every codec kind, history {32 if predict else 8}, predict {predict}, "
                                f"5% loss, sequence numbers stepping by 3", ["all-kinds"])

    # 4. fragments: a small datagram budget, fragments lost, duplicated and reordered
    s = _Stream(schemas["pose"], rng, stream_id=0x4444, max_datagram=128, loss=0.03, dup=0.05,
                delay=(0, 2), ack_delay=2)
    w = _World(schemas["pose"], rng, n=40)
    for t in range(40):
        w.tick(churn=0.02, move=0.6)
        s.step(t, w.snapshot())
    s.deliver(True)
    out["fragments"] = ("pose", s.out, "max_datagram 128: full packets and large deltas in fragments, "
                        "lost, duplicated and reordered", ["fragment"])

    # 5. hostile traffic mixed into a stream: before the hello, stray, random, bit-flipped,
    # truncated, extended datagrams, another stream's and another schema's datagrams, crafted
    # malformed packets, a baseline the client never had, bad fragments
    from .snapshot import SnapshotEncoder
    schema = schemas["pose"]
    s = _Stream(schema, rng, stream_id=0x5555, ack_delay=1)
    w = _World(schema, rng, n=30)
    foreign = s._encoder(0x6666, 500_000)            # same schema, another (older) stream
    other = SnapshotEncoder(schemas["one_bit"], stream_id=0x7777)
    other._started_us = 2_000_000
    other._hello = None
    w.tick()
    first = s.enc.encode(0, w.snapshot())
    s.inject(first)                                  # a packet before its hello: no-hello
    s.inject(bytes.fromhex("f15d02"))                # the stray datagram
    s.inject(other.hello())                          # a hello of another schema
    s.inject(s.enc.hello())
    s.inject(first)
    s.enc.ack(0)
    for t in range(1, 60):
        w.tick(churn=0.02, move=0.4)
        snap = w.snapshot()
        dgs = s.enc.encode_datagrams(t, snap)
        fsnap = snap
        if t == 48:
            # a packet lost on the way, acknowledged all the same (a forged or misrouted ack):
            # the next packets name a baseline the client never had
            s.enc.ack(t)
            continue
        for d in dgs:
            k = t % 10
            if k == 1:
                s.inject(bytes(rng.integers(0, 256, int(rng.integers(0, 40)), dtype=np.uint8)))
            elif k == 2:
                b = bytearray(d)
                j = int(rng.integers(0, len(b) * 8))
                b[j // 8] ^= 1 << (j % 8)
                s.inject(bytes(b))                   # damaged: check
            elif k == 3:
                s.inject(d[:-1])                     # truncated
                s.inject(d + b"\x00")                # extended
            elif k == 4:
                s.inject(foreign.encode(t, fsnap))   # another stream's packet
                s.inject(foreign.hello())            # an older stream's hello
            elif k == 5:
                body = bytearray(d[:-4])
                body[-1] ^= 0x80 if len(body) > 3 else 0
                s.inject(_seal(s.enc, body))         # sealed but malformed
                s.inject(_seal(s.enc, bytes(d[:-4]) + b"\x00"))    # trailing data
                s.inject(_seal(s.enc, bytes(d[:2])))               # a header alone
            elif k == 6:
                s.inject(s.enc.hello())              # the hello again: ignored
            s.inject(d)
        if s.dec.latest is not None and t < 48:
            s.enc.ack(s.dec.latest)
    # hellos this client cannot adopt (section 13), each sealed with the hello's own check
    from . import _framing

    def sealed_hello(body):
        return bytes(body) + struct.pack("<I", crc32c(bytes(body), _framing.SEED_H))

    from ._bitstream import crc32c
    h = bytearray(s.enc.hello()[:-4])
    bad = bytearray(h)
    bad[26:28] = b"0x"                               # a fingerprint int() would take
    s.inject(sealed_hello(bad))
    bad = bytearray(h)
    bad[6:8] = struct.pack("<H", 10)                 # the adopted stream id, another history
    s.inject(sealed_hello(bad))
    bad = bytearray(h)
    bad[10:18] = struct.pack("<Q", 0x5556)           # another stream, started at the same time
    s.inject(sealed_hello(bad))
    bad = bytearray(h)
    bad[26:42] = b"0123456789abcdef"                 # another schema, well formed
    s.inject(sealed_hello(bad))
    s.inject(sealed_hello(h[:46] + b"\x00\x00\x00\x00"))       # 54 bytes: too short to be a hello
    s.inject(sealed_hello(h[:46] + b"\x00\x01\x00\x02\x00"))  # ns > nf
    s.inject(sealed_hello(h[:-3]))                   # a summary cut short
    s.inject(sealed_hello(h + b"\x00"))              # a byte after the last summary
    bad = bytearray(h)
    bad[5] = 2                                       # an unknown flag
    s.inject(sealed_hello(bad))
    # bad fragments of a packet of this stream
    frag = _framing.fragment(s.enc.encode(200, w.snapshot()), 96, s.enc._check_f)
    bad_count = bytearray(frag[0][:-4])
    bad_count[3] = 0                                 # a count of 1
    s.inject(bytes(bad_count) + struct.pack("<I", crc32c(bytes(bad_count), s.enc._check_f)))
    bad_index = bytearray(frag[0][:-4])
    bad_index[2] = 250                               # an index past the count
    s.inject(bytes(bad_index) + struct.pack("<I", crc32c(bytes(bad_index), s.enc._check_f)))
    short = bytes(frag[0][:-5])                      # a chunk of the wrong length
    s.inject(short + struct.pack("<I", crc32c(short, s.enc._check_f)))
    out["hostile"] = ("pose", s.out, "before the hello, stray, random, damaged, truncated, extended, "
                      "another stream's and another schema's datagrams, sealed malformed packets, a "
                      "baseline the client never had, bad fragments", ["no-hello", "check", "schema",
                                                                       "hello", "malformed", "baseline",
                                                                       "fragment"])

    # 6. restarts: the server restarts (a newer stream) and the client restarts (a fresh
    # decoder: the runner's decoder cannot restart, so the client's lost state shows as the
    # server's encoder being reset, which starts a newer stream too), replays of the old stream
    s = _Stream(schema, rng, stream_id=0x8888, loss=0.05, ack_delay=2)
    w = _World(schema, rng, n=30)
    old = []
    for t in range(30):
        w.tick(move=0.5)
        before = len(s.out)
        s.step(t, w.snapshot())
        old += s.out[before:]
    s.enc = s._encoder(0x9999, 3_000_000)            # the server restarted: a newer stream
    s.acks = []
    for t in range(30, 60):
        w.tick(move=0.5)
        s.step(t - 30, w.snapshot())                 # its numbers start over
        if t % 5 == 0:
            s.inject(old[t % len(old)])              # replays of the old stream
    s.enc = s._encoder(0xAAAA, 4_000_000)            # the client's encoder reset: newer again
    s.acks = []
    for t in range(60, 80):
        w.tick(move=0.5)
        s.step(t, w.snapshot())
    s.deliver(True)
    out["restart"] = ("pose", s.out, "a server restart (a newer stream, numbers starting over), "
                      "replays of the old stream, an encoder reset", ["restart", "replay"])

    # 7. one 1-bit field: the flip that is implied, not sent
    s = _Stream(schemas["one_bit"], rng, stream_id=0xBBBB, ack_delay=1)
    w = _World(schemas["one_bit"], rng, n=300)
    for t in range(20):
        w.tick(move=0.3, churn=0.01)
        s.step(t, w.snapshot())
    s.deliver(True)
    out["one_bit"] = ("one_bit", s.out, "a schema of one Bool: every SET mode of the changed "
                      "entities", ["abs-1bit"])

    # 8. a session with a shared key: a StreamServer and a StreamClient over a lossy link both
    # ways (the server driven by the client's replies), keyless and wrongly keyed datagrams of
    # the same stream mixed in, a server restart
    out["keyed"] = ("pose", _session_stream(schemas["pose"], rng, key=KIT_KEY),
                    "a keyed session (section 17): tags instead of CRCs, the server driven by the "
                    "client's replies over 10% loss both ways; keyless and wrongly keyed copies "
                    "of its datagrams; a server restart", ["keyed", "replies", "restart"],
                    {"key": KIT_KEY})

    # 9. limits (section 19) at a small max_bytes: a hello whose history cannot fit, then one
    # that fits, full packets until what is held would pass the bound, a packet that shrinks
    out["limits"] = ("pose", _limits_stream(schemas["pose"], rng), "max_bytes "
                     f"{KIT_MAX_BYTES}: a hello refused for its history, packets refused before "
                     "what is held passes the bound, smaller packets taken again", ["limits"],
                     {"max_bytes": KIT_MAX_BYTES})

    # 10. a stray hello (section 13): a hello of another server of this schema, started later,
    # reaches the client mid-stream and is adopted; then a hello of an older stream, taken while
    # the adopted one has decoded nothing; then the client's own server's hello, which takes it
    # back (its packets name baselines the client let go until they age out, then go in full);
    # once packets decode again, the older stream's hello is refused
    s = _Stream(schema, rng, stream_id=0xC0C0, history=8, started=5_000_000, ack_delay=1)
    w = _World(schema, rng, n=30)
    stray = s._encoder(0xC1C1, 6_000_000)
    older = s._encoder(0xC2C2, 4_000_000)
    for t in range(36):
        w.tick(churn=0.02, move=0.5)
        if t == 10:
            s.inject(stray.hello())
        elif t == 12:
            s.inject(older.hello())
        elif t in (14, 15):
            s.inject(s.enc.hello())
        elif t == 30:
            s.inject(older.hello())
        s.step(t, w.snapshot())
    s.deliver(True)
    out["stray_hello"] = ("pose", s.out, "a stray hello of a newer stream adopted mid-stream; an "
                          "older stream's hello taken while the adopted one has decoded nothing, "
                          "then the client's own server's; later refused once packets decode",
                          ["stray-hello"])

    # 11. duplicated fragments at the reassembly's bound (section 12, rule 4): packets of about
    # 200 fragments, each tick's interleaved with the tick before's again (a duplicating link):
    # two partial packets pass 256 * max_datagram, and the older one's chunks must give way
    s = _Stream(schema, rng, stream_id=0xD0D0, history=8, max_datagram=64, ack_delay=1)
    w = _World(schema, rng, n=700)
    s.inject(s.enc.hello())
    last = []
    for t in range(6):
        w.tick(move=1.0)
        dgs = s.enc.encode_datagrams(t, w.snapshot())
        mixed = []
        for i in range(max(len(dgs), len(last))):
            mixed += dgs[i:i + 1] + last[i:i + 1]
        for d in mixed:
            s.inject(d)
        last = dgs          # (no acks: every packet in full, about 200 fragments each)
    out["fragment_duplicates"] = ("pose", s.out, "max_datagram 64, packets of about 200 fragments, "
                                  "each tick's interleaved with the tick before's again: the older "
                                  "packet's chunks give way at the reassembly's bound",
                                  ["fragment-bound"])

    # 12. deltas that land on codes that are not valid (sections 2 and 7.3, Checks): a twin
    # encoder under the same stream codes its deltas against its own snapshot of a number, which
    # the client holds with other codes; added to the client's, each lands one field on a code
    # past its valid ones (IntRange past hi - lo, a midpoint Bounded on its top code; an Enum's
    # change goes as its code, never as a difference): malformed, and the client's state as
    # before (the real stream's delta against that number decodes next)
    schema = schemas["all_kinds"]
    s = _Stream(schema, rng, stream_id=0xE0E0, history=8, predict=False)
    twin = s._encoder(0xE0E0, 1_000_000)
    ids = np.array([7, 11], dtype=np.uint64)
    base = _random_columns(schema, rng, 2, rest=0.0)
    codec = dict(schema.fields)

    def snap(fname, code):
        cols = {k: v.copy() for k, v in base.items()}
        cols[fname][0] = codec[fname].dequantize(code)
        return schema.snapshot(ids, cols)

    s.inject(s.enc.hello())
    seq = 0
    for fname, good, alt in (("hp", 100, 0), ("temp", 125, 3), ("b_mid", 254, 0)):
        s.inject(s.enc.encode(seq, snap(fname, good)))            # full: the client holds it
        twin.encode(seq, snap(fname, alt))
        twin.ack(seq)
        s.inject(twin.encode(seq + 1, snap(fname, alt + 1)))       # lands on good + 1: malformed
        s.enc.ack(seq)
        s.inject(s.enc.encode(seq + 1, snap(fname, good - 1)))     # the real delta: decodes
        seq += 2
    out["invalid_delta"] = ("all_kinds", s.out, "deltas of a twin encoder landing on codes that "
                            "are not valid (IntRange past hi - lo, a midpoint Bounded's top "
                            "code); the real deltas decode after them",
                            ["invalid-delta"])

    # 14. keep-alives (section 18): the stream, then junk: while no reply is due, every 32nd
    # call of reply() makes one all the same (here an ack: the kit calls reply() after each
    # datagram, and before a hello every datagram makes a hello request due), so that a server
    # started again hears of the client
    schema = schemas["pose"]
    s = _Stream(schema, rng, stream_id=0xA11E, history=8)
    s.ticks(_World(schema, rng, n=6), 4)
    s.junk(70)
    out["keepalive"] = ("pose", s.out, "the stream, then junk: with replies, a keep-alive ack every "
                        "32nd call of reply() while none is due", ["keepalive"])

    # 15. limits at the window's size (section 19): max_bytes holds exactly the 2 * history - 1
    # snapshots a client keeps, and reassembly; every packet of a lossless stream decodes, the
    # oldest held one leaving the window as each comes (counted, every packet from the window's
    # 2 * history - 1 th on was refused, for good: nothing else moves the window)
    schema = schemas["pose"]
    s = _Stream(schema, rng, stream_id=0xD003, history=4, ack_delay=2)
    w = _World(schema, rng, n=30)
    for t in range(20):
        w.tick(move=0.5)
        s.step(t, w.snapshot())
    s.deliver(True)
    row = 8 + 8 * len(signed_slots(schema))
    window_bytes = (2 * 4 - 1) * (256 + 30 * row) + 256 * 1200
    out["limits_window"] = ("pose", s.out, f"max_bytes {window_bytes}: exactly the window of 7 "
                            "snapshots of 30 entities and reassembly; a lossless stream of 20 "
                            "packets, each pushing the oldest held one out", ["limits"],
                            {"max_bytes": window_bytes})

    # 16. keep-alives of every kind (section 18), with the runner's idle calls: after each
    # datagram and its reply, 40 calls of reply() with nothing arriving (the client of a server
    # that went quiet, or is not there yet). Junk before any hello (each datagram a "no-hello",
    # a hello request due; then one keep-alive hello request in the idle calls), the hello
    # (an ack of no snapshot due, then the same as keep-alives), a lossless stream of 3 ticks,
    # junk (keep-alive acks of the newest snapshot)
    schema = schemas["pose"]
    s = _Stream(schema, rng, stream_id=0xA120, history=8)
    s.junk(3)
    s.inject(s.enc.hello())
    s.junk(2)
    s.ticks(_World(schema, rng, n=6), 3)
    s.junk(2)
    out["keepalive_idle"] = ("pose", s.out, "junk before any hello, the hello, junk, a stream, junk: "
                             "each datagram's reply, then 40 calls of reply() with nothing arriving "
                             "(keep-alive hello requests, acks of no snapshot, acks)", ["keepalive"],
                             {"idle": 40})
    return out


KIT_KEY = bytes(range(0x40, 0x60))      # the keyed stream's shared key (32 bytes)
KIT_NONCE = 0x5143AC01                  # the client nonce of every replies run
KIT_MAX_BYTES = 400_000                 # the limits stream's bound


def _session_stream(schema, rng, key=None, ticks=70):
    """The datagrams a StreamClient receives from a StreamServer that takes its replies, over a
    seeded lossy link both ways (what the kit's client must reply is then what this client
    replied), with junk of the same stream mixed in and a server restart at two thirds."""
    from .session import StreamClient, StreamServer
    from .errors import DecodeError
    from .snapshot import SnapshotEncoder
    server = StreamServer(schema, history=16, max_datagram=300, key=key)
    server.connect("c")
    _fix_stream(server, 0xC001, 5_000_000)
    client = StreamClient(schema, key=key, nonce=KIT_NONCE)
    w = _World(schema, rng, n=40)
    down, up, got = [], [], []
    wrong = SnapshotEncoder(schema, 16, max_datagram=300, key=b"not the key", stream_id=0xBAD)
    keyless = SnapshotEncoder(schema, 16, max_datagram=300, stream_id=0xC001)
    for e, started in ((wrong, 5_500_000), (keyless, 5_000_000)):
        e._started_us = started
        e._hello = None
    for t in range(ticks):
        if t == 2 * ticks // 3:
            server = StreamServer(schema, history=16, max_datagram=300, key=key)   # a restart
            server.connect("c")
            _fix_stream(server, 0xC002, 6_000_000)
            up = []
        w.tick(churn=0.03, move=0.5)
        snap = w.snapshot()
        for d in server.send(t, snap)["c"]:
            if rng.random() < 0.1:
                continue
            down.append((t + int(rng.integers(0, 3)), len(down), d))
        if t % 9 == 4:
            down.append((t, len(down), keyless.encode(t, snap)))     # the stream without the key
            down.append((t, len(down), wrong.hello()))               # a hello under another key
            down.append((t, len(down), wrong.encode(t, snap)))
        due = sorted([x for x in down if x[0] <= t])
        down = [x for x in down if x[0] > t]
        for _, _, d in due:
            got.append(d)
            try:
                client.receive(d)
            except DecodeError:
                pass
            r = client.reply()
            if r is not None and rng.random() >= 0.1:
                up.append((t + int(rng.integers(1, 3)), r))
        for _, r in [x for x in up if x[0] <= t]:
            try:
                server.receive("c", r)
            except DecodeError:
                pass
        up = [x for x in up if x[0] > t]
    return got


def _fix_stream(server, stream_id, started):
    """A kit server's stream with a fixed id and start (the kit is deterministic)."""
    enc = server.encoder("c")
    enc._start(stream_id)
    enc._started_us = started
    enc._hello = None
    server._peers["c"].hello_len = len(enc.hello())


def _limits_stream(schema, rng):
    from .snapshot import SnapshotEncoder
    out = []
    big = SnapshotEncoder(schema, 8000, stream_id=0xD001)       # history 8000: cannot fit
    big._started_us = 7_000_000
    big._hello = None
    out.append(big.hello())
    enc = SnapshotEncoder(schema, 4, stream_id=0xD002)
    enc._started_us = 7_500_000
    enc._hello = None
    out.append(enc.hello())
    w = _World(schema, rng, n=150)
    for t in range(12):
        w.tick(churn=0.0, move=0.4)
        if t == 8:                                             # a smaller world: fits again
            w.ids = w.ids[:20]
            w.cols = {k: v[:20] for k, v in w.cols.items()}
            w.moving = w.moving[:20]
        out.append(enc.encode(t, w.snapshot()))
    return out


# -- interpolation vectors (docs/interpolation.md) --------------------------------------------------

def _hexf(x):
    return struct.pack(">d", float(x)).hex()


def _interp_views(schema, rng):
    """Views of the pose schema for the interpolation vectors: bodies moving, a yaw crossing 0,
    a rotation whose dropped component changes (its decoded sign flips: q and -q), bodies
    leaving and arriving."""
    n = 6
    ids = list(range(10, 10 + n))
    pos = rng.uniform([-50, 1, -50], [50, 30, 50], (n, 3))
    vel = rng.normal(0, 2, (n, 3))
    yaw = np.array([6.2, 0.1, 3.0, 1.0, 5.0, 2.0])
    out = []
    for k in range(14):
        pos = np.clip(pos + vel * 0.1, [-63, 0.5, -63], [63, 31, 63])
        yaw = (yaw + np.array([0.04, -0.05, 0.3, 0.0, 1.2, 0.01])) % (2 * np.pi)
        a = 0.7072 if k % 2 == 0 else 0.7070                # x or w the largest: the sign flips
        rot = np.tile([a, 0.0, 0.0, -math.sqrt(1 - a * a)], (n, 1))
        rot[1:] = rng.normal(size=(n - 1, 4))
        if k == 6:
            ids2 = ids[1:] + [40]                            # one leaves, one arrives
        else:
            ids2 = ids if k < 6 else ids[1:] + [40]
        m = len(ids2)
        cols = {"position": pos[:m], "rotation": rot[:m], "velocity": np.where(rng.random((m, 3)) < 0.5, 0.0, vel[:m]),
                "yaw": yaw[:m], "health": rng.integers(0, 256, m), "state": rng.integers(0, 3, m),
                "grounded": rng.random(m) < 0.5}
        snap = schema.snapshot(np.array(ids2, dtype=np.uint64), cols)
        out.append(snap)
    return out


def _interpolation_file(schema, rng):
    from .interpolation import Interpolator
    from .snapshot import Snapshot
    views = _interp_views(schema, rng)
    seqs = [(65530 + 2 * k) & 0xFFFF for k in range(len(views))]       # every other tick, wrapping
    order = [0, 1, 3, 2, 4, 4, 5, 6, 8, 7, 9, 10, 11, 13, 12]            # reordered, one duplicate
    it = Interpolator(schema, capacity=6, max_extrapolation=2.0)
    signed = signed_slots(schema)
    ops = []

    def sample(t):
        got = it.sample(t)
        vals = {}
        for name, _ in schema.fields:
            col = got.columns[name]
            vals[name] = [[_hexf(x) for x in np.ravel(r)] for r in col.reshape(len(col), -1)]
        ops.append({"sample": _hexf(t), "a": got.a, "b": got.b, "alpha": _hexf(got.alpha),
                    "ids": got.ids.tolist(), "values": vals, "stats": dict(it.stats)})

    def push(k, seq):
        """View k pushed under ``seq``, and the op that replays it."""
        view = Snapshot._make(schema, views[k].ids, views[k].matrix, seq=seq)
        kept = it.push(view)
        codes = [[int(np.int64(v)) if sg else int(v) for v, sg in zip(row, signed)]
                 for row in view.matrix.tolist()]
        ops.append({"push": {"seq": seq, "ids": view.ids.tolist(), "codes": codes}, "kept": kept})

    for step, k in enumerate(order):
        push(k, seqs[k])
        newest = it.newest
        if step == 0:
            sample(float("nan"))                                  # no render time: held (early), and
            sample(newest - 1.0)                                  # the latest render time still unset
        if step >= 2:
            for d in (4.0, 3.5, 2.75, 2.0, 1.0 / 3.0):
                sample(newest - d)                                 # between views, and on one
    newest = it.newest
    for d in (0.5, 1.0, 2.0, 3.0):
        sample(newest + d)                                         # extrapolated, then capped
    sample(it.views[0][0] - 1.5)                                   # before the oldest kept
    # a new stream (a restarted server's ticks from its own start): reset, then a new timeline
    # whose seqs, unwrapped against the old newest, would have been older than every held view
    it.reset()
    ops.append({"reset": True})
    for step, k in enumerate((2, 3, 5, 4)):
        push(k, 100 + 3 * k)
        if step >= 1:
            sample(it.newest - 1.5)
    sample(it.newest + 0.5)
    return {"schema": "schemas/pose.json", "capacity": 6, "max_extrapolation": _hexf(2.0), "ops": ops}


def _schema_doc(fields=None, **top):
    """A schema document's text (key order kept), ``fields`` as JSON text pieces."""
    d = {"name": "Cases", "version": 1}
    d.update(top)
    head = ", ".join(f"{json.dumps(k)}: {v if isinstance(v, _Raw) else json.dumps(v, ensure_ascii=False)}"
                     for k, v in d.items())
    fields = fields if fields is not None else ['{"name": "a", "codec": {"kind": "UInt", "bits": 3}}']
    return "{" + head + ', "fields": [' + ", ".join(fields) + "]}"


class _Raw(str):
    """A JSON value written as given (a number literal as the case spells it)."""


def _field(name, codec):
    return '{"name": ' + json.dumps(name, ensure_ascii=False) + ', "codec": ' + codec + "}"


def schema_cases():
    """Schema documents (bytes) every client must read as Python does (docs/schema-format.md,
    "One reading everywhere"): (name, bytes)."""
    ok = _schema_doc().encode()
    nz = lambda inner, t: _field("v", '{"kind": "NearlyZero", "inner": ' + inner + ', "threshold": ' + t + "}")
    bounded = '{"kind": "Bounded", "min": 0.0, "max": 1.0, "bits": 8}'
    cases = [
        ("plain", ok),
        # R1: UTF-8, one byte-order mark skipped
        ("utf8_bom", b"\xef\xbb\xbf" + ok),
        ("two_boms", b"\xef\xbb\xbf\xef\xbb\xbf" + ok),
        ("utf16le_bom", _schema_doc().encode("utf-16")),
        ("utf16be", _schema_doc().encode("utf-16-be")),
        ("invalid_byte_ff", ok.replace(b'"Cases"', b'"Cases\xff"')),
        ("overlong_nul", ok.replace(b'"Cases"', b'"Cases\xc0\x80"')),
        ("truncated_sequence", ok.replace(b'"Cases"', b'"Cases\xe2\x82"')),
        ("encoded_surrogate", ok.replace(b'"Cases"', b'"Cases\xed\xa0\x80"')),
        ("utf8_name_and_labels", _schema_doc([_field("state", '{"kind": "Enum", "labels": ["idle", "\u00e9t\u00e9", "\u2603", "q\\"uote", "tab\\t"]}')],
                                             name="Spieler\u20ac\U0001f600").encode()),
        # R2: field names are ASCII identifiers
        *[(f"field_name_ok_{i}", _schema_doc([_field(n, '{"kind": "Bool"}')]).encode())
          for i, n in enumerate(["_", "A", "a1", "_9", "snake_case_Name", "x" * 200])],
        *[(f"field_name_refused_{i}", _schema_doc([_field(n, '{"kind": "Bool"}')]).encode())
          for i, n in enumerate(["", "1a", "a-b", "a b", "\u00e9", "\u2118", "x\u00b7y", "\u0394elta",
                                 "\U0001f600", "a\u00a0", "a\u0000", "a\u200d", "\u0130d", "\u212a",
                                 "\U00020000"])],
        # R3: no U+0000 in the schema's name or an Enum label
        ("nul_in_schema_name", _schema_doc(name="a\u0000b").encode()),
        ("nul_in_label", _schema_doc([_field("e", '{"kind": "Enum", "labels": ["x", "y\\u0000"]}')]).encode()),
        ("escaped_nul_in_name", _schema_doc(name=_Raw('"a\\u0000"')).encode()),
        # ... and no lone surrogate: a \u escape can write one, no UTF-8 text holds one
        *[(f"lone_surrogate_{i}", doc.encode()) for i, doc in enumerate([
            _schema_doc(name=_Raw('"\\ud800"')), _schema_doc(name=_Raw('"a\\udc00b"')),
            _schema_doc(name=_Raw('"\\ude00\\ud83d"')), _schema_doc(name=_Raw('"\\ud83dx"')),
            _schema_doc(name=_Raw('"x\\uDBFF"')), _schema_doc(name=_Raw('"\\ud83d\\u0041"')),
            _schema_doc([_field("e", '{"kind": "Enum", "labels": ["x", "\\udfff"]}')]),
            _schema_doc([_field("e", '{"kind": "Enum", "labels": ["\\ud83d\\ud83d\\ude00", "y"]}')])])],
        ("escaped_pair_in_name_and_label", _schema_doc([_field("e", '{"kind": "Enum", "labels": ["\\ud83d\\ude00", "\\uD83D\\uDE01"]}')],
                                                     name=_Raw('"p\\ud83d\\ude00q"')).encode()),
        # R4: -0.0 is 0.0, a version -0 is 0
        *[(f"negative_zero_{i}", _schema_doc([_field("p", '{"kind": "Bounded", "min": ' + z + ', "max": 1.0, "bits": 8}')]).encode())
          for i, z in enumerate(["0.0", "-0.0", "-0", "-0e5", "-1e-400", "0"])],
        ("negative_zero_offset", _schema_doc([_field("f", '{"kind": "Fixed", "step": 0.5, "bits": 8, "offset": -0.0}')]).encode()),
        ("version_minus_zero", _schema_doc(version=_Raw("-0")).encode()),
        ("version_zero", _schema_doc(version=0).encode()),
        # R5: 0 <= version <= 2**63 - 1
        ("version_max", _schema_doc(version=2**63 - 1).encode()),
        ("version_past_max", _schema_doc(version=2**63).encode()),
        ("version_401_digits", _schema_doc(version=_Raw("9" * 401)).encode()),
        ("version_negative", _schema_doc(version=-1).encode()),
        ("version_float", _schema_doc(version=_Raw("1.0")).encode()),
        # R6: NearlyZero's threshold below the largest magnitude its inner codec decodes to
        ("nz_bounded_ok", _schema_doc([nz(bounded, "0.99")]).encode()),
        ("nz_bounded_at_reach", _schema_doc([nz(bounded, "1.0")]).encode()),
        ("nz_bounded_past_reach", _schema_doc([nz(bounded, "5")]).encode()),
        ("nz_bounded_negative_side", _schema_doc([nz('{"kind": "Bounded", "min": -3.0, "max": 1.0, "bits": 8}', "2.9")]).encode()),
        ("nz_bounded_negative_reach", _schema_doc([nz('{"kind": "Bounded", "min": -3.0, "max": 1.0, "bits": 8}', "3")]).encode()),
        ("nz_powercurve", _schema_doc([nz('{"kind": "PowerCurve", "max": 4.0, "pow": 2.0, "bits": 8}', "4")]).encode()),
        ("nz_fixed_signed_ok", _schema_doc([nz('{"kind": "Fixed", "step": 0.25, "bits": 4, "signed": true, "offset": 0.5}', "2.2")]).encode()),
        ("nz_fixed_signed_at", _schema_doc([nz('{"kind": "Fixed", "step": 0.25, "bits": 4, "signed": true, "offset": 0.5}', "2.25")]).encode()),
        ("nz_fixed_unsigned_at", _schema_doc([nz('{"kind": "Fixed", "step": 0.1, "bits": 3, "signed": false, "offset": -1.0}', "1.0")]).encode()),
        ("nz_fixed_unsigned_below", _schema_doc([nz('{"kind": "Fixed", "step": 0.1, "bits": 3, "signed": false, "offset": -1.0}', "0.9999999999999999")]).encode()),
        # (7 * 0.1 in doubles is 0.7000000000000001: the reach is the product, not 0.7)
        ("nz_fixed_product_at", _schema_doc([nz('{"kind": "Fixed", "step": 0.1, "bits": 3, "signed": false, "offset": 0.0}', "0.7000000000000001")]).encode()),
        ("nz_fixed_product_below", _schema_doc([nz('{"kind": "Fixed", "step": 0.1, "bits": 3, "signed": false, "offset": 0.0}', "0.7")]).encode()),
        ("nz_uint", _schema_doc([nz('{"kind": "UInt", "bits": 3}', "7")]).encode()),
        ("nz_uint_ok", _schema_doc([nz('{"kind": "UInt", "bits": 3}', "6.5")]).encode()),
        ("nz_int", _schema_doc([nz('{"kind": "Int", "bits": 4}', "8")]).encode()),
        ("nz_int_ok", _schema_doc([nz('{"kind": "Int", "bits": 4}', "7.99")]).encode()),
        ("nz_bool", _schema_doc([nz('{"kind": "Bool"}', "1")]).encode()),
        ("nz_intrange", _schema_doc([nz('{"kind": "IntRange", "lo": -5, "hi": 3}', "5")]).encode()),
        ("nz_intrange_ok", _schema_doc([nz('{"kind": "IntRange", "lo": -5, "hi": 3}', "4.5")]).encode()),
        ("nz_vector", _schema_doc([nz('{"kind": "Vector", "codecs": [' + bounded + ', {"kind": "UInt", "bits": 2}]}', "3")]).encode()),
        ("nz_vector_ok", _schema_doc([nz('{"kind": "Vector", "codecs": [' + bounded + ', {"kind": "UInt", "bits": 2}]}', "2.5")]).encode()),
        ("nz_vector_with_angle", _schema_doc([nz('{"kind": "Vector", "codecs": [' + bounded + ', {"kind": "Angle", "bits": 8}]}', "100")]).encode()),
        ("nz_angle_no_reach", _schema_doc([nz('{"kind": "Angle", "bits": 8}', "1000")]).encode()),
        ("nz_half_no_reach", _schema_doc([nz('{"kind": "Half"}', "1e30")]).encode()),
        ("nz_negative", _schema_doc([nz(bounded, "-0.5")]).encode()),
        ("nz_minus_zero", _schema_doc([nz(bounded, "-0.0")]).encode()),
        # R8: number literals of any length, correctly rounded
        ("long_float_literal", _schema_doc([_field("p", '{"kind": "Bounded", "min": -1.' + "0" * 600 + '1, "max": 1.0, "bits": 8}')]).encode()),
        ("long_float_tie", _schema_doc([_field("p", '{"kind": "Bounded", "min": 0.0, "max": 9007199254740993' + "0" * 300 + 'e-300, "bits": 8}')]).encode()),
        # R9: unknown kinds, however spelled
        *[(f"kind_{k.strip('_')}", _schema_doc([_field("k", '{"kind": "' + k + '"}')]).encode())
          for k in ("constructor", "toString", "__proto__", "hasOwnProperty", "valueOf", "bounded")],
        # and the JSON rules already pinned (duplicate keys, trailing commas, comments, NaN)
        ("duplicate_key", _schema_doc([_field("d", '{"kind": "UInt", "bits": 3, "bits": 4}')]).encode()),
        ("trailing_comma", _schema_doc().replace("]}", "],}").encode()),
        ("comment", ("// schema\n" + _schema_doc()).encode()),
        ("nan_literal", _schema_doc([_field("p", '{"kind": "Bounded", "min": NaN, "max": 1.0, "bits": 8}')]).encode()),
    ]
    return cases


def _schema_cases_file():
    from .errors import SchemaError
    from .schema import Schema
    out = []
    for name, data in schema_cases():
        try:
            fp = Schema.from_json(data).fingerprint
        except SchemaError:
            fp = None
        out.append({"name": name, "hex": data.hex(), "ok": fp is not None, "fingerprint": fp})
    return {"format": 1, "about": "schema documents every client reads as the Python package does "
                                  "(docs/schema-format.md, 'One reading everywhere'): ok -> the "
                                  "fingerprint, else refused", "cases": out}


def make(directory):
    """Write the kit into ``directory`` (created if missing). Deterministic: the same package
    writes the same bytes."""
    root = pathlib.Path(directory)
    for sub in ("schemas", "values", "records", "streams", "interpolation"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    schemas = kit_schemas()
    manifest = {"format": 1, "wire_format": 1, "schemas": {}, "values": [], "records": [], "streams": []}
    for name, schema in schemas.items():
        path = f"schemas/{name}.json"
        (root / path).write_text(schema.to_json() + "\n")
        manifest["schemas"][name] = {"file": path, "fingerprint": schema.fingerprint}
    rng = np.random.default_rng(7)
    seen = set()
    for sname, schema in schemas.items():
        for name, codec in _scalar_codecs(schema):
            key = json.dumps(codec.spec(), sort_keys=True)
            if key in seen:
                continue
            seen.add(key)
            fname = f"values/{sname}.{name}.json"
            (root / fname).write_text(json.dumps(_values_file(name, codec, rng), indent=1) + "\n")
            manifest["values"].append(fname)
    for sname, schema in schemas.items():
        fname = f"records/{sname}.json"
        (root / fname).write_text(json.dumps(_records_file(sname, schema, rng), indent=1) + "\n")
        manifest["records"].append(fname)
    for name, entry in _streams(schemas).items():
        sname, datagrams, what, branches = entry[:4]
        options = entry[4] if len(entry) > 4 else {}
        bin_path = f"streams/{name}.bin"
        write_datagrams(root / bin_path, datagrams)
        args = []
        if "key" in options:
            args += ["--key", options["key"].hex()]
        if "max_bytes" in options:
            args += ["--max-bytes", str(options["max_bytes"])]
        if "idle" in options:
            args += ["--idle", str(options["idle"])]
        runs = [(name, f"streams/{name}.jsonl", args, {})] if not options else []
        runs.append((f"{name}.replies", f"streams/{name}.replies.jsonl", args + ["--replies", str(KIT_NONCE)],
                     {"replies": KIT_NONCE}))
        for run_name, exp_path, run_args, extra in runs:
            lines = runner_lines(schemas[sname], datagrams, **options, **extra)
            (root / exp_path).write_text("".join(line + "\n" for line in lines))
            counts = {}
            for line in lines:
                k = json.loads(line)
                key = k.get("error") or ("pending" if "pending" in k else "snapshot")
                counts[key] = counts.get(key, 0) + 1
            if extra:
                parsed = [json.loads(line) for line in lines]
                counts["reply"] = sum(1 for k in parsed if k["reply"] is not None)
                if "idle" in options:
                    counts["idle-reply"] = sum(1 for k in parsed for r in k["idle"] if r is not None)
            item = {"name": run_name, "schema": f"schemas/{sname}.json", "datagrams": bin_path,
                    "expected": exp_path, "what": what, "count": len(datagrams),
                    "outcomes": dict(sorted(counts.items()))}
            if run_args:
                item["args"] = run_args
            manifest["streams"].append(item)
    rng = np.random.default_rng(20261206)
    path = "interpolation/pose.json"
    (root / path).write_text(json.dumps(_interpolation_file(schemas["pose"], rng), indent=1) + "\n")
    manifest["interpolation"] = [path]
    (root / "schema_cases.json").write_text(json.dumps(_schema_cases_file(), indent=1, ensure_ascii=True) + "\n")
    manifest["schema_cases"] = "schema_cases.json"
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest
