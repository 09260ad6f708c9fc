"""Interest: which entities each client sees (SPEC section 8, docs/views.md).

The common case of a session's ``interest=``: the entities within a radius of each client's
position, or within a neighbourhood of grid cells around it. Build the index once per world per
tick, then answer every client from it::

    from quantcodec import interest
    index = interest.GridIndex(positions, world.ids, cell=75.0)       # once a tick
    ids = index.within(centres, 150.0)                   # a list: one uint64 id array per client
    ids, dist = index.within(centres, 150.0, distances=True)   # and each entity's distance
    ids = index.cells(centres, ring=1)                   # the 3 x 3 cells around each client
    offsets, flat = index.within_csr(centres, 150.0)     # one flat result: client i's ids are
                                                         # flat[offsets[i]:offsets[i + 1]]

``positions`` are the entities' positions in the world's row order (N x 2 or N x 3, any float
dtype: e.g. ``world.columns["position"]``, or the floats the world was quantized from), ``ids``
the world's ids (``Snapshot.ids``: ascending; any order is taken, sorted once at the build, but
each id once: a repeat is a ValueError naming its row); ``centres`` is M x D, one row per client.
The id arrays come back ascending whatever the order of ``ids``, as
``StreamServer.send(interest=...)`` and ``ViewBuilder`` take them.

The index's memory is linear in the entities: a table of every cell's start (8 bytes a cell)
while the grid has at most 4 cells an entity (or 65,536 cells), else the start of each occupied
cell alone, found by a binary search (a world of 2 entities 40 m apart in 1 cm cells: 16
million cells, no table of them). The grid may have at most 2**62 cells in all (2**40 a side).

Why a uniform grid in NumPy and not a KD-tree: the entities move every tick, so the index is
rebuilt every tick, and the queries are all of one radius. The grid is built in two passes of
C (quantcodec._interest: a cell key per entity and a stable counting sort by it, linear) -
about 1 ms for 100,000 entities here, where NumPy's steps took 2.5-8.5 ms - and the ranges of
all clients' cells come from array operations (one range of rows per grid column, cut to the circle's chord); the rows of those
ranges, their distance test and (unless ``sort=False``) their sort (a radix sort) are done in
C for all clients in one pass without the GIL, into one flat result (quantcodec._interest;
``within`` hands out views of it, one a client): about 6 ms of CPU for 1,000 clients of 150 m
(4 ms unsorted), against 13-15 ms for the C query a client at a time it replaced and 14-26 ms
for the same steps in NumPy over all clients at once (which ``cells()`` still uses).
``within(..., threads=N)`` runs it for N parts of the clients at once (the calling thread and a
pool of the module's; one call and one release of the GIL a part).
``scipy.spatial.cKDTree`` needs no cell size and wins for very uneven densities, but its build
alone (29 ms) is longer than the grid's whole tick here (docs/views.md has the figures), and
scipy is not a dependency of quantcodec; ``within(..., method="kdtree")`` uses it when it is
installed.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, List, Optional, Tuple, Union, overload

import numpy as np
import numpy.typing as npt

from ._interest import grid_cells, grid_sort, grid_within_csr
from .snapshot import _integer_ids

if TYPE_CHECKING:
    from typing_extensions import Literal

__all__ = ["GridIndex", "within"]

# What the public signatures give (strings to the interpreter: `from __future__ import annotations`)
_Ids = List["npt.NDArray[np.uint64]"]           # one id array a centre (a client)
_Distances = List["npt.NDArray[np.float64]"]    # and its entities' distances, aligned

_U64 = np.dtype(np.uint64)
_CELLS_MAX = 2.0 ** 40          # cells a side at most (past it a cell number is refused)
_GRID_MAX = 2 ** 62             # cells in all at most (a cell's key, column * ny + row, is an int64)
_DENSE_PER_ENTITY = 4           # a table of every cell's start while the grid has at most this many
_DENSE_MIN = 1 << 16            # cells an entity, or this many cells; else the occupied cells' keys


class GridIndex:
    """A uniform 2-D grid over entity positions (module docstring). The grid is over the first
    two columns (pass the horizontal ones first: ``pos[:, [0, 2]]`` for a y-up world, or just
    those two); distances use every column. ``cell``: the cell size (a half to a quarter of the
    usual query radius: the candidate rows then hug the circle); ``lo``: the grid's corner
    (default: the positions' minimum; an entity below or left of a corner given is in the first
    row or column of cells, which reach out to it). ``ids``: the entities' ids, each once (default: the rows), ascending as a snapshot's or in
    any order (sorted once here); the results are ascending.
    ``start`` is every cell's first sorted row (``keys`` None) while the grid has at most 4
    cells an entity (or 2**16 cells), else the occupied cells' alone, their keys in ``keys``."""

    def __init__(self, positions: npt.ArrayLike, ids: Optional[npt.ArrayLike] = None, *, cell: float,
                 lo: Optional[npt.ArrayLike] = None) -> None:
        p = np.asarray(positions)
        if p.ndim != 2 or p.shape[1] not in (2, 3):
            raise ValueError(f"GridIndex: positions must be N x 2 or N x 3, got shape {p.shape}")
        p = p.astype(np.float64, copy=False)
        n, d = p.shape
        if ids is None:
            ids = np.arange(n, dtype=_U64)
        ids = _integer_ids(ids, "GridIndex")     # (a snapshot's rule for its ids)
        if ids.shape != (n,):
            raise ValueError(f"GridIndex: {ids.shape[0]} ids for {n} positions")
        cell = float(cell)
        if not cell > 0 or not np.isfinite(cell):
            raise ValueError(f"GridIndex: cell must be positive, got {cell}")
        self.ids = np.ascontiguousarray(ids, dtype=_U64)
        self.n = n
        self.cell = cell
        self.dim = d
        # The results come back ascending by sorting each client's rows (the C pass's radix sort),
        # so the rows the index works on are the entities in ascending id order: the world's rows
        # (a snapshot's ids ascend: nothing to do but one comparison of neighbours), else the
        # rows sorted by id once here. A repeated id is refused, naming its row.
        perm = _id_order(self.ids)
        if perm is None:
            sids = self.ids
        else:
            sids = self.ids[perm]
            p = p[perm]
        # two passes of C over the entities (quantcodec._interest): the corner (default: the
        # positions' minimum) and each entity's cell, then a stable counting sort of the rows by
        # cell (within a cell the rows stay ascending), the positions and ids in that order
        cols = [p[:, j] for j in range(d)]
        cx = np.empty(n, dtype=np.int64)
        cy = np.empty(n, dtype=np.int64)
        if lo is not None:
            lo = np.asarray(lo, np.float64).ravel()
            if lo.shape[0] < 2 or not np.isfinite(lo[:2]).all():
                raise ValueError(f"GridIndex: lo must be a finite corner (x, y), got {lo.tolist()}")
            lo = lo[:2]
        finite, lo0, lo1, mx, my = grid_cells(cols, lo, cell, cx, cy)
        if not finite:
            # (the row and id named, in the order given: a physics glitch in one body)
            i = int(np.argmin(np.isfinite(p).all(axis=1)))
            row = i if perm is None else int(perm[i])
            raise ValueError(f"GridIndex: positions must be finite (row {row}, id {int(sids[i])}: "
                             f"{p[i].tolist()}); leave such a body out of the index")
        if max(mx, my) >= _CELLS_MAX:
            raise ValueError(f"GridIndex: the grid would be more than 2**40 cells a side "
                             f"({mx + 1:.0f} x {my + 1:.0f} cells of {cell:g}): use a larger cell")
        self.lo = np.array([lo0, lo1])
        self.nx = int(mx) + 1
        self.ny = int(my) + 1
        ncell = self.nx * self.ny
        if ncell > _GRID_MAX:
            raise ValueError(f"GridIndex: the grid would be more than 2**62 cells ({self.nx} x {self.ny} "
                             f"= {ncell} cells of {cell:g}): use a larger cell")
        self._cols = [np.empty(n) for j in range(d)]
        if ncell <= max(_DENSE_PER_ENTITY * n, _DENSE_MIN):
            # a table of every cell's start: cell k's rows are order[start[k]:start[k + 1]]
            self.keys: Optional[npt.NDArray[np.int64]] = None
            self.start: npt.NDArray[np.int64] = np.zeros(ncell + 1, dtype=np.int64)
            order = np.empty(n, dtype=np.intp)
            self._gids = np.empty(n, dtype=_U64)
            grid_sort(cx, cy, self.ny, self.start, order, cols, self._cols, sids, self._gids)
        else:
            # many more cells than entities: the occupied cells' keys (ascending) and their
            # starts, from a stable sort of the entities' keys (memory linear in the entities)
            key = cx * self.ny + cy
            rb = max(1, (n - 1).bit_length())
            if ncell <= 1 << (63 - rb):
                # key and row in one int64 (row in the low bits): a sort of values, stable by
                # construction (a third faster than a stable argsort of the keys)
                key <<= rb
                key |= np.arange(n, dtype=np.int64)
                key.sort()
                order = (key & ((1 << rb) - 1)).astype(np.intp, copy=False)
                sk = key >> rb
            else:
                order = np.argsort(key, kind="stable").astype(np.intp, copy=False)
                sk = key[order]
            cut = np.flatnonzero(sk[1:] != sk[:-1]) + 1
            self.keys = sk[np.concatenate(([0], cut))] if n else sk
            self.start = np.concatenate(([0], cut, [n])).astype(np.int64) if n else np.zeros(1, np.int64)
            for j in range(d):
                np.take(cols[j], order, out=self._cols[j])
            self._gids = sids[order]
        # _order: each grid-order entity's rank in id order (what the query sorts by); order:
        # its row in the world (the same unless the ids were given out of order)
        self._order = order
        self._sids = sids
        self.order = order if perm is None else perm[order]

    def _span(self, k0, k1):
        """The sorted rows of the cells with keys k0..k1 (int64 arrays, k0 <= k1 where a range
        is wanted): (first, end) arrays, from the cell table or the occupied cells' keys."""
        if self.keys is None:
            return self.start[k0], self.start[k1 + 1]
        return (self.start[np.searchsorted(self.keys, k0, "left")],
                self.start[np.searchsorted(self.keys, k1, "right")])

    @property
    def _rowcols(self):
        """The positions a column each in row order: made from the grid-order columns, not kept
        (nothing holds on to the caller's array)."""
        return self._scatter(self.order)

    def _scatter(self, where):
        out = []
        for col in self._cols:
            r = np.empty_like(col)
            r[where] = col
            out.append(r)
        return out

    def _ranges(self, q, radius, ring):
        """Per centre and grid column: the range of sorted rows of the cells of that column that
        may hold entities within ``radius`` (``ring`` None), or the cells within ``ring`` of the
        centre's cell (its own cell, as the entities' cells but not clamped to the grid). For the
        radius, the first column and row of cells reach out to minus infinity: the entities
        below or left of a corner given are in them. A centre's columns are those of ix - R..ix + R in the grid, at most the grid's
        width of them (a radius past the world's extent, or a centre far outside it, costs no
        more than the whole grid). Returns (lo, count) arrays of shape (m, min(2 R + 1, nx))."""
        cell = self.cell
        nx, ny = self.nx, self.ny
        # cell numbers in floats first, clipped to the grid (an int64 could not hold a far
        # centre's): [0, n] for a range's first cell, [e, n - 1] for its last (e -1: none; 0 for
        # the radius, whose first cells reach out)
        fx = np.floor((q[:, 0] - self.lo[0]) / cell)
        fy = np.floor((q[:, 1] - self.lo[1]) / cell)
        R = float(ring) if ring is not None else np.ceil(radius / cell)
        e = -1 if ring is not None else 0
        c0 = np.clip(fx - R, 0, nx).astype(np.int64)
        c1 = np.clip(fx + R, e, nx - 1).astype(np.int64)
        W = int(min(2 * R + 1, nx))
        ix = c0[:, None] + np.arange(W, dtype=np.int64)[None, :]           # (m, W)
        if ring is None:
            # each grid column's nearest x to the centre, and the circle's half chord there
            x0 = self.lo[0] + ix * cell
            x1 = x0 + cell
            x0[ix == 0] = -np.inf
            dx = np.maximum(np.maximum(x0 - q[:, :1], q[:, :1] - x1), 0.0)
            inside = dx <= radius
            with np.errstate(invalid="ignore", over="ignore"):
                hw = np.sqrt(np.maximum(radius * radius - dx * dx, 0.0))
                hw[np.isnan(hw)] = np.inf       # (both squares past the largest double: the widest)
                y0 = np.floor((q[:, 1:2] - hw - self.lo[1]) / cell)
                y1 = np.floor((q[:, 1:2] + hw - self.lo[1]) / cell)
        else:
            inside = np.ones(ix.shape, dtype=bool)
            y0 = np.broadcast_to(fy[:, None] - R, ix.shape)
            y1 = np.broadcast_to(fy[:, None] + R, ix.shape)
        y0 = np.clip(y0, 0, ny).astype(np.int64)
        y1 = np.clip(y1, e, ny - 1).astype(np.int64)
        ok = inside & (ix <= c1[:, None]) & (y0 <= y1)
        ixc = np.minimum(ix, nx - 1)
        lo, hi = self._span(ixc * ny + np.minimum(y0, ny - 1), ixc * ny + np.maximum(y1, 0))
        cnt = np.where(ok, hi - lo, 0)
        return lo, cnt

    def _centres(self, centres):
        q = np.ascontiguousarray(centres, dtype=np.float64)
        if q.ndim != 2 or q.shape[1] != self.dim:
            raise ValueError(f"GridIndex: centres must be M x {self.dim}, got shape {q.shape}")
        if not np.isfinite(q).all():
            i = int(np.argmin(np.isfinite(q).all(axis=1)))
            raise ValueError(f"GridIndex: centres must be finite (centre {i}: {q[i].tolist()})")
        return q

    def _query(self, centres, radius, ring, distances, sort, numpy=False, threads=1):
        q = self._centres(centres)
        m = q.shape[0]
        lo, cnt = self._ranges(q, radius, ring)
        if ring is None and not numpy:
            # every client's candidates, their distance test and (unless sort=False) their
            # sort in one pass in C without the GIL (quantcodec._interest): the same sums of
            # squares as below, one flat result a part of the clients, no array made per client
            out, dist = [], []
            for offsets, o, dd in self._parts(q, lo, cnt, radius, distances, sort, threads):
                out += _slices(o, offsets)
                if distances:
                    dist += _slices(dd, offsets)
            return (out, dist) if distances else out
        # (all clients at once in NumPy: the cells' queries, and the reference of the tests)
        cnt = cnt.ravel()
        lo = lo.ravel()
        total = int(cnt.sum())
        ends = np.cumsum(cnt)
        # the concatenation of the ranges lo[j]..lo[j]+cnt[j], with no Python loop
        idx = np.arange(total, dtype=np.int64)
        idx += np.repeat(lo - (ends - cnt), cnt)
        per = cnt.reshape(m, -1).sum(axis=1)
        if ring is None:
            d2 = None
            for j, col in enumerate(self._cols):
                t = col[idx]
                t -= np.repeat(q[:, j], per)
                t *= t
                d2 = t if d2 is None else d2.__iadd__(t)
            keep = d2 <= radius * radius
            idx = idx[keep]
            kept = np.zeros(total + 1, dtype=np.int64)
            np.cumsum(keep, out=kept[1:])
            e = np.cumsum(per)
            per = kept[e] - kept[e - per]
        rows = self._order[idx]         # (ranks in id order: ascending rows are ascending ids)
        bounds = np.cumsum(per)[:-1]
        if sort:
            # one sort of (client, row) keys: ascending ids a client (rows follow ids)
            key = np.repeat(np.arange(m, dtype=np.int64) * max(1, self.n), per)
            key += rows
            key.sort(kind="stable")
            rows = key - np.repeat(np.arange(m, dtype=np.int64) * max(1, self.n), per)
        out = np.split(self._sids[rows], bounds)
        if not distances:
            return out
        d2 = None
        rankcols = self._scatter(self._order)
        for j in range(self.dim):
            t = rankcols[j][rows] - np.repeat(q[:, j], per)
            t *= t
            d2 = t if d2 is None else d2 + t
        return out, np.split(np.sqrt(d2), bounds)

    def _csr(self, q, lo, cnt, radius, distances, sort):
        return grid_within_csr(np.ascontiguousarray(lo, dtype=np.int64),
                               np.ascontiguousarray(cnt, dtype=np.int64), self._cols, q,
                               radius * radius, self._gids, self._order, distances, sort)

    def _parts(self, q, lo, cnt, radius, distances, sort, threads):
        """The query's CSR results for ``threads`` consecutive parts of the centres (one when
        ``threads`` is 1 or there are few centres): the first part on the calling thread, the
        others on the module's pool (quantcodec._interest releases the GIL for the whole pass)."""
        threads = _threads(threads)
        m = q.shape[0]
        k = min(threads, max(1, m // _PART_MIN))
        if k == 1:
            return [self._csr(q, lo, cnt, radius, distances, sort)]
        cut = [m * i // k for i in range(k + 1)]
        pool = _pool(k - 1)
        futures = [pool.submit(self._csr, q[a:b], lo[a:b], cnt[a:b], radius, distances, sort)
                   for a, b in zip(cut[1:-1], cut[2:])]
        first = self._csr(q[:cut[1]], lo[:cut[1]], cnt[:cut[1]], radius, distances, sort)
        return [first] + [f.result() for f in futures]

    @overload
    def within_csr(self, centres: npt.ArrayLike, radius: float, *, distances: Literal[False] = ...,
                   sort: bool = ..., threads: int = ...
                   ) -> Tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]]: ...
    @overload
    def within_csr(self, centres: npt.ArrayLike, radius: float, *, distances: Literal[True],
                   sort: bool = ..., threads: int = ...
                   ) -> Tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64], npt.NDArray[np.float64]]: ...
    @overload
    def within_csr(self, centres: npt.ArrayLike, radius: float, *, distances: bool, sort: bool = ...,
                   threads: int = ...
                   ) -> Union[Tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]],
                              Tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64], npt.NDArray[np.float64]]]: ...

    def within_csr(self, centres: npt.ArrayLike, radius: float, *, distances: bool = False, sort: bool = True,
                   threads: int = 1
                   ) -> Union[Tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]],
                              Tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64], npt.NDArray[np.float64]]]:
        """``within`` as one flat result (CSR): ``(offsets, ids)``, and with ``distances=True``
        ``(offsets, ids, distances)``. ``offsets`` (int64, one more than the centres): client
        i's ids are ``ids[offsets[i]:offsets[i + 1]]`` (ascending unless ``sort=False``), its
        distances the same slice of ``distances``. One pass in C without the GIL for all
        clients and no array made per client (``threads``: as in ``within``, the parts' results
        then joined into one)."""
        radius = _radius(radius, "within_csr")
        q = self._centres(centres)
        lo, cnt = self._ranges(q, radius, None)
        parts = self._parts(q, lo, cnt, radius, distances, sort, threads)
        if len(parts) == 1:
            offsets, out, dist = parts[0]
        else:
            ends = np.cumsum([0] + [p[0][-1] for p in parts])
            offsets = np.concatenate([parts[0][0][:1]]
                                     + [p[0][1:] + e for p, e in zip(parts, ends)])
            out = np.concatenate([p[1] for p in parts])
            dist = np.concatenate([p[2] for p in parts]) if distances else None
        return (offsets, out, dist) if distances else (offsets, out)

    @overload
    def within(self, centres: npt.ArrayLike, radius: float, *, distances: Literal[False] = ...,
               sort: bool = ..., threads: int = ...) -> _Ids: ...
    @overload
    def within(self, centres: npt.ArrayLike, radius: float, *, distances: Literal[True], sort: bool = ...,
               threads: int = ...) -> Tuple[_Ids, _Distances]: ...
    @overload
    def within(self, centres: npt.ArrayLike, radius: float, *, distances: bool, sort: bool = ...,
               threads: int = ...) -> Union[_Ids, Tuple[_Ids, _Distances]]: ...

    def within(self, centres: npt.ArrayLike, radius: float, *, distances: bool = False, sort: bool = True,
               threads: int = 1) -> Union[_Ids, Tuple[_Ids, _Distances]]:
        """For each centre (row of ``centres``), the ids of the entities at most ``radius`` away
        (finite, at least 0; distances compared as sums of squares in doubles), ascending, and with ``distances=True`` their distances too (aligned). ``sort=False``
        leaves each client's ids in grid order (a ViewBuilder takes them in any order, and sorts
        them in its own thread). ``threads=N``: the centres cut into N parts (of at least 64),
        queried at once on the calling thread and a pool of the module's (the same answers, in
        the same order): e.g. a server's ``StreamServer(threads=N)`` count."""
        return self._query(centres, _radius(radius, "within"), None, distances, sort,
                           threads=threads)

    def cells(self, centres: npt.ArrayLike, ring: int = 1, *, sort: bool = True) -> _Ids:
        """For each centre, the ids of the entities in its cell and in the ``ring`` cells around
        it on every side ((2 ring + 1) ** 2 cells of the grid), ascending."""
        if isinstance(ring, bool) or not isinstance(ring, (int, np.integer)) or ring < 0:
            raise ValueError(f"GridIndex.cells: ring must be a non-negative integer, got {ring!r}")
        return self._query(centres, 0.0, int(ring), False, sort)


def _id_order(ids):
    """None when ``ids`` (uint64, 1-D) ascend, each once (a snapshot's ids: one comparison of
    neighbours); else the rows in ascending id order (a stable sort). A repeated id is a
    ValueError naming the first row that repeats an earlier one."""
    n = ids.shape[0]
    if n < 2 or bool(np.all(ids[1:] > ids[:-1])):
        return None
    perm = np.argsort(ids, kind="stable")
    s = ids[perm]
    dup = s[1:] == s[:-1]
    if dup.any():
        j = int(perm[1:][dup].min())            # (stable: the later row of each equal pair)
        i = int(np.flatnonzero(ids == ids[j])[0])
        raise ValueError(f"GridIndex: ids must be unique: row {j} repeats id {int(ids[j])} of row {i}")
    return perm


# the pool of within(threads=N): made at the first call that needs it, grown to the largest N
# asked for less one (the calling thread runs the first part), made again in a forked child
# (whose copy of it has no threads); a part has at least _PART_MIN centres (below that, the
# pool's hand-over costs more than the part's query: about 6 us a client)
_PART_MIN = 64
_POOL = [None, 0, 0]            # the pool, its workers, the process it was made in
_POOL_LOCK = threading.Lock()


def _threads(threads, owner="GridIndex"):
    """A thread count (StreamServer's too), checked: a positive int or NumPy integer, as int."""
    if isinstance(threads, (bool, np.bool_)) or not isinstance(threads, (int, np.integer)):
        raise TypeError(f"{owner}: threads must be a positive integer, got {type(threads).__name__}")
    if threads < 1:
        raise ValueError(f"{owner}: threads must be a positive integer, got {int(threads)}")
    return int(threads)


def _pool(workers):
    with _POOL_LOCK:
        if _POOL[1] < workers or _POOL[2] != os.getpid():
            # (the smaller one is not shut down: a call may still be submitting to it; its
            # threads end when the last reference to it goes)
            _POOL[:] = [ThreadPoolExecutor(workers, thread_name_prefix="qc-interest"), workers,
                        os.getpid()]
        return _POOL[0]


def _radius(radius, what):
    radius = float(radius)
    if not 0 <= radius < float("inf"):
        raise ValueError(f"GridIndex.{what}: radius must be finite and non-negative, got {radius}")
    return radius


def _slices(flat, offsets):
    """The per-client arrays of a CSR result: views of ``flat``, one a client (nothing copied)."""
    b = offsets.tolist()
    return [flat[i:j] for i, j in zip(b, b[1:])]


@overload
def within(positions: npt.ArrayLike, ids: Optional[npt.ArrayLike], centres: npt.ArrayLike, radius: float, *,
           distances: Literal[False] = ..., method: Literal["grid", "kdtree"] = ...) -> _Ids: ...
@overload
def within(positions: npt.ArrayLike, ids: Optional[npt.ArrayLike], centres: npt.ArrayLike, radius: float, *,
           distances: Literal[True], method: Literal["grid", "kdtree"] = ...) -> Tuple[_Ids, _Distances]: ...
@overload
def within(positions: npt.ArrayLike, ids: Optional[npt.ArrayLike], centres: npt.ArrayLike, radius: float, *,
           distances: bool, method: Literal["grid", "kdtree"] = ...) -> Union[_Ids, Tuple[_Ids, _Distances]]: ...


def within(positions: npt.ArrayLike, ids: Optional[npt.ArrayLike], centres: npt.ArrayLike, radius: float, *,
           distances: bool = False, method: Literal["grid", "kdtree"] = "grid"
           ) -> Union[_Ids, Tuple[_Ids, _Distances]]:
    """One-call form: the ids (and distances) within ``radius`` of each centre.
    ``method="grid"`` (NumPy, the default) or ``"kdtree"`` (scipy.spatial.cKDTree, if installed)."""
    if method == "grid":
        return GridIndex(positions, ids, cell=radius).within(centres, radius, distances=distances)
    if method != "kdtree":
        raise ValueError(f"within: method must be 'grid' or 'kdtree', got {method!r}")
    try:
        from scipy.spatial import cKDTree
    except ImportError:
        raise ImportError("within(method='kdtree') needs scipy (pip install scipy)") from None
    p = np.asarray(positions, dtype=np.float64)
    ids = np.arange(p.shape[0], dtype=_U64) if ids is None else np.asarray(ids, dtype=_U64)
    _id_order(ids)                              # (a repeated id refused, as GridIndex does)
    q = np.asarray(centres, dtype=np.float64)
    tree = cKDTree(p)
    pairs = cKDTree(q).sparse_distance_matrix(tree, float(radius), output_type="ndarray")
    owner = pairs["i"].astype(np.int64)
    rows = pairs["j"].astype(np.int64)
    order = np.lexsort((ids[rows], owner))      # (ascending ids a client, whatever their order)
    owner, rows = owner[order], rows[order]
    bounds = np.cumsum(np.bincount(owner, minlength=q.shape[0]))[:-1]
    out = np.split(ids[rows], bounds)
    if distances:
        return out, np.split(pairs["v"][order], bounds)
    return out
