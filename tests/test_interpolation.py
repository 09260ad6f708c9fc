"""Snapshot interpolation (docs/interpolation.md): the buffer's rules, each field's blend, and the
kit's vectors (conformance/interpolation/) reproduced from the doc's formulas."""

import json
import math
import pathlib
import struct

import numpy as np
import pytest

import quantcodec as qc
from quantcodec.interpolation import Interpolator

KIT = pathlib.Path(__file__).resolve().parent.parent / "conformance"

SCHEMA = qc.Schema("Body", [
    ("position", qc.Vector(*[qc.Bounded(-64, 64, 16)] * 3)),
    ("yaw", qc.Angle(12)),
    ("heading", qc.Angle(10, signed=True, unit="deg")),
    ("rotation", qc.Quat(12)),
    ("normal", qc.UnitVector(12)),
    ("health", qc.UInt(8)),
    ("alive", qc.Bool()),
])


def view(seq, ids, pos, yaw=0.0, heading=0.0, rot=(0, 0, 0, 1), health=100, alive=True):
    n = len(ids)
    snap = SCHEMA.snapshot(np.array(ids, dtype=np.uint64), {
        "position": np.tile(pos, (n, 1)), "yaw": np.full(n, yaw), "heading": np.full(n, heading),
        "rotation": np.tile(rot, (n, 1)), "normal": np.tile([0, 1.0, 0], (n, 1)),
        "health": np.full(n, health), "alive": np.full(n, alive)})
    return qc.Snapshot._make(SCHEMA, snap.ids, snap.matrix, seq=seq)


def test_between_two_views_linear_fields_blend_and_exact_data_holds():
    it = Interpolator(SCHEMA)
    a, b = view(10, [1, 2], (0, 0, 0), health=10), view(14, [1, 2], (8, -4, 2), health=90)
    assert it.push(a) and it.push(b)
    s = it.sample(11.0)
    assert (s.a, s.b, s.alpha) == (10, 14, 0.25)
    pa, pb = a.columns["position"][0], b.columns["position"][0]
    assert np.array_equal(s.columns["position"][0], pa + (pb - pa) * 0.25)
    assert s.columns["health"].tolist() == [10, 10] and s.columns["health"].dtype == a.columns["health"].dtype
    # on a view's own tick: that view, exactly
    s = it.sample(14.0)
    assert s.a == 14 and s.b is None and np.array_equal(s.columns["position"], b.columns["position"])


def test_angles_take_the_shortest_arc_and_wrap():
    it = Interpolator(SCHEMA)
    a = view(0, [1], (0, 0, 0), yaw=2 * math.pi - 0.1, heading=170.0)
    b = view(2, [1], (0, 0, 0), yaw=0.1, heading=-170.0)
    it.push(a)
    it.push(b)
    s = it.sample(1.0)
    ya, yb = a.columns["yaw"][0], b.columns["yaw"][0]
    mid = s.columns["yaw"][0]
    assert 0 <= mid < 2 * math.pi
    assert min(mid, 2 * math.pi - mid) < 0.01           # through 0, not through pi
    d = (yb - ya) - 2 * math.pi * math.floor((yb - ya) / (2 * math.pi) + 0.5)
    want = ya + d * 0.5
    assert mid == want - 2 * math.pi * math.floor(want / (2 * math.pi))
    h = s.columns["heading"][0]
    assert -180 <= h < 180 and abs(abs(h) - 180) < 0.5  # through +-180, not through 0


def test_rotations_near_q_and_minus_q_take_the_short_way():
    it = Interpolator(SCHEMA)
    # the decoded quaternions have opposite signs (the largest component changes between them)
    a = view(0, [1], (0, 0, 0), rot=(0.7072, 0, 0, -0.70701))
    b = view(1, [1], (0, 0, 0), rot=(0.70701, 0, 0, -0.7072))
    it.push(a)
    it.push(b)
    qa, qb = a.columns["rotation"][0], b.columns["rotation"][0]
    assert np.dot(qa, qb) < 0
    q = it.sample(0.5).columns["rotation"][0]
    assert abs(np.linalg.norm(q) - 1) < 1e-12
    assert abs(abs(np.dot(q, qa)) - 1) < 1e-6          # halfway along a tiny arc, not through the far side
    # nlerp by the doc's formula
    m = qa + (-qb - qa) * 0.5
    n = math.sqrt(((m[0] * m[0] + m[1] * m[1]) + m[2] * m[2]) + m[3] * m[3])
    assert np.array_equal(q, m / n)


def test_entities_that_leave_hold_and_those_that_arrive_wait():
    it = Interpolator(SCHEMA)
    a = view(0, [1, 2], (0, 0, 0))
    it.push(a)
    it.push(view(4, [2, 3], (4, 4, 4)))
    s = it.sample(2.0)
    assert s.ids.tolist() == [1, 2]                       # A's entities; 3 not yet
    assert s.columns["position"][0][0] == a.columns["position"][0][0]   # 1 left: held
    assert 1.9 < s.columns["position"][1][0] < 2.1        # 2 blended
    assert it.sample(4.0).ids.tolist() == [2, 3]


def test_late_missing_reordered_duplicated_views():
    it = Interpolator(SCHEMA, capacity=4)
    assert it.push(view(2, [1], (2, 0, 0)))
    assert it.push(view(6, [1], (6, 0, 0)))
    it.sample(3.0)
    assert it.push(view(3, [1], (3, 0, 0)))               # late: its tick passed, kept
    assert it.stats["late"] == 1
    assert not it.push(view(3, [1], (3, 0, 0)))           # duplicate: dropped
    s = it.sample(4.0)                                    # 4 and 5 never came: 3 to 6
    assert (s.a, s.b) == (3, 6) and s.alpha == 1 / 3
    assert it.push(view(7, [1], (7, 0, 0))) and it.push(view(8, [1], (8, 0, 0)))
    assert not it.push(view(1, [1], (1, 0, 0)))           # older than a full buffer: dropped
    assert it.stats["dropped"] == 2 and [v[0] for v in it.views] == [3, 6, 7, 8]


def test_extrapolation_is_bounded_then_holds():
    it = Interpolator(SCHEMA, max_extrapolation=2.0)
    it.push(view(0, [1], (0, 0, 0), rot=(0, 0, 0.3, 1)))
    it.push(view(2, [1], (4, 0, 0), rot=(0, 0, 0, 1)))
    pa = it.views[-1][2]["position"][0][0]
    pp = it.views[0][2]["position"][0][0]
    s = it.sample(3.0)
    assert s.b is None and s.alpha == 0.5
    assert s.columns["position"][0][0] == pa + (pa - pp) * 0.5
    far = it.sample(10.0)                                 # capped at 2 ticks past
    assert far.alpha == 1.0 and far.columns["position"][0][0] == pa + (pa - pp) * 1.0
    assert np.array_equal(far.columns["rotation"], it.sample(2.0).columns["rotation"])   # held
    assert it.stats["extrapolated"] == 2


def test_an_extrapolation_past_the_largest_double_is_no_error():
    """max_extrapolation is any finite double; extrapolated that far, a position is infinite
    and an angle NaN, as IEEE's floor gives in every client (Python's math.floor raised
    OverflowError out of sample, after counting it: an interpolation parity probe)."""
    it = Interpolator(SCHEMA, max_extrapolation=1.7976931348623157e308)
    it.push(view(10, [1], (0, 0, 0), yaw=0.1, heading=10.0))
    it.push(view(11, [1], (60, 0, 0), yaw=3.0, heading=100.0))
    s = it.sample(math.inf)
    assert s.columns["position"][0][0] == math.inf
    assert math.isnan(s.columns["yaw"][0]) and math.isnan(s.columns["heading"][0])
    assert it.stats["extrapolated"] == 1


def test_a_nan_render_time_is_no_render_time_for_late_views():
    """stats.late counts a view pushed at or before the latest render time sampled; a NaN time
    sampled first made that time NaN for good in all four languages, so no view was ever late
    again (an interpolation parity probe; docs/interpolation.md now says it)."""
    it = Interpolator(SCHEMA)
    it.push(view(10, [1], (0, 0, 0)))
    it.sample(math.nan)                                   # held (early), no render time
    it.push(view(12, [1], (1, 0, 0)))
    assert it.stats["late"] == 0
    it.sample(20.0)
    it.sample(math.nan)                                   # (leaves 20 as the latest)
    it.push(view(15, [1], (2, 0, 0)))
    assert it.stats["late"] == 1 and it.stats["early"] == 2


def test_before_the_oldest_and_the_sequence_wrap():
    it = Interpolator(SCHEMA)
    it.push(view(65534, [1], (0, 0, 0)))
    it.push(view(1, [1], (3, 0, 0)))                      # 65534 -> 65537: wrapped
    assert it.newest == 65537 and it.tick(0) == 65536
    s = it.sample(65535.0)
    assert (s.a, s.b) == (65534, 65537) and s.alpha == 1 / 3
    assert it.sample(100.0).a == 65534 and it.stats["early"] == 1


def test_arguments():
    with pytest.raises(ValueError, match="capacity"):
        Interpolator(SCHEMA, capacity=1)
    with pytest.raises(ValueError, match="max_extrapolation"):
        Interpolator(SCHEMA, max_extrapolation=-1)
    # numbers only, as the JavaScript client (once '2' was taken as 2 here and refused there)
    for bad in ("2", None, [3], True):
        with pytest.raises(TypeError, match="max_extrapolation must be a number"):
            Interpolator(SCHEMA, max_extrapolation=bad)
    ip = Interpolator(SCHEMA)
    assert [ip.tick(s) for s in (5, 5.0, np.int64(70000), -1)] == [5, 5, 4464, 65535]
    for bad, kind in ((5.5, ValueError), (math.nan, ValueError), (math.inf, ValueError),
                      ("5", TypeError), (None, TypeError), (True, TypeError)):
        with pytest.raises(kind, match="Interpolator.tick: seq must be an integer"):
            ip.tick(bad)
    with pytest.raises(ValueError, match="no view"):
        Interpolator(SCHEMA).sample(0)
    it = Interpolator(SCHEMA)
    with pytest.raises(TypeError, match="expected a view .* got dict"):
        it.push({"position": [0, 0, 0]})
    other = qc.Schema("Other", [("x", qc.UInt(3))])
    s = qc.StreamServer(other)
    s.connect(1)
    dec = qc.StreamClient(other)
    v = [dec.receive(d) for d in s.send(0, other.snapshot([1], {"x": [2]}))[1]][-1]
    with pytest.raises(qc.SchemaError, match="a view of schema 'Other' in the buffer of schema 'Body'"):
        it.push(v)
    it.push(view(3, [1], (0, 0, 0)))
    with pytest.raises(TypeError, match="render time must be a number of ticks, got str"):
        it.sample("3")
    assert it.stats == {"pushed": 1, "dropped": 0, "late": 0, "extrapolated": 0, "early": 0}
    nan = it.sample(math.nan)                             # no tick is at or before NaN: the
    assert nan.a == 3 and it.stats["early"] == 1          # oldest held, as in every client


def _hex(x):
    return struct.pack(">d", float(x)).hex()


def test_the_kit_vectors_are_what_the_reference_gives():
    """conformance/interpolation/pose.json replayed: pushes of codes, samples bit for bit."""
    manifest = json.loads((KIT / "manifest.json").read_text())
    assert manifest["interpolation"] == ["interpolation/pose.json"]
    data = json.loads((KIT / "interpolation" / "pose.json").read_text())
    schema = qc.Schema.load(KIT / data["schema"])
    it = Interpolator(schema, capacity=data["capacity"],
                      max_extrapolation=struct.unpack(">d", bytes.fromhex(data["max_extrapolation"]))[0])
    kinds = {"early", "extrapolated", "late", "dropped"}
    seen = set()
    resets = False
    for op in data["ops"]:
        if "push" in op:
            p = op["push"]
            m = np.array(p["codes"], dtype=np.int64).astype(np.uint64).reshape(len(p["ids"]), -1)
            v = qc.Snapshot._make(schema, np.array(p["ids"], dtype=np.uint64), m, seq=p["seq"])
            assert it.push(v) == op["kept"]
            continue
        if "reset" in op:
            it.reset()
            resets = True
            continue
        t = struct.unpack(">d", bytes.fromhex(op["sample"]))[0]
        s = it.sample(t)
        assert (s.a, s.b, _hex(s.alpha), s.ids.tolist()) == (op["a"], op["b"], op["alpha"], op["ids"])
        for name, rows in op["values"].items():
            col = s.columns[name]
            assert [[_hex(x) for x in np.ravel(r)] for r in col.reshape(len(col), -1)] == rows, name
        assert it.stats == op["stats"]
        seen |= {k for k in kinds if op["stats"][k]}
    assert seen == kinds                                  # every case the doc names is reached
    assert resets                                         # and a reset, then a new timeline


def test_reset_starts_a_new_timeline_for_a_new_stream():
    """A restarted server's ticks start again from its own start: unwrapped against the old
    stream's newest they are older than every held view of a full buffer, and were dropped
    (the picture froze, up to 32,768 ticks); after reset() they are the timeline."""
    schema = qc.Schema("S", [("x", qc.Bounded(0, 100, 16))])

    def view(seq, x):
        s = schema.snapshot([1], {"x": [x]})
        return qc.Snapshot._make(schema, s.ids, s.matrix, seq=seq)

    it = Interpolator(schema, capacity=4)
    for k in range(3596, 3600):
        assert it.push(view(k, k % 100))
    it.sample(3598.5)
    assert not it.push(view(0, 10.0))                    # the new stream's first view: dropped
    it.reset()
    assert (it.views, it.newest, it.last_t) == ([], None, None)
    with pytest.raises(ValueError):
        it.sample(0.0)                                    # nothing pushed since
    assert it.push(view(0, 10.0)) and it.push(view(1, 20.0)) and it.newest == 1
    got = it.sample(0.5)
    assert (got.a, got.b, got.alpha) == (0, 1, 0.5) and abs(got.columns["x"][0] - 15.0) < 0.01
    assert it.stats == {"pushed": 6, "dropped": 1, "late": 0, "extrapolated": 0, "early": 0}


def test_the_reference_loads_on_its_own():
    """The clients' tests load quantcodec/interpolation.py by its path, NumPy alone, with
    duck-typed schemas and views (clients/csharp/Tests~/interp_reference.py): it imports nothing
    of the package until it raises a SchemaError."""
    import importlib.util
    path = pathlib.Path(qc.__file__).resolve().parent / "interpolation.py"
    spec = importlib.util.spec_from_file_location("qc_interp_alone", path)
    alone = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(alone)

    class Obj:
        pass

    it = alone.Interpolator(SCHEMA, capacity=4)
    for seq in (1, 2):
        v = Obj()
        v.seq, v.ids = seq, np.array([7], dtype=np.uint64)
        v.columns = view(seq, [7], (seq, 0, 0)).columns
        assert it.push(v)
    s = it.sample(1.5)
    assert (s.a, s.b, s.alpha) == (1, 2, 0.5)
    assert s.columns["position"][0, 0] == pytest.approx(1.5, abs=1e-2)
