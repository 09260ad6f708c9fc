"""The fuzz targets of quantcodec as plain functions, shared by the atheris harnesses
(``fuzz_*.py``), the corpus generator (``make_corpus.py``) and the regression tests
(``tests/test_fuzz_regressions.py``). Nothing here needs atheris.

Each target takes the fuzzer's bytes and returns normally, or raises ``AssertionError`` (or any
exception other than ``DecodeError``) when an invariant breaks:

* the only exception a decoder raises on bytes is ``qc.DecodeError``;
* what it decodes is in range: valid codes, values inside the codecs' declared ranges, the exact
  dequantization of those codes, and the bytes are the canonical encoding of what was decoded;
* ``BitReader`` and ``unpack`` agree bit for bit with a big-integer oracle, and a failed read
  leaves the reader where it was;
* a ``SnapshotDecoder``'s state (its stream, ``latest``, what it holds and what it decodes next)
  is unchanged after a ``DecodeError``, and so are a ``StreamServer``'s and a ``StreamClient``'s
  (the session's replies, both ways), whose views stay the server's records code for code.

Input layouts (first bytes select the mode, the rest is the message) are documented on each
target so that a crash file can be read by hand.
"""

import math

import numpy as np

import quantcodec as qc
from quantcodec import DecodeError, _framing
from quantcodec.tools.examples import player_state_fields

# ---------------------------------------------------------------------------------- schemas

def _schemas():
    """Schemas covering every codec kind and layout (NearlyZero over a scalar and a vector,
    64-bit codes, a 0-bit Enum, a 1-bit record)."""
    player = player_state_fields()
    everything = [
        ("fixed", qc.Fixed(0.001, 24)),
        ("ufixed", qc.Fixed(0.5, 7, signed=False, offset=-10.0)),
        ("bins", qc.Bounded(-1, 1, 5, mode="bins")),
        ("sangle", qc.Angle(10, signed=True, unit="deg")),
        ("half", qc.Half()),
        ("grid", qc.Grid(64.0, 20, 16)),
        ("normal", qc.UnitVector(11)),
        ("big", qc.UInt(64)),
        ("sint", qc.Int(13)),
        ("kind", qc.Enum(5)),
        ("only", qc.Enum(["one"])),
        ("speed", qc.NearlyZero(qc.Bounded(-10, 10, 9), 0.05)),
        ("orient", qc.Quat(6, mode="bins")),
        ("lat", qc.Fixed(1e-7, 32)),
        ("power", qc.PowerCurve(1000.0, 3, 2)),
    ]
    tiny = [("flag", qc.Bool())]
    out = []
    for name, fields, version in (("PlayerState", player, 3), ("Everything", everything, 1), ("Tiny", tiny, 0)):
        s = qc.Schema(name, fields, version=version)
        _FIELDS[id(s)] = fields
        out.append(s)
    return out


_FIELDS = {}


_SCHEMAS = None


def schemas():
    """The fuzzed schemas (built once, on first use: ``qc.Schema`` may not exist yet)."""
    global _SCHEMAS
    if _SCHEMAS is None:
        _SCHEMAS = _schemas()
    return _SCHEMAS


# ------------------------------------------------------------------------- value range checks

def _codec_range_scalar(c):
    """(lo, hi) of a float scalar codec's decoded values, inclusive; None when unbounded."""
    kind = type(c).__name__
    if kind == "Bounded":
        return c.min, c.max
    if kind == "Fixed":
        if c.signed:
            lo, hi = -(1 << (c.bits - 1)), (1 << (c.bits - 1)) - 1
        else:
            lo, hi = 0, (1 << c.bits) - 1
        return c.offset + lo * c.step_size, c.offset + hi * c.step_size
    if kind == "Angle":
        full = 360.0 if c.unit == "deg" else 2 * math.pi
        return (-full / 2, full / 2) if c.signed else (0.0, full)
    if kind == "PowerCurve":
        return -c.max, c.max
    if kind == "Grid":
        half = c.cell_size * 2.0 ** (c.cell_bits - 1)
        return -half, half
    return None


def check_value(c, v, where="value"):
    """Assert that ``v`` is a value ``c.dequantize`` can return (in range, right type)."""
    kind = type(c).__name__
    if kind in ("Bounded", "Fixed", "PowerCurve", "Grid"):
        assert type(v) is float, f"{where}: {kind} decoded {v!r} ({type(v).__name__}), not a float"
        lo, hi = _codec_range_scalar(c)
        assert lo <= v <= hi, f"{where}: {v!r} outside [{lo}, {hi}] of {c!r}"
    elif kind == "Angle":
        assert type(v) is float, f"{where}: Angle decoded {v!r}"
        lo, hi = _codec_range_scalar(c)
        assert lo <= v < hi, f"{where}: {v!r} outside [{lo}, {hi}) of {c!r}"
    elif kind == "Half":
        assert type(v) is float, f"{where}: Half decoded {v!r}"
        assert math.isnan(v) or float(np.float16(v)) == v, f"{where}: {v!r} is not a float16 value"
    elif kind == "UInt":
        assert type(v) is int and 0 <= v < (1 << c.bits), f"{where}: {v!r} outside {c!r}"
    elif kind == "Int":
        assert type(v) is int and -(1 << (c.bits - 1)) <= v < (1 << (c.bits - 1)), f"{where}: {v!r} outside {c!r}"
    elif kind == "Bool":
        assert type(v) is bool, f"{where}: Bool decoded {v!r}"
    elif kind == "Enum":
        if c.labels is not None:
            assert v in c.labels, f"{where}: {v!r} is not a label of {c!r}"
        else:
            assert type(v) is int and 0 <= v < c.n, f"{where}: {v!r} outside {c!r}"
    elif kind in ("Quat", "UnitVector"):
        k = 4 if kind == "Quat" else 3
        assert type(v) is tuple and len(v) == k, f"{where}: {kind} decoded {v!r}"
        assert all(type(x) is float and math.isfinite(x) for x in v), f"{where}: {v!r}"
        n = math.sqrt(sum(x * x for x in v))
        assert abs(n - 1.0) < 1e-9, f"{where}: {v!r} has norm {n!r}"
    elif kind == "Vector":
        assert type(v) is tuple and len(v) == len(c.codecs), f"{where}: Vector decoded {v!r}"
        for i, (ci, vi) in enumerate(zip(c.codecs, v)):
            check_value(ci, vi, f"{where}[{i}]")
    elif kind == "NearlyZero":
        if _is_zero(c.inner, v):
            return
        check_value(c.inner, v, where)
    else:
        raise AssertionError(f"{where}: unknown codec {c!r}")


def _is_zero(c, v):
    """Whether ``v`` is the exact zero a resting NearlyZero over ``c`` decodes to."""
    if type(c).__name__ == "Vector":
        return isinstance(v, tuple) and len(v) == len(c.codecs) and all(x == 0 for x in v)
    return not isinstance(v, tuple) and v == 0


def check_column(c, a, count, where="column"):
    """Assert that a batch column (decode_many / dequantize_many) has the right shape and only
    in-range values."""
    kind = type(c).__name__
    assert isinstance(a, np.ndarray), f"{where}: {type(a).__name__}, not an ndarray"
    if kind == "NearlyZero":
        inner = c.inner
        if type(inner).__name__ == "Vector":
            assert a.shape == (count, len(inner.codecs)), f"{where}: shape {a.shape}"
            zero = np.all(a == 0, axis=1)
            for i, ci in enumerate(inner.codecs):
                check_column(ci, a[~zero, i], int((~zero).sum()), f"{where}[:, {i}]")
        else:
            assert a.shape == (count,), f"{where}: shape {a.shape}"
            zero = a == 0
            check_column(inner, a[~zero], int((~zero).sum()), where)
        return
    if kind == "Vector":
        assert a.shape == (count, len(c.codecs)), f"{where}: shape {a.shape}"
        for i, ci in enumerate(c.codecs):
            check_column(ci, a[:, i], count, f"{where}[:, {i}]")
        return
    if kind in ("Quat", "UnitVector"):
        k = 4 if kind == "Quat" else 3
        assert a.shape == (count, k), f"{where}: shape {a.shape}"
        assert a.dtype.kind == "f" and np.all(np.isfinite(a)), f"{where}: non-finite {kind} values"
        if count:
            n = np.sqrt((a.astype(np.float64) ** 2).sum(axis=1))
            tol = 1e-6 if a.dtype == np.float32 else 1e-9
            assert np.all(np.abs(n - 1) < tol), f"{where}: norms {n[np.abs(n - 1) >= tol][:5]}"
        return
    assert a.shape == (count,), f"{where}: shape {a.shape}, expected ({count},)"
    if kind in ("UInt", "Int", "Enum"):
        assert a.dtype.kind in "iu", f"{where}: dtype {a.dtype}"
        if kind == "UInt":
            lo, hi = 0, (1 << c.bits) - 1
        elif kind == "Int":
            lo, hi = -(1 << (c.bits - 1)), (1 << (c.bits - 1)) - 1
        else:
            lo, hi = 0, c.n - 1
        if count:
            assert lo <= int(a.min()) and int(a.max()) <= hi, f"{where}: values outside {lo}..{hi}"
        return
    if kind == "Bool":
        assert a.dtype.kind in "biu", f"{where}: dtype {a.dtype}"
        if count:
            assert np.all((a == 0) | (a == 1)), f"{where}: non-boolean values"
        return
    assert a.dtype.kind == "f", f"{where}: dtype {a.dtype}"
    if kind == "Half":
        if count:
            f = a[~np.isnan(a)]
            assert np.array_equal(f.astype(np.float16).astype(a.dtype), f), f"{where}: non-float16 values"
        return
    lo, hi = _codec_range_scalar(c)
    if count:
        assert np.all(np.isfinite(a)), f"{where}: non-finite values"
        assert lo <= float(a.min()) and float(a.max()) <= hi, \
            f"{where}: values in [{float(a.min())}, {float(a.max())}] outside [{lo}, {hi}] of {c!r}"
        if kind == "Angle":
            assert float(a.max()) < hi or a.dtype == np.float32, f"{where}: angle {float(a.max())} not below {hi}"


def same_value(a, b):
    """Equality that treats NaN as equal to NaN of the same sign (Half) and -0.0 as 0.0."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b) and math.copysign(1, a) == math.copysign(1, b)
    return type(a) is type(b) and a == b


# ----------------------------------------------------------------------- target 1: BitReader

def _buffer(kind, payload):
    """The payload in one of the buffer types a BitReader accepts (a view at an offset too)."""
    kind %= 5
    if kind == 0:
        return payload
    if kind == 1:
        return bytearray(payload)
    if kind == 2:
        return memoryview(b"\xa5" + payload + b"\x5a")[1:-1]   # a view into the middle of a buffer
    if kind == 3:
        return np.frombuffer(payload, dtype=np.uint8)
    return memoryview(payload)


def bitreader(data):
    """Fuzz ``BitReader`` and ``unpack`` against a big-integer oracle.

    Layout: ``data[0]`` = number of operations (low 4 bits) and buffer kind (high bits);
    then 2 bytes per operation: ``op`` (low 3 bits: 0 read, 1 read_signed, 2 read_bool,
    3 read_array, 4 align, 5 finish, 6 unpack, 7 read 0..64 bits again) and ``bits`` (mod 65;
    for read_array/unpack the count is ``op >> 3``); the rest is the message.
    """
    if not data:
        return
    nops = data[0] & 15
    head = 1 + 2 * nops
    ops = data[1:head]
    payload = bytes(data[head:])
    nbits = 8 * len(payload)
    big = int.from_bytes(payload, "little")
    r = qc.BitReader(_buffer(data[0] >> 4, payload))
    pos = 0
    assert r.bit_position == 0 and r.bits_remaining == nbits
    for i in range(0, len(ops) - 1, 2):
        op, b = ops[i], ops[i + 1] % 65
        kind, count = op & 7, op >> 3
        mask = (1 << b) - 1
        try:
            if kind in (0, 7):
                v = r.read(b)
                assert pos + b <= nbits, f"read({b}) at {pos} of {nbits} did not raise"
                assert type(v) is int and v == (big >> pos) & mask, f"read({b}) at {pos}: {v} != {(big >> pos) & mask}"
                pos += b
            elif kind == 1:
                v = r.read_signed(b)
                assert pos + b <= nbits, f"read_signed({b}) at {pos} of {nbits} did not raise"
                u = (big >> pos) & mask
                want = u - (1 << b) if b and u >> (b - 1) else u
                assert type(v) is int and v == want, f"read_signed({b}) at {pos}: {v} != {want}"
                pos += b
            elif kind == 2:
                v = r.read_bool()
                assert pos + 1 <= nbits, f"read_bool at {pos} of {nbits} did not raise"
                assert v is bool((big >> pos) & 1), f"read_bool at {pos}: {v}"
                pos += 1
            elif kind == 3:
                a = r.read_array(count, b)
                assert pos + count * b <= nbits, f"read_array({count}, {b}) at {pos} of {nbits} did not raise"
                assert a.dtype == (np.uint32 if b <= 32 else np.uint64) and a.shape == (count,), (a.dtype, a.shape)
                want = [(big >> (pos + j * b)) & mask for j in range(count)]
                assert a.tolist() == want, f"read_array({count}, {b}) at {pos}: {a.tolist()} != {want}"
                pos += count * b
            elif kind == 4:
                r.align()
                pos = min(nbits, (pos + 7) // 8 * 8)
            elif kind == 5:
                left = nbits - pos
                r.finish()
                assert left < 8 and (big >> pos) == 0, f"finish() at {pos} of {nbits} accepted"
                pos = nbits
            else:
                a = qc.unpack(_buffer(op, payload), count, b)
                assert count * b <= nbits, f"unpack({count}, {b}) of {nbits} bits did not raise"
                want = [(big >> (j * b)) & mask for j in range(count)]
                assert a.tolist() == want, f"unpack({count}, {b}): {a.tolist()} != {want}"
        except DecodeError as e:
            if kind == 5:
                assert nbits - pos >= 8 or (big >> pos) != 0, f"finish() at {pos} of {nbits} raised {e}"
            elif kind == 6:
                assert count * b > nbits, f"unpack({count}, {b}) of {nbits} bits raised {e}"
            else:
                need = {0: b, 7: b, 1: b, 2: 1, 3: count * b}.get(kind, 0)
                assert pos + need > nbits, f"op {kind} ({count}, {b}) at {pos} of {nbits} raised {e}"
                assert str(pos) in str(e), f"the error does not say where: {e}"
        assert r.bit_position == pos, f"bit_position {r.bit_position} != {pos} after op {kind}"
        assert r.bits_remaining == nbits - pos, f"bits_remaining {r.bits_remaining} != {nbits - pos}"


# ------------------------------------------------------------------- target 2: Schema.decode

def _field_codes_reference(reader, c):
    """Read one field's code with the SPEC layout (a reference for decode_codes)."""
    kind = type(c).__name__
    if kind == "Vector":
        return tuple(_field_codes_reference(reader, ci) for ci in c.codecs)
    if kind == "NearlyZero":
        flag = reader.read(1)
        if flag:
            return (1, _field_codes_reference(reader, c.inner))
        inner = c.inner
        zero = tuple(0 for _ in inner.codecs) if type(inner).__name__ == "Vector" else 0
        return (0, zero)
    if kind == "Int" or (kind == "Fixed" and c.signed):
        return reader.read_signed(c.bits)
    return reader.read(c.bits)


def schema_decode(data):
    """Fuzz ``Schema.decode`` / ``decode_codes`` / ``decode_many``.

    Layout: ``data[0]``: schema (``% 3``, see ``schemas()``) and operation (``>> 2``:
    ``% 4`` = 0 decode + decode_codes, 1 decode_many, 2 decode_many of one record,
    3 decode from a bytearray / memoryview); ``data[1] % 8``: the record count of
    ``decode_many``; the rest is the message.
    """
    if len(data) < 2:
        return
    s = schemas()[data[0] % 3]
    op = (data[0] >> 2) % 4
    count = data[1] % 8
    msg = bytes(data[2:])
    if op == 1:
        _check_decode_many(s, msg, count)
        return
    if op == 2:
        _check_decode_many(s, msg, 1)
        return
    buf = msg if op == 0 else (bytearray(msg) if data[1] & 1 else memoryview(msg))
    try:
        rec = s.decode(buf)
    except DecodeError:
        rec = None
    try:
        codes = s.decode_codes(msg)
    except DecodeError:
        codes = None
    assert (rec is None) == (codes is None), "decode and decode_codes disagree on acceptance"
    if rec is None:
        return
    names = [n for n, _ in _fields(s)]
    assert list(rec) == names, f"decoded keys {list(rec)} != {names}"
    for (name, c), code in zip(_fields(s), codes):
        assert c.valid(code), f"{name}: decoded code {code!r} is not valid for {c!r}"
        check_value(c, rec[name], name)
    assert s.valid(codes), f"schema.valid rejects decoded codes {codes!r}"
    back = s.dequantize(codes)
    for name in names:
        assert same_value(back[name], rec[name]), f"{name}: decode {rec[name]!r} != dequantize {back[name]!r}"
    # the reference reading of the SPEC layout, and the canonical re-encoding
    r = qc.BitReader(msg)
    ref = tuple(_field_codes_reference(r, c) for _, c in _fields(s))
    assert ref == tuple(codes), f"decode_codes {codes!r} != reference layout {ref!r}"
    r.finish()
    assert s.encode_codes(codes) == msg, "the accepted message is not the canonical encoding of its codes"


def _fields(s):
    """(name, codec) pairs of one of our schemas (kept beside it: SPEC names no accessor)."""
    return _FIELDS[id(s)]


def _check_decode_many(s, msg, count):
    try:
        cols = s.decode_many(msg, count)
    except DecodeError:
        cols = None
    # reference: count records back to back, then zero padding of under 8 bits
    r = qc.BitReader(msg)
    ref = []
    try:
        for _ in range(count):
            ref.append(tuple(_field_codes_reference(r, c) for _, c in _fields(s)))
        r.finish()
        ref_ok = all(s.valid(codes) for codes in ref)
    except DecodeError:
        ref_ok = False
    if cols is None:
        assert not ref_ok, f"decode_many({count}) rejected a well-formed message"
        return
    assert ref_ok, f"decode_many({count}) accepted a malformed message"
    names = [n for n, _ in _fields(s)]
    assert list(cols) == names, f"decode_many keys {list(cols)} != {names}"
    for name, c in _fields(s):
        check_column(c, cols[name], count, name)
    for i, codes in enumerate(ref):
        want = s.dequantize(codes)
        for name, c in _fields(s):
            got = cols[name][i]
            w = want[name]
            _check_row_value(c, got, w, f"{name} row {i}")


def _flat(c, v):
    """A decoded per-value result as the list of numbers a batch row holds."""
    kind = type(c).__name__
    if kind == "Enum":
        return [c.labels.index(v) if c.labels is not None else v]
    if kind == "NearlyZero":
        return _flat(c.inner, v)
    if isinstance(v, tuple):
        out = []
        if kind == "Vector":
            for ci, vi in zip(c.codecs, v):
                out += _flat(ci, vi)
            return out
        return list(v)
    return [v]


def _check_row_value(c, got, want, where):
    g = np.atleast_1d(np.asarray(got)).tolist()
    w = _flat(c, want)
    assert len(g) == len(w), f"{where}: {g} vs {w}"
    for x, y in zip(g, w):
        if isinstance(y, float) and math.isnan(y):
            assert math.isnan(x), f"{where}: {g} != {w}"
        else:
            assert x == y, f"{where}: decode_many {g} != decode {w}"


# ------------------------------------------------------------- target 3: SnapshotDecoder.decode

class SnapshotWorld:
    """A small scene streamed through a SnapshotEncoder: the datagrams the harness starts from.

    ``hello`` is the stream's hello (a fixed stream id and ``started``, so that the corpus is
    the same on every run); ``packets[i]`` is the whole datagram of tick ``i`` and
    ``fragments[i]`` the datagrams ``encode_datagrams`` sends for it (seq ``SEQ0 + i``, near
    the 16-bit wrap: the packet and its check, docs/wire-format.md 11), encoded against the
    newest acknowledged snapshot; the client acknowledges every other tick, so the stream mixes
    full and delta packets with entities appearing, changing, resting and leaving.
    """

    SEQ0 = 65530
    STREAM_ID = 0xF022
    STARTED = 1_700_000_000_000_000
    MAX_DATAGRAM = 128

    def __init__(self, ticks=8):
        self.schema = schemas()[0]
        # a small datagram budget: the full packets go out in fragments under encode_datagrams
        # (``fragments[i]``), and the hello summarizes only the fields that fit
        enc = qc.SnapshotEncoder(self.schema, history=64, stream_id=self.STREAM_ID,
                                 max_datagram=self.MAX_DATAGRAM)
        enc._started_us = self.STARTED           # a fixed hello
        enc._hello = None
        self.enc = enc
        self.hello = enc.hello()
        rng = np.random.default_rng(1234)
        n_all = 12
        pos = rng.uniform(-100, 100, (n_all, 3))
        quat = rng.normal(size=(n_all, 4))
        vel = rng.uniform(-5, 5, (n_all, 3))
        vel[::3] = 0.0
        self.packets, self.fragments, self.snaps, self.seqs = [], [], [], []
        for t in range(ticks):
            alive = np.array([i for i in range(n_all) if (i + t) % 5 != 0])    # some come and go
            pos[alive] += vel[alive] * 0.05
            # entity 1: a box on a face whose two largest components swap (a remapped smallest
            # three, docs/wire-format.md 7.3); entity 2: a slow turn (same-index differences)
            tie = 0.7071 + 1e-4 * (1 if t % 2 else -1)
            quat[1] = (tie, 1.4142 - tie, 0.004 * t, 0.001)
            quat[2] = (np.sin(0.05 * t), 0.0, 0.0, np.cos(0.05 * t))
            cols = {
                "position": pos[alive], "rotation": quat[alive],
                "velocity": vel[alive], "yaw": (np.arange(n_all)[alive] * 0.3 + t * 0.01) % 6.0,
                "health": (np.arange(n_all)[alive] * 7 + t) % 256, "state": alive % 4,
                "grounded": (alive + t) % 2 == 0,
            }
            ids = (alive * 1000 + 7).astype(np.uint64)
            snap = self.schema.snapshot(ids, cols)
            seq = (self.SEQ0 + t) % 65536
            self.packets.append(enc.encode(seq, snap))
            self.fragments.append(_framing.fragment(self.packets[-1], self.MAX_DATAGRAM, enc._seed_f))
            self.snaps.append(snap)
            self.seqs.append(seq)
            if t % 2 == 0:
                enc.ack(seq)
        self._expected_records = [None] * ticks

    def decoder(self, upto, pending=False):
        """A decoder that adopted the hello (fed first, as a datagram) and has decoded the
        datagrams ``0 .. upto - 1``; with ``pending``, then took the first fragment of packet 0
        (``fragments[0][0]``: its packet waits for the second)."""
        d = qc.SnapshotDecoder(self.schema)
        assert d.decode(self.hello) is None
        for i in range(upto):
            d.decode(self.packets[i])
        if pending:
            assert d.decode(self.fragments[0][0]) is None
        return d

    def seal(self, mode, body):
        """``body`` made a datagram that passes a check: 1 a whole packet (seed_P), 2 a fragment
        (seed_F), 3 a hello (seed_H): a forger who saw the hello reaches what lies behind it."""
        from quantcodec._bitstream import crc32c
        from quantcodec._framing import SEED_H
        seed = (self.enc._seed_p, self.enc._seed_f, SEED_H)[mode - 1]
        return body + crc32c(body, seed).to_bytes(4, "little")

    def records(self, i):
        """The records packet ``i`` decodes to (computed once, by a clean decoder)."""
        if self._expected_records[i] is None:
            d = self.decoder(i)
            self._expected_records[i] = view_records(d.decode(self.packets[i]))
        return self._expected_records[i]


def view_records(view):
    return {int(k): v for k, v in view.records().items()}


_WORLD = None


def world():
    global _WORLD
    if _WORLD is None:
        _WORLD = SnapshotWorld()
    return _WORLD


def _check_view(schema, view):
    assert isinstance(view.seq, int) and 0 <= view.seq <= 65535, f"view.seq {view.seq!r}"
    ids = np.asarray(view.ids)
    n = ids.shape[0]
    assert ids.ndim == 1 and ids.dtype.kind == "u", f"ids {ids.dtype} {ids.shape}"
    assert len(np.unique(ids)) == n, "duplicate ids in a decoded view"
    names = [name for name, _ in _fields(schema)]
    assert list(view.columns) == names, f"columns {list(view.columns)} != {names}"
    codes = view.codes
    for name, c in _fields(schema):
        check_column(c, np.asarray(view.columns[name]), n, name)
        ok = np.asarray(c.valid(codes[name]))
        assert ok.shape == (n,) and ok.all(), f"{name}: decoded codes that are not valid"


def _seq_newer(a, b):
    """Whether seq ``a`` is newer than ``b`` (mod 65536, wraparound-aware)."""
    return a != b and ((a - b) & 0xFFFF) < 0x8000


def _stream_state(d):
    """Everything a refused datagram must leave as it was: the adopted stream, ``latest``, the
    held snapshots (by identity) and the partial packets of reassembly."""
    frag = d._frag
    parts = None if frag is None else (frag.held, {k: dict(v) for k, v in frag.parts.items()})
    return (d.hello_info, d.latest, d.held, {s: d.get(s) for s in d.held}, parts)


def _same_state(a, b, completed=None):
    """``a`` and ``b`` are the same state, but for the partial packet ``completed`` (its key
    ``(seq, count, pcheck)``) that may be gone: a fragment that completes a packet which is then
    refused (its check or its decode) leaves nothing of it (docs/wire-format.md 12, rule 3)."""
    hello_a, latest_a, held_a, snaps_a, parts_a = a
    hello_b, latest_b, held_b, snaps_b, parts_b = b
    assert hello_a == hello_b, "a refused datagram changed the adopted stream"
    assert latest_a == latest_b, f"a DecodeError moved latest from {latest_a} to {latest_b}"
    assert held_a == held_b, f"a DecodeError changed the held snapshots from {held_a} to {held_b}"
    assert all(snaps_a[s] is snaps_b[s] for s in snaps_a), "a DecodeError replaced a held snapshot"
    if parts_a != parts_b and completed is not None and parts_a is not None:
        held, parts = parts_a
        if completed in parts and completed not in parts_b[1]:
            parts = {k: v for k, v in parts.items() if k != completed}
            held -= sum(len(c) for c in parts_a[1][completed].values())
            parts_a = (held, parts)
    assert parts_a == parts_b, "a DecodeError changed the partial packets"


def snapshot_decode(data):
    """Fuzz ``SnapshotDecoder.decode`` of one datagram.

    Layout: ``data[0] & 3``: the decoder's state (it adopted the hello, fed first as a
    datagram, and decoded the first 0, 1, 3 or 5 datagrams of ``SnapshotWorld``; with
    ``data[0] & 16`` it then took the first of packet 0's two fragments, so that a second one
    completes a packet);
    ``(data[0] >> 2) & 3``: how the rest reaches the decoder: 0 as the datagram itself, 1 sealed
    as a whole packet of the stream (the rest is a bare packet), 2 sealed as a fragment of the
    stream, 3 sealed as a hello (docs/wire-format.md 11-14). Only ``DecodeError`` (of a known
    kind) may be raised. A view is checked (valid codes, unique ids, ``latest`` forward only).
    None (a hello, a fragment pending) leaves ``latest`` and the held snapshots, unless a hello
    of a newer stream was adopted: then the decoder started over. After a ``DecodeError`` the
    decoder must be exactly as it was (stream, ``latest``, held snapshots, partial packets), the
    last datagram it took decodes again to the same records and the next datagram of the stream
    decodes to the right records.
    """
    if not data:
        return
    w = world()
    upto = (0, 1, 3, 5)[data[0] & 3]
    mode = (data[0] >> 2) & 3
    dgram = bytes(data[1:]) if mode == 0 else w.seal(mode, bytes(data[1:]))
    d = w.decoder(upto, pending=bool(data[0] & 16))
    before = _stream_state(d)
    try:
        view = d.decode(dgram)
    except DecodeError as e:
        assert e.kind in DecodeError.KINDS, f"DecodeError of kind {e.kind!r}"
        view = e
    if view is None:
        if d.hello_info != before[0]:       # another stream's hello: adopted, started over
            # (an older stream's only while the adopted one had decoded nothing: section 13)
            assert before[0] is None or d.hello_info.started > before[0].started \
                or before[1] is None, "adopted an older stream's hello over a stream with packets"
            assert d.latest is None and d.held == (), "a new stream kept the old one's state"
        else:
            assert (d.latest, d.held) == before[1:3], "a datagram that returned None changed the state"
        return
    if not isinstance(view, DecodeError):
        _check_view(w.schema, view)
        latest = before[1]
        if latest is None or _seq_newer(view.seq, latest):
            assert d.latest == view.seq, f"latest {d.latest} after decoding seq {view.seq} over {latest}"
        else:
            assert d.latest == latest, f"latest moved from {latest} to {d.latest} on an older seq {view.seq}"
        return
    completed = None
    if len(dgram) >= 12:            # the partial packet a fragment would complete
        completed = (int.from_bytes(dgram[:2], "little"), dgram[3] + 1, int.from_bytes(dgram[4:8], "little"))
    _same_state(before, _stream_state(d), completed)
    if upto:
        again = d.decode(w.packets[upto - 1])
        assert view_records(again) == w.records(upto - 1), "the last packet no longer decodes to its state"
        assert d.latest == before[1]
    if upto < len(w.packets):
        nxt = d.decode(w.packets[upto])
        assert view_records(nxt) == w.records(upto), "the next packet does not decode to its state"


# ---------------------------------------------- target 4: the session's replies (StreamServer.receive)

SESSION_KEY = bytes(range(1, 17))
SESSION_NONCE = 0x5EED0001
SESSION_BUDGET = 400


def session(upto, keyed=False, budget=None):
    """A StreamServer (history 8, datagrams of at most ``SnapshotWorld.MAX_DATAGRAM`` bytes,
    the shared key ``SESSION_KEY`` when ``keyed``, ``budget`` bytes a tick or None) with one
    client "c", and that client's StreamClient (nonce ``SESSION_NONCE``), after ``upto`` ticks of
    the world: each tick the server sends, the client takes every datagram and replies."""
    w = world()
    key = SESSION_KEY if keyed else None
    server = qc.StreamServer(w.schema, history=8, max_datagram=w.MAX_DATAGRAM, key=key, budget=budget)
    server.connect("c")
    enc = server.encoder("c")
    enc._start(w.STREAM_ID)                 # a fixed stream and hello: the same checks every run
    enc._started_us, enc._hello = w.STARTED, None
    client = qc.StreamClient(w.schema, key=key, nonce=SESSION_NONCE)
    for t in range(upto):
        _session_tick(server, client, t, budget)
    return server, client


def _session_tick(server, client, t, budget, forged=False):
    """One tick both ways. Every datagram fits ``max_datagram``, the tick's datagrams fit the
    budget, and every view the client decodes is the one the server recorded for it, code for
    code; the only refusal the client may make of its server's datagrams is ``baseline`` (a
    baseline it does not hold: after a forged ack, sealed by this harness, told the server so;
    ``forged``: the client took a datagram this harness sealed, not its server's: any kind, and
    its views are no longer the server's to compare),
    and the server's of its client's reply ``stale`` (a reply the harness sealed with its
    number, or a later one, came first; ``forged``: any kind, the client's replies then being of
    the forged stream)."""
    w = world()
    out = server.send(t, w.snaps[t % len(w.snaps)])["c"]
    assert all(len(d) <= w.MAX_DATAGRAM for d in out), f"tick {t}: a datagram over max_datagram"
    if budget is not None:
        assert sum(len(d) for d in out) <= budget, f"tick {t}: {sum(len(d) for d in out)} bytes over the budget"
    for d in out:
        try:
            view = client.receive(d)
        except DecodeError as e:
            assert e.kind == "baseline" or forged and e.kind in DecodeError.KINDS, \
                f"tick {t}: the client refused its server's datagram: {e.kind}: {e}"
            continue
        if view is not None and not forged:
            want = server.view("c", view.seq)
            assert want is not None, f"tick {t}: the client decoded {view.seq}, which the server holds no view of"
            assert np.array_equal(view.ids, want.ids) and np.array_equal(view.matrix, want.matrix), \
                f"tick {t}: the client's view {view.seq} differs from the server's record"
    r = client.reply()
    if r is not None:
        try:
            server.receive("c", r)
        except DecodeError as e:        # (a reply of the harness's, numbered at or past it, came first)
            assert e.kind == "stale" or forged and e.kind in DecodeError.KINDS, \
                f"tick {t}: the server refused its client's reply: {e.kind}: {e}"


def _server_state(server):
    """Everything a refused reply must leave as it was."""
    peer = server._peers["c"]
    enc = peer.encoder
    return (enc.stream_id, enc._state.state(), dict(peer.replies), peer.nonce, peer.acked,
            peer.hello_due, peer.reply_ticks, server.link("c"))


def _client_state(client):
    return (_stream_state(client._decoder), client.view, client._due, client._rseq, client._idle)


def session_receive(data):
    """Fuzz the session's two receive calls: ``StreamServer.receive`` of a reply, and
    ``StreamClient.receive`` of a datagram.

    Layout: ``data[0] & 3``: the session's state (``session(upto)`` after 0, 1, 3 or 5 ticks);
    ``data[0] & 16``: keyed (``SESSION_KEY``: SipHash tags instead of CRCs); ``data[0] & 32``:
    a budget of ``SESSION_BUDGET`` bytes a tick; ``data[0] & 64``: the rest goes to the client
    instead of the server; ``(data[0] >> 2) & 3``, for the server: 0 the reply as it is, 1 sealed
    with the stream's reply check (an ack), 2 sealed with the hello requests' check, 3 an ack of
    the client's own nonce: ``0x41``, ``data[1]`` (the flags), the nonce, then ``data[2:]``
    (rseq, latest, acks), sealed; for the client: 0 the datagram as it is, 1 sealed as a whole
    packet of the stream, 2 as a fragment, 3 as a hello (docs/wire-format.md 11-18).

    Only ``DecodeError`` (of a known kind) may be raised; after one, the server (its stream and
    what it was acked, the replies taken, the incarnation, its link statistics) or the client
    (its decoder's stream, latest, held snapshots and partial packets, its view, whether a reply
    is due, its reply numbers) is exactly as before, but that a client refusing a packet for its
    hello or baseline then owes a reply. Then three more ticks both ways: every datagram fits,
    every view the client decodes equals the server's record of it (after a reply sealed by
    this harness that lies about what the client holds, the client may refuse packets coded
    against a baseline it lacks, as ``baseline``: nothing else; after a datagram sealed by this
    harness that the client took, which only the key's holder or, without a key, anyone can
    make (the check guards against accidents only), anything but another exception may follow),
    and the session goes on.
    """
    if not data:
        return
    upto = (0, 1, 3, 5)[data[0] & 3]
    mode = (data[0] >> 2) & 3
    keyed, budget = bool(data[0] & 16), (SESSION_BUDGET if data[0] & 32 else None)
    server, client = session(upto, keyed, budget)
    enc = server.encoder("c")
    body = bytes(data[1:])
    refused = True
    if data[0] & 64:
        dgram = body
        if mode == 1:
            dgram = _framing.seal(body, enc._check_p)
        elif mode == 2:
            dgram = _framing.seal(body, enc._check_f)
        elif mode == 3:
            dgram = _framing.seal(body, _framing.hello_check(client._decoder._mk))
        before = _client_state(client)
        try:
            client.receive(dgram)
            refused = False
        except DecodeError as e:
            assert e.kind in DecodeError.KINDS, f"DecodeError of kind {e.kind!r}"
            after = _client_state(client)
            completed = None
            if len(dgram) >= 12:
                completed = (int.from_bytes(dgram[:2], "little"), dgram[3] + 1, int.from_bytes(dgram[4:8], "little"))
            _same_state(before[0], after[0], completed)
            assert after[1] is before[1], "a refused datagram changed the client's view"
            due = before[2] or e.kind in ("no-hello", "baseline")
            assert after[2:] == (due,) + before[3:], \
                f"a refused datagram ({e.kind}) changed the client's replies: {before[2:]} -> {after[2:]}"
    else:
        dgram = body
        if mode == 1:
            dgram = _framing.seal(body, enc._check_r)
        elif mode == 2:
            dgram = _framing.seal(body, server._peers["c"].request_check)
        elif mode == 3:
            dgram = _framing.seal(bytes([0x41]) + body[:1] + SESSION_NONCE.to_bytes(4, "little") + body[1:],
                                  enc._check_r)
        before = _server_state(server)
        try:
            assert server.receive("c", dgram) is None
        except DecodeError as e:
            assert e.kind in DecodeError.KINDS, f"DecodeError of kind {e.kind!r}"
            assert _server_state(server) == before, f"a refused reply ({e.kind}: {e}) changed the server"
    # a datagram this harness sealed that the client took (a packet, a fragment or a hello that
    # the key's holder, or without a key anyone, can make: the check guards against accidents
    # only) may leave it holding what its server never sent
    forged = bool(data[0] & 64) and mode != 0 and not refused
    for t in range(upto, upto + 3):
        _session_tick(server, client, t, budget, forged)


# ------------------------------------------------------------------ real records (for the corpus)

def _sample_column(c, rng, n):
    kind = type(c).__name__
    if kind == "Vector":
        return np.stack([_sample_column(ci, rng, n) for ci in c.codecs], axis=1)
    if kind == "NearlyZero":
        a = _sample_column(c.inner, rng, n)
        a[rng.random(n) < 0.4] = 0
        return a
    if kind == "Quat":
        return rng.normal(size=(n, 4))
    if kind == "UnitVector":
        return rng.normal(size=(n, 3))
    if kind == "UInt":
        return rng.integers(0, 1 << min(c.bits, 63), n, dtype=np.uint64 if c.bits > 32 else np.uint32)
    if kind == "Int":
        return rng.integers(-(1 << (c.bits - 1)), 1 << (c.bits - 1), n, dtype=np.int64)
    if kind == "Bool":
        return rng.random(n) < 0.5
    if kind == "Enum":
        return rng.integers(0, c.n, n, dtype=np.uint32)
    if kind == "Half":
        return rng.normal(scale=100, size=n)
    rng_ = _codec_range_scalar(c)
    lo, hi = rng_
    lo, hi = max(lo, -1e6), min(hi, 1e6)
    a = rng.uniform(lo, hi, n)
    a[rng.random(n) < 0.1] = hi * 1.5   # some clamp
    return a


def sample_columns(schema, rng, n):
    """``n`` random records of one of our schemas, as batch columns."""
    return {name: _sample_column(c, rng, n) for name, c in _fields(schema)}


def _row(c, a, i):
    kind = type(c).__name__
    v = a[i]
    if isinstance(v, np.ndarray):
        return tuple(float(x) for x in v)
    if kind == "Bool":
        return bool(v)
    if kind in ("UInt", "Int", "Enum"):
        return int(v)
    return float(v)


def sample_records(schema, rng, n):
    """``n`` random records of one of our schemas, as dicts."""
    cols = sample_columns(schema, rng, n)
    return [{name: _row(c, cols[name], i) for name, c in _fields(schema)} for i in range(n)]
