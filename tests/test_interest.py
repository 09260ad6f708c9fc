"""quantcodec.interest's batched radius query (GridIndex.within_csr, quantcodec._interest): one
pass for every client, one flat result, exactly the per-client answers."""

import numpy as np
import pytest

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
