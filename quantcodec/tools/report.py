"""``quantcodec report``: per-field bit accounting of a schema over a recorded trace.

The trace format is documented in docs/trace-format.md; the method in docs/trace-format.md
("What the report measures"). In short:

- every tick is quantized once by the schema (``schema.snapshot``), so clamps, errors and changes
  are those of the real encoder;
- *full* bits of a field are what its codes take in a record (fixed for most codecs; for
  ``NearlyZero`` one bit when the value is sent as zero);
- *delta* packets are made by a ``SnapshotEncoder`` whose baseline is the snapshot sent
  ``lag = max(1, round(ack_delay * hz))`` ticks before (acks arrive after the ack delay, no loss);
- the *delta* bits are split between fields by unfreezing them one at a time in wire order:
  stream k has the first k fields changing as recorded and the others frozen (held at their
  first-tick values); field k costs stream k+1 minus stream k. The split adds up exactly: stream 0
  (nothing changes) is the "shared" line (header, ids, empty change sets), and an entity's
  "changed" overhead is paid by the first field, in wire order, that changes for it;
- the totals (bytes and kbit/s) count the datagrams as ``encode_datagrams`` sends them: the
  packet padded to a byte, its 4-byte check and, above ``max_datagram`` (1,200 bytes), the
  fragments' headers and checks; the "framing" line is that cost beyond the packet's bits.
"""

import math
import os
import zipfile
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np

from ..errors import UserError

HZ_RANGE = (1e-3, 1e6)        # a trace's 'hz' (and --hz): a tick a quarter hour to a million a second

__all__ = ["load_schema", "load_trace", "Trace", "run", "format_text", "field_errors", "quat_angle_deg",
           "changed_rows"]


_MAX_LAG = 32766             # the encoder's history holds at most 32767 sequence numbers

# --------------------------------------------------------------------------------------------
# loading


def load_schema(path):
    """``qc.Schema.load(path)``, with every way a user file can be wrong turned into a UserError."""
    from ..schema import Schema
    if not os.path.exists(path):
        raise UserError(f"schema file not found: {path}")
    if os.path.isdir(path):
        raise UserError(f"schema file is a directory: {path}")
    try:
        return Schema.load(path)
    except OSError as e:
        raise UserError(f"cannot read schema file {path}: {e.strerror or e}") from None
    except (ValueError, TypeError, KeyError) as e:
        # SchemaError (a ValueError) names the file already; others come from odd structures
        text = str(e)
        raise UserError(text if path in text else f"{path}: not a valid schema: {text}") from None


@dataclass
class Trace:
    """A loaded trace: ``columns[field]`` is (ticks, entities, ...) and ``ids`` (ticks, entities)."""

    path: str
    columns: Dict[str, np.ndarray]
    ids: np.ndarray
    hz: Optional[float]
    ids_given: bool
    ignored: List[str] = field(default_factory=list)

    @property
    def n_ticks(self):
        return int(self.ids.shape[0])

    @property
    def n_entities(self):
        return int(self.ids.shape[1])


def _value_shape(codec):
    """The shape of one value of `codec` in a batch column: () or (k,)."""
    import quantcodec as qc
    if isinstance(codec, qc.NearlyZero):
        return _value_shape(codec.inner)
    if isinstance(codec, qc.Quat):
        return (4,)
    if isinstance(codec, qc.UnitVector):
        return (3,)
    if isinstance(codec, qc.Vector):
        return (len(codec.codecs),)
    return ()


def load_trace(path, schema):
    """Read and check a trace .npz against `schema` (docs/trace-format.md). UserError if wrong."""
    import quantcodec as qc
    if not os.path.exists(path):
        raise UserError(f"trace file not found: {path}")
    if os.path.isdir(path):
        raise UserError(f"trace file is a directory: {path}")
    try:
        loaded = np.load(path, allow_pickle=False)
    except OSError as e:
        raise UserError(f"cannot read trace file {path}: {e.strerror or e}") from None
    except (ValueError, zipfile.BadZipFile, EOFError):
        # (NumPy's own words here are about loading pickled data, which a trace never holds)
        hint = (": it looks like a schema file; the schema comes first, then the trace"
                if os.path.splitext(str(path))[1].lower() in (".toml", ".json") else "")
        raise UserError(f"{path}: not a NumPy .npz trace{hint} (docs/trace-format.md)") from None
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise UserError(f"{path}: a .npy file holds one array; a trace is a .npz with one array per "
                        f"field (numpy.savez(path, position=..., rotation=..., ids=...))")
    with loaded:
        try:
            arrays = {name: loaded[name] for name in loaded.files}
        except (ValueError, OSError, zipfile.BadZipFile, EOFError) as e:
            raise UserError(f"{path}: cannot read its arrays ({e})") from None

    names = list(schema.names)
    missing = [n for n in names if n not in arrays]
    if missing:
        have = ", ".join(sorted(arrays)) or "none"
        raise UserError(f"{path}: no array for field(s) {', '.join(missing)} of schema {schema.name!r} "
                        f"(the trace has: {have})")
    special = [k for k in ("ids", "hz") if k not in names]
    ignored = sorted(k for k in arrays if k not in names and k not in special)

    shape = None
    columns = {}
    for name in names:
        a = arrays[name]
        codec = schema[name]
        if a.dtype.kind not in "biuf" and not (a.dtype.kind in "US" and isinstance(codec, qc.Enum)):
            raise UserError(f"{path}: field {name!r} has dtype {a.dtype}; expected numbers"
                            + (" (or labels)" if isinstance(codec, qc.Enum) else ""))
        vshape = _value_shape(codec)
        if a.ndim != 2 + len(vshape) or a.shape[2:] != vshape:
            want = "(ticks, entities" + "".join(f", {k}" for k in vshape) + ")"
            raise UserError(f"{path}: field {name!r} has shape {a.shape}; expected {want} for {codec!r}")
        if shape is None:
            shape = a.shape[:2]
        elif a.shape[:2] != shape:
            raise UserError(f"{path}: field {name!r} has {a.shape[0]} ticks x {a.shape[1]} entities, "
                            f"but {names[0]!r} has {shape[0]} x {shape[1]}")
        if a.dtype.kind in "US":
            a = _labels_to_indices(path, name, codec, a)
        columns[name] = a
    n_ticks, n_entities = shape
    if n_ticks < 1 or n_entities < 1:
        raise UserError(f"{path}: the trace is empty ({n_ticks} ticks x {n_entities} entities)")

    ids_given = "ids" in special and "ids" in arrays
    if ids_given:
        ids = arrays["ids"]
        if ids.dtype.kind not in "iu":
            raise UserError(f"{path}: 'ids' has dtype {ids.dtype}; expected unsigned integers")
        if ids.shape == (n_entities,):
            ids = np.broadcast_to(ids, (n_ticks, n_entities))
        elif ids.shape != (n_ticks, n_entities):
            raise UserError(f"{path}: 'ids' has shape {ids.shape}; expected ({n_entities},) or "
                            f"({n_ticks}, {n_entities})")
        if ids.dtype.kind == "i" and ids.size and ids.min() < 0:
            raise UserError(f"{path}: 'ids' holds negative values; ids are unsigned integers")
        ids = ids.astype(np.uint64)
        srt = np.sort(ids, axis=1)
        dup = np.nonzero((srt[:, 1:] == srt[:, :-1]).any(axis=1))[0]
        if dup.size:
            t = int(dup[0])
            row = srt[t]
            value = int(row[1:][row[1:] == row[:-1]][0])
            raise UserError(f"{path}: 'ids' are not unique at tick {t} (id {value} appears twice)")
    else:
        ids = np.broadcast_to(np.arange(n_entities, dtype=np.uint64), (n_ticks, n_entities))

    hz = None
    if "hz" in special and "hz" in arrays:
        h = arrays["hz"]
        if h.size != 1 or h.dtype.kind not in "iuf" or not (HZ_RANGE[0] <= float(h.reshape(-1)[0]) <= HZ_RANGE[1]):
            raise UserError(f"{path}: 'hz' must be one number in {HZ_RANGE[0]:g}..{HZ_RANGE[1]:g}, got {h!r}")
        hz = float(h.reshape(-1)[0])
    return Trace(path=path, columns=columns, ids=ids, hz=hz, ids_given=ids_given, ignored=ignored)


def _labels_to_indices(path, name, codec, a):
    labels = codec.spec().get("labels")
    if not labels:
        raise UserError(f"{path}: field {name!r} holds labels but {codec!r} has none; store indices")
    lookup = {str(label): i for i, label in enumerate(labels)}
    flat = a.astype(str).reshape(-1)
    out = np.empty(flat.shape, dtype=np.uint32)
    for i, v in enumerate(flat):
        try:
            out[i] = lookup[v]
        except KeyError:
            raise UserError(f"{path}: field {name!r} holds label {str(v)!r}, not one of {list(labels)}") from None
    return out.reshape(a.shape)


# --------------------------------------------------------------------------------------------
# errors


def _angle_between(a, b):
    """Angle in degrees between the rows of `a` and `b` (same shape (..., k)), robust near 0."""
    na = a / np.linalg.norm(a, axis=-1, keepdims=True)
    nb = b / np.linalg.norm(b, axis=-1, keepdims=True)
    return np.degrees(2.0 * np.arctan2(np.linalg.norm(na - nb, axis=-1), np.linalg.norm(na + nb, axis=-1)))


def quat_angle_deg(a, b):
    """The rotation angle in degrees between quaternion rows `a` and `b` (q and -q the same)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    flip = np.where(np.sum(a * b, axis=-1) < 0, -1.0, 1.0)
    return 2.0 * _angle_between(a, b * flip[..., None])


def field_errors(codec, x, y):
    """Per-value, per-component absolute errors of decoded `y` against input `x` for `codec`.

    Returns an array of the value shape's components ((N,) or (N, k)) in the codec's units
    (degrees for Quat and UnitVector: one angle per value), NaN where the input was not finite
    (a substitution the schema counts as a clamp), or None for exact codecs.
    """
    import quantcodec as qc
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if isinstance(codec, (qc.UInt, qc.Int, qc.IntRange, qc.Bool, qc.Enum)):
        return None
    if isinstance(codec, qc.NearlyZero):
        return field_errors(codec.inner, x, y)
    if isinstance(codec, qc.Quat):
        return quat_angle_deg(x, y)
    if isinstance(codec, qc.UnitVector):
        return _angle_between(x, y)
    if isinstance(codec, qc.Vector):
        cols = [field_errors(c, x[:, i], y[:, i]) for i, c in enumerate(codec.codecs)]
        cols = [np.zeros(x.shape[0]) if c is None else c for c in cols]
        return np.stack(cols, axis=1)
    with np.errstate(invalid="ignore"):
        err = np.abs(y - x)
    if isinstance(codec, qc.Angle):
        full = 360.0 if codec.spec().get("unit") == "deg" else 2.0 * math.pi
        err = np.mod(err, full)
        err = np.minimum(err, full - err)
    err[~np.isfinite(x)] = np.nan
    return err


def _full_bits(codec, codes):
    """Bits each value of `codes` (a batch code array of `codec`) takes in a record: (N,)."""
    import quantcodec as qc
    n = codes.shape[0]
    if isinstance(codec, qc.NearlyZero):
        flag = np.asarray(codes)[:, 0].astype(np.int64)
        return 1 + flag * codec.inner.bits
    return np.full(n, codec.bits, dtype=np.int64)


# --------------------------------------------------------------------------------------------
# the accounting


def changed_rows(ids_now, codes_now, ids_base, codes_base):
    """Boolean (N,) per entity of `ids_now`: its codes differ from the baseline's, or it is new."""
    if ids_base is None:
        return np.ones(ids_now.shape[0], dtype=bool)
    if np.array_equal(ids_now, ids_base):
        a = codes_now.reshape(codes_now.shape[0], -1)
        b = codes_base.reshape(codes_base.shape[0], -1)
        return (a != b).any(axis=1)
    order = np.argsort(ids_base, kind="stable")
    sorted_ids = ids_base[order]
    pos = np.searchsorted(sorted_ids, ids_now)
    pos_clipped = np.minimum(pos, len(sorted_ids) - 1)
    found = (pos < len(sorted_ids)) & (sorted_ids[pos_clipped] == ids_now)
    changed = np.ones(ids_now.shape[0], dtype=bool)
    idx = order[pos_clipped[found]]
    a = codes_now[found].reshape(int(found.sum()), -1)
    b = codes_base[idx].reshape(idx.shape[0], -1)
    changed[found] = (a != b).any(axis=1)
    return changed


def _wire_bytes(datagram_len, max_datagram):
    """What ``encode_datagrams`` sends for a datagram of this length (the packet padded to a byte
    and its 4-byte check): itself when it fits, else its fragments, each with its header and
    check (docs/wire-format.md section 12). Counted past 256 fragments too, where the encoder
    would refuse: the report is a what-if."""
    from .._framing import CHECK, FRAGMENT_HEADER
    if datagram_len <= max_datagram:
        return datagram_len
    packet = datagram_len - CHECK
    count = -(-packet // (max_datagram - FRAGMENT_HEADER - CHECK))
    return packet + count * (FRAGMENT_HEADER + CHECK)


def _stream_bits(schema, trace, frames, lag, history, bar):
    """Bits of the packets of each tick, baseline `lag` ticks back (None: full every tick), and
    the bits of the datagrams that carry them."""
    from ..snapshot import Snapshot, SnapshotEncoder
    enc = SnapshotEncoder(schema, history=history)
    bits = np.empty(trace.n_ticks, dtype=np.int64)
    wire = np.empty(trace.n_ticks, dtype=np.int64)
    for t in range(trace.n_ticks):
        bar.update(1)
        if lag is not None and t - lag >= 0:
            enc.ack((t - lag) % 65536)
        # the codecs' rule, as step 1 counted it: a NaN in a recorded trace is substituted and
        # counted as a clamp (the report's 'clamped' column), where schema.snapshot's default
        # (bad="raise") would refuse the tick
        snap = Snapshot.from_codes(schema, trace.ids[t], schema.quantize_many(frames(t)))
        datagram = enc.encode(t % 65536, snap)
        bits[t] = enc.last_bits            # the packet's bits before padding to a whole byte
        wire[t] = 8 * _wire_bytes(len(datagram), enc.max_datagram)
    return bits, wire


def run(schema, trace, *, hz, ack_delay_ms, progress=False):
    """Account for every field of `schema` over `trace`; returns a plain, JSON-able dict.
    `progress`: a progress bar on stderr (when it is a terminal)."""
    from .progress import progress_bar
    bar = progress_bar(trace.n_ticks * (len(schema.names) + 3), "report", enabled=progress)
    try:
        return _run(schema, trace, hz, ack_delay_ms, bar)
    finally:
        bar.close()


def _run(schema, trace, hz, ack_delay_ms, bar):
    import quantcodec as qc
    n_t, n_e = trace.n_ticks, trace.n_entities
    lag = max(1, int(round(ack_delay_ms / 1000.0 * hz)))
    if lag > _MAX_LAG:
        raise UserError(f"--ack-delay {ack_delay_ms:g} ms is {lag} ticks at {hz:g} Hz; a snapshot history "
                        f"holds at most {_MAX_LAG + 1} sequence numbers (they wrap at 65536), so keep it "
                        f"at {_MAX_LAG} ticks or less")
    history = max(64, lag + 1)

    # 1. quantize everything once, tick by tick (so an error can name its tick and entity row)
    schema.reset_clamped()
    codes = {name: [] for name in schema.names}
    for t in range(n_t):
        cols = {name: trace.columns[name][t] for name in schema.names}
        try:
            c = schema.quantize_many(cols)
        except (qc.RangeError, TypeError, ValueError) as e:
            raise UserError(f"{trace.path}: tick {t}: {e}") from None
        for name in schema.names:
            codes[name].append(c[name])
        bar.update(1)
    clamped = schema.reset_clamped()
    codes = {name: np.stack(v) for name, v in codes.items()}          # (T, N, ...)
    flat_codes = {name: v.reshape((n_t * n_e,) + v.shape[2:]) for name, v in codes.items()}
    decoded = schema.dequantize_many(flat_codes)

    fields = []
    for name, codec in zip(schema.names, schema.codecs):
        x = trace.columns[name].reshape((n_t * n_e,) + trace.columns[name].shape[2:])
        err = field_errors(codec, x, decoded[name])
        if err is None:
            worst = 0.0
            per_comp = None
        else:
            e2 = err.reshape(err.shape[0], -1)
            with np.errstate(invalid="ignore"):
                comp = [float(np.nanmax(e2[:, i])) if np.isfinite(e2[:, i]).any() else None
                        for i in range(e2.shape[1])]
            finite = [c for c in comp if c is not None]
            worst = max(finite) if finite else None
            per_comp = comp if e2.shape[1] > 1 else None
        bound = codec.max_error
        bound_max = max(bound) if isinstance(bound, tuple) else bound
        changed = np.zeros(n_t, dtype=np.int64)
        for t in range(lag, n_t):
            changed[t] = changed_rows(trace.ids[t], codes[name][t], trace.ids[t - lag], codes[name][t - lag]).sum()
        fields.append({
            "name": name,
            "codec": repr(codec),
            "kind": codec.spec()["kind"],
            "bits": int(codec.bits),
            "full_bits": float(_full_bits(codec, flat_codes[name]).mean()),
            "changed": float(changed[lag:].sum() / (n_e * (n_t - lag))) if n_t > lag else None,
            "clamped": int(clamped[name]),
            "worst_error": worst,
            "worst_error_per_component": per_comp,
            "max_error": bound_max,
            "unit": "deg" if isinstance(codec, (qc.Quat, qc.UnitVector)) else None,
            "exact": err is None,
        })

    # 2. packets: full every tick (never acked); delta streams with the fields unfrozen one by one
    def frames(t):
        return {name: trace.columns[name][t] for name in schema.names}

    full, full_wire = _stream_bits(schema, trace, frames, None, history, bar)
    delta_ticks = slice(lag, n_t)
    n_delta = n_t - lag
    names = list(schema.names)
    firsts = {name: trace.columns[name][0] for name in names}

    def live(k):
        """Frames in which only the first `k` fields (wire order) change; the rest stay frozen."""
        def make(t):
            cols = frames(t)
            for name in names[k:]:
                cols[name] = firsts[name]
            return cols
        return make

    # streams[k]: delta packets with the first k fields live; streams[F] is the real stream
    streams = [_stream_bits(schema, trace, live(k), lag, history, bar) for k in range(len(names) + 1)]
    delta_wire = streams[-1][1]
    streams = [bits for bits, _ in streams]
    delta = streams[-1]
    for k, f in enumerate(fields):
        f["delta_bits"] = (float((streams[k + 1][delta_ticks] - streams[k][delta_ticks]).sum() / (n_e * n_delta))
                           if n_delta > 0 else None)
    frozen_bits = float(streams[0][delta_ticks].mean() / n_e) if n_delta > 0 else None

    # the totals: what goes on the wire (the datagrams); the fields' and shared bits: the packets'
    # bits before framing; 'framing' is the difference (padding, checks, fragment headers)
    full_per_entity = float(full_wire.mean() / n_e)
    full_packet = float(full.mean() / n_e)
    delta_per_entity = float(delta_wire[delta_ticks].mean() / n_e) if n_delta > 0 else None
    delta_packet = float(delta[delta_ticks].mean() / n_e) if n_delta > 0 else None
    field_full = sum(f["full_bits"] for f in fields)
    field_delta = sum(f["delta_bits"] for f in fields) if n_delta > 0 else None
    return {
        "schema": {"name": schema.name, "version": schema.version, "fingerprint": schema.fingerprint,
                   "bits": schema.bits},
        "trace": {"path": trace.path, "ticks": n_t, "entities": n_e, "ids": trace.ids_given,
                  "ignored_arrays": trace.ignored},
        "hz": float(hz),
        "ack_delay_ms": float(ack_delay_ms),
        "lag_ticks": lag,
        "delta_ticks": n_delta,
        "fields": fields,
        "full": {"bits_per_entity": full_per_entity, "fields_bits_per_entity": field_full,
                 "shared_bits_per_entity": full_packet - field_full,
                 "packet_bits_per_entity": full_packet, "framing_bits_per_entity": full_per_entity - full_packet,
                 "bytes_per_entity": full_per_entity / 8, "kbit_per_s": float(full_wire.mean()) * hz / 1000.0,
                 "bytes_per_packet": float(full_wire.mean()) / 8},
        "delta": None if n_delta <= 0 else {
            "bits_per_entity": delta_per_entity, "fields_bits_per_entity": field_delta,
            "shared_bits_per_entity": frozen_bits,
            "packet_bits_per_entity": delta_packet, "framing_bits_per_entity": delta_per_entity - delta_packet,
            "bytes_per_entity": delta_per_entity / 8,
            "kbit_per_s": float(delta_wire[delta_ticks].mean()) * hz / 1000.0,
            "bytes_per_packet": float(delta_wire[delta_ticks].mean()) / 8},
        "raw": {"bytes_per_entity": 4 * sum(_float_count(c) for c in schema.codecs)},
    }


def _float_count(codec):
    """float32 values one value of `codec` takes when sent raw."""
    import quantcodec as qc
    if isinstance(codec, qc.NearlyZero):
        return _float_count(codec.inner)
    shape = _value_shape(codec)
    return shape[0] if shape else 1


# --------------------------------------------------------------------------------------------
# output


def _num(v, digits=4):
    if v is None:
        return "-"
    if v == 0:
        return "0"
    if abs(v) >= 1000 or abs(v) < 1e-3:
        return f"{v:.{digits - 1}e}"
    return f"{v:.{digits}g}"


def _lag_text(r):
    """The delta baseline: how many ticks back, what that is in ms at the trace's rate, and the
    ack delay asked for when rounding to whole ticks (at least one) made it another."""
    lag, hz, asked = r["lag_ticks"], r["hz"], r["ack_delay_ms"]
    back = lag * 1000.0 / hz
    text = (f"delta snapshots against the snapshot {lag} tick{'' if lag == 1 else 's'} back "
            f"({_ms(back)} at {hz:g} Hz), acked, no loss")
    if abs(back - asked) > 1e-9 * max(back, 1.0):
        text += f" (--ack-delay {asked:g} ms, rounded to a whole number of ticks, at least 1)"
    return text


def _ms(v):
    return f"{v:.3g} ms" if v < 100 else f"{v:.0f} ms"


def format_text(r):
    s, tr = r["schema"], r["trace"]
    out = [
        f"schema {s['name']!r} version {s['version']} (fingerprint {s['fingerprint']}): at most {s['bits']} bits a record",
        f"trace {tr['path']}: {tr['ticks']} ticks x {tr['entities']} entities at {r['hz']:g} Hz"
        + ("" if tr["ids"] else " (no ids: rows are entities)"),
        _lag_text(r),
    ]
    if tr["ignored_arrays"]:
        out.append(f"arrays not in the schema, ignored: {', '.join(tr['ignored_arrays'])}")
    out.append("")
    head = ("field", "codec bits", "full bits", "delta bits", "delta share", "changed", "clamped", "worst error", "bound")
    rows = []
    delta = r["delta"]
    for f in r["fields"]:
        share = (f["delta_bits"] / delta["bits_per_entity"] * 100
                 if delta and delta["bits_per_entity"] > 0 else None)
        unit = " deg" if f["unit"] == "deg" else ""
        worst = "exact" if f["exact"] else (_num(f["worst_error"]) + unit if f["worst_error"] is not None else "-")
        flag = " !" if (not f["exact"] and f["worst_error"] is not None and f["worst_error"] > f["max_error"] * (1 + 1e-9)) else ""
        rows.append((f["name"], str(f["bits"]), f"{f['full_bits']:.2f}",
                     "-" if f["delta_bits"] is None else f"{f['delta_bits']:.2f}",
                     "-" if share is None else f"{share:.1f}%",
                     "-" if f["changed"] is None else f"{f['changed'] * 100:.1f}%",
                     str(f["clamped"]), worst + flag, "0" if f["exact"] else _num(f["max_error"]) + unit))
    full = r["full"]
    rows.append(("shared", "", f"{full['shared_bits_per_entity']:.2f}",
                 "-" if delta is None else f"{delta['shared_bits_per_entity']:.2f}",
                 "-" if delta is None or delta["bits_per_entity"] <= 0 else
                 f"{delta['shared_bits_per_entity'] / delta['bits_per_entity'] * 100:.1f}%",
                 "", "", "", ""))
    rows.append(("framing", "", f"{full['framing_bits_per_entity']:.2f}",
                 "-" if delta is None else f"{delta['framing_bits_per_entity']:.2f}",
                 "-" if delta is None or delta["bits_per_entity"] <= 0 else
                 f"{delta['framing_bits_per_entity'] / delta['bits_per_entity'] * 100:.1f}%",
                 "", "", "", ""))
    rows.append(("total", "", f"{full['bits_per_entity']:.2f}",
                 "-" if delta is None else f"{delta['bits_per_entity']:.2f}", "", "", "", "", ""))
    widths = [max(len(head[i]), *(len(row[i]) for row in rows)) for i in range(len(head))]

    def line(row):
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip()

    out.append(line(head))
    out.append(line(tuple("-" * w for w in widths)))
    out += [line(row) for row in rows[:-3]]
    out.append(line(tuple("-" * w for w in widths)))
    out += [line(row) for row in rows[-3:]]
    out.append("")
    out.append("bits are per entity per update; 'shared' is what a packet costs when no field changes (header, ids,")
    out.append("change sets); fields are charged in wire order, unfrozen one at a time (docs/trace-format.md);")
    out.append("'framing' is what the datagrams add to the packets' bits: padding to a byte, the 4-byte check,")
    out.append("fragment headers above 1200 bytes; so bytes and kbit/s are the datagrams' (without the hello, a")
    out.append("key's 4 more bytes a datagram, or UDP/IP headers)")
    out.append(f"raw float32:  {r['raw']['bytes_per_entity']:.2f} bytes per entity per update")
    out.append(f"full:         {full['bytes_per_entity']:.2f} bytes per entity per update, "
               f"{full['kbit_per_s']:.1f} kbit/s for all {tr['entities']} entities")
    if delta is not None:
        out.append(f"delta:        {delta['bytes_per_entity']:.2f} bytes per entity per update, "
                   f"{delta['kbit_per_s']:.1f} kbit/s")
        costly = sorted((f for f in r["fields"] if f["delta_bits"] is not None), key=lambda f: -f["delta_bits"])
        if costly and delta["bits_per_entity"] > 0:
            top = ", ".join(f"{f['name']} ({f['delta_bits'] / delta['bits_per_entity'] * 100:.0f}%)" for f in costly[:3])
            out.append(f"costliest in delta snapshots: {top}")
    else:
        out.append(f"delta:        none (the trace has no more ticks than the {r['lag_ticks']}-tick ack delay)")
    clamped = [f for f in r["fields"] if f["clamped"]]
    if clamped:
        out.append("clamped (or non-finite) values: " + ", ".join(f"{f['name']} {f['clamped']}" for f in clamped)
                   + "; widen those ranges or check the data ('!' marks errors beyond the bound)")
    return "\n".join(out)
