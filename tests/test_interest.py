"""quantcodec.interest's batched radius query (GridIndex.within_csr, quantcodec._interest): one
pass for every client, one flat result, exactly the per-client answers."""

import numpy as np
import pytest

from helpers import wait_child
from quantcodec import interest


def world(dim, n=20000, seed=0, spread=1000.0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(-spread / 3, spread, size=(n, dim))
    ids = np.sort(rng.choice(10**12, size=n, replace=False)).astype(np.uint64)
    return rng, p, ids


def brute(p, ids, centres, r):
    out = []
    for q in centres:
        d = np.sqrt(((p - q) ** 2).sum(axis=1))
        out.append(np.sort(ids[d <= r]))
    return out


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("sort", [True, False])
@pytest.mark.parametrize("dist", [True, False])
def test_csr_equals_per_client_and_numpy(dim, sort, dist):
    """within_csr's slices are within's arrays and the NumPy reference's, id for id, in the same
    order (ascending, or the grid's with sort=False), and bit-identical distances."""
    rng, p, ids = world(dim)
    index = interest.GridIndex(p, ids, cell=37.5)
    centres = np.concatenate([rng.uniform(-350, 1050, size=(150, dim)), p[:5]])
    for r in (0.0, 20.0, 75.0, 150.0):
        got = index.within_csr(centres, r, distances=dist, sort=sort)
        assert len(got) == (3 if dist else 2)
        off, flat = got[0], got[1]
        assert off.dtype == np.int64 and off.shape == (len(centres) + 1,) and off[0] == 0
        assert off[-1] == flat.shape[0] and np.all(np.diff(off) >= 0) and flat.dtype == np.uint64
        per = index.within(centres, r, distances=dist, sort=sort)
        ref = index._query(centres, r, None, dist, sort, numpy=True)
        if dist:
            per, per_d = per
            ref, ref_d = ref
            assert got[2].dtype == np.float64 and got[2].shape == flat.shape
        for i in range(len(centres)):
            sl = flat[off[i]:off[i + 1]]
            assert np.array_equal(sl, per[i]) and np.array_equal(sl, ref[i])
            if dist:
                d = got[2][off[i]:off[i + 1]]
                assert np.array_equal(d, per_d[i]) and np.array_equal(d, ref_d[i])
        if sort:
            want = brute(p, ids, centres, r)
            assert all(np.array_equal(a, b) for a, b in zip(per, want))


def test_csr_halves_concatenate_to_the_whole():
    """The query for parts of the clients (what threads run) gives the whole's slices."""
    rng, p, ids = world(2, seed=3)
    index = interest.GridIndex(p, ids, cell=50.0)
    centres = rng.uniform(-300, 1000, size=(101, 2))
    off, flat, dist = index.within_csr(centres, 120.0, distances=True)
    a = index.within_csr(centres[:40], 120.0, distances=True)
    b = index.within_csr(centres[40:], 120.0, distances=True)
    assert np.array_equal(np.concatenate([a[1], b[1]]), flat)
    assert np.array_equal(np.concatenate([a[2], b[2]]), dist)
    assert np.array_equal(np.concatenate([a[0], b[0][1:] + a[0][-1]]), off)


def test_csr_edges():
    rng, p, ids = world(2, n=500, seed=5)
    index = interest.GridIndex(p, ids, cell=10.0)
    off, flat = index.within_csr(np.zeros((0, 2)), 50.0)               # no clients
    assert off.tolist() == [0] and flat.shape == (0,)
    off, flat = index.within_csr(p[:3], 0.0)                         # on an entity, radius 0
    assert [flat[off[i]:off[i + 1]].tolist() for i in range(3)] == [[int(x)] for x in ids[:3]]
    far = np.array([[1e7, 1e7], [-1e7, 0.0]])                        # outside the grid
    off, flat, d = index.within_csr(far, 100.0, distances=True)
    assert off.tolist() == [0, 0, 0] and flat.shape == d.shape == (0,)
    off, flat = index.within_csr(p[:2], 1e6)                         # everything
    assert np.array_equal(flat[:off[1]], ids) and np.array_equal(flat[off[1]:], ids)
    empty = interest.GridIndex(np.zeros((0, 2)), np.zeros(0, np.uint64), cell=5.0)
    off, flat = empty.within_csr(p[:4], 30.0)
    assert off.tolist() == [0] * 5 and flat.shape == (0,)
    with pytest.raises(ValueError):
        index.within_csr(p[:2], -1.0)
    with pytest.raises(ValueError):
        index.within_csr(np.zeros((2, 3)), 1.0)                       # 3 columns for a 2-D index


@pytest.mark.slow
def test_csr_many_passes_of_the_radix_sort():
    """Rows spanning more than 22 bits (three radix passes): a world of 5 million entities,
    sparse ids, clients whose candidates are at both ends of it."""
    n = 5_000_000
    rng = np.random.default_rng(11)
    p = np.zeros((n, 2))
    p[:, 0] = rng.uniform(0, 40, n)          # a 40 m x 40 m square: everyone near everyone
    p[:, 1] = rng.uniform(0, 40, n)
    ids = np.arange(n, dtype=np.uint64) * np.uint64(3) + np.uint64(1)
    index = interest.GridIndex(p, ids, cell=1.0)
    centres = np.array([[20.0, 20.0], [1.0, 39.0]])
    off, flat, d = index.within_csr(centres, 0.6, distances=True)
    for i, q in enumerate(centres):
        dd = np.sqrt(((p - q) ** 2).sum(axis=1))
        want = ids[dd <= 0.6]
        assert np.array_equal(flat[off[i]:off[i + 1]], want)
        assert np.allclose(d[off[i]:off[i + 1]], dd[dd <= 0.6])


def test_results_own_their_memory_while_the_scratch_is_reused():
    """The upper bound is written into scratch memory kept between calls (quantcodec._interest,
    _SCRATCH) and only the rows found are copied out: a result stays as it was after later calls
    (of other sizes, on other threads at once) reuse that memory, its arrays are writable and
    exact-sized, and at most _KEEP buffers are kept."""
    from concurrent.futures import ThreadPoolExecutor

    from quantcodec import _interest

    rng, p, ids = world(2, seed=9)
    index = interest.GridIndex(p, ids, cell=40.0)
    centres = rng.uniform(-300, 1000, size=(60, 2))
    first = index.within_csr(centres, 110.0, distances=True)
    kept = [a.copy() for a in first]
    assert all(a.flags.writeable and a.base is None for a in first)   # arrays of their own
    for r in (5.0, 300.0, 110.0):                         # smaller and larger bounds than the first
        index.within_csr(rng.uniform(-300, 1000, size=(37, 2)), r, distances=True)
    with ThreadPoolExecutor(6) as pool:
        outs = list(pool.map(lambda k: index.within_csr(centres[k::3], 110.0, distances=True),
                             [0, 1, 2] * 4))
    for a, b in zip(first, kept):
        assert np.array_equal(a, b)                        # untouched by the calls after it
    for k, got in zip([0, 1, 2] * 4, outs):
        want = index.within(centres[k::3], 110.0, distances=True)
        off, flat, dist = got
        for i in range(len(want[0])):
            assert np.array_equal(flat[off[i]:off[i + 1]], want[0][i])
            assert np.array_equal(dist[off[i]:off[i + 1]], want[1][i])
    assert 1 <= len(_interest._SCRATCH) <= 4


def numpy_build(p, ids, cell, lo=None):
    """GridIndex's build as it was in NumPy (the reference of quantcodec._interest's grid_cells
    and grid_sort): the corner, the cells, a stable sort of the keys, the start of each cell, the
    positions and ids in grid order."""
    p = np.asarray(p).astype(np.float64, copy=False)
    n, d = p.shape
    if lo is None:
        lo = p[:, :2].min(axis=0) if n else np.zeros(2)
    lo = np.asarray(lo, np.float64)[:2]
    cx = np.maximum(np.floor((p[:, 0] - lo[0]) / cell), 0).astype(np.int64)
    cy = np.maximum(np.floor((p[:, 1] - lo[1]) / cell), 0).astype(np.int64)
    nx = int(cx.max()) + 1 if n else 1
    ny = int(cy.max()) + 1 if n else 1
    key = cx * ny + cy
    order = np.argsort(key, kind="stable")
    start = np.zeros(nx * ny + 1, dtype=np.int64)
    np.cumsum(np.bincount(key, minlength=nx * ny), out=start[1:])
    cols = [np.ascontiguousarray(p[order, j]) for j in range(d)]
    return lo, nx, ny, start, order, cols, np.asarray(ids, np.uint64)[order]


def same_build(index, p, ids, cell, lo=None):
    want = numpy_build(p, ids, cell, lo)
    got = (index.lo, index.nx, index.ny, index.start, index.order, index._cols, index._gids)
    assert np.array_equal(got[0], want[0]) and got[1:3] == want[1:3]
    ncell = want[1] * want[2]
    if ncell <= max(4 * len(p), 2**16):
        assert index.keys is None and index.start.shape == (ncell + 1,)
    else:
        # many more cells than entities: the occupied cells alone, their keys and starts
        start = want[3]
        keys = np.flatnonzero(np.diff(start))
        assert index.keys.dtype == np.int64 and np.array_equal(index.keys, keys)
        want = want[:3] + (np.concatenate([[0], start[keys + 1]]),) + want[4:]
    for a, b in zip(got[3:5] + (got[6],), want[3:5] + (want[6],)):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert len(got[5]) == len(want[5])
    for a, b in zip(got[5], want[5]):
        assert a.dtype == np.float64 and a.flags.c_contiguous and np.array_equal(a, b)
    rc = index._rowcols
    assert all(np.array_equal(rc[j], np.asarray(p, np.float64)[:, j]) for j in range(p.shape[1]))


@pytest.mark.parametrize("dim", [2, 3])
def test_build_equals_the_numpy_steps(dim):
    """The index built in C (quantcodec._interest.grid_cells, grid_sort) is the one NumPy's steps
    made: the same corner, grid size, cell starts, row order (stable: rows ascending in a cell)
    and columns, for C-ordered, Fortran-ordered, strided and reversed positions, float32 and
    integer ones, with and without a corner (entities below it go to its first cells), and
    positions exactly on cell edges."""
    rng, p, ids = world(dim, n=5000, seed=21)
    for cell in (37.5, 1.0, 1000.0, 5e4):
        same_build(interest.GridIndex(p, ids, cell=cell), p, ids, cell)
    f = np.asfortranarray(p)
    same_build(interest.GridIndex(f, ids, cell=20.0), f, ids, 20.0)
    wide = np.zeros((len(p), 7))
    wide[:, 1:1 + 2 * dim:2] = p
    strided = wide[:, 1:1 + 2 * dim:2]                     # every other column: strides 56, 16
    same_build(interest.GridIndex(strided, ids, cell=20.0), strided, ids, 20.0)
    back = p[::-1, ::-1]                                   # negative strides both ways
    same_build(interest.GridIndex(back, ids, cell=20.0), back, ids, 20.0)
    p32 = p.astype(np.float32)
    same_build(interest.GridIndex(p32, ids, cell=20.0), p32, ids, 20.0)
    pint = np.round(p).astype(np.int32)
    same_build(interest.GridIndex(pint, ids, cell=10.0), pint, ids, 10.0)
    edges = rng.integers(-20, 20, size=(3000, dim)) * 2.5   # on the edges of 2.5 and 5 m cells
    eids = np.arange(3000, dtype=np.uint64)
    for cell in (2.5, 5.0, 0.1):
        same_build(interest.GridIndex(edges, eids, cell=cell), edges, eids, cell)
    for lo in ((0.0, 0.0), (-1e6, 5.0), (100.0, 100.0, 9.0)):
        same_build(interest.GridIndex(p, ids, cell=30.0, lo=lo), p, ids, 30.0, lo)
    one = p[:1]
    same_build(interest.GridIndex(one, ids[:1], cell=3.0), one, ids[:1], 3.0)
    none = np.zeros((0, dim))
    same_build(interest.GridIndex(none, ids[:0], cell=3.0), none, ids[:0], 3.0)


def test_build_refuses_what_it_cannot_index():
    rng, p, ids = world(2, n=100, seed=2)
    for bad in (np.nan, np.inf, -np.inf):
        q = p.copy()
        q[37, 1] = bad
        with pytest.raises(ValueError, match=rf"positions must be finite \(row 37, id {int(ids[37])}: "):
            interest.GridIndex(q, ids, cell=5.0)
    q = p.copy()                                           # ids given out of order: the row given
    q[37, 0] = np.nan
    order = np.arange(100)[::-1]
    with pytest.raises(ValueError, match=rf"positions must be finite \(row {order.tolist().index(37)}, id {int(ids[37])}: "):
        interest.GridIndex(q[order], ids[order], cell=5.0)
    q = p.copy()
    q[5, 0] = 1e300                                        # a cell number past 2**40
    with pytest.raises(ValueError, match="more than 2\\*\\*40 cells a side"):
        interest.GridIndex(q, ids, cell=1.0)
    for cell in (0.0, -1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match="cell must be positive"):
            interest.GridIndex(p, ids, cell=cell)
    with pytest.raises(ValueError, match="3 ids for 100 positions"):
        interest.GridIndex(p, ids[:3], cell=1.0)
    with pytest.raises(ValueError, match="N x 2 or N x 3"):
        interest.GridIndex(np.zeros((4, 4)), cell=1.0)
    neg = ids.astype(np.int64)
    neg[7] = -3
    with pytest.raises(ValueError, match=r"GridIndex: ids must be non-negative, got -3 at row 7"):
        interest.GridIndex(p, neg, cell=1.0)
    with pytest.raises(TypeError, match="GridIndex: ids must be an integer array, got dtype float64"):
        interest.GridIndex(p, ids.astype(np.float64), cell=1.0)


def test_queries_refuse_what_they_cannot_answer():
    rng, p, ids = world(2, n=100, seed=2)
    index = interest.GridIndex(p, ids, cell=5.0)
    centres = p[:4].copy()
    for r in (-1.0, np.nan, np.inf):
        for q in (index.within, index.within_csr):
            with pytest.raises(ValueError, match=f"radius must be finite and non-negative, got {r}"):
                q(centres, r)
    for bad in (np.nan, np.inf):
        c = centres.copy()
        c[2, 1] = bad
        for q in (index.within, index.within_csr):
            with pytest.raises(ValueError, match=rf"centres must be finite \(centre 2: \[.*{bad}\]\)"):
                q(c, 5.0)
        with pytest.raises(ValueError, match="centres must be finite"):
            index.cells(c)
    for ring in (-1, 1.5, True, "1"):
        with pytest.raises(ValueError, match="ring must be a non-negative integer"):
            index.cells(centres, ring=ring)
    assert [len(a) for a in index.cells(centres, ring=np.int64(0))] == \
        [len(a) for a in index.cells(centres, ring=0)]


@pytest.mark.parametrize("dist", [True, False])
def test_threads_give_the_same_answers(dist):
    """within(threads=N) and within_csr(threads=N) cut the centres into N parts queried at once:
    the same ids and distances, in the same order, as one thread; fewer than 64 centres a part
    are not cut; threads must be a positive integer."""
    rng, p, ids = world(2, seed=13)
    index = interest.GridIndex(p, ids, cell=40.0)
    for m in (0, 1, 63, 64, 128, 129, 1001):
        centres = rng.uniform(-300, 1000, size=(m, 2))
        one = index.within(centres, 90.0, distances=dist)
        one_csr = index.within_csr(centres, 90.0, distances=dist)
        for th in (2, 3, 7):
            got = index.within(centres, 90.0, distances=dist, threads=th)
            if dist:
                assert len(got[0]) == len(got[1]) == m
                assert all(np.array_equal(a, b) for a, b in zip(got[1], one[1]))
                got, want = got[0], one[0]
            else:
                want = one
            assert len(got) == m and all(np.array_equal(a, b) for a, b in zip(got, want))
            csr = index.within_csr(centres, 90.0, distances=dist, threads=th)
            assert len(csr) == len(one_csr)
            for a, b in zip(csr, one_csr):
                assert a.dtype == b.dtype and np.array_equal(a, b)
    parts = []
    real = index._csr
    index._csr = lambda q, *a: parts.append(len(q)) or real(q, *a)
    index.within(rng.uniform(0, 900, size=(200, 2)), 50.0, threads=4)
    assert sorted(parts) == [66, 67, 67]                   # 200 // 64 = 3 parts, not 4
    for bad, kind in ((0, ValueError), (-1, ValueError), (1.5, TypeError), (True, TypeError), ("2", TypeError)):
        with pytest.raises(kind, match="threads must be a positive integer"):
            index.within(p[:3], 10.0, threads=bad)
    two, one = index.within(p[:3], 10.0, threads=np.int64(2)), index.within(p[:3], 10.0)   # (SPEC 0)
    assert len(two) == len(one) and all(np.array_equal(x, y) for x, y in zip(two, one))


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="no fork on this platform")
# (Python 3.12 and later warn on any fork of a process with threads: that is this test's case)
@pytest.mark.filterwarnings("ignore:This process .*is multi-threaded:DeprecationWarning")
def test_threads_in_a_forked_child():
    """A child forked after within(threads=2) ran has a copy of the module's pool without its
    threads: the query there makes a pool of its own instead of waiting on one that never runs
    (the child's answer is checked by its exit code)."""
    import os

    rng, p, ids = world(2, n=3000, seed=17)
    index = interest.GridIndex(p, ids, cell=40.0)
    centres = rng.uniform(-300, 1000, size=(256, 2))
    want = index.within(centres, 80.0, threads=2)
    pid = os.fork()
    if pid == 0:                                              # the child: exit 0 only if right
        code = 1
        try:
            got = index.within(centres, 80.0, threads=2)
            code = 0 if all(np.array_equal(a, b) for a, b in zip(got, want)) else 2
        finally:
            os._exit(code)
    status = wait_child(pid, "within(threads=2)")
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def brute_cells(p, ids, centres, cell, lo, ring):
    """The ids in the (2 ring + 1) ** 2 cells around each centre, by each entity's own cell."""
    c = np.maximum(np.floor((p[:, :2] - lo) / cell), 0)
    out = []
    for q in centres:
        k = np.floor((q[:2] - lo) / cell)
        near = np.all(np.abs(c - k) <= ring, axis=1)
        out.append(np.sort(ids[near]))
    return out


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("cell", [40.0, 0.05])                # a table of cells; occupied cells only
def test_ids_in_any_order_come_back_ascending(dim, cell):
    """The docstrings' promise, whatever the order of the ids given: each client's ids ascending
    (within, within_csr, cells, the NumPy path, threads), the brute-force answer id for id, the
    distances aligned with them; ``order`` still maps the grid order to the world's rows."""
    rng, p, ids = world(dim, n=4000, seed=31)
    for shuffled in (rng.permutation(ids), ids[::-1].copy(), np.arange(len(ids), dtype=np.uint64)[::-1]):
        index = interest.GridIndex(p, shuffled, cell=cell)
        assert (index.keys is None) == (cell == 40.0)
        assert np.array_equal(index.ids, shuffled) and np.array_equal(index.ids[index.order], index._gids)
        centres = np.concatenate([rng.uniform(-350, 1050, size=(100, dim)), p[:3]])
        for r in (0.0, 30.0, 120.0):
            want = brute(p, shuffled, centres, r)
            got, dist = index.within(centres, r, distances=True)
            for w, g, d, q in zip(want, got, dist, centres):
                assert np.array_equal(g, w)
                rows = np.searchsorted(shuffled, g, sorter=np.argsort(shuffled))
                rows = np.argsort(shuffled)[rows]
                assert np.array_equal(d, np.sqrt(((p[rows] - q) ** 2).sum(axis=1)))
            off, flat = index.within_csr(centres, r)
            assert all(np.array_equal(flat[off[i]:off[i + 1]], w) for i, w in enumerate(want))
            assert all(np.array_equal(a, w) for a, w in zip(index.within(centres, r, threads=2), want))
            assert all(np.array_equal(a, w) for a, w in zip(index._query(centres, r, None, False, True, numpy=True), want))
            unsorted = index.within(centres, r, sort=False)
            assert all(np.array_equal(np.sort(a), w) for a, w in zip(unsorted, want))
        if cell == 40.0:
            for ring in (0, 1):
                want = brute_cells(p, shuffled, centres, cell, index.lo, ring)
                assert all(np.array_equal(a, w) for a, w in zip(index.cells(centres, ring=ring), want))
    assert all(np.array_equal(a, w) for a, w in
               zip(interest.within(p, ids[::-1].copy(), p[:20], 50.0), brute(p, ids[::-1], p[:20], 50.0)))


def test_repeated_ids_are_refused_naming_the_row():
    rng, p, ids = world(2, n=100, seed=2)
    for rep, j, i in (([7, 7, 7], 1, 0), ([5, 9, 3, 9, 5], 3, 1), ([1, 2, 3, 4, 2], 4, 1)):
        with pytest.raises(ValueError, match=rf"^GridIndex: ids must be unique: row {j} repeats id "
                                             rf"{rep[j]} of row {i}$"):
            interest.GridIndex(p[:len(rep)], np.array(rep, np.uint64), cell=1.0)
    dup = ids.copy()
    dup[60] = dup[20]                                      # ascending but for one repeat
    with pytest.raises(ValueError, match=rf"row 60 repeats id {dup[20]} of row 20$"):
        interest.GridIndex(p, dup, cell=1.0)
    with pytest.raises(ValueError, match="row 1 repeats id 4 of row 0"):
        interest.within(p[:2], [4, 4], p[:1], 5.0)


def test_memory_grows_with_the_entities_not_the_cells():
    """A grid of many more cells than entities keeps the occupied cells alone (the probe's 2
    entities 40 m apart in 1 cm cells took a 128 MB table of 16 million cells), and answers as
    the table does."""
    two = np.array([[0.0, 0.0], [40.0, 40.0]])
    index = interest.GridIndex(two, cell=0.01)
    assert index.nx * index.ny == 4001 * 4001
    assert index.keys.tolist() == [0, 4000 * 4001 + 4000] and index.start.tolist() == [0, 1, 2]
    assert [a.tolist() for a in index.within([[20.0, 20.0], [0.0, 0.0], [40.0, 40.005]], 30.0)] == \
        [[0, 1], [0], [1]]
    far = interest.GridIndex(np.array([[0.0, 0.0], [1000.0, 1000.0]]), np.array([1, 2], np.uint64), cell=1e-3)
    assert far.start.nbytes == 24 and far.keys.nbytes == 16
    assert [a.tolist() for a in far.cells([[0.0, 0.0], [1000.0, 1000.0], [500.0, 500.0]], ring=2)] == [[1], [2], []]
    # the same answers from a table and from the occupied cells, entities dense or sparse
    rng, p, ids = world(2, n=3000, seed=8)
    centres = rng.uniform(-350, 1050, size=(200, 2))
    for cell in (8.0, 1.0, 0.25):                          # 28,000 cells (a table), 1.8 and 28 million
        index = interest.GridIndex(p, ids, cell=cell)
        assert (index.keys is None) == (cell == 8.0)
        assert index.start.nbytes <= 8 * max(4 * len(p), 2**16) + 8
        for r in (0.0, 3.0, 9.0):
            got, dist = index.within(centres, r, distances=True)
            want = brute(p, ids, centres, r)
            assert all(np.array_equal(a, w) for a, w in zip(got, want))
    # 1.8e16 cells: too many to hold a row number beside the key in an int64 (the argsort path)
    index = interest.GridIndex(p, ids, cell=1e-5)
    assert index.nx * index.ny > 2 ** 51 and index.keys.shape == (len(p),)
    assert np.array_equal(index._gids, ids[index.order]) and np.all(np.diff(index.keys) > 0)
    assert all(np.array_equal(a, [w]) for a, w in zip(index.within(p[:50], 0.0), ids[:50]))
    near = p[:50] + 1e-5
    assert all(np.array_equal(a, w) for a, w in zip(index.within(near, 3e-5), brute(p, ids, near, 3e-5)))
    with pytest.raises(ValueError, match=r"^GridIndex: the grid would be more than 2\*\*62 cells "
                                         r"\(1000000000000 x 1000000000000 = 1000000000000000000000000 cells "
                                         r"of 1e-09\): use a larger cell$"):
        interest.GridIndex(np.array([[0.0, 0.0], [1000.0, 1000.0]]), cell=1e-9)


@pytest.mark.parametrize("dim", [2, 3])
def test_entities_below_a_corner_given_are_found(dim):
    """An entity below or left of the corner given (``lo``) is in the first row or column of
    cells: ``within`` finds it as any other (before: those cells were searched only where the
    circle crossed their extent, so such entities were never found), whatever the query's
    path (C, NumPy, threads)."""
    rng, p, ids = world(dim, n=3000, seed=41, spread=300.0)
    centres = np.concatenate([rng.uniform(-150, 350, size=(60, dim)), p[:5]])
    for lo in ((50.0, 50.0), (0.0, 400.0), (1e3, 1e3), (-1e6, 20.0)):
        index = interest.GridIndex(p, ids, cell=25.0, lo=lo)
        for r in (0.0, 10.0, 60.0, 500.0):
            want = brute(p, ids, centres, r)
            got = index.within(centres, r)
            assert all(np.array_equal(g, w) for g, w in zip(got, want)), (lo, r)
            assert all(np.array_equal(g, w) for g, w in zip(index.within(centres, r, threads=2), want))
            numpy = index._query(centres, r, None, False, True, numpy=True)
            assert all(np.array_equal(g, w) for g, w in zip(numpy, want))
    # the probe's case: each entity queried at its own place
    pos = np.array([[49.0, 49.0], [60.0, 60.0], [10.0, 80.0]])
    g = interest.GridIndex(pos, np.array([1, 2, 3]), cell=5.0, lo=(50.0, 50.0))
    assert [a.tolist() for a in g.within(pos, 1.0)] == [[1], [2], [3]]
    with pytest.raises(ValueError, match="lo must be a finite corner"):
        interest.GridIndex(pos, cell=5.0, lo=(np.nan, 0.0))
    with pytest.raises(ValueError, match="lo must be a finite corner"):
        interest.GridIndex(pos, cell=5.0, lo=(1.0,))


def test_a_radius_past_the_world_costs_no_more_than_the_grid():
    """The query's columns are those of the grid: a radius far past the world's extent, or a
    centre far outside it, looks at most at every cell once (before: arrays of 2 R + 1 columns
    a centre, 4 GB for a radius of 1e8 in 5 m cells, and a ValueError for 1e300)."""
    rng = np.random.default_rng(5)
    p = rng.uniform(0, 100, (1000, 2))
    ids = np.arange(1000, dtype=np.uint64)
    g = interest.GridIndex(p, ids, cell=5.0)
    centres = np.array([[50.0, 50.0], [-1e9, 3.0], [1e12, -1e12], [40.0, 1e12]])
    for r in (1e4, 1e8, 1e12, 1e200, 1e300, 1.7e308):
        lo, cnt = g._ranges(centres, r, None)
        assert lo.shape == cnt.shape == (4, g.nx)
        with np.errstate(over="ignore"):
            want = brute(p, ids, centres, r)
        assert all(np.array_equal(a, w) for a, w in zip(g.within(centres, r), want)), r
    assert all(len(a) == 1000 for a in g.within(centres[:1], 1e300))
    # rings as wide: the same arrays' size, the same answers as each entity's own cell gives
    for ring in (10**6, 10**9, 10**12):
        lo, cnt = g._ranges(centres, 0.0, ring)
        assert lo.shape == (4, g.nx)
        want = brute_cells(p, ids, centres, 5.0, g.lo, ring)
        assert all(np.array_equal(a, w) for a, w in zip(g.cells(centres, ring=ring), want)), ring
