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
        with pytest.raises(ValueError, match="positions must be finite"):
            interest.GridIndex(q, ids, cell=5.0)
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
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="threads must be a positive integer"):
            index.within(p[:3], 10.0, threads=bad)


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
