"""Snapshots and delta compression against acknowledged baselines (SPEC section 5).

    snap = schema.snapshot(ids, columns)       # quantized once, immutable, shared by every client
    packet = encoder.encode(seq, snap)         # one SnapshotEncoder per client
    encoder.ack(seq)                           # the client said it has snapshot `seq`
    view = decoder.decode(packet)              # view.seq, view.ids, view.columns, view.records()

A :class:`Snapshot` keeps its entities sorted by id (ascending): that is the row order of
``ids``, ``columns``, ``codes`` and ``matrix``, on the server and in every decoded view, whatever
the order the rows were given in. The packet layout is in docs/wire-format.md; the coding itself
(all integer work on codes, in C) is in ``_delta.pyx``.

Sequence numbers live in 0..65535 and wrap: ``a`` is newer than ``b`` when ``(a - b) mod 65536``
is in 1..32767. The encoder names as baseline the newest acknowledged snapshot in its history
that is older than the packet; when a second, older acknowledged snapshot is also held, the
packet may extrapolate from the two (per component, only where that is cheaper). A decoder must
keep at least as much history as the encoder (the default, 64, on both ends).
"""

from __future__ import annotations

import os
import threading
import weakref
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

import numpy as np
import numpy.typing as npt

from ._delta import DeltaDecoder, DeltaEncoder, Layout, SnapshotData, _untracked_class, ascending_ids, ids_u64, same_ids
from ._history import DecoderState, EncoderState, PacketCache, seq_arg, seq_distance, seq_newer
from ._schemabase import plan_of
from . import _framing
from .errors import DecodeError, RangeError, SchemaError
from ._bitstream import crc32c as _crc32c

if TYPE_CHECKING:
    from typing_extensions import Literal

    from ._framing import Hello
    from .schema import Schema

# What the public signatures take (strings to the interpreter: `from __future__ import annotations`)
_Ids = npt.ArrayLike                    # entity ids: a 1-D array (or list) of non-negative integers
_Columns = Mapping[str, npt.ArrayLike]  # field -> values (or codes), a row an entity
_IdArray = npt.NDArray[np.uint64]
_Datagram = Union[bytes, bytearray, memoryview]     # (any contiguous buffer is taken)
_Key = Union[bytes, bytearray, memoryview]

__all__ = ["Snapshot", "SnapshotEncoder", "SnapshotDecoder", "PacketCache", "seq_newer", "seq_distance"]

MAX_HISTORY = 0x7FFF
MAX_ENTITIES = 0xFFFFFFFF

_U64 = np.dtype(np.uint64)


_seq = seq_arg      # (seq, owner) -> seq mod 65536; TypeError unless an integer


_clock_lock = threading.Lock()
_last_started = 0


def _clock():
    """Microseconds since the Unix epoch (a hello's ``started``)."""
    return time.time_ns() // 1000


def _started():
    """A stream's ``started``: the clock, strictly increasing within the process, so that a
    stream started later is always newer (two resets in one microsecond included)."""
    global _last_started
    with _clock_lock:
        _last_started = max(_clock(), _last_started + 1)
        return _last_started


def _stream_id(stream_id, owner):
    if stream_id is None:
        return int.from_bytes(os.urandom(8), "little")
    if isinstance(stream_id, (bool, np.bool_)) or not isinstance(stream_id, (int, np.integer)):
        raise TypeError(f"{owner}: stream_id must be an integer or None, got {type(stream_id).__name__}")
    if not 0 <= stream_id <= 0xFFFFFFFFFFFFFFFF:
        raise ValueError(f"{owner}: stream_id must be in 0..2**64-1, got {stream_id}")
    return int(stream_id)


def _history(history, owner):
    if isinstance(history, (bool, np.bool_)) or not isinstance(history, (int, np.integer)):
        raise TypeError(f"{owner}: history must be an integer, got {type(history).__name__}")
    if not 1 <= history <= MAX_HISTORY:
        raise ValueError(f"{owner}: history must be in 1..{MAX_HISTORY}, got {history}")
    return int(history)


def _plan_of(schema, owner):
    """The schema's compiled plan (_plan.plan_of): the one place this layer reads it (the rest goes
    through the schema's public names)."""
    plan = plan_of(schema)
    if plan is None:
        raise TypeError(f"{owner}: expected a quantcodec Schema, got {type(schema).__name__}")
    return plan


# The delta coder's Layout of each schema: compiled once, read-only, shared by every encoder and
# decoder of the schema (equal schemas share one), in any thread. Each coder keeps only its own
# scratch. Weak keys: a schema no longer used takes its layout with it (once its coders are gone).
_LAYOUTS = weakref.WeakKeyDictionary()

# The id array of each schema's newest snapshot (weak keys, as _LAYOUTS), which the next snapshot
# with the same entities shares: kept here, not in the immutable Schema.
_LAST_IDS = weakref.WeakKeyDictionary()


def _layout_of(schema, plan):
    layout = _LAYOUTS.get(schema)
    if layout is None:
        layout = _LAYOUTS.setdefault(schema, Layout(plan))
    return layout


def _check_ids(ids):
    """ids -> 1-D uint64 array (a new or read-only-safe one); TypeError / ValueError if unusable."""
    a = ids_u64(ids)            # a 1-D integer array, in one C pass
    fast = a is not None
    if not fast:
        a = _integer_ids(ids)
    if a.shape[0] > MAX_ENTITIES:
        raise ValueError(f"snapshot: at most {MAX_ENTITIES} entities, got {a.shape[0]}")
    return a if fast else np.array(a, dtype=_U64, order="C")   # a copy: the snapshot owns its ids


def _integer_ids(ids, who="snapshot"):
    """The slow path of _check_ids: ids as a 1-D array of non-negative integers (not copied);
    the errors name ``who`` (GridIndex takes its ids by the same rule)."""
    if isinstance(ids, np.ndarray):
        a = ids
    else:
        try:
            a = np.asarray(ids)
        except OverflowError:
            a = np.array(list(ids), dtype=object)       # (the row is named below)
        if a.dtype.kind == "f" and a.ndim == 1 and all(
                isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in ids):
            # Python ints above 2**63 beside small ones: NumPy makes them float64, which would
            # round them; each is converted exactly instead
            a = np.array(list(ids), dtype=object)
        elif a.dtype.kind in "iu" and isinstance(ids, (list, tuple)):
            # NumPy takes a bool beside ints for 0 or 1: another entity's id (a bool array, or
            # bools alone, are refused below by their dtype)
            for i, v in enumerate(ids):
                if isinstance(v, (bool, np.bool_)):
                    raise TypeError(f"{who}: ids must be integers, got {v!r} ({type(v).__name__}) "
                                    f"at row {i}")
    if a.dtype == object:
        flat = a.ravel()
        for i, v in enumerate(flat):
            # integers only: int() would truncate 2.5, Decimal("7.9") or Fraction(15, 2) into
            # another entity's id
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"{who}: ids must be integers, got {v!r} "
                                f"({type(v).__name__}) at row {i}")
        for i, v in enumerate(flat):
            if not 0 <= int(v) < 2**64:
                raise ValueError(f"{who}: ids must be unsigned integers below 2**64, got {int(v)} "
                                 f"at row {i}")
        a = np.asarray([int(v) for v in flat], dtype=_U64).reshape(a.shape)
    if a.dtype.kind not in "ui" or a.dtype == np.bool_:
        if a.size == 0 and a.dtype.kind == "f":
            a = a.astype(_U64)
        else:
            raise TypeError(f"{who}: ids must be an integer array, got dtype {a.dtype}")
    if a.ndim != 1:
        raise ValueError(f"{who}: ids must be one-dimensional, got shape {a.shape}")
    if a.dtype.kind == "i" and a.size and a.min() < 0:
        i = int(np.flatnonzero(a < 0)[0])
        raise ValueError(f"{who}: ids must be non-negative, got {int(a[i])} at row {i}")
    return a


def _sort_ids(ids):
    """(ids sorted ascending, the order that sorts them or None); SchemaError on a duplicate."""
    n = ids.shape[0]
    if n < 2 or ascending_ids(ids):
        return ids, None
    order = np.argsort(ids, kind="stable")
    s = ids[order]
    dup = np.flatnonzero(s[1:] == s[:-1])
    if dup.size:
        i, j = int(order[dup[0]]), int(order[dup[0] + 1])
        raise SchemaError(f"snapshot: duplicate entity id {int(s[dup[0]])} (rows {i} and {j})")
    return s, order


def _frozen(a):
    a.setflags(False)       # write=False: positional is half the time, a.flags.writeable = False 8x
    return a


_NO_IDS = _frozen(np.zeros(0, dtype=_U64))


class Snapshot(SnapshotData):
    """The quantized state of a world at one tick: entity ids and one row of codes per entity.

    ``Snapshot(schema, ids, columns, *, bad="raise", previous=None)`` (or
    ``schema.snapshot(...)``) quantizes ``columns`` (as ``schema.quantize_many`` takes them)
    once. Rows are kept sorted by id. Immutable; encoders hold a reference, never a copy, so one
    snapshot per tick serves every client. Decoded views are Snapshots too, with ``seq`` set.

    Bad bodies (docs/hostile-input.md): with ``bad="raise"`` (the default) a row the schema
    refuses (a zero or non-finite quaternion or unit vector, a NaN or an infinity in any float
    field, a value an exact codec refuses, a clamp of a strict schema) raises ``RangeError``
    naming the entity id, the field (with the component, ``'position'[1]``) and the row. A
    finite value out of range is not bad: it is clamped and counted (``clamped``) in every mode.
    ``bad="drop"`` builds the tick without such entities, and without those holding a non-finite
    value where the schema would substitute a code for it (NaN or +-inf in a Bounded, Fixed,
    Angle, PowerCurve or Grid component). ``bad="keep"`` gives those entities the codes they
    have in ``previous`` (the snapshot of the tick before); one that is not in it is dropped.
    ``bad``, ``dropped`` and ``kept`` say which entities were affected. Clean input takes the
    same path in every mode: the bad-row search runs only when quantizing raised or counted a
    substitution.

    Attributes: ``schema``, ``ids`` (uint64, ascending), ``seq`` (None on the server),
    ``matrix`` (the (N, nslots) uint64 code matrix), ``codes`` (dict of code arrays, as
    ``schema.quantize_many`` gives), ``columns`` (dict of dequantized value arrays: what a
    client sees, ``schema.roundtrip`` of the input), ``clamped`` (values clamped per field while
    quantizing this snapshot; bad rows are not counted), ``bad`` / ``dropped`` / ``kept`` (the
    bad entities). ``records()`` gives ``{id: dict}``. Two snapshots are equal when they have
    the same schema, ids and codes (``seq`` and the bad-entity report are not compared).

    Three read-only integers come from the compiled core: ``n`` (the number of entities, as
    ``len(snapshot)``), ``ncol`` (the number of slots: the columns of ``matrix``) and ``kw``
    (how many 64-bit words each row's packed key takes, which the encoders compare instead of
    the rows; 0 when the snapshot has none, as decoded views). ``kw`` is an implementation
    detail, not API: it may change between versions.
    """

    # the state lives in SnapshotData (_schema, _seq, _clamped, _columns, _codes); _report is the
    # bad-entity report of a snapshot built with bad="drop" / "keep" that met any (unset: none)
    __slots__ = ("_report",)

    def __init__(self, schema: Schema, ids: _Ids, columns: _Columns, *,
                 bad: Literal["raise", "drop", "keep"] = "raise", previous: Optional[Snapshot] = None) -> None:
        plan = _plan_of(schema, "Snapshot")
        given = _check_ids(ids)
        ids, order = _sort_ids(given)
        if bad == "raise" and previous is None:
            try:
                matrix, counts = plan.quantize_matrix(columns, None, "snapshot")
            except RangeError as e:
                raise _entity_error(e, given) from None
            if any(counts) and matrix.shape[0] == given.shape[0]:
                _refuse_non_finite(schema, plan, given, columns, counts)
            report = None
        else:
            matrix, counts, report = _tolerant(schema, plan, given, columns, bad, previous)
            if report is not None:
                ids, order = _sort_ids(report.pop("ids"))
        if matrix.shape[0] != ids.shape[0]:
            raise SchemaError(f"snapshot: {ids.shape[0]} ids but {matrix.shape[0]} rows of columns")
        if order is not None:
            matrix = matrix[order]
        # the entities of the schema's previous snapshot (the usual case, tick after tick): share
        # its id array. It is immutable, and an encoder that finds a baseline with the same array
        # skips comparing the ids, which are cold by then (the baseline is some ticks old)
        prev = _LAST_IDS.get(schema)
        if prev is not None and same_ids(prev, ids):
            ids = prev
        else:
            _LAST_IDS[schema] = ids
        self._schema = schema
        self._bind(_frozen(ids), _frozen(np.ascontiguousarray(matrix)), plan)
        self._seq = None
        self._clamped = counts          # (the dict is made when asked for)
        self._columns = None
        self._codes = None
        if report is not None:
            self._report = report

    @classmethod
    def _make(cls, schema, ids, matrix, seq=None, clamped=None):
        """A snapshot over an existing sorted id array and code matrix (taken, not copied)."""
        self = cls.__new__(cls)
        self._schema = schema
        self._bind(_frozen(ids), _frozen(matrix), _plan_of(schema, "Snapshot"))
        self._seq = seq
        self._clamped = clamped
        self._columns = None
        self._codes = None
        return self

    @classmethod
    def from_codes(cls, schema: Schema, ids: _Ids, code_columns: _Columns) -> Snapshot:
        """A snapshot from already-quantized codes (as ``schema.quantize_many`` gives them);
        DecodeError for a code that is not valid."""
        plan = _plan_of(schema, "Snapshot.from_codes")
        ids, order = _sort_ids(_check_ids(ids))
        matrix = plan.codes_to_matrix(code_columns)
        if matrix.shape[0] != ids.shape[0]:
            raise SchemaError(f"snapshot: {ids.shape[0]} ids but {matrix.shape[0]} rows of codes")
        if order is not None:
            matrix = matrix[order]
        return cls._make(schema, ids, np.ascontiguousarray(matrix))

    def __reduce__(self) -> Tuple[Callable[..., Snapshot], Tuple[Any, ...]]:
        clamped = None if self._clamped is None else tuple(self._clamped)
        report = getattr(self, "_report", None)
        args = (self._schema, np.array(self._ids), np.array(self._matrix), self._seq, clamped)
        if report is not None:
            args += ((dict(report["bad"]), report["dropped"].tolist(), report["kept"].tolist()),)
        return (_rebuild, args)

    # -- state ------------------------------------------------------------------------------------

    @property
    def schema(self) -> Schema:
        return self._schema

    @property
    def seq(self) -> Optional[int]:
        """The sequence number of a decoded view (0..65535); None for a server-side snapshot."""
        return self._seq

    @property
    def ids(self) -> _IdArray:
        """Entity ids, uint64, ascending (read-only)."""
        return self._ids

    @property
    def matrix(self) -> npt.NDArray[np.uint64]:
        """The code matrix: one row per entity (in ``ids`` order), one uint64 carrier per slot."""
        return self._matrix

    @property
    def clamped(self) -> Dict[str, int]:
        """Values clamped (or substituted) per field when this snapshot was quantized (all 0 for
        a decoded view: clamping happened on the server)."""
        if self._clamped is None:
            return dict.fromkeys(self._schema.names, 0)
        return dict(zip(self._schema.names, self._clamped))

    @property
    def bad(self) -> Dict[int, str]:
        """``{id: reason}`` of the entities whose input was bad, ascending by id: dropped, or
        given their codes in ``previous`` (``bad="keep"``). Empty unless built with
        ``bad="drop"`` or ``"keep"`` from input that had any."""
        report = getattr(self, "_report", None)
        return {} if report is None else dict(report["bad"])

    @property
    def dropped(self) -> _IdArray:
        """Ids (uint64, ascending) of the bad entities left out of this snapshot."""
        report = getattr(self, "_report", None)
        return _NO_IDS if report is None else report["dropped"]

    @property
    def kept(self) -> _IdArray:
        """Ids (uint64, ascending) of the bad entities that have their codes of ``previous``."""
        report = getattr(self, "_report", None)
        return _NO_IDS if report is None else report["kept"]

    @property
    def codes(self) -> Dict[str, npt.NDArray[Any]]:
        """Dict of per-field code arrays (the shapes and dtypes of ``schema.quantize_many``)."""
        if self._codes is None:
            codes = _plan_of(self._schema, "Snapshot").matrix_to_codes(self._matrix)
            self._codes = {k: _frozen(v) for k, v in codes.items()}
        return dict(self._codes)

    @property
    def columns(self) -> Dict[str, npt.NDArray[Any]]:
        """Dict of dequantized value arrays, rows in ``ids`` order: exactly what
        ``schema.roundtrip`` gives for the values the server quantized."""
        if self._columns is None:
            cols = _plan_of(self._schema, "Snapshot").dequantize_valid(self._matrix)     # (checked when made)
            self._columns = {k: _frozen(v) for k, v in cols.items()}
        return dict(self._columns)

    def records(self) -> Dict[int, Dict[str, Any]]:
        """``{id: {field: value}}`` with the values of ``schema.roundtrip`` (tuples for vectors,
        labels for enums)."""
        plan = _plan_of(self._schema, "Snapshot")
        return dict(zip(self._ids.tolist(), plan.matrix_records(self._matrix)))

    def __len__(self) -> int:
        return int(self._ids.shape[0])

    def __contains__(self, ident: object) -> bool:
        # an id is an integer: "1", 1.5 or True are not ids (np.uint64 would truncate them)
        if not isinstance(ident, (int, np.integer)) or isinstance(ident, (bool, np.bool_)):
            return False
        if not 0 <= ident <= 0xFFFFFFFFFFFFFFFF:
            return False
        key = np.uint64(ident)
        i = int(np.searchsorted(self._ids, key))
        return i < len(self._ids) and self._ids[i] == key

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Snapshot):
            return NotImplemented
        return (self._schema == other._schema and np.array_equal(self._ids, other._ids)
                and np.array_equal(self._matrix, other._matrix))

    # (unhashable: equality compares contents)
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        name = getattr(self._schema, "name", "?")
        seq = "" if self._seq is None else f" seq={self._seq}"
        return f"<Snapshot{seq} of {name!r}: {len(self)} entities>"


def _rebuild(schema, ids, matrix, seq, clamped=None, report=None):
    bad = _plan_of(schema, "snapshot").valid_matrix(matrix)
    if bad is not None:
        raise DecodeError(f"snapshot: invalid code at row {bad[0]}, slot {bad[1]}")
    if clamped is not None:
        clamped = tuple(int(v) for v in clamped)
        if len(clamped) != len(schema.names):
            raise ValueError(f"snapshot: {len(clamped)} clamp counts for {len(schema.names)} fields")
    snap = Snapshot._make(schema, np.ascontiguousarray(ids, dtype=_U64),
                          np.ascontiguousarray(matrix, dtype=_U64), seq, clamped)
    if report is not None:
        reasons, dropped, kept = report
        snap._report = {"bad": {int(k): str(v) for k, v in dict(reasons).items()},
                        "dropped": _frozen(np.array(dropped, dtype=_U64)),
                        "kept": _frozen(np.array(kept, dtype=_U64))}
    return snap


# ------------------------------------------------------------------------------------------------
# Bad bodies: errors that name the entity, and snapshots built without them (bad="drop" / "keep")

_BAD_MODES = ("raise", "drop", "keep")
_SUBSTITUTED = ("Bounded", "Fixed", "Angle", "PowerCurve", "Grid")    # non-finite -> a code


def _entity_error(e, given):
    """A row error of quantize_matrix as the same type, naming the entity id first (keeping
    ``row``, adding ``id``). Errors that do not concern one row pass unchanged."""
    row = getattr(e, "row", None)
    if not isinstance(row, (int, np.integer)) or not 0 <= row < given.shape[0]:
        return e
    ident = int(given[row])
    w = type(e)(f"snapshot: entity {ident}: {e}")
    w.row = int(row)
    w.id = ident
    return w


def _refuse_non_finite(schema, plan, given, columns, counts):
    """bad="raise": RangeError naming the entity, the field and the component of the first row
    (in input order) holding a NaN or an infinity that the schema would have substituted a code
    for (counted as a clamp); nothing is counted then. Finite values out of range stay clamps."""
    reasons = {}
    _scan_rows(schema, columns, given.shape[0], reasons, {f for f, k in enumerate(counts) if k})
    if not reasons:
        return
    plan.uncount_clamps(counts)         # (the snapshot is not made)
    row = min(reasons)
    ident = int(given[row])
    e = RangeError(f"snapshot: entity {ident}: {reasons[row]} (bad='drop' or bad='keep' builds the "
                   f"tick without it; docs/hostile-input.md)")
    e.row = row
    e.id = ident
    raise e


def _bad_parts(codec):
    """Per value component of a field: whether a non-finite value there makes the row bad (the
    codec would substitute a code for it)."""
    kind = codec.kind
    if kind == "Vector":
        return [c.kind in _SUBSTITUTED for c in codec.codecs]
    if kind == "NearlyZero":
        return _bad_parts(codec.inner)
    return [kind in _SUBSTITUTED]


def _scan_rows(schema, columns, n, reasons, fields=None):
    """Add to `reasons` (row -> text) every row holding a non-finite value the schema would
    substitute, or a zero or non-finite quaternion / unit vector: NumPy passes over the float
    columns of `fields` (indices; None: all), the slow path only."""
    for f, (name, codec) in enumerate(schema.fields):
        if fields is not None and f not in fields:
            continue
        a = np.asarray(columns[name])
        if a.dtype.kind != "f" or a.shape[:1] != (n,):
            continue        # (integers are finite; quantize_matrix reports any other dtype)
        kind = codec.kind
        if kind in ("Quat", "UnitVector"):
            if a.ndim != 2:
                continue
            what = "quaternion" if kind == "Quat" else "vector"
            nonfinite = ~np.isfinite(a).all(axis=1)
            zero = (a == 0).all(axis=1)
            for r in np.flatnonzero(nonfinite | zero).tolist():
                reasons.setdefault(r, f"field {name!r}: row {r}: {'zero' if zero[r] else 'non-finite'} {what} "
                                      f"{tuple(a[r].tolist())!r}")
            continue
        parts = _bad_parts(codec)
        if not any(parts) or np.isfinite(a).all():
            continue
        v = a.reshape(n, -1)
        if v.shape[1] != len(parts):
            continue
        cols_bad = [j for j, p in enumerate(parts) if p]
        for r in np.flatnonzero(~np.isfinite(v[:, cols_bad]).all(axis=1)).tolist():
            j = next(j for j in cols_bad if not np.isfinite(v[r, j]))
            where = f"[{j}]" if len(parts) > 1 else ""
            reasons.setdefault(r, f"field {name!r}{where}: row {r}: non-finite value {float(v[r, j])!r}")


def _tolerant(schema, plan, given, columns, bad, previous):
    """(matrix, counts, report) of a snapshot with bad="drop" / "keep"; report None when no row
    was bad, else {"ids": the ids of the matrix rows (unsorted), "bad", "dropped", "kept"}."""
    if bad not in _BAD_MODES:
        raise ValueError(f"snapshot: bad must be one of {', '.join(map(repr, _BAD_MODES))}, got {bad!r}")
    if previous is not None:
        if bad != "keep":
            raise ValueError(f"snapshot: previous= is for bad='keep' (it holds the codes bad entities keep), "
                             f"got bad={bad!r}")
        if not isinstance(previous, Snapshot):
            raise TypeError(f"snapshot: previous must be a Snapshot, got {type(previous).__name__}")
        if previous.schema != schema:
            raise SchemaError(f"snapshot: previous is a snapshot of schema {previous.schema.name!r} "
                              f"(fingerprint {previous.schema.fingerprint}), not of this one ({schema.fingerprint})")
    n = given.shape[0]
    reasons = {}
    try:
        matrix, counts = plan.quantize_matrix(columns, None, "snapshot")
    except RangeError as e:
        row = getattr(e, "row", None)
        if row is None:
            raise
        reasons[int(row)] = str(e)
    else:
        if not any(counts) or matrix.shape[0] != n:
            return matrix, counts, None         # clean (or a row count the caller reports)
        # something was clamped or substituted: a non-finite value is bad, a finite one out of
        # range is a clamp (kept); only the fields that counted one can hold either
        _scan_rows(schema, columns, n, reasons, {f for f, k in enumerate(counts) if k})
        if not reasons:
            return matrix, counts, None
        plan.uncount_clamps(counts)             # quantized again below, without the bad rows
    # the slow path: every bad row
    cols = {name: np.asarray(columns[name]) for name in plan.names}
    for name, a in cols.items():
        if a.ndim == 0 or a.shape[0] != n:
            # (quantize_matrix compared the columns with each other, not with the ids)
            raise SchemaError(f"snapshot: {n} ids but {a.shape[0] if a.ndim else 'a scalar'} rows in column {name!r}")
    _scan_rows(schema, cols, n, reasons)
    keep = np.ones(n, dtype=bool)
    keep[list(reasons)] = False
    while True:
        rows = np.flatnonzero(keep)
        sub = {name: a[rows] for name, a in cols.items()}
        try:
            matrix, counts = plan.quantize_matrix(sub, None, "snapshot")
            break
        except RangeError as e:
            r = getattr(e, "row", None)
            if r is None:
                raise
            orig = int(rows[r])
            # (the row among the remaining ones -> the row of the input)
            reasons[orig] = str(e).replace(f"row {r}:", f"row {orig}:", 1)
            keep[orig] = False
    bad_rows = sorted(reasons, key=lambda r: int(given[r]))
    bad_ids = given[np.array(bad_rows, dtype=np.intp)]
    report = {"ids": given[keep], "bad": {int(given[r]): reasons[r] for r in bad_rows}, "kept": _NO_IDS}
    if previous is not None and len(bad_ids) and len(previous.ids):
        pids = previous.ids
        pos = np.minimum(np.searchsorted(pids, bad_ids), len(pids) - 1)
        found = pids[pos] == bad_ids
        if found.any():
            report["kept"] = _frozen(bad_ids[found])
            matrix = np.concatenate([matrix, previous.matrix[pos[found]]])
            report["ids"] = np.concatenate([report["ids"], bad_ids[found]])
            bad_ids = bad_ids[~found]
    report["dropped"] = _frozen(bad_ids)
    return matrix, counts, report


# (a Snapshot's one slot of its own, the bad-entity report, holds ids and messages: never a
# snapshot, so Snapshots stay out of the garbage collector's walks; quantcodec._delta)
_untracked_class(Snapshot)


class SnapshotEncoder:
    """The server side of one client's snapshot stream.

    ``encode(seq, snapshot)`` returns the packet for snapshot ``seq`` and keeps a reference to
    the snapshot (the last ``history`` sequence numbers); ``ack(seq)`` records that the client
    has it. Each packet is coded against the newest acknowledged snapshot older than it that is
    still in the history, or in full when there is none. A number sent again with another
    snapshot never serves as a baseline while it is held (an ack carries only the number); a
    number older than the whole history starts the stream over (everything held is forgotten,
    as by ``reset()``), and the numbers the client may still hold from before (the last
    ``2 * history - 1`` sent, and numbers acked before they were sent: a client's stale latest)
    serve as no baseline when sent again. ``predict=False`` turns off
    extrapolation from a second acknowledged snapshot (each packet then names one baseline).
    ``cache``: a :class:`PacketCache` shared with the encoders of other clients of the same
    schema, so that a packet that several clients need is coded once (see there).

    The stream (docs/wire-format.md sections 11-15): every datagram ends in a check keyed with
    the schema fingerprint, ``history``, ``predict``, ``max_datagram`` (the datagram budget,
    default 1200 bytes) and a random 64-bit ``stream_id`` drawn when the encoder starts or
    resets (``stream_id=`` fixes it: for tests and recorded streams only). ``hello()`` is what the
    client needs first; send it when the client connects and beside every packet sent without
    a baseline (``last_baseline is None``). ``stream_id=`` fixes the id of the first stream only
    (recorded streams, tests): ``reset()`` always draws a new one, since a client tells two
    streams apart by their ids. ``encode`` gives one datagram whatever its size;
    ``encode_datagrams`` splits one above ``max_datagram`` into fragments.
    """

    def __init__(self, schema: Schema, history: int = 64, *, predict: bool = True,
                 cache: Optional[PacketCache] = None, max_datagram: int = 1200,
                 stream_id: Optional[int] = None, key: Optional[_Key] = None) -> None:
        self._plan = _plan_of(schema, "SnapshotEncoder")
        self._mk = _framing.shared_key(key, "SnapshotEncoder")
        self._schema = schema
        self._history = _history(history, "SnapshotEncoder")
        if not isinstance(predict, (bool, np.bool_)):
            raise TypeError(f"SnapshotEncoder: predict must be True or False, got {predict!r}")
        self._predict = bool(predict)
        if cache is not None and not isinstance(cache, PacketCache):
            raise TypeError(f"SnapshotEncoder: cache must be a PacketCache or None, got {type(cache).__name__}")
        self._cache = cache
        self._max_datagram = _framing.check_max_datagram(max_datagram, "SnapshotEncoder")
        self._coder = DeltaEncoder(_layout_of(schema, self._plan))
        self._start(None if stream_id is None else _stream_id(stream_id, "SnapshotEncoder"))

    def _start(self, stream_id=None):
        """A new stream: a new id (random unless given), ``started`` now, a new C state."""
        self._stream_id = stream_id if stream_id is not None else _stream_id(None, "")
        self._started_us = _started()
        key = _framing.stream_key(self._schema.fingerprint, self._history, self._predict,
                                  self._max_datagram, self._stream_id)
        self._seed_p, self._seed_f = _framing.seeds(key)      # (the CRC seeds, keyed or not)
        self._check_p, self._check_f, self._check_r = _framing.checks(key, self._mk)
        # the state (snapshots sent, acks as a bit a sequence number, the last references) and
        # the per-packet work live in C; ``_sent`` is its dict (seq -> Snapshot)
        self._state = EncoderState(self._coder, self._schema, self._history, self._predict, self._cache,
                                   self._check_p, Snapshot)
        self._sent = self._state.sent
        self._hello = None
        if type(self) is SnapshotEncoder:
            # the per-packet calls go straight to the C state (no Python frame); subclasses
            # keep their overrides of the methods below, which do the same
            self.encode = self._state.encode
            self.ack = self._state.ack

    @property
    def schema(self) -> Schema:
        return self._schema

    @property
    def history(self) -> int:
        """How many sequence numbers are held, the packet's own included: a baseline is at
        most ``history - 1`` back."""
        return self._history

    @property
    def acked(self) -> Tuple[int, ...]:
        """The acknowledged sequence numbers still held, newest first."""
        return self._state.state()[2]

    @property
    def held(self) -> Tuple[int, ...]:
        """The sequence numbers of the snapshots held (sent, not yet too old), newest first."""
        return self._state.state()[1]

    @property
    def cache(self) -> Optional[PacketCache]:
        """The :class:`PacketCache` shared with other clients' encoders, or None."""
        return self._state.cache

    @property
    def predict(self) -> bool:
        """Whether packets may extrapolate from a second acknowledged snapshot."""
        return self._predict

    @property
    def max_datagram(self) -> int:
        """The datagram budget in bytes: ``encode_datagrams`` never returns a larger one."""
        return self._max_datagram

    @property
    def stream_id(self) -> int:
        """The 64-bit id of the current stream (new at construction and at every ``reset()``)."""
        return self._stream_id

    @property
    def started(self) -> int:
        """When the current stream started, in microseconds since the Unix epoch (it orders
        streams: a client adopts the hello of a newer one)."""
        return self._started_us

    def hello(self) -> bytes:
        """The hello datagram of the current stream (docs/wire-format.md section 13): the
        client checks its schema against it and adopts the stream's parameters
        (``SnapshotDecoder.from_hello``, or ``decoder.decode(hello)``). Send it when a client
        connects and beside every packet sent without a baseline; resending it is harmless."""
        if self._hello is None:
            self._hello = _framing.make_hello(self._schema, self._history, self._predict,
                                              self._max_datagram, self._stream_id, self._started_us,
                                              _framing.hello_check(self._mk))
        return self._hello

    def encode_datagrams(self, seq: int, snapshot: Snapshot) -> List[bytes]:
        """The packet of ``encode(seq, snapshot)`` as datagrams of at most ``max_datagram``
        bytes: the one datagram ``encode`` gives when it fits, else its fragments (at most 256;
        CodecError beyond). Send them all; the client reassembles them."""
        return _framing.fragment(self.encode(seq, snapshot), self._max_datagram, self._check_f,
                                 self._seed_p)

    @property
    def last_bits(self) -> int:
        """The exact size in bits of the last packet encoded (before its padding to a byte)."""
        return self._coder.last_bits

    @property
    def last_baseline(self) -> Optional[int]:
        """The baseline sequence number of the last packet encoded (None: it was sent in full)."""
        return self._state.last[0]

    def encode(self, seq: int, snapshot: Snapshot) -> bytes:
        """The datagram (bytes: the packet and its check, docs/wire-format.md section 11) that
        brings a client holding the acknowledged snapshots to ``snapshot``, numbered ``seq``
        (taken mod 65536), whatever its size; ``encode_datagrams`` cuts it to ``max_datagram``."""
        return self._state.encode(seq, snapshot)

    def ack(self, seq: Optional[int]) -> bool:
        """Record that the client has snapshot ``seq``. Returns True if that snapshot is held
        (it can now serve as a baseline), False if it is unknown or too old, or ``seq`` is None
        (ignored: acks arrive late and duplicated)."""
        return self._state.ack(seq)

    def reset(self) -> None:
        """Forget every snapshot and ack (a client that reconnects) and start a new stream (a new
        ``stream_id``, a new ``hello()``): the next packet is full, and the client needs the
        new hello to read it. Numbers held as suspect after a start over or an early ack are
        forgotten too."""
        self._start()

    def __repr__(self) -> str:
        _, held, acked = self._state.state()
        return (f"<SnapshotEncoder of {getattr(self._schema, 'name', '?')!r}: history {self._history}, "
                f"stream {self._stream_id:016x}, {len(held)} held, {len(acked)} acked>")


class SnapshotDecoder:
    """The client side of a snapshot stream.

    ``SnapshotDecoder.from_hello(schema, hello)`` (or a ``SnapshotDecoder(schema)`` fed the
    hello through ``decode``) checks the server's schema and adopts the stream's parameters,
    ``history`` included; until a hello is adopted every other datagram is refused (DecodeError
    of kind ``no-hello``). ``decode(datagram)`` takes any datagram of the stream: a whole packet
    returns the decoded :class:`Snapshot` (``seq`` set), a fragment returns it when it completes
    its packet, and a fragment that completes nothing or a hello returns None. Each decoded
    snapshot is kept, while it is among the last ``history`` sequence numbers, as a possible
    baseline, and for ``history - 1`` more as a snapshot a late packet may extrapolate from.
    ``latest`` is the newest sequence number decoded (None before the first): what the client
    acknowledges, after each datagram that returned a view. A number decoded with two different
    snapshots is held as neither while it is in the window. A datagram that is refused (its check
    fails, a stray, another stream or schema, a baseline not held, a malformed packet) raises
    DecodeError, whose ``kind`` says which (docs/wire-format.md section 14), and changes
    nothing. A hello of a newer stream (a server restart) is adopted: the client starts over;
    so is another stream's hello while the adopted stream has decoded no packet (a stray hello
    adopted does not hold the client: its server's next hello takes it back).
    """

    def __init__(self, schema: Schema, history: int = 64, *, key: Optional[_Key] = None,
                 max_bytes: Optional[int] = None) -> None:
        self._plan = _plan_of(schema, "SnapshotDecoder")
        self._schema = schema
        self._history = _history(history, "SnapshotDecoder")
        self._mk = _framing.shared_key(key, "SnapshotDecoder")
        self._hello_check = _framing.hello_check(self._mk)
        self._max_bytes = _framing.limit_bytes(max_bytes, "SnapshotDecoder")
        self._coder = DeltaDecoder(_layout_of(schema, self._plan))
        self._hello = None               # the adopted stream's Hello
        self._frag = None
        self._check_p = self._check_f = None
        self._lock = threading.RLock()   # adopting a stream and reassembly; packets lock in C
        self._set_state()

    def _set_state(self):
        # the state (held snapshots, latest), the classifier of every datagram and the per-packet
        # work live in C; ``_held`` is its dict (seq -> Snapshot). One state for the decoder's
        # life: adopting a stream re-keys it, so a bound ``decode`` stays valid
        self._state = DecoderState(self._coder, self._schema, self._history, self._fragment,
                                   self._take_hello, self._hello_check, Snapshot, self._max_bytes)
        self._held = self._state.held
        if type(self) is SnapshotDecoder:
            self.decode = self._state.decode        # no Python frame per packet (as encode)

    @classmethod
    def from_hello(cls, schema: Schema, hello: _Datagram, *, key: Optional[_Key] = None,
                   max_bytes: Optional[int] = None) -> SnapshotDecoder:
        """A decoder on the stream that ``hello`` (the bytes of ``encoder.hello()``) announces,
        with its parameters. SchemaError saying what differs when the server's schema is not
        ``schema``; DecodeError when ``hello`` is not a hello this library can read (or, kind
        ``limits``, one whose parameters do not fit ``max_bytes``)."""
        self = cls(schema, 64, key=key, max_bytes=max_bytes)
        h = _framing.parse_hello(_bytes_of(hello, "SnapshotDecoder.from_hello"), self._hello_check)
        diffs = _framing.differences(schema, h)
        if diffs:
            raise SchemaError("SnapshotDecoder.from_hello: the server's schema is not this one: "
                              + "; ".join(diffs))
        self._adopt(h)
        return self

    def _adopt(self, h):
        need = _framing.hello_cost(h.history, h.max_datagram)
        if need > self._max_bytes:
            raise DecodeError(f"snapshot stream: the hello of stream {h.stream_id:016x} (history "
                              f"{h.history}, max_datagram {h.max_datagram}) commits the client to "
                              f"{need} bytes, more than its max_bytes {self._max_bytes} "
                              f"(docs/wire-format.md section 19)", kind="limits")
        with self._lock:
            self._history = h.history
            key = _framing.stream_key(h.fingerprint, h.history, h.predict, h.max_datagram, h.stream_id)
            self._check_p, self._check_f, self._check_r = _framing.checks(key, self._mk)
            self._seed_p = _framing.seeds(key)[0]
            self._hello = h
            self._frag = _framing.Reassembly(h.max_datagram, h.history, _framing.check_len(self._check_p))
            self._state.adopt(h.history, self._check_p, self._check_f, h.stream_id,
                              _framing.MAX_FRAGMENTS * h.max_datagram)

    def _fragment(self, body):
        """A fragment of the adopted stream (its check held): the view it completes, or None."""
        with self._lock:
            return self._fragment_locked(body)

    def _fragment_locked(self, body):
        latest = self._state.latest
        got = self._frag.add(body, latest)
        if got is None:
            return None
        seq, packet, pcheck = got
        if _crc32c(packet, self._seed_p) != pcheck or (packet[0] | packet[1] << 8) != seq:
            raise DecodeError(f"fragments of packet {seq}: the reassembled packet fails its check",
                              kind="fragment")
        return self._state.decode_packet(packet)

    def _take_hello(self, data):
        """A hello (its check held): adopted, ignored, or refused (section 13)."""
        with self._lock:
            return self._take_hello_locked(data)

    def _take_hello_locked(self, data):
        h = _framing.parse_hello(data, self._hello_check)
        diffs = _framing.differences(self._schema, h)
        if diffs:
            raise DecodeError("snapshot stream: a hello of another schema: " + "; ".join(diffs),
                              kind="schema")
        cur = self._hello
        if cur is not None:
            if h.stream_id == cur.stream_id:
                if h != cur:
                    raise DecodeError(f"snapshot stream: a hello of stream {h.stream_id:016x} with other "
                                      f"parameters than the one adopted", kind="hello")
                return None                  # the current stream's hello again
            if h.started <= cur.started and self._state.latest is not None:
                # (a stream that has decoded no packet yet holds nothing: it does not refuse
                # another, so that a stray hello adopted cannot keep the client from its server)
                raise DecodeError(f"snapshot stream: a hello of an older stream {h.stream_id:016x} "
                                  f"(started {h.started}, the current one {cur.started}, which has "
                                  f"decoded packets)", kind="hello")
        self._adopt(h)
        return None

    @property
    def schema(self) -> Schema:
        return self._schema

    @property
    def history(self) -> int:
        """The stream's history (the hello's, once one is adopted)."""
        return self._history

    @property
    def stream_id(self) -> Optional[int]:
        """The id of the adopted stream, or None before a hello."""
        return None if self._hello is None else self._hello.stream_id

    @property
    def hello_info(self) -> Optional[Hello]:
        """What the adopted hello said (a named tuple: stream_id, started, history, predict,
        max_datagram, fingerprint, ...), or None."""
        return self._hello

    @property
    def latest(self) -> Optional[int]:
        """The newest sequence number decoded so far (None before the first): the ack."""
        return self._state.latest

    @property
    def held(self) -> Tuple[int, ...]:
        """The sequence numbers of the snapshots held as possible baselines, newest first."""
        return self._state.state()[1]

    def get(self, seq: int) -> Optional[Snapshot]:
        """The held snapshot ``seq``, or None."""
        return self._state.get(seq)

    def decode(self, datagram: _Datagram) -> Optional[Snapshot]:
        """Take one datagram; returns the snapshot it completes, or None (a fragment that
        completes nothing, a hello). DecodeError (state unchanged) when it is refused."""
        return self._state.decode(datagram)

    def reset(self) -> None:
        """Forget everything decoded (``latest`` back to None) and the partial packets; the
        adopted stream stays."""
        with self._lock:
            self._state.reset()
            if self._frag is not None:
                self._frag.clear()

    def __repr__(self) -> str:
        latest, held = self._state.state()
        stream = "no stream yet" if self._hello is None else f"stream {self._hello.stream_id:016x}"
        return (f"<SnapshotDecoder of {getattr(self._schema, 'name', '?')!r}: {stream}, history "
                f"{self._history}, latest {latest}, {len(held)} held>")


def _bytes_of(data, owner):
    if isinstance(data, bytes):
        return data
    try:
        mv = memoryview(data)
    except TypeError:
        raise TypeError(f"{owner}: expected one datagram (a bytes-like object: bytes or a contiguous buffer), got "
                        f"{type(data).__name__}: it takes one datagram at a time") from None
    if not mv.c_contiguous:
        raise ValueError(f"{owner}: expected a contiguous buffer")
    return mv.tobytes()
