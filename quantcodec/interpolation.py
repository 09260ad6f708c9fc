"""Snapshot interpolation: what a client draws between the views it receives (docs/interpolation.md).

A client receives views at the server's tick rate (10-60 Hz) and draws at the screen's (60-144
fps), a little in the past (the playout delay) so that two views bracket the moment it draws.
``Interpolator`` keeps the views in a buffer keyed by tick and gives, for any render time in
ticks, every entity's values: linear fields interpolated, angles along the shortest arc,
rotations and unit vectors by nlerp, exact data (integers, enums, flags) held; beyond the newest
view, a bounded extrapolation. This module is the reference the clients under ``clients/`` follow
bit for bit: every operation is a correctly rounded +, -, *, /, sqrt or floor of doubles, in the
order docs/interpolation.md writes them.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Dict, List, NamedTuple, Optional, Tuple

import numpy as np
import numpy.typing as npt

# (no import of the package here: the clients' tests load this file on its own, with NumPy
# alone, as the reference their interpolators are checked against; see _schema_error)

if TYPE_CHECKING:       # (for the type checker alone: see the note above)
    from quantcodec.schema import Schema
    from quantcodec.snapshot import Snapshot

__all__ = ["Interpolator", "Sample"]

# how each field (or Vector component) is interpolated
LINEAR, ANGLE, QUAT, UNIT, STEP = "linear", "angle", "quat", "unit", "step"
_LINEAR_KINDS = {"Bounded", "Fixed", "PowerCurve", "Half", "Grid"}
_STEP_KINDS = {"UInt", "Int", "IntRange", "Enum", "Bool"}


def _rule(spec):
    """(rule, full turn, low end) of a scalar codec spec."""
    kind = spec["kind"]
    if kind in _LINEAR_KINDS:
        return (LINEAR, 0.0, 0.0)
    if kind in _STEP_KINDS:
        return (STEP, 0.0, 0.0)
    if kind == "Angle":
        full = 360.0 if spec.get("unit", "rad") == "deg" else 2.0 * math.pi
        return (ANGLE, full, -full / 2.0 if spec.get("signed") else 0.0)
    raise ValueError(f"no interpolation rule for {kind}")


def field_rules(codec):
    """The rule of each component of a field: a list of (rule, full, lo) for a Vector or a
    NearlyZero of one; [(QUAT,..)] / [(UNIT,..)] for rotations and unit vectors; one entry else."""
    spec = codec.spec()
    kind = spec["kind"]
    if kind == "NearlyZero":
        spec = spec["inner"]
        kind = spec["kind"]
    if kind == "Vector":
        return [_rule(c) for c in spec["codecs"]]
    if kind == "Quat":
        return [(QUAT, 0.0, 0.0)]
    if kind == "UnitVector":
        return [(UNIT, 0.0, 0.0)]
    return [_rule(spec)]


def lerp(x0, x1, a):
    return x0 + (x1 - x0) * a


def _floor(x):
    """IEEE 754's floor, as every client's: infinities and NaN are their own floor (Python's
    math.floor raises on them: an extrapolation past the largest double reaches them)."""
    return math.floor(x) if math.isfinite(x) else x


def shortest(d, full):
    """``d`` wrapped into [-full/2, full/2)."""
    return d - full * _floor(d / full + 0.5)


def wrap(v, full, lo):
    """``v`` wrapped into [lo, lo + full)."""
    return v - full * _floor((v - lo) / full)


def nlerp(q0, q1, a, hemisphere):
    """Normalized linear interpolation of two unit vectors (``hemisphere``: q and -q are the same
    rotation, so q1 is negated when the dot product is negative)."""
    if hemisphere:
        dot = 0.0
        for x, y in zip(q0, q1):
            dot = dot + x * y
        if dot < 0.0:
            q1 = [-y for y in q1]
    q = [lerp(x, y, a) for x, y in zip(q0, q1)]
    n = 0.0
    for x in q:
        n = n + x * x
    n = math.sqrt(n)
    if n == 0.0:
        return list(q0)
    return [x / n for x in q]


class Sample(NamedTuple):
    """What ``Interpolator.sample`` gives: ``ids`` (ascending) and ``columns`` (field -> array, as
    ``Snapshot.columns``), the two views' ticks ``a`` and ``b`` (b None: extrapolated or held), and
    ``alpha``: the fraction of the way from a to b; for extrapolation, the ticks past a (at most
    ``max_extrapolation``) over the ticks from the view before a to a,
    ``min(t - a, max_extrapolation) / (a - p)`` (docs/interpolation.md); 0.0 when held."""
    # (typing's names, not `int | None` or `dict[...]`: a NamedTuple's annotations are evaluated
    # at run time by typing.get_type_hints, and Python 3.9 has neither)
    ids: npt.NDArray[np.uint64]
    columns: Dict[str, npt.NDArray[Any]]
    a: int
    b: Optional[int]
    alpha: float


def _schema_error(message):
    """quantcodec.SchemaError(message), imported when it is raised (see the imports above)."""
    from quantcodec.errors import SchemaError
    return SchemaError(message)


class Interpolator:
    """A buffer of views keyed by tick, sampled at a render time in ticks.

    ``Interpolator(schema, *, capacity=32, max_extrapolation=2.0)``. ``push(view)`` adds a view
    (a Snapshot with ``seq``, as ``StreamClient.receive`` returns) and returns True, or False when
    it is dropped: a tick already held (a duplicate), or older than every view of a full buffer.
    Ticks are the views' 16-bit ``seq`` unwrapped against the newest view pushed (``tick(seq)``
    gives a seq's unwrapped tick). ``sample(t)`` gives every entity's values at render time
    ``t`` (ticks, a float: for a playout delay of ``d`` ticks, ``t = newest - d`` advanced by
    the frame time): between the views ``a <= t < b``, the entities of view ``a``, interpolated
    where view ``b`` has them too and held where it does not (they left at some tick after
    ``a``); past the newest view, extrapolated from the two newest for at most
    ``max_extrapolation`` ticks (linear fields and angles; rotations, unit vectors and exact data
    held), then held; before the oldest, the oldest held. ``stats``: pushed, dropped, late
    (pushed after render time had passed its tick), extrapolated and early samples.
    """

    def __init__(self, schema: Schema, *, capacity: int = 32, max_extrapolation: float = 2.0) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 2:
            raise ValueError(f"Interpolator: capacity must be an integer of at least 2, got {capacity!r}")
        if isinstance(max_extrapolation, (bool, np.bool_)) or not isinstance(
                max_extrapolation, (int, float, np.integer, np.floating)):
            raise TypeError(f"Interpolator: max_extrapolation must be a number (ticks), got "
                            f"{type(max_extrapolation).__name__}")
        max_extrapolation = float(max_extrapolation)
        if not 0.0 <= max_extrapolation < math.inf:
            raise ValueError(f"Interpolator: max_extrapolation must be finite and >= 0, got {max_extrapolation}")
        # (the attributes' annotations are not evaluated: they need not import the package)
        self.schema: Schema = schema
        self.capacity: int = capacity
        self.max_extrapolation: float = max_extrapolation
        self.rules: Dict[str, List[Tuple[str, float, float]]] = {
            name: field_rules(codec) for name, codec in schema.fields}
        self.shapes: Dict[str, Tuple[np.dtype[Any], Tuple[int, ...]]] = {}  # field -> (dtype, shape of a row) of the views' columns
        self.views: List[Tuple[int, List[int], Dict[str, List[Any]]]] = []  # (tick, ids list, {field: list of rows}) ascending by tick
        self.newest: Optional[int] = None
        self.last_t: Optional[float] = None
        self.stats: Dict[str, int] = {"pushed": 0, "dropped": 0, "late": 0, "extrapolated": 0, "early": 0}

    def tick(self, seq: int) -> int:
        """The unwrapped tick of a 16-bit ``seq`` (relative to the newest view pushed): an
        integer (a float only when whole), taken mod 65536; TypeError for what is not a number,
        ValueError for a fraction, NaN or an infinity (as every client refuses them)."""
        if isinstance(seq, (bool, np.bool_)) or not isinstance(seq, (int, float, np.integer, np.floating)):
            raise TypeError(f"Interpolator.tick: seq must be an integer, got {type(seq).__name__}")
        if isinstance(seq, (float, np.floating)) and not float(seq).is_integer():
            raise ValueError(f"Interpolator.tick: seq must be an integer, got {float(seq)!r}")
        seq = int(seq) & 0xFFFF
        if self.newest is None:
            return seq
        d = (seq - self.newest) & 0xFFFF
        return self.newest + (d - 0x10000 if d >= 0x8000 else d)

    def reset(self) -> None:
        """Forget every view and the latest render time (``stats`` go on counting): the next
        view pushed starts a new timeline, its tick its ``seq``. For a client that adopted a
        new stream (a restarted server counts its ticks from its own start, and its views,
        unwrapped against the old stream's newest, would be older than every held one and
        dropped): call it when ``StreamClient.stream_id`` changes."""
        self.views = []
        self.newest = None
        self.last_t = None

    def push(self, view: Snapshot) -> bool:
        """Add a view (a Snapshot with ``seq``): True, or False when it is dropped (a tick already
        held, or older than every view of a full buffer). TypeError for what is not a view,
        ValueError for a view without ``seq``, SchemaError for a view of another schema."""
        if not (hasattr(view, "seq") and hasattr(view, "columns") and hasattr(view, "ids")):
            raise TypeError(f"Interpolator.push: expected a view (a Snapshot, as StreamClient.receive "
                            f"returns), got {type(view).__name__}")
        vs = getattr(view, "schema", None)
        if vs is not None and vs is not self.schema and vs != self.schema:
            raise _schema_error(f"Interpolator.push: a view of schema {vs.name!r} in the buffer of "
                                f"schema {self.schema.name!r} (their fingerprints differ)")
        if view.seq is None:
            raise ValueError("Interpolator.push: the view has no seq (a decoded view has one)")
        t = self.tick(view.seq)
        ticks = [v[0] for v in self.views]
        if t in ticks or (len(self.views) >= self.capacity and t < ticks[0]):
            self.stats["dropped"] += 1
            return False
        if self.last_t is not None and t <= self.last_t:
            self.stats["late"] += 1
        cols = view.columns
        rows = {}
        for name, _ in self.schema.fields:
            col = cols[name]
            self.shapes[name] = (col.dtype, col.shape[1:])
            rows[name] = col.reshape(len(col), -1).tolist() if len(col) else []
        entry = (t, [int(i) for i in view.ids], rows)
        i = sum(1 for x in ticks if x < t)
        self.views.insert(i, entry)
        if len(self.views) > self.capacity:
            del self.views[0]
        if self.newest is None or t > self.newest:
            self.newest = t
        self.stats["pushed"] += 1
        return True

    def sample(self, t: float) -> Sample:
        """Every entity's values at render time ``t`` (ticks, a float): a :class:`Sample`.
        ValueError before any view is pushed; TypeError for a render time that is not a number."""
        if isinstance(t, (str, bytes, bytearray)):
            raise TypeError(f"Interpolator.sample: the render time must be a number of ticks, got "
                            f"{type(t).__name__}")
        t = float(t)
        if not self.views:
            raise ValueError("Interpolator.sample: no view pushed yet")
        if t == t:      # (a NaN is no render time: it leaves the latest one, as in every client)
            self.last_t = t if self.last_t is None else max(self.last_t, t)
        ticks = [v[0] for v in self.views]
        ia = max((i for i, x in enumerate(ticks) if x <= t), default=None)
        if ia is None:
            self.stats["early"] += 1
            A = self.views[0]
            return self._out(A, None, None, 0.0, "hold")
        A = self.views[ia]
        if ia + 1 < len(self.views):
            B = self.views[ia + 1]
            alpha = (t - A[0]) / (B[0] - A[0])
            return self._out(A, B, B[0], alpha, "between")
        if ia == 0 or t == A[0]:
            return self._out(A, None, None, 0.0, "hold")
        self.stats["extrapolated"] += 1
        P = self.views[ia - 1]
        e = min(t - A[0], self.max_extrapolation)
        r = e / (A[0] - P[0])
        return self._out(A, P, None, r, "extrapolate")

    def _out(self, A, other, b, x, how):
        ids = A[1]
        pos = {i: k for k, i in enumerate(other[1])} if other is not None else {}
        columns = {}
        for name, codec in self.schema.fields:
            rules = self.rules[name]
            rows_a = A[2][name]
            rows_o = other[2][name] if other is not None else None
            out = []
            for k, i in enumerate(ids):
                ra = rows_a[k]
                j = pos.get(i)
                if j is None or how == "hold":
                    out.append(list(ra))
                    continue
                ro = rows_o[j]
                out.append(self._mix(rules, ra, ro, x, how))
            dtype, tail = self.shapes[name]
            columns[name] = np.array(out, dtype=dtype).reshape((len(ids),) + tail)
        return Sample(np.array(ids, dtype=np.uint64), columns, A[0], b, x)

    @staticmethod
    def _mix(rules, ra, ro, x, how):
        rule = rules[0][0]
        if rule in (QUAT, UNIT):
            if how == "extrapolate":
                return list(ra)
            return nlerp(ra, ro, x, rule == QUAT)
        out = []
        for (rl, full, lo), xa, xo in zip(rules, ra, ro):
            if rl == STEP:
                out.append(xa)
            elif how == "between":
                out.append(lerp(xa, xo, x) if rl == LINEAR else wrap(xa + shortest(xo - xa, full) * x, full, lo))
            elif rl == LINEAR:                                  # extrapolate: o is the view before a
                out.append(xa + (xa - xo) * x)
            else:
                out.append(wrap(xa + shortest(xa - xo, full) * x, full, lo))
        return out
