"""Gaffer On Games' bit-packed snapshot compression, re-implemented as a yardstick.

quantcodec's snapshot delta coder is measured against this on the same quantized data in the same
run. Sources, read for this file:

- [A] Glenn Fiedler, "Snapshot Compression", gafferongames.com, 4 January 2015 (Networked Physics
  series; the markdown of the post in mas-bandwidth/gafferongames, content/post/snapshot_compression.md).
- [S] Glenn Fiedler, "Delta Compression" source of "The Networked Physics Data Compression
  Challenge" (gafferongames.com, 14 March 2015; public domain): the code behind [A]'s result, with
  its own printout at the end: 901 cubes, 2837 frames, baseline 6 frames (100 ms) old,
  "average bytes per-packet: 531.951960", "average kilobits per-second: 255.336941",
  "compression ratio: 1.48% of original size".

What [A] reports, in order: 901 cubes at 60 Hz sent raw cost 17.37 Mbit/s (321 bits a cube:
quaternion 128, linear velocity 96, position 96, "interacting" 1). Smallest three at 9 bits a
component: 29 bits an orientation. Velocity is dropped at 60 Hz (linear interpolation is enough).
Position bounded and quantized at 512 values per metre (about 2 mm): 18 + 18 + 14 = 50 bits. "This
reduces our cube state to 80 bits, or just 10 bytes per-cube." Delta compression against the last
acked baseline: one "not changed" bit per cube; all cubes at rest then cost about 15 kbit/s, the
packet header (uint16 sequence, uint16 base, bool initial) plus IP/UDP. Relative index coding
averaged 5.5 bits an index; relative position 26.1 bits a changed position; relative smallest three
23.3 bits (80.3% of absolute); about 5% of changed cubes keep their position and 5% their
orientation, hence one changed bit for each. End result: "We just took 20mbit down to less than
0.25mbit on average" (the 256 kbit/s target), and Fabian Giesen's arithmetic coder beat the best
bit-packed result by 25%.

Two variants, chosen with ``GafferScheme(variant=...)``. Both work on already-quantized integer
codes (:class:`GafferCodes`: positions as grid coordinates, orientations as (largest index, a, b, c),
one flag bit per cube) and share the packet header and the full (no baseline) path.

Header (both): uint16 sequence, uint16 baseline sequence, bool initial = 33 bits, as [A] lists it
(``header=False`` leaves it out). ``initial`` = 1 means "no baseline: full state follows", [A]'s
second option ("send down the initial state using a non-delta encoded path"); every cube is then
written whole: flag, absolute position, absolute smallest three ([A]'s 80-bit cube; here
1 + sum(pos_bits) + 2 + 3 * quat_bits).

The per-cube flag is the 1-bit ``interacting`` of [A]'s final cube state; this bench fills it with
the scene's "at rest" flag (Gaffer's earlier "at rest" bit guarded the velocity, which [A] then
stopped sending). A cube is "changed" when any of its codes differ from the baseline, as in [S]'s
``QuantizedCubeState::operator==``. Cubes are identified by their index (row) only: Gaffer's world
has a fixed set of cubes, so entities appearing or disappearing are outside the scheme.

variant="article" (default): [A]'s final scheme, exactly as the article describes it
    - one bit for the encoding of the changed set: 0 = indices, 1 = a changed bit per cube ([A]:
      "send a single bit in the header indicating which encoding we are using: 0 = indexing,
      1 = changed bits").
    - indices: the number of changed cubes in [0, N] (ceil(log2(N + 1)) bits: [A] does not say
      how the list ends; a count lets "nothing changed" cost only the header, which is what [A]'s
      15 kbit/s at rest implies), the first index absolute (ceil(log2 N) bits, 10 for 901), then
      each next index relative to the previous one in [A]'s classes: [1, 8] -> 1 + 3 bits,
      [9, 40] -> 1 + 1 + 5 bits, [41, N-1] -> 1 + 1 + (index bits) ([A]: "[41,900] => 1 + 1 + 10").
      Each index is followed by its cube, as in [S].
    - the choice: a mock count of the index bits; "If the number of bits required is larger than
      901 [N], fallback to changed bits."
    - per changed cube: the flag bit; a position-changed bit; an orientation-changed bit ([A]'s last
      "small win").
    - changed position: one bit relative/absolute; relative when every component delta fits the
      large range: per component "1 bit small per delta component followed by 5 bits if small
      [-16,+15] range, otherwise the delta component is in [-256,+255] range and is sent with 9
      bits. If any component delta values are outside the large range, fallback to absolute
      position."
    - changed orientation: one bit relative/absolute; relative when the largest index is the
      baseline's and every component delta fits the large range: per component a small bit and
      "5-8, meaning [-16,+15] small and [-128,+127] large"; else absolute smallest three. [A]
      leaves extending the large range past the small one "as an exercise for the reader"; this
      implementation does not (the literal ranges above, for position too).
    - ranges are parameters (``index_classes``, ``position_classes``, ``orientation_classes``).

variant="challenge": the coding of [S], transcribed function by function
    - ``use_indices`` bit; the count in [1, 256] (8 bits); first index absolute; relative indices in
      the classes +1 -> 1 bit, [2,6] -> 1+1+3, [7,14] -> 1+1+1+3, [15,30] -> ...+4, [31,62] -> +5,
      [63,126] -> +6, [127, N-1] -> 6 flag bits + bits_required(127, N-1) (10 for 901). Indices
      are used when 1 <= changed <= 256 and ``count_relative_index_bits`` <= N; as in [S] that
      counter charges [2,6] as 4 bits where 5 are written and [127, N-1] as 17 where 16 are, and
      nothing changed costs N zero bits.
      ([S] hard-codes 10 bits for the first index and the last class, right for 901 cubes; here
      the counter uses the real widths for N.)
    - per changed cube: ``interacting`` bit, position-changed bit, then the position relative to a
      prediction: ``estimate = base + base_d - ceil(base_d * 0.062f)`` per axis, and on the up axis
      ``max(base + base_d - gravity + drag, ground_limit)``, where ``base_d`` is the baseline minus
      the baseline's own baseline (pass ``prev_baseline``; without it ``base_d`` is 0) and gravity 3
      and ground_limit 105 are [S]'s constants in grid units. The zigzagged deltas: all <= 15 ->
      1 + 3 x 4 bits; else a too-large bit, then per component the ranges {5, 6, 7} bits
      ([0,31], [32,95], [96,223]) or, if too large, 11 bits each (a delta beyond +-1024 units
      cannot be sent: ``ValueError``).
    - orientation always follows (no changed bit): relative when the largest index matches and every
      zigzagged delta < 176: 1 + all-small bit + 3 x 2 bits if all <= 3, else ranges {4, 5, 7}
      ([0,15], [16,47], [48,175]); otherwise absolute 2 + 3 x bits.

Resolution is a parameter (``pos_bits``, ``quat_bits``). For a fair comparison the bench uses the
scene schema's own (``quantcodec.tools.scene.scene_schema_fields``): x, z in [-64, 64] with 16 bits and y
in [0, 32] with 14 bits, a 1.95 mm step, which is [A]'s 512 values per metre, and 9-bit smallest
three, [A]'s choice. The delta classes count grid steps, so they mean the same as in [A].

Both variants have a writer (LSB-first bit writer of this file) and a decoder, and
:meth:`GafferScheme.packet_bits` counts the same bits with NumPy without writing them; the tests
check that the three agree and that every packet decodes to the exact codes.

Run ``python -m bench.gaffer`` from the repository root for the report on the bench scene.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple, Optional, Sequence, Tuple

import numpy as np

__all__ = [
    "GafferCodes",
    "GafferScheme",
    "GafferDecodeError",
    "BitWriter",
    "BitReader",
    "gaffer_packet_bits",
    "quantize_positions",
    "quantize_orientations",
    "scene_codes",
    "scene_scheme",
    "run",
    "main",
]

_SQRT1_2 = 1.0 / math.sqrt(2.0)

# Class tables: (lo, hi, payload bits). A value is written as "1" + (value - lo) in the first class
# whose [lo, hi] holds it, after a "0" for every class passed over; the last class has no flag bit.
Classes = Tuple[Tuple[int, int, int], ...]

ARTICLE_POSITION_CLASSES: Classes = ((-16, 15, 5), (-256, 255, 9))
ARTICLE_ORIENTATION_CLASSES: Classes = ((-16, 15, 5), (-128, 127, 8))
ARTICLE_INDEX_CLASSES: Tuple[Tuple[int, int], ...] = ((1, 3), (9, 5))   # + last class [41, N-1]


class GafferDecodeError(ValueError):
    """A packet that cannot be decoded: too short, trailing data, or codes out of range."""


# --------------------------------------------------------------------------------------------
# bits


class BitWriter:
    """LSB-first bit writer: the first bit written is bit 0 of byte 0 (quantcodec's order)."""

    __slots__ = ("_buf", "_scratch", "_n", "bit_length")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._scratch = 0
        self._n = 0
        self.bit_length = 0

    def write(self, value: int, bits: int) -> None:
        value = int(value)
        if bits < 0 or value < 0 or value >> bits:
            raise ValueError(f"value {value} does not fit in {bits} bits")
        if not bits:
            return
        self._scratch |= value << self._n
        self._n += bits
        self.bit_length += bits
        while self._n >= 8:
            self._buf.append(self._scratch & 0xFF)
            self._scratch >>= 8
            self._n -= 8

    def write_bool(self, flag: bool) -> None:
        self.write(1 if flag else 0, 1)

    def getvalue(self) -> bytes:
        tail = bytes([self._scratch]) if self._n else b""
        return bytes(self._buf) + tail


class BitReader:
    """Reads what :class:`BitWriter` wrote."""

    __slots__ = ("_data", "_pos", "_total")

    def __init__(self, data) -> None:
        self._data = bytes(data)
        self._pos = 0
        self._total = 8 * len(self._data)

    @property
    def bit_position(self) -> int:
        return self._pos

    def read(self, bits: int) -> int:
        if not bits:
            return 0
        pos = self._pos
        if pos + bits > self._total:
            raise GafferDecodeError(
                f"read of {bits} bits at bit {pos} runs past the end ({self._total} bits)")
        chunk = int.from_bytes(self._data[pos >> 3:(pos + bits + 7) >> 3], "little")
        self._pos = pos + bits
        return (chunk >> (pos & 7)) & ((1 << bits) - 1)

    def read_bool(self) -> bool:
        return bool(self.read(1))

    def finish(self) -> None:
        left = self._total - self._pos
        if left >= 8 or (left and self.read(left)):
            raise GafferDecodeError(f"{left} bits left after the packet at bit {self._pos - left}")


def _bits_required(lo: int, hi: int) -> int:
    """[S]'s bits_required(min, max): bits to send an integer in [lo, hi]."""
    return (hi - lo).bit_length() if hi > lo else 0


def _write_classes(w: BitWriter, value: int, classes: Classes) -> None:
    last = len(classes) - 1
    for k, (lo, hi, bits) in enumerate(classes):
        if k == last:
            if not lo <= value <= hi:
                raise ValueError(f"value {value} outside every class of {classes}")
            w.write(value - lo, bits)
            return
        inside = lo <= value <= hi
        w.write_bool(inside)
        if inside:
            w.write(value - lo, bits)
            return


def _read_classes(r: BitReader, classes: Classes) -> int:
    last = len(classes) - 1
    for k, (lo, hi, bits) in enumerate(classes):
        if k == last or r.read_bool():
            value = r.read(bits) + lo
            if value > hi:
                raise GafferDecodeError(f"class value {value} above {hi} at bit {r.bit_position}")
            return value
    raise AssertionError("unreachable")


def _class_cost(values: np.ndarray, classes: Classes) -> np.ndarray:
    """Bits ``_write_classes`` takes for each value (values must lie in some class)."""
    conds, costs = [], []
    last = len(classes) - 1
    for k, (lo, hi, bits) in enumerate(classes):
        if k == last:
            default = k + bits
        else:
            conds.append((values >= lo) & (values <= hi))
            costs.append(k + 1 + bits)
    if not conds:
        return np.full(values.shape, default, dtype=np.int64)
    return np.select(conds, costs, default=default).astype(np.int64)


def _in_classes(values: np.ndarray, classes: Classes) -> np.ndarray:
    ok = np.zeros(values.shape, dtype=bool)
    for lo, hi, _ in classes:
        ok |= (values >= lo) & (values <= hi)
    return ok


def _fits(value: int, classes: Classes) -> bool:
    return any(lo <= value <= hi for lo, hi, _ in classes)


def _zigzag(d):
    """[S]'s signed_to_unsigned: 0, -1, 1, -2, ... -> 0, 1, 2, 3, ..."""
    if isinstance(d, np.ndarray):
        return np.where(d >= 0, 2 * d, -2 * d - 1)
    return 2 * d if d >= 0 else -2 * d - 1


def _unzigzag(u: int) -> int:
    return (u >> 1) ^ -(u & 1)


# --------------------------------------------------------------------------------------------
# codes


class GafferCodes(NamedTuple):
    """Quantized state of every cube, one row per cube (the index is the cube's identity)."""

    position: np.ndarray     # (N, 3) int64 grid coordinates, 0 <= code < 2**pos_bits[axis]
    orientation: np.ndarray  # (N, 4) int64: largest index 0..3, then a, b, c
    flag: np.ndarray         # (N,) bool: at rest ([A]'s 1-bit "interacting" slot)

    @classmethod
    def make(cls, position, orientation, flag=None) -> "GafferCodes":
        position = np.asarray(position, dtype=np.int64).reshape(-1, 3)
        orientation = np.asarray(orientation, dtype=np.int64).reshape(-1, 4)
        if flag is None:
            flag = np.zeros(len(position), dtype=bool)
        flag = np.asarray(flag, dtype=bool).reshape(-1)
        if not len(position) == len(orientation) == len(flag):
            raise ValueError(f"row counts differ: {len(position)}, {len(orientation)}, {len(flag)}")
        return cls(position, orientation, flag)

    def equals(self, other: "GafferCodes") -> bool:
        return (np.array_equal(self.position, other.position)
                and np.array_equal(self.orientation, other.orientation)
                and np.array_equal(self.flag, other.flag))


def quantize_positions(positions, bounds: Sequence[Tuple[float, float]],
                       bits: Sequence[int]) -> np.ndarray:
    """SPEC Bounded(min, max, bits), mode "endpoints", per axis: (N, 3) -> (N, 3) int64 codes."""
    p = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    out = np.empty(p.shape, dtype=np.int64)
    for axis in range(3):
        lo, hi = bounds[axis]
        levels = (1 << bits[axis]) - 1
        t = np.clip((p[:, axis] - lo) / (hi - lo), 0.0, 1.0)
        t = np.where(np.isnan(t), 0.0, t)
        out[:, axis] = np.floor(t * levels + 0.5).astype(np.int64)
    return out


def quantize_orientations(orientations, bits: int) -> np.ndarray:
    """SPEC Quat(bits), mode "endpoints": (N, 4) x, y, z, w -> (N, 4) int64 (largest, a, b, c)."""
    q = np.asarray(orientations, dtype=np.float64).reshape(-1, 4)
    norm = np.sqrt((q * q).sum(axis=1))
    if not np.all(np.isfinite(norm) & (norm > 0.0)):
        bad = int(np.flatnonzero(~(np.isfinite(norm) & (norm > 0.0)))[0])
        raise ValueError(f"row {bad}: zero or non-finite quaternion")
    q = q / norm[:, None]
    largest = np.argmax(np.abs(q), axis=1)          # first one on a tie
    rows = np.arange(len(q))
    sign = np.where(q[rows, largest] < 0.0, -1.0, 1.0)
    q = q * sign[:, None]
    keep = np.array([[1, 2, 3], [0, 2, 3], [0, 1, 3], [0, 1, 2]])[largest]
    kept = np.take_along_axis(q, keep, axis=1)
    levels = (1 << bits) - 1
    t = np.clip((kept + _SQRT1_2) / (2.0 * _SQRT1_2), 0.0, 1.0)
    out = np.empty((len(q), 4), dtype=np.int64)
    out[:, 0] = largest
    out[:, 1:] = np.floor(t * levels + 0.5).astype(np.int64)
    return out


# --------------------------------------------------------------------------------------------
# the scheme


@dataclass(frozen=True)
class GafferScheme:
    """One configuration of Gaffer's packet format for a world of ``n_cubes`` cubes."""

    n_cubes: int
    pos_bits: Tuple[int, int, int] = (16, 14, 16)
    quat_bits: int = 9
    variant: str = "article"
    header: bool = True
    # article ranges
    index_classes: Tuple[Tuple[int, int], ...] = ARTICLE_INDEX_CLASSES
    position_classes: Classes = ARTICLE_POSITION_CLASSES
    orientation_classes: Classes = ARTICLE_ORIENTATION_CLASSES
    # challenge prediction constants, in grid units as in [S]
    up_axis: int = 1
    gravity: int = 3
    ground_limit: int = 105
    drag: float = 0.062

    # derived tables (not parameters)
    _idx_classes: Classes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        n = int(self.n_cubes)
        if n < 1:
            raise ValueError(f"n_cubes must be at least 1, got {self.n_cubes}")
        if self.variant not in ("article", "challenge"):
            raise ValueError(f"variant must be 'article' or 'challenge', got {self.variant!r}")
        if len(self.pos_bits) != 3 or not all(1 <= b <= 32 for b in self.pos_bits):
            raise ValueError(f"pos_bits must be three widths in 1..32, got {self.pos_bits}")
        if not 2 <= self.quat_bits <= 20:
            raise ValueError(f"quat_bits must be in 2..20, got {self.quat_bits}")
        object.__setattr__(self, "pos_bits", tuple(int(b) for b in self.pos_bits))
        if self.variant == "article":
            classes, lo = [], 1
            for first, bits in self.index_classes:
                if first != lo:
                    raise ValueError(
                        f"index classes must be contiguous from 1, got {self.index_classes}")
                classes.append((lo, lo + (1 << bits) - 1, bits))
                lo += 1 << bits
            classes.append((lo, max(lo, n - 1), self.index_bits))
        else:
            classes = [(1, 1, 0), (2, 6, 3), (7, 14, 3), (15, 30, 4), (31, 62, 5), (63, 126, 6),
                       (127, max(127, n - 1), _bits_required(127, n - 1))]
        object.__setattr__(self, "_idx_classes", tuple(classes))

    # -- sizes --------------------------------------------------------------------------------

    @property
    def index_bits(self) -> int:
        """Bits of an absolute cube index in [0, N-1]."""
        return _bits_required(0, self.n_cubes - 1)

    @property
    def header_bits(self) -> int:
        return 33 if self.header else 0

    @property
    def cube_bits(self) -> int:
        """One cube written whole: flag, absolute position, absolute smallest three."""
        return 1 + sum(self.pos_bits) + 2 + 3 * self.quat_bits

    @property
    def full_packet_bits(self) -> int:
        """A packet with no baseline: the header and every cube whole."""
        return self.header_bits + self.n_cubes * self.cube_bits

    def _check(self, codes: GafferCodes, what: str) -> GafferCodes:
        if not isinstance(codes, GafferCodes):
            codes = GafferCodes.make(*codes)
        if len(codes.position) != self.n_cubes:
            raise ValueError(f"{what}: {len(codes.position)} cubes, the scheme has {self.n_cubes}")
        return codes

    # -- counting (NumPy, no writing) ----------------------------------------------------------

    def packet_bits(self, baseline: Optional[GafferCodes], current: GafferCodes,
                    prev_baseline: Optional[GafferCodes] = None) -> int:
        """Bits of the packet that sends ``current`` against ``baseline`` (None: full state)."""
        current = self._check(current, "current")
        if baseline is None:
            return self.full_packet_bits
        baseline = self._check(baseline, "baseline")
        changed, cube_cost = self._cube_costs(baseline, current, prev_baseline)
        idx = np.flatnonzero(changed)
        use_indices, index_cost = self._choose(idx)
        set_cost = index_cost if use_indices else self.n_cubes
        return int(self.header_bits + 1 + set_cost + cube_cost[idx].sum())

    def changed_mask(self, baseline: GafferCodes, current: GafferCodes) -> np.ndarray:
        return (np.any(current.position != baseline.position, axis=1)
                | np.any(current.orientation != baseline.orientation, axis=1)
                | (current.flag != baseline.flag))

    def _choose(self, idx: np.ndarray) -> Tuple[bool, int]:
        """(use indices?, bits of the index encoding as written)."""
        n, count = self.n_cubes, len(idx)
        gaps = np.diff(idx)
        written = _class_cost(gaps, self._idx_classes).sum() if count > 1 else 0
        if self.variant == "article":
            bits = _bits_required(0, n) + (self.index_bits + int(written) if count else 0)
            return bits <= n, bits
        if count == 0 or count > 256:
            return False, 0
        bits = 8 + self.index_bits + int(written)
        # [S]'s count_relative_index_bits charges [2,6] one bit less and [127, N-1] one bit more
        # than serialize_relative_index writes; the choice follows the counter, as in [S]
        counted = (bits - int(np.count_nonzero((gaps >= 2) & (gaps <= 6)))
                   + int(np.count_nonzero(gaps >= 127)))
        return counted <= n, bits

    def _estimate(self, baseline: GafferCodes, prev_baseline: Optional[GafferCodes]) -> np.ndarray:
        base = baseline.position
        if prev_baseline is None:
            base_d = np.zeros_like(base)
        else:
            base_d = base - self._check(prev_baseline, "prev_baseline").position
        drag = -np.ceil(base_d.astype(np.float32) * np.float32(self.drag)).astype(np.int64)
        est = base + base_d + drag
        up = self.up_axis
        est[:, up] = np.maximum(base[:, up] + base_d[:, up] - self.gravity + drag[:, up],
                                self.ground_limit)
        return est

    def _cube_costs(self, baseline, current, prev_baseline) -> Tuple[np.ndarray, np.ndarray]:
        changed = self.changed_mask(baseline, current)
        pos_changed = np.any(current.position != baseline.position, axis=1)
        qa, qb = current.orientation, baseline.orientation
        same_largest = qa[:, 0] == qb[:, 0]
        dq = qa[:, 1:] - qb[:, 1:]
        abs_pos, abs_quat = sum(self.pos_bits), 2 + 3 * self.quat_bits
        if self.variant == "article":
            dp = current.position - baseline.position
            prel = np.all(_in_classes(dp, self.position_classes), axis=1)
            prel_cost = _class_cost(np.where(prel[:, None], dp, 0), self.position_classes).sum(axis=1)
            pos_cost = 1 + np.where(pos_changed, 1 + np.where(prel, prel_cost, abs_pos), 0)
            q_changed = np.any(qa != qb, axis=1)
            qrel = same_largest & np.all(_in_classes(dq, self.orientation_classes), axis=1)
            qrel_cost = _class_cost(np.where(qrel[:, None], dq, 0), self.orientation_classes).sum(axis=1)
            q_cost = 1 + np.where(q_changed, 1 + np.where(qrel, qrel_cost, abs_quat), 0)
            return changed, 1 + pos_cost + q_cost
        # challenge
        u = _zigzag(current.position - self._estimate(baseline, prev_baseline))
        too_far = pos_changed & np.any(u > 2047, axis=1)
        if too_far.any():
            raise ValueError(f"cube {int(np.flatnonzero(too_far)[0])}: position delta beyond the "
                             "challenge coder's 11-bit range (+-1024 grid units)")
        all_small = np.all(u <= 15, axis=1)
        too_large = np.any(u >= 224, axis=1)
        ranged = _class_cost(np.minimum(u, 223), _RANGES_567).sum(axis=1)
        rel = np.where(all_small, 1 + 12, 1 + 1 + np.where(too_large, 33, ranged))
        pos_cost = 1 + np.where(pos_changed, rel, 0)
        uq = _zigzag(dq)
        qrel = same_largest & np.all(uq < 176, axis=1)
        q_small = np.all(uq <= 3, axis=1)
        q_ranged = _class_cost(np.minimum(uq, 175), _RANGES_457).sum(axis=1)
        q_cost = 1 + np.where(qrel, 1 + np.where(q_small, 6, q_ranged), abs_quat)
        return changed, 1 + pos_cost + q_cost

    # -- writing ------------------------------------------------------------------------------

    def encode(self, baseline: Optional[GafferCodes], current: GafferCodes,
               prev_baseline: Optional[GafferCodes] = None, seq: int = 0,
               base_seq: int = 0) -> Tuple[bytes, int]:
        """Write the packet; returns ``(data, bit_length)``."""
        current = self._check(current, "current")
        w = BitWriter()
        if self.header:
            w.write(seq & 0xFFFF, 16)
            w.write(base_seq & 0xFFFF, 16)
            w.write_bool(baseline is None)
        if baseline is None:
            for i in range(self.n_cubes):
                self._write_full_cube(w, current, i)
            return w.getvalue(), w.bit_length
        baseline = self._check(baseline, "baseline")
        est = self._estimate(baseline, prev_baseline) if self.variant == "challenge" else None
        idx = np.flatnonzero(self.changed_mask(baseline, current))
        use_indices, _ = self._choose(idx)
        if self.variant == "article":
            w.write_bool(not use_indices)              # 0 = indexing, 1 = changed bits
        else:
            w.write_bool(use_indices)
        if use_indices:
            if self.variant == "article":
                w.write(len(idx), _bits_required(0, self.n_cubes))
            else:
                w.write(len(idx) - 1, 8)
            prev = -1
            for i in idx.tolist():
                if prev < 0:
                    w.write(i, self.index_bits)
                else:
                    _write_classes(w, i - prev, self._idx_classes)
                self._write_cube(w, baseline, current, est, i)
                prev = i
        else:
            changed = np.zeros(self.n_cubes, dtype=bool)
            changed[idx] = True
            for i in range(self.n_cubes):
                w.write_bool(changed[i])
                if changed[i]:
                    self._write_cube(w, baseline, current, est, i)
        return w.getvalue(), w.bit_length

    def _write_full_cube(self, w: BitWriter, cur: GafferCodes, i: int) -> None:
        w.write_bool(cur.flag[i])
        for axis in range(3):
            w.write(cur.position[i, axis], self.pos_bits[axis])
        self._write_quat(w, cur.orientation[i])

    def _write_quat(self, w: BitWriter, q) -> None:
        w.write(q[0], 2)
        for k in range(1, 4):
            w.write(q[k], self.quat_bits)

    def _write_cube(self, w: BitWriter, base: GafferCodes, cur: GafferCodes, est, i: int) -> None:
        w.write_bool(cur.flag[i])
        p, bp = cur.position[i].tolist(), base.position[i].tolist()
        q, bq = cur.orientation[i].tolist(), base.orientation[i].tolist()
        pos_changed = p != bp
        w.write_bool(pos_changed)
        if self.variant == "article":
            if pos_changed:
                d = [p[k] - bp[k] for k in range(3)]
                rel = all(_fits(v, self.position_classes) for v in d)
                w.write_bool(rel)
                if rel:
                    for v in d:
                        _write_classes(w, v, self.position_classes)
                else:
                    for axis in range(3):
                        w.write(p[axis], self.pos_bits[axis])
            q_changed = q != bq
            w.write_bool(q_changed)
            if q_changed:
                d = [q[k] - bq[k] for k in range(1, 4)]
                rel = q[0] == bq[0] and all(_fits(v, self.orientation_classes) for v in d)
                w.write_bool(rel)
                if rel:
                    for v in d:
                        _write_classes(w, v, self.orientation_classes)
                else:
                    self._write_quat(w, q)
            return
        # challenge
        if pos_changed:
            u = [_zigzag(p[k] - int(est[i, k])) for k in range(3)]
            if max(u) > 2047:
                raise ValueError(f"cube {i}: position delta beyond the challenge coder's 11-bit range")
            all_small = max(u) <= 15
            w.write_bool(all_small)
            if all_small:
                for v in u:
                    w.write(v, 4)
            else:
                too_large = max(u) >= 224
                w.write_bool(too_large)
                for v in u:
                    if too_large:
                        w.write(v, 11)
                    else:
                        _write_classes(w, v, _RANGES_567)
        d = [_zigzag(q[k] - bq[k]) for k in range(1, 4)]
        rel = q[0] == bq[0] and max(d) < 176
        w.write_bool(rel)
        if rel:
            small = max(d) <= 3
            w.write_bool(small)
            for v in d:
                if small:
                    w.write(v, 2)
                else:
                    _write_classes(w, v, _RANGES_457)
        else:
            self._write_quat(w, q)

    # -- reading ------------------------------------------------------------------------------

    def decode(self, data, baseline: Optional[GafferCodes],
               prev_baseline: Optional[GafferCodes] = None) -> Tuple[GafferCodes, int, int]:
        """Read a packet written by :meth:`encode`: ``(codes, seq, base_seq)``.

        ``baseline`` must be the codes the packet was written against (None for a full packet;
        with ``header=True`` the initial bit says which, and a mismatch raises).
        """
        r = BitReader(data)
        seq = base_seq = 0
        n = self.n_cubes
        if self.header:
            seq, base_seq = r.read(16), r.read(16)
            initial = r.read_bool()
            if initial != (baseline is None):
                state = "missing" if baseline is None else "given"
                raise GafferDecodeError(f"initial bit {int(initial)} but baseline {state}")
        pos = np.zeros((n, 3), dtype=np.int64)
        quat = np.zeros((n, 4), dtype=np.int64)
        flag = np.zeros(n, dtype=bool)
        if baseline is None:
            for i in range(n):
                flag[i] = r.read_bool()
                for axis in range(3):
                    pos[i, axis] = r.read(self.pos_bits[axis])
                quat[i] = self._read_quat(r)
        else:
            baseline = self._check(baseline, "baseline")
            est = self._estimate(baseline, prev_baseline) if self.variant == "challenge" else None
            pos[:] = baseline.position
            quat[:] = baseline.orientation
            flag[:] = baseline.flag
            bit = r.read_bool()
            use_indices = (not bit) if self.variant == "article" else bit
            if use_indices:
                if self.variant == "article":
                    count = r.read(_bits_required(0, n))
                else:
                    count = r.read(8) + 1
                i = -1
                for k in range(count):
                    i = r.read(self.index_bits) if k == 0 else i + _read_classes(r, self._idx_classes)
                    if i >= n:
                        raise GafferDecodeError(f"cube index {i} out of range 0..{n - 1}")
                    self._read_cube(r, baseline, est, i, pos, quat, flag)
            else:
                for i in range(n):
                    if r.read_bool():
                        self._read_cube(r, baseline, est, i, pos, quat, flag)
        r.finish()
        for axis in range(3):
            if pos[:, axis].min() < 0 or pos[:, axis].max() >> self.pos_bits[axis]:
                raise GafferDecodeError(f"position axis {axis} out of range")
        if quat[:, 1:].min() < 0 or quat[:, 1:].max() >> self.quat_bits:
            raise GafferDecodeError("orientation component out of range")
        return GafferCodes(pos, quat, flag), seq, base_seq

    def _read_quat(self, r: BitReader) -> list:
        return [r.read(2)] + [r.read(self.quat_bits) for _ in range(3)]

    def _read_cube(self, r, base, est, i, pos, quat, flag) -> None:
        flag[i] = r.read_bool()
        if self.variant == "article":
            if r.read_bool():
                if r.read_bool():
                    for axis in range(3):
                        pos[i, axis] = base.position[i, axis] + _read_classes(r, self.position_classes)
                else:
                    for axis in range(3):
                        pos[i, axis] = r.read(self.pos_bits[axis])
            if r.read_bool():
                if r.read_bool():
                    quat[i, 0] = base.orientation[i, 0]
                    for k in range(1, 4):
                        quat[i, k] = base.orientation[i, k] + _read_classes(r, self.orientation_classes)
                else:
                    quat[i] = self._read_quat(r)
            return
        if r.read_bool():
            if r.read_bool():
                u = [r.read(4) for _ in range(3)]
            elif r.read_bool():
                u = [r.read(11) for _ in range(3)]
            else:
                u = [_read_classes(r, _RANGES_567) for _ in range(3)]
            for axis in range(3):
                pos[i, axis] = int(est[i, axis]) + _unzigzag(u[axis])
        if r.read_bool():
            if r.read_bool():
                d = [r.read(2) for _ in range(3)]
            else:
                d = [_read_classes(r, _RANGES_457) for _ in range(3)]
            quat[i, 0] = base.orientation[i, 0]
            for k in range(3):
                quat[i, k + 1] = base.orientation[i, k + 1] + _unzigzag(d[k])
        else:
            quat[i] = self._read_quat(r)


# [S]'s serialize_unsigned_range tables: range_bits {5, 6, 7} (position), {4, 5, 7} (orientation)
_RANGES_567: Classes = ((0, 31, 5), (32, 95, 6), (96, 223, 7))
_RANGES_457: Classes = ((0, 15, 4), (16, 47, 5), (48, 175, 7))


def gaffer_packet_bits(baseline_codes: Optional[GafferCodes], current_codes: GafferCodes, *,
                       pos_bits: Tuple[int, int, int] = (16, 14, 16), quat_bits: int = 9,
                       variant: str = "article", header: bool = True,
                       prev_baseline: Optional[GafferCodes] = None) -> int:
    """Bits of one Gaffer packet for the whole scene (see :class:`GafferScheme`)."""
    if not isinstance(current_codes, GafferCodes):
        current_codes = GafferCodes.make(*current_codes)
    scheme = GafferScheme(len(current_codes.position), tuple(pos_bits), quat_bits, variant, header)
    return scheme.packet_bits(baseline_codes, current_codes, prev_baseline)


# --------------------------------------------------------------------------------------------
# the bench scene


def _scene_bounds_bits():
    from quantcodec.tools.scene import scene_schema_fields

    fields = dict(scene_schema_fields())
    comps = fields["position"][1]["codecs"]
    bounds = tuple((c[1]["min"], c[1]["max"]) for c in comps)
    bits = tuple(int(c[1]["bits"]) for c in comps)
    return bounds, bits, int(fields["rotation"][1]["bits"])


def scene_codes(scene, quat_bits: Optional[int] = None) -> list:
    """Quantize every tick of a ``quantcodec.tools.scene.Scene`` with the scene schema's resolution."""
    bounds, bits, qbits = _scene_bounds_bits()
    qbits = qbits if quat_bits is None else quat_bits
    n_ticks, n = scene.positions.shape[:2]
    pos = quantize_positions(scene.positions.reshape(-1, 3), bounds, bits).reshape(n_ticks, n, 3)
    quat = quantize_orientations(scene.orientations.reshape(-1, 4), qbits).reshape(n_ticks, n, 4)
    return [GafferCodes(pos[k], quat[k], scene.at_rest[k].copy()) for k in range(n_ticks)]


def scene_scheme(n_cubes: int, variant: str = "article", quat_bits: Optional[int] = None,
                 header: bool = True) -> GafferScheme:
    """A :class:`GafferScheme` at the scene schema's resolution."""
    _, bits, qbits = _scene_bounds_bits()
    return GafferScheme(n_cubes, bits, qbits if quat_bits is None else quat_bits, variant, header)


def run(scene, lag: int = 6, variant: str = "article", start: int = 0,
        codes: Optional[list] = None) -> dict:
    """Bits of every packet that sends tick k against tick k - lag, for k >= start + lag."""
    codes = scene_codes(scene) if codes is None else codes
    scheme = scene_scheme(scene.n_bodies, variant)
    bits = []
    for k in range(max(lag, start), len(codes)):
        prev = codes[k - 2 * lag] if k - 2 * lag >= 0 else None
        bits.append(scheme.packet_bits(codes[k - lag], codes[k], prev))
    bits = np.asarray(bits, dtype=np.int64)
    per_entity = bits / scene.n_bodies
    return {
        "variant": variant,
        "lag": lag,
        "packets": len(bits),
        "bits_per_packet": float(bits.mean()),
        "bits_per_entity": float(per_entity.mean()),
        "kbit_per_s": float(bits.mean() * scene.hz / 1000.0),
        "full_packet_bits": scheme.full_packet_bits,
        "bits": bits,
    }


def main(argv=None) -> int:
    import argparse
    import time

    from quantcodec.tools.scene import simulate

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bodies", type=int, default=300)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--hz", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lag", type=int, default=6)
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    scene = simulate(args.bodies, args.seconds, args.hz, args.seed)
    t1 = time.perf_counter()
    print(f"scene: {scene.n_bodies} bodies x {scene.n_ticks} ticks simulated in {t1 - t0:.2f} s")
    codes = scene_codes(scene)
    scheme = scene_scheme(scene.n_bodies)
    full = scheme.full_packet_bits
    print(f"full quantized state: {scheme.cube_bits} bits a cube, {full} bits a packet "
          f"({full * scene.hz / 1000:.1f} kbit/s at {scene.hz} Hz)")
    print("share of bodies whose codes changed (vs previous tick | vs lag baseline), bodies awake:")
    for sec in (0.5, 1, 2, 3, 4, 6, 8):
        k = int(round(sec * scene.hz))
        if k >= scene.n_ticks or k < args.lag:
            continue
        c1 = scheme.changed_mask(codes[k - 1], codes[k]).mean()
        c6 = scheme.changed_mask(codes[k - args.lag], codes[k]).mean()
        print(f"  t={sec:4.1f}s  {c1:6.1%} | {c6:6.1%}   awake {1 - scene.at_rest[k].mean():6.1%}")
    for variant in ("article", "challenge"):
        for start, label in ((0, "whole run"), (int(4 * scene.hz), "from 4 s")):
            res = run(scene, args.lag, variant, start, codes)
            print(f"gaffer {variant:9s} lag {args.lag} {label:9s}: "
                  f"{res['bits_per_entity']:6.2f} bits/entity/update, "
                  f"{res['bits_per_packet'] / 8:8.1f} bytes/packet, {res['kbit_per_s']:7.1f} kbit/s")
    return 0


if __name__ == "__main__":
    import os
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if root not in sys.path:
        sys.path.insert(0, root)
    raise SystemExit(main())
