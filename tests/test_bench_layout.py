"""bench/layout_study.py and bench/pred_study.py run and their models are consistent (smoke tests:
nothing is timed)."""

from benchscripts import load


def test_layout_study_small():
    mod = load("layout_study")
    lines = []
    total, per_tick = mod.main(["--bodies", "30", "--seconds", "5", "--exceptions", "0.05", "0.3", "1"],
                               out=lines.append)
    assert [int(line.split()[0]) for line in lines[2:5]] == [60, 150, 280]
    assert lines[-1].startswith("over the stream") and "fixed(0.3)" in lines[-1]
    assert per_tick
    for _, bits in per_tick:
        # the model leaves out what both layouts share, so today's codes come under the real
        # packet; allowing more exceptions never costs more
        assert bits["eg"] <= bits["packet"]
        assert bits[0.05] >= bits[0.3] >= bits[1.0]
    assert total["eg"] < total[0.3] < total["max"]


def test_pred_study_small():
    mod = load("pred_study")
    lines = []
    rows = mod.main(["--bodies", "30", "--seconds", "3", "--lags", "4", "6"], out=lines.append)
    assert set(rows) == {4, 6} and sorted(rows[6]) == [1, 2, 3, 4, 5, 6]
    assert lines[1].startswith("bdist  4: ") and "2*<:" in lines[1] and "4*:+0.0%" in lines[1]
    assert "2*<:" in lines[2] and "6*:+0.0%" in lines[2]
    assert all(v > 0 for r in rows.values() for v in r.values())
    # the rounding of the extrapolation is the docs' (half away from zero)
    import numpy as np
    assert mod.round_div(np.array([5, -5, 4, -4, 3]), 2).tolist() == [3, -3, 2, -2, 2]


def test_ideal_loops_small():
    """bench/ideal_loops.py compiles its C loops, whose three decoders (one stream, split,
    fixed widths) rebuild the tick's rows exactly (the program compares them with the current
    snapshot and the script refuses otherwise); nothing here is timed."""
    import shutil

    import pytest
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    mod = load("ideal_loops")
    lines = []
    res = mod.main(["--bodies", "200", "--reps", "3"], out=lines.append)
    assert 0 < res["n"] <= 200
    assert lines[0].startswith("tick 60: ") and "C decode, split (floor)" in "\n".join(lines)
    assert all(res[key] > 0 for key in ("pack", "encode", "decode_one", "decode_split",
                                        "encode_fixed", "decode_fixed", "lib_encode",
                                        "lib_decode", "bits", "bits_fixed"))
