"""bench/bench_snapshot.py runs and reports what it says (a smoke test: no time is asserted)."""

from benchscripts import load


def _load():
    return load("bench_snapshot")


def test_bench_snapshot_runs_small():
    mod = _load()
    lines = []
    rows = mod.main(["--bodies", "30", "--number", "2"], out=lines.append)
    assert [r[0] for r in rows] == [60, 150, 280]
    for _, changed, nbytes, us in rows:
        assert 0.0 <= changed <= 1.0 and nbytes > 0
        assert set(us) == {"pack_list", "pack_body", "pack_numpy", "encode", "decode", "snapshot",
                           "columns"}
        assert all(v > 0 for v in us.values())
    assert "x body" in lines[1] and len(lines) == 2 + len(rows) + 1
