"""Schema microbenchmarks, side by side with their baselines (SPEC 4 targets).

    python bench/bench_schema.py [--quick]

One record of the SPEC section 4 PlayerState schema against ``struct.Struct('<7f')`` packing 7
raw floats (position and rotation, the issue's baseline): ``encode`` from a tuple (target: at
most 1.5x the time of ``pack``) and from a dict (at most 2.5x), ``decode`` against ``unpack`` (at
most 2.5x, it builds a dict of tuples). The same records are also timed against
``struct.Struct('<11f')`` over all eleven float values of the record (position, rotation,
velocity, yaw), the other reading of "struct.pack of its raw floats".

``encode_many`` of 1000 records of position (Vector of 3 Bounded) + Quat(9) against a NumPy
pipeline doing the same quantize + smallest three + bit pack, written below with the same float
operations so that its bytes are identical (checked); ``decode_many`` of those records against
the NumPy inverse (bit-unpack, dequantize, rebuild the quaternion from its smallest three), whose
values are identical (checked). Target: each at least 10x faster.

Times are medians of ``timeit.repeat`` in process CPU time (``time.process_time``, so that other
processes on a shared machine do not count); every pair is measured in the same run,
interleaved. Nothing here is asserted by the test suite.
"""

import math
import os
import statistics
import struct
import sys
import time
import timeit

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")    # no idle BLAS threads in the process CPU time

import numpy as np

try:
    import quantcodec as qc
except ImportError:     # run from a source checkout: python bench/bench_schema.py
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import quantcodec as qc

from quantcodec.tools.examples import player_state  # noqa: E402

QUICK = "--quick" in sys.argv
REPEAT = 5 if QUICK else 15

PLAYER_STATE = player_state()         # SPEC 4's example schema (quantcodec/tools/examples.py)

POSE = qc.Schema("Pose", [
    ("position", qc.Vector(qc.Bounded(-2048, 2048, 18), qc.Bounded(-64, 192, 14), qc.Bounded(-2048, 2048, 18))),
    ("rotation", qc.Quat(9)),
])


TIMER = time.process_time


def median_ns(fn, number):
    return statistics.median(timeit.repeat(fn, number=number, repeat=REPEAT, timer=TIMER)) / number * 1e9


def paired(fn, base, number):
    """Median ns of fn and of base, measured alternately so load changes hit both alike."""
    a, b = [], []
    for _ in range(REPEAT):
        a.append(timeit.timeit(fn, number=number, timer=TIMER) / number * 1e9)
        b.append(timeit.timeit(base, number=number, timer=TIMER) / number * 1e9)
    return statistics.median(a), statistics.median(b)


# ------------------------------------------------------------------------------------------ NumPy baseline

_LO = np.array([-2048.0, -64.0, -2048.0])
_HI = np.array([2048.0, 192.0, 2048.0])
_R = _HI - _LO
_L = np.array([2.0 ** 18 - 1, 2.0 ** 14 - 1, 2.0 ** 18 - 1])
_QLO = -math.sqrt(0.5)
_QR = math.sqrt(0.5) - _QLO
_QL = 2.0 ** 9 - 1
_KEPT = np.array([[1, 2, 3], [0, 2, 3], [0, 1, 3], [0, 1, 2]])


def numpy_encode_pose(pos, quat):
    """The Pose records bit-packed back to back, in plain NumPy: Bounded rule on the position,
    smallest three on the rotation, then each 79-bit record laid out LSB-first."""
    n = len(pos)
    # position: t = (x - lo) / R, clamped to [0, 1] (NaN -> 0), code = floor(t * L + 0.5)
    t = (pos - _LO) / _R
    t = np.where(t > 0, t, 0.0)
    t = np.where(t < 1, t, 1.0)
    pc = np.floor(t * _L + 0.5).astype(np.uint64)
    # rotation: normalize (max-abs first), largest component (first on a tie), sign flip, keep three
    q = quat / np.abs(quat).max(axis=1, keepdims=True)
    norm = np.sqrt(((q[:, 0] * q[:, 0] + q[:, 1] * q[:, 1]) + q[:, 2] * q[:, 2]) + q[:, 3] * q[:, 3])
    q = q / norm[:, None]
    idx = np.abs(q).argmax(axis=1)
    rows = np.arange(n)
    q = np.where((q[rows, idx] < 0)[:, None], -q, q)
    kv = np.take_along_axis(q, _KEPT[idx], axis=1)
    t = (kv - _QLO) / _QR
    t = np.where(t > 0, t, 0.0)
    t = np.where(t < 1, t, 1.0)
    kc = np.floor(t * _QL + 0.5).astype(np.uint64)
    qcode = ((idx.astype(np.uint64) << np.uint64(27)) | (kc[:, 0] << np.uint64(18))
             | (kc[:, 1] << np.uint64(9)) | kc[:, 2])
    # one record = 18 + 14 + 18 + 29 = 79 bits: two 64-bit words, then 79 bits of each, back to back
    words = np.empty((n, 2), dtype="<u8")
    words[:, 0] = (pc[:, 0] | (pc[:, 1] << np.uint64(18)) | (pc[:, 2] << np.uint64(32))
                   | ((qcode & np.uint64((1 << 14) - 1)) << np.uint64(50)))
    words[:, 1] = qcode >> np.uint64(14)
    bits = np.unpackbits(words.view(np.uint8).reshape(n, 16), axis=1, bitorder="little")[:, :79]
    return np.packbits(bits.ravel(), bitorder="little").tobytes()


_QHI = math.sqrt(0.5)
# the dropped component w goes back in at the index: row idx of _PLACE gathers (a, b, c, w)
_PLACE = np.array([[3, 0, 1, 2], [0, 3, 1, 2], [0, 1, 3, 2], [0, 1, 2, 3]])


def _bounded_dq(cd, lo, hi, R, L):
    """The Bounded rule's value of codes given as float64 (endpoints): lo + (c * R) / L, code 0
    exactly lo and code L exactly hi."""
    v = lo + (cd * R) / L
    v = np.where(cd == L, hi, v)
    return np.where(cd == 0, lo, v)


def numpy_decode_pose(data, n):
    """The inverse of numpy_encode_pose, in plain NumPy: unpack each 79-bit record into two
    64-bit words, cut out the fields, dequantize the position and rebuild the quaternion from
    its smallest three with the library's float operations (same order), so that the values are
    identical (checked). It does not check the codes, which decode_many does."""
    bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8), bitorder="little")[:n * 79].reshape(n, 79)
    words = np.packbits(np.pad(bits, ((0, 0), (0, 128 - 79))), axis=1, bitorder="little").view("<u8")
    w0, w1 = words[:, 0], words[:, 1]
    pc = np.empty((n, 3), dtype=np.uint64)
    pc[:, 0] = w0 & np.uint64((1 << 18) - 1)
    pc[:, 1] = (w0 >> np.uint64(18)) & np.uint64((1 << 14) - 1)
    pc[:, 2] = (w0 >> np.uint64(32)) & np.uint64((1 << 18) - 1)
    pos = _bounded_dq(pc.astype(np.float64), _LO, _HI, _R, _L)
    qcode = (w0 >> np.uint64(50)) | ((w1 << np.uint64(14)) & np.uint64((1 << 29) - 1))
    idx = (qcode >> np.uint64(27)).astype(np.intp)
    kc = np.empty((n, 3), dtype=np.uint64)
    kc[:, 0] = (qcode >> np.uint64(18)) & np.uint64(511)
    kc[:, 1] = (qcode >> np.uint64(9)) & np.uint64(511)
    kc[:, 2] = qcode & np.uint64(511)
    kv = _bounded_dq(kc.astype(np.float64), _QLO, _QHI, _QR, _QL)
    a, b, c = kv[:, 0], kv[:, 1], kv[:, 2]
    s = (a * a + b * b) + c * c
    w = np.sqrt(np.where(1.0 - s > 0.0, 1.0 - s, 0.0))
    q = np.take_along_axis(np.column_stack((a, b, c, w)), _PLACE[idx], axis=1)
    norm = np.sqrt(((q[:, 0] * q[:, 0] + q[:, 1] * q[:, 1]) + q[:, 2] * q[:, 2]) + q[:, 3] * q[:, 3])
    return {"position": pos, "rotation": q / norm[:, None]}


# ------------------------------------------------------------------------------------------ runs

def bench_records():
    s = PLAYER_STATE
    moving = ((100.5, 20.25, -300.0), (0.0, 0.0, 0.3826834, 0.9238795), (1.5, 0.0, -2.0), 1.25, 100, "run", True)
    resting = moving[:2] + ((0.0, 0.0, 0.0),) + moving[3:]
    as_dict = dict(zip(s.names, moving))
    raw7 = (100.5, 20.25, -300.0, 0.0, 0.0, 0.3826834, 0.9238795)
    raw11 = raw7 + (1.5, 0.0, -2.0, 1.25)
    enc, dec = s.encode, s.decode
    data = enc(moving)
    data_rest = enc(resting)
    n = 20000 if QUICK else 100000
    rows = []
    for fmt, raw in (("<7f", raw7), ("<11f", raw11)):
        st = struct.Struct(fmt)
        pack, unpack = st.pack, st.unpack
        packed = pack(*raw)
        for label, fn, base, bname in [
            ("encode(tuple)", lambda: enc(moving), lambda: pack(*raw), "pack"),
            ("encode(tuple), velocity at rest", lambda: enc(resting), lambda: pack(*raw), "pack"),
            ("encode(dict)", lambda: enc(as_dict), lambda: pack(*raw), "pack"),
            ("decode", lambda: dec(data), lambda: unpack(packed), "unpack"),
            ("decode, velocity at rest", lambda: dec(data_rest), lambda: unpack(packed), "unpack"),
        ]:
            a, b = paired(fn, base, n)
            rows.append((label, a, f"struct {bname} '{fmt}'", b, a / b))
    return rows


def bench_batches():
    rng = np.random.default_rng(0)
    n = 1000
    pos = rng.uniform(-2000, 2000, (n, 3))
    pos[:, 1] = rng.uniform(-60, 190, n)
    quat = rng.normal(size=(n, 4))
    cols = {"position": pos, "rotation": quat}
    mine = POSE.encode_many(cols)
    base = numpy_encode_pose(pos, quat)
    assert mine == base, "the NumPy baseline must produce the very same bytes"
    number = 200 if QUICK else 1000
    a, b = paired(lambda: POSE.encode_many(cols), lambda: numpy_encode_pose(pos, quat), number)
    rows = [("encode_many 1000 x (position + Quat(9))", a, "NumPy quantize + smallest three + bit-pack", b, a / b)]
    got, ref = POSE.decode_many(mine, n), numpy_decode_pose(mine, n)
    for nm in ("position", "rotation"):
        assert got[nm].dtype == ref[nm].dtype and got[nm].tobytes() == ref[nm].tobytes(), \
            f"the NumPy baseline must decode the very same {nm} values"
    a, b = paired(lambda: POSE.decode_many(mine, n), lambda: numpy_decode_pose(mine, n), number)
    rows.append(("decode_many 1000 x (position + Quat(9))", a, "NumPy bit-unpack + dequantize + rebuild", b, a / b))
    big = {
        "position": pos, "rotation": quat, "velocity": np.where(rng.random((n, 1)) < 0.3, 0.0, rng.normal(0, 10, (n, 3))),
        "yaw": rng.uniform(-4, 4, n), "health": rng.integers(0, 256, n), "state": rng.integers(0, 4, n),
        "grounded": rng.random(n) < 0.5,
    }
    data = PLAYER_STATE.encode_many(big)
    a = median_ns(lambda: PLAYER_STATE.encode_many(big), number)
    rows.append(("encode_many 1000 PlayerState", a, "", float("nan"), float("nan")))
    a = median_ns(lambda: PLAYER_STATE.decode_many(data, n), number)
    rows.append(("decode_many 1000 PlayerState", a, "", float("nan"), float("nan")))
    return rows


def main():
    import argparse
    global QUICK, REPEAT
    ap = argparse.ArgumentParser(description="Schema microbenchmarks against struct and NumPy "
                                 "baselines (see the module docstring).")
    ap.add_argument("--quick", action="store_true", help="fewer repeats (5 instead of 15)")
    QUICK = ap.parse_args().quick
    REPEAT = 5 if QUICK else 15
    rows = bench_records() + bench_batches()
    w = max(len(r[0]) for r in rows)
    wb = max(len(r[2]) for r in rows)
    print(f"{'operation':<{w}}  {'ns':>10}  {'baseline':<{wb}}  {'ns':>10}  {'time ratio':>10}")
    for label, a, bname, b, ratio in rows:
        bs = f"{b:10.0f}" if b == b else " " * 10
        rs = f"{ratio:6.2f}x" if ratio == ratio else ""
        print(f"{label:<{w}}  {a:10.0f}  {bname:<{wb}}  {bs}  {rs:>10}")
    enc_many, dec_many = rows[-4], rows[-3]
    print(f"\nencode_many is {enc_many[3] / enc_many[1]:.1f}x and decode_many {dec_many[3] / dec_many[1]:.1f}x "
          f"faster than their NumPy pipelines (target: at least 10x); per-record targets: "
          f"encode(tuple) <= 1.5x pack, encode(dict) <= 2.5x pack, decode <= 2.5x unpack")


if __name__ == "__main__":
    main()
