"""The core microbenchmarks (`quantcodec bench`, `python bench/bench_core.py`): each operation of
the codecs and the bit packer timed side by side with the plain NumPy / struct / bitstruct way of
doing the same job, in one run.

Rows (1M values unless said otherwise; ns per value, speedup = baseline time / our time):

- `Bounded(-2048, 2048, 20).quantize(x)` / `.dequantize(c)` of one Python float against
  `math.floor(x)`, the floor of any Python-level call;
- Bounded quantize / dequantize of float32 / uint32 arrays against NumPy's float64 formulation of
  the rule (SPEC 2: `t = (x - min) / R`, `floor(clip(t, 0, 1) * L + 0.5)`; decode
  `min + code * R / L` with code 0 -> min and code L -> max), as one writes it, and again with
  every temporary preallocated (`out=`); codes and values must be identical, bit for bit;
- `qc.pack` / `qc.unpack` of 20-bit codes against NumPy shifts and ors (defined here, used by bench/baselines_bitstream.py,
  same bytes), `bitstruct` (if installed; MSB-first, so speed only) and `struct` (32 bits a
  value: no bit packing at all);
- `Quat(9)` quantize / dequantize of quaternions against a NumPy smallest three (column by column:
  the largest |q_i|, sign flip, the other three blended out with np.where, the Bounded rule),
  identical codes and values; ours also checks every code (`Quat.valid`), the NumPy decoder does
  not;
- a memory floor: `np.copyto` of as many bytes as each array operation writes.

Times are medians of `timeit.repeat` in process CPU time (`time.process_time`: other processes
on a shared machine do not count), ours and the baseline in alternation repeat by repeat; the
speedup is the median of the per-pair ratios, so it holds when the machine's (or the baseline's)
speed drifts between repeats. Absolute numbers do not transfer between machines;
ratios measured in one run do. Nothing here is asserted by the test suite; a baseline that does
not give our exact output stops the run (AssertionError).
"""

import math
import os
import platform
import statistics
import struct
import sys
import time

import numpy as np

import quantcodec as qc
from quantcodec import _codecs

__all__ = ["run", "environment", "to_json", "format_table"]

N = 1_000_000
TIMER = time.process_time


# ------------------------------------------------------------------------------------------------
# Timing

def _medians(t_ours, t_base):
    """(median of ours, median of the baseline, median of the per-pair ratios baseline / ours).
    The speedup is the median of the pairs, each measured back to back: when the machine's speed
    (or the baseline's, as NumPy's allocations) drifts between repeats, a pair sees one speed, so
    the ratio holds where a ratio of the two medians, taken at different moments, need not."""
    if not t_base:
        return statistics.median(t_ours), None, None
    ratios = [b / o for o, b in zip(t_ours, t_base) if o > 0]
    return (statistics.median(t_ours), statistics.median(t_base),
            statistics.median(ratios) if ratios else None)


def _pair(ours, base, number, repeat):
    """Seconds per call of `ours` and `base` (base may be None), measured in alternation, and
    the speedup as the median of pairs (see _medians)."""
    ours()
    if base is not None:
        base()
    t_ours, t_base = [], []
    for _ in range(repeat):
        t0 = TIMER()
        for _ in range(number):
            ours()
        t_ours.append((TIMER() - t0) / number)
        if base is not None:
            t0 = TIMER()
            for _ in range(number):
                base()
            t_base.append((TIMER() - t0) / number)
    return _medians(t_ours, t_base)


def _per_value(stmt_ours, stmt_base, glb, number, repeat):
    """Like _pair for one-value calls: timeit's compiled loop, so the loop costs almost nothing."""
    import timeit
    t_ours, t_base = [], []
    to = timeit.Timer(stmt_ours, globals=glb, timer=TIMER)
    tb = timeit.Timer(stmt_base, globals=glb, timer=TIMER)
    to.timeit(number // 10)
    tb.timeit(number // 10)
    for _ in range(repeat):
        t_ours.append(to.timeit(number) / number)
        t_base.append(tb.timeit(number) / number)
    return _medians(t_ours, t_base)


def _row(op, ours_s, base_name, base_s, per, target=None, note="", speedup=None):
    """One table row; `per` is the number of values per call; `target` a minimum speedup;
    `speedup` the median of paired ratios (else the ratio of the two times: baselines timed
    alone)."""
    ours_ns = ours_s / per * 1e9
    base_ns = base_s / per * 1e9 if base_s is not None else None
    paired = speedup is not None
    if speedup is None:
        speedup = base_ns / ours_ns if base_ns is not None else None
    return {
        "operation": op,
        "ours_ns": ours_ns,
        "baseline": base_name,
        "baseline_ns": base_ns,
        "speedup": speedup,
        "paired": paired,       # speedup: the median of paired ratios (else baseline_ns / ours_ns)
        "target": target,
        "meets_target": None if target is None or speedup is None else bool(speedup >= target),
        "note": note,
    }


def _same_bits(a, b):
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        return np.array_equal(a.view(np.dtype("u%d" % a.itemsize)), b.view(np.dtype("u%d" % b.itemsize)))
    return np.array_equal(a, b)


def _check(what, ours, theirs):
    if not _same_bits(ours, theirs):
        raise AssertionError(f"{what}: the baseline does not give quantcodec's output; the comparison is void")


# ------------------------------------------------------------------------------------------------
# NumPy baselines: the same rules, in float64, written as one would with NumPy.

def numpy_bounded_quantize(x, lo, hi, bits):
    """SPEC's endpoints rule as written: t = (x - min) / R; floor(clip(t, 0, 1) * L + 0.5)."""
    R = hi - lo
    L = float(2 ** bits - 1)
    t = (x.astype(np.float64) - lo) / R
    return np.floor(np.clip(t, 0.0, 1.0) * L + 0.5).astype(np.uint32)


class NumpyBoundedInPlace:
    """The same rule with every temporary preallocated: the fastest NumPy gets (fewer passes over
    memory, no allocation). Identical codes."""

    def __init__(self, n, lo, hi, bits):
        self.lo, self.R, self.L = lo, hi - lo, float(2 ** bits - 1)
        self.hi, self.top = hi, 2 ** bits - 1
        self.t = np.empty(n)
        self.codes = np.empty(n, np.uint32)
        self.values = np.empty(n)
        self.mask = np.empty(n, bool)

    def quantize(self, x):
        t = self.t
        np.subtract(x, self.lo, out=t, dtype=np.float64)     # float64 arithmetic on float32 input
        np.divide(t, self.R, out=t)
        np.clip(t, 0.0, 1.0, out=t)
        np.multiply(t, self.L, out=t)
        np.add(t, 0.5, out=t)
        np.floor(t, out=t)
        self.codes[...] = t
        return self.codes

    def dequantize(self, c):
        v = self.values
        np.multiply(c, self.R, out=v, dtype=np.float64)
        np.divide(v, self.L, out=v)
        np.add(v, self.lo, out=v)
        np.equal(c, 0, out=self.mask)
        np.copyto(v, self.lo, where=self.mask)
        np.equal(c, self.top, out=self.mask)
        np.copyto(v, self.hi, where=self.mask)
        return v


def numpy_bounded_dequantize(c, lo, hi, bits):
    """min + code * R / L, code 0 -> exactly min, code L -> exactly max."""
    R = hi - lo
    L = float(2 ** bits - 1)
    v = lo + (c.astype(np.float64) * R) / L
    v = np.where(c == 0, lo, v)
    return np.where(c == 2 ** bits - 1, hi, v)


_QLO = -math.sqrt(0.5)
_QHI = math.sqrt(0.5)


def numpy_quat_quantize(q, bits):
    """Smallest three over (N, 4) rows (x, y, z, w), column by column: normalize (by the largest
    magnitude, then by the norm, as the rule does), the first largest |q_i|, the sign flip, the
    other three blended out of the columns with np.where, each by the endpoints Bounded rule over
    [-sqrt(1/2), sqrt(1/2)]. (Gathering the three through an index table, np.take_along_axis,
    was a third slower.)"""
    R = _QHI - _QLO
    L = float(2 ** bits - 1)
    x = [q[:, k].astype(np.float64) for k in range(4)]
    a = [np.abs(v) for v in x]
    m = np.maximum(np.maximum(a[0], a[1]), np.maximum(a[2], a[3]))
    for v in x:
        np.divide(v, m, out=v)
    n = np.sqrt(((x[0] * x[0] + x[1] * x[1]) + x[2] * x[2]) + x[3] * x[3])
    for v in x:
        np.divide(v, n, out=v)
    idx = np.zeros(len(q), np.uint32)
    best, big = np.abs(x[0]), x[0]
    for k in (1, 2, 3):
        ak = np.abs(x[k])
        u = ak > best
        idx[u] = k
        best = np.where(u, ak, best)
        big = np.where(u, x[k], big)
    sign = np.where(big < 0.0, -1.0, 1.0)
    kept = (np.where(idx == 0, x[1], x[0]) * sign,
            np.where(idx <= 1, x[2], x[1]) * sign,
            np.where(idx <= 2, x[3], x[2]) * sign)
    b = np.uint32(bits)
    code = idx << (3 * b)
    for shift, v in zip((2 * b, b, np.uint32(0)), kept):
        code |= np.floor(np.clip((v - _QLO) / R, 0.0, 1.0) * L + 0.5).astype(np.uint32) << shift
    return code


def numpy_quat_dequantize(code, bits):
    """The three kept values by the Bounded rule, the dropped one as sqrt(max(0, 1 - s)), the
    four columns blended in place with np.where, then normalized."""
    R = _QHI - _QLO
    L = float(2 ** bits - 1)
    b = np.uint32(bits)
    mask = np.uint32(2 ** bits - 1)
    idx = code >> (3 * b)
    kept = []
    for shift in (2 * b, b, np.uint32(0)):
        k = (code >> shift) & mask
        v = _QLO + (k.astype(np.float64) * R) / L
        v[k == 0] = _QLO
        v[k == mask] = _QHI
        kept.append(v)
    a, bb, c = kept
    s = (a * a + bb * bb) + c * c
    w = np.sqrt(np.maximum(0.0, 1.0 - s))
    q0 = np.where(idx == 0, w, a)
    q1 = np.where(idx == 0, a, np.where(idx == 1, w, bb))
    q2 = np.where(idx <= 1, bb, np.where(idx == 2, w, c))
    q3 = np.where(idx == 3, w, c)
    n = np.sqrt(((q0 * q0 + q1 * q1) + q2 * q2) + q3 * q3)
    out = np.empty((len(code), 4))
    for k, v in enumerate((q0, q1, q2, q3)):
        np.divide(v, n, out=out[:, k])
    return out


# Bit packing in NumPy: shifts and ors on 64-bit words, quantcodec's LSB-first layout (the same
# bytes). bench/baselines_bitstream.py imports these (bench/ is not installed, this module is).

def _layout(bits):
    per_block = 64 // math.gcd(bits, 64)
    return per_block, per_block * bits // 64


def numpy_pack(codes, bits):
    codes = np.asarray(codes).astype(np.uint64, copy=False).ravel()
    n = codes.size
    nbytes = (n * bits + 7) // 8
    if n == 0 or bits == 0:
        return bytes(nbytes)
    per_block, words_per_block = _layout(bits)
    nblocks = -(-n // per_block)
    if nblocks * per_block != n:
        codes = np.concatenate([codes, np.zeros(nblocks * per_block - n, np.uint64)])
    columns = codes.reshape(nblocks, per_block)
    words = np.zeros((nblocks, words_per_block), dtype=np.uint64)
    for j in range(per_block):
        word, shift = divmod(j * bits, 64)
        words[:, word] |= columns[:, j] << np.uint64(shift)
        if shift + bits > 64:
            words[:, word + 1] |= columns[:, j] >> np.uint64(64 - shift)
    return words.astype("<u8", copy=False).tobytes()[:nbytes]


def numpy_unpack(data, count, bits):
    out_dtype = np.uint32 if bits <= 32 else np.uint64
    raw = np.frombuffer(data, dtype=np.uint8)
    nbytes = (count * bits + 7) // 8
    if count == 0 or bits == 0:
        return np.zeros(count, dtype=out_dtype)
    per_block, words_per_block = _layout(bits)
    nblocks = -(-count // per_block)
    padded = np.zeros(nblocks * words_per_block * 8, dtype=np.uint8)
    padded[:nbytes] = raw[:nbytes]
    words = padded.view("<u8").astype(np.uint64, copy=False).reshape(nblocks, words_per_block)
    out = np.empty((nblocks, per_block), dtype=out_dtype)
    mask = np.uint64((1 << bits) - 1)
    for j in range(per_block):
        word, shift = divmod(j * bits, 64)
        values = words[:, word] >> np.uint64(shift)
        if shift + bits > 64:
            values |= words[:, word + 1] << np.uint64(64 - shift)
        if bits < 64:
            values &= mask
        out[:, j] = values
    return out.reshape(-1)[:count]


# ------------------------------------------------------------------------------------------------

def environment():
    """What the numbers were measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        import bitstruct
        bs = getattr(bitstruct, "__version__", "installed")
    except ImportError:
        bs = None
    return {
        "quantcodec": qc.__version__,
        "array_loops": _codecs._simd(),
        "array_loops_available": list(_codecs._simd_available()),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "bitstruct": bs,
        "machine": platform.machine(),
        "cpu": cpu,
        "cpus": os.cpu_count(),
    }


def run(quick=False, out=print, simd=None):
    """Run every benchmark; print the table through `out` (None: silent); return the rows.

    `quick`: fewer repeats (5 instead of 15 a row). `simd`: the array loops to use
    ("baseline", "avx2", "avx512"; None: the best this CPU runs).
    """
    say = out if out is not None else (lambda *a, **k: None)
    previous = _codecs._simd()
    if simd is not None:
        _codecs._simd_select(simd)
    try:
        rows = _run(quick, say)
    finally:
        if simd is not None:
            _codecs._simd_select(previous)
    return rows


def _run(quick, say):
    repeat = 5 if quick else 15
    number_pv = 20_000 if quick else 200_000
    env = environment()
    say(f"quantcodec {env['quantcodec']} core microbenchmarks: array loops {env['array_loops']} "
        f"(available: {', '.join(env['array_loops_available'])}); NumPy {env['numpy']}, "
        f"Python {env['python']}; {env['cpu']}, {env['cpus']} CPUs")
    say(f"ns per value, medians of {repeat} repeats in process CPU time, ours and the baseline in alternation; "
        f"speedup = the median of the pairs' baseline time / ours\n")
    rows = []
    rng = np.random.default_rng(20240531)
    lo, hi, bits = -2048.0, 2048.0, 20
    b = qc.Bounded(lo, hi, bits)

    # -- one value: the Python call itself
    x1 = 123.456789
    c1 = b.quantize(x1)
    g = {"q": b.quantize, "dq": b.dequantize, "floor": math.floor, "x": x1, "c": c1}
    t_q, t_floor, sp = _per_value("q(x)", "floor(x)", g, number_pv, repeat)
    rows.append(_row("Bounded.quantize(float), one value", t_q, "math.floor(float)", t_floor, 1, speedup=sp, target=0.5,
                     note="target: at most 2x the time of math.floor"))
    t_dq, t_floor, sp = _per_value("dq(c)", "floor(x)", g, number_pv, repeat)
    rows.append(_row("Bounded.dequantize(int), one value", t_dq, "math.floor(float)", t_floor, 1, speedup=sp))

    # -- 1M float32 <-> uint32 codes
    x = rng.uniform(lo, hi, N).astype(np.float32)
    codes = np.empty(N, np.uint32)
    values = np.empty(N)
    inplace = NumpyBoundedInPlace(N, lo, hi, bits)
    ours_codes = b.quantize(x)
    _check("Bounded.quantize", ours_codes, numpy_bounded_quantize(x, lo, hi, bits))
    _check("Bounded.quantize (in place)", ours_codes, inplace.quantize(x))
    ours_values = b.dequantize(ours_codes)
    _check("Bounded.dequantize", ours_values, numpy_bounded_dequantize(ours_codes, lo, hi, bits))
    _check("Bounded.dequantize (in place)", ours_values, inplace.dequantize(ours_codes))
    t, tb, sp = _pair(lambda: b.quantize(x, out=codes), lambda: numpy_bounded_quantize(x, lo, hi, bits), 1, repeat)
    rows.append(_row("Bounded.quantize, 1M float32 -> uint32", t, "NumPy float64 formula", tb, N, target=5.0,
                     speedup=sp))
    t, tb, sp = _pair(lambda: b.quantize(x, out=codes), lambda: inplace.quantize(x), 1, repeat)
    rows.append(_row("Bounded.quantize, 1M float32 -> uint32", t, "NumPy, preallocated out=", tb, N, speedup=sp))
    t, tb, sp = _pair(lambda: b.dequantize(ours_codes, out=values),
                      lambda: numpy_bounded_dequantize(ours_codes, lo, hi, bits), 1, repeat)
    rows.append(_row("Bounded.dequantize, 1M uint32 -> float64", t, "NumPy float64 formula", tb, N, target=5.0,
                     speedup=sp, note="ours also checks every code"))
    t, tb, sp = _pair(lambda: b.dequantize(ours_codes, out=values), lambda: inplace.dequantize(ours_codes), 1, repeat)
    rows.append(_row("Bounded.dequantize, 1M uint32 -> float64", t, "NumPy, preallocated out=", tb, N, speedup=sp))

    # -- bit packing, 1M 20-bit codes
    packed = qc.pack(ours_codes, bits)
    if packed != numpy_pack(ours_codes, bits):
        raise AssertionError("numpy_pack: not quantcodec's bytes; the comparison is void")
    _check("unpack", qc.unpack(packed, N, bits), numpy_unpack(packed, N, bits))
    unpacked = np.empty(N, np.uint32)
    t_pack, tb, sp = _pair(lambda: qc.pack(ours_codes, bits), lambda: numpy_pack(ours_codes, bits), 1, repeat)
    rows.append(_row("pack, 1M 20-bit codes", t_pack, "NumPy shifts and ors", tb, N, target=5.0,
                     speedup=sp))
    t_unpack, tb, sp = _pair(lambda: qc.unpack(packed, N, bits, out=unpacked), lambda: numpy_unpack(packed, N, bits),
                             1, repeat)
    rows.append(_row("unpack, 1M 20-bit codes", t_unpack, "NumPy shifts and ors", tb, N, target=5.0,
                     speedup=sp))
    # The Python-level baselines take tens of ms a call and churn a million int objects through the
    # caches; they are timed alone, against our times of the rows above.
    slow = max(3, repeat // 3)
    try:
        import bitstruct.c as bsc
    except ImportError:
        bsc = None
        say("(bitstruct is not installed: its rows are left out; pip install 'quantcodec[bench]')")
    if bsc is not None:
        fmt = bsc.compile(f"u{bits}" * N)
        bs_packed = fmt.pack(*ours_codes.tolist())
        if not np.array_equal(np.array(fmt.unpack(bs_packed), np.uint32), ours_codes):
            raise AssertionError("bitstruct round trip failed")
        tb, _, _ = _pair(lambda: fmt.pack(*ours_codes.tolist()), None, 1, slow)
        rows.append(_row("pack, 1M 20-bit codes", t_pack, "bitstruct.c (from the array)", tb, N, target=30.0,
                         note="MSB-first: same size, other bytes"))
        tb, _, _ = _pair(lambda: np.array(fmt.unpack(bs_packed), np.uint32), None, 1, slow)
        rows.append(_row("unpack, 1M 20-bit codes", t_unpack, "bitstruct.c (to an array)", tb, N, target=30.0))
    sfmt = struct.Struct(f"<{N}I")
    s_packed = sfmt.pack(*ours_codes.tolist())
    tb, _, _ = _pair(lambda: sfmt.pack(*ours_codes.tolist()), None, 1, slow)
    rows.append(_row("pack, 1M 20-bit codes", t_pack, "struct '<I' (32 bits each)", tb, N,
                     note="no bit packing: 4 MB, not 2.5 MB"))
    tb, _, _ = _pair(lambda: np.array(sfmt.unpack(s_packed), np.uint32), None, 1, slow)
    rows.append(_row("unpack, 1M 20-bit codes", t_unpack, "struct '<I' (32 bits each)", tb, N))

    # -- Quat(9): 1M quaternions
    quat = qc.Quat(9)
    q = rng.normal(size=(N, 4)).astype(np.float32)
    qcodes = np.empty(N, quat.code_dtype)
    qvalues = np.empty((N, 4))
    ours_q = quat.quantize(q)
    _check("Quat.quantize", ours_q, numpy_quat_quantize(q, 9))
    _check("Quat.dequantize", quat.dequantize(ours_q), numpy_quat_dequantize(ours_q, 9))
    t, tb, sp = _pair(lambda: quat.quantize(q, out=qcodes), lambda: numpy_quat_quantize(q, 9), 1, repeat)
    rows.append(_row("Quat(9).quantize, 1M float32 quaternions", t, "NumPy smallest three", tb, N, target=4.0,
                     speedup=sp, note="per quaternion"))
    t, tb, sp = _pair(lambda: quat.dequantize(ours_q, out=qvalues), lambda: numpy_quat_dequantize(ours_q, 9), 1, repeat)
    rows.append(_row("Quat(9).dequantize, 1M codes -> float64", t, "NumPy smallest three", tb, N, target=4.0,
                     speedup=sp, note="per quaternion; ours also checks every code"))

    # -- the memory floor: copying as many bytes as each array operation writes
    for what, src in (("np.copyto, 1M float32 (4 MB)", x),
                      ("np.copyto, 1M float64 (8 MB)", values),
                      ("np.copyto, 1M float64 quaternions (32 MB)", qvalues)):
        dst = np.empty_like(src)
        t, _, _ = _pair(lambda: np.copyto(dst, src), None, 1, repeat)
        rows.append(_row(what, t, None, None, N, note="memory floor"))

    for line in format_table(rows):
        say(line)
    return rows


def format_table(rows):
    """The rows as lines of text."""
    w = max(len(r["operation"]) for r in rows)
    wb = max(len(r["baseline"] or "") for r in rows)
    head = f"{'operation':{w}s} {'ours ns':>8s}  {'baseline':{wb}s} {'ns':>8s} {'speedup':>8s}  target"
    lines = [head, "-" * len(head)]
    for r in rows:
        base_ns = f"{r['baseline_ns']:8.2f}" if r["baseline_ns"] is not None else " " * 8
        speed = f"{r['speedup']:7.2f}x" if r["speedup"] is not None else " " * 8
        target = ""
        if r["target"] is not None:
            target = f">= {r['target']:g}x " + ("ok" if r["meets_target"] else "MISSED")
        line = f"{r['operation']:{w}s} {r['ours_ns']:8.2f}  {r['baseline'] or '':{wb}s} {base_ns} {speed}  {target:13s}"
        if r["note"]:
            line += f"  {r['note']}"
        lines.append(line.rstrip())
    return lines


def to_json(rows):
    """A JSON-able dict: the environment and the rows."""
    return {"environment": environment(), "unit": "ns per value", "rows": rows}


if __name__ == "__main__":      # python -m quantcodec.tools.bench [--quick]
    run(quick="--quick" in sys.argv)
