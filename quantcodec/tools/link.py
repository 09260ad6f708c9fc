"""Stream recorded state through snapshot delta compression over a simulated link.

``run_stream(positions, orientations, velocities, ...)`` is the core of ``bench/bench_bandwidth.py``
and of the ``quantcodec demo`` command: it quantizes every tick once, encodes one client's packet
per tick against the newest snapshot the client acknowledged, sends it through a seeded link
(loss, duplication, jitter), decodes it on the client, sends acks back (late by ``ack_delay``
seconds, through the same kind of link), and measures bits per entity per update for raw floats,
full quantized snapshots and delta snapshots, the share of entities that changed, and the worst
errors of the decoded state against the true values. Every decoded state is also checked against
the server's quantized state, code for code.

The link is simulated in ticks, deterministically (one ``random.Random(seed)``), so two runs with
the same arguments give the same numbers.
"""

from __future__ import annotations

import math
import random
from typing import Callable, Dict, Mapping, Optional

import numpy as np

from ..errors import DecodeError

__all__ = ["run_stream", "default_schema", "build_codec"]


def build_codec(spec):
    """A codec from the plain-data form of ``quantcodec.tools.scene.scene_schema_fields``."""
    from .. import _codecs

    kind, kw = spec
    kw = dict(kw)
    if "codecs" in kw:
        return getattr(_codecs, kind)(*[build_codec(c) for c in kw["codecs"]])
    if "inner" in kw:
        kw["inner"] = build_codec(kw["inner"])
    return getattr(_codecs, kind)(**kw)


def default_schema(velocity=True, rest=False, rotation_bits=9, position=None):
    """The scene schema: position (x, z in +-64 m at 16 bits, y in 0..32 m at 14 bits, or
    ``position``: three (min, max, bits)), 9-bit smallest three, optionally a NearlyZero velocity
    and a ``rest`` Bool (Gaffer's "interacting" bit)."""
    from .scene import scene_schema_fields
    from ..schema import Schema
    from .. import _codecs

    fields = [(name, build_codec(spec)) for name, spec in scene_schema_fields(rotation_bits, position)]
    if not velocity:
        fields = [f for f in fields if f[0] != "velocity"]
    if rest:
        fields.append(("rest", _codecs.Bool()))
    return Schema("Scene", fields)


class _Link:
    """A one-way link in ticks: loss, duplication, jitter (extra delay of 0..jitter ticks)."""

    def __init__(self, rng, delay, loss, duplicate, jitter):
        self.rng, self.delay, self.loss, self.duplicate, self.jitter = rng, delay, loss, duplicate, jitter
        self.queue = []
        self.n = 0

    def send(self, now, item):
        r = self.rng
        if r.random() < self.loss:
            return
        copies = 2 if r.random() < self.duplicate else 1
        for _ in range(copies):
            self.n += 1
            extra = r.randint(0, self.jitter) if self.jitter else 0
            self.queue.append((now + self.delay + extra, self.n, item))

    def receive(self, now):
        if not self.queue:
            return []
        ready = sorted(x for x in self.queue if x[0] <= now)
        if ready:
            self.queue = [x for x in self.queue if x[0] > now]
        return [x[2] for x in ready]


def _quat_angle_deg(a, b):
    """Rotation angle in degrees between unit quaternions (rows), q and -q the same."""
    dot = np.abs(np.sum(a * b, axis=-1))
    return np.degrees(2.0 * np.arccos(np.clip(dot, 0.0, 1.0)))


def run_stream(positions, orientations, velocities=None, *, ids=None,
               extra: Optional[Mapping[str, np.ndarray]] = None, schema=None, hz: int = 60,
               loss: float = 0.0, duplicate: float = 0.0, jitter: float = 0.0,
               ack_delay: float = 0.1, seed: int = 0, history: int = 64, predict: bool = True,
               start: int = 0, check: bool = True,
               progress: Optional[Callable[[int, int], None]] = None) -> Dict[str, object]:
    """Stream a recording through snapshot delta compression; returns the measurements.

    ``positions`` (T, N, 3), ``orientations`` (T, N, 4) unit quaternions (x, y, z, w),
    ``velocities`` (T, N, 3) or None; ``ids`` (T, N) or (N,) entity ids (default: the row
    index); ``extra`` more columns by field name, (T, N, ...) each. ``schema`` defaults to
    :func:`default_schema` (with a velocity field when velocities are given, and a ``rest``
    field when ``extra`` has one). ``ack_delay`` is the round trip in seconds: the ack of tick k
    reaches the server ``round(ack_delay * hz)`` ticks after k was sent (packets arrive in the
    tick they are sent, plus ``jitter`` seconds at most); ``loss`` and ``duplicate`` apply to
    packets and acks alike. Sizes of the measured ticks (from ``start``) are averaged.

    Returned keys: ``ticks``, ``entities`` (mean per tick), ``hz``; ``raw_bits``, ``full_bits``,
    ``delta_bits`` (bits per entity per update: raw float32 values, full quantized snapshot
    packets, delta packets), the matching ``*_kbps`` (kbit/s), ``record_bits`` (one schema record,
    the most), ``changed`` (mean share of entities whose codes differ from the packet's
    baseline), ``decoded``, ``lost``, ``undecodable`` (packets whose baseline the client had no
    more), ``full_packets`` (packets sent without a baseline), ``mismatches`` (decoded states that
    differ from the server's quantized state: always 0), ``max_position_error`` (metres),
    ``max_rotation_error`` (degrees), ``max_velocity_error`` (m/s, or None), ``packet_bits``
    (array of the delta packets' sizes), ``schema``.
    """
    from ..snapshot import SnapshotDecoder, SnapshotEncoder

    positions = np.asarray(positions)
    orientations = np.asarray(orientations)
    T, N = positions.shape[:2]
    if positions.shape != (T, N, 3):
        raise ValueError(f"positions must be (T, N, 3), got {positions.shape}")
    if orientations.shape != (T, N, 4):
        raise ValueError(f"orientations must be (T, N, 4), got {orientations.shape}")
    if velocities is not None:
        velocities = np.asarray(velocities)
        if velocities.shape != (T, N, 3):
            raise ValueError(f"velocities must be (T, N, 3), got {velocities.shape}")
    extra = dict(extra or {})
    if ids is None:
        ids = np.arange(N, dtype=np.uint64)
    ids = np.asarray(ids)
    if ids.ndim == 1:
        ids = np.broadcast_to(ids, (T, N))
    if schema is None:
        schema = default_schema(velocity=velocities is not None, rest="rest" in extra)
    names = set(schema.names)
    if not 0 <= start < T:
        raise ValueError(f"start must be in 0..{T - 1}, got {start}")

    def columns(k):
        cols = {"position": positions[k], "rotation": orientations[k]}
        if velocities is not None:
            cols["velocity"] = velocities[k]
        for name, arr in extra.items():
            cols[name] = arr[k]
        return {name: v for name, v in cols.items() if name in names}

    rng = random.Random(seed)
    _CHECK_BITS = 32
    rtt = max(0, int(round(ack_delay * hz)))
    jit = max(0, int(round(jitter * hz)))
    down = _Link(rng, 0, loss, duplicate, jit)
    up = _Link(rng, rtt, loss, duplicate, 0)
    enc = SnapshotEncoder(schema, history=history, predict=predict)
    dec = SnapshotDecoder(schema, history=history)
    full_enc = SnapshotEncoder(schema, history=history)

    sent = {}
    measured = []
    full_bits = []
    changed = []
    counts = {"decoded": 0, "undecodable": 0, "full_packets": 0, "mismatches": 0}
    arrived = set()
    worst = {"position": 0.0, "rotation": 0.0, "velocity": 0.0}
    entities = 0
    for k in range(T):
        seq = k & 0xFFFF
        snap = schema.snapshot(ids[k], columns(k))
        sent[seq] = (k, snap)
        sent.pop((seq - history - 8) & 0xFFFF, None)
        for a in up.receive(k):
            enc.ack(a)
        packet = enc.encode(seq, snap)
        base = enc.last_baseline
        # the ack rule of docs/wire-format.md section 15: the hello goes beside every packet
        # sent without a baseline (the first, and after a long loss of acks)
        hello = enc.hello() if base is None else None
        if k >= start:
            # what the wire carries: the packet, its 32-bit check, and the hello when it goes
            measured.append(enc.last_bits + _CHECK_BITS + (8 * len(hello) if hello else 0))
            entities += len(snap)
            full_enc.encode(seq, snap)            # never acked: always the full snapshot
            full_bits.append(full_enc.last_bits + _CHECK_BITS)
            if base is None:
                counts["full_packets"] += 1
                changed.append(1.0)
            else:
                bsnap = sent[base][1]
                common, ia, ib = np.intersect1d(snap.ids, bsnap.ids, assume_unique=True,
                                                return_indices=True)
                diff = np.any(snap.matrix[ia] != bsnap.matrix[ib], axis=1)
                n_new = len(snap) - len(common)
                changed.append((int(diff.sum()) + n_new) / max(1, len(snap)))
        if hello is not None:
            down.send(k, hello)
        down.send(k, packet)
        for pkt in down.receive(k):
            try:
                view = dec.decode(pkt)
            except DecodeError:
                if pkt is not hello:
                    counts["undecodable"] += 1
                    arrived.add(int.from_bytes(pkt[:2], "little"))
                continue
            if view is None:                      # the hello
                continue
            counts["decoded"] += 1
            arrived.add(view.seq)
            up.send(k, dec.latest)                # the ack rule: the client acks its latest
            if view.seq not in sent:
                continue
            kk, want = sent[view.seq]
            if check and view != want:
                counts["mismatches"] += 1
            if kk >= start:
                _errors(view, ids[kk], positions[kk], orientations[kk],
                        None if velocities is None else velocities[kk], worst)
        if progress is not None:
            progress(k + 1, T)
    n_meas = len(measured)
    mean_n = entities / max(1, n_meas)
    floats = 3 + 4 + (3 if velocities is not None else 0)
    raw_bits = 32.0 * floats
    delta = np.asarray(measured, dtype=np.int64)
    per = lambda bits: float(np.mean(bits)) / max(mean_n, 1e-9) if len(bits) else 0.0
    res = {
        "schema": schema,
        "ticks": n_meas,
        "entities": mean_n,
        "hz": hz,
        "record_bits": schema.bits,
        "raw_bits": raw_bits,
        "full_bits": per(full_bits),
        "delta_bits": per(delta),
        "changed": float(np.mean(changed)) if changed else 0.0,
        "lost": T - len(arrived),
        "max_position_error": worst["position"],
        "max_rotation_error": worst["rotation"],
        "max_velocity_error": worst["velocity"] if velocities is not None else None,
        "packet_bits": delta,
    }
    res.update(counts)
    for key in ("raw", "full", "delta"):
        res[f"{key}_kbps"] = res[f"{key}_bits"] * mean_n * hz / 1000.0
    return res


def _errors(view, ids, pos, quat, vel, worst):
    """Fold the decoded view's worst errors against the true values of its tick into `worst`."""
    order = np.argsort(ids, kind="stable")
    sid = np.asarray(ids)[order]
    rows = order[np.searchsorted(sid, view.ids)]
    cols = view.columns
    if "position" in cols:
        worst["position"] = max(worst["position"], float(np.max(np.abs(cols["position"] - pos[rows]), initial=0.0)))
    if "rotation" in cols:
        q = np.asarray(quat[rows], dtype=np.float64)
        q = q / np.linalg.norm(q, axis=1, keepdims=True)
        worst["rotation"] = max(worst["rotation"], float(np.max(_quat_angle_deg(cols["rotation"], q), initial=0.0)))
    if vel is not None and "velocity" in cols:
        worst["velocity"] = max(worst["velocity"], float(np.max(np.abs(cols["velocity"] - vel[rows]), initial=0.0)))
