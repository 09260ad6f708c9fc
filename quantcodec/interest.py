"""Interest: which entities each client sees (SPEC section 8, docs/views.md).

The common case of a session's ``interest=``: the entities within a radius of each client's
position, or within a neighbourhood of grid cells around it. Build the index once per world per
tick, then answer every client from it::

    index = qc.interest.GridIndex(positions, world.ids, cell=150.0)   # once a tick
    ids = index.within(centres, 150.0)                   # a list: one uint64 id array per client
    ids, dist = index.within(centres, 150.0, distances=True)   # and each entity's distance
    ids = index.cells(centres, ring=1)                   # the 3x3 (3x3x3) cells around each client

``positions`` are the entities' positions in the world's row order (N x 2 or N x 3, any float
dtype: e.g. ``world.columns["position"]``, or the floats the world was quantized from), ``ids``
the world's ids (ascending, as ``Snapshot.ids``); ``centres`` is M x D, one row per client. The
id arrays come back ascending, as ``StreamServer.send(interest=...)`` and ``ViewBuilder`` take
them.

Why a uniform grid in NumPy and not a KD-tree: the entities move every tick, so the index is
rebuilt every tick, and the queries are all of one radius. The grid is built with one integer
key per entity and a stable sort of keys that fit 16 bits (NumPy's radix sort: linear) - about
2 ms for 100,000 entities here - and answers all clients at once with array operations (the
candidate ranges of the neighbouring cells, one distance test, one sort of nearly sorted runs).
``scipy.spatial.cKDTree`` needs no cell size and wins for very uneven densities, but its build
alone is about as long as the whole grid tick here (docs/views.md has the figures), and scipy is
not a dependency of quantcodec; ``within(..., method="kdtree")`` uses it when it is installed.
"""

from __future__ import annotations

import numpy as np

__all__ = ["GridIndex", "within"]

_U64 = np.dtype(np.uint64)


class GridIndex:
    """A uniform grid over entity positions (module docstring). ``cell``: the cell size (the
    usual radius of a query is a good choice); ``lo``: the grid's corner (default: the
    positions' minimum)."""

    def __init__(self, positions, ids=None, *, cell, lo=None):
        p = np.asarray(positions)
        if p.ndim != 2 or p.shape[1] not in (2, 3):
            raise ValueError(f"GridIndex: positions must be N x 2 or N x 3, got shape {p.shape}")
        if p.dtype.kind != "f":
            p = p.astype(np.float64)
        n, d = p.shape
        if ids is None:
            ids = np.arange(n, dtype=_U64)
        ids = np.asarray(ids)
        if ids.shape != (n,):
            raise ValueError(f"GridIndex: {ids.shape[0] if ids.ndim else 0} ids for {n} positions")
        if not np.all(np.isfinite(p)):
            raise ValueError("GridIndex: positions must be finite")
        cell = float(cell)
        if not cell > 0 or not np.isfinite(cell):
            raise ValueError(f"GridIndex: cell must be positive, got {cell}")
        self.positions = p
        self.ids = ids.astype(_U64, copy=False)
        self.cell = cell
        self.dim = d
        self.lo = (p.min(axis=0) if n else np.zeros(d)) if lo is None else np.asarray(lo, np.float64)
        c = self._coords(p)
        self.shape = tuple(int(x) for x in (c.max(axis=0) + 1 if n else np.ones(d, dtype=np.int64)))
        ncell = int(np.prod(self.shape))
        key = np.ravel_multi_index(tuple(c.T), self.shape) if n else np.zeros(0, dtype=np.intp)
        small = np.uint16 if ncell <= 1 << 16 else (np.uint32 if ncell <= 1 << 32 else np.int64)
        # stable: within a cell the rows stay ascending (so do the ids); 16-bit keys: radix sort
        self.order = np.argsort(key.astype(small), kind="stable")
        counts = np.bincount(key, minlength=ncell)
        self.start = np.zeros(ncell + 1, dtype=np.int64)
        np.cumsum(counts, out=self.start[1:])
        self._sorted_pos = p[self.order]

    def _coords(self, p):
        c = np.floor((p - self.lo) / self.cell).astype(np.int64)
        np.maximum(c, 0, out=c)
        return c

    def _gather(self, centres, ring):
        """(client of each candidate, row in the sorted order of each candidate, counts a client)."""
        q = np.asarray(centres, dtype=np.float64)
        if q.ndim != 2 or q.shape[1] != self.dim:
            raise ValueError(f"GridIndex: centres must be M x {self.dim}, got shape {q.shape}")
        m, d = q.shape
        qc = np.floor((q - self.lo) / self.cell).astype(np.int64)
        span = np.arange(-ring, ring + 1)
        offs = np.stack(np.meshgrid(*([span] * d), indexing="ij"), axis=-1).reshape(-1, d)
        nb = qc[:, None, :] + offs[None, :, :]                  # (m, k, d)
        shape = np.asarray(self.shape)
        ok = np.all((nb >= 0) & (nb < shape), axis=2)
        nb = np.where(ok[..., None], nb, 0)
        key = np.ravel_multi_index(tuple(np.moveaxis(nb, 2, 0)), self.shape)
        lo = self.start[key]
        hi = self.start[key + 1]
        cnt = np.where(ok, hi - lo, 0).ravel()
        lo = lo.ravel()
        total = int(cnt.sum())
        ends = np.cumsum(cnt)
        # the concatenation of the ranges lo[j]..lo[j]+cnt[j], with no Python loop
        idx = np.arange(total, dtype=np.int64) + np.repeat(lo - (ends - cnt), cnt)
        per_client = cnt.reshape(m, -1).sum(axis=1)
        owner = np.repeat(np.arange(m), per_client)
        return q, owner, idx, per_client

    def _split(self, owner, rows, m, extra=None):
        """Per-client ascending id arrays from (owner, world row) pairs."""
        n = max(1, self.ids.shape[0])
        key = owner.astype(np.int64) * n + rows
        order = np.argsort(key, kind="stable")     # runs of cells, nearly sorted: a merge
        key = key[order]
        rows = key % n
        counts = np.bincount(owner, minlength=m)
        bounds = np.cumsum(counts)[:-1]
        ids = np.split(self.ids[rows], bounds)
        if extra is None:
            return ids
        return ids, np.split(extra[order], bounds)

    def within(self, centres, radius, *, distances=False):
        """For each centre (row of ``centres``), the ids of the entities at most ``radius`` away
        (ascending), and with ``distances=True`` their distances too (aligned)."""
        radius = float(radius)
        ring = max(1, int(np.ceil(radius / self.cell)))
        q, owner, idx, _ = self._gather(centres, ring)
        diff = self._sorted_pos[idx] - q[owner]
        d2 = np.einsum("ij,ij->i", diff, diff)
        keep = d2 <= radius * radius
        owner = owner[keep]
        rows = self.order[idx[keep]]
        if distances:
            return self._split(owner, rows, q.shape[0], np.sqrt(d2[keep]))
        return self._split(owner, rows, q.shape[0])

    def cells(self, centres, ring=1):
        """For each centre, the ids of the entities in its cell and the ``ring`` cells around it
        on every side ((2 ring + 1) ** D cells), ascending."""
        q, owner, idx, _ = self._gather(centres, int(ring))
        return self._split(owner, self.order[idx], q.shape[0])


def within(positions, ids, centres, radius, *, distances=False, method="grid"):
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
    q = np.asarray(centres, dtype=np.float64)
    tree = cKDTree(p)
    pairs = cKDTree(q).sparse_distance_matrix(tree, float(radius), output_type="ndarray")
    owner = pairs["i"].astype(np.int64)
    rows = pairs["j"].astype(np.int64)
    order = np.lexsort((rows, owner))
    owner, rows = owner[order], rows[order]
    bounds = np.cumsum(np.bincount(owner, minlength=q.shape[0]))[:-1]
    out = np.split(ids[rows], bounds)
    if distances:
        return out, np.split(pairs["v"][order], bounds)
    return out
