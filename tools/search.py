"""Seeded worst-case search for the angular error of ``Quat`` and ``UnitVector``.

``Quat.max_error`` and ``UnitVector.max_error`` are angles in degrees: the worst rotation angle
(resp. the worst angle between unit vectors) between an input and what the receiver decodes,
over all inputs. There is no closed form that holds at every bit count (the first-order estimate
``2*sqrt(6) / 2**bits`` rad for smallest three fails below 4 bits), so the figures are found by a
deterministic search, run once by ``python tools/search.py --write`` and stored as
literal tables in ``quantcodec/_maxerr.py``, which the codecs read.

The search, for one bit count (and mode):

1. random inputs, uniform over rotations (resp. directions);
2. structured candidates where the error peaks: every kept component (resp. octahedral
   coordinate) placed exactly on a decision edge (the midpoint between two neighbouring decoded
   values), and a few ulps either side of it, for the edges around chosen anchors, with every
   sign pattern and every dropped index. The anchor that matters for smallest three is
   (1/2, 1/2, 1/2, 1/2), where all four components are close to 1/2 and the rebuilt component
   amplifies the three rounding errors most; for the octahedral map it is the centre of each
   face, (+-1/3, +-1/3) in the square and (+-2/3, +-2/3) on the folded side. Fold edges,
   diagonals, vertices and (at low bit counts) every edge of the grid are included too;
3. seeded local refinement: the worst few candidates so far are perturbed at random, with a
   scale that halves each round from a couple of steps down to a few ulps.

Angles are measured accurately at any bit count: between unit quaternions ``q`` and ``p``
(``p`` sign-aligned with ``q``) the rotation angle is ``4 * atan2(|q - p|, |q + p|)`` (``2 * atan2``
gives the angle between the two 4-vectors, which is half the rotation angle); between unit
vectors it is ``2 * atan2(|u - v|, |u + v|)``. ``acos`` of a dot product would lose all precision
at 20 bits.

``encode`` and ``decode`` are vectorized callables, ``(N, 4) -> (N,)`` codes and back (``(N, 3)``
for unit vectors), so the same search runs on the reference rules or on a compiled codec's
``quantize`` / ``dequantize``; identical codes give identical figures. The result depends only on
``(bits, mode, seed)`` and the sample-size parameters.
"""

import math
import os
import sys

import numpy as np

try:
    import quantcodec  # noqa: F401  (installed: the package that is tested)
except ImportError:         # run as a script from a built checkout: the checkout beside it
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from quantcodec import _reference as ref  # noqa: E402  (the oracle: this script is not the package)

__all__ = [
    "quat_angle_deg", "unitvec_angle_deg",
    "quat_worst_angle", "unitvec_worst_angle",
    "quat_reference_codec", "unitvec_reference_codec",
    "generate_tables", "main",
]

_CHUNK = 1 << 16
_DELTA = 2.0 ** -50          # ~8 ulps at 0.5: survives the encoder's re-normalization, decides the side


# ----------------------------------------------------------------------------------------------
# angle measures
# ----------------------------------------------------------------------------------------------

def _norm4(d):
    return np.sqrt(((d[..., 0] * d[..., 0] + d[..., 1] * d[..., 1]) + d[..., 2] * d[..., 2]) + d[..., 3] * d[..., 3])


def _norm3(d):
    return np.sqrt((d[..., 0] * d[..., 0] + d[..., 1] * d[..., 1]) + d[..., 2] * d[..., 2])


def quat_angle_deg(q, p):
    """Rotation angle in degrees between unit quaternions (rows of) ``q`` and ``p``:
    ``4 * atan2(|q - p|, |q + p|)`` with ``p`` negated where ``q . p < 0``."""
    q = np.asarray(q, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    dot = ((q[..., 0] * p[..., 0] + q[..., 1] * p[..., 1]) + q[..., 2] * p[..., 2]) + q[..., 3] * p[..., 3]
    p = np.where((dot < 0)[..., None], -p, p)
    return np.degrees(4.0 * np.arctan2(_norm4(q - p), _norm4(q + p)))


def unitvec_angle_deg(u, v):
    """Angle in degrees between unit vectors (rows of) ``u`` and ``v``: ``2 * atan2(|u - v|, |u + v|)``."""
    u = np.asarray(u, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    return np.degrees(2.0 * np.arctan2(_norm3(u - v), _norm3(u + v)))


def _unit3(v):
    return v / _norm3(v)[..., None]


# ----------------------------------------------------------------------------------------------
# reference codecs (the callables the tables are generated with)
# ----------------------------------------------------------------------------------------------

def quat_reference_codec(bits, mode="endpoints"):
    """``(encode, decode)`` callables of the reference smallest-three rule."""
    return (lambda q: ref.quat_quantize(q, bits, mode)), (lambda c: ref.quat_dequantize(c, bits, mode))


def unitvec_reference_codec(bits):
    """``(encode, decode)`` callables of the reference octahedral rule."""
    return (lambda v: ref.unitvec_quantize(v, bits)), (lambda c: ref.unitvec_dequantize(c, bits))


# ----------------------------------------------------------------------------------------------
# shared machinery
# ----------------------------------------------------------------------------------------------

class _Tracker:
    """Keeps the ``k`` worst inputs seen so far (ties broken by arrival order: deterministic)."""

    def __init__(self, k, width):
        self.k = k
        self.x = np.empty((0, width))
        self.a = np.empty(0)

    def add(self, x, a):
        keep = np.isfinite(a)
        x = np.concatenate([self.x, x[keep]])
        a = np.concatenate([self.a, a[keep]])
        order = np.argsort(-a, kind="stable")[: self.k]
        self.x, self.a = x[order], a[order]

    @property
    def worst(self):
        return float(self.a[0])


def _evaluate(x, measure, tracker):
    for i in range(0, len(x), _CHUNK):
        part = np.ascontiguousarray(x[i:i + _CHUNK])
        tracker.add(part, measure(part))


def _ncodes(bits, mode):
    """The number of levels of the Bounded rule (midpoint has no code 2**bits - 1)."""
    return 2 ** bits - (1 if mode == "midpoint" else 0)


def _edges(bits, lo, hi, mode):
    """Every decision edge of the Bounded rule (small bit counts only): the midpoints between
    neighbouring decoded values."""
    codes = np.arange(_ncodes(bits, mode), dtype=np.uint64)
    dec = ref.bounded_dequantize(codes, lo, hi, bits, mode)
    return (dec[:-1] + dec[1:]) / 2.0


def _near(bits, lo, hi, mode, targets, width):
    """For each target, the ``2*width + 1`` decision edges nearest to it (fewer at the ends)."""
    out = []
    top = _ncodes(bits, mode) - 1
    for t in targets:
        k0 = int(ref.bounded_quantize(t, lo, hi, bits, mode))
        ks = np.arange(max(0, k0 - width - 1), min(top, k0 + width + 1), dtype=np.uint64)
        e = (ref.bounded_dequantize(ks, lo, hi, bits, mode)
             + ref.bounded_dequantize(ks + np.uint64(1), lo, hi, bits, mode)) / 2.0
        e = e[np.argsort(np.abs(e - t), kind="stable")][: 2 * width + 1]
        out.append(np.sort(e))
    return out


def _offsets(values, with_exact=True):
    """Each value shifted by ``-delta``, ``+delta`` (and left exact)."""
    d = [-_DELTA, _DELTA] + ([0.0] if with_exact else [])
    return np.unique(np.concatenate([values + s for s in d]))


def _refine(tracker, measure, rng, width, scale0, rounds, children):
    """Perturb the current worst few with gaussian noise whose scale halves each round."""
    for r in range(rounds):
        sigma = scale0 * 0.5 ** r
        parents = tracker.x
        noise = rng.standard_normal((len(parents), children, width)) * sigma
        cand = (parents[:, None, :] + noise).reshape(-1, width)
        _evaluate(cand, measure, tracker)


def _rounds_for(step, floor=2.0 ** -50):
    """Halvings from 2 steps down to a few ulps (at most 30)."""
    return int(min(30, max(4, math.ceil(math.log2(2.0 * step / floor)))))


# ----------------------------------------------------------------------------------------------
# Quat
# ----------------------------------------------------------------------------------------------

_QUAT_KEPT = ((1, 2, 3), (0, 2, 3), (0, 1, 3), (0, 1, 2))


def _quat_from_kept(kept, idx):
    """Rows of kept triples -> quaternions with the dropped component rebuilt at ``idx``
    (rows whose kept part is longer than 1 are dropped)."""
    s = (kept[:, 0] * kept[:, 0] + kept[:, 1] * kept[:, 1]) + kept[:, 2] * kept[:, 2]
    ok = s <= 1.0
    kept, s = kept[ok], s[ok]
    q = np.empty((len(kept), 4))
    q[:, list(_QUAT_KEPT[idx])] = kept
    q[:, idx] = np.sqrt(1.0 - s)
    return q


def _grid3(axes):
    a, b, c = np.meshgrid(*axes, indexing="ij")
    return np.stack([a.ravel(), b.ravel(), c.ravel()], axis=-1)


def _quat_structured(bits, mode):
    lo, hi = -ref.QUAT_LIMIT, ref.QUAT_LIMIT
    h = 0.5
    r2 = ref.QUAT_LIMIT
    r3 = 1.0 / math.sqrt(3.0)
    blocks = []
    if bits <= 4:
        # every edge triple, each edge just below and just above
        axis = _offsets(_edges(bits, lo, hi, mode), with_exact=False)
        trip = _grid3([axis, axis, axis])
        for idx in range(4):
            blocks.append(_quat_from_kept(trip, idx))
    # anchors (kept targets, dropped at idx), with widths in edges
    anchors = [((h, h, h), 2), ((r2, 0.0, 0.0), 1), ((0.0, r2, 0.0), 1), ((0.0, 0.0, r2), 1),
               ((r3, r3, 0.0), 1), ((r3, 0.0, r3), 1), ((0.0, r3, r3), 1), ((0.0, 0.0, 0.0), 1),
               ((h, h, 0.0), 1), ((h, 0.0, h), 1), ((0.0, h, h), 1)]
    signs = _grid3([(1.0, -1.0)] * 3)
    for target, width in anchors:
        for sg in signs:
            t = np.asarray(target) * sg
            if np.any((np.asarray(target) == 0) & (sg < 0)):
                continue
            axes = [_offsets(e) for e in _near(bits, lo, hi, mode, t, width)]
            trip = _grid3(axes)
            for idx in range(4):
                blocks.append(_quat_from_kept(trip, idx))
    return np.concatenate(blocks)


def _uniform_quats(rng, n):
    q = rng.standard_normal((n, 4))
    return q / _norm4(q)[:, None]


_MODE_SEED = {"endpoints": 0, "bins": 1, "midpoint": 2}
QUAT_MODES = ("endpoints", "bins", "midpoint")


def quat_worst_angle(bits, mode, encode, decode, seed=0, *, n_random=None, keep=24, children=256,
                     rounds=None, return_input=False):
    """Worst rotation angle (degrees) of a smallest-three codec, by a seeded search.

    ``encode((N, 4) float64) -> (N,) codes`` and ``decode(codes) -> (N, 4)``. ``n_random``
    defaults to 200 000 up to 10 bits and 50 000 above (the structured and refined candidates
    are always all run). With ``return_input=True`` returns ``(angle, worst_input)``.
    """
    bits = int(bits)
    if n_random is None:
        n_random = 200_000 if bits <= 10 else 50_000
    rng = np.random.default_rng([int(seed), bits, _MODE_SEED[mode], 4])
    step = ref.quat_component_step(bits, mode)
    if rounds is None:
        rounds = _rounds_for(step)

    def measure(x):
        qn = ref.quat_normalize(x)
        p = np.asarray(decode(encode(x)), dtype=np.float64)
        return quat_angle_deg(qn, p)

    tracker = _Tracker(keep, 4)
    _evaluate(_uniform_quats(rng, n_random), measure, tracker)
    _evaluate(_quat_structured(bits, mode), measure, tracker)
    _refine(tracker, measure, rng, 4, 2.0 * step, rounds, children)
    if return_input:
        return tracker.worst, tracker.x[0].copy()
    return tracker.worst


# ----------------------------------------------------------------------------------------------
# UnitVector
# ----------------------------------------------------------------------------------------------

def _octa_to_vec(p, q):
    """Continuous octahedral inverse (no quantization): square point -> (unnormalized) vector."""
    z = (1.0 - np.abs(p)) - np.abs(q)
    neg = z < 0
    pf = (1.0 - np.abs(q)) * np.where(p >= 0, 1.0, -1.0)
    qf = (1.0 - np.abs(p)) * np.where(q >= 0, 1.0, -1.0)
    return np.stack([np.where(neg, pf, p), np.where(neg, qf, q), z], axis=-1)


def _unitvec_structured(bits):
    pts = []
    if bits <= 7:
        axis = _offsets(_edges(bits, -1.0, 1.0, "endpoints"), with_exact=False)
        P, Q = np.meshgrid(axis, axis, indexing="ij")
        pts.append(np.stack([P.ravel(), Q.ravel()], axis=-1))
    t1, t2 = 1.0 / 3.0, 2.0 / 3.0
    anchors = [(0.0, 0.0), (0.5, 0.5), (t1, t1), (t2, t2), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0),
               (0.5, 0.0), (0.0, 0.5), (0.25, 0.25), (0.75, 0.75), (t1, 0.0), (0.0, t1)]
    line = np.linspace(0.0, 1.0, 65)
    anchors += [(float(s), float(s)) for s in line]            # diagonal
    anchors += [(float(s), float(1.0 - s)) for s in line]      # fold edge |p| + |q| = 1
    anchors += [(float(s), 0.0) for s in line]                 # axes
    seen = set()
    for a0, b0 in anchors:
        for sp in (1.0, -1.0):
            for sq in (1.0, -1.0):
                key = (sp * a0 + 0.0, sq * b0 + 0.0)
                if key in seen:
                    continue
                seen.add(key)
                ep, eq = _near(bits, -1.0, 1.0, "endpoints", key, 2)
                P, Q = np.meshgrid(_offsets(ep), _offsets(eq), indexing="ij")
                pts.append(np.stack([P.ravel(), Q.ravel()], axis=-1))
    pq = np.concatenate(pts)
    pq = np.clip(pq, -1.0, 1.0)
    return _octa_to_vec(pq[:, 0], pq[:, 1])


def unitvec_worst_angle(bits, encode, decode, seed=0, *, n_random=None, keep=24, children=256,
                        rounds=None, return_input=False):
    """Worst angle (degrees) between a unit vector and its octahedral decoding, by a seeded search.

    ``encode((N, 3) float64) -> (N,) codes`` and ``decode(codes) -> (N, 3)``. ``n_random``
    defaults to 200 000 up to 12 bits and 50 000 above. With ``return_input=True`` returns
    ``(angle, worst_input)``.
    """
    bits = int(bits)
    if n_random is None:
        n_random = 200_000 if bits <= 12 else 50_000
    rng = np.random.default_rng([int(seed), bits, 2, 3])
    step = ref.bounded_step(-1.0, 1.0, bits, "endpoints")
    if rounds is None:
        rounds = _rounds_for(step)

    def measure(x):
        un = _unit3(x)
        v = np.asarray(decode(encode(x)), dtype=np.float64)
        return unitvec_angle_deg(un, v)

    tracker = _Tracker(keep, 3)
    rnd = rng.standard_normal((n_random, 3))
    _evaluate(rnd / _norm3(rnd)[:, None], measure, tracker)
    _evaluate(_unitvec_structured(bits), measure, tracker)
    _refine(tracker, measure, rng, 3, 2.0 * step, rounds, children)
    if return_input:
        return tracker.worst, tracker.x[0].copy()
    return tracker.worst


# ----------------------------------------------------------------------------------------------
# table generation: python tools/search.py --write
# ----------------------------------------------------------------------------------------------

QUAT_BITS = range(2, 21)
UNITVEC_BITS = range(2, 33)


def _quat_job(args):
    mode, bits = args
    enc, dec = quat_reference_codec(bits, mode)
    return ("quat", mode, bits), quat_worst_angle(bits, mode, enc, dec, seed=0)


def _unitvec_job(bits):
    enc, dec = unitvec_reference_codec(bits)
    return ("unitvec", None, bits), unitvec_worst_angle(bits, enc, dec, seed=0)


def _run(job):
    kind, a = job
    return _quat_job(a) if kind == "quat" else _unitvec_job(a)


def generate_tables(jobs=1, progress=None):
    """Run every search with the reference rules; returns ``(quat_table, unitvec_table)``."""
    work = [("quat", (m, b)) for m in QUAT_MODES for b in QUAT_BITS]
    work += [("unitvec", b) for b in UNITVEC_BITS]
    results = {}
    if jobs > 1:
        from concurrent.futures import ProcessPoolExecutor
        with ProcessPoolExecutor(max_workers=jobs) as ex:
            for key, val in ex.map(_run, work):
                results[key] = val
                if progress:
                    progress(key, val)
    else:
        for job in work:
            key, val = _run(job)
            results[key] = val
            if progress:
                progress(key, val)
    quat = {(m, b): results[("quat", m, b)] for m in QUAT_MODES for b in QUAT_BITS}
    unit = {b: results[("unitvec", None, b)] for b in UNITVEC_BITS}
    return quat, unit


_HEADER = '''"""Worst-case angular errors of Quat and UnitVector, in degrees.

GENERATED FILE - do not edit. Written by ``python tools/search.py --write``, which
runs the seeded worst-case search of ``tools/search.py`` (seed 0) on the reference
rules of ``quantcodec/_reference.py``. ``Quat.max_error`` and ``UnitVector.max_error`` read
these tables.

QUAT_MAX_ERROR[(mode, bits)]: worst rotation angle of smallest three, mode "endpoints", "bins" or "midpoint",
bits 2..20 per component. UNITVEC_MAX_ERROR[bits]: worst angle between a unit vector and its
octahedral decoding, bits 2..32 per coordinate.
"""

'''


def format_tables(quat, unit):
    lines = [_HEADER, "QUAT_MAX_ERROR = {\n"]
    for (mode, bits), v in sorted(quat.items()):
        lines.append(f"    (\"{mode}\", {bits}): {v!r},\n")
    lines.append("}\n\nUNITVEC_MAX_ERROR = {\n")
    for bits, v in sorted(unit.items()):
        lines.append(f"    {bits}: {v!r},\n")
    lines.append("}\n")
    return "".join(lines)


def main(argv=None):
    import argparse
    import time

    ap = argparse.ArgumentParser(prog="python tools/search.py",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="regenerate quantcodec/_maxerr.py")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default 1; the figures do not depend on it)")
    ap.add_argument("--quat", type=int, metavar="BITS", help="run one Quat search and print it")
    ap.add_argument("--mode", default="endpoints", choices=QUAT_MODES)
    ap.add_argument("--unitvec", type=int, metavar="BITS", help="run one UnitVector search and print it")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    if args.quat is not None:
        enc, dec = quat_reference_codec(args.quat, args.mode)
        a, q = quat_worst_angle(args.quat, args.mode, enc, dec, seed=args.seed, return_input=True)
        print(f"Quat({args.quat}, mode={args.mode!r}): {a!r} deg at {q.tolist()}")
    if args.unitvec is not None:
        enc, dec = unitvec_reference_codec(args.unitvec)
        a, v = unitvec_worst_angle(args.unitvec, enc, dec, seed=args.seed, return_input=True)
        print(f"UnitVector({args.unitvec}): {a!r} deg at {v.tolist()}")
    if args.write:
        t0 = time.perf_counter()

        def progress(key, val):
            print(f"{key[0]:8s} {key[1] or '':9s} {key[2]:2d} bits: {val:.9g} deg", file=sys.stderr)

        quat, unit = generate_tables(args.jobs, progress)
        repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        path = os.path.join(repo, "quantcodec", "_maxerr.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(format_tables(quat, unit))
        print(f"wrote {path} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    if not (args.write or args.quat is not None or args.unitvec is not None):
        ap.print_help()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
