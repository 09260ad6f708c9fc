"""Per-client views under a byte budget (SPEC section 8, issue 34): what the session sends each
client, built here and coded by that client's own :class:`SnapshotEncoder`, unchanged.

A *view* is a whole :class:`Snapshot` of the world's schema: the state the server records for one
client. The session hands each client's packet a view instead of the world; the encoder codes it
against the client's newest acknowledged view, as any snapshot (no wire change: every client in
every language reads it as it reads the world today). docs/views.md says why this design and not
per-entity baselines, with the figures.

One :class:`ViewBuilder` per client. ``build(seq, world, ids, weights, room)`` (the compiled
builder's ``begin``, ``compute`` and ``end``, which a server on threads runs for batches of
clients: quantcodec._viewbuild):

1. the *target*: the world restricted to the client's interest (``restrict``);
2. the *start* view V0: the previous view sent (what the client may already show; an unacked
   change must not be taken back), entities that left the interest left out, and for the
   entities the previous view lacks, the acknowledged baseline's codes (they cost nothing);
3. the *in-flight* part of V0 (where it differs from the baseline: sent, not yet acked) costs
   bytes again in this packet, whatever is chosen: it is fitted first. If it alone does not fit,
   its lowest priorities go back to the baseline's codes (the only case where a view steps back);
4. the *candidates*: entities where the world differs from V0, highest accumulated priority
   first; each takes the world's codes. An in-flight one costs about nothing more (its record is
   in the packet already); one that equals the baseline costs a changed record; one that entered
   the interest costs a whole record. An entity chosen as a new change stays *live* for
   ``live`` round trips: while in flight it is refreshed with the world's codes whatever its
   priority (free, and fresher); after that it is left to be acknowledged, so the in-flight part
   drains and the priorities decide again. Sizes are estimated (bits per changed and per new
   entity, learned from the trials before) and checked with trial encodes by a DeltaEncoder of
   the builder's own against the very references the client's encoder will use
   (``EncoderState.refs``): one on a tick where everything fits, at most ``MAX_TRIALS`` + 2
   otherwise (and ``MAX_TRIALS`` + 1 more to shed an in-flight part that does not fit), never a
   search. The compiled builder hands the chosen view's trial packet to the client's encoder
   (``EncoderState.offer``), which sends it rather than coding the view again; the reference
   leaves that to its encoder, which codes the same bytes;
5. priorities: each tick adds each entity's weight; an entity whose view codes equal the world's
   (sent now, or unchanged) is reset to 0.

The guarantee: the datagrams of ``encoder.encode_datagrams(seq, view)`` total at most ``room``
bytes (framing and fragments counted), each at most ``encoder.max_datagram``; when even the
baseline restricted to the interest does not fit, ``build`` returns None (nothing is sent).
"""

from __future__ import annotations

import math

import numpy as np

from ._delta import DeltaEncoder
from . import _framing
from .snapshot import Snapshot, _layout_of, _plan_of

__all__ = ["ViewBuilder", "ViewBuilderPy", "ViewShare", "restrict", "datagram_bytes"]

_U64 = np.dtype(np.uint64)
_NO_IDS = np.zeros(0, dtype=_U64)
_NO_IDS.setflags(write=False)

MAX_TRIALS = 3          # trial encodes after the start view's, per tick
_FILL = 0.97            # the share of the room an estimate may plan for (the trial checks it)


def datagram_bytes(packet_len, max_datagram, check=_framing.CHECK):
    """The bytes on the wire of a packet of ``packet_len`` bytes (without its check of ``check``
    bytes: 4, or the tag's with a key): one datagram of packet + check when that fits in
    ``max_datagram``, else ceil(len / (max_datagram - 8 - check)) fragments of 8 + check bytes
    of framing each (docs/wire-format.md section 12); ``math.inf`` beyond 256 fragments."""
    if packet_len + check <= max_datagram:
        return packet_len + check
    framing = _framing.FRAGMENT_HEADER + check
    count = -(-packet_len // (max_datagram - framing))
    if count > _framing.MAX_FRAGMENTS:
        return math.inf
    return packet_len + framing * count


def _ascending(a):
    return a.shape[0] < 2 or bool(np.all(a[1:] > a[:-1]))


def _select(wids, ids):
    """(rows of ``wids`` (ascending) holding ``ids``, ascending; the index in ``ids`` of each,
    or None when that is 0..n-1). Ids not in ``wids`` are left out; a repeated id counts once."""
    ids = np.asarray(ids)
    if ids.dtype != _U64:
        if ids.dtype.kind not in "ui":
            if ids.size:
                raise TypeError(f"views: interest ids must be integers, got dtype {ids.dtype}")
        elif ids.dtype.kind == "i" and ids.size and ids.min() < 0:
            raise ValueError("views: interest ids must be non-negative")
        ids = ids.astype(_U64)
    if ids.ndim != 1:
        raise ValueError(f"views: interest ids must be one-dimensional, got shape {ids.shape}")
    n = wids.shape[0]
    if n == 0 or ids.shape[0] == 0:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
    src = None
    if not _ascending(ids):
        src = np.argsort(ids, kind="stable")
        ids = ids[src]
        if ids.shape[0] > 1:
            first = np.empty(ids.shape[0], dtype=bool)
            first[0] = True
            np.not_equal(ids[1:], ids[:-1], out=first[1:])
            if not first.all():
                ids, src = ids[first], src[first]
    pos = np.searchsorted(wids, ids)
    np.minimum(pos, n - 1, out=pos)
    hit = wids[pos] == ids
    if hit.all():
        return pos, src
    if src is None:
        src = np.flatnonzero(hit)
    else:
        src = src[hit]
    return pos[hit], src


def restrict(world, ids):
    """``world`` (a Snapshot) restricted to the entities ``ids`` (any order; ids not in the world
    are left out), as a Snapshot of the same schema sharing no state with it: the rows are
    found by ``searchsorted`` on the world's ascending ids, the codes copied, never re-quantized.
    ``ids`` None: the world itself."""
    if ids is None:
        return world
    rows, _ = _select(world.ids, ids)
    return Snapshot._make(world.schema, np.ascontiguousarray(world.ids[rows]),
                          np.ascontiguousarray(world.matrix[rows]))


def _weights(weights, n, src):
    """Weights as float64 aligned with the target's rows (``src``: their index in what the
    weights were given for, None: the same rows)."""
    if weights is None:
        return _const(n)[2]
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1:
        raise ValueError(f"views: weights must be one-dimensional, got shape {w.shape}")
    if src is None and w.shape[0] != n:
        raise ValueError(f"views: {w.shape[0]} weights for {n} entities")
    # every weight given (a repeated id's, one not in the world), at most 1e100: a priority
    # grows by its weight each tick, and 1e308 reached inf in two (ties then wait for ever)
    bad = np.flatnonzero(~((w >= 0) & (w <= 1e100)))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"views: weights must be finite, non-negative and at most 1e100 (only "
                         f"their ratios count), got {float(w[i])!r} at row {i}")
    return w if src is None else w[src]


_CONST = {}


def _const(n):
    """(all True, 0..n-1, all 1.0) of length n, read-only, made once a length."""
    c = _CONST.get(n)
    if c is None:
        c = (np.ones(n, dtype=bool), np.arange(n, dtype=np.intp), np.ones(n, dtype=np.float64))
        for a in c:
            a.setflags(write=False)
        if len(_CONST) > 4096:
            _CONST.clear()
        _CONST[n] = c
    return c


def _align(snap, tid):
    """(present, rows): for each id of ``tid``, whether ``snap`` holds it and at which row."""
    n = tid.shape[0]
    if snap is None or snap.ids.shape[0] == 0 or n == 0:
        return np.zeros(n, dtype=bool), np.zeros(n, dtype=np.intp)
    sid = snap.ids
    if sid is tid or (sid.shape[0] == n and np.array_equal(sid, tid)):
        c = _const(n)
        return c[0], c[1]
    pos = np.searchsorted(sid, tid)
    np.minimum(pos, sid.shape[0] - 1, out=pos)
    return sid[pos] == tid, pos


class ViewBuilderPy:
    live = 1.0      # how long a new change stays refreshed while in flight, in round trips
    """The reference builder, in Python over NumPy: ``ViewBuilder`` (quantcodec._viewbuild) is
    this, compiled, with the same decisions (tests/test_views.py compares them view for view);
    this one stays as the readable statement of the steps.

    The views of one client (module docstring): ``ViewBuilder(schema, encoder)``, ``encoder``
    being that client's ``SnapshotEncoder``, which codes every view this returns (the builder
    reads its references and what it sent, and never changes it).

    ``build(seq, world, ids, weights, room)`` -> the view (a Snapshot) for packet ``seq``, or
    None when nothing fits ``room``. Not thread-safe for one client; different clients' builders
    may run in different threads (the trial encodes release the GIL).

    Counters for measurements: ``trials`` (trial encodes so far), ``last_bytes`` (the wire bytes
    of the last view built), ``last_sent`` (entities that took the world's codes in it),
    ``last_chosen`` (those of them chosen by priority, the in-flight refreshes left out),
    ``last_inflight`` (entities re-sent because they were not acked yet)."""

    def __init__(self, schema, encoder):
        _plan_of(schema, "ViewBuilder")
        self._schema = schema
        self._encoder = encoder
        self._coder = DeltaEncoder(_layout_of(schema, _plan_of(schema, "ViewBuilder")))
        self._acc_ids = _NO_IDS
        self._acc = np.zeros(0, dtype=np.float64)
        self._live = np.zeros(0, dtype=np.int64)
        self._tick = 0
        self._rtt = 4
        self._prev = None
        self._prev_seq = None
        self._state = None
        self._nb_seq = -1
        bits = schema.bits
        self._bits_new = float(bits + 16)            # a whole record and its id, learned after
        self._bits_chg = float(max(8, bits // 2))    # a changed record, learned after
        self._s0_est = 16.0                           # the start view's bytes, measured after
        self.trials = 0
        self.last_bytes = 0
        self.last_sent = 0
        self.last_chosen = 0
        self.last_inflight = 0

    @property
    def schema(self):
        return self._schema

    @property
    def encoder(self):
        return self._encoder

    def priorities(self):
        """(ids, accumulated priorities) after the last build (for tests and tools)."""
        return self._acc_ids, self._acc.copy()

    def reset(self):
        """Forget the priorities and the previous view (the encoder was reset too)."""
        self._acc_ids = _NO_IDS
        self._acc = np.zeros(0, dtype=np.float64)
        self._live = np.zeros(0, dtype=np.int64)
        self._prev = self._prev_seq = self._state = None
        self._nb_seq = -1

    # -- the view -------------------------------------------------------------------------------

    def _previous(self, state):
        """The last view the encoder sent: this builder's, when the encoder holds it as sent."""
        prev = self._prev
        if prev is not None and state is self._state and state.sent.get(self._prev_seq) is prev:
            return prev
        newest = state.state()[0]
        return None if newest is None else state.sent.get(newest)

    def _carry(self, tid):
        """The accumulated priorities of ``tid``'s entities (0 for those new to the interest) and
        the ticks until which they are live (-1: not live)."""
        old = self._acc_ids
        n = tid.shape[0]
        if old is tid or (old.shape[0] == n and np.array_equal(old, tid)):
            return self._acc.copy(), self._live.copy()
        acc = np.zeros(n, dtype=np.float64)
        live = np.full(n, -1, dtype=np.int64)
        if old.shape[0] and n:
            pos = np.searchsorted(old, tid)
            np.minimum(pos, old.shape[0] - 1, out=pos)
            hit = old[pos] == tid
            acc[hit] = self._acc[pos[hit]]
            live[hit] = self._live[pos[hit]]
        return acc, live

    def build(self, seq, world, ids, weights, room):
        """The view for packet ``seq`` (see the class docstring)."""
        encoder = self._encoder
        state = encoder._state
        seq = int(seq) & 0xFFFF
        schema = self._schema
        if ids is None:
            tid, tmat = world.ids, world.matrix
            src = None
        else:
            rows, src = _select(world.ids, ids)
            tid, tmat = world.ids[rows], world.matrix[rows]
        n = tid.shape[0]
        w = _weights(weights, n, src)
        acc, live = self._carry(tid)
        acc += w
        prev = self._previous(state)
        self._state = state

        if room is None:                # no budget: the target itself, every change sent
            view = world if ids is None else Snapshot._make(
                schema, np.ascontiguousarray(tid), np.ascontiguousarray(tmat))
            acc[:] = 0.0
            return self._keep(seq, view, tid, acc, live, None, n, 0)

        bdist, base, pdist, pred = state.refs(seq)
        prev, self._nb_seq = start_view(prev, seq, base, encoder.history, self._nb_seq)
        md = encoder.max_datagram
        check = _framing.check_len(getattr(encoder, "_check_p", 0))
        coder = self._coder

        def size(view):
            self.trials += 1
            return datagram_bytes(len(coder.encode(seq, view, bdist, base, pdist, pred)), md, check)

        in_b, brow = _align(base, tid)
        in_p, prow = _align(prev, tid)
        all_b = base is not None and bool(in_b.all())
        all_p = prev is not None and bool(in_p.all())
        # the start view V0: the previous view's codes, else the baseline's
        if all_p:
            v0 = prev.matrix[prow] if prev.matrix.shape[0] != n else prev.matrix.copy()
            has = in_p.copy()
            if all_b:
                inflight = _rows_differ(v0, base.matrix[brow])
            else:
                inflight = ~in_b
                both = np.flatnonzero(in_b)
                if both.shape[0]:
                    inflight[both] = _rows_differ(v0[both], base.matrix[brow[both]])
        else:
            ns = tmat.shape[1]
            v0 = np.empty((n, ns), dtype=_U64)
            has = in_b | in_p
            if all_b:
                v0[:] = base.matrix[brow]
            elif in_b.any():
                v0[in_b] = base.matrix[brow[in_b]]
            inflight = np.zeros(n, dtype=bool)
            if in_p.any():
                pr = np.flatnonzero(in_p)
                pm = prev.matrix[prow[pr]]
                v0[pr] = pm
                # in flight: in the previous view, and absent from the baseline or other codes there
                d = ~in_b[pr]
                both = np.flatnonzero(~d)
                if both.shape[0]:
                    d[both] = _rows_differ(pm[both], base.matrix[brow[pr[both]]])
                inflight[pr] = d
        # candidates: where the world differs from V0 (absent counts as different)
        if has.all():
            diff = _rows_differ(tmat, v0)
        else:
            diff = ~has
            hr = np.flatnonzero(has)
            diff[hr] = _rows_differ(tmat[hr], v0[hr])
        ns = tmat.shape[1]

        def make(take):
            """The view: V0 with the rows of ``take`` (bool over the target) from the world."""
            keep = has | take
            m = v0.copy()
            m[take] = tmat[take]
            if keep.all():
                return Snapshot._make(schema, np.ascontiguousarray(tid), m)
            return Snapshot._make(schema, np.ascontiguousarray(tid[keep]), np.ascontiguousarray(m[keep]))

        nothing = np.zeros(n, dtype=bool)
        cand = np.flatnonzero(diff)
        nflight = int(inflight.sum())
        tick = self._tick
        if bdist:
            self._rtt = bdist
        span = max(1, int(round(self.live * self._rtt)))
        if cand.shape[0]:
            # the easy tick first: when everything that differs fits on the estimates, one trial
            new_all = ~has[cand]
            free_all = inflight[cand] & has[cand]
            est = self._s0_est + (self._bits_new * float(new_all.sum())
                                  + self._bits_chg * float((~new_all & ~free_all).sum())) / 8.0
            if est <= room * _FILL:
                v = make(diff)
                s = size(v)
                if s <= room:
                    live[diff & ~inflight] = tick + span
                    acc[:] = 0.0
                    self.last_chosen = int(cand.shape[0])
                    return self._keep(seq, v, tid, acc, live, s, int(cand.shape[0]), nflight)
        view0 = make(nothing)
        s0 = size(view0)
        if s0 > room:
            # the in-flight part alone does not fit: its lowest priorities go back to the baseline
            view0, s0 = self._shed(inflight, in_b, brow, base, acc, v0, has, make, size, room, s0, ns)
            if view0 is None:
                return None
            nflight = int(inflight.sum())
        self._s0_est = float(s0)
        take = nothing
        view, used = view0, s0
        forced, best = nothing, None
        if cand.shape[0]:
            # in flight and live (sent fewer than ``span`` ticks ago as a new change): refreshed
            # with the world's codes, their record being in the packet anyway
            forced = diff & inflight & has & (live >= tick)
            rest = cand[~forced[cand]]
            order = rest[np.argsort(-acc[rest], kind="stable")]
            free = inflight[order] & has[order]            # their record is in the packet already
            new = ~has[order]
            cost = np.where(free, 0.0, np.where(new, self._bits_new, self._bits_chg))
            cum = np.cumsum(cost)
            avail = (room - s0) * 8.0
            k = int(np.searchsorted(cum, avail * _FILL, side="right"))
            if k == 0 and not forced.any() and order.shape[0]:
                k = 1       # (nothing else this tick: the most urgent tried, the trial decides)
            lo, hi = -1, None        # k = lo fits, k = hi does not
            best = None
            for _ in range(MAX_TRIALS):
                if k <= lo:
                    break
                t = forced.copy()
                t[order[:k]] = True
                if not t.any():
                    break
                v = make(t)
                s = size(v)
                self._learn(s - s0, int((new[:k]).sum()), int((~free[:k] & ~new[:k]).sum()))
                if s <= room:
                    lo, best = k, (t, v, s)
                    if k >= order.shape[0] or room - s < self._bits_chg / 8.0:
                        break
                    # room left: one step further on the learned sizes
                    cost = np.where(free, 0.0, np.where(new, self._bits_new, self._bits_chg))
                    cum = np.cumsum(cost)
                    k2 = int(np.searchsorted(cum, (cum[k - 1] if k else 0.0) + (room - s) * 8.0 * _FILL,
                                             side="right"))
                    if k2 <= k or (hi is not None and k2 >= hi):
                        break
                    k = k2
                else:
                    hi = k
                    if k == 0:
                        # the live refreshes alone do not fit: V0 it is
                        break
                    # shrink in proportion to the overshoot of the part above V0
                    extra = max(1.0, float(s - s0))
                    k2 = int(k * (room - s0) / extra * _FILL)
                    k = max(0, min(k2, k - 1))
            if best is not None:
                take, view, used = best
        live[take & ~inflight] = tick + span
        up = ~diff | take
        acc[up] = 0.0
        self.last_chosen = int(take.sum()) - (int(forced.sum()) if best is not None else 0)
        return self._keep(seq, view, tid, acc, live, used, int(take.sum()), nflight)

    def _keep(self, seq, view, tid, acc, live, used, nsent, nflight):
        self._acc_ids = tid
        self._acc = acc
        self._live = live
        self._tick += 1
        self._prev = view
        self._prev_seq = seq
        self.last_bytes = used
        self.last_sent = nsent
        self.last_inflight = nflight
        return view

    def _shed(self, inflight, in_b, brow, base, acc, v0, has, make, size, room, s0, ns):
        """Drop the lowest-priority in-flight entities (back to the baseline's codes, or out
        when the baseline lacks them) until the start view fits: estimate, then check."""
        fl = np.flatnonzero(inflight)
        order = fl[np.argsort(acc[fl], kind="stable")]          # lowest priority first
        cost = np.where(in_b[order], self._bits_chg, self._bits_new)
        cum = np.cumsum(cost)
        need = (s0 - room) * 8.0
        k = int(np.searchsorted(cum, need / _FILL, side="left")) + 1
        for attempt in range(MAX_TRIALS + 1):
            if attempt == MAX_TRIALS or k >= order.shape[0]:
                k = order.shape[0]                                  # all of it: the baseline
            drop = order[:k]
            back = drop[in_b[drop]]
            if back.shape[0]:
                v0[back] = base.matrix[brow[back]]
            out = drop[~in_b[drop]]
            has[out] = False
            inflight[drop] = False
            view = make(np.zeros(inflight.shape[0], dtype=bool))
            s = size(view)
            if s <= room:
                return view, s
            if k == order.shape[0]:
                return None, s
            k = min(order.shape[0], k + max(1, int(k * (s - room) / max(1.0, s0 - s) + 1)))
        return None, s0

    def _learn(self, extra_bytes, n_new, n_chg):
        """Bits per changed / new entity from a trial (moving averages)."""
        bits = extra_bytes * 8.0
        if n_chg > 0:
            per = (bits - n_new * self._bits_new) / n_chg
            if per > 1.0:
                self._bits_chg = 0.5 * self._bits_chg + 0.5 * per
        elif n_new > 0:
            per = bits / n_new
            if per > 1.0:
                self._bits_new = 0.5 * self._bits_new + 0.5 * per


def _rows_differ(a, b):
    """Whether each row of ``a`` differs from the same row of ``b`` (2-D uint64, same shape): a
    column at a time (a reduction along a row of 2 or 3 carriers is slower than that)."""
    if a.shape[1] == 0:
        return np.zeros(a.shape[0], dtype=bool)
    d = a[:, 0] != b[:, 0]
    for j in range(1, a.shape[1]):
        d |= a[:, j] != b[:, j]
    return d


from ._viewbuild import ViewBuilder, ViewShare, compute, start_view  # noqa: E402  (the compiled builder)
